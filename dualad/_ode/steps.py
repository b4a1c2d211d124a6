"""The derivatives of an explicit Runge-Kutta solve, on the solve's own steps.

SciPy's RK23, RK45 and DOP853 take each accepted step from ``t`` to ``t + h`` as

    K_s = f(t + C_s h, Y_s),   Y_s = y + h sum_{l<s} A_sl K_l,   y_new = y + h sum_s B_s K_s,

with ``K_S = f(t + h, y_new)`` after the last stage, and give ``y`` at a time of ``t_eval``
inside the step by their dense output, ``y + h sum_s w_s(x) K_s`` at ``x = (t_eval - t) / h``.
RK23's and RK45's ``w`` is ``P (x, x^2, ...)``; DOP853's reads 3 extra stages, which SciPy
evaluates after ``K_S`` (rows ``S + 1...`` of ``A`` and ``C``) for the steps whose dense output
it computes, and is a polynomial in ``x`` and ``1 - x`` (:func:`_dense_output`). The primal
solve records every accepted step, and those extra stages (:func:`recorded`);
its derivative with the step sizes held fixed is then a linear recursion through these
formulas, whose products with ``f``'s Jacobian are taken at every stage of every step in
one call of ``f`` mapped over them (:func:`dualad.vmap`):

- forward (:func:`tangent`): the map of each step, ``dy_new = M dy + c``, for all steps at
  once (a few array operations per stage; the extra stages for the steps that have them),
  then one small product per step;
- reverse (:func:`cotangent`): the same maps transposed, backwards over the steps, then
  each stage's cotangent, all at once, and one pullback of ``f`` mapped over the stages for
  the parameters.

This is the derivative of SciPy's numbers (what finite differences of the solve approach as
its steps stay put), not a second error-controlled solve: it costs about one more solve of
``y``, where integrating the sensitivities or the adjoint as an ODE with SciPy costs several
(benchmarks/README.md, "solve_ivp sensitivities"). Memory is the steps' stages, O(steps).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from dualad._base.backend import NUMPY_XP, scipy_module
from dualad.numpy import stack

__all__ = ["METHODS", "Steps", "cotangent", "recorded", "recursion", "tangent"]

METHODS = ("RK23", "RK45", "DOP853")
# Beyond this many numbers in the stages' Jacobians (or in the forward sweep's step maps),
# the sensitivities are integrated as an ODE instead (dualad._ode.sensitivities).
_MOST_NUMBERS = 2 ** 24


class Steps:
    """The accepted steps of one solve: their starts ``t`` and sizes ``h`` (``(J,)``),
    ``y`` at their starts (``(J, n)``) and their stages ``K`` (``(J, S + 1, n)``), with the
    method's tableau; ``y_end`` is the solve's last ``y``. The E extra stages of the dense
    output (DOP853's; E = 0 for RK23 and RK45), stages ``S + 1...``, are ``K_extra``
    (``(D, E, n)``) for the D steps ``dense`` whose dense output SciPy computed; ``slot[j]``
    is step j's row of them (-1: none)."""

    __slots__ = ("A", "A_extra", "B", "C", "C_extra", "K", "K_extra", "P", "basis", "dense",
                 "h", "slot", "t", "y", "y_end")

    def __init__(self, method: str, records: list, y0: Any):
        scheme = _scipy_class(method)
        stages = scheme.n_stages
        self.A = np.zeros((stages, stages))  # strictly lower (SciPy's may lack its last column)
        self.A[:, :scheme.A.shape[1]] = np.tril(scheme.A, -1)
        self.B, self.C = scheme.B, scheme.C
        # extra stage e reads the stages before it, S + 1 + e of them
        self.A_extra = np.tril(getattr(scheme, "A_EXTRA", np.zeros((0, stages + 1))), stages)
        self.C_extra = getattr(scheme, "C_EXTRA", np.zeros(0))
        self.P, self.basis = _dense_output(scheme)
        n, extra = np.shape(y0)[0], len(self.C_extra)
        self.t = np.array([r[0] for r in records], dtype=float)
        self.h = np.array([r[1] - r[0] for r in records], dtype=float)
        self.y = np.array([r[2] for r in records], dtype=float).reshape(-1, n)
        self.K = np.array([r[3] for r in records], dtype=float).reshape(-1, stages + 1, n)
        self.y_end = records[-1][4] if records else np.asarray(y0, dtype=float)
        self.dense = np.array([j for j, r in enumerate(records) if len(r) > 5], dtype=int)
        self.K_extra = np.array([records[j][5] for j in self.dense],
                                dtype=float).reshape(len(self.dense), extra, n)
        self.slot = np.full(len(records), -1)
        self.slot[self.dense] = np.arange(len(self.dense))

    @property
    def stages(self) -> int:
        return len(self.B)

    @property
    def extra(self) -> int:
        return len(self.C_extra)

    def usable(self, columns: int) -> bool:
        """Whether there are steps (an empty interval has none), and their stages' Jacobians
        and step maps of ``columns`` columns fit in memory."""
        J, S1, n = self.K.shape
        return 0 < (J * S1 + self.K_extra.size // n) * n * (n + columns) <= _MOST_NUMBERS

    def points(self) -> tuple:
        """The times and states of every stage of every step, ``(J S + 1 + D E,)`` and
        ``(J S + 1 + D E, n)``: stage ``s`` of step ``j`` is point ``j S + s``, and a step's
        last ``K``, at its end, is the next step's first (point ``(j + 1) S``); then the
        extra stages, ``E`` points for each step of ``dense``."""
        S = self.stages
        Y = self.y[:, None, :] + self.h[:, None, None] * np.einsum("sl,jln->jsn", self.A, self.K[:, :S])
        T = self.t[:, None] + self.C[None, :S] * self.h[:, None]
        end_t = self.t[-1:] + self.h[-1:]
        d = self.dense
        K = np.concatenate([self.K[d], self.K_extra], axis=1)
        YE = self.y[d, None, :] + self.h[d, None, None] * np.einsum("el,jln->jen", self.A_extra, K)
        TE = self.t[d, None] + self.C_extra[None, :] * self.h[d, None]
        return (np.concatenate([T.reshape(-1), end_t, TE.reshape(-1)]),
                np.concatenate([Y.reshape(-1, Y.shape[-1]), self.y_end[None],
                                YE.reshape(-1, Y.shape[-1])]))

    def at_points(self, values: Any) -> tuple:
        """``values`` of the points, ``(J S + 1 + D E, ...)``, as ``(J, S + 1, ...)`` by step
        and ``(D, E, ...)`` for the extra stages."""
        S, J = self.stages, len(self.h)
        index = np.arange(J)[:, None] * S + np.arange(S + 1)[None, :]
        return values[index], values[J * S + 1:].reshape(len(self.dense), self.extra,
                                                         *values.shape[1:])

    def onto_points(self, per_stage: Any, per_extra: Any) -> Any:
        """The sum over steps and stages ``(J, S + 1, ...)`` onto the points they share, then
        the extra stages' ``(D, E, ...)``."""
        S, J = self.stages, len(self.h)
        out = np.zeros((J * S + 1, *per_stage.shape[2:]))
        out[:J * S] = per_stage[:, :S].reshape(J * S, *per_stage.shape[2:])
        out[S::S] += per_stage[:, S]
        return np.concatenate([out, per_extra.reshape(-1, *per_stage.shape[2:])])

    def of_steps(self, per_stage: Any, per_extra: Any, step: Any) -> Any:
        """The stages of the steps ``step``, ``(m, S + 1 + E, ...)``: theirs and their extra
        ones."""
        if not self.extra:
            return per_stage[step]
        return np.concatenate([per_stage[step], per_extra[self.slot[step]]], axis=1)

    def at_ends(self, times: Any) -> Any:
        """For the times of ``y`` at the solver's own steps (``t0``, then each step's end):
        whether each is a step's end (its ``y_new``), not ``t0`` (the first step's start)."""
        return np.asarray(times, dtype=float) != self.t[0]

    def locate(self, times: Any, dense: bool) -> tuple:
        """For each time, the step it lies in (as SciPy's ``solve_ivp`` places ``t_eval``:
        the first step that ends at it or after it) and its dense output's weights
        ``h w(x)`` (``(m, S + 1 + E)``); ``dense`` False: the times are the steps' ends (and
        ``t0``), whose ``y`` is the step's ``y_new``, and the weights are None."""
        times = np.asarray(times, dtype=float)
        ends = self.t + self.h
        direction = 1.0 if ends[-1] >= self.t[0] else -1.0
        step = np.searchsorted(direction * ends, direction * times, side="left")
        step = np.minimum(step, len(ends) - 1)
        if not dense:
            return step, None
        if self.extra and (self.slot[step] < 0).any():
            raise RuntimeError("a time of t_eval lies in a step whose dense output the solve did "
                               "not compute: its steps were recorded for other times")
        x = (times - self.t[step]) / self.h[step]
        return step, self.h[step, None] * self.basis(x) @ self.P.T


def _dense_output(scheme: type) -> tuple:
    """``(P, basis)``: the method's dense output is ``y + h sum_s w_s(x) K_s`` over its
    stages and extra stages, ``w = P basis(x)``, ``basis(x)`` of shape ``(m, q)``. RK23's and
    RK45's basis is ``x, x^2, ...``. DOP853's (SciPy's ``Dop853DenseOutput``) is
    ``y + sum_i F_i x^ceil((i+1)/2) (1-x)^floor((i+1)/2)`` with ``F_0 = dy``, ``F_1 = h f_old
    - dy``, ``F_2 = 2 dy - h (f_old + f_new)``, ``F_3... = h D K`` (``dy = y_new - y = h B K``,
    ``f_old = K_0``, ``f_new = K_S``): linear in the stages; its basis is kept in ``x`` and
    ``1 - x`` as SciPy evaluates it (expanded in powers of ``x``, the sums of DOP853's large
    coefficients lose two digits more)."""
    if not hasattr(scheme, "D"):
        q = scheme.P.shape[1]
        return scheme.P, lambda x: np.cumprod(np.repeat(x[:, None], q, axis=1), axis=1)
    S, D = scheme.n_stages, scheme.D
    B = np.zeros(D.shape[1])
    B[:S] = scheme.B
    first, end = np.eye(D.shape[1])[[0, S]]
    F = np.vstack([B, first - B, 2 * B - first - end, D])
    i = np.arange(len(F))
    return F.T, lambda x: x[:, None] ** ((i + 2) // 2) * (1 - x[:, None]) ** ((i + 1) // 2)


def _scipy_class(method: str) -> type:
    return getattr(scipy_module(NUMPY_XP, "integrate", "solve_ivp"), method)


def recorded(method: str, records: list) -> type:
    """SciPy's class of ``method`` whose accepted steps append ``(t, t_new, y, K, y_new)``
    to ``records``, and a step whose dense output is computed its extra stages too (a sixth
    item): its numbers are SciPy's own."""
    scheme = _scipy_class(method)
    extra = len(getattr(scheme, "C_EXTRA", ()))

    class Recorded(scheme):
        def _step_impl(self):
            t = self.t
            success, message = super()._step_impl()
            if success:
                records.append((t, self.t, self.y_old, self.K.copy(), self.y))
            return success, message

        def _dense_output_impl(self):
            out = super()._dense_output_impl()
            if extra and records and len(records[-1]) == 5 and records[-1][1] == self.t:
                records[-1] = (*records[-1], self.K_extended[-extra:].copy())
            return out
    Recorded.__name__ = Recorded.__qualname__ = method
    return Recorded


def _step_maps(steps: Steps, jy: tuple, g: tuple) -> tuple:
    """Each step's derivative for all steps at once: ``dK`` (``(J, S + 1, n, n + k)``), the
    stages' derivatives with respect to ``(y, dtheta)``, ``dy_new`` (``(J, n, n + k)``) and
    the extra stages' ``dKe`` (``(D, E, n, n + k)``), from the Jacobians ``jy`` (``(J, S + 1,
    n, n)`` and ``(D, E, n, n)``, :meth:`Steps.at_points`) and ``g = J_theta dtheta`` (the
    same with ``k`` columns, k = 0 for none)."""
    (jy, jye), (g, ge) = jy, g
    J, S1, n = steps.K.shape
    k = g.shape[-1]
    S = S1 - 1
    start = np.concatenate([np.eye(n), np.zeros((n, k))], axis=1)
    moved = np.concatenate([np.zeros((J, S1, n, n)), g], axis=-1)
    dK = np.empty((J, S1, n, n + k))
    h = steps.h[:, None, None]
    for s in range(S):
        dY = start + h * np.einsum("l,jlnc->jnc", steps.A[s, :s], dK[:, :s]) if s else start
        dK[:, s] = jy[:, s] @ dY + moved[:, s]
    dy_new = start + h * np.einsum("l,jlnc->jnc", steps.B, dK[:, :S])
    dK[:, S] = jy[:, S] @ dy_new + moved[:, S]
    d, E = steps.dense, steps.extra
    dKe = np.empty((len(d), E, n, n + k))
    for e in range(E):  # DOP853's dense output: stage S + 1 + e reads the S + 1 + e before it
        before = np.concatenate([dK[d], dKe[:, :e]], axis=1)
        dY = start + steps.h[d, None, None] * np.einsum("l,jlnc->jnc", steps.A_extra[e, :S1 + e],
                                                        before)
        dKe[:, e] = jye[:, e] @ dY + np.concatenate([np.zeros((len(d), n, n)), ge[:, e]], axis=-1)
    return dK, dy_new, dKe


def tangent(steps: Steps, times: Any, dense: bool, jy: Any, g: Any, ty0: Any) -> Any:
    """``dY`` at ``times``, ``(k, n, m)``, along k directions: ``ty0`` (``(k, n)``) of ``y0``
    and ``g`` (``(N, n, k)``, ``J_theta dtheta`` at the N points), ``jy`` (``(N, n, n)``)
    ``f``'s Jacobians there."""
    n, k = ty0.shape[1], ty0.shape[0]
    dK, dy_new, dKe = _step_maps(steps, steps.at_points(jy), steps.at_points(g))
    J = len(steps.h)
    before = np.empty((J + 1, n, k))  # dy at each step's start, and at the last one's end
    before[0] = ty0.T
    for j in range(J):
        before[j + 1] = dy_new[j, :, :n] @ before[j] + dy_new[j, :, n:]
    step, weights = steps.locate(times, dense)
    if weights is None:  # the step's end, t0 for the first time of none
        at_end = steps.at_ends(times)
        out = np.where(at_end[:, None, None], before[step + 1], before[step])
    else:
        maps = np.einsum("ms,msnc->mnc", weights, steps.of_steps(dK, dKe, step))
        out = before[step] + maps[:, :, :n] @ before[step] + maps[:, :, n:]
    return out.transpose(2, 1, 0)


def cotangent(steps: Steps, times: Any, dense: bool, jy: Any, gy: Any) -> tuple:
    """``(dL/dy0, mu)`` for ``L = sum gy * Y`` (``gy``: ``(n, m)``), with ``jy`` (``(N, n,
    n)``) ``f``'s Jacobians at the N points: ``mu`` (``(N, n)``) the cotangents of ``f``
    there, whose pullback gives the parameters'. One pass back over the steps, and over each
    step's stages (its extra ones first): a product with a Jacobian each."""
    n = gy.shape[0]
    J, S, E = len(steps.h), steps.stages, steps.extra
    jy, jye = steps.at_points(jy)
    step, weights = steps.locate(times, dense)
    mu = np.zeros((J, S + 1, n))  # first the dense outputs' share: sum_e h w_s(x_e) g_e
    mue = np.zeros((len(steps.dense), E, n))
    at_start, at_end = np.zeros((J, n)), np.zeros((J, n))
    if weights is None:
        at_end_time = steps.at_ends(times)
        np.add.at(at_end, step[at_end_time], gy.T[at_end_time])
        np.add.at(at_start, step[~at_end_time], gy.T[~at_end_time])
    else:
        shares = weights[:, :, None] * gy.T[:, None, :]
        np.add.at(mu, step, shares[:, :S + 1])
        if E:
            np.add.at(mue, steps.slot[step], shares[:, S + 1:])
        np.add.at(at_start, step, gy.T)
    hA = steps.h[:, None, None, None] * steps.A[None, :, :, None]
    hB = steps.h[:, None, None] * steps.B[None, :, None]
    a = np.zeros(n)
    for j in reversed(range(J)):
        m, jj = mu[j], jy[j]
        slot = steps.slot[j] if E else -1
        if slot >= 0:  # the extra stages read this step's stages and y
            both = np.concatenate([m, mue[slot]])
            for e in range(E - 1, -1, -1):
                nu = both[S + 1 + e] @ jye[slot, e]
                at_start[j] += nu
                both[:S + 1 + e] += (steps.h[j] * steps.A_extra[e, :S + 1 + e])[:, None] * nu
            m[:], mue[slot] = both[:S + 1], both[S + 1:]
        end = a + at_end[j] + m[S] @ jj[S]  # y_new's, its last K's (at y_new) included
        m[:S] += hB[j] * end
        a = end + at_start[j]
        for s in range(S - 1, -1, -1):
            nu = m[s] @ jj[s]  # Y_s's
            a += nu
            if s:
                m[:s] += hA[j, s, :s] * nu
    return a, steps.onto_points(mu, mue)


def recursion(steps: Steps, times: Any, dense: bool, fun: Callable) -> Callable:
    """``(y0, theta) -> y`` at ``times`` (``(n, m)``): the method's formulas on the steps,
    written with dualad's operations so that every transform differentiates them, to any
    order (their numbers are SciPy's to rounding). ``fun(t, y, theta)`` is the user's.
    The second derivatives are taken through it, one evaluation of ``fun`` per stage."""
    step_of, weights = steps.locate(times, dense)
    at_end = steps.at_ends(times)
    read_at: dict = {}
    for i, j in enumerate(step_of):
        read_at.setdefault(int(j), []).append(i)
    A, B, C, S = steps.A, steps.B, steps.C, steps.stages

    def combined(y, h, coefficients, K):
        for c, k in zip(coefficients, K):
            if c:
                y = y + (h * c) * k
        return y

    def run(y0, theta):
        y, out = y0, [None] * len(step_of)
        for j in range(max(read_at) + 1):
            t, h = float(steps.t[j]), float(steps.h[j])
            K: list = []
            for s in range(S):
                K.append(fun(t + C[s] * h, combined(y, h, A[s, :s], K), theta))
            y_new = combined(y, h, B, K)
            if dense and j in read_at:
                K.append(fun(t + h, y_new, theta))
                for a, c in zip(steps.A_extra, steps.C_extra):
                    K.append(fun(t + c * h, combined(y, h, a[:len(K)], K), theta))
                for i in read_at[j]:
                    out[i] = combined(y, 1.0, weights[i], K)
            else:
                for i in read_at.get(j, ()):
                    out[i] = y_new if at_end[i] else y
            y = y_new
        return stack(out, axis=1)
    return run

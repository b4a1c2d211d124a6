"""The derivatives of an explicit Runge-Kutta solve, on the solve's own steps.

SciPy's RK23 and RK45 take each accepted step from ``t`` to ``t + h`` as

    K_s = f(t + C_s h, Y_s),   Y_s = y + h sum_{l<s} A_sl K_l,   y_new = y + h sum_s B_s K_s,

with ``K_S = f(t + h, y_new)`` after the last stage, and give ``y`` at a time of ``t_eval``
inside the step by their dense output, ``y + h sum_s w_s(x) K_s``, ``w = P (x, x^2, ...)``
at ``x = (t_eval - t) / h``. The primal solve records every accepted step (:func:`recorded`);
its derivative with the step sizes held fixed is then a linear recursion through these
formulas, whose products with ``f``'s Jacobian are taken at every stage of every step in
one call of ``f`` mapped over them (:func:`dualad.vmap`):

- forward (:func:`tangent`): the map of each step, ``dy_new = M dy + c``, for all steps at
  once (a few array operations per stage), then one small product per step;
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

METHODS = ("RK23", "RK45")
# Beyond this many numbers in the stages' Jacobians (or in the forward sweep's step maps),
# the sensitivities are integrated as an ODE instead (dualad._ode.sensitivities).
_MOST_NUMBERS = 2 ** 24


class Steps:
    """The accepted steps of one solve: their starts ``t`` and sizes ``h`` (``(J,)``),
    ``y`` at their starts (``(J, n)``) and their stages ``K`` (``(J, S + 1, n)``), with the
    method's tableau; ``y_end`` is the solve's last ``y``."""

    __slots__ = ("A", "B", "C", "K", "P", "h", "t", "y", "y_end")

    def __init__(self, method: str, records: list, y0: Any):
        scheme = _scipy_class(method)
        stages = scheme.n_stages
        self.A = np.zeros((stages, stages))  # strictly lower (SciPy's may lack its last column)
        self.A[:, :scheme.A.shape[1]] = np.tril(scheme.A, -1)
        self.B, self.C, self.P = scheme.B, scheme.C, scheme.P
        n = np.shape(y0)[0]
        self.t = np.array([r[0] for r in records], dtype=float)
        self.h = np.array([r[1] - r[0] for r in records], dtype=float)
        self.y = np.array([r[2] for r in records], dtype=float).reshape(-1, n)
        self.K = np.array([r[3] for r in records], dtype=float).reshape(-1, stages + 1, n)
        self.y_end = records[-1][4] if records else np.asarray(y0, dtype=float)

    @property
    def stages(self) -> int:
        return len(self.B)

    def usable(self, columns: int) -> bool:
        """Whether there are steps (an empty interval has none), and their stages' Jacobians
        and step maps of ``columns`` columns fit in memory."""
        J, S1, n = self.K.shape
        return 0 < J * S1 * n * (n + columns) <= _MOST_NUMBERS

    def points(self) -> tuple:
        """The times and states of every stage of every step, ``(J S + 1,)`` and
        ``(J S + 1, n)``: stage ``s`` of step ``j`` is point ``j S + s``, and a step's last
        ``K``, at its end, is the next step's first (point ``(j + 1) S``)."""
        S = self.stages
        Y = self.y[:, None, :] + self.h[:, None, None] * np.einsum("sl,jln->jsn", self.A, self.K[:, :S])
        T = self.t[:, None] + self.C[None, :S] * self.h[:, None]
        end_t = self.t[-1:] + self.h[-1:]
        return (np.concatenate([T.reshape(-1), end_t]),
                np.concatenate([Y.reshape(-1, Y.shape[-1]), self.y_end[None]]))

    def at_points(self, values: Any) -> Any:
        """``values`` of the points, ``(J S + 1, ...)``, as ``(J, S + 1, ...)`` by step."""
        S, J = self.stages, len(self.h)
        index = np.arange(J)[:, None] * S + np.arange(S + 1)[None, :]
        return values[index]

    def onto_points(self, per_stage: Any) -> Any:
        """The sum over steps and stages ``(J, S + 1, ...)`` onto the points they share."""
        S, J = self.stages, len(self.h)
        out = np.zeros((J * S + 1, *per_stage.shape[2:]))
        out[:J * S] = per_stage[:, :S].reshape(J * S, *per_stage.shape[2:])
        out[S::S] += per_stage[:, S]
        return out

    def locate(self, times: Any, dense: bool) -> tuple:
        """For each time, the step it lies in (as SciPy's ``solve_ivp`` places ``t_eval``:
        the first step that ends at it or after it) and its dense output's weights
        ``h w(x)`` (``(m, S + 1)``); ``dense`` False: the times are the steps' ends (and
        ``t0``), whose ``y`` is the step's ``y_new``, and the weights are None."""
        times = np.asarray(times, dtype=float)
        ends = self.t + self.h
        direction = 1.0 if ends[-1] >= self.t[0] else -1.0
        step = np.searchsorted(direction * ends, direction * times, side="left")
        step = np.minimum(step, len(ends) - 1)
        if not dense:
            return step, None
        x = (times - self.t[step]) / self.h[step]
        powers = np.cumprod(np.repeat(x[:, None], self.P.shape[1], axis=1), axis=1)
        return step, self.h[step, None] * powers @ self.P.T


def _scipy_class(method: str) -> type:
    return getattr(scipy_module(NUMPY_XP, "integrate", "solve_ivp"), method)


def recorded(method: str, records: list) -> type:
    """SciPy's class of ``method`` whose accepted steps append ``(t, t_new, y, K, y_new)``
    to ``records``: its numbers are SciPy's own."""
    class Recorded(_scipy_class(method)):
        def _step_impl(self):
            t = self.t
            success, message = super()._step_impl()
            if success:
                records.append((t, self.t, self.y_old, self.K.copy(), self.y))
            return success, message
    Recorded.__name__ = Recorded.__qualname__ = method
    return Recorded


def _step_maps(steps: Steps, jy: Any, g: Any) -> tuple:
    """Each step's derivative for all steps at once: ``dK`` (``(J, S + 1, n, n + k)``), the
    stages' derivatives with respect to ``(y, dtheta)``, and ``dy_new`` (``(J, n, n + k)``),
    from the Jacobians ``jy`` (``(J, S + 1, n, n)``) and ``g = J_theta dtheta``
    (``(J, S + 1, n, k)``, k = 0 for none)."""
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
    return dK, dy_new


def tangent(steps: Steps, times: Any, dense: bool, jy: Any, g: Any, ty0: Any) -> Any:
    """``dY`` at ``times``, ``(k, n, m)``, along k directions: ``ty0`` (``(k, n)``) of ``y0``
    and ``g`` (``(J S + 1, n, k)``, ``J_theta dtheta`` at the points), ``jy`` (``(J S + 1,
    n, n)``) ``f``'s Jacobians there."""
    n, k = ty0.shape[1], ty0.shape[0]
    dK, dy_new = _step_maps(steps, steps.at_points(jy), steps.at_points(g))
    J = len(steps.h)
    before = np.empty((J + 1, n, k))  # dy at each step's start, and at the last one's end
    before[0] = ty0.T
    for j in range(J):
        before[j + 1] = dy_new[j, :, :n] @ before[j] + dy_new[j, :, n:]
    step, weights = steps.locate(times, dense)
    if weights is None:  # the step's end, t0 for the first time of none
        at_end = np.asarray(times, dtype=float) != steps.t[0]
        out = np.where(at_end[:, None, None], before[step + 1], before[step])
    else:
        maps = np.einsum("ms,msnc->mnc", weights, dK[step])
        out = before[step] + maps[:, :, :n] @ before[step] + maps[:, :, n:]
    return out.transpose(2, 1, 0)


def cotangent(steps: Steps, times: Any, dense: bool, jy: Any, gy: Any) -> tuple:
    """``(dL/dy0, mu)`` for ``L = sum gy * Y`` (``gy``: ``(n, m)``), with ``jy`` (``(J S + 1,
    n, n)``) ``f``'s Jacobians at the points: ``mu`` (``(J S + 1, n)``) the cotangents of
    ``f`` there, whose pullback gives the parameters'. One pass back over the steps, and
    over each step's stages: a product with a Jacobian each."""
    n = gy.shape[0]
    J, S = len(steps.h), steps.stages
    jy = steps.at_points(jy)
    step, weights = steps.locate(times, dense)
    mu = np.zeros((J, S + 1, n))  # first the dense outputs' share: sum_e h w_s(x_e) g_e
    at_start, at_end = np.zeros((J, n)), np.zeros((J, n))
    if weights is None:
        at_end_time = np.asarray(times, dtype=float) != steps.t[0]
        np.add.at(at_end, step[at_end_time], gy.T[at_end_time])
        np.add.at(at_start, step[~at_end_time], gy.T[~at_end_time])
    else:
        np.add.at(mu, step, weights[:, :, None] * gy.T[:, None, :])
        np.add.at(at_start, step, gy.T)
    hA = steps.h[:, None, None, None] * steps.A[None, :, :, None]
    hB = steps.h[:, None, None] * steps.B[None, :, None]
    a = np.zeros(n)
    for j in reversed(range(J)):
        m, jj = mu[j], jy[j]
        end = a + at_end[j] + m[S] @ jj[S]  # y_new's, its last K's (at y_new) included
        m[:S] += hB[j] * end
        a = end + at_start[j]
        for s in range(S - 1, -1, -1):
            nu = m[s] @ jj[s]  # Y_s's
            a += nu
            if s:
                m[:s] += hA[j, s, :s] * nu
    return a, steps.onto_points(mu)


def recursion(steps: Steps, times: Any, dense: bool, fun: Callable) -> Callable:
    """``(y0, theta) -> y`` at ``times`` (``(n, m)``): the method's formulas on the steps,
    written with dualad's operations so that every transform differentiates them, to any
    order (their numbers are SciPy's to rounding). ``fun(t, y, theta)`` is the user's.
    The second derivatives are taken through it, one evaluation of ``fun`` per stage."""
    step_of, weights = steps.locate(times, dense)
    at_t0 = np.asarray(times, dtype=float) == steps.t[0]
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
                for i in read_at[j]:
                    out[i] = combined(y, 1.0, weights[i], K)
            else:
                for i in read_at.get(j, ()):
                    out[i] = y if at_t0[i] else y_new
            y = y_new
        return stack(out, axis=1)
    return run

"""The derivatives of an ODE's solution at given times, computed on plain arrays by SciPy.

With ``y' = f(t, y, theta)``, ``y(t0) = y0`` and the solution ``Y_i = y(t_i)``:

- forward sensitivities (a JVP, or every column of the Jacobian for a VJP): ``s = dy``
  along k directions solves ``s' = J_y s + J_theta dtheta``, ``s(t0) = dy0``; it is
  integrated together with ``y`` (one state of ``n (1 + k)``), by the problem's method and
  tolerances, so that the error control covers the sensitivities too;
- the adjoint (a VJP for many parameters): with cotangents ``G_i`` of ``Y_i``,
  ``a' = -J_y^T a`` is integrated backwards from the last time to ``t0``, ``a`` jumping
  by ``G_i`` at each ``t_i``, with the quadrature ``q' = -J_theta^T a``; then
  ``dL/dy0 = a(t0)`` and ``dL/dtheta = q(t0)``. ``y(t)`` comes from the forward solve's
  dense output, its steps being the checkpoints: memory is the dense output's, O(steps),
  never a record of ``fun``'s operations.

A stiff method's Newton matrix is the augmented system's exact Jacobian (for ``y`` of up
to ``COUPLED_UP_TO`` numbers), and the adjoint's tolerances are derived from ``y``'s
(:func:`adjoint_atol`).

Each is SciPy's solve of an ODE whose solution is the derivative. Where one of those
solves fails, a RuntimeError names SciPy's message. For RK23, RK45 and DOP853 the
derivatives are taken on the primal solve's steps instead (:mod:`dualad._ode.steps`), where
they fit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dualad._ode import steps as on_steps
from dualad._ode.problem import COUPLED_UP_TO, Problem, newton_matrix

__all__ = ["adjoint", "adjoint_atol", "forward_sensitivities"]


def _checked(res: Any, problem: Problem, what: str) -> Any:
    if not res.success:
        raise RuntimeError(f"{problem.who}: the {what} failed: SciPy says {res.message!r}")
    return res


def _last_step(t: Any, before: float | None) -> float | None:
    """The size of the last step of a solve at the steps ``t`` that the interval's end did
    not cut short (the one before the last), to start the next interval's solve with: an
    adjoint restarted at each time of ``y`` otherwise picks its first step again, small,
    and takes several to grow it back."""
    steps = np.abs(np.diff(np.asarray(t, dtype=float)))
    if steps.size == 0:
        return before
    return float(steps[-2] if steps.size > 1 else steps[-1])


def forward_sensitivities(problem: Problem, t_eval: Any, y0: Any, theta: tuple, ty0: Any,
                          directions: dict) -> Any:
    """``dY``, of shape ``(k, n, m)``, along the k directions ``ty0`` (``(k, n)``) and
    ``directions[i]`` (``(k, *theta[i].shape)``; absent: no move of ``theta[i]``)."""
    n, k = y0.shape[0], ty0.shape[0]
    if problem.t_span[0] == problem.t_span[-1]:  # no step: y stays y0
        return np.repeat(ty0[:, :, None].astype(float), len(t_eval), axis=2)
    steps = problem.steps(y0, theta) if problem.on_steps else None
    if steps is not None and steps.usable(k):
        T, Y = steps.points()
        jy, g = problem.stage_products(theta, directions, T, Y)
        if not directions:  # y0's alone
            g = np.zeros((*g.shape[:2], k))
        return on_steps.tangent(steps, t_eval, problem.t_eval is not None, jy, g, ty0)
    product = problem.tangent_product(theta, directions)

    def rhs(t, z):
        f, ds = product(np.float64(t), z[:n], z[n:].reshape(k, n))
        return np.concatenate([np.asarray(f, dtype=float), np.asarray(ds, dtype=float).reshape(-1)])

    jac = _forward_newton(problem, theta, directions, n, k)
    z0 = np.concatenate([y0.astype(float), ty0.astype(float).reshape(-1)])
    res = _checked(problem.scipy_solve(rhs, z0, t_eval=t_eval, jac=jac,
                                       atol=problem.sensitivity_atol(k)),
                   problem, "solve of the forward sensitivities")
    m = len(t_eval)
    return res.y[n:].reshape(k, n, m)


def adjoint(problem: Problem, t_eval: Any, y0: Any, theta: tuple, g: Any) -> tuple:
    """``(dL/dy0, dL/dtheta_1, ...)`` for ``L = sum G * Y`` with ``G = g`` (``(n, m)``)."""
    n, m = y0.shape[0], len(t_eval)
    if m == 0:
        return (np.zeros(n), *(np.zeros(th.shape) for th in theta))
    steps = problem.steps(y0, theta) if problem.on_steps else None
    if steps is not None and steps.usable(0):
        T, Y = steps.points()
        jy, _ = problem.stage_products(theta, {}, T, Y)
        dy0, mu = on_steps.cotangent(steps, t_eval, problem.t_eval is not None, jy, g)
        return (dy0, *(problem.stage_pullback(theta, T, Y, mu) if theta else ()))
    at = None if problem.on_steps else problem.kept(y0, theta)  # kept: steps, not checkpoints
    if at is None:  # not kept by the primal solve (an element of vmap's loop, long gone)
        at = _checked(problem.solve(y0, theta, t_eval=None, dense_output=True), problem,
                      "solve of y, for the adjoint's checkpoints,").sol
    sizes = [int(np.size(th)) for th in theta]
    product = problem.cotangent_product(theta)

    def rhs(t, z):
        cots = product(np.float64(t), at(t), z[:n])
        return -np.concatenate([np.asarray(c, dtype=float).reshape(-1) for c in cots])

    jac = _adjoint_newton(problem, theta, at, n, sum(sizes))
    z = np.zeros(n + sum(sizes))
    times = [float(t) for t in t_eval]
    step = problem.options.get("first_step")
    for i in reversed(range(m)):
        z[:n] += g[:, i]
        end = times[i - 1] if i else float(problem.t_span[0])
        if end != times[i] and np.any(z[:n]):  # a = 0 stays 0 (and q constant) back to end
            res = _checked(problem.scipy_solve(
                rhs, z, t_span=(times[i], end), jac=jac,
                atol=adjoint_atol(problem, at(times[i]), z[:n], theta),
                first_step=None if step is None else min(step, abs(end - times[i]))),
                problem, f"adjoint's solve from t = {times[i]} back to {end}")
            z = res.y[:, -1].copy()
            step = _last_step(res.t, step)
    out, start = [z[:n]], n
    for th, size in zip(theta, sizes):
        out.append(z[start:start + size].reshape(np.shape(th)))
        start += size
    return tuple(out)


def adjoint_atol(problem: Problem, y: Any, a: Any, theta: tuple) -> Any:
    """The adjoint's ``atol`` for ``(a, q)`` on an interval where it starts at ``a``, with
    ``y`` there: derived from the user's tolerances on ``y`` by duality.

    ``a = dL/dy``: an error ``da`` changes the loss's change along a move ``dy`` by
    ``da . dy``. ``y_i`` is resolved to ``r_i = atol_i + rtol |y_i|`` (SciPy's scale of
    its error), so the loss to ``eps = max_j |a_j| r_j``, the largest change that a move
    of one ``y_j`` it does not resolve makes. An error of ``a_i`` (of ``q_k = dL/dtheta_k``)
    is resolved when its product with that move of ``y_i`` (with ``theta_k``'s, relative,
    ``rtol |theta_k|``) is below ``rtol eps``:

        atol(a_i) = rtol eps / r_i,    atol(q_k) = eps / |theta_k|

    (infinite for ``theta_k = 0``, whose quadrature then leaves the error test, as CVODES
    leaves all of them by default). Each is in its variable's units and proportional to
    the cotangents, so scaling them scales the solve, the same steps. ``y``'s own atol,
    which the adjoint took before, is neither: Robertson's, 1e-15 on ``y_2``, whose
    adjoint is of order 1e4, and on the quadratures, below the rounding of their
    increments, stopped BDF's first backward step (and leaving every quadrature out of
    the error test lost a digit on Van der Pol's by BDF)."""
    rtol = np.maximum(np.asarray(problem.rtol, dtype=float), 100 * np.finfo(float).eps)
    r = np.asarray(problem.atol, dtype=float) + rtol * np.abs(np.asarray(y, dtype=float))
    r = np.broadcast_to(r, np.shape(a))
    r = np.where(r > 0, r, r.max() if r.max() > 0 else 1.0)  # atol 0 at y 0: the largest
    eps = np.max(np.abs(a) * r)
    scale = np.abs(np.concatenate([np.asarray(th, dtype=float).reshape(-1) for th in theta]
                                  or [np.zeros(0)]))
    with np.errstate(divide="ignore"):
        return np.concatenate([rtol * eps / r, eps / scale])


def _forward_newton(problem: Problem, theta: tuple, directions: dict, n: int, k: int) -> Any:
    """A stiff method's Newton matrix for ``(y, s_1, ..., s_k)``: the exact Jacobian,
    ``J_y`` on the diagonal and ``d/dy (J_y s_j + J_theta dtheta_j)`` coupling each ``s_j``
    to ``y`` (second derivatives of ``fun``), for ``n <= COUPLED_UP_TO``. Beyond it, or
    where ``fun`` has no second derivative, ``J_y``'s blocks alone: Newton's iterations
    on ``s`` then lag ``y``'s, and a stiff solve may take many more steps (Robertson's
    ``jvp`` by BDF: benchmarks/README.md, "solve_ivp sensitivities")."""
    jacobian = problem.user_jacobian(theta)
    if jacobian is None:
        return None
    coupled = problem.tangent_jacobian(theta, directions) if n <= COUPLED_UP_TO else None

    def blocks(t, z):
        nonlocal coupled
        if coupled is not None:
            try:
                j, c = coupled(t, z[:n], z[n:].reshape(k, n))
            except NotImplementedError:  # fun has no second derivative: y's blocks alone
                coupled = None
            else:
                return {**{(i, i): j for i in range(k + 1)},
                        **{(i + 1, 0): c[i] for i in range(k)}}
        j = jacobian(t, z[:n])
        return {(i, i): j for i in range(k + 1)}
    return newton_matrix(problem, [n] * (k + 1), blocks)


def _adjoint_newton(problem: Problem, theta: tuple, at: Any, n: int, p: int) -> Any:
    """A stiff method's Newton matrix for ``(a, q)``, whose equations are linear in them:
    exact, ``-J_y^T`` and the quadratures' rows ``-J_theta^T`` (n pullbacks), for
    ``n <= COUPLED_UP_TO``; beyond it ``-J_y^T`` alone (the quadratures then lag ``a`` by
    one Newton iteration)."""
    if not problem.stiff:
        return None
    sizes = [n, p] if p else [n]
    if n > COUPLED_UP_TO:
        jacobian = problem.user_jacobian(theta)

        def diagonal(t, z):
            j = jacobian(t, at(t))
            return {(0, 0): -(j.toarray() if hasattr(j, "toarray") else np.asarray(j)).T}
        return newton_matrix(problem, sizes, diagonal)
    rows = problem.jacobian_rows(theta)

    def blocks(t, z):
        j, *parts = rows(t, at(t))
        out = {(0, 0): -np.asarray(j).T}
        if p:
            out[1, 0] = -np.concatenate([np.asarray(q).reshape(n, -1) for q in parts], axis=1).T
        return out
    return newton_matrix(problem, sizes, blocks)

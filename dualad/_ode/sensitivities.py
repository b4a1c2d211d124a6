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

The solver's own steps are never differentiated: each is SciPy's solve of an ODE whose
solution is the derivative. Where one of those solves fails, a RuntimeError names
SciPy's message.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dualad._ode.problem import Problem, block_jacobian

__all__ = ["adjoint", "forward_sensitivities"]


def _checked(res: Any, problem: Problem, what: str) -> Any:
    if not res.success:
        raise RuntimeError(f"{problem.who}: the {what} failed: SciPy says {res.message!r}")
    return res


def _tiled(atol: Any, sizes: list) -> Any:
    """``atol`` for an augmented state: a scalar as it is; a per-component array (of
    ``sizes[0]``) repeated for each block of that size, its smallest entry elsewhere."""
    atol = np.asarray(atol, dtype=float)
    if atol.ndim == 0:
        return atol
    return np.concatenate([atol if s == atol.size else np.full(s, atol.min()) for s in sizes])


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
    product = problem.tangent_product(theta, directions)

    def rhs(t, z):
        f, ds = product(np.float64(t), z[:n], z[n:].reshape(k, n))
        return np.concatenate([np.asarray(f, dtype=float), np.asarray(ds, dtype=float).reshape(-1)])

    jacobian = problem.user_jacobian(theta)
    jac = None if jacobian is None else block_jacobian(
        problem, jacobian, [(lambda j: j, n)] * (k + 1), lambda t, z: z[:n])
    z0 = np.concatenate([y0.astype(float), ty0.astype(float).reshape(-1)])
    res = _checked(problem.scipy_solve(rhs, z0, t_eval=t_eval, jac=jac,
                                       atol=_tiled(problem.atol, [n] * (k + 1))),
                   problem, "solve of the forward sensitivities")
    m = len(t_eval)
    return res.y[n:].reshape(k, n, m)


def adjoint(problem: Problem, t_eval: Any, y0: Any, theta: tuple, g: Any) -> tuple:
    """``(dL/dy0, dL/dtheta_1, ...)`` for ``L = sum G * Y`` with ``G = g`` (``(n, m)``)."""
    n, m = y0.shape[0], len(t_eval)
    if m == 0:
        return (np.zeros(n), *(np.zeros(th.shape) for th in theta))
    at = problem.checkpoints(y0, theta)
    if at is None:  # not kept by the primal solve (an element of vmap's loop, long gone)
        at = _checked(problem.solve(y0, theta, t_eval=None, dense_output=True), problem,
                      "solve of y, for the adjoint's checkpoints,").sol
    sizes = [int(np.size(th)) for th in theta]
    product = problem.cotangent_product(theta)

    def rhs(t, z):
        cots = product(np.float64(t), at(t), z[:n])
        return -np.concatenate([np.asarray(c, dtype=float).reshape(-1) for c in cots])

    jacobian = problem.user_jacobian(theta)
    jac = None if jacobian is None else block_jacobian(
        problem, jacobian, [(lambda j: -j.T, n), (None, sum(sizes))], lambda t, z: at(t))
    atol = _tiled(problem.atol, [n, sum(sizes)])
    z = np.zeros(n + sum(sizes))
    times = [float(t) for t in t_eval]
    step = problem.options.get("first_step")
    for i in reversed(range(m)):
        z[:n] += g[:, i]
        end = times[i - 1] if i else float(problem.t_span[0])
        if end != times[i]:
            res = _checked(problem.scipy_solve(
                rhs, z, t_span=(times[i], end), jac=jac, atol=atol,
                first_step=None if step is None else min(step, abs(end - times[i]))),
                problem, f"adjoint's solve from t = {times[i]} back to {end}")
            z = res.y[:, -1].copy()
            step = _last_step(res.t, step)
    out, start = [z[:n]], n
    for th, size in zip(theta, sizes):
        out.append(z[start:start + size].reshape(np.shape(th)))
        start += size
    return tuple(out)

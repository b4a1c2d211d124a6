"""The solution of an initial value problem as entries of the table.

``ivp_solution``: operands ``y0`` and the values ``fun`` reaches (``theta``,
:class:`dualad._ode.problem.Problem`); results the times and the solution there,
``(t, y)``, computed by SciPy on plain arrays. Its rules bind two more entries, so that
``jit`` records them and ``vmap`` maps them as any other:

- ``ivp_tangent`` (the JVP): forward sensitivities along the operands' tangents, a
  chunk of directions at once;
- ``ivp_cotangent`` (the VJP): the cotangents of ``y0`` and ``theta``, by the adjoint or
  by forward sensitivities along every direction (``problem.sensitivity``).

The times are not differentiated (with ``t_eval=None`` they are the solver's steps, and
``y`` there is differentiated as at fixed times). The derivative entries have no
derivative of their own: a second derivative raises, naming what is missing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dualad._base.core import bind
from dualad._base.shapes import ndim_of
from dualad._ode.problem import Problem
from dualad._ode.sensitivities import adjoint, forward_sensitivities
from dualad._ode.steps import Steps
from dualad._table.entries import custom
from dualad._table.vjp import Dropped

__all__ = ["ivp_solution"]


def _arrays(values: tuple) -> tuple:
    """The operands as arrays (a Python float a transform held is a 0-d array here)."""
    return tuple(np.asarray(v) for v in values)


def solution_dtype(y0: Any) -> Any:
    """The dtype of ``y`` and of its tangents: ``y0``'s (SciPy solves in float64), float64
    for an integer ``y0``; as ``custom_root``'s root has ``x0``'s."""
    dtype = np.asarray(y0).dtype
    return dtype if dtype.kind == "f" else np.dtype(np.float64)


def _solution_impl(xp, y0, *theta, problem):
    theta = _arrays(theta)
    if problem.on_steps:  # the solve keeps its steps, the derivatives are taken on them
        records: list = []
        res = problem.solve(y0, theta, t_eval=problem.t_eval, records=records)
        if res.success:
            problem.keep(y0, theta, Steps(problem.method, records, y0))
    else:
        # where reverse mode takes the adjoint, the solve keeps its dense output (the same y:
        # SciPy interpolates at t_eval with it either way) as the adjoint's checkpoints
        adjoint = problem.sensitivity == "adjoint"
        res = problem.solve(y0, theta, t_eval=problem.t_eval, dense_output=adjoint)
        if adjoint and res.success:
            problem.keep(y0, theta, res.sol)
            res.sol = None
    problem.solves.record(res, res.success, res.message)
    return xp.asarray(res.t), xp.asarray(res.y, dtype=solution_dtype(y0))


def _solution_jvp(primals, tangents, ans, *, problem):
    problem.solves.check()
    moved = tuple(i for i, t in enumerate(tangents) if t is not None)
    chunk = any(ndim_of(tangents[i]) > ndim_of(primals[i]) for i in moved)
    ty = bind(_tangent_p, ans[0], *primals, *(tangents[i] for i in moved), problem=problem,
              moved=moved, chunk=chunk)
    return None, ty


def _solution_vjp(g, ans, y0, *theta, problem):
    problem.solves.check()
    gy = g[1]
    if gy is None or isinstance(gy, Dropped):
        return (None,) * (1 + len(theta))
    return bind(_cotangent_p, gy, ans[0], y0, *theta, problem=problem)


def _solution_batch(vals, batched, params, k):
    """One SciPy solve per element (``None``: the table's loop), at times that must be the
    same for every element."""
    if params["problem"].t_eval is None:
        raise ValueError(f"{params['problem'].who} under vmap needs t_eval: with t_eval=None the "
                         "solution is given at the solver's own steps, which differ from one "
                         "element of the batch to the next")
    return None


def _tangent_impl(xp, t, y0, *rest, problem, moved, chunk):
    n_theta = len(rest) - len(moved)
    rest = _arrays(rest)
    theta, given = rest[:n_theta], dict(zip(moved, rest[n_theta:]))
    if not chunk:
        given = {i: v[None] for i, v in given.items()}
    k = next(iter(given.values())).shape[0]
    ty0 = given.pop(0, None)
    ty0 = np.zeros((k, y0.shape[0])) if ty0 is None else ty0
    directions = {i - 1: v for i, v in given.items()}
    out = forward_sensitivities(problem, t, y0, theta, ty0, directions)
    return xp.asarray(out if chunk else out[0], dtype=solution_dtype(y0))


def _cotangent_impl(xp, gy, t, y0, *theta, problem):
    gy, theta = np.asarray(gy, dtype=float), _arrays(theta)
    if problem.sensitivity == "adjoint":
        cots = adjoint(problem, t, y0, theta, gy)
    else:  # forward sensitivities along every direction of every operand, then g's sum
        operands = (y0, *theta)
        sizes = [int(np.size(v)) for v in operands]
        eye, start, seeds = np.eye(sum(sizes)), 0, []
        for v, size in zip(operands, sizes):
            # in the operand's dtype: a tangent must have its primal's
            seeds.append(eye[:, start:start + size].reshape((-1, *np.shape(v))).astype(v.dtype))
            start += size
        dy = forward_sensitivities(problem, t, y0, theta, seeds[0],
                                   dict(enumerate(seeds[1:])))
        flat = np.tensordot(dy, gy, axes=([1, 2], [0, 1]))
        cots, start = [], 0
        for v, size in zip(operands, sizes):
            cots.append(flat[start:start + size].reshape(np.shape(v)))
            start += size
    return tuple(xp.asarray(c, dtype=v.dtype) for c, v in zip(cots, (y0, *theta)))


def _no_second_derivative(name: str):
    def rule(*args, **params):
        raise NotImplementedError(
            f"{params['problem'].who}: {name} has no derivative of its own, so a second "
            "derivative through solve_ivp (a derivative of a derivative: mixed.hvp, nested jvp "
            "or grad, hessian) is not supported")
    return rule


_solution_p = custom("ivp_solution", _solution_impl, jvp=_solution_jvp, vjp=_solution_vjp,
                     multiple_results=True, chunked=True, batch=_solution_batch, register=False)
_tangent_p = custom("ivp_tangent", _tangent_impl, register=False,
                    jvp=_no_second_derivative("the forward sensitivity"),
                    vjp=_no_second_derivative("the forward sensitivity"))
_cotangent_p = custom("ivp_cotangent", _cotangent_impl, multiple_results=True, register=False,
                      jvp=_no_second_derivative("the adjoint"),
                      vjp=_no_second_derivative("the adjoint"))


def ivp_solution(y0: Any, problem: Problem) -> tuple:
    """``(t, y)``: the entry applied to ``y0`` and the values ``problem`` reaches."""
    return bind(_solution_p, y0, *problem.closed.values, problem=problem)

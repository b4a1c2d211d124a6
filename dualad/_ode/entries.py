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
``y`` there is differentiated as at fixed times). The derivative entries' own derivatives
(second derivatives) are, for RK45, RK23 and DOP853, those of the method's formulas on the
solve's steps (:meth:`dualad._ode.problem.Problem.through_steps`); for the other methods,
and under vmap (where each element has steps of its own), those of the forward
sensitivities' ODE, ``(y, s)' = (f, J_y s + J_theta dtheta)``, solved
as a problem of its own by ``ivp_solution``
(:meth:`dualad._ode.problem.Problem.sensitivity_system`), so that its derivatives are these
entries' again, by ``fun``'s second derivatives: ``ivp_tangent``'s are that solution's,
``ivp_cotangent``'s those of the forward sensitivities along every direction summed with
the cotangent (whatever ``sensitivity`` says of the first derivative).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dualad._base.core import bind
from dualad._base.reverse_mode import registered_vjp
from dualad._base.shapes import batched, dtype_of, ndim_of, raw, shape_of
from dualad._forward.transforms import jvp
from dualad._ode.problem import Problem
from dualad._ode.sensitivities import adjoint, forward_sensitivities
from dualad._ode.steps import Steps
from dualad._staging.trace import spoil_traces
from dualad._table.entries import custom
from dualad._table.vjp import Dropped
from dualad.numpy import asarray
from dualad.ops import broadcast_to, concatenate, reshape, tensordot

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
    operands = (y0, *theta)
    if problem.sensitivity == "adjoint":
        cots = adjoint(problem, t, y0, theta, gy)
    else:  # forward sensitivities along every direction of every operand, then g's sum
        seeds = _basis(operands)
        dy = forward_sensitivities(problem, t, y0, theta, seeds[0], dict(enumerate(seeds[1:])))
        cots = _split(np.tensordot(dy, gy, axes=([1, 2], [0, 1])), operands)
    return tuple(xp.asarray(c, dtype=v.dtype) for c, v in zip(cots, operands))


def _basis(operands: tuple) -> list:
    """The unit directions of all the operands' numbers together, as one chunk per operand
    (``(p, *shape)``, ``p`` the numbers of all), in the operand's dtype (a tangent must have
    its primal's)."""
    shapes = [shape_of(v) for v in operands]  # an element's, under vmap
    sizes = [math.prod(shape) for shape in shapes]
    eye, start, seeds = np.eye(sum(sizes)), 0, []
    for v, shape, size in zip(operands, shapes, sizes):
        seeds.append(eye[:, start:start + size].reshape((-1, *shape)).astype(dtype_of(raw(v))))
        start += size
    return seeds


def _split(flat: Any, operands: tuple) -> list:
    """``flat``, one number per direction of :func:`_basis`, as arrays of the operands' shapes."""
    parts, start = [], 0
    for v in operands:
        shape = shape_of(v)
        parts.append(reshape(flat[start:start + math.prod(shape)], shape))
        start += math.prod(shape)
    return parts


# -- second derivatives: the derivative entries' own derivatives -------------------------------
# RK45, RK23 and DOP853: through the method's formulas on the solve's steps. The other
# methods: through the forward sensitivities' ODE solved as a problem of its own
# (Problem.sensitivity_system), whose derivatives are those of any solution, by these entries.
def _as_operands(values: tuple, like: tuple) -> tuple:
    """``values`` in the dtypes of the values ``like`` (a rule's results are its operands')."""
    return tuple(v if v is None else asarray(v, dtype=dtype_of(raw(w)))
                 for v, w in zip(values, like))


def _filled(values: tuple, like: tuple) -> tuple:
    """``values`` with each None (or dropped) one zeros of the value of ``like`` it stands for."""
    return tuple(np.zeros(shape_of(w), dtype_of(raw(w))) if v is None or isinstance(v, Dropped) else v
                 for v, w in zip(values, like))


def _tangent_through_steps(problem: Problem, t: Any, moved: tuple) -> Any:
    """``(y0, *theta, *tangents) -> ivp_tangent``'s value, by forward mode through the steps."""
    def tangent(y0, *rest):
        n_theta = len(rest) - len(moved)
        theta, given = rest[:n_theta], rest[n_theta:]
        operands = (y0, *theta)
        through = problem.through_steps(t, y0, theta)

        def of_moved(*values):
            full = list(operands)
            for i, v in zip(moved, values):
                full[i] = v
            return through(full[0], tuple(full[1:]))
        ty = jvp(of_moved, tuple(operands[i] for i in moved), tuple(given))[1]
        return asarray(ty, dtype=solution_dtype(raw(y0)))
    return tangent


def _tangent_through_sensitivities(problem: Problem, t: Any, moved: tuple, chunk: bool) -> Any:
    """``(y0, *theta, *tangents) -> ivp_tangent``'s value: the sensitivities' half of the
    solution of their ODE with ``y``, solved by :func:`ivp_solution`, so differentiable."""
    def tangent(y0, *rest):
        n_theta = len(rest) - len(moved)
        theta, given = rest[:n_theta], dict(zip(moved, rest[n_theta:]))
        if not chunk:
            given = {i: v[None] for i, v in given.items()}
        k = shape_of(next(iter(given.values())))[0]  # an element's, under vmap
        n = shape_of(y0)[0]
        ty0 = given.pop(0, None)
        ty0 = np.zeros((k, n), dtype=solution_dtype(raw(y0))) if ty0 is None else ty0
        # t_eval where given: under vmap t is the batch's, one row per element, all the same
        times = np.asarray(raw(t) if problem.t_eval is None else problem.t_eval, dtype=float)
        if problem.t_span[0] == problem.t_span[-1]:  # no step: the sensitivities stay ty0
            ty = broadcast_to(reshape(ty0, (k, n, 1)), (k, n, times.size))
        else:
            system = problem.sensitivity_system(times, n, theta,
                                                {i - 1: v for i, v in given.items()}, k)
            z = ivp_solution(concatenate([asarray(y0, dtype=solution_dtype(raw(y0))),
                                          reshape(ty0, (-1,))]), system)[1]
            system.solves.check()
            ty = reshape(z[n:], (k, n, -1))
        return ty if chunk else ty[0]
    return tangent


def _on_steps(problem: Problem, values: tuple) -> bool:
    """Whether the derivative entries' derivatives are taken on the solve's steps: RK45,
    RK23 and DOP853 where ``second_order`` says so, and no value is batched by vmap (each
    element of a batch has steps of its own: the sensitivities' ODE is solved for each
    element instead). Under ``jit`` they then run eagerly (a program would replay the steps
    of the traced point's solve at every call)."""
    if not (problem.on_steps and problem.second_order == "steps"
            and not any(batched(v) for v in values)):
        return False
    spoil_traces(values, f"{problem.who}'s second derivatives on the solve's steps (the step "
                         "sizes SciPy chose at the traced point would be replayed as constants; "
                         "second_order='sensitivities' compiles)")
    return True


def _tangent_of(problem: Problem, t: Any, moved: tuple, chunk: bool, operands: tuple) -> Any:
    if _on_steps(problem, operands):
        return _tangent_through_steps(problem, t, moved)
    return _tangent_through_sensitivities(problem, t, moved, chunk)


def _tangent_jvp(primals, tangents, ans, *, problem, moved, chunk):
    operands = primals[1:]
    return jvp(_tangent_of(problem, primals[0], moved, chunk, operands), operands,
               _filled(tangents[1:], operands))[1]


def _tangent_vjp(g, ans, t, *operands, problem, moved, chunk):
    pull = _reverse(problem)(_tangent_of(problem, t, moved, chunk, operands), *operands)[1]
    return (None, *_as_operands(pull(g), operands))


def _cotangent_through_steps(problem: Problem, t: Any) -> Any:
    """``(gy, y0, *theta) -> ivp_cotangent``'s values, by reverse mode through the steps."""
    def cotangents(gy, y0, *theta):
        through = problem.through_steps(t, y0, theta)
        cots = _reverse(problem)(lambda y0, *th: through(y0, th), y0, *theta)[1](gy)
        return _as_operands(cots, (y0, *theta))
    return cotangents


def _cotangent_through_sensitivities(problem: Problem, t: Any) -> Any:
    """``(gy, y0, *theta) -> ivp_cotangent``'s values, as ``sensitivity="forward"`` computes
    them (whatever the problem's sensitivity): the forward sensitivities along every
    direction of every operand (:func:`_tangent_through_sensitivities`), summed with ``gy``."""
    def cotangents(gy, y0, *theta):
        operands = (y0, *theta)
        moved = tuple(range(len(operands)))
        dy = _tangent_through_sensitivities(problem, t, moved, True)(
            y0, *theta, *_basis(operands))
        return _as_operands(_split(tensordot(dy, gy, axes=([1, 2], [0, 1])), operands), operands)
    return cotangents


def _cotangent_of(problem: Problem, t: Any, values: tuple) -> Any:
    if _on_steps(problem, values):
        return _cotangent_through_steps(problem, t)
    return _cotangent_through_sensitivities(problem, t)


def _cotangent_jvp(primals, tangents, ans, *, problem):
    gy, t, *operands = primals
    values = (gy, *operands)
    return jvp(_cotangent_of(problem, t, values), values,
               _filled((tangents[0], *tangents[2:]), values))[1]


def _cotangent_vjp(g, ans, gy, t, *operands, problem):
    pull = _reverse(problem)(_cotangent_of(problem, t, (gy, *operands)), gy, *operands)[1]
    cots = pull(_filled(tuple(g), ans))
    return (cots[0], None, *_as_operands(cots[1:], operands))


def _reverse(problem: Problem) -> Any:
    return registered_vjp(f"the second derivative of {problem.who}",
                          "or use forward mode over forward mode (dualad.hessian) through it")


_solution_p = custom("ivp_solution", _solution_impl, jvp=_solution_jvp, vjp=_solution_vjp,
                     multiple_results=True, chunked=True, batch=_solution_batch, register=False)
_tangent_p = custom("ivp_tangent", _tangent_impl, register=False, jvp=_tangent_jvp,
                    vjp=_tangent_vjp)
_cotangent_p = custom("ivp_cotangent", _cotangent_impl, multiple_results=True, register=False,
                      jvp=_cotangent_jvp, vjp=_cotangent_vjp)


def ivp_solution(y0: Any, problem: Problem) -> tuple:
    """``(t, y)``: the entry applied to ``y0`` and the values ``problem`` reaches."""
    return bind(_solution_p, y0, *problem.closed.values, problem=problem)

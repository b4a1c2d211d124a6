"""``custom_root``: a root of ``F(x) = 0`` by any solver, differentiated by the implicit
function theorem, never through the solver's iterations.

The entry's operands are the initial guess (whose derivative is zero: the root does
not depend on where the search started) and the values ``F`` closes over, ``theta``
(:class:`dualad._implicit.closure.Closed`). At the root ``x*``, ``F(x*, theta) = 0``, so

    dx* = -(dF/dx)^-1 (dF/dtheta dtheta)

- JVP: the product ``dF/dtheta dtheta`` (one forward-mode evaluation of ``F``, for a
  whole chunk of directions at once: ``jacfwd``'s), then the solve with ``dF/dx`` by
  ``tangent_solve``, of the chunk's tangents as one stack of right-hand sides, through
  the ``custom_linear_solve`` entry, whose operands are ``x*`` and ``theta``: a second
  derivative differentiates that solve (its ``dA x`` term holds ``d2F``) and nothing else;
- VJP: ``lam = dF/dx^-T g`` by ``tangent_solve`` on the transposed Jacobian (the same
  entry), then ``g_theta = -dF/dtheta^T lam``, one pullback of ``F``.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from dualad._base.checks import check_callable, check_differentiable
from dualad._base.core import bind
from dualad._base.shapes import ndim_of, shape_of
from dualad._forward.transforms import jvp
from dualad._implicit.closure import Closed
from dualad._implicit.linear_solve import linear_solve, solution
from dualad._implicit.operators import Jacobian, joint_jacobian, pullback
from dualad._primitives.elementwise import negative
from dualad._table.entries import custom

__all__ = ["custom_root", "implicit_root"]


def _impl(xp, x0, *theta, f, solve, tangent_solve, symmetric, check):
    with f.running(theta):
        return solution(xp, solve(f.fn, x0), x0, f.who, "solve")


def _operators(f: Closed, symmetric: bool) -> tuple:
    jac = Jacobian(f)
    return jac, (jac if symmetric else Jacobian(f, transposed=True))


def _jvp(primals, tangents, ans, *, f, solve, tangent_solve, symmetric, check):
    theta, t_theta = primals[1:], tangents[1:]
    moved = [i for i, t in enumerate(t_theta) if t is not None]
    if not moved:  # only the initial guess moves: the root does not
        return None
    if check is not None:
        check()

    def residual(*th):
        values = list(theta)
        for i, v in zip(moved, th):
            values[i] = v
        return f.call(ans, values)
    # a chunk of k directions (jacfwd): dF/dtheta along all of them in one forward pass,
    # then their k solves as one stack
    _, rhs = jvp(residual, tuple(theta[i] for i in moved), tuple(t_theta[i] for i in moved))
    jac, jac_t = _operators(f, symmetric)
    return negative(linear_solve(rhs, [ans, *theta], operator=jac, transposed=jac_t,
                                 solve=tangent_solve, transpose_solve=tangent_solve, closed=f,
                                 stacked=ndim_of(rhs) > ndim_of(ans)))


def _vjp(g, ans, x0, *theta, f, solve, tangent_solve, symmetric, check):
    if not theta:
        return (None,)
    if check is not None:
        check()
    jac, jac_t = _operators(f, symmetric)
    # a solver that factorizes dF/dx: with dF/dtheta from the same forward pass, where small
    joint = (joint_jacobian(f, (ans, *theta))
             if math.prod(shape_of(ans)) <= getattr(tangent_solve, "factorizes_up_to", -1) else None)
    lam = linear_solve(g, [ans, *theta], operator=jac_t, transposed=jac, solve=tangent_solve,
                       transpose_solve=tangent_solve, closed=f)
    if joint is not None:
        return (None, *joint.pullback(negative(lam)))
    pull = pullback(lambda *th: f.call(ans, th), tuple(theta), f"the VJP of {f.who}")
    return (None, *pull(negative(lam)))


_root_p = custom("custom_root", _impl, jvp=_jvp, vjp=_vjp, chunked=True)


def implicit_root(f: Closed, x0: Any, solve: Callable, tangent_solve: Callable, *,
                  symmetric: bool = False, check: Callable[[], None] | None = None) -> Any:
    """The entry applied to a closed residual ``f``: ``symmetric`` says ``dF/dx`` is (a
    gradient's Jacobian, a Hessian), so the transposed system is solved as the system;
    ``check()``, where given, raises before a derivative is taken at a root the solver
    did not reach (``dualad.scipy`` passes SciPy's convergence)."""
    return bind(_root_p, x0, *f.values, f=f, solve=solve, tangent_solve=tangent_solve,
                symmetric=symmetric, check=check)


def custom_root(f: Callable, x0: Any, solve: Callable, tangent_solve: Callable) -> Any:
    """A root of ``f`` found by ``solve``, differentiated by the implicit function theorem.

    As JAX's ``jax.lax.custom_root``: the value is ``solve(f, x0)``, computed on plain
    arrays by any method; its derivative with respect to every value ``f`` closes over
    is ``-(df/dx)^-1 df/dtheta`` at the root, one linear solve by ``tangent_solve`` per
    JVP (with the Jacobian ``df/dx`` applied by forward mode) and one per VJP (with its
    transpose, by reverse mode). The solver's iterations are never differentiated, and
    the derivative with respect to ``x0`` is zero. Higher derivatives (``mixed.hvp``,
    nested ``jvp``), ``vmap`` and ``jit`` go through it as through any entry.

    Parameters
    ----------
    f : callable
        The residual ``x -> F(x)``, of ``x``'s shape, written with differentiable
        operations; the values it closes over (of any transform) are the parameters.
    x0 : array or float
        The initial guess; the root has its shape and dtype.
    solve : callable
        ``solve(f, x0) -> x`` with ``f(x) = 0``, run on plain arrays.
    tangent_solve : callable
        ``tangent_solve(g, y) -> z`` with ``g(z) = y`` for a linear ``g`` (the Jacobian's
        product, or its transpose's); ``lambda g, y: y / g(1.0)`` for a scalar root,
        a dense or Krylov solve otherwise. One whose attribute ``stacked`` is True is
        given the tangents of a ``jacfwd`` chunk in one call, ``y`` of shape
        ``(k, *x0.shape)``, and returns the k solutions; others are called per tangent.
        One whose attribute ``factorizes_up_to`` is an int builds ``g``'s matrix
        (``g.matrix()``) for up to that many unknowns: a VJP there takes ``df/dtheta``
        from the same forward-mode pass where the parameters are few.

    Returns
    -------
    array
        The root, of ``x0``'s shape and dtype.

    Examples
    --------
    >>> import numpy as np
    >>> import reverse
    >>> import dualad
    >>> def newton(f, x):
    ...     for _ in range(30):
    ...         x = x - f(x) / dualad.derivative(f)(x)
    ...     return x
    >>> def sqrt(a):   # the root of x**2 - a
    ...     return dualad.custom_root(lambda x: x ** 2 - a, 1.0, newton, lambda g, y: y / g(1.0))
    >>> round(float(sqrt(2.0)), 12), round(float(dualad.derivative(sqrt)(2.0)), 12)  # 1 / (2 sqrt(2))
    (1.414213562373, 0.353553390593)
    >>> float(reverse.grad(sqrt)(4.0))
    0.25
    """
    who = "custom_root"
    check_callable(solve, who, "solve", "solve(f, x0)")
    check_callable(tangent_solve, who, "tangent_solve", "tangent_solve(g, y)")
    check_differentiable(x0, f"{who}: x0")
    return implicit_root(Closed(f, [solve, tangent_solve], who, "f"), x0, solve, tangent_solve)

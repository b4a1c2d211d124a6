"""``custom_linear_solve``: the solution of ``A x = b`` by any solver, differentiated as
the solution, never through the solver's iterations.

The entry's operands are ``b`` and the values ``A`` depends on (found in ``matvec``'s
closure, :class:`dualad._implicit.closure.Closed`). Its impl calls the user's
``solve(matvec, b)``; its derivative is that of ``x = A(theta)^-1 b``:

- JVP: ``dx = A^-1 (db - dA x)``, one more solve of the same system, by the same
  entry (so the tangent is itself differentiable: a second derivative is one more);
- VJP: ``lam = A^-T g`` by ``transpose_solve`` (the entry again, transposed), then
  ``gb = lam`` and ``g_theta = -(d/dtheta <lam, A(theta) x>)``, the pullback of one
  product.

A stacked entry (``stacked=True``: ``custom_root``'s JVP, whose ``jacfwd`` chunk of
tangents is a stack of right-hand sides with the one ``A``) solves every row of ``b``
in one call of a ``solve`` that says it takes a stack (its attribute ``stacked`` is
True: the kept factorization of :mod:`dualad.scipy._tangent`, one LAPACK call with a
matrix right-hand side), and row by row otherwise; its rules apply ``A`` to the rows
of ``x`` by ``vmap``.
"""

from __future__ import annotations

from typing import Any, Callable

from dualad._base.checks import check_callable, check_differentiable
from dualad._base.core import bind
from dualad._batching.vmap import vmap
from dualad._forward.transforms import jvp
from dualad._implicit.closure import Closed
from dualad._implicit.operators import Matvec, Transposed, pullback
from dualad._primitives.elementwise import negative, subtract
from dualad._table.entries import custom

__all__ = ["custom_linear_solve", "linear_solve", "solution"]


def solution(xp: Any, x: Any, like: Any, who: str, name: str) -> Any:
    """``x``, what a solver returned, as an array of the namespace, shape and dtype of
    ``like``; a solver that returned something else is named."""
    x, like = xp.asarray(x), xp.asarray(like)
    if tuple(x.shape) != tuple(like.shape):
        raise ValueError(f"{who}: {name} must return the solution, of shape {tuple(like.shape)} "
                         f"(that of the unknowns), got shape {tuple(x.shape)}")
    return x if x.dtype == like.dtype else xp.astype(x, like.dtype)


def _impl(xp, b, *theta, operator, transposed, solve, transpose_solve, closed, stacked):
    with closed.running(theta):
        matvec = operator(*theta)
        if not stacked or getattr(solve, "stacked", False):
            return solution(xp, solve(matvec, b), b, closed.who, "solve")
        rows = [solution(xp, solve(matvec, b[i, ...]), b[i, ...], closed.who, "solve")
                for i in range(b.shape[0])]
        return xp.stack(rows) if rows else xp.zeros_like(b)


def _product(matvec: Callable, x: Any, stacked: bool) -> Any:
    """``A x``, or ``A`` applied to each row of ``x`` where ``stacked``."""
    return vmap(matvec)(x) if stacked else matvec(x)


def _put(values: list, at: list, new: tuple) -> list:
    values = list(values)
    for i, v in zip(at, new):
        values[i] = v
    return values


def _jvp(primals, tangents, ans, **params):
    b, *theta = primals
    rhs, t_theta = tangents[0], tangents[1:]
    moved = [i for i, t in enumerate(t_theta) if t is not None]
    if moved:  # dA x, the product's tangent along the operands' tangents
        operator, stacked = params["operator"], params["stacked"]
        _, dax = jvp(lambda *th: _product(operator(*_put(theta, moved, th)), ans, stacked),
                     tuple(theta[i] for i in moved), tuple(t_theta[i] for i in moved))
        rhs = negative(dax) if rhs is None else subtract(rhs, dax)
    return bind(_linear_solve_p, rhs, *theta, **params)


def _vjp(g, ans, b, *theta, operator, transposed, solve, transpose_solve, closed, stacked):
    if transpose_solve is None:
        raise ValueError(f"{closed.who}: reverse mode solves the transposed system, so it needs "
                         "transpose_solve (or symmetric=True where A is symmetric); got "
                         "transpose_solve=None")
    lam = bind(_linear_solve_p, g, *theta, operator=transposed, transposed=operator,
               solve=transpose_solve, transpose_solve=solve, closed=closed, stacked=stacked)
    if not theta:
        return (lam,)
    pull = pullback(lambda *th: _product(operator(*th), ans, stacked), tuple(theta),
                    f"the VJP of {closed.who}")
    return (lam, *pull(negative(lam)))


_linear_solve_p = custom("custom_linear_solve", _impl, jvp=_jvp, vjp=_vjp)


def linear_solve(b: Any, operands: list, *, operator: Callable, transposed: Callable | None,
                 solve: Callable, transpose_solve: Callable | None, closed: Closed,
                 stacked: bool = False) -> Any:
    """The entry applied: ``solve(operator(*operands), b)``, differentiable in ``b`` and in
    ``operands`` through ``operator`` (and ``transposed``, the transpose's operator); with
    ``stacked``, for each row of ``b`` (a stack of right-hand sides) with the one operator."""
    return bind(_linear_solve_p, b, *operands, operator=operator, transposed=transposed,
                solve=solve, transpose_solve=transpose_solve, closed=closed, stacked=stacked)


def custom_linear_solve(matvec: Callable, b: Any, solve: Callable,
                        transpose_solve: Callable | None = None, symmetric: bool = False) -> Any:
    """The solution of ``matvec(x) = b`` by ``solve``, differentiated implicitly.

    As JAX's ``jax.lax.custom_linear_solve``: the value is ``solve(matvec, b)``,
    computed on plain arrays by any method (a factorization, a Krylov method, SciPy);
    its derivative is that of ``A^-1 b``, with respect to ``b`` and to every value
    ``matvec`` closes over, whatever ``solve`` did. A JVP is one more call of ``solve``
    (``A dx = db - dA x``), a VJP one call of ``transpose_solve`` (``A^T lam = g``), so
    the solver's iterations are never differentiated.

    Parameters
    ----------
    matvec : callable
        ``v -> A v``, linear, written with differentiable operations; the values it
        closes over (arrays of any transform: ``reverse.grad``'s, ``jvp``'s, ``vmap``'s,
        ``jit``'s) are those ``A`` is differentiated with respect to.
    b : array
        The right-hand side, of the unknowns' shape.
    solve : callable
        ``solve(matvec, b) -> x``, on plain arrays. What it closes over is not
        differentiated (JAX's semantics: the solution does not depend on how it was found).
    transpose_solve : callable, optional
        ``transpose_solve(vecmat, b) -> x`` solves ``A^T x = b``; needed by reverse mode
        unless ``symmetric``.
    symmetric : bool
        ``A`` is symmetric: reverse mode uses ``solve`` for the transposed system.

    Returns
    -------
    array
        The solution, of ``b``'s shape and dtype.

    Examples
    --------
    >>> import numpy as np
    >>> import reverse
    >>> import dualad
    >>> def x_of(a):
    ...     matvec = lambda v: a * v          # a diagonal system: A = diag(a)
    ...     return dualad.custom_linear_solve(matvec, np.ones(2), lambda mv, b: b / mv(np.ones(2)),
    ...                                       symmetric=True)
    >>> x_of(np.array([2.0, 4.0]))
    array([0.5 , 0.25])
    >>> reverse.grad(lambda a: x_of(a).sum())(np.array([2.0, 4.0]))   # -1 / a**2
    array([-0.25  , -0.0625])
    """
    who = "custom_linear_solve"
    check_callable(solve, who, "solve", "solve(matvec, b)")
    if transpose_solve is not None:
        check_callable(transpose_solve, who, "transpose_solve", "transpose_solve(vecmat, b) (or be None)")
    if not isinstance(symmetric, bool):
        raise TypeError(f"{who}: symmetric must be a bool, got {type(symmetric).__name__}")
    check_differentiable(b, f"{who}: b")
    closed = Closed(matvec, [solve, transpose_solve], who, "matvec")
    operator = Matvec(closed)
    if symmetric:
        transposed, transpose_solve = operator, solve
    else:
        transposed = Transposed(operator, who)
    return linear_solve(b, closed.values, operator=operator, transposed=transposed, solve=solve,
                        transpose_solve=transpose_solve, closed=closed)

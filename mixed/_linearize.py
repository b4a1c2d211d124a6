"""The Hessian at a point as a linear operator whose products replay a program.

``linearize(f, x)`` is ``jax.linearize(jax.grad(f), x)``: the gradient at
``x``, and the Hessian there as an operator. On NumPy it is
:func:`dualad.linearize` of the reverse-mode gradient: the forward-over-reverse
program is traced once, its primal half computed at ``x``, and each ``H @ p``
replays only the tangent half. Elsewhere (CuPy, Dask, ``array_api_strict``)
each product is one forward-over-reverse pass (:func:`mixed.hvp`).

The operator is a duck type rather than a ``scipy.sparse.linalg.LinearOperator``
subclass: SciPy is not a dependency, the same object serves every backend,
and ``aslinearoperator`` (which ``cg``, ``minres`` and ``gmres`` call on
their operator) accepts anything with ``shape``, ``dtype`` and ``matvec``.
"""

from __future__ import annotations

from typing import Any, Callable

import dualad
import reverse
from dualad.interpreter import (
    check_differentiable,
    describe,
    dtype_of,
    namespace_of,
    raw,
    shape_of,
    traceable,
)
from mixed._hvp import MODES, _grad_and_hvp, check_objective, check_vector

__all__ = ["HessianOperator", "linearize"]


def linearize(f: Callable, x: Any, *, args: tuple = ()) -> tuple[Any, "HessianOperator"]:
    """The gradient of scalar ``f`` at ``x``, and the Hessian there as an operator
    (JAX users write ``jax.linearize(jax.grad(f), x)``).

    On NumPy, ``f`` runs once, here, traced in forward-over-reverse mode;
    what depends only on ``x`` (f's forward pass, the backward pass's
    primal half) is computed now, and each ``H @ p`` replays the tangent
    half of that program without running ``f``'s Python, so that a Krylov
    solver's inner iterations never redo the primal work. Where ``f`` cannot
    be traced (it draws random numbers, say) and on other backends, each
    product is one :func:`mixed.hvp` pass, with the same numbers. The value
    of ``f`` is not returned: the line search or trust-region test that
    needs it evaluates ``f`` at its own points. ``H.at(y)`` linearizes at
    another point from the same trace.

    Parameters
    ----------
    f : callable
        Scalar objective ``f(x, *args)`` of a 1-d floating array ``x``.
    x : array
        The point (NumPy, CuPy, Dask or any array-API array, float32 or float64).
    args : tuple
        Further arguments of ``f``, held constant (SciPy's ``args``).

    Returns
    -------
    grad : array
        The gradient of ``f`` at ``x``, of ``x``'s shape and dtype.
    H : HessianOperator
        ``H @ p`` (``H.matvec(p)``) for a vector ``p``, ``H @ P`` (``H.matmat(P)``)
        for an ``(n, k)`` block of them; a ``scipy.sparse.linalg`` solver takes it as it is.

    Examples
    --------
    >>> import numpy as np
    >>> from mixed import linearize
    >>> g, H = linearize(lambda x, a: (a * x ** 3).sum(), np.array([1.0, 2.0]), args=(2.0,))
    >>> g, H @ np.array([1.0, 0.0])
    (array([ 6., 24.]), array([12.,  0.]))
    >>> H.shape, H.dtype
    ((2, 2), dtype('float64'))
    >>> g, H = H.at(np.array([1.0, 1.0]))  # the same trace, at another point
    >>> g, H @ np.array([1.0, 0.0])
    (array([6., 6.]), array([12.,  0.]))
    """
    f_of_x = check_objective(f, args, "linearize")
    check_vector(x, "linearize: x")
    check_differentiable(x, "linearize: x")
    if traceable(x):
        return _operator(*dualad.linearize(reverse.grad(f_of_x), x), x)

    def at(y):
        return reverse.grad(f_of_x)(y), HessianOperator(
            y, lambda p: _grad_and_hvp(f, y, p, args, 0, False, MODES[0], "linearize")[1], at)
    return at(x)


def _operator(g: Any, f_jvp: Callable, x: Any) -> tuple:
    """``(g, H)`` from ``dualad.linearize`` of the gradient at ``x``; ``H.at`` reuses its trace."""
    return g, HessianOperator(x, f_jvp, lambda y: _operator(*f_jvp.at(y), y))


class HessianOperator:
    """A Hessian as a linear operator: ``H @ p``, ``matvec``, ``rmatvec`` (the same:
    H is symmetric), ``matmat``, ``shape`` and ``dtype``, as
    ``scipy.sparse.linalg.LinearOperator`` has them. Made by :func:`linearize`.

    A vector ``p`` of shape ``(n,)`` or ``(n, 1)`` (the result has its shape) or
    a block of shape ``(n, k)`` (the k products go through in one pass); an
    integer or other floating ``p`` is cast to the operator's dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.sparse.linalg import cg
    >>> from mixed import linearize
    >>> g, H = linearize(lambda x: (x ** 4).sum() + x[0] * x[1], np.array([1.0, 1.0]))
    >>> p, info = cg(H, -g, rtol=1e-12)
    >>> info, np.allclose(H @ p, -g)
    (0, True)
    """

    def __init__(self, x: Any, product: Callable[[Any], Any], at: Callable[[Any], tuple]):
        n = shape_of(x)[0]
        self.shape, self.dtype = (n, n), dtype_of(raw(x))
        self._x, self._product, self._at = raw(x), product, at

    def at(self, x: Any) -> tuple:
        """``linearize(f, x, args=args)`` at another point ``x`` of the same shape and
        dtype, from this operator's trace: ``f`` is not run again on NumPy where the
        trace holds (its guards on ``x`` give the same outcomes), as an optimizer
        needs at each iterate. Arrays ``f`` closes over are those of the first trace."""
        check_vector(x, "HessianOperator.at: x")
        return self._at(x)

    def __repr__(self) -> str:
        return f"<HessianOperator {self.shape[0]}x{self.shape[1]} {self.dtype}>"

    def matvec(self, p: Any) -> Any:
        """H p for a vector ``p``, of shape ``(n,)`` or ``(n, 1)``."""
        q = self._cast(p, "p")
        n = self.shape[0]
        if shape_of(q) == (n,):
            return self._product(q)
        if shape_of(q) == (n, 1):
            return namespace_of([q]).reshape(self._product(namespace_of([q]).reshape(q, (n,))), (n, 1))
        raise ValueError(f"HessianOperator.matvec: p must have shape ({n},) or ({n}, 1), "
                         f"got shape {shape_of(q)}")

    rmatvec = matvec

    def matmat(self, P: Any) -> Any:
        """H P for a block ``P`` of shape ``(n, k)``: its k columns in one pass."""
        q = self._cast(P, "P")
        if len(shape_of(q)) != 2 or shape_of(q)[0] != self.shape[0]:
            raise ValueError(f"HessianOperator.matmat: P must have shape ({self.shape[0]}, k), "
                             f"got shape {shape_of(q)}")
        xp = namespace_of([q])
        return xp.permute_dims(self._product(xp.permute_dims(q, (1, 0))), (1, 0))

    rmatmat = matmat

    def __matmul__(self, p: Any) -> Any:
        q = self._cast(p, "p")
        shape = shape_of(raw(q))
        return self.matmat(q) if len(shape) == 2 and shape[1] != 1 else self.matvec(q)

    def _cast(self, p: Any, name: str) -> Any:
        """``p`` as a direction: an array of the operator's backend, in its dtype."""
        r = raw(p)
        if not (hasattr(r, "shape") and hasattr(r, "dtype")):
            raise TypeError(f"HessianOperator: {name} must be an array of {self.shape[0]} entries "
                            f"(or ({self.shape[0]}, k)), got {describe(p)}")
        xp = namespace_of([self._x])
        if not xp.isdtype(r.dtype, ("integral", "real floating")):
            raise TypeError(f"HessianOperator: {name} must be a real array, got dtype {dtype_of(r)}")
        if r is not p or r.dtype == self.dtype:
            return p
        return namespace_of([self._x, r]).astype(r, self.dtype)

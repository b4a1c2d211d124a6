"""Reductions beyond the sum (which is in ``shape``, beside broadcasting, its
transpose): prod, max and min (custom rules), and the composites mean, var, std.

Axes are normalized to a sorted tuple of negative axes (see ``shape``).
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from dualad._base.backend import namespace_of
from dualad._base.core import bind
from dualad._base.shapes import is_complex, ndim_of, normalize_axes, primal, raw, shape_of
from dualad._primitives import elementwise as _ew
from dualad._primitives import shape as _shape
from dualad._primitives.shape import _expand, _kept_shape, _numpy_keywords, by_slices, sum
from dualad._table.entries import custom

__all__ = ["mean", "prod", "max", "min", "var", "std", "amax", "amin"]


def mean(x, axis=None, keepdims=False, *, dtype=None, out=None):
    x = _numpy_keywords(x, dtype, out, "mean")
    axes = normalize_axes(axis, ndim_of(x))
    shape = shape_of(x)
    count = math.prod(shape[a] for a in axes)
    return sum(x, axes, keepdims) / float(count) if count else sum(x, axes, keepdims) * math.nan


def var(x, axis=None, keepdims=False, ddof=0, correction=None, *, dtype=None, out=None):
    """Variance; ``correction`` (array API) and ``ddof`` (NumPy) are aliases."""
    x = _numpy_keywords(x, dtype, out, "var")
    ddof = ddof if correction is None else correction
    axes = normalize_axes(axis, ndim_of(x))
    count = math.prod(shape_of(x)[a] for a in axes)
    d = x - mean(x, axes, keepdims=True)
    squares = _ew.real(_ew.multiply(d, _ew.conj(d))) if is_complex(d) else d * d
    return sum(squares, axes, keepdims) / float(builtins.max(count - ddof, 0) or math.nan)


def std(x, axis=None, keepdims=False, ddof=0, correction=None, *, dtype=None, out=None):
    """Standard deviation; its derivative where it is 0 is ``nan`` (as sqrt'(0) * 0)."""
    return _ew.sqrt(var(x, axis, keepdims, ddof, correction, dtype=dtype, out=out))


# -- prod: exact with zeros ---------------------------------------------------------
def _prod_partial(ans, x, axis):
    """d prod / d x_i, the product of the other entries: a polynomial, exact at every order.

    Without zeros it is ans / x. With a zero (a data-dependent choice, made on
    the raw values) each entry's product of the others is taken directly: the
    reduced axes are flattened to n and an (n, n) array holding x with its
    diagonal replaced by 1 is reduced, at O(n^2) cost.
    """
    r = raw(x)
    xp = namespace_of([r])
    if not bool(xp.any(r == 0)):
        return _ew.divide(_shape.broadcast_to(ans if ndim_of(ans) == ndim_of(x) else
                                              _shape.reshape(ans, _kept_shape(shape_of(x), axis)),
                                              shape_of(x)), x)
    n_axes = len(axis)
    nd = ndim_of(x)
    kept = [a for a in range(nd) if a - nd not in axis]
    moved = _shape.permute_dims(x, tuple(kept) + tuple(a % nd for a in axis))
    front = shape_of(moved)[:nd - n_axes]
    n = math.prod(shape_of(moved)[nd - n_axes:])
    flat = _shape.reshape(moved, front + (1, n))
    eye = xp.astype(xp.eye(n), r.dtype) if hasattr(r, "dtype") else xp.eye(n)
    others = prod(_ew.where(eye == 1, 1.0, _shape.broadcast_to(flat, front + (n, n))), axis=-1)
    others = _shape.reshape(others, shape_of(moved))
    inverse = sorted(range(nd), key=(tuple(kept) + tuple(a % nd for a in axis)).__getitem__)
    return _shape.permute_dims(others, tuple(inverse))


def _prod_jvp(primals, tangents, ans, *, axis, keepdims):
    (x,), (tx,) = primals, tangents
    p = _prod_partial(ans if keepdims else _shape.reshape(ans, _kept_shape(shape_of(x), axis)), x, axis)
    return sum(_ew.multiply(p, tx), axis, keepdims)


def _prod_vjp(g, ans, x, *, axis, keepdims):
    p = _prod_partial(ans if keepdims else _shape.reshape(ans, _kept_shape(shape_of(x), axis)), x, axis)
    return (_ew.multiply(_expand(g, shape_of(x), axis, keepdims), p),)


_prod_p = custom(
    "prod", lambda xp, x, *, axis, keepdims: xp.prod(x, axis=axis, keepdims=keepdims),
    jvp=_prod_jvp, vjp=_prod_vjp, chunked=True, core_ndims=None, fresh=True, sparsity="reduction",
    partition="reduction")


def prod(x, axis=None, keepdims=False, *, dtype=None, out=None):
    """Product over ``axis``; its derivative is exact where entries are 0."""
    x = _numpy_keywords(x, dtype, out, "prod")
    axes = normalize_axes(axis, ndim_of(x))
    return bind(_prod_p, x, axis=axes, keepdims=keepdims)


# -- max and min: the derivative is split equally between tied entries ----------
def _extremum(name, reduce, combine):
    ufunc = getattr(np, combine)

    def impl(xp, x, *, axis, keepdims):
        out = by_slices(x, axis, keepdims, ufunc)
        if out is not None:
            return out
        if type(x) is np.ndarray:  # np.max's own reduction, without its wrapper (1.1 us sooner)
            return ufunc.reduce(x, axis=axis, keepdims=keepdims)
        return getattr(xp, reduce)(x, axis=axis, keepdims=keepdims)

    def residual(ans, x, *, axis, keepdims):
        # A 0/1 weight per entry, divided by the number of ties.
        hit = _ew.equal(x, ans if keepdims else _shape.reshape(ans, _kept_shape(shape_of(x), axis)))
        w = _ew.where(hit, 1.0, 0.0)
        if shape_of(w) != shape_of(x):
            w = _shape.broadcast_to(w, shape_of(x))
        w = _ew.astype(w, getattr(x, "dtype", float)) if not isinstance(x, float) else w
        return w / sum(w, axis, keepdims=True), shape_of(x)

    def jvp(primals, tangents, ans, *, axis, keepdims):
        weight, _ = residual(primal(ans), primal(primals[0]), axis=axis, keepdims=keepdims)
        return sum(_ew.multiply(weight, tangents[0]), axis, keepdims)

    def vjp(g, res, *, axis, keepdims):
        weight, xshape = res
        return (_ew.multiply(_expand(g, xshape, axis, keepdims), weight),)

    prim = custom(name, impl, jvp=jvp, vjp=vjp, residual=residual, chunked=True, core_ndims=None,
                  fresh=True, piecewise_linear=True, sparsity="reduction", partition="reduction",
                  combine=combine)

    def fn(x, axis=None, keepdims=False):
        axes = normalize_axes(axis, ndim_of(x))
        if any(shape_of(x)[a] == 0 for a in axes):
            raise ValueError(f"{name} of an empty axis is undefined (shape {shape_of(x)}, axis {axis})")
        return bind(prim, x, axis=axes, keepdims=keepdims)

    fn.__name__ = name
    fn.__doc__ = f"``{name}`` over ``axis``; tied entries share the derivative equally."
    fn.primitive = prim
    return fn


max = _extremum("max", "max", "maximum")
min = _extremum("min", "min", "minimum")
amax, amin = max, min

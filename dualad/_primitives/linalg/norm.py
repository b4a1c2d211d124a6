"""Vector and matrix norms: ``norm``, and the array API's ``vector_norm`` and ``matrix_norm``."""

from __future__ import annotations

import math

from dualad._base.core import bind
from dualad._base.shapes import dtype_of, is_complex, ndim_of, normalize_axes, raw, shape_of
from dualad._primitives import elementwise as _ew
from dualad._primitives import reductions as _red
from dualad._primitives import shape as _shape
from dualad._primitives.linalg.common import _div, _mul, check_matrix
from dualad._primitives.linalg.svd import svd
from dualad._table.entries import custom

__all__ = ["norm", "vector_norm", "matrix_norm"]


# -- norm ---------------------------------------------------------------------------------------
def _norm2_impl(xp, x, *, axis, keepdims):
    # What numpy.linalg.norm computes (no rescaling against overflow), and
    # faster for small inputs than linalg.vector_norm.
    return xp.sqrt(xp.sum(x * x, axis=axis, keepdims=keepdims))


def _kept_shape(shape, axis):
    n = len(shape)
    return tuple(1 if i - n in axis else s for i, s in enumerate(shape))


def _safe_divide(num, den):
    """``num / den``, and 0 where ``den`` is 0 (the subgradient of a norm at 0)."""
    zero = _ew.equal(den, 0)
    return _ew.where(zero, 0.0, _div(num, _ew.where(zero, 1.0, den)))


def _norm2_jvp(primals, tangents, ans, *, axis, keepdims):
    (x,), (tx,) = primals, tangents
    return _safe_divide(_shape.sum(_mul(x, tx), axis, keepdims), ans)


def _norm2_vjp(g, ans, x, *, axis, keepdims):
    if not keepdims:
        kept = _kept_shape(shape_of(x), axis)
        g, ans = _shape.reshape(g, kept), _shape.reshape(ans, kept)
    return (_mul(_safe_divide(g, ans), x),)


_norm2_p = custom("norm2", _norm2_impl, jvp=_norm2_jvp, vjp=_norm2_vjp,
                  chunked=True, core_ndims=None, fresh=True)


def _norm2(x, axis, keepdims):
    """The Euclidean norm over ``axis`` (a tuple of negative axes); derivative 0 at 0."""
    if is_complex(x):  # the norm of the moduli, differentiated through them
        x = _ew.abs(x)
    if ndim_of(x) == 0:
        return _ew.abs(x)
    return bind(_norm2_p, x, axis=axis, keepdims=keepdims)


def _restore(out, shape, axis, keepdims):
    return _shape.reshape(out, _kept_shape(shape, axis)) if keepdims else out


def _vector_norm(x, ord, axis, keepdims):
    if isinstance(ord, str):
        raise ValueError(f"norm: ord={ord!r} is a matrix norm; for a vector norm ord must be a "
                         "number (None, inf, -inf, 0, 1, 2, ...)")
    if ord is None or ord == 2:
        return _norm2(x, axis, keepdims)
    ax = _ew.abs(x)
    if ord == math.inf:
        return _red.max(ax, axis, keepdims)
    if ord == -math.inf:
        return _red.min(ax, axis, keepdims)
    if ord == 0:  # a count: zero derivative
        r = raw(x)
        nonzero = _ew.astype(_ew.not_equal(r, 0), dtype_of(r))
        return _shape.sum(nonzero, axis, keepdims)
    if ord == 1:
        return _shape.sum(ax, axis, keepdims)
    total = _shape.sum(_ew.power(ax, float(ord)), axis, keepdims)
    zero = _ew.equal(total, 0)  # the subgradient 0 at 0, as for the 2-norm
    return _ew.where(zero, 0.0, _ew.power(_ew.where(zero, 1.0, total), 1.0 / ord))


_MATRIX_ORDS = (None, "fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)


def _matrix_norm(x, ord, axes, keepdims):
    row, col = axes
    if ord not in _MATRIX_ORDS:
        raise ValueError(f"norm: ord={ord!r} is not a matrix norm; expected one of "
                         "None, 'fro', 'nuc', 1, -1, 2, -2, inf, -inf")
    shape = shape_of(x)
    both = tuple(sorted((row, col)))
    if ord is None or ord == "fro":
        return _norm2(x, both, keepdims)
    if ord in ("nuc", 2, -2):
        s = svd(_shape.moveaxis(x, (row, col), (-2, -1)), full_matrices=False, compute_uv=False)
        reduce = {"nuc": _shape.sum, 2: _red.max, -2: _red.min}[ord]
        return _restore(reduce(s, axis=-1), shape, both, keepdims)
    ax = _ew.abs(x)
    reduce = _red.max if ord > 0 else _red.min
    summed, over = (row, col) if abs(ord) == 1 else (col, row)  # 1: column sums; inf: row sums
    out = reduce(_shape.sum(ax, summed, keepdims=True), over, keepdims=True)
    return out if keepdims else _shape.reshape(out, tuple(
        s for i, s in enumerate(shape) if i - len(shape) not in both))


def norm(x, ord=None, axis=None, keepdims=False):
    """Vector and matrix norms, as ``numpy.linalg.norm``.

    Parameters
    ----------
    x : array or value type
    ord : {None, 'fro', 'nuc', inf, -inf, 0, 1, -1, 2, -2, other numbers}
        As in NumPy: with an int ``axis`` (or a 1-d ``x``) a vector norm,
        with a 2-tuple ``axis`` (or a 2-d ``x``) a matrix norm.
    axis : None, int or 2-tuple of ints
        ``None`` with ``ord=None`` is the 2-norm of ``x`` flattened (any
        ndim); ``None`` with another ``ord`` needs a 1-d or 2-d ``x``.
    keepdims : bool

    Notes
    -----
    The 2-norm and the Frobenius norm are one primitive whose derivative
    at 0 is 0 (a subgradient) instead of ``nan``; the other norms are
    composites (``max``/``min`` split ties equally, ``abs`` has derivative 0
    at 0, ``p``-norms are 0-safe like the 2-norm; ``ord=0`` counts and has
    zero derivative; ``'nuc'``, 2 and -2 go through ``svd``).

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jacfwd, ops
    >>> jacfwd(ops.linalg.norm)(np.array([3.0, 4.0]))
    array([0.6, 0.8])
    >>> jacfwd(ops.linalg.norm)(np.zeros(2))
    array([0., 0.])
    """
    n = ndim_of(x)
    shape = shape_of(x)
    if axis is None:
        if ord is None:
            out = _norm2(x, tuple(range(-n, 0)), keepdims)
            return out
        if n == 1:
            return _vector_norm(x, ord, (-1,), keepdims)
        if n == 2:
            return _matrix_norm(x, ord, (-2, -1), keepdims)
        raise ValueError(f"norm: with ord={ord!r} and axis=None, x must be 1-d or 2-d, "
                         f"got shape {shape}; pass axis")
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    if len(axes) not in (1, 2):
        raise ValueError(f"norm: axis must be an int or a tuple of 1 or 2 ints, got {axis!r}")
    normalized = [normalize_axes(a, n, "norm: axis")[0] for a in axes]
    if len(axes) == 1:
        return _vector_norm(x, ord, tuple(normalized), keepdims)
    if normalized[0] == normalized[1]:
        raise ValueError(f"norm: axis={axis!r} repeats an axis")
    return _matrix_norm(x, ord, tuple(normalized), keepdims)


# -- array-API spellings -------------------------------------------------------------------
def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """The array API's ``linalg.vector_norm``: a vector norm over ``axis`` (all axes by default).

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import ops
    >>> float(ops.linalg.vector_norm(np.array([[3.0], [4.0]])))
    5.0
    """
    axes = normalize_axes(axis, ndim_of(x), "vector_norm: axis")
    return _vector_norm(x, ord, axes, keepdims)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """The array API's ``linalg.matrix_norm`` over the last two axes.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import ops
    >>> float(ops.linalg.matrix_norm(np.eye(2), ord="nuc"))
    2.0
    """
    check_matrix(x, "matrix_norm", "x", square=False)
    return _matrix_norm(x, ord, (-2, -1), keepdims)

"""Statistics as NumPy spells them: order statistics, NaN-ignoring reductions,
weighted means, covariance. Composites of the table's primitives.

Order statistics gather the sorted values (ties keep their own
derivatives); quantiles interpolate linearly between the two nearest ranks,
NumPy's default method.
"""

from __future__ import annotations

import math

import numpy as np

from dualad._base.shapes import concrete, dtype_of, ndim_of, normalize_axes, primal, raw, shape_of
from dualad._numpy.differences import cumprod
from dualad._numpy.joining import atleast_2d
from dualad._numpy.selecting import take_along_axis
from dualad._numpy.sorting import sort
from dualad._primitives import elementwise as _ew
from dualad._primitives import indexing as _indexing
from dualad._primitives import reductions as _red
from dualad._primitives import shape as _shape
from dualad._primitives.linalg.common import diag_part
from dualad._primitives.linalg.matmul import matmul

__all__ = ["median", "quantile", "percentile", "nanquantile", "nanmedian", "nansum", "nanmean",
           "nanmax", "nanmin", "nanprod", "nanvar", "nanstd", "ptp", "average", "cov", "corrcoef",
           "nancumsum", "nancumprod", "nanpercentile"]


def _moved_last(a, axis):
    """``a`` with the reduced axes flattened into one last axis, and the kept shape."""
    if axis is None:
        return _shape.ravel(a), ()
    axes = normalize_axes(axis, ndim_of(a))
    nd = ndim_of(a)
    kept = [d for d in range(nd) if d - nd not in axes]
    moved = _shape.permute_dims(a, tuple(kept) + tuple(d % nd for d in axes))
    front = tuple(shape_of(a)[d] for d in kept)
    n = math.prod(shape_of(a)[d % nd] for d in axes)  # not -1: ``front`` may hold a 0
    return _shape.reshape(moved, front + (n,)), front


def _checked_q(q, method, name):
    """The quantiles ``q`` (host numbers in [0, 1], of any shape) as float64."""
    if method != "linear":
        raise NotImplementedError(f"{name}: method={method!r} is not supported yet; use 'linear'")
    qs = np.asarray(concrete(q, f"{name}'s q"), dtype=np.float64)
    if np.any((qs < 0) | (qs > 1)):
        raise ValueError(f"{name}: q must be in [0, 1], got {qs}")
    return qs


def _q_first(out, a, axis, keepdims, qs):
    """Quantiles computed as ``(..., qs.size)`` (the kept axes first) in NumPy's
    layout: ``q``'s shape first, then the kept axes (of length 1 with ``keepdims``)."""
    out = _shape.moveaxis(out, -1, 0)
    if qs.ndim == 0:  # indexed rather than reshaped: a number where NumPy gives one
        out = _indexing.getitem(out, 0)
    if keepdims:
        nd = ndim_of(a)
        axes = normalize_axes(axis, nd)
        return _shape.reshape(out, qs.shape + tuple(1 if d - nd in axes else s
                                                    for d, s in enumerate(shape_of(a))))
    return _shape.reshape(out, qs.shape + shape_of(out)[1:]) if qs.ndim > 1 else out


def quantile(a, q, axis=None, keepdims=False, method="linear"):
    """``numpy.quantile`` (method ``"linear"``); ``q`` a number or a 1-d array in [0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp, ops
    >>> y, t = jvp(lambda a: ops.quantile(a, 0.25), (np.array([4.0, 1.0, 3.0]),),
    ...            (np.array([0.0, 1.0, 2.0]),))
    >>> float(y), float(t)
    (2.0, 1.5)
    """
    qs = _checked_q(q, method, "quantile")
    flat, front = _moved_last(a, axis)
    n = shape_of(flat)[-1]
    if n == 0:
        raise ValueError("quantile of an empty axis is undefined")
    s = sort(flat, axis=-1)
    pos = qs.reshape(-1) * (n - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, n - 1)
    w = pos - lo
    lo_v = _shape.take(s, _indexing._index_like(s, lo), axis=-1)
    hi_v = _shape.take(s, _indexing._index_like(s, hi), axis=-1)
    weight = _indexing._numbers_like(s, w)
    out = lo_v + (hi_v - lo_v) * weight  # (..., len(q))
    # NaNs sort last: where the last is one, NumPy's quantile is NaN
    last = _shape.take(s, _indexing._index_like(s, np.array([n - 1])), axis=-1)
    out = _ew.where(_ew.isnan(primal(last)), np.nan, out)
    return _q_first(out, a, axis, keepdims, qs)


def percentile(a, q, axis=None, keepdims=False, method="linear"):
    """``numpy.percentile``: :func:`quantile` with ``q`` in percent."""
    return quantile(a, np.asarray(concrete(q, "percentile's q"), dtype=np.float64) / 100.0, axis,
                    keepdims, method)


def median(a, axis=None, keepdims=False):
    """``numpy.median``: the mean of the two middle values for an even count."""
    return quantile(a, 0.5, axis, keepdims)


def _nan_filled(a, fill):
    return _ew.where(_ew.isnan(primal(a)), fill, a)


def nansum(a, axis=None, keepdims=False):
    return _shape.sum(_nan_filled(a, 0.0), axis, keepdims)


def nanprod(a, axis=None, keepdims=False):
    return _red.prod(_nan_filled(a, 1.0), axis, keepdims)


def _count(a, axis, keepdims):
    """How many entries are not NaN (a constant)."""
    nan = _ew.isnan(primal(a))
    return _shape.sum(_ew.astype(_ew.logical_not(nan), dtype_of(raw(a))), axis, keepdims)


def nanmean(a, axis=None, keepdims=False):
    return nansum(a, axis, keepdims) / _count(a, axis, keepdims)


def nanvar(a, axis=None, keepdims=False, ddof=0):
    mean = nanmean(a, axis, keepdims=True)
    d = _nan_filled(a - mean, 0.0)
    return _shape.sum(d * d, axis, keepdims) / (_count(a, axis, keepdims) - ddof)


def nanstd(a, axis=None, keepdims=False, ddof=0):
    return _ew.sqrt(nanvar(a, axis, keepdims, ddof))


def nanmax(a, axis=None, keepdims=False):
    return _red.max(_nan_filled(a, -math.inf), axis, keepdims)


def nanmin(a, axis=None, keepdims=False):
    return _red.min(_nan_filled(a, math.inf), axis, keepdims)


def nancumsum(a, axis=None):
    """``numpy.nancumsum``: NaNs count as 0."""
    return _shape.cumsum(_nan_filled(a, 0.0), axis)


def nancumprod(a, axis=None):
    """``numpy.nancumprod``: NaNs count as 1."""
    return cumprod(_nan_filled(a, 1.0), axis)


def nanpercentile(a, q, axis=None, keepdims=False, method="linear"):
    """``numpy.nanpercentile``: :func:`nanquantile` with ``q`` in percent."""
    return nanquantile(a, np.asarray(concrete(q, "nanpercentile's q"), dtype=np.float64) / 100.0, axis,
                       keepdims, method)


def nanquantile(a, q, axis=None, keepdims=False, method="linear"):
    """``numpy.nanquantile`` (method ``"linear"``): :func:`quantile` of the entries
    that are not NaN, along ``axis`` (all of them by default).

    Each slice is sorted (NaNs last) and the two ranks around ``q (count - 1)``
    are taken, ``count`` being the slice's non-NaN entries: shapes do not
    depend on how many entries are NaN, so the same code runs eagerly, under
    ``vmap`` and in a compiled program. NaN entries take no derivative; a
    slice that is all NaN gives NaN (NumPy also warns), with zero derivative.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp, ops
    >>> a = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]])
    >>> y, t = jvp(lambda a: ops.nanquantile(a, 0.5, axis=1), (a,), (np.ones_like(a),))
    >>> y.tolist(), t.tolist()
    ([2.0, 5.0], [1.0, 1.0])
    """
    qs = _checked_q(q, method, "nanquantile")
    flat, _ = _moved_last(a, axis)  # (..., n)
    if shape_of(flat)[-1] == 0:  # an empty slice is all NaN: one NaN of its (zero) sum
        flat = _shape.sum(flat, axis=-1, keepdims=True) + np.nan
    s = sort(flat, axis=-1)  # NaNs sort last
    # the ranks in float64, as NumPy computes them; they have no derivative
    present = _ew.logical_not(_ew.isnan(primal(flat)))
    count = _shape.sum(_ew.astype(present, "float64"), axis=-1, keepdims=True)  # (..., 1)
    pos = _ew.multiply(_indexing._numbers_like(count, qs.reshape(-1)), count - 1.0)  # (..., len(q))
    lo = _ew.maximum(_ew.floor(pos), 0.0)
    hi = _ew.minimum(lo + 1.0, _ew.maximum(count - 1.0, 0.0))
    lo_v = take_along_axis(s, _ew.astype(lo, "int64"), axis=-1)
    hi_v = take_along_axis(s, _ew.astype(hi, "int64"), axis=-1)
    out = lo_v + (hi_v - lo_v) * _ew.astype(pos - lo, dtype_of(raw(s)))
    # an all-NaN slice: NaN, and no derivative reaches the NaN taken at rank 0
    out = _ew.where(_ew.equal(count, 0.0), np.nan, out)
    return _q_first(out, a, axis, keepdims, qs)


def nanmedian(a, axis=None, keepdims=False):
    return nanquantile(a, 0.5, axis, keepdims)


def ptp(a, axis=None, keepdims=False):
    """Peak to peak: ``max - min`` (ties share the derivative, as in ``max``)."""
    return _red.max(a, axis, keepdims) - _red.min(a, axis, keepdims)


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    """``numpy.average``: weights (differentiable too) normalized by their sum."""
    if weights is None:
        out, total = _red.mean(a, axis, keepdims), None
        if returned:
            n = math.prod(shape_of(a)) if axis is None else math.prod(
                shape_of(a)[d] for d in normalize_axes(axis, ndim_of(a)))
            total = float(n)
    else:
        w = weights
        if ndim_of(w) != ndim_of(a):  # 1-d weights along a single axis
            shape = [1] * ndim_of(a)
            shape[axis % ndim_of(a)] = shape_of(w)[0]
            w = _shape.reshape(w, tuple(shape))
        total = _shape.sum(_shape.broadcast_to(w, shape_of(a)), axis, keepdims)
        out = _shape.sum(a * w, axis, keepdims) / total
    return (out, total) if returned else out


def cov(m, y=None, rowvar=True, bias=False, ddof=None):
    """``numpy.cov``: variables in rows (``rowvar``) or columns."""
    x = atleast_2d(m)
    if not rowvar and shape_of(x)[0] != 1:
        x = _shape.matrix_transpose(x)
    if y is not None:
        yy = atleast_2d(y)
        if not rowvar and shape_of(yy)[0] != 1:
            yy = _shape.matrix_transpose(yy)
        x = _shape.concatenate([x, yy], axis=0)
    n = shape_of(x)[1]
    ddof = (0 if bias else 1) if ddof is None else ddof
    d = x - _red.mean(x, axis=1, keepdims=True)
    c = matmul(d, _ew.conj(_shape.matrix_transpose(d))) / float(n - ddof)
    return _shape.squeeze(c) if shape_of(c) == (1, 1) else c


def corrcoef(x, y=None, rowvar=True):
    """``numpy.corrcoef``: the covariance scaled by the standard deviations."""
    c = cov(x, y, rowvar)
    if ndim_of(c) == 0:
        return c / c
    d = _ew.sqrt(diag_part(c))
    return c / _shape.reshape(d, (-1, 1)) / _shape.reshape(d, (1, -1))

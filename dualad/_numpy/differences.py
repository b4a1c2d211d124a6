"""Differences, gradients, integrals and cumulative products along an axis.
"""

from __future__ import annotations

import math

from dualad._base.backend import is_float_dtype, namespace_of
from dualad._base.shapes import (
    ndim_of,
    normalize_axis,
    raw,
    shape_of,
)
from dualad._numpy.common import _fill_like, _lift, _slice
from dualad._primitives import elementwise as _ew
from dualad._primitives import shape as _shape
from dualad._table.host import on_values

__all__ = ["diff", "ediff1d", "trapezoid", "gradient", "cumprod", "cumulative_prod", "unwrap"]


def diff(a, n=1, axis=-1, prepend=None, append=None):
    """``numpy.diff``: the n-th forward difference along ``axis``."""
    if prepend is not None or append is not None:
        shape = shape_of(a)
        ax = axis % len(shape)
        edge = shape[:ax] + (1,) + shape[ax + 1:]  # a scalar prepend/append is broadcast to this
        parts = [p if ndim_of(p) == len(shape) else _shape.broadcast_to(_lift(a, p), edge)
                 for p in (prepend, a, append) if p is not None]
        a = _shape.concatenate(parts, axis=axis)
    for _ in range(n):
        a = _slice(a, axis, 1, None) - _slice(a, axis, None, -1)
    return a


def unwrap(p, discont=None, axis=-1, *, period=2 * math.pi):
    """``numpy.unwrap``: a jump of at least ``max(discont, period / 2)`` between
    neighbours along ``axis`` is taken out by adding a multiple of ``period`` to
    every later entry.

    The corrections are computed as NumPy computes them, on the values alone:
    they are piecewise constant, so the derivative is that of ``p``. Where a
    jump equals ``discont`` (or an odd multiple of ``period / 2``) the correction
    changes and ``unwrap`` has no derivative.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp, ops
    >>> y, t = jvp(ops.unwrap, (np.array([0.0, 3.0, 6.5]),), (np.array([1.0, 2.0, 3.0]),))
    >>> np.allclose(y, np.unwrap([0.0, 3.0, 6.5])), t.tolist()
    (True, [1.0, 2.0, 3.0])
    """
    if isinstance(p, (list, tuple)):
        p = _shape.asarray(p)
    if ndim_of(p) == 0:
        raise ValueError("unwrap needs an array of at least one dimension")
    axis = normalize_axis(axis, ndim_of(p))
    return _ew.add(p, on_values(lambda r: _unwrap_corrections(r, discont, axis, period), p))


def _unwrap_corrections(r, discont, axis, period):
    """What ``numpy.unwrap`` adds to each entry of the raw array ``r`` (a constant)."""
    xp = namespace_of([r])
    if shape_of(r)[axis] < 2:
        return xp.zeros(r.shape, dtype=r.dtype)
    before = (slice(None),) * (axis % r.ndim)
    if not is_float_dtype(xp, r.dtype) and not isinstance(period, int):
        r = xp.astype(r, xp.float64)  # NumPy's result_type(integers, float)
    dd = r[before + (slice(1, None), ...)] - r[before + (slice(None, -1), ...)]
    if is_float_dtype(xp, r.dtype):
        high, ambiguous = period / 2, True
    else:  # integers and an integer period: NumPy works in integers
        high, rem = divmod(period, 2)
        ambiguous = rem == 0
    discont = high if discont is None else raw(discont)
    ddmod = xp.remainder(dd + high, period) - high  # NumPy's mod(dd - low, period) + low, low = -high
    if ambiguous:  # a jump of exactly period / 2 keeps its sign, as NumPy
        ddmod = xp.where((ddmod == -high) & (dd > 0), xp.asarray(high, dtype=ddmod.dtype), ddmod)
    correction = xp.where(xp.abs(dd) < discont, xp.zeros_like(ddmod), ddmod - dd)
    running = (getattr(xp, "cumulative_sum", None) or xp.cumsum)(correction, axis=axis % r.ndim)
    first = list(r.shape)
    first[axis] = 1
    return xp.concat([xp.zeros(tuple(first), dtype=running.dtype), running], axis=axis % r.ndim)


def ediff1d(a, to_end=None, to_begin=None):
    d = diff(_shape.ravel(a))
    parts = [_shape.ravel(p) for p in (to_begin,) if p is not None] + [d] + \
        [_shape.ravel(p) for p in (to_end,) if p is not None]
    return _shape.concatenate(parts) if len(parts) > 1 else d


def gradient(f, *varargs, axis=None, edge_order=1):
    """``numpy.gradient`` with unit or scalar spacing: central differences inside,
    one-sided at the edges."""
    nd = ndim_of(f)
    axes = list(range(nd)) if axis is None else [axis] if isinstance(axis, int) else list(axis)
    spacing = list(varargs) or [1.0] * len(axes)
    if len(spacing) == 1:
        spacing = spacing * len(axes)
    if edge_order != 1:
        raise NotImplementedError("gradient: edge_order=2 is not supported yet")
    outs = []
    for a, h in zip(axes, spacing):
        if shape_of(f)[a] < 2:
            raise ValueError("gradient needs at least 2 points along each axis")
        inner = (_slice(f, a, 2, None) - _slice(f, a, None, -2)) / (2.0 * h)
        first = (_slice(f, a, 1, 2) - _slice(f, a, 0, 1)) / h
        last = (_slice(f, a, -1, None) - _slice(f, a, -2, -1)) / h
        outs.append(_shape.concatenate([first, inner, last], axis=a))
    return outs[0] if len(outs) == 1 else tuple(outs)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    """The array API's ``cumulative_prod``: ``cumprod``, optionally led by a 1."""
    if axis is None:
        if ndim_of(x) > 1:
            raise ValueError("cumulative_prod: axis is required for arrays of more than one axis")
        axis = 0
    out = cumprod(x, axis)
    if include_initial:
        edge = list(shape_of(x))
        edge[axis] = 1
        out = _shape.concatenate([_shape.broadcast_to(_fill_like(x, 1.0), tuple(edge)), out], axis=axis)
    return out


def cumprod(x, axis=None):
    """``numpy.cumprod``: exact where entries are 0 (a running product, one slice at a time)."""
    if axis is None:
        x, axis = _shape.ravel(x), 0
    axis = normalize_axis(axis, ndim_of(x))
    n = shape_of(x)[axis]
    if n == 0:
        return x
    parts = [_slice(x, axis, 0, 1)]
    for i in range(1, n):
        parts.append(parts[-1] * _slice(x, axis, i, i + 1))
    return _shape.concatenate(parts, axis=axis)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """``numpy.trapezoid``: the trapezoidal rule along ``axis``."""
    d = dx if x is None else diff(x, axis=axis if ndim_of(x) > 1 else 0)
    if x is not None and ndim_of(x) == 1 and ndim_of(y) > 1:
        shape = [1] * ndim_of(y)
        shape[axis % ndim_of(y)] = shape_of(d)[0]
        d = _shape.reshape(d, tuple(shape))
    mid = (_slice(y, axis, 1, None) + _slice(y, axis, None, -1)) * 0.5
    return _shape.sum(mid * d, axis=axis)

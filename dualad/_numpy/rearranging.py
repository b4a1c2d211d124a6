"""Rearranging the elements of arrays: rolling, rotating, flipping, moving axes, resizing.
"""

from __future__ import annotations

import math

import numpy as np

from dualad._base.shapes import (
    ndim_of,
    shape_of,
)
from dualad._numpy.common import _fill_like, _index
from dualad._primitives import indexing as _indexing
from dualad._primitives import shape as _shape

__all__ = ["roll", "rot90", "flipud", "fliplr", "rollaxis", "resize"]


# -- rearranging ------------------------------------------------------------------------------
def roll(x, shift, axis=None):
    """``numpy.roll``, as a gather along each axis."""
    if axis is None:
        return _shape.reshape(roll(_shape.ravel(x), shift, 0), shape_of(x))
    shifts = (shift,) if isinstance(shift, int) else tuple(shift)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    if len(axes) == 1 and len(shifts) > 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise ValueError(f"roll: shift {shift!r} and axis {axis!r} do not match")
    for s, a in zip(shifts, axes):
        n = shape_of(x)[a]
        if n:
            x = _shape.take(x, _index(x, (np.arange(n) - s) % n), axis=a)
    return x


def rot90(m, k=1, axes=(0, 1)):
    """``numpy.rot90``: flips and a transpose."""
    a, b = axes
    k %= 4
    if k == 0:
        return m
    if k == 2:
        return _shape.flip(_shape.flip(m, a), b)
    if k == 1:
        return _shape.swapaxes(_shape.flip(m, b), a, b)
    return _shape.flip(_shape.swapaxes(m, a, b), b)


def flipud(m):
    return _shape.flip(m, 0)


def fliplr(m):
    if ndim_of(m) < 2:
        raise ValueError(f"fliplr needs ndim >= 2, got shape {shape_of(m)}")
    return _shape.flip(m, 1)


def rollaxis(a, axis, start=0):
    """``numpy.rollaxis``: ``moveaxis`` with NumPy's older convention for ``start``."""
    n = ndim_of(a)
    axis, start = axis % n, start + n if start < 0 else start
    if not 0 <= start <= n:
        raise ValueError(f"rollaxis: start {start} is out of range for {n} axes")
    return _shape.moveaxis(a, axis, start - 1 if axis < start else start)


def resize(a, new_shape):
    """``numpy.resize``: the flattened entries repeated (or cut) to fill ``new_shape``."""
    new_shape = (new_shape,) if isinstance(new_shape, int) else tuple(new_shape)
    size = math.prod(shape_of(a))
    if size == 0 or math.prod(new_shape) == 0:  # nothing of a is read (NumPy fills zeros)
        return _shape.broadcast_to(_fill_like(a, 0.0), new_shape)
    source = np.resize(np.arange(size), new_shape)
    return _indexing.getitem(_shape.ravel(a), (_index(a, source),))

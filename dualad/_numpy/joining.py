"""Joining and splitting arrays, and making them at least 1-, 2- or 3-d, as NumPy spells them.
"""

from __future__ import annotations

import numpy as np

from dualad._base.shapes import (
    ndim_of,
    normalize_axis,
    shape_of,
)
from dualad._numpy.common import _index
from dualad._primitives import elementwise as _ew
from dualad._primitives import shape as _shape

__all__ = ["hstack", "vstack", "dstack", "column_stack", "row_stack", "atleast_1d", "atleast_2d",
           "atleast_3d", "append", "array_split", "hsplit", "vsplit", "dsplit", "block", "unstack"]


# -- joining and splitting ---------------------------------------------------------------
def _at_least(ndim, arys, where):
    out = []
    for a in arys:
        s = shape_of(a)
        if len(s) < ndim:
            s = {0: (1,) * ndim, 1: (1,) + s + (1,) * (ndim - 2), 2: s + (1,)}[len(s)] \
                if where == "numpy" else (1,) * (ndim - len(s)) + s
            a = _shape.reshape(a, s[:ndim] if len(s) > ndim else s)
        out.append(a)
    return out[0] if len(out) == 1 else tuple(out)


def atleast_1d(*arys):
    return _at_least(1, arys, "front")


def atleast_2d(*arys):
    return _at_least(2, arys, "front")


def atleast_3d(*arys):
    """As ``numpy.atleast_3d``: ``(n,)`` becomes ``(1, n, 1)`` and ``(m, n)`` ``(m, n, 1)``."""
    return _at_least(3, arys, "numpy")


def _listed(arrays, name):
    arrays = list(arrays)
    if not arrays:
        raise ValueError(f"{name} needs at least one array")
    return arrays


def _cast(out, dtype):
    """NumPy's ``dtype=`` of the stacking functions (the result cast)."""
    return out if dtype is None else _ew.astype(out, dtype)


def hstack(tup, *, dtype=None, casting="same_kind"):
    arrays = [atleast_1d(a) for a in _listed(tup, "hstack")]
    return _cast(_shape.concatenate(arrays, axis=0 if ndim_of(arrays[0]) == 1 else 1), dtype)


def vstack(tup, *, dtype=None, casting="same_kind"):
    """``numpy.vstack`` (and ``row_stack``), with NumPy's ``dtype=``."""
    return _cast(_shape.concatenate([atleast_2d(a) for a in _listed(tup, "vstack")], axis=0), dtype)


row_stack = vstack


def dstack(tup):
    return _shape.concatenate([atleast_3d(a) for a in _listed(tup, "dstack")], axis=2)


def column_stack(tup):
    arrays = [_shape.reshape(a, (-1, 1)) if ndim_of(a) < 2 else a for a in _listed(tup, "column_stack")]
    return _shape.concatenate(arrays, axis=1)


def block(arrays):
    """``numpy.block`` for nested lists of arrays of equal ndim."""
    def depth(x):
        return 1 + depth(x[0]) if isinstance(x, list) else 0

    def join(x, level):
        if not isinstance(x, list):
            return x
        return _shape.concatenate([join(e, level + 1) for e in x], axis=level - total)

    total = depth(arrays)
    return join(arrays, 0)


def append(arr, values, axis=None):
    if axis is None:
        return _shape.concatenate([_shape.ravel(arr), _shape.ravel(values)], axis=0)
    return _shape.concatenate([arr, values], axis=axis)


def array_split(x, indices_or_sections, axis=0):
    """``numpy.array_split``: sections may differ in size by one."""
    if isinstance(indices_or_sections, int):
        n, sections = shape_of(x)[axis], indices_or_sections
        if sections <= 0:
            raise ValueError(f"array_split: the number of sections must be positive, got {sections}")
        size, extra = divmod(n, sections)
        bounds = np.cumsum([0] + [size + 1] * extra + [size] * (sections - extra))
        indices_or_sections = [int(b) for b in bounds[1:-1]]
    return _shape.split(x, indices_or_sections, axis)


def _split_along(x, indices_or_sections, axis, name, min_ndim):
    if ndim_of(x) < min_ndim:
        raise ValueError(f"{name} needs an array of ndim >= {min_ndim}, got shape {shape_of(x)}")
    return _shape.split(x, indices_or_sections, axis)


def hsplit(x, indices_or_sections):
    return _split_along(x, indices_or_sections, 0 if ndim_of(x) == 1 else 1, "hsplit", 1)


def vsplit(x, indices_or_sections):
    return _split_along(x, indices_or_sections, 0, "vsplit", 2)


def dsplit(x, indices_or_sections):
    return _split_along(x, indices_or_sections, 2, "dsplit", 3)


def unstack(x, /, *, axis=0):
    """The arrays along ``axis`` (the array API's ``unstack``)."""
    axis = normalize_axis(axis, ndim_of(x))
    return tuple(_shape.take(x, _index(x, np.asarray(i)), axis) for i in range(shape_of(x)[axis]))

"""Applying a function along or over axes.
"""

from __future__ import annotations

import numpy as np

from dualad._base.shapes import (
    ndim_of,
    normalize_axis,
    shape_of,
)
from dualad._primitives import indexing as _indexing
from dualad._primitives import shape as _shape

__all__ = ["apply_along_axis", "apply_over_axes"]


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """``numpy.apply_along_axis``: ``func1d`` on each 1-d slice along ``axis``; its
    output's axes take the place of ``axis``."""
    a = _shape.moveaxis(arr, axis, -1)
    lead = shape_of(a)[:-1]
    results = [func1d(_indexing.getitem(a, idx), *args, **kwargs) for idx in np.ndindex(*lead)]
    if not results:
        raise ValueError("apply_along_axis: cannot apply a function to 0 slices")
    stacked = _shape.reshape(_shape.stack([_shape.asarray(r, like=arr) for r in results]),
                             lead + shape_of(results[0]))
    k = ndim_of(results[0])
    axis = normalize_axis(axis, ndim_of(arr))
    return _shape.moveaxis(stacked, tuple(range(len(lead), len(lead) + k)),
                           tuple(range(axis, axis + k))) if k else stacked


def apply_over_axes(func, a, axes):
    """``numpy.apply_over_axes``: ``a = func(a, axis)`` for each axis in turn, the axis
    put back (length 1) where ``func`` drops it, so the result keeps ``a``'s ndim.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp, ops
    >>> jvp(lambda a: ops.apply_over_axes(ops.sum, a, [0, 2]), (np.ones((2, 3, 4)),),
    ...     (np.ones((2, 3, 4)),))[1].shape
    (1, 3, 1)
    """
    val = _shape.asarray(a) if isinstance(a, (list, tuple)) else a
    n = ndim_of(val)
    for axis in ((axes,) if np.ndim(axes) == 0 else axes):
        axis = int(axis) + n if axis < 0 else int(axis)
        res = func(val, axis)
        if ndim_of(res) != ndim_of(val):
            res = _shape.expand_dims(res, axis)
            if ndim_of(res) != ndim_of(val):
                raise ValueError("apply_over_axes: func returned an array whose ndim is neither "
                                 f"{ndim_of(val)} nor {ndim_of(val) - 1}")
        val = res
    return val

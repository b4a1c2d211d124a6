"""Sorting and partitioning.
"""

from __future__ import annotations

import numpy as np

from dualad._base.backend import to_host
from dualad._base.core import bind
from dualad._base.shapes import (
    ndim_of,
)
from dualad._numpy.common import _index
from dualad._numpy.selecting import take_along_axis
from dualad._primitives import shape as _shape
from dualad._table.entries import non_differentiable
from dualad._table.host import on_values

__all__ = ["sort", "partition", "msort", "sort_complex"]


def sort(a, axis=-1, kind=None, order=None, stable=None):
    """``numpy.sort``: a gather by the sorted order of the values; tied entries keep
    their own derivatives (a stable order)."""
    if order is not None:
        raise TypeError("sort: order= applies to structured arrays, which have no derivative")
    if axis is None:
        return sort(_shape.ravel(a), 0)
    return take_along_axis(a, bind(_argsort_p, a, axis=axis), axis)


def _argsort(xp, r, *, axis):
    return xp.argsort(r, axis=axis, stable=True) if hasattr(xp, "argsort") else np.argsort(r, axis)


def _argpartition(xp, r, *, kth, axis):
    if isinstance(r, np.ndarray):
        return np.argpartition(r, kth, axis=axis)
    return _argsort(xp, r, axis=axis)  # a sort is a partition


# Sort orders as primitives (rather than computed on the values), so that dualad.compile
# records them: a program then sorts at each replay, as eager evaluation does.
_argsort_p = non_differentiable("argsort", _argsort, scalar_ok=False)
_argpartition_p = non_differentiable("argpartition", _argpartition, scalar_ok=False)


def partition(a, kth, axis=-1, kind="introselect", order=None):
    """``numpy.partition``: a gather by NumPy's own partition order of the values,
    so the result (not just the k-th entries) is NumPy's, with derivatives."""
    if order is not None:
        raise TypeError("partition: order= applies to structured arrays, which have no derivative")
    if axis is None:
        return partition(_shape.ravel(a), kth, 0)
    kth = tuple(int(k) for k in np.ravel(kth)) if np.ndim(kth) else int(kth)  # a parameter: hashable
    return take_along_axis(a, bind(_argpartition_p, a, kth=kth, axis=axis), axis)


def msort(a):
    return sort(a, axis=0)


def sort_complex(a):
    """``numpy.sort_complex``: by real part, then imaginary part."""
    def order(r):
        r = to_host(r)
        return _index(a, np.lexsort((r.imag, r.real)) if np.iscomplexobj(r) else
                      np.argsort(r, kind="stable"))
    flat = _shape.ravel(a) if ndim_of(a) != 1 else a
    return take_along_axis(flat, on_values(order, flat), 0)

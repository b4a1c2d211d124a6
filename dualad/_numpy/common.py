"""Helpers of the composites: host numbers and indices placed in an operand's
backend and dtype, fill values, and slices clamped as NumPy clamps them.
"""

from __future__ import annotations

from dualad._base.backend import SCALAR_TYPES, namespace_of
from dualad._base.shapes import (
    dtype_of,
    ndim_of,
    raw,
    shape_of,
)
from dualad._primitives import indexing as _indexing
from dualad._primitives import shape as _shape

_index = _indexing._index_like  # a host index array placed in the operand's backend
_numbers = _indexing._numbers_like  # host numbers in the operand's backend and dtype


def _lift(like, value):
    """A Python number as a 0-d array of ``like``'s backend (NumPy's default dtype rules)."""
    return namespace_of([raw(like)]).asarray(value) if type(value) in SCALAR_TYPES else value


def _fill_like(x, value):
    """A fill value in ``x``'s backend and dtype (NumPy casts it into the array)."""
    return _shape.asarray(value, dtype_of(raw(x)), like=x)


def _slice(x, axis, start, stop):
    """``x[..., start:stop, ...]`` along ``axis``, bounds clamped to the axis as NumPy does
    (strict array-API namespaces refuse out-of-range ones)."""
    nd = ndim_of(x)
    begin, end, _ = slice(start, stop).indices(shape_of(x)[axis % nd])
    return _indexing.getitem(x, (slice(None),) * (axis % nd) + (slice(begin, max(begin, end)),))

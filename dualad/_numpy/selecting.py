"""Selecting, placing, inserting and deleting elements by index or condition.
"""

from __future__ import annotations

import numpy as np

from dualad._base.backend import to_host
from dualad._base.shapes import (
    batched,
    concrete,
    ndim_of,
    normalize_axis,
    primal,
    raw,
    shape_of,
)
from dualad._numpy.common import _fill_like, _index, _slice
from dualad._primitives import elementwise as _ew
from dualad._primitives import indexing as _indexing
from dualad._primitives import shape as _shape

__all__ = ["take_along_axis", "compress", "put_along_axis", "insert", "put", "place", "delete",
           "choose", "extract", "trim_zeros"]


def _along_axis(arr, indices, axis):
    """The advanced index that takes ``indices`` along ``axis`` and every position
    along the other axes (``take_along_axis``'s and ``put_along_axis``'s)."""
    nd = ndim_of(arr)
    axis = axis % nd
    idx = primal(indices)
    if not hasattr(idx, "shape"):
        idx = np.asarray(idx)
    elif batched(idx):  # vmap: a write needs one index for the batch
        concrete(idx, "writing at an index array")
    grids = []
    for d in range(nd):
        if d == axis:
            grids.append(idx)
        else:
            shape = [1] * nd
            shape[d] = shape_of(arr)[d]
            grids.append(_index(arr, np.arange(shape_of(arr)[d]).reshape(shape)))
    return tuple(grids)


def take_along_axis(arr, indices, axis):
    """``numpy.take_along_axis``: gather with an index array broadcast along the other axes."""
    if axis is None:
        return take_along_axis(_shape.ravel(arr), indices, 0)
    if batched(indices):  # vmap: each element its own index
        return _take_batched(arr, primal(indices), axis)
    return _indexing.getitem(arr, _along_axis(arr, indices, axis))


def _take_batched(arr, indices, axis):
    """``take_along_axis`` with a batched index (under vmap), as a one-hot selection
    summed: elementwise operations and a sum, which every value type batches.
    O(n) work per entry taken (n the length of ``axis``); only vmap comes here."""
    a = _shape.moveaxis(arr, axis, -1)
    idx = _shape.moveaxis(indices, axis, -1)
    n = shape_of(a)[-1]
    hot = _ew.equal(_shape.expand_dims(idx, -1), _index(arr, np.arange(n)))
    picked = _shape.sum(_ew.where(hot, _shape.expand_dims(a, -2), 0.0), axis=-1)
    return _shape.moveaxis(picked, -1, axis)


def insert(arr, obj, values, axis=None):
    """``numpy.insert``: ``values`` (broadcast to the inserted block) placed before ``obj``."""
    if axis is None:
        arr, axis = _shape.ravel(arr), 0
    axis = normalize_axis(axis, ndim_of(arr))
    n = shape_of(arr)[axis]
    source = np.insert(np.arange(n), obj, -1)  # -1 marks an inserted entry
    new = source < 0
    block = list(shape_of(arr))
    block[axis] = int(new.sum())
    values = _fill_like(arr, values)
    nd = ndim_of(arr)
    if ndim_of(values) < nd:  # NumPy's ndmin: ones in front
        values = _shape.reshape(values, (1,) * (nd - ndim_of(values)) + shape_of(values))
    if np.ndim(obj) == 0:  # one position: the values' first axis runs along ``axis``
        values = _shape.moveaxis(values, 0, axis)
    values = _shape.broadcast_to(values, tuple(block))
    source[new] = n + np.arange(block[axis])
    return _shape.take(_shape.concatenate([arr, values], axis=axis), _index(arr, source), axis)


def put(a, ind, v, mode="raise"):
    """``numpy.put``: ``a.flat[ind] = v``, in place on a value that takes item assignment."""
    if mode != "raise":
        raise NotImplementedError(f"put: mode={mode!r} is not supported; use 'raise'")
    ind = np.ravel(concrete(ind, "put's ind"))
    v = _shape.ravel(_shape.asarray(v, like=a))
    count = shape_of(v)[0]
    if count != len(ind):  # NumPy repeats v to the length of ind
        v = _shape.take(v, _index(a, np.arange(len(ind)) % max(count, 1)), 0)
    a[np.unravel_index(ind, shape_of(a))] = v


def place(arr, mask, vals):
    """``numpy.place``: ``arr[mask] = vals`` with ``vals`` repeated as needed, in place."""
    where = np.nonzero(np.asarray(concrete(mask, "place's mask"), dtype=bool))
    count = len(where[0])
    vals = _shape.ravel(_shape.asarray(vals, like=arr))
    if count:
        vals = _shape.take(vals, _index(arr, np.arange(count) % shape_of(vals)[0]), 0)
        arr[where] = vals


def put_along_axis(arr, indices, values, axis, inplace=True):
    """``numpy.put_along_axis``: ``values`` written at ``indices`` along ``axis``.

    By default in place, as NumPy: ``arr`` must take item assignment (a ``Dual``,
    ``Tensor`` or ``dualad.numpy`` buffer) and None is returned. With
    ``inplace=False`` (JAX's functional form) ``arr`` is left as it is and the
    written copy is returned, for any value or array; where ``indices`` repeat a
    position the last write wins, as NumPy assigns.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp, ops
    >>> f = lambda v: ops.put_along_axis(np.zeros((2, 3)), np.array([[2], [0]]), v, 1, inplace=False)
    >>> jvp(f, (np.array([[5.0], [7.0]]),), (np.ones((2, 1)),))[1].tolist()
    [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    """
    if axis is None:  # NumPy reads arr (and indices) as flattened
        where = np.unravel_index(np.ravel(concrete(indices, "put_along_axis's indices")), shape_of(arr))
    else:
        where = _along_axis(arr, indices, axis)
    if not inplace:
        return _shape.index_set(arr, values, where)
    arr[where] = values
    return None


def compress(condition, a, axis=None):
    """``numpy.compress``: the slices of ``a`` along ``axis`` where ``condition`` holds."""
    if axis is None:
        return compress(condition, _shape.ravel(a), 0)
    keep = np.flatnonzero(concrete(condition, "compress's condition").astype(bool))
    if keep.size and keep[-1] >= shape_of(a)[axis]:
        raise IndexError(f"compress: condition has {keep[-1] + 1} entries or more, "
                         f"axis {axis} of a has {shape_of(a)[axis]}")
    return _shape.take(a, _index(a, keep), axis)


def delete(arr, obj, axis=None):
    """``numpy.delete``: the entries along ``axis`` other than ``obj``."""
    if axis is None:
        arr, axis = _shape.ravel(arr), 0
    axis = normalize_axis(axis, ndim_of(arr))
    keep = np.delete(np.arange(shape_of(arr)[axis]), obj)
    return _shape.take(arr, _index(arr, keep), axis)


def choose(a, choices, mode="raise"):
    """``numpy.choose``: entry by entry, the choice that the integer array ``a`` names."""
    if mode != "raise":
        raise NotImplementedError(f"choose: mode={mode!r} is not supported; use 'raise'")
    every = to_host(raw(a))  # all elements' entries, under vmap too: a check, not a choice
    choices = list(choices)
    if every.size and (every.min() < 0 or every.max() >= len(choices)):
        raise ValueError(f"choose: a has entries outside [0, {len(choices)})")
    which = primal(a)
    out = choices[-1]
    for k in range(len(choices) - 2, -1, -1):
        out = _ew.where(_ew.equal(which, k), choices[k], out)
    return out


def extract(condition, arr):
    """``numpy.extract``: the entries of ``arr`` where ``condition`` holds, flattened."""
    return compress(np.ravel(concrete(condition, "extract's condition")), _shape.ravel(arr), 0)


def trim_zeros(filt, trim="fb"):
    """``numpy.trim_zeros`` of a 1-d array: the leading and/or trailing zeros cut."""
    nonzero = np.flatnonzero(concrete(filt, "trim_zeros") != 0)
    n = shape_of(filt)[0]
    first = int(nonzero[0]) if nonzero.size and "f" in trim.lower() else 0 if nonzero.size else n
    last = int(nonzero[-1]) + 1 if nonzero.size and "b" in trim.lower() else n
    return _slice(filt, 0, first, max(first, last))

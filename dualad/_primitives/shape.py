"""Shape primitives (linear: the JVP applies the primitive to the tangent and
``transpose`` gives the VJP), and the composites built on them: reshaping,
transposing, broadcasting and its transpose the sum, joining and splitting,
flipping, padding, copying, prefix sums; ``take`` and ``index_set``, written
with the indexing entries (``indexing.py``).

Axis parameters are normalized to negative axes before ``bind``, so a chunk
of tangents with a leading batch axis goes through the same primitive; the
few whose parameters name every axis (reshape, permute, broadcast, index)
say how to prefix the batch axis in ``batch``.
"""

from __future__ import annotations

import math

import numpy as np

from dualad._base.backend import SCALAR_TYPES, is_float_dtype, namespace_of
from dualad._base.core import Value, as_arrays, bind
from dualad._base.shapes import (
    dtype_of,
    is_mask,
    ndim_of,
    normalize_axes,
    normalize_axis,
    raw,
    reshape_impl,
    shape_of,
    zeros,
)
from dualad._primitives import elementwise as _ew
from dualad._primitives.indexing import (
    _flat_positions,
    _index_like,
    _is_advanced,
    _last_of_each,
    _last_writes,
    _normalize_index,
    _traced_indices,
    getitem,
    scatter,
)
from dualad._table import operations
from dualad._table.entries import linear

__all__ = [
    "reshape", "ravel", "permute_dims", "transpose", "swapaxes", "moveaxis",
    "squeeze", "expand_dims", "broadcast_to", "broadcast_arrays", "concatenate",
    "stack", "split", "flip", "repeat", "tile", "take",
    "asarray", "copy", "cumsum", "unbroadcast", "sum", "index_set",
    "matrix_transpose",
]


# -- reshape and friends ------------------------------------------------------

_reshape_p = linear(
    "reshape", reshape_impl,
    lambda g, x, *, shape: (reshape(g, x[0]),),
    batch=lambda params, k: {"shape": (k,) + params["shape"]}, simplifications=("same_shape",), fresh=True,
    moves_elements=True, sparsity="selection", partition="reshape")


def reshape(x, shape, order="C"):
    """Reshape ``x``; one entry of ``shape`` may be -1. ``order="F"`` reads and
    writes the entries first axis fastest, as NumPy's."""
    if order != "C":
        if order != "F":
            raise ValueError(f"reshape: order must be 'C' or 'F', got {order!r}")
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        return permute_dims(reshape(permute_dims(x), shape[::-1]))
    shape = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
    old = shape_of(x)
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        if shape.count(-1) > 1 or known == 0 or math.prod(old) % known:
            raise ValueError(f"cannot reshape an array of shape {old} into {shape}")
        shape = tuple(math.prod(old) // known if s == -1 else s for s in shape)
    if math.prod(shape) != math.prod(old):
        raise ValueError(f"cannot reshape an array of shape {old} into {shape}")
    if shape == old:
        return x
    return bind(_reshape_p, x, shape=shape)


def ravel(x):
    return reshape(x, (-1,))


def _permute_impl(xp, x, *, axes):
    # NumPy's method, without array_api_compat's wrapper (0.7 us against 0.12)
    return x.transpose(axes) if type(x) is np.ndarray else xp.permute_dims(x, axes)


_permute_p = linear(
    "permute_dims", _permute_impl,
    lambda g, x, *, axes: (permute_dims(g, tuple(sorted(range(len(axes)), key=axes.__getitem__))),),
    batch=lambda params, k: {"axes": (0,) + tuple(a + 1 for a in params["axes"])},
    simplifications=("transpose",), fresh=True, moves_elements=True, sparsity="selection",
    partition="permute_dims")


def permute_dims(x, axes=None):
    """Permute the axes of ``x`` (reverse them when ``axes`` is None)."""
    n = ndim_of(x)
    axes = tuple(range(n))[::-1] if axes is None else tuple(a % n if n else a for a in axes)
    if sorted(axes) != list(range(n)):
        raise ValueError(f"axes must be a permutation of range({n}), got {axes}")
    if axes == tuple(range(n)):
        return x
    return bind(_permute_p, x, axes=axes)


transpose = permute_dims


def matrix_transpose(x):
    n = ndim_of(x)
    if n < 2:
        raise ValueError(f"matrix_transpose needs ndim >= 2, got shape {shape_of(x)}")
    return swapaxes(x, -1, -2)


def swapaxes(x, axis1, axis2):
    n = ndim_of(x)
    axes = list(range(n))
    a, b = axis1 % n, axis2 % n
    axes[a], axes[b] = axes[b], axes[a]
    return permute_dims(x, tuple(axes))


def moveaxis(x, source, destination):
    n = ndim_of(x)
    src = [s % n for s in ((source,) if isinstance(source, int) else source)]
    dst = [d % n for d in ((destination,) if isinstance(destination, int) else destination)]
    order = [a for a in range(n) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute_dims(x, tuple(order))


def squeeze(x, axis=None):
    shape = shape_of(x)
    if axis is None:
        axes = tuple(i for i, s in enumerate(shape) if s == 1)
    else:
        axes = tuple(a % len(shape) for a in normalize_axes(axis, len(shape)))
        if any(shape[a] != 1 for a in axes):
            raise ValueError(f"cannot squeeze axis {axis} of an array of shape {shape}")
    return reshape(x, tuple(s for i, s in enumerate(shape) if i not in axes))


def expand_dims(x, axis=0):
    shape = list(shape_of(x))
    n = len(shape) + (1 if isinstance(axis, int) else len(axis))
    for a in sorted(a % n for a in ((axis,) if isinstance(axis, int) else axis)):
        shape.insert(a, 1)
    return reshape(x, tuple(shape))


# -- sums: the transpose of broadcasting (and broadcasting, the transpose of a sum) ----------
def _kept_shape(shape, axis):
    n = len(shape)
    return tuple(1 if i - n in axis else s for i, s in enumerate(shape))


def _expand(g, xshape, axis, keepdims):
    """Broadcast a reduced cotangent back over the reduced axes."""
    if not keepdims:
        g = reshape(g, _kept_shape(xshape, axis))
    return broadcast_to(g, xshape)


# NumPy reduces a short axis of a large array one outer element at a time: the sum of a
# (1000, 5, 2) array's last axis in 75 us, against 3 us for adding its two slices (GMM's
# arrays), the max of a (1000, 5) array's rows in 41 us against 5. Such a reduction of
# float32 or float64 combines the slices instead, in NumPy's order: a sum of fewer than 8
# terms is added one after the other (pairwise summation starts at 8 numbers, which a
# complex axis of 4 holds; float16 accumulates in float32), and max and min are
# sequential, so the numbers are the same, bit for bit (tests/dualad/numpy/test_short_axis_sums.py).
_SHORT_AXIS = 7
_LARGE = 2048
_IN_ORDER = (np.dtype(np.float64), np.dtype(np.float32))


def by_slices(x, axis, keepdims, combine):
    """``x`` reduced over ``axis`` by ``combine`` (``np.add``, ``np.maximum``, ...) of its
    slices, where the axis is one short axis of a large float NumPy array; else None."""
    if (type(x) is not np.ndarray or type(axis) is not tuple or len(axis) != 1 or x.size < _LARGE
            or not 1 < x.shape[axis[0]] <= _SHORT_AXIS or x.dtype not in _IN_ORDER):
        return None
    parts = np.moveaxis(x, axis[0], 0)
    out = combine(parts[0], parts[1])
    for part in parts[2:]:
        combine(out, part, out=out)
    return np.expand_dims(out, axis[0]) if keepdims else out


def _sum_impl(xp, x, *, axis, keepdims):
    out = by_slices(x, axis, keepdims, np.add)
    if out is not None:
        return out
    if type(x) is np.ndarray and x.dtype.kind in "fc":  # np.sum's own reduction, 1.3 us sooner
        return np.add.reduce(x, axis=axis, keepdims=keepdims)
    return xp.sum(x, axis=axis, keepdims=keepdims)


_sum_p = linear(
    "sum", _sum_impl,
    lambda g, x, *, axis, keepdims: (_expand(g, x[0], axis, keepdims),), new_array=True, fresh=True,
    sparsity="reduction", partition="reduction", combine="add", lowering="sum")


def _numpy_keywords(x, dtype, out, name):
    """NumPy's ``dtype=`` (the input is cast first) and ``out=`` (refused: an array
    passed as ``out`` could not hold the derivative) of a reduction."""
    if out is not None:
        raise TypeError(f"{name}: out= is not supported (the array given as out could not hold "
                        "the derivative); assign the result instead")
    return x if dtype is None else _ew.astype(x, dtype)


def sum(x, axis=None, keepdims=False, *, dtype=None, out=None):
    """Sum over ``axis`` (all axes by default)."""
    if dtype is not None or out is not None:
        x = _numpy_keywords(x, dtype, out, "sum")
    axes = normalize_axes(axis, ndim_of(x))
    return bind(_sum_p, x, axis=axes, keepdims=keepdims)


# -- broadcasting ---------------------------------------------------------------
def unbroadcast(g, shape):
    """Sum ``g`` over the axes along which an array of ``shape`` was broadcast."""
    gshape = shape_of(g)
    if gshape == tuple(shape):
        return g
    lead = len(gshape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, s in enumerate(shape) if s == 1 and gshape[lead + i] != 1)
    if axes:
        g = sum(g, axis=axes)
    return reshape(g, shape)


_broadcast_p = linear(
    "broadcast_to", lambda xp, x, *, shape: xp.broadcast_to(x, shape),
    lambda g, x, *, shape: (unbroadcast(g, x[0]),),
    batch=lambda params, k: {"shape": (k,) + params["shape"]}, simplifications=("same_shape",), fresh=True,
    moves_elements=True, sparsity="selection", partition="broadcast_to")


def broadcast_to(x, shape):
    shape = tuple(shape)
    if shape_of(x) == shape:
        return x
    if type(x) in SCALAR_TYPES:
        x = np.asarray(x)
    missing = len(shape) - ndim_of(x)
    if missing > 0:  # new leading axes first, so a chunk of tangents keeps its batch axis in front
        x = reshape(x, (1,) * missing + shape_of(x))
    return bind(_broadcast_p, x, shape=shape)


def broadcast_arrays(*arrays):
    arrays = as_arrays(arrays)
    shape = _broadcast_shapes(*(shape_of(a) for a in arrays))
    return [broadcast_to(a, shape) for a in arrays]


def _broadcast_shapes(*shapes):
    n = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(n):
        dims = {s[i - n + len(s)] for s in shapes if i - n + len(s) >= 0} - {1}
        if len(dims) > 1:
            raise ValueError(f"shapes {shapes} cannot be broadcast together")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


# -- joining and splitting ---------------------------------------------------------
def _concat_transpose(g, *avals, axis):
    outs, start = [], 0
    for shape, _ in avals:
        size = shape[axis]
        outs.append(getitem(g, (slice(None),) * (len(shape) + axis) + (slice(start, start + size),)))
        start += size
    return tuple(outs)


_concat_p = linear("concatenate", lambda xp, *xs, axis: xp.concat(xs, axis=axis),
                   _concat_transpose, linear_args=None, fresh=True, moves_elements=True, sparsity="selection",
                   partition="concatenate")


def concatenate(arrays, axis=0):
    arrays = list(arrays)
    if not arrays:
        raise ValueError("concatenate needs at least one array")
    if axis is None:  # NumPy's: each array flattened, then joined
        arrays, axis = [ravel(a) for a in arrays], 0
    n = ndim_of(arrays[0])
    if n == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    if len(arrays) == 1:
        return arrays[0]
    return bind(_concat_p, *arrays, axis=normalize_axis(axis, n))


def stack(arrays, axis=0):
    arrays = list(arrays)
    if not arrays:
        raise ValueError("stack needs at least one array")
    n = ndim_of(arrays[0]) + 1
    axis = normalize_axis(axis, n)
    return concatenate([expand_dims(a, axis % n) for a in arrays], axis=axis)


def split(x, indices_or_sections, axis=0):
    size = shape_of(x)[axis]
    if isinstance(indices_or_sections, int):
        if size % indices_or_sections:
            raise ValueError(f"an axis of size {size} does not split into {indices_or_sections} equal parts")
        step = size // indices_or_sections
        bounds = list(range(0, size + 1, step)) if step else [0] * (indices_or_sections + 1)
    else:  # clamped as NumPy clamps them (strict array-API namespaces refuse out-of-range stops)
        bounds = [0, *(min(max(i if i >= 0 else i + size, 0), size) for i in indices_or_sections), size]
        bounds = [max(a, b) for a, b in zip(bounds, [0] + bounds[:-1])]  # never decreasing
    lead = (slice(None),) * (axis % ndim_of(x))
    return [getitem(x, lead + (slice(a, b),)) for a, b in zip(bounds[:-1], bounds[1:])]


_flip_p = linear("flip", lambda xp, x, *, axis: xp.flip(x, axis=axis),
                 lambda g, x, *, axis: (flip(g, axis),), fresh=True,
                 moves_elements=True, sparsity="selection")


def flip(x, axis=None):
    axes = normalize_axes(axis, ndim_of(x))
    return bind(_flip_p, x, axis=axes) if axes else x


def repeat(x, repeats, axis=None):
    """``numpy.repeat``, as a gather (so its VJP is the gather's scatter-add)."""
    if axis is None:
        x, axis = ravel(x), 0
    n = shape_of(x)[axis]
    index = np.repeat(np.arange(n), repeats)
    return take(x, _index_like(x, index), axis=axis)


def tile(x, reps):
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    shape = shape_of(x)
    n = max(len(shape), len(reps))
    shape = (1,) * (n - len(shape)) + shape
    reps = (1,) * (n - len(reps)) + reps
    x = reshape(x, tuple(d for s in shape for d in (1, s)))
    x = broadcast_to(x, tuple(d for r, s in zip(reps, shape) for d in (r, s)))
    return reshape(x, tuple(r * s for r, s in zip(reps, shape)))


def _pad_impl(xp, x, *, pad_width):
    shape = tuple(s + a + b for s, (a, b) in zip(x.shape, pad_width))
    out = xp.zeros(shape, dtype=x.dtype)
    if 0 not in x.shape:  # nothing to copy; Dask's assignment fails on an empty value
        out[tuple(slice(a, a + s) for s, (a, _) in zip(x.shape, pad_width))] = x
    return out


_pad_p = linear(
    "pad", _pad_impl,
    lambda g, x, *, pad_width: (getitem(g, tuple(slice(a, a + s) for s, (a, _) in zip(x[0], pad_width))),),
    batch=lambda params, k: {"pad_width": ((0, 0),) + params["pad_width"]}, fresh=True,
    moves_elements=True, sparsity="selection")


def pad(x, pad_width, constant_values=0.0):
    """Constant padding with one value (``ops.pad`` has NumPy's other modes)."""
    n = ndim_of(x)
    width = tuple(tuple(int(v) for v in p) for p in np.broadcast_to(np.asarray(pad_width), (n, 2)))
    out = bind(_pad_p, x, pad_width=width)
    if constant_values is not None and (isinstance(constant_values, Value) or constant_values != 0):
        ones = bind(_pad_p, _ones_like_raw(x), pad_width=width)
        out = out + (1.0 - ones) * constant_values
    return out


def _ones_like_raw(x):
    """Raw ones of ``x``'s shape (one element's, under vmap), backend and dtype."""
    r = raw(x)
    return namespace_of([r]).ones(shape_of(x), dtype=r.dtype)



def take(x, indices, axis=None):
    if axis is None:
        x, axis = ravel(x), 0
    axis = axis % ndim_of(x)
    return getitem(x, (slice(None),) * axis + (indices,))



# A Python number is immutable: its copy is itself.
_copy_p = linear("copy", lambda xp, x: x if type(x) in SCALAR_TYPES else xp.asarray(x, copy=True),
                 lambda g, x: (g,), scalar_ok=True, broadcasts=True, moves_elements=True)


def copy(x):
    """``numpy.copy``: a new value with its own buffer, so assigning into it
    (``y = x.copy(); y[0] = 1``) never changes ``x``."""
    return x if type(x) in SCALAR_TYPES else bind(_copy_p, x)


def _first_value(obj):
    """The first array or value type inside nested lists and tuples, or None."""
    if isinstance(obj, (list, tuple)):
        return next((v for v in map(_first_value, obj) if v is not None), None)
    return None if type(obj) in SCALAR_TYPES else obj


def asarray(obj, dtype=None, *, like=None):
    """``numpy.asarray`` that keeps derivatives: nested lists of values are stacked.

    Python numbers and host lists take the backend of the first array inside
    ``obj`` (else of ``like``, else NumPy); with a floating array among them
    they take its dtype, as NumPy treats Python numbers.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp, ops
    >>> jvp(lambda x: ops.asarray([x, 2.0 * x, 1.0]), (3.0,), (1.0,))
    (array([3., 6., 1.]), array([1., 2., 0.]))
    """
    first = _first_value(obj)
    if first is not None and isinstance(obj, (list, tuple)):
        out = stack([asarray(o, like=first) for o in obj])
    elif first is not None:  # already an array or a value
        out = obj
    else:  # Python numbers and host lists
        r = None if like is None else raw(like)
        if r is None or type(r) in SCALAR_TYPES:
            out = np.asarray(obj)
        else:
            xp = namespace_of([r])
            out = xp.asarray(obj, dtype=r.dtype if is_float_dtype(xp, r.dtype) else None)
    return out if dtype is None or dtype_of(raw(out)) == dtype else _ew.astype(out, dtype)


def index_set(base, values, idx):
    """``base`` with ``base[idx] = values`` done functionally, as NumPy assigns:
    ``values`` broadcast to ``base[idx]``'s shape and cast to ``base``'s dtype,
    written exactly, and where ``idx`` repeats a position the last write wins
    (``x[[0, 0]] = [5, 7]`` leaves 7).

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp, ops
    >>> f = lambda v: ops.index_set(np.zeros(3), v, ([0, 0],))
    >>> jvp(f, (np.array([5.0, 7.0]),), (np.array([1.0, 10.0]),))
    (array([7., 0., 0.]), array([10.,  0.,  0.]))
    """
    shape = shape_of(base)
    nidx = _normalize_index(idx, len(shape))
    values = asarray(values, dtype_of(raw(base)), like=base)  # NumPy casts into the target
    if _traced_indices(nidx):
        return _index_set_traced(base, values, nidx)
    positions = _flat_positions(shape, nidx)  # the flat position of each target
    values = broadcast_to(values, positions.shape)
    flat = positions.reshape(-1)
    if any(_is_advanced(i) and not is_mask(i) for i in nidx):
        last = _last_of_each(flat)
        if len(last) < len(flat):  # a repeated position: keep each one's last write
            kept = getitem(reshape(values, (-1,)), (_index_like(base, last),))
            return reshape(index_set(reshape(base, (-1,)), kept, (flat[last],)), shape)
    written = np.zeros(math.prod(shape), dtype=bool)
    written[flat] = True
    return _ew.where(_index_like(base, written.reshape(shape)), scatter(values, shape, nidx), base)


def _index_set_traced(base, values, nidx):
    """:func:`index_set` where ``nidx`` holds integer index arrays that ``dualad.compile``
    traces (or vmap batches): what the host computes from the index in ``index_set`` is
    computed by entries here, so a replay reads the new index. Each position takes the
    value of its last write (a mask of the writes kept, zero elsewhere, scattered)."""
    shape, zero = shape_of(base), zeros(base, ())
    last = _last_writes(shape, nidx)
    kept = _ew.where(last, broadcast_to(values, shape_of(last)), zero)
    written = _ew.not_equal(scatter(_ew.astype(last, dtype_of(raw(base))), shape, nidx), zero)
    return _ew.where(written, scatter(kept, shape, nidx), base)


# -- prefix sums ------------------------------------------------------------------------
def _cumsum_impl(xp, x, *, axis):
    f = getattr(xp, "cumulative_sum", None) or xp.cumsum
    return f(x, axis=axis)


_cumsum_p = linear("cumsum", _cumsum_impl,
                   lambda g, x, *, axis: (flip(cumsum(flip(g, axis), axis), axis),), fresh=True,
                   sparsity="cumsum")


def cumsum(x, axis=None):
    if axis is None:
        x, axis = ravel(x), 0
    return bind(_cumsum_p, x, axis=normalize_axis(axis, ndim_of(x)))

operations.provide(reshape, broadcast_to, unbroadcast, stack)


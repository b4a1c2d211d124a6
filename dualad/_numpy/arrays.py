"""Building, rearranging and ordering arrays, as NumPy spells them.

Every function here is a composite of the table's linear primitives
(reshape, concatenate, getitem, scatter, flip, where with a constant mask),
so every mode differentiates it with no rule of its own. Index arrays and
masks are computed on the host from shapes or raw values (control, not
math) and placed in the operand's backend.
"""

from __future__ import annotations

import math

import numpy as np

from dualad._base.backend import SCALAR_TYPES, is_float_dtype, namespace_of, to_host
from dualad._base.core import bind
from dualad._base.shapes import (
    batched,
    concrete,
    dtype_of,
    ndim_of,
    normalize_axis,
    primal,
    raw,
    shape_of,
)
from dualad._numpy import statistics as _statistics
from dualad._primitives import elementwise as _ew
from dualad._primitives import reductions as _red
from dualad._primitives import shape as _shape
from dualad._table.entries import non_differentiable
from dualad._table.host import on_values

__all__ = [
    "diag", "diagflat", "tril", "triu", "hstack", "vstack", "dstack", "column_stack",
    "row_stack", "atleast_1d", "atleast_2d", "atleast_3d", "append", "array_split", "hsplit",
    "vsplit", "dsplit", "roll", "rot90", "flipud", "fliplr", "diff", "ediff1d", "kron",
    "cross", "trapezoid", "take_along_axis", "sort", "partition", "compress", "msort", "block", "meshgrid",
    "linspace", "gradient", "select", "polyval", "convolve", "correlate", "cumprod",
    "interp", "pad", "put_along_axis", "insert", "fill_diagonal", "put", "place", "cumulative_prod",
    "rollaxis", "unstack", "delete", "resize",
    "choose", "extract", "piecewise", "apply_along_axis", "trim_zeros", "sort_complex", "vander",
    "logspace", "geomspace", "polyadd", "polysub", "polymul", "polyder", "polyint",
    "unwrap", "apply_over_axes",
]

_index = _shape._index_like  # a host index array placed in the operand's backend
_numbers = _shape._numbers_like  # host numbers in the operand's backend and dtype


def _lift(like, value):
    """A Python number as a 0-d array of ``like``'s backend (NumPy's default dtype rules)."""
    return namespace_of([raw(like)]).asarray(value) if type(value) in SCALAR_TYPES else value


# -- diagonals and triangles ---------------------------------------------------------
def diag(v, k=0):
    """``numpy.diag``: the k-th diagonal of a matrix, or a matrix with ``v`` on it.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp, ops
    >>> jvp(lambda v: ops.diag(v, 1), (np.array([1.0, 2.0]),), (np.ones(2),))[1].tolist()
    [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]
    """
    nd = ndim_of(v)
    if nd == 2:
        from dualad._numpy.composites import diagonal
        return diagonal(v, offset=k)
    if nd != 1:
        raise ValueError(f"diag: v must be 1-d or 2-d, got shape {shape_of(v)}")
    n = shape_of(v)[0] + (-k if k < 0 else k)
    i = np.arange(shape_of(v)[0])
    rows, cols = (i, i + k) if k >= 0 else (i - k, i)
    return _shape.scatter(v, (n, n), (_index(v, rows), _index(v, cols)))


def diagflat(v, k=0):
    """``numpy.diagflat``: ``v`` flattened onto the k-th diagonal."""
    return diag(_shape.ravel(v), k)


def _triangle(m, k, lower):
    if ndim_of(m) < 2:
        raise ValueError(f"{'tril' if lower else 'triu'}: m must have ndim >= 2, got shape {shape_of(m)}")
    n, c = shape_of(m)[-2:]
    mask = np.tri(n, c, k, dtype=bool) if lower else ~np.tri(n, c, k - 1, dtype=bool)
    return _ew.where(_index(m, mask), m, 0.0)


def tril(m, k=0):
    """Lower triangle of the last two axes (entries above the k-th diagonal are 0)."""
    return _triangle(m, k, True)


def triu(m, k=0):
    """Upper triangle of the last two axes (entries below the k-th diagonal are 0)."""
    return _triangle(m, k, False)


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


def hstack(tup):
    arrays = [atleast_1d(a) for a in _listed(tup, "hstack")]
    return _shape.concatenate(arrays, axis=0 if ndim_of(arrays[0]) == 1 else 1)


def vstack(tup):
    return _shape.concatenate([atleast_2d(a) for a in _listed(tup, "vstack")], axis=0)


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


def roll_half(x, axes, inverse=False):
    """``numpy.fft.fftshift`` (``ifftshift`` with ``inverse``) over ``axes``."""
    axes = tuple(range(ndim_of(x))) if axes is None else (axes,) if isinstance(axes, int) else tuple(axes)
    shifts = [shape_of(x)[a] // 2 * (-1 if inverse else 1) for a in axes]
    return roll(x, shifts, axes) if axes else x


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


# -- padding -----------------------------------------------------------------------------------
_GATHERED = ("edge", "reflect", "symmetric", "wrap")
_STATISTICS = {"maximum": _red.max, "minimum": _red.min, "mean": _red.mean,
               "median": lambda v, axis, keepdims: _statistics.median(v, axis, keepdims)}
_FILLED = ("constant", "empty", "linear_ramp", *_STATISTICS)


def _per_axis(value, n, name):
    """NumPy's ``((before, after),) * n`` broadcasting of a pad argument."""
    try:
        return np.broadcast_to(np.asarray(value, dtype=object), (n, 2)).tolist()
    except ValueError:
        raise ValueError(f"pad: {name} must be a number, a pair or one pair per axis "
                         f"({n} axes), got {value!r}") from None


def pad(array, pad_width, mode="constant", **kwargs):
    """``numpy.pad`` in every mode NumPy has: ``constant`` (the values may carry
    derivatives), ``edge``, ``reflect``, ``symmetric``, ``wrap`` (gathers),
    ``linear_ramp``, ``maximum``, ``minimum``, ``mean``, ``median`` (with
    ``stat_length``) and ``empty`` (zeros here). Axes are padded one after
    another, as NumPy does, so corners match NumPy's.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp, ops
    >>> jvp(lambda x: ops.pad(x, 2, mode="reflect"), (np.array([1.0, 2.0, 3.0]),), (np.eye(3)[0],))
    (array([3., 2., 1., 2., 3., 2., 1.]), array([0., 0., 1., 0., 0., 0., 1.]))
    """
    if callable(mode):
        raise NotImplementedError("pad: a callable mode is not supported; pad with a named mode")
    if mode not in _GATHERED + _FILLED:
        raise ValueError(f"pad: mode must be one of {_GATHERED + _FILLED}, got {mode!r}")
    if mode in ("reflect", "symmetric") and kwargs.get("reflect_type", "even") != "even":
        raise NotImplementedError("pad: reflect_type='odd' is not supported yet")
    n = ndim_of(array)
    widths = [(int(a), int(b)) for a, b in _per_axis(pad_width, n, "pad_width")]
    if any(a < 0 or b < 0 for a, b in widths):
        raise ValueError(f"pad: pad_width must be non-negative, got {pad_width!r}")
    values = _per_axis(kwargs.get("constant_values", 0.0) if mode == "constant" else 0.0, n,
                       "constant_values")
    if mode in ("constant", "empty"):
        flat = [v for pair in values for v in pair]
        if not any(hasattr(v, "_level") for v in flat) and all(v == flat[0] for v in flat):
            return _shape.pad(array, widths, flat[0])  # one number: the linear entry alone
    out = array
    for axis, (before, after) in enumerate(widths):
        if before or after:
            out = _shape.concatenate(_pad_parts(out, axis, before, after, mode, kwargs, values[axis]),
                                     axis=axis)
    return out


def _pad_parts(x, axis, before, after, mode, kwargs, values):
    """The pieces ``[before, x, after]`` of ``x`` padded along ``axis``."""
    size = shape_of(x)[axis]
    if mode in _GATHERED:
        if size == 0:
            raise ValueError(f"pad: mode {mode!r} can't extend the empty axis {axis}")
        index = np.pad(np.arange(size), (before, after), mode=mode)  # where each entry comes from
        return [_shape.take(x, _index(x, index), axis)]
    lo, hi = _slice(x, axis, 0, 1), _slice(x, axis, size - 1, size)
    if mode == "linear_ramp":
        ends = _per_axis(kwargs.get("end_values", 0.0), ndim_of(x), "end_values")[axis]
        ramps = []
        for edge, end, count, first in ((lo, ends[0], before, True), (hi, ends[1], after, False)):
            steps = np.arange(count) if first else np.arange(count - 1, -1, -1)
            # the entry ``s`` steps from the outer end: end + (edge - end) * s / count
            w = _numbers(x, (steps / max(count, 1)).reshape((-1,) + (1,) * (ndim_of(x) - axis - 1)))
            ramps.append(_ew.add(_ew.multiply(edge, w), _ew.multiply(_fill_like(x, end), 1.0 - w)))
        return [ramps[0], x, ramps[1]]
    if mode in ("constant", "empty"):
        fills = [_fill_like(x, v) for v in values]
    else:
        lengths = _per_axis(kwargs.get("stat_length"), ndim_of(x), "stat_length")[axis]
        fills = []
        for first, length in zip((True, False), lengths):
            k = size if length is None else max(1, min(int(length), size))
            part = _slice(x, axis, 0, k) if first else _slice(x, axis, size - k, size)
            fills.append(_STATISTICS[mode](part, axis=axis, keepdims=True))
    return [_edge(fills[0], x, axis, before), x, _edge(fills[1], x, axis, after)]


def _edge(fill, x, axis, count):
    """``fill`` broadcast to ``count`` entries along ``axis`` of ``x``'s shape."""
    shape = list(shape_of(x))
    shape[axis] = count
    return _shape.broadcast_to(fill, tuple(shape))


def _fill_like(x, value):
    """A fill value in ``x``'s backend and dtype (NumPy casts it into the array)."""
    return _shape.asarray(value, dtype_of(raw(x)), like=x)


def _slice(x, axis, start, stop):
    """``x[..., start:stop, ...]`` along ``axis``, bounds clamped to the axis as NumPy does
    (strict array-API namespaces refuse out-of-range ones)."""
    nd = ndim_of(x)
    begin, end, _ = slice(start, stop).indices(shape_of(x)[axis % nd])
    return _shape.getitem(x, (slice(None),) * (axis % nd) + (slice(begin, max(begin, end)),))


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
    return _shape.getitem(arr, _along_axis(arr, indices, axis))


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


def fill_diagonal(a, val, wrap=False):
    """``numpy.fill_diagonal``, in place on a value that takes item assignment."""
    if wrap:
        raise NotImplementedError("fill_diagonal: wrap=True is not supported")
    n = min(shape_of(a))
    a[tuple(np.arange(n) for _ in shape_of(a))] = val


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


def compress(condition, a, axis=None):
    """``numpy.compress``: the slices of ``a`` along ``axis`` where ``condition`` holds."""
    if axis is None:
        return compress(condition, _shape.ravel(a), 0)
    keep = np.flatnonzero(concrete(condition, "compress's condition").astype(bool))
    if keep.size and keep[-1] >= shape_of(a)[axis]:
        raise IndexError(f"compress: condition has {keep[-1] + 1} entries or more, "
                         f"axis {axis} of a has {shape_of(a)[axis]}")
    return _shape.take(a, _index(a, keep), axis)


def msort(a):
    return sort(a, axis=0)


# -- grids ------------------------------------------------------------------------------------------
def meshgrid(*xi, indexing="xy", sparse=False, copy=True):
    """``numpy.meshgrid`` of 1-d arrays (values with derivatives allowed)."""
    n = len(xi)
    shapes = [shape_of(x)[0] if ndim_of(x) else 1 for x in xi]
    out = []
    for i, x in enumerate(xi):
        s = [1] * n
        s[i] = shapes[i]
        if indexing == "xy" and n >= 2 and i < 2:
            s[0], s[1] = s[1], s[0]
        x = _shape.reshape(x, tuple(s))
        if not sparse:
            full = list(shapes)
            if indexing == "xy" and n >= 2:
                full[0], full[1] = full[1], full[0]
            x = _shape.broadcast_to(x, tuple(full))
        out.append(x)
    return out


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """``numpy.linspace`` whose endpoints may carry derivatives (scalars)."""
    div = (num - 1) if endpoint else num
    frac = np.arange(num, dtype=np.float64) / div if div > 0 else np.zeros(num)
    like = start if hasattr(raw(start), "dtype") else stop
    r = raw(like)
    frac = _numbers(like, frac) if hasattr(r, "dtype") else frac
    step = (stop - start) / div if div > 0 else math.nan
    out = start + (stop - start) * frac
    return (out, step) if retstep else out


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


# -- piecewise and polynomials ------------------------------------------------------------------
def select(condlist, choicelist, default=0.0):
    """``numpy.select``: the first true condition picks; no derivative flows to conditions."""
    if len(condlist) != len(choicelist):
        raise ValueError("select: condlist and choicelist must have the same length")
    out = default
    for c, x in zip(reversed(condlist), reversed(choicelist)):
        out = _ew.where(primal(c), x, out)
    return out


def polyval(p, x):
    """``numpy.polyval`` by Horner's rule (coefficients highest power first)."""
    coeffs = [p[i] for i in range(shape_of(p)[0])] if not isinstance(p, (list, tuple)) else list(p)
    out = 0.0 * x
    for c in coeffs:
        out = out * x + c
    return out


def interp(x, xp, fp, left=None, right=None, period=None):
    """``numpy.interp``: piecewise linear, differentiable in ``x`` and ``fp`` (``xp``
    sets the grid and is taken as constant). Outside the grid the end values hold."""
    if period is not None:
        raise NotImplementedError("interp: period= is not supported yet")
    if batched(xp):
        concrete(xp, "interp's grid xp")  # one grid for the batch (refused if batched)
    grid = raw(xp)
    if isinstance(grid, (list, tuple)):
        grid = namespace_of([raw(x)]).asarray(grid)
    ns = namespace_of([grid])
    n = shape_of(grid)[0]

    def cell(rx):  # the grid interval of each entry of x
        query = rx if hasattr(rx, "shape") else ns.asarray(rx)
        # searched as 1-d: Dask's searchsorted fails on a 0-d query
        i = ns.searchsorted(grid, ns.reshape(query, (-1,)), side="right") - 1
        return ns.reshape(ns.clip(i, 0, n - 2), query.shape)
    i = on_values(cell, x)
    x0, x1 = _take_flat(grid, i), _take_flat(grid, i + 1)
    f0, f1 = _take_flat(fp, i), _take_flat(fp, i + 1)
    rx = primal(x)
    t = (x - x0) / (x1 - x0)
    out = f0 + (f1 - f0) * t
    lo = fp[0] if left is None else left
    hi = fp[-1] if right is None else right
    out = _ew.where(rx < grid[0], lo, out)
    return _ew.where(rx > grid[-1], hi, out)


def _take_flat(v, i):
    """``v[i]`` for a 1-d ``v`` and an index array ``i`` of any shape (batched under vmap)."""
    if not hasattr(i, "_strip"):
        return _shape.take(v, i)
    flat = _shape.reshape(i, (-1,))
    return _shape.reshape(take_along_axis(_shape.broadcast_to(v, (shape_of(flat)[0], shape_of(v)[0])),
                                          _shape.reshape(flat, (-1, 1)), 1), shape_of(i))


def convolve(a, v, mode="full"):
    """``numpy.convolve`` of 1-d arrays, as a gather and a sum (O(n m))."""
    n, m = shape_of(a)[0], shape_of(v)[0]
    if n == 0 or m == 0:
        raise ValueError("convolve: a and v must not be empty")
    if n < m:
        a, v, n, m = v, a, m, n
    k = np.arange(n + m - 1)[:, None]
    j = np.arange(m)[None, :]
    src = k - j  # a's index for each (output, v index)
    valid = (src >= 0) & (src < n)
    a_pad = _shape.concatenate([a, _shape.reshape(0.0 * a[:1], (1,))]) if n else a
    gathered = _shape.getitem(a_pad, (_index(a, np.where(valid, src, n)),))
    full = _shape.sum(gathered * v, axis=1)
    if mode == "full":
        return full
    if mode == "same":
        start = (m - 1) // 2
        return full[start:start + n]
    if mode == "valid":
        return full[m - 1:n]
    raise ValueError(f"convolve: mode must be 'full', 'same' or 'valid', got {mode!r}")


def correlate(a, v, mode="valid"):
    """``numpy.correlate`` of 1-d arrays: ``convolve(a, conj(v[::-1]))``."""
    return convolve(a, _ew.conj(_shape.flip(v, 0)), mode)


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


# -- more of NumPy's arranging and selecting ---------------------------------------------------------
def rollaxis(a, axis, start=0):
    """``numpy.rollaxis``: ``moveaxis`` with NumPy's older convention for ``start``."""
    n = ndim_of(a)
    axis, start = axis % n, start + n if start < 0 else start
    if not 0 <= start <= n:
        raise ValueError(f"rollaxis: start {start} is out of range for {n} axes")
    return _shape.moveaxis(a, axis, start - 1 if axis < start else start)


def unstack(x, /, *, axis=0):
    """The arrays along ``axis`` (the array API's ``unstack``)."""
    axis = normalize_axis(axis, ndim_of(x))
    return tuple(_shape.take(x, _index(x, np.asarray(i)), axis) for i in range(shape_of(x)[axis]))


def delete(arr, obj, axis=None):
    """``numpy.delete``: the entries along ``axis`` other than ``obj``."""
    if axis is None:
        arr, axis = _shape.ravel(arr), 0
    axis = normalize_axis(axis, ndim_of(arr))
    keep = np.delete(np.arange(shape_of(arr)[axis]), obj)
    return _shape.take(arr, _index(arr, keep), axis)


def resize(a, new_shape):
    """``numpy.resize``: the flattened entries repeated (or cut) to fill ``new_shape``."""
    new_shape = (new_shape,) if isinstance(new_shape, int) else tuple(new_shape)
    size = math.prod(shape_of(a))
    if size == 0 or math.prod(new_shape) == 0:  # nothing of a is read (NumPy fills zeros)
        return _shape.broadcast_to(_fill_like(a, 0.0), new_shape)
    source = np.resize(np.arange(size), new_shape)
    return _shape.getitem(_shape.ravel(a), (_index(a, source),))


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


def piecewise(x, condlist, funclist, *args, **kw):
    """``numpy.piecewise``: each function (or constant) where its condition holds, the
    extra one (if any) elsewhere. Each function sees the whole ``x``; ``where`` picks."""
    condlist = [condlist] if not isinstance(condlist, (list, tuple)) else list(condlist)
    if len(funclist) not in (len(condlist), len(condlist) + 1):
        raise ValueError(f"piecewise: {len(funclist)} functions for {len(condlist)} conditions")
    out = _ew.multiply(x, 0.0)
    if len(funclist) == len(condlist) + 1:
        rest = funclist[-1]
        out = rest(x, *args, **kw) if callable(rest) else _ew.add(out, rest)
    for cond, f in zip(condlist, funclist):
        value = f(x, *args, **kw) if callable(f) else f
        out = _ew.where(primal(cond), value, out)
    return out


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """``numpy.apply_along_axis``: ``func1d`` on each 1-d slice along ``axis``; its
    output's axes take the place of ``axis``."""
    a = _shape.moveaxis(arr, axis, -1)
    lead = shape_of(a)[:-1]
    results = [func1d(_shape.getitem(a, idx), *args, **kwargs) for idx in np.ndindex(*lead)]
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


def trim_zeros(filt, trim="fb"):
    """``numpy.trim_zeros`` of a 1-d array: the leading and/or trailing zeros cut."""
    nonzero = np.flatnonzero(concrete(filt, "trim_zeros") != 0)
    n = shape_of(filt)[0]
    first = int(nonzero[0]) if nonzero.size and "f" in trim.lower() else 0 if nonzero.size else n
    last = int(nonzero[-1]) + 1 if nonzero.size and "b" in trim.lower() else n
    return _slice(filt, 0, first, max(first, last))


def sort_complex(a):
    """``numpy.sort_complex``: by real part, then imaginary part."""
    def order(r):
        r = to_host(r)
        return _index(a, np.lexsort((r.imag, r.real)) if np.iscomplexobj(r) else
                      np.argsort(r, kind="stable"))
    flat = _shape.ravel(a) if ndim_of(a) != 1 else a
    return take_along_axis(flat, on_values(order, flat), 0)


def vander(x, N=None, increasing=False):
    """``numpy.vander``: the powers of a 1-d ``x`` as columns."""
    n = shape_of(x)[0] if N is None else N
    powers = np.arange(n) if increasing else np.arange(n - 1, -1, -1)
    if n == 0:
        return _shape.broadcast_to(_fill_like(x, 0.0), (shape_of(x)[0], 0))
    return _shape.stack([_ew.power(x, int(k)) if k else _ew.add(_ew.multiply(x, 0.0), 1.0)
                         for k in powers], axis=1)


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """``numpy.logspace`` whose exponents may carry derivatives."""
    return _ew.power(base, linspace(start, stop, num, endpoint))


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """``numpy.geomspace`` of positive ends, which may carry derivatives."""
    return _ew.exp(linspace(_ew.log(start), _ew.log(stop), num, endpoint))


# -- polynomials (coefficients highest power first) -----------------------------------------------
def _coefficients(p):
    return _shape.asarray(p) if isinstance(p, (list, tuple)) else p


def polyadd(a1, a2):
    """``numpy.polyadd``."""
    a1, a2 = _coefficients(a1), _coefficients(a2)
    n = max(shape_of(a1)[0], shape_of(a2)[0])
    return _ew.add(_shape.pad(a1, [(n - shape_of(a1)[0], 0)]), _shape.pad(a2, [(n - shape_of(a2)[0], 0)]))


def polysub(a1, a2):
    """``numpy.polysub``."""
    return polyadd(a1, _ew.negative(_coefficients(a2)))


def polymul(a1, a2):
    """``numpy.polymul``: the coefficients convolved."""
    return convolve(_coefficients(a1), _coefficients(a2))


def polyder(p, m=1):
    """``numpy.polyder``: the ``m``-th derivative's coefficients."""
    p = _coefficients(p)
    for _ in range(m):
        n = shape_of(p)[0] - 1
        if n <= 0:
            return _ew.multiply(_slice(p, 0, 0, 1), 0.0)
        p = _ew.multiply(_slice(p, 0, 0, n), _numbers(p, np.arange(n, 0, -1)))
    return p


def polyint(p, m=1, k=None):
    """``numpy.polyint``: ``m`` antiderivatives, the integration constants ``k`` (0)."""
    p = _coefficients(p)
    ks = [0.0] * m if k is None else [k] * m if np.ndim(raw(k)) == 0 else list(k)
    for c in ks:
        n = shape_of(p)[0]
        p = _shape.concatenate([_ew.divide(p, _numbers(p, np.arange(n, 0, -1))),
                                _shape.reshape(_fill_like(p, c), (1,))])
    return p


# -- products of vectors ------------------------------------------------------------------------------
def kron(a, b):
    """``numpy.kron``: an outer product with interleaved axes, reshaped."""
    nd = max(ndim_of(a), ndim_of(b))
    sa = (1,) * (nd - ndim_of(a)) + shape_of(a)
    sb = (1,) * (nd - ndim_of(b)) + shape_of(b)
    a = _shape.reshape(a, tuple(d for s in sa for d in (s, 1)))
    b = _shape.reshape(b, tuple(d for s in sb for d in (1, s)))
    return _shape.reshape(a * b, tuple(x * y for x, y in zip(sa, sb)))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """``numpy.cross`` of 3-vectors (and of 2-vectors: the z component)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a = _shape.moveaxis(a, axisa, -1)
    b = _shape.moveaxis(b, axisb, -1)
    na, nb = shape_of(a)[-1], shape_of(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError(f"cross: vectors must have 2 or 3 components, got {na} and {nb}")

    def comp(v, i, n):
        return v[..., i] if i < n else 0.0 * v[..., 0]

    a0, a1, a2 = (comp(a, i, na) for i in range(3))
    b0, b1, b2 = (comp(b, i, nb) for i in range(3))
    z = a0 * b1 - a1 * b0
    if na == 2 and nb == 2:
        return z
    out = _shape.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, z], axis=-1)
    return _shape.moveaxis(out, -1, axisc)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """``numpy.trapezoid``: the trapezoidal rule along ``axis``."""
    d = dx if x is None else diff(x, axis=axis if ndim_of(x) > 1 else 0)
    if x is not None and ndim_of(x) == 1 and ndim_of(y) > 1:
        shape = [1] * ndim_of(y)
        shape[axis % ndim_of(y)] = shape_of(d)[0]
        d = _shape.reshape(d, tuple(shape))
    mid = (_slice(y, axis, 1, None) + _slice(y, axis, None, -1)) * 0.5
    return _shape.sum(mid * d, axis=axis)


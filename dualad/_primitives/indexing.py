"""Indexing entries: ``getitem`` (basic and advanced indices), its transpose
``scatter``, their forms for index arrays that ``dualad.compile`` traces
(``gather``, ``scatter_at``), and ``index_add``. Linear, like the shape
entries; the index is a parameter, normalized so a batch axis can be prefixed.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from dualad._base.backend import NUMPY_XP, SCALAR_TYPES, namespace_of, positions, to_host
from dualad._base.core import Value, bind
from dualad._base.shapes import (
    batched,
    concrete,
    dtype_of,
    is_mask,
    ndim_of,
    primal,
    raw,
    reshape_impl,
    shape_of,
)
from dualad._primitives import elementwise as _ew
from dualad._table.entries import custom, linear, non_differentiable

__all__ = ["getitem", "scatter", "index_add"]


# -- indexing -----------------------------------------------------------------
def _is_advanced(i):
    return not isinstance(i, (int, slice)) and i is not None


def _normalize_index(idx, ndim):
    """``idx`` as a tuple without Ellipsis (so a batch axis can be prefixed)."""
    idx = idx if isinstance(idx, tuple) else (idx,)
    idx = tuple(_plain_index(i) for i in idx)
    idx = tuple(_sequence_index(i) if isinstance(i, (list, tuple)) else i for i in idx)
    used = builtins.sum(0 if i is None or i is Ellipsis else i.ndim if _is_advanced(i) and is_mask(i) else 1
               for i in idx)
    if any(i is Ellipsis for i in idx):
        k = next(j for j, i in enumerate(idx) if i is Ellipsis)
        idx = idx[:k] + (slice(None),) * (ndim - used) + idx[k + 1:]
    elif used < ndim:
        idx = idx + (slice(None),) * (ndim - used)
    return idx


def _sequence_index(i):
    """A list or tuple inside an index as the index array NumPy reads it (``x[(0, 1), :]``
    is ``x[[0, 1], :]``); an empty one selects nothing, with NumPy's integer dtype."""
    return np.asarray(i) if len(i) else np.zeros(0, dtype=np.intp)


def _plain_index(i):
    """An index entry as raw numbers, or, for a batched integer index (vmap: ``logp[y]``
    with ``y`` one label per example), the batched value, which the gather entry takes as
    an operand. A batched mask is refused: the result's shape would differ by element."""
    p = primal(i)
    if batched(p) and (_is_advanced(p) and is_mask(p) or type(raw(p)) in SCALAR_TYPES):
        concrete(p, "indexing with a mask computed from batched values")
    return p


def _index_like(x, index):
    r = raw(x)
    if type(r) in SCALAR_TYPES:
        return index
    return namespace_of([r]).asarray(index)


def _numbers_like(x, numbers, dtype=None):
    """Host numbers (weights, exponents: a NumPy array) in ``x``'s backend, and in
    its dtype unless ``dtype`` is given."""
    return _ew.astype(_index_like(x, numbers), dtype_of(raw(x)) if dtype is None else dtype)


def _getitem_batch(params, k):
    idx = params["idx"]
    adv = [j for j, i in enumerate(idx) if _is_advanced(i)]
    if adv and adv != list(range(adv[0], adv[-1] + 1)):
        return None  # separated advanced indices move their axes to the front
    return {"idx": (slice(None),) + idx}


def native_indexing(xp) -> bool:
    """NumPy and CuPy index (and scatter-add) with every NumPy index form."""
    return xp is NUMPY_XP or xp.__name__.startswith(("cupy", "array_api_compat.cupy"))


def _flat_positions(shape, idx):
    """``arange(size).reshape(shape)[idx]`` on the host: the flat position of
    each selected element, in result order (for namespaces whose indexing is
    only the array API's: one integer array, masks alone, no mixing)."""
    # raw: a traced mask's numbers are read through the view that tells compile's trace
    host = tuple(to_host(raw(i)) if _is_advanced(i) else i for i in idx)
    return np.arange(math.prod(shape)).reshape(shape)[host]


def _getitem_impl(xp, x, *, idx):
    if native_indexing(xp) or not any(_is_advanced(i) for i in idx):
        return x[idx]
    pos = _flat_positions(x.shape, idx)
    flat = xp.take(reshape_impl(xp, x, shape=(math.prod(x.shape),)), positions(xp, pos.reshape(-1)), axis=0)
    return reshape_impl(xp, flat, shape=pos.shape)


_getitem_p = linear(
    "getitem", _getitem_impl,
    lambda g, x, *, idx: (bind(_scatter_p, g, shape=x[0], idx=idx),),
    batch=_getitem_batch, add_transpose=lambda acc, g, x, *, idx: acc.add_at(idx, g, x), fresh=True,
    moves_elements=True, sparsity="selection", partition="getitem", lowering="view")


def _ints_and_slices(idx, ndim):
    """``idx`` normalized (as :func:`_normalize_index` makes it) where it holds only
    ints and slices, the index of most ``x[i]`` and ``x[a:b]`` in a loop; else None.
    Such an index needs none of the general route's questions: recording ``x[0:14]`` on a
    tape took 4.3 us this way, 5.9 us by them (benchmarks/README.md, "Measurements behind
    the code")."""
    if type(idx) is not tuple:
        idx = (idx,)
    for i in idx:
        if type(i) is not int and type(i) is not slice:
            return None
    return idx + (slice(None),) * (ndim - len(idx))


def getitem(x, idx):
    """``x[idx]`` for basic and advanced indices; the VJP scatter-adds."""
    ndim = ndim_of(x)
    basic = _ints_and_slices(idx, ndim)
    if basic is not None:
        return bind(_getitem_p, x, idx=basic)
    idx = _normalize_index(idx, ndim)
    traced = _traced_indices(idx)
    if traced:
        return bind(_gather_p, x, *traced, template=_template(idx))
    return bind(_getitem_p, x, idx=idx)


# -- indexing by traced index arrays ------------------------------------------------
# An integer index array that dualad.compile traces (an argument, a sort order) is an
# operand of the program, read at each replay, where getitem and scatter hold theirs as
# parameters. ``template`` is the index with _OPERAND at the operands' places (a
# normalized index has no Ellipsis). A traced mask stays a parameter, so the trace
# refuses it (the result's shape would depend on the values), and so does an index of
# another dtype, which NumPy refuses.
_OPERAND = Ellipsis


def _traced_indices(idx):
    """The index arrays of ``idx`` that dualad.compile traces, where all are integers."""
    traced = [i for i in idx if isinstance(i, Value)]
    if traced and all(getattr(dtype_of(i), "kind", "") in ("i", "u") for i in traced):
        return traced
    return None


def _template(idx):
    return tuple(_OPERAND if isinstance(i, Value) else i for i in idx)


def filled_index(template, indices):
    it = iter(indices)
    return tuple(next(it) if i is _OPERAND else i for i in template)


_gather_p = custom(
    "gather", lambda xp, x, *indices, template: _getitem_impl(xp, x, idx=filled_index(template, indices)),
    jvp=lambda primals, tangents, ans, *, template: bind(_gather_p, tangents[0], *primals[1:],
                                                         template=template),
    vjp=lambda g, res, *, template: (bind(_scatter_at_p, g, *res[1], shape=res[0], template=template),
                                     *(None for _ in res[1])),
    residual=lambda ans, x, *indices, template: (shape_of(x), indices), fresh=True,
    piecewise_linear=True, sparsity="gather")

_scatter_at_p = custom(
    "scatter_at", lambda xp, values, *indices, shape, template: _scatter_impl(
        xp, xp.asarray(values) if type(values) in SCALAR_TYPES else values, shape=shape,
        idx=filled_index(template, indices)),  # a cotangent may be a number (of a 0-d gather)
    jvp=lambda primals, tangents, ans, *, shape, template: bind(
        _scatter_at_p, tangents[0], *primals[1:], shape=shape, template=template),
    vjp=lambda g, indices, *, shape, template: (bind(_gather_p, g, *indices, template=template),
                                                *(None for _ in indices)),
    residual=lambda ans, values, *indices, shape, template: indices, fresh=True,
    piecewise_linear=True, sparsity="scatter")



def _last_writes_impl(xp, *indices, shape, template):
    """For each element of ``x[idx]`` (``x`` of ``shape``), whether ``x[idx] = values``
    writes it last to its position: NumPy keeps the last write of a repeated position.
    Computed on the host from the indices, which are concrete here (also at a replay)."""
    positions = _flat_positions(shape, filled_index(template, indices))
    flat = positions.reshape(-1)
    last = np.zeros(flat.shape, dtype=bool)
    last[_last_of_each(flat)] = True
    return xp.asarray(last.reshape(positions.shape))


def _last_of_each(flat):
    """The places in ``flat`` (host flat positions, in write order) of each position's
    last write, which NumPy's assignment keeps; as many as there are distinct positions."""
    return len(flat) - 1 - np.unique(flat[::-1], return_index=True)[1]


_last_writes_p = non_differentiable("last_writes", _last_writes_impl, scalar_ok=False)


def _last_writes(shape, idx):
    """A mask of ``x[idx]``'s shape (``x`` of ``shape``): True at each element that
    ``x[idx] = values`` writes last to its position (a repeated index's last). ``idx`` is a
    normalized index holding index arrays that compile traces, read again at each replay."""
    return bind(_last_writes_p, *_traced_indices(idx), shape=tuple(shape), template=_template(idx))


def _scatter_impl(xp, values, *, shape, idx):
    out = xp.zeros(shape, dtype=values.dtype)
    advanced = any(_is_advanced(i) for i in idx)
    if native_indexing(xp):
        if not advanced:
            out[idx] = values  # basic indices select each element once
        else:
            xp.add.at(out, idx, values)  # repeated indices accumulate (CuPy 13+ has ufunc.at)
        return out
    # Elsewhere: add into the flat array at the selected flat positions, as a
    # one-hot matrix product (the array API has no scatter-add).
    pos = _flat_positions(shape, idx).reshape(-1)
    n = math.prod(shape)
    if pos.size == 0 or n == 0:
        return out
    onehot = xp.asarray(pos[:, None] == np.arange(n)[None, :], dtype=values.dtype)
    added = xp.reshape(values, (1, -1)) @ onehot
    return xp.reshape(added, shape)


def _moves_by_basic_indices(params):
    """With basic indices the scatter sets each element once, into zeros: it moves elements."""
    return not any(_is_advanced(i) for i in params["idx"])


def _scatter_batch(params, k):
    batched = _getitem_batch(params, k)
    return None if batched is None else {"shape": (k,) + params["shape"], **batched}


# The transpose of getitem: zeros of ``shape`` with ``values`` added at ``idx``
# (repeated advanced indices accumulate).
_scatter_p = linear("scatter", _scatter_impl,
                    lambda g, values, *, shape, idx: (getitem(g, idx),),
                    batch=_scatter_batch, fresh=True,
                    moves_elements=_moves_by_basic_indices, sparsity="scatter")


def scatter(values, shape, idx):
    """Zeros of ``shape`` with ``values`` added at ``[idx]`` (the adjoint of ``getitem``)."""
    shape = tuple(shape)
    idx = _normalize_index(idx, len(shape))
    traced = _traced_indices(idx)
    if traced:
        return bind(_scatter_at_p, values, *traced, shape=shape, template=_template(idx))
    return bind(_scatter_p, values, shape=shape, idx=idx)


def index_add(base, values, idx):
    """``base`` with ``values`` added at ``base[idx]`` (repeated indices accumulate)."""
    # a function, not +: a raw strict array on the left refuses a Value on its right
    return _ew.add(base, scatter(values, shape_of(base), idx))

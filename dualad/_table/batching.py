"""The rules by which an entry applies to a batch of elements at once (``dualad.vmap``).

Each rule takes the operands ``vals``, the flags ``batched`` (that operand
carries the batch on its leading axis) and the batch size ``k``, and returns
the result with the batch on its leading axis, or None where it cannot take
this call (the entry then falls back to the loop). An entry picks its rule by
what it declares (``Primitive.batch``); the loop is the rule for those that
declare none.
"""

from __future__ import annotations

from typing import Any, Callable

from dualad._base.core import bind
from dualad._base.shapes import ndim_of, shape_of
from dualad._table import operations

__all__ = ["as_chunk", "broadcasting", "one_element_at_a_time", "stacked"]


def broadcasting(prim: Any, vals: list, batched: list, params: dict) -> Any:
    """For an entry that applies entry by entry to operands that broadcast: the batch axis
    in front, a batched operand of lower rank than the result getting unit axes after its
    batch axis (an unbatched one broadcasts from the right, as it would without the batch)."""
    ranks = _element_ranks(vals, batched)
    return bind(prim, *_lined_up(vals, batched, ranks, max(ranks)), **params)


def as_chunk(prim: Any, vals: list, batched: list, params: dict, k: int) -> Any:
    """For a linear entry: the batch taken as a chunk of k directions (its parameters'
    ``batch_params`` rule); None where a non-linear operand is batched or the parameters
    cannot take a leading axis."""
    lin = range(len(vals)) if prim.linear_args is None else prim.linear_args
    if any(b and i not in lin for i, b in enumerate(batched)):
        return None
    params = prim.batch_params(params, k)
    if params is None:
        return None
    for i in lin:
        if not batched[i]:
            vals[i] = operations.broadcast_to(vals[i], (k,) + shape_of(vals[i]))
    return bind(prim, *vals, **params)


def stacked(prim: Any, core_ndims: tuple | Callable, vals: list, batched: list, params: dict) -> Any:
    """For an entry whose impl broadcasts over leading stack axes, as NumPy's stacked
    ``linalg`` functions do: operand ``i`` of an element has ``core_ndims[i]`` trailing core
    axes (a function of the parameters, or None for the whole element: its parameters count
    axes from the end). Each batched operand gets unit axes after its batch axis, so that the
    stack axes of all operands line up from the right; None where an element has fewer
    axes than its core."""
    cores = core_ndims(params) if callable(core_ndims) else core_ndims
    ranks = _element_ranks(vals, batched)
    stacks = [r - c for r, c in zip(ranks, ranks if cores is None else cores)]
    if min(stacks) < 0:
        return None
    return bind(prim, *_lined_up(vals, batched, stacks, max(stacks)), **params)


def _element_ranks(vals: list, batched: list) -> list:
    return [ndim_of(v) - 1 if b else ndim_of(v) for v, b in zip(vals, batched)]


def _lined_up(vals: list, batched: list, depths: list, depth: int) -> list:
    """``vals`` with unit axes after the batch axis of each batched operand whose leading
    axes (``depths``) are fewer than ``depth``, so that all line up from the right."""
    out = list(vals)
    for i, (v, b, d) in enumerate(zip(vals, batched, depths)):
        if b and d < depth:
            s = shape_of(v)
            out[i] = operations.reshape(v, s[:1] + (1,) * (depth - d) + s[1:])
    return out


def one_element_at_a_time(prim: Any, vals: list, batched: list, params: dict, k: int) -> Any:
    """``prim`` applied to each element of the batch, the results stacked along a leading
    axis: the rule of an entry whose impl takes no batch. Always right, slower by a Python
    loop over the batch."""
    outs = [bind(prim, *[v[i, ...] if b else v for v, b in zip(vals, batched)], **params) for i in range(k)]
    if not outs:
        raise ValueError(f"vmap: {prim.name} has no batch rule and the batch is empty; its output "
                         "shape is only known from an element")
    if prim.multiple_results:
        return tuple(operations.stack([o[j] for o in outs], axis=0) for j in range(len(outs[0])))
    return operations.stack(outs, axis=0)

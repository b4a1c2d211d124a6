"""``Batched``: a value that stands for a batch of values, and how it interprets the table.

A ``Batched`` holds ``val``, the batch stacked along a leading axis, at one
level (a run of :func:`dualad.vmap`). To the code it runs through it looks
like one element: its ``shape`` is ``val.shape[1:]``. Each primitive is
applied to the whole batch at once where the entry's kind allows it, and one
element at a time otherwise:

- elementwise entries (those that ``broadcast``) broadcast, once an operand of lower rank than the
  others has unit axes put after its batch axis;
- linear entries take the batch as they take a chunk of directions, through
  their ``batch(params, k)`` rule (all linear operands carry it; an operand
  that does not is broadcast to it);
- every other entry (and a linear one whose non-linear operands are
  batched, or whose parameters cannot take a leading axis) is applied to
  each element and the results stacked: always right, slower by a Python
  loop over the batch.

A ``Batched`` carries no derivative, so ``no_grad`` (a cut) leaves it as it is.
"""

from __future__ import annotations

from typing import Any

from dualad import ops
from dualad._base.core import Value, bind
from dualad._base.shapes import dtype_of, ndim_of, shape_of
from dualad._numpy.arraylike import ArrayLike
from dualad._table.entries import Linear, Primitive

__all__ = ["Batched"]


class Batched(ArrayLike, Value):
    """A batch of values along the leading axis of ``val``, seen as one element."""

    __slots__ = ("val",)
    __array_priority__ = 100
    carries_derivative = False
    batches = True

    def __init__(self, val: Any, level: int):
        self.val, self._level = val, level

    def __repr__(self) -> str:
        return f"Batched({self.val!r})"

    def _strip(self) -> Any:
        return self.val

    def _constant(self, out: Any) -> Any:
        return _wrap(out, self._level)

    def _refuse(self, what: str):
        raise TypeError(
            f"vmap: {what} of a batched value: it stands for a different value in each element "
            "of the batch, so no one Python number (or branch) holds for all of them. Use "
            "where() for a choice made entry by entry, or loop over the batch")

    @property
    def shape(self) -> tuple:
        return shape_of(self.val)[1:]

    @property
    def dtype(self) -> Any:
        return dtype_of(self.val)

    @property
    def batch_size(self) -> int:
        return shape_of(self.val)[0]

    def _process(self, prim: Primitive, args: tuple, params: dict) -> Any:
        level = self._level
        vals, batched = [], []
        for a in args:
            mine = type(a) is Batched and a._level == level
            vals.append(a.val if mine else a)
            batched.append(mine)
        if prim.broadcasts:
            out = _elementwise(prim, vals, batched, params)
        elif isinstance(prim, Linear):
            out = _linear(prim, vals, batched, params, self.batch_size)
        else:
            out = None
        if out is None:
            out = one_element_at_a_time(prim, vals, batched, params, self.batch_size)
        return _wrap(out, level)


def _wrap(out: Any, level: int) -> Any:
    if isinstance(out, tuple):
        return tuple(Batched(o, level) for o in out)
    return Batched(out, level)


def _elementwise(prim: Primitive, vals: list, batched: list, params: dict) -> Any:
    """Broadcasting with the batch axis in front: a batched operand of lower rank
    than the result gets unit axes after its batch axis (an unbatched one
    broadcasts from the right, as it would without the batch)."""
    ranks = [ndim_of(v) - 1 if b else ndim_of(v) for v, b in zip(vals, batched)]
    rank = max(ranks)
    for i, (v, b, r) in enumerate(zip(vals, batched, ranks)):
        if b and r < rank:
            s = shape_of(v)
            vals[i] = ops.reshape(v, s[:1] + (1,) * (rank - r) + s[1:])
    return bind(prim, *vals, **params)


def _linear(prim: Linear, vals: list, batched: list, params: dict, k: int) -> Any:
    """The entry applied to the batch as to a chunk of k directions, or None when
    it cannot be (a batched non-linear operand, parameters without a batch rule)."""
    lin = range(len(vals)) if prim.linear_args is None else prim.linear_args
    if any(b and i not in lin for i, b in enumerate(batched)):
        return None
    params = prim.batch(params, k)
    if params is None:
        return None
    for i in lin:
        if not batched[i]:
            vals[i] = ops.broadcast_to(vals[i], (k,) + shape_of(vals[i]))
    return bind(prim, *vals, **params)


def one_element_at_a_time(prim: Primitive, vals: list, batched: list, params: dict, k: int) -> Any:
    """``prim`` applied to each element of the batch, the results stacked along a leading axis."""
    outs = [bind(prim, *[v[i, ...] if b else v for v, b in zip(vals, batched)], **params) for i in range(k)]
    if not outs:
        raise ValueError(f"vmap: {prim.name} has no batch rule and the batch is empty; its output "
                         "shape is only known from an element")
    if prim.multiple_results:
        return tuple(ops.stack([o[j] for o in outs], axis=0) for j in range(len(outs[0])))
    return ops.stack(outs, axis=0)

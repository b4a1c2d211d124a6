"""``Batched``: a value that stands for a batch of values, and how it interprets the table.

A ``Batched`` holds ``val``, the batch stacked along a leading axis, at one
level (a run of :func:`dualad.vmap`). To the code it runs through it looks
like one element: its ``shape`` is ``val.shape[1:]``. Each primitive is
applied by the entry's own ``batch`` rule (``dualad._table.batching``): at
once where the entry declares how its impl takes a batch (broadcasting, a
chunk of directions, stacked operands), one element at a time where it
declares nothing.

A ``Batched`` carries no derivative, so ``no_grad`` (a cut) leaves it as it is.
"""

from __future__ import annotations

from typing import Any

from dualad import ops
from dualad._base.core import Value
from dualad._base.shapes import dtype_of, shape_of
from dualad._numpy.arraylike import BUILDING_ARRAYS, ArrayLike
from dualad._table.entries import Primitive

__all__ = ["Batched", "BatchedChoiceError"]


class BatchedChoiceError(TypeError):
    """A Python number or branch asked of a batched value, which has one per element."""


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

    def __setitem__(self, idx, value):
        """``b[idx] = value`` as NumPy assigns, in each element of the batch (last write wins
        on a repeated index). The batch takes a new array; the one it held, which may be the
        caller's, is never written."""
        new = ops.index_set(self, value, idx)
        if type(new) is not Batched or new._level != self._level:
            raise TypeError(
                "vmap: b[idx] = value: value carries a derivative of a transform inside vmap, which "
                "a batched array cannot hold; build the result with dualad.ops.index_set(b, value, "
                f"idx) instead (value is {type(value).__name__})")
        self.val = new.val

    def item(self):
        """Refused: a batched value is a different number in each element."""
        self._refuse("item()")

    def _refuse(self, what: str):
        raise BatchedChoiceError(
            f"vmap: {what} of a batched value: it stands for a different value in each element "
            "of the batch, so no one Python number (or branch) holds for all of them. Use "
            f"where() for a choice made entry by entry, or loop over the batch ({BUILDING_ARRAYS})")

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
        return _wrap(prim.batch(vals, batched, params, self.batch_size), level)


def _wrap(out: Any, level: int) -> Any:
    if isinstance(out, tuple):
        return tuple(Batched(o, level) for o in out)
    return Batched(out, level)

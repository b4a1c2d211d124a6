"""The partition planner: which values of a program traced on Dask arrays are split
into the chunks of one axis, which are partial results over that axis (a sum), and
which are replicated, before or after those sums, in which round. It reads a program
and returns a plan (:class:`Partition`), which the Dask executor
(:mod:`dualad._program.executors.dask_graph`) turns into a graph of tasks.

A program is partitioned where every step reading a partitioned value keeps the
partition along one axis, by the rule of the kind its entry declares
(``Primitive.declare``'s ``partition``): elementwise entries (other operands
broadcast along that axis, or are constants cut into the same chunks, or broadcasts
made again at each chunk's size), ``matmul``, batched or not (rows of the left
operand, columns of the right, a batch axis, or the contracted axis: a partial sum),
reductions (over the axis: a partial result, joined by the ufunc the entry declares
as ``combine``; over others: the axis moves), ``permute_dims``, ``reshape`` and
``broadcast_to`` that keep the axis, and ``getitem`` with a full slice along it. What
has no rule (a sort along the axis, a slice of part of it, a guard: ``float(x)``, of
any value, which no task checks) raises :class:`NotPartitioned` with the reason.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Callable

import array_api_compat

from dualad._program.ir import Eqn, Guard

__all__ = ["NotPartitioned", "Partition", "SHAPE_PARAMS", "partition"]


class NotPartitioned(Exception):
    """Why a program does not split into per-chunk tasks."""


def partition(program: Any, inputs: list) -> "Partition":
    """The plan of ``program`` (traced on Dask arrays ``inputs`` and constants): raises
    :class:`NotPartitioned`, saying why, where a step has no per-chunk rule."""
    return Partition(program, inputs)


class Partition:
    """Which slots of a program are partitioned (``axis``: slot -> axis), which are
    partial results over the partitioned axis (``partial``: slot -> the ufunc that
    combines the chunks' results, ``add`` for a sum), which are replicated and
    computed after those sums (``late``); the others are replicated and computed
    before. ``round`` numbers the passes over the chunks (slot -> 1, 2, ...): a value
    of each chunk computed from one made after the sums of round k is of round k + 1.
    ``rows`` are the chunks' sizes along the partitioned axis; ``cut`` are the
    constants also read chunk by chunk (slot -> axis), ``rebroadcast`` the replicated
    broadcasts made again in each chunk (slot -> axis); ``producer`` is the step that
    makes each slot."""

    def __init__(self, program: Any, inputs: list):
        self.program, self.inputs = program, inputs
        self.axis: dict[int, int] = {}
        self.partial: dict[int, str] = {}
        self.late: set[int] = set()
        self.round: dict[int, int] = {}
        self.rebroadcast: dict[int, int] = {}
        self.producer = {o: step for step in program.steps if type(step) is Eqn for o in step.outs}
        self.cut: dict[int, int] = {}
        self.rows: tuple | None = None
        for slot in list(range(program.n_inputs)) + list(program.consts):
            self._source(slot)
        for step in program.steps:
            self._step(step)

    # -- the sources: inputs and constants ---------------------------------------------
    def _source(self, slot: int) -> None:
        """Record the partition of an input or constant that is a Dask array."""
        value = self._dask_value(slot)
        if value is None:
            return
        split = [a for a, c in enumerate(value.chunks) if len(c) > 1]
        if len(split) > 1:
            raise NotPartitioned(f"{self._name(slot)} is chunked along {len(split)} axes; a program runs "
                             "chunk by chunk along one")
        if not split:
            return
        a = split[0]
        if self.rows is None:
            self.rows = value.chunks[a]
        elif value.chunks[a] != self.rows:
            raise NotPartitioned(f"{self._name(slot)} is chunked as {value.chunks[a]} along axis {a}, "
                             f"another partitioned array as {self.rows}: rechunk them alike")
        self.axis[slot] = a

    def _dask_value(self, slot: int) -> Any:
        """The Dask array of an input (its aval) or constant, or None."""
        value = self.inputs[slot] if slot < self.program.n_inputs else self.program.consts[slot]
        return value if array_api_compat.is_dask_array(value) else None

    def _name(self, slot: int) -> str:
        return f"input {slot}" if slot < self.program.n_inputs else f"a constant of shape {self._shape(slot)}"

    # -- the steps ---------------------------------------------------------------------------
    def _shape(self, slot: int) -> tuple:
        return tuple(self.program.avals[slot][1] or ())

    def _step(self, step: Any) -> None:
        if type(step) is Guard:  # not checked by a graph of tasks: on any value, eager
            raise NotPartitioned(f"it turns a value into a Python {step.kind} (a guard), which a "
                             "program of tasks does not check")
        axes = [self.axis.get(s) for s in step.ins]
        after = [self.round[s] for s in step.ins if s in self.partial or s in self.late]
        if all(a is None for a in axes):
            if after:
                self.late.update(step.outs)
                self.round.update(dict.fromkeys(step.outs, max(after)))
            return
        name = step.prim.name
        if step.prim.multiple_results or step.prim.effect:
            raise NotPartitioned(f"{name} of a partitioned value has no per-chunk rule")
        rule = _RULES.get(step.prim.partition) or (_elementwise if _is_elementwise(step.prim) else None)
        if rule is None:
            raise NotPartitioned(f"{name} of a partitioned value has no per-chunk rule")
        out = rule(self, step, axes)
        if type(out) is str:
            self.partial[step.outs[0]] = out
        else:
            self.axis[step.outs[0]] = out
        self.round[step.outs[0]] = max([self.round.get(s, 1) for s, a in zip(step.ins, axes) if a is not None]
                                       + [k + 1 for k in after])

    def cut_constant(self, slot: int, axis: int, name: str) -> int:
        """A replicated operand of ``name`` spanning the partitioned axis: a constant is cut
        into the chunks too (``axis``), a broadcast along it (a mean's gradient, say) made
        again in each chunk at the chunk's size (``rebroadcast``); another computed value
        cannot be."""
        if self._shape(slot)[axis] == self.n:
            if slot in self.program.consts and self.cut.get(slot, axis) == axis:
                self.cut[slot] = axis
                return axis
            step = self.producer.get(slot)
            if step is not None and step.prim.partition == "broadcast_to" \
                    and self.rebroadcast.get(slot, axis) == axis:
                source = self._shape(step.ins[0])
                k = axis - (len(self._shape(slot)) - len(source))
                if k < 0 or source[k] == 1:
                    self.rebroadcast[slot] = axis
                    return axis
        raise NotPartitioned(f"{name} reads a value of the whole partitioned axis that is computed, "
                         "not a constant or a broadcast, together with values of each chunk")

    @property
    def n(self) -> int:
        return sum(self.rows)

    # -- the parts the plan gives -------------------------------------------------------------
    @property
    def n_rounds(self) -> int:
        return max(self.round.values(), default=1)

    def parts(self) -> tuple[list, dict, dict]:
        """The steps of each part, ``(before, per_chunk, after)``: those computed once
        before the chunks, and per round ``r`` (1, 2, ...) those computed per chunk
        (each round's chunks making again the broadcasts they read) and once after."""
        eqns = [s for s in self.program.steps if type(s) is Eqn]
        rounds = range(1, self.n_rounds + 1)
        per_chunk = {r: [s for s in eqns if (s.outs[0] in self.axis or s.outs[0] in self.partial)
                         and self.round[s.outs[0]] == r] for r in rounds}
        after = {r: [s for s in eqns if s.outs[0] in self.late and self.round[s.outs[0]] == r]
                 for r in rounds}
        for r in rounds:
            read = {s for step in per_chunk[r] for s in step.ins}
            per_chunk[r] = [self.producer[s] for s in sorted(self.rebroadcast) if s in read] + per_chunk[r]
        before = [s for s in eqns if not self.later(s.outs[0])]
        return before, per_chunk, after

    def later(self, slot: int) -> bool:
        """Whether ``slot`` is computed per chunk or after the chunks' partial results."""
        return slot in self.axis or slot in self.partial or slot in self.late

    def is_source(self, slot: int) -> bool:
        """An input or a constant."""
        return slot < self.program.n_inputs or slot in self.program.consts

    def is_block(self, slot: int) -> bool:
        """A source read chunk by chunk."""
        return self.is_source(slot) and (slot in self.axis or slot in self.cut)

    def is_made(self, slot: int) -> bool:
        """A value a step computes."""
        return slot in self.producer

    def from_before(self, slot: int) -> bool:
        """A replicated input, or a value computed before the chunks."""
        return (self.is_made(slot) and not self.later(slot)) or (
            slot < self.program.n_inputs and slot not in self.axis)


def _is_elementwise(prim: Any) -> bool:
    return prim.broadcasts or prim.ufunc is not None


# -- per-chunk rules: the partitioned axis of the output, or for a partial result the ufunc
# that combines the chunks' ------------------------------------------------------------------
def _elementwise(split: Partition, step: Eqn, axes: list) -> int:
    nd = len(split._shape(step.outs[0]))
    where = {nd - len(split._shape(s)) + a for s, a in zip(step.ins, axes) if a is not None}
    if len(where) != 1:
        raise NotPartitioned(f"{step.prim.name} lines up partitioned axes of its operands that differ")
    out = where.pop()
    for s, a in zip(step.ins, axes):
        shape = split._shape(s)
        k = out - (nd - len(shape))
        if a is None and k >= 0 and shape[k] != 1:
            split.cut_constant(s, k, step.prim.name)
    return out


def _matmul(split: Partition, step: Eqn, axes: list) -> int | str:
    """NumPy's matmul, batched and broadcast: a partition along the contracted axis gives
    partial sums; along the rows of the left operand, the columns of the right one, or a
    batch axis, it stays where matmul puts that axis."""
    (a, b), (pa, pb) = step.ins, axes
    na, nb, nd = len(split._shape(a)), len(split._shape(b)), len(split._shape(step.outs[0]))
    contracted = (na - 1, 0 if nb == 1 else nb - 2)
    if all(p in (c, None) for p, c in zip(axes, contracted)):  # a partial sum
        for s, p, c in zip(step.ins, axes, contracted):
            if p is None:
                split.cut_constant(s, c, "matmul")
        return "add"
    rows = na - 2 if na >= 2 else None
    columns = nb - 1 if nb >= 2 else None
    if pa == rows and pb is None:
        return nd - 1 - (nb >= 2)
    if pa is None and pb == columns:
        return nd - 1
    batch = nd - (na >= 2) - (nb >= 2)  # the broadcast batch axes come first in the output
    where = {batch - (n - 2) + p for n, p in ((na, pa), (nb, pb)) if p is not None and p < n - 2}
    if len(where) != 1 or (pa is not None and pa >= na - 2) or (pb is not None and pb >= nb - 2):
        raise NotPartitioned("matmul of partitioned values along axes other than the contracted one, "
                         "the rows of the left operand, the columns of the right one or a batch axis")
    out = where.pop()
    for s, p, n in ((a, pa, na), (b, pb, nb)):
        k = out - batch + (n - 2)
        if p is None and k >= 0 and split._shape(s)[k] != 1:
            split.cut_constant(s, k, "matmul")
    return out


def _reduction(split: Partition, step: Eqn, axes: list) -> int | str:
    """Over another axis the partition is kept; over it, partial results per chunk are
    combined by the ufunc the entry declares (``combine``)."""
    a = axes[0]
    over = _axes(step.params.get("axis"), len(split._shape(step.ins[0])))
    if a in over:
        if step.prim.combine is None:
            raise NotPartitioned(f"{step.prim.name} over the partitioned axis has no per-chunk rule")
        return step.prim.combine
    return a if step.params.get("keepdims") else a - sum(1 for o in over if o < a)


def _permute_dims(split: Partition, step: Eqn, axes: list) -> int:
    return list(step.params["axes"]).index(axes[0])


def _reshape(split: Partition, step: Eqn, axes: list) -> int:
    a, old, new = axes[0], split._shape(step.ins[0]), tuple(step.params["shape"])
    before = math.prod(old[:a])
    for k, size in enumerate(new):
        if math.prod(new[:k]) == before and size == old[a]:
            return k
    raise NotPartitioned(f"reshape from {old} to {new} does not keep the partitioned axis {a}")


def _broadcast_to(split: Partition, step: Eqn, axes: list) -> int:
    return len(step.params["shape"]) - len(split._shape(step.ins[0])) + axes[0]


def _getitem(split: Partition, step: Eqn, axes: list) -> int:
    a, idx = axes[0], step.params["idx"]
    idx = idx if type(idx) is tuple else (idx,)
    basic = [i is None or isinstance(i, (numbers.Integral, slice)) for i in idx]
    at = [k for k, i in enumerate(idx) if i is not None]  # the entry of each axis of the operand
    if not all(basic) or len(at) > a and idx[at[a]] != slice(None):
        raise NotPartitioned("getitem of a partitioned value takes a full slice along the partitioned "
                         "axis, and integers, slices and newaxis elsewhere")
    before = idx[:at[a]] if len(at) > a else idx
    return a + sum(1 for i in before if i is None) - sum(1 for i in before if i is not None and
                                                          not isinstance(i, slice))


def _concatenate(split: Partition, step: Eqn, axes: list) -> int:
    nd = len(split._shape(step.outs[0]))
    joined = step.params.get("axis", 0) % nd
    where = {a for a in axes if a is not None}
    if len(where) != 1 or joined in where:
        raise NotPartitioned("concatenate of partitioned values joins them along another axis than "
                         "the partitioned one, where it is the same in each")
    out = where.pop()
    for s, a in zip(step.ins, axes):
        if a is None:
            split.cut_constant(s, out, "concatenate")
    return out


def _axes(axis: Any, ndim: int) -> set:
    if axis is None:
        return set(range(ndim))
    return {a % ndim for a in (axis if isinstance(axis, tuple) else (axis,))}


# The rule of each kind an entry declares (``Primitive.declare``'s ``partition``).
_RULES: dict[str, Callable] = {
    "matmul": _matmul, "permute_dims": _permute_dims, "reshape": _reshape,
    "broadcast_to": _broadcast_to, "getitem": _getitem, "concatenate": _concatenate,
    "reduction": _reduction,
}

# The parameters that hold the partitioned axis's length, rewritten per chunk, by kind.
SHAPE_PARAMS = {"reshape": "shape", "broadcast_to": "shape"}

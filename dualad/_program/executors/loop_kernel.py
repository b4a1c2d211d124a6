"""A rolled loop as one Numba kernel: the trip loop and its body compiled together.

A :class:`~dualad._program.loop.Loop` replayed trip by trip costs a NumPy call per step
per trip, which on arrays of a few numbers is all the cost (the LSTM's body: 69 steps on
vectors of 14). :func:`kernel_loops` writes each loop it can as one ``@njit`` function
instead: the body's steps as NumPy calls that Numba compiles (``np.exp(t3)``,
``np.concatenate((t1, t2))``, ``t4[0:14]``), inside ``for trip in range(trips)``, the
carried values renamed at the end of each trip, each trip's own values read from a stack
made before the call, and the values the program reads after the loop written into
stacks the call returns. Its numbers are Numba's: elementwise functions within a few
ulps of NumPy's, sums added in order (see :mod:`~dualad._program.executors.numba`).
Where a value it returns is not finite, the call is replayed by NumPy's loop instead,
with NumPy's warnings (and, under ``np.errstate``, its errors).

Stacks pass whole from step to step (:func:`_handed_over`): where a kernel's trips read the
rows of one stack, in order or backwards (the reverse sweep reading what the forward sweep
saved at each trip; the rows ``xs[t]`` of an input), it takes the stack and reads row
``first + trip`` or ``first - trip`` of it (numbers written into its source), not a row
per trip gathered into a new one at each call; a column whose trips at its ends read other
values (the trips the loop peeled off) is one stack made at the call. A row a kernel returns
that only kernels read among their operands before the trips' own (:func:`_rows_taken`: the
stretches around the reverse sweep read the forward sweep's first and last trips) reaches
them as its stack too, the row picked in the reader's source.

A ufunc step makes no new array at each trip where it need not (:func:`_written_into`): it
writes (``np.exp(t3, t4)``) into its row of a stack the kernel returns, else into a buffer
made before the loop; a value the next trip reads stays a new array, and a chain of
ufuncs ending in one is one expression, which Numba fuses (:func:`_inlined`).

Between and after the loops, a stretch of at least :data:`_MIN_STRETCH` steps on small
values (the trips a loop peeled off: the reverse sweep's first, which has no carried
cotangent to add to yet) is a kernel too, of one trip (:func:`_stretches`): NumPy's call
per step costs a microsecond or so on a vector of 14, the kernel's step some nanoseconds.

A step whose index changes from trip to trip (the scatter of row ``t``'s cotangent) reads
its ints from arrays made once. A body with a step of another kind (a gather, a product
of arrays of more than two dimensions), or values other than float64 arrays of at least
one dimension and float64 numbers, keeps its NumPy replay.
"""

from __future__ import annotations

import math
import threading
from typing import Any, Callable

import numpy as np

from dualad._base.backend import NUMPY_XP
from dualad._program.executors.numba import load
from dualad._program.executors.replay import ordinary
from dualad._program.ir import Eqn, Step
from dualad._program.loop import Loop, PerTrip
from dualad._program.passes.dce import eliminate_dead_code
from dualad._program.program import Program

__all__ = ["LoopKernel", "compile_in_background", "kernel_loops", "kernel_source"]

_F64 = np.dtype(np.float64)
# NumPy ufuncs as Numba compiles them, by their names
_UFUNCS = frozenset({
    "add", "subtract", "multiply", "divide", "true_divide", "negative", "positive", "exp",
    "expm1", "log", "log1p", "log2", "log10", "sqrt", "square", "reciprocal", "tanh", "sinh",
    "cosh", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arcsinh", "arctanh",
    "arctan2", "power", "maximum", "minimum", "fmax", "fmin", "absolute", "abs", "hypot",
    "exp2", "sign", "floor", "ceil", "trunc",
})


# the trips at either end of a column that may read values of their own (_one_stack)
_PEELED = 2
# a stretch of steps outside the loops run by a kernel of its own (_stretches): its
# fewest steps, and the most numbers in one of its values (above that a NumPy call costs
# its arithmetic more than its call, and NumPy's SIMD exp or tanh beat the kernel's)
_MIN_STRETCH, _SMALL = 16, 4096
# the most steps of one such kernel: Numba's compile of a function grows faster than its
# length (a kernel of 718 steps on 3 numbers took 31 s), so a longer stretch is split
_MAX_STRETCH = 200
# a value written into one of two buffers, taken in turn from trip to trip (_written_into)
_PAIR = "pair"
# the steps whose result may be a view of their first operand in a kernel
_VIEWS = frozenset({"getitem", "reshape", "permute_dims"})


def kernel_loops(program: Any) -> Any:
    """``program`` with each rolled loop whose kernel can be written replaced by a step that
    runs it (:class:`LoopKernel`), and each stretch of at least :data:`_MIN_STRETCH` steps
    on small values between them by a kernel of one trip (:func:`_stretches`); or None
    where no loop has a kernel."""
    steps, made = [], False
    for step in program.steps:
        if type(step) is Eqn and type(step.prim) is Loop:
            written = kernel_source(step.prim)
            if written is not None:
                step = Eqn(LoopKernel(step.prim, *written), {}, step.ins, step.outs, NUMPY_XP)
                made = True
        steps.append(step)
    if not made:
        return None
    out = _rows_taken(_stretches(_handed_over(program.with_steps(steps))))
    out.rerun_by = program.rerun_by  # the same inputs and outputs: NumPy's replay where a checked
    return out                       # Numba nest meets a value not finite (numba.lowered)


def _stretches(program: Any) -> Any:
    """``program`` with each stretch of at least :data:`_MIN_STRETCH` consecutive steps that
    a kernel writes, on values of at most :data:`_SMALL` float64 numbers, run by one kernel:
    a :class:`~dualad._program.loop.Loop` of one trip (of at most :data:`_MAX_STRETCH`
    steps: a longer stretch is several). Outside a rolled loop, its trips
    peeled off (the reverse sweep's first, which has no carried cotangent to add to, and
    its last) are such a stretch, where each NumPy call costs a microsecond or so and the
    kernel's steps some nanoseconds."""
    last_read = program.last_readers()
    steps, run = [], []
    for at, step in enumerate([*program.steps, None]):
        writable = step is not None and _writable(step, program)
        if writable and len(run) < _MAX_STRETCH:
            run.append(step)
            continue
        kernel = _stretch_kernel(program, run, last_read, at) if len(run) >= _MIN_STRETCH else None
        steps += run if kernel is None else [kernel]
        run = [step] if writable else []  # a stretch of _MAX_STRETCH steps: the next one's first
        if step is not None and not writable:
            steps.append(step)
    return program.with_steps(steps)


def _writable(step: Any, program: Any) -> bool:
    """Whether a kernel of :func:`_stretches` writes ``step``: one result, :func:`_lines`'s,
    its values float64 arrays of at most :data:`_SMALL` numbers, float64 numbers, or
    constants a kernel takes (:func:`kernel_source`)."""
    if type(step) is not Eqn or len(step.outs) != 1 or type(step.prim) in (Loop, LoopKernel):
        return False
    avals, consts = program.avals, program.consts
    for slot in (*step.ins, *step.outs):
        aval = avals.get(slot)
        if not _supported(aval) or math.prod(aval[1]) > _SMALL:
            return False
        if slot in consts and not (type(consts[slot]) in (float, int, np.float64)
                                   or type(consts[slot]) is np.ndarray):
            return False
    return _lines(step.prim, step.params, step.ins, step.outs[0], "out", ["x"] * len(step.ins),
                  avals, step.xp, {}) is not None


def _stretch_kernel(program: Any, run: list, last_read: dict, at: int) -> Eqn | None:
    """The step that runs the steps ``run`` (those before step ``at`` of ``program``) as a
    kernel of one trip, or None where none is written."""
    consts, avals = program.consts, program.avals
    made = [slot for step in run for slot in step.outs]
    made_here = set(made)
    read = list(dict.fromkeys(slot for step in run for slot in step.ins if slot not in made_here))
    ins = [slot for slot in read if slot not in consts]
    slot_of = {slot: k for k, slot in enumerate(ins)}
    body_consts = {}
    for slot in read:
        if slot in consts:
            slot_of[slot] = len(slot_of)
            body_consts[slot_of[slot]] = consts[slot]
    for slot in made:
        slot_of[slot] = len(slot_of)
    outs = [slot for slot in made if last_read.get(slot, -1) >= at]
    body = Program(len(ins), body_consts,
                   [Eqn(step.prim, step.params, tuple(slot_of[s] for s in step.ins),
                        (slot_of[step.outs[0]],), step.xp) for step in run],
                   [slot_of[slot] for slot in outs],
                   avals={slot_of[slot]: avals[slot] for slot in slot_of})
    # NumPy's replay (where a number is not finite, or while the kernel compiles) is a NumPy
    # call per step, with NumPy's warnings once each, as the steps ran before
    loop = Loop(body, 1, len(ins), [], 0, [(0, k) for k in range(len(outs))], [], ordinary)
    written = kernel_source(loop)
    if written is None:
        return None
    return Eqn(LoopKernel(loop, *written), {}, tuple(ins), tuple(outs), NUMPY_XP)


def _rows_taken(program: Any) -> Any:
    """``program`` with each value that a loop kernel returns as one row of a stack and only
    loop kernels read, as operands before their trips' own (the stretches around a loop
    reading the trips it peeled off: 57 rows of the LSTM gradient's forward sweep), handed
    over as that stack: each reader takes it and picks the row in its source, not a NumPy
    view made per row at each call (about 0.2 us each)."""
    steps = list(program.steps)
    pick_of: dict = {}  # slot -> (its kernel's step, the stack, the row)
    readers: dict = {}  # slot -> [(step, operand's place)]
    for at, step in enumerate(steps):
        if type(step) is not Eqn:
            continue
        if type(step.prim) is LoopKernel:
            for out, (k, row) in zip(step.outs, step.prim.picked()):
                pick_of[out] = (at, k, row)
        for place, slot in enumerate(step.ins):
            readers.setdefault(slot, []).append((at, place))
    guarded = {step.slot for step in steps if type(step) is not Eqn}
    taken = {slot for slot, reads in readers.items()
             if slot in pick_of and slot not in guarded and slot not in program.outputs
             and all(type(steps[at].prim) is LoopKernel and place < steps[at].prim.n_before_trips
                     for at, place in reads)}
    if not taken:
        return program
    avals, next_slot = dict(program.avals), program.free_slot()
    stack_slot: dict = {}  # (a kernel's step, its stack) -> the slot it is returned in
    for slot in sorted(taken):
        at, k, _ = pick_of[slot]
        producer = steps[at]
        if (at, k) in stack_slot:
            continue
        returned = _stack_slots(producer)
        if k in returned:  # returned whole already (_handed_over)
            stack_slot[at, k] = returned[k]
        else:
            stack_slot[at, k] = next_slot
            avals[next_slot] = producer.prim.stack_aval(k)
            next_slot += 1
    for at, step in enumerate(steps):
        if type(step) is not Eqn or type(step.prim) is not LoopKernel:
            continue
        places = {place: pick_of[slot] for place, slot in enumerate(step.ins) if slot in taken}
        if places:
            given = list(dict.fromkeys(stack_slot[at_, k] for at_, k, _ in places.values()))
            rows = {place: (given.index(stack_slot[at_, k]), row) for place, (at_, k, row) in places.items()}
            steps[at] = step = Eqn(step.prim.reading_rows(rows), {},
                                   tuple(s for place, s in enumerate(step.ins) if place not in rows)
                                   + tuple(given), step.outs, step.xp)
        stacks = {k: slot for (p, k), slot in stack_slot.items() if p == at}
        if stacks:
            n_picks = len(step.outs) - len(step.prim.stacks_out)
            kept = [i for i in range(n_picks) if step.outs[i] not in taken]
            slot_of = _stack_slots(step) | stacks
            returned = sorted(slot_of)
            steps[at] = Eqn(step.prim.returning(kept, returned), {}, step.ins,
                            tuple(step.outs[i] for i in kept) + tuple(slot_of[k] for k in returned),
                            step.xp)
    return program.with_steps(steps, avals=avals)


def _stack_slots(step: Eqn) -> dict:
    """``{stack: its slot}`` of the stacks a loop kernel's step returns whole (its last outputs)."""
    stacks = step.prim.stacks_out
    return dict(zip(stacks, step.outs[len(step.outs) - len(stacks):]))


def _handed_over(program: Any) -> Any:
    """``program`` with stacks handed from step to step where a loop kernel's trips read, in
    one of their columns, the rows of one stack in order or reversed: the rows a kernel
    before it returns, one per trip (the reverse sweep reading what the forward saved), or
    the rows ``x[t]`` of one array. The kernel then takes that stack (its rows made
    contiguous) instead of the rows, and one that returned them returns the stack too; the
    rows and ``x[t]`` that nothing else reads are no longer made one by one."""
    steps = list(program.steps)
    rows_of: dict = {}  # slot -> (the stack it is a row of, its row)
    for at, step in enumerate(steps):
        if type(step) is not Eqn:
            continue
        if type(step.prim) is LoopKernel:
            for out, (k, trip) in zip(step.outs, step.prim.rows()):
                if k is not None:
                    rows_of[out] = ((at, k), trip)
        elif step.prim.partition == "getitem" and _row(step.params.get("idx")) is not None:
            rows_of[step.outs[0]] = (("x", step.ins[0]), _row(step.params["idx"]))
    handed: dict = {}  # consumer step -> {column: (source, first row, step)}
    for at, step in enumerate(steps):
        if type(step) is Eqn and type(step.prim) is LoopKernel:
            columns = {c: found for c, slots in step.prim.columns(step.ins).items()
                       if (found := _one_stack([rows_of.get(s) for s in slots], slots)) is not None}
            if columns:
                handed[at] = columns
    if not handed:
        return program
    avals, next_slot = dict(program.avals), program.free_slot()
    stack_slot: dict = {}  # a kernel's stack -> the slot it is returned in
    for columns in handed.values():
        for source, *_ in columns.values():
            if source[0] != "x" and source not in stack_slot:
                stack_slot[source] = next_slot
                producer = steps[source[0]]
                avals[next_slot] = producer.prim.stack_aval(source[1])
                next_slot += 1
    for at, columns in handed.items():
        step = steps[at]
        prim = step.prim.taking({c: (first, by, len(head), len(tail), source[0] != "x")
                                 for c, (source, first, by, head, tail) in columns.items()})
        given = tuple(slot for _, (source, _, _, head, tail) in sorted(columns.items())
                      for slot in (source[1] if source[0] == "x" else stack_slot[source], *head, *tail))
        steps[at] = Eqn(prim, {}, step.prim.rest_ins(step.ins, columns) + given, step.outs,
                        step.xp)
    read = set(program.outputs).union(*(step.ins if type(step) is Eqn else (step.slot,)
                                        for step in steps))
    for at, step in enumerate(steps):
        if type(step) is Eqn and type(step.prim) is LoopKernel:
            stacks = sorted(k for (p, k) in stack_slot if p == at)
            kept = [i for i, out in enumerate(step.outs) if out in read]
            if stacks or len(kept) < len(step.outs):
                steps[at] = Eqn(step.prim.returning(kept, stacks), {}, step.ins,
                                tuple(step.outs[i] for i in kept)
                                + tuple(stack_slot[at, k] for k in stacks), step.xp)
    # the rows x[t] now read by nothing go
    return eliminate_dead_code(program.with_steps(steps, avals=avals))


def _row(idx: Any) -> int | None:
    """The row of ``x[idx]`` where ``idx`` is one int, alone or before whole slices
    (``x[t]``, ``x[t, :]``), else None."""
    if type(idx) is tuple:
        if not idx or any(type(i) is not slice or i != slice(None) for i in idx[1:]):
            return None
        idx = idx[0]
    return idx if type(idx) is int else None


def _one_stack(found: list, slots: list) -> tuple | None:
    """``(source, first row, step, head, tail)`` where ``found`` (a column's ``(source, row)``
    at each trip, its ``slots``) reads one source's rows one after the other (step 1) or
    backwards (step -1), but for up to :data:`_PEELED` trips at its ends reading other
    values (the trips a loop peeled off: the reverse sweep's last read the forward sweep's
    first), whose ``slots`` are ``head`` and ``tail``; else None."""
    trips = len(found)
    for n_head in range(_PEELED + 1):
        for n_tail in range(_PEELED + 1 - n_head):
            rows = found[n_head:trips - n_tail]
            if not rows or None in rows or len({source for source, _ in rows}) != 1:
                continue
            first = rows[0][1]
            by = rows[1][1] - first if len(rows) > 1 else 1
            if by in (1, -1) and first >= 0 and all(row == first + by * t for t, (_, row) in enumerate(rows)):
                return rows[0][0], first, by, slots[:n_head], slots[trips - n_tail:]
    return None


def compile_in_background(program: Any) -> Callable:
    """Start compiling the loop kernels of ``program`` on threads of their own; the function
    that says whether they are all ready (compiled, or failed)."""
    kernels = [step.prim for step in program.steps
               if type(step) is Eqn and type(step.prim) is LoopKernel]
    for kernel in kernels:
        kernel.compile_in_background()
    return lambda: all(kernel.ready() for kernel in kernels)


class LoopKernel(Step):
    """A rolled loop run by one Numba kernel: compiled (or loaded from the disk cache) for
    its operands' types at its first call, on a thread of its own where it was started in
    the background (the calls meanwhile run the loop's NumPy replay), else at that call."""

    multiple_results = True

    def __init__(self, loop: Loop, source: str, last: list):
        self.loop, self.source, self.name = loop, source, "loop_kernel"
        self._last = last  # the kernel's last arguments (see kernel_source)
        self._kernel: Callable | None = None
        self._compiling: threading.Thread | None = None  # loading its module (the background)
        self._typing: threading.Thread | None = None     # compiling it for the first operands
        self._typed = False  # compiled for the first call's operands' types
        self.error: str | None = None  # why the kernel could not be compiled, if so
        exported = sorted({out for _, out in loop.exported})
        body = loop.body
        # each output of the step: (its stack among the kernel's, its row there, its type)
        once = _read_once(loop)
        self._picks = [(exported.index(out), 0 if out in once else trip, body.avals[body.outputs[out]][0])
                       for trip, out in loop.exported]
        self._full = [out not in once for out in exported]  # a stack of every trip's row
        # handed over (_handed_over): the picks still returned (their places among the loop's
        # outputs), the stacks returned whole, the columns given as stacks
        self._kept = list(range(len(self._picks)))
        self._stacks_out: list = []
        # column -> (its first row in the stack given, step 1 or -1, how many trips before
        # and after the stack's read values of their own, given after the stack)
        self._handed: dict = {}
        # where every column is one stack handed over and read in place (or there are none),
        # the places among them of those not made by a kernel (made contiguous at each call);
        # else None (_stacks makes them)
        self._whole: tuple | None = () if loop.per_trip == 0 else None
        # operands before the trips' own taken as rows of stacks given last (_rows_taken):
        # place -> (which of those stacks, its row); and how many stacks
        self._rows: dict = {}
        self._n_row_stacks = 0

    def _copy(self) -> "LoopKernel":
        new = object.__new__(LoopKernel)
        new.__dict__.update(self.__dict__)
        return new

    def rows(self) -> list:
        """For each output, ``(its stack, its row)`` where it is one row of a stack of every
        trip's, ``(None, None)`` otherwise."""
        return [(k, trip) if self._full[k] else (None, None) for k, trip in self.picked()]

    def picked(self) -> list:
        """For each output but the stacks returned whole, ``(its stack, its row there)``."""
        return [(k, trip) for k, trip, _ in (self._picks[i] for i in self._kept)]

    @property
    def stacks_out(self) -> list:
        """The stacks returned whole, after the other outputs."""
        return self._stacks_out

    @property
    def n_before_trips(self) -> int:
        """How many operands come before those of the trips (the fixed and carried ones)."""
        return self.loop.n_fixed + len(self.loop.carried) - len(self._rows)

    def stack_aval(self, k: int) -> tuple:
        body = self.loop.body
        out = sorted({out for _, out in self.loop.exported})[k]
        shape = body.avals[body.outputs[out]][1]
        return (np.ndarray, (self.loop.trips if self._full[k] else 1, *shape), _F64)

    def columns(self, ins: tuple) -> dict:
        """``{column: its slot at each trip}`` of the per-trip inputs ``ins`` gives."""
        loop = self.loop
        start, per_trip = loop.n_fixed + len(loop.carried), loop.per_trip
        return {c: [ins[start + t * per_trip + c] for t in range(loop.trips)]
                for c in range(per_trip)}

    def rest_ins(self, ins: tuple, handed: dict) -> tuple:
        """``ins`` without the per-trip slots of the ``handed`` columns."""
        loop = self.loop
        start, per_trip = loop.n_fixed + len(loop.carried), loop.per_trip
        return ins[:start] + tuple(s for i, s in enumerate(ins[start:]) if i % per_trip not in handed)

    def taking(self, handed: dict) -> "LoopKernel":
        """This kernel, the columns ``handed`` (``{column: (first row, step, trips before
        and after the stack, whether a kernel made it)}``) given as stacks after its other
        operands: a column read from a row of its stack forwards or backwards reads it so
        in the kernel's source, by numbers written there."""
        new = self._copy()
        new._handed = dict(sorted(handed.items()))
        start = self.loop.n_fixed + len(self.loop.carried)
        in_place = len(handed) == self.loop.per_trip and not any(h + t for _, _, h, t, _ in handed.values())
        new._whole = (tuple(at for at, (*_, made) in enumerate(new._handed.values()) if not made)
                      if in_place else None)
        for c, (first, by, n_head, n_tail, _) in new._handed.items():
            if not n_head + n_tail and (first, by) != (0, 1):
                i = start + c
                row = f"{first} + trip" if by == 1 else f"{first} - trip"
                new.source = new.source.replace(f"s{i} = S{i}[trip]", f"s{i} = S{i}[{row}]")
        return new

    def reading_rows(self, rows: dict) -> "LoopKernel":
        """This kernel, its operands at the places ``rows`` gives (``{place: (stack, row)}``,
        places before the trips' operands) not given but picked in its source, each from a
        row of one of the stacks given after all its other operands."""
        assert not self._rows, "rows are taken once"
        new = self._copy()
        new._rows, new._n_row_stacks = dict(sorted(rows.items())), 1 + max(j for j, _ in rows.values())
        lines = new.source.split("\n")
        at = lines.index(next(line for line in lines if line.startswith("def kernel(")))
        params = lines[at][len("def kernel("):-len("):")].split(", ")
        kept = [name for place, name in enumerate(params) if place not in rows]
        lines[at] = f"def kernel({', '.join(kept + [f'R{j}' for j in range(new._n_row_stacks)])}):"
        lines[at + 1:at + 1] = [f"    {params[place]} = R{j}[{row}]" for place, (j, row) in new._rows.items()]
        new.source = "\n".join(lines)
        return new

    def _with_rows(self, args: tuple) -> tuple:
        """``args`` as the loop takes them: the rows read from the stacks given last put back
        in their places."""
        n = len(args) - self._n_row_stacks
        given, args = args[n:], list(args[:n])
        avals = self.loop.body.avals
        for place, (j, row) in self._rows.items():
            value = given[j][row]
            args.insert(place, value if avals[place][0] is np.ndarray else avals[place][0](value))
        return tuple(args)

    def returning(self, kept: list, stacks: list) -> "LoopKernel":
        """This kernel, returning its outputs ``kept`` (by place), then the stacks ``stacks``."""
        new = self._copy()
        new._kept = [self._kept[i] for i in kept]
        new._stacks_out = list(stacks)
        return new

    def _stacks(self, rest: tuple) -> list:
        """Each column's ``(stack, row of the first trip, step)``, from the operands after the
        carried ones: a stack handed over is given whole (float64, contiguous: as a kernel
        returns it, else made so), read from a row forwards or backwards; one of a row per
        trip, or with trips at its ends reading values of their own, is made here."""
        loop = self.loop
        trips, per_trip, handed = loop.trips, loop.per_trip, self._handed
        own = [c for c in range(per_trip) if c not in handed]
        n_rows = len(own) * trips
        stacks: list = [None] * per_trip
        for j, c in enumerate(own):
            stacks[c] = (np.array(rest[j:n_rows:len(own)], dtype=_F64), 0, 1)
        given = iter(rest[n_rows:])
        for c, (first, by, n_head, n_tail, made) in handed.items():
            stack = next(given) if made else np.ascontiguousarray(next(given), dtype=_F64)
            if not n_head + n_tail:
                stacks[c] = (stack, first, by)
                continue
            n = trips - n_head - n_tail
            rows = stack[first:first + n] if by == 1 else stack[first::-1][:n]
            head = [np.reshape(next(given), (1, *rows.shape[1:])) for _ in range(n_head)]
            tail = [np.reshape(next(given), (1, *rows.shape[1:])) for _ in range(n_tail)]
            stacks[c] = (np.concatenate([*head, rows, *tail], dtype=_F64), 0, 1)
        return stacks

    def _numpy_loop(self, xp: Any, args: tuple) -> tuple:
        """The loop replayed by NumPy, its results as the kernel's."""
        loop = self.loop
        if self._rows:
            args = self._with_rows(args)
        start = loop.n_fixed + len(loop.carried)
        if self._handed:
            stacks = self._stacks(args[start:])
            args = (*args[:start], *(stack[first + by * t] for t in range(loop.trips)
                                     for stack, first, by in stacks))
        results = loop.impl(xp, *args)
        stacks = []
        for k in self._stacks_out:  # laid out as the kernel's: its rows where the kernel has them
            stack = np.zeros(self.stack_aval(k)[1], dtype=_F64)  # (a row no pick names is read by
            for i, (kk, row, _) in enumerate(self._picks):      # no step: zeros, not garbage)
                if kk == k:
                    stack[row] = results[i]
            stacks.append(stack)
        return (*(results[i] for i in self._kept), *stacks)

    def compile_in_background(self) -> None:
        """Start loading the kernel's module on a thread of its own (once), and compile it
        on another at its first call, for its operands' types: until it is ready, calls
        run the loop's NumPy replay."""
        if self._compiling is None and self._kernel is None:
            self._compiling = threading.Thread(target=self._compile, daemon=True,
                                               name="dualad loop kernel")
            self._compiling.start()

    def ready(self) -> bool:
        """Whether the kernel is compiled, or failed to compile (``error`` says why)."""
        return self._typed or self.error is not None

    def _compile(self) -> None:
        try:
            self._kernel = load(self.source)
        except Exception as err:  # a form Numba refuses: the NumPy replay stays, and says why
            self.error = f"{type(err).__name__}: {err}"

    def _specialize(self, operands: tuple) -> None:
        """Compile the kernel for ``operands``' types (Numba compiles a function lazily, at
        its first call: on the thread that makes it)."""
        import numba
        try:
            self._kernel.compile(tuple(map(numba.typeof, operands)))
            self._typed = True
        except Exception as err:  # a form Numba refuses: the NumPy replay stays, and says why
            self.error, self._kernel = f"{type(err).__name__}: {err}", None

    def impl(self, xp: Any, *args: Any) -> tuple:
        background = self._compiling is not None
        if self._kernel is None and self.error is None and not background:
            self._compile()  # asked for (executor="numba"), not started in the background
        kernel = self._kernel
        if kernel is None:
            return self._numpy_loop(xp, args)
        start, end = self.n_before_trips, len(args) - self._n_row_stacks
        if self._whole is None:
            stacks = [stack for stack, _, _ in self._stacks(args[start:end])]
        else:
            stacks = args[start:end]
            if self._whole:
                stacks = list(stacks)
                for at in self._whole:
                    stacks[at] = np.ascontiguousarray(stacks[at], dtype=_F64)
        operands = (*args[:start], *stacks, *self._last, *args[end:])
        if not self._typed:
            if not background:
                self._specialize(operands)
            elif self._typing is None:
                self._typing = threading.Thread(target=self._specialize, args=(operands,),
                                                daemon=True, name="dualad loop kernel")
                self._typing.start()
            if not self._typed:
                return self._numpy_loop(xp, args)
            kernel = self._kernel
        *exported, finite = kernel(*operands)
        if not finite:
            return self._numpy_loop(xp, args)  # NumPy's replay, with NumPy's warnings (or errors)
        picks = self._picks
        return (*(exported[k][trip] if kind is np.ndarray else kind(exported[k][trip])
                  for k, trip, kind in (picks[i] for i in self._kept)),
                *(exported[k] for k in self._stacks_out))

    def format(self, names: list, params: dict) -> str:
        return self.loop.format(names, params).replace("loop(", "loop_kernel(", 1)


# The kernel module's test of its stacks (returned last), where NumPy's replay takes over if a
# number is not finite: an exponent of all ones (inf, nan) found by an OR over the numbers'
# bits, which the compiler vectorizes (a loop of isfinite with a branch does not: 290 us for
# the LSTM's 35 stacks of 1,023 x 14 against 63 us so, and 136 us for NumPy's calls).
_FINITE = ['@njit(error_model="numpy", nogil=True)', "def _finite(a):",
           "    bits, exponent, bad = a.ravel().view(np.uint64), np.uint64(0x7FF0000000000000), False",
           "    for i in range(bits.size):", "        bad |= (bits[i] & exponent) == exponent",
           "    return not bad", ""]


def kernel_source(loop: Loop) -> tuple | None:
    """``(the module source of loop's kernel, the arrays it takes after the loop's own
    operands)``: each per-trip index's ints, then the body's array constants; or None
    where a step or value has no form here (see the module's docstring)."""
    body = loop.body
    n_fixed, n_carried = loop.n_fixed, len(loop.carried)
    first_params = body.n_inputs - len(loop.trip_params)
    if any(not _supported(aval) for slot, aval in body.avals.items()
           if not first_params <= slot < body.n_inputs):
        return None
    names = {}
    for i in range(first_params):
        names[i] = f"f{i}" if i < n_fixed else f"c{i}" if i < n_fixed + n_carried else f"s{i}"
    arrays = _array_consts(body)
    for slot, value in body.consts.items():
        if slot in arrays:
            names[slot] = f"k{slot}"
        elif type(value) in (float, int, np.float64):
            names[slot] = _literal(float(value))
        else:
            return None
    accumulated = _accumulations(loop)
    scatters = {scatter_out for scatter_out, _, _ in accumulated.values()}
    summed_into = {carried_in for _, _, carried_in in accumulated.values()}
    lines, indices = [], []  # indices: the per-trip ints of PerTrip steps' indices, by name
    scattered = {}  # the out slot of a scatter added into a carried value -> (index, values)
    exported = sorted({out for _, out in loop.exported})
    into = {slot: row for slot, row in _written_into(loop, exported).items()
            if slot not in scatters and slot not in accumulated}  # those are added in place
    inline = _inlined(body, summed_into, set(into))
    into = {slot: row for slot, row in into.items() if slot not in inline}
    for step in body.steps:
        if type(step) is not Eqn or len(step.outs) != 1:
            return None
        out = names[step.outs[0]] = f"t{step.outs[0]}"
        if step.outs[0] in inline:  # written where it is read: one expression Numba fuses
            names[step.outs[0]] = f"np.{step.prim.ufunc}({', '.join(names[s] for s in step.ins)})"
            continue
        prim, params, ins, changing = step.prim, step.params, step.ins, {}
        if type(prim) is PerTrip:  # its first operand is each trip's parameters
            params, changing = _changing_ints(loop.trip_params[ins[0] - first_params], len(indices))
            if params is None:
                return None
            prim, ins = prim.prim, ins[1:]
            indices += [values for _, values in sorted(changing.values())]
            changing = {at: name for at, (name, _) in changing.items()}
        if step.outs[0] in scatters:  # added in place below, not made of zeros
            index = _index(params["idx"], changing)
            if index is None:
                return None
            scattered[step.outs[0]] = (index, names[ins[0]])
            continue
        if step.outs[0] in accumulated:  # the carried value, added into where the scatter wrote
            scatter_out, added_to, _ = accumulated[step.outs[0]]
            index, values = scattered[scatter_out]
            carried_name = names[added_to]
            names[step.outs[0]] = carried_name
            lines.append(f"{carried_name}[{index}] += {values}")
            continue
        made = _lines(prim, params, ins, step.outs[0], out, [names[s] for s in ins], body.avals,
                      step.xp, changing)
        if made is None:
            return None
        if step.outs[0] in into:  # written into its row of a stack returned, or a buffer
            made = _into(into[step.outs[0]], out, made, step, [names[s] for s in ins], body.avals)
        lines += made
    sliced = range(n_fixed + n_carried, first_params)
    args = [names[i] for i in range(n_fixed + n_carried)] + [f"S{i}" for i in sliced]
    args += [f"P{k}" for k in range(len(indices))] + [f"k{slot}" for slot in arrays]
    head = [f"def kernel({', '.join(args)}):"]
    head += [f"    t{slot}{pair} = np.empty({tuple(body.avals[slot][1])!r}, np.float64)"
             for slot, row in into.items() if row in (None, _PAIR)
             for pair in (("_0", "_1") if row == _PAIR else ("",))]
    for carried_in in sorted(summed_into):  # written in place: the caller's array copied first
        head.append(f"    {names[carried_in]} = {names[carried_in]}.copy()")
    once = _read_once(loop)
    for k, out in enumerate(exported):  # a stack per value read after the loop (one value
        kind, shape, _ = body.avals[body.outputs[out]]  # where one trip's is read)
        rows = 1 if out in once else loop.trips
        head.append(f"    E{k} = np.empty(({rows},) + {tuple(shape)!r}, np.float64)")
    inside = [f"{names[i]} = S{i}[trip]" for i in sliced] + lines  # (see LoopKernel.taking)
    for k, out in enumerate(exported):
        value = names[body.outputs[out]]
        if into.get(body.outputs[out], -1) != k:  # not written there already
            inside += ([f"if trip == {once[out]}:", f"    E{k}[0] = {value}"] if out in once
                       else [f"E{k}[trip] = {value}"])
    carried = [names[n_fixed + i] for i in range(n_carried)]
    if carried:
        nexts = [names[body.outputs[out]] for out in loop.carried]
        inside.append(f"{', '.join(carried)} = {', '.join(nexts)}")
    stacks = [f"E{k}" for k in range(len(exported))]
    # whether every number exported is finite, taken here (a call per stack from Python cost
    # about 3 us each: 41 stacks, a fifth of the LSTM gradient's replay at 128 characters)
    tail = ["    finite = True", *(f"    finite &= _finite({e})" for e in stacks),
            f"    return ({''.join(f'{e}, ' for e in stacks)}finite)"]
    lines = head + [f"    for trip in range({loop.trips}):"] + ["        " + x for x in inside] + tail
    source = "\n".join(["import numpy as np", "", "from dualad._base.kernel_cache import njit", "",
                        *_FINITE, "", '@njit(error_model="numpy", nogil=True)', *lines]) + "\n"
    return source, [np.asarray(values, dtype=np.int64) for values in indices] + [
        body.consts[slot] for slot in arrays]


def _accumulations(loop: Loop) -> dict:
    """``{add's out slot: (scatter's out slot, what it adds to, the carried input)}`` for each
    ``carried + scatter(v, idx)`` of ``loop``'s body that its kernel can write as
    ``carried[idx] += v`` (the cotangent of row ``t`` of an input, summed over the trips):
    one pass over the row, not over the whole array at each trip; and for each add of a
    chain ``carried + scatter + scatter + ...`` (rows of one array read at several places
    of a trip). Each scatter is read by its add alone, the carried value and each sum but
    the last by the next add alone, and the last sum by nothing but the next trip."""
    body = loop.body
    n_fixed = loop.n_fixed
    first_params = body.n_inputs - len(loop.trip_params)
    reads: dict = {}
    made_by: dict = {}
    for step in body.steps:
        if type(step) is Eqn:
            for s in step.ins:
                reads[s] = reads.get(s, 0) + 1
            for s in step.outs:
                made_by[s] = step
    outputs = set(body.outputs)

    def scattered(slot: int) -> bool:  # a scatter of zeros read once, into a value of the shape
        scatter = made_by.get(slot)
        prim = getattr(scatter, "prim", None)
        inner = prim.prim if type(prim) is PerTrip else prim
        params = (loop.trip_params[scatter.ins[0] - first_params][0] if type(prim) is PerTrip
                  else getattr(scatter, "params", None))
        return (inner is not None and _sets_at_indices(inner, params) and reads.get(slot) == 1
                and slot not in outputs)

    found = {}
    for i, out in enumerate(loop.carried):
        carried_in, total = n_fixed + i, body.outputs[out]
        if reads.get(total, 0) or carried_in in outputs or reads.get(carried_in) != 1:
            continue
        chain, slot = [], total
        while True:  # back from the last sum: add(sum or carried, scatter), each read once
            step = made_by.get(slot)
            if (step is None or step.prim.ufunc != "add" or step.params or len(step.ins) != 2
                    or (slot != total and (reads.get(slot) != 1 or slot in outputs))):
                break
            a, b = step.ins
            added_to, other = (a, b) if scattered(b) else (b, a)
            if not scattered(other) or body.avals[other][1:] != body.avals[carried_in][1:]:
                break
            chain.append((slot, other, added_to))
            if added_to == carried_in:
                found.update({s: (scatter, to, carried_in) for s, scatter, to in chain})
                break
            slot = added_to
    return found


def _inlined(body: Any, written: set, buffered: set) -> set:
    """The out slots of ``body``'s ufunc steps that its kernel writes inside the expression
    of the one step that reads them (``np.tanh(np.add(t1, t2))``): read once, not by the
    loop, and not reading (through other steps) a value the kernel adds into in place
    (``written``), which could change between the two; numbers, or arrays read by a ufunc
    that makes a new array (Numba fuses the chain into one loop and one new array). An
    array read by a step written into a buffer or row (``buffered``), or by another kind
    of step, is written into a buffer of its own: that costs less than a new array."""
    readers: dict = {}
    for step in body.steps:
        if type(step) is Eqn:
            for slot in step.ins:
                readers.setdefault(slot, []).append(step)
    outputs, touched, found = set(body.outputs), set(written), set()
    for step in body.steps:
        if type(step) is not Eqn:
            continue
        if touched.intersection(step.ins):
            touched.update(step.outs)
            continue
        read = readers.get(step.outs[0], ()) if len(step.outs) == 1 else ()
        if (len(read) == 1 and _ufunc(step) and step.outs[0] not in outputs
                and (body.avals[step.outs[0]][0] is not np.ndarray
                     or (_ufunc(read[0]) and read[0].outs[0] not in buffered))):
            found.add(step.outs[0])
    return found


def _joined(step: Eqn, avals: dict) -> bool:
    """Whether ``step`` is a concatenation of arrays that :func:`_lines` writes."""
    return (type(step.prim) is not PerTrip and step.prim.partition == "concatenate"
            and len(step.ins) > 1 and step.xp is NUMPY_XP
            and all(avals[s][0] is np.ndarray for s in step.ins))


def _zeros_set(step: Eqn) -> bool:
    """Whether ``step`` is zeros set (or added into) at indices, which :func:`_lines` writes
    as ``np.zeros(...)`` first."""
    prim = step.prim.prim if type(step.prim) is PerTrip else step.prim
    return step.xp is NUMPY_XP and len(step.outs) == 1 and (
        prim.sparsity == "scatter" or prim.lowering == "scatter")


def _ufunc(step: Eqn) -> bool:
    """Whether ``step`` is a NumPy ufunc that a kernel calls as ``np.<name>(...)``."""
    prim = step.prim
    return (type(prim) is not PerTrip and prim.ufunc in _UFUNCS and step.params == prim.ufunc_params
            and step.xp is NUMPY_XP and len(step.outs) == 1)


def _written_into(loop: Loop, exported: list) -> dict:
    """``{out slot: its stack's place among the returned, None, or _PAIR}`` for each step of
    ``loop``'s body that its kernel can write into an array made before the loop (a ufunc,
    with ``out=``; zeros set at indices; a concatenation), not a new one at each trip: its
    row of a stack the kernel returns (read after the loop at every trip), else one buffer
    (None). A buffer is overwritten at the next trip, so a value the next trip reads
    (carried), or what it views, takes two buffers in turn (``_PAIR``), where no carried
    value is (a view of) a body input, and is a new array otherwise."""
    body = loop.body
    once = _read_once(loop)
    rows = {}
    for k, out in enumerate(exported):
        if out not in once:
            rows.setdefault(body.outputs[out], k)
    made_by = {step.outs[0]: step for step in body.steps if type(step) is Eqn and len(step.outs) == 1}
    kept = [body.outputs[out] for out in loop.carried]  # read by the next trip, and what they view
    carried = set()
    while kept:
        slot = kept.pop()
        if slot not in carried:
            carried.add(slot)
            step = made_by.get(slot)
            if step is not None and step.ins and step.prim.partition in _VIEWS:
                kept.append(step.ins[0])
    # two buffers taken in turn hold what the next trip reads, where no trip reads a value of
    # two trips back: none where a carried value is (a view of) a body input, as another
    # carried value passed on, or viewed, as the next one is
    paired = all(slot >= body.n_inputs for slot in carried)
    into = {}
    for slot, step in made_by.items():
        aval = body.avals.get(slot)
        if not (_ufunc(step) or _zeros_set(step) or _joined(step, body.avals)) or aval is None \
                or aval[0] is not np.ndarray:
            continue
        if slot in rows:
            into[slot] = rows[slot]
        elif slot not in carried:
            into[slot] = None
        elif paired:
            into[slot] = _PAIR
    return into


def _into(where: Any, out: str, made: list, step: Eqn, ins: list, avals: dict) -> list:
    """The lines of ``made`` (:func:`_lines`) that make ``out`` anew, written instead into
    ``where`` (see :func:`_written_into`): a ufunc's ``out`` operand, zeros as ``fill(0.0)``,
    a concatenation as its operands set into their places."""
    if where is None:
        lines = []
    elif where == _PAIR:
        lines = [f"{out} = {out}_1 if trip & 1 else {out}_0"]
    else:
        lines = [f"{out} = E{where}[trip]"]
    if _ufunc(step):
        return lines + [f"np.{step.prim.ufunc}({', '.join(ins)}, {out})"]
    if _zeros_set(step):
        return lines + [f"{out}.fill(0.0)", *made[1:]]
    ndim = len(avals[step.outs[0]][1])
    axis, at = step.params["axis"] % ndim, 0
    for name, slot in zip(ins, step.ins):
        size = avals[slot][1][axis]
        lines.append(f"{out}[{'::, ' * axis}{at}:{at + size}] = {name}")
        at += size
    return lines


def _literal(value: float) -> str:
    """``value`` as kernel source: ``np.inf``, ``-np.inf`` and ``np.nan`` by name."""
    if value != value:
        return "np.nan"
    if value in (np.inf, -np.inf):
        return "np.inf" if value > 0 else "-np.inf"
    return repr(value)


def _read_once(loop: Loop) -> dict:
    """``{body output: its trip}`` for each output of ``loop``'s body read after the loop at
    one trip only (a carried value's last, most often): its kernel keeps that one value."""
    trips: dict = {}
    for trip, out in loop.exported:
        trips.setdefault(out, set()).add(trip)
    return {out: next(iter(t)) for out, t in trips.items() if len(t) == 1}


def _array_consts(body: Any) -> list:
    """The slots of ``body``'s float64 array constants, which its kernel takes last."""
    return sorted(slot for slot, value in body.consts.items()
                  if type(value) is np.ndarray and value.dtype == _F64 and value.ndim >= 1)


def _changing_ints(per_trip: list, first: int) -> tuple:
    """``(the parameters, with the ints of ``idx`` that change from trip to trip marked, and
    {position in idx: (its name P<k>, its value at each trip)})`` where only such ints
    change; ``(None, {})`` otherwise."""
    params = per_trip[0]
    idx = params.get("idx")
    if type(idx) is not tuple or any(p.keys() != params.keys() or type(p["idx"]) is not tuple
                                     or len(p["idx"]) != len(idx) for p in per_trip):
        return None, {}
    if any(p[k] != params[k] for p in per_trip for k in params if k != "idx"):
        return None, {}
    changing = {}
    for at, i in enumerate(idx):
        values = [p["idx"][at] for p in per_trip]
        if all(v == i and type(v) is type(i) for v in values):
            continue
        if not all(type(v) is int for v in values):
            return None, {}
        changing[at] = (f"P{first + len(changing)}", values)
    return params, changing


def _supported(aval: Any) -> bool:
    """Float64 arrays of at least one dimension and float64 numbers: what the kernel holds."""
    if aval is None:
        return False
    kind, shape, dtype = aval
    if kind in (float, np.float64):
        return True
    return kind is np.ndarray and dtype == _F64 and shape is not None and len(shape) >= 1


def _lines(prim: Any, params: dict, in_slots: tuple, out_slot: int, out: str, ins: list,
           avals: dict, xp: Any, changing: dict) -> list | None:
    """Lines that compute ``prim`` at ``params`` into ``out`` in a Numba kernel, over its
    operands' names (``changing``: the ints of ``idx`` read from a per-trip array, by
    their place), or None."""
    if xp is not NUMPY_XP:
        return None
    if prim.ufunc in _UFUNCS and params == prim.ufunc_params:
        return [f"{out} = np.{prim.ufunc}({', '.join(ins)})"]
    kind, shape = prim.partition, avals[out_slot][1]  # what the entry declares it does to shapes
    array_in = bool(ins) and avals[in_slots[0]][0] is np.ndarray
    if kind == "getitem":
        index = _index(params["idx"], changing)
        return None if index is None else [f"{out} = {ins[0]}[{index}]"]
    if kind == "concatenate" and len(ins) > 1 and all(avals[s][0] is np.ndarray for s in in_slots):
        return [f"{out} = np.concatenate(({', '.join(ins)}), axis={params['axis']})"]
    if prim.lowering == "sum" and not params.get("keepdims") and shape == () and array_in:
        return [f"{out} = np.sum({ins[0]})"]
    if prim.lowering == "sum" and array_in and shape != () and len(params["axis"] or ()) == 1:
        if len(avals[in_slots[0]][1]) == 1:  # over the one axis (keepdims): Numba's is a number
            return [f"{out} = np.full({tuple(shape)!r}, np.sum({ins[0]}))"]
        axis = params["axis"][0] % len(avals[in_slots[0]][1])
        return [f"{out} = np.sum({ins[0]}, axis={axis}).reshape({tuple(shape)!r})"]
    if kind == "permute_dims" and array_in:
        return [f"{out} = np.ascontiguousarray(np.transpose({ins[0]}, {tuple(params['axes'])!r}))"]
    if kind == "reshape" and array_in:
        return [f"{out} = np.ascontiguousarray({ins[0]}).reshape({tuple(shape)!r})"]
    if kind in ("reshape", "broadcast_to") and not array_in:
        return [f"{out} = np.full({tuple(shape)!r}, {ins[0]})"]
    if kind == "broadcast_to":
        return [f"{out} = np.ascontiguousarray(np.broadcast_to({ins[0]}, {tuple(shape)!r}))"]
    if _sets_at_indices(prim, params) and array_in:  # zeros, the values set at basic indices
        index = _index(params["idx"], changing)
        return None if index is None else [f"{out} = np.zeros({tuple(shape)!r})",
                                           f"{out}[{index}] = {ins[0]}"]
    if kind == "matmul" and all(avals[s][0] is np.ndarray and len(avals[s][1]) <= 2 for s in in_slots):
        return [f"{out} = np.dot(np.ascontiguousarray({ins[0]}), np.ascontiguousarray({ins[1]}))"]
    if prim.lowering == "scatter" and "ranges" in params:  # zeros, each operand added over its range
        (i, j), (k, m) = params["ranges"]
        return [f"{out} = np.zeros({tuple(shape)!r})", f"{out}[{i}:{j}] += {ins[0]}",
                f"{out}[{k}:{m}] += {ins[1]}"]
    return None


def _sets_at_indices(prim: Any, params: dict) -> bool:
    """Whether ``prim`` at ``params`` is a scatter: zeros of ``shape``, values set at ``idx``."""
    return prim.sparsity == "scatter" and set(params) == {"idx", "shape"}


def _index(idx: tuple, changing: dict | None = None) -> str | None:
    """A basic index (ints and slices) as source, the ints of ``changing`` by their
    per-trip arrays' names; or None."""
    parts = []
    for at, i in enumerate(idx if type(idx) is tuple else (idx,)):
        if changing and at in changing:
            parts.append(f"{changing[at]}[trip]")
        elif type(i) is int:
            parts.append(str(i))
        elif type(i) is slice and all(v is None or type(v) is int for v in (i.start, i.stop, i.step)):
            parts.append(":".join("" if v is None else str(v) for v in (i.start, i.stop, i.step)))
        else:
            return None
    return ", ".join(parts) if parts else None

"""Lowering: the elementwise groups of an optimized program become loop nests.

A replay that calls NumPy once per primitive makes a pass over memory per
primitive. :func:`lower` finds the groups of steps that one loop nest can
compute instead, element by element, and replaces each by one step whose
primitive is a :class:`LoopNest`: a description of the loop (what it reads,
how it indexes each operand, the operations, what it writes and sums) that
an emitter (:mod:`dualad._program.executors.numba`) turns into a kernel.
What is not lowered (matrix products, decompositions, draws, anything
without a loop form) stays an ordinary step between the nests.

A group is a maximal set of steps that:

- are NumPy ufuncs of :data:`UFUNCS` (the entry's declared ``ufunc``) or ``where``, on
  the dtypes of :data:`DTYPES` and Python numbers, with results of one
  shape: the nest's iteration space. An operand of a smaller shape that
  broadcasts to it (a scalar, size-1 axes, fewer axes) is read at index 0
  along the broadcast axes;
- or are full sums (``sum`` over every axis, float32 or float64) of a value
  of the group, accumulated in the loop; where the emitter takes them (``partial_sums``),
  sums over some of its axes too, each added into an array of the axes kept;
- or are the transpose of two such slices of a 1-d array (``scatter_sum``:
  two values of the group added into a new array at ranges one apart, as
  ``x[1:]`` and ``x[:-1]`` make), written in the loop: each index gets the
  one value plus the other's of the previous iteration, carried;
- an operand that is a slice of unit steps (``x[1:]``, ``x[:-1]``,
  ``x[2:, :3]``) of an array is read from that array at an offset, so the
  slice itself is never made.

Steps join the group of their shape in program order; a group is closed
(its nest placed) when a step outside it reads one of its values, or when
a step of it would read one of its sums or scatters (known only at the
loop's end), or when it holds ``MAX_STEPS`` steps (Numba's compile time grows
faster than a kernel's length: a 60,000-step program of numbers, the
demo's RK4 ``jacfwd``, ran more than ten minutes as one). Every value of a
group read outside it, or returned, is an
output of the nest (an array it writes, the number it sums, the array it
scatters into); the others live only in registers. A group of fewer
than ``MIN_STEPS`` steps keeps its steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from dualad._base.backend import NUMPY_XP
from dualad._program.ir import Eqn, Guard, Step, ufunc_of
from dualad._program.passes.dce import eliminate_dead_code

__all__ = ["DTYPES", "MAX_STEPS", "MIN_STEPS", "UFUNCS", "Load", "LoopNest", "NotFinite", "Op", "lower",
           "size"]

MIN_STEPS = 2
MAX_STEPS = 1000

DTYPES = frozenset(np.dtype(t) for t in (np.float64, np.float32, np.int64, np.int32, np.bool_))

# The ufuncs a nest computes (and ``where``), and whether an emitter gives NumPy's numbers bit for bit
# (IEEE 754 rounds + - * / and sqrt exactly; the rest are exact by construction): the
# others (exp, sin, ...) come from the emitter's math library, within a few ulps of NumPy's.
UFUNCS = {
    **dict.fromkeys(("add", "subtract", "multiply", "divide", "negative", "square", "reciprocal",
                     "absolute", "sign", "sqrt", "maximum", "minimum", "floor", "ceil", "trunc",
                     "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
                     "logical_and", "logical_or", "logical_not", "isnan", "isinf", "isfinite",
                     "where"), True),
    **dict.fromkeys(("exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan",
                     "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
                     "arctanh", "arctan2", "hypot"), False),
}
_FLOATS = frozenset({np.dtype(np.float64), np.dtype(np.float32)})
# The ufuncs lowered on bool loops, and on integer ones; the rest on float loops only.
_BOOL_LOOPS = frozenset({"equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
                         "logical_and", "logical_or", "logical_not", "maximum", "minimum", "where"})
_INT_LOOPS = _BOOL_LOOPS | {"add", "subtract", "multiply", "negative", "square", "absolute", "sign"}


@dataclass(frozen=True)
class Load:
    """How a nest reads its operand: ``scalar`` (a number, read once), else an array whose
    axis ``j`` is indexed by loop index ``axes[j]`` (None: index 0, a broadcast axis) plus
    offset number ``offsets[j]`` of the nest's offsets (None: no offset). ``dtype`` is None
    for a Python number (NumPy casts it to the dtype of the operation). A number that is
    a constant of the program is ``value`` (``constant``), part of the nest, not an input
    of its step."""

    scalar: bool
    dtype: Any
    axes: tuple = ()
    offsets: tuple = ()
    constant: bool = False
    value: Any = None


@dataclass(frozen=True)
class Op:
    """``ufunc(*args)`` computed in dtype ``loop`` (operands cast to it, as NumPy's loop
    does), giving ``dtype``. An argument is ``("in", k)``, operand ``k`` of the nest, or
    ``("op", j)``, the value of op ``j``."""

    ufunc: str
    args: tuple
    loop: Any
    dtype: Any


class LoopNest(Step):
    """The primitive of a lowered group: one loop nest over ``shape``.

    The step reads its operands (``loads``, one per input slot), computes
    ``ops`` at each index, writes the values of ops ``stores`` into new
    arrays, adds the values of ``partials`` (``(op, summed axes, keepdims)``)
    into new arrays of the other axes (zeros first; with ``keepdims``, of size
    1 along the summed ones), sums the values of ops ``sums``, and scatters: ``(a, b, shift,
    start, length)`` is a new 1-d array of ``length`` whose entry
    ``start + q`` is op ``a``'s value at ``q`` plus op ``b``'s at ``q - 1``
    (shift 1; op ``a``'s at ``q - 1`` plus op ``b``'s at ``q`` for shift -1), each ``+ 0.0``
    where the other has none, zeros outside. Its outputs are the stored
    arrays, the partial sums' arrays, the sums, then the scattered arrays, each of the ``kinds``
    (type, dtype) of the value it replaces. ``offsets`` are the starts of
    the slices read at an offset. ``run(*operands)`` (what an emitter made
    of the nest) computes it.
    """

    name = "loop"
    multiple_results = True
    new_array = True  # what it returns is its own: a reader of a buffer keeps no view of it

    def __init__(self, shape: tuple, loads: tuple, ops: tuple, stores: tuple, sums: tuple,
                 scatters: tuple, kinds: tuple, offsets: tuple, partials: tuple = ()):
        self.shape, self.loads, self.ops = shape, loads, ops
        self.stores, self.sums, self.scatters = stores, sums, scatters
        self.partials = partials
        self.kinds, self.offsets = kinds, offsets
        self.run: Callable | None = None

    def __repr__(self) -> str:
        return f"LoopNest({list(self.shape)}: {' '.join(op.ufunc for op in self.ops)})"

    def impl(self, xp: Any, *operands: Any) -> tuple:
        return self.run(*operands)

    def format(self, names: list, params: dict) -> str:
        ops = " ".join(op.ufunc for op in self.ops)
        partly = f", {len(self.partials)} summed along axes" if self.partials else ""
        return (f"loop{list(self.shape)}({', '.join(names)}; {ops}; "
                f"{len(self.stores)} stored{partly}, {len(self.sums)} summed, "
                f"{len(self.scatters)} scattered)")

    def partial_shape(self, r: int) -> tuple:
        """The shape of partial sum ``r``'s array."""
        _, axes, keepdims = self.partials[r]
        return tuple(1 if a in axes else n for a, n in enumerate(self.shape)
                     if keepdims or a not in axes)


class NotFinite(Exception):
    """Raised by a nest's ``run`` that checks its results (a kernel of few iterations)
    and found one not finite: the program is then replayed by its NumPy calls instead
    (``Program.rerun_by``), whose warnings and ``np.errstate`` are NumPy's."""


class _Group:
    """Steps of one iteration space, joined in program order until a reader outside closes it."""

    def __init__(self, shape: tuple):
        # late: the results the loop completes at its end (sums, scatters)
        self.shape, self.steps, self.late, self.open = shape, [], set(), True


def lower(program: Any, emit: Callable, keep: Callable | None = None,
          screen: Callable | None = None, partial_sums: bool = False) -> Any:
    """``program`` with each group of its steps (see the module's docstring) as one
    :class:`LoopNest` step, whose ``run`` is ``emit(nest)``, where the group has
    ``MIN_STEPS`` steps and ``keep(nest)`` (if given) holds; ``program`` itself where
    no group is lowered. ``screen(shape, steps)``, if given, is False for a group of
    ``steps`` steps over ``shape`` whose nest ``keep`` could not hold: its nest is not
    built (on ADBench's LSTM, 763 small nests built to be refused were half of the
    first call). ``partial_sums``: the emitter writes a nest's sums over some of its axes
    (:attr:`LoopNest.partials`).

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> f = dualad.compile(lambda x: np.sum((x[1:] - x[:-1] ** 2) ** 2), executor="numpy")
    >>> p = lower(f.program(np.ones(5)), emit=lambda nest: None)
    >>> [e.prim for e in p.eqns]
    [LoopNest([4]: square subtract square)]
    >>> p.eqns[0].prim.offsets, len(p.eqns[0].prim.sums)  # x[1:] read at offset 1, and one sum
    ((1,), 1)
    """
    steps = program.steps
    views: dict[int, tuple] = {}   # slot -> (array slot, starts) of a slice of unit steps
    owner: dict[int, _Group] = {}  # slot -> the group whose step computes it
    groups: dict[tuple, _Group] = {}  # shape -> its open group
    placed: list = []              # steps and groups, in the order they run

    def close(group: _Group) -> None:
        if group.open:
            group.open = False
            del groups[group.shape]
            placed.append(group)

    for step in steps:
        if type(step) is Eqn and (view := _view(program, step)) is not None:
            base, starts = view
            if base in views:  # a slice of a slice: one offset
                base, first = views[base]
                starts = tuple(a + b for a, b in zip(first, starts + (0,) * (len(first) - len(starts))))
            views[step.outs[0]] = (base, starts)
        reads = (step.slot,) if type(step) is Guard else step.ins
        shape = _map_shape(program, step)
        ending = _ending(program, step, owner, partial_sums)
        if shape is not None:
            for s in reads:
                group = owner.get(s)
                if group is not None and (group.shape != shape or s in group.late):
                    close(group)
            group = groups.get(shape)
            if group is None:
                group = groups[shape] = _Group(shape)
        elif ending is not None:
            group = ending
            group.late.add(step.outs[0])
        else:
            for s in reads:
                if s in owner:
                    close(owner[s])
            placed.append(step)
            continue
        group.steps.append(step)
        owner[step.outs[0]] = group
        if len(group.steps) >= MAX_STEPS:
            close(group)
    for group in list(groups.values()):
        close(group)

    if not any(type(g) is _Group and len(g.steps) >= MIN_STEPS for g in placed):
        return program
    read_by: dict[int, set] = {}  # slot -> ids of the steps that read it
    for step in steps:
        for s in ((step.slot,) if type(step) is Guard else step.ins):
            read_by.setdefault(s, set()).add(id(step))
    out_steps, lowered = [], False
    for item in placed:
        if type(item) is not _Group:
            out_steps.append(item)
            continue
        wanted = len(item.steps) >= MIN_STEPS and (screen is None or screen(item.shape, len(item.steps)))
        step = _nest(program, item, views, read_by) if wanted else None
        if step is None or (keep is not None and not keep(step.prim)):
            out_steps.extend(item.steps)
            continue
        step.prim.run, lowered = emit(step.prim), True
        out_steps.append(step)
    return eliminate_dead_code(program.with_steps(out_steps)) if lowered else program


def _nest(program: Any, group: _Group, views: dict, read_by: dict) -> Eqn:
    """The step of one loop nest computing ``group``."""
    avals, consts, outputs = program.avals, program.consts, set(program.outputs)
    ids = {id(step) for step in group.steps}
    ndim = len(group.shape)
    ops, refs, ins, loads, offsets = [], {}, [], [], []
    operands: dict[tuple, int] = {}  # (array slot, starts, shape seen) -> operand number

    def operand(s: int) -> tuple:
        base, starts = views.get(s, (s, ()))
        key = (base, starts, avals[s][1])
        if key not in operands:
            operands[key] = len(loads)
            loads.append(_load(avals, consts, base, avals[s][1], starts, ndim, offsets))
            if not loads[-1].constant:
                ins.append(base)
        return ("in", operands[key])

    stores, sums, partials, scatters, outs = [], [], [], [], []
    partial_outs, sum_outs, scatter_outs = [], [], []  # the late outputs, in the nest's order
    for step in group.steps:
        out = step.outs[0]
        if out in group.late and step.prim.lowering == "sum":
            axes = _summed_axes(program, step)
            if axes is None:
                sums.append(refs[step.ins[0]][1])
            else:
                partials.append((refs[step.ins[0]][1], axes, bool(step.params.get("keepdims"))))
            (sum_outs if axes is None else partial_outs).append(out)
            continue
        if out in group.late:
            (i, _), (k, _) = step.params["ranges"]
            scatters.append((refs[step.ins[0]][1], refs[step.ins[1]][1], k - i, min(i, k),
                             step.params["shape"][0]))
            scatter_outs.append(out)
            continue
        args = tuple(refs[s] if s in refs else operand(s) for s in step.ins)
        refs[out] = ("op", len(ops))
        ops.append(Op(_op_name(step), args, _loop_dtype(program, step), avals[out][2]))
        if out in outputs or not read_by.get(out, set()) <= ids:
            stores.append(len(ops) - 1)
            outs.append(out)
    outs += partial_outs + sum_outs + scatter_outs
    nest = LoopNest(group.shape, tuple(loads), tuple(ops), tuple(stores), tuple(sums), tuple(scatters),
                    tuple((avals[s][0], np.dtype(avals[s][2])) for s in outs), tuple(offsets),
                    tuple(partials))
    return Eqn(nest, {}, tuple(ins), tuple(outs), NUMPY_XP)


def _load(avals: dict, consts: dict, slot: int, shape: tuple, starts: tuple, ndim: int,
          offsets: list) -> Load:
    """How a nest of ``ndim`` axes reads ``slot`` (seen at ``starts`` as an array of
    ``shape``); the nonzero starts go into ``offsets``."""
    kind, _, dtype = avals.get(slot, (type(consts.get(slot)), (), None))
    if kind is not np.ndarray:
        dtype = None if kind in (bool, int, float) else np.dtype(dtype)
        return Load(True, dtype, constant=slot in consts, value=consts.get(slot))
    lead = ndim - len(shape)
    axes = tuple(None if n == 1 else lead + j for j, n in enumerate(shape))
    starts = starts + (0,) * (len(shape) - len(starts))
    numbers = []
    for start in starts:
        numbers.append(len(offsets) if start else None)
        if start:
            offsets.append(start)
    return Load(False, np.dtype(dtype), axes, tuple(numbers))


def _op_name(step: Eqn) -> str | None:
    """The name of ``step`` among :data:`UFUNCS` (its NumPy ufunc's, or ``where``), or None."""
    if step.prim.lowering == "where" and step.xp is NUMPY_XP and not step.params:
        return "where"
    ufunc = ufunc_of(step)
    return ufunc.__name__ if isinstance(ufunc, np.ufunc) and ufunc.__name__ in UFUNCS else None


def _map_shape(program: Any, step: Any) -> tuple | None:
    """The result's shape where ``step`` is a ufunc a nest computes, else None."""
    if type(step) is not Eqn or len(step.outs) != 1:
        return None
    name = _op_name(step)
    if name is None:
        return None
    kind, shape, dtype = program.avals.get(step.outs[0], (None, None, None))
    if kind is None or np.dtype(dtype) not in DTYPES:
        return None
    if not (kind is np.ndarray or (issubclass(kind, np.generic) and shape == ())):
        return None
    if all(_operand_ok(program, s) for s in step.ins):
        loop = _loop_dtype(program, step)
        if loop in _FLOATS or (loop == np.bool_ and name in _BOOL_LOOPS) or (
                loop in DTYPES and loop != np.bool_ and name in _INT_LOOPS):
            return tuple(shape)
    return None


def _operand_ok(program: Any, slot: int) -> bool:
    if slot in program.consts and type(program.consts[slot]) in (bool, int, float):
        value = program.consts[slot]
        return type(value) is not int or -2 ** 63 <= value < 2 ** 63
    kind, _, dtype = program.avals.get(slot, (None, None, None))
    return (kind is np.ndarray or (kind is not None and issubclass(kind, np.generic))) and \
        np.dtype(dtype) in DTYPES


def _loop_dtype(program: Any, step: Eqn) -> np.dtype:
    """The dtype NumPy computes ``step`` in: its result's, or, for a comparison or a
    logical ufunc (a bool result), the operands' common dtype (a Python number weakly).
    (``where`` casts its condition to bool, its two values to its result's dtype.)"""
    dtype = np.dtype(program.avals[step.outs[0]][2])
    if dtype != np.bool_ or step.prim.lowering == "where":
        return dtype
    operands = [program.consts[s] if s in program.consts and type(program.consts[s]) in (bool, int, float)
                else np.dtype(program.avals[s][2]) for s in step.ins]
    return np.result_type(*operands)


def _ending(program: Any, step: Any, owner: dict, partial_sums: bool = False) -> _Group | None:
    """The open group ``step`` ends in, where it is a full sum or a scatter of its values
    (see :func:`_full_sum`, :func:`_scatter`), or, with ``partial_sums``, a sum over some
    of their axes (:func:`_summed_axes`), else None."""
    if not (_full_sum(program, step) or _scatter(program, step)
            or (partial_sums and _summed_axes(program, step) is not None)):
        return None
    group = owner.get(step.ins[0])
    if group is None or not group.open or any(owner.get(s) is not group or s in group.late
                                               for s in step.ins):
        return None
    return group


def _scatter(program: Any, step: Any) -> bool:
    """Whether ``step`` adds two 1-d values of one length into a new float array at ranges
    one apart (the two scatters' sum of :mod:`dualad._program.passes.simplify`)."""
    if type(step) is not Eqn or step.prim.lowering != "scatter" or step.xp is not NUMPY_XP:
        return False
    (i, j), (k, m) = step.params["ranges"]
    a, b = (program.avals.get(s, (None, None, None)) for s in step.ins)
    out = program.avals.get(step.outs[0], (None, None, None))
    return (j - i == m - k and abs(k - i) == 1 and a[1] == b[1] == (j - i,) and a[2] == b[2] == out[2]
            and np.dtype(out[2]) in _FLOATS and len(step.params["shape"]) == 1)


def _summed_axes(program: Any, step: Any) -> tuple | None:
    """The axes (sorted, nonnegative) ``step`` sums a float32 or float64 array over, where
    it is a sum that is no full sum (:func:`_full_sum`): over some axes, or over every
    axis keeping them; else None."""
    if type(step) is not Eqn or step.prim.lowering != "sum" or step.xp is not NUMPY_XP \
            or _full_sum(program, step) or not set(step.params) <= {"axis", "keepdims"}:
        return None
    kind, shape, dtype = program.avals.get(step.ins[0], (None, None, None))
    out = program.avals.get(step.outs[0], (None, None, None))
    if kind is not np.ndarray or np.dtype(dtype) not in _FLOATS or out[0] is not np.ndarray \
            or out[2] != dtype or not shape:
        return None
    axis = step.params.get("axis")
    axes = tuple(range(len(shape))) if axis is None else tuple(sorted({a % len(shape) for a in axis}))
    return axes or None


def _full_sum(program: Any, step: Any) -> bool:
    """Whether ``step`` sums a float32 or float64 array over every axis into a scalar."""
    if type(step) is not Eqn or step.prim.lowering != "sum" or step.xp is not NUMPY_XP:
        return False
    kind, shape, dtype = program.avals.get(step.ins[0], (None, None, None))
    out = program.avals.get(step.outs[0], (None, None, None))
    if kind is None or np.dtype(dtype) not in _FLOATS or out[2] != dtype or out[1] != ():
        return False
    axis = step.params.get("axis")
    every = axis is None or sorted(a % len(shape) for a in axis) == list(range(len(shape)))
    return every and not step.params.get("keepdims", False) and set(step.params) <= {"axis", "keepdims"}


def _view(program: Any, step: Eqn) -> tuple | None:
    """``(array slot, starts)`` where ``step`` takes a slice of unit steps of a NumPy
    array (a view a nest can read at an offset), else None."""
    if step.prim.lowering != "view" or step.xp is not NUMPY_XP or set(step.params) != {"idx"}:
        return None
    kind, shape, _ = program.avals.get(step.ins[0], (None, None, None))
    idx = step.params["idx"]
    if kind is not np.ndarray or type(idx) is not tuple or len(idx) > len(shape):
        return None
    starts = []
    for i, n in zip(idx, shape):
        if type(i) is not slice:
            return None
        start, _, stride = i.indices(n)
        if stride != 1:
            return None
        starts.append(start)
    return step.ins[0], tuple(starts)


def size(nest: LoopNest) -> int:
    """The number of iterations of ``nest``."""
    return math.prod(nest.shape)

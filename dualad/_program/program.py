"""``Program``: a traced list of primitive applications and guards, its passes, and its replay.

A program is what :func:`dualad.compile` keeps from one trace: numbered
slots (inputs first, then constants and results in the order they were
met), a list of steps (an :class:`~dualad._staging.trace.Eqn` per primitive
applied, a :class:`~dualad._staging.trace.Guard` per Python decision), and the
slots of the outputs. It prints as Python source with NumPy-like calls and
draws as Graphviz DOT; :func:`eliminate_common_subexpressions` and
:func:`eliminate_dead_code` are its passes, run in that order.

Replay runs straight-line Python generated once per program (one local per
slot, one ``impl`` call per primitive, one comparison per guard), so a
replay costs a function call per primitive and nothing else: no ``bind``,
no value types, no user Python. A program of float64 scalars replays as
Python on floats instead (:mod:`dualad._program.executors.scalar`).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from dualad._base.core import bind
from dualad._base.shapes import dtype_of, shape_of
from dualad._program.executors.scalar import scalar_executor
from dualad._program.passes.memory import plan, ufunc_of
from dualad._staging.trace import GUARDS, Eqn, Guard, GuardMiss

__all__ = ["GuardMiss", "Program", "apply_step", "eliminate_common_subexpressions", "eliminate_dead_code",
           "reading"]


class Program:
    """A traced program of primitives: ``str(p)`` is its source, ``p.to_dot()`` its graph.

    Attributes
    ----------
    n_inputs : int
        Slots ``0 .. n_inputs - 1`` are the array inputs, in the order of the
        flattened arguments.
    consts : dict
        Slot -> constant value (arrays and numbers not computed from inputs).
    steps : list
        ``Eqn`` (a primitive applied) and ``Guard`` (a Python decision) in order.
    outputs : list of int
        The slots of the output leaves.
    avals : dict
        Slot -> ``(type, shape, dtype)`` of its value in the trace (every
        replay's are the same: shapes and dtypes key the programs). Passes
        read it to keep a rewrite from changing a result's shape or dtype.

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> f = dualad.compile(lambda x: np.sin(x) * 2.0)
    >>> print(f.program(np.zeros(3)))
    def program(x0):
        t1 = np.sin(x0)
        t3 = np.multiply(t1, 2.0)
        return t3
    """

    def __init__(self, n_inputs: int, consts: dict, steps: list, outputs: list,
                 rebuild: Callable | None = None, avals: dict | None = None):
        self.n_inputs, self.consts, self.steps, self.outputs = n_inputs, consts, steps, outputs
        self.rebuild = rebuild
        self.avals = {} if avals is None else avals
        self.guards = [s for s in steps if type(s) is Guard]
        self.outcomes = tuple(g.expected for g in self.guards)
        self._replay = None

    @property
    def eqns(self) -> list:
        """The primitive applications, without the guards."""
        return [s for s in self.steps if type(s) is Eqn]

    def __len__(self) -> int:
        return len(self.steps)

    def eliminate_dead_code(self) -> "Program":
        """This program without the primitives no output or guard depends on
        (:func:`eliminate_dead_code`)."""
        return eliminate_dead_code(self)

    # -- reading -----------------------------------------------------------------
    def _name(self, slot: int) -> str:
        if slot < self.n_inputs:
            return f"x{slot}"
        if slot in self.consts:
            value = self.consts[slot]
            if _inline(value):
                return repr(value)
            return f"c{slot}"
        return f"t{slot}"

    def __str__(self) -> str:
        lines = []
        for slot, value in self.consts.items():
            if not _inline(value):
                lines.append(f"# c{slot}: {_describe(value)}")
        memory = plan(self)
        for b, (shape, dtype) in enumerate(memory.buffers):
            lines.append(f"# b{b}: {dtype}{list(shape)}, a buffer kept between replays")
        args = ", ".join(f"x{i}" for i in range(self.n_inputs))
        lines.append(f"def program({args}):")
        guards = 0  # the guards printed so far: the number of the next one
        for step in self.steps:
            if type(step) is Guard:
                lines.append(f"    assert {step.kind}({self._name(step.slot)}) == {step.expected!r}"
                             f", 'guard {guards}'")
                guards += 1
                continue
            outs = ", ".join(f"t{s}" for s in step.outs)
            if step.prim.format is not None:  # a draw (x1.normal(size=(3,))) or a fused kernel
                call = step.prim.format([self._name(s) for s in step.ins], step.params)
                if step.outs[0] in memory.slots:
                    call = f"{call[:-1]}, out=b{memory.slots[step.outs[0]]})"
                lines.append(f"    {outs} = {call}")
                continue
            call = ", ".join([self._name(s) for s in step.ins] +
                             [f"{k}={v!r}" for k, v in step.params.items()])
            if step.outs[0] in memory.slots:
                call += f", out=b{memory.slots[step.outs[0]]}"
            lines.append(f"    {outs} = np.{step.prim.name}({call})")
        ret = ", ".join(self._name(s) for s in self.outputs)
        lines.append(f"    return {ret}" if len(self.outputs) == 1 else f"    return ({ret})")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"<Program: {self.n_inputs} inputs, {len(self.eqns)} primitives, "
                f"{len(self.guards)} guards, {len(self.outputs)} outputs>")

    def to_dot(self) -> str:
        """The program as Graphviz DOT text: a node per input, constant, primitive and guard."""
        lines = ["digraph program {", "  rankdir=TB;", '  node [fontname="monospace"];']
        for i in range(self.n_inputs):
            lines.append(f'  s{i} [label="x{i}", shape=invhouse];')
        used = {s for step in self.eqns for s in step.ins} | set(self.outputs)
        for slot, value in self.consts.items():
            if slot in used:
                label = repr(value) if _inline(value) else f"c{slot}: {_describe(value)}"
                lines.append(f'  s{slot} [label="{_dot_escape(label)}", shape=note];')
        made = {}
        for n, step in enumerate(self.steps):
            if type(step) is Guard:
                label = f"{step.kind}(...) == {step.expected!r}"
                lines.append(f'  g{n} [label="{_dot_escape(label)}", shape=diamond];')
                lines.append(f"  {made.get(step.slot, f's{step.slot}')} -> g{n};")
                continue
            outs = ", ".join(f"t{s}" for s in step.outs)
            lines.append(f'  e{n} [label="{outs} = {step.prim.name}", shape=box];')
            for s in step.ins:
                lines.append(f"  {made.get(s, f's{s}')} -> e{n};")
            for s in step.outs:
                made[s] = f"e{n}"
        for k, s in enumerate(self.outputs):
            lines.append(f'  out{k} [label="output {k}", shape=house];')
            lines.append(f"  {made.get(s, f's{s}')} -> out{k};")
        lines.append("}")
        return "\n".join(lines)

    # -- replay ------------------------------------------------------------------
    def replay(self, inputs: list) -> Any:
        """The output leaves for ``inputs`` (a list of raw arrays), or a ``GuardMiss``."""
        run = self._replay
        if run is None:
            run = _generate(self)
            run = self._replay = scalar_executor(self, run) or run
        return run(*inputs)


def _inline(value: Any) -> bool:
    return value is None or type(value) in (bool, int, float, complex, str)


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray) and value.size <= 4:
        return f"np.{value!r}" if not value.ndim else f"np.{value!r}".replace("\n", " ")
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None:
        return f"{type(value).__name__} {dtype}{list(shape)}"
    return repr(value)


def _dot_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _generate(program: Program) -> Callable:
    """Straight-line Python for ``program``: ``run(*inputs)`` returns the output leaves
    (a list), or a ``GuardMiss`` at the first guard whose outcome differs."""
    env: dict[str, Any] = {"_Miss": GuardMiss, "_bind": bind, "_copy": _copy}
    for slot, value in program.consts.items():
        env[f"c{slot}"] = value

    def name(slot):
        if slot < program.n_inputs:
            return f"x{slot}"
        return f"c{slot}" if slot in program.consts else f"t{slot}"

    args = ", ".join(f"x{i}" for i in range(program.n_inputs))
    body = []
    memory = plan(program)
    if memory.buffers:
        env["_buffers"] = memory.get
        body.append("_b = _buffers()")
    guard = 0
    for n, step in enumerate(program.steps):
        if type(step) is Guard:
            env[f"_g{n}"], env[f"_e{n}"] = GUARDS[step.kind], step.expected
            body.append(f"_o = _g{n}({name(step.slot)})")
            body.append(f"if _o != _e{n}: return _Miss({guard}, _o)")
            guard += 1
            continue
        operands = ", ".join(name(s) for s in step.ins)
        if step.outs[0] in memory.slots:  # a NumPy ufunc writing into its buffer
            env[f"_u{n}"] = ufunc_of(step)
            body.append(f"t{step.outs[0]} = _u{n}({operands}, out=_b[{memory.slots[step.outs[0]]}])")
            continue
        if step.params:
            env[f"_p{n}"] = step.params
            operands += (", " if operands else "") + f"**_p{n}"
        if step.xp is None:
            env[f"_f{n}"] = step.prim
            call = f"_bind(_f{n}{', ' if operands else ''}{operands})"
        else:
            env[f"_f{n}"], env[f"_xp{n}"] = step.prim.impl, step.xp
            call = f"_f{n}(_xp{n}{', ' if operands else ''}{operands})"
        outs = ", ".join(f"t{s}" for s in step.outs)
        body.append(f"{outs}{',' if len(step.outs) > 1 or step.prim.multiple_results else ''} = {call}")
    rets = [f"_copy(c{s})" if s in program.consts else name(s) for s in program.outputs]
    body.append(f"return [{', '.join(rets)}]")
    source = f"def run({args}):\n" + "\n".join("    " + line for line in body) + "\n"
    exec(compile(source, "<dualad program>", "exec"), env)  # noqa: S102 - our own generated code
    run = env["run"]
    run.source = source
    return run


def aval(value: Any) -> tuple:
    """``(type, shape, dtype)`` of a slot's value: what a rewrite must keep (a Generator
    input has neither shape nor dtype)."""
    if not hasattr(value, "dtype") and not isinstance(value, (bool, int, float, complex)):
        return type(value), None, None
    return type(value), shape_of(value), dtype_of(value)


def apply_step(step: Eqn, operands: list) -> tuple:
    """The outputs of ``step`` on values, as a replay computes them (see :func:`_generate`):
    a tuple, one value per output slot (passes that compute steps ahead of a replay)."""
    if step.xp is None:
        ans = bind(step.prim, *operands, **step.params)
    else:
        ans = step.prim.impl(step.xp, *operands, **step.params)
    return ans if step.prim.multiple_results else (ans,)


def _copy(value: Any) -> Any:
    """A constant output, copied when it is an array: the caller may write into it."""
    return value.copy() if isinstance(value, np.ndarray) else value


def eliminate_dead_code(program: Program) -> Program:
    """``program`` without the primitives no output (and no guard) depends on.

    Guards are kept, and with them what they read: they decide which
    program runs, so a replay that skipped one could be silently wrong.
    Steps with an effect (a random draw moves its Generator's stream) are
    kept too.
    Constants no kept step uses are dropped.

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> def f(x):
    ...     unused = np.exp(x)
    ...     return np.sin(x)
    >>> p = dualad.compile(f, optimize=False).program(np.zeros(2))
    >>> [e.prim.name for e in p.eqns], [e.prim.name for e in eliminate_dead_code(p).eqns]
    (['exp', 'sin'], ['sin'])
    """
    live = set(program.outputs)
    kept = []
    for step in reversed(program.steps):
        if type(step) is Guard:
            live.add(step.slot)
            kept.append(step)
        elif not live.isdisjoint(step.outs) or step.prim.effect:
            live.update(step.ins)
            kept.append(step)
    kept.reverse()
    consts = {s: v for s, v in program.consts.items() if s in live}
    return Program(program.n_inputs, consts, kept, list(program.outputs), program.rebuild,
                   program.avals)


def eliminate_common_subexpressions(program: Program) -> Program:
    """``program`` with each repeated primitive application computed once.

    Two steps are the same when they apply the same primitive, with the same
    namespace and parameters, to the same slots (after earlier repeats are
    replaced) or to constant numbers of the same type and value (passes make
    a new slot for each number they write: ``2.0 * x`` twice may read two).
    The later one's outputs then read the earlier one's. Steps whose
    parameters cannot be compared by value (arrays among them) are kept, and
    so is any step whose output is an output of the program (two outputs the
    caller may write into must not share memory), and any step with an
    effect (two draws are different numbers). The repeats left unused are
    removed by :func:`eliminate_dead_code`.

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> def f(x):
    ...     return np.sin(x) * np.sin(x)
    >>> p = dualad.compile(f, optimize=False).program(np.zeros(2))
    >>> [e.prim.name for e in p.eqns]
    ['sin', 'sin', 'multiply']
    >>> [e.prim.name for e in eliminate_dead_code(eliminate_common_subexpressions(p)).eqns]
    ['sin', 'multiply']
    """
    returned = set(program.outputs)
    same: dict[int, int] = {}  # slot -> the slot that already holds its value
    seen: dict[Any, tuple] = {}  # step key -> the outputs of its first occurrence
    steps = []
    for step in program.steps:
        step = reading(step, same)
        if type(step) is Guard:
            steps.append(step)
            continue
        key = _step_key(step, program.consts)
        first = seen.get(key) if key is not None else None
        if first is not None and not returned.intersection(step.outs):
            same.update(zip(step.outs, first))
            continue
        if key is not None:
            seen[key] = step.outs
        steps.append(step)
    return Program(program.n_inputs, program.consts, steps, list(program.outputs), program.rebuild,
                   program.avals)


def reading(step: Eqn | Guard, same: dict) -> Eqn | Guard:
    """``step`` reading slot ``same[s]`` wherever it reads a slot ``s`` of ``same``.

    ``step`` itself where it reads none of them: steps are never changed in
    place, so programs share them. Making a new step for every step was a
    third of common-subexpression elimination's time on the demo's RK4
    ``jacfwd`` program (2.3 us a step, 1.55 without).
    """
    if type(step) is Guard:
        slot = same.get(step.slot, step.slot)
        return step if slot == step.slot else Guard(slot, step.kind, step.expected)
    ins = tuple(map(same.get, step.ins, step.ins))
    return step if ins == step.ins else Eqn(step.prim, step.params, ins, step.outs, step.xp)


def _step_key(step: Eqn, consts: dict) -> Any:
    """What makes two steps the same computation, or None where the parameters
    cannot be hashed (arrays): such steps are kept."""
    if step.xp is None or step.prim.effect:  # two draws differ
        return None
    # a number by its type and repr: 1 != 1.0, and -0.0 and 0.0 (equal, and of one hash) differ
    ins = tuple((type(consts[s]), repr(consts[s])) if s in consts and _inline(consts[s]) else s
                for s in step.ins)
    try:
        params = tuple(sorted((k, type(v), _hashable(v)) for k, v in step.params.items())) \
            if step.params else ()  # 1 != 1.0
        key = (step.prim, id(step.xp), ins, params)
        hash(key)
    except TypeError:
        return None
    return key


def _hashable(value: Any) -> Any:
    """``value`` with slices (unhashable before Python 3.12) as tuples, in tuples too."""
    if type(value) is slice:
        return (slice, value.start, value.stop, value.step)
    if type(value) is tuple:
        return tuple(_hashable(v) for v in value)
    return value

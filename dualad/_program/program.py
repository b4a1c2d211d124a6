"""``Program``: a traced list of primitive applications and guards, as data.

A program is what :func:`dualad.compile` keeps from one trace: numbered
slots (inputs first, then constants and results in the order they were
met), a list of steps (an :class:`~dualad._program.ir.Eqn` per primitive
applied, a :class:`~dualad._program.ir.Guard` per Python decision), and the
slots of the outputs. It prints as Python source with NumPy-like calls and
draws as Graphviz DOT. Passes (``dualad._program.passes``) make new programs
from it with :meth:`Program.with_steps`.

A program knows nothing of what runs it: its replay is chosen and made by
:mod:`dualad._program.executors.replay` (the generated NumPy calls, or, for a
program of float64 scalars, Python on floats), or by the executors that compile
chooses.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from dualad._program.ir import Eqn, Guard, inline
from dualad._program.passes.memory import plan

__all__ = ["Program"]


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
        # the program whose replay stands in for this one's where a kernel of it finds a
        # result that is not finite (NotFinite): its unlowered NumPy calls
        self.rerun_by: Program | None = None

    def with_steps(self, steps: list, *, consts: dict | None = None, outputs: list | None = None,
                   n_inputs: int | None = None, avals: dict | None = None) -> "Program":
        """A new program of ``steps`` with this one's inputs, constants, outputs, rebuild and
        avals, except those given: what a pass returns.

        Examples
        --------
        >>> import numpy as np
        >>> import dualad
        >>> p = dualad.compile(lambda x: np.sin(x) * 2.0).program(np.zeros(3))
        >>> len(p.with_steps(p.steps[:1], outputs=[p.steps[0].outs[0]]).eqns)
        1
        """
        return Program(self.n_inputs if n_inputs is None else n_inputs,
                       self.consts if consts is None else consts, steps,
                       list(self.outputs if outputs is None else outputs), self.rebuild,
                       self.avals if avals is None else avals)

    @property
    def eqns(self) -> list:
        """The primitive applications, without the guards."""
        return [s for s in self.steps if type(s) is Eqn]

    def last_readers(self) -> dict:
        """Slot -> the index of the last step that reads it (past the end for an output).

        Examples
        --------
        >>> import numpy as np
        >>> import dualad
        >>> p = dualad.compile(lambda x: np.sin(x) * 2.0).program(np.zeros(3))
        >>> p.last_readers()[0], p.last_readers()[p.outputs[0]] == len(p.steps)
        (0, True)
        """
        last = {}
        for n, step in enumerate(self.steps):
            for s in ((step.slot,) if type(step) is Guard else step.ins):
                last[s] = n
        last.update(dict.fromkeys(self.outputs, len(self.steps)))
        return last

    def free_slot(self) -> int:
        """A slot above every input, constant and value of this program: the first a pass may
        number a value it adds with.

        Examples
        --------
        >>> import numpy as np
        >>> import dualad
        >>> p = dualad.compile(lambda x: np.sin(x) * 2.0).program(np.zeros(3))
        >>> p.free_slot() > max(p.outputs)
        True
        """
        return 1 + max([self.n_inputs, *self.avals, *self.consts])

    def __len__(self) -> int:
        return len(self.steps)

    # -- reading -----------------------------------------------------------------
    def _name(self, slot: int) -> str:
        if slot < self.n_inputs:
            return f"x{slot}"
        if slot in self.consts:
            value = self.consts[slot]
            if inline(value):
                return repr(value)
            return f"c{slot}"
        return f"t{slot}"

    def __str__(self) -> str:
        lines = []
        for slot, value in self.consts.items():
            if not inline(value):
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
                label = repr(value) if inline(value) else f"c{slot}: {_describe(value)}"
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



"""The ordinary executor: a program replayed as straight-line Python generated once.

One local per slot, one call per primitive (of the NumPy ufunc its entry
declares it equal to, writing into a buffer of the memory plan where it has
one; else of its ``impl``), one comparison per guard: a replay costs a
function call per primitive and nothing else (no ``bind``, no value types,
no user Python). Calling the ufunc itself saves the impl's frame: on ADBench's
LSTM objective (7,888 steps on vectors of 14) the replay went from 1.56x to
1.23x NumPy's own calls (benchmarks/README.md, "ADBench (issue 36)").
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from dualad._base.core import bind
from dualad._primitives.short_loops import paired, planned
from dualad._program.ir import GUARDS, Guard, GuardMiss, ufunc_of
from dualad._program.passes.memory import plan

__all__ = ["generate"]


def generate(program: Any) -> Callable:
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
        ufunc, buffer = ufunc_of(step), memory.slots.get(step.outs[0])
        # the ufunc itself, no impl's frame between, writing into its buffer where the plan
        # gave one (a fused kernel, which takes out= too, only there)
        if buffer is not None or (ufunc is not None and not step.prim.takes_out):
            env[f"_u{n}"] = _paired(ufunc) if _short_loops(program, step, ufunc) else ufunc
            out = "" if buffer is None else f", out=_b[{buffer}]"
            body.append(f"t{step.outs[0]} = _u{n}({operands}{out})")
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


_PAIRED = {np.add, np.subtract, np.multiply, np.divide}


def _short_loops(program: Any, step: Any, ufunc: Any) -> bool:
    """Whether ``step``, the binary arithmetic ``ufunc`` on NumPy arrays, is computed faster
    by :func:`~dualad._primitives.short_loops.paired` (a plan :func:`planned` finds for the
    shapes and dtypes of the trace)."""
    if ufunc not in _PAIRED or len(step.ins) != 2:
        return False
    x, y = (program.avals.get(slot) for slot in step.ins)
    return (x is not None and y is not None and x[0] is np.ndarray is y[0]
            and planned(x[1], x[2], y[1], y[2]) is not None)


def _paired(ufunc: Any) -> Any:
    def call(x, y, out=None):
        return paired(ufunc, x, y, out)
    return call


def _copy(value: Any) -> Any:
    """A constant output, copied when it is an array: the caller may write into it."""
    return value.copy() if isinstance(value, np.ndarray) else value

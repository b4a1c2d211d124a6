"""Elementwise fusion: a tree of elementwise steps becomes one numexpr kernel.

NumPy runs ``2.0 * (a - b * b)`` as three passes over memory, each writing a
temporary; numexpr evaluates the whole expression block by block in cache,
one pass. :func:`fuse_elementwise` replaces each tree of fusible steps of a
program by one step whose primitive is a :class:`Fused` kernel (compiled
once, when the program is made), where numexpr is installed (the ``fast``
extra); without it programs are left as they are.

Only what gives the same numbers as NumPy, bit for bit, is fused: the entries
that declare a ``scalar_form`` (``+``, ``-``, ``*``, ``/``, negation, squaring,
reciprocals and ``abs``: exactly rounded in both), on
float64 arrays of the result's shape (no broadcasting) and Python or
float64 scalar constants, for results of at least ``MIN_SIZE`` entries
(below it numexpr's call costs more than the passes it saves). A step is
inlined into its reader only where that reader is its one reader, so no
value is computed twice; a step read elsewhere, returned, or read by a
guard stays a result of its own. numexpr runs on its own threads
(``numexpr.set_num_threads``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dualad._base.backend import NUMPY_XP
from dualad._program.ir import Eqn, Guard, Step

try:
    import numexpr
except ImportError:  # the optional ``fast`` extra
    numexpr = None

__all__ = ["MIN_SIZE", "Fused", "available", "fuse_elementwise"]

MIN_SIZE = 1 << 18  # below it numexpr's call costs more than the passes it saves (benchmarks/README.md)

_F64 = np.dtype(np.float64)


def available() -> bool:
    """Whether numexpr is installed, so that programs can be fused."""
    return numexpr is not None


class Fused(Step):
    """The primitive of a fused step: ``expression`` over ``names`` (the step's inputs,
    float64 arrays), one numexpr kernel. Called with ``out=`` as a ufunc is."""

    name = "numexpr"
    takes_out = True

    def __init__(self, expression: str, names: tuple):
        self.expression, self.names = expression, names
        self._kernel = numexpr.NumExpr(expression, signature=[(n, np.float64) for n in names])

    def __repr__(self) -> str:
        return f"Fused({self.expression!r})"

    def __call__(self, *arrays: Any, out: Any = None) -> Any:
        return self._kernel(*arrays, out=out, order="K", casting="safe", ex_uses_vml=False)

    def impl(self, xp: Any, *arrays: Any) -> Any:
        return self(*arrays)

    def format(self, names: list, params: dict) -> str:
        pairs = ", ".join(f"{n}={v}" for n, v in zip(self.names, names))
        return f"numexpr({self.expression!r}, {pairs})"


def fuse_elementwise(program: Any) -> Any:
    """``program`` with each tree of fusible elementwise steps as one :class:`Fused` step
    (``program`` itself where numexpr is not installed or nothing is fusible).

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> p = dualad.compile(lambda x, y: np.sum(2.0 * (x - y * y) + 1.0), executor="numpy").program(
    ...     np.ones(MIN_SIZE), np.ones(MIN_SIZE))
    >>> [e.prim.name for e in fuse_elementwise(p).eqns] if available() else ['numexpr', 'sum']
    ['numexpr', 'sum']
    """
    if numexpr is None:
        return program
    steps = program.steps
    fusible = {step.outs[0]: step for step in steps if type(step) is Eqn and _fusible(program, step)}
    if not fusible:
        return program
    readers: dict[int, list] = {}  # slot -> the steps that read it
    for step in steps:
        for s in ((step.slot,) if type(step) is Guard else step.ins):
            readers.setdefault(s, []).append(step)
    outputs = set(program.outputs)

    def inlined(slot: int) -> bool:  # computed inside the kernel of its one reader
        read = readers.get(slot, ())
        return (slot in fusible and slot not in outputs and len(read) == 1
                and type(read[0]) is Eqn and read[0].outs[0] in fusible)

    out_steps = []
    for step in steps:
        if type(step) is Eqn and step.outs[0] in fusible:
            if inlined(step.outs[0]):
                continue  # written into the kernel of its reader
            if any(map(inlined, step.ins)):  # a tree of two steps or more: one kernel
                names: dict[int, str] = {}
                expression = _expression(program, step, fusible, inlined, names)
                kernel = Fused(expression, tuple(f"v{i}" for i in range(len(names))))
                step = Eqn(kernel, {}, tuple(names), step.outs, NUMPY_XP)
        out_steps.append(step)
    if len(out_steps) == len(steps):  # nothing inlined, so no kernel made
        return program
    return program.with_steps(out_steps)


def _fusible(program: Any, step: Eqn) -> bool:
    """Whether ``step`` declares its Python form on floats (``Primitive.declare``'s
    ``scalar_form``, which numexpr's syntax reads the same, bit for bit) at its
    parameters, on float64 arrays of one shape and at least :data:`MIN_SIZE` entries."""
    if step.xp is not NUMPY_XP or len(step.outs) != 1:
        return False
    if step.prim.scalar_form is None or step.params != step.prim.ufunc_params:
        return False
    kind, shape, dtype = program.avals.get(step.outs[0], (None, None, None))
    if kind is not np.ndarray or dtype != _F64 or not shape or math.prod(shape) < MIN_SIZE:
        return False
    for s in step.ins:
        if s in program.consts:
            c = program.consts[s]
            if not ((type(c) in (float, int) and math.isfinite(c))
                    or (isinstance(c, np.ndarray) and c.dtype == _F64 and c.shape == shape)):
                return False
        else:
            k, sh, dt = program.avals.get(s, (None, None, None))
            if k is not np.ndarray or sh != shape or dt != _F64:
                return False
    return True


def _expression(program: Any, step: Eqn, fusible: dict, inlined: Any, names: dict) -> str:
    """``step``'s tree in numexpr's syntax; ``names`` collects the array leaves (slot ->
    name) in order of first use."""
    def operand(s: int) -> str:
        if inlined(s):
            return _expression(program, fusible[s], fusible, inlined, names)
        value = program.consts.get(s)
        if type(value) in (float, int):
            return repr(float(value))
        if s not in names:
            names[s] = f"v{len(names)}"
        return names[s]

    return f"({step.prim.scalar_form.format(*(operand(s) for s in step.ins))})"

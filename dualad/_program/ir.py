"""The representation of a program: its steps and what they call.

A :class:`~dualad._program.program.Program` is a list of steps over numbered
slots: an :class:`Eqn` per primitive applied, a :class:`Guard` per Python
decision the trace met. A step's primitive is an entry of the table or one
of the program's own (:class:`Step`); both answer the same attributes, so
passes and executors read them and never ask which kind they hold:

``name``, ``multiple_results``, ``impl(xp, *args, **params)``
    as a table entry's.
``effect``
    True where a replay must make the call each time (a draw): dead-code
    elimination keeps it, CSE never merges it, constant folding never folds it.
``format(names, params)``
    the step as source for the printed program, or None: printed as a call of
    its impl.
``takes_out``
    the primitive itself is called with ``out=`` as a NumPy ufunc is (a fused
    kernel), so a replay may write its result into a buffer.
``ufunc``, ``ufunc_params``, ``scalar_form``, ``new_array``, ``simplifications``,
``broadcasts``, ``piecewise_linear``, ``moves_elements``, ``sparsity``,
``second_order``, ``taylor``, ``partition``, ``combine``, ``lowering``, ``records``, ``linear_args``
    as declared by a table entry (``Primitive.declare``): none here, unless a
    step says otherwise.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from dualad._base.backend import NUMPY_XP
from dualad._base.core import bind
from dualad._base.shapes import dtype_of, shape_of

__all__ = ["GUARDS", "Eqn", "Guard", "GuardMiss", "Step", "apply_step", "aval", "inline", "reading",
           "ufunc_of"]

# How a guard's outcome is computed from a value, by kind.
GUARDS = {
    "bool": bool, "float": float, "int": int, "index": operator.index, "complex": complex,
    "item": lambda v: v.item(), "tolist": lambda v: v.tolist(),
}


class Eqn:
    """One primitive application: ``outs = prim(*ins, **params)`` over slots.

    ``xp`` is the namespace its ``impl`` ran with (None: ``bind`` decides at
    replay, for the few calls ``bind`` converts first).
    """

    __slots__ = ("prim", "params", "ins", "outs", "xp")

    def __init__(self, prim: Any, params: dict, ins: tuple, outs: tuple, xp: Any):
        self.prim, self.params, self.ins, self.outs, self.xp = prim, params, ins, outs, xp

    def __repr__(self) -> str:
        return f"Eqn({self.prim.name}, ins={self.ins}, outs={self.outs})"


class Guard:
    """``GUARDS[kind](slot's value) == expected``, checked where the trace met it."""

    __slots__ = ("slot", "kind", "expected")

    def __init__(self, slot: int, kind: str, expected: Any):
        self.slot, self.kind, self.expected = slot, kind, expected

    def __repr__(self) -> str:
        return f"Guard({self.kind}(t{self.slot}) == {self.expected!r})"


class GuardMiss:
    """A replay stopped at guard ``index`` of its program, whose value gave ``outcome``."""

    __slots__ = ("index", "outcome")

    def __init__(self, index: int, outcome: Any):
        self.index, self.outcome = index, outcome


class Step:
    """Base of the program's own steps' primitives (see the module's docstring)."""

    name = "step"
    multiple_results = False
    effect = False
    format = None
    takes_out = False
    ufunc = None
    ufunc_params: dict = {}
    scalar_form = None
    new_array = False
    simplifications: tuple = ()
    broadcasts = False
    piecewise_linear = False
    moves_elements = False
    sparsity = None
    second_order = None
    taylor = None
    partition = None
    combine = None
    lowering = None
    records = True
    linear_args: tuple | None = ()

    def impl(self, xp: Any, *args: Any, **params: Any) -> Any:
        raise NotImplementedError


def aval(value: Any) -> tuple:
    """``(type, shape, dtype)`` of a slot's value: what a rewrite must keep (a Generator
    input has neither shape nor dtype)."""
    kind = type(value)
    if kind is np.ndarray or kind is np.float64:  # most of a trace's values: read directly
        return kind, value.shape, value.dtype
    if not hasattr(value, "dtype") and not isinstance(value, (bool, int, float, complex)):
        return kind, None, None
    return kind, shape_of(value), dtype_of(value)


def apply_step(step: Eqn, operands: list) -> tuple:
    """The outputs of ``step`` on values, as a replay computes them (see :func:`_generate`):
    a tuple, one value per output slot (passes that compute steps ahead of a replay)."""
    if step.xp is None:
        ans = bind(step.prim, *operands, **step.params)
    else:
        ans = step.prim.impl(step.xp, *operands, **step.params)
    return ans if step.prim.multiple_results else (ans,)


def reading(step: Eqn | Guard, same: dict) -> Eqn | Guard:
    """``step`` reading slot ``same[s]`` wherever it reads a slot ``s`` of ``same``.

    ``step`` itself where it reads none of them: steps are never changed in
    place, so programs share them, and common-subexpression elimination makes
    no step it does not change (benchmarks/README.md).
    """
    if type(step) is Guard:
        slot = same.get(step.slot, step.slot)
        return step if slot == step.slot else Guard(slot, step.kind, step.expected)
    ins = tuple(map(same.get, step.ins, step.ins))
    return step if ins == step.ins else Eqn(step.prim, step.params, ins, step.outs, step.xp)


def inline(value: Any) -> bool:
    """Whether a constant prints as itself in a program's source (a number, a string)."""
    return value is None or type(value) in (bool, int, float, complex, str)


def ufunc_of(step: Eqn) -> Any:
    """The NumPy ufunc that computes ``step`` as its implementation does (its primitive's
    declared ``ufunc``, at its ``ufunc_params``), a primitive that takes ``out=`` as a
    ufunc does (a numexpr kernel), or None."""
    if step.xp is not NUMPY_XP:
        return None
    prim = step.prim
    if prim.takes_out:
        return prim
    if prim.ufunc is not None and step.params == prim.ufunc_params:
        return getattr(np, prim.ufunc)
    return None

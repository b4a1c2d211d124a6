"""The primitive table and ``bind``, the one entry point every mode interprets.

A :class:`Primitive` is defined once: ``impl`` computes it on raw arrays and
its derivative is given in one of three forms (see :class:`Primitive`).
Value types (``Dual``, ``HyperDual``, ``reverse.Tensor``) subclass
:class:`Value`, carry a *level* and implement ``_process``. ``bind`` hands
each operation to the operand of the outermost level; that handler unwraps
its own operands and calls ``bind`` again on the parts, until raw arrays
reach ``impl``. Distinct levels keep nested derivatives from mixing their
perturbations.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any, Callable

from dualad._backend import NUMPY_ARRAY, NUMPY_FLOAT64, _np_xp, namespace_of, scalar_xp

__all__ = ["Primitive", "Value", "bind", "get_cut", "new_level", "set_cut"]


class Primitive:
    """One entry of the primitive table.

    Parameters
    ----------
    name : str
        The name used in errors, graphs and benchmarks.
    impl : callable
        ``impl(xp, *args, **params)`` on raw arrays of namespace ``xp``.
    kind : {"elementwise", "linear", "custom", "zero", "nondiff"}
        ``elementwise``: ``partials(ans, *args, **params)`` returns one local
        partial per argument (``None`` for no dependence); the JVP and VJP
        are both derived from it, so the modes cannot drift. ``linear``: the
        JVP applies the primitive to the tangents, ``transpose(g, *args,
        **params)`` gives the cotangents of the ``linear_args``. ``custom``:
        ``jvp(primals, tangents, ans, **params)`` and ``vjp(g, ans, *args,
        **params)`` side by side (``vjp`` may also be a tuple with one such
        function per input, returning that input's cotangent, so that
        cotangents nobody needs are not computed). ``zero``: a float output with zero
        derivative (floor, sign). ``nondiff``: a non-float output
        (comparisons), returned as a plain array.
    """

    __slots__ = ("name", "impl", "kind", "partials", "transpose", "jvp", "vjp",
                 "linear_args", "batch_params", "multiple_results", "saves",
                 "residual", "scalar_ok", "__weakref__")

    def __init__(self, name: str, impl: Callable, kind: str, *, partials=None,
                 transpose=None, jvp=None, vjp=None, linear_args=(0,),
                 batch_params=None, multiple_results=False, saves="all",
                 residual=None, scalar_ok=False):
        kinds = {"elementwise", "linear", "custom", "zero", "nondiff"}
        if kind not in kinds:
            raise ValueError(f"kind must be one of {sorted(kinds)}, got {kind!r}")
        self.name = name
        self.impl = impl
        self.kind = kind
        self.partials = partials
        self.transpose = transpose
        self.jvp = jvp
        self.vjp = vjp
        self.linear_args = linear_args
        self.batch_params = batch_params
        self.multiple_results = multiple_results
        # What the tape keeps for the VJP: "all" (inputs and output), "inputs",
        # "output" or "none"; ``residual(ans, *args, **params)`` replaces them
        # with something smaller (a mask, shapes) computed at record time.
        self.saves = saves
        self.residual = residual
        self.scalar_ok = scalar_ok or kind in ("elementwise", "zero", "nondiff")
        REGISTRY[name] = self

    def __repr__(self) -> str:
        return f"Primitive({self.name!r}, kind={self.kind!r})"


REGISTRY: dict[str, Primitive] = {}


class Value:
    """Base of the value types; ``_level`` orders nested transformations."""

    __slots__ = ("_level",)

    def _process(self, prim: Primitive, args: tuple, params: dict) -> Any:
        raise NotImplementedError

    def _strip(self) -> Any:
        """This value without its own perturbation (its primal part)."""
        raise NotImplementedError

    def _constant(self, out: Any) -> Any:
        """How a result computed with this value's derivative cut is returned."""
        return out


# Levels 0-2 are the shared levels of directly constructed Tensor, Dual and
# HyperDual values; every transform, and every value wrapped around values
# that already carry a level, takes a fresh one above all existing levels.
_levels = itertools.count(3)


def new_level() -> int:
    """A level above every level handed out so far."""
    return next(_levels)


def level_of(x: Any) -> int:
    return x._level if isinstance(x, Value) else -1


class _ThreadState(threading.local):
    cut = 0  # values with a level below ``cut`` are treated as constants


_state = _ThreadState()


def get_cut() -> int:
    """Values of a level below this are constants in this thread (0: none are)."""
    return _state.cut


def set_cut(level: int) -> None:
    _state.cut = level


def strip(x: Any, cut: int) -> Any:
    while isinstance(x, Value) and x._level < cut:
        x = x._strip()
    return x


def bind(prim: Primitive, *args: Any, **params: Any) -> Any:
    """Apply ``prim`` to ``args``, dispatching to the outermost value type."""
    any_array = False
    for a in args:  # NumPy arrays and Python numbers only (the most common calls): straight to impl
        kind = type(a)
        if kind is NUMPY_ARRAY or kind is NUMPY_FLOAT64:
            any_array = True
        elif kind is not float and kind is not int:
            break
    else:
        if any_array:
            return prim.impl(_np_xp, *args, **params)
        if prim.scalar_ok:
            return prim.impl(scalar_xp, *args, **params)
    top = None
    top_level = -1
    for a in args:
        if isinstance(a, Value) and a._level > top_level:
            top, top_level = a, a._level
    if top is not None:
        cut = _state.cut
        if top_level >= cut:
            return top._process(prim, args, params)
        if cut:
            return top._constant(bind(prim, *[strip(a, cut) for a in args], **params))
    xp = namespace_of(args)
    if xp is scalar_xp and not prim.scalar_ok:
        xp = _np_xp
        args = tuple(_np_xp.asarray(a) if type(a) in (int, float) else a for a in args)
    return prim.impl(xp, *args, **params)

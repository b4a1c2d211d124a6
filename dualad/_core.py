"""``bind``, the one entry point every mode interprets, and levels.

A primitive (an entry of the table, :mod:`dualad._table`) is applied with
``bind(prim, *args, **params)``. Value types (``Dual``, ``HyperDual``, ``reverse.Tensor``) subclass
:class:`Value`, carry a *level* and implement ``_process``. ``bind`` hands
each operation to the operand of the outermost level; that handler unwraps
its own operands and calls ``bind`` again on the parts, until raw arrays
reach ``impl``. Distinct levels keep nested derivatives from mixing their
perturbations. A transform's level closes when the transform returns; a
value of a closed level that is used again escaped its transform, and
``bind`` raises :class:`EscapedValueError` rather than mix its stale
derivative into a later result.
"""

from __future__ import annotations

import itertools
import threading
from contextlib import contextmanager
from typing import Any, Iterator

from dualad._backend import NUMPY_ARRAY, NUMPY_FLOAT64, _np_xp, namespace_of, scalar_xp

__all__ = ["EscapedValueError", "Level", "Value", "bind", "get_cut", "new_level", "set_cut",
           "transform_level"]


class Value:
    """Base of the value types; ``_level`` orders nested transformations."""

    __slots__ = ("_level",)

    def _process(self, prim: Any, args: tuple, params: dict) -> Any:
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
    """A level above every level handed out so far, open for good (a value type
    wrapped around another, or a rule's own inner levels)."""
    return next(_levels)


class Level(int):
    """The level of one run of a transform (``jvp``, ``reverse.vjp``): an int
    above every level so far that knows its transform's ``name`` and whether
    that run is ``closed``. A plain ``int`` subclass, so levels compare as before.
    """

    def __new__(cls, name: str) -> "Level":
        level = super().__new__(cls, next(_levels))
        level.name, level.closed = name, False
        return level

    @contextmanager
    def reopened(self) -> Iterator["Level"]:
        """Open while the transform works on its own values again (``vjp``'s
        returned function walking the tape it recorded)."""
        closed, self.closed = self.closed, False
        try:
            yield self
        finally:
            self.closed = closed


@contextmanager
def transform_level(name: str) -> Iterator[Level]:
    """A fresh :class:`Level` for one run of the transform ``name``, closed on exit."""
    level = Level(name)
    try:
        yield level
    finally:
        level.closed = True


class EscapedValueError(RuntimeError):
    """A value that carries a derivative was used after its transform returned
    (as JAX's ``UnexpectedTracerError``)."""


def _escaped(value: Any, level: Level) -> EscapedValueError:
    kind = type(value).__name__
    return EscapedValueError(
        f"a {kind} made inside {level.name} was used after that transform returned: it escaped the "
        f"function being differentiated (kept in a list, a global or an attribute), and its "
        f"derivative belonged to that call. Return it from the function instead, or keep only its "
        f"value (ops.stop_gradient inside the function).")


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


def bind(prim: Any, *args: Any, **params: Any) -> Any:
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
    top_level = -2  # a value of level -1 (a buffer of raw numbers) is stripped below
    for a in args:
        if isinstance(a, Value) and a._level > top_level:
            top, top_level = a, a._level
    if top is not None:
        cut = _state.cut
        if top_level >= cut:
            if type(top_level) is Level and top_level.closed:
                raise _escaped(top, top_level)
            return top._process(prim, args, params)
        if cut or top_level < 0:
            return top._constant(bind(prim, *[strip(a, max(cut, 0)) for a in args], **params))
    xp = namespace_of(args)
    if xp is scalar_xp and not prim.scalar_ok:
        xp = _np_xp
        args = tuple(_np_xp.asarray(a) if type(a) in (int, float) else a for a in args)
    return prim.impl(xp, *args, **params)

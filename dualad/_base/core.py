"""``bind``, the one entry point every mode interprets, and levels.

A primitive (an entry of the table, :mod:`dualad._table.entries`) is applied with
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
from typing import Any

from dualad._base.backend import NUMPY_ARRAY, NUMPY_FLOAT64, NUMPY_XP, namespace_of, scalar_xp

__all__ = ["EscapedValueError", "Value", "bind", "get_cut", "is_closed", "new_level", "set_cut",
           "transform_level"]


class Value:
    """Base of the value types; ``_level`` orders nested transformations."""

    __slots__ = ("_level",)
    carries_derivative = True  # False for a value that batches (vmap) or stages (compile): a cut keeps it
    batches = False  # True for a value that stands for several values at once (vmap)
    made_by = "a transform"  # what makes such values, as an error message names it
    container = False  # True for a value that only holds another (a dualad.numpy buffer): bind,
                       # pytrees and primal() see what it holds

    def _contents(self) -> Any:
        """What a container holds (see ``container``)."""
        return self

    def _writable_parts(self) -> tuple:
        """The arrays inside this value that its owner may write in place (none)."""
        return ()

    def _process(self, prim: Any, args: tuple, params: dict) -> Any:
        raise NotImplementedError

    def _strip(self) -> Any:
        """This value without its own perturbation (its primal part)."""
        raise NotImplementedError

    def _constant(self, out: Any) -> Any:
        """How a result computed with this value's derivative cut is returned."""
        return out


# Levels 0-2 are the shared levels of directly constructed Tensor, Dual and
# HyperDual values. Above them, a transform's run takes a fresh even level,
# open only while the transform runs; a value type wrapped around values
# that already carry a level (or a rule's own inner levels) takes a fresh odd
# one, open for good. Both are above all existing levels.
_levels = itertools.count(3)
_open: dict[int, int] = {}  # the even levels of transforms running now (how many times entered)


def new_level() -> int:
    """A level above every level handed out so far, open for good (odd)."""
    n = next(_levels)
    return n if n & 1 else next(_levels)


_around: dict[tuple, int] = {}  # (kind, inner level) -> level, oldest first


def level_around(kind: str, inner: int) -> int:
    """The level of a ``kind`` value built directly around values of level ``inner``
    (a ``Dual`` of ``Dual`` s, or of values a transform or compile traces).

    One level per kind and inner level, as values built around numbers share
    their kind's level: two ``HyperDual`` s made around the same trace's
    values are then one perturbation, not one nested in the other.
    """
    key = (kind, inner)
    level = _around.get(key)
    if level is None:
        if len(_around) >= 4096:  # inner levels of finished transforms come back no more
            del _around[next(iter(_around))]
        level = _around[key] = new_level()
    return level


def is_closed(level: int) -> bool:
    """Whether ``level`` belongs to a transform that has returned."""
    return level > 2 and not level & 1 and level not in _open


class transform_level:
    """A fresh level for one run of a transform, open while a ``with`` block on
    it runs: ``with transform_level("...") as level``. Entering it again reopens
    it (``vjp``'s returned function walking the tape its run recorded).

    A plain int and a small dict of the running ones, so ``bind``'s check costs
    one set lookup and nothing grows with the number of transforms run.
    """

    __slots__ = ("level",)

    def __init__(self) -> None:
        n = next(_levels)
        self.level = n if not n & 1 else next(_levels)

    def __enter__(self) -> int:
        _open[self.level] = _open.get(self.level, 0) + 1
        return self.level

    def __exit__(self, *exc: Any) -> bool:
        count = _open.pop(self.level) - 1
        if count:
            _open[self.level] = count
        return False


class EscapedValueError(RuntimeError):
    """A value that carries a derivative was used after its transform returned
    (as JAX's ``UnexpectedTracerError``).

    Examples
    --------
    >>> from dualad import EscapedValueError, derivative
    >>> kept = []
    >>> derivative(lambda x: kept.append(x) or x * x)(1.0)
    2.0
    >>> try:
    ...     kept[0] + 1.0
    ... except EscapedValueError:
    ...     print("the Dual kept in the list escaped its derivative call")
    the Dual kept in the list escaped its derivative call
    """


def _escaped(value: Any) -> EscapedValueError:
    return EscapedValueError(
        f"a {type(value).__name__} made inside {value.made_by} was used after that transform "
        f"returned: it escaped "
        f"the function being differentiated (kept in a list, a global or an attribute), and its "
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
    while isinstance(x, Value) and x._level < cut and x.carries_derivative:
        x = x._strip()
    return x


def as_arrays(args: tuple) -> tuple:
    """``args`` with each Python list or tuple made an array of the namespace of the other
    operands (NumPy's where they are numbers), as NumPy converts such an operand with
    ``asarray``: ``x * [1.0, 2.0]``, ``np.maximum(x, [0.0] * n)``."""
    others = []
    for a in args:
        if type(a) is not list and type(a) is not tuple:
            while isinstance(a, Value):
                a = a._strip()
            others.append(a)
    xp = namespace_of(others)
    if xp is scalar_xp:
        xp = NUMPY_XP
    return tuple(xp.asarray(a) if type(a) is list or type(a) is tuple else a for a in args)


def bind(prim: Any, *args: Any, **params: Any) -> Any:
    """Apply ``prim`` to ``args``, dispatching to the outermost value type.

    Plain numbers and arrays go straight to the primitive's implementation; a
    ``Dual``, ``HyperDual`` or ``Tensor`` among ``args`` applies its derivative
    rule too. ``params`` are the primitive's keyword parameters (``axis=``).

    Examples
    --------
    >>> from dualad import bind, derivative
    >>> from dualad.extend import REGISTRY
    >>> bind(REGISTRY["sin"], 0.0)
    0.0
    >>> derivative(lambda x: bind(REGISTRY["sin"], x))(0.0)
    1.0
    """
    any_array = False
    for a in args:  # NumPy arrays and Python numbers only (the most common calls): straight to impl
        kind = type(a)
        if kind is NUMPY_ARRAY or kind is NUMPY_FLOAT64:
            any_array = True
        elif kind is not float and kind is not int:
            break
    else:
        if any_array:
            if params or len(args) > 2:
                return prim.impl(NUMPY_XP, *args, **params)
            # By position: a call through *args/**params cannot be inlined by CPython (see
            # benchmarks/README.md, "Tape per-operation cost").
            return prim.impl(NUMPY_XP, args[0]) if len(args) == 1 else prim.impl(NUMPY_XP, args[0], args[1])
        if prim.scalar_ok:
            return prim.impl(scalar_xp, *args, **params)
    top = None
    top_level = -2  # a value of level -1 (a buffer of raw numbers) is stripped below
    convert = False
    for a in args:
        if isinstance(a, Value):
            if a.container:
                convert = True
            elif a._level > top_level:
                top, top_level = a, a._level
        elif type(a) is list or type(a) is tuple:
            convert = True
    if convert:  # bound again on what containers hold, lists and tuples as arrays
        args = tuple(a._contents() if isinstance(a, Value) and a.container else a for a in args)
        return bind(prim, *as_arrays(args), **params)
    if top is not None:
        cut = _state.cut
        if top_level >= cut or not top.carries_derivative:
            if top_level > 2 and not top_level & 1 and top_level not in _open:
                raise _escaped(top)
            return top._process(prim, args, params)
        if cut or top_level < 0:
            return top._constant(bind(prim, *[strip(a, max(cut, 0)) for a in args], **params))
    xp = namespace_of(args)
    if xp is scalar_xp and not prim.scalar_ok:
        xp = NUMPY_XP
        args = tuple(NUMPY_XP.asarray(a) if type(a) in (int, float) else a for a in args)
    return prim.impl(xp, *args, **params)

"""Tracing by execution: ``Tracer``, the value type of :func:`dualad.compile`'s level.

A ``Tracer`` holds a concrete value and the *slot* that names it in the
program being recorded. ``bind`` hands it each operation at its level as it
hands a ``Dual`` its own: the tracer computes the result on the concrete
values (so the first call's result is the eager one) and appends the
application to the trace, the same (primitive, parameters, inputs) a tape
record holds. Value types above it (``Dual``, a tape's ``Tensor``) unwrap to
tracers and bind again, so their derivative arithmetic is recorded too.

Where the code turns a traced value into Python control (``bool``,
``float``, ``int``, ``item``, ...), the trace records a *guard*: the
outcome, which a replay checks. Where it cannot follow (numbers read on the
host for a value-dependent shape, a NumPy function without a rule, a value
of an outer transform, numbers computed outside the primitives: see
:mod:`dualad._base.taint`), it marks the trace *spoiled* with the reason, keeps
computing eagerly, and the program is not kept.
"""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

import array_api_compat
import numpy as np

from dualad._base.backend import namespace_of, scalar_xp, to_host
from dualad._base.core import EscapedValueError, Value, bind
from dualad._base.frames import line_of, ours_then_user
from dualad._base.shapes import dtype_of, shape_of
from dualad._base.taint import TracedArray, taint
from dualad._numpy.arraylike import NUMPY_FUNCTIONS, ArrayLike, scipy_special_ufunc
from dualad._program.ir import GUARDS, Eqn, Guard
from dualad._table.entries import running_operation

__all__ = ["Trace", "Tracer", "nested_values", "spoil_traces"]

class Trace:
    """The record of one traced call: slot values, steps (``Eqn`` and ``Guard``), constants."""

    def __init__(self, level: int, like: Any = None):
        self.level = level
        # The array type traced on NumPy copies (``like``'s), or None; its namespace and the
        # type of its own dtypes where they are not NumPy's (array_api_strict's)
        self.library = None if like is None else type(like)
        self._xp = None if like is None else array_api_compat.array_namespace(like)
        dtype = None if like is None else type(self._xp.float64)
        self._dtype = None if dtype in (None, type, np.dtype) else dtype
        self.values: list = []        # slot -> concrete value (keeps ids stable while tracing)
        self.consts: dict = {}        # slot -> constant value
        self._const_ids: dict = {}    # id(constant) -> slot
        self.steps: list = []
        self._host: dict = {}         # id(an array of library) -> (it, kept alive; its numbers)
        self.spoiled: str | None = None
        self.active = True

    def new_slot(self, value: Any) -> int:
        self.values.append(value)
        return len(self.values) - 1

    def input(self, value: Any) -> "Tracer":
        return Tracer(value, self.new_slot(value), self)

    def const(self, value: Any) -> int:
        slot = self._const_ids.get(id(value))
        if slot is None:
            slot = self.new_slot(value)
            # A program keeps the numbers it read at the trace: an array is copied, so that
            # writing into it afterwards (or into an output the traced call returned) changes
            # no replay, every step reading the same numbers.
            self.consts[slot] = value.copy() if type(value) is np.ndarray else value
            self._const_ids[id(value)] = slot
        return slot

    def on_host(self, value: Any) -> np.ndarray:
        """The numbers of an array of the library whose arrays are traced on NumPy copies
        (:attr:`library`), met as an operand or parameter of a primitive: one the function
        closes over, or made from those alone. Read once (a device's are copied to the
        host once); a NumPy array that may share the user's memory, which the program
        copies as it copies an array of NumPy's the function closes over (:meth:`const`),
        and the retargeted program holds on their device. The user's array is read,
        never replaced."""
        seen = self._host.get(id(value))
        if seen is None:
            seen = self._host[id(value)] = (value, np.asarray(to_host(value)))
        return seen[1]

    def spoil(self, reason: str) -> None:
        """The trace cannot become a program, for ``reason``; the first reason is kept,
        with the line of the user's code that was running (to say which line to change)."""
        if self.active and self.spoiled is None:
            user = ours_then_user(sys._getframe(1))[1]
            self.spoiled = reason if user is None else f"{reason}, at {line_of(user)}"

    def guard(self, slot: int, kind: str, outcome: Any) -> None:
        if self.active:
            self.steps.append(Guard(slot, kind, outcome))

    def host_read(self, slot: int | None, kind: str, outcome: Any) -> None:
        """A ``TracedArray``'s numbers were read: a guard when it is a traced value
        itself and the read is a Python conversion, else the trace is spoiled."""
        if slot is not None and kind in GUARDS:
            self.guard(slot, kind, outcome)
        elif self.active and self.spoiled is None:
            reader = _reader(ours_then_user(sys._getframe(1))[0])
            self.spoil(f"the numbers of a traced value were read on the host, by {reader} (a "
                       "value-dependent shape or index: nonzero, boolean indexing, unique, ...; or a "
                       "computation outside dualad's primitives)")

    def operand(self, a: Any) -> tuple[int, Any]:
        """The slot and concrete value of one operand of a recorded primitive."""
        kind = type(a)
        if kind is Tracer:
            if a._level == self.level:
                return a.slot, a.val
        elif kind is TracedArray:
            if a._slot is not None and a._trace is self:  # a strip, bound again: the value itself
                return a._slot, self.values[a._slot]
            self.spoil("a number computed from a traced value outside dualad's primitives (a "
                       "rule or user code reading raw numbers) met a traced value again")
            return self.const(a), a.view(np.ndarray)
        elif isinstance(a, Value):
            self.spoil(f"a {type(a).__name__} of an outer transform (closed over by the compiled "
                       "function) met a traced value; its derivative would be lost from a program")
            return -1, a
        elif kind is self.library:
            a = self.on_host(a)
        return self.const(a), a

    def record(self, prim: Any, args: tuple, params: dict) -> Any:
        level, ins, vals, plain = self.level, [], [], True
        for a in args:
            if type(a) is Tracer and a._level == level:  # the common operand, read here
                ins.append(a.slot)
                vals.append(a.val)
                continue
            slot, v = self.operand(a)
            ins.append(slot)
            vals.append(v)
            plain = plain and not isinstance(v, Value)
        for p in params.values():
            if _staged(p):
                self.spoil(f"a traced value reached the parameters of {prim.name}")
        if self.library is not None:
            params = self._on_host(params)
        if plain:
            xp = _replay_namespace(prim, vals)
            ans = _apply(prim, vals, params, xp)
        else:
            ans = bind(prim, *vals, **params)
            if -1 in ins:  # an outer transform's value: computed, not recorded
                return ans
            xp = _replay_namespace(prim, vals)
        if prim.multiple_results:
            outs = tuple(self.new_slot(a) for a in ans)
            self.steps.append(Eqn(prim, params, tuple(ins), outs, xp))
            return tuple(Tracer(a, s, self, level) for a, s in zip(ans, outs))
        slot = self.new_slot(ans)
        self.steps.append(Eqn(prim, params, tuple(ins), (slot,), xp))
        return Tracer(ans, slot, self, level)

    def _on_host(self, params: dict) -> dict:
        """``params`` with the arrays of :attr:`library` among them (an index array, in
        tuples too) as NumPy copies, and its dtypes as NumPy's."""
        def host(v):
            if type(v) is self.library:
                return self.on_host(v).copy()
            if type(v) is self._dtype:
                return to_host(self._xp.empty(0, dtype=v)).dtype
            if type(v) in (tuple, list):
                return type(v)(map(host, v))
            return v
        return {k: host(v) for k, v in params.items()}


def _reader(ours: list[FrameType]) -> str:
    """What read a traced value's numbers, from the frames of ours on the stack (innermost
    first): the innermost entry running (``prod's VJP``), else the function the user's
    code called (NumPy's, where NumPy dispatched to us)."""
    running = running_operation(ours)
    if running is not None:
        return running
    if not ours:
        return "code outside dualad"
    called = ours[-1].f_locals.get("func", ours[-1].f_locals.get("ufunc"))  # NumPy's dispatch
    return f"numpy.{called.__name__}" if hasattr(called, "__name__") else ours[-1].f_code.co_name


def _staged(p: Any) -> bool:
    if type(p) in (Tracer, TracedArray):
        return True
    if type(p) in (tuple, list):
        return any(map(_staged, p))
    return False


def _apply(prim: Any, vals: list, params: dict, xp: Any) -> Any:
    """``bind(prim, *vals, **params)`` for ``vals`` that are no value types, where ``xp``
    is their :func:`_replay_namespace`: ``prim.impl`` called with it, as ``bind`` calls it
    (``bind`` itself where ``xp`` is None: it converts the operands first). Skipping
    ``bind``'s dispatch and a second ``namespace_of`` takes a fifth off ``Trace.record``
    of a small operation (benchmarks/README.md)."""
    return bind(prim, *vals, **params) if xp is None else prim.impl(xp, *vals, **params)


def _replay_namespace(prim: Any, vals: list) -> Any:
    """The namespace ``bind`` gave ``prim.impl`` for ``vals``, or None where ``bind``
    converted the operands first (a primitive without a float rule on floats)."""
    xp = namespace_of(vals)
    if xp is scalar_xp and not prim.scalar_ok:
        return None
    return xp


class Tracer(ArrayLike, Value):
    """A value being traced by :func:`dualad.compile`: its concrete value and its slot."""

    __slots__ = ("val", "slot", "trace", "_view")
    __array_priority__ = 100
    carries_derivative = False  # a cut (no_grad) keeps it: the program records stopped paths too

    def __init__(self, val: Any, slot: int, trace: Trace, level: int | None = None):
        self.val, self.slot, self.trace = val, slot, trace
        self._level = trace.level if level is None else level
        self._view = None

    def __repr__(self) -> str:
        return f"Tracer(t{self.slot}, shape={self.shape}, dtype={self.dtype})"

    @property
    def shape(self) -> tuple:
        return shape_of(self.val)

    @property
    def dtype(self) -> Any:
        return dtype_of(self.val)

    def _process(self, prim: Any, args: tuple, params: dict) -> Any:
        return self.trace.record(prim, args, params)

    def _strip(self) -> Any:
        """The concrete value, as a ``TracedArray`` that reports what is read from it."""
        view = self._view
        if view is None:
            val = self.val
            if not isinstance(val, (np.ndarray, np.generic)):
                return val
            view = taint(val, self.trace)
            view._slot = self.slot
            self._view = view
        return view

    def _constant(self, out: Any) -> Any:
        """``primal(self)``: a traced value carries no derivative, so its primal is
        itself, still traced, and masks or orders computed from it are recorded."""
        return self if out is self._view or out is self.val else out

    def __setitem__(self, idx: Any, value: Any) -> None:
        """``x[idx] = value``, functional underneath (as a ``Dual``'s): a new slot."""
        from dualad import ops

        new = ops.index_set(self, value, idx)
        if type(new) is not Tracer or new._level != self._level:
            raise TypeError("compile: x[idx] = value where value carries a derivative of a "
                            "transform inside the compiled function; build the result with "
                            "dualad.ops.index_set(x, value, idx) instead")
        self.val, self.slot, self._view = new.val, new.slot, None

    # -- Python control: guards -------------------------------------------------
    def _convert(self, kind: str) -> Any:
        trace = self.trace
        if not trace.active:
            raise EscapedValueError(
                "a value traced by dualad.compile was used after its trace ended: it escaped the "
                "compiled function (kept in a list, a global or an attribute); return it instead")
        outcome = GUARDS[kind](self.val)
        trace.guard(self.slot, kind, outcome)
        return outcome

    def __bool__(self) -> bool: return self._convert("bool")
    def __float__(self) -> float: return self._convert("float")
    def __int__(self) -> int: return self._convert("int")
    def __index__(self) -> int: return self._convert("index")
    def __complex__(self) -> complex: return self._convert("complex")
    def item(self) -> Any: return self._convert("item")
    def tolist(self) -> Any: return self._convert("tolist")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        self.trace.spoil("np.asarray() (or a NumPy function that converts its input) was called "
                         "on a traced value, which takes its numbers out of the program")
        a = np.asarray(self.val)
        return a if dtype is None else a.astype(dtype)

    # -- NumPy functions without a rule: computed, and the trace spoiled ----------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        fn = NUMPY_FUNCTIONS.get(ufunc) or scipy_special_ufunc(ufunc)
        if method == "__call__" and not kwargs and fn is not None:
            return fn(*inputs)
        self.trace.spoil(f"numpy.{ufunc.__name__}.{method} (keywords {sorted(kwargs)}) has no "
                         "dualad rule, so it cannot be recorded")
        return getattr(ufunc, method)(*_concrete(inputs), **_concrete(kwargs))

    def __array_function__(self, func, types, args, kwargs):
        fn = NUMPY_FUNCTIONS.get(func)
        if fn is not None:
            return fn(*args, **kwargs)
        self.trace.spoil(f"numpy.{getattr(func, '__qualname__', func)} has no dualad rule, so it "
                         "cannot be recorded")
        return func(*_concrete(args), **_concrete(kwargs))


def _concrete(x: Any) -> Any:
    """``x`` with tracers replaced by their concrete values (in tuples, lists and dicts)."""
    kind = type(x)
    if kind is Tracer:
        return x.val
    if kind is tuple or kind is list:
        return kind(_concrete(v) for v in x)
    if kind is dict:
        return {k: _concrete(v) for k, v in x.items()}
    return x


def nested_values(values: tuple):
    """Each value of dualad's transforms in ``values``, and those nested inside it."""
    for value in values:
        while isinstance(value, Value):
            yield value
            value = value._strip()


def spoil_traces(values: tuple, reason: str) -> None:
    """Spoil the trace of any traced value among ``values`` (nested ones too), for
    ``reason``: ``jit`` then runs the function eagerly, with a warning that gives it."""
    for value in nested_values(values):
        if type(value) is Tracer:
            value.trace.spoil(reason)

"""The executor of programs of small float64 arrays: straight-line Python on floats.

A program traced on NumPy float64 scalars or small arrays (a function of a
few numbers, its gradient and Hessian, a short state vector through an
integrator) has nothing for NumPy to vectorize: each step is a ufunc call on
a few numbers, many times what a Python float operation costs (the figures:
benchmarks/README.md, "Measurements behind the code"). :func:`scalar_executor`
unrolls such a program, element by element, into Python on floats, with the
numbers NumPy gives, bit for bit:

- ``+ - * /``, negation, squaring, reciprocals and ``abs`` (the entries'
  declared ``scalar_form``) are Python's float operators, which round as
  NumPy's float64 ufuncs do (IEEE 754 double, round to nearest;
  ``tests/dualad/program/test_scalar.py`` checks each against its ufunc, special
  values included);
- every other ufunc (``exp``, ``sin``, a comparison) is NumPy's own, called
  on the floats: ``math``'s functions differ from NumPy's in
  the last bit for a few percent of arguments;
- entries that only move elements (``Primitive.moves_elements``: indexing,
  reshapes, transposes, broadcasts, concatenation, flips) move names, and
  cost nothing at replay;
- every other step (a reduction, a product of matrices, a scatter) is its
  NumPy call on C-ordered arrays built from the floats. It
  gives the ordinary replay's numbers where that replay's operands were
  C-ordered too, and may differ in the last bits where they were views in
  another order (a sum over a transposed array adds in another order);
- where Python raises (a division by zero) or an output is not finite, the
  call is replayed by NumPy instead, from its start, so NumPy's inf and nan
  come with its warnings, and with ``np.errstate(...="raise")`` its
  ``FloatingPointError``. (An intermediate that overflows in a Python
  operator and is mapped back to a finite output, ``1 / (x * x)`` at
  ``x = 1e300``, gives NumPy's number without NumPy's overflow warning.)

Guards are checked as in any replay. The unrolled program is taken where
its estimated cost (:data:`OPERATOR_US`, :data:`UFUNC_US` per element,
:data:`CALL_US` per NumPy call) is below the ordinary replay's
(:data:`STEP_US` per step): a chain of ``sin`` and ``*`` breaks even at
about 8 elements. A program with a value of more than
:data:`MAX_ELEMENTS` elements, or of a dtype other than float64 and bool
(float32 or complex numbers, integers, a random draw, a constant of another
dtype: a float32 constant would make NumPy compute in float32 beside a
Python float), keeps the ordinary executor.
"""

from __future__ import annotations

import math
import weakref
from typing import Any, Callable

import numpy as np

from dualad._base.backend import NUMPY_XP
from dualad._program.ir import GUARDS, Eqn, Guard, GuardMiss, ufunc_of
from dualad._program.loop import Loop
from dualad._table.entries import moves_elements

__all__ = ["MAX_ELEMENTS", "scalar_executor", "unrolled_us"]

MAX_ELEMENTS = 16  # elements of the largest value a program may hold to be unrolled
MAX_LINES = 200_000  # lines of the unrolled source (its compile time grows with them)
# What a replay costs, in microseconds, measured on a 2-core Xeon (``op_chain`` of 200 steps,
# 1 to 32 elements): the unrolled program is taken where it costs less than the ordinary one.
STEP_US = 0.6  # one NumPy call of the ordinary replay, on a few numbers
OPERATOR_US, UFUNC_US, CALL_US = 0.03, 0.12, 1.5  # per element: a Python operator, a ufunc; a call

_F64, _BOOL = np.dtype(np.float64), np.dtype(np.bool_)
_NUMBERS = (float, int, bool)  # Python's: NumPy takes them at the other operand's precision
_FLOAT_GUARDS = ("bool", "float", "int", "complex")  # the same outcome on a float as on np.float64
_ONE = "(1.0)"  # 1.0 as _literal writes it


class _Unroll:
    """The source of one unrolled program: each slot's value as an object array of
    Python expressions (names of floats, or literals), one per element."""

    def __init__(self, program: Any, fallback: Callable, prefix: str = "", env: dict | None = None):
        self.program, self.avals = program, program.avals
        self.prefix = prefix  # of its names: a loop's body has its own (see loop)
        self.env: dict[str, Any] = {"_Miss": GuardMiss, "_slow": fallback, "_f64": np.float64,
                                    "_finite": math.isfinite, "_np": np} if env is None else env
        self.names: dict[int, np.ndarray] = {}
        self.body: list[str] = []
        self.guards = 0
        self.numpy_calls = 0
        self.cost = 0.0  # the estimated replay, in microseconds

    def aval(self, slot: int) -> tuple | None:
        """``(type, shape, dtype)`` of a float64 or bool slot small enough, else None."""
        aval = self.avals.get(slot)
        if aval is None or aval[2] not in (_F64, _BOOL) or aval[1] is None:
            return None
        return aval if math.prod(aval[1]) <= MAX_ELEMENTS else None

    def value(self, slot: int) -> np.ndarray | None:
        """The expressions of a slot's elements (a constant's literals), or None."""
        if slot in self.names:
            return self.names[slot]
        if slot not in self.program.consts:
            return None
        value = _exact_float(self.program.consts[slot])
        if type(value) in (float, bool):
            elements, shape = [value], ()
        elif (isinstance(value, (np.ndarray, np.generic)) and value.dtype in (_F64, _BOOL)
              and value.size <= MAX_ELEMENTS):
            elements, shape = np.ravel(value).tolist(), value.shape
        else:
            return None
        literals = [_literal(e) for e in elements]
        if None in literals:
            return None
        self.names[slot] = np.array(literals, dtype=object).reshape(shape)
        return self.names[slot]

    def fresh(self, slot: int, shape: tuple) -> np.ndarray:
        """New names for a slot's elements: ``t{slot}_{k}``, C order."""
        names = np.array([f"{self.prefix}t{slot}_{k}" for k in range(math.prod(shape))],
                         dtype=object).reshape(shape)
        self.names[slot] = names
        return names

    def unpack(self, slot: int, array: str, shape: tuple) -> None:
        """A NumPy value's elements into the slot's floats (``float`` of a 0-d one)."""
        names = self.fresh(slot, shape)
        if shape == ():
            self.body.append(f"{names[()]} = {array}.item()")  # a float, or a bool
        elif names.size:
            self.body.append(f"{', '.join(names.ravel())}, = {array}.ravel().tolist()")

    def pack(self, slot: int) -> str | None:
        """A NumPy value of the slot's type, shape and dtype built from its floats."""
        kind, shape, dtype = self.avals[slot]
        names = self.value(slot)
        if names is None:
            return None
        if kind is float:
            return str(names[()])
        if kind is np.float64:
            return f"_f64({names[()]})"
        if kind is np.bool_:
            return f"_np.bool_({names[()]})"
        # a C-ordered array from a list of its elements, written inline: cheaper than a helper's
        # call and a reshape of a 1-d array (benchmarks/README.md)
        array = f"_np.array([{', '.join(names.ravel())}], _np.{np.dtype(dtype).type.__name__})"
        return array if len(shape) == 1 else f"{array}.reshape({shape!r})"

    # -- steps --------------------------------------------------------------------------
    def step(self, n: int | str, step: Eqn) -> bool:
        if any(self.aval(s) is None for s in step.outs):
            return False
        if type(step.prim) is Loop:
            return self.loop(n, step)
        operands = [self.value(s) for s in step.ins]
        named = all(o is not None for o in operands)
        ufunc = ufunc_of(step)
        if isinstance(ufunc, np.ufunc) and len(step.outs) == 1 and named:
            return self.elementwise(n, step, ufunc, operands)
        if named and step.xp is not None and moves_elements(step.prim, step.params):
            moved = np.asarray(step.prim.impl(step.xp, *operands, **step.params), dtype=object)
            self.names[step.outs[0]] = np.array([_moved(e) for e in moved.ravel().tolist()],
                                                dtype=object).reshape(moved.shape)
            return moved.shape == self.avals[step.outs[0]][1]
        return self.call(n, step)

    def loop(self, n: int | str, step: Eqn) -> bool:
        """A rolled loop as a Python loop over its body unrolled: the carried values' floats
        renamed at each trip, each trip's own read from a tuple made before it."""
        loop, body = step.prim, step.prim.body
        operands = [self.value(s) for s in step.ins]
        if loop.trip_params or any(o is None for o in operands):
            return False
        inner = _Unroll(body, None, f"{self.prefix}L{n}_", self.env)
        n_fixed, n_carried = loop.n_fixed, len(loop.carried)
        for i in range(body.n_inputs):
            aval = inner.aval(i)
            if aval is None or (i < n_fixed and operands[i].shape != aval[1]):
                return False
            if i < n_fixed:
                inner.names[i] = operands[i]
            else:
                inner.fresh(i, aval[1])
        for m, inner_step in enumerate(body.steps):
            if type(inner_step) is Guard or not inner.step(f"{inner.prefix}{m}", inner_step):
                return False
        outs = [inner.value(s) for s in body.outputs]
        if any(o is None for o in outs):
            return False
        carried = [inner.names[n_fixed + i] for i in range(n_carried)]
        sliced = [inner.names[i] for i in range(n_fixed + n_carried, body.n_inputs)]
        later = {out for trip, out in loop.exported if trip != loop.trips - 1 or
                 body.outputs[out] < body.n_inputs}  # kept at each trip: see below
        lines = [f"{_joined(c)} = {_joined(first)}" for c, first in
                 zip(carried, operands[n_fixed:n_fixed + n_carried]) if c.size]
        first_sliced = n_fixed + n_carried
        if sliced:
            per = [_joined([o for i in range(loop.per_trip) for o in
                            operands[first_sliced + trip * loop.per_trip + i].ravel()], ",")
                   for trip in range(loop.trips)]
            lines.append(f"_s{self.prefix}{n} = ({', '.join(per)},)")
        if later:
            lines.append(f"_k{self.prefix}{n} = []")
        lines.append(f"for _trip in {'_s' + self.prefix + str(n) if sliced else f'range({loop.trips})'}:")
        inside = [f"{_joined([x for v in sliced for x in v.ravel()])}, = _trip"] if sliced else []
        inside += inner.body
        if later:  # the values of trips the program reads after the loop, before a carry renames them
            kept_now = _joined([x for o in sorted(later) for x in outs[o].ravel()], ",")
            inside.append(f"_k{self.prefix}{n}.append({kept_now})")
        inside += [f"{_joined(c)} = {_joined(outs[out])}" for c, out in zip(carried, loop.carried) if c.size]
        lines += ["    " + line for line in inside or ["pass"]]
        kept = {out: sum(outs[o].size for o in sorted(later) if o < out) for out in later}
        for s, (trip, out) in zip(step.outs, loop.exported):
            if out in later:
                names = self.fresh(s, self.avals[s][1])
                at = kept[out]
                if names.size:
                    lines.append(f"{_joined(names)}, = _k{self.prefix}{n}[{trip}][{at}:{at + names.size}]")
            else:  # the last trip's floats, which no later line renames
                self.names[s] = outs[out]
        self.body += lines
        self.cost += loop.trips * (inner.cost + OPERATOR_US * len(inside))
        self.numpy_calls += loop.trips * inner.numpy_calls
        return True

    def elementwise(self, n: int, step: Eqn, ufunc: np.ufunc, operands: list) -> bool:
        out = step.outs[0]
        kind, shape, dtype = self.avals[out]
        names = self.fresh(out, shape)
        columns = [np.broadcast_to(o, shape).ravel() for o in operands]
        form = step.prim.scalar_form  # what equals the ufunc (at the entry's ufunc_params)
        self.env[f"_u{n}"] = ufunc
        floats = dtype == _F64 and all(self.is_float(s) for s in step.ins)
        cast = "float" if dtype == _F64 else "bool"
        for k, name in enumerate(names.ravel()):
            args = [c[k] for c in columns]
            if floats and (same := _unchanged(ufunc, args)) is not None:  # renamed: no line
                names.flat[k] = same
            elif form is not None and floats:
                self.body.append(f"{name} = {form.format(*args)}")
                self.cost += OPERATOR_US
            else:
                self.body.append(f"{name} = {cast}(_u{n}({', '.join(args)}))")
                self.cost += UFUNC_US
        return True

    def is_float(self, slot: int) -> bool:
        """Whether the slot's value is a float64 (an array's, or a Python number it equals)."""
        if slot in self.program.consts and type(self.program.consts[slot]) in _NUMBERS:
            return type(_exact_float(self.program.consts[slot])) is float
        aval = self.avals.get(slot)
        return aval is not None and aval[2] == _F64

    def call(self, n: int, step: Eqn) -> bool:
        """The step's NumPy call on arrays packed from the floats, its results unpacked."""
        args = []
        for s in step.ins:  # inputs and constants as they are, computed values packed
            if s < self.program.n_inputs and not self.prefix:  # (a loop's body's are floats)
                args.append(f"x{s}")
            elif s in self.program.consts:
                args.append(self.constant(s))
            elif s in self.names and s in self.avals:
                args.append(self.pack(s))
            else:
                return False
        if step.params:
            self.env[f"_p{n}"] = step.params
            args.append(f"**_p{n}")
        if step.xp is None:
            return False  # bind decides the namespace at replay: not ours to choose
        self.numpy_calls += 1
        self.cost += CALL_US
        self.env[f"_f{n}"], self.env[f"_xp{n}"] = step.prim.impl, step.xp
        self.body.append(f"_r = _f{n}(_xp{n}{', ' if args else ''}{', '.join(args)})")
        results = [f"_r[{i}]" for i in range(len(step.outs))] if step.prim.multiple_results else ["_r"]
        for out, result in zip(step.outs, results):
            self.unpack(out, f"_np.asarray({result})", self.avals[out][1])
        return True

    def guard(self, n: int, step: Guard) -> bool:
        value = self.names.get(step.slot)
        if value is not None and value.shape == () and step.kind in _FLOAT_GUARDS:
            expr = str(value[()])
        elif value is not None:
            expr = self.pack(step.slot)
        else:
            expr = self.constant(step.slot)
        if expr is None:
            return False
        self.env[f"_g{n}"], self.env[f"_e{n}"] = GUARDS[step.kind], step.expected
        self.body.append(f"_o = _g{n}({expr})")
        self.body.append(f"if _o != _e{n}: return _Miss({self.guards}, _o)")
        self.guards += 1
        return True

    def constant(self, slot: int) -> str | None:
        """A constant as NumPy takes it, by name (None: not a constant)."""
        if slot not in self.program.consts:
            return None
        self.env[f"c{self.prefix}{slot}"] = self.program.consts[slot]
        return f"c{self.prefix}{slot}"


_WALKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # program -> its walk


def _walk(program: Any, fallback: Callable | None) -> _Unroll | None:
    """The program's steps unrolled (not yet its outputs), or None where it cannot be, or
    would cost more than the ordinary replay; kept for the program (``compile`` asks
    :func:`unrolls_arrays` before the first replay makes the executor)."""
    if program in _WALKS:
        u = _WALKS[program]
        if u is not None:
            u.env["_slow"] = fallback
        return u
    u = _WALKS[program] = _walk_steps(program, fallback)
    return u


def _walk_steps(program: Any, fallback: Callable | None) -> _Unroll | None:
    u = _Unroll(program, fallback)
    eqns = [s for s in program.steps if type(s) is not Guard]
    if program.n_inputs == 0 or not eqns or any(s.xp is not NUMPY_XP for s in eqns):
        return None  # nothing to unroll, or a program retargeted to another library
    for i in range(program.n_inputs):
        aval = u.aval(i)
        if aval is None or aval[2] != _F64 or aval[0] not in (np.ndarray, np.float64):
            return None
        u.unpack(i, f"x{i}", aval[1])
    ordinary = STEP_US * sum(s.prim.trips * len(s.prim.body.eqns) if type(s.prim) is Loop else 1
                             for s in eqns)
    for n, step in enumerate(program.steps):
        done = u.guard(n, step) if type(step) is Guard else u.step(n, step)
        if not done or len(u.body) > MAX_LINES or u.cost > ordinary:
            return None  # not unrollable, or dearer than the ordinary replay
    return u


def unrolled_us(program: Any) -> float | None:
    """The estimated cost of a replay of ``program`` unrolled to Python floats, in
    microseconds, or None where :func:`scalar_executor` does not take it (``compile``
    asks, choosing between it and Numba's kernels)."""
    u = _walk(program, None)
    return None if u is None else u.cost


def scalar_executor(program: Any, fallback: Callable) -> Callable | None:
    """A replay of ``program`` on Python floats (see the module's docstring), or None
    where a value is too large or of another dtype; ``fallback`` (the ordinary
    replay) runs a call where Python raises or an output is not finite."""
    u = _walk(program, fallback)
    _WALKS.pop(program, None)  # made once: its lines need not be kept
    if u is None:
        return None
    returns, computed = [], []
    for s in program.outputs:
        if s < program.n_inputs:
            returns.append(f"x{s}")
        elif s in program.consts:  # an array constant is copied: the caller may write into it
            u.env[f"c{s}"] = program.consts[s]
            returns.append(f"c{s}.copy()" if isinstance(program.consts[s], np.ndarray) else f"c{s}")
        else:
            packed = u.pack(s) if s in program.avals else None
            if packed is None:
                return None
            returns.append(packed)
            if program.avals[s][2] == _F64 and s not in program.consts:
                computed.extend(u.names[s].ravel())
    args = ", ".join(f"x{i}" for i in range(program.n_inputs))
    # a sum of the outputs is finite only where each is (or it overflowed: NumPy then replays too)
    check = f"    if not _finite({' + '.join(computed)}):\n        return _slow({args})\n" if computed else ""
    source = (f"def run({args}):\n    try:\n" + "".join(f"        {line}\n" for line in u.body or ["pass"])
              + f"    except ArithmeticError:\n        return _slow({args})\n" + check
              + f"    return [{', '.join(returns)}]\n")
    exec(compile(source, "<dualad scalar program>", "exec"), u.env)  # noqa: S102 - our own generated code
    run = u.env["run"]
    run.source, run.numpy_calls = source, u.numpy_calls
    return run


def _joined(names: Any, end: str = "") -> str:
    """Element names (an array of them, or a list) as a tuple's items: ``a, b, c``."""
    items = names.ravel().tolist() if isinstance(names, np.ndarray) else list(names)
    return f"({', '.join(items)}{end})" if end else ", ".join(items)


def _literal(value: Any) -> str | None:
    """A float or bool as Python source (None for another type)."""
    if type(value) is bool or isinstance(value, np.bool_):
        return repr(bool(value))
    if type(value) is not float and not isinstance(value, np.float64):
        return None
    value = float(value)
    if math.isfinite(value):
        return f"({value!r})"
    return f"float({str(value)!r})"  # inf and nan have no literal


def _exact_float(value: Any) -> Any:
    """A Python int of at most 53 bits as the float that equals it (NumPy computes it so
    beside a float64); any other value as it is."""
    return float(value) if type(value) is int and abs(value) <= 2 ** 53 else value


def _unchanged(ufunc: np.ufunc, args: list) -> str | None:
    """The operand that a product with, or a quotient by, the literal 1.0 gives back: ``x *
    1 = 1 * x = x / 1 = x`` bit for bit in IEEE 754 (signed zeros, inf and NaN too), so that
    step needs no line. Else None. (The seeds of a Jacobian or Hessian of a few variables
    bring such factors element by element, where the simplifying passes see a product with
    ``[1.0, 0.0]``: 15 of the 187 lines of the benchmarks' ``g`` as a user writes it.)"""
    if ufunc is np.multiply and _ONE in args:
        return args[1] if args[0] == _ONE else args[0]
    if ufunc is np.divide and args[1] == _ONE:
        return args[0]
    return None


def _moved(element: Any) -> str:
    """An element an element-moving entry put out: an expression, or a number it filled in
    (a 0-d object array assigned into an object array stays an array there: unwrapped)."""
    while isinstance(element, np.ndarray) and element.shape == ():
        element = element[()]
    if type(element) is str:
        return element
    return _literal(element if isinstance(element, (bool, np.bool_)) else float(element))

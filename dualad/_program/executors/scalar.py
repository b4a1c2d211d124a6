"""The executor of programs of float64 scalars: straight-line Python on floats.

A program traced on NumPy float64 scalars (``np.float64`` or 0-d arrays: a
function of a few numbers, its gradient, its Hessian by hyper-duals) has
nothing for NumPy to vectorize: each step is a ufunc call on one number,
about 0.5 us here, where a Python float operation costs about 20 ns.
:func:`scalar_executor` writes such a program as Python on floats, with the
numbers NumPy gives, bit for bit:

- ``+ - * /``, negation, squaring, reciprocals and ``abs`` (the entries'
  declared ``scalar_form``) are Python's float operators, which round as
  NumPy's float64 ufuncs do (IEEE 754 double, round to nearest;
  ``tests/dualad/program/test_scalar.py`` checks each against its ufunc, special
  values included);
- every other ufunc (``exp``, ``sin``, a comparison) is NumPy's own, called
  on the floats (about 0.1 us): ``math``'s functions differ from NumPy's in
  the last bit for a few percent of arguments;
- where Python raises (a division by zero) or an output is not finite, the
  call is replayed by NumPy instead, from its start, so NumPy's inf and nan
  come with its warnings, and with ``np.errstate(...="raise")`` its
  ``FloatingPointError``. (An intermediate that overflows in a Python
  operator and is mapped back to a finite output, ``1 / (x * x)`` at
  ``x = 1e300``, gives NumPy's number without NumPy's overflow warning.)

Guards are checked as in any replay. A program with any other step (a
reduction, an array, a random draw, float32 or complex numbers, a constant
of another dtype: a float32 constant would make NumPy compute in float32
beside a Python float) keeps the ordinary executor.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from dualad._program.ir import GUARDS, Eqn, Guard, GuardMiss
from dualad._program.passes.memory import ufunc_of

__all__ = ["scalar_executor"]

_SCALAR = (np.float64, (), np.dtype(np.float64))
_ZERO_D = (np.ndarray, (), np.dtype(np.float64))
_NUMBERS = (float, int, bool)  # Python's: NumPy takes them at the other operand's precision
_FLOAT_GUARDS = ("bool", "float", "int", "complex")  # the same outcome on a float as on np.float64


def scalar_executor(program: Any, fallback: Callable) -> Callable | None:
    """A replay of ``program`` on Python floats (see the module's docstring), or None
    where a step is not a ufunc on float64 scalars; ``fallback`` (the ordinary
    replay) runs a call where Python raises."""
    avals = program.avals
    if program.n_inputs == 0 or any(avals.get(i) not in (_SCALAR, _ZERO_D)
                                     for i in range(program.n_inputs)):
        return None
    floats = {i: f"f{i}" for i in range(program.n_inputs)}  # slot -> its float's expression
    others: dict[int, str] = {}                              # slot -> a value kept as NumPy's
    env: dict[str, Any] = {"_Miss": GuardMiss, "_slow": fallback, "_f64": np.float64,
                           "_finite": math.isfinite}
    body = [f"f{i} = float(x{i})" for i in range(program.n_inputs)]
    guard = 0
    for n, step in enumerate(program.steps):
        if type(step) is Guard:
            if step.slot in floats:
                value = floats[step.slot] if step.kind in _FLOAT_GUARDS else f"_f64({floats[step.slot]})"
            else:
                value = others.get(step.slot) or _constant(program, step.slot, env)
            if value is None:
                return None
            env[f"_g{n}"], env[f"_e{n}"] = GUARDS[step.kind], step.expected
            body.append(f"_o = _g{n}({value})")
            body.append(f"if _o != _e{n}: return _Miss({guard}, _o)")
            guard += 1
            continue
        line = _step(program, n, step, floats, others, env)
        if line is None:
            return None
        body.append(line)
    returns, computed = [], []
    for s in program.outputs:
        if s < program.n_inputs:
            returns.append(f"x{s}")
        elif s in program.consts:  # an array constant is copied: the caller may write into it
            env[f"c{s}"] = program.consts[s]
            returns.append(f"c{s}.copy()" if isinstance(program.consts[s], np.ndarray) else f"c{s}")
        elif s in floats:
            returns.append(f"_f64({floats[s]})")
            computed.append(floats[s])
        else:
            returns.append(others[s])
    args = ", ".join(f"x{i}" for i in range(program.n_inputs))
    # a sum of the outputs is finite only where each is (or it overflowed: NumPy then replays too)
    check = f"    if not _finite({' + '.join(computed)}):\n        return _slow({args})\n" if computed else ""
    source = (f"def run({args}):\n    try:\n" + "".join(f"        {line}\n" for line in body)
              + f"    except ArithmeticError:\n        return _slow({args})\n" + check
              + f"    return [{', '.join(returns)}]\n")
    exec(compile(source, "<dualad scalar program>", "exec"), env)  # noqa: S102 - our own generated code
    run = env["run"]
    run.source = source
    return run


def _step(program: Any, n: int, step: Eqn, floats: dict, others: dict, env: dict) -> str | None:
    """The line computing ``step`` (recording where its result lives), or None where
    the step is not a ufunc of float64 scalars."""
    ufunc = ufunc_of(step)
    if not isinstance(ufunc, np.ufunc) or len(step.outs) != 1:
        return None
    out = step.outs[0]
    kind, shape, dtype = program.avals.get(out, (None, None, None))
    if shape != () or kind not in (np.float64, np.bool_):
        return None
    operands = [floats.get(s) or _float_constant(program, s) for s in step.ins]
    form = step.prim.scalar_form  # what equals the ufunc (at the entry's ufunc_params)
    if form is not None and kind is np.float64 and None not in operands:
        floats[out] = f"t{out}"
        return f"t{out} = {form.format(*operands)}"
    operands = [floats.get(s) or others.get(s) or _constant(program, s, env) for s in step.ins]
    if None in operands:
        return None
    env[f"_u{n}"] = ufunc
    call = f"_u{n}({', '.join(operands)})"
    if kind is np.float64:
        floats[out] = f"t{out}"
        return f"t{out} = float({call})"
    others[out] = f"t{out}"
    return f"t{out} = {call}"


def _float_constant(program: Any, slot: int) -> str | None:
    """A constant operand as a float literal where it is one exactly (a Python float, an
    int of at most 53 bits, a float64 scalar), else None."""
    value = program.consts.get(slot)
    if type(value) is int and abs(value) <= 2 ** 53:
        value = float(value)
    elif isinstance(value, (np.float64, np.ndarray)) and program.avals.get(slot) in (_SCALAR, _ZERO_D):
        value = float(value)
    if type(value) is not float:
        return None
    if math.isfinite(value):
        return f"({value!r})"
    return f"float({str(value)!r})"  # inf and nan have no literal


def _constant(program: Any, slot: int, env: dict) -> str | None:
    """A constant operand of a NumPy call, by name: a Python number, or a float64 or bool
    NumPy scalar or 0-d array (None: not a constant, or another dtype)."""
    if slot not in program.consts:
        return None
    value = program.consts[slot]
    if type(value) not in _NUMBERS and not (getattr(value, "shape", None) == ()
                                            and value.dtype in (np.float64, np.bool_)):
        return None
    env[f"c{slot}"] = value
    return f"c{slot}"

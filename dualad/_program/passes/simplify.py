"""Algebraic simplification of a :class:`~dualad._program.program.Program`: exact rewrites only.

Each rewrite is named, and fires only where its result is the same number
as the step it replaces gives on *every* input (nan, inf and -0.0
included; the sign bit of a nan, which IEEE 754 leaves unspecified for
arithmetic, aside), with the same type, shape and dtype
(``Program.avals``):

``mul_one``
    ``x * 1`` and ``1 * x`` -> ``x``, for a constant one (a number or an
    array of ones) that neither broadcasts ``x`` nor changes its dtype; real
    dtypes only (``complex(inf, 0) * 1.0`` is ``inf+nanj`` in NumPy).
``div_one``
    ``x / 1`` -> ``x``, under the same conditions, floating dtypes only.
``add_zero``
    ``x + (-0.0)`` and ``-0.0 + x`` -> ``x``; for integers and booleans any
    zero. ``x + (+0.0)`` is *not* rewritten: it turns a -0.0 into +0.0, which
    ``1 / x`` and ``copysign`` can tell apart. Nor is ``x * 0`` (``inf * 0``
    is nan): a zero constant is never taken as a symbolic zero.
``sub_zero``
    ``x - (+0.0)`` -> ``x``; for integers and booleans any zero.
``neg_neg``
    ``-(-x)`` -> ``x``.
``transpose``
    ``permute_dims`` by the identity -> its operand, and
    ``permute_dims(permute_dims(x, a), b)`` -> ``permute_dims(x, a[b])``.
``same_shape``, ``same_dtype``
    ``reshape`` and ``broadcast_to`` to the shape the operand already has,
    and ``astype`` to its dtype -> the operand.
``uniform_const``
    An elementwise ``+ - * /`` with a constant array whose elements are all
    equal, that does not broadcast the other operand -> the same operation
    with that one number (the array is no longer read at each replay).
``neg_scale``
    ``-(x * k)`` for a constant number ``k`` and a product used once, and
    ``k * (-x)`` for a negation used once -> ``x * (-k)`` (floating dtypes:
    rounding to nearest is symmetric).
``broadcast_operand``
    An elementwise ``+ - * /`` reading ``broadcast_to(x)`` (or ``broadcast_to(reshape(x))``
    of a number ``x``: the transpose of a sum), where the other operand broadcasts ``x``
    to the same shape anyway -> the same operation on ``x``, for operands and result of
    one dtype (NumPy's promotion of a number differs from an array's only across dtypes).
``scatter_add``
    ``scatter(a, idx) + scatter(b, idx)`` with the same basic index (ints
    and slices: each element is written once) and scatters used once ->
    ``scatter(a + b, idx)``: outside ``idx`` both are ``+0.0 + +0.0``.
``scatter_sum``
    ``scatter(a, [i:j]) + scatter(b, [k:l])`` on 1-d slices of unit step,
    scatters used once -> one step that writes both into one array of zeros
    (the transposes of ``x[1:]`` and ``x[:-1]`` in a gradient), with the
    signed zeros of the sum.

A rewrite that would make an output of the program the same array as an
input, a constant or another slot is not made (the caller may write into
what a call returns), except where the step was a view of that slot
already (``transpose`` and ``same_shape``): the output then shares the
memory eager evaluation's shares. Dead steps left behind are removed by
:func:`~dualad._program.passes.dce.eliminate_dead_code`.

Which rewrites hold for a step is declared by its primitive
(``simplifications``, ``dualad._table.entries.Primitive.declare``); this
module keeps one implementation per rewrite name (:data:`REWRITES`).
"""

from __future__ import annotations

import math
import numbers
from collections import Counter
from typing import Any, Callable

import numpy as np

from dualad._primitives.indexing import native_indexing
from dualad._program.ir import Eqn, Guard, Step, apply_step, reading
from dualad._program.program import Program

__all__ = ["fold_constants", "simplify"]

_NONE = object()  # a slot that is not a constant


def simplify(program: Program, fired: Counter | None = None) -> Program:
    """``program`` with the exact algebraic rewrites above applied, in one forward walk.

    Rewrites see the steps already rewritten, so chains simplify (``-(-(x *
    1))`` is ``x``). ``fired``, when given, counts each rewrite by name.

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> from dualad._program.passes.dce import eliminate_dead_code
    >>> p = dualad.compile(lambda x: np.sin(-(-x) * 1.0) + 2.0, optimize=False).program(np.ones(3))
    >>> [e.prim.name for e in p.eqns]
    ['negative', 'negative', 'multiply', 'sin', 'add']
    >>> print(eliminate_dead_code(simplify(p)))
    def program(x0):
        t5 = np.sin(x0)
        t7 = np.add(t5, 2.0)
        return t7
    """
    return _Walk(program, Counter() if fired is None else fired).run()


def fold_constants(program: Any) -> Any:
    """``program`` with each step whose operands are all constants computed now.

    Its result (by the same ``impl`` call a replay would make, so with the
    type, dtype and 0-d-ness a replay gives) becomes a constant. A trace
    never records such a step (what does not depend on the inputs runs
    eagerly while tracing, and only its result is recorded), but a program
    whose inputs a pass replaces by values has them. Draws are not folded:
    each replay draws anew.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import Program
    >>> from dualad._program.ir import Eqn
    >>> from dualad.extend import REGISTRY
    >>> steps = [Eqn(REGISTRY["exp"], {}, (1,), (2,), np), Eqn(REGISTRY["add"], {}, (0, 2), (3,), np)]
    >>> p = Program(1, {1: 0.0}, steps, [3])
    >>> q = fold_constants(p)
    >>> [e.prim.name for e in q.eqns], q.consts[2]
    (['add'], np.float64(1.0))
    """
    consts, steps = dict(program.consts), []
    for step in program.steps:
        if type(step) is Eqn and step.ins and step.xp is not None \
                and not step.prim.effect and all(s in consts for s in step.ins):
            consts.update(zip(step.outs, apply_step(step, [consts[s] for s in step.ins])))
            continue
        steps.append(step)
    if len(steps) == len(program.steps):
        return program
    return program.with_steps(steps, consts=consts)


class _Walk:
    """The state of one forward walk: slot aliases, producers, use counts, new slots."""

    def __init__(self, program: Program, fired: Counter):
        self.program, self.fired = program, fired
        self.avals = dict(program.avals)
        self.consts = dict(program.consts)
        self.outputs = set(program.outputs)
        self.same: dict[int, int] = {}       # slot -> the slot that holds its value
        self.producer: dict[int, Eqn] = {}   # slot -> the (rewritten) step that makes it
        self.uses: Counter = Counter(program.outputs)
        self.uses.update(s for step in program.steps
                         for s in ((step.slot,) if type(step) is Guard else step.ins))
        slots = [program.n_inputs - 1, *program.consts, *program.avals, *program.outputs]
        slots += [s for step in program.eqns for s in step.outs]
        self.next_slot = max(slots) + 1

    def run(self) -> Program:
        p, steps = self.program, []
        if not p.avals:  # no shapes or dtypes known: nothing can be proved exact
            return p
        for step in p.steps:
            step = reading(step, self.same)
            if type(step) is Guard:
                steps.append(step)
                continue
            steps.extend(self.rewrite(step))
        outputs = [self.same.get(s, s) for s in p.outputs]
        return p.with_steps(steps, consts=self.consts, outputs=outputs, avals=self.avals)

    def rewrite(self, step: Eqn) -> list:
        """The steps that replace ``step`` (none when its output is another slot's)."""
        if step.prim.multiple_results or step.xp is None:
            return [self.made(step)]
        for name, rule in _rules_for(step, self.consts):
            out = rule(self, step)
            if out is None:
                continue
            if type(out) is int:  # the result is the value of slot ``out``
                if step.outs[0] in self.outputs and name not in _VIEWS:
                    continue
                self.same[step.outs[0]] = out
                self.uses[out] += self.uses[step.outs[0]] - step.ins.count(out)
                self.fired[name] += 1
                return []
            self.fired[name] += 1
            return [self.made(s) for s in out[:-1]] + self.rewrite(out[-1])
        return [self.made(step)]

    def made(self, step: Eqn) -> Eqn:
        for s in step.outs:
            self.producer[s] = step
        return step

    # -- what rules ask ------------------------------------------------------------
    def const(self, slot: int) -> Any:
        return self.consts.get(slot, _NONE)

    def made_by(self, slot: int, kind: Callable[[Any], bool]) -> Eqn | None:
        """The step that makes ``slot``, where its entry is of ``kind`` (a test of the
        facts the entry declares), else None."""
        step = self.producer.get(slot)
        return step if step is not None and kind(step.prim) else None

    def once(self, slot: int) -> bool:
        """Only one step reads ``slot``, and it is not an output of the program."""
        return self.uses[slot] == 1 and slot not in self.outputs

    def new_slot(self, aval: tuple) -> int:
        slot = self.next_slot
        self.next_slot += 1
        self.avals[slot] = aval
        return slot

    def new_const(self, value: Any) -> int:
        slot = self.new_slot((type(value), np.shape(value), getattr(value, "dtype", type(value))))
        self.consts[slot] = value
        return slot


# -- the rules: each returns None (no), a slot (the result is its value), or new steps ---------
def _other(walk: _Walk, step: Eqn, test: Callable, positions: tuple = (0, 1)) -> int | None:
    """The operand of a binary ``step`` beside a constant at one of ``positions`` that
    passes ``test``, when that operand's aval is the result's; else None."""
    if len(step.ins) != 2:
        return None
    out = walk.avals.get(step.outs[0])
    for k in positions:
        c, x = step.ins[k], step.ins[1 - k]
        value = walk.const(c)
        if value is not _NONE and walk.const(x) is _NONE and walk.avals.get(x) == out \
                and _all(value, test):
            return x
    return None


def _all(value: Any, test: Callable) -> bool:
    """Whether every entry of a constant on the host passes ``test``. A constant of
    another library (a Dask array: computing it could bring a data set to this process)
    is not looked at."""
    if not isinstance(value, (np.ndarray, np.generic, numbers.Number)):
        return False
    a = np.asarray(value)
    if a.dtype.kind not in "biufc" or a.size == 0:
        return False
    return bool(test(a[()]) if a.ndim == 0 else test(a).all())  # a NumPy scalar tests fastest


def _kind(walk: _Walk, slot: int) -> str:
    dtype = walk.avals.get(slot, (None, None, None))[2]
    return getattr(dtype, "kind", "")


def _mul_one(walk, step):
    if _kind(walk, step.outs[0]) in "biuf":
        return _other(walk, step, lambda a: a == 1)
    return None


def _div_one(walk, step):
    if _kind(walk, step.outs[0]) == "f":
        return _other(walk, step, lambda a: a == 1, positions=(1,))
    return None


def _negative_zero(a):
    return (a == 0) & np.signbit(a.real) if a.dtype.kind in "fc" else a == 0


def _positive_zero(a):
    return (a == 0) & ~np.signbit(a.real) if a.dtype.kind in "fc" else a == 0


def _add_zero(walk, step):
    kind = _kind(walk, step.outs[0])
    if kind in "biu":
        return _other(walk, step, lambda a: a == 0)
    if kind == "f":
        return _other(walk, step, _negative_zero)
    return None


def _sub_zero(walk, step):
    if _kind(walk, step.outs[0]) in "biuf":
        return _other(walk, step, _positive_zero, positions=(1,))
    return None


# The kinds of entry the rules look for among the steps that make their operands.
def _negation(prim: Any) -> bool:
    return prim.ufunc == "negative"


def _product(prim: Any) -> bool:
    return prim.ufunc == "multiply"


def _scatter(prim: Any) -> bool:
    """A linear scatter: zeros of ``shape`` with its operand added at ``idx``."""
    return prim.sparsity == "scatter" and prim.linear_args != ()


def _neg_neg(walk, step):
    inner = walk.made_by(step.ins[0], _negation)
    if inner is not None and walk.avals.get(inner.ins[0]) == walk.avals.get(step.outs[0]):
        return inner.ins[0]
    return None


def _transpose(walk, step):
    axes = tuple(step.params["axes"])
    inner = walk.made_by(step.ins[0], lambda prim: prim is step.prim)
    if inner is not None and inner.xp is step.xp:
        axes = tuple(tuple(inner.params["axes"])[i] for i in axes)
        x = inner.ins[0]
        if axes != tuple(range(len(axes))):
            return [Eqn(step.prim, {"axes": axes}, (x,), step.outs, step.xp)]
    else:
        x = step.ins[0]
    if axes == tuple(range(len(axes))) and walk.avals.get(x) == walk.avals.get(step.outs[0]):
        return x
    return None


def _same_aval(walk, step):
    x = step.ins[0]
    return x if walk.avals.get(x) == walk.avals.get(step.outs[0]) else None


def _uniform_const(walk, step):
    """A constant array of equal elements -> one number of the same dtype (a Python
    number where NumPy gives it the same result dtype)."""
    if len(step.ins) != 2 or _kind(walk, step.outs[0]) not in "biuf":
        return None
    out = walk.avals.get(step.outs[0])
    for k in (0, 1):
        c, x = step.ins[k], step.ins[1 - k]
        value = walk.const(c)
        if type(value) is not np.ndarray or value.size == 0 or value.dtype.kind not in "biuf" \
                or walk.const(x) is not _NONE or walk.avals.get(x, (None, None))[1] != out[1]:
            continue
        first = value.reshape(-1)[0]
        if not np.all(value == first) or (value.dtype.kind == "f" and np.any(
                np.signbit(value) != np.signbit(first))):  # -0.0 == 0.0 but they differ
            continue
        number = first.item()
        if np.result_type(walk.avals[x][2], number) != out[2] or out[0] is not np.ndarray:
            number = first  # a NumPy scalar keeps its dtype in NumPy 2's promotion
        ins = list(step.ins)
        ins[k] = walk.new_const(number)
        return [Eqn(step.prim, step.params, tuple(ins), step.outs, step.xp)]
    return None


def _broadcast_operand(walk, step):
    """An operand broadcast by ``broadcast_to`` (of ``reshape`` of a number) that the other
    broadcasts as far -> the value broadcast."""
    out = walk.avals.get(step.outs[0])
    if len(step.ins) != 2 or out is None or out[0] is not np.ndarray:
        return None
    for k in (0, 1):
        spread = walk.made_by(step.ins[k], _spreads)
        other = walk.avals.get(step.ins[1 - k])
        if spread is None or other is None or other[2] != out[2]:
            continue
        source = spread.ins[0]
        reshaped = walk.made_by(source, lambda prim: prim.partition == "reshape")
        if reshaped is not None and walk.avals.get(reshaped.ins[0], (None, None))[1] == () \
                and math.prod(walk.avals[source][1]) == 1:
            source = reshaped.ins[0]  # a number given one axis of one, then broadcast
        kind, shape, dtype = walk.avals.get(source, (None, None, None))
        if dtype != out[2] or kind not in (np.ndarray, out[2].type) \
                or np.broadcast_shapes(shape, other[1]) != out[1]:
            continue
        ins = list(step.ins)
        ins[k] = source
        walk.uses[source] += 1
        walk.uses[step.ins[k]] -= 1
        return [Eqn(step.prim, step.params, tuple(ins), step.outs, step.xp)]
    return None


def _spreads(prim: Any) -> bool:
    return prim.partition == "broadcast_to"


def _neg_scale(walk, step):
    """``-(x * k)`` on a negation, ``k * (-x)`` on a product."""
    if len(step.ins) == 1:
        return _negated_product(walk, step)
    if walk.consts.keys().isdisjoint(step.ins):  # k * (-x) needs its constant
        return None
    return _scaled_negation(walk, step)


def _negated_product(walk, step):
    t = step.ins[0]
    inner = walk.made_by(t, _product)
    if inner is None or not walk.once(t) or _kind(walk, step.outs[0]) != "f" \
            or walk.avals.get(t) != walk.avals.get(step.outs[0]):
        return None
    for k in (0, 1):
        value = walk.const(inner.ins[k])
        if _number(value):
            ins = list(inner.ins)
            ins[k] = walk.new_const(-value)
            return [Eqn(inner.prim, inner.params, tuple(ins), step.outs, inner.xp)]
    return None


def _scaled_negation(walk, step):
    if len(step.ins) != 2 or _kind(walk, step.outs[0]) != "f":
        return None
    for k in (0, 1):
        value, t = walk.const(step.ins[k]), step.ins[1 - k]
        inner = walk.made_by(t, _negation)
        if inner is not None and walk.once(t) and _number(value) \
                and walk.avals.get(inner.ins[0]) == walk.avals.get(t):
            ins = list(step.ins)
            ins[k], ins[1 - k] = walk.new_const(-value), inner.ins[0]
            return [Eqn(step.prim, step.params, tuple(ins), step.outs, step.xp)]
    return None


def _number(value: Any) -> bool:
    """A real number constant: a Python int or float, or a NumPy float scalar."""
    return type(value) in (float, int) or (isinstance(value, np.generic) and value.dtype.kind == "f")


def _two_scatters(walk, step) -> tuple | None:
    """The two scatters a binary ``step`` adds, each used only there, into one shape with
    one namespace of NumPy's indexing; else None."""
    if len(step.ins) != 2:
        return None
    a, b = walk.made_by(step.ins[0], _scatter), walk.made_by(step.ins[1], _scatter)
    if a is None or b is None or not (walk.once(step.ins[0]) and walk.once(step.ins[1])) \
            or a.xp is not b.xp or not native_indexing(a.xp) or a.params["shape"] != b.params["shape"]:
        return None
    return a, b


def _scatter_add(walk, step):
    pair = _two_scatters(walk, step)
    if pair is None:
        return None
    a, b = pair
    idx, other = a.params["idx"], b.params["idx"]
    if len(idx) != len(other) or not all(_basic(i) and _basic(j) and type(i) is type(j) and i == j
                                         for i, j in zip(idx, other)):
        return None
    va, vb = a.ins[0], b.ins[0]
    aval = walk.avals.get(va)
    if aval is None or aval != walk.avals.get(vb) or aval[2] != walk.avals.get(step.outs[0])[2]:
        return None
    summed = walk.new_slot(aval)
    return [Eqn(step.prim, step.params, (va, vb), (summed,), step.xp),
            Eqn(a.prim, a.params, (summed,), step.outs, a.xp)]


def _basic(i: Any) -> bool:
    return i is None or type(i) in (int, slice)


def _scatter_sum(walk, step):
    """``scatter(a, x[i:j]) + scatter(b, x[k:l])`` (1-d, unit steps, used once) -> one
    array of zeros written at both ranges (see :class:`_ScatterSum`)."""
    pair = _two_scatters(walk, step)
    if pair is None or len(pair[0].params["shape"]) != 1:
        return None
    a, b = pair
    n = a.params["shape"][0]
    ranges = [_range(x.params["idx"], n) for x in (a, b)]
    out = walk.avals.get(step.outs[0])
    if None in ranges or out is None or any(walk.avals.get(x.ins[0]) is None or
                                            walk.avals[x.ins[0]][2] != out[2] for x in (a, b)):
        return None
    return [Eqn(SCATTER_SUM, {"shape": (n,), "dtype": out[2], "ranges": tuple(ranges)},
                (a.ins[0], b.ins[0]), step.outs, a.xp)]


def _range(idx: tuple, n: int) -> tuple | None:
    """``(start, stop)`` of a 1-d index of one unit-step slice, or None."""
    if len(idx) != 1 or type(idx[0]) is not slice:
        return None
    start, stop, stride = idx[0].indices(n)
    return (start, max(start, stop)) if stride == 1 else None


class _ScatterSum(Step):
    """``scatter(a, [i:j]) + scatter(b, [k:l])`` in one array, each stretch written once
    with the sum's numbers: ``a + b`` where both ranges meet, ``a + 0.0`` and ``0.0 + b``
    where one alone writes (``+0.0`` where it is ``-0.0``), zeros where neither does.
    One pass over memory where zeros, a copy and an add made three (the ufunc's
    ``out=``: the rule asks for a library with NumPy's indexing and ufuncs)."""

    name = "scatter_sum"
    new_array = True  # into the array it makes
    lowering = "scatter"

    @staticmethod
    def impl(xp: Any, a: Any, b: Any, *, shape: tuple, dtype: Any, ranges: tuple) -> Any:
        (i, j), (k, m) = ranges
        out = xp.empty(shape, dtype=dtype)
        cuts = sorted({0, i, j, k, m, shape[0]})
        for lo, hi in zip(cuts, cuts[1:]):
            in_a, in_b = i <= lo < j, k <= lo < m
            x = a[lo - i:hi - i] if in_a else 0.0
            y = b[lo - k:hi - k] if in_b else 0.0
            if in_a or in_b:
                xp.add(x, y, out=out[lo:hi])
            else:
                out[lo:hi] = 0.0
        return out


SCATTER_SUM = _ScatterSum()


# Each rewrite by its name: the names a primitive's ``simplifications`` may hold.
REWRITES = {
    "mul_one": _mul_one, "div_one": _div_one, "add_zero": _add_zero, "sub_zero": _sub_zero,
    "neg_neg": _neg_neg, "neg_scale": _neg_scale, "transpose": _transpose,
    "same_shape": _same_aval, "same_dtype": _same_aval, "uniform_const": _uniform_const,
    "scatter_add": _scatter_add, "scatter_sum": _scatter_sum, "broadcast_operand": _broadcast_operand,
}
_VIEWS = frozenset({"transpose", "same_shape"})  # the step returned a view of the slot
# The rewrites that fire only where an operand of the step is a constant.
_ON_CONSTANTS = frozenset({"mul_one", "div_one", "add_zero", "sub_zero", "uniform_const"})
# A primitive's declared names -> the (name, rewrite) pairs to try with a constant operand
# and without one (filled as primitives are met: keyed by the names, not by the primitive).
_RULES: dict[tuple, tuple] = {}


def _rules_for(step: Eqn, consts: dict) -> list:
    """The ``(name, rule)`` pairs to try on ``step``: those its primitive declares, the
    ones that need a constant operand only where it has one. Two steps in three of the
    demo's RK4 ``jacfwd`` program have none, so skipping them pays (benchmarks/README.md)."""
    names = step.prim.simplifications
    if not names:
        return ()
    rules = _RULES.get(names)
    if rules is None:
        every = [(name, REWRITES[name]) for name in names]
        rules = _RULES[names] = (every, [r for r in every if r[0] not in _ON_CONSTANTS])
    return rules[1] if consts.keys().isdisjoint(step.ins) else rules[0]

"""The Numba executor: each loop nest of a lowered program as one ``@numba.njit`` kernel.

:func:`lowered` lowers a program (:mod:`dualad._program.lowering`) and
gives each :class:`~dualad._program.lowering.LoopNest` a kernel: Python
source written from the nest (:func:`source`), compiled by Numba on the
nest's first call. The rest of the program replays as before
(:mod:`dualad._program.executors.generated`), so matrix products and
everything else not lowered stay NumPy's calls between the kernels. A
program of numbers (0-d values) lowers to one nest without loops: the
whole program, or each stretch between its guards, is one function.

Kernels are cached twice: in this process by their source (programs of
the same structure and constants share a kernel: sizes and slice offsets
are its arguments, not its text), and on disk, where the source is
written as a module named by its hash under ``kernels/`` in dualad's cache
folder (:func:`~dualad._base.kernel_cache.cache_root`: ``$DUALAD_CACHE_DIR``,
else the platform's per-user cache folder) and compiled with Numba's cache
there (:func:`~dualad._base.kernel_cache.njit`), so a second process loads
the machine code instead of compiling again. Where that folder cannot be
written, kernels are compiled in memory each process.

The numbers are NumPy's: each operation is computed in the dtype NumPy's
ufunc loop uses (operands cast to it as NumPy casts them, Python numbers
weakly), ``error_model="numpy"`` gives inf and nan where Python would
raise, ``maximum``/``minimum`` propagate NaN as NumPy's do. Elementwise
results are NumPy's bit for bit for the ufuncs :data:`~dualad._program.lowering.UFUNCS`
marks exact; the others (exp, sin, ...) come from Numba's math library,
within a few ulps of NumPy's. A sum adds in another order than NumPy's
pairwise sum (four interleaved running sums, then their sum), so it
differs from NumPy's by at most ``2 (n - 1) eps sum(|x_i|)``, the sum of
the two orders' error bounds; a sum over some of a nest's axes adds in the
nest's order, float32 values in float64 (then rounded). NumPy's warnings (a division by zero, an
overflow) are not given by a kernel.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import math
import os
import sys
import threading
from typing import Any, Callable

import numpy as np

from dualad._base.kernel_cache import cache_root
from dualad._program.executors.kernels import FirstRun, arguments, cached
from dualad._program.executors.scalar import STEP_US
from dualad._program.lowering import LoopNest, NotFinite, lower, size

__all__ = ["CHECK_BELOW", "MAX_AUTOMATIC_OPS", "MIN_SCALAR_OPS", "MIN_SIZE", "UNROLL", "available",
           "cache_dir", "load", "lowered", "replay_us", "source"]

MIN_SIZE = 1 << 16   # iterations from which a nest may pay for its kernel (see _pays)
MIN_SCALAR_OPS = 16  # operations of a nest of numbers (or of a small array) from which it pays
SAVED_US = 4.0       # what a nest of fewer than MIN_SIZE iterations and ops must save a replay
# Nests taken for what they save alone, at most, in a program whose results they check (a
# program drawing from a Generator takes none: unchecked, they would lose NumPy's warnings);
# each costs a compile of about 0.1 s at the first replay, so a program of more takes those
# that save most.
MAX_SAVING_NESTS = 8
UNROLL = 4           # interleaved running sums: a sum's adds in flight at once
CHECK_BELOW = MIN_SIZE  # iterations below which a kernel checks that its results are finite

_JIT = 'njit(error_model="numpy", nogil=True)'  # dualad/_base/kernel_cache.py's, cached outside the package

# How each ufunc of the lowering is written, on operands already in the loop's dtype
# ({t}: that dtype's NumPy name).
_WRITTEN = {
    "add": "{0} + {1}", "subtract": "{0} - {1}", "multiply": "{0} * {1}", "divide": "{0} / {1}",
    "negative": "-{0}", "square": "{0} * {0}", "reciprocal": "np.{t}(1) / {0}", "absolute": "abs({0})",
    "maximum": "_maximum({0}, {1})", "minimum": "_minimum({0}, {1})",
    "equal": "{0} == {1}", "not_equal": "{0} != {1}", "less": "{0} < {1}",
    "less_equal": "{0} <= {1}", "greater": "{0} > {1}", "greater_equal": "{0} >= {1}",
    "logical_and": "({0} != 0) and ({1} != 0)", "logical_or": "({0} != 0) or ({1} != 0)",
    "logical_not": "not ({0} != 0)", "where": "{1} if {0} else {2}",
    # NumPy's sign of a zero is +0, of NaN NaN
    "sign": "(np.{t}(1) if {0} > 0 else np.{t}(-1) if {0} < 0 else {0} + np.{t}(0))",
    **{name: f"np.{name}({{0}}, {{1}})" for name in ("arctan2", "hypot")},
}
# NumPy's maximum and minimum: the first operand where it is NaN or strictly beyond the
# second, else the second (so maximum(0.0, -0.0) is -0.0, as NumPy gives).
_HELPERS = {
    "_maximum": "def _maximum(a, b):\n    return a if a > b or a != a else b\n",
    "_minimum": "def _minimum(a, b):\n    return a if a < b or a != a else b\n",
}

_KERNELS: dict[str, Callable] = {}  # source hash -> Numba dispatcher, for this process


def available() -> bool:
    """Whether Numba is installed (without importing it: that takes half a second)."""
    return importlib.util.find_spec("numba") is not None


def lowered(program: Any, forced: bool = False) -> Any:
    """``program`` lowered to loop nests run by Numba kernels, or None: where Numba is
    not installed or no group was lowered. Unless ``forced``, only the nests that pay
    for their kernel are (see :func:`_pays`), the other groups staying NumPy's calls.

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> p = dualad.compile(lambda x: np.sum(np.sin(x) * 2.0 + 1.0), executor="numpy").program(np.ones(3))
    >>> q = lowered(p, forced=True)
    >>> [str(e.prim) for e in q.eqns] if available() else ['LoopNest([3]: sin multiply add)']
    ['LoopNest([3]: sin multiply add)']
    >>> lowered(p) is None  # 3 iterations do not pay for a kernel
    True
    """
    if not available():
        return None
    # a program with effects (a Generator's draws) cannot be replayed again from its
    # start: its kernels do not check their results
    checks = not any(step.prim.effect for step in program.eqns)

    def lowered_by(keep, screen):
        return lower(program, lambda nest: FirstRun(nest, functools.partial(_build, checks=checks)),
                     keep=keep, screen=screen, partial_sums=True)

    if forced:
        out = lowered_by(None, None)
    elif not checks:  # nests taken for the microseconds they save check their results: none
        out = lowered_by(functools.partial(_pays, savings=False),
                         functools.partial(_may_pay, savings=False))
    else:  # and at most MAX_SAVING_NESTS of them (each a compile): those that save most
        out = lowered_by(_pays, _may_pay)
        saving = [_saved_us(e.prim) for e in out.eqns
                  if type(e.prim) is LoopNest and _saves_only(e.prim)]
        if len(saving) > MAX_SAVING_NESTS:
            out = lowered_by(_most_saving(saving), _may_pay)
    if out is program:
        return None
    if any(_checked(e.prim, checks) for e in out.eqns if type(e.prim) is LoopNest):
        out.rerun_by = program  # where a checked kernel meets a value not finite
    return out


# Nanoseconds per element of each inexact ufunc in a Numba loop and as NumPy's call, float64
# (measured on one core of a Xeon, 65536 entries in cache, Numba 0.68.1, NumPy 2.4.6): NumPy's
# SIMD exp and tanh are 7 and 9 times as fast as the math library Numba calls, its sin no faster.
_NS = {"exp": (8.2, 1.1), "expm1": (11.0, 1.6), "log": (6.7, 1.4), "log1p": (10.3, 1.7),
       "log2": (8.0, 1.5), "log10": (11.9, 1.5), "sin": (7.5, 8.6), "cos": (6.8, 6.1),
       "tan": (13.1, 2.4), "arcsin": (17.8, 1.9), "arccos": (16.1, 1.5), "arctan": (8.0, 1.7),
       "sinh": (19.9, 1.4), "cosh": (12.9, 1.4), "tanh": (20.2, 2.2), "arcsinh": (26.6, 2.7),
       "arccosh": (5.4, 4.8), "arctanh": (28.6, 2.5), "arctan2": (27.8, 3.0), "hypot": (21.5, 25.0)}
_EXACT_NS = 0.3  # + - * / and the like, either way
_PASS_NS = 1.0   # what each NumPy call adds: a pass over memory, for a result written and read back


def _pays(nest: LoopNest, savings: bool = True) -> bool:
    """Whether ``nest`` pays for its kernel. By the nanoseconds per element of its
    operations in the kernel and as NumPy's calls (the inexact ufuncs by :data:`_NS`, a
    pass over memory per call saved): one of ``MIN_SIZE`` iterations or more where the
    kernel's are fewer, one of fewer iterations where they save :data:`SAVED_US` a replay
    (a broadcast product of 50 x 50 is 3 us as NumPy's call; unless not ``savings``). And
    a nest of numbers, or of a small array, of ``MIN_SCALAR_OPS`` operations or more:
    each NumPy call of a small array costs a microsecond or so, more than its elements."""
    ours, numpys = _ns_per_element(nest)
    if size(nest) < MIN_SIZE:
        return len(nest.ops) >= MIN_SCALAR_OPS or (
            savings and size(nest) * (numpys - ours) >= SAVED_US * 1e3)
    return ours < numpys


def _ns_per_element(nest: LoopNest) -> tuple[float, float]:
    """What ``nest`` costs per element in its kernel, and as NumPy's calls."""
    ours = sum(_NS.get(op.ufunc, (_EXACT_NS,))[0] for op in nest.ops)
    numpys = sum(_NS.get(op.ufunc, (0.0, _EXACT_NS))[1] + _PASS_NS
                 for op in nest.ops) + _PASS_NS * (len(nest.sums) + len(nest.partials)
                                                   + 2 * len(nest.scatters))
    return ours, numpys


def _saved_us(nest: LoopNest) -> float:
    """The microseconds ``nest`` saves a replay, estimated (see :func:`_pays`)."""
    ours, numpys = _ns_per_element(nest)
    return size(nest) * (numpys - ours) * 1e-3


def _most_saving(saving: list) -> Callable:
    """``keep(nest)``: :func:`_pays`, and, of the nests taken for what they save alone
    (``saving``: the microseconds each saves), the :data:`MAX_SAVING_NESTS` that save most;
    of those that tie with the last of them, the first in program order."""
    least = sorted(saving, reverse=True)[MAX_SAVING_NESTS - 1]
    ties = [MAX_SAVING_NESTS - sum(us > least for us in saving)]  # places left for them

    def keep(nest: LoopNest) -> bool:
        if not _pays(nest):
            return False
        if not _saves_only(nest):
            return True
        us = _saved_us(nest)
        if us > least:
            return True
        if us < least or ties[0] <= 0:
            return False
        ties[0] -= 1
        return True
    return keep


def _saves_only(nest: LoopNest) -> bool:
    """Whether ``nest`` was taken for the microseconds it saves alone (see :func:`_pays`)."""
    return size(nest) < MIN_SIZE and len(nest.ops) < MIN_SCALAR_OPS


# The most a step of a group can save per element in a nest (hypot's, by _NS), so that
# :func:`_may_pay` keeps every group whose nest :func:`_pays` might take.
_MOST_SAVED_NS = max(2 * _PASS_NS,
                     *(numpys + _PASS_NS - ours for ours, numpys in _NS.values()))


def _may_pay(shape: tuple, steps: int, savings: bool = True) -> bool:
    """Whether a nest of at most ``steps`` operations over ``shape`` may pass :func:`_pays`
    (a nest has an operation per step of its group, less its sums and scatters)."""
    n = math.prod(shape)
    return n >= MIN_SIZE or steps >= MIN_SCALAR_OPS or (
        savings and n * steps * _MOST_SAVED_NS >= SAVED_US * 1e3)


# What a nest's call costs in a replay, in microseconds (a 2-core Xeon, Numba 0.68.1):
# dispatch, its arrays made, results boxed. Each step left to NumPy costs STEP_US.
NEST_US = 1.0
# Operations of a program's nests of few iterations from which Numba's first compile (about
# 150 operations a second, kept on disk after) is not taken by itself.
MAX_AUTOMATIC_OPS = 1000


def replay_us(lowered: Any) -> float:
    """The estimated cost of a replay of the ``lowered`` program, in microseconds, to
    weigh against Python floats' (``compile`` asks, choosing its executor); infinite
    where its nests of fewer than ``MIN_SIZE`` iterations hold more than
    :data:`MAX_AUTOMATIC_OPS` operations: their compile would cost more than their
    replays save, in all but the longest runs."""
    nests = [e.prim for e in lowered.eqns if type(e.prim) is LoopNest]
    if sum(len(n.ops) for n in nests if size(n) < MIN_SIZE) > MAX_AUTOMATIC_OPS:
        return math.inf
    return NEST_US * len(nests) + STEP_US * (len(lowered.eqns) - len(nests))


def cache_dir() -> str:
    """The folder of the kernels' modules kept on disk: ``kernels`` in dualad's cache
    folder (:func:`~dualad._base.kernel_cache.cache_root`).

    Examples
    --------
    >>> cache_dir().endswith("kernels")
    True
    """
    return os.path.join(cache_root(), "kernels")


def _build(nest: LoopNest, checks: bool = True) -> Callable:
    """``nest``'s ``run``: its kernel loaded or compiled, called by :func:`_caller`."""
    return _caller(nest, load(source(nest, checks)), checks)


def _caller(nest: LoopNest, kernel: Callable, checks: bool = True) -> Callable:
    """``run(*operands)`` of ``nest``: makes the arrays it writes, calls ``kernel`` with the
    sizes, offsets and starts written in, and returns the outputs as eager evaluation does
    (a number NumPy's scalar, of the output's dtype). Generated, as a replay is: the call
    of a nest of numbers costs little more than the kernel's."""
    env: dict[str, Any] = {"_kernel": kernel, "_empty": np.empty, "_zeros": np.zeros,
                           "_f64": np.float64}
    arrays, returned = [], []
    for r, (_, dtype) in enumerate(nest.kinds):
        env[f"_t{r}"] = dtype
    stored = len(nest.stores) if nest.shape else 0  # a nest without loops returns them
    for r in range(stored):
        arrays.append((f"o{r}", nest.shape, r))
    for r in range(len(nest.partials)):  # added into, in float64 (float32's cast after): zeros first
        arrays.append((f"q{r}", nest.partial_shape(r), stored + r))
    partials = [(f"q{r}", f"_t{stored + r}") for r in range(len(nest.partials))
                if nest.kinds[stored + r][1] != np.float64]
    stored += len(nest.partials)
    numbers = range(stored, len(nest.kinds) - len(nest.scatters))
    for r, (_, _, _, _, length) in zip(range(numbers.stop, len(nest.kinds)), nest.scatters):
        arrays.append((f"p{r}", (length,), r))
    for n, r in enumerate(numbers):
        kind, _ = nest.kinds[r]
        env[f"_w{r}"] = kind
        returned.append(f"_w{r}(_r[{n}])" if kind is not np.ndarray else f"_asarray(_r[{n}], _t{r})")
    env["_asarray"] = np.asarray
    operands = [f"a{k}" for k, load in enumerate(nest.loads) if not load.constant]
    written = [repr(n) for n in nest.shape] + operands + [repr(d) for d in nest.offsets]
    written += [repr(start) for _, _, _, start, _ in nest.scatters] + [name for name, _, _ in arrays]
    lines = [f"def run({', '.join(operands)}):"]
    lines += [f"    {name} = _zeros({shape!r}, _f64)" if name[0] == "q" else
              f"    {name} = _empty({shape!r}, _t{r})" for name, shape, r in arrays]
    lines.append(f"    _r = _kernel({', '.join(written)})")
    if _checked(nest, checks):
        env["_NotFinite"] = NotFinite
        lines.append("    if _r[-1] != _r[-1]:\n        raise _NotFinite")
    lines += [f"    {name} = {name}.astype({dtype})" for name, dtype in partials]
    outs = [name for name, _, _ in arrays[:stored]] + returned + [name for name, _, _ in arrays[stored:]]
    lines.append(f"    return ({', '.join(outs)},)")
    exec(compile("\n".join(lines) + "\n", "<dualad nest call>", "exec"), env)  # noqa: S102 - our own code
    return env["run"]


def source(nest: LoopNest, checks: bool = True) -> str:
    """The module source of ``nest``'s kernel: ``kernel(n0, .., a0, .., d0, .., g0, .., o0,
    .., q0, .., p0, ..)`` of its sizes, operands, offsets, the starts of its scatters, the
    arrays it stores into, those it adds partial sums into (float64 zeros: a float32 sum
    is added in float64, then rounded, as accurate as NumPy's pairwise sum or more) and
    those it scatters into, returning the numbers it sums (and, for a nest
    without loops, the values it stores first), then, where it ``checks`` (see
    :func:`_checked`), ``k``: nan where a value it returns is not finite.

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> from dualad._program.lowering import lower
    >>> f = dualad.compile(lambda x: np.sqrt(x[1:] - x[:-1] * 2.0), executor="numpy")
    >>> nest = lower(f.program(np.full(5, -1.0)), emit=lambda nest: None).eqns[0].prim
    >>> print(source(nest).split("def ")[1])
    kernel(n0, a0, a2, d0, o0):
        k = 0.0
        for i0 in range(n0):
            x0 = a0[i0]
            x1 = 2.0
            x2 = a2[i0 + d0]
            v0 = x0 * x1
            v1 = x2 - v0
            v2 = np.sqrt(v1)
            k += v2 - v2
            o0[i0] = v2
        return (k,)
    <BLANKLINE>
    """
    ndim, ops = len(nest.shape), nest.ops
    sizes = [f"n{a}" for a in range(ndim)]
    operands = [f"a{k}" for k, load in enumerate(nest.loads) if not load.constant]
    offsets = [f"d{k}" for k in range(len(nest.offsets))]
    stored = [f"o{k}" for k in range(len(nest.stores))] if ndim else []
    stored += [f"q{r}" for r in range(len(nest.partials))]
    starts = [f"g{r}" for r in range(len(nest.scatters))]
    scattered = [f"p{r}" for r in range(len(nest.scatters))]
    body, helpers = [], set()
    for k, load in enumerate(nest.loads):
        if load.constant:
            body.append(f"x{k} = {_literal(load)}")
        elif load.scalar:
            body.append(f"x{k} = a{k}")
        else:
            index = [("0" if ax is None else f"i{ax}") + ("" if d is None else f" + d{d}")
                     for ax, d in zip(load.axes, load.offsets)]
            body.append(f"x{k} = a{k}[{', '.join(index) or '()'}]")
    for j, op in enumerate(ops):
        args = arguments(nest, op, lambda name, loop: f"np.{loop.name}({name})")
        written = _WRITTEN.get(op.ufunc) or f"np.{op.ufunc}({{0}})"
        helpers.update(h for h in _HELPERS if h in written)
        value = written.format(*args, t=op.loop.name)
        if op.dtype not in (np.float64, np.int64, np.bool_):  # Numba widens int32 and float32 math
            value = f"np.{op.dtype.name}({value})"
        body.append(f"v{j} = {value}")
    lines = [f"def kernel({', '.join(sizes + operands + offsets + starts + stored + scattered)}):"]
    checked = _checked(nest, checks)
    if ndim == 0:
        returned = [f"v{j}" for j in nest.stores] + [f"np.{ops[j].dtype.name}(0.0) + v{j}" for j in nest.sums]
        if checked:
            returned.append(" + ".join(["0.0"] + [f"(v{j} - v{j})" for j in checked]))
        lines += [f"    {line}" for line in body]
        lines.append(f"    return ({', '.join(returned)},)")
        return _module(lines, helpers)
    if checked:  # a value not finite turns k into nan (v - v is 0.0 only for a finite v)
        lines.append("    k = 0.0")
        body += [f"k += v{j} - v{j}" for j in checked if j not in nest.sums]
    where = ", ".join(f"i{a}" for a in range(ndim))
    body += [f"o{k}[{where}] = v{j}" for k, j in enumerate(nest.stores)]
    for r, (j, axes, keepdims) in enumerate(nest.partials):
        kept = ["0" if a in axes else f"i{a}" for a in range(ndim) if keepdims or a not in axes]
        body.append(f"q{r}[{', '.join(kept) or '()'}] += v{j}")
    ending = []
    for r, (a, b, shift, _, _) in enumerate(nest.scatters):
        zero = f"np.{ops[a].dtype.name}(0.0)"
        lines.append(f"    c{r} = {zero}")
        # the value written first, plus the other's carried from the previous index, in the
        # order of a + b; where one value alone is written, NumPy adds 0.0 to it
        if shift == 1:
            body += [f"p{r}[i0 + g{r}] = v{a} + c{r}", f"c{r} = v{b}"]
            ending.append(f"p{r}[n0 + g{r}] = {zero} + c{r}")
        else:
            body += [f"p{r}[i0 + g{r}] = c{r} + v{b}", f"c{r} = v{a}"]
            ending.append(f"p{r}[n0 + g{r}] = c{r} + {zero}")
        ending += [f"for q in range(g{r}):", f"    p{r}[q] = {zero}",
                   f"for q in range(n0 + g{r} + 1, p{r}.shape[0]):", f"    p{r}[q] = {zero}"]
    copies = UNROLL if nest.sums else 1
    for r, j in enumerate(nest.sums):
        names = " = ".join(f"s{r}_{u}" for u in range(copies))
        lines.append(f"    {names} = np.{ops[j].dtype.name}(0.0)")
    indent = "    "
    for a in range(ndim - 1):
        lines.append(f"{indent}for i{a} in range(n{a}):")
        indent += "    "
    last = ndim - 1

    def summed(u: int) -> list:
        return [f"s{r}_{u} += v{j}" for r, j in enumerate(nest.sums)]

    if copies > 1:
        lines.append(f"{indent}m{last} = n{last} - n{last} % {copies}")
        lines.append(f"{indent}for j{last} in range(0, m{last}, {copies}):")
        for u in range(copies):
            lines += [f"{indent}    {line}" for line in [f"i{last} = j{last} + {u}", *body, *summed(u)]]
        lines.append(f"{indent}for i{last} in range(m{last}, n{last}):")
    else:
        lines.append(f"{indent}for i{last} in range(n{last}):")
    lines += [f"{indent}    {line}" for line in body + summed(0)]
    lines += [f"    {line}" for line in ending]
    for r, (j, _, _) in enumerate(nest.partials):  # a sum past the largest float: not finite
        if j in checked:
            lines += [f"    for w in q{r}.ravel():", f"        c = np.{ops[j].dtype.name}(w)",
                      "        k += c - c"]
    totals = [_pairwise([f"s{r}_{u}" for u in range(copies)]) for r in range(len(nest.sums))]
    if checked:
        lines += [f"    t{r} = {total}" for r, total in enumerate(totals)]
        lines += [f"    k += t{r} - t{r}" for r, j in enumerate(nest.sums) if j in checked]
        totals = [f"t{r}" for r in range(len(totals))] + ["k"]
    if totals:
        lines.append(f"    return ({', '.join(totals)},)")
    return _module(lines, helpers)


def _checked(nest: LoopNest, checks: bool = True) -> list:
    """The ops whose float values a kernel of few iterations checks (what it stores,
    sums and scatters): a value not finite raises :class:`NotFinite` in its call, and
    NumPy's calls replay the program (``Program.rerun_by``), with NumPy's warnings. A
    nest of :data:`CHECK_BELOW` iterations or more checks nothing (a pass would cost too
    much beside its loop), and warns as little as its kernel does."""
    if not checks or size(nest) >= CHECK_BELOW:
        return []
    values = list(nest.stores) + list(nest.sums) + [j for j, _, _ in nest.partials]
    values += [j for a, b, *_ in nest.scatters for j in (a, b)]
    return sorted({j for j in values if np.dtype(nest.ops[j].dtype).kind == "f"})


def _literal(load: Any) -> str:
    """A constant as source: a Python number as itself, a NumPy scalar cast to its dtype."""
    value = load.value.item() if isinstance(load.value, np.generic) else load.value
    text = repr(value)
    if type(value) is float and not math.isfinite(value):
        text = f"np.{'nan' if value != value else 'inf'}" if value != -math.inf else "-np.inf"
    return text if load.dtype is None else f"np.{load.dtype.name}({text})"


def _pairwise(names: list) -> str:
    while len(names) > 1:
        names = [f"({a} + {b})" for a, b in zip(names[::2], names[1::2])] + names[len(names) // 2 * 2:]
    return names[0][1:-1] if names[0].startswith("(") else names[0]


def _module(lines: list, helpers: set) -> str:
    head = ["import numpy as np", "", "from dualad._base.kernel_cache import njit", ""]
    for name in sorted(helpers):
        head += ["", f"@{_JIT}", _HELPERS[name]]
    return "\n".join(head + ["", f"@{_JIT}"] + lines) + "\n"


def load(text: str) -> Callable:
    """The kernel of module source ``text``: this process's, else the module written
    under :func:`cache_dir` (its machine code in Numba's cache under the same root), else
    compiled in memory."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:24]
    return cached(_KERNELS, digest, lambda: _import(digest, text))


def _import(digest: str, text: str) -> Callable:
    folder = cache_dir()
    path = os.path.join(folder, f"k{digest}.py")
    try:
        if not os.path.exists(path):  # written once: Numba's cache is keyed by its source stamp
            os.makedirs(folder, exist_ok=True)
            temporary = f"{path}.{os.getpid()}.{threading.get_ident()}"
            with open(temporary, "w") as file:
                file.write(text)
            os.replace(temporary, path)
        spec = importlib.util.spec_from_file_location(f"dualad_kernel_{digest}", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # where Numba's cache finds the kernel's globals again
        spec.loader.exec_module(module)
    except OSError:  # no folder to keep it in: compiled anew in each process (no file, no disk cache)
        env: dict = {}
        exec(compile(text, f"<dualad kernel {digest}>", "exec"), env)  # noqa: S102
        return env["kernel"]
    return module.kernel


"""The CuPy executor: each loop nest of a lowered program as one CUDA kernel.

:func:`lowered` lowers a program traced on NumPy copies of CuPy arrays
(:mod:`dualad._program.lowering`), before it is retargeted to CuPy
(:mod:`dualad._staging.retarget`), and gives each
:class:`~dualad._program.lowering.LoopNest` a kernel written as CUDA C from
the nest, built by CuPy at the nest's first call: nothing leaves the
device, and the rest of the program replays as CuPy's calls.

- A nest of elementwise outputs only, each operand read whole or as a
  number, is a ``cupy.ElementwiseKernel`` (:func:`elementwise`: its
  parameters and operation); CuPy indexes, broadcasts and launches it.
- Any other (slices read at an offset, broadcasts as index arithmetic,
  full sums, scatters) is a ``cupy.RawKernel`` (:func:`raw`): one
  grid-stride loop over the nest's indices, each array read through its
  strides. A sum is kept per thread, added up per block in shared memory,
  and each block's total is added into the result by ``atomicAdd``: one
  launch and one pass over memory (a two-pass reduction would write and
  launch again, for a last step of a few thousand numbers), at the price of
  an order of the blocks' totals that varies between runs. A scatter's
  entry is the sum of two values of the loop at neighbouring indices: on a
  GPU each index runs apart, so both are computed there (the body at the
  index and at the index before) instead of carried from the previous
  iteration as the Numba kernel does.

Kernels are kept in this process by their source (CuPy keeps their
machine code on disk); sizes, strides, offsets and starts are arguments,
not text, so programs of the same structure share a kernel.

The numbers are NumPy's, as the Numba executor's are: each operation in
the dtype of NumPy's ufunc loop (operands and Python numbers cast as NumPy
casts them), integers wrapping on overflow, ``maximum``/``minimum``
propagating NaN, and no fused multiply-add (``--fmad=false``: NumPy rounds
``a * b + c`` twice). The ufuncs :data:`~dualad._program.lowering.UFUNCS`
marks exact give NumPy's numbers bit for bit; the others come from CUDA's
math library (``exp`` for float64, ``expf`` for float32), the functions
CuPy's own ufuncs call, each within the few ulps of the exact result the
CUDA programming guide states, so within a few ulps of NumPy's. A sum adds
in another order than NumPy's pairwise sum, within ``2 (n - 1) eps
sum(|x_i|)`` of it. A NaN that an operation makes (``inf - inf``) is the
GPU's, with the sign bit clear, where x86 sets it: NumPy's and these differ
in that bit only. Sums and the results of a nest of numbers are 0-d arrays,
as CuPy's eager calls give. A program's first replay is checked against
eager evaluation (:mod:`dualad._staging.retarget`), so a kernel that fails
to build or differs leaves its program to run eagerly, with a warning.

The kernels are tested without a GPU, compiled as C for the CPU
(``tests/_support/cuda_on_cpu.py``); ``benchmarks/gpu_check.py`` and the
``gpu`` tests run them on one.
"""

from __future__ import annotations

import importlib.util
import math
import struct
from typing import Any, Callable

import numpy as np

from dualad._program.executors.kernels import FirstRun, arguments, cached
from dualad._program.lowering import LoopNest, lower

__all__ = ["BLOCK", "MAX_BLOCKS", "OPTIONS", "TYPES", "available", "elementwise", "launch", "lowered", "raw"]

BLOCK = 256        # threads per block (a power of 2: the per-block sum halves it)
MAX_BLOCKS = 4096  # blocks of a grid-stride launch: some 30 per multiprocessor of a large GPU
OPTIONS = ("--fmad=false",)
NAME = "dualad_nest"

TYPES = {np.dtype(np.float64): "double", np.dtype(np.float32): "float", np.dtype(np.int64): "long long",
         np.dtype(np.int32): "int", np.dtype(np.bool_): "bool"}
_NUMBERS = {bool: "bool", int: "long long", float: "double"}  # Python numbers, as NumPy reads them
_UNSIGNED = {np.dtype(np.int64): "unsigned long long", np.dtype(np.int32): "unsigned int"}

# How each ufunc is written on operands already in the loop's dtype ({t}: its C type).
_WRITTEN = {
    "add": "({0} + {1})", "subtract": "({0} - {1})", "multiply": "({0} * {1})", "divide": "({0} / {1})",
    "negative": "(-{0})", "square": "({0} * {0})", "reciprocal": "(({t})1 / {0})",
    # NumPy's maximum and minimum: the first operand where it is NaN or strictly beyond the
    # second, else the second (so maximum(0.0, -0.0) is -0.0, as NumPy gives)
    "maximum": "(({0} > {1} || {0} != {0}) ? {0} : {1})",
    "minimum": "(({0} < {1} || {0} != {0}) ? {0} : {1})",
    "equal": "({0} == {1})", "not_equal": "({0} != {1})", "less": "({0} < {1})",
    "less_equal": "({0} <= {1})", "greater": "({0} > {1})", "greater_equal": "({0} >= {1})",
    "logical_and": "(({0} != 0) && ({1} != 0))", "logical_or": "(({0} != 0) || ({1} != 0))",
    "logical_not": "(!({0} != 0))", "where": "({0} ? {1} : {2})",
    "isnan": "isnan({0})", "isinf": "isinf({0})", "isfinite": "isfinite({0})",
    # NumPy's sign of a zero is +0, of NaN NaN
    "sign": "({0} > 0 ? ({t})1 : {0} < 0 ? ({t})-1 : {0} + ({t})0)",
}
# Integer loops: + - * on unsigned operands, cast back (NumPy wraps; C's signed overflow is undefined).
_INTEGER = {
    "add": "(({t})(({u}){0} + ({u}){1}))", "subtract": "(({t})(({u}){0} - ({u}){1}))",
    "multiply": "(({t})(({u}){0} * ({u}){1}))", "square": "(({t})(({u}){0} * ({u}){0}))",
    "negative": "(({t})(0 - ({u}){0}))", "absolute": "({0} < 0 ? ({t})(0 - ({u}){0}) : {0})",
    "sign": "(({t})(({0} > 0) - ({0} < 0)))",
    "maximum": "({0} > {1} ? {0} : {1})", "minimum": "({0} < {1} ? {0} : {1})",  # no NaN to propagate
}
# The C math library's name of each other ufunc (float32: with an f).
_MATH = {"absolute": "fabs", "arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
         "arccosh": "acosh", "arctanh": "atanh", "arctan2": "atan2"}

_KERNELS: dict[str, Any] = {}  # source -> CuPy kernel, for this process


def available() -> bool:
    """Whether CuPy is installed (without importing it)."""
    return importlib.util.find_spec("cupy") is not None


def lowered(program: Any) -> Any:
    """``program`` (NumPy's steps, to be retargeted to CuPy) lowered to loop nests run by
    CUDA kernels, or None where no group was lowered. Every group is: on a GPU each
    CuPy call is a launch and a pass over memory, which a kernel saves at any size.

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> p = dualad.compile(lambda x: np.sum(np.sin(x) * 2.0), executor="numpy").program(np.ones(3))
    >>> [str(e.prim) for e in lowered(p).eqns]  # built at its first call, on a GPU
    ['LoopNest([3]: sin multiply)']
    """
    out = lower(program, lambda nest: FirstRun(nest, _build))
    return None if out is program else out


def elementwise(nest: LoopNest) -> tuple[str, str, str] | None:
    """``(in_params, out_params, operation)`` of ``nest`` as a ``cupy.ElementwiseKernel``:
    operands ``a{k}``, stored values ``o{k}``; None where the nest sums, scatters, or
    reads an array other than whole (at an offset, or broadcast).

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> from dualad._program.lowering import lower
    >>> f = dualad.compile(lambda x, y: np.exp(x) * y - 1.0, executor="numpy")
    >>> nest = lower(f.program(np.ones(4), np.ones(4)), emit=lambda nest: None).eqns[0].prim
    >>> ins, outs, operation = elementwise(nest)
    >>> ins, outs
    ('float64 a0, float64 a1', 'float64 o0')
    >>> print(operation)
    const double x0 = a0;
    const double x1 = a1;
    const double x2 = 1.0;
    const double v0 = exp(x0);
    const double v1 = (v0 * x1);
    const double v2 = (v1 - x2);
    o0 = v2;
    """
    ndim = len(nest.shape)
    plain = all(load.scalar or (load.axes == tuple(range(ndim)) and set(load.offsets) <= {None})
                for load in nest.loads)
    if nest.sums or nest.scatters or not nest.stores or not plain:
        return None
    ins = [f"{load.dtype.name} a{k}" for k, load in enumerate(nest.loads) if not load.constant]
    outs = [f"{nest.ops[j].dtype.name} o{k}" for k, j in enumerate(nest.stores)]
    body = _body(nest, lambda k, load: f"a{k}") + [f"o{k} = v{j};" for k, j in enumerate(nest.stores)]
    return ", ".join(ins), ", ".join(outs), "\n".join(body)


def raw(nest: LoopNest) -> str:
    """The CUDA source of ``nest`` as a ``cupy.RawKernel`` named ``dualad_nest``, of
    arguments (as :func:`launch` gives them): the iteration count ``m``, the sizes
    ``n{a}``, each operand ``a{k}`` (a pointer; a number at ``a{k}[0]``) with the strides
    ``s{k}_{j}`` (in elements) of the axes it is indexed along, the offsets ``d{k}``, the
    starts ``g{r}`` and lengths ``h{r}`` of the scatters, then the arrays written: stored
    ``o{k}``, summed ``u{r}`` (zeroed before), scattered ``p{r}``.

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> from dualad._program.lowering import lower
    >>> f = dualad.compile(lambda x: np.sum(np.sqrt(x[1:]) * x[:-1]), executor="numpy")
    >>> nest = lower(f.program(np.ones(5)), emit=lambda nest: None).eqns[0].prim
    >>> text = raw(nest)
    >>> print(text.split("(")[1].split(")")[0].replace(", const", ",\\n const"))  # x passed twice
    long long m, long long n0,
     const double* a0, long long s0_0,
     const double* a1, long long s1_0, long long d0, double* u0
    >>> for line in text.splitlines()[6:12]:
    ...     print(line.strip())
    const long long i0 = e;
    const double x0 = a0[(i0 + d0) * s0_0];
    const double x1 = a1[i0 * s1_0];
    const double v0 = sqrt(x0);
    const double v1 = (v0 * x1);
    t0 += v1;
    """
    ndim, ops = len(nest.shape), nest.ops
    params = ["long long m", *(f"long long n{a}" for a in range(ndim))]
    for k, load in enumerate(nest.loads):
        if not load.constant:
            params.append(f"const {TYPES[load.dtype]}* a{k}")
            params += [f"long long s{k}_{j}" for j in _strided(load)]
    params += [f"long long d{k}" for k in range(len(nest.offsets))]
    params += [f"long long g{r}" for r in range(len(nest.scatters))]
    params += [f"long long h{r}" for r in range(len(nest.scatters))]
    params += [f"{TYPES[ops[j].dtype]}* o{k}" for k, j in enumerate(nest.stores)]
    params += [f"{TYPES[ops[j].dtype]}* u{r}" for r, j in enumerate(nest.sums)]
    params += [f"{TYPES[ops[a].dtype]}* p{r}" for r, (a, *_) in enumerate(nest.scatters)]
    body = _body(nest, _indexed)
    lines = [f"__shared__ {TYPES[ops[j].dtype]} r{r}[{BLOCK}];" for r, j in enumerate(nest.sums)]
    lines += [f"{TYPES[ops[j].dtype]} t{r} = 0;" for r, j in enumerate(nest.sums)]
    # the body at index e (the only index of a nest without scatters: m is its size)
    at_e = [*_unflatten(ndim), *body, *(f"o{k}[e] = v{j};" for k, j in enumerate(nest.stores)),
            *(f"t{r} += v{j};" for r, j in enumerate(nest.sums))]
    loop = []
    if nest.stores or nest.sums:
        loop += ["if (e < n0) {" if nest.scatters else "{", *_indent(at_e), "}"]
    for r, (a, b, shift, _, _) in enumerate(nest.scatters):
        # entry q of the scattered range is op a's value at q plus op b's at q - 1 (shift 1;
        # at q - 1 and q for shift -1), 0 where an index is outside the loop, in that order
        t = TYPES[ops[a].dtype]
        loop += [f"if (e < h{r}) {{", f"    const long long q{r} = e - g{r};", f"    {t} y{r} = 0, z{r} = 0;"]
        for name, j, lag in ((f"y{r}", a, int(shift == -1)), (f"z{r}", b, int(shift == 1))):
            index = f"q{r} - {lag}" if lag else f"q{r}"
            loop += _indent([f"if ({index} >= 0 && {index} < n0) {{",
                             *_indent([f"const long long i0 = {index};", *body, f"{name} = v{j};"]), "}"])
        loop += [f"    p{r}[e] = y{r} + z{r};", "}"]
    lines += ["const long long step = (long long)blockDim.x * gridDim.x;",
              "for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < m; e += step) {",
              *_indent(loop), "}"]
    for r in range(len(nest.sums)):
        lines += [f"r{r}[threadIdx.x] = t{r};", "__syncthreads();",
                  "for (unsigned int w = blockDim.x / 2; w > 0; w >>= 1) {",
                  "    if (threadIdx.x < w) {", f"        r{r}[threadIdx.x] += r{r}[threadIdx.x + w];",
                  "    }",
                  "    __syncthreads();", "}",
                  "if (threadIdx.x == 0) {", f"    atomicAdd(u{r}, r{r}[0]);", "}"]
    head = f'extern "C" __global__ void {NAME}({", ".join(params)}) {{'
    return "\n".join([head, *_indent(lines), "}"]) + "\n"


def launch(nest: LoopNest, xp: Any, operands: tuple) -> tuple[int, list, list]:
    """``(m, arguments, outputs)`` of a call of ``nest``'s :func:`raw` kernel on
    ``operands`` (arrays of ``xp``): ``m`` indices to walk, the kernel's arguments (the
    sizes, strides, offsets and starts as ``numpy.int64``), and the new arrays it writes
    (sums zeroed), in the order of the nest's outputs."""
    size = math.prod(nest.shape)
    m = max([size, *(length for *_, length in nest.scatters)])
    shapes = [nest.shape] * len(nest.stores) + [()] * len(nest.sums)
    shapes += [(length,) for *_, length in nest.scatters]
    outs = [(xp.zeros if len(nest.stores) <= r < len(shapes) - len(nest.scatters) else xp.empty)(shape, dtype)
            for r, (shape, (_, dtype)) in enumerate(zip(shapes, nest.kinds))]
    args: list = [np.int64(n) for n in (m, *nest.shape)]
    for load, x in zip([load for load in nest.loads if not load.constant], operands):
        x = x if isinstance(x, xp.ndarray) else xp.asarray(x, dtype=load.dtype)
        args.append(x)
        args += [np.int64(x.strides[j] // x.itemsize) for j in _strided(load)]
    args += [np.int64(n) for n in nest.offsets]
    args += [np.int64(start) for *_, start, _ in nest.scatters] + [np.int64(n) for *_, n in nest.scatters]
    return m, args + outs, outs


def _build(nest: LoopNest) -> Callable:
    """``nest``'s ``run``: its kernel (this process's, else built by CuPy) and its call."""
    import cupy

    params = elementwise(nest)
    if params is not None:
        kernel = cached(_KERNELS, "\n".join(params), lambda: cupy.ElementwiseKernel(
            *params, name=NAME, options=OPTIONS))
        stored = [(nest.shape, dtype) for _, dtype in nest.kinds]

        def run(*operands: Any) -> tuple:
            outs = [cupy.empty(shape, dtype) for shape, dtype in stored]
            kernel(*operands, *outs)
            return tuple(outs)
        return run
    text = raw(nest)
    kernel = cached(_KERNELS, text, lambda: cupy.RawKernel(text, NAME, options=OPTIONS))

    def run(*operands: Any) -> tuple:
        m, args, outs = launch(nest, cupy, operands)
        if m:
            kernel((min(-(-m // BLOCK), MAX_BLOCKS),), (BLOCK,), tuple(args))
        return tuple(outs)
    return run


def _body(nest: LoopNest, read: Callable[[int, Any], str]) -> list:
    """The lines computing ``nest``'s values at one index: ``x{k}`` each operand (a
    constant's literal, else ``read(k, load)``), ``v{j}`` each op's value."""
    lines = []
    for k, load in enumerate(nest.loads):
        t = TYPES[load.dtype] if load.dtype is not None else _NUMBERS[type(load.value)]
        lines.append(f"const {t} x{k} = {_literal(load.value) if load.constant else read(k, load)};")
    for j, op in enumerate(nest.ops):
        args = arguments(nest, op, lambda name, loop: f"(({TYPES[loop]}){name})")
        lines.append(f"const {TYPES[op.dtype]} v{j} = {_written(op.ufunc, op.loop, args)};")
    return lines


def _indexed(k: int, load: Any) -> str:
    """Operand ``k`` at the loop's index: ``a{k}[...]`` through its strides and offsets
    (index 0 along a broadcast axis)."""
    if load.scalar:
        return f"a{k}[0]"
    terms = []
    for j in _strided(load):
        ax, d = load.axes[j], load.offsets[j]
        index = f"d{d}" if ax is None else f"i{ax}" if d is None else f"(i{ax} + d{d})"
        terms.append(f"{index} * s{k}_{j}")
    return f"a{k}[{' + '.join(terms) or '0'}]"


def _strided(load: Any) -> list:
    """The axes along which an array operand is read at other than index 0: those of the
    loop's indices, and broadcast ones read at an offset (``x[1:]`` of length 1)."""
    return [j for j, (ax, d) in enumerate(zip(load.axes, load.offsets)) if ax is not None or d is not None]


def _unflatten(ndim: int) -> list:
    """Lines giving the loop indices ``i{a}`` of the flat (C-order) index ``e``."""
    if ndim <= 1:
        return ["const long long i0 = e;"] if ndim else []
    lines = ["long long rest = e;"]
    for a in range(ndim - 1, 0, -1):
        lines += [f"const long long i{a} = rest % n{a};", f"rest /= n{a};"]
    return [*lines, "const long long i0 = rest;"]


def _written(ufunc: str, loop: np.dtype, args: list) -> str:
    """``ufunc`` of ``args`` (C expressions in dtype ``loop``) as C, with NumPy's numbers."""
    t = TYPES[loop]
    if loop in _UNSIGNED and ufunc in _INTEGER:
        return _INTEGER[ufunc].format(*args, t=t, u=_UNSIGNED[loop])
    if ufunc in _WRITTEN:
        return _WRITTEN[ufunc].format(*args, t=t)
    name = _MATH.get(ufunc, ufunc) + ("f" if loop == np.float32 else "")
    return f"{name}({', '.join(args)})"


def _literal(value: Any) -> str:
    """A constant as C: a number as itself (the declaration casts it), inf and nan by their bits."""
    value = value.item() if isinstance(value, np.generic) else value
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is int:
        return f"{value}LL" if value > -2 ** 63 else "(-9223372036854775807LL - 1)"
    if math.isfinite(value):
        return repr(value)
    return f"__longlong_as_double({struct.unpack('<q', struct.pack('<d', value))[0]}LL)"


def _indent(lines: list) -> list:
    return [f"    {line}" for line in lines]

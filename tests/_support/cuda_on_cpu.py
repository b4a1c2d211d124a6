"""The CUDA kernels of the CuPy executor (dualad._program.executors.cupy) compiled as
plain C by the machine's C compiler and run on NumPy arrays, so that their numbers
are checked without a GPU.

A ``RawKernel`` runs as a grid of one block of one thread: ``#define``s give the
CUDA built-ins (``threadIdx``, ``blockDim``, ``__syncthreads``, ``atomicAdd``,
``__longlong_as_double``) their one-thread meaning, so its grid-stride loop walks
every index, its per-block sum is the thread's running sum, and it is called
through ctypes with the very arguments the executor launches it with
(:func:`~dualad._program.executors.cupy.launch` on NumPy). An
``ElementwiseKernel``'s operation runs in a loop over the elements of its
operands (broadcast and made contiguous, as CuPy indexes them). Built with
``-O0 -ffp-contract=off`` (no fused multiply-add, as ``--fmad=false`` asks of
the GPU's compiler), so the numbers are the C library's and the IEEE
operations', as the GPU's are CUDA's math library's and the same operations'.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from typing import Any, Callable, Iterator

import numpy as np
import pytest

import dualad
from dualad._program.executors import cupy as cupy_executor
from dualad._program.executors.replay import replay
from dualad._program.lowering import LoopNest, lower
from dualad._staging import compile as compile_module
from dualad._staging import pipeline

__all__ = ["COMPILER", "COMPILER_CXX", "NEEDS_COMPILER", "cxx_errors", "elementwise_run", "executor_run",
           "kernels_on_cpu", "raw_run", "replays", "runs"]

COMPILER = shutil.which("gcc") or shutil.which("cc")
COMPILER_CXX = shutil.which("g++") or shutil.which("c++")
NEEDS_COMPILER = pytest.mark.skipif(COMPILER is None,
                                    reason="no C compiler to build the CUDA kernels for the CPU")

_PRELUDE = r"""
#include <math.h>
#include <stdbool.h>
#include <string.h>
static const struct { int x; } threadIdx = {0}, blockIdx = {0}, blockDim = {1}, gridDim = {1};
#define __global__
#define __shared__ static
#define __syncthreads()
#define atomicAdd(p, v) (*(p) += (v))
static double __longlong_as_double(long long bits) { double d; memcpy(&d, &bits, sizeof d); return d; }
"""
# NVRTC compiles C++: the CUDA built-ins declared for a C++ compiler's syntax check
_CXX_PRELUDE = r"""
#include <math.h>
struct Dim { unsigned int x; };
extern const Dim threadIdx, blockIdx, blockDim, gridDim;
#define __global__
#define __shared__ static
void __syncthreads();
template <class T> T atomicAdd(T* address, T value);
double __longlong_as_double(long long bits);
"""
_FOLDER = tempfile.mkdtemp(prefix="dualad-cuda-on-cpu-")
_LIBRARIES: dict[str, ctypes.CDLL] = {}


def _library(text: str) -> ctypes.CDLL:
    """``text`` (C after the prelude) built into a shared library, once per text."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:24]
    if digest not in _LIBRARIES:
        c, so = (os.path.join(_FOLDER, f"k{digest}.{ext}") for ext in ("c", "so"))
        with open(c, "w") as file:
            file.write(_PRELUDE + text)
        subprocess.run([COMPILER, "-O0", "-ffp-contract=off", "-shared", "-fPIC", "-o", so, c, "-lm"],
                       check=True, capture_output=True, text=True)
        _LIBRARIES[digest] = ctypes.CDLL(so)
    return _LIBRARIES[digest]


def cxx_errors(text: str) -> str:
    """What a C++17 compiler (``COMPILER_CXX``) says of the CUDA source ``text``, warnings
    of ``-Wall`` included: empty where it has nothing to say."""
    path = os.path.join(_FOLDER, f"k{hashlib.sha256(text.encode()).hexdigest()[:24]}.cpp")
    with open(path, "w") as file:
        file.write(_CXX_PRELUDE + text)
    checked = subprocess.run([COMPILER_CXX, "-std=c++17", "-fsyntax-only", "-Wall", "-Wno-unused-variable",
                              "-Wno-unused-but-set-variable", path], capture_output=True, text=True)
    return checked.stderr


def _c(arg: Any) -> Any:
    return ctypes.c_void_p(arg.ctypes.data) if isinstance(arg, np.ndarray) else ctypes.c_longlong(int(arg))


def _as_eager(nest: LoopNest, outs: list) -> tuple:
    """The outputs as the NumPy executor gives them: a number as NumPy's scalar."""
    return tuple(out if kind is np.ndarray else kind(out[()]) for out, (kind, _) in zip(outs, nest.kinds))


def raw_run(nest: LoopNest) -> Callable:
    """``run(*operands)`` of ``nest`` by its ``RawKernel`` source, compiled for the CPU."""
    kernel = _library(cupy_executor.raw(nest).replace('extern "C" ', "")).dualad_nest

    def run(*operands: Any) -> tuple:
        m, args, outs = cupy_executor.launch(nest, np, operands)
        if m:
            kernel(*map(_c, args))
        return _as_eager(nest, outs)
    return run


def elementwise_run(nest: LoopNest) -> Callable:
    """``run(*operands)`` of ``nest`` by its ``ElementwiseKernel`` operation, compiled for
    the CPU inside a loop over the elements."""
    in_params, out_params, operation = cupy_executor.elementwise(nest)
    ins, outs = ([p.split() for p in params.split(", ") if p] for params in (in_params, out_params))
    ctype = {dtype.name: name for dtype, name in cupy_executor.TYPES.items()}
    params = [f"const {ctype[t]}* {name.upper()}" for t, name in ins] + [f"{ctype[t]}* {name.upper()}"
                                                                         for t, name in outs]
    lines = [f"void run(long long n, {', '.join(params)}) {{", "for (long long i = 0; i < n; i++) {",
             *(f"const {ctype[t]} {name} = {name.upper()}[i];" for t, name in ins),
             *(f"{ctype[t]} {name};" for t, name in outs), operation,
             *(f"{name.upper()}[i] = {name};" for _, name in outs), "}", "}"]
    kernel = _library("\n".join(lines) + "\n").run

    def run(*operands: Any) -> tuple:
        arrays = [np.ascontiguousarray(np.broadcast_to(x, nest.shape), np.dtype(t))
                  for x, (t, _) in zip(operands, ins)]
        results = [np.empty(nest.shape, np.dtype(t)) for t, _ in outs]
        kernel(ctypes.c_longlong(int(np.prod(nest.shape))), *map(_c, arrays + results))
        return _as_eager(nest, results)
    return run


def runs(build: Callable[[LoopNest], Callable], counts: list) -> Callable:
    """An ``emit`` for :func:`~dualad._program.lowering.lower`: each nest's ``build(nest)``,
    counting its calls into ``counts`` (a test must see that a kernel ran)."""
    def emit(nest: LoopNest) -> Callable:
        run = build(nest)

        def counted(*operands: Any) -> tuple:
            counts.append(nest)
            return run(*operands)
        return counted
    return emit


def executor_run(nest: LoopNest) -> Callable:
    """``run`` of ``nest`` by the kernel the executor builds for it: an
    ``ElementwiseKernel`` where it is one, else a ``RawKernel``."""
    return elementwise_run(nest) if cupy_executor.elementwise(nest) is not None else raw_run(nest)


def replays(f: Callable, *args: Any, build: Callable[[LoopNest], Callable] = executor_run) -> list:
    """``f``'s optimized program at ``args`` replayed with its nests run by ``build``, and
    by the NumPy executor: ``[got, want]`` (a nest must have run)."""
    compiled = dualad.compile(f, executor="numpy", fuse=False)
    counts: list = []
    with np.errstate(all="ignore"):  # the trace (eager evaluation) too, at special values
        program = compiled.program(*args)
        inputs = compiled._key(args, {})[1]
        lowered = lower(program, runs(build, counts))
        want, got = replay(program, inputs), replay(lowered, inputs)
    assert counts, "no loop nest ran"
    return [program.rebuild(got), program.rebuild(want)]


@contextlib.contextmanager
def kernels_on_cpu() -> Iterator[list]:
    """Within: ``dualad.compile(f, executor="cupy")`` takes NumPy arrays as it takes CuPy's
    (the program lowered by the executor's own :func:`~dualad._program.executors.cupy.lowered`),
    and each nest's kernel, at its first call, is built for the CPU instead of by CuPy;
    gives the list of the nests run, one entry a call."""
    counts: list = []
    asked = pipeline.asked
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cupy_executor, "available", lambda: True)
        patch.setattr(cupy_executor, "_build", runs(executor_run, counts))
        cupy_everywhere = lambda executor, like: (
            "cupy" if executor == "cupy" and like is None else asked(executor, like))
        patch.setattr(compile_module, "asked", cupy_everywhere)  # what a compiled call asks
        patch.setattr(pipeline, "asked", cupy_everywhere)  # what a Dask program's parts ask
        yield counts

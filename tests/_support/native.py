"""The native executors' replays, to check their numbers against the NumPy executor's:
each ``replays(f, *args)`` returns the two replays of ``f``'s program at ``args``, one
by the native kernels (which must run), one by the NumPy executor. :data:`REPLAYS`
names those this machine can run: Numba's where Numba is installed, and the CuPy
executor's CUDA kernels compiled as C for the CPU (tests/_support/cuda_on_cpu.py)
where a C compiler is, as the CuPy executor builds them and as ``RawKernel``s only;
on a GPU (the ``gpu`` marker), the CuPy executor itself on CuPy arrays."""

from __future__ import annotations

import numpy as np
import pytest

import dualad
from _support import cuda_on_cpu
from _support.backends import _gpu_available
from dualad._base.backend import to_host
from dualad._base.tree import flatten
from dualad._program.executors import numba as numba_executor

__all__ = ["REPLAYS", "assert_bits", "cupy_replays", "numba_replays", "replay"]


def replay(f, executor, *args):
    """``f``'s replay at ``args`` on ``executor`` (which must run it)."""
    compiled = dualad.compile(f, executor=executor)
    with np.errstate(all="ignore"):
        compiled(*args)  # the trace: eager evaluation
        out = compiled(*args)
    assert compiled.stats["executor"] == executor and compiled.stats["replays"] == 1, (
        compiled.stats, sorted(set(compiled._eager.values())))
    return out


def numba_replays(f, *args):
    """``f``'s replay at ``args`` on the NumPy executor, then on Numba's, its kernels'
    own numbers: unchecked (``CHECK_BELOW`` 0), where a kernel of few iterations would
    hand a result that is not finite to NumPy's calls instead."""
    checked, numba_executor.CHECK_BELOW = numba_executor.CHECK_BELOW, 0
    try:
        return [replay(f, "numpy", *args), replay(f, "numba", *args)]
    finally:
        numba_executor.CHECK_BELOW = checked


def cupy_replays(f, *args):
    """``f``'s replay at ``args`` as CuPy arrays on the CuPy executor (its first replay
    checked against CuPy's eager calls, as every CuPy program's is), brought to the host
    with numbers as NumPy's scalars; then the NumPy executor's replay."""
    import cupy

    got, want = replay(f, "cupy", *map(cupy.asarray, args)), replay(f, "numpy", *args)
    leaves, rebuild = flatten(got)
    return [rebuild([to_host(g) if isinstance(w, np.ndarray) else type(w)(to_host(g)[()])
                     for g, w in zip(leaves, flatten(want)[0])]), want]


def _cuda_raw_replays(f, *args):
    return cuda_on_cpu.replays(f, *args, build=cuda_on_cpu.raw_run)


REPLAYS = [
    pytest.param(numba_replays, id="numba",
                 marks=pytest.mark.skipif(not numba_executor.available(), reason="Numba is not installed")),
    pytest.param(cuda_on_cpu.replays, id="cuda-on-cpu", marks=cuda_on_cpu.NEEDS_COMPILER),
    pytest.param(_cuda_raw_replays, id="cuda-raw-on-cpu", marks=cuda_on_cpu.NEEDS_COMPILER),
    pytest.param(cupy_replays, id="cupy", marks=[
        pytest.mark.gpu, pytest.mark.skipif(not _gpu_available(), reason="needs CuPy and an NVIDIA GPU")]),
]


def assert_bits(got, want):
    """Equal to the bit (any NaN equals any NaN: a GPU makes NaNs of another sign than
    x86), the sign of zeros, shape and dtype too."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.dtype)
    assert np.array_equal(got, want, equal_nan=got.dtype.kind == "f"), (got, want)
    if got.dtype.kind == "f":
        numbers = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))

"""The native executors' replays, to check their numbers against the NumPy executor's:
each ``replays(f, *args)`` returns the two replays of ``f``'s program at ``args``, one
by the native kernels (which must run), one by the NumPy executor. :data:`REPLAYS`
names those this machine can run: Numba's where Numba is installed, and the CuPy
executor's CUDA kernels compiled as C for the CPU (tests/_support/cuda_on_cpu.py)
where a C compiler is, as the CuPy executor builds them and as ``RawKernel``s only."""

from __future__ import annotations

import numpy as np
import pytest

import dualad
from _support import cuda_on_cpu
from dualad._program.executors import numba as numba_executor

__all__ = ["REPLAYS", "assert_bits", "numba_replays"]


def numba_replays(f, *args):
    """``f``'s replay at ``args`` on the NumPy executor, then on Numba's (which must run)."""
    out = []
    for executor in ("numpy", "numba"):
        compiled = dualad.compile(f, executor=executor)
        with np.errstate(all="ignore"):
            compiled(*args)  # the trace: eager evaluation
            out.append(compiled(*args))
        assert compiled.stats["executor"] == executor and compiled.stats["replays"] == 1
    return out


def _cuda_raw_replays(f, *args):
    return cuda_on_cpu.replays(f, *args, build=cuda_on_cpu.raw_run)


REPLAYS = [
    pytest.param(numba_replays, id="numba",
                 marks=pytest.mark.skipif(not numba_executor.available(), reason="Numba is not installed")),
    pytest.param(cuda_on_cpu.replays, id="cuda-on-cpu", marks=cuda_on_cpu.NEEDS_COMPILER),
    pytest.param(_cuda_raw_replays, id="cuda-raw-on-cpu", marks=cuda_on_cpu.NEEDS_COMPILER),
]


def assert_bits(got, want):
    """Equal to the bit (any NaN equals any NaN), the sign of zeros, shape and dtype too."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.dtype)
    assert np.array_equal(got, want, equal_nan=got.dtype.kind == "f"), (got, want)
    if got.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))

"""What a traced program goes through before it is kept: the optimization passes,
in order, and the executor it is made ready for (Numba's or CUDA kernels where they
are asked for or pay, numexpr's fused kernels, or NumPy's calls).
"""

from __future__ import annotations

from typing import Any

import array_api_compat

from dualad._program.executors import cupy as cupy_executor
from dualad._program.executors import numba as numba_executor
from dualad._program.executors.scalar import unrolled_us
from dualad._program.passes.cse import eliminate_common_subexpressions
from dualad._program.passes.dce import eliminate_dead_code
from dualad._program.passes.fusion import fuse_elementwise
from dualad._program.passes.simplify import fold_constants, simplify
from dualad._program.program import Program

__all__ = ["asked", "for_executor", "on_dask", "optimize", "prepare"]


def optimize(program: Program, fuse: bool = True) -> Program:
    """The optimization passes, in order, on a freshly traced program: exact algebraic
    simplification, constant folding, common-subexpression and dead-code elimination,
    then (``fuse``, where numexpr is installed) elementwise fusion. Dead code goes first
    too: a rewrite that needs its operand used once must not count dead readers (a
    JVP's tangent of an output no one returns, say)."""
    program = simplify(eliminate_dead_code(program))
    program = eliminate_dead_code(eliminate_common_subexpressions(fold_constants(program)))
    return fuse_elementwise(program) if fuse else program


def prepare(program: Program, optimized: bool, executor: str | None, fuse: bool) -> Program:
    """A part of a program chunked over Dask arrays (cut from the program as optimized, when
    the compile optimizes), lowered or fused for its executor as a NumPy program is."""
    if not optimized:
        return program
    return for_executor(program, asked(executor, None), fuse)[0]


def asked(executor: str | None, like: Any) -> str | None:
    """The executor a program is made ready for, where ``compile`` was asked for
    ``executor`` and the program traced on NumPy copies of arrays like ``like`` (None: on
    NumPy's own): CUDA kernels only for CuPy arrays (asked, or None where CuPy is
    installed), the kernels of numexpr and Numba only for NumPy's (the other libraries'
    programs replay as a call per primitive)."""
    if like is None:
        return "numpy" if executor == "cupy" else executor
    if array_api_compat.is_cupy_array(like) and executor in (None, "cupy") and cupy_executor.available():
        return "cupy"
    return "numpy"


def for_executor(program: Program, executor: str | None, fuse: bool) -> tuple:
    """``(program made ready for its executor, the executor's name)``: lowered to CUDA
    kernels where ``executor`` is "cupy" (see :func:`~dualad._program.executors.cupy.lowered`),
    to Numba kernels where it is "numba", or None and the lowering pays (see
    :func:`~dualad._program.executors.numba.lowered`); else fused by numexpr where
    ``fuse``."""
    lowered = cupy_executor.lowered(program) if executor == "cupy" else None
    if lowered is not None:
        return lowered, "cupy"
    if executor == "numba" or (executor is None and numba_executor.available()):
        lowered = numba_executor.lowered(program, forced=executor == "numba")
        if lowered is not None and (executor == "numba" or _kernels_pay(program, lowered)):
            return lowered, "numba"
    return (fuse_elementwise(program) if fuse else program), "numpy"


def _kernels_pay(program: Program, lowered: Program) -> bool:
    """Whether Numba's kernels, not asked for, replay ``program`` (``lowered``) cheaper than
    Python floats where it unrolls to them (not so where its nests are many and small: a
    nest per getitem and scatter of a few numbers), and compile in reasonable time."""
    ours, unrolled = numba_executor.replay_us(lowered), unrolled_us(program)
    return ours < float("inf") and (unrolled is None or ours < unrolled)


def on_dask(inputs: list, program: Program) -> bool:
    """Whether a program traced on ``inputs`` reads Dask arrays (inputs, or constants
    the function closes over)."""
    return any(map(array_api_compat.is_dask_array, inputs)) or any(
        map(array_api_compat.is_dask_array, program.consts.values()))

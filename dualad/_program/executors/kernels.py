"""What the kernel emitters share (:mod:`~dualad._program.executors.numba`,
:mod:`~dualad._program.executors.cupy`): a nest's kernel built at its first run,
kernels kept by their source, and how an operation reads its arguments."""

from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np

from dualad._program.lowering import LoopNest, Op

__all__ = ["FirstRun", "arguments", "cached"]

_LOCK = threading.RLock()  # a first call holds it while it builds its kernel


class FirstRun:
    """A nest's first ``run``: ``build(nest)`` (under a lock: once, whichever thread calls
    first) becomes the nest's ``run``, and runs the call."""

    def __init__(self, nest: LoopNest, build: Callable[[LoopNest], Callable]):
        self.nest, self.build = nest, build

    def __call__(self, *operands: Any) -> tuple:
        with _LOCK:
            if type(self.nest.run) is FirstRun:
                self.nest.run = self.build(self.nest)
        return self.nest.run(*operands)


def cached(kernels: dict, key: str, make: Callable[[], Any]) -> Any:
    """``kernels[key]``, made by ``make()`` (under the lock) where it is missing."""
    with _LOCK:
        kernel = kernels.get(key)
        if kernel is None:
            kernel = kernels[key] = make()
    return kernel


def arguments(nest: LoopNest, op: Op, convert: Callable[[str, np.dtype], str]) -> list:
    """Each argument of ``op`` in a kernel, as NumPy casts it to the loop's dtype (but
    ``where``'s condition to bool): ``x{k}`` for operand ``k``, ``v{j}`` for op ``j``'s
    value, as it is where of that dtype, ``(name != 0)`` as a bool, else ``convert(name,
    dtype)`` (a Python number, of no dtype, is always converted)."""
    out = []
    for i, (kind, k) in enumerate(op.args):
        name, dtype = (f"x{k}", nest.loads[k].dtype) if kind == "in" else (f"v{k}", nest.ops[k].dtype)
        loop = np.dtype(np.bool_) if op.ufunc == "where" and i == 0 else op.loop
        out.append(name if dtype == loop else f"({name} != 0)" if loop == np.bool_ else convert(name, loop))
    return out

"""The memory plan of a program: intermediates written into buffers kept between replays.

A replay that allocates each intermediate pays for it in page faults once
arrays outgrow malloc's pools (about 128 KiB): at a million entries a fresh
result costs more than the arithmetic that fills it. :func:`plan` assigns
the results of elementwise steps to a few buffers by liveness: a buffer is
free again after the last step that reads its value, and the steps write
into it with NumPy's ``out=``, so a replay allocates only what it returns
and what other primitives make.

What is planned is chosen so that no buffer can be seen from outside or
change under a reader:

- only the results of NumPy ufuncs (:func:`~dualad._program.ir.ufunc_of`: an entry's declared
  ``ufunc``) and fused numexpr kernels (:mod:`dualad._program.passes.fusion`,
  ``takes_out``), whose ``out=`` gives the result eager evaluation gives
  (dtype and shape come from the trace);
- only where every step reading the result is such a ufunc too, a guard,
  or one whose primitive declares ``new_array`` (a sum, the two scatters'
  sum): a ufunc makes a new array, never a view, and so do those, so nothing
  keeps a reference to a buffer past its last reader;
- never an output of the program, never a 0-d result (eager gives a NumPy
  scalar there), nor one under ``MIN_SIZE`` entries (a small allocation is
  cheaper than the ``out=`` keyword).

Buffers belong to the thread that replays (two threads replaying one
program do not share them).
"""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np

from dualad._base.backend import NUMPY_XP
from dualad._program.ir import Eqn, Guard, ufunc_of

__all__ = ["MIN_SIZE", "MemoryPlan", "plan"]

MIN_SIZE = 4096


class MemoryPlan:
    """``slots``: slot -> buffer number; ``buffers``: ``(shape, dtype)`` of each.

    ``get()`` gives this thread's buffers, made on its first replay.
    """

    def __init__(self, slots: dict, buffers: list):
        self.slots, self.buffers = slots, buffers
        self._local = threading.local()

    def __len__(self) -> int:
        return len(self.buffers)

    def get(self) -> list:
        made = getattr(self._local, "made", None)
        if made is None:
            made = self._local.made = [np.empty(shape, dtype) for shape, dtype in self.buffers]
        return made


def plan(program: Any) -> MemoryPlan:
    """Assign the elementwise intermediates of ``program`` to buffers (see the module's
    docstring for what is planned).

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> f = dualad.compile(lambda x: np.sum(np.sin(x) * 2.0 + 1.0), executor="numpy")
    >>> p = f.program(np.zeros(10_000))
    >>> memory = plan(p)
    >>> len(memory), sorted(memory.slots)  # sin's result, the product and the sum share one buffer
    (1, [1, 3, 5])
    """
    steps = program.steps
    readers: dict[int, list] = {}  # slot -> the steps that read it
    for i, step in enumerate(steps):
        for s in ((step.slot,) if type(step) is Guard else step.ins):
            readers.setdefault(s, []).append(i)
    ufuncs = {i: ufunc_of(step) for i, step in enumerate(steps) if type(step) is Eqn}
    outputs = set(program.outputs)

    def safe_reader(r: int) -> bool:  # keeps no reference to the buffer it reads
        step = steps[r]
        return type(step) is Guard or ufuncs[r] is not None or (
            step.xp is NUMPY_XP and step.prim.new_array)

    def planned(i: int) -> bool:
        step = steps[i]
        if type(step) is not Eqn or ufuncs[i] is None or len(step.outs) != 1:
            return False
        s = step.outs[0]
        kind, shape, dtype = program.avals.get(s, (None, None, None))
        if kind is not np.ndarray or s in outputs or not shape or math.prod(shape) < MIN_SIZE:
            return False
        return all(map(safe_reader, readers.get(s, ())))

    slots, buffers, free, holder = {}, [], {}, {}  # free: (shape, dtype) -> buffer numbers
    last = {s: max(rs) for s, rs in readers.items()}
    for i, step in enumerate(steps):
        if type(step) is Guard:
            continue
        for s in step.ins:  # buffers whose last reader is this step are free for its result
            if s in slots and last[s] == i and holder.get(slots[s]) == s:
                free.setdefault(buffers[slots[s]], []).append(slots[s])
                del holder[slots[s]]
        if not planned(i):
            continue
        s = step.outs[0]
        _, shape, dtype = program.avals[s]
        key = (tuple(shape), np.dtype(dtype))
        pool = free.get(key)
        if pool:
            b = pool.pop()
        else:
            b = len(buffers)
            buffers.append(key)
        slots[s], holder[b] = b, s
    return MemoryPlan(slots, buffers)

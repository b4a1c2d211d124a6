"""Replaying a program on its own: the executor a :class:`~dualad._program.program.Program`
runs on where nothing chose another, made at its first use and kept for the program.

A program is data; what runs it lives here. Its replay is the unrolled Python on floats
of :mod:`~dualad._program.executors.scalar` where the program's values are a few float64
numbers, else the straight-line NumPy calls of
:mod:`~dualad._program.executors.generated`; where a kernel of a lowered program finds
a result that is not finite, the program it was lowered from (``Program.rerun_by``)
replays the call instead, with NumPy's warnings.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

from dualad._program.executors.generated import generate
from dualad._program.executors.scalar import scalar_executor
from dualad._program.lowering import NotFinite
from dualad._program.program import Program

__all__ = ["ordinary", "replay", "runner"]

# program -> its replay, and its ordinary (generated) replay, made once each
_RUNNERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_ORDINARY: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def replay(program: Any, inputs: list) -> Any:
    """The output leaves of ``program`` for ``inputs`` (a list of raw arrays), or a
    ``GuardMiss``.

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> p = dualad.compile(lambda x: np.sin(x) * 2.0).program(np.zeros(3))
    >>> replay(p, [np.full(3, np.pi / 2)])
    [array([2., 2., 2.])]
    """
    return runner(program)(*inputs)


def runner(program: Any) -> Callable:
    """The replay of ``program`` as a function of its inputs, ``run(*inputs)``, made at its
    first use (a caller that replays often keeps it). What an executor made of a program
    in its own form (a Dask program of tasks) gives its own."""
    if type(program) is not Program:
        return program.runner()
    run = _RUNNERS.get(program)
    if run is None:
        # the scalar executor falls back on the ordinary replay only where Python raises or
        # an output is not finite: generated then, not before
        run = scalar_executor(program, lambda *xs: ordinary(program)(*xs)) or ordinary(program)
        if program.rerun_by is not None:
            run = _rerun_where_not_finite(run, program.rerun_by)
        _RUNNERS[program] = run
    return run


def ordinary(program: Any) -> Callable:
    """The generated replay of ``program``: a NumPy call per primitive (never Python on
    floats), with NumPy's warnings once per step where a value is not finite."""
    run = _ORDINARY.get(program)
    if run is None:
        run = _ORDINARY[program] = generate(program)
    return run


def _rerun_where_not_finite(run: Callable, other: Any) -> Callable:
    """``run``, replayed by ``other`` instead where a kernel raises :class:`NotFinite`."""
    def checked(*inputs: Any) -> Any:
        try:
            return run(*inputs)
        except NotFinite:
            return runner(other)(*inputs)
    return checked

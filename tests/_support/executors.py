"""The executors a compiled program replays on (``dualad.compile(f, executor=...)``):
the replay-equals-eager tests run on each one installed, NumPy's always, Numba's
where Numba is (the ``fast`` and ``test`` extras)."""

from __future__ import annotations

from dualad._program.executors import numba as _numba

EXECUTORS = ["numpy", *(["numba"] if _numba.available() else [])]

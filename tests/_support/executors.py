"""The executors a compiled program replays on (``dualad.compile(f, executor=...)``):
the replay-equals-eager tests run on each one installed, NumPy's always, Numba's
where Numba is (the ``fast`` and ``test`` extras); and a count of the calls that do
not take a compiled function's hot path."""

from __future__ import annotations

from dualad._program.executors import numba as _numba

EXECUTORS = ["numpy", *(["numba"] if _numba.available() else [])]


def full_way_counted(compiled, monkeypatch) -> list:
    """Count the calls that take the full way (``Compiled._call``) rather than the hot path:
    the list returned gets each one's arguments."""
    full = []
    call = compiled._call
    monkeypatch.setattr(compiled, "_call", lambda args, kwargs: full.append(args) or call(args, kwargs))
    return full

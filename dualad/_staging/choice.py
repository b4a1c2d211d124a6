"""Which way a compiled function's calls run, chosen by measuring them: its program's
replay, the same program replayed by NumPy's calls instead of Numba's kernels, or the
function itself, eagerly.

A replay makes one call per primitive the trace recorded. Where those are many and
small (a Python loop over arrays of a few numbers), its cost per primitive can exceed
what the function's own NumPy calls cost, and kernels compiled for a program can lose
to NumPy's calls (benchmarks/README.md, "ADBench (issue 36)"). Which way is faster
depends on the machine, the sizes and the program, so :class:`Trial` times them on the
calls after a trace: each candidate in turn, its first call untimed (it gets ready:
code generated, kernels compiled, caches warmed), then at least :data:`TIMED` calls
timed, more where they are short (up to :data:`MOST`, or :data:`ENOUGH_SECONDS` of
them), so that the best of them is steady; the fastest by its best time runs from
then on. Where the runner-up's best is within :data:`NEAR` of it, the two are timed
again, :data:`RETIMED` calls each, in turn, before the choice (the first candidate's
block of calls runs earliest in the process, when allocations and caches are still
warming, and a busy machine moves single calls by that much). Each call runs one
candidate and returns its result: nothing runs twice.
"""

from __future__ import annotations

from typing import Callable

__all__ = ["EAGER", "ENOUGH_SECONDS", "MOST", "NEAR", "RETIMED", "TIMED", "Trial"]

EAGER = "eager"          # the candidate that calls the function itself
TIMED = 2                # timed calls of each candidate at least
MOST = 10                # and at most: calls of a few microseconds vary by a few
ENOUGH_SECONDS = 2e-3    # their time from which the best of them is steady (in between)
NEAR = 0.5               # a runner-up within this fraction of the best is timed again
RETIMED = 3              # calls of each of the two, alternating, when they are


class Trial:
    """The timing of one key's calls, candidate by candidate, until one is chosen.

    ``candidates`` is a list of ``(name, program)``: the program a replay runs, a
    function that makes it (called once, at the candidate's first call), or None for
    :data:`EAGER`. Replays come first, so a function's first replays count as before.

    Examples
    --------
    >>> trial = Trial([("numpy", "p"), (EAGER, None)])
    >>> [trial.next()[2] for _ in range(2)]  # the first call untimed, the second timed
    [False, True]
    >>> trial.timed("numpy", 3e-3); trial.timed("numpy", 2e-3)
    >>> trial.next(), trial.next(), trial.chosen
    (('eager', None, False), ('eager', None, True), None)
    >>> trial.timed(EAGER, 1e-3); trial.timed(EAGER, 1.5e-3)
    >>> trial.chosen, trial.why
    ('eager', 'eager: replays (numpy) 2 ms, eager calls 1 ms, the best of 2 calls or more each')
    """

    def __init__(self, candidates: list, ready: Callable | None = None):
        self.candidates = dict(candidates)
        self.ready = ready  # None, or whether the candidates can be timed yet (see waiting)
        self.program = candidates[0][1]  # the program traced, which a trial of a key's calls times
        self._times: dict[str, list] = {name: [] for name in self.candidates}
        self._ready: set = set()
        self._again: list | None = None  # the near pair's calls still to time, in turn
        self.chosen: str | None = None
        self.why: str | None = None

    def waiting(self) -> bool:
        """Whether the timing waits (kernels compiling in the background): calls meanwhile
        replay the program untimed."""
        if self.ready is None:
            return False
        if self.ready():
            self.ready = None
            return False
        return True

    def next(self) -> tuple:
        """``(name, program, timed)``: the candidate this call runs (its program made
        where it is made at its first call), and whether the call is timed."""
        if self._again:
            name = self._again[0]
            return name, self.candidates[name], True
        name = next(n for n, times in self._times.items() if not _enough(times))
        ready = name in self._ready
        if not ready:
            self._ready.add(name)
            program = self.candidates[name]
            if callable(program):
                self.candidates[name] = program()
        return name, self.candidates[name], ready

    def timed(self, name: str, seconds: float) -> None:
        """One timed call of candidate ``name``; where every candidate has its timings,
        the fastest is chosen (``chosen``) and ``why`` says so in figures."""
        self._times[name].append(seconds)
        if self._again:
            if name == self._again[0]:
                self._again.pop(0)
            if self._again:
                return
        elif not all(map(_enough, self._times.values())):
            return
        best = {n: min(t) for n, t in self._times.items()}
        ranked = sorted(best, key=best.get)
        if self._again is None and len(ranked) > 1 and best[ranked[1]] <= (1 + NEAR) * best[ranked[0]]:
            self._again = [n for _ in range(RETIMED) for n in ranked[:2]]
            return
        self.chosen = ranked[0]
        replays = ", ".join(f"replays ({n}) {_ms(t)}" for n, t in best.items() if n != EAGER)
        eager = f", eager calls {_ms(best[EAGER])}" if EAGER in best else ""
        again = (f"; {ranked[0]} and {ranked[1]} timed again in turn, within {NEAR:.0%} of each other"
                 if self._again is not None else "")
        self.why = f"{self.chosen}: {replays}{eager}, the best of {TIMED} calls or more each{again}"


def _enough(times: list) -> bool:
    return len(times) >= MOST or (len(times) >= TIMED and sum(times) >= ENOUGH_SECONDS)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"

"""A rolled loop: one step of a program that runs a body, a program of its own, a number
of times (made by :mod:`dualad._program.passes.roll` from a trace that repeats a body).

The body's inputs are, in order, the values every trip reads alike (``fixed``), the
values carried from one trip to the next (their first values are inputs of the step,
the next ones outputs of the body), and the values each trip reads of its own
(``per_trip`` of them, trip after trip in the step's inputs). The step's outputs are the
values of given trips that the program reads after the loop.
"""

from __future__ import annotations

from typing import Any, Callable

from dualad._base.core import bind
from dualad._program.ir import Step

__all__ = ["Loop", "PerTrip"]


class Loop(Step):
    """``trips`` runs of ``body``: the primitive of a rolled loop's step.

    Parameters
    ----------
    body : Program
        Its inputs are ``n_fixed`` values, then ``len(carried)`` carried values, then
        ``per_trip`` values of each trip.
    trips : int
        How many times the body runs.
    carried : list of int
        For each carried input, the body's output that is its value at the next trip.
    exported : list of (int, int)
        For each output of the step, ``(trip, the body's output)`` whose value it is.
    trip_params : list of lists
        For each :class:`PerTrip` step of the body, its parameters at each trip: the
        body's last inputs.
    runner : callable
        ``runner(body)`` is the body's replay, made at its first use (the program's own
        executor: :func:`dualad._program.executors.replay.runner`).
    """

    name = "loop"
    multiple_results = True

    def __init__(self, body: Any, trips: int, n_fixed: int, carried: list, per_trip: int,
                 exported: list, trip_params: list, runner: Callable):
        self.body, self.trips, self.n_fixed, self.per_trip = body, trips, n_fixed, per_trip
        self.runner = runner
        self.carried, self.exported = list(carried), list(exported)
        # each trip's parameters of the body's PerTrip steps, its last inputs
        self.trip_params = list(trip_params)
        self._params = [tuple(p[trip] for p in trip_params) for trip in range(trips)]
        self._at: dict[int, list] = {}  # trip -> [(output of the step, output of the body)]
        for position, (trip, out) in enumerate(self.exported):
            self._at.setdefault(trip, []).append((position, out))

    def impl(self, xp: Any, *args: Any) -> tuple:
        run = self.runner(self.body)
        n_carried, per_trip, at, carried_from = len(self.carried), self.per_trip, self._at, self.carried
        fixed = args[:self.n_fixed]
        carried = args[self.n_fixed:self.n_fixed + n_carried]
        sliced = args[self.n_fixed + n_carried:]
        results = [None] * len(self.exported)
        params = self._params
        for trip in range(self.trips):
            outs = run(*fixed, *carried, *sliced[trip * per_trip:(trip + 1) * per_trip], *params[trip])
            carried = [outs[i] for i in carried_from]
            for position, out in at.get(trip, ()):
                results[position] = outs[out]
        return tuple(results)

    def format(self, names: list, params: dict) -> str:
        fixed = names[:self.n_fixed + len(self.carried)]
        return (f"loop({', '.join(fixed)}, ...{len(names) - len(fixed)} more)"
                f"  # {self.trips} trips of a body of {len(self.body.eqns)} steps")

    def __repr__(self) -> str:
        return f"<Loop: {self.trips} trips of {self.body!r}>"


class PerTrip(Step):
    """A primitive of a loop's body whose parameters change from trip to trip: its first
    operand is the trip's parameters (``bound``: applied by ``bind``, which chooses the
    namespace, as the traced step was)."""

    def __init__(self, prim: Any, bound: bool):
        self.prim, self.bound = prim, bound
        self.name, self.multiple_results = prim.name, prim.multiple_results

    def impl(self, xp: Any, params: dict, *args: Any) -> Any:
        if self.bound:
            return bind(self.prim, *args, **params)
        return self.prim.impl(xp, *args, **params)

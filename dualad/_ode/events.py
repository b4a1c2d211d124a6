"""The events of a solve whose solution carries derivatives: their times and states.

An event is a zero of ``g(t, y(t; theta), theta)`` along the solution (SciPy's ``events``).
Its time ``t_e`` moves with the parameters and ``y0`` as the implicit function theorem
says: differentiating ``g(t_e, y(t_e), theta) = 0``,

    dt_e = -(g_y . dy(t_e) + g_theta dtheta) / (g_t + g_y . f(t_e, y_e)),

where ``dy(t_e)`` is the solution's derivative at the time ``t_e`` held fixed; the state
there moves by ``dy_e = dy(t_e) + f(t_e, y_e) dt_e``. A terminal event ends the
integration at ``t_e``, so with ``t_eval=None`` the last column of ``y`` (at ``t_e``)
moves the same way; the earlier columns, at times before ``t_e``, do not depend on it.

The numbers are SciPy's: one plain solve with the events locates them (every value of
dualad's transforms replaced by its numbers); ``y`` at its times and at the event times
comes, differentiable, from the table's entry (:mod:`dualad._ode.entries`, a solve
without events up to the last time); each result is SciPy's number plus a term whose
value is exactly 0 and whose derivative is the one above (``u - stop_gradient(u)``).
``g_t + g_y . f`` is taken by forward mode on plain numbers; where it is 0 (the solution
touches ``g = 0`` without crossing it) the event's time has no derivative, and asking
for the events of such a solve raises.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from dualad._base.backend import NUMPY_XP, scipy_module
from dualad._base.shapes import raw
from dualad._forward.transforms import jvp
from dualad._implicit.closure import Closed
from dualad.ops import stop_gradient

__all__ = ["Located", "differentiable_events", "locate"]


def _bound(event: Callable, args: tuple) -> Callable:
    """``event(t, y, *args)`` as ``g(t, y)``, with SciPy's ``terminal`` and ``direction``."""
    def g(t, y):
        return event(t, y, *args)
    for attr in ("terminal", "direction"):
        if hasattr(event, attr):
            setattr(g, attr, getattr(event, attr))
    return g


def _numbers(value: Any, who: str) -> Any:
    x = raw(value)
    if not isinstance(x, (np.ndarray, np.generic, float, int)):
        raise NotImplementedError(f"{who}: events where y carries derivatives are located by a "
                                  "plain SciPy solve on NumPy numbers, which a value of "
                                  f"{type(x).__name__} (jit's, another backend's) does not have")
    return np.asarray(x)


class Located:
    """SciPy's solve with the events (``result``), and what differentiating them needs:
    ``closed`` (``fun`` and the events, with ``numbers`` standing for the values they
    reach), ``gs`` the events as ``g(t, y)``, ``terminal`` the index of the event that
    ended the solve (or None)."""

    __slots__ = ("result", "closed", "numbers", "gs", "rhs", "terminal")

    def __init__(self, result, closed, numbers, gs, rhs, terminal):
        self.result, self.closed, self.numbers = result, closed, numbers
        self.gs, self.rhs, self.terminal = gs, rhs, terminal

    def times(self) -> np.ndarray:
        """The times where ``y`` is needed: SciPy's ``t`` and every event's, in the
        direction of integration."""
        res = self.result
        times = np.unique(np.concatenate([np.asarray(res.t, dtype=float),
                                          *(np.asarray(te, dtype=float) for te in res.t_events)]))
        return times if res.t[-1] >= res.t[0] else times[::-1]


def locate(fun: Callable, t_span: Any, y0: Any, method: Any, t_eval: Any, args: tuple,
           rtol: Any, atol: Any, options: dict, events: Any, who: str) -> Located:
    """SciPy's solve with ``events``, on the numbers of every value of dualad's transforms
    that ``fun``, the events, ``args`` and ``jac`` reach."""
    listed = list(events) if isinstance(events, (list, tuple)) else [events]
    gs = [_bound(e, args) for e in listed]

    def rhs(t, y):
        return fun(t, y, *args)
    jac = options.get("jac")
    others = list(gs)
    if callable(jac):
        user_jac = jac

        def jac(t, y):
            return user_jac(t, y, *args)
        others.append(jac)
    closed = Closed(rhs, others, who, "fun")
    numbers = [_numbers(v, who) for v in closed.values]
    si = scipy_module(NUMPY_XP, "integrate", who)
    kept = {k: v for k, v in options.items() if k not in ("events", "jac")}
    if jac is not None:
        kept["jac"] = jac
    with closed.running(numbers):
        res = si.solve_ivp(rhs, t_span, _numbers(y0, who), method=method, t_eval=t_eval,
                           events=gs, rtol=rtol, atol=atol, **kept)
    terminal = None
    if res.status == 1:  # a terminal event ended the solve: the one that occurred last
        ended = [j for j, te in enumerate(res.t_events) if len(te) and getattr(gs[j], "terminal", 0)]
        sign = 1.0 if t_span[1] >= t_span[0] else -1.0
        terminal = max(ended, key=lambda j: sign * res.t_events[j][-1])
    return Located(res, closed, numbers, gs, rhs, terminal)


def differentiable_events(located: Located, times: np.ndarray, y_at: Any, at_steps: bool,
                          who: str) -> tuple:
    """``(y, t_events, y_events)`` with derivatives: ``y_at`` is ``y`` at ``times`` (from the
    entry, differentiable), SciPy's numbers are ``located.result``'s; ``at_steps``: ``y`` is
    at SciPy's own times (``t_eval=None``), its last one a terminal event's."""
    res = located.result
    column = {float(t): i for i, t in enumerate(times)}
    y = _plus_zero(res.y, y_at[:, np.array([column[float(t)] for t in res.t], dtype=np.intp)])
    t_events, y_events = [], []
    for j, (te, ye) in enumerate(zip(res.t_events, res.y_events)):
        if len(te) == 0:
            t_events.append(te)
            y_events.append(ye)
            continue
        ts, ys = [], []
        for t, ye_k in zip(te, ye):
            y_fixed = y_at[:, column[float(t)]]
            f, moved = _moved(located, j, float(t), ye_k, y_fixed, who)
            ts.append(float(t) + moved)
            ys.append(_plus_zero(ye_k, y_fixed) + f * moved)
            if at_steps and j == located.terminal and t == res.t[-1]:
                last = np.zeros(len(res.t))
                last[-1] = 1.0
                y = y + np.outer(f, last) * moved
        t_events.append(np.stack(ts))
        y_events.append(np.stack(ys))
    return y, t_events, y_events


def _plus_zero(numbers: Any, traced: Any) -> Any:
    """SciPy's ``numbers``, with the derivatives of ``traced`` (their values agree within the
    solver's tolerance; the sum's value is ``numbers``, exactly)."""
    return numbers + (traced - stop_gradient(traced))


def _moved(located: Located, j: int, t: float, ye: Any, y_fixed: Any, who: str) -> tuple:
    """``(f(t_e, y_e), dt_e)``: the second with value exactly 0 and the derivative of the
    implicit function theorem, ``-(g_y . dy + g_theta dtheta) / (g_t + g_y . f)``."""
    g = located.gs[j]
    with located.closed.running(located.numbers):
        f = np.asarray(located.rhs(t, ye), dtype=float)
        _, rate = jvp(lambda s, y: g(s, y), (np.float64(t), ye), (np.float64(1.0), f))
    rate = float(np.asarray(rate))
    if not np.isfinite(rate) or rate == 0.0:
        raise ValueError(f"{who}: event {j} at t = {t} has no derivative: g's rate along the "
                         f"solution, dg/dt + dg/dy . f, is {rate} there (the solution touches "
                         "g = 0 without crossing it)")
    u = -g(t, y_fixed) / rate
    return f, u - stop_gradient(u)

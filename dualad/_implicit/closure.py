"""A user's function with the values it closes over made operands (closure conversion).

An entry's operands are what ``bind`` dispatches on, so a solution that depends on
values a function closes over (a ``Tensor`` under ``reverse.grad``, a ``Dual`` under
``jvp``, a batch under ``vmap``, a tracer under ``jit``) must have them among its
operands, as JAX's ``closure_convert`` hoists a function's closed-over tracers.
:class:`Closed` finds them with :func:`dualad._base.reach.reach` (the walk
``reverse.checkpoint`` uses) and runs the function with other values standing in
their places: raw arrays in the solver, another level's values in a rule.
"""

from __future__ import annotations

from typing import Any, Callable

from dualad._base.checks import check_callable
from dualad._base.reach import reach
from dualad._base.shapes import raw
from dualad._base.taint import TracedArray

__all__ = ["Closed"]


class Closed:
    """``fn`` (the residual, the matrix-vector product) and the value types it reaches
    from itself and from ``others`` (the solver, whose closure must see raw arrays too).

    ``values`` are the operands of the entry; ``call(x, operands)`` is ``fn(x)`` with
    ``operands[k]`` where ``values[k]`` was found; ``running(operands)`` is a context in
    which every function reached sees them. ``traced`` says ``fn`` was closed in a
    trace of :func:`dualad.compile` (or ``dualad.linearize``: a value it reaches is
    traced): a program holds it, and its replays apply the entry's rules again at other
    points; ``derived`` keeps what they derive from ``fn`` for those (the compiled
    Jacobian of :mod:`dualad._implicit.operators`).
    """

    __slots__ = ("fn", "reached", "who", "traced", "derived")

    def __init__(self, fn: Callable, others: list, who: str, name: str):
        check_callable(fn, who, name)
        self.fn, self.who = fn, who
        self.reached = reach(fn, [g for g in others if g is not None], who=who)
        self.traced = any(type(raw(v)) is TracedArray for v in self.reached.values)
        self.derived: dict = {}

    @property
    def values(self) -> list:
        return self.reached.values

    def running(self, operands: Any) -> Any:
        return self.reached.substituted(list(operands))

    def call(self, x: Any, operands: Any) -> Any:
        with self.running(operands):
            return self.fn(x)

    def __repr__(self) -> str:
        return f"Closed({getattr(self.fn, '__qualname__', self.fn)!r}, {len(self.values)} operands)"

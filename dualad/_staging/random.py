"""Random draws as steps of a program: a ``numpy.random.Generator`` argument of a compiled
function is an input, and each draw from it is a step.

While :func:`dualad.compile` traces, a Generator among the arguments is
replaced by a :class:`RecordingGenerator`. Each call of one of its
:data:`DRAWS` methods draws from the real Generator (so the traced call
returns the eager result and moves the stream as eager evaluation does) and
records a ``draw`` step that, at each replay, makes the same call (method,
arguments, ``size``) on the Generator passed to that call. A draw is an
effect: dead-code elimination keeps it (an unused draw still moves the
stream) and common-subexpression elimination never merges two (they are
different numbers). A draw whose parameters or size are traced values, or
any other use of the Generator, spoils the trace: the function then runs
eagerly, with a warning saying why.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dualad._program.ir import Eqn, Step
from dualad._staging.trace import Tracer, _concrete, _staged

__all__ = ["DRAWS", "DRAW", "RecordingGenerator"]

# The Generator methods a program records: each returns new numbers and moves the stream.
DRAWS = frozenset({
    "beta", "binomial", "chisquare", "choice", "dirichlet", "exponential", "f", "gamma",
    "geometric", "gumbel", "hypergeometric", "integers", "laplace", "logistic", "lognormal",
    "logseries", "multinomial", "multivariate_hypergeometric", "multivariate_normal",
    "negative_binomial", "noncentral_chisquare", "noncentral_f", "normal", "pareto",
    "permutation", "poisson", "power", "random", "rayleigh", "standard_cauchy",
    "standard_exponential", "standard_gamma", "standard_normal", "standard_t", "triangular",
    "uniform", "vonmises", "wald", "weibull", "zipf",
})


class _Draw(Step):
    """The ``draw`` step: ``getattr(generator, method)(*args, **kwargs)``, an effect."""

    name = "draw"
    scalar_ok = True
    effect = True  # kept by dead-code elimination, never merged by CSE

    def __repr__(self) -> str:
        return "Draw()"

    @staticmethod
    def impl(xp: Any, generator: Any, *, method: str, args: tuple, kwargs: dict) -> Any:
        return getattr(generator, method)(*args, **kwargs)

    @staticmethod
    def format(names: list, params: dict) -> str:
        """The step as source: ``x1.normal(0.0, 1.0, size=(3,))``."""
        call = [repr(a) for a in params["args"]]
        call += [f"{k}={v!r}" for k, v in params["kwargs"].items()]
        return f"{names[0]}.{params['method']}({', '.join(call)})"


DRAW = _Draw()


class RecordingGenerator:
    """A Generator argument while a function is traced: its draws are recorded as steps."""

    def __init__(self, generator: np.random.Generator, slot: int, trace: Any):
        self._generator, self._slot, self._trace = generator, slot, trace

    def __repr__(self) -> str:
        return f"RecordingGenerator(x{self._slot}, {self._generator!r})"

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._generator, name)
        if name not in DRAWS:
            self._trace.spoil(f"Generator.{name} is not a draw a program records (only the "
                              f"methods that return new numbers: {', '.join(sorted(DRAWS)[:6])}, ...)")
            return attr

        def draw(*args: Any, **kwargs: Any) -> Any:
            return self._record(name, attr, args, kwargs)
        return draw

    def _record(self, method: str, fn: Any, args: tuple, kwargs: dict) -> Any:
        trace = self._trace
        if _staged(args) or _staged(tuple(kwargs.values())):
            trace.spoil(f"Generator.{method} was called with a traced value among its "
                        "parameters or size, which a program cannot hold as a constant")
            return fn(*_concrete(args), **_concrete(kwargs))
        value = fn(*args, **kwargs)
        if not trace.active:
            return value
        slot = trace.new_slot(value)
        trace.steps.append(Eqn(DRAW, {"method": method, "args": args, "kwargs": kwargs},
                               (self._slot,), (slot,), np))
        return Tracer(value, slot, trace)


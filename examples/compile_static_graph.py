"""Build a static graph once, run it many times with new inputs: ``dualad.compile``.

A static-graph framework asks for the graph first (placeholders, then
operations) and runs it later on values fed in. ``dualad.compile`` gets the
same from plain NumPy code: the first call traces the function into a
program of primitives, the optimization passes simplify it, and later calls
replay the program on the new arrays without running the Python again.

Two graphs are built here:

- ``(a + b) * c`` on arrays, the smallest graph there is;
- the gradient of a Rosenbrock-like loss (``reverse.grad``), whose backward
  pass is recorded in the same program, with a dropout-like random mask
  drawn from a ``numpy.random.Generator`` argument (a program input: each
  call draws from the Generator it is given).

Each is run on several new inputs and compared with eager evaluation; the
program is printed before and after optimization, and the time per call of
eager evaluation and of the replay is printed. On the two-operation graph
of plain NumPy the compiled call's own overhead (the cache key, the
arguments' leaves) outweighs what it saves; on the gradient it saves the
tape's recording and walking at every call.

Run it with ``python examples/compile_static_graph.py [n]``.
"""

from __future__ import annotations

import sys
import timeit
from typing import Callable

import numpy as np

import dualad
import reverse


def scaled_sum(a, b, c):
    """The graph ``(a + b) * c``."""
    return (a + b) * c


def loss(x, rng):
    """A Rosenbrock-like loss with half its terms kept at random (a dropout-like mask)."""
    keep = rng.random(x.shape[0] - 1) > 0.5
    terms = 100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2
    return np.sum(terms * keep)


def per_call_seconds(fn: Callable, repeat: int = 5) -> float:
    """The best time of one call over ``repeat`` timings of a few calls each."""
    timer = timeit.Timer(fn)
    number = max(1, timer.autorange()[0] // 5)
    return min(timer.repeat(repeat, number)) / number


def run(name: str, f: Callable, new_inputs: Callable, seeds: int = 5, verbose: bool = True) -> dict:
    """Compile ``f``, call it on ``seeds`` new inputs against eager, print and time it."""
    compiled = dualad.compile(f)
    worst = 0.0
    for seed in range(seeds):
        # the same inputs twice: a Generator among them is used once by each side
        got, want = compiled(*new_inputs(seed)), f(*new_inputs(seed))
        worst = max(worst, float(np.max(np.abs(got - want))))
    args = new_inputs(seeds)
    before = dualad.compile(f, optimize=False).program(*new_inputs(seeds))
    after = compiled.program(*new_inputs(seeds))
    eager_s = per_call_seconds(lambda: f(*args))
    replay_s = per_call_seconds(lambda: compiled(*args))
    if verbose:
        print(f"== {name}: {seeds} calls on new inputs, largest difference from eager {worst:.1e}")
        print(f"-- before optimization ({len(before.eqns)} primitives):\n{before}")
        print(f"-- after optimization ({len(after.eqns)} primitives):\n{after}")
        print(f"-- per call: eager {eager_s * 1e6:.1f} us, compiled {replay_s * 1e6:.1f} us "
              f"(compiled / eager = {replay_s / eager_s:.2f})")
        print(f"-- its calls, timed after the trace, chose {compiled.stats['chosen']}\n")
    return {"worst": worst, "before": len(before.eqns), "after": len(after.eqns),
            "eager_s": eager_s, "replay_s": replay_s, "stats": dict(compiled.stats)}


def main(n: int = 1000, verbose: bool = True) -> dict:
    """Run both graphs; ``n`` is the length of the Rosenbrock vector."""
    def abc(seed):
        rng = np.random.default_rng(seed)
        return tuple(rng.normal(size=3) for _ in range(3))

    def x_and_generator(seed):
        return np.random.default_rng(100 + seed).normal(size=n), np.random.default_rng(seed)

    return {"scaled_sum": run("(a + b) * c", scaled_sum, abc, verbose=verbose),
            "gradient": run("gradient of a loss with a random mask", reverse.grad(loss),
                            x_and_generator, verbose=verbose)}


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)

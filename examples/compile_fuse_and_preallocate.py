"""Fuse, reorder, eliminate, pre-allocate: what ``dualad.compile`` does to a backward pass.

A static graph can be changed before it runs. The questions asked of one are:
which operations can be eliminated, reordered or fused at compile time, and
how can the intermediate buffers that back-propagation produces be
allocated once instead of at every step? This script answers them on the
gradient of the Rosenbrock function (``reverse.grad``: the backward pass is
recorded in the program next to the forward one):

- **eliminate**: the program as traced, then after the passes (exact
  algebraic simplification such as ``x * 1`` and ``-(-x)``, constant
  folding, common-subexpression and dead-code elimination), with the count
  of primitives each has;
- **reorder**: the steps keep the order the trace met them in (a valid
  order by construction); what the memory plan reads from that order is
  each intermediate's last reader;
- **pre-allocate**: the memory plan gives the elementwise intermediates a
  few buffers (``out=bN`` in the printed program), reused as soon as their
  last reader has run, and kept from one call to the next;
- **fuse**: trees of elementwise steps (``+ - * /``, negation, squaring on
  float64) become one numexpr kernel each (``numexpr('...', v0=..)`` in
  the printed program), one pass over memory instead of one per step, where
  the optional numexpr package is installed (``pip install "dualad[fast]"``).

It then times eager ``reverse.grad``, the compiled gradient without and with
fusion, and the function itself, and checks that the replays equal eager
evaluation bit for bit.

Run it with ``python examples/compile_fuse_and_preallocate.py [n]``.
"""

from __future__ import annotations

import sys
import timeit

import numpy as np

import dualad
import reverse


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def best_seconds(fn, repeat: int = 5) -> float:
    timer = timeit.Timer(fn)
    number = max(1, timer.autorange()[0] // 5)
    return min(timer.repeat(repeat, number)) / number


def main(n: int = 100_000, verbose: bool = True) -> dict:
    grad = reverse.grad(rosenbrock)
    x = np.random.default_rng(0).standard_normal(n)
    traced = dualad.compile(grad, optimize=False, fuse=False).program(x)
    unfused = dualad.compile(grad, fuse=False)
    compiled = dualad.compile(grad, executor="numpy")  # fused where numexpr is installed (not Numba's loops)
    program = compiled.program(x)
    worst = 0.0
    for seed in range(1, 4):
        y = np.random.default_rng(seed).standard_normal(n)
        for c in (unfused, compiled):
            worst = max(worst, float(np.max(np.abs(c(y) - grad(y)))))
    f_s = best_seconds(lambda: rosenbrock(x))
    eager_s = best_seconds(lambda: grad(x))
    unfused_s = best_seconds(lambda: unfused(x))
    compiled_s = best_seconds(lambda: compiled(x))
    buffers = str(program).count("a buffer kept between replays")
    kernels = str(program).count("numexpr(")
    if verbose:
        print(f"== the gradient of Rosenbrock at n = {n}, as traced ({len(traced.eqns)} primitives):")
        print(traced)
        print(f"\n== after the passes: {len(program.eqns)} steps, {kernels} of them fused kernels, "
              f"{buffers} buffers kept between calls:")
        print(program)
        print(f"\n6 replays at new points: largest difference from eager {worst:.1e}")
        print(f"per call, over f ({f_s * 1e3:.2f} ms): eager grad {eager_s / f_s:.2f}, compiled "
              f"{unfused_s / f_s:.2f}, compiled and fused {compiled_s / f_s:.2f}")
    return {"worst": worst, "traced": len(traced.eqns), "optimized": len(program.eqns),
            "buffers": buffers, "kernels": kernels, "eager_over_f": eager_s / f_s,
            "unfused_over_f": unfused_s / f_s, "compiled_over_f": compiled_s / f_s}


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)

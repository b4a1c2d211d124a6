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
  float64) of at least ``MIN_SIZE`` entries (2**18) become one numexpr
  kernel each (``numexpr('...', v0=..)`` in the printed program), one pass
  over memory instead of one per step, where the optional numexpr package
  is installed (``pip install "dualad[fast]"``). With Numba installed too,
  ``compile``'s default executor goes further where it pays: each group of
  elementwise steps, with the sums and slices around it, becomes one
  compiled loop (``executor="numba"``).

It then times, per call and as a ratio to the function itself: eager
``reverse.grad``; the compiled gradient replayed by NumPy's calls, without
and with numexpr's fusion (the same executor, so the two differ by the
fusion alone); and by Numba's loops. It checks that every replay equals
eager evaluation bit for bit, and says whether fusion paid, by the numbers
it measured. Fusion saves passes over memory, which pays where the arrays
do not fit in the processor's cache and numexpr has cores for its threads;
where they fit, NumPy's passes over buffers kept in cache can be the faster
(numexpr interprets its expression block by block), and then the script says
that fusion did not pay. Try a larger ``n``, or ``NUMEXPR_NUM_THREADS``.

Run it with ``python examples/compile_fuse_and_preallocate.py [n]``.
"""

from __future__ import annotations

import importlib.util
import sys
import timeit

import numpy as np

import dualad
import reverse

N = 3_000_000  # arrays of 24 MB: beyond many processors' last-level cache, and fused
NOISE = 0.1  # a ratio of times within 10% of 1 is called no difference


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def best_seconds(fn, repeat: int = 5) -> float:
    timer = timeit.Timer(fn)
    number = max(1, timer.autorange()[0] // 5)
    return min(timer.repeat(repeat, number)) / number


def _installed(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def main(n: int = N, verbose: bool = True) -> dict:
    grad = reverse.grad(rosenbrock)
    x = np.random.default_rng(0).standard_normal(n)
    traced = dualad.compile(grad, optimize=False, fuse=False).program(x)
    # each replays every call (measure=False): what is timed is the executor, never f eagerly;
    # "fused" fuses where numexpr is installed
    replays = {"unfused": dualad.compile(grad, executor="numpy", fuse=False, measure=False),
               "fused": dualad.compile(grad, executor="numpy", measure=False)}
    if _installed("numba"):
        replays["numba"] = dualad.compile(grad, executor="numba", measure=False)
    program = replays["fused"].program(x)
    worst = 0.0
    for seed in range(1, 4):
        y = np.random.default_rng(seed).standard_normal(n)
        want = grad(y)
        for compiled in replays.values():
            worst = max(worst, float(np.max(np.abs(compiled(y) - want))))
    f_s = best_seconds(lambda: rosenbrock(x))
    over_f = {"eager": best_seconds(lambda: grad(x)) / f_s}
    for name, compiled in replays.items():
        over_f[name] = best_seconds(lambda compiled=compiled: compiled(x)) / f_s
    buffers = str(program).count("a buffer kept between replays")
    kernels = str(program).count("numexpr(")
    threads = None
    if kernels:
        import numexpr
        threads = numexpr.get_num_threads()
    result = {"worst": worst, "traced": len(traced.eqns), "optimized": len(program.eqns),
              "buffers": buffers, "kernels": kernels, "threads": threads,
              "executors": {name: c.stats["executor"] for name, c in replays.items()},
              "eager_over_f": over_f["eager"], "unfused_over_f": over_f["unfused"],
              "fused_over_f": over_f["fused"] if kernels else None, "numba_over_f": over_f.get("numba")}
    if verbose:
        report(n, traced, program, result, f_s)
    return result


def report(n: int, traced, program, result: dict, f_s: float) -> None:
    """Print the programs, and what each replay cost, with what that says of fusion."""
    print(f"== the gradient of Rosenbrock at n = {n}, as traced ({result['traced']} primitives):")
    print(traced)
    print(f"\n== after the passes: {result['optimized']} steps, {result['kernels']} of them fused kernels, "
          f"{result['buffers']} buffers kept between calls:")
    print(program)
    print(f"\n{3 * len(result['executors'])} replays at new points: largest difference from eager "
          f"{result['worst']:.1e}")
    print(f"per call, over f ({f_s * 1e3:.2f} ms):")
    rows = [("eager reverse.grad", "eager_over_f"),
            ("compiled, NumPy's calls (executor='numpy', fuse=False)", "unfused_over_f"),
            ("compiled, fused by numexpr (executor='numpy')", "fused_over_f"),
            ("compiled, Numba's loops (executor='numba')", "numba_over_f")]
    for label, key in rows:
        if result[key] is not None:
            print(f"  {label:56s}{result[key]:6.2f}")
    print(verdict(result))


def verdict(result: dict) -> str:
    """What the measured times say of numexpr's fusion, against the same replay unfused."""
    if result["fused_over_f"] is None:
        why = ("numexpr is not installed" if not _installed("numexpr")
               else "no tree of elementwise steps has 2**18 entries or more")
        return f"nothing was fused: {why}."
    ratio = result["fused_over_f"] / result["unfused_over_f"]
    paid = ("it paid" if ratio < 1 - NOISE else "it did not pay" if ratio > 1 + NOISE
            else "no difference beyond the timings' noise")
    return (f"fusion by numexpr ({result['kernels']} kernels, numexpr on {result['threads']} threads) "
            f"took {ratio:.2f} times the unfused replay's time here: {paid}.")

if __name__ == "__main__":
    main(int(float(sys.argv[1])) if len(sys.argv) > 1 else N)

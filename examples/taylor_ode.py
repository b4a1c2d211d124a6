"""A Taylor-series ODE integrator with ``dualad.jet``.

For ``y' = f(y)``, the Taylor coefficients of the solution at a point follow
from ``jet`` one order at a time: ``y_1 = f(y_0)``, and since
``d^k/dt^k f(y(t)) = y^(k+1)(t)``, the k-th term of ``jet(f, (y_0,),
([y_1, ..., y_k],))`` is ``y_{k+1}``. A step of length h sums the series.
The terms are JAX's (derivatives, not divided by k!), as ``jet`` takes them.

Here ``f`` is the logistic equation ``y' = y (1 - y)`` on a vector of
initial values, whose exact solution is known, and the script prints the
first coefficients, the error at the end against the exact solution for
several orders, and the time per step::

    python examples/taylor_ode.py --order 8 --size 1000
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

import dualad


def logistic(y):
    """The right-hand side ``y (1 - y)``."""
    return y * (1.0 - y)


def exact(y0, t):
    """The logistic equation's solution at ``t`` from ``y0``."""
    return 1.0 / (1.0 + (1.0 / y0 - 1.0) * np.exp(-t))


def taylor_terms(f, y0, order):
    """``[y_1, ..., y_order]``: the derivatives of the solution of ``y' = f(y)`` at ``y0``.

    Examples
    --------
    >>> terms = taylor_terms(logistic, np.array([0.5]), 3)  # y' = 1/4, y'' = 0, y''' = -1/8
    >>> np.allclose(terms, [[0.25], [0.0], [-0.125]])
    True
    """
    terms = [f(y0)]
    for k in range(1, order):
        _, series = dualad.jet(f, (y0,), (terms,))
        terms.append(series[k - 1])
    return terms


def integrate(f, y0, t_end, steps, order):
    """``y(t_end)`` for ``y' = f(y)``, ``y(0) = y0``: ``steps`` Taylor steps of the given order."""
    h, y = t_end / steps, y0
    for _ in range(steps):
        terms = taylor_terms(f, y, order)
        y = y + sum(t * (h ** (k + 1) / math.factorial(k + 1)) for k, t in enumerate(terms))
    return y


def main(argv=None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--order", type=int, default=8)
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args(argv)
    y0 = np.linspace(0.1, 0.9, args.size)
    print(f"y' = y (1 - y), {args.size} initial values in [0.1, 0.9], t in [0, 2], {args.steps} steps")
    print("derivatives of y at 0 for y0 = 0.1:",
          " ".join(f"{float(t[0]):.6g}" for t in taylor_terms(logistic, y0, min(args.order, 6))))
    rows = []
    for order in range(1, args.order + 1):
        start = time.perf_counter()
        y = integrate(logistic, y0, 2.0, args.steps, order)
        seconds = (time.perf_counter() - start) / args.steps
        error = float(np.max(np.abs(y - exact(y0, 2.0))))
        rows.append({"order": order, "error": error, "seconds_per_step": seconds})
        print(f"order {order}: max error {error:.2e}, {seconds * 1e3:.2f} ms per step")
    return rows


if __name__ == "__main__":
    main()

"""Taylor mode: ``jet`` at orders 1..8 of a composite function, against nested ``jvp``.

The workload ``common.elementwise`` (sin, exp, log1p, tanh, on n = 1e5
entries) along a straight line ``x + t v``: ``jet`` gives the K-th
directional derivative in one pass; nested ``jvp`` needs K levels of
Duals, 2^K evaluations of each operation. ``log1p`` has no recurrence and
takes :func:`dualad.jet`'s fallback. Times are ratios over ``f(x)``.

Run ``python -m benchmarks.bench_taylor`` for the table of every order.
"""

from __future__ import annotations

import numpy as np

from dualad import jet, jvp

from .common import direction, elementwise, ratio, speed_ratio, vector

ORDERS = [1, 2, 4, 8]


def taylor(f, x, v, order):
    """The ``order``-th derivative of ``f`` along ``v`` by ``jet``."""
    zero = np.zeros_like(x)
    return jet(f, (x,), ([v] + [zero] * (order - 1),))[1][-1]


def nested(f, x, v, order):
    """The same by ``order`` nested ``jvp``."""
    g = f
    for _ in range(order):
        g = (lambda h: lambda y: jvp(h, (y,), (v,))[1])(g)
    return g(x)


class TaylorJet:
    """``jet`` of order K of ``common.elementwise`` at n = 1e5, against ``f(x)`` and
    against K nested ``jvp`` (no target: the figures go in benchmarks/README.md)."""

    params = [ORDERS, [100_000]]
    param_names = ["order", "n"]

    def setup(self, order, n):
        self.x, self.v = vector(n), direction(n)

    def time_jet(self, order, n):
        taylor(elementwise, self.x, self.v, order)

    @ratio
    def track_jet_over_function(self, order, n):
        return speed_ratio(lambda: taylor(elementwise, self.x, self.v, order),
                           lambda: elementwise(self.x), repeat=3)

    @ratio
    def track_nested_jvp_over_jet(self, order, n):
        return speed_ratio(lambda: nested(elementwise, self.x, self.v, order),
                           lambda: taylor(elementwise, self.x, self.v, order), repeat=3)


def main() -> None:
    n = 100_000
    x, v = vector(n), direction(n)
    print(f"common.elementwise, n = {n}: time over f(x)")
    print("order  jet/f  nested_jvp/f  nested/jet  max|jet - nested|/max|nested|")
    for order in range(1, 9):
        a, b = taylor(elementwise, x, v, order), nested(elementwise, x, v, order)
        err = abs(float(a) - float(b)) / max(abs(float(b)), 1e-300)
        jet_f = speed_ratio(lambda k=order: taylor(elementwise, x, v, k), lambda: elementwise(x), repeat=3)
        nest_f = speed_ratio(lambda k=order: nested(elementwise, x, v, k), lambda: elementwise(x), repeat=3)
        print(f"{order:5d}  {jet_f:5.1f}  {nest_f:12.1f}  {nest_f / jet_f:10.2f}  {err:.1e}")


if __name__ == "__main__":
    main()

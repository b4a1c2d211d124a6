"""Sparse Jacobians: a discretized 1-d PDE residual (tridiagonal Jacobian) at n = 1e4 and 1e5.

``residual`` is ``u'' + u^3`` with Dirichlet rows: 3 colours. Ratios over ``f(x)``:
detection and colouring (``SparseJacobian(f, x)``, once per shape), the evaluation at a
point (one chunked forward pass of 3 directions, then recovery into CSR), and the dense
``jacfwd`` at n = 1e3 for comparison (it costs n directions).

Run ``python -m benchmarks.bench_sparse`` for the table.
"""

from __future__ import annotations

import numpy as np

from dualad import SparseJacobian, jacfwd

from .common import ratio, speed_ratio, vector


def residual(x):
    """``x[i-1] - 2 x[i] + x[i+1] + x[i]^3`` inside, ``x`` on the two boundary rows."""
    return np.concatenate([x[:1], x[:-2] - 2.0 * x[1:-1] + x[2:] + x[1:-1] ** 3, x[-1:]])


class SparseJacobianPDE:
    """Colours and time over ``f`` of the sparse Jacobian of ``residual`` (no target: the
    figures go in benchmarks/README.md)."""

    params = [[10_000, 100_000]]
    param_names = ["n"]

    def setup(self, n):
        self.x = vector(n)
        self.jac = SparseJacobian(residual, self.x)

    def track_colors(self, n):
        return self.jac.n_colors

    @ratio
    def track_detect_and_color_over_function(self, n):
        return speed_ratio(lambda: SparseJacobian(residual, self.x), lambda: residual(self.x), repeat=3)

    @ratio
    def track_evaluate_over_function(self, n):
        return speed_ratio(lambda: self.jac(self.x), lambda: residual(self.x), repeat=3)


def main() -> None:
    small = vector(1_000)
    dense = speed_ratio(lambda: jacfwd(residual)(small), lambda: residual(small), repeat=3)
    print(f"dense jacfwd / f at n = 1e3: {dense:.0f}")
    print("n        colours  detect+colour/f  evaluate/f")
    for n in SparseJacobianPDE.params[0]:
        bench = SparseJacobianPDE()
        bench.setup(n)
        print(f"{n:<8d} {bench.track_colors(n):7d}  {bench.track_detect_and_color_over_function(n):15.0f}  "
              f"{bench.track_evaluate_over_function(n):10.1f}")

if __name__ == "__main__":
    main()

"""Sparse Jacobians and Hessians at n = 1e4 and 1e5.

Jacobian: ``residual``, a discretized 1-d PDE (``u'' + u^3`` with Dirichlet rows), a
tridiagonal Jacobian of 3 colours. Ratios over ``f(x)``: detection and colouring
(``SparseJacobian(f, x)``, once per shape), the evaluation at a point (one chunked
forward pass of 3 directions, then recovery into CSR), and the dense ``jacfwd`` at
n = 1e3 for comparison (it costs n directions).

Hessian: the chained Rosenbrock function (tridiagonal, 3 colours) and a 2-d
Laplacian-regularized objective (5-point, 5 colours). Ratios over ``f(x)``: the first
Hessian (``SparseHessian(f, x)(x)``: detection, star colouring and one evaluation), the
evaluation at a new point (one Hessian-vector product per colour, then recovery), and
the dense ``mixed.hessian`` at n = 1e3. ``python -m benchmarks.bench_sparse`` also
times CasADi (``pip install casadi``; not a dependency) on the same problems written in
CasADi's MX: building ``hessian(f, x)`` as a Function (its sparsity and colouring) and
evaluating it, over the same NumPy ``f``.

Run ``python -m benchmarks.bench_sparse`` for the tables.
"""

from __future__ import annotations

import math

import numpy as np

from dualad import SparseJacobian, jacfwd
from mixed import SparseHessian, hessian

from .common import ratio, rosenbrock, speed_ratio, vector


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


def laplacian_objective(x):
    """``1/2 |grad u|^2 + sum(cos u + u^4)`` of ``u = x`` on a square grid: a 5-point Hessian."""
    side = math.isqrt(x.size)
    u = x.reshape(side, side)
    return (0.5 * ((u[1:, :] - u[:-1, :]) ** 2).sum() + 0.5 * ((u[:, 1:] - u[:, :-1]) ** 2).sum()
            + (np.cos(x) + x ** 4).sum())


HESSIAN_PROBLEMS = {"rosenbrock": rosenbrock, "laplacian": laplacian_objective}


def _size(problem: str, n: int) -> int:
    """The number of variables a problem takes for about ``n`` (a square grid for the Laplacian)."""
    return math.isqrt(n) ** 2 if problem == "laplacian" else n


class SparseHessianProblems:
    """Colours and time over ``f`` of the sparse Hessian (no target from asv: the figures
    and the issue's targets go in benchmarks/README.md)."""

    params = [list(HESSIAN_PROBLEMS), [10_000, 100_000]]
    param_names = ["problem", "n"]

    def setup(self, problem, n):
        self.f = HESSIAN_PROBLEMS[problem]
        self.x = vector(_size(problem, n)) * 0.5
        self.y = self.x + 0.01
        self.hess = SparseHessian(self.f, self.x)
        self.hess(self.x)
        self.hess(self.x)  # the eager first evaluation, then the traced one

    def track_colors(self, problem, n):
        return self.hess.n_colors

    @ratio
    def track_first_hessian_over_function(self, problem, n):
        return speed_ratio(lambda: SparseHessian(self.f, self.x)(self.x), lambda: self.f(self.x), repeat=3)

    @ratio
    def track_evaluate_over_function(self, problem, n):
        return speed_ratio(lambda: self.hess(self.y), lambda: self.f(self.y), repeat=3)


def _casadi_row(problem: str, n: int) -> str:
    """CasADi's build (sparsity and colouring) and evaluation of the same Hessian, over NumPy's f."""
    import casadi as ca

    x = ca.MX.sym("x", n)
    if problem == "rosenbrock":
        f = ca.sum1(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    else:
        side = math.isqrt(n)
        u = ca.reshape(x, side, side)  # column-major: the transpose of NumPy's grid, the same sum
        f = (0.5 * ca.sumsqr(u[1:, :] - u[:-1, :]) + 0.5 * ca.sumsqr(u[:, 1:] - u[:, :-1])
             + ca.sum1(ca.cos(x) + x ** 4))
    point = vector(n) * 0.5
    fn = HESSIAN_PROBLEMS[problem]

    def build():
        return ca.Function("H", [x], [ca.hessian(f, x)[0]])
    h = build()
    value = h(point).sparse()
    want = SparseHessian(fn, point)(point)
    err = abs(value - want).max() / abs(want).max()
    first = speed_ratio(lambda: build()(point), lambda: fn(point), repeat=1)
    evaluate = speed_ratio(lambda: h(point + 0.01), lambda: fn(point + 0.01), repeat=3)
    return f"{first:12.0f}  {evaluate:10.1f}  (max relative difference from dualad's {err:.1e})"


def main() -> None:
    small = vector(1_000)
    dense = speed_ratio(lambda: jacfwd(residual)(small), lambda: residual(small), repeat=3)
    print(f"Jacobian of the PDE residual; dense jacfwd / f at n = 1e3: {dense:.0f}")
    print("n        colours  detect+colour/f  evaluate/f")
    for n in SparseJacobianPDE.params[0]:
        bench = SparseJacobianPDE()
        bench.setup(n)
        print(f"{n:<8d} {bench.track_colors(n):7d}  {bench.track_detect_and_color_over_function(n):15.0f}  "
              f"{bench.track_evaluate_over_function(n):10.1f}")
    try:
        import casadi  # noqa: F401
    except ImportError:
        casadi = None
    for problem, f in HESSIAN_PROBLEMS.items():
        small = vector(_size(problem, 1_000)) * 0.5
        dense = speed_ratio(lambda f=f, x=small: hessian(f)(x), lambda f=f, x=small: f(x), repeat=1)
        print(f"\nHessian of {problem}; dense mixed.hessian / f at n = {small.size}: {dense:.0f}")
        peer = "   CasADi: build+eval/f  eval/f" if casadi else ""
        print("n        colours  first Hessian/f  evaluate/f" + peer)
        for n in SparseHessianProblems.params[1]:
            bench = SparseHessianProblems()
            bench.setup(problem, n)
            line = (f"{_size(problem, n):<8d} {bench.track_colors(problem, n):7d}  "
                    f"{bench.track_first_hessian_over_function(problem, n):15.0f}  "
                    f"{bench.track_evaluate_over_function(problem, n):10.1f}")
            print(line + ("   " + _casadi_row(problem, _size(problem, n)) if casadi else ""))


if __name__ == "__main__":
    main()

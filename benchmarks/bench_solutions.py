"""The implicit backward pass of ``dualad.scipy.optimize`` over SciPy's forward solve (issue 37).

Each workload has ``n`` unknowns and a parameter vector ``p`` of ``n`` entries; the
loss is ``sum(x*(p))``, differentiated by ``reverse.grad`` (one VJP), by the same under
``dualad.jit`` (settled: past the program's choice) and by ``dualad.jacfwd`` (``n``
JVPs). The ratio is ``(derivative - solve) / solve``: what the implicit pass adds
(``dF/dx`` assembled and factorized, the products with ``dF/dp``) over SciPy's solve
alone, both timed in one run. The issue's target: <= 0.1.

- ``root``: ``F(x) = x^3 + A x - p`` with a dense, diagonally dominant ``A``, by
  ``hybr`` at ``tol=1e-12``;
- ``minimize``: ``f(x) = sum((x - p)^4) / 4 + sum(x^2) / 2 + sum(diff(x)^2) / 2``, by
  BFGS with its exact gradient.

The figures are in benchmarks/README.md ("Sensitivities of solutions").
"""

from __future__ import annotations

import numpy as np

from .common import calling, ratio, settle, speed_ratio


def _matrix(n: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, n)) / np.sqrt(n) + 3.0 * np.eye(n)


def _root_residual(a):
    return lambda x, p: x ** 3 + a @ x - p


def _objective(x, p):
    d = x[1:] - x[:-1]
    return ((x - p) ** 4).sum() / 4.0 + (x ** 2).sum() / 2.0 + (d ** 2).sum() / 2.0


def _objective_gradient(x, p):
    d = x[1:] - x[:-1]
    g = (x - p) ** 3 + x
    g[1:] += d
    g[:-1] -= d
    return g


class _Solution:
    """A workload's SciPy solve and dualad's derivatives of ``sum(x*(p))``."""

    param_names = ["problem", "n"]
    params = [["root", "minimize"], [50, 200]]

    def setup(self, problem, n):
        import scipy.optimize

        from dualad.scipy import optimize
        self.p = np.linspace(0.5, 1.5, n)
        x0 = np.zeros(n)
        if problem == "root":
            fun = _root_residual(_matrix(n))
            self.scipy_solve = lambda p: scipy.optimize.root(fun, x0, args=(p,), tol=1e-12).x
            self.solve = lambda p: optimize.root(fun, x0, args=(p,), tol=1e-12).x
        else:
            self.scipy_solve = lambda p: scipy.optimize.minimize(
                _objective, x0, args=(p,), jac=_objective_gradient, method="BFGS").x
            self.solve = lambda p: optimize.minimize(
                _objective, x0, args=(p,), jac=_objective_gradient, method="BFGS").x

    def forward(self):
        return self.scipy_solve(self.p)

    def gradient(self):
        import reverse
        return reverse.grad(lambda p: self.solve(p).sum())(self.p)

    def jacobian(self):
        import dualad
        return dualad.jacfwd(self.solve)(self.p)

    def compiled_gradient(self):
        """``gradient`` under ``dualad.jit``, settled."""
        import dualad
        import reverse
        call = calling(dualad.jit(reverse.grad(lambda p: self.solve(p).sum())), self.p)
        settle(call, seconds=60.0)
        return call


class ImplicitBackward(_Solution):
    """What the implicit derivative adds to SciPy's solve, over the solve."""

    @ratio
    def track_grad_over_solve(self, problem, n):
        return speed_ratio(self.gradient, self.forward, repeat=5) - 1.0

    @ratio
    def track_jit_grad_over_solve(self, problem, n):
        return speed_ratio(self.compiled_gradient(), self.forward, repeat=5) - 1.0

    @ratio
    def track_jacfwd_over_solve(self, problem, n):
        return speed_ratio(self.jacobian, self.forward, repeat=5) - 1.0

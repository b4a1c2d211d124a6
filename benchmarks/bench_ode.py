"""``dualad.scipy.integrate.solve_ivp``'s gradient over SciPy's forward solve (issue 37).

The problem is a small neural ODE, ``y' = -y + tanh(W y + b)`` with ``n`` states, whose
``n^2 + n`` parameters ``(W, b)`` are differentiated through the loss ``sum(y(t_i)^2)`` at
20 times in ``[0, 10]`` (RK45, rtol 1e-6, atol 1e-9): ``n = 3`` has 12 parameters (forward
sensitivities), ``n = 31`` has 992 (the adjoint). Each ratio is of times measured in one
run; the figures are in benchmarks/README.md ("solve_ivp sensitivities").
"""

from __future__ import annotations

import numpy as np

from .common import ratio, speed_ratio

T_EVAL = np.linspace(0.5, 10.0, 20)
TOLERANCES = {"rtol": 1e-6, "atol": 1e-9}


def _rhs(t, y, w, b):
    return -y + np.tanh(w @ y + b)


def _split(theta, n):
    return theta[:n * n].reshape(n, n), theta[n * n:]


class _NeuralOde:
    """The problem at ``n`` states, its forward solve by SciPy, its gradient by dualad."""

    param_names = ["n"]

    def setup(self, n):
        import scipy.integrate  # noqa: F401  (a SciPy-less install skips these)

        from dualad.scipy.integrate import solve_ivp
        rng = np.random.default_rng(0)
        self.n = n
        self.theta = np.concatenate([rng.standard_normal(n * n) * 1.5 / np.sqrt(n),
                                     0.1 * rng.standard_normal(n)])
        self.y0 = np.linspace(-1.0, 1.0, n)
        self.solve = solve_ivp
        self.sensitivity = "forward" if n * n + n <= 20 else "adjoint"

    def loss(self, theta, solve=None, **kw):
        w, b = _split(theta, self.n)
        return ((solve or self.solve)(_rhs, (0.0, 10.0), self.y0, args=(w, b), t_eval=T_EVAL,
                                      **TOLERANCES, **kw).y ** 2).sum()

    def forward_solve(self):
        import scipy.integrate
        return self.loss(self.theta, scipy.integrate.solve_ivp)

    def gradient(self):
        import reverse
        return reverse.grad(lambda th: self.loss(th, sensitivity=self.sensitivity))(self.theta)

    def central_differences(self, h=1e-6):
        import scipy.integrate
        out = np.empty(self.theta.size)
        for i in range(self.theta.size):
            e = np.zeros_like(self.theta)
            e[i] = h
            out[i] = (self.loss(self.theta + e, scipy.integrate.solve_ivp)
                      - self.loss(self.theta - e, scipy.integrate.solve_ivp)) / (2 * h)
        return out

    def richardson_differences(self):
        """Central differences at ``h`` and ``h / 2``, Richardson-extrapolated (issue 37's
        reference derivative): four solves per parameter."""
        return (4.0 * self.central_differences(5e-4) - self.central_differences(1e-3)) / 3.0


class SolveIvpGradient(_NeuralOde):
    """Gradient with respect to the ``n^2 + n`` parameters over the forward solve."""

    params = [[3, 31]]

    @ratio
    def track_gradient_over_forward_solve(self, n):
        return speed_ratio(self.gradient, self.forward_solve, repeat=3)


class SolveIvpFiniteDifferences(_NeuralOde):
    """Finite differences of SciPy's solve over the gradient, at 12 parameters: central
    (24 solves), and central Richardson-extrapolated (48 solves)."""

    params = [[3]]

    @ratio
    def track_central_differences_over_gradient(self, n):
        return speed_ratio(self.central_differences, self.gradient, repeat=3)

    @ratio
    def track_richardson_differences_over_gradient(self, n):
        return speed_ratio(self.richardson_differences, self.gradient, repeat=3)

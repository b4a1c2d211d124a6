"""Hessian-vector products (``mixed``): cost relative to f and to the gradient,
forward-over-reverse against reverse-over-reverse, peak memory, the dense
Hessian by chunk size, and the Newton solvers.

Workloads, R^n -> R, on NumPy float64 at n = 1e3 .. 1e6:

- ``rosenbrock``: ``common.rosenbrock`` (slices, memory-bound), at
  ``common.vector(n)`` along ``common.direction(n)``;
- ``mlp``: the mean squared error of a 2-layer tanh network on a fixed batch
  (64 samples, 16 inputs, one output) with all weights flattened into one
  vector of about n entries (hidden width ``(n - 1) // 18``), sliced and
  reshaped inside the loss, as an optimizer sees it.

Targets at n = 1e6: ``hvp`` at most 2.5x ``grad``; Rosenbrock's ``hvp`` at
most 7x ``f``. ``MLPClassifierHVP`` measures the classifier of
``common.mlp_loss`` (784-256-256-10, batch 256), whose target is an ``hvp``
of at most 4x the loss. Ratios are timed in one process
(``common.speed_ratio``); run them without asv with
``OPENBLAS_NUM_THREADS=1 python -m benchmarks.ratios -b bench_mixed``.
"""

from __future__ import annotations

import functools
import gc
import math
import tracemalloc
from typing import Callable

import numpy as np

import mixed
import reverse
from dualad import ops
from mixed import hessian, hvp, linearize, newton_cg, trust_region

from .common import (
    MLP_WIDTHS,
    SEED,
    direction,
    mlp_classifier,
    ratio,
    rosenbrock,
    speed_ratio,
    tanh_rosenbrock,
    vector,
)

# Ascending: the smoke test runs the first value.
MIXED_SIZES = [1_000, 10_000, 100_000, 1_000_000]
MODES = ["forward-over-reverse", "reverse-over-reverse"]
MLP_INPUTS, MLP_BATCH = 16, 64


# -- the MLP workload ----------------------------------------------------------------
def mlp_layout(n: int) -> tuple[int, int]:
    """(hidden width, number of weights) for about ``n`` weights."""
    hidden = max((n - 1) // (MLP_INPUTS + 2), 1)
    return hidden, MLP_INPUTS * hidden + 2 * hidden + 1


@functools.lru_cache(maxsize=None)
def mlp_problem(n: int) -> tuple[Callable, np.ndarray, np.ndarray]:
    """``(loss, weights, direction)`` for the flattened 2-layer tanh MLP."""
    hidden, size = mlp_layout(n)
    rng = np.random.default_rng([SEED, 3, n])
    inputs = rng.standard_normal((MLP_BATCH, MLP_INPUTS))
    targets = np.sin(inputs.sum(axis=1))
    inputs.flags.writeable = targets.flags.writeable = False
    k = MLP_INPUTS * hidden

    def loss(w):
        w1 = ops.reshape(w[:k], (MLP_INPUTS, hidden))
        b1, w2, b2 = w[k:k + hidden], w[k + hidden:k + 2 * hidden], w[k + 2 * hidden]
        residual = ops.matmul(ops.tanh(ops.matmul(inputs, w1) + b1), w2) + b2 - targets
        return ops.sum(residual * residual) / MLP_BATCH

    w = rng.standard_normal(size) / math.sqrt(MLP_INPUTS)
    v = rng.standard_normal(size)
    w.flags.writeable = v.flags.writeable = False
    return loss, w, v


def workload(name: str, n: int) -> tuple[Callable, np.ndarray, np.ndarray]:
    if name == "rosenbrock":
        return rosenbrock, vector(n), direction(n)
    return mlp_problem(n)


WORKLOADS = ["rosenbrock", "mlp"]


def _traced_peak(fn: Callable) -> int:
    """Peak bytes allocated (NumPy data included) while ``fn`` runs."""
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# -- benchmarks ----------------------------------------------------------------------
class HVPCost:
    """``mixed.hvp`` (forward-over-reverse) against ``f`` and ``reverse.grad``.

    Targets at n = 1e6: ``hvp / grad <= 2.5``; ``hvp / f <= 7`` for Rosenbrock.
    ``track_reverse_over_reverse_over_default`` > 1 means the default mode is
    the faster one.
    """

    params = [WORKLOADS, MIXED_SIZES]
    param_names = ["workload", "n"]
    timeout = 300

    def setup(self, workload_name, n):
        self.f, self.x, self.v = workload(workload_name, n)
        self.grad = reverse.grad(self.f)

    def _f(self):
        return self.f(self.x)

    def _grad(self):
        return self.grad(self.x)

    def _hvp(self):
        return hvp(self.f, self.x, self.v)

    def _hvp_ror(self):
        return hvp(self.f, self.x, self.v, mode="reverse-over-reverse")

    def time_function(self, workload_name, n):
        self.f(self.x)

    def time_grad(self, workload_name, n):
        self.grad(self.x)

    def time_hvp(self, workload_name, n):
        hvp(self.f, self.x, self.v)

    @ratio
    def track_hvp_over_function(self, workload_name, n):
        return speed_ratio(self._hvp, self._f)

    @ratio
    def track_hvp_over_grad(self, workload_name, n):
        return speed_ratio(self._hvp, self._grad)

    @ratio
    def track_grad_over_function(self, workload_name, n):
        return speed_ratio(self._grad, self._f)

    @ratio
    def track_reverse_over_reverse_over_default(self, workload_name, n):
        """Reverse-over-reverse HVP time / forward-over-reverse HVP time."""
        return speed_ratio(self._hvp_ror, self._hvp)

    @ratio
    def track_hvp_over_grad_peak_memory(self, workload_name, n):
        """Peak traced allocation of one HVP / that of one gradient."""
        return _traced_peak(self._hvp) / _traced_peak(self._grad)

    def peakmem_grad(self, workload_name, n):
        self.grad(self.x)

    def peakmem_hvp(self, workload_name, n):
        hvp(self.f, self.x, self.v)


class MLPClassifierHVP:
    """H v of ``common.mlp_loss`` (784-256-256-10, batch 256) against the loss, float64 and float32.

    ``v`` is ``common.mlp_classifier``'s direction over the six weight and
    bias arrays. Target: at most 4x the loss. ``setup`` raises if a float32
    product comes back in another dtype.
    """

    params = [["float64", "float32"]]
    param_names = ["dtype"]
    timeout = 120

    def setup(self, dtype):
        self.loss, self.params, self.v = mlp_classifier(MLP_WIDTHS, dtype)
        found = [str(h.dtype) for h in self._hvp()]
        if found != [dtype] * len(self.params):
            raise TypeError(f"MLPClassifierHVP: {dtype} parameters gave products of dtypes {found}")

    def _hvp(self):
        return hvp(self.loss, self.params, self.v)

    def _loss(self):
        return self.loss(self.params)

    def time_hvp(self, dtype):
        self._hvp()

    @ratio
    def track_hvp_over_loss(self, dtype):
        return speed_ratio(self._hvp, self._loss)


class HVPModes:
    """One HVP by each mode: forward-over-reverse (default) and reverse-over-reverse."""

    params = [WORKLOADS, MIXED_SIZES, MODES]
    param_names = ["workload", "n", "mode"]
    timeout = 300

    def setup(self, workload_name, n, mode):
        self.f, self.x, self.v = workload(workload_name, n)

    def time_hvp(self, workload_name, n, mode):
        hvp(self.f, self.x, self.v, mode=mode)

    def peakmem_hvp(self, workload_name, n, mode):
        hvp(self.f, self.x, self.v, mode=mode)


class DenseHessianChunks:
    """``mixed.hessian(f, chunk_size=c)`` of ``sum(tanh(A x)**2) + rosenbrock(x)``, n = 100.

    ``chunk_size = k`` pushes k directions through the tape per pass
    (ceil(100 / k) passes); the ratio is to one single-direction HVP.
    """

    params = [[1, 10, 100]]
    param_names = ["chunk_size"]
    n = 100

    def setup(self, chunk_size):
        a = np.random.default_rng([SEED, 4]).standard_normal((self.n, self.n)) / math.sqrt(self.n)

        def f(x):
            return tanh_rosenbrock(x, a, ops)

        self.f, self.x, self.v = f, vector(self.n), direction(self.n)
        self.hess = hessian(f, chunk_size=chunk_size)

    def time_hessian(self, chunk_size):
        self.hess(self.x)

    @ratio
    def track_hessian_over_hvp(self, chunk_size):
        return speed_ratio(lambda: self.hess(self.x), lambda: hvp(self.f, self.x, self.v))


class NewtonSolvers:
    """``newton_cg`` and ``trust_region`` on Rosenbrock, n = 1000, from 0.5 * ones to |g| <= 1e-8.

    ``track_iterations`` is the number of outer steps (L-BFGS-B with our
    gradient needs 98 from the same start) and ``track_hvps`` the H-products.
    """

    params = [["newton_cg", "trust_region"]]
    param_names = ["solver"]
    n = 1000
    timeout = 120

    def setup(self, solver):
        self.solve = {"newton_cg": newton_cg, "trust_region": trust_region}[solver]
        self.x0 = np.full(self.n, 0.5)

    def time_solve(self, solver):
        self.solve(rosenbrock, self.x0, tol=1e-8)

    def track_iterations(self, solver):
        return self.solve(rosenbrock, self.x0, tol=1e-8).nit

    track_iterations.unit = "iterations"

    def track_hvps(self, solver):
        return self.solve(rosenbrock, self.x0, tol=1e-8).nhev

    track_hvps.unit = "H-products"


class NewtonLinearize:
    """Newton-CG on Rosenbrock from 0.5 * ones with ``mixed.linearize``'s H-products.

    ``track_scipy_linearize_over_handwritten``: SciPy's ``minimize(method="Newton-CG")``
    with ``mixed.scipy.linearized``'s ``jac`` and ``hessp`` (one trace per solve:
    the gradient and the operator at each new point from one replay of the primal
    half, each product a replay of the tangent half), over the same with SciPy's
    hand-written ``rosen_der`` and ``rosen_hess_prod`` (the same iterates; target
    at n = 1e5: <= 1.5); ``track_scipy_jac_linearize_over_handwritten`` the same
    with ``mixed.scipy.jac`` (an eager gradient) and ``hessp`` replaying
    ``mixed.linearize``'s operator, as the last session measured it.
    ``track_newton_cg_linearize_over_hvp``: ``newton_cg`` to ``|g| <= 1e-8``,
    H-products replayed, over the same with one forward-over-reverse pass each
    (``linearize=False``; the same iterates). ``track_replay_over_f``: one
    ``H @ p`` over f; ``track_at_over_f``: the operator at a new point (its
    primal half computed) over f; ``track_trace_over_f``: ``mixed.linearize``
    itself (trace, passes, primal half) over f.
    """

    params = [[1_000, 100_000]]
    param_names = ["n"]
    timeout = 600

    def setup(self, n):
        try:
            from scipy.optimize import rosen, rosen_der, rosen_hess_prod
        except ImportError:
            raise NotImplementedError("needs SciPy") from None
        self.rosen, self.rosen_der, self.rosen_hess_prod = rosen, rosen_der, rosen_hess_prod
        self.x0 = np.full(n, 0.5)
        self.x, self.p = vector(n), direction(n)
        self.H = linearize(rosenbrock, self.x)[1]

    def _scipy(self, f, jac, hessp):
        from scipy.optimize import minimize
        return minimize(f, self.x0, jac=jac, hessp=hessp, method="Newton-CG")

    def _scipy_linearize(self):
        return self._scipy(rosenbrock, *mixed.scipy.linearized(rosenbrock))

    def _scipy_jac_linearize(self):
        return self._scipy(rosenbrock, mixed.scipy.jac(rosenbrock), mixed.scipy.linearized(rosenbrock)[1])

    def _scipy_handwritten(self):
        return self._scipy(self.rosen, self.rosen_der, self.rosen_hess_prod)

    def time_newton_cg(self, n):
        newton_cg(rosenbrock, self.x0, tol=1e-8)

    @ratio
    def track_scipy_linearize_over_handwritten(self, n):
        return speed_ratio(self._scipy_linearize, self._scipy_handwritten)

    @ratio
    def track_scipy_jac_linearize_over_handwritten(self, n):
        return speed_ratio(self._scipy_jac_linearize, self._scipy_handwritten)

    @ratio
    def track_newton_cg_linearize_over_hvp(self, n):
        return speed_ratio(lambda: newton_cg(rosenbrock, self.x0, tol=1e-8),
                           lambda: newton_cg(rosenbrock, self.x0, tol=1e-8, linearize=False))

    @ratio
    def track_replay_over_f(self, n):
        return speed_ratio(lambda: self.H @ self.p, lambda: rosenbrock(self.x))

    @ratio
    def track_at_over_f(self, n):
        return speed_ratio(lambda: self.H.at(self.x), lambda: rosenbrock(self.x))

    @ratio
    def track_trace_over_f(self, n):
        return speed_ratio(lambda: linearize(rosenbrock, self.x), lambda: rosenbrock(self.x))

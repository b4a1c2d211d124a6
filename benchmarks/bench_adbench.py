"""ADBench's GMM, bundle adjustment, hand tracking and LSTM (issue 36): each derivative over
its objective.

The problems, their data and their derivatives in dualad are in ``benchmarks/adbench/``
(one module each, written as ADBench's authors wrote them). Each class times the
objective and the derivative, eager (``mode="eager"``: the objective on plain NumPy
arrays, the derivative by ``reverse.grad``, ``jacfwd``, ``vmap(jacfwd)`` or
``sparse_jacfwd``) and under ``dualad.jit`` (``mode="jit"``: both traced once, in
``setup``, and replayed). ``track_*_over_objective`` is the derivative over the
objective on plain NumPy arrays in both modes (ADBench's measure, the same denominator
for both), and ``track_objective_over_numpy`` the objective of that mode over the same
(1 when eager; under ``jit``, what a replay costs against NumPy).
``track_first_calls_over_objective`` is the derivative's first two calls (``jit``: the
trace and the first replay) over the objective. The same problems beside JAX and
PyTorch: ``python -m benchmarks.compare --only gmm ba hand lstm``; the figures:
benchmarks/README.md, "ADBench (issue 36)".
"""

from __future__ import annotations

import functools
import time

import dualad

from .adbench import ba, gmm, hand, lstm
from .common import best_seconds, calling, ratio, settle, speed_ratio

MODES = ["eager", "jit"]
SETTLE_S = 10.0  # seconds a jit mode's setup may spend settling each callable


def _first_two_calls(fn) -> float:
    """Seconds of ``fn``'s first two calls (a ``jit`` program's trace and first replay)."""
    start = time.perf_counter()
    fn()
    fn()
    return time.perf_counter() - start


class _GradientOfObjective:
    """What GMM and LSTM share: a problem module's objective and ``reverse.grad`` of it,
    eager or under ``dualad.jit``, timed and over the objective on plain NumPy arrays
    (``repeat`` timings of the gradient each)."""

    params = MODES
    param_names = ["size", "mode"]
    timeout = 600
    problem = None
    repeat = None

    def setup(self, size, mode):
        inp = self.problem.data(*self.problem.SIZES[size])
        self.numpy = lambda: self.problem.objective(inp)
        if mode == "eager":
            self.objective, grad = self.numpy, lambda: self.problem.gradient(*inp)
        else:
            objective, gradient = self.problem.compiled_objective(), self.problem.compiled_gradient()
            self.objective, grad = calling(objective, *inp), calling(gradient, *inp)
            self.objective()
        self.first_calls = _first_two_calls(grad)
        if mode == "jit":
            settle(self.objective, SETTLE_S)
            settle(grad, SETTLE_S)
        self.gradient = grad

    def time_objective(self, size, mode):
        self.objective()

    def time_gradient(self, size, mode):
        self.gradient()

    @ratio
    def track_gradient_over_objective(self, size, mode):
        return speed_ratio(self.gradient, self.numpy, repeat=self.repeat)

    @ratio
    def track_objective_over_numpy(self, size, mode):
        return speed_ratio(self.objective, self.numpy)

    @ratio
    def track_first_calls_over_objective(self, size, mode):
        return self.first_calls / best_seconds(self.numpy)


class GMMGradient(_GradientOfObjective):
    """ADBench's GMM (d = 2, k = 5, n = 1,000; d = 10, k = 25, n = 10,000): the gradient
    with respect to ``alphas``, ``means`` and ``icf`` by ``reverse.grad``. Best published
    gradient / objective ratio: about 1.3 (issue 36)."""

    params = [list(gmm.SIZES), MODES]
    problem = gmm


@functools.lru_cache(maxsize=None)
def _colors(size: str) -> int:
    inp = ba.data(*ba.SIZES[size])
    pattern = dualad.jacobian_sparsity(ba.residual(inp), ba.flat_parameters(inp))
    return int(dualad.color_columns(pattern).max()) + 1


class _JacobianOfObjective:
    """What BA and hand tracking share: an objective on plain NumPy arrays, the objective of
    the mode (that one, or it under ``dualad.jit``, traced in ``setup``) and a Jacobian,
    timed and over the objective on plain NumPy arrays. Subclasses set ``params`` (the
    mode last) and ``build(*params) -> (numpy objective, mode's objective, jacobian)``,
    each a callable of no arguments."""

    timeout = 600

    def setup(self, *params):
        self.numpy, self.objective, self.jacobian = self.build(*params)
        if params[-1] == "jit":
            self.objective()
        self.first_calls = _first_two_calls(self.jacobian)
        if params[-1] == "jit":
            settle(self.objective, SETTLE_S)
            settle(self.jacobian, SETTLE_S)

    def time_objective(self, *params):
        self.objective()

    def time_jacobian(self, *params):
        self.jacobian()

    @ratio
    def track_jacobian_over_objective(self, *params):
        return speed_ratio(self.jacobian, self.numpy, repeat=5)

    @ratio
    def track_objective_over_numpy(self, *params):
        return speed_ratio(self.objective, self.numpy)

    @ratio
    def track_first_calls_over_objective(self, *params):
        return self.first_calls / best_seconds(self.numpy)


class BundleAdjustmentJacobian(_JacobianOfObjective):
    """ADBench's bundle adjustment (16 cameras, 2,000 points, 8,000 observations; ADBench's
    ba1: 49, 7,776, 31,843): the sparse Jacobian of all residuals, as a CSR matrix, by
    ``sparse_jacfwd`` of the residual of all parameters, or by ``vmap(jacfwd)`` over
    observations (2 x 15 blocks) put into the same CSR matrix. ``sparse_jacfwd`` compiles
    its own pass from its second call, and ``dualad.jit`` cannot wrap it (it refuses a
    traced point): that combination is skipped. ``track_directions`` is the tangent
    directions per pass (the colours; 15 per observation for ``vmap``). Best published
    Jacobian / objective ratio: about 10 (issue 36)."""

    params = [list(ba.SIZES), ["sparse_jacfwd", "vmap_jacfwd"], MODES]
    param_names = ["size", "method", "mode"]

    def build(self, size, method, mode):
        if method == "sparse_jacfwd" and mode == "jit":
            raise NotImplementedError("dualad.jit(sparse_jacfwd(f)) refuses its traced point")
        inp = ba.data(*ba.SIZES[size])
        compiled = dualad.jit(ba.ba_objective)
        numpy = functools.partial(ba.objective, inp)
        objective = numpy if mode == "eager" else lambda: compiled(*inp)
        jacobian = (ba.sparse_jacobian(inp) if method == "sparse_jacfwd"
                    else ba.vmap_jacobian(inp, compiled=mode == "jit"))
        return numpy, objective, jacobian

    def track_directions(self, size, method, mode):
        return _colors(size) if method == "sparse_jacfwd" else ba.N_CAM_PARAMS + 3 + 1

    track_directions.unit = "directions"


class HandJacobian(_JacobianOfObjective):
    """ADBench's hand tracking (22 bones, 544 vertices; ADBench's hand1, 100 correspondences,
    and hand7, 3,200), ``simple`` (each point's vertex) or ``complicated`` (each point on
    a triangle, placed by two more parameters): the Jacobian of all ``3 n`` residuals.
    ``jacfwd``: with respect to the 26 ``theta`` in one pass of 26 directions, and for
    ``complicated`` the ``us`` blocks by ``vmap(jacfwd)`` over points (ADBench's compact
    ``3 n x 28``); ``sparse_jacfwd``: of the complicated residual of all ``2 n + 26``
    parameters, a CSR matrix (not run for ``simple``, whose Jacobian is dense in its 26
    columns, nor under ``jit``, which refuses to wrap it). Best published Jacobian /
    objective ratio: about 33 (issue 36)."""

    params = [list(hand.SIZES), ["simple", "complicated"], ["jacfwd", "sparse_jacfwd"], MODES]
    param_names = ["size", "kind", "method", "mode"]

    def build(self, size, kind, method, mode):
        if method == "sparse_jacfwd" and (kind == "simple" or mode == "jit"):
            raise NotImplementedError("sparse_jacfwd: the complicated Jacobian, eager only")
        inp = hand.data(hand.SIZES[size], kind == "complicated")
        numpy = functools.partial(hand.objective, inp)
        objective = numpy if mode == "eager" else hand.compiled_objective(inp)
        jacobian = (hand.sparse_jacobian(inp) if method == "sparse_jacfwd"
                    else hand.jacobian(inp, compiled=mode == "jit"))
        return numpy, objective, jacobian


class LSTMGradient(_GradientOfObjective):
    """ADBench's LSTM (2 layers, hidden size 14; 128 characters, and ADBench's 1,024): the
    gradient with respect to ``main_params`` and ``extra_params`` by ``reverse.grad``, a
    Python loop over characters and layers on vectors of 14. Best published gradient /
    objective ratio: about 2.1 (issue 36)."""

    params = [list(lstm.SIZES), MODES]
    problem = lstm
    repeat = 5

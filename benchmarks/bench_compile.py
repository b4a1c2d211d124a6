"""Programs (``dualad.compile``): what a replay costs per primitive, and a compiled
gradient relative to the function.

``track_*`` methods return two times measured in the same process
(``common.speed_ratio``) as a ratio, or one time per primitive in
microseconds. Each runs on both executors (``executor=``): ``numpy``, a
call per primitive, and ``numba``, elementwise groups as compiled loops
(skipped without Numba; its kernels are compiled, or loaded from the disk
cache, in ``setup``). Run the ratios without asv with
``OPENBLAS_NUM_THREADS=1 python -m benchmarks.ratios -b bench_compile``.
"""

from __future__ import annotations

import importlib.util

import numpy as np

import dualad
import mixed
import reverse

from .common import (
    CHAIN_OPS,
    best_seconds,
    calling,
    direction,
    g,
    g_math,
    hyperdual_value_grad_hessian,
    mlp_classifier,
    op_chain,
    ratio,
    rosenbrock,
    settle,
    speed_ratio,
    vector,
)

# "auto": compile's own choice (executor=None), what a user gets without asking
EXECUTORS = ["numpy", "numba", "auto"]


def _need(executor: str) -> str | None:
    """The ``executor`` argument of ``dualad.compile`` for a benchmark parameter."""
    if executor == "numba" and importlib.util.find_spec("numba") is None:
        raise NotImplementedError("Numba is not installed")
    return None if executor == "auto" else executor


def _warm(compiled, *args):
    """``compiled`` after its trace, its first replay (which compiles or loads its kernels)
    and the calls timed to choose how its calls run (``stats["chosen"]``: see
    ``dualad.compile``'s ``measure``), so that the benchmark times the calls after them."""
    compiled(*args)
    compiled(*args)
    settle(calling(compiled, *args), 0.0, calls=0)  # until chosen (kernels compiled first)
    return compiled


class CompileOverhead:
    """``common.op_chain`` (200 elementwise operations and a sum) on float64 arrays of
    size 16, eager and replayed.

    At this size a primitive's own NumPy call costs about as much as the
    Python around it, so ``track_replay_us_per_primitive`` (one replay of
    the compiled chain over its number of primitives) is the replay's whole
    per-primitive cost, NumPy's included; ``track_replay_over_numpy`` is
    that replay over the same chain on plain arrays (1.0: no overhead at
    all). These replay every call (``measure=False``), so that they time the
    executor; ``track_compiled_over_numpy`` is what a user's ``dualad.jit``
    gives, its calls timed and the faster way kept (at size 16 on NumPy's
    executor that is ``f`` eagerly). The ``grad`` variants replay the
    compiled ``reverse.grad`` of the chain (forward and backward primitives)
    against the eager gradient, which records and walks a tape on every call.
    """

    params = [[1, 16], EXECUTORS]
    param_names = ["size", "executor"]

    def setup(self, size, executor):
        asked = _need(executor)
        self.x = vector(size)
        self.compiled = _warm(dualad.compile(op_chain, executor=asked, measure=False), self.x)
        self.chosen = _warm(dualad.compile(op_chain, executor=asked), self.x)
        # primitives of the program as traced, so that both executors divide by the same count
        self.n_forward = len(dualad.compile(op_chain, executor="numpy").program(self.x).eqns)
        self.grad = reverse.grad(op_chain)
        self.compiled_grad = _warm(dualad.compile(self.grad, executor=asked, measure=False), self.x)
        self.n_grad = len(dualad.compile(self.grad, executor="numpy").program(self.x).eqns)

    def _replay(self):
        return self.compiled(self.x)

    def _numpy(self):
        return op_chain(self.x)

    def _grad(self):
        return self.grad(self.x)

    def _replay_grad(self):
        return self.compiled_grad(self.x)

    def time_replay(self, size, executor):
        self.compiled(self.x)

    def time_replay_grad(self, size, executor):
        self.compiled_grad(self.x)

    def track_replay_us_per_primitive(self, size, executor):
        return best_seconds(self._replay) / self.n_forward * 1e6

    track_replay_us_per_primitive.unit = "us/primitive"

    def track_grad_replay_us_per_primitive(self, size, executor):
        return best_seconds(self._replay_grad) / self.n_grad * 1e6

    track_grad_replay_us_per_primitive.unit = "us/primitive"

    def track_replay_overhead_us_per_primitive(self, size, executor):
        """What a replay adds to the chain's own NumPy calls, per primitive: the best
        replay minus the best plain call, measured back to back."""
        replay, plain = best_seconds(self._replay), best_seconds(self._numpy)
        return (replay - plain) / self.n_forward * 1e6

    track_replay_overhead_us_per_primitive.unit = "us/primitive"

    def track_numpy_us_per_op(self, size, executor):
        """The control: the chain's own NumPy calls, per operation."""
        return best_seconds(self._numpy) / (CHAIN_OPS + 1) * 1e6

    track_numpy_us_per_op.unit = "us/op"

    @ratio
    def track_replay_over_numpy(self, size, executor):
        return speed_ratio(self._replay, self._numpy)

    @ratio
    def track_compiled_over_numpy(self, size, executor):
        return speed_ratio(lambda: self.chosen(self.x), self._numpy)

    @ratio
    def track_eager_grad_over_replayed_grad(self, size, executor):
        return speed_ratio(self._grad, self._replay_grad)


class CompiledGrad:
    """``reverse.grad`` and ``mixed.hvp`` of ``common.rosenbrock`` at n = 1e3, 1e5 and 1e6,
    compiled and eager, over the function on plain arrays (float64).
    ``track_trace_over_function`` is the first call (trace and passes) over one
    function call; ``track_calls_to_pay_back`` how many compiled calls of the
    gradient repay that first call from what each saves against the eager one."""

    params = [[1_000, 100_000, 1_000_000], EXECUTORS]
    param_names = ["n", "executor"]

    def setup(self, n, executor):
        asked = _need(executor)
        self.executor = asked
        self.x, self.v = vector(n), direction(n)
        self.grad = reverse.grad(rosenbrock)
        self.compiled = _warm(dualad.compile(self.grad, executor=asked), self.x)
        self.compiled_hvp = _warm(dualad.compile(_rosenbrock_hvp, executor=asked), self.x, self.v)

    def _f(self):
        return rosenbrock(self.x)

    def _compiled(self):
        return self.compiled(self.x)

    def _compiled_hvp(self):
        return self.compiled_hvp(self.x, self.v)

    def _grad(self):
        return self.grad(self.x)

    def _trace(self):
        return dualad.compile(self.grad, executor=self.executor)(self.x)

    def time_compiled_grad(self, n, executor):
        self.compiled(self.x)

    def time_compiled_hvp(self, n, executor):
        self.compiled_hvp(self.x, self.v)

    @ratio
    def track_compiled_grad_over_function(self, n, executor):
        return speed_ratio(self._compiled, self._f)

    @ratio
    def track_compiled_hvp_over_function(self, n, executor):
        return speed_ratio(self._compiled_hvp, self._f)

    @ratio
    def track_eager_grad_over_function(self, n, executor):
        return speed_ratio(self._grad, self._f)

    @ratio
    def track_trace_over_function(self, n, executor):
        return speed_ratio(self._trace, self._f)

    def track_calls_to_pay_back(self, n, executor):
        first, eager, replay = (best_seconds(fn) for fn in (self._trace, self._grad, self._compiled))
        return (first - replay) / max(eager - replay, 1e-12)

    track_calls_to_pay_back.unit = "calls"


def _rosenbrock_hvp(x, v):
    return mixed.hvp(rosenbrock, x, v)


class CompiledMLP:
    """The MLP 784-256-256-10 at batch 256 (``common.mlp_classifier``): the compiled
    gradient and H v over the loss, float64."""

    def setup(self):
        self.loss, params, direction_ = mlp_classifier()
        self.params, self.v = tuple(params), tuple(direction_)
        self.grad = dualad.compile(reverse.grad(self.loss))
        self.grad(self.params)
        self.hvp = dualad.compile(self._hvp)
        self.hvp(self.params, self.v)

    def _hvp(self, params, v):
        return mixed.hvp(self.loss, params, v)

    def _loss(self):
        return self.loss(self.params)

    def time_compiled_grad(self):
        self.grad(self.params)

    @ratio
    def track_compiled_grad_over_loss(self):
        return speed_ratio(lambda: self.grad(self.params), self._loss)

    @ratio
    def track_compiled_hvp_over_loss(self):
        return speed_ratio(lambda: self.hvp(self.params, self.v), self._loss)


class CompiledScalar:
    """Value, gradient and Hessian of ``common.g(x, y)`` by three hyper-dual evaluations
    (``common.hyperdual_value_grad_hessian``), compiled and called with ``np.float64``
    scalars (Python floats are static arguments): a program of float64 scalars, which
    the NumPy executor replays as Python on floats (``dualad._program.executors.scalar``),
    the Numba one as one compiled function. Over the ``math``-module ``g``
    on floats (issue 11's target: <= 5), and over the same computation eager on
    Python floats (HyperDual's ``math`` fast path); ``track_us_per_primitive`` is one
    compiled call over the program's length."""

    params = [EXECUTORS]
    param_names = ["executor"]

    def setup(self, executor):
        asked = _need(executor)
        self.x, self.y = np.float64(0.7), np.float64(-0.3)
        self.compiled = _warm(dualad.compile(self._vgh, executor=asked), self.x, self.y)
        self.n = len(dualad.compile(self._vgh, executor="numpy").program(self.x, self.y).eqns)

    @staticmethod
    def _vgh(x, y):
        return hyperdual_value_grad_hessian(g, x, y)

    def _compiled(self):
        return self.compiled(self.x, self.y)

    def _eager(self):
        return self._vgh(0.7, -0.3)

    def _math(self):
        return g_math(0.7, -0.3)

    def time_compiled(self, executor):
        self.compiled(self.x, self.y)

    @ratio
    def track_compiled_over_math(self, executor):
        return speed_ratio(self._compiled, self._math)

    @ratio
    def track_eager_over_compiled(self, executor):
        return speed_ratio(self._eager, self._compiled)

    def track_us_per_primitive(self, executor):
        return best_seconds(self._compiled) / self.n * 1e6

    track_us_per_primitive.unit = "us/primitive"


def _g_of_vector(v):
    return g(v[0], v[1])


def _user_value_grad_hessian(v):
    """Value, gradient and Hessian of ``g`` of a 2-vector, as a user writes them."""
    return _g_of_vector(v), reverse.grad(_g_of_vector)(v), dualad.hessian(_g_of_vector)(v)


class CompiledScalarAsWritten:
    """The value, gradient and Hessian of ``g`` written as a user would, on a length-2
    array: ``dualad.compile(lambda v: (g(v), reverse.grad(g)(v), dualad.hessian(g)(v)))``,
    over the ``math``-module ``g`` (issue 27's target: <= 3). Its program holds arrays of
    2 and 4 elements, which the scalar executor unrolls into Python on floats."""

    params = [EXECUTORS]
    param_names = ["executor"]

    def setup(self, executor):
        asked = _need(executor)
        self.v = np.array([0.7, -0.3])
        self.compiled = _warm(dualad.compile(_user_value_grad_hessian, executor=asked), self.v)

    def time_compiled(self, executor):
        self.compiled(self.v)

    @ratio
    def track_compiled_over_math(self, executor):
        return speed_ratio(lambda: self.compiled(self.v), lambda: g_math(0.7, -0.3))


class CompiledRK4Jacobian:
    """``jacfwd`` of the demo's damped oscillator (500 RK4 steps, Duals of 4 parameters),
    compiled, over the oscillator itself (issue 27's target: <= 5). With compile's own
    choice only, which unrolls the program into Python floats (its loop nests would
    hold more than ``MAX_AUTOMATIC_OPS`` operations): Numba forced compiles its 60,000
    steps for minutes (benchmarks/README.md)."""

    params = [["auto"]]
    param_names = ["executor"]

    def setup(self, executor):
        from mixed.demo import damped_oscillator
        asked = _need(executor)
        self.f = damped_oscillator
        self.p = np.array([1.0, 0.1, 0.5, 1.3])
        self.compiled = _warm(dualad.compile(dualad.jacfwd(damped_oscillator), executor=asked), self.p)

    @ratio
    def track_compiled_jacfwd_over_function(self, executor):
        return speed_ratio(lambda: self.compiled(self.p), lambda: self.f(self.p), repeat=3)


def recurrence(w, x, steps=1_000):
    """Issue 36's small-array recurrence: 1,000 steps of ``concatenate``, ``tanh``, ``exp``
    and ``sum`` on vectors of 7 and 14 numbers."""
    h, total = x, 0.0
    for _ in range(steps):
        z = np.concatenate((h, x)) * w
        h = np.tanh(z[:7]) + np.exp(-z[7:])
        total = total + np.sum(h)
    return total


class RolledLoops:
    """Programs of a Python loop, rolled (``dualad.compile(roll=True)``, the default: the
    body kept once, :mod:`dualad._program.passes.roll`) and unrolled (``roll=False``), by
    compile's own executor choice: ``track_first_calls_over_eager`` is the trace and the
    first replay (the code generated, the kernels compiled) over one eager call,
    ``track_compiled_over_eager`` a settled call over an eager one (issue 36's targets:
    <= 20 and <= 1). Workloads: :func:`recurrence`, and ADBench's LSTM (2 layers, 128
    characters) objective and gradient."""

    params = [["recurrence", "lstm-objective", "lstm-gradient"], [True, False]]
    param_names = ["workload", "roll"]

    def setup(self, workload, roll):
        from .adbench import lstm
        rng = np.random.default_rng(36)
        if workload == "recurrence":
            self.f, self.args = recurrence, (rng.random(14), rng.random(7) * 0.1)
        else:
            self.f = lstm.lstm_objective if workload == "lstm-objective" else lstm.gradient
            self.args = tuple(lstm.data(*lstm.SIZES["l2-c128"]))
        self.roll = roll

    def _first_calls(self):
        compiled = dualad.compile(self.f, roll=self.roll)
        compiled(*self.args)
        compiled(*self.args)

    def _eager(self):
        return self.f(*self.args)

    @ratio
    def track_first_calls_over_eager(self, workload, roll):
        return best_seconds(self._first_calls, repeat=1, sample_s=0) / best_seconds(self._eager)

    @ratio
    def track_compiled_over_eager(self, workload, roll):
        compiled = _warm(dualad.compile(self.f, roll=self.roll), *self.args)
        return speed_ratio(lambda: compiled(*self.args), self._eager)

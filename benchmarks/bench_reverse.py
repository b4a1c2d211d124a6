"""Reverse mode (``reverse``): per-operation overhead of the tape, gradient cost
relative to the function's own cost, float32 gradients, and ``checkpoint``.

Every class names its workload and sizes. ``time_*`` methods hold only the
measured call; ``track_*`` methods return two times measured in the same
process (``common.speed_ratio``) as a ratio, or, for the overhead, one time
per operation in microseconds. ``peakmem_*`` is asv's peak resident memory of
the process running one call. Run the ratios without asv with
``OPENBLAS_NUM_THREADS=1 python -m benchmarks.ratios -b bench_reverse``.
"""

from __future__ import annotations

import functools
import gc
import time
import tracemalloc
from typing import Callable

import numpy as np

import dualad
import reverse

from . import common
from .common import (
    CHAIN_OPS,
    MLP_WIDTHS,
    best_seconds,
    mlp_classifier,
    op_chain,
    ratio,
    rosenbrock,
    sir_trajectory,
    speed_ratio,
    vector,
)


class ReverseOverhead:
    """Record + backward of ``common.op_chain`` on tiny float64 arrays (size 1 and 16).

    The chain is ``CHAIN_OPS = 200`` elementwise operations, ``np.sin`` and
    ``* 1.5`` alternating (100 of each), then ``np.sum``. At these sizes
    every operation's cost is Python: recording a node, and walking it back
    (one VJP per node). ``track_grad_us_per_op`` is the time of one
    ``reverse.grad`` call divided by 200; ``track_grad_over_numpy`` divides
    it by the same chain on plain NumPy arrays instead.
    """

    params = [[1, 16]]
    param_names = ["size"]

    def setup(self, size):
        self.x = vector(size)
        self.grad = reverse.grad(op_chain)

    def _grad(self):
        return self.grad(self.x)

    def _numpy(self):
        return op_chain(self.x)

    def time_numpy_chain(self, size):
        op_chain(self.x)

    def time_grad(self, size):
        self.grad(self.x)

    def time_tensor_backward(self, size):
        """The PyTorch-style spelling: a leaf ``Tensor``, ``.backward()``."""
        op_chain(reverse.Tensor(self.x, requires_grad=True)).backward()

    def track_grad_us_per_op(self, size):
        return best_seconds(self._grad) / CHAIN_OPS * 1e6

    track_grad_us_per_op.unit = "us/op"

    @ratio
    def track_grad_over_numpy(self, size):
        return speed_ratio(self._grad, self._numpy)


class LongTape:
    """Record + backward of ``common.op_chain`` with 1e3 and 1e5 operations, the cyclic GC on.

    ``timeit`` (and so asv and ``common.best_seconds``) switches Python's
    cyclic garbage collector off while it times; a user's program runs with
    it on, and on a long tape its full collections scan every object the
    tape keeps. ``track_us_per_op`` is one ``reverse.grad`` call of the chain
    on a size-1 array with the GC on, per operation (the fastest of a few
    calls); ``track_gc_on_over_off`` divides it by the same with the GC off.
    """

    params = [[1_000, 100_000]]
    param_names = ["n_ops"]
    timeout = 300

    def setup(self, n_ops):
        self.x = vector(1)
        self.grad = reverse.grad(functools.partial(op_chain, n_ops=n_ops))

    def _seconds(self, gc_on: bool) -> float:
        was_on = gc.isenabled()
        (gc.enable if gc_on else gc.disable)()
        try:
            best = float("inf")
            for _ in range(min(common.RATIO_REPEAT, 3)):
                start = time.perf_counter()
                self.grad(self.x)
                best = min(best, time.perf_counter() - start)
            return best
        finally:
            (gc.enable if was_on else gc.disable)()

    def track_us_per_op(self, n_ops):
        return self._seconds(gc_on=True) / n_ops * 1e6

    track_us_per_op.unit = "us/op"

    @ratio
    def track_gc_on_over_off(self, n_ops):
        return self._seconds(gc_on=True) / self._seconds(gc_on=False)


class ReverseGrad:
    """``reverse.grad(rosenbrock)`` against ``rosenbrock`` on plain NumPy arrays.

    ``common.rosenbrock`` at ``common.vector(n)``, n = 1e3 ... 1e6 (slices and
    squares: memory-bound). Target: at most 3x the function's time at n = 1e6.
    """

    params = [[1_000, 10_000, 100_000, 1_000_000]]
    param_names = ["n"]

    def setup(self, n):
        self.x = vector(n)
        self.grad = reverse.grad(rosenbrock)

    def _grad(self):
        return self.grad(self.x)

    def _f(self):
        return rosenbrock(self.x)

    def time_function(self, n):
        rosenbrock(self.x)

    def time_grad(self, n):
        self.grad(self.x)

    @ratio
    def track_grad_over_function(self, n):
        return speed_ratio(self._grad, self._f)

    def peakmem_function(self, n):
        rosenbrock(self.x)

    def peakmem_grad(self, n):
        self.grad(self.x)


class JacrevRows:
    """``reverse.jacrev`` of a trajectory with many outputs, against one gradient.

    ``common.sir_trajectory`` over 20 and 60 steps (60 and 180 outputs of 2 parameters;
    every operation is on scalars, so the cost is Python per operation).
    ``jacrev`` walks the tape once with all the output's basis cotangents
    batched (``vmap`` of the pullback), so ``track_jacrev_over_grad``, its time
    over ``reverse.grad`` of the trajectory's sum, stays near 1 whatever the
    number of outputs; one walk per output (before issue 23) made it 91 at 180
    outputs. ``track_jacfwd_over_grad`` is ``dualad.jacfwd``'s, for reference.
    """

    params = [[20, 60]]
    param_names = ["steps"]

    def setup(self, steps):
        self.p = np.array([0.5, 0.1])
        self.jacrev = reverse.jacrev(functools.partial(sir_trajectory, steps=steps))
        self.jacfwd = dualad.jacfwd(functools.partial(sir_trajectory, steps=steps))
        self.grad = reverse.grad(lambda p: sir_trajectory(p, steps).sum())

    def time_jacrev(self, steps):
        self.jacrev(self.p)

    @ratio
    def track_jacrev_over_grad(self, steps):
        return speed_ratio(lambda: self.jacrev(self.p), lambda: self.grad(self.p))

    @ratio
    def track_jacfwd_over_grad(self, steps):
        return speed_ratio(lambda: self.jacfwd(self.p), lambda: self.grad(self.p))


class MLPGrad:
    """Gradient of an MLP's loss against the loss on plain NumPy arrays, float64 and float32.

    ``common.mlp_loss``: 784-256-256-10, tanh hidden layers, softmax
    cross-entropy over a batch of 256; the gradient with respect to the six
    weight and bias arrays (269,322 numbers) by ``reverse.grad``. Target:
    at most 2.3x the loss. ``setup`` raises if a float32 gradient comes back
    in another dtype.
    """

    params = [["float64", "float32"]]
    param_names = ["dtype"]
    timeout = 120

    def setup(self, dtype):
        self.loss, self.params, _ = mlp_classifier(MLP_WIDTHS, dtype)
        self.grad = reverse.grad(self.loss)
        grads = self.grad(self.params)
        found = [str(g.dtype) for g in grads]
        if found != [dtype] * len(self.params) or np.asarray(self.loss(self.params)).dtype != dtype:
            raise TypeError(f"MLPGrad: {dtype} parameters gave gradients of dtypes {found} "
                            f"(loss {np.asarray(self.loss(self.params)).dtype}); expected {dtype}")

    def _grad(self):
        return self.grad(self.params)

    def _loss(self):
        return self.loss(self.params)

    def time_loss(self, dtype):
        self.loss(self.params)

    def time_grad(self, dtype):
        self.grad(self.params)

    @ratio
    def track_grad_over_loss(self, dtype):
        return speed_ratio(self._grad, self._loss)

    def peakmem_grad(self, dtype):
        self.grad(self.params)


# -- checkpoint ------------------------------------------------------------------------
DEPTH, SEGMENT = 16, 4


def _layers(x, count):
    """``count`` residual layers ``x + 0.5 tanh(sin(x))``: four elementwise operations each."""
    for _ in range(count):
        x = x + np.tanh(np.sin(x)) * 0.5
    return x


def _stack(x):
    return np.sum(_layers(x, DEPTH))


def _stack_checkpointed(x):
    for _ in range(DEPTH // SEGMENT):
        x = reverse.checkpoint(_layers, x, SEGMENT)
    return np.sum(x)


def _traced_peak_mb(fn: Callable) -> float:
    """Peak megabytes allocated (NumPy data included) while ``fn`` runs."""
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


class Checkpoint:
    """Gradient of a deep elementwise stack with and without ``reverse.checkpoint``.

    ``DEPTH = 16`` residual layers ``x -> x + 0.5 tanh(sin(x))`` on a float64
    vector of n = 1e4 or 1e6 (8 MB), then a sum. Checkpointed: every
    ``SEGMENT = 4`` layers are one ``checkpoint`` block, so the tape keeps 4
    block inputs, and backward recomputes one block at a time (about one extra
    forward pass). ``track_*_mb`` are the peak megabytes NumPy allocates during
    one gradient (``tracemalloc``); ``peakmem_*`` is the whole process's.
    """

    params = [[10_000, 1_000_000]]
    param_names = ["n"]
    timeout = 120

    def setup(self, n):
        self.x = vector(n)
        self.plain = reverse.grad(_stack)
        self.checkpointed = reverse.grad(_stack_checkpointed)

    def _plain(self):
        return self.plain(self.x)

    def _checkpointed(self):
        return self.checkpointed(self.x)

    def time_grad_plain(self, n):
        self.plain(self.x)

    def time_grad_checkpointed(self, n):
        self.checkpointed(self.x)

    @ratio
    def track_checkpointed_over_plain_time(self, n):
        return speed_ratio(self._checkpointed, self._plain)

    def track_plain_peak_mb(self, n):
        return _traced_peak_mb(self._plain)

    track_plain_peak_mb.unit = "MB"

    def track_checkpointed_peak_mb(self, n):
        return _traced_peak_mb(self._checkpointed)

    track_checkpointed_peak_mb.unit = "MB"

    def peakmem_grad_plain(self, n):
        self.plain(self.x)

    def peakmem_grad_checkpointed(self, n):
        self.checkpointed(self.x)

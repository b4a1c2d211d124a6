"""Workloads, data and the ratio timer shared by the benchmark modules.

Each workload is written once, with operators, NumPy ufuncs (which dispatch
to dualad on value types) or ``dualad.ops`` (which takes a ``math`` fast path
on Python floats), so the same Python function is the baseline on plain
arrays and floats and the differentiated program on ``Dual`` / ``HyperDual``
values. Data comes from fixed seeds, is built on first use, cached and made
read-only, so a benchmark's ``setup`` costs nothing after the first call
for a size and no benchmark can alter another's inputs.

Nothing here may be named like a benchmark (``time_*``, ``track_*``,
``mem_*``, ``peakmem_*``): asv would collect it.
"""

from __future__ import annotations

import functools
import math
import time
import timeit
from typing import Any, Callable

import numpy as np

from dualad import HyperDual, ops

SEED = 20240601

# Ascending: the first value of every ``params`` list is the smallest, which
# is the one tests/test_benchmarks_smoke.py runs.
SIZES = [100, 1_000, 10_000, 100_000, 1_000_000]

# The ratio timer's settings (tests/test_benchmarks_smoke.py lowers them so
# that every track_* runs once, quickly).
RATIO_REPEAT = 7  # interleaved samples of each side; the minimum of each is kept
RATIO_SAMPLE_S = 0.02  # each sample loops the call for at least this long


# -- data ----------------------------------------------------------------------
def _readonly(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


@functools.lru_cache(maxsize=None)
def vector(n: int) -> np.ndarray:
    """A point in [-1, 1]^n (float64), the same in every run."""
    return _readonly(np.random.default_rng([SEED, 0, n]).uniform(-1.0, 1.0, n))


@functools.lru_cache(maxsize=None)
def direction(n: int) -> np.ndarray:
    """A standard normal direction in R^n, independent of ``vector(n)``."""
    return _readonly(np.random.default_rng([SEED, 1, n]).standard_normal(n))


@functools.lru_cache(maxsize=None)
def square_matrix(n: int) -> np.ndarray:
    """An n x n matrix with N(0, 1/n) entries, so ``A @ x`` stays O(1)."""
    a = np.random.default_rng([SEED, 2, n]).standard_normal((n, n)) / math.sqrt(n)
    return _readonly(a)


# -- workloads -----------------------------------------------------------------
# ``xp`` is the namespace a workload's functions come from: NumPy (whose
# functions dispatch to dualad on value types) by default, and each peer's own
# (``jax.numpy``, ``torch``, ``autograd.numpy``, ``mygrad``) in compare.py, so
# that every library runs the same written expression.
def rosenbrock(x, xp=np):
    """The extended Rosenbrock function, R^n -> R (memory-bound slices)."""
    return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def sir_trajectory(params, steps=60, xp=np):
    """An SIR epidemic's (steps, 3) trajectory of its 2 parameters, one step at a time
    (``3 * steps`` outputs: a Jacobian with many more rows than columns)."""
    beta, gamma = params[0], params[1]
    s, i, r = 0.99, 0.01, 0.0
    rows = []
    for _ in range(steps):
        infected, recovered = beta * s * i, gamma * i
        s, i, r = s - infected, i + infected - recovered, r + recovered
        rows.append(xp.stack([s, i, r]))
    return xp.stack(rows)


def tanh_rosenbrock(x, a, xp=np):
    """``sum(tanh(a @ x)**2) + rosenbrock(x)``: a dense Hessian for ``a`` square."""
    return xp.sum(xp.tanh(a @ x) ** 2) + rosenbrock(x, xp)


def elementwise(x):
    """R^n -> R dominated by transcendental ufuncs (compute-bound)."""
    return np.sum(np.sin(x) * np.exp(-x * x) + np.log1p(x * x) * np.tanh(x))


VECTOR_WORKLOADS: dict[str, Callable] = {"rosenbrock": rosenbrock, "elementwise": elementwise}


def g(x, y, xp=ops):
    """A scalar function of two variables, written with ``dualad.ops`` by default."""
    return xp.exp(x * y) * xp.sin(x) / (1.0 + y ** 2) + xp.log(1.0 + x ** 2)


def g_math(x: float, y: float) -> float:
    """``g`` written with the ``math`` module: what hand-written float code costs."""
    return math.exp(x * y) * math.sin(x) / (1.0 + y ** 2) + math.log(1.0 + x ** 2)


@functools.lru_cache(maxsize=None)
def tanh_map(n: int) -> Callable:
    """``x -> tanh(A @ x) + x**2``, R^n -> R^n, with a fixed ``A = square_matrix(n)``."""
    a = square_matrix(n)

    def f(x):
        return np.tanh(a @ x) + x ** 2

    return f


HYPERDUAL_EVALUATIONS = 3


def hyperdual_value_grad_hessian(f: Callable, x: float, y: float):
    """Value, gradient and Hessian of a scalar ``f(x, y)`` at two floats.

    ``f(HyperDual(a, u, w, 0), ...)`` gives ``f``, ``f' u``, ``f' w`` and
    ``u^T f'' w``, so ``HYPERDUAL_EVALUATIONS = 3`` evaluations cover a 2x2
    Hessian, one per independent entry (every input is a HyperDual in each):

    1. ``u = w = e_x``:  ``eps1eps2 = H_xx``
    2. ``u = w = e_y``:  ``eps1eps2 = H_yy``
    3. ``u = e_x, w = e_y``:  ``real = f``, ``(eps1, eps2) = grad f``, ``eps1eps2 = H_xy``
    """
    xx = f(HyperDual(x, 1.0, 1.0, 0.0), HyperDual(y, 0.0, 0.0, 0.0))
    yy = f(HyperDual(x, 0.0, 0.0, 0.0), HyperDual(y, 1.0, 1.0, 0.0))
    xy = f(HyperDual(x, 1.0, 0.0, 0.0), HyperDual(y, 0.0, 1.0, 0.0))
    return xy.primal, (xy.eps1, xy.eps2), ((xx.eps1eps2, xy.eps1eps2), (xy.eps1eps2, yy.eps1eps2))


# -- timing ----------------------------------------------------------------------
def _loops(timer: timeit.Timer, sample_s: float) -> int:
    """Calls per sample so that one sample lasts at least ``sample_s``."""
    number = 1
    while True:
        elapsed = timer.timeit(number)
        if elapsed >= sample_s:
            return number
        number = max(number * 2, math.ceil(number * 1.2 * sample_s / max(elapsed, 1e-9)))


def speed_ratio(numerator: Callable, denominator: Callable, *, repeat: int | None = None,
                sample_s: float | None = None) -> float:
    """Seconds per call of ``numerator`` over those of ``denominator``.

    Both are timed in this process, in alternating samples (so drifts in
    clock speed or load hit both sides alike), and the fastest sample of
    each side is kept, as ``timeit`` recommends. The settings default to
    ``RATIO_REPEAT`` and ``RATIO_SAMPLE_S``.
    """
    repeat = RATIO_REPEAT if repeat is None else repeat
    sample_s = RATIO_SAMPLE_S if sample_s is None else sample_s
    tn, td = timeit.Timer(numerator), timeit.Timer(denominator)
    nn, nd = _loops(tn, sample_s), _loops(td, sample_s)
    best_n = best_d = math.inf
    for _ in range(max(repeat, 1)):
        best_n = min(best_n, tn.timeit(nn) / nn)
        best_d = min(best_d, td.timeit(nd) / nd)
    return best_n / best_d


SETTLING_CALLS = 30  # more than dualad.jit's choice takes (a few timed calls of each way)
MAX_SETTLE_S = 600.0  # the longest settle waits for kernels compiling in the background


def settle(fn: Callable, seconds: float, calls: int = SETTLING_CALLS) -> None:
    """Call ``fn`` ``calls`` times, or fewer where they take ``seconds``: ``dualad.jit``
    times its first calls to choose how the next run (``dualad.compile``'s ``measure``),
    and a benchmark times the calls after. Where ``fn.compiled`` is the ``dualad.jit``
    function it calls, until that one has chosen (it waits for loop kernels compiling in
    the background first), for up to :data:`MAX_SETTLE_S`."""
    start = time.perf_counter()
    for _ in range(calls):
        if time.perf_counter() - start > seconds:
            break
        fn()
    compiled = getattr(fn, "compiled", None)
    while (compiled is not None and compiled.measure and compiled.stats["chosen"] is None
           and time.perf_counter() - start < MAX_SETTLE_S):
        fn()


def calling(compiled: Callable, *args: Any) -> Callable:
    """``compiled(*args)`` as a function of nothing, that :func:`settle` settles."""
    def call():
        return compiled(*args)
    call.compiled = compiled
    return call


def ratio(track: Callable) -> Callable:
    """Mark a ``track_*`` method as returning a ratio of two times (asv's ``unit``)."""
    track.unit = "ratio"
    return track


# -- reverse mode: workloads and an absolute timer (bench_reverse.py, compare.py) ----
def best_seconds(fn: Callable, *, repeat: int | None = None, sample_s: float | None = None) -> float:
    """Seconds per call of ``fn``: the fastest of ``repeat`` samples (``speed_ratio``'s settings)."""
    repeat = RATIO_REPEAT if repeat is None else repeat
    sample_s = RATIO_SAMPLE_S if sample_s is None else sample_s
    timer = timeit.Timer(fn)
    number = _loops(timer, sample_s)
    return min(timer.timeit(number) / number for _ in range(max(repeat, 1)))


def peer_gradients(peers: tuple, *args: Any, repeat: int = 5):
    """``(name, forward seconds, gradient seconds, gradient)`` for each row of each peer of
    a side-by-side script (``ode_peers.py``, ``solution_peers.py``): ``peer(*args)`` gives
    ``{name: (forward, gradient)}``, or raises ImportError where its library is missing (a
    line says it is skipped). Each time is the best of ``repeat`` calls after one, and the
    gradient is taken after them (a compiled function's as its calls run by then: settle
    it first, :func:`settle`)."""
    for peer in peers:
        try:
            found = peer(*args)
        except ImportError as err:
            print(f"skipped {peer.__name__}: {err}")
            continue
        for name, (forward, gradient) in found.items():
            seconds = []
            for fn in (forward, gradient):
                fn()
                seconds.append(min(_timed(fn) for _ in range(repeat)))
            yield name, seconds[0], seconds[1], np.asarray(gradient())


def _timed(fn: Callable) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


CHAIN_OPS = 200  # elementwise operations in ``op_chain`` (the final sum is not counted)
CHAIN_SCALE = 1.5


def op_chain(x, n_ops: int = CHAIN_OPS, xp=np):
    """``n_ops`` elementwise operations, ``sin`` and ``* 1.5`` alternating, then a sum.

    ``x -> 1.5 sin(x)`` has an attracting fixed point near 1.496, so the
    values stay O(1) (no overflow, no denormals) however long the chain.
    """
    for _ in range(n_ops // 2):
        x = xp.sin(x)
        x = x * CHAIN_SCALE
    return xp.sum(x)


MLP_WIDTHS = (784, 256, 256, 10)
MLP_BATCH = 256


def mlp_loss(params, inputs, targets, xp=np):
    """Softmax cross-entropy of a tanh MLP with two hidden layers, averaged over the batch.

    ``params = (w1, b1, w2, b2, w3, b3)``, ``targets`` one-hot. The log-sum-exp
    has no max shift: the tanh layers bound the logits to O(1), and every
    library in ``compare.py`` computes exactly this expression.
    """
    w1, b1, w2, b2, w3, b3 = params
    h = xp.tanh(inputs @ w1 + b1)
    h = xp.tanh(h @ w2 + b2)
    z = h @ w3 + b3
    return xp.mean(xp.log(xp.sum(xp.exp(z), axis=1)) - xp.sum(targets * z, axis=1))


def mlp_size(widths: tuple) -> int:
    """Number of weights and biases of an MLP with layer widths ``widths``."""
    return sum(a * b + b for a, b in zip(widths[:-1], widths[1:]))


def mlp_widths(n: int) -> tuple:
    """Widths ``(784 s, 256 s, 256 s, 10)`` scaled so the MLP has about ``n`` weights.

    ``s = 1`` is ``MLP_WIDTHS`` (269,322 weights); n = 1e3 gives 48-16-16-10,
    n = 1e6 gives 1511-493-493-10.
    """
    s = math.sqrt(n / mlp_size(MLP_WIDTHS))
    d, h = (max(round(w * s), 1) for w in MLP_WIDTHS[:2])
    return (d, h, h, MLP_WIDTHS[-1])


@functools.lru_cache(maxsize=None)
def mlp_classifier(widths: tuple = MLP_WIDTHS, dtype: str = "float64"):
    """``(loss, params, direction)``: ``loss(params)`` is ``mlp_loss`` on a fixed batch.

    ``MLP_BATCH`` standard normal inputs with one-hot targets of 10 classes;
    weights N(0, 1/fan_in), biases N(0, 0.01); ``direction`` is standard
    normal with the structure of ``params``. Everything is of ``dtype``.
    """
    rng = np.random.default_rng([SEED, 5, *widths])
    inputs = _readonly(rng.standard_normal((MLP_BATCH, widths[0])).astype(dtype))
    targets = _readonly(np.eye(widths[-1], dtype=dtype)[rng.integers(0, widths[-1], MLP_BATCH)])
    params, direction_ = [], []
    for a, b in zip(widths[:-1], widths[1:]):
        params += [rng.standard_normal((a, b)) / math.sqrt(a), 0.1 * rng.standard_normal(b)]
        direction_ += [rng.standard_normal((a, b)), rng.standard_normal(b)]
    params = tuple(_readonly(p.astype(dtype)) for p in params)
    direction_ = tuple(_readonly(p.astype(dtype)) for p in direction_)

    def loss(params):
        return mlp_loss(params, inputs, targets)

    loss.inputs, loss.targets = inputs, targets
    return loss, params, direction_

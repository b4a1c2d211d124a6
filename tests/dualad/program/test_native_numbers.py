"""The numbers of every native executor against the NumPy executor's (see
tests/_support/native.py: Numba's kernels, and the CuPy executor's CUDA kernels
compiled for the CPU): bit for bit for the exact ufuncs, on float64, float32,
integers, special values and divisions by zero; within ``ULPS`` for the others;
sums within the stated bound ``2 (n - 1) eps sum|x|``; the Rosenbrock gradient and
H v, and the scatters of gradients through slices, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from _support.native import REPLAYS, assert_bits

import mixed
import reverse
from dualad._program.lowering import UFUNCS


@pytest.fixture(params=REPLAYS)
def replays(request):
    return request.param


ULPS = 4  # the most seen over 20000 draws per ufunc and dtype was 3 (float32 log, tan, tanh)
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, -7.25, 0.1, 1e-310, -1e-310, 1.7e308, -1.7e308,
           np.inf, -np.inf, np.nan]
INTS = [0, 1, -1, 2, -3, 7, 2 ** 30, -(2 ** 30), 2 ** 62]


def grid(values, dtype):
    """Every pair of ``values`` as two arrays of ``dtype``."""
    with np.errstate(over="ignore"):  # +-1.7e308 are +-inf in float32, a special value more
        x = np.repeat(np.array(values), len(values)).astype(dtype)
        return x, np.tile(np.array(values), len(values)).astype(dtype)


def two_steps(ufunc):
    """``ufunc`` and a second exact step reading it: a group of two, so one nest."""
    def f(*args):
        y = ufunc(*args)
        return y, (np.logical_not(y) if y.dtype == np.bool_ else np.negative(y))
    return f


EXACT = sorted(name for name, exact in UFUNCS.items() if exact and isinstance(getattr(np, name), np.ufunc))
INTEGER = ["add", "subtract", "multiply", "negative", "square", "absolute", "sign", "maximum", "minimum",
           "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
           "logical_or", "logical_not", "divide"]


def assert_replays_bit_for_bit(replays, name, values, dtype):
    """The ufunc ``name`` on every pair of ``values``, a native replay against NumPy's."""
    ufunc = getattr(np, name)
    x, y = grid(values, dtype)
    got, want = replays(two_steps(ufunc), *((x, y) if ufunc.nin == 2 else (x,)))
    for g, w in zip(got, want):
        assert_bits(g, w)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", EXACT)
def test_exact_ufuncs_equal_numpys_bit_for_bit_at_special_values(name, dtype, replays):
    assert_replays_bit_for_bit(replays, name, SPECIAL, dtype)


@pytest.mark.parametrize("dtype", ["int64", "int32"])
@pytest.mark.parametrize("name", INTEGER)
def test_integer_ufuncs_equal_numpys_overflow_and_division_by_zero_included(name, dtype, replays):
    assert_replays_bit_for_bit(replays, name, INTS, dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(name for name, exact in UFUNCS.items() if not exact))
def test_other_ufuncs_within_a_few_ulps_and_special_values_alike(name, dtype, replays):
    ufunc = getattr(np, name)
    rng = np.random.default_rng(0)
    x, y = (rng.uniform(-3.0, 3.0, 2000).astype(dtype) for _ in range(2))
    if name in ("arcsin", "arccos", "arctanh"):
        x = x / 4
    elif name == "arccosh":
        x = abs(x) + 1
    elif name.startswith("log"):
        x = abs(x)
    args = (x, y) if ufunc.nin == 2 else (x,)
    got, want = replays(two_steps(ufunc), *args)
    assert got[0].dtype == want[0].dtype
    ulp = np.spacing(np.maximum(abs(got[0]), abs(want[0])))
    assert np.all(abs(got[0] - want[0]) <= ULPS * ulp)
    special = grid(SPECIAL, dtype)
    got, want = replays(two_steps(ufunc), *(special if ufunc.nin == 2 else special[:1]))
    for g, w in ((got[0], want[0]),):
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        np.testing.assert_array_equal(np.where(np.isinf(w), w, 0), np.where(np.isinf(g), g, 0))


def test_where_reads_its_condition_as_numpy_does(replays):
    def f(c, x, y, i):
        return (np.where(c, x * 2.0, y), np.where(x > 0.5, x, 0.25 * y), np.where(c * x, i, x),
                np.where(x < 0, 1, 2) * 3)

    c = np.array([0.0, -0.0, 1.0, np.nan, np.inf, 2.0])
    x, y = np.linspace(-1, 1, 6), np.array([1.0, np.nan, -0.0, 3.0, -np.inf, 0.5])
    i = np.arange(6, dtype=np.int32)
    for dtype in (np.float64, np.float32):
        got, want = replays(f, c.astype(dtype), x.astype(dtype), y.astype(dtype), i)
        for g, w in zip(got, want):
            assert_bits(g, w)


def test_python_numbers_are_cast_as_numpy_casts_them(replays):
    def f(x32, i32, i64, x64):
        return (x32 * 100.1 + 3, i32 * 3 + 2 ** 30, i64 / 3 - 0.5, x32 * x64[0] + i32,
                x32 < 0.1, i32 > 2.5, np.maximum(i64, 1) * np.float32(1.5))

    rng = np.random.default_rng(1)
    args = (rng.standard_normal(50).astype(np.float32), rng.integers(-2 ** 31, 2 ** 31, 50, dtype=np.int32),
            rng.integers(-100, 100, 50), rng.standard_normal(50))
    got, want = replays(f, *args)
    for g, w in zip(got, want):
        assert_bits(g, w)


def test_divisions_by_zero_give_numpys_inf_and_nan(replays):
    def f(x, y):
        return x / y + 0.0, 1.0 / y, np.reciprocal(y) * x, (x - x) / (y * 0.0)

    x, y = grid([1.0, -1.0, 0.0, -0.0, np.inf, np.nan], np.float64)
    for dtype in (np.float64, np.float32):
        got, want = replays(f, x.astype(dtype), y.astype(dtype))
        for g, w in zip(got, want):
            assert_bits(g, w)


def test_sums_are_within_the_stated_bound(replays):
    rng = np.random.default_rng(2)
    cases = [((100_003,), np.float64), ((301, 7), np.float64), ((5001,), np.float32), ((), np.float64)]
    for shape, dtype in cases:
        x = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)).astype(dtype)

        def f(x):
            return np.sum(x * 3.0 - 1.0), np.sum(np.sin(x) * x)

        got, want = replays(f, x)
        for g, w, terms in zip(got, want, (x * 3.0 - 1.0, np.sin(x) * x)):
            assert type(g) is type(w)
            n, eps = max(np.size(x), 1), np.finfo(dtype).eps
            # the terms themselves are within ULPS of NumPy's (sin): their sum too, relatively
            bound = 2 * (n - 1) * eps * np.sum(abs(terms), dtype=np.float64) + ULPS * eps * np.sum(abs(terms))
            assert abs(float(g) - float(w)) <= bound, (shape, dtype, g, w, bound)
    got, want = replays(lambda x: np.sum(-(x * 2.0)), np.array([0.0, 0.0]))
    assert_bits(got, want)  # NumPy's sum of negative zeros is +0.0


def test_rosenbrock_gradient_and_hvp_equal_numpys_bit_for_bit(replays):
    """Elementwise, the same operations in the same order: no ulp of difference."""
    def rosenbrock(x):
        return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    rng = np.random.default_rng(3)
    x, v = rng.standard_normal(1001), rng.standard_normal(1001)
    got, want = replays(reverse.grad(rosenbrock), x)
    assert_bits(got, want)
    got, want = replays(lambda x, v: mixed.hvp(rosenbrock, x, v), x, v)
    assert_bits(got, want)


@pytest.mark.parametrize("f", [lambda x: np.sum(np.abs(x[:-1]) * x[1:]),
                               lambda x: np.sum(np.abs(x[1:]) * x[:-1] ** 2),
                               lambda x: np.sum(x[2:] * x[1:-1] * 2.0)], ids=["shift-1", "shift1", "inner"])
@pytest.mark.parametrize("n", [2, 3, 9, 1000])
def test_gradients_through_slices_scatter_as_numpy_does(f, n, replays):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32 if n == 9 else np.float64)
    x[0] = -0.0
    got, want = replays(reverse.grad(f), x)
    assert_bits(got, want)
    got, want = replays(reverse.value_and_grad(f), x)
    assert_bits(got[1], want[1])

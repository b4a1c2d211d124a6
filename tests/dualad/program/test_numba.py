"""The Numba executor (dualad._program.executors.numba) against the NumPy executor: bit
for bit for the exact ufuncs, on float64, float32, integers, special values and
divisions by zero; within ``ULPS`` for the others; sums within the stated bound
``2 (n - 1) eps sum|x|``. Also: how the executor is chosen, and the kernels kept
on disk for the next process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import dualad
import mixed
import reverse
from dualad._program.executors import numba as numba_executor
from dualad._program.lowering import UFUNCS

pytest.importorskip("numba")

ULPS = 4  # the most seen over 20000 draws per ufunc and dtype was 3 (float32 log, tan, tanh)
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, -7.25, 0.1, 1e-310, -1e-310, 1.7e308, -1.7e308,
           np.inf, -np.inf, np.nan]
INTS = [0, 1, -1, 2, -3, 7, 2 ** 30, -(2 ** 30), 2 ** 62]
ROOT = Path(__file__).resolve().parents[3]


def replays(f, *args):
    """``f``'s replay at ``args`` on the NumPy executor, then on Numba's (which must run)."""
    out = []
    for executor in ("numpy", "numba"):
        compiled = dualad.compile(f, executor=executor)
        with np.errstate(all="ignore"):
            compiled(*args)  # the trace: eager evaluation
            out.append(compiled(*args))
        assert compiled.stats["executor"] == executor and compiled.stats["replays"] == 1
    return out


def assert_bits(got, want):
    """Equal to the bit (any NaN equals any NaN), the sign of zeros, shape and dtype too."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.dtype)
    assert np.array_equal(got, want, equal_nan=got.dtype.kind == "f"), (got, want)
    if got.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def grid(values, dtype):
    """Every pair of ``values`` as two arrays of ``dtype``."""
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


def assert_replays_bit_for_bit(name, values, dtype):
    """The ufunc ``name`` on every pair of ``values``, Numba's replay against NumPy's."""
    ufunc = getattr(np, name)
    x, y = grid(values, dtype)
    got, want = replays(two_steps(ufunc), *((x, y) if ufunc.nin == 2 else (x,)))
    for g, w in zip(got, want):
        assert_bits(g, w)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", EXACT)
def test_exact_ufuncs_equal_numpys_bit_for_bit_at_special_values(name, dtype):
    assert_replays_bit_for_bit(name, SPECIAL, dtype)


@pytest.mark.parametrize("dtype", ["int64", "int32"])
@pytest.mark.parametrize("name", INTEGER)
def test_integer_ufuncs_equal_numpys_overflow_and_division_by_zero_included(name, dtype):
    assert_replays_bit_for_bit(name, INTS, dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(name for name, exact in UFUNCS.items() if not exact))
def test_other_ufuncs_within_a_few_ulps_and_special_values_alike(name, dtype):
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


def test_where_reads_its_condition_as_numpy_does():
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


def test_python_numbers_are_cast_as_numpy_casts_them():
    def f(x32, i32, i64, x64):
        return (x32 * 100.1 + 3, i32 * 3 + 2 ** 30, i64 / 3 - 0.5, x32 * x64[0] + i32,
                x32 < 0.1, i32 > 2.5, np.maximum(i64, 1) * np.float32(1.5))

    rng = np.random.default_rng(1)
    args = (rng.standard_normal(50).astype(np.float32), rng.integers(-2 ** 31, 2 ** 31, 50, dtype=np.int32),
            rng.integers(-100, 100, 50), rng.standard_normal(50))
    got, want = replays(f, *args)
    for g, w in zip(got, want):
        assert_bits(g, w)


def test_divisions_by_zero_give_numpys_inf_and_nan():
    def f(x, y):
        return x / y + 0.0, 1.0 / y, np.reciprocal(y) * x, (x - x) / (y * 0.0)

    x, y = grid([1.0, -1.0, 0.0, -0.0, np.inf, np.nan], np.float64)
    for dtype in (np.float64, np.float32):
        got, want = replays(f, x.astype(dtype), y.astype(dtype))
        for g, w in zip(got, want):
            assert_bits(g, w)


def test_sums_are_within_the_stated_bound():
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


def test_rosenbrock_gradient_and_hvp_equal_numpys_bit_for_bit():
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
def test_gradients_through_slices_scatter_as_numpy_does(f, n):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32 if n == 9 else np.float64)
    x[0] = -0.0
    got, want = replays(reverse.grad(f), x)
    assert_bits(got, want)
    got, want = replays(reverse.value_and_grad(f), x)
    assert_bits(got[1], want[1])


def test_scalar_program_is_one_kernel_and_equals_numpys():
    def g(x, y):
        return np.sin(x) * np.exp(y) / (1.0 + y * y) + np.log(1.0 + x * x)

    def value_grad_hessian(x, y):
        return g(x, y), reverse.grad(g, argnums=(0, 1))(x, y), dualad.hessian(lambda v: g(v[0], v[1]))(
            np.stack([x, y]))

    x, y = np.float64(0.7), np.float64(-0.3)
    compiled = dualad.compile(value_grad_hessian, executor="numba")
    program = compiled.program(x, y)
    assert [e.prim.name for e in program.eqns].count("loop") >= 1
    got, want = replays(value_grad_hessian, x, y)
    for g_, w in zip(dualad._base.tree.flatten(got)[0], dualad._base.tree.flatten(want)[0]):
        assert type(g_) is type(w) and np.shape(g_) == np.shape(w)
        np.testing.assert_allclose(g_, w, rtol=8 * np.finfo(np.float64).eps)


def test_outputs_are_fresh_and_guards_are_checked():
    compiled = dualad.compile(lambda x: x * 2.0 + 1.0 if np.sum(x * x) > 1.0 else x - 1.0,
                              executor="numba")
    big, small = np.full(3, 2.0), np.full(3, 0.1)
    compiled(big)
    first, second = compiled(big), compiled(big)
    assert first is not second
    first[:] = 0.0
    np.testing.assert_array_equal(second, big * 2.0 + 1.0)
    np.testing.assert_array_equal(compiled(small), small - 1.0)  # the guard missed: the other branch
    assert compiled.stats["misses"] == 1 and compiled.stats["executor"] == "numba"


def test_the_executor_is_chosen_per_program(monkeypatch):
    def f(x):
        return np.sum(np.sin(x) * 2.0 + 1.0)

    large, small = np.ones(numba_executor.MIN_SIZE), np.ones(10)
    auto = dualad.compile(f)
    auto(large)
    assert auto.stats["executor"] == "numba"
    auto(small)
    assert auto.stats["executor"] == "numpy"  # a nest of 10 iterations does not pay
    forced = dualad.compile(f, executor="numba")
    forced(small)
    assert forced.stats["executor"] == "numba"
    nothing = dualad.compile(lambda x: np.exp(x), executor="numba")
    nothing(small)
    assert nothing.stats["executor"] == "numpy"  # no group of two steps: nothing to lower
    monkeypatch.setattr(numba_executor, "available", lambda: False)
    without = dualad.compile(f)
    np.testing.assert_array_equal(without(large), f(large))
    assert without.stats["executor"] == "numpy"
    with pytest.raises(ImportError, match='executor="numba" needs Numba'):
        dualad.compile(f, executor="numba")


def test_chosen_by_itself_a_nest_of_slow_math_stays_numpys():
    """NumPy's tanh is about 9 times as fast as the one Numba calls: a group of an add and
    a tanh stays NumPy's two calls, while an arithmetic group of the same program is a nest."""
    def f(x, y):
        return np.tanh(x + 1.0), y * 2.0 - y * y

    x, y = np.linspace(-1, 1, numba_executor.MIN_SIZE), np.linspace(-1, 1, numba_executor.MIN_SIZE + 1)
    auto = dualad.compile(f)
    auto(x, y)
    assert auto.stats["executor"] == "numba"
    assert sorted(e.prim.name for e in auto.program(x, y).eqns) == ["add", "loop", "tanh"]
    for got, want in zip(auto(x, y), f(x, y)):
        assert_bits(got, want)


def test_executor_argument_is_checked():
    with pytest.raises(ValueError, match='executor must be None, "numpy" or "numba", got \'cuda\''):
        dualad.compile(np.sin, executor="cuda")
    with pytest.raises(ValueError, match="optimize=False"):
        dualad.compile(np.sin, executor="numba", optimize=False)


def test_a_second_process_loads_the_kernels_from_disk(tmp_path):
    script = textwrap.dedent("""
        import json, numpy as np, dualad
        from dualad._program.executors import numba as numba_executor
        f = dualad.compile(lambda x: np.sum(np.cos(x[1:]) * x[:-1] - 0.25), executor="numba")
        x = np.linspace(0.0, 1.0, 17)
        f(x)
        value = float(f(x))
        hits = sum(sum(k.stats.cache_hits.values()) for k in numba_executor._KERNELS.values())
        misses = sum(sum(k.stats.cache_misses.values()) for k in numba_executor._KERNELS.values())
        print(json.dumps({"value": value, "hits": hits, "misses": misses}))
    """)
    env = {**os.environ, "DUALAD_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    runs = [json.loads(subprocess.run([sys.executable, "-c", script], env=env, cwd=ROOT, check=True,
                                      capture_output=True, text=True, timeout=120).stdout)
            for _ in range(2)]
    assert runs[0]["misses"] == 1 and runs[0]["hits"] == 0  # compiled, and saved
    assert runs[1]["misses"] == 0 and runs[1]["hits"] == 1  # loaded
    assert runs[0]["value"] == runs[1]["value"]
    assert len(list((tmp_path / "kernels").glob("k*.py"))) == 1


def test_kernels_compile_in_memory_where_the_cache_cannot_be_written(tmp_path, monkeypatch):
    blocked = tmp_path / "a file"
    blocked.write_text("")
    monkeypatch.setenv("DUALAD_CACHE_DIR", str(blocked))
    kernel = numba_executor._import("test", "import numba\n\n@numba.njit(cache=True)\ndef kernel(a):\n"
                                             "    return a + 1\n")
    assert kernel(1) == 2

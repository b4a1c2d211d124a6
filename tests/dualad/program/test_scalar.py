"""The executor of float64 scalar programs (dualad._program.executors.scalar): Python floats with NumPy's
numbers, bit for bit, where a program's every step is a ufunc of float64 scalars."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dualad
import mixed
import reverse
from dualad import HyperDual, ops
from dualad._program.executors import scalar
from dualad._program.executors.generated import generate
from dualad._program.executors.replay import runner
from dualad._program.executors.scalar import MAX_ELEMENTS, scalar_executor
from dualad.extend import REGISTRY

# the scalar executor is the NumPy executor's (Numba's loops would replace it where Numba is installed)
numpy_executor = functools.partial(dualad.compile, executor="numpy")

SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, 1e-310, -1e-310, 5e-324, 1.7e308, -1.7e308, 1e154,
           math.inf, -math.inf, math.nan, 2.0 ** -1074, 1.0 + 2.0 ** -52, 0.1, -7.25]


def same(a, b) -> bool:
    """Equal to the bit, the sign of a zero included (any NaN equals any NaN)."""
    a, b = np.float64(a), np.float64(b)
    return (np.isnan(a) and np.isnan(b)) or a.tobytes() == b.tobytes()


EXACT = sorted(name for name, e in REGISTRY.items() if e.scalar_form is not None)


def test_the_exact_entries_are_declared():
    assert {"add", "subtract", "multiply", "divide", "negative", "square", "reciprocal", "abs",
            "integer_pow"} <= set(EXACT)


@pytest.mark.parametrize("name", EXACT)
def test_each_exact_expression_rounds_as_its_ufunc(name):
    entry = REGISTRY[name]
    ufunc = getattr(np, entry.ufunc)
    expression = eval(f"lambda a, b: {entry.scalar_form.format('a', 'b')}")  # noqa: S307 - the entry's text
    rng = np.random.default_rng(0)
    values = SPECIAL + (rng.standard_normal(40) * 10.0 ** rng.integers(-300, 300, 40)).tolist()
    pairs = [(a, b) for a in values for b in values] if ufunc.nin == 2 else [(a, 0.0) for a in values]
    checked = 0
    for a, b in pairs:
        with np.errstate(all="ignore"):
            want = ufunc(np.float64(a), np.float64(b)) if ufunc.nin == 2 else ufunc(np.float64(a))
        try:
            got = expression(a, b)
        except ZeroDivisionError:  # the executor replays such a call with NumPy
            assert name in ("divide", "reciprocal")
            continue
        assert type(got) is float
        assert same(got, want), (name, a, b, got, want)
        checked += 1
    assert checked > 0.9 * len(pairs)


def g(x, y):
    return ops.exp(x * y) * ops.sin(x) / (1.0 + y ** 2) + ops.log(1.0 + x ** 2)


def value_grad_hessian(x, y):
    xx = g(HyperDual(x, 1.0, 1.0, 0.0), HyperDual(y, 0.0, 0.0, 0.0))
    yy = g(HyperDual(x, 0.0, 0.0, 0.0), HyperDual(y, 1.0, 1.0, 0.0))
    xy = g(HyperDual(x, 1.0, 0.0, 0.0), HyperDual(y, 0.0, 1.0, 0.0))
    return xy.primal, (xy.eps1, xy.eps2), ((xx.eps1eps2, xy.eps1eps2), (xy.eps1eps2, yy.eps1eps2))


def branchy(x, y):
    if x > y:
        return np.sqrt(x - y) * np.tanh(y), x
    return np.arctan2(y, x) - np.abs(x) / y, 2.5


def fallback_counted(program):
    """The ordinary replay of ``program``, counting its calls."""
    ordinary = generate(program)
    calls = []

    def run(*inputs):
        calls.append(inputs)
        return ordinary(*inputs)
    return run, calls


def both_executors(f, *args):
    """The program of ``f`` at ``args``, its scalar replay (with the count of fallbacks)
    and its ordinary replay."""
    program = numpy_executor(f).program(*args)
    fallback, calls = fallback_counted(program)
    fast = scalar_executor(program, fallback)
    assert fast is not None, f"no scalar executor for {program!r}"
    return program, fast, calls, generate(program)


def assert_same_leaves(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert type(a) is type(b), (a, b)
        assert same(a, b), (a, b)


FUNCTIONS = {
    "value_grad_hessian": value_grad_hessian,
    "grad": reverse.grad(lambda x, y: np.exp(-x * x) * np.cos(3.0 * y) + x / (1.0 + y * y),
                         argnums=(0, 1)),
    "hvp": lambda x, y: mixed.hvp(lambda p: np.log1p(p[0] ** 2) * np.cosh(p[1]) + p[0] * p[1],
                                  (x, y), (y, x)),
    "branchy": branchy,
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@given(x=st.floats(-30, 30, allow_subnormal=True) | st.sampled_from(SPECIAL),
       y=st.floats(-30, 30, allow_subnormal=True) | st.sampled_from(SPECIAL))
def test_scalar_replay_equals_ordinary_replay_bit_for_bit(name, x, y):
    f = FUNCTIONS[name]
    with np.errstate(all="ignore"):
        _, fast, _, ordinary = both_executors(f, np.float64(0.7), np.float64(-0.3))
        got, want = fast(np.float64(x), np.float64(y)), ordinary(np.float64(x), np.float64(y))
    if type(want) is not list:  # a guard gave another outcome: both stop at it
        assert (got.index, got.outcome) == (want.index, want.outcome)
        return
    assert_same_leaves(got, want)


def test_compiled_scalar_calls_equal_eager_and_run_on_floats():
    f = numpy_executor(value_grad_hessian, measure=False)  # every call a replay, none timed eagerly
    rng = np.random.default_rng(3)
    f(np.float64(0.7), np.float64(-0.3))
    for x, y in rng.uniform(-2, 2, (20, 2)):
        x, y = np.float64(x), np.float64(y)
        got, want = f(x, y), value_grad_hessian(x, y)
        assert repr(got) == repr(want)  # same numbers, same types, same nesting
    assert f.stats["replays"] == 20 and f.stats["traces"] == 1
    source = runner(f.program(np.float64(0.7), np.float64(-0.3))).source
    assert "_u" in source and " * " in source and "_slow(" in source  # the scalar executor's


def test_zero_d_array_inputs_and_python_number_outputs():
    f = numpy_executor(lambda x, y: (x * y + 1.0, y, 4.0))
    x, y = np.array(2.0), np.array(3.0)
    f(x, y)
    out = f(np.array(5.0), y)
    assert type(out[0]) is np.float64 and out[0] == 16.0 and out[1] is y and out[2] == 4.0
    assert "_slow(" in runner(f.program(x, y)).source


def test_division_by_zero_replays_with_numpy():
    program, fast, calls, ordinary = both_executors(lambda x, y: (x / y, 1.0 / np.square(y)),
                                                    np.float64(1.0), np.float64(2.0))
    assert_same_leaves(fast(np.float64(1.0), np.float64(4.0)), [np.float64(0.25), np.float64(1 / 16)])
    assert not calls
    with np.errstate(divide="ignore", invalid="ignore"):
        for x, y in [(1.0, 0.0), (-1.0, -0.0), (0.0, 0.0)]:
            got = fast(np.float64(x), np.float64(y))
            assert_same_leaves(got, ordinary(np.float64(x), np.float64(y)))
    assert len(calls) == 3


def test_guards_miss_as_in_an_ordinary_replay():
    f = numpy_executor(branchy)
    assert f(np.float64(3.0), np.float64(1.0))[1] == 3.0
    assert f(np.float64(1.0), np.float64(3.0))[1] == 2.5  # the other branch, traced
    assert f(np.float64(4.0), np.float64(2.0))[0] == branchy(np.float64(4.0), np.float64(2.0))[0]
    assert (f.stats["traces"], f.stats["replays"], f.stats["eager"]) == (2, 1, 0)
    assert f.stats["misses"] >= 1


def test_inf_and_nan_outputs_come_with_numpys_warnings_and_errors():
    """An output that is not finite is recomputed by NumPy, whose errstate then applies."""
    program, fast, calls, _ = both_executors(lambda x, y: (x * y, x - y), np.float64(1.0), np.float64(2.0))
    big, inf = np.float64(1e300), np.float64(np.inf)
    with pytest.warns(RuntimeWarning, match="overflow"):
        assert_same_leaves(fast(big, big), [np.float64(np.inf), np.float64(0.0)])
    with np.errstate(invalid="raise"), pytest.raises(FloatingPointError):
        fast(inf, inf)
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        fast(big, big)
    assert len(calls) == 3
    assert_same_leaves(fast(np.float64(3.0), np.float64(2.0)), [np.float64(6.0), np.float64(1.0)])
    assert len(calls) == 3


@pytest.mark.parametrize("constant", [np.float32(0.1), np.array(0.1, dtype=np.float32), np.float16(0.5),
                                      np.int8(3)])
def test_a_constant_of_another_dtype_is_left_to_numpy(constant):
    """NumPy computes a Python float beside a float32 in float32: a step that reads such a
    constant (a comparison deciding a branch, say) is NumPy's call, never a Python operator."""
    def f(x):
        return np.sin(x) * constant if x > constant else x
    program = numpy_executor(f).program(np.float64(0.7))
    fast = scalar_executor(program, generate(program))
    if fast is not None:
        assert repr(constant) not in fast.source and "(0.1" not in fast.source and "(0.5" not in fast.source
    compiled = numpy_executor(f)
    for x in (0.7, 0.100000002, 0.0999999, 3.0):
        assert repr(compiled(np.float64(x))) == repr(f(np.float64(x)))


@pytest.mark.parametrize("args, why", [
    ((np.float32(1.0), np.float32(2.0)), "float32 rounds each step to float32"),
    ((np.complex128(1.0), np.complex128(2.0)), "complex arithmetic"),
    ((np.ones(MAX_ELEMENTS + 1), np.ones(MAX_ELEMENTS + 1)), "arrays larger than MAX_ELEMENTS"),
    ((np.arange(3), np.arange(3)), "integers"),
])
def test_other_programs_keep_the_ordinary_executor(args, why):
    def f(x, y):
        return x * y + x

    program = numpy_executor(f).program(*args)
    assert scalar_executor(program, generate(program)) is None, why


# -- small arrays, unrolled ---------------------------------------------------------------
def user_value_grad_hessian(v):
    """A scalar function of a 2-vector, its gradient and Hessian, as a user writes them."""
    def h(p):
        return g(p[0], p[1])
    return h(v), reverse.grad(h)(v), dualad.hessian(h)(v)


SMALL = {
    "user_value_grad_hessian": (user_value_grad_hessian, (np.array([0.3, 0.7]),)),
    "elementwise_broadcast": (lambda x, y: (np.exp(x) * y[:, None] - x ** 2, x > 0.5),
                              (np.array([0.1, 0.9, -0.4]), np.array([2.0, -1.0]))),
    "moves": (lambda x: (np.concatenate([x[1:], x[:1]]).reshape(2, 2).T[::-1], np.flip(x), np.pad(x, 1)),
              (np.array([1.0, -0.0, 3.0, 4.5]),)),
    "scatter_by_basic_indices": (lambda x: reverse.grad(lambda v: v[1] * v[2] + v[0] ** 3)(x),
                                 (np.array([0.5, -2.0, 3.0]),)),
}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_small_arrays_unroll_bit_for_bit(name):
    f, args = SMALL[name]
    program, fast, calls, ordinary = both_executors(f, *args)
    assert fast.numpy_calls == 0, "every step a ufunc or a move of elements"
    rng = np.random.default_rng(5)
    for _ in range(20):
        new = [np.asarray(rng.standard_normal(np.shape(a)) * 3.0) for a in args]
        got, want = fast(*new), ordinary(*new)
        assert len(got) == len(want)
        for a, b in zip(got, want):
            assert type(a) is type(b) and np.shape(a) == np.shape(b)
            assert np.asarray(a).dtype == np.asarray(b).dtype
            assert all(same(x, y) for x, y in zip(np.ravel(a), np.ravel(b))), (name, a, b)
    assert not calls
    compiled = numpy_executor(f)
    compiled(*args)
    compiled(*args)  # the first replay makes the executor
    assert runner(compiled.program(*args)).source == fast.source


def test_products_with_and_quotients_by_one_are_renamed_bit_for_bit():
    """x * 1, 1 * x and x / 1 give x back, signed zeros, inf and NaN included: no line."""
    def f(x, y):
        return x * np.array([1.0, 0.0]), np.array([1.0, 2.0]) * y, (x + y) / np.ones(2)
    x, y = np.array([0.5, -2.0]), np.array([3.0, 0.25])
    program, fast, calls, ordinary = both_executors(f, x, y)
    assert fast.numpy_calls == 0
    lines = [line for line in fast.source.splitlines() if " = " in line]
    assert not [line for line in lines if "(1.0)" in line]
    assert len(lines) == 1 + 1 + 1 + 1 + 2  # the floats of x, of y; x[1] * 0.0, 2.0 * y[1], x + y
    with np.errstate(all="ignore"):
        for a in SPECIAL:
            for b in (-0.0, math.inf, math.nan, 1.5):
                new = [np.array([a, b]), np.array([b, a])]
                got, want = fast(*new), ordinary(*new)
                for u, v in zip(got, want):
                    assert all(same(p, q) for p, q in zip(u, v)), (a, b, u, v)


def test_reductions_and_products_are_numpys_calls_on_the_floats(monkeypatch):
    monkeypatch.setattr(scalar, "STEP_US", 1e9)  # unrolled whatever it costs
    def f(x, a):
        return np.sum(np.tanh(a @ x) ** 2) + x @ x, np.cumsum(x * 2.0)
    x, a = np.array([0.3, -0.2, 0.9]), np.arange(9.0).reshape(3, 3) / 7.0
    program, fast, calls, ordinary = both_executors(f, x, a)
    assert fast.numpy_calls >= 3
    for scale in (1.0, -2.5, 1e-3):
        got, want = fast(x * scale, a), ordinary(x * scale, a)
        for p, q in zip(got, want):
            np.testing.assert_allclose(p, q, rtol=1e-15, atol=0)


def test_unrolling_is_taken_where_it_costs_less():
    def chain(x):
        for _ in range(20):
            x = np.sin(x) * 1.5
        return x
    for n, taken in ((1, True), (4, True), (16, False)):
        program = numpy_executor(chain).program(np.ones(n))
        assert (scalar_executor(program, generate(program)) is not None) is taken, n


def test_an_input_of_more_elements_than_traced_is_not_taken():
    """Shapes key the programs: a replay never meets another shape; the executor unrolls
    the traced one, and a compiled function traces again for a new one."""
    f = dualad.compile(lambda x: x * 2.0)
    assert np.array_equal(f(np.ones(2)), [2.0, 2.0])
    assert np.array_equal(f(np.ones(3)), [2.0, 2.0, 2.0])
    assert f.stats["traces"] == 2


def test_the_automatic_executor_leaves_small_programs_unrolled():
    """Where Numba is installed, a program of small arrays that unrolls keeps the Python
    floats: as loops of a few iterations it measured slower (32x the math g against 21x)."""
    pytest.importorskip("numba")
    f = dualad.compile(user_value_grad_hessian)
    v = np.array([0.3, 0.7])
    f(v), f(v)
    assert f.stats["executor"] == "numpy"
    assert runner(f.program(v)).numpy_calls == 0

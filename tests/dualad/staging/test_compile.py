"""dualad.compile: every replay equals eager evaluation, guards re-trace, and what a
program cannot hold runs eagerly with a warning (never a silently wrong replay)."""

import inspect
import warnings

import numpy as np
import pytest
from _support.executors import full_way_counted
from hypothesis import given
from hypothesis import strategies as st

import dualad
import mixed
import reverse
from dualad import ops
from dualad._program.executors.replay import replay
from dualad._program.ir import Eqn
from dualad._program.passes.cse import eliminate_common_subexpressions
from dualad._program.passes.dce import eliminate_dead_code
from dualad._program.program import Program
from dualad.extend import REGISTRY


def _same(a, b, dtype=np.float64):
    tol = 1e-5 if dtype == np.float32 else 1e-12
    if isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for u, v in zip(a, b):
            _same(u, v, dtype)
        return
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _same(a[k], b[k], dtype)
        return
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _check(f, inputs, *, replays=None):
    """compile(f) on each input equals f on it; no warning; returns the compiled function."""
    cf = dualad.compile(f)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for args in inputs:
            args = args if isinstance(args, tuple) else (args,)
            _same(cf(*args), f(*args))
    assert cf.stats["eager"] == 0
    if replays is not None:
        assert cf.stats["replays"] == replays
    return cf


# -- programs: branchy, loopy, pytrees ------------------------------------------------------
def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def branchy(x):
    if np.sum(x) > 0:
        return np.sin(x) * np.exp(-x)
    return np.cos(x) ** 2 + x


def loopy(x):
    """A loop whose trip count depends on the values: halve until small."""
    n = 0
    while np.max(np.abs(x)) > 1.0:
        x = x / 2.0
        n += 1
    return x * n + 1.0


def nested(x):
    y = np.tanh(x)
    for _ in range(3):
        y = y * x if float(y[0]) > 0 else y - x
    return y


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rosenbrock_replays_equal_eager(dtype):
    rng = np.random.default_rng(0)
    inputs = [rng.normal(size=7).astype(dtype) for _ in range(4)]
    _check(rosen, inputs, replays=3)


def test_branch_flip_retraces_and_then_replays_both_branches():
    inputs = [np.array([1.0, 2.0]), np.array([-3.0, 1.0]), np.array([2.0, 0.5]), np.array([-1.0, -1.0])]
    cf = _check(branchy, inputs)
    assert cf.stats == {"traces": 2, "replays": 2, "misses": 2, "eager": 0, "executor": "numpy",
                        "chosen": None, "loops": None}


def test_loop_with_a_value_dependent_trip_count():
    inputs = [np.array([0.5, 0.2]), np.array([3.0, -1.0]), np.array([0.1, 0.9]),
              np.array([30.0, 1.0]), np.array([2.5, 1.0])]
    cf = _check(loopy, inputs)
    assert cf.stats["traces"] == 3  # trip counts 0, 2 and 5; the last input replays trip count 2


def test_float_guards_in_a_loop():
    rng = np.random.default_rng(1)
    _check(nested, [rng.normal(size=3) for _ in range(6)])


@given(st.lists(st.floats(-4, 4), min_size=1, max_size=4), st.lists(st.floats(-4, 4), min_size=1, max_size=4))
def test_replay_equals_eager_property(a, b):
    def f(x):
        y = np.where(x > 0, x, 0.5 * x)
        if np.mean(y) > 0.1:
            y = np.sqrt(np.abs(y) + 1.0)
        return np.sum(y * y), y[::-1]
    cf = dualad.compile(f)
    for v in (a, b, a):
        x = np.array(v)
        _same(cf(x), f(x))


def test_pytrees_and_static_arguments():
    def f(params, x, n, scale=2.0):
        w, b = params["w"], params["b"]
        return {"y": (x @ w + b) ** n * scale, "n": n}
    rng = np.random.default_rng(2)
    params = {"w": rng.normal(size=(3, 2)), "b": rng.normal(size=2)}
    cf = _check(f, [(params, rng.normal(size=(4, 3)), 2), (params, rng.normal(size=(4, 3)), 2),
                    (params, rng.normal(size=(4, 3)), 3)])
    assert cf.stats["traces"] == 2  # n is static: n=3 is a new key
    assert cf(params, np.ones((4, 3)), 2, scale=3.0)["y"].shape == (4, 2)
    assert cf.stats["traces"] == 3


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(), (0,), (3, 0), (5,)])
def test_zero_d_and_empty_arrays(dtype, shape):
    def f(x):
        return np.sum(np.exp(x) * 2.0), np.sin(x)
    rng = np.random.default_rng(3)
    _check(f, [rng.normal(size=shape).astype(dtype) for _ in range(3)], replays=2)


def test_shape_and_dtype_key_the_programs():
    cf = dualad.compile(lambda x: x * 2.0)
    cf(np.ones(3))
    cf(np.ones(4))
    cf(np.ones(3, np.float32))
    assert cf.stats["traces"] == 3
    assert cf(np.ones(4)).shape == (4,) and cf.stats["replays"] == 1


def test_cache_is_bounded_and_least_recently_used_goes_first():
    cf = dualad.compile(lambda x: x + 1.0, max_programs=2)
    for n in (1, 2, 3):
        cf(np.ones(n))
    assert len(cf._programs) == 2
    cf(np.ones(3))
    assert cf.stats["replays"] == 1
    cf(np.ones(1))  # dropped: traced again
    assert cf.stats["traces"] == 4


def test_constant_output_is_copied_and_closed_over_arrays_are_constants():
    c = np.arange(3.0)
    cf = dualad.compile(lambda x: (x + c, np.ones(2)))
    cf(np.zeros(3))
    y, ones = cf(np.zeros(3))
    ones[0] = 5.0  # the caller owns its copy
    assert cf(np.zeros(3))[1][0] == 1.0
    _same(y, c)


def test_setitem_on_a_traced_value():
    def f(x):
        y = x * 1.0
        y[0] = np.sin(x[1])
        return y
    _check(f, [np.array([1.0, 2.0]), np.array([3.0, 4.0])], replays=1)


# -- guards: conversions ----------------------------------------------------------------
@pytest.mark.parametrize("convert", [float, int, bool, lambda v: v.item(), lambda v: v.tolist()])
def test_each_python_conversion_is_a_guard(convert):
    def f(x):
        return x * convert(np.sum(x))
    cf = dualad.compile(f)
    for v in (1.0, 1.0, 0.0, 2.0, 0.0):
        _same(cf(np.array([v])), f(np.array([v])))
    assert cf.stats["replays"] >= 1 and cf.stats["misses"] >= 1


def test_guards_that_always_miss_fall_back_to_eager_with_one_warning():
    def f(x):
        return x * float(x[0])
    cf = dualad.compile(f, max_programs=2)
    with pytest.warns(RuntimeWarning, match="guards missed"):
        for v in range(6):
            _same(cf(np.array([float(v)])), f(np.array([float(v)])))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _same(cf(np.array([9.0])), f(np.array([9.0])))  # warned once only
    assert cf.stats["eager"] >= 2


def test_printed_guard():
    cf = dualad.compile(lambda x: x + 1.0 if x[0] > 0 else x - 1.0)
    text = str(cf.program(np.array([1.0])))
    assert "assert bool(t" in text and "== True" in text


# -- index arrays and sort orders the program computes or takes: operands, read each replay --
INDEXED = {
    "x[i]": lambda x, i: x[i] * 2.0,
    "x[i, 1:]": lambda x, i: np.sin(x[i, 1:]),
    "x[:, i]": lambda x, i: x[:, i] ** 2,
    "x[i, i]": lambda x, i: x[i, i % x.shape[1]],
    "take": lambda x, i: np.take(x, i, axis=1),
    "take_along_axis": lambda x, i: np.take_along_axis(x, np.broadcast_to(i[:1], (x.shape[0], 1)) % 3, 1),
}


@pytest.mark.parametrize("name", sorted(INDEXED))
def test_gathers_by_index_arguments_are_replayed_with_their_gradients(name):
    """An integer index array argument is an input of the program (where it was a parameter,
    which made the call run eagerly): replays at new indices, repeated ones included, equal
    eager evaluation, and so do the compiled gradient (a scatter-add) and H v."""
    f = INDEXED[name]
    x, v = np.arange(12.0).reshape(4, 3) / 7.0, np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    indices = [np.array([0, 2]), np.array([1, 1]), np.array([-1, 0]), np.array([2, 2])]
    loss = lambda x, i: np.sum(np.tanh(f(x, i)) ** 2)  # noqa: E731
    _check(f, [(x, i) for i in indices], replays=3)
    _check(reverse.grad(loss), [(x, i) for i in indices], replays=3)
    _check(lambda x, v, i: mixed.hvp(lambda y: loss(y, i), x, v), [(x, v, i) for i in indices], replays=3)
    _check(lambda x, v, i: dualad.jvp(lambda y: f(y, i), (x,), (v,)), [(x, v, i) for i in indices],
           replays=3)
    assert "gather" in str(dualad.compile(f).program(x, indices[0]))


def test_scatter_adds_by_index_arguments_are_replayed_with_their_gradients():
    """``index_add`` (zeros with values added at an index argument) is a step of the
    program too, repeated indices accumulating at each replay as eagerly."""
    def f(x, v, i):
        return np.sum(ops.index_add(x, v * x[i], (i,)) ** 2)
    x, v = np.arange(1.0, 6.0), np.array([1.0, -2.0, 0.5])
    indices = [np.array([0, 0, 4]), np.array([1, 2, 1]), np.array([3, 3, 3])]
    _check(f, [(x, v, i) for i in indices], replays=2)
    _check(reverse.grad(f, argnums=(0, 1)), [(x, v, i) for i in indices], replays=2)
    assert "scatter_at" in str(dualad.compile(f).program(x, v, indices[0]))


def _numpy_add_at_index(y, v, i):
    """``y[i] += v`` in NumPy: a repeated position takes its last write, y[p] + v_last."""
    y = y.copy()
    y[i] += v
    return y


def _last_write(i, n):
    """By hand: whether each write of ``y[i] = ...`` (y of length n) is its position's last."""
    p = np.asarray(i) % n
    return np.array([not np.any(p[k + 1:] == p[k]) for k in range(len(p))])


def test_assignment_through_index_arguments_is_replayed_as_numpy_assigns():
    """``y[i] += v`` with ``i`` an integer array argument crashed the trace ("'Tracer' object
    has no attribute '__dlpack__'": which write of a repeated position is kept was decided on
    the host); now an entry of the program decides it at each replay, as NumPy assigns."""
    def f(y, v, i):
        y = y * 1.0
        y[i] += v
        return y
    y, v, w = np.arange(5.0), np.array([0.5, -2.0, 4.0]), np.array([1.0, -1.0, 2.0, 3.0, -0.5])
    indices = [np.array([0, 2, 4]), np.array([1, 1, 3]), np.array([4, 0, 4]), np.array([-1, 2, -1])]
    cf, cg = dualad.compile(f), dualad.compile(reverse.grad(lambda y, v, i: np.sum(w * f(y, v, i)),
                                                            argnums=(0, 1)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no eager fallback
        for i in indices:
            np.testing.assert_array_equal(cf(y, v, i), _numpy_add_at_index(y, v, i))
            gy, gv = cg(y, v, i)  # y[p] + v_last: dy = w; dv_k = w[p_k] for a kept write, else 0
            np.testing.assert_array_equal(gy, w)
            np.testing.assert_array_equal(gv, np.where(_last_write(i, 5), w[i], 0.0))
    assert cf.stats["replays"] == cg.stats["replays"] == 3
    assert cf.stats["eager"] == cg.stats["eager"] == 0


def test_assignment_of_rows_through_index_arguments_is_replayed_as_numpy_assigns():
    def f(y, v, i):
        y = y * 1.0
        y[i, 1:] = v
        return y

    def numpy_f(y, v, i):
        y = y.copy()
        y[i, 1:] = v
        return y
    y, v = np.arange(12.0).reshape(4, 3), np.array([[10.0, 11.0], [12.0, 13.0]])
    cf = dualad.compile(f)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for i in [np.array([0, 3]), np.array([2, 2]), np.array([-1, 1])]:
            np.testing.assert_array_equal(cf(y, v, i), numpy_f(y, v, i))
    assert cf.stats["replays"] == 2


def test_assignment_through_a_mask_argument_runs_eagerly_with_numpys_numbers():
    """A traced mask's positions are its numbers: the call runs eagerly, with a warning,
    where it crashed ("'Tracer' object has no attribute '__dlpack__'")."""
    def f(y, m):
        y = y * 1.0
        y[m] = 7.0
        return y
    cf, masks = dualad.compile(f), [np.array([True, False, True]), np.array([False, True, True])]
    with pytest.warns(RuntimeWarning, match="runs eagerly"):  # once for these shapes
        for m in masks:
            np.testing.assert_array_equal(cf(np.zeros(3), m), np.where(m, 7.0, 0.0))


def _eager_warning(call):
    """The one RuntimeWarning of ``call()`` (a compiled call that runs eagerly)."""
    with pytest.warns(RuntimeWarning, match="runs eagerly") as caught:
        call()
    assert len(caught) == 1
    return caught[0]


def test_running_eagerly_names_the_operation_and_the_line_that_forced_it():
    """jit(grad(f)) of np.prod ran eagerly with a generic warning ("the numbers of a traced
    value were read on the host ..."): it names prod's VJP now, and the user's line, told
    by module name (this file's path holds "/dualad/", as a clone's would)."""
    x = np.array([1.0, 2.0, 3.0])
    g = dualad.compile(reverse.grad(lambda x: np.prod(x)))
    line = inspect.currentframe().f_lineno + 1
    caught = _eager_warning(lambda: np.testing.assert_array_equal(g(x), [6.0, 3.0, 2.0]))
    assert "were read on the host, by prod's VJP (" in str(caught.message)
    assert str(caught.message).endswith(f", at {__file__}:{line}")
    assert (caught.filename, caught.lineno) == (__file__, line)  # the warning points there too

    def f(x):
        return x[np.nonzero(x > 1.5)]  # the line that reads
    read = inspect.getsourcelines(f)[1] + 1
    caught = _eager_warning(lambda: np.testing.assert_array_equal(dualad.compile(f)(x), [2.0, 3.0]))
    assert "were read on the host, by numpy.nonzero (" in str(caught.message)
    assert str(caught.message).endswith(f", at {__file__}:{read}")


def test_astype_to_its_own_dtype_copies_as_numpy_does():
    """x.astype(x.dtype) is a copy in NumPy (copy=True): a program returned the caller's
    input itself, which the caller may write into."""
    cf = dualad.compile(lambda x: x.astype(x.dtype))
    x = np.ones(3)
    cf(x)
    out = cf(x)
    assert not np.shares_memory(out, x)
    same = dualad.compile(lambda x: x.astype(x.dtype, copy=False))
    same(x)
    assert same(x) is x


def test_numpy_scalars_of_one_type_and_two_dtypes_have_programs_of_their_own():
    """datetime64[D] and datetime64[s] are one Python type: a program whose cast was a
    no-op for the first must not replay for the second."""
    def f(x, t):  # whole days since 2020-01-01, scaled by x
        return x * ((t.astype(np.dtype("M8[D]")) - np.datetime64("2020-01-01")) / np.timedelta64(1, "D"))
    cf = dualad.compile(f)
    for t in (np.datetime64("2020-01-02", "D"), np.datetime64("2020-01-03T12:00:00", "s")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert cf(np.float64(1.0), t) == f(np.float64(1.0), t)
    assert cf.stats["replays"] == 0


def test_integer_arithmetic_keeps_numpys_integers():
    """``//`` and ``%`` of integer arguments give NumPy's integers (they gave floats, so
    ``x[(i + 1) % n]`` raised IndexError under compile)."""
    def f(x, i):
        return i // 2, i % 3, -7 // i, x[(i + 1) % x.shape[0]]
    x = np.arange(4.0)
    cf = _check(f, [(x, np.array([5, -3, 4])), (x, np.array([2, 7, -1]))], replays=1)
    out = cf(x, np.array([1, 2, 3]))
    assert [o.dtype for o in out[:3]] == [np.dtype(np.int64)] * 3
    for got, want in zip(out, f(x, np.array([1, 2, 3]))):
        np.testing.assert_array_equal(got, want)


def test_a_gather_out_of_range_raises_as_eager_evaluation_does():
    cf = _check(lambda x, i: x[i], [(np.ones(3), np.array([0, 2]))])
    with pytest.raises(IndexError):
        cf(np.ones(3), np.array([0, 3]))


@pytest.mark.parametrize("fn", [np.sort, lambda a: np.sort(a, axis=0), np.median,
                                lambda a: np.quantile(a, [0.1, 0.75], axis=1),
                                lambda a: np.partition(a, 1, axis=1), lambda a: np.percentile(a, 40.0)],
                         ids=["sort", "sort_axis0", "median", "quantile", "partition", "percentile"])
def test_sorts_are_replayed_and_differentiated(fn):
    """A sort order is a step of the program (it was computed on the host, which made the
    call run eagerly): each replay sorts its own values."""
    rng = np.random.default_rng(5)
    xs = [rng.standard_normal((4, 3)) for _ in range(4)]
    loss = lambda a: np.sum(fn(a) ** 3)  # noqa: E731
    _check(fn, xs, replays=3)
    _check(reverse.grad(loss), xs, replays=3)
    _check(lambda a, v: mixed.hvp(loss, a, v), [(x, xs[0]) for x in xs], replays=3)


@pytest.mark.parametrize("fn", [np.median, lambda a: np.quantile(a, 0.3),
                                lambda a: np.percentile(a, [10.0, 90.0]), lambda a: np.median(a, axis=0),
                                lambda a: np.quantile(a, 0.5, axis=1, keepdims=True)],
                         ids=["median", "quantile", "percentile", "median_axis0", "quantile_keepdims"])
def test_quantiles_of_nan_data_are_nan_with_numpys_types(fn):
    """NumPy's quantile is NaN where a NaN is among the values (the rule took the middle of
    the sorted values, NaNs last), and a number where NumPy gives one (not a 0-d array):
    eagerly and in every replay."""
    xs = [np.array([[1.0, np.nan, 0.0], [2.0, -1.0, 4.0]]), np.array([[3.0, 1.0, 2.0], [5.0, 0.5, np.nan]]),
          np.arange(6.0).reshape(2, 3)]
    cf = dualad.compile(fn)
    for x in xs:
        want = fn(x)
        for got in (cf(x), dualad.jvp(fn, (x,), (np.ones_like(x),))[0]):
            assert type(got) is type(want)
            np.testing.assert_array_equal(got, want)
    assert cf.stats["replays"] == 2


def test_printed_guards_are_numbered_in_order():
    def f(x):
        for k in range(3):
            x = x * 2.0 if x[k] > 0 else x - 1.0
        return x

    text = str(dualad.compile(f).program(np.array([1.0, -1.0, 2.0])))
    numbers = [line.rsplit("'guard ", 1)[1] for line in text.splitlines() if "assert" in line]
    assert numbers == ["0'", "1'", "2'"]


# -- what a program cannot hold: eager, with a warning that says why --------------------------
def test_value_dependent_shape_runs_eagerly():
    def f(x):
        return np.sum(x[x > 0])
    cf = dualad.compile(f)
    with pytest.warns(RuntimeWarning, match="parameters of getitem|host"):
        _same(cf(np.array([1.0, -1.0, 2.0])), f(np.array([1.0, -1.0, 2.0])))
    _same(cf(np.array([-1.0, -1.0, 2.0])), f(np.array([-1.0, -1.0, 2.0])))
    assert cf.stats["eager"] == 1 and cf.stats["replays"] == 0


def test_global_random_draws_run_eagerly():
    def f(x):
        return x + np.random.normal(size=x.shape)
    cf = dualad.compile(f)
    np.random.seed(0)
    with pytest.warns(RuntimeWarning, match="pass the numpy.random.Generator as an argument"):
        a = cf(np.zeros(2))
    b = cf(np.zeros(2))
    assert not np.array_equal(a, b)


@pytest.mark.parametrize("where", ["global", "closed over"])
def test_a_draw_of_the_kept_gaussian_runs_eagerly(where):
    """A scalar normal draw that takes the Gaussian a RandomState kept from its last one
    moves neither its key nor its position: the program would have baked it in."""
    stream = np.random if where == "global" else np.random.RandomState(3)
    stream.seed(0)
    stream.normal()  # keeps the second Gaussian of the pair

    def f(x):
        return x + stream.normal()
    cf = dualad.compile(f)
    with pytest.warns(RuntimeWarning, match="drew random numbers"):
        a = cf(np.zeros(1))
    assert not np.array_equal(a, cf(np.zeros(1)))
    assert cf.stats["eager"] >= 1 and cf.stats["replays"] == 0


def test_closed_over_generator_runs_eagerly():
    rng = np.random.default_rng(0)

    def f(x):
        return x * rng.uniform(size=x.shape)
    cf = dualad.compile(f)
    with pytest.warns(RuntimeWarning, match="pass the numpy.random.Generator as an argument"):
        a = cf(np.ones(3))
    assert not np.array_equal(a, cf(np.ones(3)))


def test_unseeded_generator_made_inside_runs_eagerly():
    """Each eager call of f draws new numbers from np.random.default_rng(); a program
    would have repeated the trace's (issue 26)."""
    def f(x):
        return x + np.random.default_rng().normal(size=x.shape)
    original = np.random.default_rng
    cf = dualad.compile(f)
    with pytest.warns(RuntimeWarning, match=r"np.random.default_rng\(\) and no seed"):
        a = cf(np.zeros(2))
    assert not np.array_equal(a, cf(np.zeros(2)))
    assert cf.stats["replays"] == 0
    assert np.random.default_rng is original  # NumPy's own again after the trace


def test_pythons_random_runs_eagerly():
    import random

    def f(x):
        return x * random.random()
    cf = dualad.compile(f)
    with pytest.warns(RuntimeWarning, match=r"Python's random"):
        a = cf(np.ones(2))
    assert not np.array_equal(a, cf(np.ones(2)))


def test_seeded_generator_made_inside_is_a_constant():
    def f(x):
        return x + np.random.default_rng(5).normal(size=x.shape)
    _check(f, [np.zeros(2), np.ones(2)], replays=1)


def test_numpy_function_without_a_rule_runs_eagerly():
    def f(x):
        return np.bincount(np.asarray(x > 0, dtype=int))
    cf = dualad.compile(f)
    with pytest.warns(RuntimeWarning, match="np.asarray|no dualad rule"):
        _same(cf(np.array([1.0, -1.0])), f(np.array([1.0, -1.0])))


def test_rule_reading_raw_numbers_is_not_baked():
    def f(x):
        return np.clip(x, -1.0, 1.0) * 2.0  # clip's rule picks entries from raw numbers
    cf = dualad.compile(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for v in ([0.5, 3.0], [-3.0, 0.1], [2.0, 2.0]):
            _same(cf(np.array(v)), f(np.array(v)))


def test_closed_over_dual_of_an_outer_transform():
    def outer(y):
        return dualad.compile(lambda x: x * y)(np.array([2.0]))
    with pytest.warns(RuntimeWarning, match="outer transform"):
        d = dualad.derivative(lambda y: np.sum(outer(y)))(3.0)
    assert d == 2.0


def test_escaped_tracer_raises():
    kept = []
    cf = dualad.compile(lambda x: kept.append(x) or x * 2.0)
    cf(np.ones(2))
    with pytest.raises(dualad.EscapedValueError):
        kept[0] + 1.0
    with pytest.raises(dualad.EscapedValueError):
        float(kept[0][0])


# -- errors -------------------------------------------------------------------------------
def test_errors_say_what_was_expected():
    with pytest.raises(TypeError, match="f must be callable, got int"):
        dualad.compile(3)
    with pytest.raises(ValueError, match="max_programs"):
        dualad.compile(np.sin, max_programs=0)
    with pytest.raises(TypeError, match="neither an array nor hashable"):
        dualad.compile(lambda x, opts: x)(np.ones(1), {1, 2})


# -- composition ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compile_of_grad_hvp_jacfwd(dtype):
    rng = np.random.default_rng(4)
    xs = [rng.normal(size=6).astype(dtype) for _ in range(3)]
    v = rng.normal(size=6).astype(dtype)
    for f, calls in ((reverse.grad(rosen), [(x,) for x in xs]),
                    (lambda x, v: mixed.hvp(rosen, x, v), [(x, v) for x in xs]),
                    (dualad.jacfwd(lambda x: np.sin(x) * x[0]), [(x,) for x in xs]),
                    (reverse.value_and_grad(branchy_sum), [(x,) for x in xs] + [(-x,) for x in xs])):
        cf = dualad.compile(f)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for args in calls:
                _same(cf(*args), f(*args), dtype)
        assert cf.stats["replays"] >= 2 and cf.stats["eager"] == 0


def branchy_sum(x):
    return np.sum(branchy(x))


def test_compile_of_grad_records_the_backward_pass():
    p = dualad.compile(reverse.grad(lambda x: np.sum(np.sin(x)))).program(np.ones(3))
    # the sin is dead (only the derivative is returned); cos times the seed's ones stays
    # (as cos times 1.0): the output must be a fresh array, not cos's own
    assert [e.prim.name for e in p.eqns] == ["cos", "multiply"]


def test_no_grad_inside_a_compiled_gradient():
    def f(x):
        with reverse.no_grad():
            scale = np.sum(x * x)
        return np.sum(x * scale)
    _check(reverse.grad(f), [np.array([1.0, 2.0]), np.array([3.0, -1.0])], replays=1)


def test_transforms_of_a_compiled_function_run_it_under_them():
    cf = dualad.compile(rosen)
    x, t = np.array([0.5, -1.0, 2.0]), np.array([1.0, 0.0, -1.0])
    cf(x)
    _same(reverse.grad(cf)(x), reverse.grad(rosen)(x))
    _same(dualad.jvp(cf, (x,), (t,)), dualad.jvp(rosen, (x,), (t,)))
    _same(mixed.hvp(cf, x, t), mixed.hvp(rosen, x, t))
    _same(dualad.jacfwd(cf)(x), dualad.jacfwd(rosen)(x))
    assert cf.stats["eager"] == 4  # without a warning: the outer transform sees f itself


def test_a_stop_gradient_construct_keeps_its_meaning_under_an_outer_transform():
    """Why a call with derivative-carrying values runs f instead of the program: the
    program traced on plain arrays has no record of no_grad."""
    def f(x):
        with reverse.no_grad():
            s = np.sum(x)
        return np.sum(x) * s
    cf = dualad.compile(f)
    x = np.array([1.0, 2.0])
    cf(x)
    _same(reverse.grad(cf)(x), reverse.grad(f)(x))


def test_compile_inside_compile_is_inlined():
    inner = dualad.compile(lambda x: np.sin(x) * 2.0)
    outer = dualad.compile(lambda x: inner(x) + 1.0)
    _same(outer(np.ones(2)), np.sin(np.ones(2)) * 2.0 + 1.0)
    assert [e.prim.name for e in outer.program(np.ones(2)).eqns] == ["sin", "multiply", "add"]


# -- printing, DOT, dead code ---------------------------------------------------------------
def test_program_prints_as_python_source():
    p = dualad.compile(lambda x, y: np.sum(np.sin(x) * y, axis=0)).program(np.ones((2, 3)), np.ones(3))
    text = str(p)
    assert "t2 = np.sin(x0)" in text and "np.sum(" in text and "axis=" in text
    assert text.splitlines()[0] == "def program(x0, x1):"


def test_to_dot():
    dot = dualad.compile(lambda x: np.exp(x) + 1.0 if x[0] > 0 else x).program(np.ones(2)).to_dot()
    assert dot.startswith("digraph program {") and dot.rstrip().endswith("}")
    assert 'label="x0"' in dot and "shape=diamond" in dot and "exp" in dot and "-> out0" in dot


def test_dead_code_elimination_drops_unused_primitives_and_keeps_guards():
    def f(x):
        unused = np.exp(x) * 3.0  # noqa: F841 - the dead code under test
        if np.sum(np.cos(x)) > 0:
            return np.sin(x)
        return x
    raw = dualad.compile(f, optimize=False).program(np.zeros(2))
    names = [e.prim.name for e in raw.eqns]
    assert "exp" in names and "cos" in names
    p = eliminate_dead_code(raw)
    names = [e.prim.name for e in p.eqns]
    assert "exp" not in names and "multiply" not in names
    assert "cos" in names and "sum" in names and len(p.guards) == 1  # a guard keeps what it reads
    assert not any(type(v) is float and v == 3.0 for v in p.consts.values())
    x = np.array([0.3, 0.1])
    _same(p.rebuild(replay(p, [x])), f(x))
    assert len(dualad.compile(f).program(np.zeros(2)).eqns) == len(p.eqns)  # optimize=True runs it


def test_common_subexpressions_are_computed_once():
    def f(x):
        a = np.sin(x) * np.sin(x)  # the same sin twice
        b = np.sum(np.exp(x), axis=0) + np.sum(np.exp(x), axis=0)
        return a + b
    raw = dualad.compile(f, optimize=False).program(np.zeros((2, 3)))
    p = eliminate_dead_code(eliminate_common_subexpressions(raw))
    names = [e.prim.name for e in p.eqns]
    assert names.count("sin") == 1 and names.count("exp") == 1 and names.count("sum") == 1
    assert len(dualad.compile(f).program(np.zeros((2, 3))).eqns) == len(p.eqns)  # optimize=True runs it
    _check(f, [np.zeros((2, 3)), np.arange(6.0).reshape(2, 3) / 7.0], replays=1)
    # a gradient repeats more: its replay computes fewer primitives, and the same numbers
    grad = reverse.grad(lambda x: np.sum(f(x)))
    raw = dualad.compile(grad, optimize=False).program(np.zeros((2, 3)))
    assert len(dualad.compile(grad).program(np.zeros((2, 3))).eqns) < len(raw.eqns)
    _check(grad, [np.zeros((2, 3)), np.linspace(-1.0, 1.0, 6).reshape(2, 3)], replays=1)


def test_common_subexpressions_read_constant_numbers_by_value():
    """Two ``c * x`` reading two slots that hold 2.0 are one step; numbers equal as
    Python compares them but not as values (0.0 and -0.0, 1 and 1.0) are not."""
    mul, add = REGISTRY["multiply"], REGISTRY["add"]
    consts = {1: 2.0, 2: 2.0, 3: 0.0, 4: -0.0, 5: 1, 6: 1.0}
    steps = [Eqn(mul, {}, (c, 0), (10 + c,), np) for c in consts]
    steps += [Eqn(add, {}, (10 + c, 11 + c), (20 + c,), np) for c in (1, 3, 5)]
    p = Program(1, consts, steps, [21, 23, 25])
    q = eliminate_dead_code(eliminate_common_subexpressions(p))
    assert [e.prim.name for e in q.eqns].count("multiply") == 5  # the two 2.0s merged
    x = np.array([-1.5, 0.0, np.inf])
    with np.errstate(invalid="ignore"):  # 0.0 * inf and -0.0 * inf are nan
        replays = list(zip(replay(q, [x]), replay(p, [x]), strict=True))
    for u, w in replays:
        np.testing.assert_array_equal(np.signbit(u), np.signbit(w))
        np.testing.assert_array_equal(u, w)


def test_common_subexpressions_keep_what_differs_and_outputs_apart():
    def f(x):
        return np.sum(x, axis=0), np.sum(x, axis=1), np.sin(x), np.sin(x)  # two axes; two outputs
    x = np.arange(6.0).reshape(2, 3)
    p = eliminate_common_subexpressions(dualad.compile(f, optimize=False).program(x))
    assert [e.prim.name for e in p.eqns].count("sum") == 2  # axis=0 and axis=1 differ
    cf = dualad.compile(f)
    cf(x)
    s0, s1, u, v = cf(x)  # a replay
    u[0, 0] = 100.0  # the caller writes into one output: the other is its own array
    np.testing.assert_array_equal(v, np.sin(x))
    typed = dualad.compile(lambda x: (ops.full_like(x, 1), ops.full_like(x, 1.0)))
    typed(x)
    a, b = typed(x)
    assert a.dtype == np.full_like(x, 1).dtype and b.dtype == np.full_like(x, 1.0).dtype


def test_constants_are_folded_at_trace_time():
    def f(x):
        c = np.exp(np.ones(3)) * 2.0  # no input in it: computed once, a constant
        return x * c
    p = dualad.compile(f).program(np.zeros(3))
    assert [e.prim.name for e in p.eqns] == ["multiply"] and len(p.consts) == 1


def test_ops_on_traced_values():
    def f(x):
        return ops.logsumexp(x) + ops.sum(ops.reshape(x, (2, 2)).T @ x.reshape(2, 2))
    _check(f, [np.arange(4.0), np.ones(4)], replays=1)


def test_a_gradient_through_maximum_is_traced_once_and_replayed():
    """maximum's tie rule read the host (bool(any(tie))), so the MLP's value_and_grad
    ran eagerly on every call; now one trace serves every step, ties included."""
    rng = np.random.default_rng(7)
    params = (rng.standard_normal((5, 8)), rng.standard_normal((8, 3)))
    y = np.eye(3)[rng.integers(0, 3, 10)]

    def loss(params, x, y):
        w1, w2 = params
        return np.sum((np.maximum(x @ w1, 0.0) @ w2 - y) ** 2)
    compiled = dualad.compile(reverse.value_and_grad(loss), measure=False)  # every call a replay
    eager = reverse.value_and_grad(loss)
    for step in range(15):
        x = rng.standard_normal((10, 5))
        if step == 7:
            x[:, :] = 0.0  # every pre-activation ties with 0
        (v, (g1, g2)), (ve, (e1, e2)) = compiled(params, x, y), eager(params, x, y)
        assert v == ve
        np.testing.assert_array_equal(g1, e1)
        np.testing.assert_array_equal(g2, e2)
    assert compiled.stats == {"traces": 1, "replays": 14, "misses": 0, "eager": 0, "executor": "numpy",
                              "chosen": None, "loops": None}


# -- what a program reads through names (issue 26) ----------------------------------------------
@pytest.mark.parametrize("case", ["constant-output", "closed-over-product", "gradient-is-the-constant"])
def test_an_output_that_does_not_depend_on_the_inputs_is_fresh_at_every_call(case):
    w = np.arange(1.0, 4.0)
    f = {"constant-output": lambda x: (np.sum(x), np.ones(3) * 2.0),
         "closed-over-product": lambda x: w * 2.0,
         "gradient-is-the-constant": reverse.grad(lambda x: np.sum(x * w))}[case]
    compiled, x = dualad.compile(f), np.zeros(3)
    for _ in range(3):
        out = compiled(x)
        leaf = out[1] if isinstance(out, tuple) else out
        want = f(x)
        np.testing.assert_array_equal(leaf, want[1] if isinstance(want, tuple) else want)
        leaf[:] = 99.0  # the caller owns what a call returns
    np.testing.assert_array_equal(w, np.arange(1.0, 4.0))
    assert compiled.stats["replays"] == 2


W_GLOBAL = np.ones(3)


def _reads_a_global(x):
    return np.sum(np.tanh(W_GLOBAL * x)) + np.sum(W_GLOBAL ** 2)


def test_an_array_read_through_a_name_is_copied_at_the_trace_and_read_one_way():
    """Writing into W after the trace changed the step W * x but not the folded W ** 2."""
    global W_GLOBAL
    W_GLOBAL = np.ones(3)
    compiled, x = dualad.compile(_reads_a_global), np.arange(3.0)
    at_trace = compiled(x)
    W_GLOBAL[:] = 3.0
    assert compiled(x) == at_trace  # the trace's numbers, for every step
    W_GLOBAL = np.full(3, 3.0)       # a new array under the name: traced anew
    assert compiled(x) == _reads_a_global(x) != at_trace
    assert compiled.stats["traces"] == 2


def test_rebinding_a_closure_variable_or_an_attribute_traces_anew():
    scale = 2.0
    by_closure = dualad.compile(lambda x: x * scale)
    x = np.arange(3.0)
    np.testing.assert_array_equal(by_closure(x), x * 2.0)
    scale = 3.0
    np.testing.assert_array_equal(by_closure(x), x * 3.0)

    class Model:
        def __init__(self):
            self.w = np.ones(3)

        def loss(self, x):
            return np.sum(self.w * x)
    model = Model()
    grad = dualad.compile(reverse.grad(model.loss))
    np.testing.assert_array_equal(grad(x), np.ones(3))
    model.w = np.full(3, 5.0)
    np.testing.assert_array_equal(grad(x), np.full(3, 5.0))
    assert by_closure.stats["traces"] == grad.stats["traces"] == 2


CALLS = 0


def _counts_its_calls(x):
    global CALLS
    CALLS += 1
    return x * 2.0


def test_a_name_the_function_assigns_itself_is_not_guarded():
    compiled = dualad.compile(_counts_its_calls, measure=False)  # counts replays, never eager calls
    for _ in range(5):
        compiled(np.ones(2))
    assert compiled.stats == {"traces": 1, "replays": 4, "misses": 0, "eager": 0, "executor": "numpy",
                              "chosen": None, "loops": None}


def test_names_rebound_at_every_call_make_the_function_run_eagerly_with_a_warning():
    compiled, x = dualad.compile(lambda x: x * factor, max_programs=2), np.ones(2)
    with pytest.warns(RuntimeWarning, match="rebound"):
        for factor in range(1, 8):
            np.testing.assert_array_equal(compiled(x), x * factor)
    assert compiled.stats["eager"] > 0


# -- threads (issue 26) ------------------------------------------------------------------------
def _branchy(x):
    return np.sum(np.sin(x)) if x[0] > 0 else np.sum(x ** 3)


# _branchy's guard takes a new value on most calls: its compiled grad gives up, as meant.
@pytest.mark.filterwarnings(r"ignore:dualad\.compile\(grad\.<locals>\.wrapper\) runs eagerly:RuntimeWarning")
def test_compiled_functions_called_from_many_threads_equal_eager():
    """Eight threads at shapes that make the 2-program cache evict: the LRU update raised
    KeyError where another thread had evicted the program meanwhile."""
    import concurrent.futures

    functions = {"grad": reverse.grad(lambda x: np.sum(np.tanh(x) * x)),
                 "hvp": lambda x: mixed.hvp(lambda y: np.sum(y ** 4), x, np.ones_like(x)),
                 "branchy-grad": reverse.grad(_branchy)}
    compiled = {name: dualad.compile(f, max_programs=2) for name, f in functions.items()}
    rng = np.random.default_rng(3)
    jobs = [(name, rng.standard_normal(int(rng.integers(1, 6)))) for name in functions for _ in range(200)]
    rng.shuffle(jobs)

    def run(job):
        name, x = job
        return compiled[name](x), functions[name](x)
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        for got, want in pool.map(run, jobs):
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


# -- the hot path of a call (issue 27) ---------------------------------------------------------
def test_calls_replayed_before_take_the_hot_path_at_each_signature(monkeypatch):
    compiled = dualad.compile(lambda x, y: x * y + 1.0, measure=False)  # the hot path from the first replay
    calls = [(np.float64(2.0), np.float64(3.0)), (np.ones(2), np.ones(2)),
             (np.array(2.0), np.array(3.0)), (np.ones(3), np.ones(3))]
    for args in calls:
        compiled(*args)  # traced (each trace empties the hot table: the programs change)
    for args in calls:
        compiled(*args)  # replayed the full way
    full = full_way_counted(compiled, monkeypatch)
    for args in calls:
        got, want = compiled(*args), args[0] * args[1] + 1.0
        assert type(got) is type(want) and np.shape(got) == np.shape(want) and np.all(got == want)
    assert full == [] and compiled.stats["traces"] == 4
    compiled(np.float32(2.0), np.float32(3.0))  # another dtype: the full way, and a trace
    compiled(np.ones(2), y=np.ones(2))          # a keyword: the full way, a program of its own
    assert len(full) == 2 and compiled.stats["traces"] == 6


def test_a_rebinding_is_seen_on_the_hot_path(monkeypatch):
    scale = 2.0
    compiled, x = dualad.compile(lambda x: x * scale, measure=False), np.arange(3.0)
    compiled(x), compiled(x)
    full = full_way_counted(compiled, monkeypatch)
    np.testing.assert_array_equal(compiled(x), x * 2.0)
    assert full == []
    scale = 3.0
    np.testing.assert_array_equal(compiled(x), x * 3.0)
    assert len(full) == 1 and compiled.stats["traces"] == 2
    compiled(x)  # replayed the full way once more, then hot again
    np.testing.assert_array_equal(compiled(x), x * 3.0)
    assert len(full) == 2


def test_a_closure_variable_deleted_is_seen_on_the_hot_path():
    from dualad._staging.reads import Bindings

    def make():
        w = 2.0

        def f(x):
            return x * w

        def drop():
            nonlocal w
            del w
        return f, drop
    f, drop = make()
    bindings = Bindings(f)
    assert bindings.hold()
    drop()
    assert not bindings.hold() and bindings.changed() == ["w"]


def test_a_guard_missed_on_the_hot_path_moves_to_the_other_program(monkeypatch):
    compiled = dualad.compile(_branchy, measure=False)
    up, down = np.array([1.0, 2.0]), np.array([-1.0, 2.0])
    compiled(up), compiled(up)
    full = full_way_counted(compiled, monkeypatch)
    assert compiled(down) == _branchy(down) and compiled.stats["misses"] == 1  # hot, missed, traced
    assert full == [] and compiled.stats["traces"] == 2
    assert compiled(down) == _branchy(down) and len(full) == 1  # the trace emptied the table
    assert compiled(up) == _branchy(up)  # hot: the newest program first, missed, the other replayed
    assert len(full) == 1 and compiled.stats["traces"] == 2 and compiled.stats["misses"] == 2


def test_the_hot_path_keeps_the_least_recently_used_order():
    compiled = dualad.compile(lambda x: x + 1.0, max_programs=2)
    one, two = np.ones(1), np.ones(2)
    for x in (one, two, one, two):  # both hot
        compiled(x)
    compiled(one)           # the most recent by the hot path
    compiled(np.ones(3))    # evicts two, not one
    assert compiled.stats["traces"] == 3
    compiled(one)
    assert compiled.stats["traces"] == 3
    compiled(two)
    assert compiled.stats["traces"] == 4


def test_a_key_made_eager_leaves_the_hot_path():
    """Guards that keep missing make a key run eagerly, programs kept or not."""
    compiled = dualad.compile(lambda x: x * float(x[0]), max_programs=2)
    x = np.array([1.0, 2.0])
    compiled(x), compiled(x)
    with pytest.warns(RuntimeWarning, match="guards missed"):
        for k in range(2, 7):
            np.testing.assert_array_equal(compiled(x * k), x * k * k)
    eager = compiled.stats["eager"]
    np.testing.assert_array_equal(compiled(x), x * 1.0)
    assert compiled.stats["eager"] == eager + 1

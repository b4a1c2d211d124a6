"""Rolled loops (issue 36, "Loops stay loops"): a trace that repeats one body keeps it once
(dualad/_program/passes/roll.py), and replays the numbers of the unrolled program on
every executor, derivatives' sweeps included."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dualad
import reverse
from dualad._program.executors.loop_kernel import LoopKernel
from dualad._program.executors.replay import replay
from dualad._program.loop import Loop
from dualad._program.passes.roll import MIN_SAVED, roll_loops

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from benchmarks import bench_compile  # noqa: E402

EXECUTORS = ["numpy"] + (["numba"] if importlib.util.find_spec("numba") else [])


def recurrence(w, x):
    """Issue 36's recurrence (benchmarks/bench_compile.py), 300 steps."""
    return bench_compile.recurrence(w, x, steps=300)


def rows(a, xs):
    """A loop over the rows of ``xs`` (each trip reads its own), carrying a vector."""
    h = np.zeros(a.shape[0], dtype=a.dtype)
    for t in range(xs.shape[0]):
        h = np.tanh(a @ h + xs[t]) * 0.5 + np.sin(h)
    return h


def with_history(a, xs):
    """Every trip's state kept and stacked after the loop: values of each trip read later."""
    h, history = xs[0], []
    for t in range(1, xs.shape[0]):
        h = np.cos(h * a) + xs[t] * h
        history.append(h)
    return np.stack(history)


def _loops(program):
    """The rolled loops of ``program`` (run by NumPy's replay or by a Numba kernel; not the
    kernels of one trip that run the stretches of steps between them)."""
    loops = [step.prim if isinstance(step.prim, Loop) else step.prim.loop for step in program.eqns
             if isinstance(step.prim, (Loop, LoopKernel))]
    return [loop for loop in loops if loop.trips > 1]


def _inputs(dtype=np.float64, n=300, k=6):
    rng = np.random.default_rng(36)
    return rng.random((k, k)).astype(dtype) * 0.3, rng.random((n, k)).astype(dtype)


@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize("f, args", [
    (recurrence, (np.random.default_rng(1).random(14), np.random.default_rng(2).random(7) * 0.1)),
    (rows, _inputs()),
    (with_history, _inputs(n=200)),
], ids=["recurrence", "rows", "with_history"])
def test_a_rolled_program_replays_the_unrolled_ones_numbers(f, args, executor):
    rolled = dualad.compile(f, executor=executor, measure=False)
    unrolled = dualad.compile(f, executor=executor, measure=False, roll=False)
    want = f(*args)
    for _ in range(2):  # the trace, then a replay
        got = rolled(*args)
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
    if executor == "numpy":
        np.testing.assert_array_equal(got, unrolled(*args))
    else:  # the loop as one kernel: Numba's numbers (a product of matrices by its BLAS call)
        np.testing.assert_allclose(got, unrolled(*args), rtol=1e-13, atol=1e-15)
    assert rolled.stats["replays"] == 1 and rolled.stats["loops"].startswith("rolled 1 loop")
    assert unrolled.stats["loops"] is None
    program = rolled.program(*args)
    # outside the loop: little but each trip's row, read before it (xs[t]), and the stack
    # of every trip's value (with_history)
    outside = [e for e in program.eqns if e.prim.name not in ("getitem", "reshape")]
    assert len(outside) < 10, str(program)
    (loop,) = _loops(program)
    assert loop.trips >= 100


def test_the_reverse_sweep_of_a_rolled_loop_is_a_rolled_loop_with_the_unrolled_numbers():
    args = _inputs()
    grad = reverse.grad(lambda a, xs: np.sum(rows(a, xs) ** 2), argnums=(0, 1))
    rolled = dualad.compile(grad, measure=False)
    unrolled = dualad.compile(grad, measure=False, roll=False)
    want = grad(*args)
    rolled(*args)
    got, same = rolled(*args), unrolled(*args)
    for g, w, s in zip(got, want, same):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
        np.testing.assert_array_equal(g, s)
    loops = _loops(rolled.program(*args))
    assert len(loops) == 2, rolled.stats["loops"]  # the forward loop and the backward one
    assert all(loop.trips >= 250 for loop in loops)


def test_the_gradient_of_a_rolled_loop_matches_finite_differences():
    a, xs = _inputs(n=120)
    f = lambda a: np.sum(rows(a, xs) ** 2)  # noqa: E731
    g = dualad.compile(reverse.grad(f), measure=False)
    g(a)
    got = g(a)
    assert g.stats["loops"].startswith("rolled")
    h = 1e-6
    for i, j in [(0, 0), (2, 3), (5, 1)]:
        e = np.zeros_like(a)
        e[i, j] = h
        fd = (f(a + e) - f(a - e)) / (2 * h)
        np.testing.assert_allclose(got[i, j], fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_dtypes_are_kept(dtype):
    a, xs = _inputs(dtype=np.float64)
    a, xs = a.astype(dtype), xs.astype(dtype)
    rolled = dualad.compile(rows, measure=False)
    rolled(a, xs)
    got = rolled(a, xs)
    assert got.dtype == rows(a, xs).dtype == dtype
    np.testing.assert_array_equal(got, dualad.compile(rows, measure=False, roll=False)(a, xs))
    assert rolled.stats["loops"].startswith("rolled")


def test_empty_and_zero_d_values_in_the_body():
    def f(x, e):
        for _ in range(200):
            x = np.sin(x) + np.sum(e) + x * 0.5
            e = e * 2.0
        return x, e
    x, e = np.float64(0.3), np.zeros((0, 3))
    rolled = dualad.compile(f, measure=False)
    rolled(x, e)
    got = rolled(x, e)
    want = f(x, e)
    assert got[0] == want[0] and got[1].shape == (0, 3)
    assert rolled.stats["loops"].startswith("rolled")


def test_a_value_of_two_trips_back_keeps_the_stretch_unrolled_and_says_why():
    def fibonacci_like(x):
        a, b = x, x * 0.5
        for _ in range(400):
            a, b = b, np.tanh(a + b)
        return b
    x = np.linspace(0.0, 1.0, 5)
    compiled = dualad.compile(fibonacci_like, measure=False)
    compiled(x)
    np.testing.assert_array_equal(compiled(x), fibonacci_like(x))
    # each trip reads the last two trips' values: a body of two trips reads only the last one
    assert compiled.stats["loops"] == "rolled 1 loop: 200 trips of a 4-step body"


def test_parameters_that_change_with_the_trip_move_before_the_loop():
    a, xs = _inputs()
    program = dualad.compile(rows, measure=False).program(a, xs)
    (loop,) = _loops(program)
    # each xs[t] is read before the loop; the body reads each trip's row
    getitems = [step for step in program.eqns if step.prim.name == "getitem"]
    assert len(getitems) == xs.shape[0] and loop.per_trip >= 1
    assert not any(step.prim.name == "getitem" for step in loop.body.eqns)


def test_a_loop_invariant_value_the_reverse_sweep_reads_moves_before_the_loop_once():
    """``w[0]`` at each trip: the reverse sweep reads every trip's copy (the product's
    derivative), and all of them are the first trip's, computed once before the loop,
    not a step of the body whose values the loop hands on trip by trip."""
    def f(w, xs):
        h = xs[0]
        for t in range(1, xs.shape[0]):
            h = np.tanh(h * w[0] + xs[t] * w[1])
        return np.sum(h)
    rng = np.random.default_rng(4)
    w, xs = rng.random((2, 6)), rng.random((300, 6))
    grad = reverse.grad(f, argnums=(0, 1))
    compiled = dualad.compile(grad, executor="numpy", measure=False)
    program = compiled.program(w, xs)
    forward, backward = _loops(program)
    assert not any(step.prim.name == "getitem" for step in forward.body.eqns)
    assert forward.n_fixed >= 2 and backward.n_fixed >= 2  # w[0], w[1] read by both
    assert len(program.outputs) == 2 and len(forward.exported) < 3 * forward.trips
    unrolled = dualad.compile(grad, executor="numpy", measure=False, roll=False)
    for got, want, same in zip(compiled(w, xs), grad(w, xs), unrolled(w, xs)):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
        np.testing.assert_array_equal(got, same)


@pytest.mark.parametrize("executor", EXECUTORS)
def test_a_loop_invariant_value_returned_from_two_trips_is_two_arrays(executor):
    """Each trip's ``np.sin(w)`` is the same value, but the caller gets two of them back
    and may write into one: they stay two arrays, as eager evaluation's are (found by a
    review: renamed to the first trip's, they were one array)."""
    def f(w, x):
        kept = []
        for _ in range(300):
            a = np.sin(w)
            x = np.tanh(x * a)
            kept.append(a)
        return x, kept[0], kept[5]
    w, x = np.linspace(0.1, 2.0, 50), np.ones(50)
    compiled = dualad.compile(f, executor=executor, measure=False)
    compiled(w, x)
    got, want = compiled(w, x), f(w, x)
    assert got[1] is not got[2] and compiled.stats["loops"].startswith("rolled 1 loop")
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=1e-13)
    got[2][0] = 99.0
    assert got[1][0] == want[1][0]


def test_a_step_that_changes_with_the_trip_and_reads_the_loop_takes_each_trips_parameters():
    def f(x):
        for t in range(300):
            x = x * 0.5 + np.sin(x[t])  # the element read moves with t, and x is the loop's
        return x
    x = np.linspace(0.0, 1.0, 300)
    compiled = dualad.compile(f, measure=False)
    compiled(x)
    np.testing.assert_array_equal(compiled(x), f(x))
    (loop,) = _loops(compiled.program(x))
    assert [type(e.prim).__name__ for e in loop.body.eqns].count("PerTrip") == 1


def test_a_value_of_three_trips_back_keeps_the_stretch_unrolled_and_says_why():
    def f(x):
        a, b, c = x, x * 0.5, x * 0.25
        for _ in range(400):
            a, b, c = b, c, np.tanh(a + c)
        return c
    x = np.linspace(0.0, 1.0, 5)
    compiled = dualad.compile(f, measure=False)
    compiled(x)
    np.testing.assert_array_equal(compiled(x), f(x))
    assert not _loops(compiled.program(x))
    assert "stay unrolled: step 0 of the body (add) reads a value of two or more trips back" in \
        compiled.stats["loops"]


@pytest.mark.parametrize("same", [True, False])
def test_a_new_constant_array_at_each_trip_is_one_constant_where_the_trips_agree(same):
    """Each trip of a traced loop reads a new constant array; where every trip's has the
    same bits (a reverse sweep's folded ``broadcast_to(-1 / n)``), the body reads one
    constant, not a column of them; where they differ, each trip still reads its own."""
    def f(x):
        for t in range(200):
            x = np.sin(x) * np.full(3, 0.5 if same else 0.5 + t / 1000) + np.zeros(3)
        return x
    compiled = dualad.compile(f, measure=False, executor="numpy")
    x = np.linspace(0.0, 1.0, 3)
    compiled(x)
    np.testing.assert_array_equal(compiled(x), f(x))
    (loop,) = _loops(compiled.program(x))
    assert loop.per_trip == (0 if same else 1)


@pytest.mark.parametrize("executor", ["numpy", "numba", None])
def test_a_sum_that_starts_from_a_python_float_rolls_from_its_first_trip(executor):
    """``total = 0.0`` then ``total = total + np.sum(h)``: the first trip adds a Python
    float where the others add the last trip's float64 number; the loop takes every trip,
    starting from 0.0 as a float64 number, with eager's numbers and types."""
    def f(x):
        total, h = 0.0, x
        for _ in range(300):
            h = np.tanh(h) * 0.9 + 0.1
            total = total + np.sum(h)
        return total
    if executor == "numba":
        pytest.importorskip("numba")
    compiled = dualad.compile(f, measure=False, executor=executor)
    x = np.linspace(-1.0, 1.0, 5)
    compiled(x)
    got = compiled(x)
    assert compiled.stats["loops"] == "rolled 1 loop: 300 trips of a 5-step body"
    assert type(got) is type(f(x)) is np.float64
    np.testing.assert_allclose(got, f(x), rtol=1e-14)


def test_short_programs_are_not_rolled():
    def f(x):
        for _ in range(10):
            x = np.sin(x) * 2.0
        return x
    p = dualad.compile(f, optimize=False).program(np.zeros(3))
    assert len(p.steps) < MIN_SAVED
    rolled, said = roll_loops(p)
    assert rolled is p and said is None


def test_guards_in_the_body_keep_it_unrolled():
    def f(x):
        for _ in range(300):
            x = np.sin(x) + 1.0 if float(x[0]) > -10 else x
        return x
    compiled = dualad.compile(f, measure=False)
    x = np.linspace(0.0, 1.0, 4)
    compiled(x)
    np.testing.assert_array_equal(compiled(x), f(x))
    assert not _loops(compiled.program(x))


def test_roll_must_be_a_bool():
    with pytest.raises(TypeError, match="roll must be True or False, got 1"):
        dualad.compile(np.sin, roll=1)


def test_the_printed_program_names_the_loop():
    text = str(dualad.compile(rows, measure=False).program(*_inputs()))
    assert "loop(" in text and "299 trips of a body of 6 steps" in text  # the first trip reads zeros


def test_replay_of_the_program_as_data():
    a, xs = _inputs()
    program = dualad.compile(rows, measure=False).program(a, xs)
    np.testing.assert_array_equal(replay(program, [a, xs])[0], rows(a, xs))


def _oscillator(p):
    """An RK4 loop on numbers (the demo's kind of program): a program of float64 scalars."""
    x, v = 1.0, 0.0
    for i in range(300):
        t = i * 0.04
        a1 = -p[0] * x - p[1] * v + np.sin(p[2] * t)
        a2 = -p[0] * (x + 0.02 * v) - p[1] * (v + 0.02 * a1) + np.sin(p[2] * (t + 0.02))
        x, v = x + 0.04 * (v + 0.02 * a1), v + 0.04 * a2
    return np.stack([x, v])


def _history_of_numbers(p):
    """A state of three numbers, of which earlier trips' values are read after the loop."""
    h, kept = p, []
    for _ in range(250):
        h = np.cos(h) * 0.9 + p * np.sum(h) * 0.01
        kept.append(h)
    return kept[-1] * kept[100] + kept[37]


@pytest.mark.parametrize("f", [_oscillator, dualad.jacfwd(_oscillator), _history_of_numbers,
                               reverse.grad(lambda p: np.sum(_history_of_numbers(p) ** 2))],
                         ids=["oscillator", "jacfwd", "history", "grad_history"])
def test_a_rolled_loop_of_numbers_replays_as_a_python_loop_on_floats(f):
    from dualad._program.executors.replay import runner
    p = np.array([1.3, 0.1, 0.7])
    rolled = dualad.compile(f, executor="numpy", measure=False)
    unrolled = dualad.compile(f, executor="numpy", measure=False, roll=False)
    rolled(p)
    np.testing.assert_array_equal(rolled(p), unrolled(p))
    np.testing.assert_allclose(rolled(p), f(p), rtol=1e-12, atol=1e-14)
    assert rolled.stats["loops"].startswith("rolled")
    assert "for _trip in" in runner(rolled.program(p)).source


# -- random loops: rolled and unrolled programs agree ---------------------------------------
_OPS = {
    "sin": lambda h, r, c: np.sin(h) + r,
    "tanh": lambda h, r, c: np.tanh(h * c + r),
    "mix": lambda h, r, c: h * 0.5 - r * c,
    "exp": lambda h, r, c: np.exp(-np.abs(h)) + c,
    "sum": lambda h, r, c: h + np.sum(r) * 0.01,
}


def _random_loop(ops, size, rows_read):
    def f(x, xs, c):
        h, total = x, 0.0
        for t in range(xs.shape[0]):
            r = xs[t] if rows_read else xs[0]
            for op in ops:
                h = _OPS[op](h, r, c)
            total = total + np.sum(h * h)
        return h, total
    return f


@settings(max_examples=12, deadline=None)
@given(ops=st.lists(st.sampled_from(sorted(_OPS)), min_size=1, max_size=4),
       size=st.sampled_from([1, 3, 20]), trips=st.integers(130, 260), rows_read=st.booleans(),
       dtype=st.sampled_from([np.float64, np.float32]))
def test_random_loops_roll_to_the_unrolled_programs_numbers(ops, size, trips, rows_read, dtype):
    """Bodies of random steps (carried state, each trip's row or a fixed one, a carried sum),
    on a few numbers (Python floats' loop) and on arrays (NumPy's loop), forward and the
    gradient: the rolled program's numbers are the unrolled one's, bit for bit."""
    rng = np.random.default_rng(trips)
    x, xs = rng.random(size).astype(dtype), rng.random((trips, size)).astype(dtype)
    c = dtype(0.7)
    f = _random_loop(ops, size, rows_read)
    g = reverse.grad(lambda x, xs, c: f(x, xs, c)[1], argnums=(0, 1))
    for fn in (f, g):
        rolled = dualad.compile(fn, executor="numpy", measure=False)
        unrolled = dualad.compile(fn, executor="numpy", measure=False, roll=False)
        rolled(x, xs, c)
        got, want = rolled(x, xs, c), unrolled(x, xs, c)
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
            assert np.asarray(a).dtype == np.asarray(b).dtype
        assert rolled.stats["loops"].startswith("rolled"), rolled.stats["loops"]

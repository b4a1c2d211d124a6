"""Rolled loops as one Numba kernel each (dualad/_program/executors/loop_kernel.py): the same
numbers as the loop's NumPy replay (within Numba's few ulps), forward and reverse sweeps,
and compiled in the background while the calls replay NumPy's loop."""

import re
import threading
import time
import warnings

import numpy as np
import pytest

import dualad
import reverse
from dualad._program.executors.loop_kernel import (
    _MAX_STRETCH,
    _MIN_STRETCH,
    _SMALL,
    LoopKernel,
    kernel_loops,
    kernel_source,
)
from dualad._program.executors.replay import replay
from dualad._program.loop import Loop

pytest.importorskip("numba")


def cell(w, b, state, xs):
    """An LSTM-like cell over the rows of ``xs``: slices, concatenation, sums, a carried
    total (the forms of ADBench's LSTM)."""
    h, c, total = state[0], state[1], 0.0
    for t in range(xs.shape[0]):
        gates = np.concatenate((xs[t], h, xs[t], h)) * w + b
        n = h.shape[0]
        forget = 1.0 / (1.0 + np.exp(-gates[:n]))
        ingate = 1.0 / (1.0 + np.exp(-gates[n:2 * n]))
        c = c * forget + ingate * np.tanh(gates[3 * n:])
        h = np.tanh(c) * forget
        total = total + np.sum(h * xs[t]) - np.log(np.sum(np.exp(h)) + 2.0)
    return total


def _args(n=5, trips=120):
    rng = np.random.default_rng(37)
    return rng.random(4 * n), rng.random(4 * n), rng.random((2, n)), rng.random((trips, n))


def _rolled(program):
    """The kernels of ``program``'s rolled loops (not those of one trip that run the stretches
    of steps between them)."""
    return [s.prim for s in program.eqns if isinstance(s.prim, LoopKernel) and s.prim.loop.trips > 1]


def _programs(f, args):
    compiled = dualad.compile(f, executor="numpy", measure=False)
    compiled(*args)
    (program,) = compiled._programs.values()
    return program, kernel_loops(program)


@pytest.mark.parametrize("f", [cell, reverse.grad(cell, argnums=(0, 1, 2))], ids=["forward", "gradient"])
def test_the_kernels_give_the_numpy_loops_numbers(f):
    args = _args()
    program, kernels = _programs(f, args)
    assert kernels is not None
    loops = [s.prim for s in kernels.eqns if isinstance(s.prim, LoopKernel)]
    rolled = _rolled(kernels)
    assert len(rolled) == (1 if f is cell else 2)  # the gradient's reverse sweep is a kernel too
    # the reverse sweep's first trip, peeled off between the sweeps, is a kernel of one trip
    # (the 6 steps after the sweep are too few to be one)
    assert len(loops) - len(rolled) == (0 if f is cell else 1)
    want, got = replay(program, list(args)), replay(kernels, list(args))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-15)
    assert all(loop.error is None for loop in loops)


def test_the_gradient_by_kernels_matches_finite_differences():
    w, b, state, xs = _args(trips=60)
    grad = dualad.compile(reverse.grad(cell), executor="numba", measure=False)
    grad(w, b, state, xs)
    got = grad(w, b, state, xs)
    assert any(isinstance(s.prim, LoopKernel) for s in grad.program(w, b, state, xs).eqns)
    h = 1e-6
    for i in (0, 7, 13):
        e = np.zeros_like(w)
        e[i] = h
        fd = (cell(w + e, b, state, xs) - cell(w - e, b, state, xs)) / (2 * h)
        np.testing.assert_allclose(got[i], fd, rtol=1e-6, atol=1e-9)


def test_jit_times_the_kernels_once_compiled_in_the_background(monkeypatch):
    """The kernels compile for their operands' types on threads of their own (Numba would
    compile at the first call, on the caller's thread: 4.6 s for the LSTM objective's
    kernel in one call), while the calls run NumPy's loops."""
    from numba.core.dispatcher import Dispatcher
    compiled_on = []
    compile_types = Dispatcher.compile

    def recording(self, sig):
        compiled_on.append((self, threading.current_thread()))
        return compile_types(self, sig)
    monkeypatch.setattr(Dispatcher, "compile", recording)
    args = _args()
    compiled = dualad.jit(cell)
    want = cell(*args)
    deadline = time.monotonic() + 300
    while compiled.stats["chosen"] is None:
        np.testing.assert_allclose(compiled(*args), want, rtol=1e-13)
        assert time.monotonic() < deadline, compiled.stats
    chosen = compiled.stats["chosen"]
    assert "replays (numba)" in chosen and "replays (numpy)" in chosen and "eager calls" in chosen
    np.testing.assert_allclose(compiled(*args), want, rtol=1e-13)
    kernels = {id(s.prim._kernel) for s in compiled.program(*args).eqns if isinstance(s.prim, LoopKernel)}
    threads = [thread for kernel, thread in compiled_on if id(kernel) in kernels]
    assert threads and threading.main_thread() not in threads


def rnn(a, xs):
    """A recurrence through a matrix product, over the rows of ``xs``."""
    h = np.zeros(a.shape[0])
    for t in range(xs.shape[0]):
        h = np.tanh(a @ h + xs[t]) * 0.5 + np.sin(h)
    return np.sum(h ** 2)


@pytest.mark.parametrize("f", [rnn, reverse.grad(rnn, argnums=(0, 1))], ids=["forward", "gradient"])
def test_matrix_products_and_each_trips_scatter_run_in_the_kernel(f):
    pytest.importorskip("scipy")  # Numba's np.dot calls SciPy's BLAS
    rng = np.random.default_rng(5)
    args = (rng.random((6, 6)) * 0.3, rng.random((200, 6)))
    program, kernels = _programs(f, args)
    assert kernels is not None
    loops = _rolled(kernels)
    assert len(loops) == (1 if f is rnn else 2)
    if f is not rnn:  # the cotangent of xs[t]: a scatter at row t, each trip's t from an array
        assert any(loop.loop.trip_params for loop in loops)
    for g, w in zip(replay(kernels, list(args)), replay(program, list(args))):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    assert all(loop.error is None for loop in loops)


def test_a_body_with_a_step_of_another_kind_keeps_its_numpy_loop():
    def with_sort(xs):
        h = np.zeros(xs.shape[1])
        for t in range(xs.shape[0]):
            h = np.sort(np.tanh(h + xs[t]))
        return h
    xs = np.random.default_rng(3).random((200, 4))
    program, kernels = _programs(with_sort, (xs,))
    (loop,) = [s.prim for s in program.eqns if isinstance(s.prim, Loop)]
    assert kernel_source(loop) is None and kernels is None


def test_float32_keeps_its_numpy_loop():
    args = tuple(a.astype(np.float32) for a in _args())
    program, kernels = _programs(cell, args)
    assert kernels is None
    assert any(isinstance(s.prim, Loop) for s in program.eqns)


def test_the_printed_program_names_the_kernel():
    args = _args()
    _, kernels = _programs(cell, args)
    assert "loop_kernel(" in str(kernels)


def test_a_result_that_is_not_finite_is_replayed_by_numpy_with_its_warning():
    def blows_up(x, xs):
        for t in range(xs.shape[0]):
            x = x * xs[t] + np.log(xs[t])  # log(0.0) at the last row: -inf, with NumPy's warning
        return x
    xs = np.full((150, 3), 2.0)
    xs[-1] = 0.0
    compiled = dualad.compile(blows_up, executor="numba", measure=False)
    with np.errstate(divide="ignore"):
        compiled(np.ones(3), xs)
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        got = compiled(np.ones(3), xs)
    assert np.all(np.isneginf(got))
    with np.errstate(divide="ignore"):
        program = compiled.program(np.ones(3), xs)
    assert any(isinstance(s.prim, LoopKernel) for s in program.eqns)


def test_a_gradient_that_is_not_finite_is_replayed_by_numpy_with_its_warning():
    """sqrt's derivative at 0.0 is inf: the reverse sweep's kernel returns it to the
    program, and replays NumPy's loop on the stacks the forward sweep handed it."""
    def roots(x, xs):
        for t in range(xs.shape[0]):
            x = np.sqrt(x * xs[t])
        return x.sum()
    xs = np.full((400, 3), 2.0)
    xs[-1] = 0.0
    grad = reverse.grad(roots)
    compiled = dualad.compile(grad, executor="numba", measure=False)
    with np.errstate(all="ignore"):
        want = grad(np.ones(3), xs)
        compiled(np.ones(3), xs)
        program = compiled.program(np.ones(3), xs)
    assert sum(isinstance(s.prim, LoopKernel) for s in program.eqns) == 2
    with pytest.warns(RuntimeWarning):
        got = compiled(np.ones(3), xs)
    assert not np.isfinite(want).any()
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", [3, 5000], ids=["small", "large"])
def test_a_checked_numba_nest_beside_loop_kernels_is_still_rerun_by_numpy(n):
    """A program with loop kernels and a checked Numba nest (the gradient with respect to
    the rows too): a value not finite in the nest made the program's NumPy replay run; the
    program the kernels were written into lost that replay (``rerun_by``), and the nest's
    ``NotFinite`` reached the caller (found by a review). On vectors of 3 the forward
    sweep's steps (150 trips of 3, too few to roll) are kernels of one trip instead, which
    test their own results; on vectors of 5,000 (above ``_SMALL``) they are the nest."""
    def roots(x, xs):
        for t in range(xs.shape[0]):
            x = np.sqrt(x * xs[t])
        return x.sum()
    xs = np.full((150, n), 1.5)
    bad = xs.copy()
    bad[-1, 0] = 0.0
    grad = reverse.grad(roots, argnums=(0, 1))
    compiled = dualad.jit(grad)
    compiled(np.ones(n), xs)
    program = compiled.program(np.ones(n), xs)
    kernels = [s.prim for s in program.eqns if isinstance(s.prim, LoopKernel)]
    if n > _SMALL:
        assert _rolled(program) and program.rerun_by is not None
    else:  # 454 steps: kernels of at most _MAX_STRETCH (Numba's compile grows faster than a kernel)
        stretches = [k for k in kernels if k.loop.trips == 1]
        assert len(stretches) == 3 and len(_rolled(program)) == 1
        assert all(len(k.loop.body.eqns) <= _MAX_STRETCH for k in stretches)
    with np.errstate(all="ignore"):
        want = grad(np.ones(n), bad)
        got = compiled(np.ones(n), bad)
    assert not np.isfinite(want[0]).all()
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def ahead_of_a_loop(x, xs):
    """A chain of small steps before a loop: a stretch run by a kernel of one trip."""
    y = x
    for _ in range(5):
        y = np.sqrt(y * y + 1.0) - np.exp(-y) / 3.0
    x = np.log(x) * y
    for t in range(xs.shape[0]):
        x = np.tanh(x * xs[t])
    return x


def test_a_stretch_of_small_steps_is_a_kernel_of_one_trip_with_numpys_numbers_and_warnings():
    """The 32 steps before the loop are one kernel of one trip, its numbers NumPy's; where
    one is not finite (log(0.0) = -inf), NumPy replays them, with its warning; where a value
    is larger than ``_SMALL`` numbers the steps stay NumPy's calls."""
    xs = np.full((300, 3), 2.0)
    compiled = dualad.compile(ahead_of_a_loop, executor="numba", measure=False)
    x = np.array([0.5, 1.0, 2.0])
    compiled(x, xs)
    program = compiled.program(x, xs)
    (stretch,) = [s.prim for s in program.eqns if isinstance(s.prim, LoopKernel) and s.prim.loop.trips == 1]
    assert len(stretch.loop.body.eqns) >= _MIN_STRETCH and len(_rolled(program)) == 1
    np.testing.assert_allclose(compiled(x, xs), ahead_of_a_loop(x, xs), rtol=1e-14)
    assert stretch.error is None and stretch._kernel is not None  # the kernel ran, not NumPy's loop
    bad = np.array([0.0, 1.0, 2.0])
    with np.errstate(all="ignore"):
        want = ahead_of_a_loop(bad, xs)
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        got = compiled(bad, xs)
    np.testing.assert_allclose(got, want, rtol=1e-14)  # the loop's kernel: Numba's tanh
    assert want[0] < -0.9 < 0.9 < want[2]  # -inf from log(0.0), through tanh's fixed point
    large = dualad.compile(ahead_of_a_loop, executor="numba", measure=False)
    x, xs = np.full(_SMALL + 1, 0.5), np.full((300, _SMALL + 1), 2.0)
    large(x, xs)
    assert not [s for s in large.program(x, xs).eqns
                if isinstance(s.prim, LoopKernel) and s.prim.loop.trips == 1]


def test_a_sum_over_a_vectors_one_axis_keeping_it_runs_in_the_kernel():
    """Numba's ``np.sum(v, axis=0)`` of a vector is a number: the kernel makes the array of
    one (a TypingError reached the caller of GMM's gradient under ``jit``)."""
    def f(x, xs):
        for t in range(xs.shape[0]):
            x = np.tanh(x * xs[t]) + np.sum(x * 0.5, axis=0, keepdims=True)
        return x
    xs = np.random.default_rng(2).random((300, 3))
    compiled = dualad.compile(f, executor="numba", measure=False)
    compiled(np.ones(3), xs)
    np.testing.assert_allclose(compiled(np.ones(3), xs), f(np.ones(3), xs), rtol=1e-13)
    (kernel,) = _rolled(compiled.program(np.ones(3), xs))
    assert kernel.error is None and "np.full((1,), np.sum(" in kernel.source


def test_a_stretch_reads_infinite_constants_and_warns_as_numpy_does():
    """``np.minimum(x, np.inf)`` in a stretch: the kernel writes ``np.inf`` by name (a bare
    ``inf`` in its source did not compile); where a value is not finite, NumPy's replay of
    the stretch warns once per step, as eager evaluation does (found by a review: Python
    floats warned once per number)."""
    def f(x, xs):
        y = x
        for _ in range(5):
            y = np.minimum(np.sqrt(y * y + 1.0), np.inf) - np.exp(y * 0.001) / 3.0
        for t in range(xs.shape[0]):
            y = np.tanh(y * xs[t])
        return y
    xs = np.full((300, 3), 2.0)
    compiled = dualad.compile(f, executor="numba", measure=False)
    x = np.array([0.1, 0.2, 0.3])
    compiled(x, xs)
    np.testing.assert_allclose(compiled(x, xs), f(x, xs), rtol=1e-13)
    (stretch,) = [s.prim for s in compiled.program(x, xs).eqns
                  if isinstance(s.prim, LoopKernel) and s.prim.loop.trips == 1]
    assert stretch.error is None and "np.inf" in stretch.source
    bad = np.array([1e6, 0.2, 0.3])  # exp(1000.0) overflows, then inf - inf
    with warnings.catch_warnings(record=True) as eager:
        warnings.simplefilter("always")
        want = f(bad, xs)
    with warnings.catch_warnings(record=True) as replayed:
        warnings.simplefilter("always")
        got = compiled(bad, xs)
    np.testing.assert_allclose(got, want, rtol=1e-13)
    assert len(eager) >= 1 and [str(w.message) for w in replayed] == [str(w.message) for w in eager]


def test_sums_over_an_axis_transposes_and_closed_over_arrays_run_in_the_kernel():
    w = np.random.default_rng(9).random((3, 3)) * 0.5  # closed over: a constant of the body

    def softmax_steps(h, xs):
        for t in range(xs.shape[0]):
            z = np.exp(np.tanh(h @ w.T + xs[t]))
            h = z / np.sum(z, axis=1, keepdims=True) + np.sum(h.T, axis=1) * 0.01
        return np.sum(h)
    rng = np.random.default_rng(4)
    args = (rng.random((5, 3)), rng.random((150, 5, 3)))
    for f in (softmax_steps, reverse.grad(softmax_steps)):
        program, kernels = _programs(f, args)
        assert kernels is not None, str(program)
        for g, want in zip(replay(kernels, list(args)), replay(program, list(args))):
            np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-14)


def test_a_row_cotangent_summed_over_the_trips_is_added_in_place_and_kept_once():
    rng = np.random.default_rng(5)
    args = (rng.random((6, 6)) * 0.3, rng.random((200, 6)))
    program, kernels = _programs(reverse.grad(rnn, argnums=(0, 1)), args)
    (backward,) = [s.prim for s in kernels.eqns if isinstance(s.prim, LoopKernel) and s.prim.loop.trip_params]
    # xs's cotangent: row t added into the carried sum, not a zeros array added whole; the
    # sums read after the loop kept once, not at every trip
    assert "] += " in backward.source and "np.zeros((200, 6))" not in backward.source
    assert "np.empty((1,) + (200, 6)" in backward.source
    for g, w in zip(replay(kernels, list(args)), replay(program, list(args))):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    # the caller's arrays are not written into
    again = replay(kernels, list(args))
    for g, w in zip(again, replay(program, list(args))):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


def two_rows(p, xs):
    """Each trip reads two rows of ``p``: their cotangents are a chain of two row sums."""
    h = np.zeros(p.shape[1])
    for t in range(xs.shape[0]):
        h = np.tanh(p[0] * xs[t] + p[1] * h)
    return h.sum()


def test_rows_read_at_several_places_of_a_trip_are_added_in_place_one_after_the_other():
    rng = np.random.default_rng(6)
    args = (rng.random((2, 4)), rng.random((150, 4)))
    grad = reverse.grad(two_rows)
    program, kernels = _programs(grad, args)
    (backward,) = [s.prim for s in kernels.eqns if isinstance(s.prim, LoopKernel) and "+=" in s.prim.source]
    inside = backward.source.split("for trip in range")[1]
    assert re.search(r"c\d+\[0, ::\] \+=", inside) and re.search(r"c\d+\[1, ::\] \+=", inside)
    assert "np.zeros" not in inside
    got = replay(kernels, list(args))[0]
    np.testing.assert_allclose(got, replay(program, list(args))[0], rtol=1e-12, atol=1e-14)
    h, fd = 1e-6, np.zeros_like(args[0])
    for i in np.ndindex(*args[0].shape):
        e = np.zeros_like(args[0])
        e[i] = h
        fd[i] = (two_rows(args[0] + e, args[1]) - two_rows(args[0] - e, args[1])) / (2 * h)
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-9)


def test_stacks_pass_from_kernel_to_kernel_not_row_by_row():
    """The forward sweep's rows that the reverse sweep reads reach it as one stack (read
    backwards), and ``xs[t]`` as ``xs`` itself: the per-trip getitems go. Every column of
    the reverse sweep is a stack, those whose last trips read the peeled first trips'
    values too, and the per-trip constants (the same ``-1.0`` at each) are one. Each
    kernel's NumPy loop (where it cannot compile, or a result is not finite) takes the
    same stacks."""
    args = _args()
    program, kernels = _programs(reverse.grad(cell, argnums=(0, 1, 2)), args)
    forward, backward = _rolled(kernels)
    assert forward._stacks_out and any(by == -1 for _, by, _, _, _ in backward._handed.values())
    assert len(backward._handed) == backward.loop.per_trip
    assert any(tail for _, _, _, tail, _ in backward._handed.values())
    assert any(by == 1 and not made for _, by, _, _, made in forward._handed.values())  # xs's rows
    # read in the kernel by the rows written into its source (the first trip's, backwards)
    assert re.search(r"s\d+ = S\d+\[\d+ - trip\]", backward.source)

    def getitems(p):
        return sum(s.prim.name == "getitem" for s in p.eqns)
    assert getitems(program) > args[3].shape[0] > 10 > getitems(kernels)  # the peeled trips'
    want = replay(program, list(args))
    for got in (replay(kernels, list(args)), _by_numpy_loops(kernels, args)):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


def test_rows_only_kernels_read_reach_them_as_stacks():
    """The forward sweep's rows that the stretches around the reverse sweep read (its peeled
    trips) reach them as the forward's stacks, each row picked in the reader's source, not
    as a NumPy view per row at each call; the value the program returns stays a row of its
    own. The kernels and each kernel's NumPy loop give the numbers of the program without
    kernels."""
    args = _args()
    program, kernels = _programs(reverse.value_and_grad(cell, argnums=(0, 1, 2)), args)
    steps = [s for s in kernels.eqns if isinstance(s.prim, LoopKernel)]
    readers = [s for s in steps if s.prim._rows]
    assert readers and all(re.search(r"\n    [fc]\d+ = R\d+\[\d+\]\n", s.prim.source) for s in readers)
    given = {slot for s in readers for slot in s.ins[len(s.ins) - s.prim._n_row_stacks:]}
    forward = steps[0]
    assert forward.prim.loop.trips > 1 and given & set(forward.outs)
    picks = forward.outs[:len(forward.outs) - len(forward.prim.stacks_out)]
    read_elsewhere = set(kernels.outputs).union(
        *(s.ins for s in kernels.eqns if not isinstance(s.prim, LoopKernel)))
    assert picks and set(picks) <= read_elsewhere  # the total, returned: a row of its own
    want = replay(program, list(args))
    for got in (replay(kernels, list(args)), _by_numpy_loops(kernels, args)):
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
        for g, w in zip(got[1], want[1]):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


def first_and_last(w, xs):
    """A loop's values read after it at its first and last trips only, by a stretch."""
    h, seen = w, []
    for t in range(xs.shape[0]):
        h = np.tanh(h * xs[t] + 0.5) * 0.9 + 0.1 * np.log(h * h + 1.0)
        seen.append(h)
    r = seen[0] * seen[-1]
    for _ in range(10):
        r = np.tanh(r * seen[0] + seen[-1]) - 0.25 * r
    return r


def test_rows_taken_from_a_stack_of_some_trips_are_the_same_rows_in_numpys_replay():
    """The reader picks rows 0 and 299 of the loop's stack; NumPy's replay of the loop (where
    a value is not finite, or while the kernel compiles) returns that stack laid out as the
    kernel's (found by a review: it held the two rows only, and the reader read past it)."""
    rng = np.random.default_rng(5)
    args = (rng.random(5), rng.random((300, 5)))
    program, kernels = _programs(first_and_last, args)
    (reader,) = [s.prim for s in kernels.eqns if isinstance(s.prim, LoopKernel) and s.prim._rows]
    assert sorted(row for _, row in reader._rows.values()) == [0, 299]
    want = replay(program, list(args))
    for got in (replay(kernels, list(args)), _by_numpy_loops(kernels, args)):
        np.testing.assert_allclose(got[0], want[0], rtol=1e-13)
    compiled = dualad.compile(first_and_last, executor="numba", measure=False)
    compiled(*args)
    w, xs = args[0], args[1].copy()
    xs[150, 2] = np.nan  # one trip's value not finite: the loop replayed by NumPy
    with np.errstate(invalid="ignore"):
        expected = first_and_last(w, xs)
    np.testing.assert_allclose(compiled(w, xs), expected, rtol=1e-13)


def _by_numpy_loops(kernels, args):
    for step in kernels.eqns:
        if isinstance(step.prim, LoopKernel):
            step.prim._kernel, step.prim.error = None, "not compiled: the NumPy loop, tested"
    return replay(kernels, list(args))


def test_ufunc_results_are_written_into_buffers_rows_or_pairs():
    """No ufunc, concatenation or scatter of zeros makes a new array at each trip: each
    writes into its row of a stack the kernel returns (what the reverse sweep reads), else
    into a buffer made once before the loop, and a value the next trip reads (carried)
    into one of two buffers taken in turn; chains of numbers stay one expression."""
    _, kernels = _programs(cell, _args())
    (kernel,) = _rolled(kernels)
    before, inside = kernel.source.split("for trip in range")
    assert before.count("np.empty((5,), np.float64)") >= 10  # each sigmoid's four steps, tanh's
    assert re.search(r"np\.exp\((t\d+), (t\d+)\)", inside)  # exp(x, out=buffer)
    assert re.search(r"(t\d+) = \1_1 if trip & 1 else \1_0\n +np\.add\(t\d+, t\d+, \1\)", inside)  # c
    assert re.search(r"t\d+\[5:10\] = c\d+", inside)  # the concatenation, in place
    assert "np.log(np.add(" in inside  # numbers: one expression
    assert "np.zeros" not in inside and "np.concatenate" not in inside
    _, grad_kernels = _programs(reverse.grad(cell, argnums=(0, 1, 2)), _args())
    forward, backward = _rolled(grad_kernels)
    assert re.search(r"(t\d+) = E\d+\[trip\]\n +np\.\w+\([^\n]*, \1\)", forward.source)  # into a row
    assert "np.zeros" not in backward.source.split("for trip in range")[1]


def carried_view(w, xs):
    """The carried ``h`` is a view (a slice) of a ufunc's result ``g``, and each trip reads
    the last trip's after making its own: were ``g`` written into one buffer, the two
    would be the same numbers."""
    h, total = np.cos(w[1:4]), 0.0
    for t in range(xs.shape[0]):
        g = np.tanh(np.concatenate((xs[t], xs[t])) * w) + 1.0
        e = g * g
        new = g[1:4]
        total = total + np.sum(h * new) + np.sum(e)
        h = new
    return total


def view_of_carried(x, y, xs):
    """The carried ``b`` is a view of the carried ``a`` of the trip before: ``a``'s values
    live two trips, so its next values are not written into two buffers taken in turn."""
    a, b, acc = np.sin(x), np.cos(y), 0.0
    for t in range(xs.shape[0]):
        b_next = a[1:3]
        a = np.sin(a) * 0.5 + xs[t]
        acc = acc + np.sum(b * 1.5)
        b = b_next
    return acc + np.sum(a)


def test_a_carried_view_of_another_carried_value_takes_no_pair_of_buffers():
    rng = np.random.default_rng(0)
    args = (rng.random(4), rng.random(2), rng.random((300, 4)))
    program, kernels = _programs(view_of_carried, args)
    assert any(isinstance(s.prim, LoopKernel) for s in kernels.eqns)
    got = replay(kernels, list(args))[0]
    np.testing.assert_allclose(got, replay(program, list(args))[0], rtol=1e-13)
    np.testing.assert_allclose(got, view_of_carried(*args), rtol=1e-13)


def test_a_carried_view_of_a_ufunc_result_is_not_a_buffer():
    rng = np.random.default_rng(3)
    args = rng.random(6), rng.random((150, 3))
    for f in (carried_view, reverse.grad(carried_view)):
        program, kernels = _programs(f, args)
        loops = [s.prim for s in kernels.eqns if isinstance(s.prim, LoopKernel)]
        assert loops and all(loop.error is None for loop in loops)
        for g, w in zip(replay(kernels, list(args)), replay(program, list(args))):
            np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(replay(_programs(carried_view, args)[1], list(args))[0],
                               carried_view(*args), rtol=1e-13)

"""How a compiled function's calls run, chosen by timing them (issue 36: a compiled
function is never slower than the function itself): dualad/_staging/choice.py.

The timings are real; each test makes one way slower than the other by a sleep of
milliseconds, far beyond what the way itself costs, so the choice is certain."""

import time
import warnings

import numpy as np
import pytest
from _support.executors import full_way_counted

import dualad
from dualad._program.executors import numba as numba_executor
from dualad._program.lowering import LoopNest
from dualad._staging import compile as compile_module
from dualad._staging.choice import EAGER, MOST, RETIMED, Trial

SLOW = 5e-3  # seconds a slowed way sleeps: far beyond any of these calls' own cost


def _slowed(run):
    def slow(*inputs):
        time.sleep(SLOW)
        return run(*inputs)
    return slow


def _calls_until_chosen(compiled, *args, want):
    for _ in range(4 * MOST + 8):
        np.testing.assert_array_equal(compiled(*args), want)
        if compiled.stats["chosen"] is not None:
            return
    raise AssertionError(f"nothing chosen: {compiled.stats}")


def test_a_program_that_loses_to_eager_stops_being_replayed(monkeypatch):
    """Replays slowed by a sleep: the calls after the trial run f, without a warning,
    take the hot path, and count as eager."""
    real = compile_module.runner
    monkeypatch.setattr(compile_module, "runner", lambda program: _slowed(real(program)))
    compiled, x = dualad.compile(lambda x: np.sin(x) * 2.0), np.linspace(0.0, 1.0, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _calls_until_chosen(compiled, x, want=np.sin(x) * 2.0)
        assert compiled.stats["executor"] == "eager" and compiled.stats["chosen"].startswith("eager: ")
        replays, eager = compiled.stats["replays"], compiled.stats["eager"]
        compiled(x)  # the full way, which fills the hot path
        full = full_way_counted(compiled, monkeypatch)
        for _ in range(3):
            np.testing.assert_array_equal(compiled(x), np.sin(x) * 2.0)
    assert full == []  # the hot path, to f itself
    assert compiled.stats["replays"] == replays and compiled.stats["eager"] == eager + 4
    assert not compiled._programs  # kept for no call


def test_a_replay_faster_than_eager_is_kept_and_takes_the_hot_path():
    def f(x):
        time.sleep(SLOW)  # in eager calls and in the trace, never in a replay
        return np.cos(x) + x
    compiled, x = dualad.compile(f), np.linspace(0.0, 1.0, 4)
    _calls_until_chosen(compiled, x, want=np.cos(x) + x)
    assert compiled.stats["executor"] == "numpy" and compiled.stats["chosen"].startswith("numpy: ")
    assert "eager calls" in compiled.stats["chosen"]
    eager = compiled.stats["eager"]
    assert eager >= 2  # the eager calls timed
    start = time.perf_counter()
    for _ in range(5):
        np.testing.assert_array_equal(compiled(x), np.cos(x) + x)
    assert compiled.stats["eager"] == eager and time.perf_counter() - start < 5 * SLOW


@pytest.mark.skipif(not numba_executor.available(), reason="needs Numba")
def test_kernels_chosen_for_a_program_are_measured_against_numpys_calls(monkeypatch):
    """A program lowered to Numba's kernels by itself (not asked for) is timed against the
    same program replayed by NumPy's calls; where those are faster they are kept."""
    real = compile_module.runner

    def runner(program):
        kernels = any(type(step.prim) is LoopNest for step in program.eqns)
        return _slowed(real(program)) if kernels else real(program)
    monkeypatch.setattr(compile_module, "runner", runner)

    def chain(x):
        if type(x) is np.ndarray:  # an eager call (a trace sees a traced value): slowed too
            time.sleep(SLOW)
        for _ in range(12):
            x = np.sin(x) * 1.5 + 0.25
        return x
    x = np.linspace(0.1, 0.9, 16)
    compiled = dualad.compile(chain)
    compiled(x)
    assert compiled.stats["executor"] == "numba"
    _calls_until_chosen(compiled, x, want=dualad.compile(chain, executor="numpy", measure=False)(x))
    assert compiled.stats["executor"] == "numpy", compiled.stats["chosen"]
    assert "replays (numba)" in compiled.stats["chosen"] and "replays (numpy)" in compiled.stats["chosen"]
    assert not any(type(step.prim) is LoopNest for step in compiled.program(x).eqns)


@pytest.mark.skipif(not numba_executor.available(), reason="needs Numba")
def test_kernels_asked_for_are_not_measured_against_numpys_calls():
    def chain(x):
        for _ in range(12):
            x = np.sin(x) * 1.5 + 0.25
        return x
    compiled, x = dualad.compile(chain, executor="numba"), np.linspace(0.1, 0.9, 16)
    for _ in range(4 * MOST + 8):
        compiled(x)
    assert compiled.stats["chosen"] is not None and "replays (numpy)" not in compiled.stats["chosen"]


def test_measure_false_replays_every_call():
    compiled, x = dualad.compile(lambda x: x * 3.0, measure=False), np.ones(3)
    for _ in range(4 * MOST + 8):
        compiled(x)
    assert compiled.stats["eager"] == 0 and compiled.stats["chosen"] is None
    assert compiled.stats["replays"] == 4 * MOST + 7


def test_a_guard_that_misses_while_calls_are_timed_gives_the_other_branch():
    def f(x):
        return np.sum(x * x) if x[0] > 0 else np.sum(-x)
    compiled, up, down = dualad.compile(f), np.array([1.0, 2.0]), np.array([-1.0, 2.0])
    for i in range(4 * MOST + 8):
        x = down if i % 3 == 2 else up
        assert compiled(x) == f(x)
    assert compiled.stats["traces"] == 2


def test_a_branch_traced_while_calls_are_timed_is_timed_in_turn(monkeypatch):
    """The branch traced second goes first: the key's calls, which now replay it, are
    timed with it, and where its replays lose to eager every branch runs eagerly (the trial
    of the first branch's program waited before for calls that replayed another)."""
    real = compile_module.runner
    monkeypatch.setattr(compile_module, "runner", lambda program: _slowed(real(program)))

    def f(x):
        return np.sum(x * x) if x[0] > 0 else np.sum(-x)
    compiled, up, down = dualad.compile(f), np.array([1.0, 2.0]), np.array([-1.0, 2.0])
    assert compiled(up) == f(up) and compiled(down) == f(down)
    _calls_until_chosen(compiled, down, want=f(down))
    assert compiled.stats["executor"] == "eager", compiled.stats["chosen"]
    assert compiled(up) == f(up) and compiled(down) == f(down) and not compiled._programs


def test_a_side_effect_of_f_happens_in_the_calls_run_eagerly(monkeypatch):
    """What the docstring says: side effects happen at a trace and in calls run eagerly,
    the timed ones among them."""
    seen = []

    def f(x):
        seen.append(1)
        return x + 1.0
    compiled = dualad.compile(f)
    for _ in range(4 * MOST + 8):
        compiled(np.ones(2))
    assert len(seen) == 1 + compiled.stats["eager"]


def test_measure_must_be_a_bool():
    with pytest.raises(TypeError, match="measure must be True or False, got 'yes'"):
        dualad.compile(lambda x: x, measure="yes")


def _run(trial, times):
    """Drive ``trial`` as compile does: each call's candidate from ``next``, its time (when
    timed) the next one ``times`` gives for that candidate; the names run, in order."""
    ran = []
    while trial.chosen is None:
        name, _, timed = trial.next()
        ran.append(name)
        if timed:
            trial.timed(name, times[name].pop(0))
    return ran


def test_two_ways_within_noise_of_each_other_are_timed_again_in_turn():
    """A runner-up within NEAR of the best after their blocks of calls (the first block met
    a busier machine): both are timed again, alternating, and the better after that wins."""
    trial = Trial([("numba", "p"), ("numpy", "q"), (EAGER, None)])
    times = {"numba": [1.0e-3, 0.99e-3, 0.98e-3] + [0.80e-3] * RETIMED,
             "numpy": [0.95e-3, 0.94e-3, 0.93e-3] + [0.90e-3] * RETIMED,
             EAGER: [5e-3, 5e-3]}
    ran = _run(trial, times)
    assert ran[-2 * RETIMED:] == ["numpy", "numba"] * RETIMED  # the best of the blocks first
    assert trial.chosen == "numba"
    assert "numba and numpy timed again in turn" in trial.why


def test_a_clear_winner_is_chosen_without_timing_again():
    trial = Trial([("numba", "p"), ("numpy", "q"), (EAGER, None)])
    times = {"numba": [1e-3] * 4, "numpy": [2e-3] * 4, EAGER: [5e-3, 5e-3]}
    ran = _run(trial, times)
    assert trial.chosen == "numba" and "again" not in trial.why
    assert len(ran) == len(set(ran)) + 3 + 2 + 1  # each way's untimed first call, then its timed ones


def test_a_call_whose_trial_another_thread_ended_runs_the_way_chosen(monkeypatch):
    """A call reads its key's trial, then another thread's calls end it (the choice made):
    the first call then runs the way chosen, where it raised StopIteration from the
    ended trial."""
    import threading

    compiled, x = dualad.compile(lambda x: np.sin(x) + x), np.ones(3)
    compiled(x)  # the trace, which starts the trial
    waiting, parked, go = Trial.waiting, threading.Event(), threading.Event()

    def parking(self):  # the thread named "late" waits here, past its read of the trial
        if threading.current_thread().name == "late":
            parked.set()
            go.wait()
        return waiting(self)
    monkeypatch.setattr(Trial, "waiting", parking)
    results, errors = [], []

    def late():
        try:
            results.append(compiled(x))
        except BaseException as err:  # noqa: BLE001 - any error is the failure
            errors.append(err)
    thread = threading.Thread(target=late, name="late")
    thread.start()
    assert parked.wait(10)
    _calls_until_chosen(compiled, x, want=np.sin(x) + x)
    go.set()
    thread.join(10)
    assert errors == [] and len(results) == 1
    np.testing.assert_array_equal(results[0], np.sin(x) + x)

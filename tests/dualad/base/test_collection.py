"""The cyclic garbage collector is held off while a program is traced (dualad/_base/collection.py)."""

import gc
import threading

import numpy as np

import dualad
from dualad._base.collection import collector_paused


def test_a_trace_runs_with_the_collector_off_and_it_comes_back_on():
    seen = []

    def f(x):
        seen.append(gc.isenabled())
        return np.sin(x) * 2.0
    compiled = dualad.compile(f)
    assert gc.isenabled()
    compiled(np.ones(3))
    assert seen == [False] and gc.isenabled()


def test_a_collector_the_user_turned_off_stays_off():
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_collector_comes_back_after_the_last_of_overlapping_blocks():
    inside, release = threading.Event(), threading.Event()

    def hold():
        with collector_paused():
            inside.set()
            release.wait(10)
    other = threading.Thread(target=hold)
    other.start()
    inside.wait(10)
    with collector_paused():
        pass
    assert not gc.isenabled()  # the other thread's block still runs
    release.set()
    other.join(10)
    assert gc.isenabled()


def test_a_trace_that_raises_turns_the_collector_back_on():
    def f(x):
        raise ValueError("no")
    try:
        dualad.compile(f)(np.ones(2))
    except ValueError:
        pass
    assert gc.isenabled()

"""dualad.compile with a numpy.random.Generator argument: its draws are steps of the
program, drawn from each call's Generator, so the stream moves exactly as eagerly."""

import warnings

import numpy as np
import pytest

import dualad
from dualad._program.passes.cse import eliminate_common_subexpressions
from dualad._program.passes.dce import eliminate_dead_code


def _alike(f, make_args, calls=4, seed=7):
    """``f`` eagerly with one Generator and compiled with another seeded alike, over
    ``calls`` calls: identical results each call, identical states at the end."""
    eager, compiled_rng = np.random.default_rng(seed), np.random.default_rng(seed)
    compiled = dualad.compile(f)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for i in range(calls):
            args = make_args(i)
            a, b = f(*args, eager), compiled(*args, compiled_rng)
            assert type(a) is type(b)
            np.testing.assert_array_equal(a, b)
            assert np.asarray(a).dtype == np.asarray(b).dtype
    assert eager.bit_generator.state == compiled_rng.bit_generator.state
    assert compiled.stats["eager"] == 0 and compiled.stats["replays"] == calls - 1
    return compiled


def test_draws_replay_from_the_generator_of_each_call():
    def f(x, rng):
        return (x * rng.standard_normal(x.shape) + rng.normal(1.0, 2.0, size=x.shape)
                + rng.uniform(-1.0, 1.0, size=x.shape) + rng.integers(0, 10, size=x.shape)
                + rng.random() + rng.choice(np.array([1.0, 5.0, 9.0]), size=x.shape)
                + rng.permutation(x.shape[0]) + rng.exponential(size=x.shape))
    _alike(f, lambda i: (np.linspace(-1, 1, 5) * i,))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dropout(dtype):
    def dropout(x, p, rng):
        return x * (rng.random(x.shape) > p) / (1.0 - p)
    rng = np.random.default_rng(0)
    _alike(lambda x, r: dropout(x, 0.3, r), lambda i: (rng.normal(size=(4, 3)).astype(dtype),))


def test_two_identical_draws_are_not_merged():
    f = lambda x, rng: x + rng.normal(size=3) - rng.normal(size=3)  # noqa: E731
    compiled = _alike(f, lambda i: (np.zeros(3),))
    p = compiled.program(np.zeros(3), np.random.default_rng(0))
    assert [e.prim.name for e in p.eqns].count("draw") == 2
    unoptimized = dualad.compile(f, optimize=False).program(np.zeros(3), np.random.default_rng(0))
    merged = eliminate_dead_code(eliminate_common_subexpressions(unoptimized))
    assert [e.prim.name for e in merged.eqns].count("draw") == 2


def test_an_unused_draw_still_moves_the_stream():
    def f(x, rng):
        rng.normal(size=100)
        return x + rng.random()
    compiled = _alike(f, lambda i: (np.full(2, float(i)),))
    assert [e.prim.name for e in compiled.program(np.zeros(2), np.random.default_rng(0)).eqns] \
        == ["draw", "draw", "add"]


def test_generators_as_keyword_and_in_a_pytree():
    def f(x, *, gens):
        return x + gens[0].normal(size=2) * gens[1].random(2)
    a = (np.random.default_rng(1), np.random.default_rng(2))
    b = (np.random.default_rng(1), np.random.default_rng(2))
    compiled = dualad.compile(f)
    for _ in range(3):
        np.testing.assert_array_equal(f(np.ones(2), gens=a), compiled(np.ones(2), gens=b))
    assert [g.bit_generator.state for g in a] == [g.bit_generator.state for g in b]
    assert compiled.stats["replays"] == 2


def test_program_prints_draws():
    compiled = dualad.compile(lambda x, rng: x + rng.normal(0.0, 2.0, size=x.shape))
    text = str(compiled.program(np.zeros(3), np.random.default_rng(0)))
    assert "t2 = x1.normal(0.0, 2.0, size=(3,))" in text, text


def test_traced_parameters_run_eagerly():
    f = lambda x, rng: rng.normal(x, 1.0)  # noqa: E731
    compiled = dualad.compile(f)
    a, b = np.random.default_rng(0), np.random.default_rng(0)
    with pytest.warns(RuntimeWarning, match="traced value among its parameters or size"):
        np.testing.assert_array_equal(compiled(np.ones(3), a), f(np.ones(3), b))
    np.testing.assert_array_equal(compiled(np.ones(3), a), f(np.ones(3), b))
    assert compiled.stats["eager"] == 1 and compiled.stats["traces"] == 1
    assert a.bit_generator.state == b.bit_generator.state


def test_methods_that_are_not_draws_run_eagerly():
    def f(x, rng):
        y = np.arange(4.0)
        rng.shuffle(y)  # in place: not a draw a program can record
        return x + y
    compiled = dualad.compile(f)
    a, b = np.random.default_rng(0), np.random.default_rng(0)
    with pytest.warns(RuntimeWarning, match="Generator.shuffle is not a draw"):
        np.testing.assert_array_equal(compiled(np.ones(4), a), f(np.ones(4), b))
    assert a.bit_generator.state == b.bit_generator.state


def test_random_state_argument_runs_eagerly():
    compiled = dualad.compile(lambda x, rs: x + rs.normal(size=2))
    with pytest.warns(RuntimeWarning, match="pass a numpy.random.Generator instead"):
        compiled(np.ones(2), np.random.RandomState(0))


def test_generator_both_passed_and_closed_over_runs_eagerly():
    rng = np.random.default_rng(0)
    compiled = dualad.compile(lambda x, g: x + g.random() + rng.random())
    with pytest.warns(RuntimeWarning, match="also closed over"):
        compiled(np.ones(2), rng)
    assert compiled.stats["eager"] == 1

"""The partial-evaluation pass: a program specialized to known inputs replays as the
whole program does on the same inputs, computes nothing that depends only on them,
checks their guards once, and keeps the guards on the other inputs; its split into a
known and an unknown half composes to the whole program."""

import numpy as np
import pytest

import dualad
import reverse
from dualad._program.executors.replay import replay
from dualad._program.ir import GuardMiss
from dualad._program.partial_eval import SpecializationRefused, partial_eval, split
from dualad._program.program import Program

RNG = np.random.default_rng(7)


def _program(f, *args):
    return dualad.compile(f, executor="numpy").program(*args)  # optimized, not lowered


def _names(program):
    return [e.prim.name for e in program.eqns]


def hvp_of_rosen(x, v):
    def rosen(y):
        return np.sum(100.0 * (y[1:] - y[:-1] ** 2) ** 2 + (1.0 - y[:-1]) ** 2)
    return dualad.jvp(reverse.grad(rosen), (x,), (v,))


def mixed_terms(a, b, c):
    return np.exp(a) * b + np.sin(a) @ c, np.tanh(b) + c


def with_linalg(a, t):
    w, q = np.linalg.eigh(a @ a.T + np.eye(3))  # a primitive with two results, known
    return q @ t * w


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("f, shapes, known", [
    (hvp_of_rosen, [(6,), (6,)], [0]),
    (hvp_of_rosen, [(6,), (6,)], [1]),
    (mixed_terms, [(4,), (4,), (4,)], [0]),
    (mixed_terms, [(4,), (4,), (4,)], [1]),
    (mixed_terms, [(4,), (4,), (4,)], [0, 2]),
    (with_linalg, [(3, 3), (3,)], [0]),
])
def test_specialized_replay_equals_the_whole_program(f, shapes, known, dtype):
    args = [RNG.standard_normal(s).astype(dtype) for s in shapes]
    program = _program(f, *args)
    specialized = partial_eval(program, {i: args[i] for i in known})
    assert specialized.n_inputs == len(shapes) - len(known)
    for _ in range(2):  # the whole program, then the specialized one, at new unknown values
        new = [args[i] if i in known else RNG.standard_normal(s).astype(dtype)
               for i, s in enumerate(shapes)]
        want = replay(program, new)
        got = replay(specialized, [a for i, a in enumerate(new) if i not in known])
        assert len(got) == len(want)
        for u, w in zip(got, want):
            assert u.dtype == w.dtype and u.shape == w.shape
            np.testing.assert_array_equal(u, w)  # the same impls on the same values


@pytest.mark.parametrize("f, shapes, known", [
    (hvp_of_rosen, [(6,), (6,)], [0]),
    (mixed_terms, [(4,), (4,), (4,)], [0, 2]),
    (with_linalg, [(3, 3), (3,)], [0]),
])
def test_the_split_halves_compose_to_the_whole_program(f, shapes, known):
    args = [RNG.standard_normal(s) for s in shapes]
    program = _program(f, *args)
    staged = split(program, known)
    assert staged.known.n_inputs == len(known)
    for _ in range(2):  # new values of every input: the halves are not tied to any
        new = [RNG.standard_normal(s) for s in shapes]
        residuals = staged.residuals([new[i] for i in known])
        assert staged.unknown.n_inputs == len(shapes) - len(known) + len(residuals)
        got = replay(staged.unknown, [*(a for i, a in enumerate(new) if i not in known), *residuals])
        for u, w in zip(got, replay(program, new), strict=True):
            np.testing.assert_array_equal(u, w)


def _depends(program, inputs):
    """The slots of ``program`` computed from the inputs ``inputs``."""
    slots = set(inputs)
    for step in program.eqns:
        if slots.intersection(step.ins):
            slots.update(step.outs)
    return slots


def test_the_unknown_half_computes_only_what_reads_an_unknown_input():
    program = _program(hvp_of_rosen, np.ones(6), np.ones(6))
    staged = split(program, [0])
    rest = staged.unknown
    depends = _depends(rest, [0])  # the tangent (unknown input 0), not the residuals
    assert rest.eqns and all(depends.intersection(step.ins) for step in rest.eqns)
    assert not _depends(staged.known, []) and len(staged.known.eqns) > 0


def test_a_guard_of_the_known_half_is_refused_by_its_index_in_the_whole_program():
    def unknown_first(x, t):
        if np.sum(t) > 0:  # guard 0, on the unknown input
            t = t * 2.0
        return np.sin(x) * t if np.sum(x) > 0 else t  # guard 1, on the known input
    program = _program(unknown_first, np.ones(2), np.ones(2))
    staged = split(program, [0])
    assert staged.guards == (1,) and len(staged.unknown.guards) == 1
    with pytest.raises(SpecializationRefused, match="guard 1 gives False") as err:
        staged.residuals([-np.ones(2)])
    assert (err.value.index, err.value.outcome, err.value.expected) == (1, False, True)


def test_draws_stay_in_the_unknown_half():
    def noisy(x, rng):
        return np.sin(x) + rng.normal(size=2)
    program = _program(noisy, np.ones(2), np.random.default_rng(0))
    staged = split(program, [0, 1])  # every input known: the draw still runs per replay
    assert [e.prim.name for e in staged.unknown.eqns] == [e.prim.name for e in program.eqns
                                                            if getattr(e.prim, "effect", False)] + ["add"]


def test_steps_of_known_inputs_only_are_gone():
    program = _program(lambda x, t: np.exp(np.sin(x)) * t, np.ones(3), np.ones(3))
    assert _names(program) == ["sin", "exp", "multiply"]
    specialized = partial_eval(program, {0: np.array([0.0, 1.0, 2.0])})
    assert _names(specialized) == ["multiply"]
    (const,) = specialized.consts.values()
    np.testing.assert_array_equal(const, np.exp(np.sin([0.0, 1.0, 2.0])))


def test_the_unknown_inputs_keep_their_order():
    program = _program(lambda a, b, c: a - 2.0 * c + b * 10.0, np.ones(2), np.ones(2), np.ones(2))
    specialized = partial_eval(program, {1: np.array([1.0, 2.0])})
    (got,) = replay(specialized, [np.array([100.0, 200.0]), np.array([1.0, 1.0])])
    np.testing.assert_array_equal(got, [108.0, 218.0])


def test_no_known_inputs_folds_the_constants():
    A = RNG.standard_normal(4)
    traced = _program(lambda x, a: np.cos(a * 3.0) + x, np.ones(4), A)
    program = Program(1, {**traced.consts, 1: A}, traced.steps, traced.outputs)  # a: a constant
    folded = partial_eval(program, {})
    assert _names(program) == ["multiply", "cos", "add"] and _names(folded) == ["add"]
    x = RNG.standard_normal(4)
    np.testing.assert_array_equal(replay(folded, [x])[0], replay(program, [x])[0])


def test_all_inputs_known_gives_constant_outputs_the_caller_may_write_into():
    program = _program(lambda x: (np.exp(x), 2.0 * x), np.ones(2))
    done = partial_eval(program, {0: np.array([0.0, 1.0])})
    assert done.n_inputs == 0 and not done.steps
    first = replay(done, [])
    np.testing.assert_array_equal(first[1], [0.0, 2.0])
    first[0][:] = -1.0
    np.testing.assert_array_equal(replay(done, [])[0], np.exp([0.0, 1.0]))


def branchy(x, t):
    if np.sum(x) > 0:  # a guard on the known input
        y = np.sin(x)
    else:
        y = np.cos(x)
    if np.sum(t) > 0:  # a guard on the unknown input
        return y * t
    return y - t


def test_guards_on_known_inputs_are_checked_now_and_dropped():
    x, t = np.array([1.0, 2.0]), np.array([1.0, 1.0])
    program = _program(branchy, x, t)
    assert len(program.guards) == 2
    specialized = partial_eval(program, {0: np.array([0.5, 0.5])})  # the same way: sum > 0
    assert len(specialized.guards) == 1
    np.testing.assert_array_equal(replay(specialized, [t])[0], np.sin([0.5, 0.5]) * t)


def test_a_known_guard_that_fails_refuses_the_specialization():
    program = _program(branchy, np.array([1.0, 2.0]), np.ones(2))
    with pytest.raises(SpecializationRefused, match="guard 0 gives False") as err:
        partial_eval(program, {0: np.array([-1.0, -2.0])})
    assert (err.value.index, err.value.outcome, err.value.expected) == (0, False, True)


def test_guards_on_unknown_inputs_stay_and_miss_at_replay():
    program = _program(branchy, np.array([1.0, 2.0]), np.ones(2))
    specialized = partial_eval(program, {0: np.array([1.0, 2.0])})
    miss = replay(specialized, [-np.ones(2)])
    assert type(miss) is GuardMiss and (miss.index, miss.outcome) == (0, False)
    assert "assert bool(" in str(specialized)


@pytest.mark.parametrize("known", [[0], {5: 1.0}, {-1: 1.0}, {0.0: 1.0}])
def test_bad_known_names_the_argument(known):
    program = _program(lambda x: x * 2.0, np.ones(2))
    with pytest.raises(ValueError, match="partial_eval: known must be a dict from input indices"):
        partial_eval(program, known)

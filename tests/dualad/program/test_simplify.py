"""dualad._program.passes.simplify: each rewrite fires where it is exact, does not fire where it is not
(shapes, dtypes, -0.0, nan/inf), and a simplified program replays bit for bit as eager."""

from collections import Counter

import numpy as np
import pytest

import dualad
import mixed
import reverse
from dualad import ops
from dualad._program.executors.replay import replay
from dualad._program.ir import Eqn
from dualad._program.passes.cse import eliminate_common_subexpressions
from dualad._program.passes.dce import eliminate_dead_code
from dualad._program.passes.simplify import fold_constants, simplify
from dualad._program.program import Program
from dualad.extend import REGISTRY

SPECIAL = np.array([-0.0, 0.0, np.inf, -np.inf, np.nan, 1.5, -2.25, 1e308])
# The tests that replay at SPECIAL mean NumPy's warnings there: sin(inf) and inf - inf are
# nan, 1e308 * 3 overflows, 1e308 is inf in float32.
AT_SPECIAL_VALUES = pytest.mark.filterwarnings("ignore:(invalid value|overflow) encountered:RuntimeWarning")


def _identical(a, b):
    """Same type, shape, dtype and numbers, -0.0 told from +0.0 (nan equal to nan, of
    either sign: IEEE leaves the sign of an arithmetic nan unspecified)."""
    if isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for u, v in zip(a, b):
            _identical(u, v)
        return
    assert type(a) is type(b), (type(a), type(b))
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    assert np.array_equal(a, b, equal_nan=True), (a, b)
    if a.dtype.kind in "fc":
        numbers = ~np.isnan(a.real)
        assert np.array_equal(np.signbit(a.real)[numbers], np.signbit(b.real)[numbers]), (a, b)


def _simplified(f, *args, more=()):
    """``f``'s unoptimized program simplified (and dead code removed), the rewrites that
    fired, after checking that it replays as ``f`` runs on ``args`` and ``more``."""
    p = dualad.compile(f, optimize=False).program(*args)
    fired = Counter()
    q = eliminate_dead_code(simplify(p, fired))
    for inputs in (args, *more):
        leaves = [np.asarray(a) if not isinstance(a, np.ndarray) else a for a in inputs]
        _identical(q.rebuild(replay(q, leaves)), f(*inputs))
    return q, fired


def _names(program):
    return [e.prim.name for e in program.eqns]


def _special(dtype=np.float64):
    return SPECIAL.astype(dtype)


# -- x * 1, x / 1 ----------------------------------------------------------------------------
@AT_SPECIAL_VALUES
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("f", [lambda x: np.sin(x * 1.0), lambda x: np.sin(1.0 * x),
                               lambda x: np.sin(x * np.ones(8, x.dtype)),
                               lambda x: np.sin(x / 1.0)], ids=["x*1", "1*x", "x*ones", "x/1"])
def test_multiply_and_divide_by_one_fire(f, dtype):
    x = np.linspace(-1, 1, 8).astype(dtype)
    q, fired = _simplified(f, x, more=[(_special(dtype),)])
    assert _names(q) == ["sin"]
    assert fired["mul_one"] + fired["div_one"] == 1


@pytest.mark.parametrize("f, x", [
    (lambda x: np.sin(x * np.ones(8)), np.ones(8, np.float32)),        # float32 * float64 array
    (lambda x: np.sin(x * np.ones((2, 8))), np.ones(8)),               # the ones broadcast x
    (lambda x: np.sin(x * 1.0), np.ones(8, np.int64)),                 # int * float: float64
    pytest.param(lambda x: np.sin(x * 1.0), np.array([complex(np.inf, 0), 1j]),  # inf * (1+0j) is inf+nanj
                 marks=AT_SPECIAL_VALUES),
    pytest.param(lambda x: np.sin(x / 1.0), np.array([complex(np.inf, 0), 1j]), marks=AT_SPECIAL_VALUES),
    (lambda x: np.sin(1.0 / x), np.ones(8)),                           # 1 / x is no x / 1
    (lambda x: np.sin(x * np.array([1.0, 1.0, 1.0, 2.0])), np.ones(4)),
], ids=["dtype", "broadcast", "int", "complex-mul", "complex-div", "reciprocal", "not-all-ones"])
def test_multiply_and_divide_by_one_do_not_fire(f, x):
    q, fired = _simplified(f, x)
    assert fired["mul_one"] == fired["div_one"] == 0
    assert len(q.eqns) == 2


@AT_SPECIAL_VALUES
def test_times_zero_is_not_a_symbolic_zero():
    """inf * 0 and nan * 0 are nan: a zero constant never makes a product zero."""
    q, fired = _simplified(lambda x: np.sin(x) + x * 0.0, SPECIAL, more=[(np.ones(8),)])
    assert "multiply" in _names(q) and not fired
    out = q.rebuild(replay(q, [SPECIAL]))
    assert np.isnan(out[2]) and np.isnan(out[3])


# -- adding and subtracting zero -------------------------------------------------------------
@AT_SPECIAL_VALUES
@pytest.mark.parametrize("f", [lambda x: np.sin(x + (-0.0)), lambda x: np.sin(-0.0 + x),
                               lambda x: np.sin(x - 0.0),
                               lambda x: np.sin(x + np.full(8, -0.0))],
                         ids=["x+-0", "-0+x", "x-0", "x+array(-0)"])
def test_exact_zero_additions_fire(f):
    q, fired = _simplified(f, np.ones(8), more=[(SPECIAL,)])
    assert _names(q) == ["sin"] and fired["add_zero"] + fired["sub_zero"] == 1


@AT_SPECIAL_VALUES
@pytest.mark.parametrize("f", [lambda x: np.sin(x + 0.0), lambda x: np.sin(0.0 + x),
                               lambda x: np.sin(x - (-0.0)), lambda x: np.sin(0.0 - x),
                               lambda x: np.sin(x + np.zeros(8))],
                         ids=["x+0", "0+x", "x--0", "0-x", "x+zeros"])
def test_zero_additions_that_flip_minus_zero_do_not_fire(f):
    """-0.0 + 0.0 is +0.0: dropping it would return -0.0 where eager gives +0.0."""
    q, fired = _simplified(f, SPECIAL)
    assert fired["add_zero"] == fired["sub_zero"] == 0 and len(q.eqns) == 2
    out = q.rebuild(replay(q, [np.full(8, -0.0)]))
    _identical(out, f(np.full(8, -0.0)))


def test_integer_zero_additions_fire():
    x = np.arange(-3, 5)
    q, fired = _simplified(lambda x: np.sin(x + 0), x)
    assert _names(q) == ["sin"] and fired["add_zero"] == 1
    q, fired = _simplified(lambda x: np.sin(x + 0.0), x)  # int + float: float64, kept
    assert fired["add_zero"] == 0


# -- negations and transposes ----------------------------------------------------------------
@AT_SPECIAL_VALUES
def test_negation_of_negation():
    q, fired = _simplified(lambda x: np.sin(np.negative(-x)), np.ones(8), more=[(SPECIAL,)])
    assert _names(q) == ["sin"] and fired["neg_neg"] == 1
    q, fired = _simplified(lambda x: np.sin(np.negative(-x)), np.arange(8, dtype=np.int8))
    assert _names(q) == ["sin"]


def test_transpose_of_transpose():
    x = np.arange(6.0).reshape(2, 3)
    q, fired = _simplified(lambda x: np.sin(x.T.T), x)
    assert _names(q) == ["sin"] and fired["transpose"] == 1
    y = np.arange(24.0).reshape(2, 3, 4)
    q, _ = _simplified(lambda x: np.sin(np.transpose(np.transpose(x, (1, 2, 0)), (2, 0, 1))), y)
    assert _names(q) == ["sin"]
    q, _ = _simplified(lambda x: np.sin(np.transpose(np.transpose(x, (1, 2, 0)), (1, 2, 0))), y)
    assert _names(q) == ["permute_dims", "sin"] and q.eqns[0].params["axes"] == (2, 0, 1)
    assert q.eqns[0].ins == (0,)


def test_transpose_of_transpose_as_an_output_shares_memory_as_eager():
    """x.T.T is a view of x in eager evaluation: returning x shares the same memory."""
    x = np.arange(6.0).reshape(2, 3)
    f = lambda x: x.T.T  # noqa: E731
    q, fired = _simplified(f, x)
    assert fired["transpose"] == 1 and not q.eqns
    assert np.shares_memory(q.rebuild(replay(q, [x])), x) and np.shares_memory(f(x), x)


# -- outputs stay fresh ----------------------------------------------------------------------
@pytest.mark.parametrize("f", [lambda x: x * 1.0, lambda x: np.negative(-x), lambda x: x / 1.0,
                               lambda x: (np.sin(x), np.sin(x) * 1.0)],
                         ids=["x*1", "--x", "x/1", "two-outputs"])
def test_an_output_never_becomes_an_input_or_another_output(f):
    x = np.linspace(0, 1, 4)
    compiled = dualad.compile(f)
    compiled(x)
    out = compiled(x)
    outs = out if isinstance(out, tuple) else (out,)
    for o in outs:
        assert not np.shares_memory(o, x)
    if len(outs) == 2:
        assert not np.shares_memory(outs[0], outs[1])


# -- a uniform constant array becomes a number -----------------------------------------------
@AT_SPECIAL_VALUES
def test_uniform_constant_array_becomes_a_number():
    c = np.full(8, 2.5)
    q, fired = _simplified(lambda x: np.sin(x * c), np.ones(8), more=[(SPECIAL,)])
    assert fired["uniform_const"] == 1
    assert 2.5 in q.consts.values() and type(q.consts[q.eqns[0].ins[1]]) is float


@AT_SPECIAL_VALUES
def test_uniform_constant_keeps_the_dtype_it_promotes_to():
    """float32 x times a float64 array is float64: the number must be a np.float64."""
    c = np.full(8, 0.1)
    q, fired = _simplified(lambda x: np.sin(x * c), np.ones(8, np.float32),
                           more=[(_special(np.float32),)])
    assert fired["uniform_const"] == 1
    assert type(q.consts[q.eqns[0].ins[1]]) is np.float64
    c32 = np.full(8, 0.1, np.float32)  # float32 * float32: the Python float is cast back exactly
    _simplified(lambda x: np.sin(x * c32), np.ones(8, np.float32), more=[(_special(np.float32),)])


@pytest.mark.parametrize("c, x", [(np.full((2, 8), 2.5), np.ones(8)),      # broadcasts x
                                  (np.array([0.0, -0.0, 0.0, 0.0]), np.ones(4)),  # signs differ
                                  (np.array([1.0, 2.0, 1.0, 1.0]), np.ones(4))])
def test_uniform_constant_does_not_fire(c, x):
    _, fired = _simplified(lambda x: np.sin(x + c), x)
    assert fired["uniform_const"] == 0


# -- an operand broadcast by broadcast_to, where the other broadcasts it anyway -------------
@AT_SPECIAL_VALUES
@pytest.mark.filterwarnings("ignore:divide by zero encountered:RuntimeWarning")  # y's -0.0, 0.0
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("f, left", [
    (lambda x, y: x * np.broadcast_to(np.reshape(np.sum(y), (1,)), x.shape),  # a sum's transpose
     ["sum", "multiply"]),
    (lambda x, y: np.broadcast_to(y[:1], x.shape) - x, ["getitem", "subtract"]),
    (lambda x, y: np.reshape(x, (2, 4)) / np.broadcast_to(np.reshape(y, (2, 4))[:, :1], (2, 4)),
     ["reshape", "reshape", "getitem", "divide"]),
], ids=["number", "one", "column"])
def test_an_operand_broadcast_anyway_is_read_unbroadcast(f, left, dtype):
    x, y = np.linspace(-1, 1, 8).astype(dtype), np.linspace(0.5, 2, 8).astype(dtype)
    q, fired = _simplified(f, x, y, more=[(_special(dtype), y), (x, _special(dtype))])
    assert fired["broadcast_operand"] == 1 and _names(q) == left


@pytest.mark.parametrize("f, x, y", [
    (lambda x, y: x * np.broadcast_to(y, (2, 8)), np.ones(8), np.ones(8)),   # the result's shape
    (lambda x, y: x * np.broadcast_to(np.sum(y), (8,)), np.ones(8, np.float32), np.ones(8)),
    (lambda x, y: x * np.broadcast_to(y, (8,)), np.ones(8), np.ones(1, np.float32)),  # dtypes
], ids=["shape", "number-dtype", "array-dtype"])
def test_a_broadcast_operand_that_decides_the_result_stays(f, x, y):
    q, fired = _simplified(f, x, y)
    assert fired["broadcast_operand"] == 0 and "broadcast_to" in _names(q)


# -- negation folded into a scale ------------------------------------------------------------
@AT_SPECIAL_VALUES
def test_negated_scale():
    q, fired = _simplified(lambda x: np.sin(-(x * 3.0)), np.ones(8), more=[(SPECIAL,)])
    assert _names(q) == ["multiply", "sin"] and fired["neg_scale"] == 1
    assert -3.0 in q.consts.values()
    q, fired = _simplified(lambda x: np.sin(3.0 * -x), np.ones(8), more=[(SPECIAL,)])
    assert _names(q) == ["multiply", "sin"] and fired["neg_scale"] == 1


@AT_SPECIAL_VALUES
def test_negated_scale_used_twice_is_kept():
    def f(x):
        y = x * 3.0
        return -y + y
    q, fired = _simplified(f, np.ones(8), more=[(SPECIAL,)])
    assert fired["neg_scale"] == 0 and _names(q) == ["multiply", "negative", "add"]


def test_dead_readers_do_not_keep_a_value_from_being_used_once():
    """``optimize`` drops dead steps before simplifying: a negation read by a dead step
    and by ``2.0 * (-x)`` is still folded into the scale (a JVP's tangent of an output
    nobody returns is such a dead reader)."""
    def f(x):
        n = -x
        np.exp(n)  # dead
        return np.sin(2.0 * n)
    p = dualad.compile(f).program(np.ones(8))
    assert _names(p) == ["multiply", "sin"] and -2.0 in p.consts.values()
    np.testing.assert_array_equal(replay(p, [np.arange(8.0)])[0], f(np.arange(8.0)))


# -- scatters added --------------------------------------------------------------------------
@AT_SPECIAL_VALUES
def test_scatters_at_one_basic_index_are_added_first():
    idx = (slice(1, None),)
    f = lambda x: ops.scatter(np.sin(x), (5,), idx) + ops.scatter(np.cos(x), (5,), idx)  # noqa: E731
    q, fired = _simplified(f, np.linspace(0, 1, 4), more=[(SPECIAL[:4],)])
    assert fired["scatter_add"] == 1 and _names(q) == ["sin", "cos", "add", "scatter"]


@pytest.mark.parametrize("ia, ib", [((slice(1, None),), (slice(None, -1),)),
                                    ((np.array([0, 0, 1, 2]),), (np.array([0, 0, 1, 2]),))],
                         ids=["different", "advanced"])
def test_scatters_not_added_first(ia, ib):
    """Repeated advanced indices accumulate, in an order the sum would change."""
    f = lambda x: ops.scatter(np.sin(x), (5,), ia) + ops.scatter(np.cos(x), (5,), ib)  # noqa: E731
    _, fired = _simplified(f, np.linspace(0, 1, 4))
    assert fired["scatter_add"] == 0


@AT_SPECIAL_VALUES
@pytest.mark.parametrize("ia, ib", [(slice(1, None), slice(None, -1)), (slice(None, -1), slice(1, None)),
                                    (slice(0, 2), slice(3, 6)), (slice(0, 6), slice(2, 4)),
                                    (slice(2, 4), slice(0, 6))],
                         ids=["shifted", "shifted back", "apart", "nested", "nesting"])
def test_scatters_at_two_slices_become_one_step_with_the_sums_signed_zeros(ia, ib):
    """Where only the first scatter writes, the sum is a + 0.0: +0.0 for -0.0."""
    def f(x, y):
        return ops.scatter(np.sin(x), (6,), (ia,)) + ops.scatter(np.sin(y), (6,), (ib,))

    na, nb = len(range(6)[ia]), len(range(6)[ib])
    draws = [(np.resize(SPECIAL[k:], na), np.resize(SPECIAL[::-1][k:], nb)) for k in range(4)]
    draws += [(np.full(na, -0.0), np.full(nb, -0.0))]
    q, fired = _simplified(f, *draws[0], more=draws[1:])
    assert fired["scatter_sum"] == 1 and _names(q) == ["sin", "sin", "scatter_sum"]


@AT_SPECIAL_VALUES
def test_scatter_sum_gives_the_two_scatters_sum_bit_for_bit_at_every_pair_of_ranges():
    """Its impl writes each stretch once (``a + b``, ``a + 0.0``, ``0.0 + b`` or zeros):
    every pair of ranges of a 5-vector, empty, apart, touching, nested, with signed zeros."""
    from dualad._base.backend import NUMPY_XP
    from dualad._program.passes.simplify import SCATTER_SUM
    values = np.array([-0.0, 0.0, 1.5, -2.0, np.inf])
    ranges = [(lo, hi) for lo in range(6) for hi in range(lo, 6)]
    for i, j in ranges:
        for k, m in ranges:
            a, b = values[:j - i], -values[::-1][:m - k]
            first, second = np.zeros(5), np.zeros(5)
            first[i:j], second[k:m] = a, b
            want = first + second
            got = SCATTER_SUM.impl(NUMPY_XP, a, b, shape=(5,), dtype=np.float64, ranges=((i, j), (k, m)))
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
            np.testing.assert_array_equal(got, want)


def test_scatters_that_are_not_one_dimensional_slices_stay():
    def f(x):
        return (ops.scatter(np.sin(x), (4, 2), (slice(1, None),))
                + ops.scatter(np.cos(x), (4, 2), (slice(None, -1),)))

    _, fired = _simplified(f, np.ones((3, 2)))
    assert fired["scatter_sum"] == 0


# -- rewrites of steps compile does not record (ops elides them): hand-built programs ---------
def _hand_built(prim, params, x):
    xp = dualad.compile(np.sin).program(x).eqns[0].xp
    out = REGISTRY[prim].impl(xp, x, **params)
    aval = lambda v: (type(v), np.shape(v), v.dtype)  # noqa: E731
    steps = [Eqn(REGISTRY[prim], params, (0,), (1,), xp), Eqn(REGISTRY["sin"], {}, (1,), (2,), xp)]
    return Program(1, {}, steps, [2], lambda leaves: leaves[0],
                   {0: aval(x), 1: aval(out), 2: aval(np.sin(out))})


@pytest.mark.parametrize("prim, params, name, fires", [
    ("reshape", {"shape": (2, 3)}, "same_shape", True),
    ("reshape", {"shape": (3, 2)}, "same_shape", False),
    ("broadcast_to", {"shape": (2, 3)}, "same_shape", True),
    ("broadcast_to", {"shape": (4, 2, 3)}, "same_shape", False),
    ("astype", {"dtype": np.float64}, "same_dtype", True),
    ("astype", {"dtype": np.float32}, "same_dtype", False),
    ("permute_dims", {"axes": (0, 1)}, "transpose", True),
])
def test_same_shape_and_dtype(prim, params, name, fires):
    x = np.arange(6.0).reshape(2, 3)
    p = _hand_built(prim, params, x)
    fired = Counter()
    q = eliminate_dead_code(simplify(p, fired))
    assert fired[name] == int(fires) and len(q.eqns) == (1 if fires else 2)
    _identical(replay(q, [x])[0], replay(p, [x])[0])


def test_a_program_without_avals_is_left_alone():
    p = dualad.compile(lambda x: x * 1.0 + 0.0, optimize=False).program(np.ones(3))
    bare = Program(p.n_inputs, p.consts, p.steps, p.outputs, p.rebuild)
    assert simplify(bare) is bare


def test_guards_read_the_simplified_slots():
    def f(x):
        y = np.negative(-x) * 1.0
        return np.sin(y) if y[0] > 0 else np.cos(y)
    compiled = dualad.compile(f)
    for x in (np.array([1.0, 2.0]), np.array([-1.0, 2.0]), np.array([3.0, -0.0]),
              np.array([-3.0, np.nan])):
        _identical(compiled(x), f(x))
    assert compiled.stats["replays"] == 2 and compiled.stats["traces"] == 2


# -- the benchmark programs ------------------------------------------------------------------
def _rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _mlp(params, inputs, targets):
    w1, b1, w2, b2 = params
    z = np.tanh(inputs @ w1 + b1) @ w2 + b2
    return np.mean(np.log(np.sum(np.exp(z), axis=1)) - np.sum(targets * z, axis=1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rosenbrock_gradient_and_hvp_simplify_and_replay_as_eager(dtype):
    """The gradient's seed (ones) times a partial is dropped, its 100s become a number,
    the two scatters into x[:-1] are added first, and the sum of the scatters into x[:-1]
    and x[1:] is one step."""
    rng = np.random.default_rng(1)
    x, v = rng.normal(size=(2, 9)).astype(dtype)
    for f, args in [(reverse.grad(_rosenbrock), (x,)),
                    (lambda x, v: mixed.hvp(_rosenbrock, x, v), (x, v))]:
        p = eliminate_common_subexpressions(dualad.compile(f, optimize=False).program(*args))
        fired = Counter()
        q = eliminate_dead_code(simplify(p, fired))
        assert fired["mul_one"] >= 1 and fired["scatter_add"] >= 1 and fired["uniform_const"] >= 1
        assert fired["scatter_sum"] >= 1
        assert len(q.eqns) < len(eliminate_dead_code(p).eqns)
        for _ in range(3):
            args = tuple(rng.normal(size=9).astype(dtype) for _ in args)
            _identical(q.rebuild(replay(q, list(args))), f(*args))


def test_mlp_gradient_replays_as_eager():
    rng = np.random.default_rng(2)
    inputs, targets = rng.normal(size=(5, 3)), np.eye(2)[[0, 1, 1, 0, 1]]
    params = (rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=(4, 2)), rng.normal(size=2))
    g = reverse.grad(lambda p: _mlp(p, inputs, targets))
    compiled = dualad.compile(g)
    compiled(params)
    for _ in range(2):
        params = tuple(rng.normal(size=np.shape(p)) for p in params)
        _identical(compiled(params), g(params))


# -- constant folding ------------------------------------------------------------------------
def _xp():
    return dualad.compile(np.sin).program(np.ones(2)).eqns[0].xp


@pytest.mark.parametrize("const", [np.float32(2.0), np.array(2.0, np.float32), np.arange(3.0),
                                   2.0], ids=["float32-scalar", "0-d", "array", "python"])
def test_fold_constants_gives_what_a_replay_gives(const):
    xp = _xp()
    steps = [Eqn(REGISTRY["exp"], {}, (1,), (2,), xp), Eqn(REGISTRY["add"], {}, (0, 2), (3,), xp)]
    p = Program(1, {1: const}, steps, [3, 2], lambda leaves: tuple(leaves))
    q = fold_constants(p)
    assert [e.prim.name for e in q.eqns] == ["add"] and 2 in q.consts
    x = np.ones(3, np.float32)
    _identical(q.rebuild(replay(q, [x])), p.rebuild(replay(p, [x])))
    a, b = replay(q, [x])[1], replay(q, [x])[1]
    if isinstance(a, np.ndarray):  # a folded output is a fresh array at each call
        assert a is not b and a is not q.consts[2]


def test_fold_constants_keeps_draws_and_guards():
    from dualad._program.ir import Guard
    from dualad._staging.random import DRAW
    steps = [Eqn(DRAW, {"method": "random", "args": (), "kwargs": {}}, (0,), (2,), np),
             Eqn(REGISTRY["negative"], {}, (1,), (3,), _xp()), Guard(3, "float", -1.0)]
    p = Program(1, {1: 1.0}, steps, [2, 3], lambda leaves: tuple(leaves))
    q = fold_constants(p)
    assert [type(s).__name__ for s in q.steps] == ["Eqn", "Guard"] and q.consts[3] == -1.0
    a, b = np.random.default_rng(0), np.random.default_rng(0)
    assert q.rebuild(replay(q, [a])) == (b.random(), -1.0)


def test_programs_from_traces_have_nothing_to_fold():
    """What does not depend on the inputs runs while tracing: only its result is recorded."""
    c = np.arange(3.0)
    p = dualad.compile(lambda x: x + np.exp(c) * 2.0, optimize=False).program(np.ones(3))
    assert [e.prim.name for e in p.eqns] == ["add"] and fold_constants(p) is p

"""``dualad.linearize`` traces f's JVP once and replays only its tangent half: the
numbers equal the eager JVP's (and JAX's), f is not run again per call, chunks of
tangents and guards on the tangents trace once more, and where no program can be
traced it runs the JVP per call, silently, as before."""

import warnings

import numpy as np
import pytest
from _support.golden import assert_close, decode
from _support.harness import Counted
from _support.jax_peer_cases import recorded

import dualad
import reverse
from dualad import ops
from dualad.extend import custom
from dualad.interpreter import flatten

RNG = np.random.default_rng(11)


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def two_outputs(x, d):
    return {"y": np.tanh(x) * d["w"], "s": np.sum(np.exp(x) * d["b"])}


def _eager(f, primals, tangents):
    return dualad.jvp(f, primals, tangents)[1]


def _same(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _same(a[k], b[k])
        return
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("f, primals", [
    (rosen, lambda dt: (RNG.standard_normal(7).astype(dt),)),
    (reverse.grad(rosen), lambda dt: (RNG.standard_normal(7).astype(dt),)),
    (two_outputs, lambda dt: (RNG.standard_normal(3).astype(dt),
                              {"w": RNG.standard_normal(3).astype(dt), "b": np.asarray(2.0, dt)})),
])
def test_replays_equal_the_eager_jvp_and_f_runs_once(f, primals, dtype):
    primals = primals(dtype)
    counted = Counted(f)
    out, f_jvp = dualad.linearize(counted, *primals)
    _same(out, f(*primals))
    for _ in range(3):
        leaves, build = flatten(primals)
        tangents = build([RNG.standard_normal(np.shape(p)).astype(dtype) for p in leaves])
        _same(f_jvp(*tangents), _eager(f, primals, tangents))
    assert counted.calls == 1


def test_matches_jax_linearize():
    """Against jax.linearize(jax.grad(f)), recorded by tests/make_jax_peer_golden.py."""
    golden = recorded()["linearize_grad"]
    g, hvp = dualad.linearize(reverse.grad(rosen), decode(golden["x"]))
    assert_close(g, golden["g"], rtol=1e-13)
    assert_close(hvp(decode(golden["t"])), golden["hvp"], rtol=1e-13)


def test_chunks_of_tangents_trace_once_for_their_shape():
    counted = Counted(lambda x, y: np.sin(x) * y)
    x, y = RNG.standard_normal(4), RNG.standard_normal(4)
    _, f_jvp = dualad.linearize(counted, x, y)
    tx, ty = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    want = np.cos(x) * tx * y + np.sin(x) * ty
    np.testing.assert_allclose(f_jvp(tx, ty), want, rtol=1e-14)
    assert counted.calls == 2  # the chunk's shape: traced once more
    np.testing.assert_allclose(f_jvp(2.0 * tx, 2.0 * ty), 2.0 * want, rtol=1e-14)
    np.testing.assert_allclose(f_jvp(tx[0], ty[0]), want[0], rtol=1e-14)
    assert counted.calls == 2


def _kink_jvp(primals, tangents, ans):
    """The one-sided derivative of 2 x (x > 0), 3 x (x <= 0) at 0, along t: a rule
    that reads its tangent, so the trace guards on it."""
    (t,) = tangents
    return t * 2.0 if ops.sum(t) > 0 else t * 3.0


KINK = custom("kink_for_linearize_test", lambda xp, x: xp.where(x > 0, 2.0 * x, 3.0 * x),
              jvp=_kink_jvp, vjp=lambda g, ans, x: (g * 2.0,), register=False)


def test_a_guard_on_the_tangents_traces_the_other_way_once():
    counted = Counted(lambda x: dualad.bind(KINK, x) + x)
    _, f_jvp = dualad.linearize(counted, np.zeros(2))  # traced at zero tangents: the t * 3 way
    np.testing.assert_array_equal(f_jvp(np.array([-1.0, 0.5])), [-4.0, 2.0])
    assert counted.calls == 1
    np.testing.assert_array_equal(f_jvp(np.array([1.0, 0.5])), [3.0, 1.5])  # guard missed
    assert counted.calls == 2
    np.testing.assert_array_equal(f_jvp(np.array([2.0, 1.0])), [6.0, 3.0])
    np.testing.assert_array_equal(f_jvp(np.array([-2.0, 1.0])), [-8.0, 4.0])
    assert counted.calls == 2


def test_bad_tangents_are_named_as_before():
    _, f_jvp = dualad.linearize(lambda x: x * 2.0, np.ones(3))
    with pytest.raises(ValueError, match="tangent must have the primal's shape"):
        f_jvp(np.ones(5))
    with pytest.raises(TypeError, match="does not match primal dtype"):
        f_jvp(np.ones(3, np.float32))
    with pytest.raises(TypeError, match="tangents must have the structure of primals"):
        f_jvp(np.ones(3), np.ones(3))


def test_array_tangents_of_array_primals_skip_the_pytree_walk(monkeypatch):
    """The products of an optimizer's loop: arrays for arrays need no structure check
    (a pytree walk costs as much as a small product's replay), and give the same numbers."""
    import dualad._staging.linearize as lin
    x, t = RNG.standard_normal(5), RNG.standard_normal(5)
    _, f_jvp = dualad.linearize(rosen, x)
    walks = []
    paired = lin.paired_leaves
    monkeypatch.setattr(lin, "paired_leaves", lambda *a: walks.append(a) or paired(*a))
    _same(f_jvp(t), _eager(rosen, (x,), (t,)))
    assert not walks
    with pytest.raises(TypeError, match="tangents must have the structure of primals"):
        f_jvp([t])
    assert len(walks) == 1


def _draws(x):
    return x * np.random.default_rng(0).standard_normal(x.shape) + np.random.standard_normal()


@pytest.mark.parametrize("case", ["float", "random", "strict"])
def test_without_a_program_each_call_runs_f_silently(case):
    if case == "float":
        f, x, t = (lambda x: x ** 3), 2.0, 1.5
    elif case == "random":
        np.random.seed(0)
        f, x, t = _draws, np.ones(3), np.full(3, 2.0)
    else:
        xp = pytest.importorskip("array_api_strict")
        f, x, t = (lambda x: x * x), xp.asarray([1.0, 2.0]), xp.asarray([1.0, 1.0])
    counted = Counted(f)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, f_jvp = dualad.linearize(counted, x)
        got = f_jvp(t)
    want = dualad.jvp(f, (x,), (t,))[1]
    np.testing.assert_allclose(np.asarray(got), np.asarray(want))
    assert counted.calls == 2


def test_a_spoiled_trace_is_not_tried_again_at_each_call(monkeypatch):
    import dualad._staging.linearize as module

    traces = Counted(module.record)
    monkeypatch.setattr(module, "record", traces)
    np.random.seed(0)
    _, f_jvp = dualad.linearize(_draws, np.ones(3))
    for _ in range(3):
        f_jvp(np.full(3, 2.0))
    assert traces.calls == 1


def test_tangents_of_an_outer_transform_run_the_jvp_under_it():
    x = np.array([1.0, 2.0])
    _, f_jvp = dualad.linearize(lambda x: np.sin(x) * x, x)
    want = np.sin(x) + np.cos(x) * x
    np.testing.assert_allclose(reverse.grad(lambda t: np.sum(f_jvp(t)))(np.ones(2)), want, rtol=1e-15)
    np.testing.assert_allclose(dualad.jacfwd(f_jvp)(np.ones(2)), np.diag(want), rtol=1e-15)


def _branchy(x):
    return np.sin(x) * x if np.sum(x) > 0 else np.exp(x)


def test_at_new_primals_specializes_the_same_programs():
    counted = Counted(_branchy)
    x, t = np.array([0.5, 1.0]), np.array([1.0, -2.0])
    _, f_jvp = dualad.linearize(counted, x)
    f_jvp(t[None])  # a chunk: a second program, specialized again at the new point
    assert counted.calls == 2
    for y in (np.array([2.0, 0.1]), np.array([3.0, -1.0])):  # the same way through the guard
        out, g_jvp = f_jvp.at(y)
        _same(out, _branchy(y))
        _same(g_jvp(t), _eager(_branchy, (y,), (t,)))
        _same(g_jvp(t[None]), _eager(_branchy, (y,), (t[None],)))
    assert counted.calls == 2
    out, g_jvp = f_jvp.at(np.array([-2.0, 0.1]))  # its guard is refused: traced for this way
    assert counted.calls == 3
    _same(out, np.exp([-2.0, 0.1]))
    _same(g_jvp(t), np.exp([-2.0, 0.1]) * t)
    out, g_jvp = g_jvp.at(np.ones(3))  # another shape: traced anew
    assert counted.calls == 4
    _same(g_jvp(np.ones(3)), _eager(_branchy, (np.ones(3),), (np.ones(3),)))


def test_at_replays_the_primal_half_and_generates_no_code(monkeypatch):
    """A new point costs one replay of the primal half, a program made once per trace:
    no step is interpreted and no code generated (both were done per point before)."""
    import dualad._program.executors.replay as programs
    import dualad._program.partial_eval as partial
    x, t = RNG.standard_normal(8), RNG.standard_normal(8)
    _, f_jvp = dualad.linearize(reverse.grad(rosen), x)
    f_jvp(t)
    counts = {"generated": 0, "replayed": 0}
    generate, residuals = programs.generate, partial.Staged.residuals

    def counted_generate(program):
        counts["generated"] += 1
        return generate(program)

    def counted_residuals(staged, values):
        counts["replayed"] += 1
        return residuals(staged, values)
    monkeypatch.setattr(programs, "generate", counted_generate)
    monkeypatch.setattr(partial.Staged, "residuals", counted_residuals)
    for _ in range(3):
        y = RNG.standard_normal(8)
        g, g_jvp = f_jvp.at(y)
        _same(g, reverse.grad(rosen)(y))
        _same(g_jvp(t), _eager(reverse.grad(rosen), (y,), (t,)))
    assert counts == {"generated": 0, "replayed": 3}


def test_fused_halves_keep_the_primal_work_out_of_the_products():
    """Where numexpr fuses, each half is fused on its own: no kernel of the tangent half
    computes from the residuals alone, and the products equal the eager JVP's."""
    from dualad._program.passes.fusion import MIN_SIZE, Fused, available
    if not available():
        pytest.skip("needs numexpr")
    x, t = RNG.standard_normal(MIN_SIZE), RNG.standard_normal(MIN_SIZE)

    def f(x):  # its JVP's 3 * x**2 is read by the tangent's product alone
        return x ** 3 - x
    _, f_jvp = dualad.linearize(f, x)
    _same(f_jvp(t), _eager(f, (x,), (t,)))
    (entries,) = f_jvp.traced.values()
    ((staged, _, _),) = entries
    tangent = staged.unknown
    assert any(type(e.prim) is Fused for e in tangent.eqns)
    assert any(type(e.prim) is Fused for e in staged.known.eqns)
    depends = {0}  # the slots computed from the tangent
    for step in tangent.eqns:
        assert depends.intersection(step.ins), step
        depends.update(step.outs)

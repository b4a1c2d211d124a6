"""``mixed.linearize``: the gradient and the Hessian at x as an operator whose
products replay the tangent half of a traced program (f is not run again per
product), equal to ``mixed.hvp`` and JAX, taken by SciPy's solvers; and the
Newton solvers using it by default with the same iterates."""

from __future__ import annotations

import numpy as np
import pytest
from _support.backends import BACKENDS, DASK_PARAM, to_numpy
from _support.golden import assert_close, decode
from _support.harness import Counted
from _support.jax_peer_cases import recorded

import mixed
from dualad import ops
from mixed import HessianOperator, hvp, linearize, newton_cg, trust_region

RNG = np.random.default_rng(5)


def rosenbrock(x):
    return ops.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def scaled(x, a, b):
    return ops.sum(a * ops.tanh(x) ** 2) + b * ops.sum(x[:-1] * x[1:]) + ops.sum(ops.exp(0.1 * x))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("f, args", [(rosenbrock, ()), (scaled, (2.0, 0.5))])
def test_products_equal_hvp_and_f_runs_once(f, args, dtype):
    x = RNG.standard_normal(8).astype(dtype)
    counted = Counted(f)
    g, H = linearize(counted, x, args=args)
    assert counted.calls == 1
    assert isinstance(H, HessianOperator) and H.shape == (8, 8) and H.dtype == dtype
    assert g.dtype == dtype
    for _ in range(3):
        p = RNG.standard_normal(8).astype(dtype)
        hp = H @ p
        assert hp.dtype == dtype and hp.shape == (8,)
        np.testing.assert_array_equal(hp, hvp(f, x, p, args=args))
        np.testing.assert_array_equal(H.matvec(p), hp)
        np.testing.assert_array_equal(H.rmatvec(p), hp)
    assert counted.calls == 1


def test_blocks_of_directions_go_through_at_once():
    x, P = RNG.standard_normal(6), RNG.standard_normal((6, 3))
    _, H = linearize(rosenbrock, x)
    want = np.stack([hvp(rosenbrock, x, P[:, j]) for j in range(3)], axis=1)
    np.testing.assert_allclose(H @ P, want, rtol=1e-14)
    np.testing.assert_allclose(H.matmat(P), want, rtol=1e-14)
    np.testing.assert_allclose(H @ P[:, :1], want[:, :1], rtol=1e-14)  # (n, 1): a matvec
    np.testing.assert_allclose(H.matvec(P[:, :1]), want[:, :1], rtol=1e-14)


def test_matches_jax():
    """Against jax.jvp(jax.grad(f)), recorded by tests/make_jax_peer_golden.py."""
    golden = recorded()["mixed_linearize"]
    g, H = linearize(rosenbrock, decode(golden["x"]))
    assert_close(g, golden["g"], rtol=1e-13)
    assert_close(H @ decode(golden["p"]), golden["hp"], rtol=1e-13)


def test_scipy_cg_solves_with_it():
    sla = pytest.importorskip("scipy.sparse.linalg")
    x = 1.0 + 0.1 * RNG.standard_normal(20)
    g, H = linearize(rosenbrock, x)  # positive definite near the minimum
    for dtype, tol in ((np.float64, 1e-10), (np.float32, 1e-4)):
        g_d, H_d = linearize(rosenbrock, x.astype(dtype))
        p, info = sla.cg(H_d, -g_d, rtol=tol, maxiter=200)
        assert info == 0 and p.dtype == dtype
        np.testing.assert_allclose(H_d @ p, -g_d, rtol=0, atol=50 * tol * np.linalg.norm(g))
    assert sla.aslinearoperator(H).dtype == np.float64


def test_scipy_newton_cg_takes_its_products():
    """SciPy's Newton-CG with hessp taken from one operator per iterate (``H.at``): the
    same iterates as with mixed.scipy.hessp, and f's Python runs once in all."""
    optimize = pytest.importorskip("scipy.optimize")
    counted = Counted(rosenbrock)
    cache = {}

    def hessp(x, p):
        if "x" not in cache:
            cache["H"] = linearize(counted, x)[1]
        elif not np.array_equal(cache["x"], x):
            cache["H"] = cache["H"].at(x)[1]
        cache["x"] = x.copy()
        return cache["H"] @ p
    x0 = np.full(30, 0.5)
    ours = optimize.minimize(rosenbrock, x0, jac=mixed.scipy.jac(rosenbrock), hessp=hessp,
                             method="Newton-CG")
    plain = optimize.minimize(rosenbrock, x0, jac=mixed.scipy.jac(rosenbrock),
                              hessp=mixed.scipy.hessp(rosenbrock), method="Newton-CG")
    assert ours.success and ours.nit == plain.nit and ours.nhev == plain.nhev
    np.testing.assert_array_equal(ours.x, plain.x)
    assert counted.calls == 1


@pytest.mark.parametrize("backend", [p for p in [*BACKENDS, DASK_PARAM] if p.values[0].name != "numpy"])
def test_other_backends_take_one_hvp_pass_per_product(backend):
    x, p = RNG.standard_normal(5), RNG.standard_normal(5)
    xb, pb = backend.asarray(x), backend.asarray(p)
    counted = Counted(rosenbrock)
    g, H = linearize(counted, xb)
    np.testing.assert_allclose(to_numpy(H @ pb), to_numpy(hvp(rosenbrock, xb, pb)), rtol=1e-14)
    np.testing.assert_allclose(to_numpy(g), to_numpy(mixed.scipy.jac(rosenbrock)(xb)), rtol=1e-14)
    H @ pb
    assert counted.calls == 3  # the gradient, then one pass per product


@pytest.mark.parametrize("bad, match", [
    (lambda: linearize("f", np.ones(2)), "linearize: f must be the objective"),
    (lambda: linearize(rosenbrock, np.ones((2, 2))), "linearize: x must be a 1-d floating array"),
    (lambda: linearize(rosenbrock, 1.0), "linearize: x must be a 1-d floating array"),
    (lambda: linearize(rosenbrock, np.arange(3)), "linearize: x"),
    (lambda: linearize(rosenbrock, np.ones(2), args=1.0), "linearize: args must be a tuple"),
    (lambda: linearize(lambda x: x * 2.0, np.ones(2))[1] @ np.ones(2), "linearize"),
    (lambda: linearize(rosenbrock, np.ones(3))[1] @ np.ones(4), "p must have shape \\(3,\\)"),
    (lambda: linearize(rosenbrock, np.ones(3))[1].matmat(np.ones((4, 2))), "P must have shape \\(3, k\\)"),
    (lambda: linearize(rosenbrock, np.ones(3))[1] @ [1.0, 2.0, 3.0], "p must be an array"),
    (lambda: linearize(rosenbrock, np.ones(3))[1] @ np.ones(3, complex), "p must be a real array"),
])
def test_bad_input_is_named(bad, match):
    with pytest.raises((TypeError, ValueError), match=match):
        bad()


def test_integer_directions_are_cast():
    x = RNG.standard_normal(4).astype(np.float32)
    _, H = linearize(rosenbrock, x)
    got = H @ np.array([1, 0, 2, 0], dtype=np.int8)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, hvp(rosenbrock, x, np.array([1.0, 0.0, 2.0, 0.0], np.float32)))


# -- the solvers -----------------------------------------------------------------------------
@pytest.mark.parametrize("solver", [newton_cg, trust_region])
@pytest.mark.parametrize("f, args, x0", [
    (rosenbrock, (), np.full(200, 0.5)),
    (rosenbrock, (), 1.0 + 0.3 * np.random.default_rng(0).standard_normal(100)),
    (scaled, (2.0, 0.5), np.linspace(-1.0, 1.0, 50)),
    (rosenbrock, (), np.full(40, 0.5, np.float32)),
])
def test_solvers_take_the_same_steps_replaying_the_products(solver, f, args, x0):
    """The products are the same numbers, so the iterates are the same to the bit;
    f's Python runs once per evaluation and once per iterate, not per product."""
    tol = 1e-4 if x0.dtype == np.float32 else 1e-8
    runs = {}
    for on in (True, False):
        counted = Counted(f)
        runs[on] = solver(counted, x0, args=args, tol=tol, linearize=on), counted.calls
    (new, new_calls), (old, old_calls) = runs[True], runs[False]
    assert new.success and (new.nit, new.nfev, new.nhev) == (old.nit, old.nfev, old.nhev)
    np.testing.assert_array_equal(new.x, old.x)
    assert old_calls == old.nfev + old.nhev
    assert new_calls == new.nfev + 1 < old_calls  # one trace per solve


def test_at_another_point_reuses_the_trace():
    counted = Counted(scaled)
    x, y, p = RNG.standard_normal(6), RNG.standard_normal(6), RNG.standard_normal(6)
    _, H = linearize(counted, x, args=(2.0, 0.5))
    g, H = H.at(y)
    np.testing.assert_array_equal(H @ p, hvp(scaled, y, p, args=(2.0, 0.5)))
    np.testing.assert_array_equal(g, mixed.scipy.jac(scaled)(y, 2.0, 0.5))
    assert counted.calls == 1
    with pytest.raises(ValueError, match="HessianOperator.at: x must be a 1-d floating array"):
        H.at(np.ones((2, 3)))

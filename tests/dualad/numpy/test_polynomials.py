"""NumPy's polynomial functions (``polyfit``, ``poly``, ``roots``, ``polydiv``) and
the others added beside them (``unwrap``, the functional ``put_along_axis``,
``apply_over_axes``): their values against NumPy's, through NumPy's own names
on dualad values, and derivatives against JAX's where JAX is installed.

The case table (tests/_support/cases.py) checks their derivatives in every
mode; this file checks what the table cannot: the numbers NumPy gives.
"""

from __future__ import annotations

import numpy as np
import pytest
from _support.golden import assert_close, decode
from _support.jax_peer_cases import recorded

import dualad
import reverse
from dualad import Dual, ops
from dualad.testing import check_grads

RNG = np.random.default_rng(0)


# -- polyfit ------------------------------------------------------------------------------------
def _fit_data(n=9, columns=0):
    rng = np.random.default_rng(n + columns)
    x = np.sort(rng.uniform(-2.0, 2.0, n))
    y = rng.normal(size=(n,) if columns == 0 else (n, columns))
    return x, y, rng.uniform(0.5, 2.0, n)


@pytest.mark.parametrize("deg", [0, 1, 3])
@pytest.mark.parametrize("columns", [0, 2])
@pytest.mark.parametrize("weighted", [False, True])
def test_polyfit_matches_numpy(deg, columns, weighted):
    x, y, w = _fit_data(columns=columns)
    w = w if weighted else None
    np.testing.assert_allclose(ops.polyfit(x, y, deg, w=w), np.polyfit(x, y, deg, w=w),
                               rtol=1e-10, atol=1e-12)
    for cov in (True, "unscaled"):
        for ours, theirs in zip(ops.polyfit(x, y, deg, w=w, cov=cov), np.polyfit(x, y, deg, w=w, cov=cov)):
            assert np.shape(ours) == np.shape(theirs)
            np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)
    ours, theirs = ops.polyfit(x, y, deg, w=w, full=True), np.polyfit(x, y, deg, w=w, full=True)
    assert int(ours[2]) == int(theirs[2])
    for o, t in zip(ours[:2] + ours[3:], theirs[:2] + theirs[3:]):
        np.testing.assert_allclose(o, t, rtol=1e-9, atol=1e-12)


def test_polyfit_is_reached_through_numpy_and_warns_as_numpy():
    x, y, _ = _fit_data()
    d = np.polyfit(Dual(x, np.ones_like(x)), y, 2)
    np.testing.assert_allclose(d.primal, np.polyfit(x, y, 2), rtol=1e-10)
    with pytest.warns(np.exceptions.RankWarning):
        ops.polyfit(np.array([0.0, 1.0, 2.0]), np.array([1.0, 2.0, 0.0]), 4)
    with pytest.raises(TypeError, match="lengths"):
        ops.polyfit(x, y[:-1], 1)


def test_polyfit_derivatives_in_every_mode():
    x, y, w = _fit_data(n=6, columns=2)
    check_grads(lambda x, y, w: ops.polyfit(x, y, 2, w=w, cov=True), (x, y, w), order=2, modes=("fwd", "rev"))


def test_polyfit_gradients_match_jax():
    """Against jnp.polyfit's gradients, recorded by tests/make_jax_peer_golden.py."""
    golden = recorded()["polyfit"]
    x, y, w = (decode(golden[k]) for k in "xyw")

    def loss(x, y, w):
        c = ops.polyfit(x, y, 2, w=w)
        return (c * c).sum() + (ops.polyval(c, x) ** 2).sum()

    ours = reverse.grad(loss, argnums=(0, 1, 2))(x, y, w)
    assert len(ours) == len(golden["grads"])
    for o, t in zip(ours, golden["grads"]):
        assert_close(o, t, rtol=1e-8, atol=1e-10)
    forward = dualad.jacfwd(lambda x: loss(x, y, w))(x)
    assert_close(forward, golden["grads"][0], rtol=1e-8, atol=1e-10)


# -- poly and roots ------------------------------------------------------------------------------
@pytest.mark.parametrize("zeros", [
    np.array([1.0, 2.0, 3.0]), np.array([2.0]), np.array([1 + 2j, 1 - 2j, 3.0]), np.array([0.5j, 2.0]),
    [1, 2], np.array([1.0, 2.0, 3.0], np.float32), RNG.normal(size=(4, 4)), RNG.normal(size=(3, 3)) + 2j,
    RNG.normal(size=(3, 3)).astype(np.float32),
], ids=["real", "one", "conjugate-pairs", "complex", "ints", "float32", "matrix", "complex-matrix",
        "float32-matrix"])
def test_poly_matches_numpy(zeros):
    ours, theirs = ops.poly(zeros), np.poly(zeros)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6 if np.asarray(zeros).dtype == np.float32 else 1e-10,
                               atol=1e-6)
    value_independent = np.ndim(zeros) == 2 or not np.iscomplexobj(zeros)
    if value_independent:  # NumPy's dtype where it does not depend on the values
        assert ours.dtype == theirs.dtype
    else:  # complex roots stay complex, even in conjugate pairs (as JAX)
        assert np.iscomplexobj(ours)


def test_poly_of_nothing_is_one():
    assert ops.poly(np.zeros(0)) == np.poly(np.zeros(0)) == 1.0
    with pytest.raises(ValueError, match="square"):
        ops.poly(np.ones((2, 3)))


def test_poly_of_a_matrix_differentiates_like_its_characteristic_polynomial():
    a = np.array([[2.0, 1.0], [0.5, -1.0]])  # x^2 - tr(a) x + det(a)
    t = np.array([[1.0, 2.0], [3.0, 4.0]])
    _, dc = dualad.jvp(ops.poly, (a,), (t,))
    expected = [0.0, -np.trace(t), np.linalg.det(a) * np.trace(np.linalg.solve(a, t))]
    np.testing.assert_allclose(dc, expected, atol=1e-12)


@pytest.mark.parametrize("p", [
    [1.0, -3.0, 2.0], [0.0, 0.0, 1.0, 2.0, 0.0, 0.0], [0.0, 0.0], [3.0], [1.0, 0.0, 1.0], [2.0, 0.0],
    [1, -6, 11, -6], list(RNG.normal(size=7)), [1.0, 2.0j, -1.0],
], ids=["quadratic", "leading-and-trailing-zeros", "zero", "constant", "complex-pair", "zero-root",
        "ints", "random", "complex"])
def test_roots_match_numpy(p):
    ours, theirs = ops.roots(np.asarray(p)), np.roots(p)
    assert ours.shape == theirs.shape and np.iscomplexobj(ours)
    np.testing.assert_allclose(np.sort_complex(ours), np.sort_complex(theirs), rtol=1e-10, atol=1e-12)


def test_roots_through_numpy_and_their_derivative():
    p = np.poly([-2.0, 0.5, 2.5])
    d = np.roots(Dual(p, np.eye(4)[3]))
    np.testing.assert_allclose(np.sort(d.primal.real), [-2.0, 0.5, 2.5], atol=1e-12)
    # d r / d p_3 = -1 / p'(r) for each simple root r
    order = np.argsort(d.primal.real)
    r = d.primal.real[order]
    np.testing.assert_allclose(d.tangent.real[order], -1.0 / np.polyval(np.polyder(p), r), rtol=1e-10)


@pytest.mark.parametrize("case", range(3))
def test_roots_gradients_match_jax(case):
    """Against jnp.roots's gradients, recorded by tests/make_jax_peer_golden.py."""
    golden = recorded()["roots"][case]
    p = decode(golden["p"])

    def f(p):
        r = ops.roots(p)
        return (r * r.conj()).real.sum() + (r.real ** 3).sum()

    ours = reverse.grad(f)(p)
    assert_close(ours, golden["grad"], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(dualad.jacfwd(f)(p), ours, rtol=1e-8, atol=1e-10)


# -- polydiv ----------------------------------------------------------------------------------
@pytest.mark.parametrize("u, v", [
    ([1.0, 0.0, -2.0], [1.0, -1.0]), ([1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 1.0, 1.0]),
    ([1.0, 2.0], [1.0, 2.0, 3.0]), ([3.0, 2.0, 1.0], [2.0]), ([1.0, 2.0, 1.0], [1.0, 1.0]),
    ([1 + 1j, 2.0], [1.0, 3j]), ([0.0, 0.0, 1.0], [1.0, 2.0]),
    (list(RNG.normal(size=7)), list(RNG.normal(size=3))), ([1, 4, 4], [1, 2]),
], ids=["exact-quotient", "long", "shorter", "constant", "no-remainder", "complex", "leading-zeros",
        "random", "ints"])
def test_polydiv_matches_numpy(u, v):
    for ours, theirs in zip(ops.polydiv(np.asarray(u), np.asarray(v)), np.polydiv(u, v)):
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


def test_polydiv_through_numpy_differentiates_both_arguments():
    u, v = RNG.normal(size=6), np.array([1.5, -0.5, 0.25])
    q, r = np.polydiv(Dual(u, np.ones(6)), v)
    np.testing.assert_allclose(q.primal, np.polydiv(u, v)[0], rtol=1e-12)
    check_grads(ops.polydiv, (u, v), order=2, modes=("fwd", "rev"))


# -- unwrap -------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape, axis", [((40,), -1), ((6, 9), 0), ((3, 5, 7), 1), ((4, 1), 1)])
@pytest.mark.parametrize("kw", [{}, {"discont": 4.0}, {"discont": 1.0}, {"period": 5.3},
                                {"period": 360.0, "discont": 100.0}])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_unwrap_matches_numpy(shape, axis, kw, dtype):
    rng = np.random.default_rng(len(shape))
    p = np.cumsum(rng.normal(scale=3.0, size=shape), axis=axis).astype(dtype)  # jumps of every size
    ours, theirs = ops.unwrap(p, axis=axis, **kw), np.unwrap(p, axis=axis, **kw)
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours, theirs)


def test_unwrap_of_integers_and_exact_half_periods_matches_numpy():
    for p, kw in (([0, 300, 720, 10], {"period": 360}), ([0, 180, 0, -180], {"period": 360}),
                  ([0, 3, 7, 10], {}), ([0.0, np.pi, 0.0, -np.pi], {})):
        np.testing.assert_array_equal(ops.unwrap(np.array(p), **kw), np.unwrap(np.array(p), **kw))


def test_unwrap_is_reached_through_numpy_and_has_the_derivative_of_its_input():
    p = np.cumsum(RNG.normal(scale=3.0, size=(3, 20)), axis=-1)
    t = RNG.normal(size=p.shape)
    d = np.unwrap(Dual(p, t))
    np.testing.assert_array_equal(d.primal, np.unwrap(p))
    np.testing.assert_array_equal(d.tangent, t)
    np.testing.assert_array_equal(reverse.grad(lambda p: (ops.unwrap(p, axis=0) * t).sum())(p), t)


# -- put_along_axis, apply_over_axes -----------------------------------------------------------------
@pytest.mark.parametrize("axis, indices", [(1, np.array([[1, 0, 1]] * 3)), (0, np.array([[2, 0, 1, 2]])),
                                           (None, np.array([5, 0, 5, 11]))])
def test_put_along_axis_functional_leaves_arr_and_matches_numpy(axis, indices):
    arr = np.arange(12.0).reshape(3, 4)
    values = -1.0 - np.arange(indices.size, dtype=float).reshape(indices.shape)
    expected = arr.copy()
    np.put_along_axis(expected, indices, values, axis)
    before = arr.copy()
    out = ops.put_along_axis(arr, indices, values, axis, inplace=False)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(arr, before)
    d = Dual(arr, np.ones_like(arr))  # (NumPy's own put_along_axis has no inplace keyword)
    out = ops.put_along_axis(d, indices, Dual(values, np.zeros_like(values)), axis, inplace=False)
    np.testing.assert_array_equal(out.primal, expected)
    np.testing.assert_array_equal(out.tangent, np.where(expected == arr, 1.0, 0.0))
    np.testing.assert_array_equal(d.primal, before)
    np.testing.assert_array_equal(d.tangent, np.ones_like(arr))


def test_put_along_axis_in_place_still_returns_none():
    d = Dual(np.zeros((2, 3)), np.zeros((2, 3)))
    assert ops.put_along_axis(d, np.array([[2], [0]]), Dual(np.ones((2, 1)), np.ones((2, 1))), 1) is None
    np.testing.assert_array_equal(d.tangent, [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    assert ops.put_along_axis(d, np.array([4]), Dual(np.ones(1), 2.0 * np.ones(1)), None) is None  # flat
    np.testing.assert_array_equal(d.tangent, [[0.0, 0.0, 1.0], [1.0, 2.0, 0.0]])


@pytest.mark.parametrize("func", ["sum", "mean"])
@pytest.mark.parametrize("axes", [0, [0, 2], [-1], [1, 1], []])
def test_apply_over_axes_matches_numpy(func, axes):
    a = RNG.normal(size=(2, 3, 4))
    ours = ops.apply_over_axes(getattr(ops, func), a, axes)
    theirs = np.apply_over_axes(getattr(np, func), a, axes)
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    d = np.apply_over_axes(getattr(np, func), Dual(a, np.ones_like(a)), axes)
    np.testing.assert_allclose(d.primal, theirs, rtol=1e-12)


def test_apply_over_axes_refuses_a_function_of_the_wrong_shape():
    with pytest.raises(ValueError, match="apply_over_axes"):
        ops.apply_over_axes(lambda a, axis: ops.reshape(a, (-1,)), np.ones((2, 3, 4)), [0])

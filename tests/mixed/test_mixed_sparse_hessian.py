"""Sparse Hessians (dualad.hessian_sparsity, dualad.color_symmetric, mixed.SparseHessian,
mixed.scipy.hess): the detected pattern holds every nonzero of the dense Hessian and the
compressed Hessian equals it, on every case of the table; known structures get their exact
patterns and colour counts; the star colouring recovers every symmetric matrix of its pattern."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from _support.backends import NUMPY
from _support.cases import CASES
from _support.harness import FEW, Prepared, as_vector, is_float, params
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import dualad
import mixed
from dualad.extend import REGISTRY
from dualad.interpreter import recover_symmetric, seed_matrix
from mixed.scipy import hess, jac

TABLE = [c for c in CASES if c.kind == "diff"]


def _scalar(f, m, seed):
    """A random weighting of f's outputs (real and imaginary parts): its Hessian's
    pattern is the union of the outputs' Hessians' patterns."""
    w = np.random.default_rng(seed).uniform(0.5, 1.5, size=(2, m))

    def g(v):
        out = f(v)
        return (w[0] * dualad.ops.real(out)).sum() + (w[1] * dualad.ops.imag(out)).sum()
    return g


def check_sparse_hessian_case(case, drawn):
    prep = Prepared(case, drawn, NUMPY, "float64")
    if not prep.xs or not all(is_float(x) for x in prep.xs):
        return
    x, f = as_vector(prep)
    if x.size == 0:
        return
    g = _scalar(f, np.size(f(x)), hash(case.name) % 2**32)
    dense = np.asarray(mixed.hessian(g)(x))
    # a Hessian that is not finite is a point where f is not defined (var with ddof=1 over
    # axis=(): 0/0, as NumPy gives): its nan entries are no structural nonzeros to find
    assume(np.isfinite(dense).all())
    pattern = dualad.hessian_sparsity(g, x)
    assert (pattern != pattern.T).nnz == 0, f"{case.name}: the pattern is not symmetric"
    missing = (dense != 0) & ~pattern.toarray()
    assert not missing.any(), f"{case.name}: the pattern misses nonzeros at {np.argwhere(missing)[:5]}"
    got = mixed.SparseHessian(g, x)(x).toarray()
    scale = max(1.0, np.abs(dense).max())
    np.testing.assert_allclose(got, dense, rtol=1e-10, atol=1e-12 * scale)


@pytest.mark.parametrize("case, backend, dtype", params("sparse_hessian", TABLE, [NUMPY.param], ["float64"]))
@FEW
@given(data=st.data())
def test_sparse_hessian_of_every_case(case, backend, dtype, data):
    check_sparse_hessian_case(case, data.draw(case.args, label="args"))


def test_second_order_rules_cover_the_table():
    rules = dualad.sparsity_rules(order=2)
    assert set(rules) == set(REGISTRY)
    assert set(rules.values()) <= {"constant", "linear", "product", "quotient", "matmul", "nonlinear"}
    with pytest.raises(ValueError, match="order must be 1 or 2, got 3"):
        dualad.sparsity_rules(order=3)


# -- known structures ----------------------------------------------------------------------
def rosenbrock(x):
    return (100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2).sum()


def laplacian_objective(side):
    """A 2-d Laplacian-regularized objective: a 5-point Hessian."""
    def f(x):
        u = x.reshape(side, side)
        return (0.5 * ((u[1:, :] - u[:-1, :]) ** 2).sum() + 0.5 * ((u[:, 1:] - u[:, :-1]) ** 2).sum()
                + (np.cos(x) + x ** 4).sum())
    return f


def _dense_pattern(h):
    return sp.csr_matrix(np.asarray(h) != 0)


def test_rosenbrock_is_tridiagonal_with_3_colours():
    x = np.random.default_rng(0).standard_normal(200)
    H = mixed.SparseHessian(rosenbrock, x)
    want = sp.diags([np.ones(199), np.ones(200), np.ones(199)], [-1, 0, 1], format="csr") != 0
    assert (H.pattern != want).nnz == 0
    assert H.n_colors == 3
    np.testing.assert_allclose(H(x).toarray(), mixed.hessian(rosenbrock)(x), rtol=1e-13)


def test_laplacian_objective_is_five_point_with_5_colours():
    side = 15
    f = laplacian_objective(side)
    x = np.random.default_rng(1).standard_normal(side * side)
    H = mixed.SparseHessian(f, x)
    dense = mixed.hessian(f)(x)
    assert (H.pattern != _dense_pattern(dense)).nnz == 0
    assert np.diff(H.pattern.indptr).max() == 5
    assert H.n_colors == 5
    np.testing.assert_allclose(H(x).toarray(), dense, rtol=1e-13, atol=1e-12)


def test_arrowhead_takes_2_colours_where_columns_take_n():
    """One variable coupled with every other: a dense row and column."""
    f = lambda x: x[0] * (x[1:] ** 2).sum() + (x ** 3).sum()  # noqa: E731
    x = np.linspace(0.5, 1.5, 30)
    H = mixed.SparseHessian(f, x)
    assert H.n_colors == 2
    assert dualad.color_columns(H.pattern).max() + 1 == 30
    np.testing.assert_allclose(H(x).toarray(), mixed.hessian(f)(x), rtol=1e-13)


def test_products_pair_operands_not_each_with_itself():
    p = dualad.hessian_sparsity(lambda x: (x[1:] * x[:-1]).sum(), np.ones(4)).toarray()
    np.testing.assert_array_equal(p, np.eye(4, k=1, dtype=bool) | np.eye(4, k=-1, dtype=bool))
    # by a constant or a constant divided: linear
    assert dualad.hessian_sparsity(lambda x: (3.0 * x).sum() + (x / 2.0).sum(), np.ones(3)).nnz == 0
    # a denominator pairs with itself and with the numerator
    p = dualad.hessian_sparsity(lambda x: x[0] / x[1] + x[2] * 1.0, np.ones(3)).toarray()
    np.testing.assert_array_equal(p, [[False, True, False], [True, True, False], [False, False, False]])


def test_matmul_pairs_only_the_elements_it_multiplies():
    """x @ y for y tridiagonal in x: the rule pairs x[k] with y[k] only; every pair among
    the output's inputs would make it dense."""
    n = 8

    def f(x):
        y = 2.0 * x + np.concatenate([x[1:], np.zeros(1)]) + np.concatenate([np.zeros(1), x[:-1]])
        return x @ y
    x = np.random.default_rng(2).standard_normal(n)
    p = dualad.hessian_sparsity(f, x)
    tridiagonal = sp.diags([np.ones(n - 1), np.ones(n), np.ones(n - 1)], [-1, 0, 1], format="csr") != 0
    assert (p != tridiagonal).nnz == 0
    np.testing.assert_allclose(mixed.SparseHessian(f, x)(x).toarray(), mixed.hessian(f)(x), rtol=1e-14)
    # a matrix of numbers is dense to a global pattern, whatever its values
    assert dualad.hessian_sparsity(lambda v: v @ (np.eye(n) @ v), x).nnz == n * n


def test_piecewise_linear_entries_have_no_second_order_terms():
    x = np.array([0.5, -1.0, 2.0])
    for f in (lambda v: np.abs(v).sum(), lambda v: np.maximum(v, 0.0).sum(), lambda v: v.max(),
              lambda v: np.where(v > 0, v, 2.0 * v).sum()):
        assert dualad.hessian_sparsity(f, x).nnz == 0
    # |z| of a complex z is not piecewise linear
    p = dualad.hessian_sparsity(lambda v: np.abs(v[0] + 1j * v[1]), x).toarray()
    np.testing.assert_array_equal(p[:2, :2], np.ones((2, 2), dtype=bool))


def test_values_the_output_does_not_use_add_nothing_outside_its_inputs():
    p = dualad.hessian_sparsity(lambda v: (np.sin(v).sum(), (v[0] * v[1]))[1], np.ones(3)).toarray()
    assert not p[2].any() and not p[:, 2].any()
    assert dualad.hessian_sparsity(lambda v: np.zeros(()) + (np.exp(v) * 0.0).sum() * 0.0 + 1.0,
                                   np.ones(2)).shape == (2, 2)


def test_evaluation_at_new_points_and_float32():
    H = mixed.SparseHessian(rosenbrock, np.zeros(20, dtype=np.float32))
    rng = np.random.default_rng(3)
    for _ in range(3):
        x = rng.standard_normal(20).astype(np.float32)
        got = H(x)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got.toarray(), mixed.hessian(rosenbrock)(x), rtol=1e-5, atol=1e-3)


def test_sparse_hessian_with_args_detects_again_for_other_args():
    f = lambda x, a: (a * x ** 3).sum() + x[0] * x[-1]  # noqa: E731
    h = mixed.sparse_hessian(f)
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(h(x, 2.0).toarray(), mixed.hessian(lambda v: f(v, 2.0))(x))
    np.testing.assert_allclose(h(x, 3.0).toarray(), mixed.hessian(lambda v: f(v, 3.0))(x))
    a = np.array([1.0, 0.5, 2.0])
    np.testing.assert_allclose(h(x, a).toarray(), mixed.hessian(lambda v: f(v, a))(x))


def test_trust_constr_with_a_sparse_hessian_matches_the_dense_run():
    from scipy.optimize import minimize
    x0 = np.full(40, -0.5)
    dense = minimize(rosenbrock, x0, jac=jac(rosenbrock), method="trust-constr",
                     hess=lambda x: mixed.hessian(rosenbrock)(x), options={"gtol": 1e-10, "maxiter": 2000})
    sparse = minimize(rosenbrock, x0, jac=jac(rosenbrock), hess=hess(rosenbrock), method="trust-constr",
                      options={"gtol": 1e-10, "maxiter": 2000})
    assert sparse.success and dense.success
    np.testing.assert_allclose(sparse.x, np.ones(40), atol=1e-6)
    np.testing.assert_allclose(dense.x, np.ones(40), atol=1e-6)
    for x in (x0, sparse.x):
        np.testing.assert_allclose(hess(rosenbrock)(x).toarray(), mixed.hessian(rosenbrock)(x), rtol=1e-13)


# -- colouring -----------------------------------------------------------------------------
@st.composite
def symmetric_patterns(draw):
    n = draw(st.integers(0, 25))
    density = draw(st.floats(0.0, 0.5))
    seed = draw(st.integers(0, 2**32 - 1))
    a = sp.random(n, n, density=density, random_state=seed, format="csr")
    diag = sp.identity(n, format="csr") * draw(st.booleans())
    return ((a + a.T + diag) != 0).tocsr(), seed


@settings(max_examples=60, deadline=None)
@given(drawn=symmetric_patterns())
def test_star_colouring_recovers_every_matrix_of_its_pattern(drawn):
    pattern, seed = drawn
    n = pattern.shape[0]
    colors = dualad.color_symmetric(pattern, native=False)
    assert colors.shape == (n,)
    rows, cols = pattern.nonzero()
    off = rows != cols
    assert not (colors[rows[off]] == colors[cols[off]]).any(), "neighbours share a colour"
    values = np.random.default_rng(seed).standard_normal(pattern.nnz)
    h = sp.csr_matrix((values, (rows, cols)), shape=(n, n))
    h = (h + h.T).toarray()
    compressed = seed_matrix(colors) @ h
    np.testing.assert_allclose(recover_symmetric(pattern, colors)(compressed).toarray(), h, rtol=1e-14)
    if _has_numba():
        np.testing.assert_array_equal(dualad.color_symmetric(pattern, native=True), colors)
        np.testing.assert_array_equal(dualad.color_columns(pattern, native=True),
                                      dualad.color_columns(pattern, native=False))


def _has_numba():
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def test_neighbours_without_a_diagonal_get_two_colours():
    """Two columns that are neighbours share no row when the diagonal is not stored; the
    distance-2 colouring must count each vertex in its own row."""
    pattern = np.array([[0, 0, 0], [0, 0, 1], [0, 1, 0]], dtype=bool)
    for native in (False, True) if _has_numba() else (False,):
        colors = dualad.color_symmetric(pattern, native=native)
        assert colors[1] != colors[2]


def test_colouring_leaves_the_callers_pattern_alone():
    pattern = dualad.hessian_sparsity(rosenbrock, np.ones(6))
    before = pattern.copy()
    dualad.color_symmetric(pattern)
    recover_symmetric(pattern, dualad.color_symmetric(pattern))
    assert (pattern != before).nnz == 0 and pattern.nnz == before.nnz


# -- errors ---------------------------------------------------------------------------------
def test_hessian_sparsity_needs_a_scalar_output_and_a_1d_float_point():
    with pytest.raises(TypeError, match=r"f must return a scalar, got an output of shape \(3,\)"):
        dualad.hessian_sparsity(np.sin, np.ones(3))
    with pytest.raises(TypeError, match=r"hessian_sparsity: x must be a 1-d floating NumPy array, got an "
                                        r"array of shape \(2, 2\)"):
        dualad.hessian_sparsity(np.sum, np.ones((2, 2)))
    with pytest.raises(TypeError, match="SparseHessian: f must be the objective"):
        mixed.SparseHessian("f", np.ones(2))
    with pytest.raises(TypeError, match="sparse_hessian: f must be the objective"):
        mixed.sparse_hessian(None)
    with pytest.raises(TypeError, match="hess: f must be the objective"):
        hess(3)


def test_colouring_errors_name_what_was_wrong():
    with pytest.raises(ValueError, match=r"pattern must be square and symmetric, got shape \(2, 3\)"):
        dualad.color_symmetric(np.ones((2, 3)))
    with pytest.raises(ValueError, match="and an unsymmetric pattern"):
        dualad.color_symmetric(np.triu(np.ones((3, 3))))
    with pytest.raises(TypeError, match="color_columns: pattern must be a 2-d scipy.sparse matrix or NumPy "
                                        "array, got list"):
        dualad.color_columns([[1, 0]])
    with pytest.raises(ValueError, match="colors is not a star colouring of pattern"):
        recover_symmetric(np.ones((3, 3)), np.array([0, 1, 1]))
    with pytest.raises(ValueError, match=r"compressed must have shape \(2, 3\), got \(3, 3\)"):
        recover_symmetric(np.eye(3), np.array([0, 1, 0]))(np.eye(3))


def test_a_point_of_another_shape_is_refused():
    H = mixed.SparseHessian(rosenbrock, np.ones(4))
    with pytest.raises(ValueError, match=r"shape \(4,\) and dtype float64 .* got \(5,\) and float64"):
        H(np.ones(5))

"""Sparse Jacobians (dualad._sparse.detection): the detected pattern holds every nonzero of
the dense Jacobian and the compressed one equals it, on every case of the table; known
structures get their exact patterns and colour counts; errors name what was wrong."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from _support.backends import NUMPY
from _support.cases import CASES
from _support.harness import FEW, Prepared, as_vector, is_float, params
from hypothesis import given
from hypothesis import strategies as st

import dualad
from dualad.extend import REGISTRY

TABLE = [c for c in CASES if c.kind == "diff"]


def check_sparse_case(case, drawn, backend, dtype):
    prep = Prepared(case, drawn, backend, dtype)
    if not prep.xs or not all(is_float(x) for x in prep.xs):
        return
    x, f = as_vector(prep)
    if x.size == 0:
        return
    dense = np.asarray(dualad.jacfwd(f)(x)).reshape(-1, x.size)
    pattern = dualad.jacobian_sparsity(f, x).toarray()
    missing = (dense != 0) & ~pattern
    assert not missing.any(), f"{case.name}: the pattern misses nonzeros at {np.argwhere(missing)[:5]}"
    jac = dualad.SparseJacobian(f, x)
    for _ in range(2):  # eager, then compiled
        np.testing.assert_allclose(jac(x).toarray(), dense, rtol=1e-12, atol=1e-12)


# The table holds value-dependent functions (boolean indexing, a cast to integers, ...):
# SparseJacobian's compiled pass runs those eagerly, with compile's warning (its docstring).
@pytest.mark.parametrize("case, backend, dtype", params("sparse", TABLE, [NUMPY.param], ["float64"]))
@pytest.mark.filterwarnings(r"ignore:dualad\.compile\(SparseJacobian\..* runs eagerly:RuntimeWarning")
@FEW
@given(data=st.data())
def test_sparse_jacobian_of_every_case(case, backend, dtype, data):
    check_sparse_case(case, data.draw(case.args, label="args"), backend, dtype)


def test_sparsity_rules_cover_the_table():
    rules = dualad.sparsity_rules()
    assert set(rules) == set(REGISTRY)
    assert set(rules.values()) <= {"constant", "elementwise", "selection", "gather", "scatter",
                                   "reduction", "cumsum", "matmul", "fallback"}


# -- known structures ----------------------------------------------------------------------
def laplacian_1d(x):
    return np.concatenate([x[:1], x[:-2] - 2.0 * x[1:-1] + x[2:] + x[1:-1] ** 3, x[-1:]])


def laplacian_2d(side):
    def r(x):
        u = x.reshape(side, side)
        inner = (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1]
                 + np.exp(u[1:-1, 1:-1]))
        return dualad.ops.pad(inner, 1).reshape(-1) + x * 0.0
    return r


def test_tridiagonal_residual_has_the_tridiagonal_pattern_and_3_colours():
    n = 1000
    x = np.random.default_rng(0).standard_normal(n)
    pattern = dualad.jacobian_sparsity(laplacian_1d, x)
    want = sp.diags([np.ones(n - 1), np.ones(n), np.ones(n - 1)], [-1, 0, 1], format="lil")
    want[0, 1] = want[n - 1, n - 2] = 0
    assert (pattern != sp.csr_matrix(want, dtype=bool)).nnz == 0
    jac = dualad.SparseJacobian(laplacian_1d, x)
    assert jac.n_colors == 3
    np.testing.assert_allclose(jac(x).toarray(), dualad.jacfwd(laplacian_1d)(x), rtol=1e-13)


def test_five_point_laplacian_colours():
    """A stencil's five columns share a row, so 5 is the least; DSATUR order reaches it
    (largest-first order took 7)."""
    side = 20
    x = np.random.default_rng(1).standard_normal(side * side)
    jac = dualad.SparseJacobian(laplacian_2d(side), x)
    assert jac.n_colors == 5
    np.testing.assert_allclose(jac(x).toarray(), dualad.jacfwd(laplacian_2d(side))(x), rtol=1e-13)


def test_elementwise_function_is_diagonal_with_one_colour():
    x = np.linspace(0.1, 1.0, 50)
    jac = dualad.SparseJacobian(lambda v: np.sin(v) * np.exp(v) + v ** 2, x)
    assert (jac.pattern != sp.identity(50, format="csr", dtype=bool)).nnz == 0
    assert jac.n_colors == 1


def test_constant_and_zero_derivative_outputs_have_empty_patterns():
    x = np.ones(3)
    assert dualad.jacobian_sparsity(lambda v: np.floor(v) + 1.0, x).nnz == 0
    assert dualad.jacobian_sparsity(lambda v: np.zeros(2), x).shape == (2, 3)
    assert dualad.sparse_jacfwd(lambda v: np.zeros(2))(x).nnz == 0


def test_evaluation_at_new_points_reuses_the_pattern():
    f = lambda v: v[1:] * v[:-1]  # noqa: E731
    jac = dualad.sparse_jacfwd(f)
    rng = np.random.default_rng(2)
    for _ in range(3):
        x = rng.standard_normal(6)
        np.testing.assert_allclose(jac(x).toarray(), dualad.jacfwd(f)(x))


def test_fallback_is_conservative():
    f = lambda v: np.linalg.solve(np.diag(v[:2]) + np.eye(2), v[2:])  # noqa: E731
    pattern = dualad.jacobian_sparsity(f, np.arange(1.0, 5.0))
    assert pattern.toarray().all()


# -- errors ---------------------------------------------------------------------------------
@pytest.mark.parametrize("x, got", [
    (np.ones((2, 2)), "shape (2, 2)"), (np.arange(3), "dtype int64"), ([1.0, 2.0], "got list"),
    (1.0, "got float")])
def test_x_must_be_a_1d_float_array(x, got):
    for call in (lambda: dualad.jacobian_sparsity(np.sin, x), lambda: dualad.sparse_jacfwd(np.sin)(x)):
        with pytest.raises(TypeError, match=r"x must be a 1-d floating NumPy array, got .*") as e:
            call()
        assert got in str(e.value)


def test_f_must_return_one_array():
    with pytest.raises(TypeError, match="f must return one array, got tuple"):
        dualad.jacobian_sparsity(lambda v: (v, v), np.ones(2))
    with pytest.raises(TypeError, match="f must return one array, got str"):
        dualad.jacobian_sparsity(lambda v: "no", np.ones(2))


def test_a_point_of_another_shape_is_refused_by_the_object_form():
    jac = dualad.SparseJacobian(np.sin, np.ones(3))
    with pytest.raises(ValueError, match=r"shape \(3,\) and dtype float64 .* got \(4,\) and float64"):
        jac(np.ones(4))

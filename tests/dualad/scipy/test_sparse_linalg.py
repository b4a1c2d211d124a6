"""dualad.scipy.sparse.linalg: the derivative of SciPy's sparse solves with respect to b and
the matrix's entries, on a 2-D Poisson system, in every mode, against the dense inverse and
central differences of the SciPy solve (issue 37)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse
import scipy.sparse.linalg

import dualad
import mixed
import reverse
from dualad.scipy.optimize import NotConvergedError
from dualad.scipy.sparse import csr_array
from dualad.scipy.sparse.linalg import cg, gmres, minres, spsolve


def poisson(m: int) -> scipy.sparse.csr_array:
    """The 5-point Laplacian on an m x m grid (SPD, m**2 unknowns)."""
    t = scipy.sparse.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))
    return scipy.sparse.csr_array(scipy.sparse.kronsum(t, t).tocsr())


A = poisson(12)
N = A.shape[0]
B = np.sin(np.arange(N, dtype=float))
U = np.cos(np.arange(N, dtype=float))
SOLVES = {
    "spsolve": lambda a, b: spsolve(a, b),
    "cg": lambda a, b: cg(a, b, rtol=1e-13)[0],
    "gmres": lambda a, b: gmres(a, b, rtol=1e-13, restart=200, maxiter=50)[0],
    "minres": lambda a, b: minres(a, b, rtol=1e-13)[0],
}


def with_data(data):
    return csr_array((data, A.indices, A.indptr), shape=A.shape)


def loss(solve, data, b):
    return solve(with_data(data), b) @ U


@pytest.mark.parametrize("name", SOLVES)
def test_gradients_with_respect_to_b_and_the_entries(name):
    solve = SOLVES[name]
    x = np.linalg.solve(A.toarray(), B)
    lam = np.linalg.solve(A.toarray().T, U)
    gdata, gb = reverse.grad(lambda d, b: loss(solve, d, b), argnums=(0, 1))(A.data, B)
    rows = np.repeat(np.arange(N), np.diff(A.indptr))
    np.testing.assert_allclose(gb, lam, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(gdata, -lam[rows] * x[A.indices], rtol=1e-7, atol=1e-10)
    # forward mode along one direction of the entries, against central differences of the solve
    v = np.cos(3.0 * np.arange(A.nnz))
    _, t = dualad.jvp(lambda d: loss(solve, d, B), (A.data,), (v,))
    h = 1e-4
    want = (loss(solve, A.data + h * v, B) - loss(solve, A.data - h * v, B)) / (2 * h)
    np.testing.assert_allclose(t, want, rtol=1e-6)
    np.testing.assert_allclose(t, gdata @ v, rtol=1e-7)


def test_hvp_vmap_and_jit_through_spsolve():
    f = lambda d: (spsolve(with_data(d), B) ** 2).sum()  # noqa: E731
    v = np.cos(np.arange(A.nnz))
    hv = mixed.hvp(f, A.data, v)
    h = 1e-5
    want = (reverse.grad(f)(A.data + h * v) - reverse.grad(f)(A.data - h * v)) / (2 * h)
    np.testing.assert_allclose(hv, want, rtol=1e-5, atol=1e-8)
    bs = np.stack([B, U, B + U])
    np.testing.assert_allclose(dualad.vmap(lambda b: spsolve(A, b))(bs),
                               np.stack([scipy.sparse.linalg.spsolve(A, b) for b in bs]), rtol=1e-12)
    g = dualad.jit(reverse.grad(lambda b: spsolve(A, b) @ U))
    for b in (B, U):
        np.testing.assert_allclose(g(b), np.linalg.solve(A.toarray().T, U), rtol=1e-8)


def test_a_non_converged_iterative_solve_raises_when_differentiated():
    x, info = cg(A, B, maxiter=2)
    assert info > 0  # SciPy's value, as SciPy returns it
    with pytest.raises(NotConvergedError, match="info="):
        reverse.grad(lambda b: cg(A, b, maxiter=2)[0].sum())(B)


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="A must be"):
        spsolve(np.eye(2), np.ones(2))
    with pytest.raises(ValueError, match="square"):
        spsolve(A, np.ones(3))
    with pytest.raises(TypeError, match="indices"):
        csr_array((np.ones(2), np.array([0.0, 1.0]), np.array([0, 1, 2])), shape=(2, 2))
    with pytest.raises(ValueError, match="nnz"):
        csr_array((np.ones(3), np.array([0, 1]), np.array([0, 1, 2])), shape=(2, 2))


def test_a_complex_matrix_and_a_real_b_give_scipy_s_complex_solution():
    """The solution has the dtype SciPy gives it (of A's entries and b together), not b's:
    a cast back to a real b's dtype dropped the imaginary part."""
    a = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]]) * (1.0 + 0.5j)
    b = np.array([1.0, 2.0, 3.0])
    x = spsolve(scipy.sparse.csr_array(a), b)
    assert x.dtype == np.complex128
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-12)
    np.testing.assert_allclose(dualad.jacfwd(lambda b: spsolve(scipy.sparse.csr_array(a), b))(b),
                               np.linalg.inv(a), rtol=1e-12)


def test_info_under_vmap_reports_an_element_that_did_not_converge():
    """SciPy solves each element; the batch's one info was the first element's, so a batch
    whose first element converged said 0 where another's solve did not (found by review)."""
    A = scipy.sparse.csr_array(np.diag([1.0, 2.0, 3.0]))
    B = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 1.0]])  # CG converges in 1 step, then needs 3
    want = [scipy.sparse.linalg.cg(A, b, rtol=1e-12, maxiter=2)[1] for b in B]
    assert want == [0, 2]
    for batch in (B, B[::-1]):
        x, info = dualad.vmap(lambda b: cg(A, b, rtol=1e-12, maxiter=2))(batch)
        assert np.all(np.asarray(info) == 2)
    x, info = dualad.vmap(lambda b: cg(A, b, rtol=1e-12))(B)
    assert np.all(np.asarray(info) == 0)
    np.testing.assert_allclose(x, B / np.diag(A.toarray()), rtol=1e-12)


def test_spsolve_of_a_matrix_of_right_hand_sides():
    """b of shape (n, k): SciPy's solution (a vector for k = 1), each column's derivative its
    own, in b and in the entries, against the dense inverse and central differences."""
    bs = np.stack([B, U, B * U], axis=1)
    np.testing.assert_array_equal(spsolve(A, bs), scipy.sparse.linalg.spsolve(A, bs))
    assert spsolve(A, bs[:, :1]).shape == (N,)
    dense = A.toarray()
    x = np.linalg.solve(dense, bs)
    weights = np.cos(np.arange(3 * N, dtype=float)).reshape(N, 3)

    def loss_of(data, b):
        return (spsolve(with_data(data), b) * weights).sum()
    gdata, gb = reverse.grad(loss_of, argnums=(0, 1))(A.data, bs)
    lam = np.linalg.solve(dense.T, weights)
    rows = np.repeat(np.arange(N), np.diff(A.indptr))
    np.testing.assert_allclose(gb, lam, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(gdata, -(lam[rows] * x[A.indices]).sum(axis=1), rtol=1e-8, atol=1e-12)
    v, h = np.sin(np.arange(A.nnz, dtype=float)), 1e-4
    _, t = dualad.jvp(lambda d: loss_of(d, bs), (A.data,), (v,))
    want = (loss_of(A.data + h * v, bs) - loss_of(A.data - h * v, bs)) / (2 * h)
    np.testing.assert_allclose(t, want, rtol=1e-6)
    np.testing.assert_allclose(dualad.jacfwd(lambda b: spsolve(A, b))(bs[:, :1])[:, :, 0],
                               np.linalg.inv(dense), rtol=1e-9, atol=1e-12)
    assert reverse.grad(lambda b: spsolve(A, b).sum())(np.ones((N, 0))).shape == (N, 0)
    with pytest.raises(ValueError, match=r"b a matrix whose columns are of its size.*\(3, 2\)"):
        spsolve(A, np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"b a matrix whose columns are of its size.*\(144, 2, 2\)"):
        spsolve(A, np.ones((N, 2, 2)))


@pytest.mark.parametrize("name", ["cg", "gmres", "minres"])
def test_an_iterative_solve_takes_scipy_s_column_b(name):
    """SciPy's iterative solves take b of shape (N, 1) too, and return an (N,) solution."""
    solve = SOLVES[name]
    x = solve(A, B[:, None])
    assert x.shape == (N,)
    np.testing.assert_allclose(x, solve(A, B), rtol=1e-12)
    np.testing.assert_allclose(reverse.grad(lambda b: solve(A, b) @ U)(B[:, None])[:, 0],
                               np.linalg.solve(A.toarray().T, U), rtol=1e-8)


def test_b_as_scipy_takes_it_where_it_carries_no_derivative():
    """A list, or integers, for b: SciPy converts them (to float64), so do these."""
    small = scipy.sparse.csr_array(np.array([[4.0, 1.0], [1.0, 3.0]]))
    for b in ([1, 2], np.array([1, 2]), [[1, 2], [3, 4]], [1.5, 2.5]):
        x = spsolve(small, b)
        assert x.dtype == np.float64
        np.testing.assert_array_equal(x, scipy.sparse.linalg.spsolve(small.tocsc(), np.asarray(b, float)))
    for name in ("cg", "gmres", "minres"):
        np.testing.assert_allclose(SOLVES[name](small, [1, 2]), np.linalg.solve(small.toarray(), [1.0, 2.0]),
                                   rtol=1e-10)

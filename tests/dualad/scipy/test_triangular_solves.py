"""``dualad.scipy.linalg``: ``solve_triangular``, ``cho_factor`` and ``cho_solve``.

Their numbers are SciPy's, bit for bit; their derivatives, in forward and reverse mode,
equal central differences of SciPy's functions, and those of the same solve written with
``ops.linalg.solve`` on the triangle read (whose rules are compared with JAX's
elsewhere); second derivatives, ``vmap`` and ``jit`` agree with eager first derivatives
and with each other; bad input is refused by name."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.linalg
from _support import jax_peer_cases
from _support.golden import decode

import dualad
import mixed
import reverse
from dualad import ops
from dualad.scipy.linalg import cho_factor, cho_solve, solve_triangular

N = 4
RNG = np.random.default_rng(7)
A = RNG.standard_normal((N, N)) + 4.0 * np.eye(N)
SPD = A @ A.T + np.eye(N)
B1, B2 = RNG.standard_normal(N), RNG.standard_normal((N, 2))


def central(f, x, h=1e-6):
    """The Jacobian of ``f`` at ``x`` by central differences, ``f(x).shape + x.shape``."""
    columns = []
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = h
        e = e.reshape(x.shape)
        columns.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * h))
    return np.stack(columns, axis=-1).reshape(np.shape(f(x)) + x.shape)


def triangle(a, lower, unit):
    """The matrix SciPy solves with: ``a``'s triangle, ones on the diagonal where ``unit``."""
    t = np.tril(a) if lower else np.triu(a)
    return t - np.diag(np.diag(t)) + np.eye(len(a)) if unit else t


def written_out(a, b, trans, lower, unit):
    """The same solve by ``ops.linalg.solve`` on the triangle, with dualad's operations."""
    mask = np.tril(np.ones((N, N)), -1 if unit else 0)
    t = a * (mask if lower else mask.T) + (np.eye(N) if unit else 0.0)
    return ops.linalg.solve(ops.matrix_transpose(t) if trans in (1, "T", "C") else t, b)


CASES = list(itertools.product([0, 1, "T", "C"], [False, True], [False, True], [1, 2]))


@pytest.mark.parametrize("trans, lower, unit, b_ndim", CASES)
def test_solve_triangular_is_scipys_and_its_derivatives_equal_differences(trans, lower, unit, b_ndim):
    b = B1 if b_ndim == 1 else B2
    kw = {"trans": trans, "lower": lower, "unit_diagonal": unit}
    assert np.array_equal(solve_triangular(A, b, **kw), scipy.linalg.solve_triangular(A, b, **kw))
    for f, x in ((lambda a: solve_triangular(a, b, **kw), A), (lambda v: solve_triangular(A, v, **kw), b)):
        want = central(lambda z, x=x: scipy.linalg.solve_triangular(*((z, b) if x is A else (A, z)),
                                                                    **kw), x)
        np.testing.assert_allclose(dualad.jacfwd(f)(x), want, rtol=1e-7, atol=1e-8)
        np.testing.assert_allclose(reverse.jacrev(f)(x), want, rtol=1e-7, atol=1e-8)
    got = reverse.grad(lambda a, v: (solve_triangular(a, v, **kw) ** 2).sum(), argnums=(0, 1))(A, b)
    ref = reverse.grad(lambda a, v: (written_out(a, v, trans, lower, unit) ** 2).sum(),
                       argnums=(0, 1))(A, b)
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got[1], ref[1], rtol=1e-12, atol=1e-14)
    outside = ~np.tril(np.ones((N, N), bool), -1 if unit else 0)
    assert np.all(got[0][outside if lower else outside.T] == 0)  # entries SciPy never reads


def factor_matrix(c, lower):
    """``A`` of a Cholesky factor ``c``, from its triangle, with dualad's operations."""
    f = c * (np.tril(np.ones((N, N))) if lower else np.triu(np.ones((N, N))))
    return f @ ops.matrix_transpose(f) if lower else ops.matrix_transpose(f) @ f


@pytest.mark.parametrize("lower, b_ndim", list(itertools.product([False, True], [1, 2])))
def test_cho_solve_is_scipys_and_its_derivatives_equal_differences(lower, b_ndim):
    b = B1 if b_ndim == 1 else B2
    c = scipy.linalg.cho_factor(SPD, lower=lower)[0]
    assert np.array_equal(cho_solve((c, lower), b), scipy.linalg.cho_solve((c, lower), b))
    for f, x in ((lambda m: cho_solve((m, lower), b), c), (lambda v: cho_solve((c, lower), v), b)):
        want = central(lambda z, x=x: scipy.linalg.cho_solve(((z, lower) if x is c else (c, lower)),
                                                             b if x is c else z), x)
        np.testing.assert_allclose(dualad.jacfwd(f)(x), want, rtol=1e-7, atol=1e-8)
        np.testing.assert_allclose(reverse.jacrev(f)(x), want, rtol=1e-7, atol=1e-8)
    got = reverse.grad(lambda m, v: (cho_solve((m, lower), v) ** 2).sum(), argnums=(0, 1))(c, b)
    ref = reverse.grad(lambda m, v: (ops.linalg.solve(factor_matrix(m, lower), v) ** 2).sum(),
                       argnums=(0, 1))(c, b)
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-11, atol=1e-14)
    np.testing.assert_allclose(got[1], ref[1], rtol=1e-11, atol=1e-14)


@pytest.mark.parametrize("lower", [False, True])
def test_cho_factor_is_scipys_and_differentiates_as_cholesky(lower):
    c, flag = cho_factor(SPD, lower=lower)
    want_c, want_flag = scipy.linalg.cho_factor(SPD, lower=lower)
    assert np.array_equal(c, want_c) and flag is want_flag
    # along symmetric directions (the convention: the perturbation symmetrized), differences
    for _ in range(3):
        e = RNG.standard_normal((N, N))
        e = e + e.T
        h = 1e-6
        want = (scipy.linalg.cho_factor(SPD + h * e, lower=lower)[0]
                - scipy.linalg.cho_factor(SPD - h * e, lower=lower)[0]) / (2 * h)
        np.testing.assert_allclose(dualad.jvp(lambda a: cho_factor(a, lower=lower)[0], (SPD,), (e,))[1],
                                   want, rtol=1e-7, atol=1e-8)
    # the factor's triangle: cholesky's derivative; the other triangle: the input's entries
    jac = dualad.jacfwd(lambda a: cho_factor(a, lower=lower)[0])(SPD)
    chol = dualad.jacfwd(lambda a: ops.linalg.cholesky(a, upper=not lower))(SPD)
    inside = np.tril(np.ones((N, N), bool)) if lower else np.triu(np.ones((N, N), bool))
    np.testing.assert_allclose(jac[inside], chol[inside], rtol=1e-13, atol=1e-15)
    copied = np.einsum("ik,jl->ijkl", np.eye(N), np.eye(N))  # d c_ij / d a_kl
    np.testing.assert_array_equal(jac[~inside], copied[~inside])
    g = RNG.standard_normal((N, N))
    np.testing.assert_allclose(reverse.vjp(lambda a: cho_factor(a, lower=lower)[0], SPD)[1](g)[0],
                               np.tensordot(g, jac, axes=2), rtol=1e-12, atol=1e-14)


def energy(a, b):
    """``b^T A^-1 b`` through the Cholesky factor."""
    return b @ cho_solve(cho_factor(a), b)


def test_second_derivatives_of_a_factor_and_its_solve_equal_the_written_out_ones():
    v = RNG.standard_normal((N, N))
    v = v + v.T  # a symmetric direction, as the factor's convention reads it
    got = mixed.hvp(lambda a: energy(a, B1), SPD, v)
    want = mixed.hvp(lambda a: B1 @ ops.linalg.solve((a + ops.matrix_transpose(a)) / 2, B1), SPD, v)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    hess = dualad.hessian(lambda b: energy(SPD, b))(B1)
    np.testing.assert_allclose(hess, 2 * np.linalg.inv(SPD), rtol=1e-12)
    tri = dualad.jacfwd(reverse.grad(lambda a: solve_triangular(a, B1, lower=True).sum()))(A)
    np.testing.assert_allclose(tri, central(reverse.grad(lambda a: solve_triangular(
        a, B1, lower=True).sum()), A), rtol=1e-6, atol=1e-8)


def test_vmap_and_jit_equal_the_eager_loop():
    bs = RNG.standard_normal((5, N))
    grad = reverse.grad(lambda a, b: energy(a, b) + solve_triangular(a, b, trans=1).sum())
    loop = np.stack([grad(SPD, b) for b in bs])
    np.testing.assert_allclose(dualad.vmap(grad, in_axes=(None, 0))(SPD, bs), loop, rtol=1e-13)
    compiled = dualad.jit(grad)
    for _ in range(3):
        for b in bs:
            np.testing.assert_allclose(compiled(SPD, b), grad(SPD, b), rtol=1e-13)
    assert compiled.stats["traces"] == 1


def test_float32_stays_float32_and_empty_systems_solve():
    a32, b32 = SPD.astype(np.float32), B1.astype(np.float32)
    x = cho_solve(cho_factor(a32), b32)
    assert x.dtype == np.float32
    g = reverse.grad(lambda b: solve_triangular(a32, b).sum())(b32)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, scipy.linalg.solve_triangular(SPD, np.ones(N), trans=1),
                               rtol=1e-5)
    empty = np.zeros((0, 0))
    assert solve_triangular(empty, np.zeros(0)).shape == (0,)
    assert reverse.grad(lambda a: solve_triangular(a, np.zeros(0)).sum())(empty).shape == (0, 0)
    assert cho_solve(cho_factor(empty), np.zeros(0)).shape == (0,)


def test_what_scipy_accepts_is_accepted():
    """Lists, integers (as float64), ``trans=None``, a list ``[c, lower]``; and with
    ``check_finite=False`` SciPy does not look."""
    ints = np.array([[2, 0], [1, 4]])
    want = scipy.linalg.solve_triangular(ints, [2, 9], lower=True)
    np.testing.assert_array_equal(solve_triangular(ints.tolist(), [2, 9], lower=True), want)
    np.testing.assert_array_equal(solve_triangular(A, B1, trans=None), solve_triangular(A, B1))
    c = cho_factor(SPD)
    np.testing.assert_array_equal(cho_solve(list(c), B1), scipy.linalg.cho_solve(c, B1))
    x = solve_triangular(A, np.array([1.0, np.nan, 0.0, 0.0]), check_finite=False)
    assert np.isnan(x).any()


def test_a_compiled_function_checks_finiteness_at_every_call():
    compiled = dualad.jit(lambda a, b: cho_solve(cho_factor(a), b) + solve_triangular(a, b))
    for _ in range(3):
        np.testing.assert_allclose(compiled(SPD, B1), cho_solve(cho_factor(SPD), B1)
                                   + solve_triangular(SPD, B1), rtol=1e-14)
    bad = SPD.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="must not contain infs or NaNs"):
        compiled(bad, B1)
    assert compiled.stats["traces"] == 1


def test_bad_input_is_refused_by_name():
    with pytest.raises(ValueError, match="a must be a square matrix"):
        solve_triangular(np.ones((2, 3)), np.ones(2))
    with pytest.raises(ValueError, match=r"b must have shape \(4,\) or \(4, k\)"):
        solve_triangular(A, np.ones(3))
    with pytest.raises(ValueError, match="trans must be"):
        solve_triangular(A, B1, trans="X")
    with pytest.raises(ValueError, match="must not contain infs or NaNs"):  # SciPy's check
        solve_triangular(A, np.array([1.0, np.nan, 0.0, 0.0]))
    with pytest.raises(NotImplementedError, match="a is complex"):
        solve_triangular(A + 1j, B1)
    with pytest.raises(TypeError, match="c_and_lower must be the pair"):
        cho_solve(SPD, B1)
    with pytest.raises(np.linalg.LinAlgError):
        solve_triangular(np.triu(np.ones((3, 3))) - np.diag([0.0, 1.0, 0.0]), np.ones(3))
    with pytest.raises(np.linalg.LinAlgError):
        cho_factor(-SPD)


def _jax_case(section, key):
    case = jax_peer_cases.recorded()[section][key]
    return {name: decode(value) for name, value in case.items()}


def _assert_jaxs(got, want, rtol, atol, name):
    """``got`` has JAX's shape and dtype, and its values within tolerance."""
    got = np.asarray(got)
    assert (got.shape, got.dtype) == (want.shape, want.dtype), \
        f"{name}: shape {got.shape} and dtype {got.dtype}, JAX's {want.shape} and {want.dtype}"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=name)


@pytest.mark.parametrize("trans, lower, unit, b_ndim", jax_peer_cases.TRIANGULAR_CASES)
def test_solve_triangular_equals_jaxs(trans, lower, unit, b_ndim):
    case = _jax_case("triangular", jax_peer_cases.triangular_id(trans, lower, unit, b_ndim))
    kw = {"trans": trans, "lower": lower, "unit_diagonal": unit}
    a, b, w = case["a"], case["b"], case["w"]
    x, jvp = dualad.jvp(lambda a, b: solve_triangular(a, b, **kw), (a, b), (case["da"], case["db"]))
    grads = reverse.grad(lambda a, b: (solve_triangular(a, b, **kw) ** 2 * w).sum(), argnums=(0, 1))(a, b)
    for got, name in ((x, "x"), (jvp, "jvp"), (grads[0], "grad_a"), (grads[1], "grad_b")):
        _assert_jaxs(got, case[name], 1e-12, 1e-14, name)


@pytest.mark.parametrize("lower", [False, True])
def test_cho_solve_of_cho_factor_equals_jaxs(lower):
    case = _jax_case("cholesky_solve", str(lower))
    a, b, w = case["a"], case["b"], case["w"]

    def solution(a, b):
        return cho_solve(cho_factor(a, lower=lower), b)
    x, jvp = dualad.jvp(solution, (a, b), (case["da"], case["db"]))  # da symmetric
    grads = reverse.grad(lambda a, b: (solution(a, b) ** 2 * w).sum(), argnums=(0, 1))(a, b)
    # JAX's cho_factor differentiates the one triangle it reads, dualad's as cholesky does,
    # the perturbation symmetrized: they agree along symmetric directions, and dualad's
    # gradient is the symmetric part of JAX's
    want_a = (case["grad_a"] + case["grad_a"].T) / 2
    assert not np.allclose(case["grad_a"], case["grad_a"].T)  # the two conventions differ
    for got, want, name in ((x, case["x"], "x"), (jvp, case["jvp"], "jvp"), (grads[0], want_a, "grad_a"),
                            (grads[1], case["grad_b"], "grad_b")):
        _assert_jaxs(got, want, 1e-11, 1e-13, name)

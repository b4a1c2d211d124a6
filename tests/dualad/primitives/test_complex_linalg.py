"""Complex ``svd``, ``eigh``/``eigvalsh`` and the norms through ``svd`` (issue 26).

They raised NotImplementedError ("complex matrices are not supported yet") on
complex input, derivative or not. Their values are NumPy's; their derivatives,
of functions that depend on no singular vector's or eigenvector's phase, match
central finite differences (real functions of the real and imaginary parts, in
forward and reverse mode, to second order) and JAX's numbers, recorded in
complex_linalg_jax.json by make_complex_linalg_jax.py. Every mode, backend and
dtype runs the table's cases (``svd_complex``, ``eigh_complex``, ... in
``tests/_support/cases.py``).
"""

from __future__ import annotations

import json
import pathlib
import sys

import numpy as np
import pytest

import dualad
import reverse
from dualad import ops
from dualad.testing import check_grads

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from make_complex_linalg_jax import functions  # noqa: E402

la = ops.linalg
GOLDEN = json.loads((pathlib.Path(__file__).parent / "complex_linalg_jax.json").read_text())


def _complex(parts):
    return np.asarray(parts[0]) + 1j * np.asarray(parts[1])


def _draw(shape, seed, dtype=np.complex128):
    r = np.random.default_rng(seed)
    return (r.standard_normal(shape) + 1j * r.standard_normal(shape)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64], ids=["c128", "c64"])
@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4), (2, 3, 3)], ids=str)
def test_values_are_numpy_s(shape, dtype):
    a = _draw(shape, 1, dtype)
    for ours, theirs in zip(la.svd(a, full_matrices=False), np.linalg.svd(a, full_matrices=False)):
        assert ours.dtype == theirs.dtype
        np.testing.assert_array_equal(ours, theirs)
    if shape[-1] == shape[-2]:
        for uplo in ("L", "U"):
            for ours, theirs in zip(la.eigh(a, uplo), np.linalg.eigh(a, uplo)):
                assert ours.dtype == theirs.dtype
                np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_allclose(la.matrix_norm(a, ord="nuc"), np.linalg.matrix_norm(a, ord="nuc"), rtol=1e-6)


def _cplx(x, y):
    return ops.add(x, ops.multiply(y, 1j))


def _svd_view(x, y):
    u, s, vh = la.svd(_cplx(x, y), full_matrices=False)
    rec = (u * ops.expand_dims(ops.sin(s), -2)) @ vh
    return s, ops.real(u * ops.conj(u)), ops.real(vh * ops.conj(vh)), ops.real(rec), ops.imag(rec)


def _eigh_view(x, y, uplo):
    w, v = la.eigh(_cplx(x, y), UPLO=uplo)  # not Hermitian: the UPLO triangle is read
    rec = (v * ops.expand_dims(ops.sin(w), -2)) @ ops.conj(ops.matrix_transpose(v))
    return w, ops.real(v * ops.conj(v)), ops.real(rec), ops.imag(rec)


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["c128", "c64"])
@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4), (2, 3, 3)], ids=str)
def test_svd_and_norms_match_finite_differences(shape, dtype):
    a = _draw(shape, 2)
    x, y = a.real.astype(dtype), a.imag.astype(dtype)
    order = 2 if dtype == np.float64 else 1
    check_grads(_svd_view, (x, y), order=order)
    check_grads(lambda x, y: la.matrix_norm(_cplx(x, y), ord="nuc"), (x, y), order=order)
    check_grads(lambda x, y: la.matrix_norm(_cplx(x, y), ord=2), (x, y), order=order)
    check_grads(lambda x, y: la.svdvals(_cplx(x, y)), (x, y), order=order)


@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["c128", "c64"])
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)], ids=str)
def test_eigh_matches_finite_differences(shape, dtype, uplo):
    a = _draw(shape, 3)
    x, y = a.real.astype(dtype), a.imag.astype(dtype)
    order = 2 if dtype == np.float64 else 1
    check_grads(lambda x, y: _eigh_view(x, y, uplo), (x, y), order=order)
    check_grads(lambda x, y: la.eigvalsh(_cplx(x, y), UPLO=uplo), (x, y), order=order)


def test_eigh_reads_neither_the_other_triangle_nor_the_diagonal_s_imaginary_part():
    """As LAPACK: a perturbation there changes nothing, so its derivative is 0."""
    a = _draw((4, 4), 4)
    unread = np.triu(np.ones((4, 4)), 1) + 1j * np.triu(np.ones((4, 4)))
    g = reverse.grad(lambda m: ops.sum(ops.sin(la.eigvalsh(m))) + ops.sum(ops.real(la.eigh(m)[1]) ** 2))(a)
    assert not np.any(g.real * unread.real) and not np.any(g.imag * unread.imag)
    _, t = dualad.jvp(la.eigvalsh, (a,), (unread,))
    np.testing.assert_array_equal(t, 0.0)


@pytest.mark.parametrize("case", GOLDEN["cases"], ids=lambda c: f"{c['name']}-{np.shape(c['a'][0])}")
def test_derivatives_match_jax(case):
    f = functions(ops, la)[case["name"]]
    a, t = _complex(case["a"]), _complex(case["t"])
    w = [np.asarray(x) for x in case["w"]]
    value, tangent = dualad.jvp(lambda m: f(m, w), (a,), (t,))
    assert np.shape(value) == np.shape(case["value"]) and np.shape(tangent) == np.shape(case["jvp"])
    np.testing.assert_allclose(value, case["value"], rtol=1e-10)
    np.testing.assert_allclose(tangent, case["jvp"], rtol=1e-9, atol=1e-12)
    g = reverse.grad(lambda m: f(m, w))(a)
    assert g.shape == _complex(case["grad"]).shape and g.dtype == a.dtype
    np.testing.assert_allclose(g, _complex(case["grad"]), rtol=1e-9, atol=1e-12)
    # forward over reverse: the directional derivative of the gradient, against its central differences
    _, hv = dualad.jvp(reverse.grad(lambda m: f(m, w)), (a,), (t,))
    h = 1e-6
    fd = (reverse.grad(lambda m: f(m, w))(a + h * t) - reverse.grad(lambda m: f(m, w))(a - h * t)) / (2 * h)
    np.testing.assert_allclose(hv, fd, rtol=1e-5, atol=1e-6)


def test_second_derivative_at_a_diagonal_matrix():
    """The rules' ``where(m == 0, 0, f * m)`` (meant for f = inf at ties) also dropped the
    derivative of ``f * m`` where m is exactly 0 but its derivative is not: the Hessian of
    ``sum(U * U * w)`` at a diagonal 3 x 2 matrix was off by 0.21 (real svd)."""
    w = np.random.default_rng(0).standard_normal((3, 2))
    base = np.array([[3.0, 0.0], [0.0, 1.0], [0.0, 0.0]])

    def f(z):
        u = la.svd(ops.reshape(z, (3, 2)) + base, full_matrices=False)[0]
        return ops.sum(u * u * w)
    z, e = np.zeros(6), 1e-5
    fd = np.stack([(dualad.jacfwd(f)(z + e * d) - dualad.jacfwd(f)(z - e * d)) / (2 * e) for d in np.eye(6)])
    np.testing.assert_allclose(dualad.hessian(f)(z), fd, atol=1e-8)

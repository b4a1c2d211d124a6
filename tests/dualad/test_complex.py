"""Complex inputs: right values, and one convention for derivatives.

The functional API follows JAX: for a real-valued ``f`` of ``z = x + i y``,
``grad f = df/dx - i df/dy``. Each check below computes that from central
finite differences in the real coordinates, and forward mode against the
directional derivative along a complex tangent. Where JAX is installed its
numbers are compared too.
"""

from __future__ import annotations

import numpy as np
import pytest

import dualad
import reverse
from dualad import ops

Z = np.array([1.0 + 2.0j, -3.0 + 0.5j, 0.25 - 1.5j])
T = np.array([0.5 - 1.0j, 2.0 + 0.25j, -1.0 + 1.0j])

# real-valued functions of a complex vector
REAL_VALUED = {
    "real": lambda z: ops.sum(ops.real(z) ** 3),
    "imag": lambda z: ops.sum(ops.sin(ops.imag(z))),
    "abs": lambda z: ops.sum(ops.abs(z) ** 3),
    "abs_numpy": lambda z: np.sum(np.abs(z) * np.real(z)),
    "angle": lambda z: ops.sum(ops.angle(z) * ops.imag(z)),
    "conj_product": lambda z: ops.sum(ops.real(ops.conj(z) * z * z)),
    "var": lambda z: ops.var(z),
    "std": lambda z: np.std(z),
    "norm": lambda z: np.linalg.norm(z),
    "holomorphic_then_real": lambda z: ops.sum(ops.real(ops.exp(z) * ops.sin(z))),
}


def _fd_directional(f, z, t, h=1e-6):
    return (f(z + h * t) - f(z - h * t)) / (2 * h)


def _fd_jax_grad(f, z, h=1e-6):
    """df/dx - i df/dy, entry by entry, by central differences."""
    out = np.zeros_like(z)
    for k in range(z.size):
        e = np.zeros_like(z)
        e[k] = 1.0
        dx = (f(z + h * e) - f(z - h * e)) / (2 * h)
        dy = (f(z + 1j * h * e) - f(z - 1j * h * e)) / (2 * h)
        out[k] = dx - 1j * dy
    return out


@pytest.mark.parametrize("name", sorted(REAL_VALUED))
def test_values_match_numpy(name):
    f = REAL_VALUED[name]
    plain = {"real": lambda z: np.sum(np.real(z) ** 3), "imag": lambda z: np.sum(np.sin(np.imag(z))),
             "abs": lambda z: np.sum(np.abs(z) ** 3), "angle": lambda z: np.sum(np.angle(z) * np.imag(z)),
             "conj_product": lambda z: np.sum(np.real(np.conj(z) * z * z)), "var": np.var}.get(name)
    if plain is not None:
        np.testing.assert_allclose(f(Z), plain(Z), rtol=1e-12)
    assert np.isrealobj(np.asarray(f(Z))), f"{name} of complex input returned a complex value"


@pytest.mark.parametrize("name", sorted(REAL_VALUED))
def test_forward_mode_is_the_directional_derivative(name):
    f = REAL_VALUED[name]
    _, t = dualad.jvp(f, (Z,), (T,))
    np.testing.assert_allclose(t, _fd_directional(f, Z, T), rtol=1e-6, atol=1e-8)
    assert np.isrealobj(np.asarray(t))


@pytest.mark.parametrize("name", sorted(REAL_VALUED))
def test_reverse_mode_follows_jax_convention(name):
    f = REAL_VALUED[name]
    g = reverse.grad(f)(Z)
    np.testing.assert_allclose(g, _fd_jax_grad(f, Z), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", sorted(REAL_VALUED))
def test_hvp_of_a_real_input_through_complex_code(name):
    """A real input that passes through complex values gets a real gradient and H v."""
    import mixed
    f = REAL_VALUED[name]
    x = np.array([0.3, -1.1, 0.7])
    v = np.array([1.0, 0.5, -2.0])
    g = lambda x: f(x * (1.0 + 0.5j) + 0.25j)  # noqa: E731
    grad, hv = mixed.grad_and_hvp(g, x, v)
    assert np.isrealobj(grad) and np.isrealobj(hv)
    h = 1e-5
    fd = (reverse.grad(g)(x + h * v) - reverse.grad(g)(x - h * v)) / (2 * h)
    np.testing.assert_allclose(hv, fd, rtol=1e-5, atol=1e-6)


def test_holomorphic_forward_mode_is_f_prime_times_t():
    _, t = dualad.jvp(lambda z: ops.exp(z) * ops.sin(z), (Z,), (T,))
    want = (np.exp(Z) * np.sin(Z) + np.exp(Z) * np.cos(Z)) * T
    np.testing.assert_allclose(t, want, rtol=1e-12)


def test_numpy_real_and_conj_are_no_longer_the_identity():
    out, t = dualad.jvp(lambda z: np.real(np.conjugate(z) * 1j), (Z,), (T,))
    np.testing.assert_allclose(out, np.real(np.conjugate(Z) * 1j))
    np.testing.assert_allclose(t, np.real(np.conjugate(T) * 1j))


@pytest.mark.parametrize("name", ["cholesky", "eigh", "qr", "svd", "slogdet"])
def test_linalg_rules_written_for_real_matrices_refuse_complex_input(name):
    a = np.array([[2.0, 1j], [-1j, 3.0]])
    with pytest.raises(NotImplementedError, match=f"{name}: complex matrices are not supported"):
        dualad.jvp(lambda m: getattr(ops.linalg, name)(m), (a,), (np.ones((2, 2)) + 0j,))


@pytest.mark.parametrize("name", sorted(REAL_VALUED))
def test_against_jax(name):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    f = REAL_VALUED[name]
    if name in ("abs_numpy", "std", "norm"):  # NumPy spellings: the same functions in jnp
        jf = {"abs_numpy": lambda z: jnp.sum(jnp.abs(z) * jnp.real(z)), "std": jnp.std,
              "norm": jnp.linalg.norm}[name]
    else:
        ops_to_jnp = {"real": lambda z: jnp.sum(jnp.real(z) ** 3),
                      "imag": lambda z: jnp.sum(jnp.sin(jnp.imag(z))),
                      "abs": lambda z: jnp.sum(jnp.abs(z) ** 3),
                      "angle": lambda z: jnp.sum(jnp.angle(z) * jnp.imag(z)),
                      "conj_product": lambda z: jnp.sum(jnp.real(jnp.conj(z) * z * z)),
                      "var": jnp.var,
                      "holomorphic_then_real": lambda z: jnp.sum(jnp.real(jnp.exp(z) * jnp.sin(z)))}
        jf = ops_to_jnp[name]
    np.testing.assert_allclose(reverse.grad(f)(Z), np.asarray(jax.grad(jf)(jnp.asarray(Z))), rtol=1e-10)


def test_a_real_input_joined_with_complex_values_gets_a_real_gradient():
    """concatenate (a linear entry) used to hand the complex cotangent back to the real input."""
    x = np.array([1.0, 2.0])
    f = lambda x: ops.real(ops.sum(ops.concatenate([x, Z]) * (1.0 + 2.0j)))  # noqa: E731
    g = reverse.grad(f)(x)
    assert np.isrealobj(g)
    np.testing.assert_allclose(g, [1.0, 1.0])

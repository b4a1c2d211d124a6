"""Complex inputs: right values, and one convention for derivatives.

The functional API follows JAX: for a real-valued ``f`` of ``z = x + i y``,
``grad f = df/dx - i df/dy``. Each check below computes that from central
finite differences in the real coordinates, and forward mode against the
directional derivative along a complex tangent. JAX's numbers, recorded by
tests/make_jax_peer_golden.py, are compared too.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from _support.golden import assert_close, decode
from _support.jax_peer_cases import COMPLEX_POINT, THROUGH_NUMPY, recorded
from _support.jax_peer_cases import REAL_VALUED as SHARED_REAL_VALUED

import dualad
import reverse
from dualad import ops

Z = COMPLEX_POINT
T = np.array([0.5 - 1.0j, 2.0 + 0.25j, -1.0 + 1.0j])

# real-valued functions of a complex vector, on dualad.ops or through NumPy's dispatch
REAL_VALUED = {name: functools.partial(f, xp=np if name in THROUGH_NUMPY else ops)
               for name, f in SHARED_REAL_VALUED.items()}


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
    if name not in THROUGH_NUMPY:  # the same formula on NumPy's arrays
        np.testing.assert_allclose(f(Z), SHARED_REAL_VALUED[name](Z, xp=np), rtol=1e-12)
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


@pytest.mark.parametrize("name", ["cholesky", "qr", "slogdet"])
def test_linalg_rules_written_for_real_matrices_refuse_complex_input(name):
    a = np.array([[2.0, 1j], [-1j, 3.0]])
    with pytest.raises(NotImplementedError, match=f"{name}: complex matrices are not supported"):
        dualad.jvp(lambda m: getattr(ops.linalg, name)(m), (a,), (np.ones((2, 2)) + 0j,))


@pytest.mark.parametrize("name", sorted(REAL_VALUED))
def test_against_jax(name):
    """JAX's gradients (its convention, df/dx - i df/dy), recorded by tests/make_jax_peer_golden.py."""
    golden = recorded()["complex"]
    assert_close(reverse.grad(REAL_VALUED[name])(decode(golden["z"])), golden["grad"][name], rtol=1e-10,
                 err_msg=name)


def test_a_real_input_joined_with_complex_values_gets_a_real_gradient():
    """concatenate (a linear entry) used to hand the complex cotangent back to the real input."""
    x = np.array([1.0, 2.0])
    f = lambda x: ops.real(ops.sum(ops.concatenate([x, Z]) * (1.0 + 2.0j)))  # noqa: E731
    g = reverse.grad(f)(x)
    assert np.isrealobj(g)
    np.testing.assert_allclose(g, [1.0, 1.0])


# -- the Tensor API speaks PyTorch's convention -----------------------------------------------
def _fd_pytorch_grad(f, z):
    """PyTorch's ``.grad`` of a real-valued f: df/dx + i df/dy, the conjugate of JAX's."""
    return np.conj(_fd_jax_grad(f, z))


@pytest.mark.parametrize("name", sorted(REAL_VALUED))
def test_tensor_grad_follows_pytorch_convention(name):
    f = REAL_VALUED[name]
    z = reverse.Tensor(Z.copy(), requires_grad=True)
    f(z).backward()
    np.testing.assert_allclose(z.grad, _fd_pytorch_grad(f, Z), rtol=1e-6, atol=1e-8)
    x = reverse.Tensor(Z.copy(), requires_grad=True)
    (g,) = reverse.gradients(f(x), [x])
    np.testing.assert_allclose(g, z.grad, rtol=1e-14)


def test_hooks_and_given_cotangents_speak_pytorch_convention():
    z = reverse.Tensor(Z.copy(), requires_grad=True)
    seen = []
    w = z * (2.0 - 1.0j)
    w.register_hook(lambda g: seen.append(g))
    # backward(gradient) of w = a z with v: PyTorch's z.grad is conj(a) v
    v = np.array([1.0 + 1.0j, 0.5, -2.0j])
    w.backward(v)
    np.testing.assert_allclose(seen[0], v)
    np.testing.assert_allclose(z.grad, np.conj(2.0 - 1.0j) * v)


def test_sgd_on_complex_parameters_goes_downhill():
    """With JAX's convention as .grad, SGD would climb in the imaginary parts."""
    target = np.array([0.5 + 0.5j, -1.0j])
    w = reverse.Tensor(np.array([1.0 + 2.0j, 3.0 - 1.0j]), requires_grad=True)
    opt = reverse.optim.SGD([w], lr=0.1)
    for _ in range(60):
        opt.zero_grad()
        loss = ops.sum(ops.abs(w - target) ** 2)
        loss.backward()
        opt.step()
    np.testing.assert_allclose(w.value, target, atol=1e-4)


def test_grad_of_a_complex_output_raises_unless_holomorphic():
    with pytest.raises(TypeError, match="real-valued output.*holomorphic=True"):
        reverse.grad(lambda z: ops.sum(z * z))(Z)
    np.testing.assert_allclose(reverse.grad(lambda z: ops.sum(ops.sin(z)), holomorphic=True)(Z), np.cos(Z))
    with pytest.raises(TypeError, match="complex inputs"):
        reverse.grad(lambda x: ops.sum(x * 1j), holomorphic=True)(np.ones(2))
    with pytest.raises(RuntimeError, match="real scalar outputs"):
        ops.sum(reverse.Tensor(Z.copy(), requires_grad=True) * 2.0).backward()


def test_holomorphic_grad_matches_jax():
    golden = recorded()["complex"]
    ours = reverse.grad(lambda z: ops.sum(ops.exp(z) * z), holomorphic=True)(decode(golden["z"]))
    assert_close(ours, golden["holomorphic"], rtol=1e-12)


def test_python_complex_scalars_are_complex_in_ops():
    """``ops.conj(1+2j)`` returned 1+2j and ``ops.imag(1+2j)`` 0.0: a Python complex
    was taken for a real number."""
    from dualad import ops
    assert ops.conj(1 + 2j) == 1 - 2j
    assert ops.imag(1 + 2j) == 2.0 and ops.real(1 + 2j) == 1.0
    assert ops.angle(1j) == pytest.approx(np.pi / 2)


@pytest.mark.parametrize("kind", [complex, np.complex128])
def test_forward_over_reverse_at_a_complex_number(kind):
    """At a Python complex the tangent was 0j: the cast of a real cotangent to the input's
    complex type read the number out of the Dual. JAX: 0.1767767 + 0.1767767j."""
    primal, tangent = dualad.jvp(lambda z: reverse.grad(np.abs)(z), (kind(1 + 1j),), (kind(1 + 0.5j),))
    np.testing.assert_allclose(primal, (1 - 1j) / np.sqrt(2), rtol=1e-15)
    np.testing.assert_allclose(tangent, 0.1767766952966369 + 0.1767766952966369j, rtol=1e-12)

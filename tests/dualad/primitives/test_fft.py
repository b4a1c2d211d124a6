"""``numpy.fft`` on dualad values: NumPy's dispatch, every mode, and JAX's numbers."""

from __future__ import annotations

import numpy as np
import pytest

import dualad
import dualad.testing
import mixed
import reverse
from dualad import Dual, ops

TRANSFORMS = [
    ("fft", {}), ("ifft", {}), ("fft", {"n": 5}), ("fft", {"n": 11, "norm": "ortho"}),
    ("rfft", {}), ("rfft", {"n": 7, "axis": 0}), ("irfft", {}), ("irfft", {"n": 9, "norm": "forward"}),
    ("fft2", {}), ("ifft2", {"s": (2, 6)}), ("fftn", {"axes": (0,)}), ("rfftn", {}),
    ("irfftn", {}), ("rfft2", {"norm": "ortho"}), ("irfft2", {"s": (3, 6)}),
    ("hfft", {}), ("hfft", {"n": 7, "norm": "ortho"}), ("ihfft", {}), ("ihfft", {"n": 5, "axis": 0}),
]


def _input(name):
    x = np.random.default_rng(0).normal(size=(3, 8))
    return np.fft.rfft(x) if name.startswith(("irfft", "hfft")) else x


@pytest.mark.parametrize("name, kw", TRANSFORMS, ids=[f"{n}-{k}" for n, k in TRANSFORMS])
def test_numpy_fft_dispatches_and_its_values_match(name, kw):
    x = _input(name)
    d = getattr(np.fft, name)(Dual(x, np.ones_like(x)), **kw)
    np.testing.assert_allclose(d.primal, getattr(np.fft, name)(x, **kw), atol=1e-12)
    np.testing.assert_allclose(d.tangent, getattr(np.fft, name)(np.ones_like(x), **kw), atol=1e-12)


@pytest.mark.parametrize("name, kw", TRANSFORMS, ids=[f"{n}-{k}" for n, k in TRANSFORMS])
def test_gradients_match_jax(name, kw):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    x = _input(name)
    theirs = jax.grad(lambda z: jnp.sum(jnp.abs(getattr(jnp.fft, name)(z, **kw)) ** 2))(jnp.asarray(x))
    ours = reverse.grad(lambda z: ops.sum(ops.abs(getattr(np.fft, name)(z, **kw)) ** 2))(x)
    np.testing.assert_allclose(ours, np.asarray(theirs), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("norm", [None, "backward", "ortho", "forward"])
@pytest.mark.parametrize("n, axis", [(None, -1), (5, -1), (8, 0), (None, 0)])
def test_hfft_and_ihfft_match_numpy_for_every_norm(norm, n, axis):
    """NumPy swaps the norm: hfft is irfft(conj(a)) with the dual normalization."""
    rng = np.random.default_rng(3)
    a = rng.normal(size=(4, 6)) + 1j * rng.normal(size=(4, 6))
    x = rng.normal(size=(4, 6))
    np.testing.assert_allclose(ops.fft.hfft(a, n, axis, norm), np.fft.hfft(a, n, axis, norm), atol=1e-12)
    np.testing.assert_allclose(ops.fft.ihfft(x, n, axis, norm), np.fft.ihfft(x, n, axis, norm), atol=1e-12)
    back = ops.fft.hfft(ops.fft.ihfft(x, axis=axis, norm=norm), x.shape[axis], axis, norm)
    np.testing.assert_allclose(back, x, atol=1e-12)


def test_a_spectral_loss_in_every_mode_and_float32():
    """A smoothness penalty computed in Fourier space: H v against the dense Hessian."""
    w = np.fft.rfftfreq(16) ** 2

    def f(x):
        return ops.sum(w * ops.abs(np.fft.rfft(np.sin(x))) ** 2)

    x = np.random.default_rng(1).normal(size=16)
    v = np.random.default_rng(2).normal(size=16)
    g = reverse.grad(f)(x)
    np.testing.assert_allclose(dualad.jacfwd(f)(x), g, rtol=1e-10)
    np.testing.assert_allclose(mixed.hvp(f, x, v), mixed.hessian(f)(x) @ v, rtol=1e-8)
    dualad.testing.check_grads(f, (x,), order=2, modes=("fwd", "rev"))
    g32 = reverse.grad(f)(x.astype(np.float32))
    assert g32.dtype == np.float32
    np.testing.assert_allclose(g32, g, rtol=1e-3, atol=1e-4)


def test_fftshift_is_differentiable():
    x = np.arange(6.0)
    y, t = dualad.jvp(np.fft.fftshift, (x,), (x,))
    np.testing.assert_array_equal(y, np.fft.fftshift(x))
    np.testing.assert_array_equal(np.fft.ifftshift(Dual(y, t)).tangent, x)


def test_bad_norm_is_refused_by_name():
    with pytest.raises(ValueError, match="norm"):
        ops.fft.fft(np.ones(4), norm="sideways")

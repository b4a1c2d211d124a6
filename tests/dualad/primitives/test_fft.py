"""``numpy.fft`` on dualad values: NumPy's dispatch, every mode, and JAX's numbers."""

from __future__ import annotations

import numpy as np
import pytest
from _support.golden import assert_close, decode
from _support.jax_peer_cases import FFT_TRANSFORMS as TRANSFORMS
from _support.jax_peer_cases import fft_id, fft_input, recorded

import dualad
import dualad.testing
import mixed
import reverse
from dualad import Dual, ops


@pytest.mark.parametrize("name, kw", TRANSFORMS, ids=[fft_id(n, k) for n, k in TRANSFORMS])
def test_numpy_fft_dispatches_and_its_values_match(name, kw):
    x = fft_input(name)
    d = getattr(np.fft, name)(Dual(x, np.ones_like(x)), **kw)
    np.testing.assert_allclose(d.primal, getattr(np.fft, name)(x, **kw), atol=1e-12)
    np.testing.assert_allclose(d.tangent, getattr(np.fft, name)(np.ones_like(x), **kw), atol=1e-12)


@pytest.mark.parametrize("name, kw", TRANSFORMS, ids=[fft_id(n, k) for n, k in TRANSFORMS])
def test_gradients_match_jax(name, kw):
    """Against JAX's gradients, recorded by tests/make_jax_peer_golden.py."""
    case = recorded()["fft"][fft_id(name, kw)]
    x = decode(case["x"])
    ours = reverse.grad(lambda z: ops.sum(ops.abs(getattr(np.fft, name)(z, **kw)) ** 2))(x)
    assert_close(ours, case["grad"], rtol=1e-10, atol=1e-10, err_msg=fft_id(name, kw))


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

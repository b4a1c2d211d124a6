"""NumPy functions that were missing or refused without naming the fix (issue 26)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special

import dualad
import dualad.numpy as dnp
import reverse
from dualad.testing import check_grads

MASK = np.array([True, False, True, True])


def _putmasked(v):
    out = dnp.zeros(4)
    np.putmask(out, MASK, v)
    return out


def test_putmask_repeats_the_values_by_position_as_numpy_does():
    want = np.zeros(4)
    np.putmask(want, MASK, np.array([1.0, 2.0]))
    out, t = dualad.jvp(_putmasked, (np.array([1.0, 2.0]),), (np.array([1.0, 10.0]),))
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(t, [1.0, 0.0, 1.0, 10.0])
    check_grads(_putmasked, (np.array([1.0, 2.0, 3.0]),))


@pytest.mark.parametrize("stack", [np.vstack, np.row_stack if hasattr(np, "row_stack") else np.vstack,
                                   np.hstack])
@pytest.mark.filterwarnings("ignore:`row_stack` alias is deprecated:DeprecationWarning")  # NumPy's own
def test_stacking_takes_numpy_s_dtype(stack):
    x = np.array([1.0, 2.0])
    out, t = dualad.jvp(lambda x: stack([x, x], dtype=np.float32), (x,), (np.ones(2),))
    want = stack([x, x], dtype=np.float32)
    assert out.dtype == t.dtype == want.dtype == np.float32
    np.testing.assert_array_equal(out, want)


def test_np_vectorize_on_a_value_names_the_fix():
    with pytest.raises(TypeError, match="np.vectorize converts its arguments"):
        dualad.derivative(lambda x: np.vectorize(lambda t: t * t)(x))(2.0)


def test_scipy_logsumexp_on_a_value_names_dualad_s():
    with pytest.raises(TypeError, match=r"scipy\.special\.logsumexp .* dualad\.ops\.logsumexp"):
        dualad.jvp(lambda x: scipy.special.logsumexp(x), (np.ones(3),), (np.ones(3),))


# np.real_if_close had no rule (HIPS autograd's numpy wrapper has one). Each case: its input
# and what NumPy gives.
REAL_IF_CLOSE = {
    "close": (np.array([2.0 + 1e-16j, -1.0 - 2e-15j]), {}),
    "far": (np.array([2.0 + 1e-3j, -1.0 + 0j]), {}),
    "absolute tol": (np.array([1.0 + 1e-12j]), {"tol": 1e-10}),
    "eps tol, far": (np.array([1.0 + 1e-12j]), {"tol": 1000}),
    "nan imaginary": (np.array([1.0 + np.nan * 1j]), {}),
    "real": (np.array([1.0, 2.0]), {}),
}


@pytest.mark.parametrize("name", sorted(REAL_IF_CLOSE))
def test_real_if_close_chooses_as_numpy_does_in_every_mode(name):
    z, kw = REAL_IF_CLOSE[name]
    want = np.real_if_close(z, **kw)
    out, t = dualad.jvp(lambda z: np.real_if_close(z, **kw), (z,), (np.ones_like(z),))
    assert out.dtype == t.dtype == want.dtype
    np.testing.assert_array_equal(out, want)
    # the tangent of real(z) or of z along 1 (+ 0j): ones either way
    np.testing.assert_array_equal(t, np.ones_like(want))
    compiled = dualad.compile(lambda z: np.real_if_close(z, **kw))
    for _ in range(2):
        np.testing.assert_array_equal(compiled(z), want)
    assert compiled.stats["replays"] == 1


def test_real_if_close_under_compile_decides_at_each_call():
    # the choice depends on the values: a guard on them, not a program that keeps the first
    compiled = dualad.compile(lambda x, y: np.real_if_close(x + 1j * y))
    x = np.array([1.0, 2.0])
    for y in (np.zeros(2), np.ones(2), np.zeros(2), np.ones(2)):
        want = np.real_if_close(x + 1j * y)
        got = compiled(x, y)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    assert compiled.stats["eager"] == 0 and compiled.stats["replays"] == 2


def test_real_if_close_gradient():
    # |real_if_close((1 + 1e-3 i) x)|^2 = (1 + 1e-6) x^2 (kept complex); real_if_close((1 + 1e-17 i) x)^2
    # = x^2 (its real part)
    x = np.array([3.0, 1.0])
    g = reverse.grad(lambda x: np.sum(np.abs(np.real_if_close(x * (1 + 1e-3j))) ** 2))(x)
    np.testing.assert_allclose(g, 2 * (1 + 1e-6) * x, rtol=1e-14)
    np.testing.assert_allclose(reverse.grad(lambda x: np.sum(np.real_if_close(x * (1 + 1e-17j)) ** 2))(x),
                               2 * x, rtol=1e-15)

"""Derivatives at sizes where temporaries are reused in place (``dualad._table.ownership``).

Most tests use small arrays, below ``_inplace._MIN_SIZE``, where every
operation allocates. Here each mode runs on arrays above it twice, with the
reuse on and off: the results must agree bit for bit (the same operations in
the same order), agree with derivatives written out by hand, and leave the
inputs and any intermediate the function keeps untouched.
"""

import numpy as np
import pytest

import mixed
import reverse
from dualad import jvp
from dualad._table import ownership as _inplace

N = 3 * _inplace._MIN_SIZE + 1


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_grad(x):
    g = np.zeros_like(x)
    d = x[1:] - x[:-1] ** 2
    g[:-1] += -400.0 * x[:-1] * d - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * d
    return g


def rosenbrock_hvp(x, v):
    hv = np.zeros_like(x)
    a, b = x[:-1], x[1:]
    hv[:-1] += (1200.0 * a ** 2 - 400.0 * b + 2.0) * v[:-1] - 400.0 * a * v[1:]
    hv[1:] += -400.0 * a * v[:-1] + 200.0 * v[1:]
    return hv


def reuses_its_intermediates(x):
    """``y`` and ``z`` are each read several times after they are made."""
    y = x * x
    z = np.exp(-y) * y
    return np.sum(z * y + y / (1.0 + z) - np.sin(z) * x)


def _with_and_without_reuse(monkeypatch, compute):
    with_reuse = compute()
    monkeypatch.setattr(_inplace, "_MIN_SIZE", 2 ** 62)  # nothing is large enough to reuse
    without = compute()
    monkeypatch.undo()
    return with_reuse, without


def _leaves(out):
    if isinstance(out, tuple):
        return [leaf for o in out for leaf in _leaves(o)]
    return [np.asarray(out)]


@pytest.fixture
def point():
    rng = np.random.default_rng(7)
    x, v = rng.uniform(-1.0, 1.0, N), rng.standard_normal(N)
    x.flags.writeable = v.flags.writeable = False  # an in-place write to an input raises
    return x, v


MODES = {
    "jvp": lambda f, x, v: jvp(f, (x,), (v,)),
    "grad": lambda f, x, v: reverse.value_and_grad(f)(x),
    "hvp": lambda f, x, v: mixed.grad_and_hvp(f, x, v),
    "hvp-ror": lambda f, x, v: mixed.grad_and_hvp(f, x, v, mode="reverse-over-reverse"),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [rosenbrock, reuses_its_intermediates])
def test_reuse_changes_no_bit(monkeypatch, point, mode, f):
    x, v = point
    with_reuse, without = _with_and_without_reuse(monkeypatch, lambda: MODES[mode](f, x, v))
    for a, b in zip(_leaves(with_reuse), _leaves(without), strict=True):
        np.testing.assert_array_equal(a, b)


def test_rosenbrock_at_a_large_size_matches_the_hand_derivatives(point):
    x, v = point
    g, hv = mixed.grad_and_hvp(rosenbrock, x, v)
    np.testing.assert_allclose(g, rosenbrock_grad(x), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(hv, rosenbrock_hvp(x, v), rtol=1e-12, atol=1e-9)
    _, tangent = jvp(rosenbrock, (x,), (v,))
    np.testing.assert_allclose(tangent, rosenbrock_grad(x) @ v, rtol=1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float32_stays_float32_at_a_large_size(point, dtype):
    x, v = (a.astype(dtype) for a in point)
    g, hv = mixed.grad_and_hvp(reuses_its_intermediates, x, v)
    assert g.dtype == dtype and hv.dtype == dtype

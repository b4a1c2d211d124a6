"""Weighted counts and fill values that carry a derivative (issue 26): ``bincount`` and
``histogram`` with weights, ``full_like`` with a traced fill value, ``copyto``."""

from __future__ import annotations

import numpy as np
import pytest

import dualad
import dualad.numpy as dnp
import reverse
from dualad.testing import check_grads

IDX = np.array([0, 1, 1, 3])
A = np.array([0.1, 0.4, 0.45, 0.9, 1.5])


def test_bincount_with_weights_has_jax_s_derivative():
    """JAX: the JVP along ones with idx = [0, 1, 1, 3] is [1, 2, 0, 1]; dualad gave 0."""
    out, t = dualad.jvp(lambda w: np.bincount(IDX, weights=w), (np.arange(4.0),), (np.ones(4),))
    np.testing.assert_array_equal(out, np.bincount(IDX, weights=np.arange(4.0)))
    np.testing.assert_array_equal(t, [1.0, 2.0, 0.0, 1.0])
    assert out.dtype == t.dtype == np.float64


@pytest.mark.parametrize("minlength", [0, 6])
def test_bincount_with_weights_in_every_mode(minlength):
    check_grads(lambda w: np.bincount(IDX, weights=w, minlength=minlength) ** 2, (np.arange(1.0, 5.0),))
    scale = np.arange(6.0)[:max(4, minlength)]
    g = reverse.grad(lambda w: np.sum(np.bincount(IDX, weights=w, minlength=minlength) * scale))
    np.testing.assert_array_equal(g(np.ones(4)), [0.0, 1.0, 1.0, 3.0])


def test_bincount_under_vmap_of_the_weights():
    ws = np.arange(8.0).reshape(2, 4)
    np.testing.assert_array_equal(dualad.vmap(lambda w: np.bincount(IDX, weights=w))(ws),
                                  np.stack([np.bincount(IDX, weights=w) for w in ws]))


@pytest.mark.parametrize("kwargs", [{"bins": 3}, {"bins": 3, "range": (0.0, 1.0)},
                                    {"bins": [0.0, 0.5, 2.0], "density": True},
                                    {"bins": 3, "range": (0.0, 1.0), "density": True}])
def test_histogram_with_weights_in_every_mode(kwargs):
    w = np.arange(1.0, 6.0)
    (counts, edges), _ = dualad.jvp(lambda w: np.histogram(A, weights=w, **kwargs), (w,), (np.ones(5),))
    want, want_edges = np.histogram(A, weights=w, **kwargs)
    np.testing.assert_allclose(counts, want, rtol=1e-15)
    np.testing.assert_array_equal(edges, want_edges)
    check_grads(lambda w: np.histogram(A, weights=w, **kwargs)[0], (w,))


def test_full_like_carries_the_derivative_of_its_fill_value():
    x = np.array([1.0, 2.0])
    out, t = dualad.jvp(lambda x, y: np.full_like(x, y), (x, 2.0), (np.zeros(2), 1.0))
    np.testing.assert_array_equal(out, [2.0, 2.0])
    np.testing.assert_array_equal(t, [1.0, 1.0])
    check_grads(lambda y: dnp.full_like(np.zeros((2, 3)), y) * 3.0, (2.0,))
    float32 = dualad.jvp(lambda y: dnp.full_like(np.zeros(3, np.float32), y), (2.0,), (1.0,))[1]
    assert float32.dtype == np.float32
    assert reverse.grad(lambda y: np.sum(dnp.full_like(np.zeros(4), y)))(3.0) == 4.0


def test_numpy_s_full_like_of_a_plain_array_names_the_fix():
    """NumPy's full_like dispatches on its array only and writes the fill value with copyto."""
    with pytest.raises(TypeError, match="dualad.numpy"):
        dualad.jvp(lambda y: np.full_like(np.zeros(2), y), (2.0,), (1.0,))


def test_copyto_into_a_buffer_where_a_mask_holds():
    def f(x):
        out = dnp.zeros(3)
        np.copyto(out, x, where=np.array([True, False, True]))
        return out
    np.testing.assert_array_equal(dualad.jvp(f, (np.full(3, 2.0),), (np.ones(3),))[1], [1.0, 0.0, 1.0])
    check_grads(f, (np.arange(3.0),))

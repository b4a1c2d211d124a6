"""Convolution for image models: ``ops.conv`` against a direct loop, finite
differences in every mode, and JAX's ``conv_general_dilated`` (PyTorch's layout)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _support.golden import assert_close, decode
from _support.jax_peer_cases import CONV_CONFIGS, recorded

import dualad
import mixed
import reverse
from dualad import ops
from dualad.testing import check_grads

CONFIGS = [pytest.param(xs, ws, kw, id=name) for xs, ws, kw, name in CONV_CONFIGS]


def _direct(x, w, stride=1, padding=0, dilation=1, groups=1):
    """The definition, one output entry at a time."""
    d = w.ndim - 2
    stride = (stride,) * d if isinstance(stride, int) else stride
    dilation = (dilation,) * d if isinstance(dilation, int) else dilation
    span = [dl * (k - 1) + 1 for dl, k in zip(dilation, w.shape[2:])]
    if padding == "same":
        padding = [((s - 1) // 2, s - 1 - (s - 1) // 2) for s in span]
    elif isinstance(padding, int):
        padding = [(padding, padding)] * d
    x = np.pad(x, [(0, 0), (0, 0)] + [tuple(p) for p in padding])
    out_sizes = [(x.shape[2 + i] - span[i]) // stride[i] + 1 for i in range(d)]
    cg, og = w.shape[1], w.shape[0] // groups
    out = np.zeros((x.shape[0], w.shape[0], *out_sizes))
    for n, o in itertools.product(range(x.shape[0]), range(w.shape[0])):
        g = o // og
        for pos in itertools.product(*map(range, out_sizes)):
            sl = tuple(slice(p * s, p * s + sp, dl) for p, s, sp, dl in zip(pos, stride, span, dilation))
            out[(n, o) + pos] = np.sum(x[(n, slice(g * cg, (g + 1) * cg)) + sl] * w[o])
    return out


@pytest.mark.parametrize("xs, ws, kw", CONFIGS)
def test_conv_values_and_derivatives(xs, ws, kw):
    rng = np.random.default_rng(0)
    x, w, b = rng.normal(size=xs), rng.normal(size=ws), rng.normal(size=ws[0])
    np.testing.assert_allclose(ops.conv(x, w, **kw), _direct(x, w, **kw), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ops.conv(x, w, b, **kw),
                               _direct(x, w, **kw) + b.reshape((-1,) + (1,) * (len(ws) - 2)), atol=1e-12)
    check_grads(lambda x, w: ops.conv(x, w, **kw), (x, w), order=1, modes=("fwd", "rev"))


def test_conv_relu_model_hvp_matches_dense_hessian():
    """The Conv2d + ReLU model of the computation-graph notes, its H v by forward-over-reverse."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 1, 6, 6))
    w0 = rng.normal(size=(3, 1, 3, 3))

    def loss(w):
        h = ops.tanh(ops.conv(x, w.reshape(3, 1, 3, 3), padding=1))
        return ops.mean(ops.relu(ops.conv(h, np.ones((1, 3, 2, 2)), stride=2)) ** 2)

    flat = w0.ravel()
    v = rng.normal(size=flat.size)
    np.testing.assert_allclose(mixed.hvp(loss, flat, v), dualad.hessian(loss)(flat) @ v, rtol=1e-9)
    check_grads(loss, (flat,), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("kw, name", [(kw, name) for *_, kw, name in CONV_CONFIGS],
                         ids=[name for *_, name in CONV_CONFIGS])
def test_conv_matches_jax(kw, name):
    """Against jax.lax.conv_general_dilated, recorded by tests/make_jax_peer_golden.py."""
    golden = recorded()["conv"][name]
    x, w = decode(golden["x"]), decode(golden["w"])
    assert_close(ops.conv(x, w, **kw), golden["value"], rtol=1e-12, atol=1e-12)
    gx, gw = reverse.grad(lambda x, w: ops.sum(ops.sin(ops.conv(x, w, **kw))), argnums=(0, 1))(x, w)
    assert_close(gx, golden["grad_x"], rtol=1e-10, atol=1e-12)
    assert_close(gw, golden["grad_w"], rtol=1e-10, atol=1e-12)


def test_sliding_window_view_dispatches_and_matches_numpy():
    x = np.arange(24.0).reshape(4, 6)
    y = np.lib.stride_tricks.sliding_window_view(dualad.Dual(x, np.ones_like(x)), (2, 3))
    np.testing.assert_array_equal(y.primal, np.lib.stride_tricks.sliding_window_view(x, (2, 3)))
    np.testing.assert_array_equal(ops.sliding_window_view(x, 3, axis=1),
                                  np.lib.stride_tricks.sliding_window_view(x, 3, axis=1))


def test_bad_conv_arguments_name_themselves():
    with pytest.raises(ValueError, match="groups"):
        ops.conv(np.ones((1, 3, 4, 4)), np.ones((2, 3, 2, 2)), groups=2)
    with pytest.raises(ValueError, match="stride"):
        ops.conv(np.ones((1, 1, 4, 4)), np.ones((1, 1, 2, 2)), stride=(1, 2, 3))
    with pytest.raises(ValueError, match="spatial"):
        ops.conv(np.ones((1, 4, 4)), np.ones((1, 1, 2, 2)))

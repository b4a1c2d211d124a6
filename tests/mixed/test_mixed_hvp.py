"""Hessian-vector products: ``mixed.hvp`` and ``mixed.grad_and_hvp``.

Oracles, all computed independently of the code under test:

- the exact hyper-dual Hessian, ``dualad.hessian(f)(x) @ v`` (forward over
  forward, no tape), in NumPy float64;
- central finite differences of the tape gradient ``reverse.grad`` along v;
- the symmetry of the Hessian, ``<u, H v> = <v, H u>``;
- the other mode (forward-over-reverse against reverse-over-reverse).

Every backend-generic test runs on NumPy, on ``array_api_strict`` (no NumPy-only
call may leak into the HVP path) and on CuPy when a GPU is present (``gpu``
marker), in float64 and float32.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _support.backends import BACKENDS, DTYPES, NUMPY, dtype_name, to_numpy
from hypothesis import given
from hypothesis import strategies as st

import dualad
import reverse
from dualad import ops
from mixed import grad_and_hvp, hvp

MODES = ["forward-over-reverse", "reverse-over-reverse"]
# Relative to the largest entry of the reference: float32 carries ~7 digits,
# and an HVP is a few hundred roundings deep here.
RTOL = {"float64": 1e-9, "float32": 2e-4}
N = 7


# -- the functions under test, written once for every backend -----------------
def rosenbrock(x):
    return ops.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def make_coupled(backend, dtype):
    """Dense Hessian: a matrix product, transcendental ufuncs and a product of sums."""
    a = backend.asarray(np.random.default_rng(1).standard_normal((N, N)) / math.sqrt(N), dtype)

    def coupled(x):
        return (ops.sum(ops.tanh(ops.matmul(a, x)))
                + ops.sum(ops.sin(x) * ops.exp(-x * x))
                + ops.sum(x * x) * ops.sum(ops.log1p(x * x)) / 4.0)
    return coupled


def make_logistic(backend, dtype):
    """Mean logistic loss of a linear model plus an L2 term (a GLM Hessian)."""
    rng = np.random.default_rng(2)
    xdata = backend.asarray(rng.standard_normal((3 * N, N)), dtype)
    y = backend.asarray(np.sign(rng.standard_normal(3 * N)), dtype)

    def logistic(w):
        # ``ops.multiply`` rather than ``y * (...)``: a raw array_api_strict
        # array on the left of an operator does not defer to a value type.
        margins = ops.multiply(y, ops.matmul(xdata, w))
        return ops.mean(ops.logaddexp(0.0, -margins)) + 0.05 * ops.sum(w * w)
    return logistic


FUNCTIONS = {
    "rosenbrock": lambda backend, dtype: rosenbrock,
    "coupled": make_coupled,
    "logistic": make_logistic,
}


def point(seed: int, n: int = N) -> np.ndarray:
    return np.random.default_rng([seed, n]).uniform(-1.2, 1.2, n)


def assert_close(actual, expected, dtype: str, scale_rtol: float = 1.0):
    actual, expected = to_numpy(actual).astype(np.float64), np.asarray(expected, np.float64)
    assert actual.shape == expected.shape
    scale = max(float(np.max(np.abs(expected), initial=0.0)), 1.0)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=RTOL[dtype] * scale_rtol * scale)


# -- against the oracles ---------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(FUNCTIONS))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_hvp_equals_hyperdual_hessian_times_v(backend, dtype, name, mode):
    x64, v64 = point(0), point(1)
    f_np = FUNCTIONS[name](NUMPY, "float64")
    expected = to_numpy(dualad.hessian(f_np)(x64)) @ v64

    f = FUNCTIONS[name](backend, dtype)
    x, v = backend.asarray(x64, dtype), backend.asarray(v64, dtype)
    out = hvp(f, x, v, mode=mode)
    assert type(out) is type(x), "the product must stay on the input's backend"
    assert dtype_name(out) == dtype
    assert_close(out, expected, dtype)


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_hvp_equals_central_difference_of_the_tape_gradient(name):
    f = FUNCTIONS[name](NUMPY, "float64")
    x, v = point(3), point(4)
    g = reverse.grad(f)
    h = 1e-5
    fd = (to_numpy(g(x + h * v)) - to_numpy(g(x - h * v))) / (2 * h)
    out = to_numpy(hvp(f, x, v))
    scale = max(np.max(np.abs(fd)), 1.0)
    np.testing.assert_allclose(out, fd, rtol=0, atol=1e-6 * scale)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(FUNCTIONS))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_hessian_symmetry(backend, dtype, name, mode):
    f = FUNCTIONS[name](backend, dtype)
    x = backend.asarray(point(5), dtype)
    u64, v64 = point(6), point(7)
    u, v = backend.asarray(u64, dtype), backend.asarray(v64, dtype)
    hv, hu = to_numpy(hvp(f, x, v, mode=mode)), to_numpy(hvp(f, x, u, mode=mode))
    left, right = float(u64 @ hv), float(v64 @ hu)
    scale = np.linalg.norm(u64) * max(np.linalg.norm(hv), np.linalg.norm(hu), 1.0)
    assert abs(left - right) <= 10 * RTOL[dtype] * scale


@pytest.mark.parametrize("name", list(FUNCTIONS))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_both_modes_agree_and_return_the_tape_gradient(backend, dtype, name):
    f = FUNCTIONS[name](backend, dtype)
    x, v = backend.asarray(point(8), dtype), backend.asarray(point(9), dtype)
    g1, hv1 = grad_and_hvp(f, x, v)
    g2, hv2 = grad_and_hvp(f, x, v, mode="reverse-over-reverse")
    g_tape = reverse.grad(f)(x)
    for out in (g1, hv1, g2, hv2):
        assert type(out) is type(x)
        assert dtype_name(out) == dtype
    assert_close(g1, to_numpy(g_tape), dtype)
    assert_close(g2, to_numpy(g_tape), dtype)
    assert_close(hv1, to_numpy(hv2), dtype, scale_rtol=10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_batch_of_directions_gives_one_product_per_row(backend, dtype):
    f = FUNCTIONS["coupled"](backend, dtype)
    x64 = point(10)
    vs = np.random.default_rng(11).standard_normal((3, N))
    out = hvp(f, backend.asarray(x64, dtype), backend.asarray(vs, dtype))
    assert dtype_name(out) == dtype
    expected = (to_numpy(dualad.hessian(FUNCTIONS["coupled"](NUMPY, "float64"))(x64)) @ vs.T).T
    assert_close(out, expected, dtype)


def test_float_argument():
    out = hvp(lambda t: ops.sin(t) * t ** 3, 0.7, 2.0)
    exact = (-math.sin(0.7) * 0.7 ** 3 + 6 * math.cos(0.7) * 0.7 ** 2 + 6 * math.sin(0.7) * 0.7) * 2.0
    assert isinstance(out, float)
    assert out == pytest.approx(exact, rel=1e-12)
    assert hvp(lambda t: ops.sin(t) * t ** 3, 0.7, 2.0, mode="reverse-over-reverse") == pytest.approx(exact)


def test_zero_direction_gives_zero_and_linear_f_gives_zero():
    x = point(12)
    assert not np.any(hvp(rosenbrock, x, np.zeros(N)))
    np.testing.assert_array_equal(hvp(lambda x: ops.sum(3.0 * x), x, point(13)), np.zeros(N))


# -- pytrees ---------------------------------------------------------------------
def _mlp_loss(p):
    """A one-hidden-layer tanh network on fixed data; parameters as a dict."""
    rng = np.random.default_rng(14)
    data, target = rng.standard_normal((5, 3)), rng.standard_normal(5)
    hidden = ops.tanh(ops.matmul(data, p["W"]) + p["b"])
    r = ops.matmul(hidden, p["out"][0]) + p["out"][1] - target
    return ops.sum(r * r)


def _params(seed):
    rng = np.random.default_rng(seed)
    return {"W": rng.standard_normal((3, 4)), "b": rng.standard_normal(4),
            "out": (rng.standard_normal(4), float(rng.standard_normal()))}


def _flat(p):
    return np.concatenate([np.ravel(p["W"]), p["b"], p["out"][0], [p["out"][1]]])


def _mlp_flat(w):
    return _mlp_loss({"W": ops.reshape(w[:12], (3, 4)), "b": w[12:16], "out": (w[16:20], w[20])})


@pytest.mark.parametrize("mode", MODES)
def test_dict_and_tuple_parameters(mode):
    p, v = _params(15), _params(16)
    out = hvp(_mlp_loss, p, v, mode=mode)
    assert set(out) == {"W", "b", "out"} and isinstance(out["out"], tuple)
    assert out["W"].shape == (3, 4) and out["b"].shape == (4,) and out["out"][0].shape == (4,)
    assert isinstance(out["out"][1], float)
    expected = dualad.hessian(_mlp_flat)(_flat(p)) @ _flat(v)
    np.testing.assert_allclose(_flat(out), expected, rtol=1e-10, atol=1e-10)


def test_pytree_gradient_part_matches_the_tape():
    p, v = _params(17), _params(18)
    g, _ = grad_and_hvp(_mlp_loss, p, v)
    np.testing.assert_allclose(_flat(g), _flat(reverse.grad(_mlp_loss)(p)), rtol=1e-12)


def test_tuple_of_arrays_with_mixed_dtypes_keeps_each_dtype():
    def f(xs):
        a, b = xs
        return ops.sum(ops.sin(a) ** 2) * ops.sum(ops.astype(b, a.dtype) ** 3)

    x = (np.linspace(-1, 1, 4), np.linspace(0.5, 1.5, 3).astype(np.float32))
    v = (np.ones(4), np.ones(3, np.float32))
    out = hvp(f, x, v)
    assert isinstance(out, tuple)
    assert out[0].dtype == np.float64 and out[1].dtype == np.float32
    flat = lambda w: f((w[:4], w[4:]))
    expected = dualad.hessian(flat)(np.concatenate([x[0], x[1].astype(np.float64)])) @ np.ones(7)
    np.testing.assert_allclose(np.concatenate([out[0], out[1]]), expected, rtol=1e-5)


# -- a property over random points and directions ---------------------------------
@given(st.data())
def test_property_symmetry_and_oracle(data):
    n = data.draw(st.integers(1, 6), label="n")
    floats = st.floats(-1.5, 1.5, allow_nan=False)
    x = np.array(data.draw(st.lists(floats, min_size=n, max_size=n), label="x"))
    u = np.array(data.draw(st.lists(floats, min_size=n, max_size=n), label="u"))
    v = np.array(data.draw(st.lists(floats, min_size=n, max_size=n), label="v"))

    def f(x):
        return ops.sum(ops.exp(0.5 * x) * ops.cos(x)) + ops.sum(x) ** 2 * ops.sum(ops.tanh(x))

    h = dualad.hessian(f)(x)
    hv, hu = hvp(f, x, v), hvp(f, x, u)
    scale = max(1.0, float(np.max(np.abs(h))))
    np.testing.assert_allclose(hv, h @ v, rtol=0, atol=1e-10 * scale * (1 + np.abs(v).sum()))
    assert abs(u @ hv - v @ hu) <= 1e-9 * scale * (1 + np.abs(u).sum()) * (1 + np.abs(v).sum())

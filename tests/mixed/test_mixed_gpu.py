"""CuPy: nothing in an HVP or a Newton solve leaves the device implicitly.

The core HVP, dense-Hessian and solver tests also run on CuPy (their
``cupy`` backend parameter carries the ``gpu`` marker); this file holds the
checks that only make sense on a GPU. CuPy refuses implicit conversion to
NumPy (``np.asarray(cupy_array)`` raises ``TypeError``), so an HVP that
finishes on CuPy inputs and returns a CuPy array cannot have copied an array
to the host behind the user's back. Without CuPy or a GPU every test here is
skipped.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import dualad
from dualad import ops
from mixed import grad_and_hvp, hessian, hvp, newton_cg, trust_region


def _gpu_available() -> bool:
    if importlib.util.find_spec("cupy") is None:
        return False
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no driver or no device: skip
        return False


pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not _gpu_available(), reason="needs CuPy and an NVIDIA GPU")]

MODES = ["forward-over-reverse", "reverse-over-reverse"]
N = 64


def numpy_style(x, a):
    """Unmodified NumPy code: ufuncs, np.sum, operators, slicing, matmul."""
    return (np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
            + np.sum(np.tanh(x @ a) * np.exp(-x * x)))


def ops_style(x, a):
    return ops.sum(ops.tanh(ops.matmul(a, x)) ** 2) + ops.sum(ops.log1p(x * x) * ops.sin(x))


@pytest.fixture
def cupy():
    import cupy
    return cupy


def test_cupy_refuses_implicit_conversion(cupy):
    """The premise of this file: if this stops raising, the tests below prove nothing."""
    with pytest.raises(TypeError):
        np.asarray(cupy.ones(3))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("mode", MODES)
def test_hvp_on_device_makes_no_implicit_host_transfer(cupy, mode, dtype):
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((N, N)) / np.sqrt(N)
    x_np, v_np = rng.uniform(-1, 1, N), rng.standard_normal(N)
    a, x, v = (cupy.asarray(t, dtype=dtype) for t in (a_np, x_np, v_np))

    g, hv = grad_and_hvp(lambda x: ops_style(x, a), x, v, mode=mode)
    assert isinstance(g, cupy.ndarray) and isinstance(hv, cupy.ndarray)
    assert g.dtype == dtype and hv.dtype == dtype

    expected = dualad.hessian(lambda x: ops_style(x, a_np))(x_np) @ v_np  # explicit copies only
    tol = 1e-9 if dtype == "float64" else 2e-4
    np.testing.assert_allclose(hv.get(), expected, rtol=0, atol=tol * np.max(np.abs(expected)))


def test_unmodified_numpy_code_runs_on_device(cupy):
    a_np = np.linspace(-1.0, 1.0, N * N).reshape(N, N) / N
    x_np = np.random.default_rng(1).uniform(-1, 1, N)
    a, x, v = cupy.asarray(a_np), cupy.asarray(x_np), cupy.ones(N)
    out = hvp(lambda x: numpy_style(x, a), x, v)
    assert isinstance(out, cupy.ndarray)
    expected = hvp(lambda x: numpy_style(x, a_np), x_np, np.ones(N))
    np.testing.assert_allclose(out.get(), expected, rtol=1e-10, atol=1e-10)


def test_batched_directions_and_dense_hessian_on_device(cupy):
    a = cupy.asarray(np.random.default_rng(2).standard_normal((8, 8)))
    x = cupy.asarray(np.linspace(-1, 1, 8))
    h = hessian(lambda x: ops_style(x, a), chunk_size=3)(x)
    assert isinstance(h, cupy.ndarray)
    rows = hvp(lambda x: ops_style(x, a), x, cupy.eye(8))
    assert isinstance(rows, cupy.ndarray)
    cupy.testing.assert_allclose(rows, h, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("solver", [newton_cg, trust_region])
def test_solvers_keep_the_iterate_on_device(cupy, solver):
    a = cupy.asarray(np.random.default_rng(3).standard_normal((N, N)) / np.sqrt(N))

    def f(x):
        return ops.sum((x - 1.0) ** 2) + ops.sum(ops.logaddexp(0.0, ops.matmul(a, x)))

    res = solver(f, cupy.zeros(N))
    assert res.success, res.message
    assert isinstance(res.x, cupy.ndarray) and isinstance(res.jac, cupy.ndarray)
    ref = solver(lambda x: ops.sum((x - 1.0) ** 2) + ops.sum(ops.logaddexp(0.0, ops.matmul(a.get(), x))),
                 np.zeros(N))
    np.testing.assert_allclose(res.x.get(), ref.x, rtol=1e-8, atol=1e-9)


def test_mixing_host_and_device_is_an_error(cupy):
    x = cupy.ones(4)
    with pytest.raises((TypeError, ValueError)):
        hvp(lambda x: ops.sum(x ** 3), x, np.ones(4))

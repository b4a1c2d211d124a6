"""``mixed.hessian``: the dense Hessian from batched HVPs, by chunk size.

The reference is ``dualad.hessian`` (hyper-dual, forward over forward) in
NumPy float64; ``chunk_size`` must not change the result, only the number of
passes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _support.backends import BACKENDS, DTYPES, NUMPY, dtype_name, to_numpy

import dualad
from dualad import ops
from mixed import hessian

N = 7  # not a multiple of 3, so chunk_size=3 leaves a short last chunk
RTOL = {"float64": 1e-10, "float32": 2e-4}


def make_f(backend, dtype):
    a = backend.asarray(np.random.default_rng(0).standard_normal((N, N)) / math.sqrt(N), dtype)

    def f(x):
        return (ops.sum(ops.tanh(ops.matmul(a, x)) ** 2)
                + ops.sum(x[1:] * x[:-1] ** 2)
                + ops.sum(ops.exp(0.3 * x)) * ops.sum(ops.cos(x)))
    return f


X = np.random.default_rng(1).uniform(-1.0, 1.0, N)


@pytest.fixture(scope="module")
def reference():
    return to_numpy(dualad.hessian(make_f(NUMPY, "float64"))(X))


@pytest.mark.parametrize("chunk_size", [1, 3, N, None])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_every_chunk_size_gives_the_hyperdual_hessian(backend, dtype, chunk_size, reference):
    x = backend.asarray(X, dtype)
    h = hessian(make_f(backend, dtype), chunk_size=chunk_size)(x)
    assert type(h) is type(x) and dtype_name(h) == dtype
    assert tuple(h.shape) == (N, N)
    scale = float(np.max(np.abs(reference)))
    np.testing.assert_allclose(to_numpy(h).astype(np.float64), reference, rtol=0,
                               atol=RTOL[dtype] * scale)


def test_result_is_symmetric(reference):
    h = to_numpy(hessian(make_f(NUMPY, "float64"), chunk_size=2)(X))
    np.testing.assert_allclose(h, h.T, rtol=0, atol=1e-12 * float(np.max(np.abs(h))))


def test_a_larger_chunk_than_n_is_one_pass():
    np.testing.assert_allclose(hessian(make_f(NUMPY, "float64"), chunk_size=100)(X),
                               hessian(make_f(NUMPY, "float64"), chunk_size=N)(X), rtol=1e-14)


def test_matrix_argument_has_shape_x_shape_twice():
    m = np.arange(6.0).reshape(2, 3) / 5.0
    g = lambda m: ops.sum(m ** 3) + ops.sum(ops.sin(m[0]) * m[1])
    h = hessian(g, chunk_size=4)(m)
    assert h.shape == (2, 3, 2, 3)
    flat = lambda w: g(ops.reshape(w, (2, 3)))
    np.testing.assert_allclose(np.reshape(h, (6, 6)), dualad.hessian(flat)(np.ravel(m)), rtol=1e-12)


@pytest.mark.parametrize("chunk_size", [2, None])
def test_empty_input_gives_an_empty_hessian(chunk_size):
    h = hessian(lambda x: ops.sum(x ** 2), chunk_size=chunk_size)(np.zeros(0))
    assert h.shape == (0, 0)


@pytest.mark.parametrize("bad", [0, -2])
def test_chunk_size_must_be_positive(bad):
    with pytest.raises(ValueError, match="chunk_size"):
        hessian(make_f(NUMPY, "float64"), chunk_size=bad)(X)

"""The tape, custom Functions, checkpoint and the optimizers on every array backend.

``array_api_strict`` proves on a CPU that no NumPy-only call leaks into the
reverse-mode machinery; CuPy runs the same tests when a GPU is present, and
Dask (lazy, unevenly chunked arrays) always.
"""

import numpy as np
import pytest
from _support.backends import BACKENDS, DASK_PARAM, dtype_name, to_numpy

import reverse
from dualad import ops
from reverse import Function, Tensor, checkpoint
from reverse.optim import LBFGS, SGD, Adagrad, Adam, AdamW, RMSprop, clip_grad_norm_, clip_grad_value_

pytestmark = pytest.mark.parametrize("backend", [*BACKENDS, DASK_PARAM])
DTYPES = pytest.mark.parametrize("dtype, rtol", [("float64", 1e-12), ("float32", 1e-5)])

RNG = np.random.default_rng(0)
X = RNG.normal(size=(4, 3))
W = RNG.normal(size=(3, 2))


def net(w, x):
    return ops.mean(ops.tanh(ops.matmul(x, w)) ** 2 + ops.sin(x[:, :2]) * 0.5)


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2.0 * x * g


def _reference_grad_w():
    return reverse.grad(net)(W, X)


@DTYPES
def test_grad_keeps_backend_and_dtype(backend, dtype, rtol):
    w, x = backend.asarray(W, dtype), backend.asarray(X, dtype)
    g = reverse.grad(net)(w, x)
    assert type(g) is type(w) and dtype_name(g) == dtype
    np.testing.assert_allclose(to_numpy(g), _reference_grad_w(), rtol=rtol * 10, atol=rtol)


@DTYPES
def test_tensor_backward_and_grad_accumulation(backend, dtype, rtol):
    w = Tensor(backend.asarray(W, dtype), requires_grad=True)
    x = backend.asarray(X, dtype)
    net(w, x).backward()
    net(w, x).backward()
    assert dtype_name(w.grad) == dtype
    np.testing.assert_allclose(to_numpy(w.grad), 2 * _reference_grad_w(), rtol=rtol * 10, atol=rtol)


@DTYPES
def test_function_and_checkpoint(backend, dtype, rtol):
    w, x = backend.asarray(W, dtype), backend.asarray(X, dtype)
    f = lambda v: ops.sum(Square.apply(checkpoint(lambda a, b: ops.tanh(ops.matmul(b, a)), v, x)))
    g = reverse.grad(f)(w)
    expected = reverse.grad(lambda v: ops.sum(ops.tanh(X @ v) ** 2))(W)
    assert type(g) is type(w) and dtype_name(g) == dtype
    np.testing.assert_allclose(to_numpy(g), expected, rtol=rtol * 10, atol=rtol)


def check_state(state, w):
    """Every array of an optimizer's state has the parameter's backend and dtype."""
    arrays = [a for s in state.values() for v in s.values() for a in (v if isinstance(v, list) else [v])
              if hasattr(a, "dtype")]
    assert arrays and all(type(a) is type(w.value) and dtype_name(a) == "float32" for a in arrays)


@pytest.mark.parametrize("make", [lambda p: SGD(p, lr=0.1, momentum=0.9, nesterov=True),
                                  lambda p: Adam(p, lr=0.1), lambda p: AdamW(p, lr=0.1, amsgrad=True),
                                  lambda p: RMSprop(p, lr=0.01, momentum=0.5, centered=True),
                                  lambda p: Adagrad(p, lr=0.1, initial_accumulator_value=0.1)],
                         ids=["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"])
def test_optimizers_update_in_place_on_the_backend(backend, make):
    w = Tensor(backend.asarray(W, "float32"), requires_grad=True)
    array = w.value
    opt = make([w])
    x = backend.asarray(X, "float32")
    first = None
    for _ in range(5):
        opt.zero_grad()
        loss = net(w, x)
        # float(to_numpy(...)), not loss.item(): see test_rev_regressions.py
        first = float(to_numpy(loss.value)) if first is None else first
        loss.backward()
        opt.step()
    assert w.value is array and dtype_name(w.value) == "float32"
    assert float(to_numpy(net(w, x).value)) < first
    check_state(opt.state, w)


def test_lbfgs_updates_in_place_on_the_backend(backend):
    w = Tensor(backend.asarray(W, "float32"), requires_grad=True)
    array = w.value
    x = backend.asarray(X, "float32")
    # On Dask each of the line search's reads is a computation: fewer iterations keep it short.
    opt = LBFGS([w], line_search_fn="strong_wolfe", max_iter=2 if backend.name == "dask" else 5,
                history_size=3)

    def closure():
        opt.zero_grad()
        loss = net(w, x)
        loss.backward()
        return loss
    first = float(to_numpy(net(w, x).value))
    for _ in range(2):
        opt.step(closure)
    assert w.value is array and dtype_name(w.value) == "float32"
    assert float(to_numpy(net(w, x).value)) < first
    check_state(opt.state, w)


def test_gradient_clipping_keeps_backend_and_dtype(backend):
    w = Tensor(backend.asarray(W, "float32"), requires_grad=True)
    net(w, backend.asarray(X, "float32")).backward()
    g = to_numpy(w.grad)
    total = clip_grad_norm_([w], max_norm=0.1)
    # (NumPy's reductions give a NumPy scalar rather than a 0-d array)
    assert isinstance(total.value, (type(w.value), np.generic)) and dtype_name(total.value) == "float32"
    assert type(w.grad.value) is type(w.value) and dtype_name(w.grad.value) == "float32"
    np.testing.assert_allclose(to_numpy(w.grad), g * 0.1 / np.linalg.norm(g), rtol=1e-4)
    clip_grad_value_([w], 0.01)
    assert type(w.grad.value) is type(w.value) and float(to_numpy(w.grad.value).max()) <= 0.01

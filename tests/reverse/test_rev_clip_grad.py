"""``reverse.optim.clip_grad_norm_`` and ``clip_grad_value_`` against NumPy references of
PyTorch's documented rules (``torch.nn.utils``); PyTorch's own numbers are in
test_rev_optim_torch.py."""

import math

import numpy as np
import pytest

from reverse import Tensor
from reverse.optim import clip_grad_norm_, clip_grad_value_

GRADS = [np.array([3.0, -4.0, 0.5]), np.array([[1.5, -0.25], [2.0, 0.0]])]


def with_grads(dtype, scale=1.0):
    params = [Tensor(np.zeros_like(g, dtype=dtype), requires_grad=True) for g in GRADS]
    for p, g in zip(params, GRADS):
        p.grad = (scale * g).astype(dtype)
    return params + [Tensor(np.ones(2, dtype=dtype), requires_grad=True)]  # no .grad: skipped


def norm_reference(grads, p):
    flat = np.concatenate([g.ravel() for g in grads])
    return np.abs(flat).max() if p == math.inf else (np.abs(flat) ** p).sum() ** (1 / p)


@pytest.mark.parametrize("dtype, rtol", [("float64", 1e-14), ("float32", 1e-6)])
@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf, "inf"])
@pytest.mark.parametrize("max_norm", [1.0, 100.0])
def test_clip_grad_norm_matches_the_documented_rule(dtype, rtol, norm_type, max_norm):
    p = math.inf if norm_type == "inf" else norm_type
    params = with_grads(dtype)
    total = clip_grad_norm_(params, max_norm, norm_type)
    want_total = norm_reference(GRADS, p)
    coef = min(1.0, max_norm / (want_total + 1e-6))
    assert isinstance(total, Tensor) and total.dtype == dtype and total.shape == ()
    np.testing.assert_allclose(total.item(), want_total, rtol=rtol)
    for param, g in zip(params, GRADS):
        assert param.grad.dtype == dtype
        np.testing.assert_allclose(param.grad, coef * g, rtol=rtol)
    assert params[-1].grad is None
    if max_norm == 1.0:  # clipped: the new norm is max_norm (up to the 1e-6)
        np.testing.assert_allclose(norm_reference([q.grad for q in params[:-1]], p), 1.0, rtol=1e-5)


def test_clip_grad_norm_changes_grad_in_place_as_pytorch():
    """``.grad`` is a Tensor: clipping scales it in place, so a reference to it (or
    an array the user assigned to it, which ``.grad`` then holds) sees the result."""
    w = Tensor(np.zeros(3), requires_grad=True)
    g = GRADS[0].copy()
    w.grad = g
    held = w.grad
    clip_grad_norm_(w, 1.0)
    assert w.grad is held
    np.testing.assert_allclose(np.linalg.norm(g), 1.0, rtol=1e-5)
    np.testing.assert_allclose(held.value, GRADS[0] / np.linalg.norm(GRADS[0]), rtol=1e-5)


def test_clip_grad_norm_of_nothing_is_zero():
    assert clip_grad_norm_([Tensor(np.ones(2), requires_grad=True)], 1.0).item() == 0.0


def test_a_nonfinite_norm_raises_when_asked():
    params = with_grads("float64")
    params[0].grad[1] = np.inf
    with pytest.raises(RuntimeError, match=r"total norm of order 2.0 of the gradients is inf"):
        clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    with np.errstate(invalid="ignore"):  # inf * (1 / inf) is nan
        assert clip_grad_norm_(params, 1.0).item() == np.inf  # as PyTorch: scaled by 1 / inf
    assert np.isnan(params[0].grad[1]) and (params[1].grad == 0.0).all()


def test_a_grad_with_a_graph_is_clipped_in_place_without_recording():
    w = Tensor(np.array([3.0, 4.0]), requires_grad=True)
    with pytest.warns(UserWarning, match="reference cycle"):
        (w * w * w / 3).sum().backward(create_graph=True)   # w.grad = w**2, a Tensor with a graph
    held = w.grad
    total = clip_grad_norm_([w], 5.0)
    np.testing.assert_allclose(total.item(), np.hypot(9.0, 16.0))
    np.testing.assert_allclose(w.grad.value, np.array([9.0, 16.0]) * 5.0 / (np.hypot(9.0, 16.0) + 1e-6))
    assert w.grad is held and held.requires_grad  # scaled in place, as torch's mul_ under no_grad


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("clip_value", [0.0, 1.0, 2.5, 10.0])
def test_clip_grad_value_matches_the_documented_rule(dtype, clip_value):
    params = with_grads(dtype, scale=-1.0)
    assert clip_grad_value_(params, clip_value) is None
    for param, g in zip(params, GRADS):
        assert param.grad.dtype == dtype
        np.testing.assert_array_equal(param.grad, np.clip(-g, -clip_value, clip_value).astype(dtype))
    assert params[-1].grad is None


@pytest.mark.parametrize("call, error, match", [
    (lambda p: clip_grad_norm_(p, -1.0), ValueError, r"max_norm must be >= 0.0, got -1.0"),
    (lambda p: clip_grad_norm_(p, 1.0, norm_type=0), ValueError, r"norm_type must be > 0.0, got 0.0"),
    (lambda p: clip_grad_norm_(p, 1.0, norm_type="fro"), TypeError, r"norm_type must be a number, got str"),
    (lambda p: clip_grad_norm_(p, 1.0, error_if_nonfinite=None), TypeError,
     r"error_if_nonfinite must be True or False, got None"),
    (lambda p: clip_grad_norm_(p + [np.ones(2)], 1.0), TypeError,
     r"parameters\[3\] must be a reverse.Tensor, got ndarray"),
    (lambda p: clip_grad_norm_(3.0, 1.0), TypeError,
     r"parameters must be a Tensor or an iterable of Tensors, got float 3.0"),
    (lambda p: clip_grad_value_(p, -0.5), ValueError, r"clip_value must be >= 0.0, got -0.5"),
    (lambda p: clip_grad_value_({"w": p[0]}, 0.5), TypeError,
     r"parameters must be a Tensor or an iterable of Tensors, got a dict"),
], ids=range(8))
def test_bad_arguments_name_what_is_wrong(call, error, match):
    params = with_grads("float64")
    with pytest.raises(error, match=match):
        call(params)
    np.testing.assert_array_equal(params[0].grad, GRADS[0])  # nothing changed

"""``reverse.optim`` against the update rules of the PyTorch documentation."""

import numpy as np
import pytest

from dualad import ops
from reverse import Tensor, no_grad
from reverse.optim import SGD, Adam, AdamW

A = np.array([[3.0, 0.5], [0.5, 1.0]])
B = np.array([1.0, -2.0])
X0 = np.array([0.7, -1.3])


def loss(x):
    """A convex quadratic with a sine bump: gradients change along the path."""
    return 0.5 * (x @ (A @ x)) - B @ x + 0.1 * ops.sin(x).sum()


def grad_np(x):
    return A @ x - B + 0.1 * np.cos(x)


def run(opt_cls, steps=8, **kw):
    x = Tensor(X0.copy(), requires_grad=True)
    opt = opt_cls([x], **kw)
    path = []
    for _ in range(steps):
        opt.zero_grad()
        loss(x).backward()
        opt.step()
        path.append(x.value.copy())
    return np.array(path)


def sgd_reference(steps, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    x, b, path = X0.copy(), None, []
    for t in range(1, steps + 1):
        g = grad_np(x)
        if weight_decay:
            g = g + weight_decay * x
        if momentum:
            b = g if t == 1 else momentum * b + (1 - dampening) * g
            g = g + momentum * b if nesterov else b
        x = x - lr * g
        path.append(x)
    return np.array(path)


def adam_reference(steps, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled=False):
    b1, b2 = betas
    x, m, v, path = X0.copy(), 0.0, 0.0, []
    for t in range(1, steps + 1):
        g = grad_np(x)
        if decoupled:
            x = x - lr * weight_decay * x
        elif weight_decay:
            g = g + weight_decay * x
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat, v_hat = m / (1 - b1 ** t), v / (1 - b2 ** t)
        x = x - lr * m_hat / (np.sqrt(v_hat) + eps)
        path.append(x)
    return np.array(path)


@pytest.mark.parametrize("kw", [
    dict(lr=0.1),
    dict(lr=0.05, momentum=0.9),
    dict(lr=0.05, momentum=0.9, nesterov=True),
    dict(lr=0.05, momentum=0.8, dampening=0.3),
    dict(lr=0.1, weight_decay=0.2),
    dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1),
], ids=str)
def test_sgd_matches_the_documented_rule(kw):
    np.testing.assert_allclose(run(SGD, **kw), sgd_reference(8, **kw), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kw", [
    dict(lr=0.1),
    dict(lr=0.05, betas=(0.8, 0.99), eps=1e-6),
    dict(lr=0.1, weight_decay=0.3),
], ids=str)
def test_adam_matches_the_documented_rule(kw):
    np.testing.assert_allclose(run(Adam, **kw), adam_reference(8, **kw), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kw", [dict(lr=0.1), dict(lr=0.1, weight_decay=0.3),
                                dict(lr=0.02, betas=(0.5, 0.9), weight_decay=0.0)], ids=str)
def test_adamw_matches_the_documented_rule(kw):
    want = adam_reference(8, decoupled=True, **{"weight_decay": 1e-2, **kw})
    np.testing.assert_allclose(run(AdamW, **kw), want, rtol=1e-12, atol=1e-14)


def test_adamw_decay_is_decoupled_from_adam_l2():
    assert not np.allclose(run(AdamW, lr=0.1, weight_decay=0.3), run(Adam, lr=0.1, weight_decay=0.3))


@pytest.mark.parametrize("opt_cls, kw", [(SGD, dict(lr=0.1, momentum=0.5)), (Adam, dict(lr=0.1)),
                                         (AdamW, dict(lr=0.1, weight_decay=1e-3))])
def test_converges_to_the_minimum(opt_cls, kw):
    x = Tensor(X0.copy(), requires_grad=True)
    opt = opt_cls({"x": x}, **kw)
    for _ in range(400):
        opt.zero_grad()
        loss(x).backward()
        opt.step()
    np.testing.assert_allclose(grad_np(x.value), 0.0, atol=2e-3)


def test_updates_in_place_and_bumps_the_version():
    x = Tensor(X0.copy(), requires_grad=True)
    array = x.value
    y = ops.exp(x * 1.0) * x  # saves x
    y.sum().backward(retain_graph=True)
    SGD([x], lr=0.1).step()
    assert x.value is array, "step() must update the parameter's array in place"
    with pytest.raises(RuntimeError, match="modified in place"):
        y.sum().backward()


def test_step_leaves_the_users_array_alone():
    # Was: Tensor(a) shared a's memory, so step() rewrote the array the user passed in.
    a = X0.copy()
    x = Tensor(a, requires_grad=True)
    loss(x).backward()
    SGD([x], lr=0.1).step()
    np.testing.assert_array_equal(a, X0)
    assert not np.array_equal(x.value, X0)


def test_step_updates_an_array_shared_by_from_numpy():
    a = X0.copy()
    x = Tensor.from_numpy(a).requires_grad_()
    loss(x).backward()
    SGD([x], lr=0.1).step()
    np.testing.assert_allclose(a, X0 - 0.1 * grad_np(X0))


def test_float_parameters_and_dict_params():
    a, b = Tensor(2.0, requires_grad=True), Tensor(np.array([1.0, 1.0]), requires_grad=True)
    opt = SGD({"a": a, "b": b}, lr=0.5)
    (a * a + (b * b).sum()).backward()
    opt.step()
    assert a.item() == 0.0
    np.testing.assert_array_equal(b.value, [0.0, 0.0])


def test_parameters_without_grad_are_skipped_and_zero_grad_clears():
    a, b = Tensor(1.0, requires_grad=True), Tensor(1.0, requires_grad=True)
    opt = Adam([a, b], lr=0.1)
    (a * 3.0).backward()
    opt.step()
    assert a.item() == pytest.approx(0.9) and b.item() == 1.0
    opt.zero_grad()
    assert a.grad is None and b.grad is None
    (a * 3.0).backward()
    opt.zero_grad(set_to_none=False)
    assert a.grad == 0.0 and b.grad is None


def test_float32_stays_float32():
    x = Tensor(X0.astype(np.float32), requires_grad=True)
    opt = AdamW([x], lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        (x * x).sum().backward()
        opt.step()
    assert x.value.dtype == np.float32
    assert opt.state[0]["exp_avg"].dtype == np.float32


def test_momentum_buffer_does_not_alias_grad():
    x = Tensor(np.array([1.0]), requires_grad=True)
    opt = SGD([x], lr=0.1, momentum=0.9)
    (x * 2.0).sum().backward()
    opt.step()
    x.grad[...] = 100.0  # a user mutating .grad in place must not change the optimizer state
    np.testing.assert_array_equal(opt.state[0]["momentum_buffer"], [2.0])


def test_step_records_nothing():
    x = Tensor(X0.copy(), requires_grad=True)
    opt = Adam([x], lr=0.1)
    loss(x).backward()
    opt.step()
    assert x.is_leaf and x.requires_grad and x.grad_fn is None


@pytest.mark.parametrize("make, match", [
    (lambda p: SGD(p, lr=-0.1), r"lr must be >= 0.*-0.1"),
    (lambda p: SGD(p, lr=0.1, momentum=-1.0), r"momentum must be >= 0"),
    (lambda p: SGD(p, lr=0.1, weight_decay=-1.0), r"weight_decay must be >= 0"),
    (lambda p: SGD(p, lr=0.1, dampening=2.0), r"dampening must be >= 0.0 and <= 1.0"),
    (lambda p: SGD(p, lr=0.1, nesterov=True), r"nesterov=True needs momentum > 0"),
    (lambda p: Adam(p, lr=-1e-3), r"lr must be >= 0"),
    (lambda p: Adam(p, betas=(1.0, 0.9)), r"betas\[0\] must be >= 0.0 and < 1.0, got 1.0"),
    (lambda p: Adam(p, betas=(0.9, -0.1)), r"betas\[1\] must be >= 0.0"),
    (lambda p: Adam(p, betas=0.9), r"betas must be a pair"),
    (lambda p: Adam(p, eps=-1.0), r"eps must be >= 0"),
    (lambda p: AdamW(p, weight_decay=-0.01), r"weight_decay must be >= 0"),
    (lambda p: SGD(p, lr=float("nan")), r"lr must be >= 0.*nan"),
])
def test_invalid_hyperparameters_name_the_argument(make, match):
    with pytest.raises(ValueError, match=match):
        make([Tensor(1.0, requires_grad=True)])


def test_invalid_params():
    with pytest.raises(ValueError, match="empty"):
        SGD([], lr=0.1)
    with pytest.raises(TypeError, match="single Tensor"):
        SGD(Tensor(1.0, requires_grad=True), lr=0.1)
    with pytest.raises(TypeError, match=r"params\[1\] must be a reverse.Tensor, got ndarray"):
        SGD([Tensor(1.0, requires_grad=True), np.ones(2)], lr=0.1)
    with pytest.raises(ValueError, match=r"params\['w'\] must be a leaf Tensor that requires grad"):
        SGD({"w": Tensor(1.0)}, lr=0.1)
    x = Tensor(1.0, requires_grad=True)
    with pytest.raises(ValueError, match=r"params\[1\] is the same Tensor as params\[0\]"):
        SGD([x, x], lr=0.1)
    with pytest.raises(TypeError, match=r"lr must be a number"):
        SGD([x], lr="0.1")


def test_a_parameter_updated_under_no_grad_by_hand_still_works():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    with no_grad():
        x -= 0.5
    opt = SGD([x], lr=1.0)
    (x * x).sum().backward()
    opt.step()
    np.testing.assert_array_equal(x.value, [-0.5, -1.5])

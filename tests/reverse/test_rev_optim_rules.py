"""Each optimizer, step by step, against a NumPy reference of the PyTorch algorithm it names.

Each reference is written from the pseudo-code of PyTorch's documentation
(``torch.optim.SGD``, ``Adam``, ``AdamW``, ``RMSprop``, ``Adagrad``): state
starts at zero, one line per line of pseudo-code, in the parameter's dtype.
PyTorch's own numbers are checked in test_rev_optim_torch.py.
"""

import numpy as np
import pytest
from _support.optim_problem import X0, grad_np, loss

from reverse import Tensor
from reverse.optim import SGD, Adagrad, Adam, AdamW, RMSprop

STEPS = 8
DTYPES = pytest.mark.parametrize("dtype, rtol, atol", [("float64", 1e-12, 1e-14),
                                                       ("float32", 2e-6, 1e-7)])


def run(opt_cls, dtype="float64", steps=STEPS, **kw):
    x = Tensor(X0.astype(dtype), requires_grad=True)
    opt = opt_cls([x], **kw)
    path = []
    for _ in range(steps):
        opt.zero_grad()
        loss(x).backward()
        opt.step()
        path.append(x.value.copy())
    assert x.value.dtype == dtype
    return np.array(path)


def reference(rule, dtype, steps=STEPS, **kw):
    """The path of ``rule(x, g, t, state, **kw) -> new x`` from X0 in ``dtype``."""
    x, state, path = X0.astype(dtype), {}, []
    for t in range(1, steps + 1):
        x = rule(x, grad_np(x), t, state, **kw)
        assert x.dtype == dtype
        path.append(x)
    return np.array(path)


def sgd(x, g, t, state, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    if weight_decay != 0:
        g = g + weight_decay * x
    if momentum != 0:
        if t > 1:
            state["b"] = momentum * state["b"] + (1 - dampening) * g
        else:
            state["b"] = g
        if nesterov:
            g = g + momentum * state["b"]
        else:
            g = state["b"]
    return x - lr * g


def adam(x, g, t, state, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False,
         decoupled=False):
    b1, b2 = betas
    if not state:
        state.update(m=np.zeros_like(x), v=np.zeros_like(x), v_max=np.zeros_like(x))
    if decoupled:
        x = x - lr * weight_decay * x
    elif weight_decay != 0:
        g = g + weight_decay * x
    state["m"] = b1 * state["m"] + (1 - b1) * g
    state["v"] = b2 * state["v"] + (1 - b2) * g ** 2
    m_hat = state["m"] / (1 - b1 ** t)
    if amsgrad:
        state["v_max"] = np.maximum(state["v_max"], state["v"])
        v_hat = state["v_max"] / (1 - b2 ** t)
    else:
        v_hat = state["v"] / (1 - b2 ** t)
    return x - lr * m_hat / (np.sqrt(v_hat) + eps)


def adamw(x, g, t, state, weight_decay=1e-2, **kw):
    return adam(x, g, t, state, weight_decay=weight_decay, decoupled=True, **kw)


def rmsprop(x, g, t, state, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
            centered=False):
    if not state:
        state.update(v=np.zeros_like(x), b=np.zeros_like(x), g_ave=np.zeros_like(x))
    if weight_decay != 0:
        g = g + weight_decay * x
    state["v"] = alpha * state["v"] + (1 - alpha) * g ** 2
    v_tilde = state["v"]
    if centered:
        state["g_ave"] = state["g_ave"] * alpha + (1 - alpha) * g
        v_tilde = v_tilde - state["g_ave"] ** 2
    if momentum > 0:
        state["b"] = momentum * state["b"] + g / (np.sqrt(v_tilde) + eps)
        return x - lr * state["b"]
    return x - lr * g / (np.sqrt(v_tilde) + eps)


def adagrad(x, g, t, state, lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0,
            eps=1e-10):
    if not state:
        state["sum"] = np.full_like(x, initial_accumulator_value)
    lr_t = lr / (1 + (t - 1) * lr_decay)
    if weight_decay != 0:
        g = g + weight_decay * x
    state["sum"] = state["sum"] + g ** 2
    return x - lr_t * g / (np.sqrt(state["sum"]) + eps)


CASES = [
    (SGD, sgd, dict(lr=0.1)),
    (SGD, sgd, dict(lr=0.05, momentum=0.9)),
    (SGD, sgd, dict(lr=0.05, momentum=0.9, nesterov=True)),
    (SGD, sgd, dict(lr=0.05, momentum=0.8, dampening=0.3)),
    (SGD, sgd, dict(lr=0.1, weight_decay=0.2)),
    (SGD, sgd, dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1)),
    (Adam, adam, dict(lr=0.1)),
    (Adam, adam, dict(lr=0.05, betas=(0.8, 0.99), eps=1e-6)),
    (Adam, adam, dict(lr=0.1, weight_decay=0.3)),
    (Adam, adam, dict(lr=0.1, betas=(0.9, 0.5), amsgrad=True)),
    (Adam, adam, dict(lr=0.1, betas=(0.5, 0.5), weight_decay=0.2, amsgrad=True)),
    (AdamW, adamw, dict(lr=0.1)),
    (AdamW, adamw, dict(lr=0.1, weight_decay=0.3)),
    (AdamW, adamw, dict(lr=0.02, betas=(0.5, 0.9), weight_decay=0.0)),
    (AdamW, adamw, dict(lr=0.1, betas=(0.9, 0.5), weight_decay=0.3, amsgrad=True)),
    (RMSprop, rmsprop, dict()),
    (RMSprop, rmsprop, dict(lr=0.05, alpha=0.9, eps=1e-6)),
    (RMSprop, rmsprop, dict(lr=0.02, weight_decay=0.3)),
    (RMSprop, rmsprop, dict(lr=0.02, momentum=0.8)),
    (RMSprop, rmsprop, dict(lr=0.02, alpha=0.8, centered=True)),
    (RMSprop, rmsprop, dict(lr=0.01, alpha=0.9, centered=True, momentum=0.5, weight_decay=0.1)),
    (Adagrad, adagrad, dict(lr=0.1)),
    (Adagrad, adagrad, dict(lr=0.3, lr_decay=0.5)),
    (Adagrad, adagrad, dict(lr=0.1, weight_decay=0.4, initial_accumulator_value=0.7)),
    (Adagrad, adagrad, dict(lr=0.2, lr_decay=0.1, weight_decay=0.1, initial_accumulator_value=0.1,
                            eps=1e-3)),
]


@DTYPES
@pytest.mark.parametrize("opt_cls, rule, kw", CASES, ids=[f"{c.__name__}-{kw}" for c, _, kw in CASES])
def test_matches_the_documented_rule(opt_cls, rule, kw, dtype, rtol, atol):
    np.testing.assert_allclose(run(opt_cls, dtype, **kw), reference(rule, dtype, **kw), rtol=rtol,
                               atol=atol)


@pytest.mark.parametrize("opt_cls, kw, option", [
    (Adam, dict(lr=0.1, betas=(0.9, 0.5), amsgrad=True), "amsgrad"),
    (AdamW, dict(lr=0.1, betas=(0.9, 0.5), amsgrad=True), "amsgrad"),
    (RMSprop, dict(lr=0.02, alpha=0.8, centered=True), "centered"),
    (RMSprop, dict(lr=0.02, momentum=0.8), "momentum"),
    (Adagrad, dict(lr=0.3, lr_decay=0.5), "lr_decay"),
    (Adagrad, dict(lr=0.1, initial_accumulator_value=0.7), "initial_accumulator_value"),
], ids=str)
def test_each_option_changes_the_path(opt_cls, kw, option):
    """The cases above would pass with an option ignored if it changed nothing over STEPS steps."""
    without = {k: v for k, v in kw.items() if k != option}
    assert np.abs(run(opt_cls, **kw) - run(opt_cls, **without)).max() > 1e-3


def test_adamw_decay_is_decoupled_from_adam_l2():
    assert not np.allclose(run(AdamW, lr=0.1, weight_decay=0.3), run(Adam, lr=0.1, weight_decay=0.3))

"""``checkpoint``: same derivatives as without it, without keeping the block's intermediates."""

import gc
import weakref

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import dualad
import reverse
from dualad import ops
from dualad.testing import check_grads
from reverse import Tensor, checkpoint, gradients
from reverse._backward import _reachable


def block(w, x):
    """A small layer: several intermediates, two outputs."""
    h = ops.tanh(x @ w)
    return ops.sin(h) * h, (h * h).sum()


def loss_plain(w, x):
    a, b = block(w, x)
    return a.sum() + b


def loss_checkpointed(w, x):
    a, b = checkpoint(block, w, x)
    return a.sum() + b


RNG = np.random.default_rng(0)
W = RNG.normal(size=(3, 2))
XS = RNG.normal(size=(4, 3))


def test_same_gradients_at_the_users_level():
    grads = []
    for loss in (loss_plain, loss_checkpointed):
        w, x = Tensor(W, requires_grad=True), Tensor(XS, requires_grad=True)
        loss(w, x).backward()
        grads.append((w.grad, x.grad))
    for got, want in zip(grads[1], grads[0]):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-14)


@given(arrays(np.float64, (3, 2), elements=st.floats(-2, 2)),
       arrays(np.float64, (4, 3), elements=st.floats(-2, 2)))
def test_same_gradients_inside_reverse_grad(w, x):
    want = reverse.grad(loss_plain, argnums=(0, 1))(w, x)
    got = reverse.grad(loss_checkpointed, argnums=(0, 1))(w, x)
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


def test_same_second_derivatives_in_every_nesting():
    f_plain = lambda w: loss_plain(w, XS)
    f_ckpt = lambda w: loss_checkpointed(w, XS)
    expected = dualad.hessian(f_plain)(W)
    np.testing.assert_allclose(reverse.jacrev(reverse.grad(f_ckpt))(W), expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dualad.hessian(f_ckpt)(W), expected, rtol=1e-10, atol=1e-12)
    v = RNG.normal(size=W.shape)
    _, hv = dualad.jvp(reverse.grad(f_ckpt), (W,), (v,))
    np.testing.assert_allclose(hv, np.tensordot(expected, v, axes=2), rtol=1e-10, atol=1e-12)
    rev_fwd = reverse.grad(lambda w: dualad.jvp(f_ckpt, (w,), (v,))[1])(W)
    np.testing.assert_allclose(rev_fwd, np.tensordot(expected, v, axes=2), rtol=1e-10, atol=1e-12)


def test_create_graph_through_a_checkpoint():
    w = Tensor(W, requires_grad=True)
    (g,) = gradients(loss_checkpointed(w, XS), [w], create_graph=True)
    assert g.requires_grad
    (g * g).sum().backward()
    w2 = Tensor(W, requires_grad=True)
    (g2,) = gradients(loss_plain(w2, XS), [w2], create_graph=True)
    (g2 * g2).sum().backward()
    np.testing.assert_allclose(w.grad, w2.grad, rtol=1e-10)


def test_check_grads_on_a_checkpointed_function():
    check_grads(loss_checkpointed, (W, XS), order=2, modes=("fwd", "rev"))


def test_the_tape_keeps_one_node_for_the_block():
    w = Tensor(W, requires_grad=True)
    plain = _reachable([loss_plain(w, XS).grad_fn])
    ckpt = _reachable([loss_checkpointed(w, XS).grad_fn])
    assert [n.prim.name for n in ckpt].count("checkpoint") == 1
    assert not {"tanh", "sin", "matmul"} & {n.prim.name for n in ckpt}
    assert len(ckpt) < len(plain)


def test_intermediates_are_not_kept_until_backward():
    refs = []

    def traced(x):
        h = ops.exp(x)  # exp's output is saved by sin on a tape
        refs.append(weakref.ref(h.value if isinstance(h, Tensor) else h))
        return ops.sin(h)

    for use_checkpoint in (False, True):
        refs.clear()
        x = Tensor(np.linspace(0.0, 1.0, 6), requires_grad=True)
        y = (checkpoint(traced, x) if use_checkpoint else traced(x)).sum()
        gc.collect()
        kept = refs[0]() is not None
        assert kept is not use_checkpoint
        y.backward()
        np.testing.assert_allclose(x.grad, np.cos(np.exp(x.value)) * np.exp(x.value))


def test_pytrees_constants_and_non_float_outputs():
    def fn(params, x, scale, mode):
        assert mode == "sum" and scale == 3
        return {"y": params["a"] * x * scale, "n": np.arange(2)}

    a = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    out = checkpoint(fn, {"a": a}, np.array([3.0, 4.0]), 3, "sum")
    np.testing.assert_array_equal(out["n"], [0, 1])
    out["y"].sum().backward()
    np.testing.assert_allclose(a.grad, [9.0, 12.0])


def test_integer_inputs_get_no_gradient():
    idx = np.array([2, 0])
    g = reverse.grad(lambda v: checkpoint(lambda u, i: u[i].sum() * 2.0, v, idx))(np.arange(3.0))
    np.testing.assert_array_equal(g, [2.0, 0.0, 2.0])


def test_closing_over_a_tensor_is_a_clear_error():
    w = Tensor(W, requires_grad=True)
    with pytest.raises(TypeError, match=r"closes over.*pass every Tensor"):
        checkpoint(lambda x: x @ w, XS)


def test_no_array_arguments_just_calls_fn():
    assert checkpoint(lambda: 4.0) == 4.0
    with pytest.raises(TypeError, match="callable"):
        checkpoint(3.0, 1.0)

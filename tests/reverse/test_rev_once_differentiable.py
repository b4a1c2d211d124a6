"""``once_differentiable``: a Function's backward on plain arrays, right at first
order, and an error wherever its gradient would be differentiated again."""

import numpy as np
import pytest
from _support.backends import BACKENDS, dtype_name, to_numpy
from _support.functions import Cube
from _support.torch_scenarios import recorded, run_on_reverse

import dualad
import mixed
import reverse
from dualad import ops
from reverse import Function, Tensor, gradients, is_grad_enabled, once_differentiable

SEEN = []


class OnceCube(Cube):
    """Cube, with its backward marked once_differentiable (and recording what it gets)."""

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        SEEN.append((type(x), type(g), is_grad_enabled()))
        return 3.0 * x * x * g


class NumpyOnly(Function):
    """A backward written with NumPy's out= (which no value type can take)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.sin(x)

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        out = np.empty_like(x)
        np.cos(x, out=out)
        out *= g
        return out


def test_first_order_is_right_and_backward_gets_plain_arrays():
    SEEN.clear()
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    (OnceCube.apply(x) * np.array([1.0, 10.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.value, [3.0, 120.0])
    assert SEEN == [(np.ndarray, np.ndarray, False)]


def test_a_numpy_only_backward_works_at_first_order():
    x = Tensor(np.array([0.5, 1.0]), requires_grad=True)
    NumpyOnly.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.value, np.cos([0.5, 1.0]))
    assert reverse.grad(lambda v: NumpyOnly.apply(v).sum())(0.5 * np.ones(1)) == pytest.approx(np.cos(0.5))


def test_create_graph_gives_first_order_and_plain_arrays_to_backward():
    SEEN.clear()
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    (g,) = gradients(OnceCube.apply(x).sum(), [x], create_graph=True)
    np.testing.assert_array_equal(g.value, [3.0, 12.0])
    assert g.requires_grad and SEEN == [(np.ndarray, np.ndarray, False)]


SECOND = "OnceCube.backward is marked @once_differentiable: its gradient cannot be differentiated again"


def test_a_second_backward_through_it_raises():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    (g,) = gradients(OnceCube.apply(x).sum(), [x], create_graph=True)
    with pytest.raises(RuntimeError, match=SECOND):
        gradients(g.sum(), [x])


def test_a_second_backward_raises_also_where_pytorch_drops_the_term():
    # d/dx (x^3 + x^2) = 3x^2 + 2x; differentiating that again needs Cube's backward:
    # PyTorch returns 2 there (the Cube term dropped), dualad raises.
    x = Tensor(2.0, requires_grad=True)
    (g,) = gradients(OnceCube.apply(x) + x ** 2, [x], create_graph=True)
    assert g.item() == 16.0
    with pytest.raises(RuntimeError, match=SECOND):
        gradients(g, [x])


def test_forward_over_reverse_through_it_raises():
    with pytest.raises(RuntimeError, match=SECOND):
        mixed.hvp(lambda v: ops.sum(OnceCube.apply(v)), np.array([1.0, 2.0]), np.ones(2))
    with pytest.raises(RuntimeError, match=SECOND):
        dualad.jvp(reverse.grad(lambda v: ops.sum(OnceCube.apply(v))), (np.array([1.0]),), (np.ones(1),))


def test_reverse_over_reverse_through_it_raises():
    with pytest.raises(RuntimeError, match=SECOND):
        reverse.grad(lambda v: ops.sum(reverse.grad(lambda w: ops.sum(OnceCube.apply(w)))(v)))(np.ones(2))


def test_without_the_decorator_the_second_derivative_is_right():
    hv = mixed.hvp(lambda v: ops.sum(Cube.apply(v)), np.array([1.0, 2.0]), np.ones(2))
    np.testing.assert_allclose(hv, [6.0, 12.0])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_on_every_backend(backend, dtype):
    x = Tensor(backend.asarray(np.array([1.0, 2.0]), dtype), requires_grad=True)
    OnceCube.apply(x).sum().backward()
    assert dtype_name(x.grad.value) == dtype
    np.testing.assert_allclose(to_numpy(x.grad.value), [3.0, 12.0])


def test_matches_torch_where_torch_raises():
    # y = cube(x) * x: the gradient flowing into cube's backward (x) requires grad, so
    # PyTorch marks the result, and a second .backward() raises. (Its autograd.grad with
    # respect to x does not reach the mark and drops the term; dualad raises there too.)
    ours, theirs = run_on_reverse("once_differentiable twice"), recorded("once_differentiable twice")
    assert ours["grad"] == theirs["grad"] == (4.0 * np.array([1.0, 8.0])).tolist()
    assert ours["second backward"] == theirs["second backward"] == "RuntimeError"
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    (g,) = gradients((OnceCube.apply(x) * x).sum(), [x], create_graph=True)
    with pytest.raises(RuntimeError, match="differentiate twice|once_differentiable"):
        g.sum().backward()

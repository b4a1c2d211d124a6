"""The examples of the PyTorch autograd tutorial, on ``reverse.Tensor``."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import reverse
from dualad import ops
from reverse import Tensor, gradients


def test_grad_of_sum_of_squares():
    x = Tensor(np.array([2.0, 3.0]), requires_grad=True)
    (x ** 2).sum().backward()
    np.testing.assert_array_equal(x.grad, [4.0, 6.0])
    np.testing.assert_array_equal(reverse.grad(lambda v: (v ** 2).sum())(np.array([2.0, 3.0])),
                                  [4.0, 6.0])


def test_gradients_of_two_outputs_with_grad_outputs():
    # d/dx1 (x1 x2 + x1 + x2) = x2 + 1 = 3 and d/dx2 = x1 + 1 = 2 at (1, 2).
    x1, x2 = Tensor(1.0, requires_grad=True), Tensor(2.0, requires_grad=True)
    g1, g2 = gradients([x1 * x2, x1 + x2], [x1, x2], grad_outputs=[1.0, 1.0])
    assert (g1, g2) == (3.0, 2.0)
    assert x1.grad is None and x2.grad is None  # gradients() leaves .grad alone


def test_gradients_with_weighted_grad_outputs():
    x1, x2 = Tensor(1.0, requires_grad=True), Tensor(2.0, requires_grad=True)
    g1, g2 = gradients([x1 * x2, x1 + x2], [x1, x2], grad_outputs=[2.0, -1.0])
    assert (g1, g2) == (2.0 * 2.0 - 1.0, 2.0 * 1.0 - 1.0)


def test_partial_derivatives_of_xy_plus_x_squared():
    x, y = Tensor(2.0, requires_grad=True), Tensor(3.0, requires_grad=True)
    z = x * y + x ** 2
    z.backward()
    assert (x.grad, y.grad) == (7.0, 2.0)
    assert reverse.grad(lambda a, b: a * b + a ** 2, argnums=(0, 1))(2.0, 3.0) == (7.0, 2.0)


@given(st.integers(min_value=0, max_value=60), st.floats(-10.0, 10.0))
def test_loop_of_additions_has_unit_derivative(n, w0):
    w = Tensor(w0, requires_grad=True)
    y = w
    for i in range(1, n + 1):
        y = y + i
    if n == 0:
        assert y is w  # no operation was recorded: y is the leaf itself
    y.backward()
    assert w.grad == 1.0


@pytest.mark.parametrize("w0, expected", [(2.5, 1.0), (-2.5, 0.0), (1e-300, 1.0), (-1e-300, 0.0)])
@pytest.mark.parametrize("relu", [lambda w: ops.maximum(w, 0.0), lambda w: np.maximum(w, 0.0),
                                  ops.relu], ids=["ops.maximum", "np.maximum", "ops.relu"])
def test_max_with_zero_has_a_valid_subgradient(relu, w0, expected):
    w = Tensor(w0, requires_grad=True)
    (relu(w) + 5.0).backward()
    assert w.grad == expected


@pytest.mark.parametrize("relu, expected", [(lambda w: ops.maximum(w, 0.0), 0.5), (ops.relu, 0.0)],
                         ids=["maximum", "relu"])
def test_max_with_zero_at_the_kink_follows_torch(relu, expected):
    """torch.maximum shares a tie's derivative; torch.relu'(0) = 0."""
    w = Tensor(0.0, requires_grad=True)
    (relu(w) + 5.0).backward()
    assert w.grad == expected


def test_max_with_zero_elementwise_array():
    w = Tensor(np.array([-1.0, 2.0, -3.0, 4.0]), requires_grad=True)
    (ops.maximum(w, 0.0) + 5.0).sum().backward()
    np.testing.assert_array_equal(w.grad, [0.0, 1.0, 0.0, 1.0])

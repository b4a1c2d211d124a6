"""``.grad`` is a Tensor, as PyTorch's: accumulated into in place at first order,
a new recorded sum under ``create_graph``, and assignable from a Tensor or an array."""

import warnings

import numpy as np
import pytest
from _support.torch_scenarios import recorded, run_on_reverse

from reverse import Tensor


def test_grad_is_a_tensor_that_does_not_require_grad():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    (x * x).sum().backward()
    assert type(x.grad) is Tensor and not x.grad.requires_grad and x.grad.is_leaf
    np.testing.assert_array_equal(x.grad.value, [2.0, 4.0])


def test_backward_adds_into_the_same_grad_tensor():
    # PyTorch accumulates a first-order gradient in place: a reference taken after
    # the first backward is still x.grad after the second, and holds the sum.
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    (x * x).sum().backward()
    held = x.grad
    (x * 3.0).sum().backward()
    assert held is x.grad
    np.testing.assert_array_equal(held.value, [5.0, 7.0])


def test_a_scalar_grad_accumulates_in_its_tensor_too():
    x = Tensor(2.0, requires_grad=True)
    (x * x).backward()
    held = x.grad
    (x * x * x).backward()
    assert held is x.grad and held.item() == 4.0 + 12.0


def test_create_graph_makes_a_grad_that_requires_grad_and_a_new_one_per_backward():
    x = Tensor(2.0, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the reference-cycle warning, tested elsewhere
        (x ** 3).backward(create_graph=True)
        first = x.grad
        (x ** 3).backward(create_graph=True)
    assert first.requires_grad and x.grad is not first  # as PyTorch: out of place when recorded
    assert x.grad.item() == 24.0
    # and the recorded sum differentiates: d/dx (3x^2 + 3x^2) = 12x
    second = x.grad
    x.grad = None
    second.backward()
    assert x.grad.item() == 24.0


def test_assigning_an_array_wraps_it_without_a_copy():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    a = np.array([0.5, 0.5])
    x.grad = a
    assert type(x.grad) is Tensor and x.grad.value is a
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad.value, [2.5, 4.5])
    np.testing.assert_array_equal(a, [0.5, 0.5])  # the sum is a new array: the user's is kept


def test_assigning_a_tensor_keeps_it_and_none_clears():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    g = Tensor(np.array([1.0, 1.0]))
    x.grad = g
    assert x.grad is g
    x.grad = None
    assert x.grad is None


@pytest.mark.parametrize("value", ["a", [1.0, 2.0], object()], ids=["str", "list", "object"])
def test_assigning_something_else_raises_naming_it(value):
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    with pytest.raises(TypeError, match=rf"Tensor.grad: the value assigned must be a Tensor, an "
                                        rf"array or None, got {type(value).__name__}"):
        x.grad = value


def test_grad_compares_with_pytest_approx():
    # Tensor's == leaves the comparison to objects that ask for it (NEP 13), as arrays do.
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    (x * x).sum().backward()
    assert x.grad == pytest.approx([2.0, 4.0])
    assert x.grad != pytest.approx([2.0, 5.0])


def test_grad_identity_and_accumulation_match_torch():
    """.grad's object, values and flag after a second backward accumulates, as PyTorch's
    (recorded by make_torch_behaviour_golden.py)."""
    assert run_on_reverse("grad identity and accumulation") == recorded("grad identity and accumulation")


def test_each_grad_owns_its_array():
    # The walk hands both leaves of a + b the same array, and sum's cotangent is a
    # read-only broadcast: each .grad gets its own, writable, as PyTorch's .grad is.
    a = Tensor(np.ones(3), requires_grad=True)
    b = Tensor(np.ones(3), requires_grad=True)
    (a + b).sum().backward()
    a.grad.zero_()
    np.testing.assert_array_equal(a.grad.value, [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(b.grad.value, [1.0, 1.0, 1.0])


def test_grad_does_not_share_the_cotangent_passed_to_backward():
    x = Tensor(np.ones(2), requires_grad=True)
    g = np.array([2.0, 3.0])
    (x + 0.0).backward(gradient=g)
    x.grad.zero_()
    np.testing.assert_array_equal(g, [2.0, 3.0])


def test_a_retained_grad_owns_its_array_too():
    x = Tensor(np.ones(2), requires_grad=True)
    h = x + 0.0
    h.retain_grad()
    (h + x).sum().backward()
    h.grad.zero_()
    np.testing.assert_array_equal(x.grad.value, [2.0, 2.0])

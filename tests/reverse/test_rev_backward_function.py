"""``reverse.backward(tensors, grad_tensors, retain_graph, create_graph, inputs)``,
as ``torch.autograd.backward``: values by hand, the argument forms it takes, its errors."""

import numpy as np
import pytest
from _support.torch_scenarios import recorded, run_on_reverse

import reverse
from reverse import Tensor


def _leaves():
    return Tensor(np.array([1.0, 2.0]), requires_grad=True), Tensor(3.0, requires_grad=True)


def test_several_outputs_with_their_cotangents_sum_into_grad():
    a, b = _leaves()
    # d/da [1 * (sum(a) b) + 2 * b^2] = b ; d/db = sum(a) + 4 b
    reverse.backward([a.sum() * b, b * b], grad_tensors=[Tensor(1.0), np.float64(2.0)])
    np.testing.assert_array_equal(a.grad.value, [3.0, 3.0])
    assert b.grad.item() == 3.0 + 12.0


def test_one_tensor_and_default_cotangent():
    a, b = _leaves()
    reverse.backward(a.sum() * b)
    np.testing.assert_array_equal(a.grad.value, [3.0, 3.0])
    assert b.grad.item() == 3.0


def test_one_cotangent_for_one_non_scalar_output():
    a, _ = _leaves()
    reverse.backward(a * 2.0, grad_tensors=np.array([1.0, 10.0]))
    np.testing.assert_array_equal(a.grad.value, [2.0, 20.0])


def test_a_none_cotangent_among_several_is_the_default():
    a, b = _leaves()
    reverse.backward([a * b, b * 2.0], grad_tensors=[np.array([1.0, 1.0]), None])
    assert b.grad.item() == 3.0 + 2.0


def test_inputs_limit_which_grads_are_filled():
    a, b = _leaves()
    h = a * 2.0  # a computed input gets its gradient too, as in PyTorch
    reverse.backward((h * b).sum(), inputs=[a, h])
    np.testing.assert_array_equal(a.grad.value, [6.0, 6.0])
    np.testing.assert_array_equal(h.grad.value, [3.0, 3.0])
    assert b.grad is None


def test_retain_graph_and_create_graph():
    a, b = _leaves()
    y = (a * a).sum() * b
    reverse.backward(y, retain_graph=True)
    reverse.backward(y)
    np.testing.assert_array_equal(a.grad.value, [12.0, 24.0])  # 2 a b, twice
    a.grad = None
    with pytest.warns(UserWarning, match="reference cycle"):
        reverse.backward((a ** 3).sum(), create_graph=True)
    assert a.grad.requires_grad
    g = a.grad
    a.grad = None
    reverse.backward(g.sum())
    np.testing.assert_array_equal(a.grad.value, [6.0, 12.0])  # d/da sum(3 a^2)


def test_no_tensors_is_nothing_to_do():
    reverse.backward([])


@pytest.mark.parametrize("call, error, message", [
    (lambda a, b: reverse.backward([a * 2.0, b * 3.0], grad_tensors=[np.ones(2)]), ValueError,
     r"grad_tensors has 1 entries for 2 tensors"),
    (lambda a, b: reverse.backward(a * 2.0), RuntimeError,
     r"grad can be implicitly created only for real scalar outputs, got shape \(2,\)"),
    (lambda a, b: reverse.backward([1.0]), RuntimeError, r"output 0 does not require grad"),
    (lambda a, b: reverse.backward(Tensor(np.ones(2)).sum()), RuntimeError,
     r"output 0 does not require grad"),
    (lambda a, b: reverse.backward(b * b, inputs=[]), ValueError, r"backward: inputs is empty"),
    (lambda a, b: reverse.backward(b * b, inputs=[b, Tensor(1.0)]), RuntimeError,
     r"inputs\[1\] does not require grad"),
    (lambda a, b: reverse.backward(a * 2.0, grad_tensors=np.ones(3)), ValueError,
     r"cotangent shape \(3,\) does not match output shape \(2,\)"),
], ids=["count", "non-scalar", "not a tensor", "no grad", "empty inputs", "input without grad",
        "cotangent shape"])
def test_errors_name_what_was_wrong(call, error, message):
    a, b = _leaves()
    with pytest.raises(error, match=message):
        call(a, b)


def test_matches_torch():
    """Gradients of a, b and the inner h, as torch.autograd.backward gives them (recorded)."""
    assert run_on_reverse("backward with inputs") == recorded("backward with inputs")

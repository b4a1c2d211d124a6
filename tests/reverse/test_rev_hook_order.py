"""Tensor hooks and ``retain_grad`` in PyTorch 2's order: hooks in the order they
were registered, and the gradient that ``retain_grad`` keeps is the one after all of
them, also those registered after it (PyTorch runs its retains-grad hook last)."""

import numpy as np
import pytest
from _support.torch_scenarios import recorded, run_on_reverse

from reverse import Tensor


def _scenario(make, retain_first):
    """h = 3x, L = sum(h ** 2): dL/dh = 6x; the hooks double it, then multiply by 10."""
    x = make([1.0, 2.0])
    h = x * 3.0
    seen = []
    if retain_first:
        h.retain_grad()
    h.register_hook(lambda g: seen.append(("double", g * 1.0)) or g * 2.0)
    if not retain_first:
        h.retain_grad()
    h.register_hook(lambda g: seen.append(("times ten", g * 1.0)) or g * 10.0)
    (h * h).sum().backward()
    return x, h, seen


@pytest.mark.parametrize("retain_first", [True, False], ids=["retain_grad first", "hook first"])
def test_retain_grad_keeps_the_gradient_after_every_hook(retain_first):
    x, h, seen = _scenario(lambda v: Tensor(np.array(v), requires_grad=True), retain_first)
    assert [name for name, _ in seen] == ["double", "times ten"]  # in registration order
    np.testing.assert_array_equal(seen[0][1], [6.0, 12.0])
    np.testing.assert_array_equal(seen[1][1], [12.0, 24.0])
    np.testing.assert_array_equal(h.grad.value, [120.0, 240.0])  # 6x * 2 * 10
    np.testing.assert_array_equal(x.grad.value, [360.0, 720.0])  # and that flows on: * 3


@pytest.mark.parametrize("scenario", ["hooks, retain_grad first", "hooks, hook first"])
def test_hook_and_retain_grad_order_matches_torch(scenario):
    """The hooks' order and the gradients kept, as PyTorch's (recorded by
    make_torch_behaviour_golden.py)."""
    assert run_on_reverse(scenario) == recorded(scenario)


def test_a_retained_gradient_accumulates_as_a_leafs_does():
    x = Tensor(np.array([1.0]), requires_grad=True)
    h = x * 3.0
    h.retain_grad()
    y = (h * h).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_array_equal(h.grad.value, [12.0])  # 6 twice, as PyTorch


def test_removing_a_hook_keeps_retain_grad_working():
    x = Tensor(np.array([1.0]), requires_grad=True)
    h = x * 3.0
    h.retain_grad()
    handle = h.register_hook(lambda g: g * 2.0)
    handle.remove()
    (h * h).sum().backward()
    np.testing.assert_array_equal(h.grad.value, [6.0])


def test_retain_grad_on_a_tensor_that_does_not_require_grad_raises():
    with pytest.raises(RuntimeError, match=r"retain_grad\(\) on a tensor that does not require grad"):
        Tensor(np.ones(2)).retain_grad()


def test_retains_grad_says_whether_retain_grad_was_called():
    x = Tensor(np.ones(2), requires_grad=True)
    h = x * 2.0
    assert not h.retains_grad
    h.retain_grad()
    assert h.retains_grad
    x.retain_grad()  # a leaf keeps its gradient anyway: nothing to do, as in PyTorch
    assert not x.retains_grad


def test_retain_grad_errors_and_flags_match_torch():
    want = recorded("retain_grad errors and flags")
    assert want == {"without grad": "RuntimeError", "leaf retains_grad": False}
    assert run_on_reverse("retain_grad errors and flags") == want


@pytest.mark.parametrize("on", ["leaf", "computed"])
def test_a_hook_is_given_a_tensor_without_a_graph_as_in_pytorch(on):
    """PyTorch code calls Tensor methods on the gradient a hook gets (clone, mul_);
    it used to get the bare array. A Tensor it returns replaces the gradient."""
    x = Tensor(np.array([1.0, -2.0]), requires_grad=True)
    h = x * 3.0
    given = []

    def hook(g):
        given.append((type(g), g.requires_grad))
        return g.clone().clip(-1.0, 1.0)

    (x if on == "leaf" else h).register_hook(hook)
    (h * h).sum().backward()  # dL/dh = 6x * ... = (18, -36) at the leaf, (6, -12) at h
    assert given == [(Tensor, False)]
    expected = [1.0, -1.0] if on == "leaf" else [3.0, -3.0]  # clamped at x, or clamped at h then times 3
    np.testing.assert_array_equal(x.grad.value, expected)
    assert recorded(f"hook replaces the gradient, {on}") == expected  # PyTorch's

"""``reverse.nn``: the seed's PyTorch training loop (a model class, AdamW,
MSELoss) gives PyTorch's numbers, and Module's registration, state dicts,
modes and ``functional_call`` behave as PyTorch's.

Recorded: torch_nn_golden.json, written by make_torch_nn_golden.py from
PyTorch itself; where PyTorch is installed the loop also runs against it live.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
from _support.nn_case import model_class, run

import reverse
from reverse import Tensor, nn, optim

GOLDEN = json.loads((pathlib.Path(__file__).parent / "torch_nn_golden.json").read_text())


def _check(ours, theirs):
    assert ours["names"] == theirs["names"]
    for part in ("first_grads", "final"):  # assert_allclose would broadcast a wrong shape
        assert all(np.shape(ours[part][n]) == np.shape(theirs[part][n]) for n in theirs["names"])
    np.testing.assert_allclose(ours["losses"], theirs["losses"], rtol=1e-13)
    for name in theirs["names"]:
        np.testing.assert_allclose(ours["first_grads"][name], theirs["first_grads"][name], rtol=1e-12,
                                   atol=1e-15)
        np.testing.assert_allclose(ours["final"][name], theirs["final"][name], rtol=1e-12, atol=1e-15)


def test_the_seed_training_loop_gives_pytorchs_numbers():
    _check(run(nn, optim, Tensor, GOLDEN["initial"]), GOLDEN)


def test_the_seed_training_loop_gives_pytorchs_numbers_live():
    torch = pytest.importorskip("torch")
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # as the recording: float64 layers
    try:
        theirs = run(torch.nn, torch.optim, lambda a: torch.tensor(a, dtype=torch.float64), GOLDEN["initial"])
    finally:
        torch.set_default_dtype(default)
    _check(run(nn, optim, Tensor, GOLDEN["initial"]), theirs)


def _net():
    return model_class(nn)(10, 5, 1)


def test_parameters_are_registered_in_pytorchs_order():
    model = _net()
    assert [n for n, _ in model.named_parameters()] == ["layer1.weight", "layer1.bias", "layer2.weight",
                                                          "layer2.bias"]
    assert [tuple(p.shape) for p in model.parameters()] == [(5, 10), (5,), (1, 5), (1,)]
    model.layer1.bias = None  # replaced by a non-parameter: unregistered
    assert "layer1.bias" not in dict(model.named_parameters())


def test_linear_draws_pytorchs_default_range():
    layer = nn.Linear(400, 3, rng=np.random.default_rng(0))
    bound = 1 / np.sqrt(400)
    assert np.abs(layer.weight.value).max() <= bound and np.abs(layer.weight.value).max() > 0.9 * bound


def test_state_dict_round_trip_and_its_errors():
    a, b = _net(), _net()
    b.load_state_dict(a.state_dict())
    for (_, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        np.testing.assert_array_equal(p.value, q.value)
    state = a.state_dict()
    state["layer1.weight"] = np.zeros((3, 3))
    with pytest.raises(ValueError, match=r"layer1.weight has shape \(5, 10\), the value given \(3, 3\)"):
        b.load_state_dict(state)
    with pytest.raises(KeyError, match=r"missing keys \['layer2.bias'\], unexpected keys \[\]"):
        b.load_state_dict({k: v for k, v in a.state_dict().items() if k != "layer2.bias"})


def test_dropout_drops_in_training_only():
    drop = nn.Dropout(0.5, rng=np.random.default_rng(0))
    x = Tensor(np.ones(1000))
    y = drop(x).value
    assert set(np.unique(y)) == {0.0, 2.0} and 400 < np.count_nonzero(y) < 600
    assert drop.eval()(x) is x


def test_functional_call_gives_the_gradient_backward_gives():
    model = _net().eval()  # no dropout: both calls compute one function
    x, y = np.ones((4, 10)), np.zeros((4, 10))
    nn.MSELoss()(model(Tensor(x)), Tensor(y)).backward()
    params = {k: p.detach().value for k, p in model.named_parameters()}
    g = reverse.grad(lambda p: nn.MSELoss()(nn.functional_call(model, p, (x,)), y))(params)
    for k, p in model.named_parameters():
        np.testing.assert_allclose(g[k], p.grad.value, rtol=1e-13)
    assert model.layer1.weight.requires_grad  # the model's own parameters are back
    with pytest.raises(KeyError, match=r"'layer3.weight' is not a parameter of SimpleNet"):
        nn.functional_call(model, {"layer3.weight": 1.0}, (x,))


def test_sequential_and_module_errors():
    seq = nn.Sequential(nn.Linear(3, 2, rng=np.random.default_rng(1)), nn.ReLU())
    assert seq(Tensor(np.ones((2, 3)))).shape == (2, 2)
    assert [n for n, _ in seq.named_parameters()] == ["0.weight", "0.bias"]
    with pytest.raises(TypeError, match=r"Sequential: argument 0 must be a Module, got int"):
        nn.Sequential(3)

    class Forgot(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(np.ones(2))

    with pytest.raises(AttributeError, match=r"call super\(\).__init__\(\) first"):
        Forgot()
    with pytest.raises(ValueError, match=r"MSELoss: input has shape \(2,\), target \(3,\)"):
        nn.MSELoss()(Tensor(np.ones(2)), Tensor(np.ones(3)))

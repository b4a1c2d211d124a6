"""Behaviour of PyTorch's autograd that ``reverse`` copies, written once for a
*kit* of either library: hooks and the order they run in, grad modes, saved
tensor hooks, ``backward``'s inputs, ``.grad``'s identity, once_differentiable,
the Tensor methods' shapes, errors and states.

Each scenario takes a kit and returns plain data (lists of numbers, flags, the
name of the exception raised); ``tests/reverse/make_torch_behaviour_golden.py``
records what PyTorch gives in torch_behaviour_golden.json, and the tests in
tests/reverse compare ``reverse`` with that record, so CI without PyTorch
still checks against PyTorch.
"""

from __future__ import annotations

import functools
import json
import pathlib
from types import SimpleNamespace
from typing import Any, Callable

import numpy as np


@functools.cache
def _recording() -> dict:
    path = pathlib.Path(__file__).resolve().parent.parent / "reverse" / "torch_behaviour_golden.json"
    return json.loads(path.read_text())


def recorded(name: str) -> Any:
    """What PyTorch gave in scenario ``name``, as make_torch_behaviour_golden.py recorded it."""
    return _recording()["cases"][name]


def run_on_reverse(name: str) -> Any:
    """What ``reverse`` gives in scenario ``name``."""
    return SCENARIOS[name](reverse_kit())

# Method calls of the elementwise Tensor methods (test_rev_tensor_methods.py adds their
# values and derivatives by hand).
METHOD_CALLS = {
    "exp": lambda t: t.exp(), "log": lambda t: t.log(), "sin": lambda t: t.sin(), "cos": lambda t: t.cos(),
    "tanh": lambda t: t.tanh(), "sigmoid": lambda t: t.sigmoid(), "relu": lambda t: t.relu(),
    "abs": lambda t: t.abs(), "sqrt": lambda t: t.sqrt(), "pow": lambda t: t.pow(2.5),
}
METHODS_X = np.array([[0.5, 1.2, 0.3], [0.7, 0.9, 1.1]])


def reverse_kit() -> SimpleNamespace:
    import reverse
    from dualad import ops
    return SimpleNamespace(
        api=reverse, Tensor=reverse.Tensor, tensor=lambda v, requires_grad=False: reverse.Tensor(
            np.array(v, dtype=float), requires_grad=requires_grad),
        sin=ops.sin, exp=ops.exp, saved_tensors_hooks=reverse.saved_tensors_hooks,
        backward=reverse.backward, gradients=reverse.gradients, Function=reverse.Function,
        once_differentiable=reverse.once_differentiable)


def torch_kit() -> SimpleNamespace:
    import torch
    from torch.autograd.function import once_differentiable
    return SimpleNamespace(
        api=torch, Tensor=torch.Tensor, tensor=lambda v, requires_grad=False: torch.tensor(
            v, dtype=torch.float64, requires_grad=requires_grad),
        sin=torch.sin, exp=torch.exp, saved_tensors_hooks=torch.autograd.graph.saved_tensors_hooks,
        backward=torch.autograd.backward, gradients=torch.autograd.grad, Function=torch.autograd.Function,
        once_differentiable=once_differentiable)


def _values(t: Any) -> Any:
    return None if t is None else t.tolist()


def _raised(call: Callable[[], Any]) -> str | None:
    """The name of the exception ``call`` raises, or None."""
    try:
        call()
    except Exception as error:  # noqa: BLE001 - the type is what is recorded
        return type(error).__name__
    return None


def hooks_and_retain_grad(k, retain_first: bool) -> dict:
    """h = 3x, L = sum(h ** 2): two hooks on h, retain_grad before or between them."""
    x = k.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3.0
    seen = []
    if retain_first:
        h.retain_grad()
    h.register_hook(lambda g: seen.append("double") or g * 2.0)
    if not retain_first:
        h.retain_grad()
    h.register_hook(lambda g: seen.append("times ten") or g * 10.0)
    (h * h).sum().backward()
    return {"x.grad": _values(x.grad), "h.grad": _values(h.grad), "hooks": seen}


def retain_grad_errors_and_flags(k) -> dict:
    x = k.tensor([1.0, 1.0], requires_grad=True)
    x.retain_grad()  # a leaf keeps its gradient anyway
    return {"without grad": _raised(lambda: k.tensor([1.0, 1.0]).retain_grad()),
            "leaf retains_grad": x.retains_grad}


def hook_replaces_the_gradient(k, on: str) -> list:
    x = k.tensor([1.0, -2.0], requires_grad=True)
    h = x * 3.0
    (x if on == "leaf" else h).register_hook(lambda g: g.clone().clip(-1.0, 1.0))
    (h * h).sum().backward()
    return _values(x.grad)


def grad_mode_sequence(k) -> list:
    """The grad-mode states PyTorch's documentation describes, step by step: a
    context puts back the mode it found (no_grad, enable_grad: on entry;
    set_grad_enabled: when made), and the script turns grad off before each."""
    api, states = k.api, []
    api.set_grad_enabled(False)
    states.append(api.is_grad_enabled())
    with api.no_grad():
        api.set_grad_enabled(True)
        states.append(api.is_grad_enabled())
    states.append(api.is_grad_enabled())
    api.set_grad_enabled(False)
    with api.enable_grad():
        states.append(api.is_grad_enabled())
    states.append(api.is_grad_enabled())
    with api.set_grad_enabled(True):
        api.set_grad_enabled(False)
        states.append(api.is_grad_enabled())
    states.append(api.is_grad_enabled())
    switch = api.set_grad_enabled(True)
    states.append(api.is_grad_enabled())
    with switch:
        states.append(api.is_grad_enabled())
    states.append(api.is_grad_enabled())
    api.set_grad_enabled(True)
    return states


def inference_mode_flags(k) -> list:
    api, x, out = k.api, k.tensor([1.0, 1.0], requires_grad=True), []
    with api.inference_mode():
        out.append((x * x).requires_grad)
        with api.inference_mode(False):
            out.append((x * x).requires_grad)
        with api.enable_grad():
            out.append((x * x).requires_grad)
    with api.no_grad():
        with api.inference_mode(False):
            out.append((x * x).requires_grad)
    out.append(api.inference_mode(lambda: (x * x).requires_grad)())
    return out


def saved_tensors_hooks_calls(k) -> dict:
    calls = []
    x = k.tensor([0.5, 1.0], requires_grad=True)
    with k.saved_tensors_hooks(lambda t: calls.append("pack") or t, lambda p: calls.append("unpack") or p):
        y = (k.exp(k.sin(x)) * 2.0 + x * x).sum()
    packed = list(calls)
    y.backward()
    return {"packed": packed, "calls": calls, "x.grad": _values(x.grad)}


def grad_identity_and_accumulation(k) -> dict:
    x = k.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    g = x.grad
    (x * 3.0).sum().backward()
    return {"same object": g is x.grad, "held": _values(g), "requires_grad": x.grad.requires_grad}


def backward_with_inputs(k) -> list:
    a, b = k.tensor([1.0, 2.0], requires_grad=True), k.tensor(3.0, requires_grad=True)
    h = a * 2.0
    k.backward([(h * b).sum(), b * b], grad_tensors=[k.tensor(1.0), k.tensor(2.0)], inputs=[a, b, h])
    return [_values(t.grad) for t in (a, b, h)]


def once_differentiable_twice(k) -> dict:
    """y = cube(x) * x: the gradient flowing into cube's backward requires grad, so
    the result is marked, and its backward raises."""
    class OnceCube(k.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        @k.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3.0 * x * x * g

    x = k.tensor([1.0, 2.0], requires_grad=True)
    (g,) = k.gradients((OnceCube.apply(x) * x).sum(), [x], create_graph=True)
    return {"grad": _values(g), "second backward": _raised(lambda: g.sum().backward())}


# The shapes PyTorch gives, as its documentation states them: (input shape, call, shape).
SHAPES = [
    ((2, 3), lambda t: t.view(3, 2), (3, 2)),
    ((2, 3), lambda t: t.view(-1), (6,)),
    ((2, 3), lambda t: t.unsqueeze(-1), (2, 3, 1)),
    ((2, 3), lambda t: t.unsqueeze(-3), (1, 2, 3)),
    ((2, 3), lambda t: t.unsqueeze(2), (2, 3, 1)),
    ((), lambda t: t.unsqueeze(0), (1,)),
    ((), lambda t: t.unsqueeze(-1), (1,)),
    ((1, 3, 1), lambda t: t.squeeze(), (3,)),
    ((1, 3, 1), lambda t: t.squeeze(1), (1, 3, 1)),  # dim 1 has size 3: kept, no error
    ((1, 3, 1), lambda t: t.squeeze(0), (3, 1)),
    ((1, 3, 1), lambda t: t.squeeze(-1), (1, 3)),
    ((1, 3, 1), lambda t: t.squeeze((0, 1)), (3, 1)),
    ((1, 3, 1), lambda t: t.squeeze(dim=(0, 2)), (3,)),
    ((), lambda t: t.squeeze(0), ()),
    ((), lambda t: t.squeeze(-1), ()),
    ((), lambda t: t.t(), ()),
    ((3,), lambda t: t.t(), (3,)),
    ((2, 3), lambda t: t.t(), (3, 2)),
    ((2, 3, 4), lambda t: t.T, (4, 3, 2)),
]

# PyTorch's exception type, and what ours says (TypeError: torch's view(dtype) reinterprets bits).
ERRORS = [
    ((2, 3), lambda t: t.view(4, 2), RuntimeError,
     r"view: shape \(4, 2\) is invalid for a tensor of 6 elements"),
    ((2, 3), lambda t: t.view(-1, -1), RuntimeError, r"only one dimension can be -1"),
    ((2, 3), lambda t: t.view(4, -1), RuntimeError, r"invalid for a tensor of 6 elements"),
    ((2, 3), lambda t: t.view(np.int64), TypeError, r"view: the shape must be ints.*astype"),
    ((2, 3), lambda t: t.unsqueeze(3), IndexError, r"unsqueeze: dim 3 is out of range.*\[-3, 2\]"),
    ((2, 3), lambda t: t.unsqueeze(-4), IndexError, r"unsqueeze: dim -4 is out of range"),
    ((1, 3, 1), lambda t: t.squeeze(3), IndexError, r"squeeze: dim 3 is out of range.*\[-3, 2\]"),
    ((), lambda t: t.squeeze(1), IndexError, r"squeeze: dim 1 is out of range.*\[-1, 0\]"),
    ((2, 3, 4), lambda t: t.t(), RuntimeError,
     r"t\(\) takes a tensor of at most 2 dimensions, got shape \(2, 3, 4\)"),
    ((3,), lambda t: t.mm(t.unsqueeze(1)), RuntimeError,
     r"mm: self must be a matrix \(2-d\), got shape \(3,\)"),
    ((2, 3), lambda t: t.mm(t.unsqueeze(0)), RuntimeError,
     r"mm: mat2 must be a matrix \(2-d\), got shape \(1, 2, 3\)"),
    ((2,), lambda t: t.item(), RuntimeError, r"item\(\): a Tensor with 2 elements \(shape \(2,\)\)"),
]


def _zeros(k, shape):
    return k.tensor(np.zeros(shape).tolist())


def method_gradients(k) -> dict:
    x = np.where(np.arange(6).reshape(2, 3) % 2 == 0, METHODS_X, -METHODS_X)
    out = {}
    for name, call in METHOD_CALLS.items():
        t = k.tensor((np.abs(x) if name in ("log", "sqrt", "pow") else x).tolist(), requires_grad=True)
        call(t).sum().backward()
        out[name] = _values(t.grad)
    return out


def method_shapes(k) -> list:
    return [list(call(_zeros(k, shape)).shape) for shape, call, _ in SHAPES]


def method_errors(k) -> list:
    return [None if error is TypeError else _raised(lambda s=shape, c=call: c(_zeros(k, s)))
            for shape, call, error, _ in ERRORS]


def numpy_of_a_tensor_that_requires_grad(k) -> dict:
    try:
        k.tensor([1.0, 1.0], requires_grad=True).numpy()
        message = ""
    except (RuntimeError, TypeError) as error:
        message = str(error)
    forced = k.tensor([1.0, 1.0], requires_grad=True).numpy(force=True)
    return {"says detach().numpy()": "detach().numpy()" in message, "forced is an ndarray": isinstance(
        forced, np.ndarray)}


def f_strings(k) -> dict:
    return {"0-d": f"{k.tensor(1.23456, requires_grad=True):.4f}",
            "size 1": _raised(lambda: f"{k.tensor([1.5]):.2f}")}


def data_is_not_tracked(k) -> list:
    w = k.tensor([1.0, 2.0], requires_grad=True)
    y = (w * w).sum()
    with k.api.no_grad():
        d = w.data
        d *= 0.5
    y.backward()  # .data changes are not tracked: no error, the graph read the new values
    return _values(w.grad)


def detach_in_place(k) -> list:
    y = k.tensor([1.0, 1.0], requires_grad=True) * 2.0
    y.detach_()
    return [y.requires_grad, y.is_leaf, y.grad_fn is None]


def zero_in_place(k) -> dict:
    x = k.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    y.zero_()
    (y + x).sum().backward()
    w = k.tensor([1.0, 1.0])
    z = (x * w).sum()
    w.zero_()
    return {"x.grad": _values(x.grad), "saved then zeroed": _raised(z.backward)}


def requires_grad_on_a_computed_tensor(k) -> dict:
    y = k.tensor([1.0, 1.0], requires_grad=True) * 2.0
    return {"returns self": y.requires_grad_() is y, "False": _raised(lambda: y.requires_grad_(False))}


SCENARIOS: dict[str, Callable[[SimpleNamespace], Any]] = {
    "hooks, retain_grad first": lambda k: hooks_and_retain_grad(k, True),
    "hooks, hook first": lambda k: hooks_and_retain_grad(k, False),
    "retain_grad errors and flags": retain_grad_errors_and_flags,
    "hook replaces the gradient, leaf": lambda k: hook_replaces_the_gradient(k, "leaf"),
    "hook replaces the gradient, computed": lambda k: hook_replaces_the_gradient(k, "computed"),
    "grad mode sequence": grad_mode_sequence,
    "inference mode": inference_mode_flags,
    "saved tensors hooks": saved_tensors_hooks_calls,
    "grad identity and accumulation": grad_identity_and_accumulation,
    "backward with inputs": backward_with_inputs,
    "once_differentiable twice": once_differentiable_twice,
    "method gradients": method_gradients,
    "method shapes": method_shapes,
    "method errors": method_errors,
    "numpy of a tensor that requires grad": numpy_of_a_tensor_that_requires_grad,
    "f-strings": f_strings,
    "data is not tracked": data_is_not_tracked,
    "detach_ in place": detach_in_place,
    "zero_ in place": zero_in_place,
    "requires_grad_ on a computed tensor": requires_grad_on_a_computed_tensor,
}


def spelled_names(k) -> list:
    """The PyTorch names reverse.Tensor answers with a spelling hint that the kit's Tensor has."""
    from reverse._torch_methods import IN_PLACE_SPELLINGS, SPELLINGS
    return sorted(n for n in (*SPELLINGS, *IN_PLACE_SPELLINGS) if hasattr(k.Tensor, n))


SCENARIOS["spelled names"] = spelled_names


CHECKPOINT_X = [[0.5, -1.0], [2.0, 0.25], [-0.3, 0.8], [1.1, 1.4]]


def checkpoint_of_a_linear_layer(k) -> list:
    """checkpoint(sin -> Linear(2, 3) -> tanh -> std(0)), use_reentrant=False: the output and
    the gradients of x, the weight and the bias (weights drawn as reverse.nn.Linear draws them)."""
    from reverse import nn
    start = nn.Linear(2, 3, rng=np.random.default_rng(0))
    if k.api.__name__ == "torch":
        from torch.utils.checkpoint import checkpoint
        layer = k.api.nn.Linear(2, 3).double()
        with k.api.no_grad():
            layer.weight.copy_(k.tensor(start.weight.value.tolist()))
            layer.bias.copy_(k.tensor(start.bias.value.tolist()))
    else:
        from reverse import checkpoint
        layer = start
    x = k.tensor(CHECKPOINT_X, requires_grad=True)
    out = checkpoint(lambda a: layer(a.sin()).tanh().std(0), x, use_reentrant=False)
    out.sum().backward()
    return [_values(t.detach() if t is out else t) for t in (out, x.grad, layer.weight.grad, layer.bias.grad)]


SCENARIOS["checkpoint of an nn.Linear"] = checkpoint_of_a_linear_layer

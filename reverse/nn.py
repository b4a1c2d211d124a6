"""A minimal ``torch.nn``: ``Module`` with parameter registration, ``Linear``,
``ReLU``, ``Dropout``, ``Sequential``, ``MSELoss``, and ``functional_call``.

Enough to run PyTorch's small training loops unchanged (a model class,
``model.parameters()`` into an optimizer, ``state_dict``); not a layer
library. A parameter is a :class:`reverse.Tensor` that requires grad,
assigned as an attribute of a module (PyTorch registers ``nn.Parameter``
objects; here :func:`Parameter` makes such a Tensor); other attributes,
Tensors that do not require grad among them, are not registered.

Examples
--------
>>> import numpy as np
>>> from reverse import Tensor, nn, optim
>>> class Net(nn.Module):
...     def __init__(self):
...         super().__init__()
...         self.hidden, self.out = nn.Linear(3, 4), nn.Linear(4, 1)
...     def forward(self, x):
...         return self.out(np.tanh(self.hidden(x)))
>>> np.random.seed(0)
>>> model = Net()
>>> [name for name, _ in model.named_parameters()]
['hidden.weight', 'hidden.bias', 'out.weight', 'out.bias']
>>> opt = optim.SGD(model.parameters(), lr=0.1)
>>> x, y = Tensor(np.ones((5, 3))), Tensor(np.zeros((5, 1)))
>>> loss = nn.MSELoss()(model(x), y)
>>> opt.zero_grad(); loss.backward(); opt.step()
>>> nn.MSELoss()(model(x), y).item() < loss.item()
True
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from dualad import ops
from reverse._tensor import Tensor

__all__ = ["Dropout", "Linear", "MSELoss", "Module", "Parameter", "ReLU", "Sequential", "functional_call"]


def Parameter(data: Any, requires_grad: bool = True) -> Tensor:  # noqa: N802 (PyTorch's name)
    """``data`` as a Tensor that a :class:`Module` registers, as ``nn.Parameter``."""
    return Tensor(data, requires_grad=requires_grad)


class Module:
    """Base class of models, as ``torch.nn.Module``: attributes that are Tensors
    requiring grad are its parameters, attributes that are modules its
    submodules; ``module(x)`` calls ``forward``."""

    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "training", True)

    def __setattr__(self, name: str, value: Any) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {name!r} before Module.__init__() has run: call "
                                 "super().__init__() first in your module's __init__")
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        if isinstance(value, Tensor) and value.requires_grad:
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        object.__setattr__(self, name, value)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no forward(): define it")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Tensor]]:
        """``(dotted name, parameter)`` pairs, this module's first, then each submodule's."""
        for name, p in self._parameters.items():
            yield prefix + name, p
        for name, m in self._modules.items():
            yield from m.named_parameters(prefix + name + ".")

    def parameters(self) -> Iterator[Tensor]:
        """The parameters, in ``named_parameters`` order (for an optimizer)."""
        return (p for _, p in self.named_parameters())

    def children(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def train(self, mode: bool = True) -> Module:
        """Training mode (``Dropout`` drops) for this module and its submodules."""
        object.__setattr__(self, "training", bool(mode))
        for m in self._modules.values():
            m.train(mode)
        return self

    def eval(self) -> Module:
        """Evaluation mode: ``train(False)``."""
        return self.train(False)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.zero_()

    def state_dict(self) -> dict[str, Any]:
        """A copy of every parameter's array, by dotted name."""
        return {name: ops.copy(p.value) for name, p in self.named_parameters()}

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> None:
        """Copy arrays (or Tensors) into the parameters of the same names and shapes."""
        own = dict(self.named_parameters())
        if strict and set(state_dict) != set(own):
            missing, unexpected = sorted(set(own) - set(state_dict)), sorted(set(state_dict) - set(own))
            raise KeyError(f"load_state_dict: missing keys {missing}, unexpected keys {unexpected}")
        for name, value in state_dict.items():
            if name not in own:
                continue
            value = np.asarray(value.value if isinstance(value, Tensor) else value)
            if value.shape != own[name].shape:
                raise ValueError(f"load_state_dict: {name} has shape {own[name].shape}, the value "
                                 f"given {value.shape}")
            own[name].data = value.astype(own[name].dtype)

    def __repr__(self) -> str:
        inner = "".join(f"\n  ({n}): {m!r}".replace("\n", "\n  ").replace("\n  \n", "\n")
                        for n, m in self._modules.items())
        return f"{type(self).__name__}({self.extra_repr()}{inner}{chr(10) if inner else ''})"

    def extra_repr(self) -> str:
        return ""


class Linear(Module):
    """``x @ weight.T + bias``, as ``torch.nn.Linear``: ``weight`` of shape
    ``(out_features, in_features)`` and ``bias`` drawn from PyTorch's default,
    uniform on ``[-1/sqrt(in_features), 1/sqrt(in_features)]`` (from NumPy's
    global random state, or ``rng``)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *,
                 dtype: Any = np.float64, rng: np.random.Generator | None = None):
        super().__init__()
        for name, n in (("in_features", in_features), ("out_features", out_features)):
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise TypeError(f"Linear: {name} must be a non-negative int, got {n!r}")
        self.in_features, self.out_features = in_features, out_features
        bound = 1.0 / math.sqrt(in_features) if in_features else 0.0
        uniform = rng.uniform if rng is not None else np.random.uniform
        self.weight = Parameter(np.asarray(uniform(-bound, bound, (out_features, in_features)), dtype=dtype))
        self.bias = Parameter(np.asarray(uniform(-bound, bound, out_features), dtype=dtype)) if bias else None

    def forward(self, x: Any) -> Any:
        out = ops.matmul(x, ops.matrix_transpose(self.weight))
        return out if self.bias is None else out + self.bias

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, " \
               f"bias={self.bias is not None}"


class ReLU(Module):
    """``max(x, 0)``, as ``torch.nn.ReLU``; ``inplace`` is accepted and computes the
    same numbers (the result is a new tensor)."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Any) -> Any:
        return ops.relu(x)


class Dropout(Module):
    """In training mode, each element zeroed with probability ``p`` and the rest
    scaled by ``1 / (1 - p)``, as ``torch.nn.Dropout``; the identity in eval mode.
    The mask comes from NumPy's global random state (or ``rng``), not PyTorch's."""

    def __init__(self, p: float = 0.5, inplace: bool = False, *, rng: np.random.Generator | None = None):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be a probability in [0, 1], got {p}")
        self.p, self.inplace, self._rng = p, inplace, rng

    def forward(self, x: Any) -> Any:
        if not self.training or self.p == 0.0:
            return x
        if self.p == 1.0:
            return x * 0.0
        draw = (self._rng.random if self._rng is not None else np.random.random)(tuple(x.shape))
        return x * ((draw >= self.p) / (1.0 - self.p))

    def extra_repr(self) -> str:
        return f"p={self.p}"


class Sequential(Module):
    """The modules applied in order, as ``torch.nn.Sequential`` (named "0", "1", ...)."""

    def __init__(self, *modules: Module):
        super().__init__()
        for i, m in enumerate(modules):
            if not isinstance(m, Module):
                raise TypeError(f"Sequential: argument {i} must be a Module, got {type(m).__name__}")
            setattr(self, str(i), m)

    def forward(self, x: Any) -> Any:
        for m in self._modules.values():
            x = m(x)
        return x


class MSELoss(Module):
    """The mean (``reduction="mean"``), sum or elementwise squared error, as
    ``torch.nn.MSELoss``."""

    def __init__(self, reduction: str = "mean"):
        super().__init__()
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"MSELoss: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        self.reduction = reduction

    def forward(self, input: Any, target: Any) -> Any:  # noqa: A002 (PyTorch's name)
        if tuple(input.shape) != tuple(np.shape(target) if not hasattr(target, "shape") else target.shape):
            raise ValueError(f"MSELoss: input has shape {tuple(input.shape)}, target "
                             f"{tuple(target.shape)}; they must match (no broadcasting)")
        err = (input - target) ** 2
        return err if self.reduction == "none" else ops.sum(err) if self.reduction == "sum" \
            else ops.mean(err)


def functional_call(module: Module, parameters: dict[str, Any], args: Any = (),
                    kwargs: dict | None = None) -> Any:
    """``module(*args, **kwargs)`` with the parameters named in ``parameters`` (dotted
    names, as ``named_parameters`` gives) replaced by the values given, as
    ``torch.func.functional_call``: the way to differentiate a model's output with
    respect to its weights with ``reverse.grad``.

    Examples
    --------
    >>> import numpy as np
    >>> import reverse
    >>> from reverse import nn
    >>> model = nn.Linear(2, 1, rng=np.random.default_rng(0))
    >>> params = {k: v.detach().value for k, v in model.named_parameters()}
    >>> loss = lambda p: nn.functional_call(model, p, (np.ones((4, 2)),)).sum()
    >>> reverse.grad(loss)(params)["bias"]
    array([4.])
    """
    args = args if isinstance(args, tuple) else (args,)
    owners = {}
    for name in parameters:
        *path, leaf = name.split(".")
        owner = module
        for part in path:
            owner = owner._modules.get(part) if isinstance(owner, Module) else None
            if owner is None:
                break
        if owner is None or leaf not in owner._parameters:
            raise KeyError(f"functional_call: {name!r} is not a parameter of {type(module).__name__}; "
                           f"its parameters: {[n for n, _ in module.named_parameters()]}")
        owners[name] = (owner, leaf)
    saved = {name: owner.__dict__[leaf] for name, (owner, leaf) in owners.items()}
    try:
        for name, (owner, leaf) in owners.items():
            object.__setattr__(owner, leaf, parameters[name])
        return module(*args, **(kwargs or {}))
    finally:
        for name, (owner, leaf) in owners.items():
            object.__setattr__(owner, leaf, saved[name])


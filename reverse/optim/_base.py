"""``Optimizer``: the parameters, their state, and the in-place step every optimizer shares."""

from __future__ import annotations

from typing import Any, Iterable

from dualad._checks import describe, is_operand
from dualad._shapes import raw, shape_of
from reverse._grad_mode import no_grad
from reverse._tensor import Tensor

__all__ = ["Optimizer"]


class Optimizer:
    """Base class: holds the parameters and their per-parameter state.

    Parameters
    ----------
    params : list of Tensor, or dict of name -> Tensor
        Leaf tensors that require grad.

    Subclasses implement ``_update(x, g, state)``: from the parameter's
    value ``x``, its gradient ``g`` (raw arrays or floats) and its state dict
    (``state["step"]`` counts from 1), the amount to subtract from ``x``.

    Examples
    --------
    >>> from reverse import Tensor
    >>> from reverse.optim import Optimizer
    >>> class SignDescent(Optimizer):
    ...     lr = 0.5
    ...     def _update(self, x, g, state):
    ...         return self.lr * (1.0 if g > 0 else -1.0 if g < 0 else 0.0)
    >>> w = Tensor(2.0, requires_grad=True)
    >>> opt = SignDescent([w])
    >>> (w * w).backward(); opt.step()
    >>> w.item()
    1.5
    """

    def __init__(self, params: Iterable[Tensor] | dict[str, Tensor]):
        if isinstance(params, Tensor):
            raise TypeError("params must be a list or dict of Tensors, got a single Tensor; "
                            "write [param]")
        if isinstance(params, dict):
            names = [f"params[{k!r}]" for k in params]
            params = list(params.values())
        else:
            params = list(params)
            names = [f"params[{i}]" for i in range(len(params))]
        if not params:
            raise ValueError("params is empty: the optimizer has nothing to update")
        seen: dict[int, str] = {}
        for p, name in zip(params, names):
            if not isinstance(p, Tensor):
                raise TypeError(f"{name} must be a reverse.Tensor, got {type(p).__name__}")
            if not p.requires_grad or not p.is_leaf:
                raise ValueError(f"{name} must be a leaf Tensor that requires grad "
                                 f"(requires_grad={p.requires_grad}, is_leaf={p.is_leaf})")
            if id(p) in seen:
                raise ValueError(f"{name} is the same Tensor as {seen[id(p)]}; "
                                 "pass each parameter once")
            seen[id(p)] = name
        self.params: list[Tensor] = params
        self.names: list[str] = names
        self.state: list[dict] = [{} for _ in params]

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the gradients (``None`` by default, or zero arrays)."""
        for p in self.params:
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad = raw(p.grad) * 0.0

    def step(self) -> None:
        """Update every parameter that has a ``.grad`` in place (under ``no_grad``)."""
        grads = [p.grad.value if isinstance(p.grad, Tensor) else p.grad for p in self.params]
        for p, name, g in zip(self.params, self.names, grads):  # all, before any is updated
            if g is not None and (not is_operand(g) or shape_of(g) != shape_of(p.value)):
                raise ValueError(f"{name}.grad must be an array of the parameter's shape "
                                 f"{shape_of(p.value)}, got {describe(g)}")
        with no_grad():
            for p, g, state in zip(self.params, grads, self.state):
                if g is None:
                    continue
                state["step"] = state.get("step", 0) + 1
                p -= self._update(p.value, g, state)

    def _update(self, x: Any, g: Any, state: dict) -> Any:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self.params)} parameters, lr={getattr(self, 'lr', None)})"

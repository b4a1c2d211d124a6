"""First-order optimizers over ``Tensor`` parameters: ``SGD``, ``Adam``, ``AdamW``.

The update rules are those of the PyTorch documentation (``torch.optim``).
``step()`` reads each parameter's ``.grad`` and updates the parameter in
place under ``no_grad()``: its array is modified (``Tensor.__isub__``) and
its version counter bumped, so a graph that saved the old value refuses to
run backward instead of using the new one. The optimizer state (momentum
buffers, moment estimates) is kept as raw arrays of the parameter's backend
and dtype, so nothing is recorded and nothing leaves the device.

Examples
--------
>>> import numpy as np
>>> from reverse import Tensor
>>> from reverse.optim import SGD
>>> w = Tensor(np.array([1.0, -2.0]), requires_grad=True)
>>> opt = SGD([w], lr=0.25)
>>> for _ in range(3):
...     opt.zero_grad()
...     (w ** 2).sum().backward()
...     opt.step()
>>> w.value
array([ 0.125, -0.25 ])
"""

from __future__ import annotations

from typing import Any, Iterable

from dualad import ops
from dualad._checks import check_number, describe, is_operand
from dualad._shapes import raw, shape_of
from reverse._grad_mode import no_grad
from reverse._tensor import Tensor

__all__ = ["Optimizer", "SGD", "Adam", "AdamW"]


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


class SGD(Optimizer):
    """Stochastic gradient descent, with optional (Nesterov) momentum and L2 weight decay.

    With ``g`` the gradient: ``g += weight_decay * x``; with momentum
    ``b = momentum * b + (1 - dampening) * g`` (``b = g`` at the first step),
    then ``g = g + momentum * b`` (Nesterov) or ``g = b``; finally
    ``x -= lr * g``.

    Parameters
    ----------
    params : list of Tensor, or dict of name -> Tensor
        Leaf tensors that require grad.
    lr : float
        Learning rate, >= 0.
    momentum : float
        Momentum factor, >= 0 (default 0: none).
    nesterov : bool
        Nesterov momentum (needs ``momentum > 0`` and ``dampening == 0``).
    weight_decay : float
        L2 penalty coefficient, >= 0.
    dampening : float
        Dampening of the momentum, in [0, 1].

    Examples
    --------
    >>> from reverse import Tensor
    >>> from reverse.optim import SGD
    >>> x = Tensor(3.0, requires_grad=True)
    >>> opt = SGD([x], lr=0.1, momentum=0.9)
    >>> (x * x).backward(); opt.step()
    >>> x.item()
    2.4
    """

    def __init__(self, params, lr: float, momentum: float = 0.0, nesterov: bool = False,
                 weight_decay: float = 0.0, dampening: float = 0.0):
        super().__init__(params)
        self.lr = check_number("lr", lr)
        self.momentum = check_number("momentum", momentum)
        self.weight_decay = check_number("weight_decay", weight_decay)
        self.dampening = check_number("dampening", dampening, 0.0, 1.0)
        if nesterov and (self.momentum == 0.0 or self.dampening != 0.0):
            raise ValueError(f"nesterov=True needs momentum > 0 and dampening == 0, got "
                             f"momentum={self.momentum}, dampening={self.dampening}")
        self.nesterov = bool(nesterov)

    def _update(self, x, g, state):
        if self.weight_decay:
            g = g + self.weight_decay * x
        if self.momentum:
            b = state.get("momentum_buffer")
            # A copy at the first step: the buffer must not alias the user's .grad.
            b = g * 1.0 if b is None else self.momentum * b + (1.0 - self.dampening) * g
            state["momentum_buffer"] = b
            g = g + self.momentum * b if self.nesterov else b
        return self.lr * g


class Adam(Optimizer):
    """Adam, with optional L2 weight decay added to the gradient.

    At step ``t``: ``g += weight_decay * x``; ``m = b1 m + (1 - b1) g``;
    ``v = b2 v + (1 - b2) g**2``; ``x -= lr * m_hat / (sqrt(v_hat) + eps)``
    with ``m_hat = m / (1 - b1**t)`` and ``v_hat = v / (1 - b2**t)``.

    Parameters
    ----------
    params : list of Tensor, or dict of name -> Tensor
        Leaf tensors that require grad.
    lr : float
        Learning rate, >= 0.
    betas : (float, float)
        Decay rates of the first and second moment estimates, each in [0, 1).
    eps : float
        Added to the denominator, >= 0.
    weight_decay : float
        L2 penalty coefficient, >= 0 (coupled: it goes through the moments;
        see :class:`AdamW` for the decoupled form).

    Examples
    --------
    >>> from reverse import Tensor
    >>> from reverse.optim import Adam
    >>> x = Tensor(1.0, requires_grad=True)
    >>> opt = Adam([x], lr=0.1)
    >>> (x * x).backward(); opt.step()
    >>> round(x.item(), 6)  # the first Adam step has length lr
    0.9
    """

    _decoupled = False

    def __init__(self, params, lr: float = 1e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0):
        super().__init__(params)
        self.lr = check_number("lr", lr)
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise ValueError(f"betas must be a pair of floats, got {betas!r}")
        self.betas = (check_number("betas[0]", betas[0], 0.0, 1.0, high_open=True),
                      check_number("betas[1]", betas[1], 0.0, 1.0, high_open=True))
        self.eps = check_number("eps", eps)
        self.weight_decay = check_number("weight_decay", weight_decay)

    def _update(self, x, g, state):
        b1, b2 = self.betas
        t = state["step"]
        if self.weight_decay and not self._decoupled:
            g = g + self.weight_decay * x
        m, v = state.get("exp_avg"), state.get("exp_avg_sq")
        m = (1.0 - b1) * g if m is None else b1 * m + (1.0 - b1) * g
        v = (1.0 - b2) * (g * g) if v is None else b2 * v + (1.0 - b2) * (g * g)
        state["exp_avg"], state["exp_avg_sq"] = m, v
        m_hat = m / (1.0 - b1 ** t)
        v_hat = v / (1.0 - b2 ** t)
        delta = self.lr * m_hat / (ops.sqrt(v_hat) + self.eps)
        if self.weight_decay and self._decoupled:
            # x_t = x - lr wd x, then the Adam step (which does not depend on x).
            delta = delta + (self.lr * self.weight_decay) * x
        return delta


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov and Hutter).

    At each step the parameter first shrinks, ``x -= lr * weight_decay * x``,
    then takes the Adam step of the bare gradient: the decay does not go
    through the moment estimates.

    Parameters
    ----------
    params : list of Tensor, or dict of name -> Tensor
        Leaf tensors that require grad.
    lr : float
        Learning rate, >= 0.
    betas : (float, float)
        Decay rates of the moment estimates, each in [0, 1).
    eps : float
        Added to the denominator, >= 0.
    weight_decay : float
        Decoupled decay coefficient, >= 0 (default ``1e-2``).

    Examples
    --------
    >>> from reverse import Tensor
    >>> from reverse.optim import AdamW
    >>> x = Tensor(1.0, requires_grad=True)
    >>> opt = AdamW([x], lr=0.1, weight_decay=0.5)
    >>> (x * x).backward(); opt.step()
    >>> round(x.item(), 6)  # 1 - 0.1 * 0.5 * 1, then the Adam step of length 0.1
    0.85
    """

    _decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2):
        super().__init__(params, lr, betas, eps, weight_decay)


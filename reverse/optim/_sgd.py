"""``SGD``: stochastic gradient descent with (Nesterov) momentum."""

from __future__ import annotations

from typing import Any

from reverse.optim._base import Optimizer, Params
from reverse.optim._options import flag, non_negative, unit_interval

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent, with optional (Nesterov) momentum and L2 weight decay.

    PyTorch's ``torch.optim.SGD``. With ``g`` the gradient:
    ``g += weight_decay * x``; with momentum
    ``b = momentum * b + (1 - dampening) * g`` (``b = g`` at the first step),
    then ``g = g + momentum * b`` (Nesterov) or ``g = b``; finally
    ``x -= lr * g``.

    Parameters
    ----------
    params : list of Tensor, dict of name -> Tensor, or list of dict
        Leaf tensors that require grad, or parameter groups (see :class:`Optimizer`).
    lr : float
        Learning rate, >= 0 (default ``1e-3``, as PyTorch's).
    momentum : float
        Momentum factor, >= 0 (default 0: none).
    dampening : float
        Dampening of the momentum, in [0, 1].
    weight_decay : float
        L2 penalty coefficient, >= 0.
    nesterov : bool
        Nesterov momentum (needs ``momentum > 0`` and ``dampening == 0``).
    maximize : bool
        Keyword only: maximize the objective instead (step along ``+g``: the
        rule above with ``-g`` for ``g``), as PyTorch's ``maximize=True``.

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

    _checks = {"lr": non_negative, "momentum": non_negative, "dampening": unit_interval,
               "weight_decay": non_negative, "nesterov": flag, "maximize": flag}

    def __init__(self, params: Params, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, *, maximize: bool = False):
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize))

    def _check_together(self, options: dict[str, Any], where: str) -> None:
        if options["nesterov"] and (options["momentum"] == 0.0 or options["dampening"] != 0.0):
            raise ValueError(f"{where + ': ' if where else ''}nesterov=True needs momentum > 0 and "
                             f"dampening == 0, got momentum={options['momentum']}, "
                             f"dampening={options['dampening']}")

    def _update(self, x, g, state, group):
        if group["weight_decay"]:
            g = g + group["weight_decay"] * x
        momentum = group["momentum"]
        if momentum:
            b = state.get("momentum_buffer")
            # A copy at the first step: the buffer must not alias the user's .grad.
            b = g * 1.0 if b is None else momentum * b + (1.0 - group["dampening"]) * g
            state["momentum_buffer"] = b
            g = g + momentum * b if group["nesterov"] else b
        return group["lr"] * g

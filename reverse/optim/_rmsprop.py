"""``RMSprop``: steps scaled by a moving average of squared gradients."""

from __future__ import annotations

from dualad import ops
from reverse.optim._averages import moving_average
from reverse.optim._base import Optimizer, Params
from reverse.optim._options import flag, non_negative, unit_interval

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop (Hinton), optionally centered (Graves), with momentum and L2 weight decay.

    PyTorch's ``torch.optim.RMSprop``. With ``g`` the gradient:
    ``g += weight_decay * x``; ``v = alpha v + (1 - alpha) g**2``; centered,
    also ``a = alpha a + (1 - alpha) g`` and ``v~ = v - a**2``, else ``v~ = v``;
    with momentum ``b = momentum b + g / (sqrt(v~) + eps)`` and ``x -= lr b``,
    else ``x -= lr g / (sqrt(v~) + eps)``. Every average starts at zero.

    Parameters
    ----------
    params : list of Tensor, dict of name -> Tensor, or list of dict
        Leaf tensors that require grad, or parameter groups (see :class:`Optimizer`).
    lr : float
        Learning rate, >= 0.
    alpha : float
        Decay rate of the average of squared gradients, in [0, 1].
    eps : float
        Added to the square root in the denominator, >= 0.
    weight_decay : float
        L2 penalty coefficient, >= 0.
    momentum : float
        Momentum factor, >= 0 (default 0: none).
    centered : bool
        Divide by an estimate of the gradient's variance rather than its
        second moment.
    maximize : bool
        Keyword only: maximize the objective instead (step along ``+g``: the
        rule above with ``-g`` for ``g``), as PyTorch's ``maximize=True``.

    Examples
    --------
    >>> from reverse import Tensor
    >>> from reverse.optim import RMSprop
    >>> x = Tensor(1.0, requires_grad=True)
    >>> opt = RMSprop([x], lr=0.01, alpha=0.99, eps=0.0)
    >>> (x * x).backward(); opt.step()
    >>> round(x.item(), 6)  # g / sqrt(0.01 g**2) = 10: a step of 10 lr
    0.9
    """

    _checks = {"lr": non_negative, "alpha": unit_interval, "eps": non_negative,
               "weight_decay": non_negative, "momentum": non_negative, "centered": flag,
               "maximize": flag}
    _complex = "pairs"

    def __init__(self, params: Params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False, *,
                 maximize: bool = False):
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered, maximize=maximize))

    def _update(self, x, g, state, group):
        alpha, momentum = group["alpha"], group["momentum"]
        if group["weight_decay"]:
            g = g + group["weight_decay"] * x
        v = moving_average(state, "square_avg", alpha, g * g)
        if group["centered"]:
            a = moving_average(state, "grad_avg", alpha, g)
            v = v - a * a
        step = g / (ops.sqrt(v) + group["eps"])
        if momentum:
            b = state.get("momentum_buffer")
            step = step if b is None else momentum * b + step
            state["momentum_buffer"] = step
        return group["lr"] * step

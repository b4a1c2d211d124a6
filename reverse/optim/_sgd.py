"""``SGD``: stochastic gradient descent with (Nesterov) momentum."""

from __future__ import annotations

from dualad._checks import check_number
from reverse.optim._base import Optimizer

__all__ = ["SGD"]


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

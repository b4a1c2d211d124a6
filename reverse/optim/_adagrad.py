"""``Adagrad``: steps scaled by the root of the running sum of squared gradients."""

from __future__ import annotations

from dualad import ops
from reverse.optim._base import Optimizer, Params
from reverse.optim._options import flag, non_negative

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad (Duchi, Hazan and Singer), with a decaying learning rate and L2 weight decay.

    PyTorch's ``torch.optim.Adagrad``. At step ``t``, with ``g`` the gradient:
    ``lr_t = lr / (1 + (t - 1) lr_decay)``; ``g += weight_decay * x``;
    ``s = s + g**2`` (``s`` starts at ``initial_accumulator_value``);
    ``x -= lr_t g / (sqrt(s) + eps)``.

    Parameters
    ----------
    params : list of Tensor, dict of name -> Tensor, or list of dict
        Leaf tensors that require grad, or parameter groups (see :class:`Optimizer`).
    lr : float
        Learning rate, >= 0.
    lr_decay : float
        Learning-rate decay, >= 0.
    weight_decay : float
        L2 penalty coefficient, >= 0.
    initial_accumulator_value : float
        The sum of squared gradients before the first step, >= 0.
    eps : float
        Added to the square root in the denominator, >= 0.
    maximize : bool
        Keyword only: maximize the objective instead (step along ``+g``: the
        rule above with ``-g`` for ``g``), as PyTorch's ``maximize=True``.

    Examples
    --------
    >>> from reverse import Tensor
    >>> from reverse.optim import Adagrad
    >>> x = Tensor(1.0, requires_grad=True)
    >>> opt = Adagrad([x], lr=0.1, eps=0.0)
    >>> (x * x).backward(); opt.step()
    >>> round(x.item(), 6)  # the first step is lr * g / |g|
    0.9
    """

    _checks = {"lr": non_negative, "lr_decay": non_negative, "weight_decay": non_negative,
               "initial_accumulator_value": non_negative, "eps": non_negative, "maximize": flag}
    _complex = "pairs"

    def __init__(self, params: Params, lr: float = 1e-2, lr_decay: float = 0.0, weight_decay: float = 0.0,
                 initial_accumulator_value: float = 0.0, eps: float = 1e-10, *, maximize: bool = False):
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value, eps=eps,
                                      maximize=maximize))

    def _update(self, x, g, state, group):
        lr = group["lr"] / (1.0 + (state["step"] - 1) * group["lr_decay"])
        if group["weight_decay"]:
            g = g + group["weight_decay"] * x
        s = state.get("sum")
        s = group["initial_accumulator_value"] + g * g if s is None else s + g * g
        state["sum"] = s
        return lr * g / (ops.sqrt(s) + group["eps"])

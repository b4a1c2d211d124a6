"""``Adam`` and ``AdamW``: adaptive moment estimation, with coupled or decoupled weight decay."""

from __future__ import annotations

from dualad import ops
from reverse.optim._averages import moving_average
from reverse.optim._base import Optimizer, Params
from reverse.optim._options import betas, flag, non_negative

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """Adam, with optional L2 weight decay added to the gradient, and AMSGrad.

    PyTorch's ``torch.optim.Adam``. At step ``t``: ``g += weight_decay * x``;
    ``m = b1 m + (1 - b1) g``; ``v = b2 v + (1 - b2) g**2``; with AMSGrad
    ``v_max = max(v_max, v)`` takes ``v``'s place below;
    ``x -= lr * m_hat / (sqrt(v_hat) + eps)`` with ``m_hat = m / (1 - b1**t)``
    and ``v_hat = v / (1 - b2**t)``.

    Parameters
    ----------
    params : list of Tensor, dict of name -> Tensor, or list of dict
        Leaf tensors that require grad, or parameter groups (see :class:`Optimizer`).
    lr : float
        Learning rate, >= 0.
    betas : (float, float)
        Decay rates of the first and second moment estimates, each in [0, 1).
    eps : float
        Added to the denominator, >= 0.
    weight_decay : float
        L2 penalty coefficient, >= 0 (coupled: it goes through the moments;
        see :class:`AdamW` for the decoupled form).
    amsgrad : bool
        Divide by the largest second moment seen so far (Reddi et al.), so
        the step size never grows back.
    maximize : bool
        Keyword only: maximize the objective instead (step along ``+g``: the
        rule above with ``-g`` for ``g``), as PyTorch's ``maximize=True``.

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

    _checks = {"lr": non_negative, "betas": betas, "eps": non_negative, "weight_decay": non_negative,
               "amsgrad": flag, "maximize": flag}
    _complex = "pairs"
    _decoupled = False

    def __init__(self, params: Params, lr: float = 1e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *, maximize: bool = False):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize))

    def _update(self, x, g, state, group):
        b1, b2 = group["betas"]
        lr, weight_decay = group["lr"], group["weight_decay"]
        t = state["step"]
        if weight_decay and not self._decoupled:
            g = g + weight_decay * x
        m = moving_average(state, "exp_avg", b1, g)
        v = moving_average(state, "exp_avg_sq", b2, g * g)
        if group["amsgrad"]:
            v_max = state.get("max_exp_avg_sq")
            v = v * 1.0 if v_max is None else ops.maximum(v_max, v)  # a copy: not v itself
            state["max_exp_avg_sq"] = v
        m_hat = m / (1.0 - b1 ** t)
        v_hat = v / (1.0 - b2 ** t)
        delta = lr * m_hat / (ops.sqrt(v_hat) + group["eps"])
        if weight_decay and self._decoupled:
            # x_t = x - lr wd x, then the Adam step (which does not depend on x).
            delta = delta + (lr * weight_decay) * x
        return delta


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov and Hutter), and AMSGrad.

    PyTorch's ``torch.optim.AdamW``. At each step the parameter first shrinks,
    ``x -= lr * weight_decay * x``, then takes the Adam step of the bare
    gradient: the decay does not go through the moment estimates.

    Parameters
    ----------
    params, lr, betas, eps, amsgrad, maximize
        As for :class:`Adam`.
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

    def __init__(self, params: Params, lr: float = 1e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)

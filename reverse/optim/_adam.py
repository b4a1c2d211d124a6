"""``Adam`` and ``AdamW``: adaptive moment estimation, with coupled or decoupled weight decay."""

from __future__ import annotations

from dualad import ops
from dualad._checks import check_number
from reverse.optim._base import Optimizer

__all__ = ["Adam", "AdamW"]


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

"""Learning-rate schedules, as ``torch.optim.lr_scheduler`` names and computes them.

A scheduler sets ``group["lr"]`` of each of its optimizer's parameter groups
when it is made and at each :meth:`~LRScheduler.step` (once per epoch, after
``optimizer.step()``). As in PyTorch, the epoch-driven schedulers update the
current ``lr`` by a factor (they are "chainable": two schedulers on one
optimizer compose), and the numbers are PyTorch's: the cosine schedule, for
one, is PyTorch's recursive form, not the closed form it approximates.

Examples
--------
>>> from reverse import Tensor
>>> from reverse.optim import SGD
>>> from reverse.optim.lr_scheduler import ExponentialLR, LinearLR
>>> w = Tensor(1.0, requires_grad=True)
>>> opt = SGD([w], lr=1.0)
>>> warmup, decay = LinearLR(opt, start_factor=0.25, total_iters=3), ExponentialLR(opt, gamma=0.5)
>>> lrs = []
>>> for epoch in range(5):
...     opt.step()                    # (a training epoch)
...     warmup.step(); decay.step()
...     lrs.append(opt.param_groups[0]["lr"])
>>> [round(lr, 6) for lr in lrs]
[0.25, 0.1875, 0.125, 0.0625, 0.03125]
"""

from __future__ import annotations

import math
from typing import Any

from dualad.interpreter import check_count, check_number, describe
from reverse.optim._base import Optimizer, as_float
from reverse.optim._options import at_least_one, non_negative

__all__ = ["CosineAnnealingLR", "ExponentialLR", "LRScheduler", "LinearLR", "ReduceLROnPlateau",
           "StepLR"]


def _checked_optimizer(optimizer: Any) -> Optimizer:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"optimizer must be a reverse.optim.Optimizer, got {describe(optimizer)}")
    return optimizer


class LRScheduler:
    """Base class: sets every group's ``lr`` from its schedule, by epoch.

    Parameters
    ----------
    optimizer : Optimizer
        Whose groups' ``lr`` to set. Each group keeps its first ``lr`` as
        ``"initial_lr"`` (the schedule's base, ``base_lrs``).
    last_epoch : int
        The last epoch done; -1 (default) starts the schedule. To resume
        without a state dict, the groups must hold ``"initial_lr"``.

    Subclasses implement ``_next_lrs(initial)``: each group's ``lr`` at epoch
    ``self.last_epoch``, from the current ones (``initial``: the call made by
    the constructor).

    Examples
    --------
    >>> from reverse import Tensor
    >>> from reverse.optim import SGD
    >>> from reverse.optim.lr_scheduler import LRScheduler
    >>> class Halving(LRScheduler):
    ...     def _next_lrs(self, initial):
    ...         return [g["lr"] * (1.0 if initial else 0.5) for g in self.optimizer.param_groups]
    >>> opt = SGD([Tensor(1.0, requires_grad=True)], lr=1.0)
    >>> sched = Halving(opt)
    >>> sched.step(); sched.step()
    >>> sched.get_last_lr(), sched.last_epoch
    ([0.25], 2)
    """

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        self.optimizer = _checked_optimizer(optimizer)
        if check_count(last_epoch, "last_epoch", low=-1) == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise ValueError(f"last_epoch={last_epoch} resumes a schedule, which needs "
                                     f"optimizer.param_groups[{i}]['initial_lr'] (set when the schedule "
                                     "started); load the optimizer's state dict first, or pass "
                                     "last_epoch=-1 to start")
        self.base_lrs: list[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._step_count = 0
        self._set(initial=True)

    def step(self) -> None:
        """Move to the next epoch and set each group's ``lr`` for it."""
        self._set(initial=False)

    def _set(self, initial: bool) -> None:
        self._step_count += 1
        self.last_epoch += 1
        for group, lr in zip(self.optimizer.param_groups, self._next_lrs(initial)):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _next_lrs(self, initial: bool) -> list[float]:
        raise NotImplementedError

    def _current_lrs(self) -> list[float]:
        return [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        """Each group's ``lr`` as the last step (or the constructor) set it."""
        return list(self._last_lr)

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's state (everything but the optimizer), copied.

        Examples
        --------
        >>> from reverse import Tensor
        >>> from reverse.optim import SGD
        >>> from reverse.optim.lr_scheduler import StepLR
        >>> opt = SGD([Tensor(1.0, requires_grad=True)], lr=1.0)
        >>> sched = StepLR(opt, step_size=2)
        >>> sched.step(); sched.step()
        >>> again = StepLR(SGD([Tensor(1.0, requires_grad=True)], lr=1.0), step_size=5)
        >>> again.load_state_dict(sched.state_dict())
        >>> again.step_size, again.last_epoch, again.get_last_lr()
        (2, 2, [0.1])
        """
        return {k: list(v) if isinstance(v, list) else v
                for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Take the state of :meth:`state_dict` (of the same kind of scheduler, and as many
        parameter groups). The groups' ``lr`` come with the optimizer's own state dict."""
        expected = set(self.state_dict())
        if not isinstance(state_dict, dict) or set(state_dict) != expected:
            got = sorted(state_dict) if isinstance(state_dict, dict) else describe(state_dict)
            raise ValueError(f"state_dict must be the state_dict() of a {type(self).__name__}, with "
                             f"keys {sorted(expected)}, got {got}")
        groups = len(self.optimizer.param_groups)
        for key in ("base_lrs", "_last_lr", "min_lrs"):
            if key in state_dict and len(state_dict[key]) != groups:
                raise ValueError(f"state_dict[{key!r}] has {len(state_dict[key])} entries, one per "
                                 f"parameter group of its optimizer; this optimizer has {groups}")
        self.__dict__.update({k: list(v) if isinstance(v, list) else v for k, v in state_dict.items()})


class StepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every ``step_size`` epochs.

    ``lr = base_lr * gamma ** (epoch // step_size)``, computed as PyTorch
    does: the current ``lr`` times ``gamma`` at each multiple of ``step_size``.

    Parameters
    ----------
    optimizer : Optimizer
    step_size : int
        Epochs between decays, >= 1.
    gamma : float
        The factor of each decay, >= 0.
    last_epoch : int
        See :class:`LRScheduler`.

    Examples
    --------
    >>> from reverse import Tensor
    >>> from reverse.optim import SGD
    >>> from reverse.optim.lr_scheduler import StepLR
    >>> opt = SGD([Tensor(1.0, requires_grad=True)], lr=1.0)
    >>> sched = StepLR(opt, step_size=2, gamma=0.5)
    >>> lrs = []
    >>> for _ in range(5):
    ...     lrs.append(sched.get_last_lr()[0]); opt.step(); sched.step()
    >>> lrs
    [1.0, 1.0, 0.5, 0.5, 0.25]
    """

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        self.step_size = at_least_one("step_size", step_size)
        self.gamma = non_negative("gamma", gamma)
        super().__init__(optimizer, last_epoch)

    def _next_lrs(self, initial: bool) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._current_lrs()
        return [lr * self.gamma for lr in self._current_lrs()]


class ExponentialLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every epoch: ``lr = base_lr * gamma ** epoch``.

    Parameters
    ----------
    optimizer : Optimizer
    gamma : float
        The factor of every epoch, >= 0.
    last_epoch : int
        See :class:`LRScheduler`.

    Examples
    --------
    >>> from reverse import Tensor
    >>> from reverse.optim import SGD
    >>> from reverse.optim.lr_scheduler import ExponentialLR
    >>> opt = SGD([Tensor(1.0, requires_grad=True)], lr=1.0)
    >>> sched = ExponentialLR(opt, gamma=0.5)
    >>> opt.step(); sched.step(); opt.step(); sched.step()
    >>> sched.get_last_lr()
    [0.25]
    """

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = non_negative("gamma", gamma)
        super().__init__(optimizer, last_epoch)

    def _next_lrs(self, initial: bool) -> list[float]:
        if initial:
            return self._current_lrs()
        return [lr * self.gamma for lr in self._current_lrs()]


class CosineAnnealingLR(LRScheduler):
    """Anneal the learning rate from its base to ``eta_min`` along a half cosine over ``T_max`` epochs.

    ``lr = eta_min + (base_lr - eta_min) (1 + cos(pi epoch / T_max)) / 2``,
    computed as PyTorch does, recursively from the current ``lr``:
    ``lr' = eta_min + (lr - eta_min) (1 + cos(pi e / T_max)) / (1 + cos(pi (e - 1) / T_max))``.
    Past ``T_max`` the cosine goes on, back up to the base and down again
    (no restarts), as PyTorch's does.

    Parameters
    ----------
    optimizer : Optimizer
    T_max : int
        Epochs of the half period, >= 1.
    eta_min : float
        The smallest learning rate, >= 0.
    last_epoch : int
        See :class:`LRScheduler`.

    Examples
    --------
    >>> from reverse import Tensor
    >>> from reverse.optim import SGD
    >>> from reverse.optim.lr_scheduler import CosineAnnealingLR
    >>> opt = SGD([Tensor(1.0, requires_grad=True)], lr=1.0)
    >>> sched = CosineAnnealingLR(opt, T_max=4, eta_min=0.2)
    >>> def epoch():
    ...     opt.step()          # (a training epoch)
    ...     sched.step()
    ...     return round(sched.get_last_lr()[0], 6)
    >>> [epoch() for _ in range(5)]  # down to eta_min at T_max, then back up
    [0.882843, 0.6, 0.317157, 0.2, 0.317157]
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
        self.T_max = at_least_one("T_max", T_max)
        self.eta_min = non_negative("eta_min", eta_min)
        super().__init__(optimizer, last_epoch)

    def _next_lrs(self, initial: bool) -> list[float]:
        e, T, eta_min = self.last_epoch, self.T_max, self.eta_min
        if initial:
            return self._current_lrs()
        if (e - 1 - T) % (2 * T) == 0:  # leaving the minimum, where the ratio below is 0 / 0
            return [lr + (base - eta_min) * (1 - math.cos(math.pi / T)) / 2
                    for base, lr in zip(self.base_lrs, self._current_lrs())]
        return [(1 + math.cos(math.pi * e / T)) / (1 + math.cos(math.pi * (e - 1) / T)) * (lr - eta_min)
                + eta_min for lr in self._current_lrs()]


class LinearLR(LRScheduler):
    """Warm up (or down): scale the learning rate by a factor going linearly from
    ``start_factor`` to ``end_factor`` over ``total_iters`` epochs, then keep it.

    ``lr = base_lr * (start + (end - start) * min(epoch, total_iters) / total_iters)``,
    computed as PyTorch does, as a ratio of consecutive factors.

    Parameters
    ----------
    optimizer : Optimizer
    start_factor : float
        The factor at epoch 0, in (0, 1].
    end_factor : float
        The factor from epoch ``total_iters`` on, in [0, 1].
    total_iters : int
        Epochs of the ramp, >= 1.
    last_epoch : int
        See :class:`LRScheduler`.

    Examples
    --------
    >>> from reverse import Tensor
    >>> from reverse.optim import Adam
    >>> from reverse.optim.lr_scheduler import LinearLR
    >>> w, b = Tensor(1.0, requires_grad=True), Tensor(0.0, requires_grad=True)
    >>> opt = Adam([{"params": [w]}, {"params": [b], "lr": 0.01}], lr=0.1)
    >>> warmup = LinearLR(opt, start_factor=0.5, total_iters=2)  # half the lr, up to all in 2 epochs
    >>> warmup.get_last_lr()
    [0.05, 0.005]
    >>> opt.step(); warmup.step(); opt.step(); warmup.step()
    >>> [round(lr, 12) for lr in warmup.get_last_lr()]
    [0.1, 0.01]
    """

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1):
        self.start_factor = check_number("start_factor", start_factor, 0.0, 1.0, low_open=True)
        self.end_factor = check_number("end_factor", end_factor, 0.0, 1.0)
        self.total_iters = at_least_one("total_iters", total_iters)
        super().__init__(optimizer, last_epoch)

    def _next_lrs(self, initial: bool) -> list[float]:
        start, change, e = self.start_factor, self.end_factor - self.start_factor, self.last_epoch
        if e == 0:
            return [lr * start for lr in self._current_lrs()]
        if initial or e > self.total_iters:
            return self._current_lrs()
        return [lr * (1.0 + change / (self.total_iters * start + (e - 1) * change))
                for lr in self._current_lrs()]


class ReduceLROnPlateau(LRScheduler):
    """Multiply the learning rate by ``factor`` when a metric stops improving.

    ``step(metric)`` once per epoch: an epoch improves on the best metric so
    far when it beats it by more than ``threshold`` (relative or absolute);
    after more than ``patience`` epochs in a row without improvement each
    group's ``lr`` becomes ``max(lr * factor, min_lr)`` (unless that changes
    it by ``eps`` or less), and ``cooldown`` epochs follow in which bad
    epochs are not counted. PyTorch's rules, to the letter.

    Parameters
    ----------
    optimizer : Optimizer
    mode : {"min", "max"}
        Whether the metric should go down (a loss) or up (an accuracy).
    factor : float
        The factor, in [0, 1).
    patience : int
        Bad epochs tolerated, >= 0.
    threshold : float
        The least improvement that counts, >= 0.
    threshold_mode : {"rel", "abs"}
        Whether ``threshold`` is relative to the best metric or absolute.
    cooldown : int
        Epochs after a reduction in which bad epochs are not counted, >= 0.
    min_lr : float or list of float
        The smallest learning rate, for all groups or one per group, >= 0.
    eps : float
        The least change of ``lr`` that is made, >= 0.

    Examples
    --------
    >>> from reverse import Tensor
    >>> from reverse.optim import SGD
    >>> from reverse.optim.lr_scheduler import ReduceLROnPlateau
    >>> opt = SGD([Tensor(1.0, requires_grad=True)], lr=1.0)
    >>> sched = ReduceLROnPlateau(opt, patience=1, factor=0.5)
    >>> for loss in [3.0, 2.0, 2.0, 2.0, 1.0, 1.5, 1.5]:
    ...     sched.step(loss)
    >>> sched.get_last_lr()  # halved after the 2nd bad epoch in a row, twice
    [0.25]
    """

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0,
                 min_lr: float | list[float] = 0.0, eps: float = 1e-8):
        self.optimizer = _checked_optimizer(optimizer)
        for name, value, allowed in (("mode", mode, ("min", "max")),
                                     ("threshold_mode", threshold_mode, ("rel", "abs"))):
            if value not in allowed:
                raise ValueError(f"{name} must be {' or '.join(map(repr, allowed))}, got {value!r}")
        self.mode, self.threshold_mode = mode, threshold_mode
        self.factor = check_number("factor", factor, 0.0, 1.0, high_open=True)
        self.patience = check_count(patience, "patience")
        self.threshold = non_negative("threshold", threshold)
        self.cooldown = check_count(cooldown, "cooldown")
        self.eps = non_negative("eps", eps)
        groups = len(optimizer.param_groups)
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != groups:
                raise ValueError(f"min_lr must be one number or one per parameter group ({groups}), "
                                 f"got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = [non_negative(f"min_lr[{i}]", m) for i, m in enumerate(min_lr)]
        else:
            self.default_min_lr = non_negative("min_lr", min_lr)
            self.min_lrs = [self.default_min_lr] * groups
        self.last_epoch = 0
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs = self.cooldown_counter = 0
        self._last_lr = self._current_lrs()

    def step(self, metrics: Any) -> None:
        """End an epoch whose metric (a number, or a 0-d array or Tensor) was ``metrics``."""
        current = as_float(metrics)
        self.last_epoch += 1
        if self._is_better(current):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs in the cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce()
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = self._current_lrs()

    def _is_better(self, current: float) -> bool:
        best, threshold = self.best, self.threshold
        if self.mode == "min":
            return current < (best * (1.0 - threshold) if self.threshold_mode == "rel" else best - threshold)
        return current > (best * (1.0 + threshold) if self.threshold_mode == "rel" else best + threshold)

    def _reduce(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):  # a group was added since
            if self.default_min_lr is None:
                raise ValueError(f"min_lr was given per parameter group ({len(self.min_lrs)}), but the "
                                 f"optimizer now has {len(groups)}; set min_lrs to one per group")
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs):
            new = max(group["lr"] * self.factor, min_lr)
            if group["lr"] - new > self.eps:
                group["lr"] = new

"""Learning-rate schedules, as ``torch.optim.lr_scheduler`` names and computes them.

A scheduler sets ``group["lr"]`` of each of its optimizer's parameter groups
when it is made and at each :meth:`~LRScheduler.step` (once per epoch, after
``optimizer.step()``). As in PyTorch, the epoch-driven schedulers update the
current ``lr`` by a factor (they are "chainable": two schedulers on one
optimizer compose), and the numbers are PyTorch's: the cosine schedule, for
one, is PyTorch's recursive form, not the closed form it approximates.

PyTorch's schedulers are all here, with its arguments: ``LambdaLR``,
``MultiplicativeLR``, ``StepLR``, ``MultiStepLR``, ``ConstantLR``,
``LinearLR``, ``ExponentialLR``, ``PolynomialLR``, ``CosineAnnealingLR``,
``CosineAnnealingWarmRestarts``, ``CyclicLR`` and ``OneCycleLR`` (which also
cycle the momentum, or Adam's first beta), ``ReduceLROnPlateau``, and the
two that drive others, ``SequentialLR`` and ``ChainedScheduler``. Each has
``get_last_lr()``, ``state_dict()`` and ``load_state_dict()``. ``step()``
takes no epoch (PyTorch's deprecated ``step(epoch)``), except
``CosineAnnealingWarmRestarts.step(epoch)``, which PyTorch documents for
fractional epochs.

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
import types
from bisect import bisect_right
from typing import Any, Callable, ClassVar

from dualad.interpreter import check_count, check_number, describe
from reverse.optim._base import Optimizer, as_float
from reverse.optim._options import at_least_one, flag, non_negative

__all__ = ["ChainedScheduler", "ConstantLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts",
           "CyclicLR", "ExponentialLR", "LRScheduler", "LambdaLR", "LinearLR", "MultiStepLR",
           "MultiplicativeLR", "OneCycleLR", "PolynomialLR", "ReduceLROnPlateau", "SequentialLR",
           "StepLR"]


def _checked_optimizer(optimizer: Any) -> Optimizer:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"optimizer must be a reverse.optim.Optimizer, got {describe(optimizer)}")
    return optimizer


def _per_group(name: str, value: Any, optimizer: Optimizer, check: Callable[[str, Any], Any],
               one: str = "number") -> list:
    """``value`` for each parameter group: one for all, or a list or tuple of one per group."""
    groups = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != groups:
            raise ValueError(f"{name} must be one {one} or one per parameter group ({groups}), "
                             f"got {len(value)}")
        return [check(f"{name}[{i}]", v) for i, v in enumerate(value)]
    return [check(name, value)] * groups


def _function(name: str, fn: Any) -> Callable:
    if not callable(fn):
        raise TypeError(f"{name} must be a function, got {describe(fn)}")
    return fn


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValueError(f"{name} must be {' or '.join(map(repr, allowed))}, got {value!r}")
    return value


def _cosine(base: float, eta_min: float, t: float, period: float) -> float:
    """The half cosine from ``base`` (t = 0) down to ``eta_min`` (t = period), as PyTorch writes it."""
    return eta_min + (base - eta_min) * (1 + math.cos(math.pi * t / period)) / 2


def _saved_function(fn: Any) -> dict | None:
    """What a state dict keeps of a user's function, as PyTorch: the attributes of a callable
    object, nothing of a plain function (which the constructor gives again)."""
    if fn is None or isinstance(fn, (types.FunctionType, types.MethodType)) or not hasattr(fn, "__dict__"):
        return None
    return dict(vars(fn))


def _restored_function(fn: Any, saved: dict | None) -> None:
    if saved is not None and fn is not None:
        vars(fn).update(saved)


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
    the constructor); and, where PyTorch has one, ``_closed_form()``: the same
    from ``base_lrs`` alone, which :class:`SequentialLR` uses to start a
    schedule again at its milestone.

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

    # State-dict entries with one value per parameter group, checked on loading.
    _PER_GROUP: ClassVar[tuple[str, ...]] = ("base_lrs", "_last_lr", "min_lrs", "max_lrs", "base_momentums",
                                             "max_momentums")
    # Attributes the state dict holds through _save_part and _load_part rather than as they are
    # (the user's functions, the schedulers driven by another).
    _parts: ClassVar[tuple[str, ...]] = ()

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
        self._start()

    def _start(self) -> None:
        """The constructor's step, to epoch 0 (or on, resuming); :class:`SequentialLR` repeats it."""
        self._step_count = 0
        self._advance(initial=True)

    def step(self) -> None:
        """Move to the next epoch and set each group's ``lr`` for it."""
        self._advance(initial=False)

    def _advance(self, initial: bool) -> None:
        self._step_count += 1
        self.last_epoch += 1
        self._apply(self._next_lrs(initial))

    def _apply(self, lrs: list[float]) -> None:
        for group, lr in zip(self.optimizer.param_groups, lrs):
            group["lr"] = lr
        self._last_lr = self._current_lrs()

    def _restart(self) -> None:
        """Go back to epoch 0, as :class:`SequentialLR` does at a milestone (PyTorch's ``_update_lr(0)``)."""
        self.last_epoch = 0
        self._apply(self._closed_form())

    def _next_lrs(self, initial: bool) -> list[float]:
        raise NotImplementedError

    def _closed_form(self) -> list[float]:
        """Each group's ``lr`` at ``self.last_epoch`` from ``base_lrs``: PyTorch's
        ``_get_closed_form_lr``, or its recursive rule where it has none."""
        return self._next_lrs(initial=False)

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
        return {k: self._save_part(k, v) if k in self._parts else _copied(v)
                for k, v in self.__dict__.items() if k != "optimizer"}

    def _save_part(self, key: str, value: Any) -> Any:
        raise NotImplementedError

    def _load_part(self, key: str, value: Any) -> None:
        raise NotImplementedError

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Take the state of :meth:`state_dict` (of the same kind of scheduler, and as many
        parameter groups). The groups' ``lr`` come with the optimizer's own state dict."""
        expected = set(self.state_dict())
        if not isinstance(state_dict, dict) or set(state_dict) != expected:
            got = sorted(state_dict) if isinstance(state_dict, dict) else describe(state_dict)
            raise ValueError(f"state_dict must be the state_dict() of a {type(self).__name__}, with "
                             f"keys {sorted(expected)}, got {got}")
        groups = len(self.optimizer.param_groups)
        for key in self._PER_GROUP:
            if key in state_dict and len(state_dict[key]) != groups:
                raise ValueError(f"state_dict[{key!r}] has {len(state_dict[key])} entries, one per "
                                 f"parameter group of its optimizer; this optimizer has {groups}")
        for key, value in state_dict.items():
            if key in self._parts:
                self._load_part(key, value)
            else:
                setattr(self, key, _copied(value))


def _copied(value: Any) -> Any:
    return list(value) if isinstance(value, list) else value


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

    def _closed_form(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


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

    def _closed_form(self) -> list[float]:
        return [base * self.gamma ** self.last_epoch for base in self.base_lrs]


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

    def _closed_form(self) -> list[float]:
        return [_cosine(base, self.eta_min, self.last_epoch, self.T_max) for base in self.base_lrs]


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

    def _closed_form(self) -> list[float]:
        change = self.end_factor - self.start_factor
        done = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * (self.start_factor + change * done) for base in self.base_lrs]


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
        self.mode = _choice("mode", mode, ("min", "max"))
        self.threshold_mode = _choice("threshold_mode", threshold_mode, ("rel", "abs"))
        self.factor = check_number("factor", factor, 0.0, 1.0, high_open=True)
        self.patience = check_count(patience, "patience")
        self.threshold = non_negative("threshold", threshold)
        self.cooldown = check_count(cooldown, "cooldown")
        self.eps = non_negative("eps", eps)
        self.min_lrs = _per_group("min_lr", min_lr, optimizer, non_negative)
        self.default_min_lr = None if isinstance(min_lr, (list, tuple)) else self.min_lrs[0]
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


class _LambdaSchedule(LRScheduler):
    """What LambdaLR and MultiplicativeLR share: a function of the epoch per group, which a
    state dict holds as PyTorch's does (a callable object's attributes, nothing of a function)."""

    _parts = ("lr_lambdas",)

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
                 last_epoch: int = -1):
        self.lr_lambdas = _per_group("lr_lambda", lr_lambda, _checked_optimizer(optimizer), _function,
                                     one="function")
        super().__init__(optimizer, last_epoch)

    def _save_part(self, key: str, value: Any) -> Any:
        return [_saved_function(fn) for fn in value]

    def _load_part(self, key: str, value: Any) -> None:
        if not isinstance(value, list) or len(value) != len(self.lr_lambdas):
            raise ValueError(f"state_dict['lr_lambdas'] must hold one entry per function "
                             f"({len(self.lr_lambdas)}), got {describe(value)}")
        for fn, saved in zip(self.lr_lambdas, value):
            _restored_function(fn, saved)


class LambdaLR(_LambdaSchedule):
    """Set the learning rate to its base times a function of the epoch: ``lr = base_lr * f(epoch)``.

    Parameters
    ----------
    optimizer : Optimizer
    lr_lambda : callable or list of callable
        ``f(epoch) -> factor``, for every group or one per group. A state
        dict keeps the attributes of a callable object, not a plain function
        (as PyTorch's).
    last_epoch : int
        See :class:`LRScheduler`.

    Examples
    --------
    >>> from reverse import Tensor
    >>> from reverse.optim import SGD
    >>> from reverse.optim.lr_scheduler import LambdaLR
    >>> opt = SGD([Tensor(1.0, requires_grad=True)], lr=1.0)
    >>> sched = LambdaLR(opt, lr_lambda=lambda epoch: 1 / (epoch + 1))
    >>> lrs = []
    >>> for _ in range(4):
    ...     lrs.append(sched.get_last_lr()[0]); opt.step(); sched.step()
    >>> lrs
    [1.0, 0.5, 0.3333333333333333, 0.25]
    """

    def _next_lrs(self, initial: bool) -> list[float]:
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_LambdaSchedule):
    """Multiply the learning rate by a function of the epoch at every epoch: ``lr *= f(epoch)``.

    Parameters
    ----------
    optimizer : Optimizer
    lr_lambda : callable or list of callable
        ``f(epoch) -> factor``, for every group or one per group (see :class:`LambdaLR`).
    last_epoch : int
        See :class:`LRScheduler`.

    Examples
    --------
    >>> from reverse import Tensor
    >>> from reverse.optim import SGD
    >>> from reverse.optim.lr_scheduler import MultiplicativeLR
    >>> opt = SGD([Tensor(1.0, requires_grad=True)], lr=1.0)
    >>> sched = MultiplicativeLR(opt, lr_lambda=lambda epoch: 0.5)
    >>> opt.step(); sched.step(); opt.step(); sched.step()
    >>> sched.get_last_lr()
    [0.25]
    """

    def _next_lrs(self, initial: bool) -> list[float]:
        if initial:
            return self._current_lrs()
        return [lr * fn(self.last_epoch) for fn, lr in zip(self.lr_lambdas, self._current_lrs())]


class MultiStepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` at each milestone epoch.

    ``lr = base_lr * gamma ** (number of milestones <= epoch)``, computed as
    PyTorch does: the current ``lr`` times ``gamma`` at each milestone (times
    ``gamma ** n`` at a milestone listed ``n`` times).

    Parameters
    ----------
    optimizer : Optimizer
    milestones : list of int
        Epochs, >= 0, at which to decay (in any order).
    gamma : float
        The factor of each decay, >= 0.
    last_epoch : int
        See :class:`LRScheduler`.

    Examples
    --------
    >>> from reverse import Tensor
    >>> from reverse.optim import SGD
    >>> from reverse.optim.lr_scheduler import MultiStepLR
    >>> opt = SGD([Tensor(1.0, requires_grad=True)], lr=1.0)
    >>> sched = MultiStepLR(opt, milestones=[2, 4], gamma=0.5)
    >>> lrs = []
    >>> for _ in range(6):
    ...     lrs.append(sched.get_last_lr()[0]); opt.step(); sched.step()
    >>> lrs
    [1.0, 1.0, 0.5, 0.5, 0.25, 0.25]
    """

    def __init__(self, optimizer: Optimizer, milestones: list[int], gamma: float = 0.1, last_epoch: int = -1):
        if isinstance(milestones, (str, bytes)) or not hasattr(milestones, "__iter__"):
            raise TypeError(f"milestones must be a list of epochs (ints), got {describe(milestones)}")
        self.milestones = sorted(check_count(m, f"milestones[{i}]") for i, m in enumerate(milestones))
        self.gamma = non_negative("gamma", gamma)
        super().__init__(optimizer, last_epoch)

    def _next_lrs(self, initial: bool) -> list[float]:
        times = self.milestones.count(self.last_epoch)
        if not times:
            return self._current_lrs()
        return [lr * self.gamma ** times for lr in self._current_lrs()]

    def _closed_form(self) -> list[float]:
        return [base * self.gamma ** bisect_right(self.milestones, self.last_epoch) for base in self.base_lrs]


class ConstantLR(LRScheduler):
    """Scale the learning rate by ``factor`` for the first ``total_iters`` epochs, then not.

    Parameters
    ----------
    optimizer : Optimizer
    factor : float
        The factor, in (0, 1] (PyTorch takes 0 too, and then divides by it
        at ``total_iters``).
    total_iters : int
        Epochs scaled, >= 1.
    last_epoch : int
        See :class:`LRScheduler`.

    Examples
    --------
    >>> from reverse import Tensor
    >>> from reverse.optim import SGD
    >>> from reverse.optim.lr_scheduler import ConstantLR
    >>> opt = SGD([Tensor(1.0, requires_grad=True)], lr=1.0)
    >>> sched = ConstantLR(opt, factor=0.5, total_iters=2)
    >>> lrs = []
    >>> for _ in range(4):
    ...     lrs.append(sched.get_last_lr()[0]); opt.step(); sched.step()
    >>> lrs
    [0.5, 0.5, 1.0, 1.0]
    """

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1):
        self.factor = check_number("factor", factor, 0.0, 1.0, low_open=True)
        self.total_iters = at_least_one("total_iters", total_iters)
        super().__init__(optimizer, last_epoch)

    def _next_lrs(self, initial: bool) -> list[float]:
        if self.last_epoch == 0:
            return [lr * self.factor for lr in self._current_lrs()]
        if self.last_epoch != self.total_iters:
            return self._current_lrs()
        return [lr * (1.0 / self.factor) for lr in self._current_lrs()]

    def _closed_form(self) -> list[float]:
        done = self.last_epoch >= self.total_iters
        return [base * (self.factor + done * (1 - self.factor)) for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decay the learning rate to 0 along a polynomial over ``total_iters`` epochs, then keep it.

    ``lr = base_lr * (1 - min(epoch, total_iters) / total_iters) ** power``,
    computed as PyTorch does, as a ratio of consecutive factors.

    Parameters
    ----------
    optimizer : Optimizer
    total_iters : int
        Epochs of the decay, >= 1.
    power : float
        The power of the polynomial, >= 0.
    last_epoch : int
        See :class:`LRScheduler`.

    Examples
    --------
    >>> from reverse import Tensor
    >>> from reverse.optim import SGD
    >>> from reverse.optim.lr_scheduler import PolynomialLR
    >>> opt = SGD([Tensor(1.0, requires_grad=True)], lr=1.0)
    >>> sched = PolynomialLR(opt, total_iters=4, power=2.0)
    >>> lrs = []
    >>> for _ in range(6):
    ...     lrs.append(sched.get_last_lr()[0]); opt.step(); sched.step()
    >>> lrs
    [1.0, 0.5625, 0.25, 0.0625, 0.0, 0.0]
    """

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1):
        self.total_iters = at_least_one("total_iters", total_iters)
        self.power = non_negative("power", power)
        super().__init__(optimizer, last_epoch)

    def _next_lrs(self, initial: bool) -> list[float]:
        e, total = self.last_epoch, self.total_iters
        if initial or e > total:
            return self._current_lrs()
        factor = ((1.0 - e / total) / (1.0 - (e - 1) / total)) ** self.power
        return [lr * factor for lr in self._current_lrs()]

    def _closed_form(self) -> list[float]:
        left = 1.0 - min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * left ** self.power for base in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """Anneal the learning rate along a half cosine, restarting from the base every period (SGDR).

    ``lr = eta_min + (base_lr - eta_min) (1 + cos(pi T_cur / T_i)) / 2``, with
    ``T_cur`` the epochs since the last restart and ``T_i`` the current
    period: ``T_0`` first, then ``T_mult`` times longer after each restart.

    Parameters
    ----------
    optimizer : Optimizer
    T_0 : int
        Epochs of the first period, >= 1.
    T_mult : int
        The factor by which each period is longer than the last, >= 1.
    eta_min : float
        The smallest learning rate, >= 0.
    last_epoch : int
        See :class:`LRScheduler`.

    Examples
    --------
    >>> from reverse import Tensor
    >>> from reverse.optim import SGD
    >>> from reverse.optim.lr_scheduler import CosineAnnealingWarmRestarts
    >>> opt = SGD([Tensor(1.0, requires_grad=True)], lr=1.0)
    >>> sched = CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2)
    >>> lrs = []
    >>> for _ in range(7):
    ...     lrs.append(round(sched.get_last_lr()[0], 6)); opt.step(); sched.step()
    >>> lrs  # restarts at epochs 2 and 6
    [1.0, 0.5, 1.0, 0.853553, 0.5, 0.146447, 1.0]
    """

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1):
        self.T_0 = self.T_i = at_least_one("T_0", T_0)
        self.T_mult = at_least_one("T_mult", T_mult)
        self.eta_min = non_negative("eta_min", eta_min)
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def step(self, epoch: float | None = None) -> None:
        """Move to the next epoch, or to ``epoch`` (a float >= 0: PyTorch's way of
        stepping within an epoch, ``step(epoch + i / iters)``)."""
        if epoch is None:
            self._advance(initial=False)
        else:
            self._jump(check_number("epoch", epoch))

    def _advance(self, initial: bool) -> None:
        if self.last_epoch < 0:
            self._jump(0)
            return
        self.T_cur += 1
        if self.T_cur >= self.T_i:
            self.T_cur, self.T_i = self.T_cur % self.T_i, self.T_i * self.T_mult
        self.last_epoch += 1
        self._apply(self._next_lrs(initial))

    def _jump(self, epoch: float) -> None:
        T_0, T_mult = self.T_0, self.T_mult
        if epoch < T_0:
            self.T_i, self.T_cur = T_0, epoch
        elif T_mult == 1:
            self.T_cur = epoch % T_0
        else:  # the period epoch falls in, as PyTorch finds it
            n = int(math.log(epoch / T_0 * (T_mult - 1) + 1, T_mult))
            self.T_cur = epoch - T_0 * (T_mult ** n - 1) / (T_mult - 1)
            self.T_i = T_0 * T_mult ** n
        self.last_epoch = math.floor(epoch)
        self._apply(self._next_lrs(initial=False))

    def _next_lrs(self, initial: bool) -> list[float]:
        return [_cosine(base, self.eta_min, self.T_cur, self.T_i) for base in self.base_lrs]


def _momentum_key(optimizer: Optimizer) -> str:
    """Which option of ``optimizer`` the cycling schedulers cycle: Adam's first beta, or momentum."""
    for key in ("betas", "momentum"):
        if key in optimizer.defaults:
            return key
    raise ValueError(f"cycle_momentum=True needs an optimizer with 'momentum' or 'betas' (SGD, "
                     f"RMSprop, Adam, ...), got {type(optimizer).__name__}; pass cycle_momentum=False")


def _set_momentum(group: dict, key: str, value: float) -> None:
    if key == "betas":
        group["betas"] = (value, *group["betas"][1:])
    else:
        group["momentum"] = value


class CyclicLR(LRScheduler):
    """Cycle the learning rate between ``base_lr`` and ``max_lr`` (Smith's cyclical learning rates).

    Stepped once per batch. Each cycle rises linearly over ``step_size_up``
    steps and falls over ``step_size_down``; its height is scaled by the
    ``mode``: ``"triangular"`` (not at all), ``"triangular2"`` (halved every
    cycle) or ``"exp_range"`` (``gamma ** step``), or by ``scale_fn`` of the
    cycle number or of the step (``scale_mode``). With ``cycle_momentum`` the
    momentum (or Adam's first beta) cycles the other way, between
    ``max_momentum`` and ``base_momentum``. PyTorch's rules and numbers.

    Parameters
    ----------
    optimizer : Optimizer
    base_lr, max_lr : float or list of float
        The bounds of the cycle, for every group or one per group, >= 0.
    step_size_up : int
        Steps of the rising half, >= 1.
    step_size_down : int, optional
        Steps of the falling half, >= 0 (default: ``step_size_up``).
    mode : {"triangular", "triangular2", "exp_range"}
        The scaling of the cycle's height, unless ``scale_fn`` is given.
    gamma : float
        The base of ``"exp_range"``, >= 0.
    scale_fn : callable, optional
        ``scale_fn(x)`` in [0, 1]: a scaling of your own (``mode`` is then ignored).
    scale_mode : {"cycle", "iterations"}
        Whether ``scale_fn`` takes the cycle number or the step.
    cycle_momentum : bool
        Cycle the momentum too (the optimizer must have ``momentum`` or ``betas``).
    base_momentum, max_momentum : float or list of float
        The bounds of the momentum, >= 0.
    last_epoch : int
        The last step done (a batch count), see :class:`LRScheduler`.

    Examples
    --------
    >>> from reverse import Tensor
    >>> from reverse.optim import SGD
    >>> from reverse.optim.lr_scheduler import CyclicLR
    >>> opt = SGD([Tensor(1.0, requires_grad=True)], lr=1.0, momentum=0.9)
    >>> sched = CyclicLR(opt, base_lr=0.1, max_lr=0.5, step_size_up=2)
    >>> lrs = []
    >>> for _ in range(6):
    ...     lrs.append(round(sched.get_last_lr()[0], 6)); opt.step(); sched.step()
    >>> lrs
    [0.1, 0.3, 0.5, 0.3, 0.1, 0.3]
    >>> opt.param_groups[0]["momentum"]  # at the peak, the least momentum
    0.8
    """

    _parts = ("_scale_fn_custom",)

    def __init__(self, optimizer: Optimizer, base_lr: float | list[float], max_lr: float | list[float],
                 step_size_up: int = 2000, step_size_down: int | None = None, mode: str = "triangular",
                 gamma: float = 1.0, scale_fn: Callable[[float], float] | None = None,
                 scale_mode: str = "cycle", cycle_momentum: bool = True,
                 base_momentum: float | list[float] = 0.8, max_momentum: float | list[float] = 0.9,
                 last_epoch: int = -1):
        optimizer = _checked_optimizer(optimizer)
        resuming = check_count(last_epoch, "last_epoch", low=-1) != -1
        base_lrs = _per_group("base_lr", base_lr, optimizer, non_negative)
        self.max_lrs = _per_group("max_lr", max_lr, optimizer, non_negative)
        up = at_least_one("step_size_up", step_size_up)
        down = up if step_size_down is None else check_count(step_size_down, "step_size_down")
        self.total_size = float(up + down)
        self.step_ratio = up / self.total_size
        self._scale_fn_custom = None if scale_fn is None else _function("scale_fn", scale_fn)
        self.mode = mode if scale_fn is not None else _choice(
            "mode (without scale_fn)", mode, ("triangular", "triangular2", "exp_range"))
        self.gamma = non_negative("gamma", gamma)
        self.scale_mode = (_choice("scale_mode", scale_mode, ("cycle", "iterations")) if scale_fn is not None
                           else "iterations" if mode == "exp_range" else "cycle")
        self.cycle_momentum = flag("cycle_momentum", cycle_momentum)
        if cycle_momentum:
            self._momentum_key = _momentum_key(optimizer)
            self.base_momentums = _per_group("base_momentum", base_momentum, optimizer, non_negative)
            self.max_momentums = _per_group("max_momentum", max_momentum, optimizer, non_negative)
        if not resuming:
            for i, group in enumerate(optimizer.param_groups):
                group["lr"] = base_lrs[i]
                if cycle_momentum:
                    _set_momentum(group, self._momentum_key, self.max_momentums[i])
                    group["max_momentum"] = self.max_momentums[i]
                    group["base_momentum"] = self.base_momentums[i]
        # As in PyTorch, the constructor's step reads base_lrs from the groups' initial_lr, and
        # base_lr takes their place after it.
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _scale(self, x: float) -> float:
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma ** x

    def _next_lrs(self, initial: bool) -> list[float]:
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle  # how far into the cycle, in [0, 1)
        height = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        scale = self._scale(cycle if self.scale_mode == "cycle" else self.last_epoch)
        if self.cycle_momentum:
            for group, low, high in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums):
                _set_momentum(group, self._momentum_key, high - (high - low) * height * scale)
        return [base + (top - base) * height * scale for base, top in zip(self.base_lrs, self.max_lrs)]

    def _save_part(self, key: str, value: Any) -> Any:
        return _saved_function(value)

    def _load_part(self, key: str, value: Any) -> None:
        _restored_function(self._scale_fn_custom, value)


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith and Topin): up from ``max_lr / div_factor`` to ``max_lr``, then far down.

    Stepped once per batch, ``total_steps`` times (or ``epochs *
    steps_per_epoch``). The learning rate anneals (by a cosine or linearly)
    from ``initial_lr = max_lr / div_factor`` up to ``max_lr`` over the first
    ``pct_start`` of the steps, then down to ``initial_lr / final_div_factor``;
    with ``three_phase``, back to ``initial_lr`` over as many steps again
    first. With ``cycle_momentum`` the momentum (or Adam's first beta) goes
    the other way. Not chainable: it sets the ``lr`` from the groups'
    ``initial_lr``, ``max_lr`` and ``min_lr``, which it writes. PyTorch's
    rules and numbers; a ``pct_start`` that leaves a phase no steps long
    (where PyTorch divides by zero once there) is refused.

    Parameters
    ----------
    optimizer : Optimizer
    max_lr : float or list of float
        The peak, for every group or one per group, >= 0.
    total_steps : int, optional
        Steps in the cycle, >= 1; or give ``epochs`` and ``steps_per_epoch``.
    epochs, steps_per_epoch : int, optional
        ``total_steps = epochs * steps_per_epoch``, each >= 1.
    pct_start : float
        The fraction of the steps spent rising, in [0, 1].
    anneal_strategy : {"cos", "linear"}
    cycle_momentum : bool
        Cycle the momentum too (the optimizer must have ``momentum`` or ``betas``).
    base_momentum, max_momentum : float or list of float
        The momentum at the peak and at the ends, >= 0.
    div_factor : float
        ``initial_lr = max_lr / div_factor``, > 0.
    final_div_factor : float
        The last ``lr`` is ``initial_lr / final_div_factor``, > 0.
    three_phase : bool
        Come back down to ``initial_lr`` symmetrically before the final
        descent (the original paper), rather than go straight down (fastai's).
    last_epoch : int
        The last step done (a batch count), see :class:`LRScheduler`.

    Examples
    --------
    >>> from reverse import Tensor
    >>> from reverse.optim import Adam
    >>> from reverse.optim.lr_scheduler import OneCycleLR
    >>> opt = Adam([Tensor(1.0, requires_grad=True)])
    >>> sched = OneCycleLR(opt, max_lr=1.0, total_steps=5, pct_start=0.4, anneal_strategy="linear",
    ...                    div_factor=10.0, final_div_factor=100.0)
    >>> lrs, beta1 = [], []
    >>> for _ in range(5):
    ...     lrs.append(round(sched.get_last_lr()[0], 6))
    ...     beta1.append(round(opt.param_groups[0]["betas"][0], 6))
    ...     opt.step(); sched.step()
    >>> lrs  # up from 0.1 to 1 in the first 40% of the steps, then down to 0.1 / 100
    [0.1, 1.0, 0.667, 0.334, 0.001]
    >>> beta1  # down while the lr goes up, and back
    [0.95, 0.85, 0.883333, 0.916667, 0.95]
    """

    def __init__(self, optimizer: Optimizer, max_lr: float | list[float], total_steps: int | None = None,
                 epochs: int | None = None, steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True,
                 base_momentum: float | list[float] = 0.85, max_momentum: float | list[float] = 0.95,
                 div_factor: float = 25.0, final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1):
        optimizer = _checked_optimizer(optimizer)
        resuming = check_count(last_epoch, "last_epoch", low=-1) != -1
        if total_steps is not None:
            self.total_steps = at_least_one("total_steps", total_steps)
        elif epochs is not None and steps_per_epoch is not None:
            self.total_steps = (at_least_one("epochs", epochs)
                                * at_least_one("steps_per_epoch", steps_per_epoch))
        else:
            raise ValueError(f"OneCycleLR needs total_steps, or epochs and steps_per_epoch, got "
                             f"total_steps=None, epochs={epochs!r}, steps_per_epoch={steps_per_epoch!r}")
        pct_start = check_number("pct_start", pct_start, 0.0, 1.0)
        self._anneal_func_type = _choice("anneal_strategy", anneal_strategy, ("cos", "linear"))
        rise, total = float(pct_start * self.total_steps) - 1, self.total_steps - 1
        if flag("three_phase", three_phase):
            ends = [(rise, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                    (float(2 * pct_start * self.total_steps) - 2, "max_lr", "initial_lr", "base_momentum",
                     "max_momentum"),
                    (total, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
        else:
            ends = [(rise, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                    (total, "max_lr", "min_lr", "base_momentum", "max_momentum")]
        keys = ("end_step", "start_lr", "end_lr", "start_momentum", "end_momentum")
        self._schedule_phases = [dict(zip(keys, phase)) for phase in ends]
        for start, (end, *_) in zip([0.0] + [end for end, *_ in ends], ends):
            if end == start:
                raise ValueError(f"pct_start={pct_start} with {self.total_steps} steps leaves a phase of "
                                 f"the cycle no steps long (it ends at step {end}, where it starts)")
        max_lrs = _per_group("max_lr", max_lr, optimizer, non_negative)
        div_factor = check_number("div_factor", div_factor, low_open=True)
        final_div_factor = check_number("final_div_factor", final_div_factor, low_open=True)
        self.cycle_momentum = flag("cycle_momentum", cycle_momentum)
        if cycle_momentum:
            self._momentum_key = _momentum_key(optimizer)
            max_momentums = _per_group("max_momentum", max_momentum, optimizer, non_negative)
            base_momentums = _per_group("base_momentum", base_momentum, optimizer, non_negative)
        if not resuming:
            for i, group in enumerate(optimizer.param_groups):
                group["initial_lr"] = max_lrs[i] / div_factor
                group["max_lr"], group["min_lr"] = max_lrs[i], group["initial_lr"] / final_div_factor
                if cycle_momentum:
                    _set_momentum(group, self._momentum_key, max_momentums[i])
                    group["max_momentum"], group["base_momentum"] = max_momentums[i], base_momentums[i]
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def _next_lrs(self, initial: bool) -> list[float]:
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"OneCycleLR was stepped {step} times, past its total_steps={self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, phase in enumerate(self._schedule_phases):
                if step <= phase["end_step"] or i == len(self._schedule_phases) - 1:
                    pct = (step - start) / (phase["end_step"] - start)
                    lrs.append(self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct))
                    if self.cycle_momentum:
                        _set_momentum(group, self._momentum_key, self._anneal(
                            group[phase["start_momentum"]], group[phase["end_momentum"]], pct))
                    break
                start = phase["end_step"]
        return lrs


class _Composite(LRScheduler):
    """What SequentialLR and ChainedScheduler share: the schedulers they drive, checked, and
    held in their state dict by their own state dicts."""

    _parts = ("_schedulers",)

    def _driven(self, schedulers: Any, optimizer: Optimizer | None) -> list[LRScheduler]:
        """``schedulers`` checked: a non-empty list of schedulers of one optimizer (``optimizer``,
        or the first one's), none of them a ReduceLROnPlateau."""
        name = type(self).__name__
        if isinstance(schedulers, LRScheduler) or not isinstance(schedulers, (list, tuple)):
            raise TypeError(f"schedulers must be a list of schedulers, got {describe(schedulers)}")
        if not schedulers:
            raise ValueError(f"{name} needs at least one scheduler, got an empty list")
        for i, s in enumerate(schedulers):
            if not isinstance(s, LRScheduler):
                raise TypeError(f"schedulers[{i}] must be a learning-rate scheduler, got {describe(s)}")
            if isinstance(s, ReduceLROnPlateau):
                raise ValueError(f"schedulers[{i}] is a ReduceLROnPlateau, whose step needs the metric; "
                                 f"{name} steps its schedulers without one")
        self.optimizer = schedulers[0].optimizer if optimizer is None else _checked_optimizer(optimizer)
        for i, s in enumerate(schedulers):
            if s.optimizer is not self.optimizer:
                raise ValueError(f"schedulers[{i}] ({type(s).__name__}) sets the lr of another optimizer "
                                 f"than {name}'s; all must share one")
        return list(schedulers)

    def _save_part(self, key: str, value: Any) -> Any:
        return [s.state_dict() for s in value]

    def _load_part(self, key: str, value: Any) -> None:
        if not isinstance(value, list) or len(value) != len(self._schedulers):
            raise ValueError(f"state_dict['_schedulers'] must hold one state dict per scheduler "
                             f"({len(self._schedulers)}), got {describe(value)}")
        for s, saved in zip(self._schedulers, value):
            s.load_state_dict(saved)


class SequentialLR(_Composite):
    """Run schedulers one after another: each from its milestone epoch until the next.

    At each milestone the next scheduler starts its schedule from epoch 0
    (from the groups' ``initial_lr``, as PyTorch's closed forms do). The
    schedulers are made first, on the same optimizer; this one undoes their
    constructors' steps and starts the first. A ``SequentialLR`` or
    ``ChainedScheduler`` is refused as one of them (PyTorch fails on it at
    its milestone).

    Parameters
    ----------
    optimizer : Optimizer
    schedulers : list of LRScheduler
        The schedulers, in order (no ``ReduceLROnPlateau``: its step needs the metric).
    milestones : list of int
        Increasing epochs >= 1 at which the next scheduler takes over, one
        fewer than the schedulers.
    last_epoch : int
        See :class:`LRScheduler`.

    Examples
    --------
    >>> from reverse import Tensor
    >>> from reverse.optim import SGD
    >>> from reverse.optim.lr_scheduler import ConstantLR, ExponentialLR, SequentialLR
    >>> opt = SGD([Tensor(1.0, requires_grad=True)], lr=1.0)
    >>> warmup, decay = ConstantLR(opt, factor=0.1, total_iters=2), ExponentialLR(opt, gamma=0.5)
    >>> sched = SequentialLR(opt, schedulers=[warmup, decay], milestones=[2])
    >>> lrs = []
    >>> for _ in range(5):
    ...     lrs.append(sched.get_last_lr()[0]); opt.step(); sched.step()
    >>> lrs
    [0.1, 0.1, 1.0, 0.5, 0.25]
    """

    def __init__(self, optimizer: Optimizer, schedulers: list[LRScheduler], milestones: list[int],
                 last_epoch: int = -1):
        self._schedulers = self._driven(schedulers, _checked_optimizer(optimizer))
        for i, s in enumerate(self._schedulers):
            if isinstance(s, _Composite):
                raise ValueError(f"schedulers[{i}] is a {type(s).__name__}, which SequentialLR cannot "
                                 f"start again at a milestone; give its schedulers to this one instead")
        if not isinstance(milestones, (list, tuple)) or len(milestones) != len(self._schedulers) - 1:
            count = len(milestones) if isinstance(milestones, (list, tuple)) else describe(milestones)
            raise ValueError(f"milestones must be a list of {len(self._schedulers) - 1} epoch(s), one "
                             f"fewer than the schedulers, got {count}")
        self._milestones = [check_count(m, f"milestones[{i}]", low=1) for i, m in enumerate(milestones)]
        if any(a >= b for a, b in zip(self._milestones, self._milestones[1:])):
            raise ValueError(f"milestones must increase, got {self._milestones}")
        self.last_epoch = check_count(last_epoch, "last_epoch", low=-1) + 1
        for group in self.optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        for s in self._schedulers:  # undo the constructors' steps ...
            s.last_epoch -= 1
        self._schedulers[0]._start()  # ... and make the first one's again
        self._last_lr = self._schedulers[0].get_last_lr()

    def step(self) -> None:
        """Move to the next epoch: the scheduler of its stretch steps, or starts at its milestone."""
        self.last_epoch += 1
        i = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[i]
        if i > 0 and self._milestones[i - 1] == self.last_epoch:
            scheduler._restart()
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_Composite):
    """Step several schedulers at once: each ``step()`` steps them all, in order.

    For chainable schedulers, whose factors then multiply (a warmup and a
    decay, say); the same as stepping each, in one call.

    Parameters
    ----------
    schedulers : list of LRScheduler
        Schedulers of one optimizer (no ``ReduceLROnPlateau``: its step needs the metric).
    optimizer : Optimizer, optional
        Their optimizer (default: the first one's).

    Examples
    --------
    >>> from reverse import Tensor
    >>> from reverse.optim import SGD
    >>> from reverse.optim.lr_scheduler import ChainedScheduler, ConstantLR, ExponentialLR
    >>> opt = SGD([Tensor(1.0, requires_grad=True)], lr=1.0)
    >>> sched = ChainedScheduler([ConstantLR(opt, factor=0.1, total_iters=2),
    ...                           ExponentialLR(opt, gamma=0.5)])
    >>> lrs = []
    >>> for _ in range(4):
    ...     lrs.append(round(sched.get_last_lr()[0], 6)); opt.step(); sched.step()
    >>> lrs
    [0.1, 0.05, 0.25, 0.125]
    """

    def __init__(self, schedulers: list[LRScheduler], optimizer: Optimizer | None = None):
        self._schedulers = self._driven(schedulers, optimizer)
        self._last_lr = self._current_lrs()

    def step(self) -> None:
        """Step every scheduler, in order."""
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = self._current_lrs()

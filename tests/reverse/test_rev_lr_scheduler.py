"""``reverse.optim.lr_scheduler`` against the closed forms of PyTorch's documentation.

The schedulers compute PyTorch's recursive (chainable) forms; the references
here are the closed forms the documentation gives, which they must equal to
rounding. ``ReduceLROnPlateau`` is checked on scenarios worked out by hand
from its documented rules. PyTorch's own numbers are in test_rev_optim_torch.py.
"""

import math

import numpy as np
import pytest

from reverse import Tensor
from reverse.optim import SGD, Adagrad, Adam
from reverse.optim.lr_scheduler import (
    ChainedScheduler,
    ConstantLR,
    CosineAnnealingLR,
    CosineAnnealingWarmRestarts,
    CyclicLR,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    LRScheduler,
    MultiplicativeLR,
    MultiStepLR,
    OneCycleLR,
    PolynomialLR,
    ReduceLROnPlateau,
    SequentialLR,
    StepLR,
)

BASES = [0.5, 0.03]
EPOCHS = 13


def optimizer(lrs=BASES):
    return SGD([{"params": [Tensor(1.0, requires_grad=True)], "lr": lr} for lr in lrs], lr=1.0)


def schedule(make, epochs=EPOCHS):
    """Each group's lr at epochs 0 .. epochs - 1 (the constructor sets epoch 0's)."""
    opt = optimizer()
    sched = make(opt)
    lrs = []
    for _ in range(epochs):
        assert sched.get_last_lr() == [g["lr"] for g in opt.param_groups]
        lrs.append(sched.get_last_lr())
        opt.step()
        sched.step()
    return np.array(lrs)


def closed_form(factor, epochs=EPOCHS):
    return np.array([[base * factor(e, base) for base in BASES] for e in range(epochs)])


@pytest.mark.parametrize("make, factor", [
    (lambda o: StepLR(o, step_size=3), lambda e, b: 0.1 ** (e // 3)),
    (lambda o: StepLR(o, step_size=1, gamma=0.7), lambda e, b: 0.7 ** e),
    (lambda o: ExponentialLR(o, gamma=0.8), lambda e, b: 0.8 ** e),
    (lambda o: CosineAnnealingLR(o, T_max=5), lambda e, b: (1 + math.cos(math.pi * e / 5)) / 2),
    (lambda o: CosineAnnealingLR(o, T_max=4, eta_min=0.01),  # past T_max too: the cosine goes on
     lambda e, b: (0.01 + (b - 0.01) * (1 + math.cos(math.pi * e / 4)) / 2) / b),
    (lambda o: LinearLR(o), lambda e, b: 1 / 3 + (1 - 1 / 3) * min(e, 5) / 5),
    (lambda o: LinearLR(o, start_factor=0.1, total_iters=4), lambda e, b: 0.1 + 0.9 * min(e, 4) / 4),
    (lambda o: LinearLR(o, start_factor=1.0, end_factor=0.2, total_iters=6),
     lambda e, b: 1.0 - 0.8 * min(e, 6) / 6),
    (lambda o: MultiStepLR(o, milestones=[9, 2, 5, 5]),
     lambda e, b: 0.1 ** sum(m <= e for m in [2, 5, 5, 9])),
    (lambda o: ConstantLR(o, factor=0.25, total_iters=3), lambda e, b: 0.25 if e < 3 else 1.0),
    (lambda o: PolynomialLR(o, total_iters=8, power=2.5), lambda e, b: (1 - min(e, 8) / 8) ** 2.5),
    (lambda o: LambdaLR(o, lambda e: 0.9 ** e), lambda e, b: 0.9 ** e),
    (lambda o: LambdaLR(o, [lambda e: 1.0, lambda e: 1 / (1 + e)]),
     lambda e, b: 1.0 if b == 0.5 else 1 / (1 + e)),
    (lambda o: MultiplicativeLR(o, lambda e: 0.9), lambda e, b: 0.9 ** e),
    (lambda o: CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2, eta_min=0.01),
     lambda e, b: (0.01 + (b - 0.01) * (1 + math.cos(math.pi * warm_restart(e, 2, 2)[0]
                                                    / warm_restart(e, 2, 2)[1])) / 2) / b),
    (lambda o: CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3),
     lambda e, b: (0.01 + 0.09 * max(0.0, 1 - abs(e / 3 - 2 * math.floor(1 + e / 6) + 1))) / b),
    (lambda o: OneCycleLR(o, max_lr=1.0, total_steps=13, pct_start=0.25, anneal_strategy="linear"),
     lambda e, b: np.interp(e, [0, 0.25 * 13 - 1, 12], [1 / 25, 1.0, 1 / 25 / 1e4]) / b),
], ids=["step", "step-1", "exponential", "cosine", "cosine-eta_min", "linear", "warmup", "ramp-down",
        "multistep", "constant", "polynomial", "lambda", "lambdas", "multiplicative", "warm-restarts",
        "cyclic", "one-cycle"])
def test_matches_the_documented_closed_form(make, factor):
    np.testing.assert_allclose(schedule(make), closed_form(factor), rtol=1e-12, atol=1e-15)


def warm_restart(epoch, T_0, T_mult):
    """SGDR's (epochs since the last restart, current period), counted period by period."""
    period = T_0
    while epoch >= period:
        epoch, period = epoch - period, period * T_mult
    return epoch, period


def test_two_schedulers_on_one_optimizer_compose():
    """PyTorch's chainable form: a warmup and a decay multiply."""
    opt = optimizer()
    warmup, decay = LinearLR(opt, start_factor=0.2, total_iters=4), ExponentialLR(opt, gamma=0.9)
    lrs = []
    for _ in range(EPOCHS):
        lrs.append([g["lr"] for g in opt.param_groups])
        warmup.step()
        decay.step()
    want = closed_form(lambda e, b: (0.2 + 0.8 * min(e, 4) / 4) * 0.9 ** e)
    np.testing.assert_allclose(lrs, want, rtol=1e-12)
    assert decay.base_lrs == BASES  # the base is the lr before any schedule, not the warmed-up one


def test_the_optimizer_steps_with_the_scheduled_lr():
    x = Tensor(np.array([1.0]), requires_grad=True)
    opt = SGD([x], lr=0.5)
    sched = StepLR(opt, step_size=1, gamma=0.5)
    for _ in range(3):
        opt.zero_grad()
        x.sum().backward()  # gradient 1: each step moves by the lr
        opt.step()
        sched.step()
    np.testing.assert_allclose(x.value, [1.0 - 0.5 - 0.25 - 0.125])


def plateau(metrics, lr=1.0, **kw):
    opt = optimizer([lr])
    sched = ReduceLROnPlateau(opt, **kw)
    lrs = []
    for m in metrics:
        sched.step(m)
        lrs.append(sched.get_last_lr()[0])
    return lrs


@pytest.mark.parametrize("metrics, kw, want", [
    # patience 2: the 3rd epoch in a row that is no better reduces; the count starts again
    ([5, 4, 4, 4, 4, 4, 4, 4], dict(patience=2), [1, 1, 1, 1, 0.1, 0.1, 0.1, 0.01]),
    # patience 0: every epoch no better than the best reduces
    ([5, 6, 4, 7], dict(patience=0, factor=0.5), [1, 0.5, 0.5, 0.25]),
    # rel threshold 0.1: 4.6 is not below 5 * 0.9 (a bad epoch), 4.4 is
    ([5, 4.6, 4.4, 4.3], dict(patience=0, threshold=0.1, factor=0.5), [1, 0.5, 0.5, 0.25]),
    # abs threshold 0.5: 4.6 is not below 5 - 0.5, 4.4 is
    ([5, 4.6, 4.4, 4.3], dict(patience=0, threshold=0.5, threshold_mode="abs", factor=0.5),
     [1, 0.5, 0.5, 0.25]),
    # max mode: a metric that should go up
    ([0.5, 0.6, 0.6, 0.55], dict(mode="max", patience=1, factor=0.5), [1, 1, 1, 0.5]),
    # cooldown 2: the two epochs after a reduction count no bad epochs
    ([5, 6, 6, 6, 6, 6], dict(patience=0, cooldown=2, factor=0.5), [1, 0.5, 0.5, 0.5, 0.25, 0.25]),
    # min_lr bounds it; a reduction smaller than eps is not made
    ([5, 6, 6, 6], dict(patience=0, factor=0.5, min_lr=0.3), [1, 0.5, 0.3, 0.3]),
    ([5, 6, 6], dict(patience=0, factor=0.5, eps=0.6), [1, 1, 1]),
], ids=["patience", "no-patience", "rel", "abs", "max", "cooldown", "min_lr", "eps"])
def test_reduce_on_plateau_follows_the_documented_rules(metrics, kw, want):
    assert plateau(metrics, **kw) == pytest.approx(want, rel=1e-12)


def test_reduce_on_plateau_per_group_min_lr_and_tensor_metrics():
    opt = optimizer([1.0, 0.1])
    sched = ReduceLROnPlateau(opt, patience=0, factor=0.5, min_lr=[0.2, 0.08])
    loss = Tensor(np.array(2.0), requires_grad=True) * 1.0  # a loss that requires grad, as after backward
    for m in [loss, loss * 2.0, loss * 2.0, loss * 2.0]:
        sched.step(m)
    assert sched.get_last_lr() == pytest.approx([0.2, 0.08])


@pytest.mark.parametrize("make", [
    lambda o: StepLR(o, step_size=2, gamma=0.5), lambda o: CosineAnnealingLR(o, T_max=3, eta_min=0.01),
    lambda o: LinearLR(o, start_factor=0.1, total_iters=4),
    lambda o: ReduceLROnPlateau(o, patience=1, cooldown=1, factor=0.5),
    lambda o: MultiStepLR(o, milestones=[3, 6]), lambda o: ConstantLR(o, total_iters=7),
    lambda o: PolynomialLR(o, total_iters=8), lambda o: LambdaLR(o, Wave()),
    lambda o: MultiplicativeLR(o, [Wave(), lambda e: 0.9]),
    lambda o: CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2),
    lambda o: CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3, mode="triangular2"),
    lambda o: CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3, scale_fn=Wave()),
    lambda o: OneCycleLR(o, max_lr=0.1, total_steps=10, three_phase=True),
    lambda o: SequentialLR(o, [ConstantLR(o, factor=0.5), CosineAnnealingLR(o, T_max=4)], milestones=[4]),
    lambda o: ChainedScheduler([LinearLR(o, start_factor=0.5), MultiplicativeLR(o, Wave())]),
], ids=["step", "cosine", "linear", "plateau", "multistep", "constant", "polynomial", "lambda",
        "multiplicative", "warm-restarts", "cyclic", "cyclic-scale_fn", "one-cycle", "sequential", "chained"])
def test_state_dicts_resume_the_schedule(make):
    metrics = [3.0, 2.0, 2.5, 2.5, 2.5, 2.5, 1.0, 2.0, 2.0, 2.0]

    def advance(opt, sched, epochs):
        out = []
        for m in epochs:
            opt.step()
            sched.step(m) if isinstance(sched, ReduceLROnPlateau) else sched.step()
            out.append(sched.get_last_lr())
        return out
    opt = Adam([{"params": [Tensor(1.0, requires_grad=True)], "lr": lr} for lr in BASES])
    sched = make(opt)
    advance(opt, sched, metrics[:5])
    saved_opt, saved = opt.state_dict(), sched.state_dict()
    fresh_opt = Adam([{"params": [Tensor(1.0, requires_grad=True)]} for _ in BASES])
    fresh = make(fresh_opt)             # made before the optimizer's state is loaded, as PyTorch says
    fresh_opt.load_state_dict(saved_opt)
    fresh.load_state_dict(saved)
    assert advance(fresh_opt, fresh, metrics[5:]) == advance(opt, sched, metrics[5:])


class Wave:
    """A callable object with state: a state dict keeps its attributes, as PyTorch's does."""

    def __init__(self, depth=0.3):
        self.depth = depth

    def __call__(self, x):
        return 1.0 - self.depth * (x % 3) / 3


def test_state_dicts_keep_a_callable_objects_attributes_not_a_function():
    wave = Wave(0.5)
    sched = LambdaLR(optimizer(), [wave, lambda e: 1.0])
    saved = sched.state_dict()
    assert saved["lr_lambdas"] == [{"depth": 0.5}, None]
    again = Wave(0.1)
    fresh = LambdaLR(optimizer(), [again, lambda e: 2.0])
    fresh.load_state_dict(saved)
    assert again.depth == 0.5 and fresh.lr_lambdas[0] is again  # the functions stay the constructor's


def test_sequential_lr_restarts_each_schedule_at_its_milestone():
    opt = optimizer()
    sched = SequentialLR(opt, [LinearLR(opt, start_factor=0.5, total_iters=2), ExponentialLR(opt, gamma=0.5),
                               StepLR(opt, step_size=2, gamma=0.1)], milestones=[3, 5])
    lrs = []
    for _ in range(8):
        assert sched.get_last_lr() == [g["lr"] for g in opt.param_groups]
        lrs.append(sched.get_last_lr())
        opt.step()
        sched.step()
    factors = [0.5, 0.75, 1.0, 1.0, 0.5, 1.0, 1.0, 0.1]
    np.testing.assert_allclose(lrs, [[b * f for b in BASES] for f in factors], rtol=1e-12)


def test_chained_scheduler_steps_each_in_turn():
    opt = optimizer()
    chained = ChainedScheduler([ConstantLR(opt, factor=0.5, total_iters=2), ExponentialLR(opt, gamma=0.8)])
    lrs = []
    for _ in range(4):
        lrs.append(chained.get_last_lr())
        opt.step()
        chained.step()
    np.testing.assert_allclose(lrs, [[b * f for b in BASES] for f in [0.5, 0.4, 0.64, 0.512]], rtol=1e-12)


def test_cycling_schedules_cycle_the_momentum_or_adams_first_beta():
    sgd = SGD([Tensor(1.0, requires_grad=True)], lr=1.0, momentum=0.5)
    CyclicLR(sgd, base_lr=0.1, max_lr=1.0, step_size_up=2, base_momentum=0.8, max_momentum=0.9)
    adam = Adam([Tensor(1.0, requires_grad=True)], betas=(0.9, 0.99))
    one_cycle = OneCycleLR(adam, max_lr=1.0, total_steps=4, pct_start=0.5, anneal_strategy="linear")
    assert sgd.param_groups[0]["momentum"] == 0.9 and adam.param_groups[0]["betas"] == (0.95, 0.99)
    one_cycle.step()
    assert adam.param_groups[0]["betas"] == (0.85, 0.99) and one_cycle.get_last_lr() == [1.0]
    for _ in range(3):
        one_cycle.step()
    with pytest.raises(ValueError, match=r"OneCycleLR was stepped 5 times, past its total_steps=4"):
        one_cycle.step()


def test_warm_restarts_step_to_fractional_epochs():
    opt = optimizer()
    sched = CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2)
    for epoch, (t_cur, period) in [(0.5, (0.5, 2)), (2.5, (0.5, 4)), (7.0, (1.0, 8)), (1.25, (1.25, 2))]:
        sched.step(epoch)
        assert (sched.T_cur, sched.T_i, sched.last_epoch) == (t_cur, period, math.floor(epoch))
        want = [b * (1 + math.cos(math.pi * t_cur / period)) / 2 for b in BASES]
        assert sched.get_last_lr() == pytest.approx(want, rel=1e-12)


def test_resuming_with_last_epoch_needs_initial_lr():
    opt = optimizer()
    with pytest.raises(ValueError, match=r"last_epoch=3 resumes a schedule, which needs "
                                         r"optimizer.param_groups\[0\]\['initial_lr'\]"):
        StepLR(opt, step_size=2, last_epoch=3)
    for g in opt.param_groups:
        g["initial_lr"] = g["lr"]
    # PyTorch's resumption: the lrs stay as the optimizer has them (from its state dict), the
    # epoch moves on by one, and the schedule goes on from there.
    sched = CosineAnnealingLR(opt, T_max=4, last_epoch=1)
    assert sched.get_last_lr() == BASES and sched.last_epoch == 2
    sched.step()
    ratio = (1 + math.cos(3 * math.pi / 4)) / (1 + math.cos(2 * math.pi / 4))
    assert sched.get_last_lr() == pytest.approx([b * ratio for b in BASES], rel=1e-12)


@pytest.mark.parametrize("make, error, match", [
    (lambda o: StepLR("sgd", step_size=2), TypeError,
     r"optimizer must be a reverse.optim.Optimizer, got a str"),
    (lambda o: StepLR(o, step_size=0), ValueError, r"step_size must be an int >= 1, got 0"),
    (lambda o: StepLR(o, step_size=2, gamma=-0.5), ValueError, r"gamma must be >= 0.0, got -0.5"),
    (lambda o: ExponentialLR(o, gamma="0.9"), TypeError, r"gamma must be a number, got str"),
    (lambda o: CosineAnnealingLR(o, T_max=0), ValueError, r"T_max must be an int >= 1, got 0"),
    (lambda o: CosineAnnealingLR(o, T_max=3, eta_min=-1.0), ValueError, r"eta_min must be >= 0.0"),
    (lambda o: LinearLR(o, start_factor=0.0), ValueError, r"start_factor must be > 0.0 and <= 1.0, got 0.0"),
    (lambda o: LinearLR(o, end_factor=1.5), ValueError, r"end_factor must be >= 0.0 and <= 1.0, got 1.5"),
    (lambda o: LinearLR(o, total_iters=2.0), TypeError, r"total_iters must be an int >= 1, got float 2.0"),
    (lambda o: StepLR(o, step_size=1, last_epoch=-2), ValueError, r"last_epoch must be an int >= -1"),
    (lambda o: ReduceLROnPlateau(o, mode="minimum"), ValueError, r"mode must be 'min' or 'max', got "
                                                                  r"'minimum'"),
    (lambda o: ReduceLROnPlateau(o, threshold_mode="relative"), ValueError,
     r"threshold_mode must be 'rel' or 'abs'"),
    (lambda o: ReduceLROnPlateau(o, factor=1.0), ValueError, r"factor must be >= 0.0 and < 1.0, got 1.0"),
    (lambda o: ReduceLROnPlateau(o, patience=-1), ValueError, r"patience must be an int >= 0, got -1"),
    (lambda o: ReduceLROnPlateau(o, min_lr=[0.1]), ValueError,
     r"min_lr must be one number or one per parameter group \(2\), got 1"),
    (lambda o: ReduceLROnPlateau(o, min_lr=[0.1, -0.1]), ValueError, r"min_lr\[1\] must be >= 0.0"),
    (lambda o: StepLR(o, step_size=2).load_state_dict(ExponentialLR(optimizer(), 0.5).state_dict()),
     ValueError, r"state_dict must be the state_dict\(\) of a StepLR, with keys \['_last_lr', "
                 r"'_step_count', 'base_lrs', 'gamma', 'last_epoch', 'step_size'\], got \['_last_lr', "
                 r"'_step_count', 'base_lrs', 'gamma', 'last_epoch'\]"),
    (lambda o: StepLR(o, step_size=2).load_state_dict(StepLR(optimizer([0.1]), 2).state_dict()),
     ValueError, r"state_dict\['base_lrs'\] has 1 entries, one per parameter group of its optimizer; "
                 r"this optimizer has 2"),
    (lambda o: MultiStepLR(o, milestones=[2, -1]), ValueError,
     r"milestones\[1\] must be an int >= 0, got -1"),
    (lambda o: MultiStepLR(o, milestones=3), TypeError, r"milestones must be a list of epochs \(ints\), got"),
    (lambda o: ConstantLR(o, factor=0.0), ValueError, r"factor must be > 0.0 and <= 1.0, got 0.0"),
    (lambda o: PolynomialLR(o, power=-1), ValueError, r"power must be >= 0.0, got -1.0"),
    (lambda o: LambdaLR(o, [lambda e: 1.0]), ValueError,
     r"lr_lambda must be one function or one per parameter group \(2\), got 1"),
    (lambda o: MultiplicativeLR(o, 0.9), TypeError, r"lr_lambda must be a function, got float 0.9"),
    (lambda o: CosineAnnealingWarmRestarts(o, T_0=0), ValueError, r"T_0 must be an int >= 1, got 0"),
    (lambda o: CosineAnnealingWarmRestarts(o, T_0=2, T_mult=1.5), TypeError, r"T_mult must be an int >= 1"),
    (lambda o: CosineAnnealingWarmRestarts(o, T_0=2).step(-1.0), ValueError,
     r"epoch must be >= 0.0, got -1.0"),
    (lambda o: CyclicLR(o, 0.1, 1.0, mode="triangle"), ValueError,
     r"mode \(without scale_fn\) must be 'triangular' or 'triangular2' or 'exp_range', got 'triangle'"),
    (lambda o: CyclicLR(o, 0.1, [1.0, 2.0, 3.0]), ValueError,
     r"max_lr must be one number or one per parameter group \(2\), got 3"),
    (lambda o: CyclicLR(Adagrad([Tensor(1.0, requires_grad=True)]), 0.1, 1.0), ValueError,
     r"cycle_momentum=True needs an optimizer with 'momentum' or 'betas' \(SGD, RMSprop, Adam, ...\), "
     r"got Adagrad; pass cycle_momentum=False"),
    (lambda o: CyclicLR(o, 0.1, 1.0, step_size_up=0), ValueError, r"step_size_up must be an int >= 1, got 0"),
    (lambda o: OneCycleLR(o, max_lr=1.0, epochs=3), ValueError,
     r"OneCycleLR needs total_steps, or epochs and steps_per_epoch, got total_steps=None, epochs=3, "
     r"steps_per_epoch=None"),
    (lambda o: OneCycleLR(o, max_lr=1.0, total_steps=10, pct_start=0.1), ValueError,
     r"pct_start=0.1 with 10 steps leaves a phase of the cycle no steps long"),
    (lambda o: OneCycleLR(o, max_lr=1.0, total_steps=10, anneal_strategy="cosine"), ValueError,
     r"anneal_strategy must be 'cos' or 'linear', got 'cosine'"),
    (lambda o: OneCycleLR(o, max_lr=1.0, total_steps=10, div_factor=0), ValueError,
     r"div_factor must be > 0.0, got 0.0"),
    (lambda o: SequentialLR(o, [StepLR(o, 2), ExponentialLR(o, 0.9)], milestones=[]), ValueError,
     r"milestones must be a list of 1 epoch\(s\), one fewer than the schedulers, got 0"),
    (lambda o: SequentialLR(o, [StepLR(o, 2), ExponentialLR(o, 0.9), StepLR(o, 3)], milestones=[4, 4]),
     ValueError, r"milestones must increase, got \[4, 4\]"),
    (lambda o: SequentialLR(o, [StepLR(o, 2), ReduceLROnPlateau(o)], milestones=[3]), ValueError,
     r"schedulers\[1\] is a ReduceLROnPlateau, whose step needs the metric; SequentialLR steps"),
    (lambda o: SequentialLR(o, [StepLR(o, 2), ChainedScheduler([StepLR(o, 2)])], milestones=[3]),
     ValueError, r"schedulers\[1\] is a ChainedScheduler, which SequentialLR cannot start again"),
    (lambda o: SequentialLR(o, [StepLR(optimizer(), 2)], milestones=[]), ValueError,
     r"schedulers\[0\] \(StepLR\) sets the lr of another optimizer than SequentialLR's"),
    (lambda o: ChainedScheduler([]), ValueError, r"ChainedScheduler needs at least one scheduler"),
    (lambda o: ChainedScheduler(StepLR(o, 2)), TypeError, r"schedulers must be a list of schedulers, got"),
    (lambda o: ChainedScheduler([StepLR(o, 2), "cosine"]), TypeError,
     r"schedulers\[1\] must be a learning-rate scheduler, got a str"),
], ids=range(43))
def test_bad_arguments_name_what_is_wrong(make, error, match):
    with pytest.raises(error, match=match):
        make(optimizer())


def test_a_custom_scheduler_needs_only_its_rule():
    class Halving(LRScheduler):
        def _next_lrs(self, initial):
            return [g["lr"] * (1.0 if initial else 0.5) for g in self.optimizer.param_groups]
    assert schedule(Halving, epochs=3).tolist() == closed_form(lambda e, b: 0.5 ** e, 3).tolist()

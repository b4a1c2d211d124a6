"""The cases ``reverse.optim`` is compared with PyTorch on, and one runner for both libraries.

Each case is plain data with PyTorch's names and options (it goes into
``tests/reverse/torch_optim_golden.json`` with PyTorch's results). :func:`run_case`
runs it with ``lib`` = ``optim_problem.REVERSE`` or :func:`torch_lib`: the same
PyTorch-style training code on either library, which is itself a check that
``reverse.optim`` speaks PyTorch's vocabulary. After changing a case, run
``tests/reverse/make_torch_optim_golden.py`` again.
"""

from types import SimpleNamespace

import numpy as np

from _support.optim_problem import ROSENBROCK_X0, U0, X0, joint_loss, rosenbrock

STEPS = 5
FIRST_ORDER = [
    ("SGD", dict(lr=0.1), None),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1), None),
    ("SGD", dict(lr=0.05, momentum=0.8, dampening=0.3), [{}, {"lr": 0.01, "weight_decay": 0.2}]),
    ("Adam", dict(lr=0.1), None),
    ("Adam", dict(lr=0.1, betas=[0.9, 0.5], weight_decay=0.2, amsgrad=True), None),
    ("Adam", dict(lr=0.05), [{}, {"lr": 0.02, "amsgrad": True, "betas": [0.8, 0.5]}]),
    ("AdamW", dict(lr=0.1, weight_decay=0.3), None),
    ("AdamW", dict(lr=0.1, betas=[0.9, 0.5], weight_decay=0.1, amsgrad=True), None),
    ("RMSprop", dict(lr=0.01), None),
    ("RMSprop", dict(lr=0.01, alpha=0.9, centered=True, momentum=0.5, weight_decay=0.1), None),
    ("RMSprop", dict(lr=0.02, momentum=0.8), [{"centered": True}, {"lr": 0.001, "eps": 1e-4}]),
    ("Adagrad", dict(lr=0.1), None),
    ("Adagrad", dict(lr=0.2, lr_decay=0.1, weight_decay=0.1, initial_accumulator_value=0.1, eps=1e-3),
     None),
    ("SGD", dict(lr=0.05, momentum=0.9, weight_decay=0.1, maximize=True), None),
    ("Adam", dict(lr=0.1, amsgrad=True, maximize=True), [{}, {"maximize": False}]),
    ("AdamW", dict(lr=0.1, weight_decay=0.3, maximize=True), None),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5, weight_decay=0.1, maximize=True), None),
    ("Adagrad", dict(lr=0.2, lr_decay=0.1, weight_decay=0.1, maximize=True), None),
]
# Complex parameters: PyTorch steps Adam, AdamW, RMSprop and Adagrad on their real view.
COMPLEX = [
    ("SGD", dict(lr=0.05, momentum=0.9, weight_decay=0.1)),
    ("Adam", dict(lr=0.1)),
    ("Adam", dict(lr=0.1, betas=[0.9, 0.5], weight_decay=0.2, amsgrad=True, maximize=True)),
    ("AdamW", dict(lr=0.1, weight_decay=0.3, amsgrad=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, centered=True, momentum=0.5, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.2, lr_decay=0.1, weight_decay=0.1, initial_accumulator_value=0.1, eps=1e-3)),
]
Z0 = [[0.7, -1.3], [0.5, 0.2], [-1.0, 0.4]]  # (real, imaginary) of each entry
LBFGS = [
    (dict(line_search_fn="strong_wolfe", max_iter=10), 3, "float64"),
    (dict(line_search_fn="strong_wolfe", max_iter=8, history_size=2, tolerance_change=1e-12), 2, "float64"),
    (dict(lr=1e-3, max_iter=6, history_size=3), 2, "float64"),
    (dict(line_search_fn="strong_wolfe", max_iter=3), 1, "float32"),
]
SCHEDULERS = [
    [("StepLR", dict(step_size=3, gamma=0.5))],
    [("ExponentialLR", dict(gamma=0.8))],
    [("CosineAnnealingLR", dict(T_max=5, eta_min=0.01))],
    [("LinearLR", dict(start_factor=0.1, total_iters=4))],
    [("LinearLR", dict(start_factor=1.0, end_factor=0.2, total_iters=6))],
    [("LinearLR", dict(start_factor=0.2, total_iters=3)), ("CosineAnnealingLR", dict(T_max=8))],
    [("ReduceLROnPlateau", dict(patience=1, cooldown=1, factor=0.5, threshold=0.05,
                                min_lr=[0.1, 0.001]))],
    [("ReduceLROnPlateau", dict(mode="max", threshold_mode="abs", threshold=0.1, patience=0, factor=0.3))],
]
SCHEDULERS += [
    [("LambdaLR", dict(lr_lambda="inverse"))],
    [("LambdaLR", dict(lr_lambda=["inverse", "wave"]))],
    [("MultiplicativeLR", dict(lr_lambda="wave"))],
    [("MultiStepLR", dict(milestones=[2, 5, 5, 9]))],
    [("MultiStepLR", dict(milestones=[0, 3], gamma=0.5))],
    [("ConstantLR", dict())],
    [("ConstantLR", dict(factor=0.25, total_iters=3)), ("ExponentialLR", dict(gamma=0.9))],
    [("PolynomialLR", dict())],
    [("PolynomialLR", dict(total_iters=8, power=2.5))],
    [("CosineAnnealingWarmRestarts", dict(T_0=3))],
    [("CosineAnnealingWarmRestarts", dict(T_0=2, T_mult=2, eta_min=0.001))],
    [("CyclicLR", dict(base_lr=0.01, max_lr=[0.1, 0.05], step_size_up=3))],
    [("CyclicLR", dict(base_lr=[0.01, 0.001], max_lr=0.1, step_size_up=2, step_size_down=3,
                       mode="triangular2", base_momentum=[0.7, 0.8], max_momentum=0.95))],
    [("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=2, mode="exp_range", gamma=0.9,
                       cycle_momentum=False))],
    [("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=3, scale_fn="wave",
                       scale_mode="iterations"))],
    [("OneCycleLR", dict(max_lr=[1.0, 0.1], total_steps=13))],
    [("OneCycleLR", dict(max_lr=0.5, epochs=4, steps_per_epoch=4, pct_start=0.25,
                         anneal_strategy="linear", div_factor=10.0, final_div_factor=100.0,
                         base_momentum=[0.8, 0.7]))],
    [("OneCycleLR", dict(max_lr=0.5, total_steps=15, three_phase=True))],
    [("SequentialLR", dict(schedulers=[["LinearLR", dict(start_factor=0.2, total_iters=3)],
                                       ["CosineAnnealingLR", dict(T_max=6, eta_min=0.01)]], milestones=[3]))],
    [("SequentialLR", dict(schedulers=[["ConstantLR", dict(factor=0.5, total_iters=10)],
                                       ["MultiplicativeLR", dict(lr_lambda="wave")],
                                       ["StepLR", dict(step_size=2, gamma=0.5)],
                                       ["CosineAnnealingWarmRestarts", dict(T_0=2)]], milestones=[2, 5, 8]))],
    [("SequentialLR", dict(schedulers=[["ExponentialLR", dict(gamma=0.9)],
                                       ["MultiStepLR", dict(milestones=[0, 2])],
                                       ["LambdaLR", dict(lr_lambda="inverse")], ["PolynomialLR", dict()]],
                           milestones=[2, 4, 7]))],
    [("ChainedScheduler", dict(schedulers=[["ConstantLR", dict(factor=0.5, total_iters=4)],
                                           ["ExponentialLR", dict(gamma=0.8)]]))],
    [("ChainedScheduler", dict(schedulers=[["LinearLR", dict(start_factor=0.1, total_iters=3)],
                                           ["SequentialLR", dict(
                                               schedulers=[["StepLR", dict(step_size=2)],
                                                           ["CosineAnnealingLR", dict(T_max=4)]],
                                               milestones=[5])]]))],
]
# Schedules that cycle the momentum, or Adam's first beta: (chain, optimizer, its options).
CYCLING = [
    ([("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=3))], "Adam",
     dict(betas=[0.9, 0.99])),
    ([("OneCycleLR", dict(max_lr=0.1, total_steps=14))], "RMSprop", dict(momentum=0.5)),
    ([("OneCycleLR", dict(max_lr=0.1, total_steps=20, three_phase=True, anneal_strategy="linear"))],
     "AdamW", {}),
]
# CosineAnnealingWarmRestarts stepped to given epochs (fractional: PyTorch's within-epoch use).
WARM_RESTART_EPOCHS = [0.5, 1.0, 1.75, 2.0, 3.5, 6.0, 6.25, 9.0, 13.5, 14.0, 1.0, 31.0, 30.0]
SCHEDULER_LRS = [0.5, 0.03]
METRICS = [3.0, 2.0, 2.0, 1.95, 1.95, 1.9, 1.0, 1.2, 1.2, 1.2, 0.9, 0.9, 0.9]  # one per epoch
RESUME_AT = 6  # the epoch after which the schedule goes on from state dicts, in a fresh optimizer


class Wave:
    """A callable object: a state dict keeps its attributes (PyTorch's rule), a function not."""

    def __init__(self):
        self.depth = 0.3

    def __call__(self, x):
        return 1.0 - self.depth * (x % 3) / 3


LAMBDAS = {"inverse": lambda epoch: 1.0 / (epoch + 1), "wave": Wave}
CLIPS = [
    ("clip_grad_norm_", dict(max_norm=1.0)),
    ("clip_grad_norm_", dict(max_norm=1.0, norm_type=1.0)),
    ("clip_grad_norm_", dict(max_norm=2.0, norm_type=3.0)),
    ("clip_grad_norm_", dict(max_norm=0.5, norm_type="inf")),
    ("clip_grad_norm_", dict(max_norm=100.0)),
    ("clip_grad_value_", dict(clip_value=0.7)),
]
CLIP_GRADS = [[3.0, -4.0, 0.5], [[1.5, -0.25], [2.0, 1e-3]]]


def cases() -> list[dict]:
    """Every case, as plain data."""
    out = []
    for dtype in ("float64", "float32"):
        out += [dict(kind="first_order", optimizer=name, options=options, groups=groups, dtype=dtype,
                     steps=STEPS) for name, options, groups in FIRST_ORDER]
        out += [dict(kind="clip", function=name, options=options, grads=CLIP_GRADS, dtype=dtype)
                for name, options in CLIPS]
    for dtype in ("complex128", "complex64"):
        out += [dict(kind="complex", optimizer=name, options=options, dtype=dtype, steps=STEPS)
                for name, options in COMPLEX]
    out += [dict(kind="lbfgs", options=options, steps=steps, dtype=dtype) for options, steps, dtype in LBFGS]
    out += [dict(kind="scheduler", schedulers=[[name, options] for name, options in chain],
                 lrs=SCHEDULER_LRS, metrics=METRICS) for chain in SCHEDULERS]
    out += [dict(kind="scheduler", schedulers=[[name, options] for name, options in chain], lrs=SCHEDULER_LRS,
                 metrics=METRICS, optimizer=optimizer, options=options)
            for chain, optimizer, options in CYCLING]
    out += [dict(kind="scheduler", schedulers=[["CosineAnnealingWarmRestarts", options]], lrs=SCHEDULER_LRS,
                 metrics=METRICS, epochs=WARM_RESTART_EPOCHS)
            for options in (dict(T_0=3, eta_min=0.01), dict(T_0=2, T_mult=2))]
    return out


def torch_lib():
    """PyTorch under the names :func:`run_case` uses."""
    import torch
    return SimpleNamespace(tensor=torch.tensor, sin=torch.sin, optim=torch.optim, clip=torch.nn.utils)


def run_case(lib, case: dict) -> dict:
    """What ``lib`` computes for ``case``: lists of numbers."""
    return {"first_order": _first_order, "complex": _complex, "lbfgs": _lbfgs, "scheduler": _scheduler,
            "clip": _clip}[case["kind"]](lib, case)


def _leaf(lib, values, dtype):
    return lib.tensor(np.asarray(values, dtype=dtype)).requires_grad_()


def _numbers(*tensors) -> list:
    return [float(v) for t in tensors for v in np.ravel(t.detach().numpy())]


def _first_order(lib, case):
    w, u = _leaf(lib, X0, case["dtype"]), _leaf(lib, U0, case["dtype"])
    params = [w, u] if case["groups"] is None else [
        {"params": [p], **options} for p, options in zip((w, u), case["groups"])]
    opt = getattr(lib.optim, case["optimizer"])(params, **case["options"])
    path = []
    for _ in range(case["steps"]):
        opt.zero_grad()
        joint_loss(w, u, lib).backward()
        opt.step()
        path.append(_numbers(w, u))
    return {"path": path}


def _complex(lib, case):
    z0 = np.array([complex(re, im) for re, im in Z0], dtype=case["dtype"])
    z = lib.tensor(z0).requires_grad_()
    c = lib.tensor(np.array([1.0 - 0.5j, -0.3 + 2.0j, 0.25j], dtype=case["dtype"]))
    opt = getattr(lib.optim, case["optimizer"])([z], **case["options"])
    path = []
    for _ in range(case["steps"]):
        opt.zero_grad()
        square = (z * z.conj()).real  # |z|**2
        (0.25 * (square * square).sum() + (c * z).real.sum()).backward()
        opt.step()
        path.append([float(v) for entry in z.detach().numpy() for v in (entry.real, entry.imag)])
    return {"path": path}


def _lbfgs(lib, case):
    x = _leaf(lib, ROSENBROCK_X0, case["dtype"])
    opt = lib.optim.LBFGS([x], **case["options"])
    points, path = [], []

    def closure():
        opt.zero_grad()
        points.append(_numbers(x))
        loss = rosenbrock(x)
        loss.backward()
        return loss
    for _ in range(case["steps"]):
        opt.step(closure)
        path.append(_numbers(x))
    return {"points": points, "path": path}


def _scheduler(lib, case):
    """Each epoch's lrs and momenta (Adam's first beta) with the case's schedulers, which go on
    from state dicts, with a fresh optimizer, after RESUME_AT epochs."""
    opt, scheds = _scheduled(lib, case)
    start_lrs, start_momenta = [group["lr"] for group in opt.param_groups], _momenta(opt)
    lrs, last_lrs, momenta = [], [], []
    for epoch, metric in enumerate(case["metrics"]):
        if epoch == RESUME_AT:
            saved_opt, saved = opt.state_dict(), [s.state_dict() for s in scheds]
            opt, scheds = _scheduled(lib, case)  # made before the optimizer's state is loaded (PyTorch)
            opt.load_state_dict(saved_opt)
            for s, state in zip(scheds, saved):
                s.load_state_dict(state)
        opt.step()
        for sched in scheds:
            if isinstance(sched, lib.optim.lr_scheduler.ReduceLROnPlateau):
                sched.step(metric)
            elif "epochs" in case:
                sched.step(case["epochs"][epoch])
            else:
                sched.step()
        lrs.append([group["lr"] for group in opt.param_groups])
        last_lrs.append([s.get_last_lr() for s in scheds])
        momenta.append(_momenta(opt))
    return {"start_lrs": start_lrs, "start_momenta": start_momenta, "lrs": lrs, "last_lrs": last_lrs,
            "momenta": momenta}


def _scheduled(lib, case):
    opt = getattr(lib.optim, case.get("optimizer", "SGD"))(
        [{"params": [_leaf(lib, [0.0], "float64")], "lr": lr} for lr in case["lrs"]], lr=1.0,
        **case.get("options", {}))
    return opt, [_make_scheduler(lib, opt, name, options) for name, options in case["schedulers"]]


def _make_scheduler(lib, opt, name, options):
    """The scheduler ``name`` with ``options`` as plain data: functions by their name in LAMBDAS,
    the schedulers that SequentialLR and ChainedScheduler drive as [name, options] pairs."""
    options = dict(options)
    for key in ("lr_lambda", "scale_fn"):
        if key in options:
            made = {name: f() if isinstance(f, type) else f for name, f in LAMBDAS.items()}
            names = options[key]
            options[key] = [made[n] for n in names] if isinstance(names, list) else made[names]
    if "schedulers" in options:
        options["schedulers"] = [_make_scheduler(lib, opt, *s) for s in options["schedulers"]]
    if name == "ChainedScheduler":
        return lib.optim.lr_scheduler.ChainedScheduler(**options)
    return getattr(lib.optim.lr_scheduler, name)(opt, **options)


def _momenta(opt):
    return [group["betas"][0] if "betas" in group else group["momentum"] for group in opt.param_groups]


def _clip(lib, case):
    params = [_leaf(lib, g, case["dtype"]) for g in case["grads"]]
    for p, g in zip(params, case["grads"]):
        p.grad = lib.tensor(np.asarray(g, dtype=case["dtype"]))
    total = getattr(lib.clip, case["function"])(params, **case["options"])
    return {"total": None if total is None else total.item(), "grads": _numbers(*[p.grad for p in params])}

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
SCHEDULER_LRS = [0.5, 0.03]
METRICS = [3.0, 2.0, 2.0, 1.95, 1.95, 1.9, 1.0, 1.2, 1.2, 1.2, 0.9, 0.9, 0.9]  # one per epoch
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
    opt = lib.optim.SGD([{"params": [_leaf(lib, [0.0], "float64")], "lr": lr} for lr in case["lrs"]],
                        lr=1.0)
    scheds = [getattr(lib.optim.lr_scheduler, name)(opt, **options) for name, options in case["schedulers"]]
    lrs = []
    for metric in case["metrics"]:
        opt.step()
        for sched in scheds:
            if isinstance(sched, lib.optim.lr_scheduler.ReduceLROnPlateau):
                sched.step(metric)
            else:
                sched.step()
        lrs.append([group["lr"] for group in opt.param_groups])
    return {"lrs": lrs}


def _clip(lib, case):
    params = [_leaf(lib, g, case["dtype"]) for g in case["grads"]]
    for p, g in zip(params, case["grads"]):
        p.grad = lib.tensor(np.asarray(g, dtype=case["dtype"]))
    total = getattr(lib.clip, case["function"])(params, **case["options"])
    return {"total": None if total is None else total.item(), "grads": _numbers(*[p.grad for p in params])}

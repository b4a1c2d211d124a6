"""The demo: sensitivities (forward), a gradient (reverse), and a Newton solve
driven by Hessian-vector products (forward-over-reverse).

Run it with ``python -m mixed.demo`` (or the ``dualad-demo`` command); it uses
CuPy when a GPU is present and NumPy otherwise, and prints what it did and what
each result cost. Each time is the median of several runs, and each is printed
as a ratio to a baseline timed the same way (a derivative against the function
it differentiates), which says more than a number of milliseconds and changes
less from run to run and from machine to machine.
"""

from __future__ import annotations

import time

import numpy as np

import dualad
import mixed
import reverse
from dualad import ops


def _backend():
    try:
        import cupy as cp
        cp.cuda.runtime.getDeviceCount()
        return cp, "CuPy on " + cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    except Exception:
        return np, "NumPy (CPU)"


def damped_oscillator(params, steps=500, dt=0.04):
    """Final position of x'' = -k x - c x' + a sin(w t), integrated with RK4 (plain NumPy code)."""
    k, c, a, w = params[0], params[1], params[2], params[3]
    x, v = 1.0, 0.0
    for i in range(steps):
        t = i * dt

        def acc(x, v, t):
            return -k * x - c * v + a * np.sin(w * t)
        k1x, k1v = v, acc(x, v, t)
        k2x, k2v = v + 0.5 * dt * k1v, acc(x + 0.5 * dt * k1x, v + 0.5 * dt * k1v, t + 0.5 * dt)
        k3x, k3v = v + 0.5 * dt * k2v, acc(x + 0.5 * dt * k2x, v + 0.5 * dt * k2v, t + 0.5 * dt)
        k4x, k4v = v + dt * k3v, acc(x + dt * k3x, v + dt * k3v, t + dt)
        x = x + dt / 6 * (k1x + 2 * k2x + 2 * k3x + k4x)
        v = v + dt / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
    return ops.stack([x, v])


def logistic_loss(w, X, y, lam=1e-3):
    """Mean logistic loss with an L2 penalty (labels y in {0, 1})."""
    z = X @ w
    return ops.mean(ops.softplus(z) - y * z) + 0.5 * lam * ops.sum(w * w)


def _timed(fn, repeats, sync=lambda: None):
    """``fn()``'s result and the median of ``repeats`` timed calls (``sync`` waits
    for a GPU to finish before each clock reading)."""
    times = []
    for _ in range(repeats):
        sync()
        t0 = time.perf_counter()
        out = fn()
        sync()
        times.append(time.perf_counter() - t0)
    return out, float(np.median(times))


def _figure(x):
    """``x`` to about three significant figures, without an exponent."""
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}" if x >= 10 else f"{x:.2f}" if x >= 0.01 else f"{x:.2g}"


def _ratio(name, t, t_base, meaning):
    """One line: the time ratio, what it means, and the two medians it divides."""
    r = _figure(t / t_base)
    return f"   {name} = {r}: {meaning.format(r=r)} ({_figure(t * 1e3)} ms / {_figure(t_base * 1e3)} ms)"


def main(n_samples: int = 20000, n_features: int = 200, steps: int = 500, repeats: int = 5) -> None:
    xp, where = _backend()
    sync = (lambda: xp.cuda.Device().synchronize()) if xp is not np else (lambda: None)
    print(f"dualad demo on {where}; each time is the median of {repeats} runs\n")

    # 1. Sensitivities: d(final state)/d(parameters) of an ODE solved by a Python loop.
    params = np.array([4.0, 0.3, 0.5, 1.7])
    jac, t_jac = _timed(lambda: dualad.jacfwd(lambda p: damped_oscillator(p, steps))(params), repeats)
    _, t_f = _timed(lambda: damped_oscillator(params, steps), repeats)
    print("1. forward-mode sensitivities of a damped, driven oscillator (RK4, "
          f"{steps} steps) to (k, c, a, w):")
    print(f"   d x_final / d params = {np.array2string(jac[0], precision=4)}")
    print(f"   d v_final / d params = {np.array2string(jac[1], precision=4)}")
    print(_ratio("jacfwd / f", t_jac, t_f,
                 "the 4 sensitivities, in one forward pass, cost {r} evaluations of f") + "\n")

    # 2. A gradient by reverse mode: logistic regression with many features.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n_samples, n_features)) / np.sqrt(n_features)
    w_true = rng.standard_normal(n_features) * 3
    y = (rng.random(n_samples) < 1 / (1 + np.exp(-X @ w_true))).astype(float)
    X, y = xp.asarray(X), xp.asarray(y)
    w0 = xp.zeros(n_features)
    loss = lambda w: logistic_loss(w, X, y)  # noqa: E731
    (value, g), t_g = _timed(lambda: reverse.value_and_grad(loss)(w0), repeats, sync)
    _, t_l = _timed(lambda: loss(w0), repeats, sync)
    print(f"2. reverse-mode gradient of an L2-regularized logistic loss ({n_samples} x {n_features}):")
    print(f"   loss = {float(value):.6f}, |grad| = {float(xp.linalg.norm(g)):.3e}")
    print(_ratio("value_and_grad / loss", t_g, t_l,
                 f"the loss and {n_features} partial derivatives cost {{r}} losses") + "\n")

    # 3. A Newton solve driven by forward-over-reverse Hessian-vector products.
    res, t_n = _timed(lambda: mixed.newton_cg(loss, w0, tol=1e-8), repeats, sync)
    _, t_h = _timed(lambda: mixed.hvp(loss, w0, w0 + 1.0), repeats, sync)
    print("3. Newton-CG with Hessian-vector products (forward-over-reverse):")
    print(f"   {res.message}; success={res.success}")
    print(f"   {res.nit} Newton steps, {res.nhev} HVPs, {res.nfev} gradient evaluations, "
          f"final loss {res.fun:.6f}, |grad| {float(xp.linalg.norm(res.jac)):.2e}")
    print(_ratio("hvp / value_and_grad", t_h, t_g, "one Hessian-vector product costs {r} gradients"))
    print(_ratio("newton_cg / value_and_grad", t_n, t_g, "the whole solve costs {r} gradients"))


if __name__ == "__main__":
    main()

"""The demo: sensitivities (forward), a gradient (reverse), and a Newton solve
driven by Hessian-vector products (forward-over-reverse).

Run it with ``python -m mixed.demo``; it uses CuPy when a GPU is present
and NumPy otherwise, and prints what it did and how long each step took.
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


def damped_oscillator(params, steps=2000, dt=0.01):
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


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main(n_samples: int = 20000, n_features: int = 200, steps: int = 2000) -> None:
    xp, where = _backend()
    print(f"dualad demo on {where}\n")

    # 1. Sensitivities: d(final state)/d(parameters) of an ODE solved by a Python loop.
    params = np.array([4.0, 0.3, 0.5, 1.7])
    jac, t_jac = _timed(lambda: dualad.jacfwd(lambda p: damped_oscillator(p, steps))(params))
    _, t_f = _timed(lambda: damped_oscillator(params, steps))
    print("1. forward-mode sensitivities of a damped, driven oscillator (RK4, "
          f"{steps} steps) to (k, c, a, w):")
    print(f"   d x_final / d params = {np.array2string(jac[0], precision=4)}")
    print(f"   d v_final / d params = {np.array2string(jac[1], precision=4)}")
    print(f"   jacfwd (4 directions in one pass): {t_jac * 1e3:.1f} ms; "
          f"plain evaluation {t_f * 1e3:.1f} ms\n")

    # 2. A gradient by reverse mode: logistic regression with many features.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n_samples, n_features)) / np.sqrt(n_features)
    w_true = rng.standard_normal(n_features) * 3
    y = (rng.random(n_samples) < 1 / (1 + np.exp(-X @ w_true))).astype(float)
    X, y = xp.asarray(X), xp.asarray(y)
    w0 = xp.zeros(n_features)
    loss = lambda w: logistic_loss(w, X, y)  # noqa: E731
    (value, g), t_g = _timed(lambda: reverse.value_and_grad(loss)(w0))
    _, t_l = _timed(lambda: loss(w0))
    print(f"2. reverse-mode gradient of an L2-regularized logistic loss ({n_samples} x {n_features}):")
    print(f"   loss = {float(value):.6f}, |grad| = {float(xp.linalg.norm(g)):.3e}")
    print(f"   value_and_grad: {t_g * 1e3:.1f} ms ({t_g / t_l:.1f}x the loss alone)\n")

    # 3. A Newton solve driven by forward-over-reverse Hessian-vector products.
    res, t_n = _timed(lambda: mixed.newton_cg(loss, w0, tol=1e-8))
    _, t_h = _timed(lambda: mixed.hvp(loss, w0, w0 + 1.0))
    print("3. Newton-CG with Hessian-vector products (forward-over-reverse):")
    print(f"   {res.message}; success={res.success}")
    print(f"   {res.nit} Newton steps, {res.nhev} HVPs, {res.nfev} gradient evaluations, "
          f"final loss {res.fun:.6f}, |grad| {float(xp.linalg.norm(res.jac)):.2e}")
    print(f"   solve: {t_n * 1e3:.1f} ms; one HVP: {t_h * 1e3:.2f} ms ({t_h / t_g:.1f}x one gradient)")


if __name__ == "__main__":
    main()

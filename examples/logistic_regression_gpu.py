"""L2-regularized logistic regression on a GPU: Newton-CG and a trust region, all on CuPy.

The same objective as ``examples/logistic_regression.py``::

    loss(w) = mean(log(1 + exp(-y * (X @ w)))) + lam / 2 * |w|^2

at a size where the device matters: by default one million samples and 100
features in float32 (X is 400 MB). The data are synthetic (NOT real data),
drawn on the device from a known logistic model with a fixed seed:
Gaussian features with scales spanning two orders of magnitude, true weights
``w* ~ N(0, 1/d)``, labels ``+1`` with probability ``sigmoid(X @ w*)``.

Everything stays on the GPU: the data, the iterate, the gradient and every
H v product (forward-over-reverse: Dual values on the tape, their parts CuPy
arrays). Only scalars (dot products for the CG and the line search) come back
to the host. ``--cpu`` also solves the identical problem (the same numbers,
copied to the host once) with NumPy, for comparison.

Run from the repository root::

    python examples/logistic_regression_gpu.py
    python examples/logistic_regression_gpu.py --samples 4000000 --features 200 --dtype float64 --cpu

Without CuPy or a GPU it exits with a message saying so.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from typing import Any, Callable

from logistic_loss import make_loss

from mixed import newton_cg, trust_region

NEEDS = ("needs CuPy and an NVIDIA GPU (pip install cupy-cuda12x); "
         "examples/logistic_regression.py is the CPU version")


def make_data(xp: Any, n_samples: int, n_features: int, dtype: str, seed: int = 0):
    """Synthetic data on ``xp``'s device (see the module docstring): not real data."""
    rs = xp.random.RandomState(seed)
    d = n_features
    scales = xp.logspace(-1, 1, d)
    x = rs.standard_normal((n_samples, d)) * scales
    x = xp.concatenate([xp.ones((n_samples, 1)), x], axis=1).astype(dtype)
    w_true = rs.standard_normal(d + 1) / math.sqrt(d)
    p = 1.0 / (1.0 + xp.exp(-(x.astype("float64") @ w_true)))
    y = xp.where(rs.uniform(size=n_samples) < p, 1.0, -1.0).astype(dtype)
    return x, y


def solve(xp: Any, x: Any, y: Any, lam: float, tol: float, sync: Callable[[], None]) -> list[dict]:
    """Run both ``mixed`` solvers from w = 0 on ``xp``'s arrays; one row per solver."""
    loss = make_loss(x, y, lam)
    rows = []
    for solver in (newton_cg, trust_region):
        w0 = xp.zeros(x.shape[1], dtype=x.dtype)
        sync()
        start = time.perf_counter()
        r = solver(loss, w0, tol=tol, maxiter=200)
        sync()
        seconds = time.perf_counter() - start
        rows.append({"method": solver.__name__, "nit": r.nit, "nfev": r.nfev, "nhev": r.nhev,
                     "seconds": seconds, "loss": r.fun, "grad_norm": math.sqrt(float(xp.sum(r.jac ** 2))),
                     "success": r.success, "message": r.message, "x": r.x})
    return rows


def print_rows(title: str, rows: list[dict]) -> None:
    print(title)
    print(f"{'method':14s} {'iters':>6s} {'f+g evals':>9s} {'H v':>6s} {'time [s]':>9s} "
          f"{'final loss':>12s} {'|grad|':>9s}  success: message")
    for r in rows:
        print(f"{r['method']:14s} {r['nit']:6d} {r['nfev']:9d} {r['nhev']:6d} {r['seconds']:9.2f} "
              f"{r['loss']:12.8f} {r['grad_norm']:9.2e}  {r['success']}: {r['message']}")
    print()


def _cupy_or_exit():
    try:
        import cupy
    except ImportError as e:
        sys.exit(f"logistic_regression_gpu: {NEEDS} ({e}).")
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # the CUDA driver or runtime is missing or broken
        sys.exit(f"logistic_regression_gpu: {NEEDS} (CuPy found no usable GPU: {e}).")
    if count == 0:
        sys.exit(f"logistic_regression_gpu: {NEEDS} (CuPy sees no GPU).")
    return cupy


def main(argv: list[str] | None = None) -> dict:
    """Parse the command line; solve on the GPU (and with ``--cpu`` on the host too)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=100)
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    parser.add_argument("--lam", type=float, default=1e-3)
    parser.add_argument("--tol", type=float, default=None,
                        help="gradient 2-norm to reach (default 1e-4 in float32, 1e-8 in float64)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cpu", action="store_true", help="also solve the same problem with NumPy")
    args = parser.parse_args(argv)
    tol = args.tol if args.tol is not None else (1e-4 if args.dtype == "float32" else 1e-8)

    cupy = _cupy_or_exit()
    device = cupy.cuda.Device()
    name = cupy.cuda.runtime.getDeviceProperties(device.id)["name"].decode()
    x, y = make_data(cupy, args.samples, args.features, args.dtype, args.seed)
    title = (f"{args.samples} samples x {args.features + 1} weights, {args.dtype}, lam = {args.lam:g}, "
             f"to |grad| <= {tol:g}")
    results = {"gpu": solve(cupy, x, y, args.lam, tol, device.synchronize)}
    print_rows(f"GPU ({name}): {title}", results["gpu"])
    if args.cpu:
        import numpy as np
        results["cpu"] = solve(np, x.get(), y.get(), args.lam, tol, lambda: None)
        print_rows(f"CPU (NumPy): {title}", results["cpu"])
        for gpu_row, cpu_row in zip(results["gpu"], results["cpu"]):
            print(f"{gpu_row['method']}: GPU {cpu_row['seconds'] / gpu_row['seconds']:.1f}x faster; "
                  f"solutions differ by {float(np.max(np.abs(gpu_row['x'].get() - cpu_row['x']))):.1e}")
    return results


if __name__ == "__main__":
    main()

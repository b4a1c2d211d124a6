"""L2-regularized logistic regression on a Dask cluster, over data larger than one worker's memory.

The objective of ``examples/logistic_regression.py``::

    loss(w) = mean(log(1 + exp(-y * (X @ w)))) + lam / 2 * |w|^2

over Dask arrays, fit with ``mixed.newton_cg`` on a ``dask.distributed``
``LocalCluster``. The cluster computes f, its gradient and its exact Hessian
(forward-over-reverse, the n directions batched) at each point chunk by chunk
where the data are, in one task per chunk; only those few numbers come back to
this process, where the solver's CG runs with the n x n Hessian.

Data
----
NOT real data: drawn from a known logistic model, chunk by chunk, on the
workers (nothing is downloaded, and no process ever holds all of it).
Chunk ``i`` of rows is a function of ``(seed, i)`` alone, so a chunk a worker
loses is drawn again, the same. Features are Gaussian with scales spanning
two orders of magnitude (an ill-conditioned problem, as real features often
are), plus an intercept column; the true weights are ``w* ~ N(0, 1/d)`` and
the labels ``y = +1`` with probability ``sigmoid(X @ w*)``, else ``-1``.

Memory
------
``--worker-memory`` caps each worker (Dask spills to disk above it). With
the defaults the data are small and the run takes seconds; make them larger
than one worker's memory with, for example::

    python examples/logistic_regression_dask.py --samples 4000000 --features 50 \\
        --workers 2 --worker-memory 1GiB

(1.6 GB of features over two workers of 1 GiB each). The script prints the
data's size, each worker's memory limit, the dashboard's address, one line
per Newton step and the solution; ``--check`` also solves the same numbers
with NumPy in this process (small data only) and prints the difference.

Run from the repository root (needs ``pip install "dualad[dask]"``)::

    python examples/logistic_regression_dask.py
    python examples/logistic_regression_dask.py --samples 200000 --features 20 --check

Examples
--------
>>> rows = main(["--samples", "3000", "--features", "3", "--threads", "--quiet", "--check"])
>>> rows["success"], rows["max_difference_from_numpy"] < 1e-8
(True, True)
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import time
from typing import Callable

import numpy as np
from logistic_loss import make_loss

from mixed import OptimizeResult, newton_cg


def true_weights(n_features: int, seed: int) -> np.ndarray:
    """The model's weights, intercept first: ``N(0, 1/d)``."""
    return np.random.default_rng([seed, 0]).standard_normal(n_features + 1) / math.sqrt(n_features)


def feature_scales(n_features: int) -> np.ndarray:
    """The intercept's 1, then scales from 0.1 to 10."""
    return np.concatenate([[1.0], np.logspace(-1, 1, n_features)])


def draw_block(rows: int, n_features: int, seed: int, index: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``index`` of the data set: features (intercept first) and labels in {-1, +1}."""
    rng = np.random.default_rng([seed, 1, index])
    x = rng.standard_normal((rows, n_features + 1)) * feature_scales(n_features)
    x[:, 0] = 1.0
    p = 1.0 / (1.0 + np.exp(-(x @ true_weights(n_features, seed))))
    y = np.where(rng.uniform(size=rows) < p, 1.0, -1.0)
    return x, y


def make_data(n_samples: int, n_features: int, chunk_rows: int, seed: int = 0):
    """``X`` and ``y`` as Dask arrays of ``chunk_rows`` rows per chunk, each chunk
    drawn where it is computed (``draw_block``)."""
    import dask.array as da

    starts = range(0, n_samples, chunk_rows)
    sizes = tuple(min(chunk_rows, n_samples - s) for s in starts)
    width = n_features + 1

    def features(block_id=None):
        i = block_id[0]
        return draw_block(sizes[i], n_features, seed, i)[0]

    def labels(block_id=None):
        i = block_id[0]
        return draw_block(sizes[i], n_features, seed, i)[1]

    x = da.map_blocks(features, chunks=(sizes, (width,)), dtype=np.float64, meta=np.empty((0, 0)))
    y = da.map_blocks(labels, chunks=(sizes,), dtype=np.float64, meta=np.empty(0))
    return x, y


def progress(started: float, say: Callable[[str], None]) -> Callable[[OptimizeResult], None]:
    """A ``newton_cg`` callback printing one line per step."""
    def report(r: OptimizeResult) -> None:
        say(f"  step {r.nit:3d}: loss {r.fun:.12f}   f+g {r.nfev:3d}   H v {r.nhev:3d}   "
            f"{time.perf_counter() - started:7.2f} s")
    return report


def _mib(nbytes: float) -> str:
    return f"{nbytes / 2 ** 20:,.1f} MiB"


def main(argv: list[str] | None = None) -> dict:
    """Parse the command line, start a LocalCluster, fit, print; returns the results."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=20_000)
    parser.add_argument("--features", type=int, default=5)
    parser.add_argument("--chunk-rows", type=int, default=None,
                        help="rows per chunk (default: 4 chunks per worker)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads-per-worker", type=int, default=1)
    parser.add_argument("--worker-memory", default="2GiB", help="memory limit of each worker")
    parser.add_argument("--threads", action="store_true",
                        help="workers as threads of this process (default: processes)")
    parser.add_argument("--dashboard-address", default=":8787")
    parser.add_argument("--lam", type=float, default=1e-3, help="L2 regularization weight")
    parser.add_argument("--tol", type=float, default=1e-8, help="gradient 2-norm to stop at")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--check", action="store_true",
                        help="also solve with NumPy in this process (small data only)")
    parser.add_argument("--quiet", action="store_true", help="return the results without printing")
    args = parser.parse_args(argv)
    for name in ("samples", "features", "workers", "threads_per_worker"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.chunk_rows is not None and args.chunk_rows < 1:
        parser.error(f"--chunk-rows must be at least 1, got {args.chunk_rows}")
    say = (lambda _: None) if args.quiet else print

    import dask.array as da
    from dask.distributed import Client, LocalCluster

    chunk_rows = args.chunk_rows or max(1, math.ceil(args.samples / (4 * args.workers)))
    x, y = make_data(args.samples, args.features, chunk_rows, args.seed)
    with LocalCluster(n_workers=args.workers, threads_per_worker=args.threads_per_worker,
                      processes=not args.threads, memory_limit=args.worker_memory,
                      dashboard_address=args.dashboard_address) as cluster, Client(cluster) as client:
        limit = next(iter(client.scheduler_info()["workers"].values()))["memory_limit"]
        say(f"synthetic logistic model (seed {args.seed}, NOT real data): {args.samples:,} samples, "
            f"{args.features + 1} weights; X is {_mib(x.nbytes)} in {x.numblocks[0]} chunks of up to "
            f"{chunk_rows:,} rows")
        say(f"cluster: {args.workers} {'thread' if args.threads else 'process'} workers of "
            f"{args.threads_per_worker} thread(s) and {_mib(limit)} each: the data are "
            f"{'larger' if x.nbytes > limit else 'smaller'} than one worker's memory")
        say(f"dashboard: {client.dashboard_link}" + (
            "" if importlib.util.find_spec("bokeh") else "  (pip install bokeh to serve it)"))
        say(f"newton_cg from w = 0 to |grad| <= {args.tol:g}:")
        x, y = client.persist([x, y])  # drawn once, kept where they were drawn (spilled if need be)
        loss = make_loss(x, y, args.lam)
        started = time.perf_counter()
        res = newton_cg(loss, da.zeros(args.features + 1, chunks=-1), tol=args.tol, maxiter=200,
                        callback=progress(started, say))
        seconds = time.perf_counter() - started
        w = res.x.compute()
        out = {"success": bool(res.success), "message": res.message, "nit": res.nit, "nfev": res.nfev,
               "nhev": res.nhev, "loss": res.fun, "w": w, "seconds": seconds}
        if args.check:
            xs, ys = client.compute([x, y], sync=True)
            ref = newton_cg(make_loss(xs, ys, args.lam), np.zeros(args.features + 1), tol=args.tol,
                            maxiter=200)
            out["max_difference_from_numpy"] = float(np.max(np.abs(w - ref.x)))
    say(f"{res.message} after {res.nit} steps, {res.nhev} H v products, {seconds:.2f} s")
    say(f"loss {res.fun:.12f}; first weights {np.array2string(w[:5], precision=4)}; true weights "
        f"{np.array2string(true_weights(args.features, args.seed)[:5], precision=4)}")
    if args.check:
        say(f"largest difference from the same solve with NumPy: {out['max_difference_from_numpy']:.1e}")
    return out


if __name__ == "__main__":
    main()

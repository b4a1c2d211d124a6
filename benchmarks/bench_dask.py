"""Newton-CG on Dask arrays, on a ``dask.distributed`` LocalCluster.

The workload is ``examples/logistic_regression_dask.py``'s: synthetic data
drawn chunk by chunk on the workers (an intercept and some features with
scales from 0.1 to 10), its L2-regularized mean logistic loss, and
``mixed.newton_cg`` from zero to a gradient 2-norm of 1e-8. The data are
persisted on the cluster in ``setup``; the NumPy run solves the same numbers,
gathered into this process. The cluster has ``WORKERS`` workers of one thread
each, as threads of this process or as processes. Data sizes are
``"<samples>x<features>"`` (``DATA``); the first, ``smoke``, is one Newton
step on 1e3 x 3, there only so that tests/test_benchmarks_smoke.py runs each
benchmark in seconds (a solve on a cluster costs a round trip per point it
evaluates, whatever the size). Every class skips (setup raises
``NotImplementedError``) without Dask, and ``DaskMLNewton`` without dask-ml.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks import common

WORKERS = 2
# name -> (samples, features, maxiter)
DATA = {"smoke": (1_000, 3, 1), "1e5x10": (100_000, 10, 200), "1e6x10": (1_000_000, 10, 200)}
LAM = 1e-3
TOL = 1e-8
_EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "logistic_regression_dask.py"


def _example():
    """The example module (its data and loss), or NotImplementedError without Dask."""
    if importlib.util.find_spec("dask") is None or importlib.util.find_spec("distributed") is None:
        raise NotImplementedError("needs dask[array] and distributed")
    if str(_EXAMPLE.parent) not in sys.path:  # as when run from the command line: logistic_loss.py
        sys.path.insert(0, str(_EXAMPLE.parent))
    spec = importlib.util.spec_from_file_location("logistic_regression_dask", _EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _OnACluster:
    """Setup shared by the classes: a LocalCluster, the data on it and in NumPy."""

    def start(self, data: str, processes: bool, chunks_per_worker: int, lam: float = LAM):
        from dask.distributed import Client, LocalCluster, wait

        self.example = _example()
        samples, self.features, self.maxiter = DATA[data]
        self.cluster = LocalCluster(n_workers=WORKERS, threads_per_worker=1, processes=processes,
                                    dashboard_address=":0", memory_limit=0)
        self.client = Client(self.cluster)
        rows = -(-samples // (WORKERS * chunks_per_worker))
        x, y = self.example.make_data(samples, self.features, rows, common.SEED)
        self.x, self.y = self.client.persist([x, y])
        wait([self.x, self.y])
        self.xn, self.yn = self.client.compute([self.x, self.y], sync=True)
        self.loss = self.example.make_loss(self.x, self.y, lam)
        self.loss_numpy = self.example.make_loss(self.xn, self.yn, lam)

    def stop(self):
        self.client.close()
        self.cluster.close()

    def solve_dask(self):
        import dask.array as da

        from mixed import newton_cg
        res = newton_cg(self.loss, da.zeros(self.features + 1, chunks=-1), tol=TOL, maxiter=self.maxiter)
        assert res.success or res.nit == self.maxiter, res.message
        return res

    def solve_numpy(self):
        from mixed import newton_cg
        res = newton_cg(self.loss_numpy, np.zeros(self.features + 1), tol=TOL, maxiter=self.maxiter)
        assert res.success or res.nit == self.maxiter, res.message
        return res


def _seconds_per_step(solve) -> float:
    start = time.perf_counter()
    res = solve()
    return (time.perf_counter() - start) / res.nit


class DaskNewtonCG(_OnACluster):
    """``newton_cg`` on the cluster against the same solve in NumPy, 2 chunks per worker.

    ``track_dask_over_numpy``: one solve on the cluster over one in NumPy, in
    alternating samples (target at 1e6 samples: <= 3). ``track_seconds_per_step``:
    the cluster's seconds per Newton step (unit ``s/step``), for the growth
    with the data (1e5 to 1e6 samples: the same steps, 10x the data).
    """

    params = [["smoke", "1e5x10", "1e6x10"], ["threads", "processes"]]
    param_names = ["data", "cluster"]
    timeout = 1800

    def setup(self, data, cluster):
        self.start(data, cluster == "processes", chunks_per_worker=2)

    def teardown(self, data, cluster):
        self.stop()

    @common.ratio
    def track_dask_over_numpy(self, data, cluster):
        return common.speed_ratio(self.solve_dask, self.solve_numpy, repeat=min(common.RATIO_REPEAT, 3))

    def track_seconds_per_step(self, data, cluster):
        return _seconds_per_step(self.solve_dask)

    track_seconds_per_step.unit = "s/step"


class DaskChunksPerWorker(_OnACluster):
    """The same solve at 1e6 x 10 with 1, 2 and 4 chunks per worker, on both kinds
    of cluster: its time over NumPy's (``track_dask_over_numpy``)."""

    params = [["smoke", "1e6x10"], ["threads", "processes"], [1, 2, 4]]
    param_names = ["data", "cluster", "chunks_per_worker"]
    timeout = 1800

    def setup(self, data, cluster, chunks_per_worker):
        self.start(data, cluster == "processes", chunks_per_worker)

    def teardown(self, data, cluster, chunks_per_worker):
        self.stop()

    @common.ratio
    def track_dask_over_numpy(self, data, cluster, chunks_per_worker):
        return common.speed_ratio(self.solve_dask, self.solve_numpy, repeat=min(common.RATIO_REPEAT, 3))


class DaskMLNewton(_OnACluster):
    """dask-ml's ``LogisticRegression(solver="newton")`` on the same data and cluster
    (threads).

    Its Newton solver (dask-glm's) takes no penalty, so both fit the
    unregularized model (``lam = 0``; dask-ml with ``fit_intercept=False``, as
    the data hold the intercept column, and labels in {0, 1}).
    ``track_dask_ml_over_dualad``: its fit's time over ``newton_cg``'s, both on
    the cluster. ``track_coefficient_difference``: the largest difference
    between the two optima (unit ``max |dw|``).
    """

    params = [["smoke", "1e6x10"]]
    param_names = ["data"]
    timeout = 1800

    def setup(self, data):
        if importlib.util.find_spec("dask_ml") is None:
            raise NotImplementedError("needs dask-ml")
        self.start(data, False, chunks_per_worker=2, lam=0.0)

    def teardown(self, data):
        self.stop()

    def fit_dask_ml(self):
        from dask_ml.linear_model import LogisticRegression
        model = LogisticRegression(solver="newton", fit_intercept=False, tol=1e-10, max_iter=self.maxiter)
        return model.fit(self.x, (self.y + 1.0) / 2.0).coef_

    @common.ratio
    def track_dask_ml_over_dualad(self, data):
        return common.speed_ratio(self.fit_dask_ml, self.solve_dask, repeat=min(common.RATIO_REPEAT, 3))

    def track_coefficient_difference(self, data):
        return float(np.max(np.abs(self.fit_dask_ml() - self.solve_dask().x.compute())))

    track_coefficient_difference.unit = "max |dw|"

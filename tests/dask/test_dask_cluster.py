"""Newton solves on a real ``dask.distributed.LocalCluster``, kept small.

Oracles: the same solve on NumPy arrays; the scheduler's own log (a task
submitted twice under one key with different dependencies is what makes it
warn "Detected different `run_spec`", dask/dask#9888); and a worker killed
mid-solve, which Dask's recomputation must survive, or the only copy of the
data lost, after which the solver must say what happened and leave its
arguments as they were.
"""

from __future__ import annotations

import logging
import os
import signal

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from dualad import ops  # noqa: E402
from mixed import newton_cg, trust_region  # noqa: E402

pytestmark = pytest.mark.dask

RNG = np.random.default_rng(5)
X = RNG.standard_normal((150, 3))
Y = np.where(RNG.uniform(size=150) < 1 / (1 + np.exp(-X @ np.array([1.0, -0.5, 0.25]))), 1.0, -1.0)
CHUNKS = (80, 70)  # each task costs the scheduler time: few chunks, few tasks


def logistic(x, y, on_call=None):
    calls = []

    def loss(w):
        calls.append(None)
        if on_call is not None:
            on_call(len(calls))
        return ops.mean(ops.logaddexp(0.0, -ops.matmul(x, w) * y)) + 0.05 * ops.sum(w * w)
    return loss


def lifted(on_call=None):
    x = da.from_array(X, chunks=(CHUNKS, 3))
    y = da.from_array(Y, chunks=(CHUNKS,))
    return logistic(x, y, on_call), da.zeros(3, chunks=2)


# One step of each solve: every computation on a cluster costs tens of
# milliseconds here, and one step holds every kind (a value and gradient, an
# H-product, a trial point, the reads between them).
STEPS = 1


def reference(solver):
    return solver(logistic(X, Y), np.zeros(3), maxiter=STEPS)


def assert_same_solve(res, ref):
    assert (res.nit, res.nfev, res.nhev, res.message) == (ref.nit, ref.nfev, ref.nhev, ref.message)
    np.testing.assert_allclose(res.x.compute(), ref.x, rtol=1e-9, atol=1e-12)


class SchedulerLog(logging.Handler):
    """The scheduler's warnings, wherever distributed's logging config sends them."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())

    def __enter__(self):
        logging.getLogger("distributed.scheduler").addHandler(self)
        return self

    def __exit__(self, *exc):
        logging.getLogger("distributed.scheduler").removeHandler(self)


def threads_cluster():
    # the dashboard on a free port: None took 8787 and warned where another cluster held it
    return distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                    dashboard_address=":0")


def test_solves_on_a_threads_cluster_equal_numpy_and_reuse_no_key():
    """Both solvers from one x0, the first result kept. The scheduler warned
    when the second solve made tasks of the first's names with other
    dependencies (its CG fuses other work into them: each solve now has keys
    of its own), and when a lazy value went to the cluster in two computations
    of one solve (CG's first |r|^2, in the persisted step and in the read)."""
    with threads_cluster() as cluster, distributed.Client(cluster), SchedulerLog() as log:
        f, w0 = lifted()
        results = [(solver, solver(f, w0, maxiter=STEPS)) for solver in (newton_cg, trust_region)]
        for solver, res in results:
            assert_same_solve(res, reference(solver))
    collisions = [m for m in log.messages if "Detected different `run_spec`" in m]
    assert not collisions, collisions[0]


def numpy_logistic(x, y):
    """The loss as NumPy code writes it (NumPy's functions on Dask arrays, through
    dualad's ``__array_function__``), labels in {0, 1}."""
    def loss(w):
        z = x @ w
        return (np.logaddexp(0, z) - y * z).mean() + 1e-3 * (w * w).sum()
    return loss


@pytest.mark.parametrize("solver", [newton_cg, trust_region], ids=["newton_cg", "trust_region"])
def test_solves_of_several_steps_of_a_numpy_written_loss_reuse_no_key(solver):
    """Issue 26: over the steps of one solve, a task read in one computation stood
    alone and in the next was fused with its only consumer (Dask's optimizer
    renames a fused chain and aliases its old key), so the scheduler warned
    "Detected different `run_spec`" (7 times in 5 Newton-CG steps here). The
    solver's computations now skip the graph optimization: a key always names one
    task. The lazy result lives on the cluster: it is read before the client closes."""
    y01 = (Y + 1.0) / 2.0
    with threads_cluster() as cluster, distributed.Client(cluster), SchedulerLog() as log:
        x = da.from_array(X, chunks=((40, 40, 40, 30), 3))
        res = solver(numpy_logistic(x, da.from_array(y01, chunks=((40, 40, 40, 30),))), da.zeros(3, chunks=3))
        assert_same_solve(res, solver(numpy_logistic(X, y01), np.zeros(3)))
    assert res.nit > 2
    collisions = [m for m in log.messages if "Detected different `run_spec`" in m]
    assert not collisions, f"{len(collisions)} collisions, the first: {collisions[0]}"


def test_a_worker_closed_mid_solve_is_recomputed_around():
    with threads_cluster() as cluster, distributed.Client(cluster):
        def close_a_worker(call):
            if call == 2:  # building the first H-product, x0's gradient persisted
                cluster.sync(cluster.workers[sorted(cluster.workers)[0]].close)
        f, w0 = lifted(close_a_worker)
        res = newton_cg(f, w0, maxiter=STEPS)
        assert len(cluster.scheduler_info["workers"]) == 1
        assert_same_solve(res, reference(newton_cg))


def test_a_worker_process_killed_mid_solve_is_survived():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
        def kill_a_worker(call):
            if call == 2:  # building the first H-product, x0's gradient persisted
                address = sorted(client.scheduler_info()["workers"])[0]
                os.kill(client.run(os.getpid, workers=[address])[address], signal.SIGKILL)
        f, w0 = lifted(kill_a_worker)
        assert_same_solve(trust_region(f, w0, maxiter=STEPS), reference(trust_region))


def test_data_lost_mid_solve_is_a_clear_error_that_changes_nothing():
    """Data scattered to one worker, which then leaves: the only copy is gone, and
    every value the solve persisted on it is cancelled (as after client.restart(),
    which raises the same FutureCancelledError, 'lost dependencies')."""
    with threads_cluster() as cluster, distributed.Client(cluster) as client:
        first = sorted(client.scheduler_info()["workers"])[0]
        x = da.from_delayed(client.scatter(X, workers=[first]), X.shape, dtype=X.dtype)
        y = da.from_delayed(client.scatter(Y, workers=[first]), Y.shape, dtype=Y.dtype)
        x0 = da.from_array(np.array([0.1, -0.2, 0.3]), chunks=2)

        def close_the_first_worker(call):
            if call == 2:
                name = next(n for n, w in cluster.workers.items() if w.address == first)
                cluster.sync(cluster.workers[name].close)
        with pytest.raises(RuntimeError, match=r"newton_cg: values this solve had computed were "
                                               r"cancelled.*f and x0 are as they were") as err:
            newton_cg(logistic(x, y, close_the_first_worker), x0)
        assert "cancelled" in str(err.value.__cause__)
        np.testing.assert_array_equal(x0.compute(), [0.1, -0.2, 0.3])

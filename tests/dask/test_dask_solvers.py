"""``newton_cg`` and ``trust_region`` on Dask arrays, on Dask's local scheduler.

Oracles: the same solve on NumPy arrays (same iterates up to the order of
Dask's chunked sums, hence the same counts), and counts of what Dask was
asked to run: each computation's graph stays the size of one gradient or H v
however many steps came before (iterates and CG vectors are persisted), and
the scalars that steer the solve are read a few at a time, not one by one.
The cluster tests are in test_dask_cluster.py.
"""

from __future__ import annotations

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

from dask.local import get_sync  # noqa: E402

from dualad import ops  # noqa: E402
from mixed import hvp, newton_cg, trust_region  # noqa: E402

pytestmark = pytest.mark.dask
SOLVERS = [newton_cg, trust_region]

RNG = np.random.default_rng(3)
N_SAMPLES, N_FEATURES = 120, 4
X = RNG.standard_normal((N_SAMPLES, N_FEATURES)) * np.logspace(-0.5, 0.5, N_FEATURES)
Y = np.where(RNG.uniform(size=N_SAMPLES) < 1 / (1 + np.exp(-X @ np.linspace(-1, 1, N_FEATURES))), 1.0, -1.0)
CHUNKS, W_CHUNKS = (50, 40, 30), (3, 1)  # neither divides its axis


def logistic(x, y, lam=0.1):
    def loss(w):
        return ops.mean(ops.logaddexp(0.0, -ops.matmul(x, w) * y)) + 0.5 * lam * ops.sum(w * w)
    return loss


def on_dask():
    x = da.from_array(X, chunks=(CHUNKS, W_CHUNKS))
    y = da.from_array(Y, chunks=(CHUNKS,))
    return logistic(x, y), da.zeros(N_FEATURES, chunks=(W_CHUNKS,))


class Recorder:
    """A synchronous Dask scheduler that counts what it is asked to run."""

    def __init__(self):
        self.graphs: list[int] = []  # tasks per computation
        self.reads = 0  # computations whose every result is a scalar

    def __call__(self, dsk, keys, **kwargs):
        self.graphs.append(len(dsk.__dask_graph__() if hasattr(dsk, "__dask_graph__") else dsk))
        out = get_sync(dsk, keys, **kwargs)
        if all(np.ndim(leaf) == 0 for leaf in _leaves(out)):
            self.reads += 1
        return out


def _leaves(out):
    if isinstance(out, (list, tuple)):
        return [leaf for o in out for leaf in _leaves(o)]
    return [out]


@pytest.mark.parametrize("solver", SOLVERS)
def test_the_dask_solve_is_the_numpy_solve_in_bounded_graphs(solver):
    f, w0 = on_dask()
    name = w0.name
    one = Recorder()
    with dask.config.set(scheduler=one):  # unoptimized, as the solvers compute (no fusion)
        dask.compute(hvp(f, w0, w0 + 1.0), optimize_graph=False)
    (hvp_tasks,) = one.graphs
    run = Recorder()
    with dask.config.set(scheduler=run):
        res = solver(f, w0, tol=1e-6)
        remaining = len(res.x.__dask_graph__())
        x = res.x.compute()
    ref = solver(logistic(X, Y), np.zeros(N_FEATURES), tol=1e-6)
    assert res.success and ref.success, (res.message, ref.message)
    assert isinstance(res.x, da.Array) and isinstance(res.jac, da.Array) and isinstance(res.fun, float)
    assert res.x.chunks == w0.chunks and res.x.dtype == w0.dtype
    np.testing.assert_allclose(x, ref.x, rtol=1e-9, atol=1e-12)
    assert res.fun == pytest.approx(ref.fun, rel=1e-12)
    assert (res.nit, res.nfev, res.nhev) == (ref.nit, ref.nfev, ref.nhev)
    # Every graph run is at most about one gradient plus one H v deep, however
    # late in the solve: nothing is recomputed from x0.
    assert max(run.graphs) <= 2 * hvp_tasks, (max(run.graphs), hvp_tasks)
    assert remaining == len(w0.chunks[0]), "the solution holds its chunks, not the solve's history"
    # One read per H-product (its curvature with the residual it leads to), one
    # per trial point, two per step (norms; slope and lengths: trust_region reads
    # them with its trial point) and one more at the end. One read per scalar
    # would be 4 per H-product and 5 per step.
    assert run.reads <= res.nhev + res.nfev + 2 * res.nit + 1, (run.reads, res)
    assert w0.name == name and np.all(w0.compute() == 0.0), "x0 changed"


def _formed_solve(solver, dtype, **options):
    """``solver`` from a one-chunk Dask x0 (solved on the client, H formed at each point),
    the computations it asked for, and the same solve on NumPy."""
    x = da.from_array(X.astype(dtype), chunks=(CHUNKS, W_CHUNKS))
    y = da.from_array(Y.astype(dtype), chunks=(CHUNKS,))
    w0 = da.zeros(N_FEATURES, chunks=-1, dtype=dtype)
    seen = []
    run = Recorder()
    with dask.config.set(scheduler=run):
        res = solver(logistic(x, y), w0, callback=seen.append, **options)
    ref = solver(logistic(X.astype(dtype), Y.astype(dtype)), np.zeros(N_FEATURES, dtype), **options)
    return res, run, seen, ref


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("dtype, tol, rtol", [(np.float64, 1e-8, 1e-9), (np.float32, 1e-3, 2e-4)])
def test_a_small_x0_is_solved_on_the_client_with_h_formed(solver, dtype, tol, rtol):
    """A one-chunk x0: one computation per point (f, gradient and H together), CG on the
    client; the solve is NumPy's, and the results are Dask arrays of x0's chunks."""
    res, run, seen, ref = _formed_solve(solver, dtype, tol=tol)
    assert res.success and ref.success, (res.message, ref.message)
    assert (res.nit, res.nfev) == (ref.nit, ref.nfev)
    assert abs(res.nhev - ref.nhev) <= res.nit  # CG on H's matrix rounds otherwise than on H v
    assert len(run.graphs) == 1 + res.nfev, "x0 read once, then one computation per point"
    for r in (res, *seen):
        assert isinstance(r.x, da.Array) and isinstance(r.jac, da.Array)
        assert r.x.chunks == ((N_FEATURES,),) and r.x.dtype == dtype and r.jac.dtype == dtype
    assert len(seen) == res.nit
    np.testing.assert_allclose(res.x.compute(), ref.x, rtol=rtol, atol=rtol * 1e-3)
    np.testing.assert_allclose(res.jac.compute(), ref.jac, rtol=1, atol=tol)
    assert res.fun == pytest.approx(ref.fun, rel=rtol)


def test_a_larger_x0_keeps_one_product_per_computation(monkeypatch):
    """Above ``FORMED_AT_MOST`` entries the iterates stay on the cluster (H v per product)."""
    import mixed._oracles
    monkeypatch.setattr(mixed._oracles, "FORMED_AT_MOST", N_FEATURES - 1)
    res, run, _, ref = _formed_solve(newton_cg, np.float64, tol=1e-8)
    assert res.success and (res.nit, res.nfev, res.nhev) == (ref.nit, ref.nfev, ref.nhev)
    assert len(run.graphs) > res.nfev + res.nhev
    np.testing.assert_allclose(res.x.compute(), ref.x, rtol=1e-9, atol=1e-12)


def test_h_formed_in_several_passes_is_the_same_solve(monkeypatch):
    """H's directions a few to a pass over each chunk (memory bounded): the same solve."""
    import mixed._oracles
    one, _, _, ref = _formed_solve(newton_cg, np.float64, tol=1e-8)
    monkeypatch.setattr(mixed._oracles, "DIRECTIONS_PER_PASS", 3)  # 4 directions: 2 passes
    two, run, _, _ = _formed_solve(newton_cg, np.float64, tol=1e-8)
    assert (two.nit, two.nfev) == (one.nit, one.nfev) == (ref.nit, ref.nfev)
    assert len(run.graphs) == 1 + two.nfev
    np.testing.assert_allclose(two.x.compute(), one.x.compute(), rtol=1e-12, atol=1e-15)

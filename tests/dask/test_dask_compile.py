"""``dualad.compile`` on Dask arrays: a program split into a task before, one task per
chunk and one after (dualad/_program/executors/dask_graph.py).

Oracles: the same functions on NumPy arrays (eager); the graph a call builds (one
task per chunk of the data, two more, and one per output block); and the reasons
given where a function does not split, each checked to match eager evaluation.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

import dualad  # noqa: E402
import mixed  # noqa: E402
import reverse  # noqa: E402
from dualad import ops  # noqa: E402
from dualad.extend import REGISTRY  # noqa: E402

pytestmark = pytest.mark.dask

RNG = np.random.default_rng(11)
X = RNG.standard_normal((150, 4)) * np.array([1.0, 0.1, 3.0, 10.0])
Y = np.where(RNG.uniform(size=150) < 0.5, 1.0, -1.0)
ROWS = (80, 70)  # uneven: the last chunk's program has other shapes
TOL = {"float64": 1e-12, "float32": 2e-5}


def loss_of(x, y, lam=1e-3):
    """The mean logistic loss of the examples, L2-regularized."""
    def loss(w):
        return ops.mean(ops.logaddexp(0.0, -ops.matmul(x, w) * y)) + 0.5 * lam * ops.sum(w * w)
    return loss


def on_dask(a, rows=ROWS):
    """``a`` as a Dask array chunked along axis 0 in ``rows``."""
    return da.from_array(a, chunks=(rows,) + tuple((d,) for d in a.shape[1:]))


def one_chunk(a):
    return da.from_array(np.asarray(a), chunks=-1)


def assert_close(got, want, dtype="float64", what=""):
    got = got.compute() if isinstance(got, da.Array) else got
    assert np.shape(got) == np.shape(want) and np.asarray(got).dtype == np.asarray(want).dtype, what
    tol = TOL[dtype]
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, float(np.max(np.abs(want)))),
                               err_msg=what)


def tasks_of_the_program(array) -> int:
    """The tasks of the graph's program layer (``dualad-program-...``)."""
    graph = array.__dask_graph__()
    return sum(len(layer) for name, layer in graph.layers.items() if name.startswith("dualad-program-"))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_gradient_and_hvp_per_chunk_equal_numpy(dtype):
    x, y = X.astype(dtype), Y.astype(dtype)
    vg = dualad.compile(reverse.value_and_grad(loss_of(on_dask(x), on_dask(y))))
    hv = dualad.compile(lambda w, v: mixed.hvp(loss_of(on_dask(x), on_dask(y)), w, v))
    for k in range(3):
        w, v = RNG.standard_normal(4).astype(dtype), RNG.standard_normal(4).astype(dtype)
        value, g = vg(one_chunk(w))
        h = hv(one_chunk(w), one_chunk(v))
        assert isinstance(value, da.Array) and isinstance(h, da.Array)
        want_value, want_g = reverse.value_and_grad(loss_of(x, y))(w)
        assert_close(value, want_value, dtype, f"value at point {k}")
        assert_close(g, want_g, dtype, f"gradient at point {k}")
        assert_close(h, mixed.hvp(loss_of(x, y), w, v), dtype, f"H v at point {k}")
        assert g.chunks == ((4,),) and h.chunks == ((4,),)
    assert vg.stats == {"traces": 1, "replays": 2, "misses": 0, "eager": 0, "executor": "dask",
                        "chosen": None, "loops": None}
    assert hv.stats["replays"] == 2 and hv.stats["executor"] == "dask"
    # a call is one task per chunk, one before and one after, whatever the primitives
    assert tasks_of_the_program(h) == len(ROWS) + 2


def test_the_parts_print_and_a_short_last_chunk_has_its_own():
    f = dualad.compile(reverse.grad(loss_of(on_dask(X), on_dask(Y))))
    w = one_chunk(np.zeros(4))
    f(w)
    text = str(f.program(w))
    assert "# before (one task)" in text and "# after (one task" in text
    assert "per chunk of 80 rows (1 tasks)" in text and "per chunk of 70 rows (1 tasks)" in text


def test_a_partitioned_output_keeps_the_chunks():
    f = dualad.compile(lambda w, b: (ops.matmul(on_x, w) + b) * on_y)
    on_x, on_y = on_dask(X), on_dask(Y)
    for w in (np.ones(4), np.arange(4.0)):
        got = f(one_chunk(w), 0.5)
        assert got.chunks == (ROWS,)
        assert_close(got, (X @ w + 0.5) * Y)
    assert f.stats["executor"] == "dask" and f.stats["replays"] == 1


def test_constants_spanning_the_axis_are_cut_into_the_chunks():
    weights = one_chunk(np.linspace(0.5, 2.0, 150))  # one chunk of the whole axis
    shift = one_chunk(np.linspace(-1.0, 1.0, 150))
    on_x = on_dask(X)
    f = dualad.compile(lambda w: ops.sum((ops.matmul(on_x, w) + shift) * weights))
    for w in (np.ones(4), -np.arange(4.0)):
        assert_close(f(one_chunk(w)), np.sum((X @ w + shift.compute()) * weights.compute()))
    assert f.stats["executor"] == "dask" and f.stats["replays"] == 1


def test_transposes_columns_reshapes_and_reductions_along_other_axes():
    on_x = on_dask(X)

    def f(w):
        r = ops.tanh(ops.matmul(on_x, w))                         # rows of the data
        cols = on_x[:, 1] * r + ops.max(on_x, axis=1)              # a column; a max along the row
        normal = ops.matmul(ops.permute_dims(on_x, (1, 0)), ops.reshape(cols, (150, 1)))  # X^T c
        grid = ops.broadcast_to(ops.reshape(r, (150, 1)), (150, 3))
        return normal[:, 0] + ops.sum(grid * grid) / 150.0

    for w in (np.full(4, 0.1), np.linspace(-0.2, 0.2, 4)):
        r = np.tanh(X @ w)
        want = X.T @ (X[:, 1] * r + X.max(axis=1)) + 3.0 * np.sum(r * r) / 150.0
        got = dualad.compile(f)
        assert_close(got(one_chunk(w)), want)
        assert got.stats["executor"] == "dask"


def test_batched_matmuls_and_the_hessian_split():
    """matmul with batch axes, the data partitioned along a batch axis, the rows, or the
    contracted axis; ``mixed.hessian`` (n directions batched) in one task per chunk."""
    stack = RNG.standard_normal((150, 3, 4))
    on_x, on_stack = on_dask(X), on_dask(stack)
    m = RNG.standard_normal((4, 2))
    on_m = one_chunk(m)

    def f(w):
        by_batch = ops.matmul(on_stack, on_m) * w[0]               # (150, 3, 2), batch axis
        rows = ops.matmul(on_x, ops.reshape(w, (1, 4, 1)) * on_m[None, :, :1])  # (1, 150, 1)
        contracted = ops.matmul(ops.reshape(ops.tanh(on_x @ w), (1, 1, 150)), on_stack[:, 0, :])
        return ops.sum(by_batch) + ops.sum(rows * rows) + ops.sum(contracted)

    def want(w):
        return (np.sum(stack @ m * w[0]) + np.sum((X @ (w[:, None] * m[:, :1])) ** 2)
                + np.sum(np.tanh(X @ w) @ stack[:, 0, :]))

    compiled = dualad.compile(f)
    hessian = dualad.compile(mixed.hessian(loss_of(on_x, on_dask(Y))))
    in_passes = dualad.compile(mixed.hessian(loss_of(on_x, on_dask(Y)), chunk_size=3))  # 2 passes
    for w in (np.full(4, 0.1), np.linspace(-0.2, 0.2, 4)):
        assert_close(compiled(one_chunk(w)), want(w))
        for h in (hessian, in_passes):
            assert_close(h(one_chunk(w)), mixed.hessian(loss_of(X, Y))(w))
    assert {c.stats["executor"] for c in (compiled, hessian, in_passes)} == {"dask"}


def standardized_loss(x, y):
    """A loss whose margins are standardized over the rows (as batch normalization does):
    their mean and spread are sums over the chunks, read by each chunk again."""
    def loss(w):
        z = ops.matmul(x, w)
        c = z - ops.mean(z)
        s = c / ops.sqrt(ops.mean(c * c) + 1e-3)
        return ops.mean(ops.logaddexp(0.0, -s * y)) + 1e-3 * ops.sum(w * w)
    return loss


def test_values_of_each_chunk_read_after_a_sum_take_another_round():
    """``z - mean(z)``, then its spread: three passes over the chunks, each a task per
    chunk and one after, in one graph; the gradient and H v too."""
    on_x, on_y = on_dask(X), on_dask(Y)
    f = dualad.compile(lambda w: (standardized_loss(on_x, on_y)(w), ops.tanh(on_x @ w - ops.mean(on_x @ w))))
    vg = dualad.compile(reverse.value_and_grad(standardized_loss(on_x, on_y)))
    hv = dualad.compile(lambda w, v: mixed.hvp(standardized_loss(on_x, on_y), w, v))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k in range(2):
            w, v = RNG.standard_normal(4), RNG.standard_normal(4)
            value, rows = f(one_chunk(w))
            assert rows.chunks == (ROWS,)
            assert_close(value, standardized_loss(X, Y)(w), what=f"loss at point {k}")
            assert_close(rows, np.tanh(X @ w - np.mean(X @ w)), what=f"rows at point {k}")
            got_value, got_g = vg(one_chunk(w))
            want_value, want_g = reverse.value_and_grad(standardized_loss(X, Y))(w)
            assert_close(got_g, want_g, what=f"gradient at point {k}")
            assert_close(hv(one_chunk(w), one_chunk(v)), mixed.hvp(standardized_loss(X, Y), w, v),
                         what=f"H v at point {k}")
    assert {c.stats["executor"] for c in (f, vg, hv)} == {"dask"}
    text = str(f.program(one_chunk(w)))
    assert "# round 3: per chunk of 80 rows (1 tasks)" in text and "# round 4" not in text
    assert tasks_of_the_program(f(one_chunk(w))[0]) == 1 + 3 * (len(ROWS) + 1)


@pytest.mark.parametrize("f, why", [
    (lambda x, w: ops.flip(x * w, axis=0)[:, 0], "flip of a partitioned value has no per-chunk rule"),
    (lambda x, w: ops.matmul(x, w) if float(ops.sum(ops.matmul(x, w))) > 0 else -ops.matmul(x, w),
     r"a guard"),
], ids=["flip", "guard"])
def test_what_does_not_split_runs_eagerly_and_says_why(f, why):
    on_x = on_dask(X)
    compiled = dualad.compile(lambda w: f(on_x, w))
    w = np.linspace(-1.0, 1.0, 4)
    with pytest.warns(RuntimeWarning, match=f"do not split into one task per chunk: .*{why}"):
        got = compiled(one_chunk(w))
    assert_close(got, np.asarray(f(X, w)))
    assert compiled.stats["executor"] is None and compiled.stats["eager"] == 0  # the trace's own result
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_close(compiled(one_chunk(w)), np.asarray(f(X, w)))  # eager from then on, warned once
    assert compiled.stats["eager"] == 1


def test_numbers_read_on_the_host_are_not_baked_into_a_program():
    """A value-dependent index (``extract``'s) read from the data at the trace: a program
    would replay it at every call; the trace hears of the read and runs eagerly."""
    compiled = dualad.compile(lambda x: ops.extract(x > 0.0, x))
    with pytest.warns(RuntimeWarning, match="the numbers of a Dask array were read on the host"):
        assert_close(compiled(one_chunk(np.array([0.5, -0.1]))), np.array([0.5]))
    assert_close(compiled(one_chunk(np.array([-0.1, 0.25]))), np.array([0.25]))
    assert compiled.stats["replays"] == 0


def test_inputs_chunked_unlike_each_other_say_so():
    compiled = dualad.compile(lambda x, z: ops.sum(ops.tanh(x) * z))
    x, z = on_dask(np.ones(150)), on_dask(np.ones(150), rows=(75, 75))
    with pytest.warns(RuntimeWarning, match=r"input 1 is chunked as \(75, 75\) along axis 0"):
        assert_close(compiled(x, z), 150 * np.tanh(1.0))


def test_registered_primitives_pickle_by_name():
    """What a Dask worker in another process receives of a program: its entries by name."""
    sin = REGISTRY["sin"]
    assert pickle.loads(pickle.dumps(sin)) is sin
    assert len(pickle.dumps(sin)) < 100


def test_newton_cg_on_dask_compiles_its_gradient_and_products():
    """The loss runs at the traces only (a value-and-gradient and an H-product program),
    not at each of the solve's many evaluations; the solve is NumPy's."""
    calls = []
    plain = loss_of(on_dask(X), on_dask(Y))

    def loss(w):
        calls.append(None)
        return plain(w)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = mixed.newton_cg(loss, da.zeros(4, chunks=-1), tol=1e-10)
    want = mixed.newton_cg(loss_of(X, Y), np.zeros(4), tol=1e-10)
    assert r.success and r.nit == want.nit
    np.testing.assert_allclose(r.x.compute(), want.x, rtol=1e-9, atol=1e-12)
    assert r.nfev + r.nhev > 10 and len(calls) <= 3


def test_on_a_cluster_of_processes():
    """Each part reaches the worker process pickled (registered entries by name) and is
    made ready there once."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, distributed.Client(cluster):
        hv = dualad.compile(lambda w, v: mixed.hvp(loss_of(on_dask(X), on_dask(Y)), w, v))
        for k in range(2):
            w, v = np.full(4, 0.1 * k), np.ones(4)
            assert_close(hv(one_chunk(w), one_chunk(v)), mixed.hvp(loss_of(X, Y), w, v), what=f"call {k}")
        assert hv.stats["replays"] == 1 and hv.stats["executor"] == "dask"


def test_the_trace_computes_no_dask_constant():
    """Simplification looks at constants for ones and zeros; a Dask constant (here
    labels of the data's size, all ones) is not computed to do so: that would bring
    the data to this process at the first call."""
    seen = []

    def scheduler(dsk, keys, **kwargs):
        seen.append(keys)
        return dask.get(dsk, keys, **kwargs)

    y = on_dask(np.ones(150))
    compiled = dualad.compile(lambda w: ops.sum(y * (on_dask(X) @ w)))
    with dask.config.set(scheduler=scheduler):
        out = compiled(one_chunk(np.ones(4)))
    assert seen == [] and compiled.stats["executor"] == "dask"
    assert_close(out, np.sum(X @ np.ones(4)))


def test_a_guard_on_a_replicated_value_runs_eagerly():
    """A graph of tasks checks no guard: a branch on a replicated value (a weight) taken at
    the trace would be replayed for the other branch too. Found by review: the second
    call gave the first branch's numbers."""
    on_x = on_dask(X)

    def f(w):
        return ops.sum(on_x, axis=0) * (2.0 if float(w[0]) > 0 else -100.0)

    compiled = dualad.compile(f)
    with pytest.warns(RuntimeWarning, match="a guard"):
        compiled(np.ones(4))
    for w in (np.ones(4), -np.ones(4)):
        assert_close(compiled(w), np.asarray(f(w).compute()), what=str(w))


def test_numpy_arguments_with_dask_data_closed_over_call_again():
    """The second call of NumPy arguments takes the hot path, which a program of tasks
    has no replay function for. Found by review: it raised AttributeError."""
    on_x = on_dask(X)
    compiled = dualad.compile(lambda w: ops.sum(on_x, axis=0) * 2.0)  # w: read by none of it
    for w in (np.ones(4), np.arange(4.0), np.ones(4)):
        assert_close(compiled(w), X.sum(axis=0) * 2.0)
    assert compiled.stats["executor"] == "dask"

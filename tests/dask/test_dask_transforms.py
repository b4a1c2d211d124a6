"""Derivatives of functions of Dask arrays: lazy, chunked as their inputs, equal to NumPy's.

Oracles: the same function and the same numbers on NumPy arrays (whose
derivatives the table's suites check against finite differences); a
scheduler that refuses to run proves that no transform computes anything
before the user asks.
"""

from __future__ import annotations

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

import dualad  # noqa: E402
import mixed  # noqa: E402
import reverse  # noqa: E402
from dualad import ops  # noqa: E402
from dualad._base.tree import flatten  # noqa: E402

pytestmark = pytest.mark.dask

RNG = np.random.default_rng(0)
N_SAMPLES, N_FEATURES = 23, 7
X = RNG.standard_normal((N_SAMPLES, N_FEATURES))
Y = np.where(RNG.uniform(size=N_SAMPLES) < 0.5, 1.0, -1.0)
W = 0.3 * RNG.standard_normal(N_FEATURES)
V = RNG.standard_normal(N_FEATURES)
# Chunk sizes that do not divide the shapes.
ROW_CHUNKS, W_CHUNKS = (10, 9, 4), (3, 4)


def logistic(x, y):
    def loss(w):
        return ops.mean(ops.logaddexp(0.0, -ops.matmul(x, w) * y)) + 0.05 * ops.sum(w ** 4)
    return loss


def rosenbrock(x):
    return ops.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def reshaped(x):
    return ops.sum(ops.sin(ops.reshape(x, (2, -1))) ** 3)


def sorted_head(x):
    return ops.sum(ops.sort(x)[:3] ** 2) + ops.sum(ops.pad(x, 2) * 0.5) ** 2


def lifted():
    return (da.from_array(X, chunks=(ROW_CHUNKS, N_FEATURES)), da.from_array(Y, chunks=(ROW_CHUNKS,)),
            da.from_array(W, chunks=(W_CHUNKS,)), da.from_array(V, chunks=(W_CHUNKS,)))


def refuse(dsk, keys, **kwargs):
    raise AssertionError("a transform computed a Dask graph before it was asked to")


def test_transforms_build_graphs_and_compute_nothing():
    x, y, w, v = lifted()
    f = logistic(x, y)
    with dask.config.set(scheduler=refuse):
        results = {
            "jvp": dualad.jvp(f, (w,), (v,)),
            "grad": reverse.grad(f)(w),
            "value_and_grad": reverse.value_and_grad(f)(w),
            "vjp": reverse.vjp(f, w)[1](da.ones((), chunks=())),
            "grad_and_hvp": mixed.grad_and_hvp(f, w, v),
            "hvp, reverse-over-reverse": mixed.hvp(f, w, v, mode="reverse-over-reverse"),
            "jacfwd": dualad.jacfwd(lambda u: ops.tanh(ops.matmul(x, u)))(w),
            "hessian": mixed.hessian(f, chunk_size=3)(w),
        }
    kinds = {name: {type(leaf).__name__ for leaf in flatten(r)[0]} for name, r in results.items()}
    assert all(k == {"Array"} for k in kinds.values()), kinds
    f_np = logistic(X, Y)
    expected = {
        "jvp": dualad.jvp(f_np, (W,), (V,)),
        "grad": reverse.grad(f_np)(W),
        "value_and_grad": reverse.value_and_grad(f_np)(W),
        "vjp": reverse.vjp(f_np, W)[1](np.ones(())),
        "grad_and_hvp": mixed.grad_and_hvp(f_np, W, V),
        "hvp, reverse-over-reverse": mixed.hvp(f_np, W, V, mode="reverse-over-reverse"),
        "jacfwd": dualad.jacfwd(lambda u: ops.tanh(ops.matmul(X, u)))(W),
        "hessian": mixed.hessian(f_np, chunk_size=3)(W),
    }
    (computed,) = dask.compute(results)  # everything in one computation
    for name, want in expected.items():
        for got_leaf, want_leaf in zip(flatten(computed[name])[0], flatten(want)[0], strict=True):
            np.testing.assert_allclose(got_leaf, want_leaf, rtol=1e-12, atol=1e-14, err_msg=name)


def on_a_line(f):
    """``f`` of 14 numbers, Dask's in chunks (5, 6, 3), and NumPy's."""
    def make():
        xn = np.linspace(0.1, 1.3, 14)
        return f, da.from_array(xn, chunks=((5, 6, 3),)), f, xn
    return make


def logistic_regression():
    """The logistic loss of Dask data at weights in chunks (3, 4), and NumPy's."""
    x, y, w, _ = lifted()
    return logistic(x, y), w, logistic(X, Y), W


@pytest.mark.parametrize("make", [on_a_line(rosenbrock), on_a_line(reshaped), on_a_line(sorted_head),
                                  logistic_regression], ids=["rosenbrock", "reshape", "sort-pad", "logistic"])
def test_gradients_and_hvps_have_the_chunks_of_their_input(make):
    """Rosenbrock's slices, a reshape, sort and pad make the transpose rules
    choose other chunks; what comes back is chunked as the input."""
    f, x, f_np, xn = make()
    vn = np.cos(np.arange(xn.size))
    v = da.from_array(vn, chunks=5)  # chunked otherwise than x
    g = reverse.grad(f)(x)
    _, g2 = reverse.value_and_grad(f)(x)
    g3, hv = mixed.grad_and_hvp(f, x, v)
    batch = mixed.hvp(f, x, da.stack([v, 2.0 * v]))
    for name, out in [("grad", g), ("value_and_grad", g2), ("grad_and_hvp", g3), ("hvp", hv)]:
        assert out.chunks == x.chunks, f"{name}: chunks {out.chunks}, input {x.chunks}"
    assert batch.chunks == ((2,),) + x.chunks
    g_np, hv_np = mixed.grad_and_hvp(f_np, xn, vn)
    got = dask.compute(g, g2, g3, hv, batch)
    for out in got[:3]:
        np.testing.assert_allclose(out, g_np, rtol=1e-12)
    np.testing.assert_allclose(got[3], hv_np, rtol=1e-12)
    np.testing.assert_allclose(got[4], np.stack([hv_np, 2.0 * hv_np]), rtol=1e-12)


def test_a_jvp_tangent_has_the_chunks_of_its_output():
    x = da.from_array(np.linspace(0.1, 1.3, 14), chunks=((5, 6, 3),))
    out, t = dualad.jvp(lambda u: ops.reshape(ops.sin(u), (2, 7)), (x,), (da.ones(14, chunks=7),))
    assert t.chunks == out.chunks
    np.testing.assert_allclose(t.compute(), np.cos(np.linspace(0.1, 1.3, 14)).reshape(2, 7))


def test_dask_and_numpy_in_one_operation_say_how_to_lift_numpy():
    x, y, w, _ = lifted()
    with pytest.raises(TypeError, match=r"different array libraries.*dask\.array\.from_array"):
        reverse.grad(logistic(X, Y))(w)  # NumPy data, Dask weights
    lifted_x = da.from_array(X, chunks=(ROW_CHUNKS, N_FEATURES))  # the fix the message names
    np.testing.assert_allclose(reverse.grad(logistic(lifted_x, y))(w).compute(),
                               reverse.grad(logistic(X, Y))(W), rtol=1e-12)


def test_other_mixes_keep_their_message():
    """The Dask hint is only for Dask operands."""
    import array_api_strict
    with pytest.raises(TypeError, match="different array libraries") as err:
        ops.add(np.ones(2), array_api_strict.ones(2))
    assert "dask" not in str(err.value)


def test_a_python_list_beside_a_dask_array_becomes_a_dask_array():
    """A list is converted in the namespace of the other operand: Dask stays Dask (issue 26)."""
    x = da.from_array(np.array([1.0, 2.0]), chunks=1)
    out, t = dualad.jvp(lambda x: x * [3.0, 4.0], (x,), (da.ones(2, chunks=1),))
    assert isinstance(out, da.Array) and isinstance(t, da.Array)
    np.testing.assert_array_equal(t.compute(), [3.0, 4.0])

"""Item assignment and array building with derivatives: ``ops.index_set``,
``ops.asarray``, ``Dual.__setitem__`` and ``Tensor.__setitem__``, as NumPy assigns."""

from __future__ import annotations

import numpy as np
import pytest

import dualad
import mixed
import reverse
from dualad import Dual, ops
from dualad.testing import check_grads

INDICES = [
    pytest.param((1,), id="int"),
    pytest.param((slice(1, 3),), id="slice"),
    pytest.param(([0, 2],), id="array"),
    pytest.param(([0, 0],), id="repeated"),
    pytest.param(([2, 0, 2, 1, 2],), id="repeated-unordered"),
    pytest.param((np.array([True, False, True, False]),), id="mask"),
    pytest.param(([0, -4],), id="repeated-negative"),
]


def _numpy_set(base, values, idx):
    out = np.array(base, copy=True)
    out[idx] = values
    return out


@pytest.mark.parametrize("idx", INDICES)
def test_index_set_value_matches_numpy(idx):
    rng = np.random.default_rng(0)
    base = rng.normal(size=(4, 3))
    shape = base[idx].shape
    values = rng.normal(size=shape)
    np.testing.assert_array_equal(ops.index_set(base, values, idx), _numpy_set(base, values, idx))
    # broadcasting a row and a scalar, as NumPy does
    np.testing.assert_array_equal(ops.index_set(base, values[..., :1, :] if shape[:-1] else values, idx),
                                  _numpy_set(base, values[..., :1, :] if shape[:-1] else values, idx))
    np.testing.assert_array_equal(ops.index_set(base, 2.5, idx), _numpy_set(base, 2.5, idx))


@pytest.mark.parametrize("idx", INDICES)
def test_index_set_derivatives_match_finite_differences(idx):
    rng = np.random.default_rng(1)
    base = rng.normal(size=(4, 3))
    values = rng.normal(size=base[idx].shape)
    check_grads(lambda b, v: ops.sin(ops.index_set(b * b, v * v, idx)), (base, values),
                order=2, modes=("fwd", "rev"))


def test_repeated_index_assignment_last_write_wins_in_every_mode():
    """Regression: ``y[[0, 0]] = [5, 7]`` gave y[0] = 12 in reverse and mixed mode."""
    def f(x):
        y = x * 1.0
        y[[0, 0]] = x[1:3] * np.array([5.0, 7.0])
        return (y * y).sum()

    x = np.array([1.0, 2.0, 3.0])
    y = x.copy()
    y[[0, 0]] = x[1:3] * np.array([5.0, 7.0])
    assert reverse.value_and_grad(f)(x)[0] == (y * y).sum()
    # y = [7 x2, x1, x2]: d/dx = [0, 2 x1, 98 x2 + 2 x2]
    expected = np.array([0.0, 2 * x[1], 100 * x[2]])
    np.testing.assert_allclose(reverse.grad(f)(x), expected)
    np.testing.assert_allclose(dualad.jacfwd(f)(x), expected)
    v = np.array([0.3, -1.0, 2.0])
    np.testing.assert_allclose(mixed.hvp(f, x, v), np.diag([0.0, 2.0, 100.0]) @ v)


def test_augmented_assignment_through_a_repeated_index_applies_once():
    """``y[idx] += v`` reads, adds and assigns: NumPy applies a repeated index once."""
    def f(x):
        y = x * 1.0
        y[[0, 0]] += x[1:3]
        return (y * y).sum()

    x = np.array([1.0, 2.0, 3.0])
    y = x.copy()
    y[[0, 0]] += x[1:3]
    assert reverse.value_and_grad(f)(x)[0] == (y * y).sum()
    # y = [x0 + x2, x1, x2]
    expected = 2 * np.array([y[0], y[1], y[0] + y[2]])
    np.testing.assert_allclose(reverse.grad(f)(x), expected)
    np.testing.assert_allclose(dualad.jacfwd(f)(x), expected)


def test_dual_item_assignment_fills_a_buffer_and_leaves_the_callers_arrays_alone():
    primal, tangent = np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 0.0])
    keep = primal.copy(), tangent.copy()
    d = Dual(primal, tangent)
    out = d * 0.0
    for i in range(3):
        out[i] = d[i] ** 2
    d[1] = 10.0
    np.testing.assert_array_equal(out.primal, [1.0, 4.0, 9.0])
    np.testing.assert_array_equal(out.tangent, [2.0, 0.0, 0.0])
    np.testing.assert_array_equal(d.primal, [1.0, 10.0, 3.0])
    np.testing.assert_array_equal(d.tangent, [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(primal, keep[0])
    np.testing.assert_array_equal(tangent, keep[1])


def test_dual_item_assignment_casts_into_the_targets_dtype_as_numpy_does():
    d = Dual(np.ones(3, np.float32), np.ones(3, np.float32))
    d[0] = Dual(np.float64(2.0), np.float64(3.0))
    assert d.dtype == np.float32 and d.tangent.dtype == np.float32
    np.testing.assert_array_equal(d.tangent, [3.0, 1.0, 1.0])


def test_dual_item_assignment_nests_with_an_outer_derivative():
    def outer(y):
        def inner(x):
            buf = x * 1.0
            buf[0] = y * x[1]  # y carries the outer derivative, x the inner one
            return (buf * buf).sum()
        return dualad.jvp(inner, (np.ones(2),), (np.array([0.0, 1.0]),))[1]

    # inner = y^2 x1^2 + x1^2 (x0 is overwritten); its x1-tangent is 2 x1 (y^2 + 1), whose y-derivative is 4 y
    np.testing.assert_allclose(dualad.jvp(outer, (2.0,), (1.0,))[1], 8.0)


def test_dual_item_assignment_into_an_outer_buffer_is_refused_with_a_way_out():
    def outer(y):
        buf = y * np.ones(2)  # a Dual of the outer transform

        def inner(x):
            buf[0] = x  # x carries the inner derivative, which buf cannot hold
            return x
        dualad.jvp(inner, (1.0,), (1.0,))
        return buf

    with pytest.raises(TypeError, match="index_set"):
        dualad.jvp(outer, (2.0,), (1.0,))


def test_asarray_stacks_values_and_lifts_numbers_into_their_dtype():
    def f(x):
        return ops.asarray([[x[0], 1.0], [2.0, x[1] * x[0]]])

    x = np.array([2.0, 3.0], np.float32)
    y, t = dualad.jvp(f, (x,), (np.array([1.0, 0.0], np.float32),))
    np.testing.assert_array_equal(y, [[2.0, 1.0], [2.0, 6.0]])
    np.testing.assert_array_equal(t, [[1.0, 0.0], [0.0, 3.0]])
    assert y.dtype == np.float32 and t.dtype == np.float32
    check_grads(lambda x: ops.asarray([x[0] * x[1], ops.sin(x[1]), 3.0]), (x.astype(np.float64),),
                order=2, modes=("fwd", "rev"))
    assert ops.asarray([1.0, 2.0]).dtype == np.float64
    assert ops.asarray(np.ones(2), dtype=np.float32).dtype == np.float32


def test_index_set_under_vmap_with_a_batched_index_assigns_as_numpy_does():
    # The index of each element of the batch was read on the host ("'Batched' object has no
    # attribute '__dlpack__'"); its last writes are an entry now, as under compile.
    base = np.arange(8.0).reshape(2, 4)
    idx = np.array([[0, 1, 0], [3, 3, 3]])
    values = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    got = dualad.vmap(lambda b, i, v: ops.index_set(b, v, (i,)))(base, idx, values)
    want = base.copy()
    for k in range(2):
        want[k][idx[k]] = values[k]
    np.testing.assert_array_equal(got, want)

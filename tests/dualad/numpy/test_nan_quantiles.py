"""``nanmedian``, ``nanquantile`` and ``nanpercentile`` beyond 1-d (issue 26): NumPy's
values with ``axis``/``keepdims``, no derivative at NaN entries, NaN (and no
derivative) for a slice that is all NaN. Until then they refused any input but a
1-d one with ``axis=None`` (NotImplementedError).

The derivatives in every mode, backend and dtype are the table's (``tests/_support/cases.py``).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dualad
import reverse
from dualad import ops
from dualad.testing import check_grads


def _with_nans(shape, seed=0):
    r = np.random.default_rng(seed)
    a = r.standard_normal(shape)
    a[r.random(shape) < 0.4] = np.nan
    if len(shape) >= 2 and 0 not in shape:
        a[0] = np.nan  # a slice along the last axis that is all NaN
    return a


def _axes(ndim):
    return [None, *range(-ndim, ndim)] + ([(0, ndim - 1)] if ndim >= 2 else [])


FUNCTIONS = [
    ("nanquantile", lambda a, **kw: ops.nanquantile(a, [0.0, 0.3, 1.0], **kw),
     lambda a, **kw: np.nanquantile(a, [0.0, 0.3, 1.0], **kw)),
    ("nanpercentile", lambda a, **kw: ops.nanpercentile(a, 40.0, **kw),
     lambda a, **kw: np.nanpercentile(a, 40.0, **kw)),
    ("nanmedian", ops.nanmedian, np.nanmedian),
]


@pytest.mark.parametrize("name, ours, theirs", FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4), (1,), ()], ids=str)
def test_values_match_numpy(name, ours, theirs, shape):
    a = _with_nans(shape)
    for axis in _axes(len(shape)):
        for keepdims in (False, True):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's "All-NaN slice"
                want = theirs(a, axis=axis, keepdims=keepdims)
            got = np.asarray(ours(a, axis=axis, keepdims=keepdims))
            assert got.shape == np.shape(want), (axis, keepdims)
            np.testing.assert_allclose(got, want, rtol=1e-13, equal_nan=True, err_msg=f"{axis=} {keepdims=}")


def test_two_dimensional_q_and_float32():
    a = _with_nans((3, 5)).astype(np.float32)
    q = np.array([[0.1, 0.5], [0.75, 1.0]])
    got = ops.nanquantile(a, q, axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.nanquantile(a, q, axis=1)
    assert got.shape == want.shape == (2, 2, 3)
    np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)


def test_empty_slices_are_nan():
    """NumPy answers a single NaN for an empty input whatever ``q`` (its nanmean
    shortcut); dualad answers NaN in the shape a non-empty input would have."""
    assert ops.nanquantile(np.zeros((2, 0)), [0.5, 0.9], axis=1).shape == (2, 2)
    assert np.isnan(ops.nanmedian(np.zeros((2, 0)), axis=1)).all()
    assert ops.nanmedian(np.zeros((0, 3)), axis=1).shape == (0,)


def test_nan_entries_and_all_nan_slices_take_no_derivative():
    a = np.array([[1.0, np.nan, 3.0, 2.0], [np.nan, np.nan, np.nan, np.nan], [4.0, 0.0, np.nan, 8.0]])
    want_value = np.array([2.0, np.nan, 4.0])
    y, t = dualad.jvp(lambda a: ops.nanmedian(a, axis=1), (a,), (np.arange(12.0).reshape(3, 4),))
    np.testing.assert_array_equal(y, want_value)
    np.testing.assert_array_equal(t, [3.0, 0.0, 8.0])  # the median's own entry; row 1: 0
    g = reverse.grad(lambda a: ops.sum(ops.nan_to_num(ops.nanmedian(a, axis=1))))(a)
    np.testing.assert_array_equal(g, [[0, 0, 0, 1], [0, 0, 0, 0], [1, 0, 0, 0]])
    g = reverse.grad(lambda a: ops.sum(ops.nan_to_num(ops.nanquantile(a, 0.25, axis=1))))(a)
    np.testing.assert_array_equal(g, [[0.5, 0, 0, 0.5], [0, 0, 0, 0], [0.5, 0.5, 0, 0]])


def test_derivatives_match_finite_differences_in_every_mode():
    a = _with_nans((3, 4), seed=3)
    a[0, 0] = 0.5  # one entry in the row that was all NaN
    mask = np.isnan(a)

    def f(x):  # the NaNs placed by a constant mask: finite differences move the others only
        y = ops.where(mask, np.nan, x)
        return (ops.nanquantile(y, [0.2, 0.6], axis=1, keepdims=True),
                ops.nan_to_num(ops.nanmedian(y, axis=0)), ops.nanpercentile(y, 75.0))
    with pytest.warns(RuntimeWarning, match="All-NaN slice encountered"):
        assert np.isnan(np.nanmedian(np.where(mask, np.nan, a), axis=0)).any()  # a column of NaNs
    check_grads(f, (np.where(mask, 0.0, a),), order=2, modes=("fwd", "rev"))


def test_vmap_of_derivatives_equals_one_row_at_a_time():
    a = _with_nans((4, 3, 5), seed=5)
    a[:, 0, 0] = 1.5  # no all-NaN slice: each row's derivative is finite

    def f(x):
        return ops.sum(ops.nanquantile(x, [0.25, 0.5], axis=-1) ** 2)
    batched = dualad.vmap(reverse.grad(f))(a)
    for i in range(a.shape[0]):
        np.testing.assert_allclose(batched[i], reverse.grad(f)(a[i]), rtol=1e-12)


def test_unsupported_method_and_q_out_of_range_are_refused():
    with pytest.raises(NotImplementedError, match="method='nearest'.*'linear'"):
        ops.nanquantile(np.ones((2, 2)), 0.5, axis=0, method="nearest")
    with pytest.raises(ValueError, match=r"q must be in \[0, 1\]"):
        ops.nanquantile(np.ones((2, 2)), 1.5, axis=0)


@pytest.mark.parametrize("axis", [None, 1, (0, 1)], ids=str)
def test_quantile_keeps_the_shape_of_a_two_dimensional_q(axis):
    """``quantile`` returned ``q`` flattened: shape (2,) for q of shape (1, 2)."""
    a = np.random.default_rng(1).standard_normal((3, 4))
    q = np.array([[0.2, 0.9]])
    np.testing.assert_allclose(ops.quantile(a, q, axis=axis), np.quantile(a, q, axis=axis), rtol=1e-13)
    assert ops.quantile(a, q, axis=axis).shape == np.quantile(a, q, axis=axis).shape

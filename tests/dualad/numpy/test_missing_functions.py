"""NumPy functions that were missing or refused without naming the fix (issue 26)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special

import dualad
import dualad.numpy as dnp
import reverse  # noqa: F401  (the reverse mode check_grads checks)
from dualad.testing import check_grads

MASK = np.array([True, False, True, True])


def _putmasked(v):
    out = dnp.zeros(4)
    np.putmask(out, MASK, v)
    return out


def test_putmask_repeats_the_values_by_position_as_numpy_does():
    want = np.zeros(4)
    np.putmask(want, MASK, np.array([1.0, 2.0]))
    out, t = dualad.jvp(_putmasked, (np.array([1.0, 2.0]),), (np.array([1.0, 10.0]),))
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(t, [1.0, 0.0, 1.0, 10.0])
    check_grads(_putmasked, (np.array([1.0, 2.0, 3.0]),))


@pytest.mark.parametrize("stack", [np.vstack, np.row_stack if hasattr(np, "row_stack") else np.vstack,
                                   np.hstack])
def test_stacking_takes_numpy_s_dtype(stack):
    x = np.array([1.0, 2.0])
    out, t = dualad.jvp(lambda x: stack([x, x], dtype=np.float32), (x,), (np.ones(2),))
    want = stack([x, x], dtype=np.float32)
    assert out.dtype == t.dtype == want.dtype == np.float32
    np.testing.assert_array_equal(out, want)


def test_np_vectorize_on_a_value_names_the_fix():
    with pytest.raises(TypeError, match="np.vectorize converts its arguments"):
        dualad.derivative(lambda x: np.vectorize(lambda t: t * t)(x))(2.0)


def test_scipy_logsumexp_on_a_value_names_dualad_s():
    with pytest.raises(TypeError, match=r"scipy\.special\.logsumexp .* dualad\.ops\.logsumexp"):
        dualad.jvp(lambda x: scipy.special.logsumexp(x), (np.ones(3),), (np.ones(3),))

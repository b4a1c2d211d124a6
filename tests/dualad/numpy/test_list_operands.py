"""Python lists, tuples and numbers beside a value that carries a derivative, converted as
NumPy converts them (``asarray``) in the namespace of the other operands (issue 26)."""

from __future__ import annotations

import array_api_strict
import numpy as np
import pytest

import dualad
import reverse
from dualad.testing import check_grads
from reverse import Tensor

X = np.array([1.0, 2.0, 3.0, 4.0])

# Each worked in NumPy and failed under grad and jacfwd ("operands come from different
# array libraries (builtins.list, numpy.ndarray)" or an AttributeError).
NUMPY_CODE = {
    "x * list": lambda x: x * [1.0, 2.0, 3.0, 4.0],
    "list - x": lambda x: [1.0, 2.0, 3.0, 4.0] - x,
    "x + tuple": lambda x: x + (1.0, 2.0, 3.0, 4.0),
    "where": lambda x: np.where(x > 2, x, [0.0] * 4),
    "clip": lambda x: np.clip(x, [0, 0, 0, 0], [2, 2, 5, 5]),
    "maximum": lambda x: np.maximum(x, [2.0] * 4),
    "concatenate": lambda x: np.concatenate([x, [1.0]]),
    "stack": lambda x: np.stack([x, [1.0, 2.0, 3.0, 4.0]]),
    "interp of values": lambda x: np.interp([0.5, 1.5], [0, 1, 2, 3], x),
    "interp at x": lambda x: np.interp(x, [0, 2, 5], [0.0, 1.0, 3.0]),
    "dot": lambda x: np.dot([1.0, 2.0, 3.0, 4.0], x),
    "list @ x": lambda x: [1.0, 2.0, 3.0, 4.0] @ x,
    "power": lambda x: np.power(x, [1, 2, 1, 2]),
    "arctan2": lambda x: np.arctan2([1.0, 1.0, 1.0, 1.0], x),
}


@pytest.mark.parametrize("name", sorted(NUMPY_CODE))
def test_numpy_code_with_list_operands_differentiates(name):
    f = NUMPY_CODE[name]
    out = dualad.jvp(f, (X,), (np.ones(4),))[0]
    want = f(X)
    assert np.shape(out) == np.shape(want) and np.asarray(out).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(out, want, rtol=1e-15)
    check_grads(f, (X + 0.01,))
    np.testing.assert_allclose(dualad.jacfwd(f)(X), np.asarray(reverse.jacrev(f)(X)), rtol=1e-12)
    np.testing.assert_allclose(dualad.vmap(f)(np.stack([X, 2 * X])), np.stack([f(X), f(2 * X)]), rtol=1e-12)
    np.testing.assert_allclose(dualad.compile(f)(X), want, rtol=1e-15)


def test_a_tensor_plus_a_tuple():
    t = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    out = t + (1.0, 2.0)
    out.sum().backward()
    np.testing.assert_array_equal(out.value, [2.0, 4.0])
    np.testing.assert_array_equal(t.grad.value, [1.0, 1.0])


def test_a_list_is_converted_in_the_namespace_of_the_other_operand():
    x = array_api_strict.asarray([1.0, 2.0])
    out, t = dualad.jvp(lambda x: x * [3.0, 4.0], (x,), (array_api_strict.ones(2),))
    assert type(out) is type(x) and type(t) is type(x)
    np.testing.assert_array_equal(np.asarray(t), [3.0, 4.0])

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
@pytest.mark.filterwarnings(  # np.interp at traced points searches them on the host
    r"ignore:dualad\.compile\(<lambda>\) runs eagerly .*numpy\.interp:RuntimeWarning")
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


# A tuple inside an index is an index array, as a list is (HIPS autograd's test_rfftn_subset and
# test_irfftn_subset); each crashed with "'tuple' object has no attribute 'dtype'".
TUPLE_INDICES = {
    "rfftn subset": lambda x: np.abs(np.fft.rfftn(x)[(0, 1, 0), (3, 3, 2)]),
    "irfftn subset": lambda x: np.fft.irfftn(x)[(0, 1, 0), (3, 3, 2)],
    "x[:, (0, 2)]": lambda x: x[(slice(None), (0, 2))],
    "x[(0, 1), :]": lambda x: x[(0, 1), :],
    "tuple of booleans": lambda x: x[(True, False, True, False),],
    "list of tuples": lambda x: x[[(0, 1), (2, 3)]],
    "empty tuple": lambda x: x[:, (), 1:],
}


@pytest.mark.parametrize("name", sorted(TUPLE_INDICES))
def test_a_tuple_inside_an_index_is_an_index_array_in_every_mode(name):
    f = TUPLE_INDICES[name]
    x = np.random.default_rng(0).normal(size=(4, 4, 4)) / 10.0
    want = f(x)  # NumPy's own indexing
    out = dualad.jvp(f, (x,), (np.ones_like(x),))[0]
    assert np.shape(out) == np.shape(want)
    np.testing.assert_allclose(out, want, rtol=1e-14)
    check_grads(lambda x: np.sum(f(x) ** 2), (x,), order=2, modes=("fwd", "rev"))
    np.testing.assert_allclose(dualad.vmap(f)(np.stack([x, 2 * x])), np.stack([want, f(2 * x)]), rtol=1e-14)
    compiled = dualad.compile(f)
    for _ in range(2):  # a trace, then a replay
        np.testing.assert_allclose(compiled(x), want, rtol=1e-14)
    assert compiled.stats["replays"] == 1


def test_assignment_through_a_tuple_inside_an_index():
    def f(x):
        y = x * 1.0
        y[(0, 2), 1:] = 5.0 * x[(1, 1), 1:]
        return y
    x = np.arange(12.0).reshape(3, 4)
    want = x.copy()
    want[(0, 2), 1:] = 5.0 * x[(1, 1), 1:]
    np.testing.assert_array_equal(dualad.jvp(f, (x,), (np.ones_like(x),))[0], want)
    # sum(f(x)): x[1, 1:] counts once and through both written rows (2 * 5), rows 0 and 2 lose cols 1:
    g = np.ones_like(x)
    g[(0, 2), 1:] = 0.0
    g[1, 1:] = 11.0
    np.testing.assert_array_equal(reverse.grad(lambda x: np.sum(f(x)))(x), g)
    np.testing.assert_array_equal(dualad.jacfwd(lambda x: np.sum(f(x)))(x), g)

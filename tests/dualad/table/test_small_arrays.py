"""The short routes for NumPy arrays of a few numbers, which a tape meets at every
step of a Python loop (issue 36): each is counted running where it should, declines
where the general route has work to do, and gives what the general route gives.
"""

import numpy as np
import pytest

import reverse
from dualad import Dual
from dualad._base import shapes
from dualad._primitives import indexing
from dualad._table import entries
from dualad._table import ownership as _inplace
from dualad._table import vjp as _vjp
from dualad._table.vjp import Dropped, cotangent_for, small_product, unbroadcast_scaled


def _general(g, p, x):
    """The general route that ``small_product`` stands in for."""
    return cotangent_for(unbroadcast_scaled(g, p, shapes.shape_of(x)), x)


def _vector(seed, n=5, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(n).astype(dtype)


# -- the product of a cotangent and a local partial ----------------------------------------
@pytest.mark.parametrize("p", [_vector(1), 1.5, 1, -1, 3], ids=["array", "float", "one", "minus one", "int"])
@pytest.mark.parametrize("x", [_vector(2), Dropped(_vector(2))], ids=["input", "dropped"])
def test_the_product_is_the_general_routes(p, x):
    g = _vector(0)
    got = small_product(g, p, x)
    assert got is not None
    want = _general(g, p, x)
    assert type(got) is np.ndarray and got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    if type(p) is int and p == 1:
        assert got is g  # handed on, as scale hands it on: borrowed, never written


@pytest.mark.parametrize("g, p, x", [
    (_vector(0), _vector(1, 1), _vector(2)),  # the partial broadcasts
    (_vector(0, 1), _vector(1), _vector(2)),  # the cotangent broadcasts
    (_vector(0), _vector(1), _vector(2, 1)),  # a sum over the broadcast axis
    (_vector(0), _vector(1), _vector(2, dtype=np.float32)),  # a cast to the input's dtype
    (_vector(0), _vector(1) > 0.0, _vector(2)),  # a mask selects
    (_vector(0), _vector(1).astype(np.complex128), _vector(2)),  # the real part is taken
    (_vector(0), 1.5 + 0.5j, _vector(2)),  # a Python complex
    (Dual(_vector(0), _vector(3)), _vector(1), _vector(2)),  # a value type
    (_vector(0), _vector(1), 2.0),  # a Python number's cotangent
    (_vector(0, _inplace._MIN_SIZE), _vector(1, _inplace._MIN_SIZE), _vector(2, _inplace._MIN_SIZE)),
], ids=["partial broadcasts", "cotangent broadcasts", "sum", "cast", "mask", "complex partial",
        "complex number", "dual", "number input", "large"])
def test_the_product_declines_what_the_general_route_must_do(g, p, x):
    assert small_product(g, p, x) is None


def _counting(monkeypatch):
    """Count the calls of ``small_product`` from the elementwise VJP, and its products."""
    counts = {"calls": 0, "products": 0}
    real = entries.small_product

    def counted(g, p, x):
        out = real(g, p, x)
        counts["calls"] += 1
        counts["products"] += out is not None
        return out
    monkeypatch.setattr(entries, "small_product", counted)
    return counts


def _f(x):
    return np.sum(np.sin(x) * x * 2.0 + x)


def _df(x):
    return (np.cos(x) * x + np.sin(x)) * 2.0 + 1.0


def test_a_reverse_pass_on_small_arrays_takes_the_product(monkeypatch):
    """sin (1 partial), the two products (2 and 1: 2.0 needs none) and the sum's add (2)."""
    counts = _counting(monkeypatch)
    x = _vector(4)
    g = reverse.grad(_f)(x)
    assert counts == {"calls": 6, "products": 6}
    np.testing.assert_allclose(g, _df(x), rtol=1e-14, atol=1e-15)


def test_a_reverse_pass_on_large_arrays_takes_the_general_route(monkeypatch):
    counts = _counting(monkeypatch)
    x = _vector(4, _inplace._MIN_SIZE)
    g = reverse.grad(_f)(x)
    assert counts == {"calls": 6, "products": 0}
    np.testing.assert_allclose(g, _df(x), rtol=1e-14, atol=1e-15)


# -- shapes, dtypes and zeros of NumPy arrays ----------------------------------------------
def _refuse(*args, **kwargs):
    raise AssertionError("the general route ran")


@pytest.mark.parametrize("x", [np.ones((2, 3), np.float32), np.float64(2.0), 2.0, np.ones(0)],
                         ids=["array", "numpy scalar", "float", "empty"])
def test_aval_of_an_array_or_a_float_asks_no_helper(x, monkeypatch):
    want = (shapes.shape_of(x), shapes.dtype_of(shapes.raw(x)))
    if type(x) in (np.ndarray, float):
        monkeypatch.setattr(_vjp, "shape_of", _refuse)
    assert _vjp.aval(x) == want


@pytest.mark.parametrize("shape, dtype", [(None, None), ((4,), None), ((), np.float32), ((2, 0), None)])
def test_zeros_like_an_array_asks_no_namespace(shape, dtype, monkeypatch):
    like = np.ones((3, 2), np.complex64)
    want = shapes.zeros(Dual(like, like), shape, dtype)  # through the namespace
    monkeypatch.setattr(shapes, "namespace_of", _refuse)
    got = shapes.zeros(like, shape, dtype)
    assert type(got) is np.ndarray and got.shape == want.shape and got.dtype == want.dtype
    assert not got.any()


# -- an index of ints and slices ----------------------------------------------------------
BASIC = [0, -1, slice(1, 3), slice(None, None, -2), (1,), (0, slice(None)), (slice(1, None), 2),
         (slice(None), slice(0, 1))]
OTHER = [Ellipsis, None, (Ellipsis, 0), np.int64(1), [0, 2], np.array([1, 0]), (0, None),
         (slice(None), [0, 1])]


@pytest.mark.parametrize("idx", BASIC, ids=repr)
def test_an_index_of_ints_and_slices_skips_normalizing(idx, monkeypatch):
    x = np.arange(12.0).reshape(3, 4)
    want = indexing._normalize_index(idx, x.ndim)
    monkeypatch.setattr(indexing, "_normalize_index", _refuse)
    t = reverse.Tensor(x, requires_grad=True)
    y = t[idx]
    assert y.grad_fn.params["idx"] == want
    np.testing.assert_array_equal(y.value, x[idx])
    assert indexing._ints_and_slices(idx, x.ndim) == want


@pytest.mark.parametrize("idx", OTHER, ids=repr)
def test_any_other_index_is_normalized(idx, monkeypatch):
    x = np.arange(12.0).reshape(3, 4)
    calls = []
    real = indexing._normalize_index
    monkeypatch.setattr(indexing, "_normalize_index", lambda i, n: calls.append(i) or real(i, n))
    assert indexing._ints_and_slices(idx, x.ndim) is None
    y = reverse.Tensor(x, requires_grad=True)[idx]
    assert len(calls) == 1
    np.testing.assert_array_equal(y.value, x[idx])

"""Misuse of the HVP API: every mistake raises, naming what was expected and found."""

from __future__ import annotations

import numpy as np
import pytest

from dualad import ops
from mixed import grad_and_hvp, hessian, hessp, hvp, jac

MODES = ["forward-over-reverse", "reverse-over-reverse"]
X = np.array([0.5, -1.0, 2.0])


def f(x):
    return ops.sum(x ** 3) + ops.sum(ops.sin(x))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("v, pattern", [
    (np.ones(2), r"v: tangent must have the primal's shape \(3,\).*got shape \(2,\)"),
    (np.ones((3, 1)), r"shape \(3, 1\)"),
    (np.ones(()), r"shape \(\)"),
])
def test_direction_of_the_wrong_shape(mode, v, pattern):
    with pytest.raises(ValueError, match=pattern):
        hvp(f, X, v, mode=mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("v", [np.ones(3, np.float32), np.ones(3, np.int64), np.ones(3, bool)])
def test_direction_of_the_wrong_dtype(mode, v):
    with pytest.raises(TypeError, match=f"v: tangent dtype {v.dtype} does not match primal dtype float64"):
        hvp(f, X, v, mode=mode)


@pytest.mark.parametrize("mode", MODES)
def test_integer_point_is_rejected(mode):
    with pytest.raises(TypeError, match="floating point"):
        hvp(f, np.array([1, 2, 3]), np.array([1, 0, 0]), mode=mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("x, v", [
    ((X,), X),
    ({"a": X}, {"b": X}),
    ({"a": X, "b": X}, {"a": X}),
    ((X, X), [X, X]),
    ((X, (X,)), (X, X)),
])
def test_direction_of_the_wrong_structure(mode, x, v):
    def g(tree):
        leaves = list(tree.values()) if isinstance(tree, dict) else list(tree)
        return sum(ops.sum(leaf) if not isinstance(leaf, tuple) else ops.sum(leaf[0]) for leaf in leaves)
    with pytest.raises(ValueError, match="v must have the structure of x"):
        hvp(g, x, v, mode=mode)


def test_pytree_leaf_errors_name_the_leaf():
    x = {"w": X, "b": np.zeros(2)}
    v = {"w": X, "b": np.zeros(3)}
    with pytest.raises(ValueError, match=r"v\['b'\]"):
        hvp(lambda p: ops.sum(p["w"] ** 2) + ops.sum(p["b"] ** 2), x, v)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("out", [
    lambda x: x ** 2,
    lambda x: ops.reshape(ops.sum(x ** 2), (1,)),
    lambda x: (ops.sum(x), ops.sum(x)),
], ids=["vector", "shape (1,)", "tuple"])
def test_f_must_return_a_scalar(mode, out):
    with pytest.raises(TypeError, match="scalar"):
        hvp(out, X, X, mode=mode)


def test_non_scalar_f_in_the_scipy_helpers_and_dense_hessian():
    with pytest.raises(TypeError, match="scalar"):
        jac(lambda x: x ** 2)(X)
    with pytest.raises(TypeError, match="scalar"):
        hessp(lambda x: x ** 2)(X, X)
    with pytest.raises(TypeError, match="scalar"):
        hessian(lambda x: x ** 2)(X)


def test_unknown_mode():
    with pytest.raises(ValueError, match=r"mode must be one of .*got 'forward'"):
        grad_and_hvp(f, X, X, mode="forward")


def test_reverse_over_reverse_takes_one_direction():
    with pytest.raises(ValueError, match="one direction at a time"):
        hvp(f, X, np.eye(3), mode="reverse-over-reverse")


def test_errors_raised_by_f_propagate_unchanged():
    class Boom(RuntimeError):
        pass

    def bad(x):
        raise Boom("from f")
    with pytest.raises(Boom):
        hvp(bad, X, X)

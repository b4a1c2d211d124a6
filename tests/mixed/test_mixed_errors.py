"""Misuse of the HVP API: every mistake raises, naming what was expected and found."""

from __future__ import annotations

import numpy as np
import pytest

from dualad import ops
from mixed import grad_and_hvp, hessian, hvp, newton_cg, trust_region
from mixed.scipy import hessp, jac

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
    with pytest.raises(TypeError, match="v must have the structure of x"):
        hvp(g, x, v, mode=mode)


def test_pytree_leaf_errors_name_the_leaf():
    x = {"w": X, "b": np.zeros(2)}
    v = {"w": X, "b": np.zeros(3)}
    with pytest.raises(ValueError, match=r"v\['b'\]"):
        hvp(lambda p: ops.sum(p["w"] ** 2) + ops.sum(p["b"] ** 2), x, v)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("out", [
    lambda x: x ** 2,
    lambda x: (ops.sum(x), ops.sum(x)),
], ids=["vector", "tuple"])
def test_f_must_return_a_scalar(mode, out):
    with pytest.raises(TypeError, match="scalar"):
        hvp(out, X, X, mode=mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(1,), (1, 1)])
def test_an_output_of_one_element_is_a_scalar(mode, shape):
    # Refused before, though reverse.grad, PyTorch's backward() and HIPS autograd take any
    # one-element output. f = sum(x^3): H = diag(6 x), so H v = 6 x * v.
    g = lambda x: ops.reshape(ops.sum(x ** 3), shape)  # noqa: E731
    v = np.array([1.0, 2.0, -1.0])
    np.testing.assert_allclose(hvp(g, X, v, mode=mode), 6 * X * v)
    np.testing.assert_allclose(hessian(g)(X), np.diag(6 * X))


def test_a_solver_still_wants_an_objective_of_shape_empty():
    # A solver reports f's value as a number: a (1,) objective is named, not read as one.
    with pytest.raises(TypeError, match=r"^newton_cg: f must return a scalar \(a float or a 0-d array\), "
                                        r"got an array of shape \(1,\)"):
        newton_cg(lambda x: ops.reshape(ops.sum(x ** 2), (1,)), X)


@pytest.mark.parametrize("who, make", [
    ("hvp", lambda g: hvp(g, X, X)),
    ("grad_and_hvp", lambda g: grad_and_hvp(g, X, X)),
    ("hessian", lambda g: hessian(g)),
], ids=["hvp", "grad_and_hvp", "hessian"])
def test_a_function_that_is_not_callable_is_named(who, make):
    # hessian(3.0) was accepted and failed only when called, with Python's own message.
    with pytest.raises(TypeError, match=rf"^{who}: f must be callable, got float 3.0$"):
        make(3.0)


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


# -- misuse that crashed inside the tape (AttributeError) or passed silently ---------------------------
@pytest.mark.parametrize("mode", MODES)
def test_none_as_the_point_or_the_direction(mode):
    with pytest.raises(TypeError, match=r"^x must be a float or a floating array, got None"):
        hvp(f, None, X, mode=mode)
    with pytest.raises(TypeError, match=r"^v: tangent must be a float or an array of the primal's shape "
                                        r"\(3,\), got None"):
        hvp(f, X, None, mode=mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("x, v", [(np.array([1, 2, 3]), X), (np.array([1, 2, 3]), np.array([1, 0, 0])),
                                  (1, 1.0)], ids=["int array, float v", "int array, int v", "int"])
def test_an_integer_point_is_blamed_on_x_not_v(mode, x, v):
    # The error named v ("v: primal must be floating point"), which is not the argument at fault.
    with pytest.raises(TypeError, match=r"^x must be (a float or a floating array, got int|floating point)"):
        hvp(lambda z: ops.sum(z ** 3), x, v, mode=mode)


@pytest.mark.parametrize("out, got", [(None, "None"), ([1.0], "a list"), ("abc", "a str")],
                         ids=["None", "list", "str"])
@pytest.mark.parametrize("who, call", [
    ("hvp", lambda g: hvp(g, X, X)),
    ("hvp", lambda g: hvp(g, X, X, mode="reverse-over-reverse")),
    ("hessian", lambda g: hessian(g)(X)),
    ("trust_region", lambda g: trust_region(g, X)),
    ("newton_cg", lambda g: newton_cg(g, X)),
], ids=["hvp", "hvp-rr", "hessian", "trust_region", "newton_cg"])
def test_a_function_returning_none_a_list_or_a_string(who, call, out, got):
    with pytest.raises(TypeError, match=rf"^{who}: f must return a scalar .*got {got}"):
        call(lambda x: out)


@pytest.mark.parametrize("chunk, error", [(1.5, TypeError), (0, ValueError)])
def test_dense_hessian_chunk_size_must_be_a_positive_int(chunk, error):
    with pytest.raises(error, match=rf"chunk_size must be an int >= 1, got .*{chunk}"):
        hessian(f, chunk_size=chunk)


def quadratic(x):
    return ops.sum((x - 1.0) ** 2)


@pytest.mark.parametrize("solver", [newton_cg, trust_region])
@pytest.mark.parametrize("kw, error, pattern", [
    ({"maxiter": -1}, ValueError, r"maxiter must be an int >= 0, got -1"),
    ({"maxiter": 1.5}, TypeError, r"maxiter must be an int >= 0, got float 1.5"),
    ({"tol": float("nan")}, ValueError, r"tol must be >= 0.0, got nan"),
    ({"tol": -1.0}, ValueError, r"tol must be >= 0.0, got -1.0"),
    ({"cg_maxiter": 0}, ValueError, r"cg_maxiter must be an int >= 1, got 0"),
    ({"callback": "print"}, TypeError, r"callback must be a function of the OptimizeResult so far, or "
                                       r"None, got a str \('print'\)"),
], ids=["maxiter<0", "maxiter=1.5", "tol=nan", "tol<0", "cg_maxiter=0", "callback=str"])
def test_solver_settings_out_of_range(solver, kw, error, pattern):
    # maxiter=-1 returned nit=-1, tol=nan ran to maxiter, trust_region divided by zero.
    with pytest.raises(error, match=pattern):
        solver(quadratic, X, **kw)


@pytest.mark.parametrize("c1", [0.0, 1.0, 1.5, float("nan")])
def test_armijo_constant_outside_the_open_unit_interval(c1):
    # c1 = 1.5 failed every line search; c1 = 0 accepted any step that did not increase f.
    with pytest.raises(ValueError, match=rf"c1 must be > 0.0 and < 1.0, got {c1}"):
        newton_cg(quadratic, X, c1=c1)


def test_a_dual_that_escapes_hvp_raises_when_used():
    """hvp's forward level was a permanent one, so a Dual kept inside it (the value
    of a Tensor there) was still live afterwards and its stale tangent could mix
    into a later result."""
    import dualad
    kept = []

    def f(x):
        kept.append((x * 2.0).value)
        return ops.sum(x ** 3)

    np.testing.assert_allclose(hvp(f, np.ones(2), np.ones(2)), 6.0)
    with pytest.raises(dualad.EscapedValueError, match="forward-mode.*escaped"):
        np.sin(kept[0])

"""Higher derivatives: grad of grad, and the tape nested with forward mode."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dualad
import reverse
from dualad import ops
from reverse import Tensor, gradients

xs = st.floats(-3.0, 3.0, allow_nan=False)


def f(x):
    return ops.sin(x) * x ** 3


def df(x):
    return math.cos(x) * x ** 3 + 3 * math.sin(x) * x ** 2


def d2f(x):
    return -math.sin(x) * x ** 3 + 6 * math.cos(x) * x ** 2 + 6 * math.sin(x) * x


def d3f(x):
    return (-math.cos(x) * x ** 3 - 9 * math.sin(x) * x ** 2 + 18 * math.cos(x) * x
            + 6 * math.sin(x))


@given(xs)
def test_grad_of_grad_matches_analytic(x):
    assert reverse.grad(f)(x) == pytest.approx(df(x), rel=1e-12, abs=1e-12)
    assert reverse.grad(reverse.grad(f))(x) == pytest.approx(d2f(x), rel=1e-10, abs=1e-10)


@given(xs)
def test_third_derivative_by_three_nested_grads(x):
    assert reverse.grad(reverse.grad(reverse.grad(f)))(x) == pytest.approx(d3f(x), rel=1e-9, abs=1e-9)


@given(xs)
def test_forward_over_reverse(x):
    out, tangent = dualad.jvp(reverse.grad(f), (x,), (1.0,))
    assert out == pytest.approx(df(x), rel=1e-12, abs=1e-12)
    assert tangent == pytest.approx(d2f(x), rel=1e-10, abs=1e-10)


@given(xs)
def test_reverse_over_forward(x):
    g = reverse.grad(lambda y: dualad.jvp(f, (y,), (1.0,))[1])(x)
    assert g == pytest.approx(d2f(x), rel=1e-10, abs=1e-10)


def g2(x):
    """sin(x0 x1) + x0^3 x1: a function with a full Hessian."""
    return ops.sin(x[0] * x[1]) + x[0] ** 3 * x[1]


def hess_g2(x):
    a, b = x
    s, c = math.sin(a * b), math.cos(a * b)
    return np.array([[-b * b * s + 6 * a * b, c - a * b * s + 3 * a * a],
                     [c - a * b * s + 3 * a * a, -a * a * s]])


@given(st.tuples(xs, xs), st.tuples(xs, xs))
def test_hessian_vector_products_in_both_nestings(x, v):
    x, v = np.array(x), np.array(v)
    expected = hess_g2(x) @ v
    _, fwd_rev = dualad.jvp(reverse.grad(g2), (x,), (v,))
    rev_fwd = reverse.grad(lambda y: dualad.jvp(g2, (y,), (v,))[1])(x)
    np.testing.assert_allclose(fwd_rev, expected, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(rev_fwd, expected, rtol=1e-10, atol=1e-10)


def test_jacrev_of_grad_is_the_hessian():
    x = np.array([0.3, -1.2])
    np.testing.assert_allclose(reverse.jacrev(reverse.grad(g2))(x), hess_g2(x), rtol=1e-12)
    np.testing.assert_allclose(dualad.hessian(g2)(x), hess_g2(x), rtol=1e-12)


def test_create_graph_with_backward():
    x = Tensor(1.3, requires_grad=True)
    y = f(x)
    with pytest.warns(UserWarning, match="reference cycle"):  # as PyTorch warns
        y.backward(create_graph=True)
    first = x.grad
    assert isinstance(first, Tensor) and first.requires_grad
    assert first.item() == pytest.approx(df(1.3))
    x.grad = None
    first.backward()
    assert x.grad == pytest.approx(d2f(1.3))


def test_create_graph_with_gradients():
    x = Tensor(np.array([0.5, -0.7]), requires_grad=True)
    (g,) = gradients(g2(x), [x], create_graph=True)
    (h0,) = gradients((g * np.array([1.0, 0.0])).sum(), [x], retain_graph=True)
    (h1,) = gradients((g * np.array([0.0, 1.0])).sum(), [x])
    np.testing.assert_allclose(np.stack([h0, h1]), hess_g2(np.array([0.5, -0.7])), rtol=1e-12)


def test_without_create_graph_the_gradient_is_a_constant():
    x = Tensor(2.0, requires_grad=True)
    (g,) = gradients(x * x * x, [x])
    assert not isinstance(g, Tensor) or not g.requires_grad
    assert g == 12.0

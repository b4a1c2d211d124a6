"""A VJP through a root whose tangent solve factorizes ``dF/dx`` (``factorizes_up_to``),
at plain arrays with few parameters, takes ``dF/dtheta`` from the forward-mode pass that
builds ``dF/dx`` (``JointJacobian``) instead of recording ``F`` again: against the
implicit function theorem written by hand, against the pullback it replaces, with
parameters of several shapes, with a cotangent that carries a derivative, and where the
parameters outnumber the unknowns (the pullback then)."""

from __future__ import annotations

import numpy as np
import pytest

import dualad
import dualad._implicit.operators as operators
import reverse
from dualad import custom_root, ops
from dualad.scipy._tangent import tangent_solver

A = np.array([[4.0, 1.0, 0.5], [0.3, 3.5, 1.0], [0.0, 0.7, 5.0]])


def newton(f, x):
    for _ in range(40):
        x = x - np.linalg.solve(dualad.jacfwd(f)(x), f(x))
    return x


def x_of(m, c, s):
    """The root of ``x^3 + (A + m) x - s c``: a matrix, a vector and a 0-d parameter."""
    return custom_root(lambda x: x ** 3 + (A + m) @ x - s * c, np.zeros(3), newton,
                       tangent_solver("test", symmetric=False))


def by_hand(m, c, s, w):
    """``w^T dx*/d(m, c, s)``: ``lam = (dF/dx)^-T w``, then ``-lam^T dF/dtheta``."""
    x = x_of(m, c, s)
    lam = np.linalg.solve((np.diag(3 * x ** 2) + A + m).T, w)
    return -np.outer(lam, x), lam * s, lam @ c


M = np.array([[0.1, 0.0, -0.2], [0.0, 0.3, 0.1], [0.2, 0.0, 0.0]])
C, S, W = np.array([0.7, -1.2, 0.4]), np.array(1.5), np.array([1.0, 2.0, -1.0])


@pytest.fixture
def made(monkeypatch):
    """The joint passes made, in order."""
    passes = []
    monkeypatch.setattr(operators, "JointJacobian",
                        lambda *a, cls=operators.JointJacobian: passes.append(cls(*a)) or passes[-1])
    return passes


@pytest.mark.parametrize("joint", [True, False], ids=["joint pass", "pullback"])
def test_the_vjp_equals_the_implicit_function_theorem(joint, made, monkeypatch):
    if not joint:
        monkeypatch.setattr(operators, "JOINT_UP_TO", 0)
    want = by_hand(M, C, S, W)
    # 3 parameters (c), then 1 (s, 0-d), for 3 unknowns: the joint pass where allowed
    np.testing.assert_allclose(reverse.grad(lambda c: x_of(M, c, S) @ W)(C), want[1], rtol=1e-12)
    g_s = reverse.grad(lambda s: x_of(M, C, s) @ W)(S)
    np.testing.assert_allclose(g_s, want[2], rtol=1e-12)
    assert np.shape(g_s) == ()
    assert len(made) == (2 if joint else 0)
    # 13 parameters for 3 unknowns: the pullback either way
    grads = reverse.grad(lambda m, c, s: x_of(m, c, s) @ W, argnums=(0, 1, 2))(M, C, S)
    for g, w in zip(grads, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    assert len(made) == (2 if joint else 0)


def test_a_cotangent_that_carries_a_tangent_moves_the_gradient_linearly(made):
    def pulled(w):
        return reverse.vjp(lambda c: x_of(M, c, S), C)[1](w)[0]
    direction = np.array([0.5, -1.0, 2.0])
    value, tangent = dualad.jvp(pulled, (W,), (direction,))
    np.testing.assert_allclose(value, by_hand(M, C, S, W)[1], rtol=1e-12)
    np.testing.assert_allclose(tangent, by_hand(M, C, S, direction)[1], rtol=1e-12)
    assert len(made) == 1  # the parameters plain, the cotangent a Dual: the joint pass


def test_second_derivatives_through_the_joint_pass_equal_finite_differences():
    def loss(c):
        return x_of(M, c, S) @ W
    h = 1e-5
    want = np.stack([(reverse.grad(loss)(C + h * e) - reverse.grad(loss)(C - h * e)) / (2 * h)
                     for e in np.eye(3)])
    np.testing.assert_allclose(dualad.jacfwd(reverse.grad(loss))(C), want, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(reverse.jacrev(reverse.grad(loss))(C), want, rtol=1e-7, atol=1e-9)


def test_a_solver_that_factorizes_the_matrix_in_place_spoils_nothing_kept():
    """Each ``g.matrix()`` is the caller's own copy: a user's solver may overwrite it."""
    import scipy.linalg

    def in_place(g, y):
        lu = scipy.linalg.lu_factor(g.matrix(), overwrite_a=True)
        return scipy.linalg.lu_solve(lu, y, trans=1 if g.transposed else 0)
    in_place.factorizes_up_to = 10

    def x_of_c(c):
        return custom_root(lambda x: x ** 3 + (A + M) @ x - S * c, np.zeros(3), newton, in_place)
    np.testing.assert_allclose(reverse.jacrev(x_of_c)(C), dualad.jacfwd(x_of_c)(C), rtol=1e-12)


def test_parameters_without_forward_mode_take_the_pullback(made):
    """A ``reverse.Function`` with a backward only, applied to the parameters: the joint
    pass (forward mode in them) cannot run, and the VJP records ``F`` instead."""
    class Square(reverse.Function):
        @staticmethod
        def forward(ctx, c):
            ctx.save_for_backward(c)
            return c ** 2

        @staticmethod
        def backward(ctx, g):
            (c,) = ctx.saved_tensors
            return 2.0 * c * g

    def loss(c):
        return custom_root(lambda x: x ** 3 + A @ x - Square.apply(c), np.zeros(3), newton,
                           tangent_solver("test", symmetric=False)) @ W
    x = custom_root(lambda x: x ** 3 + A @ x - C ** 2, np.zeros(3), newton,
                    tangent_solver("test", symmetric=False))
    lam = np.linalg.solve((np.diag(3 * x ** 2) + A).T, W)
    np.testing.assert_allclose(reverse.grad(loss)(C), lam * 2 * C, rtol=1e-12)
    assert made == []


@pytest.mark.parametrize("k", [1, 3], ids=["joint pass", "matrix alone"])
def test_a_residual_of_another_shape_than_the_unknowns_is_refused_by_name(k):
    def x_of(p):
        return custom_root(lambda x: ops.concatenate([x, p[:k]]), np.zeros(2),
                           lambda f, x: np.array([1.0, 2.0]), tangent_solver("test", symmetric=False))
    with pytest.raises(ValueError, match=r"residual must return an array of the unknowns' "
                                         r"shape \(2,\), got shape \(" + str(2 + k) + r",\)"):
        reverse.grad(lambda p: x_of(p).sum())(np.ones(k))
    with pytest.raises(ValueError, match="residual must return an array of the unknowns' shape"):
        dualad.jacfwd(x_of)(np.ones(k))

"""A custom rule given only as a JVP serves reverse mode, its VJP derived by
transposing the JVP as JAX derives a ``custom_jvp``'s (issue 23 §3): through
``dualad.extend.custom`` without ``vjp``, and a ``reverse.Function`` with
``jvp`` and no ``backward``. Checked against JAX's numbers (jax_golden.json,
from make_jax_golden.py), finite differences and forward mode."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
from _support import jax_cases as c

import dualad
import mixed
import reverse
from dualad.extend import bind, custom
from dualad.testing import check_grads

GOLDEN = json.loads((pathlib.Path(__file__).parent / "jax_golden.json").read_text())

SOFTPLUS = custom("test_softplus_jvp_only", lambda xp, x: c.softplus(xp, x), register=False,
                  jvp=lambda primals, tangents, ans: c.softplus_jvp(np, primals, tangents))
POLAR = custom("test_polar_jvp_only", lambda xp, r, theta: c.polar(xp, r, theta), register=False,
               multiple_results=True,
               jvp=lambda primals, tangents, ans: c.polar_jvp(
                   np, primals, [np.zeros_like(p) if t is None else t for p, t in zip(primals, tangents)]))


def softplus_entry(x):
    return bind(SOFTPLUS, x)


def polar_entry(r, theta):
    return bind(POLAR, r, theta)


class SoftplusFunction(reverse.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return c.softplus(np, x)

    @staticmethod
    def jvp(ctx, t):
        return c.softplus_jvp(np, ctx.saved_tensors, (t,))


class PolarFunction(reverse.Function):
    @staticmethod
    def forward(ctx, r, theta):
        ctx.save_for_backward(r, theta)
        return c.polar(np, r, theta)

    @staticmethod
    def jvp(ctx, dr, dtheta):
        return c.polar_jvp(np, ctx.saved_tensors, (dr, dtheta))


SOFTPLUSES = {"entry": softplus_entry, "Function": SoftplusFunction.apply}
POLARS = {"entry": polar_entry, "Function": PolarFunction.apply}


@pytest.mark.parametrize("kind", list(SOFTPLUSES))
def test_softplus_gradient_equals_jax_where_the_naive_one_is_nan(kind):
    softplus = SOFTPLUSES[kind]
    x = np.array(c.SOFTPLUS_POINT)
    got = reverse.grad(lambda x: np.sum(softplus(x)))(x)
    np.testing.assert_allclose(got, GOLDEN["softplus_custom_jvp_grad"], rtol=1e-15)
    with np.errstate(over="ignore", invalid="ignore"):
        assert np.isnan(reverse.grad(lambda x: np.sum(np.log(1.0 + np.exp(x))))(x)[-1])


@pytest.mark.parametrize("kind", list(POLARS))
def test_two_inputs_two_outputs_equal_jax(kind):
    polar = POLARS[kind]
    r, theta = (np.array(v) for v in c.POLAR_POINT)
    got = reverse.grad(lambda r, t: c.polar_loss(np, polar, r, t), argnums=(0, 1))(r, theta)
    for block, want in zip(got, GOLDEN["polar_custom_jvp_grad"]):
        np.testing.assert_allclose(block, want, rtol=1e-13)
    jac = reverse.jacrev(polar, argnums=(0, 1))(r, theta)  # the walk batched under vmap
    for row, want_row in zip(jac, GOLDEN["polar_custom_jvp_jacrev"]):
        for block, want in zip(row, want_row):
            np.testing.assert_allclose(block, want, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("kind", list(POLARS))
def test_gradients_match_finite_differences_and_forward_mode(kind):
    polar, softplus = POLARS[kind], SOFTPLUSES[kind]
    r, theta = (np.array(v) for v in c.POLAR_POINT)
    check_grads(lambda r, t: c.polar_loss(np, polar, r, t), (r, theta), order=2, modes=("fwd", "rev"))
    check_grads(polar, (r, theta), order=2, modes=("fwd", "rev"))
    check_grads(softplus, (np.array([-1.0, 0.5, 3.0]),), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("kind", list(POLARS))
def test_second_order_through_the_derived_vjp(kind):
    """The derived VJP is written with differentiable operations, so it is
    differentiated again: forward over reverse, and reverse over reverse."""
    polar = POLARS[kind]

    def loss(r):
        return c.polar_loss(np, polar, r, np.array(c.POLAR_POINT[1]))

    r, v = np.array(c.POLAR_POINT[0]), np.array([1.0, -2.0, 0.5])
    want = dualad.hessian(loss)(r)
    np.testing.assert_allclose(mixed.hvp(loss, r, v), want @ v, rtol=1e-12)
    np.testing.assert_allclose(reverse.jacrev(reverse.grad(loss))(r), want, rtol=1e-12)


def test_only_the_needed_inputs_are_transposed():
    r, theta = (np.array(v) for v in c.POLAR_POINT)
    g = reverse.grad(lambda r: c.polar_loss(np, polar_entry, r, theta))(r)
    np.testing.assert_allclose(g, GOLDEN["polar_custom_jvp_grad"][0], rtol=1e-13)


@pytest.mark.parametrize("kwargs, got", [({"residual": max}, "saves='all' and residual=<built-in"),
                                         ({"saves": "inputs"}, "saves='inputs' and residual=None")])
def test_what_the_derived_vjp_cannot_read_is_refused(kwargs, got):
    with pytest.raises(ValueError, match=rf"custom 'nope': without a vjp, .* needs saves='all' and no "
                                         rf"residual; got {got}"):
        custom("nope", lambda xp, x: x, jvp=lambda p, t, a: t[0], register=False, **kwargs)


def test_a_function_with_neither_rule_still_names_backward():
    class Bare(reverse.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

    with pytest.raises(NotImplementedError, match="define @staticmethod backward"):
        reverse.grad(lambda x: Bare.apply(x).sum())(np.ones(2))

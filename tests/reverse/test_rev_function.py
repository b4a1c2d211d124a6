"""Custom primitives (``reverse.Function``) on the tape, in forward mode, and nested."""

import gc
import weakref

import numpy as np
import pytest
from _support.functions import Cube
from hypothesis import given
from hypothesis import strategies as st

import dualad
import reverse
from dualad import HyperDual
from dualad.extend import REGISTRY
from dualad.testing import check_grads
from reverse import Function, Tensor, gradients, no_grad


class Exp(Function):
    """exp(x), with its output saved (as PyTorch's tutorial does)."""

    @staticmethod
    def forward(ctx, x):
        y = np.exp(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y

    @staticmethod
    def jvp(ctx, t):
        (y,) = ctx.saved_tensors
        return t * y


class MulAdd(Function):
    """x * y + c, for arrays x, y and a constant c (not differentiated)."""

    @staticmethod
    def forward(ctx, x, y, c):
        ctx.save_for_backward(x, y)
        ctx.needs = ctx.needs_input_grad
        return x * y + c

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return (g * y if ctx.needs_input_grad[0] else None,
                g * x if ctx.needs_input_grad[1] else None, None)

    @staticmethod
    def jvp(ctx, tx, ty, tc):
        x, y = ctx.saved_tensors
        ctx.constant_tangent = tc
        return tx * y + x * ty


class SinCos(Function):
    """Two outputs."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.sin(x), np.cos(x)

    @staticmethod
    def backward(ctx, gs, gc_):
        (x,) = ctx.saved_tensors
        return gs * np.cos(x) - gc_ * np.sin(x)

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return t * np.cos(x), -t * np.sin(x)


class NoJvp(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, g):
        return 2.0 * g


X = np.array([0.3, -1.1, 2.0])


# -- the tape -----------------------------------------------------------------------------
def test_tensor_backward():
    x = Tensor(X, requires_grad=True)
    y = Cube.apply(x)
    assert isinstance(y, Tensor) and y.requires_grad
    assert y.grad_fn.prim.name == "Cube"
    y.sum().backward()
    np.testing.assert_allclose(x.grad, 3.0 * X ** 2)


def test_functional_grad_and_output_saved():
    np.testing.assert_allclose(reverse.grad(lambda v: Exp.apply(v).sum())(X), np.exp(X))


def test_forward_gets_raw_values_and_backward_raw_cotangents():
    seen = {}

    class Probe(Function):
        @staticmethod
        def forward(ctx, x):
            seen["forward"] = type(x)
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            seen["backward"] = type(g)
            return g

        @staticmethod
        def jvp(ctx, t):
            seen["jvp"] = type(t)
            return t

    x = Tensor(X, requires_grad=True)
    Probe.apply(x).sum().backward()
    assert seen == {"forward": np.ndarray, "backward": np.ndarray}
    dualad.jvp(Probe.apply, (X,), (np.ones(3),))
    assert seen["forward"] is np.ndarray and seen["jvp"] is np.ndarray


def test_constants_and_needs_input_grad():
    x = Tensor(X, requires_grad=True)
    y = Tensor(X + 1.0)  # does not require grad
    out = MulAdd.apply(x, y, 2)
    np.testing.assert_allclose(out.value, X * (X + 1.0) + 2)
    out.sum().backward()
    np.testing.assert_allclose(x.grad, X + 1.0)
    assert y.grad is None


def test_needs_input_grad_is_recorded_per_argument():
    ctxs = []

    class Spy(MulAdd):
        @staticmethod
        def forward(ctx, x, y, c):
            ctxs.append(ctx.needs_input_grad)
            ctx.save_for_backward(x, y)
            return x * y

    Spy.apply(Tensor(X, requires_grad=True), X, 1.0)
    Spy.apply(X, dualad.Dual(X, np.ones(3)), "const")
    with no_grad():
        Spy.apply(Tensor(X, requires_grad=True), X, None)
    assert ctxs == [(True, False, False), (False, True, False), (False, False, False)]


def test_jvp_gets_none_for_a_constant_and_zeros_for_an_array_without_tangent():
    ctxs = []

    class Keep(MulAdd):
        @staticmethod
        def jvp(ctx, tx, ty, tc):
            ctxs.append((tx, ty, tc))
            return MulAdd.jvp(ctx, tx, ty, tc)

    _, t = dualad.jvp(lambda v: Keep.apply(v, X, 2), (X,), (np.ones(3),))
    np.testing.assert_allclose(t, X)
    (tx, ty, tc), = ctxs
    assert tc is None
    np.testing.assert_array_equal(ty, np.zeros(3))


def test_multiple_outputs():
    x = Tensor(X, requires_grad=True)
    s, c = SinCos.apply(x)
    (s * 2.0 + c * c).sum().backward()
    np.testing.assert_allclose(x.grad, 2.0 * np.cos(X) - 2.0 * np.cos(X) * np.sin(X))


def test_multiple_outputs_only_one_used():
    x = Tensor(X, requires_grad=True)
    s, _ = SinCos.apply(x)
    s.sum().backward()
    np.testing.assert_allclose(x.grad, np.cos(X))


def test_multiple_outputs_of_different_shapes_backward_from_the_scalar():
    class SumAndDouble(Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum(), x * 2.0

        @staticmethod
        def backward(ctx, g_sum, g_double):
            return g_sum + 2.0 * g_double

    x = Tensor(X, requires_grad=True)
    total, _ = SumAndDouble.apply(x)
    total.backward()
    np.testing.assert_allclose(x.grad, np.ones(3))


def test_no_grad_records_nothing():
    x = Tensor(X, requires_grad=True)
    with no_grad():
        y = Cube.apply(x)
    assert not y.requires_grad and y.grad_fn is None


def test_plain_arrays_and_floats_give_plain_results():
    np.testing.assert_allclose(Cube.apply(X), X ** 3)
    assert Cube.apply(2.0) == 8.0


def test_saved_values_are_freed_with_the_graph():
    x = Tensor(X, requires_grad=True)
    h = x * 1.0
    ref = weakref.ref(h.value)
    y = Cube.apply(h).sum()
    del h
    gc.collect()
    assert ref() is not None
    y.backward()
    gc.collect()
    assert ref() is None, "the input saved by Cube must be freed by backward"


def test_saved_output_modified_in_place_is_detected():
    x = Tensor(X, requires_grad=True)
    y = Exp.apply(x)
    with no_grad():
        y += 1.0
    with pytest.raises(RuntimeError, match="modified in place"):
        y.sum().backward()


def test_float32_is_preserved_and_gradients_cast():
    class Upcasting(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            return np.asarray(g, dtype=np.float64) * 2.0

    x = Tensor(X.astype(np.float32), requires_grad=True)
    y = Upcasting.apply(x)
    assert y.dtype == np.float32
    y.sum().backward()
    assert x.grad.dtype == np.float32


# -- forward mode ------------------------------------------------------------------------------
def test_dual_through_jvp():
    out, t = dualad.jvp(Cube.apply, (X,), (np.ones(3),))
    np.testing.assert_allclose(out, X ** 3)
    np.testing.assert_allclose(t, 3.0 * X ** 2)
    assert dualad.derivative(Exp.apply)(0.5) == pytest.approx(np.exp(0.5))


def test_jacfwd_in_chunks():
    jac = dualad.jacfwd(lambda v: Cube.apply(v) * 2.0, chunk_size=2)(X)
    np.testing.assert_allclose(jac, np.diag(6.0 * X ** 2))


def test_multiple_outputs_forward_mode():
    (s, c), (ts, tc) = dualad.jvp(SinCos.apply, (X,), (np.ones(3),))
    np.testing.assert_allclose(ts, np.cos(X))
    np.testing.assert_allclose(tc, -np.sin(X))


def test_missing_jvp_names_the_class():
    with pytest.raises(NotImplementedError, match=r"NoJvp has no jvp.*@staticmethod jvp\(ctx, \*tangents\)"):
        dualad.derivative(NoJvp.apply)(1.0)
    assert reverse.grad(NoJvp.apply)(1.0) == 2.0  # reverse mode does not need it


def test_hyperdual_gives_exact_second_derivatives():
    h = Cube.apply(HyperDual(1.5, 1.0, 1.0, 0.0))
    assert h.primal == pytest.approx(1.5 ** 3)
    assert h.eps1 == pytest.approx(3 * 1.5 ** 2)
    assert h.eps1eps2 == pytest.approx(6 * 1.5)


# -- nested and higher order -------------------------------------------------------------------
@given(st.floats(-2.0, 2.0))
def test_second_derivatives_in_every_nesting(x):
    d2 = 6.0 * x
    assert reverse.grad(reverse.grad(Cube.apply))(x) == pytest.approx(d2, abs=1e-12)
    assert dualad.derivative(dualad.derivative(Cube.apply))(x) == pytest.approx(d2, abs=1e-12)
    assert dualad.jvp(reverse.grad(Cube.apply), (x,), (1.0,))[1] == pytest.approx(d2, abs=1e-12)
    rev_fwd = reverse.grad(lambda v: dualad.jvp(Cube.apply, (v,), (1.0,))[1])(x)
    assert rev_fwd == pytest.approx(d2, abs=1e-12)
    assert reverse.grad(reverse.grad(Exp.apply))(x) == pytest.approx(np.exp(x))


def test_create_graph_through_a_function():
    x = Tensor(X, requires_grad=True)
    (g,) = gradients(Cube.apply(x).sum(), [x], create_graph=True)
    assert isinstance(g, Tensor) and g.requires_grad
    g.sum().backward()
    np.testing.assert_allclose(x.grad, 6.0 * X)


def test_hessian_of_a_function():
    f = lambda v: (MulAdd.apply(v, v, 1) * Cube.apply(v)).sum()  # sum(x^5 + x^3)
    np.testing.assert_allclose(dualad.hessian(f)(X), np.diag(20 * X ** 3 + 6 * X))
    np.testing.assert_allclose(reverse.jacrev(reverse.grad(f))(X), np.diag(20 * X ** 3 + 6 * X))


def test_check_grads_to_second_order_in_both_modes():
    def f(x, y):
        s, c = SinCos.apply(x)
        return MulAdd.apply(Exp.apply(s), c * y, 0.5) + Cube.apply(y)

    check_grads(f, (X, X[::-1].copy()), order=2, modes=("fwd", "rev"))


# -- errors ------------------------------------------------------------------------------------
def _fn(backward=None, jvp=None, forward=None, name="Custom"):
    body = {"forward": staticmethod(forward or (lambda ctx, x: x * 2.0)),
            "backward": staticmethod(backward or (lambda ctx, g: 2.0 * g))}
    if jvp is not None:
        body["jvp"] = staticmethod(jvp)
    return type(name, (Function,), body)


def test_wrong_number_of_gradients():
    Bad = _fn(backward=lambda ctx, g: (g, g), name="TwoGrads")
    with pytest.raises(ValueError, match=r"TwoGrads.backward returned 2 gradients.*1 inputs"):
        reverse.grad(Bad.apply)(1.0)


def test_gradient_of_the_wrong_shape():
    Bad = _fn(backward=lambda ctx, g: g.sum(), name="Summed")
    with pytest.raises(ValueError, match=r"Summed.backward.*input 0 of shape \(\).*expected \(3,\)"):
        reverse.grad(lambda v: Bad.apply(v).sum())(X)


def test_tangent_of_the_wrong_shape_or_number():
    Bad = _fn(jvp=lambda ctx, t: t[:1], name="Sliced")
    with pytest.raises(ValueError, match=r"Sliced.jvp.*output 0 of shape \(1,\).*expected \(3,\)"):
        dualad.jvp(Bad.apply, (X,), (np.ones(3),))
    Bad2 = _fn(jvp=lambda ctx, t: (t, t), name="Doubled")
    with pytest.raises(ValueError, match=r"Doubled.jvp returned 2 tangents.*1 outputs"):
        dualad.jvp(Bad2.apply, (X,), (np.ones(3),))


def test_gradient_for_a_constant():
    Bad = _fn(forward=lambda ctx, x, k: x * k, backward=lambda ctx, g: (g, 1.0), name="Const")
    with pytest.raises(TypeError, match=r"Const.backward returned a gradient for input 1, a int"):
        reverse.grad(lambda v: Bad.apply(v, 3))(1.0)


def test_forward_must_return_arrays():
    Bad = _fn(forward=lambda ctx, x: None, name="Nothing")
    with pytest.raises(TypeError, match=r"Nothing.forward must return arrays"):
        Bad.apply(Tensor(1.0, requires_grad=True))


def test_saved_intermediate_is_fine_at_first_order_and_refused_when_nested():
    class SavesCos(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(np.cos(x))  # neither an input nor an output
            return np.sin(x)

        @staticmethod
        def backward(ctx, g):
            (c,) = ctx.saved_tensors
            return g * c

    assert reverse.grad(SavesCos.apply)(0.3) == pytest.approx(np.cos(0.3))
    with pytest.raises(RuntimeError, match=r"SavesCos: saved value 0 is neither an input nor an output"):
        reverse.grad(reverse.grad(SavesCos.apply))(0.3)


def test_apply_on_the_base_class_and_missing_methods():
    with pytest.raises(TypeError, match="subclass"):
        Function.apply(1.0)

    class OnlyForward(Function):
        @staticmethod
        def forward(ctx, x):
            return x

    with pytest.raises(NotImplementedError, match="backward"):
        reverse.grad(OnlyForward.apply)(1.0)


# -- the table ----------------------------------------------------------------------------------
def test_custom_functions_stay_out_of_the_builtin_table():
    assert "Cube" not in REGISTRY and "SinCos" not in REGISTRY
    exp_entry = REGISTRY["exp"]

    class exp(Function):  # noqa: N801  (same name as a built-in primitive)
        @staticmethod
        def forward(ctx, x):
            return np.exp(x)

    assert REGISTRY["exp"] is exp_entry
    assert exp._primitive is not exp_entry and type(exp._primitive).__name__ == "Custom"

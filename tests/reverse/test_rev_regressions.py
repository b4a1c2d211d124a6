"""Regression tests for core bugs found while building Function, checkpoint,
optim and to_dot (each fixed; each test reproduces the original report)."""

import array_api_strict as xps
import numpy as np
import pytest

import dualad
import reverse
from dualad import ops
from dualad.testing import check_grads
from reverse import Tensor, no_grad


def test_backward_from_one_element():
    # Was: getitem's VJP built zeros(g, shape) from a Python-float cotangent and failed.
    x = Tensor(np.array([0.5, -0.7]), requires_grad=True)
    x[0].backward()
    np.testing.assert_array_equal(x.grad, [1.0, 0.0])


def test_grad_of_one_element():
    np.testing.assert_array_equal(reverse.grad(lambda v: v[1] * 2.0)(np.array([0.5, -0.7])), [0.0, 2.0])


def test_grad_at_a_0d_array_is_a_0d_array():
    g = reverse.grad(lambda v: v * 3.0)(np.array(2.0))
    assert isinstance(g, np.ndarray) and g.dtype == np.float64 and g.shape == ()


def test_check_grads_rev_at_0d_arrays():
    check_grads(lambda x, y: x + y, (np.array(0.0), np.array(0.0)), modes=("rev",))


@pytest.mark.parametrize("fn, expected", [(ops.sigmoid, 0.25), (ops.softplus, 0.5)],
                         ids=["sigmoid", "softplus"])
def test_smooth_composites_at_zero(fn, expected):
    assert reverse.grad(fn)(0.0) == pytest.approx(expected)
    assert dualad.derivative(fn)(0.0) == pytest.approx(expected)


def test_in_place_update_of_an_input_that_was_not_saved():
    x = Tensor(np.ones(3), requires_grad=True)
    y = x.sum()  # saves only the shape
    with no_grad():
        x += 1.0
    y.backward()
    np.testing.assert_array_equal(x.grad, np.ones(3))


def test_item_on_array_api_arrays():
    assert Tensor(xps.asarray(2.5)).item() == 2.5


def test_unused_real_output_of_a_complex_primitive_gets_real_zeros():
    """lu's P is real beside complex L and U: its zero cotangent was made complex
    and cast, which warned (ComplexWarning) on every such gradient."""
    import warnings
    a = np.array([[1 + 1j, 2.0], [4.0, 3 - 1j]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = reverse.grad(lambda x: ops.sum(ops.abs(ops.linalg.lu(x)[1]) ** 2))(a)
    check_grads(lambda x: ops.sum(ops.abs(ops.linalg.lu(x)[1]) ** 2), (a,), order=1, modes=("rev",))
    assert g.dtype == a.dtype


def test_a_tensor_that_escapes_grad_raises_when_used():
    """Used later it recorded onto a tape nobody walks: a later gradient silently
    lost its contribution."""
    kept = []

    def f(x):
        kept.append(x * 2.0)
        return ops.sum(x ** 2)

    np.testing.assert_array_equal(reverse.grad(f)(np.ones(3)), 2.0)
    with pytest.raises(dualad.EscapedValueError, match="reverse-mode.*escaped"):
        np.sin(kept[0])
    with pytest.raises(dualad.EscapedValueError):
        reverse.grad(lambda w: ops.sum(w * kept[0]))(np.ones(3))


def test_vjp_function_works_after_vjp_returned():
    out, f_vjp, aux = reverse.vjp(lambda x: (x * 3.0, ops.sin(x)), np.ones(2), has_aux=True)
    for _ in range(2):  # the returned function walks its own tape again; that is no escape
        np.testing.assert_array_equal(f_vjp(np.array([1.0, 2.0]))[0], [3.0, 6.0])
    np.testing.assert_allclose(aux, np.sin(np.ones(2)))
    assert not isinstance(aux, Tensor)


@pytest.mark.parametrize("z", [1j, 0.5 - 2j])
def test_a_python_complex_is_differentiated_as_a_complex_array_is(z):
    """A Python complex input made an output that did not require grad, so the
    pullback returned 0j with no error (vjp, grad(holomorphic=True))."""
    f = lambda z: z * z * 1.5 + z  # noqa: E731
    exact = 3.0 * z + 1.0  # f'(z), a holomorphic f
    assert reverse.vjp(f, z)[1](1.0 + 0j)[0] == pytest.approx(exact)
    assert reverse.grad(f, holomorphic=True)(z) == pytest.approx(exact)
    as_array = reverse.grad(lambda w: abs(f(w)) ** 2)(np.complex128(z))
    assert reverse.grad(lambda w: abs(f(w)) ** 2)(z) == pytest.approx(complex(as_array))
    t = Tensor(z, requires_grad=True)  # PyTorch lets a complex tensor require grad
    (t * t).real.backward()
    assert complex(t.grad.item()) == pytest.approx((2 * z).conjugate())  # PyTorch's conjugate convention


def test_a_tensor_of_a_dual_of_python_floats():
    """ops.copy (and so Tensor(Dual(1.0, 2.0))) asked the float namespace for asarray,
    which it has not: a Python number is immutable and is its own copy."""
    d = dualad.Dual(1.0, 2.0)
    c = ops.copy(d)
    assert (c.primal, c.tangent) == (1.0, 2.0)
    t = Tensor(d)
    assert (t.value.primal, t.value.tangent) == (1.0, 2.0)


@pytest.mark.parametrize("make, want", [
    (lambda: Tensor(3.0), "float64"),
    (lambda: Tensor(3.0, requires_grad=True), "float64"),
    (lambda: Tensor(2.0 + 1j), "complex128"),
    (lambda: Tensor(dualad.Dual(1.0, 2.0)), "float64"),
], ids=["float", "requires_grad", "complex", "dual"])
def test_a_tensor_of_a_python_number_reports_numpys_dtype(make, want):
    # Tensor(3.0).dtype was builtins.float (autograd's test_scalar_array_box_attributes);
    # NumPy reports np.asarray(3.0).dtype, float64.
    dtype = make().dtype
    assert isinstance(dtype, np.dtype) and dtype == np.dtype(want)


@pytest.mark.parametrize("cotangent", [-0.7, np.array(-0.7)], ids=["python float", "0-d array"])
def test_the_cotangent_of_a_real_0d_input_through_complex_values_is_real(cotangent):
    """z = (0.5 + 1j) x + 0.25j at a 0-d x, and real(z - imag(z) 1j) = real(z) = x / 2: with a
    Python-float cotangent the VJP gave the complex (-0.35-0.7j) for real(z) (a Python
    complex cotangent skipped the projection onto x's real dtype), and 0 for the other."""
    def z(x):
        return ops.astype(x, np.complex128) * (0.5 + 1j) + 0.25j
    for f in (lambda x: ops.real(z(x)), lambda x: ops.real(z(x) - ops.imag(z(x)) * 1j)):
        (g,) = reverse.vjp(f, np.array(0.0))[1](cotangent)
        assert isinstance(g, np.ndarray) and g.dtype == np.float64 and g.shape == ()
        assert g == -0.35

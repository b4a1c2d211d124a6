"""Forward-mode transforms and value types beyond single rules: nesting,
chunked Jacobians, pytrees, the float fast path, NumPy and array-API
dispatch, errors, and the conventions at non-differentiable points."""

from __future__ import annotations

import math
import re

import array_api_compat
import array_api_strict
import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from _support.backends import BACKENDS, dtype_name, to_numpy
from _support.cases import floats
from _support.jax_peer_cases import KINK_PAIRS, KINK_POINTS, recorded
from hypothesis import given
from hypothesis import strategies as st

import dualad
from dualad import Dual, HyperDual, derivative, hessian, jacfwd, jvp, ops
from dualad.testing import check_grads


# -- nesting --------------------------------------------------------------------------------
def test_nested_derivatives_do_not_confuse_perturbations():
    # d/dx [x * d/dy (x + y)] = d/dx [x * 1] = 1; a naive dual number gives 2.
    assert derivative(lambda x: x * derivative(lambda y: x + y)(1.0))(1.0) == 1.0


def test_nested_derivatives_on_arrays():
    x0 = np.array([1.0, 2.0])
    inner = lambda x: jvp(lambda y: ops.sum(x * y), (x0,), (np.ones(2),))[1]  # = sum(x)
    _, t = jvp(inner, (x0,), (np.array([1.0, 3.0]),))
    assert float(t) == 4.0


def test_third_derivative_by_nesting():
    d3 = derivative(derivative(derivative(ops.sin)))
    assert math.isclose(d3(0.3), -math.cos(0.3), rel_tol=1e-12)


# -- jacfwd: chunked == unchunked == dense finite differences ---------------------------------
def _vector_function(x):
    return ops.concatenate([ops.sin(x) * ops.sum(x ** 2), ops.cumsum(ops.exp(x[::-1]), axis=0)[:2]])


def _finite_difference_jacobian(f, x, h=1e-6):
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = h
        cols.append((f(x + e) - f(x - e)).ravel() / (2 * h))
    return np.stack(cols, axis=-1).reshape(np.shape(f(x)) + x.shape)


@pytest.mark.parametrize("chunk", [None, 1, 2, 3, 5, 100])
def test_jacfwd_chunks_agree_with_each_other_and_with_finite_differences(chunk):
    x = np.array([0.3, -0.7, 1.1, 0.5, -1.3])
    full = jacfwd(_vector_function)(x)
    chunked = jacfwd(_vector_function, chunk_size=chunk)(x)
    np.testing.assert_allclose(chunked, full, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(full, _finite_difference_jacobian(_vector_function, x), rtol=1e-6, atol=1e-8)


@given(x=hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=2, max_side=3),
                    elements=floats(-2, 2)), chunk=st.integers(1, 4))
def test_jacfwd_matrix_input_chunked(x, chunk):
    f = lambda a: ops.transpose(ops.tanh(a) * ops.sum(a) + a ** 2)
    full = jacfwd(f)(x)
    assert full.shape == x.shape[::-1] + x.shape
    np.testing.assert_allclose(jacfwd(f, chunk_size=chunk)(x), full, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(full, _finite_difference_jacobian(f, x), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
@pytest.mark.parametrize("m, n, chunk", [(3, 4, None), (3, 4, 1), (3, 4, 3), (0, 2, None), (2, 0, None)])
def test_a_chunk_through_a_matrix_vector_product_gives_the_matrix(dtype, m, n, chunk):
    """Only the vector moving: ``A @ x``'s Jacobian is ``A`` and ``y @ B``'s is ``B^T``, exactly
    (one product of the chunk with the matrix), as one direction at a time gives them."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((m, n)).astype(dtype)
    x, y = rng.standard_normal(n).astype(dtype), rng.standard_normal(m).astype(dtype)
    for f, at, want in ((lambda v: a @ v, x, a), (lambda v: v @ a, y, a.T)):
        jac = jacfwd(f, chunk_size=chunk)(at)
        assert jac.dtype == dtype and jac.shape == want.shape
        np.testing.assert_array_equal(jac, want)
        if at.size:
            one = [jvp(f, (at,), (e,))[1] for e in np.eye(at.size, dtype=dtype)]
            np.testing.assert_array_equal(jac, np.stack(one, axis=-1).reshape(want.shape))
    # the chunk through a nested transform: the second derivative of x^T A^T A x
    if m and n and dtype is np.float64:
        hess = jacfwd(jacfwd(lambda v: ((a @ v) ** 2).sum()))(x)
        np.testing.assert_allclose(hess, 2 * a.T @ a, rtol=1e-13)


def test_jacfwd_rejects_a_bad_chunk_size():
    with pytest.raises(ValueError, match="chunk_size"):
        jacfwd(ops.sin, chunk_size=0)(np.ones(2))


def test_hessian_is_symmetric_and_matches_finite_differences_of_jacfwd():
    f = lambda x: ops.sum(ops.sin(x) * x[::-1]) + ops.prod(x[:2]) ** 2
    x = np.array([0.4, -0.3, 1.2])
    h = hessian(f)(x)
    np.testing.assert_allclose(h, h.T, rtol=1e-12)
    np.testing.assert_allclose(h, _finite_difference_jacobian(jacfwd(f), x, 1e-5), rtol=1e-6, atol=1e-8)


# -- pytrees ---------------------------------------------------------------------------------
def test_jvp_of_pytrees():
    def f(p, scale):
        return {"y": ops.sin(p["a"]) * scale, "pair": (p["b"][0] * p["b"][1], [ops.exp(scale)])}

    primals = ({"a": np.array([0.1, 0.2]), "b": [np.array(1.0), np.array(2.0)]}, 3.0)
    tangents = ({"a": np.array([1.0, 0.0]), "b": [np.array(0.0), np.array(1.0)]}, 0.5)
    out, t = jvp(f, primals, tangents)
    assert set(t) == {"y", "pair"} and isinstance(t["pair"], tuple) and isinstance(t["pair"][1], list)
    np.testing.assert_allclose(t["y"], np.cos([0.1, 0.2]) * [1.0, 0.0] * 3.0 + np.sin([0.1, 0.2]) * 0.5)
    np.testing.assert_allclose(t["pair"][0], 1.0)
    np.testing.assert_allclose(t["pair"][1][0], math.exp(3.0) * 0.5)
    check_grads(f, primals, order=1, modes=("fwd",))


def test_jvp_pytree_mismatch_is_an_error():
    with pytest.raises(TypeError, match=r"tangents must have the structure of primals, "
                                        r"\(\*, \*\); got \(\*,\)"):
        jvp(lambda a, b: a * b, (np.ones(2), np.ones(2)), (np.ones(2),))


def test_jvp_needs_tuples():
    with pytest.raises(TypeError, match="tuples"):
        jvp(ops.sin, np.ones(2), np.ones(2))


def test_output_leaves_that_do_not_depend_on_the_input_get_zero_tangents():
    out, t = jvp(lambda x: (x * 2.0, np.ones(3), x > 0), (np.ones(2),), (np.ones(2),))
    np.testing.assert_array_equal(t[1], np.zeros(3))
    assert t[2].dtype == np.bool_ and not t[2].any()


# -- the Python-float fast path ----------------------------------------------------------------
@pytest.mark.parametrize("f", [ops.sin, ops.exp, lambda x: x * x + 1.0 / x, lambda x: ops.sqrt(x) ** 3,
                               lambda x: ops.maximum(x, 0.2), lambda x: ops.where(x > 0, x, -x)])
def test_floats_in_floats_out(f):
    out, t = jvp(f, (0.7,), (1.0,))
    assert type(out) is float and type(t) is float
    assert type(derivative(f)(0.7)) is float


def test_hyperdual_scalar_fast_path_is_exact():
    y = ops.sin(HyperDual(0.5, 1.0, 1.0, 0.0)) * HyperDual(0.5, 1.0, 1.0, 0.0)
    assert type(y.primal) is float and type(y.eps1eps2) is float
    # (x sin x)'' = 2 cos x - x sin x
    assert math.isclose(y.eps1eps2, 2 * math.cos(0.5) - 0.5 * math.sin(0.5), rel_tol=1e-14)


# -- NumPy dispatch and the array API ----------------------------------------------------------
def test_numpy_ufuncs_functions_and_matmul_on_duals():
    x = np.array([0.5, 1.0, 2.0])
    t = np.array([1.0, 0.0, -1.0])
    w = np.arange(6.0).reshape(3, 2)
    d = Dual(x, t)
    y = np.sin(d)
    assert isinstance(y, Dual)
    np.testing.assert_allclose(y.tangent, np.cos(x) * t)
    s = np.sum(d * d)
    np.testing.assert_allclose(s.tangent, np.sum(2 * x * t))
    m = d @ w
    np.testing.assert_allclose(m.primal, x @ w)
    np.testing.assert_allclose(m.tangent, t @ w)
    r = w.T @ d
    np.testing.assert_allclose(r.tangent, w.T @ t)
    np.testing.assert_allclose(np.mean(np.exp(d)).tangent, np.mean(np.exp(x) * t))
    np.testing.assert_allclose((np.float64(2.0) * d).tangent, 2 * t)


def test_unmodified_numpy_code_under_jvp():
    def f(x):
        return np.sum(np.tanh(x) ** 2 * np.maximum(x, 0.0)) / np.sqrt(np.dot(x, x))

    check_grads(f, (np.array([0.3, -0.8, 1.5]),), order=2, modes=("fwd",))


def _array_api_code(x):
    xp = array_api_compat.array_namespace(x)  # CuPy's arrays have no __array_namespace__
    w = xp.reshape(xp.arange(6, dtype=xp.float64), (3, 2)) / 5.0
    h = xp.tanh(xp.matmul(x, w))
    return xp.sum(xp.exp(-h) * xp.sin(h), axis=-1) + xp.max(x, axis=-1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_array_api_code_through_array_namespace(backend):
    x = backend.asarray(np.array([[0.3, -0.2, 0.9], [1.1, 0.4, -0.5]]))
    t = backend.asarray(np.ones((2, 3)))
    out, tan = jvp(_array_api_code, (x,), (t,))
    assert type(out) is type(x) and type(tan) is type(x)
    check_grads(_array_api_code, (x,), order=2, modes=("fwd",))


def test_namespace_exposes_dtypes_and_creation_of_the_inner_backend():
    xp = Dual(array_api_strict.asarray([1.0]), array_api_strict.asarray([1.0])).__array_namespace__()
    assert xp.float64 is array_api_strict.float64
    assert type(xp.zeros(2, dtype=xp.float64)) is type(array_api_strict.asarray([1.0]))


# -- dtypes ------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_float32_stays_float32(backend):
    x = backend.asarray(np.array([0.3, 0.6]), "float32")
    f = lambda a: ops.sum(ops.exp(a) * 2.0 + a ** 3) / 3.0
    out, t = jvp(f, (x,), (x,))
    assert dtype_name(out) == dtype_name(t) == "float32"
    assert dtype_name(jacfwd(ops.sin)(x)) == "float32"
    assert dtype_name(hessian(f)(x)) == "float32"
    check_grads(f, (x,), order=2, modes=("fwd",))


# -- errors ------------------------------------------------------------------------------------
@pytest.mark.parametrize("make, want", [
    (lambda: Dual(2.0, 1.0), "float64"),
    (lambda: Dual(2.0 + 1j, 1.0 + 0j), "complex128"),
    (lambda: HyperDual(2.0, 1.0, 1.0, 0.0), "float64"),
    (lambda: Dual(np.float32(2.0), np.float32(1.0)), "float32"),
], ids=["float", "complex", "hyperdual", "float32"])
def test_a_dual_of_a_python_number_reports_numpys_dtype(make, want):
    # It reported builtins.float (autograd's test_scalar_array_box_attributes); NumPy says float64.
    dtype = make().dtype
    assert isinstance(dtype, np.dtype) and dtype == np.dtype(want)


def test_tangent_shape_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=r"\(3,\).*\(2,\)"):
        jvp(ops.sin, (np.ones(3),), (np.ones(2),))
    with pytest.raises(ValueError, match="tangent"):
        Dual(np.ones(3), np.ones((3, 2)))


def test_tangent_dtype_mismatch():
    with pytest.raises(TypeError, match="float32.*float64|dtype"):
        jvp(ops.sin, (np.ones(2),), (np.ones(2, dtype=np.float32),))


@pytest.mark.parametrize("x", [1, np.array([1, 2]), np.array([True])], ids=["int", "int-array", "bool"])
def test_integer_inputs_cannot_be_differentiated(x):
    with pytest.raises(TypeError, match="float"):
        jvp(lambda a: a * 2, (x,), (x,))


def test_derivative_of_an_int_says_write_a_float():
    with pytest.raises(TypeError, match="1.0"):
        derivative(ops.sin)(1)


@pytest.mark.parametrize("who, call", [
    ("derivative: x", lambda f: derivative(f)(3)),
    ("primals[0]: primal", lambda f: jvp(f, (3,), (1.0,))),
    ("jacfwd: x", lambda f: jacfwd(f)(3)),
    ("hessian: x", lambda f: hessian(f)(3)),
    ("jet: primals[0]", lambda f: dualad.jet(f, (3,), ((1.0,),))),
    ("linearize: primals[0]", lambda f: dualad.linearize(f, 3)),
], ids=["derivative", "jvp", "jacfwd", "hessian", "jet", "linearize"])
def test_a_python_int_is_refused_by_every_transform_naming_the_fix(who, call):
    # One rule (as for an int array): jacfwd and hessian crashed ("no float implementation of
    # 'reshape'") and linearize took it, where derivative and jvp refused.
    with pytest.raises(TypeError, match=rf"^{re.escape(who)} must be a float or a floating array, "
                                        r"got int 3; write 3\.0 instead of 3$"):
        call(lambda x: ops.sum(x ** 2))


def test_hessian_names_itself_for_an_integer_array():
    # It said "jacfwd: x must be floating point", naming a transform the caller did not call.
    with pytest.raises(TypeError, match=r"^hessian: x must be floating point to be differentiated, "
                                        r"got dtype int64"):
        hessian(lambda x: ops.sum(x ** 2))(np.arange(3))
    with pytest.raises(TypeError, match=r"^hessian: f must return arrays or floats.*got a str"):
        hessian(lambda x: "abc")(np.ones(2))


@pytest.mark.parametrize("name", ["derivative", "jacfwd", "hessian", "vmap", "jit", "sparse_jacfwd"])
def test_a_transform_of_what_is_not_callable_is_refused_when_made(name):
    # derivative(3.0), jacfwd(3.0), hessian(3.0), sparse_jacfwd(3.0) were accepted and failed when called.
    who = "compile" if name == "jit" else name
    with pytest.raises(TypeError, match=rf"^{who}: f must be callable, got float 3.0$"):
        getattr(dualad, name)(3.0)


@pytest.mark.parametrize("who, call", [
    ("jvp: f", lambda: jvp(3.0, (1.0,), (1.0,))),
    ("jet: fun", lambda: dualad.jet(3.0, (1.0,), ((1.0,),))),
    ("jacobian_sparsity: f", lambda: dualad.jacobian_sparsity(3.0, np.ones(2))),
    ("hessian_sparsity: f", lambda: dualad.hessian_sparsity(3.0, np.ones(2))),
], ids=["jvp", "jet", "jacobian_sparsity", "hessian_sparsity"])
def test_a_transform_applied_to_what_is_not_callable_names_it(who, call):
    # These raised Python's "'float' object is not callable" from inside.
    with pytest.raises(TypeError, match=rf"^{who} must be callable, got float 3.0$"):
        call()


@pytest.mark.parametrize("convert", [float, int, bool, np.asarray, lambda d: np.array(d)],
                         ids=["float", "int", "bool", "asarray", "array"])
def test_conversions_that_drop_the_derivative_raise(convert):
    with pytest.raises(TypeError, match="derivative"):
        convert(Dual(np.array(1.5), np.array(1.0)))
    with pytest.raises(TypeError, match="derivative"):
        convert(HyperDual(1.5, 1.0, 1.0, 0.0))


def test_unknown_numpy_function_names_it_and_says_how_to_register():
    # two of the few NumPy functions without a rule (test_rules checks every one of them)
    with pytest.raises(TypeError, match=r"numpy\.(lib\.)?.*packbits.*register_numpy"):
        np.packbits(Dual(np.ones(4), np.ones(4)))
    with pytest.raises(TypeError, match=r"numpy\.(lib\.)?.*einsum_path.*register_numpy"):
        np.einsum_path("i,i", Dual(np.ones(4), np.ones(4)), np.ones(4))


def test_unknown_ufunc_method_is_named():
    with pytest.raises(TypeError, match="reduce"):
        np.add.reduce(Dual(np.ones(4), np.ones(4)))


def test_mixing_numpy_and_array_api_strict_is_an_error():
    a = np.ones(2)
    b = array_api_strict.ones(2, dtype=array_api_strict.float64)
    with pytest.raises(TypeError, match="different array libraries"):
        jvp(lambda x: x + b, (a,), (a,))
    with pytest.raises(TypeError, match="different array libraries"):
        ops.add(Dual(b, b), a)


# -- non-differentiable points: documented conventions, never a crash ---------------------------
def test_abs_derivative_at_zero_is_zero():
    _, t = jvp(ops.abs, (np.array([0.0, -1.0, 2.0]),), (np.ones(3),))
    np.testing.assert_array_equal(t, [0.0, -1.0, 1.0])
    assert derivative(ops.abs)(0.0) == 0.0


def test_sqrt_derivative_at_zero_is_inf():
    with np.errstate(divide="ignore"):  # 0.5 / sqrt(0), the inf under test
        _, t = jvp(ops.sqrt, (np.array([0.0, 4.0]),), (np.ones(2),))
    np.testing.assert_array_equal(t, [np.inf, 0.25])


def test_max_ties_split_the_derivative():
    x = np.array([1.0, 3.0, 3.0, 3.0])
    np.testing.assert_allclose(jacfwd(ops.max)(x), [0.0, 1 / 3, 1 / 3, 1 / 3])
    np.testing.assert_allclose(jacfwd(ops.min)(np.array([2.0, 2.0])), [0.5, 0.5])
    np.testing.assert_allclose(jacfwd(lambda a: ops.max(a, axis=0))(np.ones((2, 2))).reshape(2, 4),
                               [[0.5, 0, 0.5, 0], [0, 0.5, 0, 0.5]])


@pytest.mark.parametrize("pair", [ops.maximum, ops.minimum])
def test_maximum_and_minimum_split_a_tie_equally(pair):
    assert derivative(lambda x: pair(x, 0.0))(0.0) == 0.5
    assert derivative(lambda x: pair(0.0, x))(0.0) == 0.5
    assert derivative(lambda x: pair(x, x))(1.0) == 1.0  # both halves are x's
    x, y = np.array([1.0, 2.0, 3.0], np.float32), np.array([1.0, 0.0, 5.0], np.float32)
    _, t = jvp(pair, (x, y), (np.ones(3, np.float32), np.zeros(3, np.float32)))
    assert t.dtype == np.float32
    np.testing.assert_array_equal(t, [0.5, 1.0, 0.0] if pair is ops.maximum else [0.5, 0.0, 1.0])


def test_relu_and_clip_at_their_kinks_match_torch():
    """``torch.relu``'s derivative at 0 is 0; ``torch.clamp`` passes 1 at its ends."""
    assert derivative(ops.relu)(0.0) == 0.0
    np.testing.assert_array_equal(jacfwd(ops.relu)(np.array([-1.0, 0.0, 2.0])).diagonal(), [0, 0, 1])
    assert [derivative(lambda x: ops.clip(x, 0.0, 1.0))(x) for x in (-1.0, 0.0, 1.0, 2.0)] == \
        [0.0, 1.0, 1.0, 0.0]
    assert derivative(ops.softplus)(0.0) == 0.5


def test_zero_to_the_zero_power():
    assert derivative(lambda x: x ** 0)(0.0) == 0.0
    _, t = jvp(lambda x: ops.power(x, 0), (np.zeros(2),), (np.ones(2),))
    assert not np.any(to_numpy(t))


def test_prod_with_zeros_first_derivative_is_exact():
    np.testing.assert_array_equal(jacfwd(ops.prod)(np.array([0.0, 2.0, 3.0])), [6.0, 0.0, 0.0])
    np.testing.assert_array_equal(jacfwd(ops.prod)(np.array([0.0, 2.0, 0.0])), [0.0, 0.0, 0.0])


def test_stop_gradient():
    assert derivative(lambda x: x * ops.stop_gradient(x))(3.0) == 3.0
    _, t = jvp(lambda x: ops.stop_gradient(x) * x, (np.array([2.0]),), (np.ones(1),))
    np.testing.assert_array_equal(t, [2.0])


@pytest.mark.parametrize("f, x", [
    (ops.abs, 0.0), (ops.sign, 0.0), (ops.relu, 0.0), (lambda x: ops.clip(x, 0.0, 1.0), 0.0),
    (ops.floor, 1.0), (ops.round, 0.5), (ops.max, np.zeros(3)),
    (lambda x: ops.hypot(x, x * 0.0), np.zeros(2)), (ops.sqrt, np.zeros(1)),
    (lambda x: ops.arctan2(x, x), np.zeros(1)), (ops.std, np.zeros(3)),
])
@pytest.mark.filterwarnings("ignore:(divide by zero|invalid value) encountered:RuntimeWarning")  # on purpose
def test_non_differentiable_points_never_crash(f, x):
    t = 1.0 if isinstance(x, float) else np.ones_like(x)
    jvp(f, (x,), (t,))
    jvp(lambda y: jvp(f, (y,), (t,))[1], (x,), (t,))  # and its second derivative


def test_kink_conventions_match_jax():
    """The derivative chosen at a kink is JAX's (recorded by tests/make_jax_peer_golden.py)."""
    golden = recorded()["kinks"]
    for ours, name in [(ops.maximum, "maximum"), (ops.minimum, "minimum")]:
        got = [derivative(lambda a, f=ours, b=y: f(a, b))(x) for x, y in KINK_PAIRS]
        assert got == golden[name], name
    assert [derivative(ops.relu)(x) for x in KINK_POINTS] == golden["relu"]
    assert [derivative(ops.softplus)(x) for x in KINK_POINTS] == pytest.approx(golden["softplus"], rel=1e-15)


def test_heaviside_passes_h0s_derivative_where_x_is_zero():
    x = np.array([-1.0, 0.0, 2.0])
    y, t = jvp(lambda h0: ops.heaviside(x, h0), (0.5,), (1.0,))
    np.testing.assert_array_equal(y, np.heaviside(x, 0.5))
    np.testing.assert_array_equal(t, [0.0, 1.0, 0.0])
    assert not np.any(jvp(lambda x: ops.heaviside(x, 0.5), (x,), (np.ones(3),))[1])


def test_hyperdual_real_is_the_real_part_as_on_every_array():
    """The primal is ``.primal``, as on a Dual: ``.real`` named it, so NumPy code
    taking the real part of a hyper-dual dropped every derivative silently."""
    h = HyperDual(2.0, 1.0, 1.0, 0.0)
    y = (h * h * (1.0 + 1.0j)).real  # x**2, whose derivatives are 2x and 2
    assert isinstance(y, HyperDual)
    assert (complex(y.primal), complex(y.eps1), complex(y.eps1eps2)) == (4.0, 4.0, 2.0)
    assert h.primal == 2.0


def test_item_is_the_one_conversion_that_drops_a_derivative_in_every_mode():
    """float() refuses naming .item(); .item() exists on Dual as on Tensor (issue 26)."""
    import reverse
    from dualad import HyperDual, derivative, vmap
    assert derivative(lambda x: x * x.item())(3.0) == 3.0
    assert reverse.grad(lambda x: x * x.item())(3.0) == 3.0
    assert HyperDual(2.0, 1.0, 1.0, 0.0).item() == 2.0
    assert Dual(np.array([[2.5]]), np.ones((1, 1))).item() == 2.5
    for convert in (float, int):
        with pytest.raises(TypeError, match=r"\.item\(\)"):
            derivative(lambda x, convert=convert: x * convert(x))(3.0)
    with pytest.raises(RuntimeError, match="3 elements"):
        Dual(np.ones(3), np.ones(3)).item()
    with pytest.raises(TypeError, match="item"):
        vmap(lambda x: x.item())(np.ones(3))

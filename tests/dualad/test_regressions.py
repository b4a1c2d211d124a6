"""Shrunk hypothesis failures, kept as fixed regression cases.

``SHRUNK`` replays draws that once failed through every first-order check of
their case (test_rules.py): they failed because of the test harness or the
strategies and now pass. The rest are minimal reproductions of bugs the table
tests found in the core, all fixed, kept as plain regression tests (the
comment above each says what was wrong).
"""

from __future__ import annotations

import numpy as np
import pytest
from _support.backends import NUMPY, STRICT, to_numpy
from _support.cases import CASES_BY_NAME, expected_warnings
from _support.harness import check_case
from _support.known_bugs import known_bug_marks

import dualad
from dualad import Dual, HyperDual, jvp, ops

# (case, drawn (args, kw)): each once failed on the backends it runs on here.
SHRUNK = [
    ("integer_pow_zero_at_zero", ((np.array([]),), {})),        # empty: x ** 0 has no tangent
    ("integer_pow_zero_at_zero", ((np.array(0.0),), {})),       # 0-d: a NumPy scalar output
    ("astype", ((np.array(0.5),), {})),                         # float32 -> float64 rounds the VJP
    ("add", ((np.array(0.5), np.array(-1.0)), {})),             # 0-d operands give NumPy scalars
    ("isfinite", ((np.array([0.0, -1.0]),), {})),               # log(0), log(-1) inside the case
    ("std", ((np.array([0.0, 0.25]),), {"axis": None, "keepdims": False})),
    ("arctan2", ((np.array(0.25), np.array(1.0)), {})),         # x > 0: off the branch cut
    ("prod_with_zeros", ((np.array([1.0, 0.0]),), {"axis": None, "keepdims": False})),
    ("prod_with_zeros", ((np.array([[0.0, 0.0], [1.5, -0.5]]),), {"axis": 0, "keepdims": True})),
    ("dot", ((np.ones((2, 1, 1)), np.ones((3, 1, 2))), {})),
]


@pytest.mark.parametrize("name, drawn, backend, dtype", [
    pytest.param(name, drawn, backend, dtype, id=f"{name}-{i}-{backend.name}-{dtype}",
                 marks=known_bug_marks("rules", name, backend.name, dtype)
                 + expected_warnings(CASES_BY_NAME[name]))
    for i, (name, drawn) in enumerate(SHRUNK) for backend in (NUMPY, STRICT)
    for dtype in ("float64", "float32")])
def test_shrunk_example(name, drawn, backend, dtype):
    check_case(CASES_BY_NAME[name], drawn, backend, dtype)


# -- core bugs -------------------------------------------------------------------------------
def test_prod_hessian_with_a_zero_entry():
    """prod's partial was piecewise constant where an entry is 0: H[1, 0] came out 0."""
    h = dualad.hessian(ops.prod)(np.array([0.0, 2.0, 3.0]))
    np.testing.assert_allclose(h, [[0.0, 3.0, 2.0], [3.0, 0.0, 0.0], [2.0, 0.0, 0.0]])


def test_power_mixed_second_derivative_at_zero_exponent():
    """power's x-partial swapped y - 1 for 1 at y == 0: an asymmetric Hessian."""
    h = dualad.hessian(lambda z: ops.power(z[0], z[1]))(np.array([0.5, 0.0]))
    np.testing.assert_allclose(h, h.T)
    np.testing.assert_allclose(h[0, 1], 2.0)


@pytest.mark.parametrize("x", [0.0, np.array([0.0])], ids=["float", "array"])
def test_sigmoid_and_softplus_derivatives_at_zero(x):
    # Both once composed exp(-|x|) with abs'(0) = 0 and got 0 and 1 at x = 0.
    one = 1.0 if isinstance(x, float) else np.ones_like(x)
    np.testing.assert_allclose(jvp(ops.sigmoid, (x,), (one,))[1], 0.25)
    np.testing.assert_allclose(jvp(ops.softplus, (x,), (one,))[1], 0.5)


def test_sqrt_derivative_at_zero_on_floats():
    """sqrt's partial divided Python floats: ZeroDivisionError instead of inf."""
    assert dualad.derivative(ops.sqrt)(0.0) == float("inf")


def test_jvp_with_a_dual_tangent_of_a_float_primal():
    """float(tangent) refused a Dual tangent of a float primal (a JVP differentiated in v)."""
    out = jvp(lambda v: jvp(ops.sin, (1.0,), (v,))[1], (2.0,), (1.0,))
    np.testing.assert_allclose(out, (2.0 * np.cos(1.0), np.cos(1.0)))


@pytest.mark.parametrize("f, shapes", [
    (ops.inner, [(0,), (0,)]),
    (lambda x, y: ops.tensordot(x, y, 1), [(0,), (0,)]),
    (ops.dot, [(2, 1, 0), (3, 0, 2)]),
], ids=["inner", "tensordot", "dot"])
def test_contraction_over_an_empty_axis(f, shapes):
    """tensordot reshaped to (-1, 0), which reshape rejects."""
    args = tuple(np.zeros(s) for s in shapes)
    out, t = jvp(f, args, args)
    assert to_numpy(t).sum() == 0


@pytest.mark.parametrize("f, args", [
    (ops.prod, (STRICT.asarray([1.0, 2.0]),)),
    (ops.max, (STRICT.asarray([1.0, 2.0]),)),
    (lambda x: ops.power(2.0, x), (STRICT.asarray([1.0, 2.0]),)),
    (lambda s: ops.maximum(STRICT.asarray([1.0, -2.0]), s), (0.5,)),
], ids=["prod", "max", "power_float_base", "maximum_wrt_float"])
def test_where_with_python_scalars_on_array_api_strict(f, args):
    """where's impl got two Python scalars or a bool condition; array_api_strict rejects both."""
    tangents = tuple(1.0 if isinstance(a, float) else a * 0.0 + 1.0 for a in args)
    jvp(f, args, tangents)


def test_raw_array_times_value_on_array_api_strict():
    """a rule computed raw_array * Dual with *, which array_api_strict arrays refuse."""
    one = STRICT.asarray([1.0, 1.0])
    x = STRICT.asarray([1.0, -2.0])
    y = STRICT.asarray([2.0, 3.0])
    jvp(lambda a: jvp(lambda b: ops.power(b, y), (a,), (one,))[1], (x,), (one,))


def test_hyperdual_abs_on_array_api_strict():
    # once failed like the test above: scale() multiplied a raw sign(x) by a Dual with *
    one = STRICT.asarray([1.0, 1.0])
    y = ops.abs(HyperDual(STRICT.asarray([1.0, -2.0]), one, one, one * 0.0))
    np.testing.assert_array_equal(to_numpy(y.eps1), [1.0, -1.0])


@pytest.mark.parametrize("what", ["take_axis1", "slice_then_array", "mask"])
def test_advanced_indexing_on_array_api_strict(what):
    """integer arrays next to slices and padded masks are not array-API indexing."""
    xp = STRICT.xp
    x = xp.reshape(xp.arange(6.0), (2, 3))
    f = {"take_axis1": lambda a: ops.take(a, xp.asarray([0, 2]), axis=1),
         "slice_then_array": lambda a: a[:, xp.asarray([0, 0])],
         "mask": lambda a: a[x > 2.0]}[what]
    jvp(f, (x,), (x,))


@pytest.mark.parametrize("what", ["diagonal_3d", "diagonal_jacfwd", "array_then_slice", "mask_jacfwd"])
def test_indexing_left_on_array_api_strict(what):
    xp = STRICT.xp
    x = xp.reshape(xp.arange(6.0), (2, 3))
    cube = xp.reshape(xp.arange(8.0), (2, 2, 2))
    if what == "diagonal_3d":
        jvp(ops.diagonal, (cube,), (cube,))
    elif what == "diagonal_jacfwd":
        dualad.jacfwd(ops.diagonal)(xp.reshape(xp.arange(4.0), (2, 2)))
    elif what == "array_then_slice":
        jvp(lambda a: a[xp.asarray([0, 1]), 1:], (x,), (x,))
    else:
        dualad.jacfwd(lambda a: a[x > 2.0])(x)


@pytest.mark.parametrize("what", ["newaxis_vjp", "two_arrays_vjp", "empty_vjp"])
def test_scatter_on_array_api_strict(what):
    from dualad.extend import REGISTRY, bind
    xp = STRICT.xp
    x = xp.reshape(xp.arange(6.0), (2, 3))
    p = REGISTRY["getitem"]
    arg, idx = {"newaxis_vjp": (xp.asarray([1.0, 2.0]), (None, slice(None))),
                "two_arrays_vjp": (x, (xp.asarray([0, 1]), xp.asarray([1, 1]))),
                "empty_vjp": (xp.asarray([1.0, 2.0]), (xp.asarray([], dtype=xp.int64),))}[what]
    ans = bind(p, arg, idx=idx)
    p.vjp(ans, p.residuals(ans, (arg,), {"idx": idx}), (True,), {"idx": idx})


@pytest.mark.parametrize("target", [(3, 3), (2, 3)])
def test_jacfwd_through_broadcast_to_new_leading_axes(target):
    """broadcast_to's batch rule broadcast a chunk of tangents against the wrong axes."""
    jac = dualad.jacfwd(lambda z: ops.broadcast_to(z, target))(np.arange(3.0))
    np.testing.assert_array_equal(jac, np.broadcast_to(np.eye(3), target + (3,)))


@pytest.mark.parametrize("what", ["x@const3d", "x@const(4,3,1)", "hessian vec@mat"])
def test_batched_matmul_with_a_vector_operand(what):
    """A chunk of tangents on a 1-d operand against ndim >= 2 failed, or gave an asymmetric
    Hessian ([[0, 2, 2], [0, 0, 0], [0, 0, 0]] for vec @ mat)."""
    if what == "hessian vec@mat":
        h = dualad.hessian(lambda z: ops.sum(ops.matmul(z[:1], ops.reshape(z[1:], (1, 2)))))(np.ones(3))
        np.testing.assert_allclose(h, [[0, 1, 1], [1, 0, 0], [1, 0, 0]])
        return
    f = {"x@const3d": lambda z: ops.matmul(z, np.ones((2, 3, 4))),
         "x@const(4,3,1)": lambda z: ops.matmul(z, np.ones((4, 3, 1)))}[what]
    x = np.arange(1.0, 4.0)
    jac = dualad.jacfwd(f)(x)
    cols = [jvp(f, (x,), (e,))[1] for e in np.eye(3)]
    np.testing.assert_allclose(jac, np.stack(cols, axis=-1))


def test_jacfwd_of_an_output_that_does_not_depend_on_x():
    """jacfwd broadcast a float zero tangent through the scalar namespace (no asarray)."""
    np.testing.assert_array_equal(dualad.jacfwd(lambda x: ops.power(x, 0))(np.array(1.0)), 0.0)


def test_dual_of_a_dual_tangent_is_fine_for_arrays():
    """The array twin of test_jvp_with_a_dual_tangent_of_a_float_primal."""
    out = jvp(lambda v: jvp(ops.sin, (np.array(1.0),), (v,))[1], (np.array(2.0),), (np.array(1.0),))
    np.testing.assert_allclose(out, (2.0 * np.cos(1.0), np.cos(1.0)))
    assert isinstance(Dual(np.array(1.0), np.array(1.0)), Dual)


def test_jacfwd_through_separated_advanced_indices():
    # Integer arrays separated by a slice move their axis to the front, so a
    # chunk of tangents cannot keep its batch axis in front: getitem's batch
    # rule declines, and the JVP once failed instead of taking one direction
    # at a time.
    x = np.arange(24.0).reshape(2, 3, 4)

    def f(a):
        return a[np.array([0, 1]), :, np.array([1, 2])]

    columns = [jvp(f, (x,), (e.reshape(x.shape),))[1] for e in np.eye(x.size)]
    expected = np.stack(columns, axis=-1).reshape((2, 3) + x.shape)
    np.testing.assert_array_equal(dualad.jacfwd(f)(x), expected)


# -- a value that escapes its transform ----------------------------------------------------------
def _escaping(kept):
    def f(x):
        kept.append(x * 2.0)
        return ops.sum(x ** 2)
    return f


def test_a_dual_that_escapes_jvp_raises_when_used():
    """It used to come back as a Dual of a dead level: a later result silently
    changed type, and inside a later jvp its stale tangent mixed in."""
    kept = []
    out, t = jvp(_escaping(kept), (np.ones(3),), (np.ones(3),))
    assert (out, t) == (3.0, 6.0)
    with pytest.raises(dualad.EscapedValueError, match="forward-mode.*escaped"):
        np.sin(kept[0])
    with pytest.raises(dualad.EscapedValueError):
        jvp(lambda x: x * kept[0], (np.ones(3),), (np.ones(3),))
    np.testing.assert_array_equal(kept[0].primal, 2.0)  # reading its parts is fine


def test_nested_forward_transforms_keep_their_levels_open():
    # The inner jvp's level closes while the outer one is still running.
    f = lambda x: ops.sum(ops.sin(x) ** 3)  # noqa: E731
    x = np.array([0.3, -0.7])
    h = dualad.hessian(f)(x)
    d2 = 6 * np.sin(x) * np.cos(x) ** 2 - 3 * np.sin(x) ** 3
    np.testing.assert_allclose(h, np.diag(d2), rtol=1e-12, atol=1e-15)


# -- misuse that crashed inside a rule (AttributeError, IndexError) now names its argument ----------
@pytest.mark.parametrize("call, pattern", [
    (lambda: jvp(ops.sin, (None,), (1.0,)),
     r"jvp: tangents must have the structure of primals, \(None,\); got \(\*,\)"),
    (lambda: jvp(ops.sin, (np.ones(2),), (None,)),
     r"jvp: tangents must have the structure of primals, \(\*,\); got \(None,\)"),
    (lambda: Dual(None, 1.0), r"Dual: primal must be .*got None"),
    (lambda: Dual(np.ones(2), None), r"Dual: tangent must be .*shape \(2,\), got None"),
    (lambda: Dual(np.ones(2), "a"), r"Dual: tangent must be .*got a str \('a'\)"),
    (lambda: HyperDual(None), r"HyperDual: primal must be .*got None"),
    (lambda: HyperDual(1.0, None), r"HyperDual: eps1: tangent must be .*got None"),
    (lambda: dualad.jacfwd(ops.sin)(None), r"jacfwd: x must be .*got None"),
    (lambda: dualad.derivative(ops.sin)(None), r"derivative: x must be .*got None"),
], ids=["jvp-primal", "jvp-tangent", "Dual-primal", "Dual-tangent", "Dual-str-tangent", "HyperDual-primal",
        "HyperDual-eps1", "jacfwd", "derivative"])
def test_none_as_an_input_tangent_or_dual_part(call, pattern):
    with pytest.raises(TypeError, match=pattern):
        call()


@pytest.mark.parametrize("who, call", [
    ("jvp", lambda f: jvp(f, (np.ones(2),), (np.ones(2),))),
    ("jacfwd", lambda f: dualad.jacfwd(f)(np.ones(2))),
    ("derivative", lambda f: dualad.derivative(f)(1.0)),
])
def test_forward_transform_of_a_function_returning_a_string(who, call):
    with pytest.raises(TypeError, match=rf"{who}: f must return arrays or floats .*got a str"):
        call(lambda x: "abc")


def test_none_in_an_output_is_an_empty_pytree_as_in_jax():
    assert jvp(lambda x: None, (np.ones(2),), (np.ones(2),)) == (None, None)
    out, t = jvp(lambda x: (2.0 * x, None), (np.ones(2),), (np.ones(2),))
    assert out[1] is None and t[1] is None and np.array_equal(t[0], [2.0, 2.0])
    assert dualad.jacfwd(lambda x: None)(np.ones(2)) is None
    assert dualad.derivative(lambda x: (x, None))(1.0) == (1.0, None)


def test_a_function_returning_a_list_of_floats_is_a_pytree_to_jvp():
    """Only grad-like transforms need one scalar: a list is a valid jvp output."""
    out, t = jvp(lambda x: [x * 2.0, 3.0], (1.0,), (1.0,))
    assert out == [2.0, 3.0] and t == [2.0, 0.0]


@pytest.mark.parametrize("make", [dualad.jacfwd, dualad.hessian], ids=["jacfwd", "hessian"])
@pytest.mark.parametrize("chunk, error", [(1.5, TypeError), (True, TypeError), (0, ValueError)])
def test_chunk_size_must_be_a_positive_int(make, chunk, error):
    # 1.5 failed in range() at the first call, naming no argument; it now fails when
    # the transform is made.
    with pytest.raises(error, match=rf"chunk_size must be an int >= 1, got .*{chunk}"):
        make(ops.sin, chunk_size=chunk)


@pytest.mark.parametrize("x", [np.array([1.0, 2.0]), np.array([2.0])], ids=["shape (2,)", "shape (1,)"])
def test_derivative_of_an_array_input_points_to_jvp(x):
    # It silently returned the elementwise derivative along ones, which is not f'(x).
    with pytest.raises(TypeError, match=rf"derivative: x must be a scalar.*shape \({x.size},\).*dualad.jvp"):
        dualad.derivative(lambda a: ops.sum(a ** 2))(x)
    assert dualad.derivative(lambda a: a ** 2)(np.array(2.0)) == 4.0  # a 0-d array is a scalar


# Sibling Duals built around Duals each took a level of their own, so they were two
# perturbations, one nested in the other: the second derivative of x^2 y read 0.
def test_sibling_nested_duals_are_one_perturbation():
    x, y = 0.5, 2.0
    a, b = Dual(Dual(x, 1.0), 1.0), Dual(Dual(y, 0.0), 0.0)
    out = a * a * b
    assert out.primal.primal == x * x * y
    assert out.tangent.tangent == 2.0 * y  # d2/dx2 of x^2 y
    assert out.tangent.primal == out.primal.tangent == 2.0 * x * y


# The same under compile: HyperDuals built around traced values were nested, so
# value, gradient and Hessian came back as HyperDuals of tracers (escaped from the
# trace), and the program kept had no outputs.
def test_hyperduals_built_around_traced_values_combine():
    def value_grad_hessian(x, y):
        hx, hy = HyperDual(x, 1.0, 0.0, 0.0), HyperDual(y, 0.0, 1.0, 0.0)
        out = ops.exp(hx * hy) * ops.sin(hx)
        return out.primal, out.eps1, out.eps2, out.eps1eps2

    compiled = dualad.compile(value_grad_hessian)
    for x, y in ((0.5, -0.7), (1.5, 0.25)):
        got = compiled(np.float64(x), np.float64(y))
        want = value_grad_hessian(x, y)
        assert all(type(g) is np.float64 for g in got)
        np.testing.assert_allclose(got, want, rtol=1e-14)
    assert compiled.stats["replays"] == 1


def test_compile_of_a_function_returning_a_dual_runs_it_eagerly():
    compiled = dualad.compile(lambda x: Dual(x, ops.ones_like(x)) * 2.0)
    with pytest.warns(RuntimeWarning, match="returned a Dual"):
        out = compiled(np.array([1.0, 2.0]))
    assert type(out) is Dual and type(out.primal) is np.ndarray
    np.testing.assert_array_equal(out.tangent, [2.0, 2.0])
    with pytest.raises(ValueError, match="returned a Dual"):
        compiled.program(np.array([1.0, 2.0]))


# x // y and x % y were floor(x / y) and x - floor(x / y) * y: 1.0 // 0.1 gave 10.0 (NumPy 9.0,
# as 0.1 is a little more than a tenth), 1.0 % 0.1 gave 0.0 (NumPy 0.1), -0.0 % -2.0 gave +0.0.
@pytest.mark.parametrize("op, numpy_op", [(ops.floor_divide, np.floor_divide), (ops.remainder, np.remainder)])
@pytest.mark.parametrize("x, y", [(np.array([1.0, 0.3, -0.0, 7.5, -7.5]), 0.1),
                                  (np.array([1.0, 0.3, -0.0, 7.5, -7.5]), -2.0),
                                  (np.array([5, -5, 0, 7]), 3), (np.float64(1.0), 0.1)])
def test_floor_divide_and_remainder_are_numpys(op, numpy_op, x, y):
    want = numpy_op(x, y)
    compiled = dualad.compile(lambda v: op(v, y))
    got = [op(x, y), compiled(x), compiled(x)]
    if x.dtype.kind == "f":
        got.append(jvp(lambda v: op(v, y), (x,), (np.ones_like(x),))[0])
    for g in got:
        np.testing.assert_array_equal(g, want)
        assert np.array_equal(np.signbit(g), np.signbit(want)) and np.result_type(g) == np.result_type(want)


# -- found by the CuPy tests on a GPU (an H200), kept fixed on the CPU ------------------
@pytest.fixture
def strict_refuses_conversion(monkeypatch):
    """array_api_strict refusing ``np.asarray()``, as CuPy does: a rule that hands a
    device array to NumPy fails here as it did on the GPU."""
    import array_api_strict

    def refuse(self, dtype=None, copy=None):
        raise TypeError("implicit conversion to a NumPy array refused (as CuPy does)")

    monkeypatch.setattr(array_api_strict._array_object.Array, "__array__", refuse)
    return array_api_strict


def test_index_set_with_a_device_index_reads_it_explicitly(strict_refuses_conversion):
    # index_set's host positions came from np.asarray(index): CuPy refused it, so
    # index_set and put_along_axis with a CuPy integer index raised.
    xs = strict_refuses_conversion
    base, values = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[10.0], [20.0]])
    index = np.array([[1], [0]])
    expected = base.copy()
    np.put_along_axis(expected, index, values, axis=1)
    out, tan = jvp(lambda b, v: ops.put_along_axis(b, xs.asarray(index), v, axis=1, inplace=False),
                   (xs.asarray(base), xs.asarray(values)), (xs.asarray(np.ones((2, 2))), xs.asarray(values)))
    np.testing.assert_array_equal(to_numpy(out), expected)
    np.testing.assert_array_equal(to_numpy(tan), [[1.0, 10.0], [20.0, 1.0]])
    out = ops.index_set(xs.asarray(np.zeros(3)), xs.asarray(np.array([5.0, 7.0])),
                        (xs.asarray(np.array([0, 0])),))
    np.testing.assert_array_equal(to_numpy(out), [7.0, 0.0, 0.0])  # the last write wins


def test_special_functions_pass_python_numbers_to_the_backend_as_arrays(monkeypatch):
    # digamma's derivative calls polygamma(1, x); cupyx.scipy.special.polygamma
    # refuses a Python int for n (it calls n == 0 and then .astype on the bool).
    import scipy.special

    import dualad._primitives.special as special

    class LikeCupyx:
        def __getattr__(self, name):
            return getattr(scipy.special, name)

        @staticmethod
        def polygamma(n, x):
            if not hasattr(n, "dtype"):
                raise AttributeError("'int' object has no attribute 'astype'")
            return scipy.special.polygamma(n, x)

    monkeypatch.setattr(special, "scipy_module", lambda xp, submodule, name: LikeCupyx())
    x = np.array([0.5, 1.5, 3.0])
    d = ops.gammaln(Dual(x, np.ones(3)))
    np.testing.assert_allclose(d.tangent, scipy.special.digamma(x), rtol=1e-14)
    d = ops.digamma(Dual(x, np.ones(3)))
    np.testing.assert_allclose(d.tangent, scipy.special.polygamma(1, x), rtol=1e-14)


# concatenate(axis=None) joined the arrays along axis 0 (normalize_axis read None as every
# axis, the first of them), a (10, 2) result where NumPy flattens each array: (20,).
@pytest.mark.parametrize("shapes", [[(5, 2), (5, 2)], [(2, 3), (4,)], [(), (2, 2)]], ids=str)
def test_concatenate_without_an_axis_flattens_as_numpys(shapes):
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s) for s in shapes]
    got = ops.concatenate(arrays, axis=None)
    want = np.concatenate(arrays, axis=None)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    tangents = [rng.standard_normal(s) for s in shapes]
    _, t = jvp(lambda *xs: ops.concatenate(list(xs), axis=None), arrays, tangents)
    np.testing.assert_array_equal(t, np.concatenate(tangents, axis=None))


# where(c, 1, 2) of two Python numbers was made float64 under compile (the first one
# was cast to float), where NumPy gives int64: the first GPU run's CuPy kernels were
# refused for it, and the NumPy executor returned the wrong dtype silently.
@pytest.mark.parametrize("a, b", [(1, 2), (1, 2.5), (1.0, 2), (True, 2), (True, False), (1, 1j), (2**63, 1),
                                  (2.5, 1j)])
def test_where_of_two_python_numbers_has_numpys_dtype_under_compile(a, b):
    def f(x):
        return np.where(x < 0, a, b) * 3

    compiled = dualad.compile(f)
    x = np.linspace(-1.0, 1.0, 6)
    want = f(x)
    for got in (compiled(x), compiled(x[::-1].copy())):  # the trace, then a replay
        assert got.dtype == want.dtype
    np.testing.assert_array_equal(compiled(x), want)
    assert compiled.stats["replays"] == 2

"""``vmap``'s calling convention (in_axes, out_axes, pytrees, errors), its
composition with the other transforms, and ``linearize`` / ``linear_transpose``.
Every primitive under ``vmap`` is checked from the case table in
test_vmap_cases.py."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from _support.backends import BACKENDS, dtype_name, to_numpy
from _support.golden import assert_close, decode
from _support.jax_peer_cases import VMAP_SEMANTICS, recorded

import dualad
import mixed
import reverse
from dualad import ops, vmap
from dualad._table import batching as _batching_rules

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 3))
Y = RNG.standard_normal((4, 3))


def loop(f, *args):
    """The reference: ``f`` on each element (axis 0 of every argument), stacked."""
    return np.stack([f(*[a[i] for a in args]) for i in range(len(args[0]))])


# -- in_axes ---------------------------------------------------------------------------------
def test_in_axes_none_keeps_an_argument_whole():
    got = vmap(lambda x, y: x * y.sum(), in_axes=(0, None))(X, Y)
    np.testing.assert_allclose(got, X * Y.sum())


@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_in_axes_anywhere_and_negative(axis):
    xs = np.moveaxis(RNG.standard_normal((5, 2, 3)), 0, axis % 3)
    got = vmap(lambda x: x @ np.ones(3), in_axes=axis)(xs)
    np.testing.assert_allclose(got, np.moveaxis(xs, axis % 3, 0) @ np.ones(3))


def test_in_axes_is_a_pytree_prefix_of_each_argument():
    def f(params, x):
        return params["w"] @ x + params["b"]
    params = {"w": RNG.standard_normal((4, 2, 3)), "b": np.ones(2)}
    got = vmap(f, in_axes=({"w": 0, "b": None}, 1))(params, X.T)
    np.testing.assert_allclose(got, np.stack([params["w"][i] @ X[i] + 1.0 for i in range(4)]))


@dataclass
class Pair:
    a: object
    b: object


def test_dataclass_and_tuple_arguments_and_outputs():
    got = vmap(lambda p, t: Pair(p.a + t[0], p.b * t[1]))(Pair(X, Y), (Y, X))
    assert isinstance(got, Pair)
    np.testing.assert_allclose(got.a, X + Y)
    np.testing.assert_allclose(got.b, Y * X)


def test_keyword_arguments_are_batched_along_axis_0():
    np.testing.assert_allclose(vmap(lambda x, *, y: x - y, in_axes=None)(1.0, y=Y), 1.0 - Y)


# -- out_axes ---------------------------------------------------------------------------------
@pytest.mark.parametrize("out_axes", [0, 1, -1, -2])
def test_out_axes(out_axes):
    got = vmap(lambda x: ops.outer(x, x[:2]), out_axes=out_axes)(X)  # elements (3, 2): out (4, 3, 2)
    np.testing.assert_allclose(got, np.moveaxis(np.einsum("bi,bj->bij", X, X[:, :2]), 0, out_axes))


def test_out_axes_per_output_and_none_for_an_unbatched_output():
    a, b, c = vmap(lambda x: (x, x.sum(), 2.0), out_axes=(1, 0, None))(X)
    np.testing.assert_allclose(a, X.T)
    np.testing.assert_allclose(b, X.sum(axis=1))
    assert c == 2.0


def test_an_output_that_does_not_depend_on_the_batch_is_broadcast():
    w = np.arange(3.0)
    got = vmap(lambda x, w: (w, 5.0), in_axes=(0, None), out_axes=(1, 0))(X, w)
    np.testing.assert_array_equal(got[0], np.broadcast_to(w[:, None], (3, 4)))
    np.testing.assert_array_equal(got[1], np.full(4, 5.0))


# -- errors -----------------------------------------------------------------------------------
def test_batch_size_mismatch_names_each_argument():
    with pytest.raises(ValueError,
                       match=r"args\[0\] has size 4 along axis 0; args\[1\] has size 3 along axis 1"):
        vmap(lambda x, y: x, in_axes=(0, 1))(X, Y)


def test_axis_out_of_range_names_the_argument_and_its_shape():
    with pytest.raises(ValueError, match=r"args\[1\]\['b'\] the batch axis 2.*shape \(3,\)"):
        vmap(lambda x, d: x, in_axes=(0, {"b": 2}))(X, {"b": np.ones(3)})


def test_in_axes_must_match_the_arguments():
    with pytest.raises(ValueError, match="in_axes has 1 entries but the function was called with 2"):
        vmap(lambda x, y: x, in_axes=(0,))(X, Y)
    with pytest.raises(ValueError, match=r"in_axes\[0\] must be an int, None, or a pytree prefix"):
        vmap(lambda d: d, in_axes=([0, 0],))({"a": X})
    with pytest.raises(TypeError, match="in_axes must be an int, None, or a pytree of them, got a str"):
        vmap(lambda x: x, in_axes="0")
    with pytest.raises(ValueError, match="batches none of the arguments"):
        vmap(lambda x: x, in_axes=None)(X)


def test_out_axes_none_for_a_batched_output_is_an_error():
    with pytest.raises(ValueError, match=r"out_axes is None for output\[1\], which depends"):
        vmap(lambda x: (1.0, x), out_axes=None)(X)


def test_a_batched_value_that_escapes_is_an_error():
    kept = []
    vmap(lambda x: kept.append(x) or x)(X)
    with pytest.raises(dualad.EscapedValueError):
        kept[0] + 1.0


# -- batch rules: the common families do not loop ------------------------------------------
def test_elementwise_linear_and_reductions_take_their_batch_rules(monkeypatch):
    def no_loop(prim, *args):
        raise AssertionError(f"{prim.name} was applied one element at a time")
    monkeypatch.setattr(_batching_rules, "one_element_at_a_time", no_loop)
    w = np.arange(3.0)

    def f(x, y):
        z = np.sin(x) * w + np.exp(y[0]) - np.maximum(x, 0.0)
        return (z.reshape(3, 1).T[:, 1:] ** 2).sum() + np.cumsum(np.flip(x))[1] + np.sum(x, keepdims=True)
    got = vmap(f)(X, Y)
    np.testing.assert_allclose(got, loop(f, X, Y))


MATS = RNG.standard_normal((50, 4, 4)) + 4 * np.eye(4)
SPD = MATS @ MATS.transpose(0, 2, 1)
COLS, VECS = RNG.standard_normal((50, 4, 2)), RNG.standard_normal((50, 4))
A5 = RNG.standard_normal((5, 4, 4)) + 4 * np.eye(4)

# name of the entry, the function, its batched arguments: each element i of the batch is
# f(*[a[i] for a in args]); an argument closed over stays unbatched
STACKED = {
    "svd": ("svd", lambda a: np.linalg.svd(a, full_matrices=False)[1], (MATS,)),
    "solve-matrix": ("solve", np.linalg.solve, (MATS, COLS)),
    "solve-vector": ("solve", np.linalg.solve, (MATS, VECS)),
    "solve-unbatched-stack": ("solve", lambda b: np.linalg.solve(A5, b), (COLS,)),
    "solve-unbatched-vector-b": ("solve", lambda a: np.linalg.solve(a, VECS[0]), (MATS,)),
    "matmul": ("matmul", np.matmul, (MATS, COLS)),
    "matvec": ("matmul", lambda a, x: a @ x, (MATS, VECS)),
    "vecmat": ("matmul", lambda x, a: x @ a, (VECS, MATS)),
    "vecvec": ("matmul", lambda x, y: x @ y, (VECS, VECS)),
    "matvec-unbatched-matrix": ("matmul", lambda x: MATS[0] @ x, (VECS,)),
    "vecvec-unbatched-y": ("matmul", lambda x: x @ VECS[0], (VECS,)),
    "vecmat-unbatched-x": ("matmul", lambda a: VECS[0] @ a, (MATS,)),
    "eigh": ("eigh", lambda a: np.linalg.eigh(a)[0], (SPD,)),
    "inv": ("inv", np.linalg.inv, (MATS,)),
    "det": ("det", np.linalg.det, (MATS,)),
    "slogdet": ("slogdet", lambda a: np.linalg.slogdet(a)[1], (MATS,)),
    "cholesky": ("cholesky", np.linalg.cholesky, (SPD,)),
    "qr": ("qr", lambda a: np.linalg.qr(a)[1], (MATS,)),
    "pinv": ("pinv", np.linalg.pinv, (MATS,)),
    "norm": ("norm2", lambda a: np.linalg.norm(a, axis=-1), (MATS,)),
    "max": ("max", lambda a: np.max(a, axis=0), (MATS,)),
}


@pytest.fixture
def impl_calls(monkeypatch):
    """Counts of each entry's impl calls, by name."""
    calls = {}
    for prim in list(dualad.extend.REGISTRY.values()):
        def counting(xp, *args, _real=prim.impl, _name=prim.name, **params):
            calls[_name] = calls.get(_name, 0) + 1
            return _real(xp, *args, **params)
        monkeypatch.setattr(prim, "impl", counting)
    return calls


@pytest.mark.parametrize("case", sorted(STACKED))
def test_entries_whose_impl_takes_a_stack_run_a_batch_in_one_call(case, impl_calls):
    name, f, args = STACKED[case]
    want = loop(f, *args)
    impl_calls.clear()
    got = vmap(f)(*args)
    assert impl_calls.get(name) == 1, impl_calls
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", ["svd", "solve-vector", "matvec", "vecmat", "eigh", "det"])
def test_derivatives_of_stacked_entries_under_vmap_equal_the_loop(case):
    _, f, args = STACKED[case]
    tangents = tuple(RNG.standard_normal(a.shape) for a in args)
    got = vmap(lambda *xt: dualad.jvp(f, xt[:len(args)], xt[len(args):])[1])(*args, *tangents)
    want = loop(lambda *xt: dualad.jvp(f, xt[:len(args)], xt[len(args):])[1], *args, *tangents)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    scalar = lambda *xs: np.sum(f(*xs) ** 2)
    np.testing.assert_allclose(vmap(reverse.grad(scalar))(*args), loop(reverse.grad(scalar), *args),
                               rtol=1e-9, atol=1e-12)


def test_an_entry_that_declares_no_batch_rule_loops_and_is_right():
    from dualad.extend import custom, unregister
    twice = custom("twice_rows", lambda xp, a: 2.0 * a, jvp=lambda p, t, ans: 2.0 * t[0],
                   vjp=lambda g, ans, a: (2.0 * g,), register=False)
    calls = []
    real = _batching_rules.one_element_at_a_time

    def counting(prim, *args):
        calls.append(prim.name)
        return real(prim, *args)
    try:
        _batching_rules.one_element_at_a_time = counting
        got = vmap(lambda a: dualad.bind(twice, a))(MATS[:3])
    finally:
        _batching_rules.one_element_at_a_time = real
        unregister("twice_rows")
    assert calls == ["twice_rows"]
    np.testing.assert_allclose(got, 2.0 * MATS[:3])


# -- composition -------------------------------------------------------------------------------
def mlp_loss(params, x, y):
    h = np.tanh(x @ params["w1"] + params["b1"])
    return np.mean((h @ params["w2"] - y) ** 2)


PARAMS = {"w1": RNG.standard_normal((3, 5)), "b1": RNG.standard_normal(5), "w2": RNG.standard_normal((5, 2))}


def test_per_example_gradients_are_the_loop_of_grads():
    xs, ys = RNG.standard_normal((6, 3)), RNG.standard_normal((6, 2))
    got = vmap(reverse.grad(mlp_loss), in_axes=(None, 0, 0))(PARAMS, xs, ys)
    for k in PARAMS:
        want = np.stack([reverse.grad(mlp_loss)(PARAMS, xs[i], ys[i])[k] for i in range(6)])
        np.testing.assert_allclose(got[k], want, rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_per_example_gradients_on_each_backend_in_float32(backend):
    xs = backend.asarray(X, "float32")
    got = vmap(reverse.grad(lambda x: ops.sum(ops.sin(x) * x)))(xs)
    assert dtype_name(got) == "float32"
    np.testing.assert_allclose(to_numpy(got), np.cos(X) * X + np.sin(X), rtol=1e-5)


def test_grad_of_a_function_that_uses_vmap():
    xs, ys = RNG.standard_normal((6, 3)), RNG.standard_normal((6, 2))
    total = reverse.grad(lambda p: vmap(mlp_loss, in_axes=(None, 0, 0))(p, xs, ys).sum())(PARAMS)
    for k in PARAMS:
        want = sum(reverse.grad(mlp_loss)(PARAMS, xs[i], ys[i])[k] for i in range(6))
        np.testing.assert_allclose(total[k], want, rtol=1e-12)


def test_vmap_of_jvp_and_jacfwd_of_vmap():
    def f(x):
        return np.sin(x) * np.sum(x ** 2)
    got = vmap(lambda x, v: dualad.jvp(f, (x,), (v,))[1])(X, Y)
    np.testing.assert_allclose(got, loop(lambda x, v: dualad.jvp(f, (x,), (v,))[1], X, Y))
    jac = dualad.jacfwd(vmap(f))(X)  # (4, 3, 4, 3), block-diagonal in the batch
    for i in range(4):
        np.testing.assert_allclose(jac[i, :, i], np.diag(np.cos(X[i])) * np.sum(X[i] ** 2)
                                   + np.outer(np.sin(X[i]), 2 * X[i]), rtol=1e-12)
        assert not np.any(jac[i, :, np.arange(4) != i])


def test_vmap_of_vmap():
    xs = RNG.standard_normal((2, 4, 3))
    got = vmap(vmap(lambda x, w: x @ w, in_axes=(0, None)), in_axes=(0, None))(xs, np.ones(3))
    np.testing.assert_allclose(got, xs.sum(axis=-1))
    outer = vmap(vmap(lambda a, b: a * b, in_axes=(None, 0)), in_axes=(0, None))(X[0], X[1])
    np.testing.assert_allclose(outer, np.outer(X[0], X[1]))


def test_hvp_inside_vmap():
    def f(x):
        return np.sum(x ** 3) * np.sum(x)
    got = vmap(lambda x, v: mixed.hvp(f, x, v))(X, Y)
    want = np.stack([(6 * np.diag(x) * x.sum() + 3 * np.outer(x ** 2, np.ones(3))
                      + 3 * np.outer(np.ones(3), x ** 2)) @ v for x, v in zip(X, Y)])
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_no_grad_inside_vmap_keeps_the_batch():
    def f(x):
        with reverse.no_grad():
            scale = np.sum(x)
        return scale * x
    np.testing.assert_allclose(vmap(f)(X), X.sum(axis=1, keepdims=True) * X)
    g = vmap(reverse.grad(lambda x: np.sum(f(x))))(X)
    np.testing.assert_allclose(g, np.broadcast_to(X.sum(axis=1, keepdims=True), X.shape))


# -- linearize and linear_transpose ---------------------------------------------------------
def test_linearize_gives_the_jvp_at_the_primals():
    out, f_jvp = dualad.linearize(lambda x, y: np.sin(x) * y, X[0], Y[0])
    np.testing.assert_allclose(out, np.sin(X[0]) * Y[0])
    np.testing.assert_allclose(f_jvp(X[1], Y[1]), np.cos(X[0]) * X[1] * Y[0] + np.sin(X[0]) * Y[1])
    chunk = f_jvp(X[:2], Y[:2])  # two directions in one call
    np.testing.assert_allclose(chunk[1], np.cos(X[0]) * X[1] * Y[0] + np.sin(X[0]) * Y[1])


def test_linearize_checks_its_tangents():
    _, f_jvp = dualad.linearize(lambda d: d["a"] * 2.0, {"a": X[0]})
    with pytest.raises(TypeError, match="linearize: tangents must have the structure of primals"):
        f_jvp({"b": X[0]})


def test_linear_transpose_is_the_adjoint():
    A = RNG.standard_normal((3, 4))
    f_t = dualad.linear_transpose(lambda x, y: (A @ x, 2.0 * y.sum()), np.zeros(4), np.zeros(2))
    ct = (Y[0], 3.0)
    tx, ty = f_t(ct)
    np.testing.assert_allclose(tx, A.T @ Y[0])
    np.testing.assert_allclose(ty, np.full(2, 6.0))


def test_composites_that_compute_on_raw_values():
    """Masks, sort orders and indices computed from the values stay batched (each
    element's own), also under a derivative taken inside or outside vmap."""
    np.testing.assert_allclose(vmap(lambda x: ops.clip(x, -0.5, 0.5))(X), np.clip(X, -0.5, 0.5))
    np.testing.assert_allclose(vmap(ops.sort)(X), np.sort(X, axis=-1))
    np.testing.assert_array_equal(vmap(ops.argmax)(X), np.argmax(X, axis=-1))
    per_example = vmap(reverse.grad(lambda x: ops.sum(ops.sort(x) * np.arange(X.shape[1]))))(X)
    want = np.stack([reverse.grad(lambda x: ops.sum(ops.sort(x) * np.arange(X.shape[1])))(x) for x in X])
    np.testing.assert_allclose(per_example, want)
    _, tangent = dualad.jvp(vmap(lambda x: ops.median(x)), (X,), (Y,))
    np.testing.assert_allclose(tangent, [dualad.jvp(ops.median, (x,), (y,))[1] for x, y in zip(X, Y)])


@pytest.mark.parametrize("f, name", [
    (lambda x: ops.extract(x > 0.0, x), "extract"),
    (lambda x: ops.trim_zeros(x), "trim_zeros"),
    (lambda x: ops.nonzero(x > 0.0), "nonzero"),
    (lambda x: x[x > 0.0], "indexing"),
])
def test_value_dependent_shapes_are_refused(f, name):
    """A result whose shape depends on the values has no one shape for a batch: a
    TypeError that names vmap and the operation, never a wrong answer."""
    with pytest.raises(TypeError, match=f"^vmap: {name}"):
        vmap(f)(X)


def test_a_python_branch_on_a_batched_value_is_refused():
    with pytest.raises(TypeError, match="^vmap: bool"):
        vmap(lambda x: x if x.sum() > 0 else -x)(X)


# -- against JAX's numbers, recorded by tests/make_jax_peer_golden.py -------------------------
@pytest.mark.parametrize("case", range(len(VMAP_SEMANTICS)))
def test_vmap_semantics_match_jax(case):
    f, in_axes, out_axes = VMAP_SEMANTICS[case]
    golden = recorded()["vmap_semantics"][case]
    got = vmap(f, in_axes, out_axes)(decode(golden["x"]), decode(golden["w"]))
    got_leaves = dualad._base.tree.flatten(got)[0]
    assert len(got_leaves) == len(golden["leaves"])
    for g, want in zip(got_leaves, golden["leaves"]):
        assert_close(g, want, rtol=1e-12)


def test_linearize_and_linear_transpose_match_jax():
    golden = recorded()["vmap_linearize"]
    A = decode(golden["a"])
    _, ours = dualad.linearize(lambda x: np.tanh(A @ x), decode(golden["x"]))
    assert_close(ours(decode(golden["t"])), golden["jvp"], rtol=1e-12)
    ours_t = dualad.linear_transpose(lambda x: A @ x, np.zeros(4))(decode(golden["cotangent"]))
    assert_close(ours_t[0], golden["transpose"], rtol=1e-12)


def test_values_functions_see_batched_values_inside_lists_and_tuples():
    """np.lexsort((a, b)) and ravel_multi_index((r, c), ...) take their arrays in a
    tuple: under vmap each element's own keys must be used, not the whole batch."""
    a, b = np.array([[3.0, 1.0, 2.0], [1.0, 2.0, 3.0]]), np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]])
    got = dualad.vmap(lambda a, b: np.lexsort((a, b)))(a, b)
    np.testing.assert_array_equal(got, [np.lexsort((a[k], b[k])) for k in range(2)])
    r, c = np.array([[0, 1], [2, 0]]), np.array([[1, 2], [3, 0]])
    got = dualad.vmap(lambda r, c: np.ravel_multi_index([r, c], (3, 4)))(r, c)
    np.testing.assert_array_equal(got, [np.ravel_multi_index([r[k], c[k]], (3, 4)) for k in range(2)])


# -- vmap of derivatives through reductions with ties (issue 26) --------------------------------
TIED = RNG.standard_normal((3, 6))
TIED[0, 2] = TIED[0, 4] = TIED[0].max() + 1.0  # a tie for the max in the first element
DIRECTION = np.linspace(0.5, 1.5, 6)
REDUCTIONS = {"max": np.max, "min": np.min, "max-axis-0": lambda x: np.max(x.reshape(2, 3), axis=0),
              "ptp": np.ptp, "sort": lambda x: np.sort(x)[-2:], "logsumexp": lambda x: ops.logsumexp(x)}
DERIVATIVES = {
    "jvp": lambda f: lambda x: dualad.jvp(f, (x,), (DIRECTION,))[1],
    "jacfwd": lambda f: dualad.jacfwd(f),
    "grad": lambda f: reverse.grad(lambda x: np.sum(f(x) * f(x))),
    "hvp": lambda f: lambda x: mixed.hvp(lambda y: np.sum(f(y) ** 2), x, DIRECTION),
}


@pytest.mark.parametrize("derivative", sorted(DERIVATIVES))
@pytest.mark.parametrize("reduction", sorted(REDUCTIONS))
def test_vmap_of_a_derivative_through_a_reduction_equals_the_loop(reduction, derivative):
    """The max/min rule read its residual from the raw arrays, so under vmap it saw the
    batch as one more axis: jvp of max gave shape (3, 3) for (3,), jacfwd and hvp raised."""
    g = DERIVATIVES[derivative](REDUCTIONS[reduction])
    want = loop(g, TIED)
    got = vmap(g)(TIED)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def _relu_loss(params, x, y):
    w1, w2 = params
    return np.sum((np.maximum(x @ w1, 0.0) @ w2 - y) ** 2)


RELU_PARAMS = (RNG.standard_normal((5, 8)), RNG.standard_normal((8, 3)))


def test_per_example_gradients_of_a_relu_network_written_with_maximum():
    """maximum's tie rule asked bool(any(tie)) of the batch, which vmap refuses."""
    xs, ys = RNG.standard_normal((6, 5)), np.eye(3)[RNG.integers(0, 3, 6)]
    g = reverse.grad(_relu_loss)
    got = vmap(g, in_axes=(None, 0, 0))(RELU_PARAMS, xs, ys)
    for j in range(2):
        np.testing.assert_allclose(got[j], np.stack([g(RELU_PARAMS, x, y)[j] for x, y in zip(xs, ys)]))


def test_maximum_shares_a_tie_in_each_element_of_a_batch():
    xs = np.array([[1.0, 2.0, 3.0], [2.0, 0.0, 2.0]])  # ties with 2.0 at different places
    g = reverse.grad(lambda x: np.sum(np.maximum(x, 2.0) * np.arange(1.0, 4.0)))
    np.testing.assert_array_equal(vmap(g)(xs), loop(g, xs))
    np.testing.assert_array_equal(vmap(g)(xs), [[0.0, 1.0, 3.0], [0.5, 0.0, 1.5]])


def _nll(w, x, y):
    z = x @ w
    return -(z - ops.logsumexp(z))[y]


@pytest.mark.parametrize("derivative", ["grad", "jacfwd", "hvp"])
def test_indexing_by_a_per_example_label_under_vmap_of_a_derivative(derivative):
    """logp[y] with y batched was refused as if the result's shape depended on the values."""
    w, xs, ys = RNG.standard_normal((4, 3)), RNG.standard_normal((5, 4)), RNG.integers(0, 3, 5)
    g = {"grad": lambda x, y: reverse.grad(_nll)(w, x, y),
         "jacfwd": lambda x, y: dualad.jacfwd(lambda w: _nll(w, x, y))(w),
         "hvp": lambda x, y: mixed.hvp(lambda w: _nll(w, x, y), w, np.ones_like(w))}[derivative]
    np.testing.assert_allclose(vmap(g)(xs, ys), loop(g, xs, ys), rtol=1e-13, atol=1e-13)


def test_indexing_by_a_batched_argmax_and_refusing_a_batched_mask():
    np.testing.assert_array_equal(vmap(lambda x: x[np.argmax(x)])(X), X.max(axis=1))
    with pytest.raises(TypeError, match="mask computed from batched values"):
        vmap(lambda x: x[x > 0])(X)


def test_item_assignment_on_a_batched_array_is_numpy_s_in_each_element():
    """``y[idx] = v`` and ``y[idx] += v`` (a repeated index: the last write wins, as NumPy's
    ``+=`` does) on a batched ``y`` give each element's own result, and never write the
    caller's array; a value with a derivative of a transform inside vmap is refused."""
    def add_at(y, v):
        y = y.copy()
        y[np.array([0, 0, 2])] += v
        return y

    def set_row(y, v):
        y[1] = v * 2.0
        return y

    ys, vs = np.arange(6.0).reshape(2, 3), np.array([1.0, 5.0])
    before = ys.copy()
    for f in (add_at, set_row):
        got = dualad.vmap(f)(ys, vs)
        want = np.stack([f(ys[i].copy(), vs[i]) for i in range(2)])
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(ys, before)
    with pytest.raises(TypeError, match=r"vmap: b\[idx\] = value: .*dualad.ops.index_set"):
        dualad.vmap(lambda y, v: dualad.jvp(lambda u: set_row(y.copy(), u), (v,), (1.0,))[1])(ys, vs)

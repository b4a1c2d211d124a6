"""One calling convention: pytrees, ``argnums`` and ``has_aux`` in every transform.

Each Jacobian and Hessian is checked across modes (forward, reverse, forward
over reverse) and against finite differences of flattened functions, and
against JAX's nesting where JAX is installed.
"""

import weakref
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pytest
from _support.golden import assert_close, decode
from _support.jax_peer_cases import recorded

import dualad
import mixed
import reverse
from dualad._base.tree import flatten

RNG = np.random.default_rng(11)
A = RNG.standard_normal(3)
B = RNG.standard_normal((2, 3))


@dataclass
class Params:
    w: np.ndarray
    b: np.ndarray


class Point(NamedTuple):
    x: np.ndarray
    y: float


def loss(p):
    """A scalar of a pytree: a dict holding a dataclass, a namedtuple and a None."""
    q = p["params"]
    return (np.sum(np.tanh(q.w) * q.b[0]) + np.sum(p["point"].x ** 3) * p["point"].y
            + np.sum(q.b ** 2) * np.sum(q.w))


def tree():
    return {"params": Params(A.copy(), B.copy()), "point": Point(A[::-1].copy(), 0.7), "none": None}


def _flat(t):
    return np.concatenate([np.ravel(leaf) for leaf in flatten(t)[0]])


def _unflat(z, like):
    leaves, build = flatten(like)
    out, start = [], 0
    for leaf in leaves:
        size = np.size(leaf)
        piece = z[start:start + size]
        out.append(float(piece[0]) if isinstance(leaf, float) else piece.reshape(np.shape(leaf)))
        start += size
    return build(out)


def _fd_grad(f, z, eps=1e-6):
    g = np.zeros_like(z)
    for i in range(z.size):
        e = np.zeros_like(z)
        e[i] = eps
        g[i] = (f(z + e) - f(z - e)) / (2 * eps)
    return g


def test_gradients_of_a_nested_pytree_agree_with_finite_differences():
    t = tree()
    expected = _fd_grad(lambda z: loss(_unflat(z, t)), _flat(t))
    g = reverse.grad(loss)(t)
    assert isinstance(g["params"], Params) and isinstance(g["point"], Point) and g["none"] is None
    np.testing.assert_allclose(_flat(g), expected, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(_flat(mixed.grad_and_hvp(loss, t, t)[0]), expected, rtol=1e-7, atol=1e-8)
    _, t_out = dualad.jvp(loss, (t,), (t,))
    np.testing.assert_allclose(t_out, expected @ _flat(t), rtol=1e-9)


def test_dicts_pair_their_leaves_by_key_whatever_order_they_were_written_in():
    """Leaves used to pair in insertion order, so an H v or JVP along a dict written
    in another order than the point was silently wrong."""
    f = lambda d: np.sum(d["a"] ** 2) + np.sum(d["b"] ** 3)  # noqa: E731
    x = {"a": np.array([1.0]), "b": np.array([2.0])}
    v = {"b": np.array([0.0]), "a": np.array([1.0])}
    hv = mixed.hvp(f, x, v)
    np.testing.assert_array_equal(hv["a"], [2.0])
    np.testing.assert_array_equal(hv["b"], [0.0])
    assert float(dualad.jvp(f, (x,), (v,))[1]) == 2.0


def test_a_registered_container_is_a_pytree():
    class Box:
        def __init__(self, items):
            self.items = items
    dualad.register_pytree_node(Box, lambda b: (b.items, len(b.items)), lambda n, ch: Box(list(ch)))
    g = reverse.grad(lambda b: b.items[0] * b.items[1] ** 2)(Box([2.0, 3.0]))
    assert isinstance(g, Box) and g.items == [9.0, 12.0]
    with pytest.raises(TypeError, match="flatten_fn must be callable"):
        dualad.register_pytree_node(Box, None, lambda n, ch: ch)


def test_a_proxy_of_a_container_is_walked_as_the_container():
    """A weak proxy is of one type whatever it stands for, and isinstance reads the object
    behind it: a proxy of an array is a leaf, a proxy of a list a container, in any order."""
    class Items(list):
        pass
    array, items = np.ones(2), Items([1.0, 2.0])
    assert len(flatten(weakref.proxy(array))[0]) == 1
    assert flatten(weakref.proxy(items))[0] == [1.0, 2.0]


def test_a_type_walked_as_a_leaf_is_a_container_once_registered():
    """A type walked as a leaf and registered later is a container from then on (the walk
    remembers some leaf types: registering takes one out)."""
    class Late:
        def __init__(self, a):
            self.a = a
    assert flatten([Late(1.0)])[0][0].a == 1.0  # a leaf
    dualad.register_pytree_node(Late, lambda b: ((b.a,), None), lambda _, ch: Late(*ch))
    leaves, build = flatten([Late(2.0)])
    assert leaves == [2.0] and build([3.0])[0].a == 3.0


_GOOD, _INT = np.ones(2), np.ones(2, dtype=np.int64)


@pytest.mark.parametrize("transform, x, v, name", [
    (lambda x, v: dualad.jvp(lambda a, b: a * b, x, v), (_GOOD, _INT), (_GOOD, _GOOD),
     r"^primals\[1\]: primal must be floating point"),
    (lambda x, v: dualad.jvp(lambda a, b: a * b, x, v), (_GOOD, _GOOD), (_GOOD, _GOOD[:1]),
     r"^primals\[1\]: tangent must have the primal's shape"),
    (lambda x, v: reverse.vjp(lambda a, b: a * b, *x), (_GOOD, _INT), None,
     r"^primals\[1\] must be floating point"),
    (lambda x, v: mixed.hvp(lambda a, b: (a * b).sum(), x, v, argnums=(0, 1)), (_GOOD, _INT),
     (_GOOD, _GOOD), r"^x\[1\] must be floating point"),
    (lambda x, v: mixed.hvp(lambda a, b: (a * b).sum(), x, v, argnums=(0, 1)), (_GOOD, _GOOD),
     (_GOOD, _GOOD.astype(np.float32)), r"^v\[1\]: tangent dtype float32"),
    # the first leaf's fault is told first, as each leaf is checked in turn
    (lambda x, v: mixed.hvp(lambda a, b: (a * b).sum(), x, v, argnums=(0, 1),
                            mode="reverse-over-reverse"),
     (_GOOD, _GOOD), (np.ones((3, 2)), _GOOD.astype(np.float32)),
     r"^v\[0\]: reverse-over-reverse takes one direction at a time"),
])
def test_the_one_bad_leaf_beside_good_ones_is_named_by_its_path(transform, x, v, name):
    """The checks of a pytree's leaves make the leaves' names only for a leaf that fails the
    fast test of floating NumPy arrays; the name must still be the failing leaf's (the point's
    for a bad point, the direction's for a bad direction)."""
    with pytest.raises((TypeError, ValueError), match=name):
        transform(x, v)


def test_a_generated_rebuild_equals_the_walk():
    """flatten(tree, reused=True) (a program's outputs) rebuilds by one generated
    expression: the same trees as the walk, deep ones (which keep the walk) included."""
    class Point(NamedTuple):
        x: object
        y: object

    @dataclass
    class Pair:
        a: object
        b: object

    deep = 1.0
    for _ in range(60):
        deep = (deep, [2.0])
    trees = [1.0, (1.0,), [], (), None, {"b": (1.0, [2.0, None]), "a": Point(3.0, (4.0,))},
             Pair([1.0], {"k": 2.0}), ((1.0, 2.0), ((3.0, 4.0), (5.0, 6.0))), deep]
    for tree in trees:
        leaves, walked = flatten(tree)
        _, generated = flatten(tree, reused=True)
        new = [float(i) for i in range(len(leaves))]
        assert repr(generated(new)) == repr(walked(new))


def _two_inputs(x, y):
    return {"p": x * y[0], "q": np.sum(x ** 2) * y}


@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1, 0)])
def test_jacobians_of_pytrees_nest_the_same_way_in_both_modes(argnums):
    x, y = A.copy(), B[0].copy()
    jf = dualad.jacfwd(_two_inputs, argnums=argnums)(x, y)
    jr = reverse.jacrev(_two_inputs, argnums=argnums)(x, y)
    assert set(jf) == set(jr) == {"p", "q"}
    for key in jf:
        fl, fr = flatten(jf[key])[0], flatten(jr[key])[0]
        for a, b in zip(fl, fr, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    single = isinstance(argnums, int)
    block = jf["p"] if single else jf["p"][0]
    first = argnums if single else argnums[0]
    assert np.shape(block) == (3,) + np.shape((x, y)[first])


def _check_nesting(ours, recorded_tree, path="jacobian"):
    """``ours`` nests as JAX's recorded pytree (dicts, tuples) and its leaves match."""
    if "tuple" in recorded_tree:
        assert isinstance(ours, tuple) and len(ours) == len(recorded_tree["tuple"]), path
        for k, (a, b) in enumerate(zip(ours, recorded_tree["tuple"])):
            _check_nesting(a, b, f"{path}[{k}]")
    elif "shape" in recorded_tree:
        assert_close(ours, recorded_tree, rtol=1e-12, atol=1e-14, err_msg=path)
    else:
        assert isinstance(ours, dict) and sorted(ours) == sorted(recorded_tree), path
        for key in recorded_tree:
            _check_nesting(ours[key], recorded_tree[key], f"{path}[{key!r}]")


@pytest.mark.parametrize("argnums", [0, (0, 1)], ids=str)
def test_jacobians_nest_as_jax_nests_them(argnums):
    """As jax.jacfwd's, recorded by tests/make_jax_peer_golden.py."""
    golden = recorded()["jacfwd_nesting"]
    x, y = decode(golden["x"]), decode(golden["y"])
    _check_nesting(dualad.jacfwd(_two_inputs, argnums=argnums)(x, y), golden[str(argnums)])


def test_both_hessians_of_a_pytree_agree_and_nest_by_leaf():
    def f(d):
        return np.sum(d["u"] ** 2 * d["v"][0]) + np.sum(np.sin(d["v"]))
    d = {"u": A.copy(), "v": B[1].copy()}
    h_ff, h_fr = dualad.hessian(f)(d), mixed.hessian(f, chunk_size=2)(d)
    for a in d:
        for b in d:
            assert np.shape(h_fr[a][b]) == np.shape(d[a]) + np.shape(d[b])
            np.testing.assert_allclose(h_ff[a][b], h_fr[a][b], rtol=1e-12, atol=1e-14)
    flat = lambda z: f({"u": z[:3], "v": z[3:]})  # noqa: E731
    dense = dualad.hessian(flat)(np.concatenate([d["u"], d["v"]]))
    np.testing.assert_allclose(h_fr["u"]["v"], dense[:3, 3:], rtol=1e-12, atol=1e-14)


def test_has_aux_passes_the_aux_through_every_transform():
    def f(x):
        return np.sum(x ** 3), {"n": x.size}
    x = A.copy()
    out, t, aux = dualad.jvp(f, (x,), (np.ones(3),), has_aux=True)
    assert aux == {"n": 3} and float(t) == pytest.approx(np.sum(3 * x ** 2))
    for transform in (dualad.jacfwd, reverse.jacrev):
        j, aux = transform(f, has_aux=True)(x)
        assert aux == {"n": 3}
        np.testing.assert_allclose(j, 3 * x ** 2, rtol=1e-12)
    for transform in (dualad.hessian, mixed.hessian):
        h, aux = transform(f, has_aux=True)(x)
        assert aux == {"n": 3}
        np.testing.assert_allclose(h, np.diag(6 * x), rtol=1e-12)


def test_an_aux_dual_comes_back_as_its_value():
    _, _, aux = dualad.jvp(lambda x: (x * 2.0, x * 3.0), (1.0,), (1.0,), has_aux=True)
    assert aux == 3.0


@pytest.mark.parametrize("transform", [dualad.jacfwd, reverse.jacrev, dualad.hessian, mixed.hessian])
def test_bad_argnums_and_aux_are_named(transform):
    with pytest.raises(TypeError, match="argnums must be an int or a tuple of ints"):
        transform(np.sum, argnums=1.0)
    with pytest.raises(ValueError, match="repeats argument 0"):
        transform(lambda x: np.sum(x ** 2), argnums=(0, 0))(A)
    with pytest.raises(ValueError, match="out of range for 1 arguments"):
        transform(lambda x: np.sum(x ** 2), argnums=1)(A)
    with pytest.raises(TypeError, match="has_aux=True: f must return a pair"):
        transform(lambda x: np.sum(x ** 2), has_aux=True)(A)


def test_tangents_of_another_structure_are_refused():
    with pytest.raises(TypeError, match=r"jvp: tangents must have the structure of primals, "
                                        r"\(\{'a': \*\},\); got \(\{'b': \*\},\)"):
        dualad.jvp(lambda d: d["a"], ({"a": 1.0},), ({"b": 1.0},))


@pytest.mark.parametrize("kind", [complex, np.complex128], ids=["python", "numpy"])
def test_a_complex_scalar_argument_is_complex_in_every_rule(kind):
    """A Python complex reached some rules as a real number: grad of |z|**2 was 0 and
    grad of abs crashed. JAX's convention: df/dx - i df/dy."""
    z = kind(1.0 + 2.0j)
    assert reverse.grad(lambda z: (z * np.conj(z)).real)(z) == pytest.approx(2.0 * np.conj(z))
    assert reverse.grad(abs)(z) == pytest.approx(np.conj(z) / abs(z))
    _, t = dualad.jvp(abs, (z,), (1.0 + 1.0j,))  # d|z| along dz: Re(conj(z) dz) / |z|
    assert float(t) == pytest.approx(float(np.real(np.conj(z) * (1.0 + 1.0j)) / abs(z)))

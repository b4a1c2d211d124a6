"""Ownership as data (``dualad._table.ownership``): what may be written in place, and what never is.

The arithmetic and the accumulators write into an operand only when the
caller says it owns it; the reuse is counted (``count_reuses``), so a
change that silently stops it fails here, and every array a user can hold
(inputs, cotangents, intermediates, ``.grad``) is checked to be unchanged.
"""

import numpy as np
import pytest
from _support.harness import check_declared_fresh, check_partials_fresh
from _support.recorder import record

import mixed
import reverse
from dualad import Dual, jvp
from dualad._table import ownership as _inplace
from dualad._table.entries import REGISTRY
from dualad.extend import elementwise, unregister

N = 3 * _inplace._MIN_SIZE + 1  # large enough to be written in place


def _fresh(seed, n=N):
    return np.random.default_rng(seed).standard_normal(n)


# -- the arithmetic --------------------------------------------------------------------
def test_an_owned_array_is_written_and_a_borrowed_one_never():
    a, b = _fresh(0), _fresh(1)
    with _inplace.count_reuses() as reuses:
        out, owned = _inplace.mul(a, b, True)
    assert out is a and owned and reuses == {"mul": 1}
    np.testing.assert_array_equal(out, _fresh(0) * b)

    a = _fresh(0)
    out, owned = _inplace.add(a, b, False)
    assert out is not a and owned  # the sum is new, so the caller owns it
    np.testing.assert_array_equal(a, _fresh(0))
    np.testing.assert_array_equal(out, _fresh(0) + b)


def test_add_writes_into_whichever_operand_is_owned_and_sub_only_into_the_left():
    a, b = _fresh(0), _fresh(1)
    out, owned = _inplace.add(a, b, False, True)
    assert out is b and owned
    np.testing.assert_array_equal(a, _fresh(0))
    np.testing.assert_array_equal(out, _fresh(0) + _fresh(1))

    b = _fresh(1)
    out, _ = _inplace.sub(a, b, False, True)  # b - a is not a - b: b is left alone
    assert out is not b
    np.testing.assert_array_equal(b, _fresh(1))
    np.testing.assert_array_equal(out, _fresh(0) - _fresh(1))


@pytest.mark.parametrize("name", ["add", "sub", "mul"])
def test_an_owned_dual_is_combined_as_dual_arithmetic(name):
    p, t, q, s = (_fresh(i) for i in range(4))
    reference = {"add": np.add, "sub": np.subtract, "mul": np.multiply}[name](Dual(p, t), Dual(q, s))
    a = Dual(p.copy(), t.copy())
    out, owned = getattr(_inplace, name)(a, Dual(q, s), True)
    assert out is a and owned
    np.testing.assert_allclose(out.primal, reference.primal, rtol=1e-15)
    np.testing.assert_allclose(out.tangent, reference.tangent, rtol=1e-15)


@pytest.mark.parametrize("chunk", [None, 3])
@pytest.mark.parametrize("name", ["add", "sub", "mul"])
def test_an_owned_dual_with_a_constant_is_combined_as_dual_arithmetic(name, chunk):
    p, q = _fresh(0), _fresh(2)
    t = _fresh(1) if chunk is None else np.stack([_fresh(10 + i) for i in range(chunk)])
    for constant in (q, 2.5):
        reference = {"add": np.add, "sub": np.subtract, "mul": np.multiply}[name](Dual(p, t), constant)
        a = Dual(p.copy(), t.copy())
        out, _ = getattr(_inplace, name)(a, constant, True)
        assert out is a
        np.testing.assert_allclose(out.primal, reference.primal, rtol=1e-15)
        np.testing.assert_allclose(out.tangent, reference.tangent, rtol=1e-15)


def test_what_cannot_take_the_result_in_place_is_left_alone():
    p, t = _fresh(0), _fresh(1)
    cases = {
        "a view": (p[1:], t[1:]),
        "a small array": (np.ones(_inplace._MIN_SIZE - 1), 2.0),
        "an operand that broadcasts": (p, t[:1]),
        "another dtype": (p, t.astype(np.float32)),
        "a Dual whose parts are one array": (Dual(p, p), Dual(t, t)),
        "a Dual of another level": (Dual(p, t), Dual(Dual(p, t), Dual(t, p))),
    }
    for what, (a, b) in cases.items():
        before = [arr.copy() for arr in _arrays(a)]
        with _inplace.count_reuses() as reuses:
            _inplace.add(a, b, True)
        assert not reuses, what
        for arr, copy in zip(_arrays(a), before, strict=True):
            np.testing.assert_array_equal(arr, copy, err_msg=what)


def test_made_by_call_is_false_for_a_direct_argument_handed_back():
    """It looks at the call's direct arguments only (the entry's declaration vouches
    for the rest): a result that is one of them, or a part of a Dual among them."""
    x, y = _fresh(0), _fresh(1)
    d = Dual(x, y)
    assert _inplace.made_by_call(x * y, (x, y))
    assert not _inplace.made_by_call(x, (x, y))
    assert not _inplace.made_by_call(x, ((y, x),))              # an item of a tuple of arguments
    assert not _inplace.made_by_call(x, (d,))                   # a part of a given Dual
    assert not _inplace.made_by_call(Dual(x * 2.0, y), (d,))    # a Dual keeping one (d + 2.0)
    assert not _inplace.made_by_call(x[::2], ())                # a view
    assert _inplace.made_by_call(Dual(x * 2.0, y * 2.0), (d,))
    assert not _inplace.made_by_call(np.ones(3), ())            # too small to bother


# -- accumulators ------------------------------------------------------------------------
def test_an_accumulator_borrows_until_it_makes_a_buffer_of_its_own():
    first, second, third = _fresh(0), _fresh(1), _fresh(2)
    acc = _inplace.Accumulator()
    with _inplace.count_reuses() as reuses:
        acc.add(first)
        acc.add(second)
        made = acc.value
        acc.add(third)
    assert acc.value is made and acc.owned and reuses == {"add": 1}
    np.testing.assert_array_equal(first, _fresh(0))
    np.testing.assert_array_equal(second, _fresh(1))
    np.testing.assert_allclose(acc.value, _fresh(0) + _fresh(1) + _fresh(2), rtol=1e-15)


def test_an_accumulator_adds_at_basic_indices_only_into_its_own_buffer():
    g = _fresh(2, N - 1)
    acc = _inplace.Accumulator()
    acc.add(_fresh(0))
    assert not acc.add_at((slice(1, None),), g)  # borrowed
    np.testing.assert_array_equal(acc.value, _fresh(0))

    acc = _inplace.Accumulator()
    acc.add(_fresh(0), owned=True)
    assert not acc.add_at((np.arange(N - 1),), g)  # an advanced index may repeat
    assert acc.add_at((slice(1, None),), g)
    np.testing.assert_array_equal(acc.value[1:], _fresh(0)[1:] + g)

    p, t = _fresh(0), _fresh(1)
    acc = _inplace.Accumulator()
    acc.add(Dual(p.copy(), t.copy()), owned=True)
    assert not acc.add_at((slice(None, -1),), Dual(g.astype(np.float32), g.astype(np.float32)))
    assert acc.add_at((slice(None, -1),), Dual(g, 2.0 * g))
    np.testing.assert_array_equal(acc.value.primal[:-1], p[:-1] + g)
    np.testing.assert_array_equal(acc.value.tangent[:-1], t[:-1] + 2.0 * g)
    np.testing.assert_array_equal(acc.value.tangent[-1:], t[-1:])


def test_an_empty_accumulator_makes_its_buffer_from_the_first_slice():
    """Given the shape and dtype of the whole, an empty accumulator takes a NumPy slice's
    cotangent into zeros it makes and owns, and adds the next slices into them, also
    below the size where the arithmetic writes nothing: the accumulator made the buffer."""
    whole = ((4, 6), np.dtype(np.float64))
    acc = _inplace.Accumulator()
    first, second = _fresh(0, 6), _fresh(1, 6)
    first.flags.writeable = second.flags.writeable = False  # a write into either would raise
    with _inplace.count_reuses() as reuses:
        assert acc.add_at((1, slice(None)), first, whole)
        made = acc.value
        assert acc.add_at((1, slice(None)), second, whole)
        assert acc.add_at((3, slice(None)), second, whole)
    assert acc.value is made and acc.owned and reuses == {"add_at": 2}
    expected = np.zeros((4, 6))
    expected[1] = first + second
    expected[3] = second
    np.testing.assert_array_equal(acc.value, expected)


@pytest.mark.parametrize("idx, g, whole", [
    ((slice(0, 2),), np.ones(2), None),  # no shape to make zeros of
    ((slice(0, 2),), np.ones(2), ((5,), np.dtype(np.float32))),  # another dtype: a cast is the VJP's
    ((np.array([0, 0]),), np.ones(2), ((5,), np.dtype(np.float64))),  # an advanced index may repeat
    ((slice(0, 2),), Dual(np.ones(2), np.ones(2)), ((5,), np.dtype(np.float64))),  # not a raw array
], ids=["no whole", "other dtype", "advanced", "dual"])
def test_an_empty_accumulator_declines_what_it_cannot_make(idx, g, whole):
    acc = _inplace.Accumulator()
    assert not acc.add_at(idx, g, whole)
    assert acc.value is None and not acc.owned


def test_a_small_buffer_the_accumulator_did_not_make_is_never_written():
    """A small cotangent kept as it came, or a sum the arithmetic made (which it does
    not own below ``_MIN_SIZE``), takes no slice in place."""
    acc = _inplace.Accumulator()
    kept = _fresh(2, 6)
    acc.add(kept)
    assert not acc.add_at((slice(0, 2),), _fresh(3, 2), ((6,), np.dtype(np.float64)))
    acc.add(_fresh(4, 6))
    assert not acc.owned
    assert not acc.add_at((slice(0, 2),), _fresh(3, 2), ((6,), np.dtype(np.float64)))
    np.testing.assert_array_equal(kept, _fresh(2, 6))


def test_slices_of_a_small_array_add_into_one_buffer_on_the_tape():
    """The loop-on-small-arrays pattern (``gates[0:h]``, ``gates[h:2 h]``): the first
    slice's cotangent makes the buffer, the others add into it (counted), and the
    gradient is the sum of the three."""
    x = _fresh(5, 6)

    def f(x):
        return np.sum(np.sin(x[0:2])) + np.sum(np.cos(x[2:4])) + np.sum(x[4:6] ** 2)
    with _inplace.count_reuses() as reuses:
        g = reverse.grad(f)(x)
    assert reuses == {"add_at": 2}
    np.testing.assert_allclose(g, np.concatenate([np.cos(x[0:2]), -np.sin(x[2:4]), 2.0 * x[4:6]]),
                               rtol=1e-15)


# -- reuse happens where it should, and is counted ------------------------------------------
def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def three_uses(x):
    y = np.exp(x)
    return np.sum(np.sin(y) + np.cos(y) + np.tanh(y))


# Each figure follows from the functions' structure:
# - rosenbrock: its three squares have the partial 2 u, new, which takes the product with
#   the tangent or cotangent in place (the other partials are 1, -1, the float 100.0); the
#   three slices of x add into one buffer, made by the first (2 add_at). The H v runs the
#   forward products on Duals and the backward ones too: twice the 3.
# - three_uses: sin, cos and tanh have new partials (exp's is its output, not new, so
#   its product allocates); y gets three cotangents: the first is kept, two are added in.
EXPECTED_REUSES = {
    (rosenbrock, "jvp"): {"mul": 3},
    (rosenbrock, "grad"): {"mul": 3, "add_at": 2},
    (rosenbrock, "hvp"): {"mul": 6, "add_at": 2},
    (three_uses, "grad"): {"mul": 3, "add": 2},
}
MODES = {
    "jvp": lambda f, x, v: jvp(f, (x,), (v,)),
    "grad": lambda f, x, v: reverse.grad(f)(x),
    "hvp": lambda f, x, v: mixed.hvp(f, x, v),
}


@pytest.mark.parametrize("f, mode", EXPECTED_REUSES, ids=lambda k: getattr(k, "__name__", k))
def test_reuse_is_counted_where_the_code_owns_its_temporaries(f, mode):
    x, v = np.random.default_rng(3).uniform(-1.0, 1.0, N), _fresh(4)
    with _inplace.count_reuses() as reuses:
        MODES[mode](f, x, v)
    assert dict(reuses) == EXPECTED_REUSES[f, mode]


# -- what a user holds is never written --------------------------------------------------
def _arrays(v):
    """The raw arrays a value holds: itself, a Tensor's value, a Dual's parts."""
    if isinstance(v, np.ndarray):
        return [v]
    return [a for name in ("value", "primal", "tangent") if hasattr(v, name)
            for a in _arrays(getattr(v, name))]


def busy(x, kept):
    """Slices, a cross product, a pass-through tangent, values used many times; every
    intermediate is kept (with a copy of its arrays) as a user's code might."""
    a, b = x[1:], x[:-1]
    y = a * b
    z = np.exp(y)
    w = z + 1.0
    u = w * w + np.sin(w) - y
    for v in (a, b, y, z, w, u):
        kept.append((v, [arr.copy() for arr in _arrays(v)]))
    return np.sum(u * 2.0) + np.sum(x ** 2)


@pytest.mark.parametrize("n", [N, 7], ids=["large", "small"])
@pytest.mark.parametrize("mode", ["jvp", "grad", "hvp", "hvp-ror", "backward"])
def test_no_array_a_user_holds_is_written(mode, n):
    x, v = np.random.default_rng(5).uniform(-1.0, 1.0, n), _fresh(6, n)
    x.flags.writeable = v.flags.writeable = False  # an in-place write to an input raises
    kept = []
    f = lambda x: busy(x, kept)  # noqa: E731
    if mode == "backward":
        t = reverse.Tensor(x, requires_grad=True)
        f(t).backward()
    elif mode == "hvp-ror":
        mixed.hvp(f, x, v, mode="reverse-over-reverse")
    else:
        MODES[mode](f, x, v)
    assert kept
    for value, copies in kept:
        for arr, copy in zip(_arrays(value), copies, strict=True):
            np.testing.assert_array_equal(arr, copy)


def test_grad_owns_its_array_as_in_pytorch():
    """A cotangent passed through to a leaf is copied into ``.grad``: writing into
    ``.grad`` changes neither the user's cotangent nor another tensor's ``.grad``."""
    ct = _fresh(7)
    x = reverse.Tensor(_fresh(8), requires_grad=True)
    y = x + 0.0  # its cotangent reaches x unchanged
    y.retain_grad()
    y.backward(ct)
    assert x.grad is not ct and y.grad is not ct and x.grad is not y.grad
    x.grad *= 0.0
    np.testing.assert_array_equal(ct, _fresh(7))
    np.testing.assert_array_equal(y.grad, _fresh(7))


def test_a_users_rule_is_never_written_into():
    """A user's entry is not built in: a partial that returns an array kept elsewhere
    (a global) is used as it is, never written."""
    weight = np.full(N, 2.0)
    elementwise("scaled_by_weight", lambda xp, x: x * weight, lambda ans, x: weight)
    try:
        assert not REGISTRY["scaled_by_weight"].builtin
        from dualad.extend import bind
        g = reverse.grad(lambda x: np.sum(bind(REGISTRY["scaled_by_weight"], x) ** 2))(_fresh(9))
        np.testing.assert_array_equal(weight, np.full(N, 2.0))
        np.testing.assert_allclose(g, 8.0 * _fresh(9), rtol=1e-15)
    finally:
        unregister("scaled_by_weight")


def test_every_built_in_entry_is_marked_as_such():
    assert all(p.builtin for p in REGISTRY.values())


def test_a_users_entry_declares_nothing_fresh_by_default():
    elementwise("plain_cube", lambda xp, x: x * x * x, lambda ans, x: 3.0 * x * x)
    try:
        prim = REGISTRY["plain_cube"]
        assert 0 not in prim.fresh and 0 not in prim.fresh_cotangents
    finally:
        unregister("plain_cube")


def test_the_declaration_check_catches_shared_memory_wherever_it_hides():
    """``check_declared_fresh`` (run on every recorded call of every case) fails for a
    result declared fresh that is an array kept elsewhere (a cache), or that shares
    memory with anything the rule was given, however deep: in a tuple subclass, in an
    object's attributes, in a Dual."""
    from collections import namedtuple

    class Holder:
        def __init__(self, a):
            self.a = a

    cache, given = np.zeros(4), np.ones(4)
    every = {0}
    check_declared_fresh("fine", (given * 2.0,), (given * 2.0,), (given,), every)
    check_declared_fresh("handed back", (given,), (given,), (given,), every, direct=(given,))
    check_declared_fresh("a view", (given[1:],), (given[1:],), (given,), every)
    check_declared_fresh("not declared", (given,), (given,), (given,), set())
    nt = namedtuple("NT", "a b")
    for label, held in [("a cache", ()), ("a tuple subclass", (nt(given, 1),)),
                        ("an object", (Holder(given),)), ("a Dual", (Dual(given, given * 2.0),))]:
        result = cache if label == "a cache" else given
        with pytest.raises(AssertionError, match="declared fresh"):
            check_declared_fresh(label, (result,), (result,), held, every)
    with pytest.raises(AssertionError, match="declared fresh"):  # two results, one memory
        check_declared_fresh("twice", (given * 2.0,) * 2, (None, None), (), every)


def test_a_false_declaration_fails_the_table_check(monkeypatch):
    """multiply's partial in x is y itself: declared fresh, the check on a recorded call
    fails (and the interpreter would write into y)."""
    x, y = np.arange(3.0), np.arange(3.0) + 1.0
    calls = [c for c in record(lambda x, y: x * y, (x, y), {}, wrap={0, 1}) if c.prim.name == "multiply"]
    assert calls
    check_partials_fresh(calls[0])
    monkeypatch.setattr(REGISTRY["multiply"], "fresh", frozenset({0}))
    with pytest.raises(AssertionError, match="result 0, declared fresh"):
        check_partials_fresh(calls[0])

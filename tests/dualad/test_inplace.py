"""The in-place reuse of temporaries: done only for values nothing else holds.

Each test holds the operand in a local of the test function (the "caller's
local" that ``_inplace`` allows for) and checks both outcomes: reused when
that is its only reference, left alone when anything else refers to it.
"""

import numpy as np
import pytest

from dualad import Dual, _inplace

N = 2 * _inplace._MIN_SIZE  # large enough to be considered
pytestmark = pytest.mark.skipif(not _inplace._RELIABLE,
                                reason="reference counts are trusted on CPython 3.11-3.13 only")


def _fresh(seed, n=N):
    return np.random.default_rng(seed).standard_normal(n)


def test_owned_array_is_reused_and_a_shared_one_is_not():
    a, b = _fresh(0), _fresh(1)
    expected = a * b
    out = _inplace.mul(a, b)
    assert out is a and np.array_equal(out, expected)

    a = _fresh(0)
    keep = a
    out = _inplace.add(a, b)
    assert out is not keep and np.array_equal(keep, _fresh(0))
    np.testing.assert_array_equal(out, _fresh(0) + b)


def test_owned_dual_add_sub_mul_match_dual_arithmetic():
    p, t, q, s = (_fresh(i) for i in range(4))
    for op, name in ((_inplace.add, "add"), (_inplace.sub, "subtract"), (_inplace.mul, "multiply")):
        a = Dual(p.copy(), t.copy())
        expected = getattr(np, name)(Dual(p, t), Dual(q, s))
        out = op(a, Dual(q, s))
        assert out is a, name
        np.testing.assert_allclose(out.primal, expected.primal, rtol=1e-15)
        np.testing.assert_allclose(out.tangent, expected.tangent, rtol=1e-15)


@pytest.mark.parametrize("chunk", [None, 3])
def test_owned_dual_with_a_constant_matches_dual_arithmetic(chunk):
    p, q = _fresh(0), _fresh(2)
    t = _fresh(1) if chunk is None else np.stack([_fresh(10 + i) for i in range(chunk)])
    for op, name in ((_inplace.add, "add"), (_inplace.sub, "subtract"), (_inplace.mul, "multiply")):
        for constant in (q, 2.5):
            a = Dual(p.copy(), t.copy())
            expected = getattr(np, name)(Dual(p, t), constant)
            out = op(a, constant)
            assert out is a, name
            np.testing.assert_allclose(out.primal, expected.primal, rtol=1e-15)
            np.testing.assert_allclose(out.tangent, expected.tangent, rtol=1e-15)


def test_dual_with_a_shared_part_is_not_overwritten():
    p, t, q, s = (_fresh(i) for i in range(4))
    shared_tangent = t.copy()
    a = Dual(p.copy(), shared_tangent)
    out = _inplace.mul(a, Dual(q, s))
    assert out is not a
    np.testing.assert_array_equal(shared_tangent, t)
    np.testing.assert_array_equal(a.primal, p)

    a = Dual(p.copy(), t.copy())
    also = a  # a second holder of the Dual itself
    out = _inplace.add(a, Dual(q, s))
    assert out is not also and np.array_equal(also.primal, p)


def test_dual_of_another_level_or_shape_is_not_combined_in_place():
    p, t = _fresh(0), _fresh(1)
    a = Dual(p.copy(), t.copy())
    other_level = Dual(Dual(p, t), Dual(t, p))  # a fresh, outer level
    out = _inplace.add(a, other_level)
    assert out is not a and np.array_equal(a.primal, p)

    a = Dual(p.copy(), t.copy())
    out = _inplace.add(a, Dual(p[:1], t[:1]))  # broadcasts: the result is not a's shape
    assert out is not a and np.array_equal(a.primal, p)


def test_add_at_on_arrays_and_duals():
    g = _fresh(2, N - 1)
    a = _fresh(0)
    assert _inplace.add_at(a, (slice(1, None),), g)
    np.testing.assert_array_equal(a[1:], _fresh(0)[1:] + g)

    a = _fresh(0)
    keep = a
    assert not _inplace.add_at(a, (slice(1, None),), g)
    np.testing.assert_array_equal(keep, _fresh(0))

    p, t = _fresh(0), _fresh(1)
    a = Dual(p.copy(), t.copy())
    assert _inplace.add_at(a, (slice(None, -1),), Dual(g, 2.0 * g))
    np.testing.assert_array_equal(a.primal[:-1], p[:-1] + g)
    np.testing.assert_array_equal(a.tangent[:-1], t[:-1] + 2.0 * g)
    np.testing.assert_array_equal(a.tangent[-1:], t[-1:])

    a = Dual(p.copy(), t.copy())
    assert not _inplace.add_at(a, (slice(None, -1),), Dual(g.astype(np.float32), g.astype(np.float32)))
    np.testing.assert_array_equal(a.primal, p)


def test_small_arrays_are_never_reused():
    a = np.ones(_inplace._MIN_SIZE - 1)
    out = _inplace.mul(a, 2.0)
    assert out is not a and np.array_equal(a, np.ones(_inplace._MIN_SIZE - 1))

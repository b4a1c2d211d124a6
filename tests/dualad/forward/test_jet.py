"""``dualad.jet`` (Taylor mode) against nested ``dualad.jvp``.

``jet(f, xs, series)`` gives the derivatives ``d^k/dt^k f(x(t))`` at 0 along
the curve ``x(t) = x_0 + x_1 t + x_2 t^2 / 2 + ...``; nested ``jvp`` in the
scalar ``t`` of ``t -> f(x(t))`` gives the same numbers another way, with
no Taylor arithmetic. Checked on composite functions up to order 4 and, from
the case table, on every case at order 3 in float64 and float32. The numbers
of ``jax.experimental.jet`` are checked in test_jet_jax.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _support.backends import NUMPY
from _support.cases import CASES
from _support.harness import FEW, Prepared, is_float, params, random_like
from hypothesis import given
from hypothesis import strategies as st

import dualad
from dualad import ops
from dualad._base.tree import flatten

RTOL = {"float64": 1e-8, "float32": 2e-3}


def curve(xs, terms):
    """``t -> x(t)`` for each argument: ``x_0 + sum_k x_k t^k / k!``."""
    def at(t):
        return [x + sum(term * (t ** (k + 1) / math.factorial(k + 1)) for k, term in enumerate(ts))
                for x, ts in zip(xs, terms)]
    return at


def nested(f, xs, terms, order):
    """The derivatives 1..order of ``t -> f(x(t))`` at 0 by nested jvp, per output leaf."""
    at = curve(xs, terms)
    g = lambda t: f(*at(t))  # noqa: E731
    out = []
    for _ in range(order):
        g = (lambda h: lambda t: dualad.jvp(h, (t,), (1.0,))[1])(g)
        out.append([np.asarray(leaf) for leaf in flatten(g(0.0))[0]])
    return out


def check_against_nested(f, xs, terms, order, dtype):
    y0, ys = dualad.jet(f, tuple(xs), tuple(terms))
    want = nested(f, xs, terms, order)
    got_primals = flatten(y0)[0]
    flat = flatten(ys)[0]  # each output leaf became its list of terms
    got_series = [flat[j * order:(j + 1) * order] for j in range(len(got_primals))]
    ref = flatten(f(*xs))[0]
    assert len(got_primals) == len(ref)
    for leaf, r in zip(got_primals, ref):
        np.testing.assert_allclose(np.asarray(leaf), np.asarray(r), rtol=RTOL[dtype] * 1e-3)
    for j, series in enumerate(got_series):
        assert len(series) == order
        for k, term in enumerate(series):
            w = want[k][j]
            if not is_float(w) and not np.issubdtype(w.dtype, np.floating):
                continue
            term = np.asarray(term)
            assert term.shape == w.shape, f"term {k + 1}: shape {term.shape}, expected {w.shape}"
            if np.issubdtype(np.asarray(ref[j]).dtype, np.floating):
                assert term.dtype == np.asarray(ref[j]).dtype, f"term {k + 1}: dtype {term.dtype}"
            scale = max(1.0, float(np.max(np.abs(w), initial=0.0)))
            np.testing.assert_allclose(term, w, rtol=RTOL[dtype], atol=RTOL[dtype] * scale,
                                       err_msg=f"term {k + 1} of output leaf {j}")


def composite(x):
    return (ops.sin(x) * ops.log(x) / ops.sqrt(x) + ops.tanh(x) ** 3 + ops.exp(-x) * ops.cos(x)
            + x ** 2.5 + ops.arctan(x) + ops.sum(x) * ops.prod(x))


FUNCTIONS = {
    "composite": composite,
    "polynomial": lambda x: 3.0 * x ** 3 - x * x + 2.0,
    "quotient": lambda x: (x + 2.0) / (x * x + 1.0),
    "exp_of_sin": lambda x: ops.exp(ops.sin(x)),
    "log_sqrt": lambda x: ops.log(ops.sqrt(x) + 1.0),
    "tanh_chain": lambda x: ops.tanh(ops.tanh(x) * 2.0),
    "matmul": lambda x: ops.tanh(ops.reshape(x, (2, 2)) @ ops.reshape(x, (2, 2))),
    "reductions": lambda x: ops.sum(ops.exp(x)) * ops.max(x) - ops.mean(x ** 2),
    "solve": lambda x: ops.linalg.solve(ops.reshape(x, (2, 2)) + 3.0 * np.eye(2), ops.sin(x[:2])),
}


@pytest.mark.parametrize("order", [1, 2, 3, 4])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_composites_against_nested_jvp(name, dtype, order):
    rng = np.random.default_rng(1)
    x = rng.uniform(0.5, 2.0, 4).astype(dtype)
    terms = [rng.standard_normal(4).astype(dtype) for _ in range(order)]
    check_against_nested(FUNCTIONS[name], [x], [terms], order, dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_straight_line_gives_directional_derivatives(dtype):
    x, v = np.array([0.3, 1.2], dtype), np.array([1.0, -2.0], dtype)
    y0, ys = dualad.jet(ops.exp, (x,), ([v, 0 * v, 0 * v, 0 * v],))
    for term in ys:  # d^k/dt^k exp(x + t v) = v^k exp(x)
        assert term.dtype == np.dtype(dtype)
    np.testing.assert_allclose(ys, [v ** k * np.exp(x) for k in range(1, 5)], rtol=RTOL[dtype])


def test_zero_dimensional_empty_and_float_inputs():
    y0, (y1, y2) = dualad.jet(lambda x: ops.sin(x) * x, (np.float64(0.5),), ([1.0, 0.0],))
    assert np.shape(y1) == () and np.isclose(y2, 2 * np.cos(0.5) - 0.5 * np.sin(0.5))
    e = np.zeros((0, 3))
    y0, (y1, y2, y3) = dualad.jet(lambda x: ops.exp(x) @ np.ones(3), (e,), ([e, e, e],))
    assert y0.shape == y1.shape == y3.shape == (0,)
    y0, (y1,) = dualad.jet(lambda x: x * x, (3.0,), ([1.0],))
    assert (y0, y1) == (9.0, 6.0)


def test_order_zero_and_constant_outputs():
    y0, ys = dualad.jet(ops.exp, (1.0,), ([],))
    assert ys == [] and y0 == math.exp(1.0)
    y0, ys = dualad.jet(lambda x: (ops.floor(x), 2.0), (np.array([1.5]),), ([np.ones(1), np.ones(1)],))
    np.testing.assert_array_equal(ys[0], np.zeros((2, 1)))
    assert ys[1] == [0.0, 0.0]


def test_zero_base_power_uses_the_fallback():
    """x ** 3 at x = 0: the recurrence divides by x, the fallback does not."""
    x = np.array([0.0, 1.0])
    _, ys = dualad.jet(lambda x: x ** 3, (x,), ([np.ones(2), np.zeros(2), np.zeros(2)],))
    np.testing.assert_allclose(ys, [[0.0, 3.0], [0.0, 6.0], [6.0, 6.0]])


def test_errors_name_the_argument():
    with pytest.raises(TypeError, match="primals and series must be tuples"):
        dualad.jet(ops.exp, 1.0, ([1.0],))
    with pytest.raises(ValueError, match="one list of terms per primal"):
        dualad.jet(ops.exp, (1.0,), ())
    with pytest.raises(ValueError, match="same number of terms"):
        dualad.jet(lambda x, y: x * y, (1.0, 2.0), ([1.0], [1.0, 2.0]))
    with pytest.raises(ValueError, match=r"series\[0\]\[1\]"):
        dualad.jet(ops.exp, (np.ones(2),), ([np.ones(2), np.ones(3)],))
    with pytest.raises(TypeError, match=r"series\[0\]"):
        dualad.jet(ops.exp, (1.0,), (1.0,))


def test_jet_rules_reports_every_entry():
    from dualad.extend import REGISTRY
    rules = dualad.jet_rules()
    assert set(rules) == set(REGISTRY)
    assert set(rules.values()) <= {"recurrence", "linear", "constant", "fallback"}
    assert rules["sin"] == rules["multiply"] == "recurrence" and rules["sum"] == "linear"
    # declared piecewise linear: the series passes through coefficient by coefficient
    assert rules["maximum"] == rules["where"] == rules["gather"] == rules["max"] == "linear"


def test_abs_of_a_complex_series_is_not_piecewise_linear():
    """|z| is smooth in z: its series takes the fallback, and matches nested jvp."""
    z0, z1 = np.array([1.0 + 2.0j]), np.array([0.5 - 1.0j])
    _, (c1, c2) = dualad.jet(np.abs, (z0,), ((z1, np.zeros(1, complex)),))
    d1 = dualad.jvp(np.abs, (z0,), (z1,))[1]
    d2 = dualad.jvp(lambda z: dualad.jvp(np.abs, (z,), (z1,))[1], (z0,), (z1,))[1]
    np.testing.assert_allclose([c1, c2], [d1, d2], rtol=1e-13)
    assert abs(d2[0]) > 0.1


# -- the table ---------------------------------------------------------------------------
TABLE = [c for c in CASES if c.kind in ("diff", "zero")]
ORDER = 3


def check_case_jet(case, drawn, backend, dtype):
    prep = Prepared(case, drawn, backend, dtype)
    if not prep.xs or not all(is_float(x) for x in prep.xs):
        return
    rng = np.random.default_rng(0)
    terms = [[random_like(x, rng) * 0.5 for _ in range(ORDER)] for x in prep.xs]
    check_against_nested(prep.f, prep.xs, terms, ORDER, dtype)


@pytest.mark.parametrize("case, backend, dtype", params("jet", TABLE, [NUMPY.param], ["float64"]))
@FEW
@given(data=st.data())
def test_jet_of_every_case_against_nested_jvp(case, backend, dtype, data):
    check_case_jet(case, data.draw(case.args, label="args"), backend, dtype)


@pytest.mark.parametrize("case, backend, dtype", params("jet", TABLE, [NUMPY.param], ["float32"]))
@FEW
@given(data=st.data())
def test_jet_of_every_case_float32(case, backend, dtype, data):
    check_case_jet(case, data.draw(case.args, label="args"), backend, dtype)


def test_jet_nests_with_jvp_both_ways():
    """The derivative of jet's k-th term along v is its (k+1)-th, inside out and outside in."""
    x, v, z = np.array([0.7, 1.3]), np.array([1.0, 0.5]), np.zeros(2)
    f = lambda x: ops.exp(ops.sin(x)) * ops.arctan(x)  # noqa: E731  (arctan: the fallback)
    fourth = dualad.jet(f, (x,), ([v, z, z, z],))[1][3]
    third = lambda x: dualad.jet(f, (x,), ([v, z, z],))[1][2]  # noqa: E731
    np.testing.assert_allclose(dualad.jvp(third, (x,), (v,))[1], fourth, rtol=1e-12)
    first = lambda x: dualad.jvp(f, (x,), (v,))[1]  # noqa: E731
    np.testing.assert_allclose(dualad.jet(first, (x,), ([v, z, z],))[1][2], fourth, rtol=1e-12)


def test_an_entry_without_a_jvp_rule_is_named():
    from dualad import Primitive, bind
    opaque = Primitive("jet_test_opaque", lambda xp, x: x * 2.0, register=False)
    with pytest.raises(NotImplementedError, match="'jet_test_opaque'"):
        dualad.jet(lambda x: bind(opaque, x), (1.0,), ([1.0, 0.0],))

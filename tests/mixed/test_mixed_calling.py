"""``mixed.hvp`` and ``mixed.grad_and_hvp`` take the library's calling convention:
``argnums`` (positions in f's signature), ``has_aux``, and ``args`` for the
arguments held constant.

Oracles: JAX's ``jvp(grad(f, argnums), ...)`` with the same argnums (recorded
by tests/make_jax_peer_golden.py, with the point and direction), central differences of the
tape gradient ``reverse.grad(f, argnums)``, and the one-argument ``hvp`` of a
closure over the constant arguments.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from _support.golden import assert_close, decode
from _support.jax_peer_cases import MIXED_ARGNUMS, recorded

import reverse
from dualad import ops
from mixed import grad_and_hvp, hvp

MODES = ["forward-over-reverse", "reverse-over-reverse"]
GOLDEN = recorded()["mixed_argnums"]
W, B, DATA = decode(GOLDEN["w"]), GOLDEN["b"], decode(GOLDEN["data"])
VW, VB = decode(GOLDEN["vw"]), GOLDEN["vb"]


def loss(w, b, data):
    """Couples w and b (a mixed block H[w][b] that is not zero)."""
    r = ops.matmul(data, w) + b
    return ops.sum(ops.tanh(r) ** 2) + ops.sum(w ** 4) * b ** 2


# Each case: argnums, the selected primals, their directions, and args (the rest, in order).
CASES = {  # the names and argnums of MIXED_ARGNUMS
    "w": (0, W, VW, (B, DATA)),
    "b": (1, B, VB, (W, DATA)),
    "(w, b)": ((0, 1), (W, B), (VW, VB), (DATA,)),
    "(b, w)": ((1, 0), (B, W), (VB, VW), (DATA,)),
    "(-3, 1)": ((-3, 1), (W, B), (VW, VB), (DATA,)),
}


def full_arguments(argnums, x, args):
    """f's positional arguments: x at argnums, args elsewhere (the rule under test, spelled out)."""
    picked = dict(zip([n % 3 for n in (argnums if isinstance(argnums, tuple) else (argnums,))],
                      x if isinstance(argnums, tuple) else (x,)))
    rest = iter(args)
    return [picked[i] if i in picked else next(rest) for i in range(3)]


def test_the_cases_are_the_recorded_ones():
    recorded_argnums = {name: case["argnums"] for name, case in GOLDEN["cases"].items()}
    assert {name: case[0] for name, case in CASES.items()} == MIXED_ARGNUMS
    assert json.loads(json.dumps(MIXED_ARGNUMS)) == recorded_argnums


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", list(CASES))
def test_argnums_matches_jax(case, mode):
    argnums, x, v, args = CASES[case]
    g, hv = grad_and_hvp(loss, x, v, args=args, argnums=argnums, mode=mode)
    want = GOLDEN["cases"][case]
    for ours, theirs in ((g, want["g"]), (hv, want["hv"])):
        ours = ours if isinstance(argnums, tuple) else (ours,)
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            assert_close(a, b, rtol=1e-12, atol=1e-12, err_msg=case)
    np.testing.assert_allclose(flat(hvp(loss, x, v, args=args, argnums=argnums, mode=mode)), flat(hv),
                               rtol=1e-13)


def flat(parts):
    """One vector of the entries of a result (an array, a float, or a tuple of them)."""
    return np.hstack([np.ravel(p) for p in (parts if isinstance(parts, tuple) else (parts,))])


@pytest.mark.parametrize("case", list(CASES))
def test_argnums_matches_central_differences_of_the_gradient(case):
    argnums, x, v, args = CASES[case]
    grad = reverse.grad(loss, argnums)
    eps = 1e-5

    def g_at(t):
        sel = (tuple(xi + t * vi for xi, vi in zip(x, v)) if isinstance(argnums, tuple)
               else x + t * v)
        return flat(grad(*full_arguments(argnums, sel, args)))
    fd = (g_at(eps) - g_at(-eps)) / (2 * eps)
    g, hv = grad_and_hvp(loss, x, v, args=args, argnums=argnums)
    np.testing.assert_allclose(flat(hv), fd, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(flat(g), g_at(0.0), rtol=1e-14)


def test_results_keep_the_form_of_x():
    g, hv = grad_and_hvp(loss, (W, B), (VW, VB), args=(DATA,), argnums=(0, 1))
    assert isinstance(g, tuple) and isinstance(hv, tuple)
    assert g[0].shape == hv[0].shape == (3,) and type(g[1]) is float and type(hv[1]) is float
    assert type(hvp(loss, B, VB, args=(W, DATA), argnums=1)) is float


def test_args_equal_a_closure():
    closure = lambda w: loss(w, B, DATA)
    np.testing.assert_array_equal(hvp(loss, W, VW, args=(B, DATA)), hvp(closure, W, VW))


@pytest.mark.parametrize("mode", MODES)
def test_has_aux(mode):
    def f(w, data):
        r = ops.matmul(data, w)
        return ops.sum(r ** 4), {"residuals": r, "n": 5}
    g, hv, aux = grad_and_hvp(f, W, VW, args=(DATA,), has_aux=True, mode=mode)
    ref_g, ref_hv = grad_and_hvp(lambda w: f(w, DATA)[0], W, VW)
    np.testing.assert_allclose(g, ref_g, rtol=1e-14)
    np.testing.assert_allclose(hv, ref_hv, rtol=1e-13)
    assert aux["n"] == 5 and type(aux["residuals"]) is np.ndarray  # plain values: no Dual, no Tensor
    np.testing.assert_allclose(aux["residuals"], DATA @ W, rtol=1e-15)
    hv2, aux2 = hvp(f, W, VW, args=(DATA,), has_aux=True, mode=mode)
    np.testing.assert_array_equal(hv2, hv)
    assert aux2["n"] == 5


def test_has_aux_with_a_batch_of_directions():
    f = lambda w: (ops.sum(w ** 3), "aux")
    hv, aux = hvp(f, W, np.stack([VW, 2 * VW]), has_aux=True)
    np.testing.assert_allclose(hv, np.stack([6 * W * VW, 12 * W * VW]), rtol=1e-14)
    assert aux == "aux"


# -- misuse -----------------------------------------------------------------------
@pytest.mark.parametrize("call, error, pattern", [
    (lambda: hvp(loss, W, VW, argnums=(0, 1), args=(DATA,)), TypeError,
     r"^hvp: argnums=\(0, 1\) selects 2 arguments, so x must be a tuple of 2 primals.*got an array"),
    (lambda: hvp(loss, (W, B), VW, argnums=(0, 1), args=(DATA,)), TypeError,
     r"^hvp: argnums=\(0, 1\) selects 2 arguments, so v must be a tuple of 2 directions"),
    (lambda: hvp(loss, (W,), (VW,), argnums=(0, 1), args=(DATA,)), TypeError, "x must be a tuple of 2"),
    (lambda: grad_and_hvp(loss, W, VW, args=[B, DATA]), TypeError,
     r"^grad_and_hvp: args must be a tuple of f's other arguments, got a list"),
    (lambda: hvp(loss, W, VW, args=(B, DATA), argnums=3), ValueError, r"argnums=3 is out of range for 3"),
    (lambda: hvp(loss, (W, W), (VW, VW), args=(DATA,), argnums=(0, -3)), ValueError, "repeats argument 0"),
    (lambda: hvp(loss, W, VW, args=(B, DATA), argnums=0.0), TypeError, "argnums must be an int"),
    (lambda: hvp(loss, (W, B), (VW[:2], VB), args=(DATA,), argnums=(0, 1)), ValueError,
     r"^v\[0\]: tangent must have the primal's shape \(3,\)"),
    (lambda: hvp(lambda w: ops.sum(w), W, VW, has_aux=True), TypeError,
     r"^hvp: has_aux=True: f must return a pair \(output, aux\)"),
    (lambda: hvp(lambda w: (w, 1), W, VW, has_aux=True), TypeError, r"^hvp: f must return a scalar"),
], ids=["x not a tuple", "v not a tuple", "x too short", "args a list", "argnums out of range",
        "argnums repeated", "argnums a float", "v leaf of the wrong kind", "aux missing",
        "aux with a vector output"])
def test_misuse_names_the_argument(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()

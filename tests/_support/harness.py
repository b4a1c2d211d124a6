"""Turning a drawn case into a function of its differentiable arguments, and the
per-primitive and second-order checks the table-driven tests share."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import settings

import dualad
from _support.backends import BACKENDS, DTYPES, dtype_name, to_numpy
from _support.cases import expected_warnings
from _support.known_bugs import known_bug_marks
from _support.recorder import record
from dualad import Dual, HyperDual, ops
from dualad._base.core import Value, bind
from dualad._base.tree import flatten
from dualad.testing import check_grads

# For every backend and dtype but NumPy float64: a quarter of the profile's examples.
FEW = settings(max_examples=max(4, settings.default.max_examples // 4))

# Relative tolerances for comparisons that involve no finite difference (two
# exact computations that only round differently).
EXACT_RTOL = {"float64": 1e-9, "float32": 2e-4, "complex128": 1e-9, "complex64": 2e-4}


def is_float(x: Any) -> bool:
    if isinstance(x, bool):
        return False
    if isinstance(x, float):
        return True
    return hasattr(x, "dtype") and dtype_name(x).startswith("float")


class Counted:
    """``f``, counting the calls of its Python (to show a replay does not run it)."""

    def __init__(self, f):
        self.f, self.calls = f, 0

    def __call__(self, *args):
        self.calls += 1
        return self.f(*args)


class Prepared:
    """A case's drawn arguments on one backend, as ``f(*xs)`` of the floating ones."""

    def __init__(self, case, drawn, backend=None, dtype="float64"):
        args, kw = drawn
        if backend is not None:
            args, kw = backend.convert(args, dtype), backend.convert(kw, dtype)
        self.case, self.args, self.kw = case, tuple(args), kw
        self.where = [i for i, a in enumerate(self.args) if i not in case.static and is_float(a)]
        self.xs = [self.args[i] for i in self.where]

    def f(self, *xs):
        full = list(self.args)
        for i, x in zip(self.where, xs):
            full[i] = x
        return self.case.fn(*full, **self.kw)


def params(test: str, cases, backends=BACKENDS, dtypes=DTYPES, exclude=()):
    """pytest params (case, backend, dtype), with the xfail marks of known core bugs and
    the filters of the warnings the case expects."""
    out = []
    for case in cases:
        for b in backends:
            backend = b.values[0]
            if case.backends is not None and backend.name not in case.backends:
                continue
            for dtype in dtypes:
                if (backend.name, dtype) in exclude:
                    continue
                marks = (list(b.marks) + known_bug_marks(test, case.name, backend.name, dtype)
                         + expected_warnings(case))
                out.append(pytest.param(case, backend, dtype, marks=marks,
                                        id=f"{case.name}-{b.id}-{dtype}"))
    return out


def random_like(x, rng, backend=None):
    """A standard normal draw shaped, typed and placed like ``x``."""
    if type(x) is float:
        return float(rng.standard_normal())
    shape = np.shape(to_numpy(x))
    a = rng.standard_normal(shape)
    if dtype_name(x).startswith("complex"):
        a = a + 1j * rng.standard_normal(shape)
    a = a.astype(dtype_name(x))
    return a if backend is None else backend.asarray(a)


def inner(a_leaves, b_leaves) -> tuple[float, float]:
    """``Re sum(a * b)`` over all leaves in double precision, and ``sum(|a * b|)``.

    The real part of the bilinear pairing (no conjugation) is what a VJP in
    JAX's convention preserves, for complex values as for real ones.
    """
    total = scale = 0.0
    for a, b in zip(a_leaves, b_leaves):
        p = np.real(to_numpy(a).astype(np.complex128) * to_numpy(b).astype(np.complex128))
        total += float(np.sum(p))
        scale += float(np.sum(np.abs(p)))
    return total, scale


# -- a primitive's VJP against its JVP --------------------------------------------------
def differentiable_positions(call) -> list[int]:
    prim = call.prim
    candidates = range(len(call.args))
    if getattr(prim, "linear_args", None) is not None:
        candidates = prim.linear_args
    return [i for i in candidates if is_float(call.args[i])]


def check_call_vjp(call, backend, rng) -> None:
    """``<u, J v> = <J^T u, v>`` for one recorded primitive application."""
    prim, args, prms = call.prim, call.args, call.params
    n = len(args)
    if not prim.records:
        res = prim.residuals(call.ans, args, prms)
        cots = prim.vjp(call.ans, res, (True,) * n, prms)
        assert cots == (None,) * n, f"{call}: {prim!r} has no derivative but returned cotangents {cots}"
        return
    pos = differentiable_positions(call)
    if not pos:
        return
    needs = tuple(i in pos for i in range(n))
    v = [random_like(args[i], rng, backend) for i in pos]

    def f(*d):
        full = list(args)
        for i, x in zip(pos, d):
            full[i] = x
        return bind(prim, *full, **prms)

    ans, jv = dualad.jvp(f, tuple(args[i] for i in pos), tuple(v))
    ans_leaves = flatten(ans)[0] if prim.multiple_results else [ans]
    jv_leaves = flatten(jv)[0] if prim.multiple_results else [jv]
    u_leaves = [random_like(a, rng, backend) for a in ans_leaves]
    u = tuple(u_leaves) if prim.multiple_results else u_leaves[0]
    res = prim.residuals(call.ans, args, prms)
    cots = prim.vjp(u, res, needs, prms)
    assert len(cots) == n, f"{call}: {len(cots)} cotangents for {n} inputs"
    check_declared_fresh(f"{call}: its VJP", cots, prim.vjp(u, res, needs, prms), (u, res, prms),
                         prim.fresh_cotangents, direct=(u,))
    for i, c in enumerate(cots):
        if not needs[i]:
            assert c is None, f"{call}: cotangent {i} was computed although not needed"
            continue
        if c is None:
            continue
        a = args[i]
        if type(a) is float:
            assert np.shape(to_numpy(c)) == () and is_float(c), f"{call}: cotangent {i} of a float is {c!r}"
        else:
            assert np.shape(to_numpy(c)) == np.shape(to_numpy(a)), \
                f"{call}: cotangent {i} has shape {np.shape(to_numpy(c))}, input has {tuple(a.shape)}"
            assert dtype_name(c) == dtype_name(a), \
                f"{call}: cotangent {i} has dtype {dtype_name(c)}, input has {dtype_name(a)}"
    lhs, lscale = inner(u_leaves, jv_leaves)
    rhs, rscale = inner([c for i, c in enumerate(cots) if needs[i] and c is not None],
                        [vi for i, vi in zip(pos, v) if cots[i] is not None])
    # the least precise dtype involved (astype float32 -> float64 rounds its cotangent)
    tol = max(EXACT_RTOL.get(dtype_name(a), 0.0) for a in [*ans_leaves, *(args[i] for i in pos)])
    allowed = tol * max(lscale, rscale, 1e-30) + 1e-300
    if not (np.isfinite(lhs) and np.isfinite(rhs)):  # a call outside the domain (log(0))
        assert lhs == rhs or (np.isnan(lhs) and np.isnan(rhs)), \
            f"{call}: <u, J v> = {lhs}, <J^T u, v> = {rhs}"
        return
    assert abs(lhs - rhs) <= allowed, (
        f"{call}: VJP and JVP disagree: <u, J v> = {lhs!r} (JVP), <J^T u, v> = {rhs!r} (VJP), "
        f"error {abs(lhs - rhs):.3g} > {allowed:.3g}")


# -- what an entry declares fresh (Primitive.fresh) ------------------------------------
def _reachable(x, out, seen):
    """Every NumPy array reachable from ``x``: items of tuples (subclasses too), lists,
    sets and dicts, and the attributes (``__dict__`` and slots) of any other object,
    a Dual's parts, a Dropped or a tape value included. A check, so it may walk deep."""
    if id(x) in seen or x is None or isinstance(x, (str, bytes, int, float, complex, type, np.dtype,
                                                    np.generic)):
        return out
    seen.add(id(x))
    if isinstance(x, np.ndarray):
        out.append(x)
    elif isinstance(x, dict):
        for v in x.values():
            _reachable(v, out, seen)
    elif isinstance(x, (tuple, list, set, frozenset)):
        for v in x:
            _reachable(v, out, seen)
    elif not callable(x):
        names = [n for cls in type(x).__mro__ for n in
                 ((cls.__slots__,) if isinstance(getattr(cls, "__slots__", ()), str)
                  else getattr(cls, "__slots__", ())) if not n.startswith("__")]
        for v in [*getattr(x, "__dict__", {}).values(), *(getattr(x, n, None) for n in names)]:
            _reachable(v, out, seen)
    return out


def _arrays(x):
    return _reachable(x, [], set())


def _handed_back(a, direct):
    """``a`` is one of the call's direct arguments (or an item of a tuple of them), or a
    part of a Dual among them: what ``made_by_call`` tells by identity and never writes."""
    for v in direct:
        for w in v if type(v) is tuple else (v,):
            if a is w or (isinstance(w, Dual) and (a is w.primal or a is w.tangent)):
                return True
    return False


def _not_handed_back(r, direct):
    """The arrays of ``r`` less ``r``, or a Dual part of it, where that is handed back."""
    if _handed_back(r, direct):
        return []
    if isinstance(r, Dual):
        return _not_handed_back(r.primal, direct) + _not_handed_back(r.tangent, direct)
    return _arrays(r)


def check_declared_fresh(label, results, again, given, fresh, direct=()) -> None:
    """Each of ``results`` at a position its entry declares fresh (``fresh``, see
    ``Primitive``): every array it holds is one of the ``direct`` arguments handed back,
    a view (never written), or memory of its own, shared with nothing reachable in what
    the rule was ``given``, in the call's other results, or in what a second call
    (``again``) returned (no cache)."""
    given_arrays, again_arrays = _arrays(given), _arrays(again)
    for i, r in enumerate(results):
        if i not in fresh or r is None:
            continue
        others = _arrays([o for j, o in enumerate(results) if j != i])
        for a in _not_handed_back(r, direct):
            if a.base is not None:
                continue
            shared = [o for o in given_arrays + others + again_arrays if np.may_share_memory(a, o)]
            assert not shared, (f"{label}: result {i}, declared fresh, holds an array that shares "
                                "memory with one it was given, another result, or a second call's")


def check_partials_fresh(call) -> None:
    """``check_declared_fresh`` for the local partials of an elementwise entry: none may
    hand an argument back (only a Dual's part, kept by Dual arithmetic, which these raw
    calls do not make)."""
    partials = call.prim.partials or ()
    if not partials:
        return
    args = (call.ans, call.args, call.params)
    results = [f(call.ans, *call.args, **call.params) for f in partials]
    again = [f(call.ans, *call.args, **call.params) for f in partials]
    check_declared_fresh(f"{call}: partial", results, again, args, call.prim.fresh)


# -- second order ---------------------------------------------------------------------
def scalarize(prep: Prepared, backend, rng):
    """``s(z)``: a random weighted sum of the outputs, of all float inputs packed into one vector."""
    shapes = [tuple(np.shape(to_numpy(x))) for x in prep.xs]
    sizes = [int(np.prod(s)) for s in shapes]
    z = np.concatenate([to_numpy(x).astype(np.float64).ravel() for x in prep.xs] or [np.zeros(0)])
    out_leaves = [o for o in flatten(prep.f(*prep.xs))[0] if is_float(o)]
    weights = [backend.asarray(rng.standard_normal(np.shape(to_numpy(o))), dtype_name(o))
               for o in out_leaves]

    def s(zv):
        parts, start = [], 0
        for shape, size in zip(shapes, sizes):
            parts.append(ops.reshape(ops.getitem(zv, (slice(start, start + size),)), shape))
            start += size
        outs = [o for o in flatten(prep.f(*parts))[0] if is_float(o) or hasattr(o, "_level")]
        total = 0.0
        for w, o in zip(weights, outs):  # ops.add: a strict array refuses a value on its right
            total = ops.add(total, ops.sum(o * w))  # (an output without derivative comes first)
        return total

    return s, backend.asarray(z)


def hyperdual_vs_nested(prep: Prepared, rng, backend=None) -> None:
    """f(HyperDual(x, u, w, 0)) against nested Duals: real, eps1, eps2 and u^T H w."""
    us = [random_like(x, rng, backend) for x in prep.xs]
    ws = [random_like(x, rng, backend) for x in prep.xs]
    zeros = [x * 0.0 if not isinstance(x, float) else 0.0 for x in prep.xs]
    hd = prep.f(*[HyperDual(x, u, w, z) for x, u, w, z in zip(prep.xs, us, ws, zeros)])
    real = prep.f(*prep.xs)
    _, e1 = dualad.jvp(prep.f, tuple(prep.xs), tuple(us))
    _, e2 = dualad.jvp(prep.f, tuple(prep.xs), tuple(ws))
    _, e12 = dualad.jvp(lambda *xs: dualad.jvp(prep.f, xs, tuple(us))[1], tuple(prep.xs), tuple(ws))
    leaves = flatten(hd)[0]
    expected = [flatten(t)[0] for t in (real, e1, e2, e12)]
    for j, leaf in enumerate(leaves):
        if not is_float(leaf) and not isinstance(leaf, HyperDual):
            continue
        if isinstance(leaf, HyperDual):
            parts = (leaf.primal, leaf.eps1, leaf.eps2, leaf.eps1eps2)
        else:
            parts = (leaf, 0.0, 0.0, 0.0)
        for name, got, want in zip(("real", "eps1", "eps2", "eps1eps2"), parts, (e[j] for e in expected)):
            g, w = to_numpy(got).astype(np.float64), to_numpy(want).astype(np.float64)
            if isinstance(leaf, HyperDual) and not isinstance(got, float):
                assert dtype_name(got) == dtype_name(leaf.primal), \
                    f"HyperDual part {name} of output {j} has dtype {dtype_name(got)}"
            tol = EXACT_RTOL[dtype_name(want)]
            scale = max(1.0, float(np.max(np.abs(w), initial=0.0)))
            np.testing.assert_allclose(*np.broadcast_arrays(g, w), rtol=tol, atol=tol * scale,
                                       err_msg=f"HyperDual {name} of output {j} differs from nested Duals")


# -- every first-order check of one drawn case -------------------------------------------
def check_case(case, drawn, backend, dtype):
    prep = Prepared(case, drawn, backend, dtype)
    rng = np.random.default_rng(0)
    if case.kind == "diff":
        check_grads(prep.f, tuple(prep.xs), order=1, modes=("fwd",))
        check_batched_jvp(prep, backend, rng)
    elif case.kind == "zero":
        check_zero_derivative(prep, backend, rng)
    else:
        check_plain_result(prep, backend, rng)
    for call in record(case.fn, prep.args, prep.kw, wrap=set(prep.where)):
        check_call_vjp(call, backend, rng)
        check_partials_fresh(call)
    if case.kind == "diff" and case.second_order:
        hyperdual_vs_nested(prep, rng, backend)


def check_batched_jvp(prep, backend, rng, k=3):
    """k directions in one pass (a leading batch axis, as jacfwd uses) equal k single JVPs."""
    dirs = [[random_like(x, rng, backend) for x in prep.xs] for _ in range(k)]
    stacked = tuple(backend.xp.stack([d[i] for d in dirs], axis=0) for i in range(len(prep.xs)))
    _, batched = dualad.jvp(prep.f, tuple(prep.xs), stacked)
    singles = [flatten(dualad.jvp(prep.f, tuple(prep.xs), tuple(d))[1])[0] for d in dirs]
    for j, leaf in enumerate(flatten(batched)[0]):
        want = np.stack([to_numpy(s[j]) for s in singles], axis=0)
        got = to_numpy(leaf)
        assert got.shape in (want.shape, want.shape[1:]), \
            f"batched tangent {j} has shape {got.shape}, expected {want.shape}"
        tol = EXACT_RTOL[dtype_name(leaf)]
        np.testing.assert_allclose(np.broadcast_to(got, want.shape), want, rtol=tol,
                                   atol=tol * max(1.0, float(np.max(np.abs(want), initial=0.0))),
                                   err_msg=f"a batch of {k} tangents differs from {k} single JVPs")


def check_zero_derivative(prep, backend, rng):
    out, t = dualad.jvp(prep.f, tuple(prep.xs), tuple(random_like(x, rng, backend) for x in prep.xs))
    expected = prep.f(*prep.xs)
    for o, ti, e in zip(flatten(out)[0], flatten(t)[0], flatten(expected)[0]):
        assert dtype_name(ti) == dtype_name(e), f"tangent dtype {dtype_name(ti)}, output {dtype_name(e)}"
        assert np.all(to_numpy(ti) == 0), f"{prep.case.name} has a nonzero derivative {to_numpy(ti)}"
        np.testing.assert_array_equal(to_numpy(o), to_numpy(e))


def check_plain_result(prep, backend, rng):
    out = prep.f(*[Dual(x, random_like(x, rng, backend)) for x in prep.xs])
    expected = prep.f(*prep.xs)
    for o, e in zip(flatten(out)[0], flatten(expected)[0]):
        assert not isinstance(o, Value), f"{prep.case.name} returned a {type(o).__name__}, not a plain array"
        assert dtype_name(o) == dtype_name(e) and type(o) is type(e)
        assert dtype_name(o) == "bool" or dtype_name(o).startswith(("int", "uint"))
        np.testing.assert_array_equal(to_numpy(o), to_numpy(e))


def as_vector(prep: "Prepared") -> tuple:
    """The case's floating arguments as one vector, and f of that vector (its outputs
    raveled and joined into one vector): the form sparse derivatives take."""
    shapes = [np.shape(x) for x in prep.xs]
    sizes = [math.prod(s) for s in shapes]
    x = np.concatenate([np.ravel(v) for v in prep.xs]) if prep.xs else np.zeros(0)

    def f(v):
        parts, start = [], 0
        for s, n, orig in zip(shapes, sizes, prep.xs):
            part = v[start:start + n]
            parts.append(part[0] if type(orig) is float else part.reshape(s))
            start += n
        out = prep.f(*parts)
        leaves = flatten(out)[0]
        return dualad.ops.concatenate([dualad.ops.reshape(leaf, (-1,)) for leaf in leaves])
    return x, f

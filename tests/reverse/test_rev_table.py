"""Every primitive of the table through the tape, from the shared case table.

The forward-mode suite (tests/dualad) checks each rule's JVP against finite
differences and each VJP rule against its JVP, per primitive call and per
backend. Here the same cases run through the *tape* (``reverse.vjp``:
recording, the iterative walk, accumulation over fan-out and broadcasting,
the functional wrappers), on NumPy in float64 and float32:

- ``check_grads(..., modes=("rev",))``: the tape's VJP against the JVP
  through ``<u, J v> = <J^T u, v>``;
- the tape's VJP against central finite differences, independently of
  forward mode;
- zero-derivative cases give zero cotangents.

Rule bugs on other backends are the forward-mode suite's to report; the
tape's own backend neutrality is checked in test_rev_backends.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from _support.backends import BACKENDS, to_numpy
from _support.cases import CASES
from _support.harness import Prepared, is_float, params
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import reverse
from dualad._base.tree import flatten
from dualad.testing import check_grads

DIFF = [c for c in CASES if c.kind == "diff"]
ZERO = [c for c in CASES if c.kind == "zero"]
NUMPY = [b for b in BACKENDS if b.id == "numpy"]
# The forward-mode suite draws many examples for the same rules; here fewer suffice.
FEW = settings(max_examples=12, suppress_health_check=[HealthCheck.filter_too_much,
                                                       HealthCheck.too_slow])

def _params(test, cases, dtypes):
    return params(test, cases, dtypes=dtypes, backends=NUMPY)


def _prepare(case, data, backend, dtype):
    """The drawn arguments, where the plain function is defined and finite.

    A case that fails or is not finite without any transform is the
    forward-mode suite's to report (it runs the same table); here only the
    tape is under test.
    """
    prep = Prepared(case, data.draw(case.args, label="args"), backend, dtype)
    assume(prep.xs)
    try:
        out = prep.f(*prep.xs)
    except Exception:  # noqa: BLE001
        assume(False)
    assume(all(np.all(np.isfinite(to_numpy(o))) for o in _float_leaves(out)))
    return prep, out


def _float_leaves(out):
    return [o for o in flatten(out)[0] if is_float(o)]


@pytest.mark.parametrize("case, backend, dtype", _params("rev_check_grads", DIFF, ("float64",)))
@FEW
@given(data=st.data())
def test_tape_vjp_matches_jvp(case, backend, dtype, data):
    _check_vjp_against_jvp(case, backend, dtype, data)


@pytest.mark.parametrize("case, backend, dtype", _params("rev_check_grads", DIFF, ("float32",)))
@FEW
@given(data=st.data())
def test_tape_vjp_matches_jvp_float32(case, backend, dtype, data):
    _check_vjp_against_jvp(case, backend, dtype, data)


def _check_vjp_against_jvp(case, backend, dtype, data):
    prep, _ = _prepare(case, data, backend, dtype)
    check_grads(prep.f, tuple(prep.xs), order=1, modes=("rev",))


@pytest.mark.parametrize("case, backend, dtype", _params("rev_fd", DIFF, ("float64",)))
@FEW
@given(data=st.data())
def test_tape_vjp_matches_finite_differences(case, backend, dtype, data):
    prep, _ = _prepare(case, data, backend, dtype)
    rng = np.random.default_rng(1)
    out, pullback = reverse.vjp(prep.f, *prep.xs)
    leaves, build = flatten(out)
    us = [rng.standard_normal(np.shape(o)) if is_float(o) else np.zeros(np.shape(o)) for o in leaves]
    us = [float(u) if isinstance(o, float) else np.asarray(u, dtype=np.asarray(o).dtype)
          for u, o in zip(us, leaves)]
    cots = pullback(build(us))
    vs = [rng.standard_normal(np.shape(x)) for x in prep.xs]
    vs = [float(v) if isinstance(x, float) else v for v, x in zip(vs, prep.xs)]
    float_outs = _float_leaves(out)
    # A case that computes in float32 inside (astype) needs a float32 step and tolerance.
    low = any(np.asarray(to_numpy(o)).dtype != np.float64 for o in float_outs)
    eps, rtol, unit = (2.0 ** -10, 2e-3, 2.0 ** -23) if low else (1e-6, 1e-5, 2.0 ** -52)
    plus = _float_leaves(prep.f(*[x + eps * v for x, v in zip(prep.xs, vs)]))
    minus = _float_leaves(prep.f(*[x - eps * v for x, v in zip(prep.xs, vs)]))
    u_float = [u for u, o in zip(us, leaves) if is_float(o)]
    fd = [(to_numpy(p).astype(np.float64) - to_numpy(m)) / (2 * eps) for p, m in zip(plus, minus)]
    lhs = sum(float(np.sum(u * d)) for u, d in zip(u_float, fd))
    lscale = sum(float(np.sum(np.abs(u * d))) for u, d in zip(u_float, fd))
    for c, x in zip(cots, prep.xs):
        assert c is None or np.shape(to_numpy(c)) == np.shape(x), \
            f"{case.name}: cotangent shape {np.shape(to_numpy(c))}, input shape {np.shape(x)}"
    pairs = [(to_numpy(c), v) for c, v in zip(cots, vs) if c is not None]
    rhs = sum(float(np.sum(c * v)) for c, v in pairs)
    rscale = sum(float(np.sum(np.abs(c * v))) for c, v in pairs)
    noise = sum(float(np.sum(np.abs(u) * (np.abs(to_numpy(p)) + np.abs(to_numpy(m)))))
                for u, p, m in zip(u_float, plus, minus)) * unit / eps
    allowed = rtol * (1.0 + max(lscale, rscale)) + 8 * noise
    assert abs(lhs - rhs) <= allowed, (
        f"{case.name}: <u, FD(f) v> = {lhs!r}, <J^T u, v> from the tape = {rhs!r} "
        f"(error {abs(lhs - rhs):.3g} > {allowed:.3g})")


@pytest.mark.parametrize("case, backend, dtype", _params("rev_zero", ZERO, ("float64",)))
@FEW
@given(data=st.data())
def test_zero_derivative_cases_give_zero_cotangents(case, backend, dtype, data):
    prep, _ = _prepare(case, data, backend, dtype)
    out, pullback = reverse.vjp(prep.f, *prep.xs)
    leaves, build = flatten(out)
    cots = pullback(build([np.ones(np.shape(o)) if not isinstance(o, float) else 1.0 for o in leaves]))
    for c in cots:
        assert c is None or np.all(to_numpy(c) == 0.0), f"{case.name}: nonzero cotangent {c!r}"

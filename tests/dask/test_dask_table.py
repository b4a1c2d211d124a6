"""Every case of the table on Dask arrays, against the same case on NumPy.

The suites in tests/dualad and tests/reverse check each rule against finite
differences and each mode against the others, on NumPy and array_api_strict.
Here each case of the table (tests/_support/cases.py) runs once more on the
same draw lifted into Dask arrays, chunked unevenly (two chunks of unequal
size along every axis of length 3 or more), and what Dask gives must be what
NumPy gives:

- the value, the JVP along a random direction (``dualad.jvp``) and, for
  differentiable cases, the tape's VJP of a random cotangent (``reverse.vjp``),
  all built lazily (every array that comes back is a Dask array), then
  computed in one ``dask.compute``;
- each input cotangent has the chunks of its input.

Each Dask operation builds a graph and each check computes one, so a case
runs on Dask once here (``DRAWS``), not the profile's many times: the rules
are the NumPy suites' to test, the Dask path through them is this file's.
Where Dask itself cannot do what a case asks, the case is marked by name,
with the reason: ``DASK_CANNOT`` (expected to fail) or ``DASK_CANNOT_DRAW``
(the draws it cannot do are left out). The cases that name
their backends without Dask are left out as they are for array_api_strict:
assignment into a raw buffer (``put``, ``place``, ``fill_diagonal``,
``put_along_axis``: NumPy and CuPy), SciPy's special functions and NumPy's
``eig`` (``roots``, ``poly`` of a matrix); ``test_scipy_special_on_dask_says_so``
checks the error those give on Dask arrays.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, assume, settings

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

from _support.backends import DASK, DASK_CANNOT, to_numpy  # noqa: E402
from _support.cases import CASES, expected_warnings  # noqa: E402
from _support.dask_draws import draws_on_numpy  # noqa: E402
from _support.harness import EXACT_RTOL, Prepared, is_float, random_like  # noqa: E402

import dualad  # noqa: E402
import reverse  # noqa: E402
from dualad._base.tree import flatten  # noqa: E402

pytestmark = pytest.mark.dask

# Three draws of each case (hypothesis's simplest first; derandomized, as in
# the CI profile) are computed on NumPy, and one of them on Dask: the first
# with an axis of 3 or more, split unevenly (251 of the 261 cases draw one),
# else the last. Every Dask operation builds a graph, so one draw per case
# keeps the table's run on Dask to about a tenth of a second per case.
DRAWS = settings(max_examples=3, deadline=None, database=None, phases=[Phase.generate],
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])




def _param(case):
    reason = DASK_CANNOT.get(case.name)
    marks = [] if reason is None else [pytest.mark.xfail(strict=True, reason=reason)]
    return pytest.param(case, id=case.name, marks=marks + expected_warnings(case))


RUNS = [_param(c) for c in CASES if c.backends is None or "dask" in c.backends]


@pytest.mark.parametrize("case", RUNS)
def test_case_on_dask_equals_numpy(case):
    drawn, want, directions = _a_draw(case)
    where = f"{case.name} at {drawn!r}"
    lazy = Prepared(case, drawn, DASK, "float64")
    got, _ = _derivatives(lazy, case.kind, directions=DASK.convert(directions, "float64"))
    eager = [path for (path, g), (_, w) in zip(_labelled(got), _labelled(want))
             if isinstance(w, np.ndarray) and not isinstance(g, da.Array)]
    assert not eager, f"{where}: {eager} came back as computed arrays, not Dask arrays"
    if case.kind == "diff":
        for c, x in zip(got["vjp"], lazy.xs):
            if isinstance(x, da.Array):
                assert c.chunks == x.chunks, f"{where}: cotangent chunks {c.chunks}, input {x.chunks}"
    (computed,) = dask.compute(got, scheduler="sync")
    for (path, g), (_, w) in zip(_labelled(computed), _labelled(want), strict=True):
        g, w = to_numpy(g), to_numpy(w)
        assert g.shape == w.shape and g.dtype == w.dtype, \
            f"{where} {path}: {g.dtype}{g.shape} on Dask, {w.dtype}{w.shape} on NumPy"
        if w.dtype.kind in "fc":
            tol = EXACT_RTOL[str(w.dtype)]
            scale = max(1.0, float(np.max(np.abs(w), initial=0.0)))
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol * scale, equal_nan=True,
                                       err_msg=f"{where} {path}")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"{where} {path}")


def _a_draw(case) -> tuple:
    """One draw of ``case`` that NumPy differentiates to finite values (see DRAWS),
    with NumPy's results and the directions it used."""
    def finite_derivatives(ref):
        want, directions = _derivatives(ref, case.kind, rng=np.random.default_rng(0))
        assume(all(np.all(np.isfinite(to_numpy(w))) for w in flatten(want)[0] if is_float(w)))
        return want, directions

    valid = draws_on_numpy(case, finite_derivatives, DRAWS)
    assert valid, f"{case.name}: no draw runs on NumPy"
    tall = [v for v in valid if any(max(np.shape(x), default=0) >= 3 for x in v[1].xs)]
    drawn, _, (want, directions) = (tall or valid[-1:])[0]
    return drawn, want, directions

def _derivatives(prep: Prepared, kind: str, rng=None, directions=None) -> tuple[dict, dict]:
    """The value, a JVP and (differentiable cases) a VJP. The directions are
    drawn from ``rng`` on NumPy and returned, to be lifted and given back
    (``directions``) for the same case on Dask."""
    if kind == "nondiff" or not prep.xs:
        return {"value": prep.f(*prep.xs)}, {}
    if directions is None:
        directions = {"v": tuple(random_like(x, rng) for x in prep.xs)}
    out = dict(zip(("value", "jvp"), dualad.jvp(prep.f, tuple(prep.xs), directions["v"])))
    if kind == "diff":
        value, pullback = reverse.vjp(prep.f, *prep.xs)
        leaves, build = flatten(value)
        if "u" not in directions:
            directions["u"] = build([random_like(o, rng) if is_float(o) else np.zeros(np.shape(o))
                                     for o in leaves])
        out["vjp"] = pullback(directions["u"])
    return out, directions


def _labelled(tree: dict):
    return [(f"{key}[{i}]", leaf) for key, part in tree.items() for i, leaf in enumerate(flatten(part)[0])]


def test_scipy_special_on_dask_says_so():
    from dualad import ops
    with pytest.raises(NotImplementedError, match="erf: scipy.special functions run on NumPy"):
        ops.erf(da.ones(3, chunks=2))

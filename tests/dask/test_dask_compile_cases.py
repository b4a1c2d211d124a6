"""``dualad.compile`` of every case of the table on Dask arrays split in rows: the
trace and a replay at new arguments equal the case on NumPy, whether the program
splits into tasks per chunk (dualad/_program/executors/dask_graph.py) or, with the
reason as a warning, runs eagerly.

The arguments are the draw's, each split along its first axis in two chunks of
unequal size where it has 3 or more rows (tests/_support/backends.py's
``dask-rows``); the replay's are the same numbers reversed along every axis,
where the case accepts them. One draw per case, since each call builds and
computes a graph; it is the first of four draws with 3 rows or more (else the last).
:data:`SPLIT_AT_LEAST` pins how many cases split, so that a rule which
stops splitting is noticed; which ones do is printed by ``-s``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, settings

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

from _support.backends import DASK_CANNOT, DASK_ROWS, NUMPY, to_numpy  # noqa: E402
from _support.cases import CASES, expected_warnings  # noqa: E402
from _support.dask_draws import draws_on_numpy  # noqa: E402
from _support.harness import EXACT_RTOL, Prepared  # noqa: E402

import dualad  # noqa: E402
from dualad._base.tree import flatten  # noqa: E402

pytestmark = pytest.mark.dask

DRAWS = settings(max_examples=4, deadline=None, database=None, phases=[Phase.generate],
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
RUNS = [pytest.param(c, id=c.name, marks=expected_warnings(c) + (
            [pytest.mark.xfail(strict=True, reason=DASK_CANNOT[c.name])] if c.name in DASK_CANNOT else []))
        for c in CASES if c.backends is None or "dask" in c.backends]
SPLIT: dict[str, str] = {}    # case -> "dask" or why it ran eagerly
SPLIT_AT_LEAST = 130          # of about 236 cases with 3 rows or more in their draw (146 split)


def _flipped(prep, xs):
    """The numbers reversed along every axis, where the case accepts them; else ``xs``."""
    flipped = [np.flip(x).copy() if isinstance(x, np.ndarray) and x.dtype.kind == "f" else x for x in xs]
    try:
        prep.f(*flipped)
    except Exception:  # noqa: BLE001  (outside the case's domain)
        return xs
    return flipped


def _assert_same(got, want, what):
    (got,) = dask.compute(got, scheduler="sync")
    got, want = flatten(got)[0], flatten(want)[0]
    assert len(got) == len(want), f"{what}: {len(got)} outputs, eager {len(want)}"
    for j, (g, w) in enumerate(zip(got, want)):
        g, w = to_numpy(g), to_numpy(w)
        assert g.shape == w.shape and g.dtype == w.dtype, f"{what}: output {j} is {g.dtype}{g.shape}, " \
                                                          f"eager {w.dtype}{w.shape}"
        tol = EXACT_RTOL.get(str(w.dtype), 0.0)
        scale = max(1.0, float(np.max(np.abs(w), initial=0.0))) if w.dtype.kind in "fc" else 1.0
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * scale, equal_nan=True,
                                   err_msg=f"{what}: output {j} differs from NumPy")


def _rows(prep) -> int:
    """The most rows of the floating arguments that have an axis."""
    return max((np.shape(to_numpy(x))[0] for x in prep.xs if np.ndim(to_numpy(x))), default=0)


def _a_draw(case):
    """A draw of ``case`` that NumPy evaluates, with 3 rows or more where one of
    :data:`DRAWS` has them (hypothesis' first draws are its simplest: one row)."""
    found = draws_on_numpy(case, lambda ref: ref.f(*ref.xs), DRAWS)
    if not found:
        pytest.skip(f"no draw of {case.name} that NumPy evaluates")
    return next((drawn for drawn, ref, _ in found if _rows(ref) >= 3), found[-1][0])


@pytest.mark.parametrize("case", RUNS)
def test_compile_of_every_case_on_dask_rows(case):
    drawn = _a_draw(case)
    ref = Prepared(case, drawn, NUMPY, "float64")
    if not ref.xs:
        pytest.skip(f"{case.name} has no floating argument")
    again = _flipped(ref, list(ref.xs))
    lazy = Prepared(case, drawn, DASK_ROWS, "float64")
    compiled = dualad.compile(lazy.f)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        first = compiled(*lazy.xs)
        second = compiled(*DASK_ROWS.convert(again, "float64"))
    _assert_same(first, ref.f(*ref.xs), f"trace of {case.name}")
    _assert_same(second, ref.f(*again), f"replay of {case.name}")
    reasons = [str(w.message) for w in caught if "dualad.compile" in str(w.message)]
    if _rows(ref) >= 3:
        SPLIT[case.name] = compiled.stats["executor"] or (reasons[0] if reasons else "eager")


def test_enough_cases_split_into_tasks_per_chunk():
    """Runs after the sweep (file order): how many cases split, against the pin."""
    if len(SPLIT) < len(RUNS) // 2:
        pytest.skip("the sweep above did not run (or only in part) in this session")
    split = sorted(name for name, how in SPLIT.items() if how == "dask")
    print(f"\n{len(split)} of {len(SPLIT)} cases with 3 rows or more split into tasks per chunk")
    for name, how in sorted(SPLIT.items()):
        if how != "dask":
            print(f"  {name}: {how}")
    assert len(split) >= SPLIT_AT_LEAST, f"only {len(split)} cases split: {sorted(set(SPLIT) - set(split))}"

"""Draws of a table case for the Dask suites, taken on NumPy first."""

from __future__ import annotations

from typing import Any, Callable

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from _support.backends import DASK_CANNOT_DRAW, NUMPY
from _support.harness import Prepared


def draws_on_numpy(case: Any, evaluate: Callable[[Prepared], Any], draws: settings) -> list:
    """``(drawn, prepared on NumPy, evaluate(prepared))`` of each draw of ``case`` (hypothesis
    under ``draws``) that Dask can take (``DASK_CANNOT_DRAW``) and that ``evaluate``
    accepts: it raises outside the case's domain (the NumPy suites' to report)."""
    found = []

    @draws
    @given(data=st.data())
    def collect(data):
        drawn = data.draw(case.args, label="args")
        ref = Prepared(case, drawn, NUMPY, "float64")
        limit = DASK_CANNOT_DRAW.get(case.name)
        assume(limit is None or not limit[0](ref))
        try:
            result = evaluate(ref)
        except Exception:  # noqa: BLE001
            assume(False)
        found.append((drawn, ref, result))

    collect()
    return found

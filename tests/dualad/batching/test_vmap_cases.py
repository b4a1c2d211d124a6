"""``vmap`` of every case of the table (tests/_support/cases.py): the batched call
equals the case applied to each element and stacked.

Each floating argument is batched or not (``None``), along an axis drawn
anywhere in the stacked array (given as a positive or a negative
``in_axes``); the batch holds the drawn arguments and, where the function
accepts them, the same arguments reversed along every axis, so the
elements differ. Whatever batch rule or fallback a primitive takes, the
result must be the loop's.

A few cases compute a result whose shape depends on the values (``extract``
keeps the entries where a condition holds): vmap refuses them, as JAX does,
with a ``TypeError`` that names vmap and the operation. They must raise
when every argument is batched, and when vmap does return, its result is
still checked against the loop.
"""

from __future__ import annotations

import pytest
from _support.backends import NUMPY, STRICT
from _support.cases import CASES
from _support.harness import Prepared, params
from _support.vmap_check import check_vmap
from hypothesis import given, settings
from hypothesis import strategies as st

SOME = settings(max_examples=max(3, settings.default.max_examples // 5))
TWO = settings(max_examples=2)


def check_drawn_case(case, backend, dtype, data, unbatched=True):
    prep = Prepared(case, data.draw(case.args, label="args"), backend, dtype)
    if not prep.xs:
        pytest.skip(f"{case.name} has no floating argument to batch")
    check_vmap(prep, backend, dtype, data, unbatched)


@pytest.mark.parametrize("case, backend, dtype", params("vmap", CASES, [NUMPY.param], ["float64"]))
@SOME
@given(data=st.data())
def test_vmap_of_every_case(case, backend, dtype, data):
    check_drawn_case(case, backend, dtype, data)


@pytest.mark.parametrize("case, backend, dtype", params("vmap", CASES, [STRICT.param], ["float32"]))
@TWO
@given(data=st.data())
def test_vmap_of_every_case_array_api_strict_float32(case, backend, dtype, data):
    check_drawn_case(case, backend, dtype, data, unbatched=False)

"""Every primitive's rules, from the case table (tests/_support/cases.py).

For each case, on NumPy, array_api_strict and (with a GPU) CuPy arrays, in
float64 and float32, over shapes and values drawn by hypothesis, one draw is
checked in every way that applies:

- the JVP against central finite differences (``dualad.testing.check_grads``);
- each primitive the case calls, on exactly the operands the case produced:
  its VJP rule against its JVP through ``<u, J v> = <J^T u, v>``;
- HyperDual numbers against nested Duals (first and second derivatives);
- zero-derivative primitives give zero tangents, boolean ones plain arrays;
- the Python-float fast path: floats in, floats out, same derivatives.

NumPy float64 gets the profile's number of examples; the other backends and
dtypes a quarter of it, which keeps the suite fast while still running every
rule on every backend. Second-order checks are in test_second_order.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from _support.backends import NUMPY
from _support.cases import CASES, covered_primitives, is_linalg
from _support.harness import FEW, Prepared, check_case, hyperdual_vs_nested, params
from _support.recorder import record
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

import dualad
from dualad.extend import REGISTRY
from dualad.testing import check_grads

SCALAR = [c for c in CASES if c.scalar_args is not None]


@pytest.mark.parametrize("case, backend, dtype", params("rules", CASES, [NUMPY.param], ["float64"]))
@given(data=st.data())
def test_rules(case, backend, dtype, data):
    check_case(case, data.draw(case.args, label="args"), backend, dtype)


@pytest.mark.parametrize("case, backend, dtype", params("rules", CASES, exclude=[("numpy", "float64")]))
@FEW
@given(data=st.data())
def test_rules_other_backends_and_dtypes(case, backend, dtype, data):
    check_case(case, data.draw(case.args, label="args"), backend, dtype)


@pytest.mark.parametrize("case", SCALAR, ids=str)
@given(data=st.data())
def test_python_float_fast_path(case, data):
    """Floats in, floats out (the math-module path), with the same derivatives."""
    prep = Prepared(case, data.draw(case.scalar_args, label="args"))
    out, t = dualad.jvp(prep.f, tuple(prep.xs), tuple(1.0 for _ in prep.xs))
    want = bool if case.kind == "nondiff" else float
    assert type(out) is want, f"{case.name} on floats returned {type(out).__name__}"
    if case.kind != "nondiff":
        assert type(t) is float, f"{case.name} on floats returned a {type(t).__name__} tangent"
    if case.kind == "zero":
        assert t == 0.0
    if case.kind == "diff":
        check_grads(prep.f, tuple(prep.xs), order=1, modes=("fwd",))
        if case.second_order:
            hyperdual_vs_nested(prep, np.random.default_rng(0))


# -- the table covers the registry ---------------------------------------------------------
def test_every_primitive_has_a_case():
    missing = sorted(n for n in REGISTRY if not is_linalg(n) and n not in covered_primitives())
    assert not missing, (f"registered primitives without a case in tests/_support/cases.py: {missing}; "
                         "add a case (or, for linear algebra, a test in test_linalg.py)")


def test_cases_name_only_registered_primitives():
    unknown = sorted(covered_primitives() - set(REGISTRY))
    assert not unknown, f"cases name primitives that are not registered: {unknown}"


class _AllSeen(Exception):
    pass


@pytest.mark.parametrize("case", CASES, ids=str)
def test_case_exercises_its_primitives(case):
    """Some draw of the case calls each primitive it claims to cover."""
    seen: set = set()

    @settings(max_examples=50, database=None, derandomize=True, phases=[Phase.generate],
              report_multiple_bugs=False)
    @given(drawn=case.args)
    def collect(drawn):
        prep = Prepared(case, drawn)
        seen.update(c.prim.name for c in record(case.fn, prep.args, prep.kw, wrap=set(prep.where)))
        if set(case.prims) <= seen:
            raise _AllSeen  # stops the search at the first draw that completes the set

    try:
        collect()
    except _AllSeen:
        pass
    missing = sorted(set(case.prims) - seen)
    assert not missing, f"no draw of case {case.name} called {missing}"

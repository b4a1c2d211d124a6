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

import importlib.util
import pathlib
import sys

import numpy as np
import pytest
from _support.backends import NUMPY
from _support.cases import CASES, case_params, covered_primitives
from _support.harness import FEW, Prepared, check_case, hyperdual_vs_nested, params
from _support.recorder import record
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

import dualad
from dualad._base.tree import flatten
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


# -- the tables cover the registry and every ops function ------------------------------------
def _linalg_tests():
    """tests/dualad/primitives/test_linalg.py, the linear-algebra table, as pytest imports it
    (under its file name), also where this file runs alone."""
    module = sys.modules.get("test_linalg")
    if module is None:
        path = pathlib.Path(__file__).resolve().parents[1] / "primitives" / "test_linalg.py"
        spec = importlib.util.spec_from_file_location("test_linalg", path)
        module = sys.modules["test_linalg"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


def _linalg_table_primitives() -> set:
    """The primitives test_linalg.py's table calls, recorded on one draw of each case."""
    test_linalg = _linalg_tests()
    seen = set()
    for fn, make in test_linalg.CASES.values():
        args = make(np.random.default_rng(0))
        seen.update(c.prim.name for c in record(fn, tuple(args), {}, wrap=tuple(range(len(args)))))
    return seen


def test_every_primitive_has_a_case():
    """Each entry of the registry is called by a case of cases.py or of test_linalg.py."""
    missing = sorted(set(REGISTRY) - covered_primitives() - _linalg_table_primitives())
    assert not missing, (f"registered primitives that no case calls: {missing}; add a case to "
                         "tests/_support/cases.py (or, for linear algebra, to test_linalg.py's table)")


def test_every_ops_function_has_a_case():
    """Each public function of ``ops`` (composites included) has a case of its name, is
    another name of one that has (``amax`` is ``max``), or is a linear-algebra table row.
    The functions of values (values.py) return plain arrays through one wrapper, which
    test_values_functions_return_plain_arrays checks."""
    test_linalg = _linalg_tests()

    from dualad import ops
    from dualad._numpy import values
    names = {c.name for c in CASES} | {n.split("-")[0] for n in test_linalg.CASES}
    functions = {id(getattr(ops, n, None)) for n in names}
    missing = sorted(
        n for n in ops.__all__
        if n not in ("linalg", "fft") and n not in values.__all__ and n not in names
        and not any(c.startswith(n + "_") for c in names) and id(getattr(ops, n)) not in functions)
    assert not missing, f"ops functions without a case: {missing}"


@pytest.mark.parametrize("name, args", [
    ("argmax", ()), ("argsort", ()), ("nonzero", ()), ("isclose", ("x",)), ("unique", ()),
    ("searchsorted", ("x",)), ("nanargmin", ()), ("histogram", ()), ("all", ()), ("zeros_like", ()),
])
def test_values_functions_return_plain_arrays(name, args):
    from dualad import ops
    x = np.array([3.0, 1.0, 2.0])
    d = dualad.Dual(x, np.ones(3))
    ours = getattr(ops, name)(d, *[d if a == "x" else a for a in args])
    theirs = getattr(np, name)(x, *[x if a == "x" else a for a in args])
    for o, t in zip(ours if isinstance(ours, tuple) else (ours,), theirs if isinstance(theirs, tuple)
                    else (theirs,)):
        assert not hasattr(o, "_level")
        np.testing.assert_array_equal(o, t)


def test_cases_name_only_registered_primitives():
    unknown = sorted(covered_primitives() - set(REGISTRY))
    assert not unknown, f"cases name primitives that are not registered: {unknown}"


class _AllSeen(Exception):
    pass


@pytest.mark.parametrize("case", case_params(CASES))
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


def test_every_numpy_function_without_a_rule_says_so():
    """A NumPy function or ufunc NumPy hands to dualad either has a rule or raises
    the error that names it and says how to add one: never a silent fallback."""
    from dualad._numpy.arraylike import NUMPY_FUNCTIONS
    d = dualad.Dual(np.ones(3), np.ones(3))
    unruled = []
    for namespace in (np, np.linalg, np.fft):
        for name in dir(namespace):
            f = getattr(namespace, name)
            if name.startswith("_") or not callable(f) or isinstance(f, type) or f in NUMPY_FUNCTIONS:
                continue
            if isinstance(f, np.ufunc):
                call = lambda f=f: d.__array_ufunc__(f, "__call__", *([d] * f.nin))  # noqa: E731
            elif hasattr(f, "_implementation"):  # dispatched through __array_function__
                call = lambda f=f: d.__array_function__(f, (type(d),), (d,), {})  # noqa: E731
            else:
                continue
            unruled.append(name)
            with pytest.raises(TypeError, match="no dualad rule.*register_numpy"):
                call()
    assert unruled  # the check ran


# -- Python lists, tuples and numbers as operands, as NumPy takes them (issue 26) ---------------
# block reads nested lists as its block structure: a list there is a deeper nesting, in NumPy too
NOT_AN_OPERAND = {"block"}
LIFTABLE = [c for c in CASES if c.kind == "diff" and c.name not in NOT_AN_OPERAND]


def _lifted(a, how):
    """``a`` as NumPy code writes it: a Python number for a 0-d array, else a list or (for
    floats: a tuple of integers or booleans is a tuple of indices, not an index array) a tuple."""
    if a.ndim == 0:
        return a.item()
    out = a.tolist()
    return tuple(out) if how == "tuple" and a.dtype.kind == "f" else out


def _raised_in_the_library(err: BaseException) -> bool:
    """Whether the innermost frame of ``err``'s traceback runs a module of dualad or
    reverse: decided by the module's name, not its file's path, which holds "dualad"
    wherever the clone is named after the repository (tests/ included)."""
    tb = err.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_globals.get("__name__", "").partition(".")[0] in ("dualad", "reverse")


@pytest.mark.parametrize("case", LIFTABLE, ids=str)
@FEW
@given(data=st.data())
def test_rules_with_list_tuple_and_number_operands(case, data):
    """The case differentiated in its first floating argument, every other array operand
    given as a Python list, tuple or number: the same value and derivative as with arrays.
    A case whose own Python code would not take a list there (``y / 2.0``) is skipped, as
    NumPy could not either; an error raised inside dualad fails."""
    prep = Prepared(case, data.draw(case.args, label="args"))
    if not prep.where:
        return
    first, how = prep.where[0], data.draw(st.sampled_from(["list", "tuple"]), label="how")
    lifted = [_lifted(a, how) if isinstance(a, np.ndarray) and a.size and i != first and i not in case.static
              else a for i, a in enumerate(prep.args)]
    if all(b is a for b, a in zip(lifted, prep.args)):
        return

    def with_args(args):
        def f(x):
            full = list(args)
            full[first] = x
            return case.fn(*full, **prep.kw)
        return f
    x = prep.args[first]
    try:
        with_args(lifted)(x)
    except Exception as err:  # noqa: BLE001 - where it came from decides
        if not _raised_in_the_library(err):
            return
        raise
    want = dualad.jvp(with_args(prep.args), (x,), (np.ones_like(x),))
    got = dualad.jvp(with_args(lifted), (x,), (np.ones_like(x),))
    for g, w in zip(flatten(got)[0], flatten(want)[0]):
        assert np.shape(g) == np.shape(w), (np.shape(g), np.shape(w))
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12, atol=1e-12)

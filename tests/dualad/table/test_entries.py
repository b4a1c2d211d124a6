"""What entries and program steps declare for the program passes (``Primitive.declare``,
``dualad._program.ir.Step``) holds of their implementations."""

from __future__ import annotations

import string

import numpy as np
import pytest

from dualad._base.backend import NUMPY_XP
from dualad._program.ir import Step
from dualad._program.passes.fusion import Fused
from dualad._program.passes.simplify import REWRITES, SCATTER_SUM
from dualad._staging.random import DRAW
from dualad.extend import REGISTRY

ENTRIES = sorted(REGISTRY)


def _operands(entry, ufunc):
    rng = np.random.default_rng(3)
    args = [rng.uniform(0.1, 0.9, 16) for _ in range(ufunc.nin)]
    return [a + 1.0 for a in args] if entry.name == "arccosh" else args


@pytest.mark.parametrize("name", ENTRIES)
def test_declared_facts_are_consistent(name):
    entry = REGISTRY[name]
    assert type(entry.ufunc_params) is dict and not entry.effect and entry.format is None
    assert not entry.takes_out
    assert all(r in REWRITES for r in entry.simplifications), entry.simplifications
    if entry.ufunc is None:
        assert entry.scalar_form is None and not entry.ufunc_params
        return
    ufunc = getattr(np, entry.ufunc)
    assert isinstance(ufunc, np.ufunc) and ufunc.nout == 1
    args = _operands(entry, ufunc)
    np.testing.assert_array_equal(entry.impl(NUMPY_XP, *args, **entry.ufunc_params), ufunc(*args))
    if entry.scalar_form is not None:
        fields = {f for _, f, _, _ in string.Formatter().parse(entry.scalar_form) if f is not None}
        assert fields <= {str(i) for i in range(ufunc.nin)}
        floats = [float(a[0]) for a in args]
        assert eval(entry.scalar_form.format(*map(repr, floats))) == ufunc(*floats)  # noqa: S307


@pytest.mark.parametrize("name", [n for n in ENTRIES if REGISTRY[n].new_array])
def test_new_array_entries_share_no_memory(name):
    x = np.arange(12.0).reshape(3, 4)
    out = REGISTRY[name].impl(NUMPY_XP, x, axis=0, keepdims=False)
    assert not np.shares_memory(out, x)


def test_program_steps_share_the_base_and_its_answers():
    for prim in (DRAW, SCATTER_SUM, Fused.__new__(Fused)):
        assert isinstance(prim, Step) and not prim.multiple_results and not prim.simplifications
    assert DRAW.effect and DRAW.format is not None and not SCATTER_SUM.effect
    assert Fused.takes_out and Fused.format is not None and SCATTER_SUM.format is None
    a, b = np.ones(3), np.ones(2)
    out = SCATTER_SUM.impl(NUMPY_XP, a, b, shape=(5,), dtype=np.float64, ranges=((0, 3), (3, 5)))
    assert SCATTER_SUM.new_array and not np.shares_memory(out, a) and not np.shares_memory(out, b)

"""``vmap`` of derivatives of every case of the table: ``jvp``, ``reverse.grad``
and forward-over-reverse ``H v`` of each case, batched, equal the same
derivative taken for each element of the batch and stacked.

This is where a batch rule and a derivative rule meet (a tie rule under vmap,
an index computed per element): a wrong batched derivative is a silent wrong
number, so every case goes through all three. The derivative is of the case's
floating outputs weighted by fixed numbers and summed (the real part of a
complex one), in fixed directions; the batching is drawn as in
tests/dualad/batching/test_vmap_cases.py, with its check (_support/vmap_check.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from _support.backends import NUMPY, dtype_name, to_numpy
from _support.cases import CASES
from _support.harness import Prepared, params
from _support.vmap_check import REFUSED, check_vmap
from hypothesis import given, settings
from hypothesis import strategies as st

import dualad
import reverse
from dualad import ops
from dualad._base.tree import flatten
from dualad.interpreter import shape_of

ONE = settings(max_examples=1)


def _scalar(f):
    """``sum(w * leaf)`` over ``f``'s floating (real parts of complex) output leaves."""
    def s(*xs):
        total = 0.0
        for leaf in flatten(f(*xs))[0]:
            kind = dtype_name(leaf)
            if not kind.startswith(("float", "complex")):
                continue
            if kind.startswith("complex"):
                leaf = ops.real(leaf)
            shape = shape_of(leaf)
            w = np.cos(1.0 + np.arange(int(np.prod(shape)))).reshape(shape)
            total = total + ops.sum(leaf * w)
        return total
    return s


def _derivative(kind, f, xs):
    """``f``'s derivative of ``kind`` as a function of the same arguments."""
    ones = tuple(np.ones_like(to_numpy(x)) for x in xs)
    everything = tuple(range(len(xs)))
    if kind == "jvp":
        return lambda *a: dualad.jvp(f, a, ones)[1]
    grad = reverse.grad(_scalar(f), argnums=everything)
    if kind == "grad":
        return grad
    return lambda *a: dualad.jvp(grad, a, ones)[1]  # forward over reverse: H v


class _Derived:
    def __init__(self, prep, kind):
        self.case, self.xs, self.f = prep.case, prep.xs, _derivative(kind, prep.f, prep.xs)


@pytest.mark.parametrize("kind", ["jvp", "grad", "hvp"])
@pytest.mark.parametrize("case, backend, dtype", params("vmap_derivatives", CASES, [NUMPY.param],
                                                        ["float64"]))
@ONE
@given(data=st.data())
def test_vmap_of_each_derivative_of_every_case(case, backend, dtype, data, kind):
    prep = Prepared(case, data.draw(case.args, label="args"), backend, dtype)
    if not prep.xs or case.name in REFUSED:
        pytest.skip(f"{case.name}: nothing to batch, or vmap refuses it")
    derived = _Derived(prep, kind)
    try:
        derived.f(*prep.xs)
    except (NotImplementedError, TypeError, ValueError) as err:  # no derivative of this kind
        pytest.skip(f"{case.name}: no {kind} here: {type(err).__name__}: {err}")
    check_vmap(derived, backend, dtype, data)

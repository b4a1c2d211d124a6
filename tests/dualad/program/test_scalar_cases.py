"""The unrolled executor (dualad._program.executors.scalar) on every case of the table: where
it takes a case's program, or its gradient's, it gives the ordinary replay's numbers, bit for
bit where every step is a ufunc or a move of elements, within a few ulps where it calls NumPy
on rebuilt arrays (a reduction may then add in another order)."""

from __future__ import annotations

import warnings
from unittest import mock

import numpy as np
import pytest
from _support.backends import NUMPY
from _support.cases import CASES
from _support.harness import Prepared, params
from hypothesis import given, settings
from hypothesis import strategies as st

import dualad
import reverse
from dualad import ops
from dualad._base.tree import flatten
from dualad._program.executors import scalar
from dualad._program.executors.generated import generate
from dualad._program.executors.scalar import scalar_executor

SOME = settings(max_examples=max(2, settings.default.max_examples // 10))
SMALL = 16  # every argument of at most this many elements: the executor may take the program


def _same_bits(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind != "f":
        return np.array_equal(a, b)
    return bool(np.all((a.view(np.uint64) == b.view(np.uint64)) | (np.isnan(a) & np.isnan(b))))


def check_executors_agree(f, args, again, name):
    compiled = dualad.compile(f, executor="numpy")  # the executor whose replay this checks
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        compiled(*args)
    try:
        program = compiled.program(*args)
    except ValueError:  # no program: the case reads numbers on the host
        assert compiled.stats["eager"] or compiled.stats["traces"], name
        return 0
    with mock.patch.object(scalar, "STEP_US", 1e9):  # unrolled wherever it can be, whatever it costs
        fast = scalar_executor(program, generate(program))
    if fast is None:
        return 0
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        got, want = fast(*again), generate(program)(*again)
    if type(want) is not list:  # a guard gave another outcome: both stop at it
        assert (got.index, got.outcome) == (want.index, want.outcome)
        return 1
    assert len(got) == len(want)
    for j, (a, b) in enumerate(zip(got, want)):
        assert type(a) is type(b), f"{name}: output {j} is a {type(a).__name__}, not {type(b).__name__}"
        if fast.numpy_calls == 0:
            assert _same_bits(a, b), f"{name}: output {j} differs: {a!r} against {b!r}"
        else:
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-300, err_msg=f"{name}: output {j}")
    return 1


def _real_sum(f):
    def loss(*xs):
        return sum(ops.sum(ops.real(leaf)) for leaf in flatten(f(*xs))[0])
    return loss


@pytest.mark.parametrize("case, backend, dtype", params("unrolled", CASES, [NUMPY.param], ["float64"]))
@SOME
@given(data=st.data())
def test_unrolled_replay_equals_the_ordinary_one(case, backend, dtype, data):
    prep = Prepared(case, data.draw(case.args, label="args"), backend, dtype)
    if not prep.xs or any(np.size(x) > SMALL for x in prep.xs):
        return
    again = [np.flip(np.asarray(x)).copy() if np.ndim(x) else x for x in prep.xs]
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            prep.f(*again)
    except Exception:  # outside the case's domain
        again = list(prep.xs)
    check_executors_agree(prep.f, prep.xs, again, case.name)
    if case.kind == "diff":
        grad = reverse.grad(_real_sum(prep.f), argnums=tuple(range(len(prep.xs))))
        check_executors_agree(grad, prep.xs, again, f"the gradient of {case.name}")

"""``vmap`` of a prepared case against the loop over its batch (shared by the vmap
sweeps of tests/dualad/batching and tests/mixed)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import dualad
from _support.backends import dtype_name, to_numpy
from _support.harness import EXACT_RTOL
from dualad._base.core import Value
from dualad._base.tree import flatten

# case -> the operation vmap names when it refuses it
REFUSED = {"extract": "extract", "trim_zeros": "trim_zeros", "roots": "roots", "place": "place"}


def _elements(prep, backend, dtype):
    """The batch's elements: the drawn arguments and, if ``f`` takes them, the same reversed."""
    flipped = [backend.asarray(np.flip(to_numpy(x)).copy(), dtype) if hasattr(x, "shape") else x
               for x in prep.xs]
    try:
        prep.f(*flipped)
    except Exception:  # outside the case's domain (a factorization of a non-definite matrix, ...)
        return [prep.xs, prep.xs]
    return [prep.xs, flipped]


def _stack(backend, dtype, parts, axis):
    return backend.asarray(np.stack([to_numpy(p) for p in parts], axis=axis), dtype)


def check_vmap(prep, backend, dtype, data, unbatched=True):
    """``unbatched=False`` batches every argument: array_api_strict's operators raise on
    an operand of another type (``strict_array * value``) instead of deferring to it."""
    elements = _elements(prep, backend, dtype)
    in_axes, args = [], []
    n = len(prep.xs)
    batched = (data.draw(st.lists(st.booleans(), min_size=n, max_size=n).filter(any), label="batched")
               if unbatched else [True] * n)
    for i, (x, b) in enumerate(zip(prep.xs, batched)):
        if not b:
            in_axes.append(None)
            args.append(x)
            continue
        ndim = np.ndim(to_numpy(x))
        axis = data.draw(st.integers(0, ndim), label=f"axis of argument {i}")
        args.append(_stack(backend, dtype, [e[i] for e in elements], axis))
        in_axes.append(axis if data.draw(st.booleans(), label="positive") else axis - ndim - 1)
    refused = REFUSED.get(prep.case.name)
    try:
        got = flatten(dualad.vmap(prep.f, in_axes=tuple(in_axes))(*args))[0]
    except TypeError as err:
        if refused is None or not str(err).startswith(f"vmap: {refused}"):
            raise
        return
    assert refused is None or not all(batched), f"vmap of {prep.case.name} should have been refused"
    singles = [flatten(prep.f(*[e[i] if b else x for i, (x, b) in enumerate(zip(prep.xs, batched))]))[0]
               for e in elements]
    assert len(got) == len(singles[0])
    for j, leaf in enumerate(got):
        assert not isinstance(leaf, Value), f"output {j} is still a {type(leaf).__name__}"
        want = np.stack([to_numpy(s[j]) for s in singles], axis=0)
        shape = to_numpy(leaf).shape
        assert shape == want.shape, f"output {j}: shape {shape}, the loop's {want.shape}"
        if hasattr(singles[0][j], "dtype"):
            assert dtype_name(leaf) == dtype_name(singles[0][j]), f"output {j}: dtype {dtype_name(leaf)}"
        tol = EXACT_RTOL.get(dtype_name(leaf), 0.0)
        np.testing.assert_allclose(to_numpy(leaf), want, rtol=tol,
                                   atol=tol * max(1.0, float(np.max(np.abs(want), initial=0.0))),
                                   err_msg=f"vmap of {prep.case.name}, in_axes={in_axes}: output {j} "
                                           "differs from the loop over the batch")



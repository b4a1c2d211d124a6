"""Functions of values whose results carry no derivative (indices, booleans,
counts): computed on the raw values in their own backend and returned as
plain arrays, in every mode, instead of raising.

Under :func:`dualad.vmap` each is computed for each element of the batch
(a batched result), except those whose result's shape depends on the
values (``nonzero``, ``unique``, ...), which vmap refuses, and those that
read only dtypes, which need no element.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dualad._base.backend import namespace_of
from dualad._base.shapes import raw
from dualad._table.host import on_values

_NAMES = ["argmax", "argmin", "argsort", "argwhere", "searchsorted", "digitize", "isclose",
          "allclose", "array_equal", "array_equiv", "signbit", "nonzero", "flatnonzero",
          "count_nonzero", "unique", "isreal", "iscomplex", "isposinf", "isneginf", "isin",
          "lexsort", "bincount", "iscomplexobj",
          "isrealobj", "result_type", "can_cast", "min_scalar_type", "shares_memory",
          "may_share_memory", "ravel_multi_index", "unravel_index", "all", "any", "argpartition",
          "zeros_like", "ones_like", "empty_like", "full_like", "nanargmax", "nanargmin",
          "histogram", "histogram_bin_edges", "histogram2d", "histogramdd", "intersect1d",
          "union1d", "setdiff1d", "setxor1d", "unique_all", "unique_counts", "unique_inverse",
          "unique_values", "tril_indices_from", "triu_indices_from", "diag_indices_from", "spacing",
          "nextafter", "isdtype", "logical_xor"]
# Weighted counts and fill values with a derivative carry it: counting.py and creation.py
# export those three, calling these for plain arguments.
__all__ = [n for n in _NAMES if n not in ("bincount", "histogram", "full_like")]

# Results whose shape depends on the values: no one shape holds for a batch.
_VALUE_SHAPED = {"argwhere", "nonzero", "flatnonzero", "unique", "bincount", "intersect1d",
                 "union1d", "setdiff1d", "setxor1d", "unique_all", "unique_counts",
                 "unique_inverse", "unique_values"}
# Arrays made from shapes and dtypes only: under compile, constants, not read from values.
_OF_SHAPES = {"zeros_like", "ones_like", "empty_like", "full_like"}
# Questions about dtypes and memory, not values: answered for the batch as a whole.
_OF_DTYPES = {"iscomplexobj", "isrealobj", "result_type", "can_cast", "min_scalar_type",
              "shares_memory", "may_share_memory", "isdtype"}


def _strip_all(x: Any) -> Any:
    if isinstance(x, (list, tuple)):
        return type(x)(_strip_all(e) for e in x)
    return raw(x)


def _on_values(name: str):
    def fn(*args, **kwargs):
        if name in _OF_DTYPES:
            return plain(*args, **kwargs)
        keys = list(kwargs)
        what = f"{name}" if name in _VALUE_SHAPED else None
        return on_values(lambda *a: plain(*a[:len(args)], **dict(zip(keys, a[len(args):]))),
                         *args, *kwargs.values(), what=what, reads_numbers=name not in _OF_SHAPES)

    def plain(*args, **kwargs):
        args, kwargs = _strip_all(args), {k: _strip_all(v) for k, v in kwargs.items()}
        arrays = [a for a in args if hasattr(a, "shape")]
        xp = namespace_of(arrays) if arrays else None
        impl = getattr(xp, name, None) if xp is not None else None
        # The array API lacks some of these (digitize, isclose, ...): NumPy's own,
        # which CuPy also provides, on NumPy arrays.
        return (impl or getattr(np, name))(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"``numpy.{name}`` on the values: its result carries no derivative, so it is "
                  "returned as a plain array.")
    return fn


for _name in _NAMES:
    globals()[_name] = _on_values(_name)

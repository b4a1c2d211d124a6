"""Binary ufuncs whose broadcasting leaves NumPy a short inner loop, computed by two long ones.

NumPy runs an elementwise function of broadcast operands as one inner loop per run of
trailing axes along which each operand is either read or broadcast throughout: the
differences of points and centres, ``x[:, None, :] - means[None, :, :]`` (GMM's,
``(1000, 1, 2)`` against ``(1, 5, 2)``), run 5,000 inner loops of 2 numbers, 47 us
for 10,000 differences. Where one operand is broadcast along one axis, repeating it
along that axis (``np.repeat``: a copy of rows, 5 us there) and applying the function
in place with the other operand, broadcast along its leading axes only, takes loops of
10 numbers: 11 us. Each number is computed by the same function of the same two
numbers, so the results are NumPy's, bit for bit (warnings and ``np.errstate`` too).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

__all__ = ["paired", "plan", "planned"]

# the fewest numbers of a result worth planning; NumPy's longest inner loop worth replacing,
# and on results of at least _MANY numbers (where NumPy's inner loops cost more than the
# plan's fixed 1.5 us or so: a bias added to (256, 10) is 2.8 us either way); and how much
# longer the plan's inner loop must be than NumPy's
_LARGE, _SHORT, _MANY, _SHORTER, _LONGER = 2048, 4, 1 << 16, 16, 4


@lru_cache(maxsize=512)
def plan(shape_x: tuple, shape_y: tuple) -> tuple | None:
    """``(which operand is repeated (0 or 1), the axis, how often, both operands' shapes
    with ones prepended)`` where a binary ufunc of float arrays of these shapes is
    computed faster by :func:`paired`; else None (shapes that do not broadcast
    included: NumPy raises its own error)."""
    n = max(len(shape_x), len(shape_y))
    padded = [(1,) * (n - len(shape_x)) + shape_x, (1,) * (n - len(shape_y)) + shape_y]
    if any(a != b and 1 not in (a, b) for a, b in zip(*padded)):
        return None
    out = tuple(max(a, b) for a, b in zip(*padded))
    if 0 in out or math.prod(out) < _LARGE:
        return None
    axes = [k for k in range(n) if out[k] > 1]
    broadcast = [[padded[i][k] == 1 for k in axes] for i in (0, 1)]
    inner = 1  # NumPy's inner loop: the last run of axes alike for each operand
    for at in range(len(axes) - 1, -1, -1):
        if (broadcast[0][at], broadcast[1][at]) != (broadcast[0][-1], broadcast[1][-1]):
            break
        inner *= out[axes[at]]
    if inner > (_SHORTER if math.prod(out) >= _MANY else _SHORT):
        return None
    best = None
    for repeated in (0, 1):
        along = [at for at, b in enumerate(broadcast[repeated]) if b]
        if len(along) != 1:
            continue
        other = [at for at, b in enumerate(broadcast[1 - repeated]) if b]
        longer = math.prod(out[k] for k in axes[(other[-1] if other else -1) + 1:])
        if longer >= _LONGER * inner and (best is None or longer > best[0]):
            best = (longer, (repeated, axes[along[0]], out[axes[along[0]]], *padded))
    return None if best is None else best[1]


def planned(shape_x: tuple, dtype_x: Any, shape_y: tuple, dtype_y: Any) -> tuple | None:
    """:func:`plan` for operands of these shapes and dtypes: real floats of one dtype in the
    machine's byte order (NumPy's result has that order; complex NaNs may differ in their
    sign bits), else None."""
    if shape_x == shape_y or dtype_x != dtype_y or dtype_x.kind != "f" or not dtype_x.isnative:
        return None
    return plan(shape_x, shape_y)


def paired(ufunc: Any, x: Any, y: Any, out: Any = None) -> Any:
    """``ufunc(x, y)``; NumPy's numbers, by :func:`plan`'s repeat where the operands are NumPy
    arrays :func:`planned` finds a plan for. The result is C-contiguous there, where NumPy's
    follows Fortran-ordered operands."""
    if type(x) is np.ndarray is type(y):
        found = planned(x.shape, x.dtype, y.shape, y.dtype)
        if found is not None:
            repeated, axis, count, shape_x, shape_y = found
            if repeated == 0:
                full = np.repeat(x.reshape(shape_x), count, axis=axis)
                return ufunc(full, y, out=full if out is None else out)
            full = np.repeat(y.reshape(shape_y), count, axis=axis)
            return ufunc(x, full, out=full if out is None else out)
    return ufunc(x, y) if out is None else ufunc(x, y, out=out)

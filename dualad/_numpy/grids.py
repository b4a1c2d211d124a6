"""Grids of numbers: ``meshgrid`` and evenly spaced values.
"""

from __future__ import annotations

import math

import numpy as np

from dualad._base.shapes import (
    ndim_of,
    raw,
    shape_of,
)
from dualad._numpy.common import _numbers
from dualad._primitives import elementwise as _ew
from dualad._primitives import shape as _shape

__all__ = ["meshgrid", "linspace", "logspace", "geomspace"]


# -- grids ------------------------------------------------------------------------------------------
def meshgrid(*xi, indexing="xy", sparse=False, copy=True):
    """``numpy.meshgrid`` of 1-d arrays (values with derivatives allowed)."""
    n = len(xi)
    shapes = [shape_of(x)[0] if ndim_of(x) else 1 for x in xi]
    out = []
    for i, x in enumerate(xi):
        s = [1] * n
        s[i] = shapes[i]
        if indexing == "xy" and n >= 2 and i < 2:
            s[0], s[1] = s[1], s[0]
        x = _shape.reshape(x, tuple(s))
        if not sparse:
            full = list(shapes)
            if indexing == "xy" and n >= 2:
                full[0], full[1] = full[1], full[0]
            x = _shape.broadcast_to(x, tuple(full))
        out.append(x)
    return out


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """``numpy.linspace`` whose endpoints may carry derivatives (scalars)."""
    div = (num - 1) if endpoint else num
    frac = np.arange(num, dtype=np.float64) / div if div > 0 else np.zeros(num)
    like = start if hasattr(raw(start), "dtype") else stop
    r = raw(like)
    frac = _numbers(like, frac) if hasattr(r, "dtype") else frac
    step = (stop - start) / div if div > 0 else math.nan
    out = start + (stop - start) * frac
    return (out, step) if retstep else out


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """``numpy.logspace`` whose exponents may carry derivatives."""
    return _ew.power(base, linspace(start, stop, num, endpoint))


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """``numpy.geomspace`` of positive ends, which may carry derivatives."""
    return _ew.exp(linspace(_ew.log(start), _ew.log(stop), num, endpoint))

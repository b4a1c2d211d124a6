"""``numpy.pad`` with all its modes.
"""

from __future__ import annotations

import numpy as np

from dualad._base.core import Value
from dualad._base.shapes import (
    ndim_of,
    shape_of,
)
from dualad._numpy import statistics as _statistics
from dualad._numpy.common import _fill_like, _index, _numbers, _slice
from dualad._primitives import elementwise as _ew
from dualad._primitives import reductions as _red
from dualad._primitives import shape as _shape

__all__ = ["pad"]


# -- padding -----------------------------------------------------------------------------------
_GATHERED = ("edge", "reflect", "symmetric", "wrap")
_STATISTICS = {"maximum": _red.max, "minimum": _red.min, "mean": _red.mean,
               "median": lambda v, axis, keepdims: _statistics.median(v, axis, keepdims)}
_FILLED = ("constant", "empty", "linear_ramp", *_STATISTICS)


def _per_axis(value, n, name):
    """NumPy's ``((before, after),) * n`` broadcasting of a pad argument."""
    try:
        return np.broadcast_to(np.asarray(value, dtype=object), (n, 2)).tolist()
    except ValueError:
        raise ValueError(f"pad: {name} must be a number, a pair or one pair per axis "
                         f"({n} axes), got {value!r}") from None


def pad(array, pad_width, mode="constant", **kwargs):
    """``numpy.pad`` in every mode NumPy has: ``constant`` (the values may carry
    derivatives), ``edge``, ``reflect``, ``symmetric``, ``wrap`` (gathers),
    ``linear_ramp``, ``maximum``, ``minimum``, ``mean``, ``median`` (with
    ``stat_length``) and ``empty`` (zeros here). Axes are padded one after
    another, as NumPy does, so corners match NumPy's.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp, ops
    >>> jvp(lambda x: ops.pad(x, 2, mode="reflect"), (np.array([1.0, 2.0, 3.0]),), (np.eye(3)[0],))
    (array([3., 2., 1., 2., 3., 2., 1.]), array([0., 0., 1., 0., 0., 0., 1.]))
    """
    if callable(mode):
        raise NotImplementedError("pad: a callable mode is not supported; pad with a named mode")
    if mode not in _GATHERED + _FILLED:
        raise ValueError(f"pad: mode must be one of {_GATHERED + _FILLED}, got {mode!r}")
    if mode in ("reflect", "symmetric") and kwargs.get("reflect_type", "even") != "even":
        raise NotImplementedError("pad: reflect_type='odd' is not supported yet")
    n = ndim_of(array)
    widths = [(int(a), int(b)) for a, b in _per_axis(pad_width, n, "pad_width")]
    if any(a < 0 or b < 0 for a, b in widths):
        raise ValueError(f"pad: pad_width must be non-negative, got {pad_width!r}")
    values = _per_axis(kwargs.get("constant_values", 0.0) if mode == "constant" else 0.0, n,
                       "constant_values")
    if mode in ("constant", "empty"):
        flat = [v for pair in values for v in pair]
        if not any(isinstance(v, Value) for v in flat) and all(v == flat[0] for v in flat):
            return _shape.pad(array, widths, flat[0])  # one number: the linear entry alone
    out = array
    for axis, (before, after) in enumerate(widths):
        if before or after:
            out = _shape.concatenate(_pad_parts(out, axis, before, after, mode, kwargs, values[axis]),
                                     axis=axis)
    return out


def _pad_parts(x, axis, before, after, mode, kwargs, values):
    """The pieces ``[before, x, after]`` of ``x`` padded along ``axis``."""
    size = shape_of(x)[axis]
    if mode in _GATHERED:
        if size == 0:
            raise ValueError(f"pad: mode {mode!r} can't extend the empty axis {axis}")
        index = np.pad(np.arange(size), (before, after), mode=mode)  # where each entry comes from
        return [_shape.take(x, _index(x, index), axis)]
    lo, hi = _slice(x, axis, 0, 1), _slice(x, axis, size - 1, size)
    if mode == "linear_ramp":
        ends = _per_axis(kwargs.get("end_values", 0.0), ndim_of(x), "end_values")[axis]
        ramps = []
        for edge, end, count, first in ((lo, ends[0], before, True), (hi, ends[1], after, False)):
            steps = np.arange(count) if first else np.arange(count - 1, -1, -1)
            # the entry ``s`` steps from the outer end: end + (edge - end) * s / count
            w = _numbers(x, (steps / max(count, 1)).reshape((-1,) + (1,) * (ndim_of(x) - axis - 1)))
            ramps.append(_ew.add(_ew.multiply(edge, w), _ew.multiply(_fill_like(x, end), 1.0 - w)))
        return [ramps[0], x, ramps[1]]
    if mode in ("constant", "empty"):
        fills = [_fill_like(x, v) for v in values]
    else:
        lengths = _per_axis(kwargs.get("stat_length"), ndim_of(x), "stat_length")[axis]
        fills = []
        for first, length in zip((True, False), lengths):
            k = size if length is None else max(1, min(int(length), size))
            part = _slice(x, axis, 0, k) if first else _slice(x, axis, size - k, size)
            fills.append(_STATISTICS[mode](part, axis=axis, keepdims=True))
    return [_edge(fills[0], x, axis, before), x, _edge(fills[1], x, axis, after)]


def _edge(fill, x, axis, count):
    """``fill`` broadcast to ``count`` entries along ``axis`` of ``x``'s shape."""
    shape = list(shape_of(x))
    shape[axis] = count
    return _shape.broadcast_to(fill, tuple(shape))

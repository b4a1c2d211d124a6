"""Sliding windows and the N-d convolution of image models, as composites: windows
are a gather (``getitem`` with index grids), the convolution a ``matmul`` of them
with the kernel, so every mode differentiates both, on every backend, with no
rule of its own.

``conv`` follows ``torch.nn.functional.conv{1,2,3}d`` (and ``jax.lax.conv``):
``x`` is ``(N, C_in, *spatial)``, ``weight`` is ``(C_out, C_in / groups, *kernel)``,
the result ``(N, C_out, *out)``; like them it is a cross-correlation.
"""

from __future__ import annotations

import math

import numpy as np

from dualad._base.core import as_arrays
from dualad._base.shapes import (
    ndim_of,
    normalize_axis,
    shape_of,
)
from dualad._numpy.common import _index
from dualad._primitives import elementwise as _ew
from dualad._primitives import indexing as _indexing
from dualad._primitives import shape as _shape
from dualad._primitives.linalg.matmul import matmul

__all__ = ["sliding_window_view", "conv", "convolve", "correlate"]


def sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False):
    """``numpy.lib.stride_tricks.sliding_window_view``, as a gather (a copy, not a view).

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import ops
    >>> ops.sliding_window_view(np.arange(5.0), 3).tolist()
    [[0.0, 1.0, 2.0], [1.0, 2.0, 3.0], [2.0, 3.0, 4.0]]
    """
    window = (window_shape,) if isinstance(window_shape, int) else tuple(window_shape)
    nd = ndim_of(x)
    axes = tuple(range(nd)) if axis is None else (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(normalize_axis(a, nd) for a in axes)
    if len(axes) != len(window):
        raise ValueError(f"sliding_window_view: {len(window)} window sizes for {len(axes)} axes")
    out_shape = list(shape_of(x))
    for a, w in zip(axes, window):
        if not 0 <= w <= out_shape[a]:
            raise ValueError(f"sliding_window_view: window {w} does not fit axis {a} of size "
                             f"{out_shape[a]}")
        out_shape[a] -= w - 1
    dims = nd + len(window)

    def placed(values, dim):
        shape = [1] * dims
        shape[dim] = len(values)
        return values.reshape(shape)

    index = [placed(np.arange(n), d) for d, n in enumerate(out_shape)]
    for k, (a, w) in enumerate(zip(axes, window)):
        index[a] = index[a] + placed(np.arange(w), nd + k)
    shape = np.broadcast_shapes(*(i.shape for i in index))
    return _indexing.getitem(x, tuple(_indexing._index_like(x, np.broadcast_to(i, shape)) for i in index))


def _per_dim(value, d, name):
    values = (value,) * d if isinstance(value, int) else tuple(value)
    if len(values) != d or any(not isinstance(v, int) for v in values):
        raise ValueError(f"conv: {name} must be an int or {d} ints, got {value!r}")
    return values


def conv(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """N-d convolution (cross-correlation) as ``torch.nn.functional.conv2d`` computes it,
    for ``N = weight.ndim - 2`` spatial axes, with ``stride``, ``padding`` (ints,
    pairs per axis, ``"valid"`` or ``"same"``), ``dilation`` and ``groups``.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import ops
    >>> x = np.arange(16.0).reshape(1, 1, 4, 4)
    >>> ops.conv(x, np.ones((1, 1, 2, 2)), stride=2)[0, 0].tolist()
    [[10.0, 18.0], [42.0, 50.0]]
    """
    d = ndim_of(weight) - 2
    if d < 1 or ndim_of(x) != d + 2:
        raise ValueError(f"conv: weight must be (C_out, C_in / groups, *kernel) and x "
                         f"(N, C_in, *spatial) with as many spatial axes; got x {shape_of(x)}, "
                         f"weight {shape_of(weight)}")
    n, c_in = shape_of(x)[:2]
    c_out, c_group = shape_of(weight)[:2]
    kernel = shape_of(weight)[2:]
    if c_in % groups or c_out % groups or c_in // groups != c_group:
        raise ValueError(f"conv: with groups={groups}, x's {c_in} channels and weight's "
                         f"{c_out} x {c_group} do not divide into groups")
    stride, dilation = _per_dim(stride, d, "stride"), _per_dim(dilation, d, "dilation")
    span = [dl * (k - 1) + 1 for dl, k in zip(dilation, kernel)]
    if padding == "valid":
        padding = 0
    if padding == "same":
        if any(s != 1 for s in stride):
            raise ValueError("conv: padding='same' needs stride 1, as in PyTorch")
        widths = [((sp - 1) // 2, sp - 1 - (sp - 1) // 2) for sp in span]
    else:
        widths = [(p, p) if isinstance(p, int) else tuple(p) for p in
                  ((padding,) * d if isinstance(padding, int) else tuple(padding))]
    if len(widths) != d:
        raise ValueError(f"conv: padding must be an int, 'valid', 'same' or {d} values, got {padding!r}")
    if any(w != (0, 0) for w in widths):
        x = _shape.pad(x, [(0, 0), (0, 0)] + [tuple(w) for w in widths])
    spatial = tuple(range(2, 2 + d))
    windows = sliding_window_view(x, tuple(span), axis=spatial)  # (N, C, *out, *span)
    windows = _indexing.getitem(windows, (slice(None),) * 2 + tuple(slice(None, None, s) for s in stride)
                             + tuple(slice(None, None, dl) for dl in dilation))
    out_sizes = shape_of(windows)[2:2 + d]
    size, taps = math.prod(out_sizes), c_group * math.prod(kernel)
    # (N, G, C/G, *out, *kernel) -> (N, G, out, C/G * kernel): one matmul per group
    windows = _shape.reshape(windows, (n, groups, c_group, size, math.prod(kernel)))
    windows = _shape.reshape(_shape.moveaxis(windows, 2, 3), (n, groups, size, taps))
    weight = _shape.reshape(weight, (groups, c_out // groups, taps))
    out = matmul(windows, _shape.matrix_transpose(weight))  # (N, G, out, C_out / G)
    out = _shape.reshape(_shape.moveaxis(out, -1, 2), (n, c_out) + out_sizes)
    if bias is not None:
        out = out + _shape.reshape(bias, (c_out,) + (1,) * d)
    return out


def convolve(a, v, mode="full"):
    """``numpy.convolve`` of 1-d arrays, as a gather and a sum (O(n m))."""
    a, v = as_arrays((a, v))
    n, m = shape_of(a)[0], shape_of(v)[0]
    if n == 0 or m == 0:
        raise ValueError("convolve: a and v must not be empty")
    if n < m:
        a, v, n, m = v, a, m, n
    k = np.arange(n + m - 1)[:, None]
    j = np.arange(m)[None, :]
    src = k - j  # a's index for each (output, v index)
    valid = (src >= 0) & (src < n)
    a_pad = _shape.concatenate([a, _shape.reshape(0.0 * a[:1], (1,))]) if n else a
    gathered = _indexing.getitem(a_pad, (_index(a, np.where(valid, src, n)),))
    full = _shape.sum(gathered * v, axis=1)
    if mode == "full":
        return full
    if mode == "same":
        start = (m - 1) // 2
        return full[start:start + n]
    if mode == "valid":
        return full[m - 1:n]
    raise ValueError(f"convolve: mode must be 'full', 'same' or 'valid', got {mode!r}")


def correlate(a, v, mode="valid"):
    """``numpy.correlate`` of 1-d arrays: ``convolve(a, conj(v[::-1]))``."""
    return convolve(a, _ew.conj(_shape.flip(v, 0)), mode)

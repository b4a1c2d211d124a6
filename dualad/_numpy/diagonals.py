"""Diagonals and triangles of arrays, as NumPy spells them.
"""

from __future__ import annotations

import numpy as np

from dualad._base.shapes import (
    ndim_of,
    shape_of,
)
from dualad._numpy.common import _index
from dualad._primitives import elementwise as _ew
from dualad._primitives import indexing as _indexing
from dualad._primitives import shape as _shape

__all__ = ["diag", "diagflat", "tril", "triu", "fill_diagonal", "diagonal", "trace"]


# -- diagonals and triangles ---------------------------------------------------------
def diag(v, k=0):
    """``numpy.diag``: the k-th diagonal of a matrix, or a matrix with ``v`` on it.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp, ops
    >>> jvp(lambda v: ops.diag(v, 1), (np.array([1.0, 2.0]),), (np.ones(2),))[1].tolist()
    [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]
    """
    nd = ndim_of(v)
    if nd == 2:
        return diagonal(v, offset=k)
    if nd != 1:
        raise ValueError(f"diag: v must be 1-d or 2-d, got shape {shape_of(v)}")
    n = shape_of(v)[0] + (-k if k < 0 else k)
    i = np.arange(shape_of(v)[0])
    rows, cols = (i, i + k) if k >= 0 else (i - k, i)
    return _indexing.scatter(v, (n, n), (_index(v, rows), _index(v, cols)))


def diagflat(v, k=0):
    """``numpy.diagflat``: ``v`` flattened onto the k-th diagonal."""
    return diag(_shape.ravel(v), k)


def _triangle(m, k, lower):
    if ndim_of(m) < 2:
        raise ValueError(f"{'tril' if lower else 'triu'}: m must have ndim >= 2, got shape {shape_of(m)}")
    n, c = shape_of(m)[-2:]
    mask = np.tri(n, c, k, dtype=bool) if lower else ~np.tri(n, c, k - 1, dtype=bool)
    return _ew.where(_index(m, mask), m, 0.0)


def tril(m, k=0):
    """Lower triangle of the last two axes (entries above the k-th diagonal are 0)."""
    return _triangle(m, k, True)


def triu(m, k=0):
    """Upper triangle of the last two axes (entries below the k-th diagonal are 0)."""
    return _triangle(m, k, False)


def fill_diagonal(a, val, wrap=False):
    """``numpy.fill_diagonal``, in place on a value that takes item assignment."""
    if wrap:
        raise NotImplementedError("fill_diagonal: wrap=True is not supported")
    n = min(shape_of(a))
    a[tuple(np.arange(n) for _ in shape_of(a))] = val


def diagonal(x, offset=0, axis1=0, axis2=1):
    """``numpy.diagonal``, as a gather (its VJP scatters into the diagonal)."""
    x = _shape.moveaxis(x, (axis1, axis2), (-2, -1))
    n, m = shape_of(x)[-2:]
    i = np.arange(max(0, -offset), min(n, m - offset))
    return _indexing.getitem(x, (Ellipsis, _indexing._index_like(x, i), _indexing._index_like(x, i + offset)))


def trace(x, offset=0, axis1=0, axis2=1):
    return _shape.sum(diagonal(x, offset, axis1, axis2), axis=-1)

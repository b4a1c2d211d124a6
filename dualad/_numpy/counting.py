"""Counts weighted by values with derivatives: ``bincount`` and ``histogram``.

Which bin each entry falls in is read on the host from the (constant) positions;
the weighted counts are then a scatter-add of the weights, linear in them, so
every mode differentiates them (``np.bincount(idx, weights=w)``, JVP along ones
with ``idx = [0, 1, 1, 3]``: ``[1, 2, 0, 1]``), in the weights' library. Without
weights, or with NumPy weights, NumPy's own functions count
(``dualad._numpy.values``).
"""

from __future__ import annotations

import numpy as np

from dualad._base.shapes import concrete, dtype_of, raw, zeros
from dualad._numpy import values as _values
from dualad._numpy.common import _index
from dualad._primitives import elementwise as _ew
from dualad._primitives import indexing as _indexing
from dualad._primitives import shape as _shape

__all__ = ["bincount", "histogram"]


def _weighted_counts(positions, weights, n, dtype):
    """``n`` bins holding the sum of the ``weights`` whose position is each bin, in ``dtype``
    (``bincount`` counts in float64, ``histogram`` in the weights' dtype, as NumPy's do)."""
    w = _ew.astype(_shape.ravel(weights), dtype)
    return _indexing.index_add(zeros(w, (n,)), w, (_index(w, positions),))  # the weights' library


def bincount(x, weights=None, minlength=0):
    """``numpy.bincount``; weights with a derivative carry it into the counts.

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> idx = np.array([0, 1, 1, 3])
    >>> dualad.jvp(lambda w: np.bincount(idx, weights=w), (np.ones(4),), (np.ones(4),))[1]
    array([1., 2., 0., 1.])
    """
    if weights is None or type(weights) is np.ndarray:
        return _values.bincount(x, weights=weights, minlength=minlength)
    positions = np.ravel(concrete(x, "bincount's x"))
    n = max(int(minlength), int(positions.max()) + 1 if positions.size else 0)
    if positions.size and positions.min() < 0:
        raise ValueError("bincount: x must not hold negative numbers")
    return _weighted_counts(positions, weights, n, "float64")


def histogram(a, bins=10, range=None, density=None, weights=None):
    """``numpy.histogram``; weights with a derivative carry it into the counts (and the
    density), the bin edges being constants.

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> a = np.array([0.1, 0.4, 0.45, 0.9])
    >>> dualad.jvp(lambda w: np.histogram(a, bins=2, weights=w)[0], (np.ones(4),), (np.arange(4.0),))[1]
    array([3., 3.])
    """
    if weights is None or type(weights) is np.ndarray:
        return _values.histogram(a, bins=bins, range=range, density=density, weights=weights)
    values = np.ravel(concrete(a, "histogram's a"))
    edges = np.histogram_bin_edges(values, bins, range)
    n = len(edges) - 1
    # NumPy's bins are [e_i, e_i+1), the last one closed; entries outside the edges are dropped
    pos = np.searchsorted(edges, values, side="right") - 1
    pos[values == edges[-1]] = n - 1
    inside = (pos >= 0) & (pos < n)
    w = _shape.ravel(weights)
    if not inside.all():
        w = _indexing.getitem(w, (_index(w, np.nonzero(inside)[0]),))
    # NumPy counts in the weights' dtype, and gives the density in float64
    counts = _weighted_counts(pos[inside], w, n, "float64" if density else dtype_of(raw(w)))
    if density:
        widths = _index(counts, np.diff(edges))
        counts = counts / (_shape.sum(counts) * widths)
    return counts, edges

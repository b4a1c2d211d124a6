"""Functions defined piece by piece: ``select``, ``piecewise`` and the linear interpolation ``interp``.
"""

from __future__ import annotations

from dualad._base.backend import namespace_of
from dualad._base.core import Value, as_arrays
from dualad._base.shapes import (
    batched,
    concrete,
    primal,
    raw,
    shape_of,
)
from dualad._numpy.selecting import take_along_axis
from dualad._primitives import elementwise as _ew
from dualad._primitives import shape as _shape
from dualad._table.host import on_values

__all__ = ["select", "interp", "piecewise"]


# -- piecewise and polynomials ------------------------------------------------------------------
def select(condlist, choicelist, default=0.0):
    """``numpy.select``: the first true condition picks; no derivative flows to conditions."""
    if len(condlist) != len(choicelist):
        raise ValueError("select: condlist and choicelist must have the same length")
    out = default
    for c, x in zip(reversed(condlist), reversed(choicelist)):
        out = _ew.where(primal(c), x, out)
    return out


def interp(x, xp, fp, left=None, right=None, period=None):
    """``numpy.interp``: piecewise linear, differentiable in ``x`` and ``fp`` (``xp``
    sets the grid and is taken as constant). Outside the grid the end values hold."""
    if period is not None:
        raise NotImplementedError("interp: period= is not supported yet")
    x, xp, fp = as_arrays((x, xp, fp))  # lists of numbers, as NumPy takes them
    if batched(xp):
        concrete(xp, "interp's grid xp")  # one grid for the batch (refused if batched)
    grid = raw(xp)
    ns = namespace_of([grid])
    n = shape_of(grid)[0]

    def cell(rx):  # the grid interval of each entry of x
        query = rx if hasattr(rx, "shape") else ns.asarray(rx)
        # searched as 1-d: Dask's searchsorted fails on a 0-d query
        i = ns.searchsorted(grid, ns.reshape(query, (-1,)), side="right") - 1
        return ns.reshape(ns.clip(i, 0, n - 2), query.shape)
    i = on_values(cell, x)
    x0, x1 = _take_flat(grid, i), _take_flat(grid, i + 1)
    f0, f1 = _take_flat(fp, i), _take_flat(fp, i + 1)
    rx = primal(x)
    t = (x - x0) / (x1 - x0)
    out = f0 + (f1 - f0) * t
    lo = fp[0] if left is None else left
    hi = fp[-1] if right is None else right
    out = _ew.where(rx < grid[0], lo, out)
    return _ew.where(rx > grid[-1], hi, out)


def _take_flat(v, i):
    """``v[i]`` for a 1-d ``v`` and an index array ``i`` of any shape (batched under vmap)."""
    if not isinstance(i, Value):
        return _shape.take(v, i)
    flat = _shape.reshape(i, (-1,))
    return _shape.reshape(take_along_axis(_shape.broadcast_to(v, (shape_of(flat)[0], shape_of(v)[0])),
                                          _shape.reshape(flat, (-1, 1)), 1), shape_of(i))


def piecewise(x, condlist, funclist, *args, **kw):
    """``numpy.piecewise``: each function (or constant) where its condition holds, the
    extra one (if any) elsewhere. Each function sees the whole ``x``; ``where`` picks."""
    condlist = [condlist] if not isinstance(condlist, (list, tuple)) else list(condlist)
    if len(funclist) not in (len(condlist), len(condlist) + 1):
        raise ValueError(f"piecewise: {len(funclist)} functions for {len(condlist)} conditions")
    out = _ew.multiply(x, 0.0)
    if len(funclist) == len(condlist) + 1:
        rest = funclist[-1]
        out = rest(x, *args, **kw) if callable(rest) else _ew.add(out, rest)
    for cond, f in zip(condlist, funclist):
        value = f(x, *args, **kw) if callable(f) else f
        out = _ew.where(primal(cond), value, out)
    return out

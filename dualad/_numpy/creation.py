"""Filling arrays with values that carry a derivative: ``full_like`` with such a fill
value (with a plain one, NumPy's own function fills the array, in
``dualad._numpy.values``), and ``copyto`` into a value that takes item assignment."""

from __future__ import annotations

import numpy as np

from dualad._base.core import Value, as_arrays
from dualad._base.shapes import dtype_of, raw, shape_of, zeros
from dualad._numpy import rearranging as _rearranging
from dualad._numpy import values as _values
from dualad._primitives import elementwise as _ew
from dualad._primitives import shape as _shape

__all__ = ["copyto", "full_like", "putmask"]


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, **kwargs):
    """``numpy.full_like``; a fill value with a derivative carries it into every entry.

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> dualad.jvp(lambda x, y: np.full_like(x, y), (np.zeros(3), 2.0), (np.zeros(3), 1.0))
    (array([2., 2., 2.]), array([1., 1., 1.]))

    NumPy's ``full_like`` of a plain array writes the fill value with ``copyto``,
    which cannot carry it (see :func:`copyto`): ``dualad.numpy.full_like`` can.
    """
    if not isinstance(fill_value, Value) and type(a) is np.ndarray:  # NumPy's own, with its keywords
        given = {k: v for k, v in (("dtype", dtype), ("shape", shape)) if v is not None}
        given.update({k: v for k, v, default in (("order", order, "K"), ("subok", subok, True))
                      if v != default})
        return _values.full_like(a, fill_value, **given, **kwargs)
    shape = None if shape is None else ((shape,) if isinstance(shape, int) else tuple(shape))
    dtype = dtype_of(raw(a)) if dtype is None else dtype
    return _ew.astype(_ew.add(zeros(a, shape), fill_value), dtype)


def copyto(dst, src, casting="same_kind", where=True):
    """``numpy.copyto``: ``dst[...] = src`` where ``where`` holds, into a value that takes
    item assignment (a ``dualad.numpy`` buffer, a ``Dual``).

    A plain NumPy array cannot hold a value with a derivative; NumPy's own
    ``full_like(a, x)`` writes ``x`` into one this way, so it cannot carry ``x``'s
    derivative: ``dualad.numpy.full_like`` (or ``ops.full_like``) does.

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> import dualad.numpy as dnp
    >>> def f(x):
    ...     out = dnp.zeros(3)
    ...     np.copyto(out, x, where=np.array([True, False, True]))
    ...     return out
    >>> dualad.jvp(f, (np.ones(3),), (np.ones(3),))[1]
    array([1., 0., 1.])
    """
    if isinstance(dst, Value):
        if where is True:
            dst[...] = _shape.broadcast_to(src, shape_of(dst))
        else:
            dst[...] = _ew.where(where, src, dst[...])
        return None
    if not isinstance(src, Value) and not isinstance(where, Value):
        return np.copyto(dst, src, casting=casting, where=where)
    raise TypeError(
        "numpy.copyto would write a value with a derivative into a NumPy array, which cannot "
        "hold it (numpy.full_like(a, x) does this with a plain a): make the array with "
        "dualad.numpy (import dualad.numpy as np: np.full_like, np.zeros, ... take such values), "
        "or use dualad.ops.full_like")


def putmask(a, mask, values):
    """``numpy.putmask``: ``a.flat[n] = values[n % len(values)]`` where ``mask.flat[n]``,
    into a value that takes item assignment (see :func:`copyto`).

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> import dualad.numpy as dnp
    >>> def f(v):
    ...     out = dnp.zeros(4)
    ...     np.putmask(out, np.array([True, False, True, True]), v)
    ...     return out
    >>> dualad.jvp(f, (np.array([1.0, 2.0]),), (np.array([1.0, 10.0]),))[1]
    array([ 1.,  0.,  1., 10.])
    """
    values = as_arrays((values, a))[0]  # a list of numbers, as NumPy takes one
    full = _rearranging.resize(_shape.ravel(values), shape_of(a))  # repeated by position, as NumPy does
    return copyto(a, full, where=mask)

"""``import dualad.numpy as np``: NumPy, plus what NumPy's protocols cannot reach.

Plain ``import numpy as np`` already differentiates most code: NumPy hands
its functions and ufuncs called on a ``Dual``, ``HyperDual`` or
``reverse.Tensor`` to dualad. Three habits need this module instead, because
they build NumPy arrays, which cannot hold a value with a derivative:

- ``np.array([x, y])`` and ``np.asarray(...)`` of values (they are stacked);
- buffers filled in place: ``out = np.zeros(n); out[i] = x`` (``zeros``,
  ``ones``, ``empty``, ``full`` and their ``_like`` forms return a
  :class:`Buffer`, which takes such assignments);
- ``np.r_[x, y]`` and ``np.c_[x, y]``.

Every other name is NumPy's own (``np.pi``, ``np.float32``, ``np.linalg``...).

Examples
--------
>>> import dualad
>>> import dualad.numpy as np
>>> def sir_step(params):
...     beta, gamma = np.asarray(params)
...     out = np.zeros(2)
...     out[0] = -beta * 0.9 * 0.1
...     out[1] = beta * 0.9 * 0.1 - gamma * 0.1
...     return out
>>> dualad.jacfwd(sir_step)(np.array([0.3, 0.1]))
array([[-0.09,  0.  ],
       [ 0.09, -0.1 ]])
"""

from __future__ import annotations

from typing import Any

import numpy as _np

from dualad import ops as _ops
from dualad._numpy.buffer import Buffer, holds_derivative
from dualad._table.host import on_values

__all__ = ["Buffer", "array", "asarray", "asanyarray", "ascontiguousarray", "zeros", "ones",
           "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like", "r_", "c_"]


def array(object: Any, dtype: Any = None, *args: Any, **kwargs: Any) -> Any:
    """``numpy.array``; nested lists holding values with derivatives are stacked
    into one value (``np.array([x, 2 * y])``)."""
    if isinstance(object, Buffer):
        object = object.content
    if holds_derivative(object):
        return _ops.copy(_ops.asarray(object, dtype))
    return _np.array(object, dtype, *args, **kwargs)


def asarray(a: Any, dtype: Any = None, *args: Any, **kwargs: Any) -> Any:
    """``numpy.asarray``; a value with a derivative, or lists of them, stay differentiable."""
    if isinstance(a, Buffer):
        a = a.content
    if holds_derivative(a):
        return _ops.asarray(a, dtype)
    return _np.asarray(a, dtype, *args, **kwargs)


asanyarray = ascontiguousarray = asarray


def _buffer(numpy_function):
    def create(*args: Any, **kwargs: Any) -> Buffer:
        return Buffer(numpy_function(*args, **kwargs))
    create.__name__ = create.__qualname__ = numpy_function.__name__
    create.__doc__ = (f"``numpy.{numpy_function.__name__}``, as a :class:`Buffer`: its entries "
                      "may be assigned values with derivatives.")
    return create


def _buffer_like(numpy_function):
    def create(prototype: Any, *args: Any, **kwargs: Any) -> Buffer:
        # the value's numbers (each element's under vmap: a batch of buffers)
        return Buffer(on_values(lambda r: numpy_function(r, *args, **kwargs), prototype))
    create.__name__ = create.__qualname__ = numpy_function.__name__
    create.__doc__ = (f"``numpy.{numpy_function.__name__}`` of any value, as a :class:`Buffer`.")
    return create


zeros, ones, empty, full = map(_buffer, (_np.zeros, _np.ones, _np.empty, _np.full))
zeros_like, ones_like, empty_like = map(_buffer_like, (_np.zeros_like, _np.ones_like, _np.empty_like))
_full_like_numbers = _buffer_like(_np.full_like)


def full_like(prototype: Any, fill_value: Any, *args: Any, **kwargs: Any) -> Buffer:
    """``numpy.full_like`` of any value, as a :class:`Buffer`; a fill value with a derivative
    carries it into every entry."""
    if holds_derivative([fill_value]):
        return Buffer(_ops.full_like(prototype, fill_value, *args, **kwargs))
    return _full_like_numbers(prototype, fill_value, *args, **kwargs)


class _Concatenator:
    """``np.r_`` / ``np.c_``: NumPy's when nothing carries a derivative; otherwise
    1-d pieces are joined (``r_``) or stacked as columns (``c_``)."""

    def __init__(self, numpy_version, columns: bool):
        self._numpy, self._columns = numpy_version, columns

    def __getitem__(self, key: Any) -> Any:
        items = key if isinstance(key, tuple) else (key,)
        if not holds_derivative(list(items)):
            return self._numpy[key]
        if any(isinstance(i, (slice, str)) for i in items):
            raise TypeError("np.r_/np.c_ with slices or strings and values with derivatives: "
                            "use ops.concatenate or ops.stack")
        pieces = [_ops.atleast_1d(_ops.asarray(i)) for i in items]
        if self._columns:
            return _ops.column_stack(pieces)
        return _ops.concatenate(pieces)


r_ = _Concatenator(_np.r_, columns=False)
c_ = _Concatenator(_np.c_, columns=True)


def __getattr__(name: str) -> Any:
    return getattr(_np, name)


def __dir__() -> list[str]:
    return sorted(set(dir(_np)) | set(__all__))

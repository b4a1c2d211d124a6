"""``Buffer``: an array that ``dualad.numpy``'s creation functions return, which
takes item assignment of values with derivatives.

A NumPy array cannot hold a ``Dual`` or ``Tensor``, so ``out = np.zeros(n);
out[i] = x`` fails once ``x`` carries a derivative. A Buffer starts as a raw
array and, at the first such assignment, becomes the value
``ops.index_set(out, x, i)``; every operation sees what it holds. Returned
from a transform, or passed to one, it is its content.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dualad import ops
from dualad._base.core import Value, level_of
from dualad._base.shapes import dtype_of, raw, shape_of
from dualad._numpy.arraylike import ArrayLike


class Buffer(ArrayLike, Value):
    """A mutable array whose entries may be assigned values with derivatives.

    Examples
    --------
    >>> import dualad
    >>> import dualad.numpy as np
    >>> def f(x):
    ...     out = np.zeros(3)
    ...     for i in range(3):
    ...         out[i] = x[i] ** 2
    ...     return out
    >>> dualad.jvp(f, (np.array([1.0, 2.0, 3.0]),), (np.ones(3),))[1]
    array([2., 4., 6.])
    """

    __slots__ = ("content",)
    container = True  # bind applies primitives to what it holds

    def __init__(self, content: Any):
        self.content = content

    @property
    def _level(self) -> int:  # a raw content has none: bind strips the buffer (see bind)
        return level_of(self.content)

    @property
    def shape(self):
        return shape_of(self.content)

    @property
    def dtype(self):
        return dtype_of(raw(self.content))

    def __repr__(self) -> str:
        return repr(self.content)

    def __setitem__(self, idx, value):
        value = value.content if type(value) is Buffer else value
        if holds_derivative(value) or isinstance(self.content, Value):
            self.content = ops.index_set(self.content, value, idx)
        else:
            self.content[idx] = value

    def _contents(self) -> Any:
        return self.content

    def _strip(self):
        return self.content._strip() if isinstance(self.content, Value) else self.content

    # -- a buffer of plain numbers converts as NumPy's arrays do ------------------------
    def _plain(self, what: str):
        if isinstance(self.content, Value):
            self._refuse(what)
        return self.content

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self._plain("np.asarray()"), dtype=dtype)

    def __float__(self): return float(self._plain("float()"))
    def __int__(self): return int(self._plain("int()"))
    def __index__(self): return self._plain("use as an index").__index__()
    def __bool__(self): return bool(self._plain("bool() (an if-statement on the value?)"))

    def _value_hint(self) -> str:
        return self.content._value_hint()


def holds_derivative(obj: Any) -> bool:
    """Whether ``obj`` (nested lists allowed) holds a value with a derivative."""
    if isinstance(obj, (list, tuple)):
        return any(map(holds_derivative, obj))
    if type(obj) is Buffer:
        return isinstance(obj.content, Value)
    return isinstance(obj, Value)


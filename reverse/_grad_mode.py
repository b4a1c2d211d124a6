"""``no_grad`` and ``enable_grad``: thread-local switches that cut derivatives.

They act on every level that exists when the block starts, in every mode:
tape edges and ``Dual`` tangents alike. Transforms started inside the block
(``reverse.grad``, ``dualad.jvp``) open new levels and still work, as
``torch.func`` transforms do inside ``torch.no_grad``.
"""

from __future__ import annotations

import functools
from contextlib import ContextDecorator

from dualad._core import get_cut, new_level, set_cut

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled"]


class set_grad_enabled(ContextDecorator):
    """Enable (``True``) or cut (``False``) derivatives inside a block or function.

    Examples
    --------
    >>> from reverse import Tensor, set_grad_enabled
    >>> x = Tensor(2.0, requires_grad=True)
    >>> with set_grad_enabled(False):
    ...     y = x * x
    >>> y.requires_grad
    False
    """

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._saved: list[int] = []

    def __enter__(self):
        self._saved.append(get_cut())
        set_cut(0 if self.mode else new_level())
        return self

    def __exit__(self, *exc):
        set_cut(self._saved.pop())
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with type(self)(self.mode):
                return fn(*args, **kwargs)
        return wrapper


class no_grad(set_grad_enabled):
    """Record nothing and propagate no tangent inside the block (or function).

    Examples
    --------
    >>> from reverse import Tensor, no_grad
    >>> x = Tensor(3.0, requires_grad=True)
    >>> with no_grad():
    ...     y = x * 2
    >>> y.requires_grad
    False
    """

    def __init__(self):
        super().__init__(False)

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with no_grad():
                return fn(*args, **kwargs)
        return wrapper


class enable_grad(set_grad_enabled):
    """Re-enable derivatives inside a ``no_grad`` block."""

    def __init__(self):
        super().__init__(True)

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with enable_grad():
                return fn(*args, **kwargs)
        return wrapper


def is_grad_enabled() -> bool:
    """Whether derivatives of existing values are being recorded."""
    return get_cut() == 0

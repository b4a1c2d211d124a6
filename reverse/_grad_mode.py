"""``no_grad``, ``enable_grad``, ``set_grad_enabled`` and ``inference_mode``:
thread-local switches that cut derivatives.

They act on every level that exists when the block starts, in every mode:
tape edges and ``Dual`` tangents alike. Transforms started inside the block
(``reverse.grad``, ``dualad.jvp``) open new levels and still work, as
``torch.func`` transforms do inside ``torch.no_grad``.

As in PyTorch, ``set_grad_enabled(mode)`` takes effect when it is called, so
it also works as a plain call; as a context it puts back, on exit, the mode
it found when it was made. Each is also a decorator; ``no_grad``,
``enable_grad`` and ``inference_mode`` also without parentheses.
"""

from __future__ import annotations

import threading
from contextlib import ContextDecorator
from typing import Any, Callable

from dualad.interpreter import get_cut, new_level, set_cut

__all__ = ["enable_grad", "inference_mode", "is_grad_enabled", "is_inference_mode_enabled", "no_grad",
           "set_grad_enabled"]


class _Inference(threading.local):
    on = False


_INFERENCE = _Inference()


def _current() -> tuple[int, bool]:
    return get_cut(), _INFERENCE.on


def _restore(state: tuple[int, bool]) -> None:
    set_cut(state[0])
    _INFERENCE.on = state[1]


def _set_mode(enabled: bool) -> None:
    # Inside inference_mode nothing is recorded, even where grad is enabled (as PyTorch).
    set_cut(0 if enabled and not _INFERENCE.on else new_level())


def _check_bool(value: Any, who: str) -> bool:
    if type(value) is not bool:
        raise TypeError(f"{who}: mode must be a bool, got {type(value).__name__}")
    return value


class _GradMode(ContextDecorator):
    """A block, or a decorated function, run with derivatives enabled or cut."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._saved: list[tuple[int, bool]] = []

    def __enter__(self) -> _GradMode:
        self._saved.append(_current())
        _set_mode(self.enabled)
        return self

    def __exit__(self, *exc: Any) -> bool:
        _restore(self._saved.pop())
        return False

    def _recreate_cm(self) -> _GradMode:  # one per call of a decorated function (threads, recursion)
        return type(self)()


class _Switch(_GradMode):
    """``no_grad`` and ``enable_grad``: no argument, or, as ``@no_grad`` without
    parentheses (as in PyTorch), the function to decorate."""

    _enabled: bool

    def __new__(cls, fn: Callable | None = None) -> Any:
        if fn is None:
            return object.__new__(cls)
        if not callable(fn):
            raise TypeError(f"{cls.__name__}() takes no argument (or, as a decorator, the function), "
                            f"got {type(fn).__name__}")
        return cls()(fn)

    def __init__(self, fn: Callable | None = None):
        super().__init__(self._enabled)


class no_grad(_Switch):
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

    _enabled = False


class enable_grad(_Switch):
    """Re-enable derivatives inside a ``no_grad`` block (or function).

    Examples
    --------
    >>> from reverse import Tensor, enable_grad, no_grad
    >>> x = Tensor(3.0, requires_grad=True)
    >>> with no_grad():
    ...     with enable_grad():
    ...         y = x * 2
    >>> y.requires_grad
    True
    """

    _enabled = True


class set_grad_enabled(_GradMode):
    """Enable (``True``) or cut (``False``) derivatives, from this call on.

    As ``torch.set_grad_enabled``: the mode changes when it is called, so a
    plain call switches it for the rest of the thread's work; used in a
    ``with`` statement, the mode found when it was called comes back on
    exit; as a decorator, the mode holds while the function runs.

    Parameters
    ----------
    mode : bool
        Whether derivatives are recorded.

    Examples
    --------
    >>> from reverse import Tensor, is_grad_enabled, set_grad_enabled
    >>> x = Tensor(2.0, requires_grad=True)
    >>> with set_grad_enabled(False):
    ...     (x * x).requires_grad
    False
    >>> _ = set_grad_enabled(False)
    >>> is_grad_enabled(), (x * x).requires_grad
    (False, False)
    >>> _ = set_grad_enabled(True)
    >>> (x * x).requires_grad
    True
    """

    def __init__(self, mode: bool):
        super().__init__(_check_bool(mode, "set_grad_enabled"))
        self._prev = _current()
        _set_mode(self.enabled)

    def __enter__(self) -> set_grad_enabled:
        _set_mode(self.enabled)
        return self

    def __exit__(self, *exc: Any) -> bool:
        _restore(self._prev)
        return False

    def __call__(self, fn: Callable) -> Callable:
        _restore(self._prev)  # decorating changes no mode: the function's calls do
        return super().__call__(fn)

    def _recreate_cm(self) -> set_grad_enabled:
        return set_grad_enabled(self.enabled)


class inference_mode(_GradMode):
    """Record nothing inside the block (or function), as ``torch.inference_mode``.

    ``inference_mode()`` (or ``inference_mode(True)``) cuts derivatives as
    :class:`no_grad` does, and ``enable_grad`` or ``set_grad_enabled(True)``
    inside it record nothing either, as in PyTorch. ``inference_mode(False)``
    lifts it and enables derivatives. It is also a decorator, with or
    without parentheses. Unlike PyTorch's, the tensors made inside are
    ordinary tensors, so using them later in recorded computations is
    allowed, and ``is_grad_enabled()`` inside says whether anything is
    recorded (False, also under ``enable_grad``).

    Parameters
    ----------
    mode : bool
        ``True`` (the default) to enter inference mode, ``False`` to leave it.

    Examples
    --------
    >>> import numpy as np
    >>> from reverse import Tensor, inference_mode, is_inference_mode_enabled
    >>> w = Tensor(np.ones(2), requires_grad=True)
    >>> @inference_mode
    ... def predict(x):
    ...     return (w * x).sum()
    >>> predict(np.array([1.0, 2.0])).requires_grad
    False
    >>> with inference_mode():
    ...     is_inference_mode_enabled()
    True
    """

    def __new__(cls, mode: Any = True) -> Any:
        if callable(mode) and not isinstance(mode, bool):
            return cls()(mode)
        return object.__new__(cls)

    def __init__(self, mode: bool = True):
        super().__init__(not _check_bool(mode, "inference_mode"))

    def __enter__(self) -> inference_mode:
        self._saved.append(_current())
        _INFERENCE.on = not self.enabled
        set_cut(0 if self.enabled else new_level())
        return self

    def _recreate_cm(self) -> inference_mode:
        return inference_mode(not self.enabled)


def is_grad_enabled() -> bool:
    """Whether derivatives of existing values are being recorded.

    Examples
    --------
    >>> from reverse import is_grad_enabled, no_grad
    >>> is_grad_enabled()
    True
    >>> with no_grad():
    ...     is_grad_enabled()
    False
    """
    return get_cut() == 0


def is_inference_mode_enabled() -> bool:
    """Whether this thread runs inside :class:`inference_mode`.

    Examples
    --------
    >>> from reverse import inference_mode, is_inference_mode_enabled
    >>> with inference_mode():
    ...     with inference_mode(False):
    ...         is_inference_mode_enabled()
    False
    """
    return _INFERENCE.on

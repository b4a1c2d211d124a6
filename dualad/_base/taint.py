"""Numbers read from a traced value outside the primitives, made visible.

While :func:`dualad.compile` traces, a ``Tracer`` hands code that strips it
(``raw(x)``, which rules call for dtypes, shapes, masks and host decisions)
a zero-copy view of its value of type :class:`TracedArray`. The view works
as the array it is, but what is computed from it stays a ``TracedArray``
(ufuncs keep the subclass; functions called through the namespace that
``namespace_of`` gives for it re-wrap their results), and reading its
numbers on the host (``to_host``, ``float``, ``bool``, ``item``) is
reported to the trace. The trace then knows when a number it would record
as a constant was in fact computed from an input, and refuses to keep a
program that would bake it in.

What is made from shapes and dtypes only (``zeros``, ``eye``,
``zeros_like``) stays a plain array: zeros built to match a traced value
are constants, not values computed from it.

Only NumPy arrays can be marked this way, so :func:`dualad.compile` traces
other libraries' arrays on NumPy copies (:mod:`dualad._staging.retarget`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["TracedArray", "TaintingNamespace"]

# Functions whose result depends on their arguments' shapes and dtypes only.
_SHAPE_ONLY = frozenset({"zeros_like", "ones_like", "empty_like", "full_like", "finfo", "iinfo",
                         "isdtype", "result_type", "can_cast", "broadcast_shapes"})


class TracedArray(np.ndarray):
    """A NumPy array computed from a traced value, outside the primitives.

    ``_slot`` is the traced value's slot when this is exactly its value (a
    strip), None when it was computed from one; ``_trace`` is the trace.
    """

    _slot: Any = None
    _trace: Any = None

    def __array_finalize__(self, obj: Any) -> None:
        self._slot = None
        self._trace = getattr(obj, "_trace", None)

    def _plain(self) -> np.ndarray:
        return self.view(np.ndarray)

    def _read(self, kind: str, value: Any) -> Any:
        trace = self._trace
        if trace is not None:
            trace.host_read(self._slot, kind, value)
        return value

    def __bool__(self) -> bool:
        return self._read("bool", bool(self._plain()))

    def __float__(self) -> float:
        return self._read("float", float(self._plain()))

    def __int__(self) -> int:
        return self._read("int", int(self._plain()))

    def __index__(self) -> int:
        return self._read("index", self._plain().__index__())

    def __complex__(self) -> complex:
        return self._read("complex", complex(self._plain()))

    def item(self, *args: Any) -> Any:
        if args:
            return self._read("host", self._plain().item(*args))
        return self._read("item", self._plain().item())

    def tolist(self) -> Any:
        return self._read("tolist", self._plain().tolist())

    def on_host(self) -> np.ndarray:
        """The numbers, for ``to_host``: the trace hears of it."""
        return self._read("host", self._plain())


def taint(value: Any, trace: Any) -> Any:
    """``value`` (an array, a NumPy scalar, or a tuple or list of them) as ``TracedArray``s."""
    if isinstance(value, (tuple, list)):
        return type(value)(taint(v, trace) for v in value)
    if isinstance(value, (np.ndarray, np.generic)):
        out = np.asarray(value).view(TracedArray)
        out._trace = trace
        return out
    return value


def _untaint(value: Any) -> Any:
    if type(value) is TracedArray:
        return value.view(np.ndarray)
    if isinstance(value, (tuple, list)):
        return type(value)(_untaint(v) for v in value)
    return value


class TaintingNamespace:
    """The namespace ``namespace_of`` gives for operands that include a
    ``TracedArray``: ``inner``'s functions, with results re-wrapped so that
    what is computed from traced numbers stays marked (``np.where`` and
    others would return a plain array)."""

    def __init__(self, inner: Any, trace: Any):
        self._inner, self._trace = inner, trace

    def __getattr__(self, name: str) -> Any:
        fn = getattr(self._inner, name)
        if not callable(fn) or isinstance(fn, type):
            return fn
        trace = self._trace
        if name in _SHAPE_ONLY:
            def make(*args, **kwargs):
                return _untaint(fn(*_untaint(args), **kwargs))
            return make

        def call(*args, **kwargs):
            out = fn(*args, **kwargs)
            return taint(out, trace) if _tainted(args) or _tainted(kwargs.values()) else out
        return call


def _tainted(values: Any) -> bool:
    for v in values:
        if type(v) is TracedArray or (type(v) in (tuple, list) and _tainted(v)):
            return True
    return False


def tainting_namespace(args: Any, inner: Any) -> Any:
    """The tainting namespace over ``inner`` if one of ``args`` is a ``TracedArray``, else None."""
    for a in args:
        if type(a) is TracedArray:
            return TaintingNamespace(inner, a._trace)
    return None

"""Arithmetic that reuses temporaries nothing else references.

NumPy elides temporaries in ``a * b + c``; derivative code keeps its
temporaries in variables, which defeats that, so this module does it by
hand: an operand is overwritten only when it is a raw array of the result's
shape and dtype whose only reference is the caller's local variable (a
fresh partial such as ``2.0 * x``, never an input, an output, a saved value
or a view). At n = 1e6 this saves an allocation and its page faults per term.
The reference count is trusted on CPython before 3.14 only; elsewhere every
operation allocates, as plain operators do. A value type on the right goes through ``ops`` (a
raw array on the left may not know how to multiply it: array_api_strict).
"""

from __future__ import annotations

import sys
from typing import Any

from dualad import ops

_RELIABLE = sys.implementation.name == "cpython" and sys.version_info < (3, 14)
# References to an array held only by one local of our caller: that local,
# this function's parameter, and getrefcount's argument.
_ONLY_CALLER = 3


# Below this many elements an allocation is cheap and the checks are not.
_MIN_SIZE = 8192


def _owned(a: Any, b: Any) -> bool:
    """Whether ``a`` can take the result of ``a op b`` in place."""
    if not _RELIABLE or type(a).__name__ != "ndarray" or a.size < _MIN_SIZE or a.base is not None:
        return False  # large NumPy/CuPy arrays that own their memory (a view shares it)
    if sys.getrefcount(a) > _ONLY_CALLER + 1:  # +1: the caller of _owned
        return False
    if type(b) is float or type(b) is int:
        return True
    return (type(b) is type(a) and b.shape == a.shape and b.dtype == a.dtype)


def mul(a: Any, b: Any) -> Any:
    """``a * b``, written into ``a`` when ``a`` is an owned temporary."""
    if _owned(a, b):
        a *= b
        return a
    return ops.multiply(a, b) if hasattr(b, "_strip") else a * b


def add(a: Any, b: Any) -> Any:
    """``a + b``, written into ``a`` when ``a`` is an owned temporary."""
    if _owned(a, b):
        a += b
        return a
    return ops.add(a, b) if hasattr(b, "_strip") else a + b


def sub(a: Any, b: Any) -> Any:
    """``a - b``, written into ``a`` when ``a`` is an owned temporary."""
    if _owned(a, b):
        a -= b
        return a
    return ops.subtract(a, b) if hasattr(b, "_strip") else a - b


def add_at(a: Any, idx: tuple, b: Any) -> bool:
    """Add ``b`` into ``a[idx]`` (basic indices) in place, if ``a`` is an owned
    temporary of ``b``'s dtype; return whether it was done."""
    if type(b) is not type(a) or b.dtype != a.dtype or not _owned(a, 0.0):
        return False
    a[idx] += b
    return True

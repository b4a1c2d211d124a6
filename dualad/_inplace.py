"""Arithmetic that reuses temporaries nothing else references.

NumPy elides temporaries in ``a * b + c``; derivative code keeps its
temporaries in variables, which defeats that, so this module does it by
hand: an operand is overwritten only when it is a raw array of the result's
shape and dtype whose only reference is the caller's local variable (a
fresh partial such as ``2.0 * x``, never an input, an output, a saved value
or a view), or a ``Dual`` so held whose primal and tangent are such arrays
referenced by it alone (the cotangents and partials of a Hessian-vector
product). At n = 1e6 this saves an allocation and its page faults per term.
The reference counts below are those of CPython 3.11 to 3.13 (3.10 also
counts each argument on the caller's stack, 3.14 borrows stack references),
and tests/dualad/test_inplace.py checks them on each; elsewhere every
operation allocates, as plain operators do. A value type on the right goes
through ``ops`` (a raw array on the left may not know how to multiply it:
array_api_strict).
"""

from __future__ import annotations

import operator
import sys
from typing import Any, Callable

from dualad import ops

_RELIABLE = sys.implementation.name == "cpython" and (3, 11) <= sys.version_info[:2] < (3, 14)
# ``owners`` (default 1) is how many references the callers of mul/add/sub/add_at
# hold and hand over (the caller's local, plus a parameter for each helper in
# between, such as ``_vjp.scale``). On top of those, the checks below count
# their own: the parameter of mul/add/sub (add_at), _owned's parameter (not
# for add_at), the checking function's parameter and getrefcount's argument.
_OWN_REFS = 4
# References to the primal or tangent of such a Dual, counted in _owned_array:
# its slot, the local of _owned_dual, _owned_array's parameter, getrefcount's argument.
_ONLY_DUAL = 4

# Below this many elements an allocation is cheap and the checks are not.
_MIN_SIZE = 8192


def _owned_array(a: Any, refs: int) -> bool:
    """``a`` is a large NumPy/CuPy array that owns its memory (a view shares it)
    and has no references but the ``refs`` we know of."""
    return (type(a).__name__ == "ndarray" and a.size >= _MIN_SIZE and a.base is None
            and sys.getrefcount(a) <= refs)


def _owned_dual(a: Any, b: Any, refs: int) -> bool:
    """``a`` is a Dual held only by our caller's local, of owned arrays, and
    ``b`` a Dual of the same level and chunking, or a constant (no ``_strip``)."""
    if (type(a).__name__ != "Dual" or sys.getrefcount(a) > refs
            or (type(b) is type(a) and (a._level != b._level or a._nb != b._nb))
            or (type(b) is not type(a) and hasattr(b, "_strip"))):
        return False
    primal = a.primal
    if not _owned_array(primal, _ONLY_DUAL):
        return False
    primal = None
    tangent = a.tangent
    return _owned_array(tangent, _ONLY_DUAL)


def _fits(a: Any, b: Any) -> bool:
    """``b`` can be combined into the array ``a`` without changing its shape or dtype."""
    return type(b) is float or type(b) is int or (
        type(b) is type(a) and b.shape == a.shape and b.dtype == a.dtype)


def _owned(a: Any, b: Any, owners: int) -> str | None:
    """How ``a`` can take the result of ``a op b`` in place: "array", "dual"
    (``b`` a Dual), "dual-constant" (``b`` a raw array or number) or None."""
    if not _RELIABLE or getattr(a, "size", 0) < _MIN_SIZE:  # small arrays and floats: allocate
        return None
    if type(a).__name__ == "ndarray":
        return "array" if _owned_array(a, owners + _OWN_REFS) and _fits(a, b) else None
    if not _owned_dual(a, b, owners + _OWN_REFS):
        return None
    if type(b) is not type(a):  # the tangent broadcasts b over its chunk axis, if any
        return "dual-constant" if _fits(a.primal, b) else None
    return "dual" if _fits(a.primal, b.primal) and _fits(a.tangent, b.tangent) else None


def mul(a: Any, b: Any, owners: int = 1) -> Any:
    """``a * b``, written into ``a`` when ``a`` is an owned temporary."""
    how = _owned(a, b, owners)
    if how == "array":
        a *= b
        return a
    if how == "dual" and not a._nb:  # (p + t eps)(q + s eps) = pq + (tq + ps) eps
        t = a.tangent
        t *= b.primal
        t += a.primal * b.tangent
        a.primal *= b.primal
        return a
    if how == "dual-constant":
        a.primal *= b
        a.tangent *= b
        return a
    return ops.multiply(a, b) if hasattr(b, "_strip") else a * b


def _additive(in_place: Callable, plain: Callable, traced: Callable, symbol: str) -> Callable:
    """``add`` or ``sub``: they differ only in the operator."""
    def combine(a: Any, b: Any, owners: int = 1) -> Any:
        how = _owned(a, b, owners)
        if how == "array":
            return in_place(a, b)
        if how == "dual":  # linear: each part on its own
            in_place(a.primal, b.primal)
            in_place(a.tangent, b.tangent)
            return a
        if how == "dual-constant":
            in_place(a.primal, b)
            return a
        return traced(a, b) if hasattr(b, "_strip") else plain(a, b)

    combine.__doc__ = f"``a {symbol} b``, written into ``a`` when ``a`` is an owned temporary."
    return combine


# ``ops`` is still loading when the table imports this module: look its functions up per call.
add = _additive(operator.iadd, operator.add, lambda a, b: ops.add(a, b), "+")
sub = _additive(operator.isub, operator.sub, lambda a, b: ops.subtract(a, b), "-")


def add_at(a: Any, idx: tuple, b: Any, owners: int = 1) -> bool:
    """Add ``b`` into ``a[idx]`` (basic indices) in place, if ``a`` is an owned
    temporary (an array, or a Dual of arrays) of ``b``'s dtype; return whether
    it was done."""
    if not _RELIABLE or type(b) is not type(a):
        return False
    if type(a).__name__ == "ndarray":
        if b.dtype != a.dtype or not _owned_array(a, owners + _OWN_REFS - 1):
            return False
        a[idx] += b
        return True
    if not _owned_dual(a, b, owners + _OWN_REFS - 1) or a._nb:
        return False
    dtype = a.primal.dtype
    if any(type(p) is not type(a.primal) or p.dtype != dtype
           for p in (b.primal, a.tangent, b.tangent)):
        return False
    a.primal[idx] += b.primal
    a.tangent[idx] += b.tangent
    return True

"""Arithmetic that writes into temporaries their maker owns, and gradient accumulators.

NumPy elides temporaries in ``a * b + c``; derivative code keeps its
temporaries in variables, which defeats that, so this module does it by
hand. At n = 1e6 each reuse saves an allocation and its page faults.

Ownership is data that travels with a value: each function here takes, for
each operand, whether the caller owns it, and returns the result with
whether the caller now owns that. A value is owned when the code that holds
it made it and has handed it to nobody:

- a value a table entry's rule (a partial, a VJP) returned where the entry
  declares that result fresh (``Primitive.fresh``): new memory, shared with
  nothing the rule was given, unless it is a cotangent handed on as it is
  or a tangent a Dual partial kept, which :func:`made_by_call` tells by
  identity (there is no walk through what the rule was given);
  ``tests/_support/harness.py`` checks every declaration on every case of
  the table;
- the result of combining values here, on the same terms;
- the buffer of an :class:`Accumulator` once it has made one.

Only NumPy/CuPy arrays of at least ``_MIN_SIZE`` elements that own their
memory (not views), and ``Dual``\\ s of two such arrays, are ever written;
below that size an allocation costs less than deciding. A value type on the
right goes through ``ops`` (a raw array on the left may not know how to
multiply it: array_api_strict).
"""

from __future__ import annotations

import operator
from collections import Counter
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from dualad._base.backend import WRITABLE_ARRAYS
from dualad._base.core import Value
from dualad._base.shapes import zeros
from dualad._table import operations

# Below this many elements an allocation is cheap and the checks are not.
_MIN_SIZE = 8192

_REUSES: Counter | None = None  # counts each in-place write while count_reuses() runs


@contextmanager
def count_reuses() -> Iterator[Counter]:
    """Count the in-place writes ("mul", "add", "sub", "add_at") made in the block,
    so a test can tell when reuse silently stops."""
    global _REUSES
    outer, _REUSES = _REUSES, Counter()
    try:
        yield _REUSES
    finally:
        _REUSES = outer


def _reused(kind: str) -> None:
    if _REUSES is not None:
        _REUSES[kind] += 1


def _parts(a: Any) -> tuple | None:
    """The arrays an owner of ``a`` may write: ``(a,)`` for a large NumPy or CuPy
    array that owns its memory (a view shares another's), a Dual's primal and
    tangent when both are such arrays (and distinct), else None. (Called for
    every value a rule returns: one type lookup decides for small ones.)"""
    if type(a) in WRITABLE_ARRAYS:
        return (a,) if a.size >= _MIN_SIZE and a.base is None else None
    if isinstance(a, Value):
        pair = a._writable_parts()  # a Dual's primal and tangent
        if len(pair) == 2:
            p, t = pair
            if (p is not t and type(p) in WRITABLE_ARRAYS and type(t) in WRITABLE_ARRAYS
                    and p.size >= _MIN_SIZE and p.base is None and t.base is None):
                return p, t
    return None


def made_by_call(value: Any, given: tuple) -> bool:
    """Whether ``value``, a result its rule declares fresh (``Primitive.fresh``) or
    one computed here, is a writable temporary: a large array, or a Dual of two,
    that owns its memory and is none of the values in ``given`` (the call's
    direct arguments, and the items of a tuple among them), nor a part of a Dual
    among them. Nothing deeper is looked at: the declaration vouches for that.
    (A Dual result may hold an operand's part as it is: adding a constant to a
    Dual keeps its tangent.)"""
    # the common case, decided inline (this runs for every value a rule returns)
    if type(value) in WRITABLE_ARRAYS:
        if value.size < _MIN_SIZE or value.base is not None:
            return False
        parts = (value,)
    elif isinstance(value, Value):
        parts = _parts(value)
        if parts is None:
            return False
    else:
        return False
    for v in given:
        for w in v if type(v) is tuple else (v,):
            if any(w is p for p in parts) or (isinstance(w, Value) and any(
                    h is p for h in w._writable_parts() for p in parts)):
                return False
    return True


def is_large(x: Any) -> bool:
    """Whether ``x`` is big enough for its owner to bother writing into it: below
    ``_MIN_SIZE`` elements nothing is written, so callers need not ask about ownership."""
    return getattr(x, "size", 0) >= _MIN_SIZE


def _fits(a: Any, b: Any) -> bool:
    """``b`` can be combined into the array ``a`` without changing its shape or dtype."""
    return type(b) is float or type(b) is int or (
        type(b) is type(a) and b.shape == a.shape and b.dtype == a.dtype)


def _how(a: Any, b: Any) -> str | None:
    """How an owned ``a`` can take ``a op b`` in place: "array", "dual" (``b`` a
    Dual of the same level and chunking), "dual-constant" (``b`` a raw array or
    number), or None."""
    parts = _parts(a)
    if parts is None:
        return None
    if len(parts) == 1:
        return "array" if _fits(a, b) else None
    if type(b) is type(a):
        if a._level != b._level or a._nb != b._nb:
            return None
        return "dual" if _fits(a.primal, b.primal) and _fits(a.tangent, b.tangent) else None
    if isinstance(b, Value):  # a value type of another kind or level
        return None
    return "dual-constant" if _fits(a.primal, b) else None  # the tangent broadcasts b over its chunk axis


def mul(a: Any, b: Any, a_owned: bool, track: bool = True) -> tuple[Any, bool]:
    """``a * b``, written into ``a`` when the caller owns it; and whether the
    caller owns the result (False without ``track``: a caller that will not
    write into it need not ask)."""
    how = _how(a, b) if a_owned else None
    if how == "array":
        a *= b
    elif how == "dual" and not a._nb:  # (p + t eps)(q + s eps) = pq + (tq + ps) eps
        t = a.tangent
        t *= b.primal
        t += a.primal * b.tangent
        a.primal *= b.primal
    elif how == "dual-constant":
        a.primal *= b
        a.tangent *= b
    else:
        # A product is new memory (NumPy and CuPy allocate a result without out=); a Dual
        # product may keep an operand's part (a tangent times 1), which made_by_call sees.
        out = operations.multiply(a, b) if isinstance(b, Value) else a * b
        return out, track and made_by_call(out, (a, b))
    _reused("mul")
    return a, True


def _additive(in_place: Callable, plain: Callable, traced: Callable, symbol: str,
              commutes: bool) -> Callable:
    """``add`` or ``sub``: they differ only in the operator, and in whether an owned
    right operand can take the result."""
    def combine(a: Any, b: Any, a_owned: bool, b_owned: bool = False,
                track: bool = True) -> tuple[Any, bool]:
        how = _how(a, b) if a_owned else None
        if how is None and b_owned and commutes:
            how = _how(b, a)
            if how is not None:
                a, b = b, a
        if how == "array":
            in_place(a, b)
        elif how == "dual":  # linear: each part on its own
            in_place(a.primal, b.primal)
            in_place(a.tangent, b.tangent)
        elif how == "dual-constant":
            in_place(a.primal, b)
        else:
            # New memory, as for mul; a Dual sum keeps the tangent of an operand whose
            # other side has none, which made_by_call sees.
            out = traced(a, b) if isinstance(b, Value) else plain(a, b)
            return out, track and made_by_call(out, (a, b))
        _reused(plain.__name__)
        return a, True

    combine.__doc__ = (f"``a {symbol} b``, written into an operand the caller owns; and whether "
                       "the caller owns the result (False without ``track``).")
    return combine


# The table's operations are provided after this module loads: look them up per call.
add = _additive(operator.iadd, operator.add, lambda a, b: operations.add(a, b), "+",
                commutes=True)
sub = _additive(operator.isub, operator.sub, lambda a, b: operations.subtract(a, b), "-",
                commutes=False)


class Accumulator:
    """The sum of the cotangents that reach one gradient slot.

    The first cotangent is kept as it comes, owned or borrowed (``add(c,
    owned)``); later ones are added into the buffer once the accumulator
    owns one, which it does from the first sum it makes itself, or from the
    first cotangent of a slice it takes (``add_at``).

    Examples
    --------
    >>> import numpy as np
    >>> from dualad._table.ownership import Accumulator
    >>> g = np.ones(3)
    >>> acc = Accumulator()
    >>> acc.add(g)              # borrowed: g is never written
    >>> acc.add(np.full(3, 2.0))
    >>> acc.value, g
    (array([3., 3., 3.]), array([1., 1., 1.]))
    """

    __slots__ = ("value", "owned")

    def __init__(self, value: Any = None, owned: bool = False) -> None:
        self.value, self.owned = value, owned

    def add(self, c: Any, owned: bool = False) -> None:
        """Add the cotangent ``c``; ``owned`` says that nothing else holds it."""
        if self.value is None:
            self.value, self.owned = c, owned
        else:
            self.value, self.owned = add(self.value, c, self.owned, owned)

    def add_at(self, idx: tuple, g: Any, whole: tuple | None = None) -> bool:
        """Add ``g`` into ``value[idx]`` (basic indices: each element once) in place,
        if the buffer is owned and of ``g``'s kind; return whether it was done.

        ``whole`` is the shape and dtype of what ``idx`` indexes: an empty accumulator
        given a NumPy (or CuPy) array of that dtype makes its buffer, zeros of that
        shape with ``g`` at ``idx``, and owns it. A raw buffer it owns is written
        whatever its size, as nothing is left to decide: slices of one small array
        (a loop's ``gates[0:h]``, ``gates[h:2 h]``, ...) then add into one buffer,
        not into zeros each and a sum each.
        """
        for i in idx:
            if type(i) is not int and type(i) is not slice and i is not None:
                return False
        a = self.value
        if a is None:
            if whole is None or type(g) not in WRITABLE_ARRAYS or g.dtype != whole[1]:
                return False
            a = self.value = zeros(g, whole[0])
            a[idx] = g
            self.owned = True
            return True
        if not self.owned or type(g) is not type(a):
            return False
        parts = (a,) if type(a) in WRITABLE_ARRAYS and a.base is None else _parts(a)
        if parts is None:
            return False
        if len(parts) == 2:
            if a._level != g._level or a._nb or g._nb:
                return False
            pieces = (g.primal, g.tangent)
        else:
            pieces = (g,)
        if any(type(q) is not type(p) or q.dtype != p.dtype for p, q in zip(parts, pieces)):
            return False
        for p, q in zip(parts, pieces):
            p[idx] += q
        _reused("add_at")
        return True

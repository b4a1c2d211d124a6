"""``HyperDual``: ``a + b e1 + c e2 + d e1 e2`` with ``e1**2 = e2**2 = 0``.

A hyper-dual number is a Dual (in ``e2``) whose parts are Duals (in
``e1``), so every primitive is interpreted by converting the operands to
nested Duals at two fresh levels and converting the result back: the table
is not written again, and linear algebra is as exact as ``sin``. Scalars
take a fast path: the four arithmetic operators are expanded in closed
form, and a unary function needs only ``f``, ``f'`` and ``f''``.
"""

from __future__ import annotations

from typing import Any

from dualad._base.backend import scalar_xp
from dualad._base.checks import check_differentiable, validate_tangent
from dualad._base.core import Value, bind, level_around, level_of, new_level
from dualad._base.shapes import shape_of, zeros
from dualad._forward.dual import Dual, PrimalShaped
from dualad._numpy.arraylike import ArrayLike
from dualad._table.entries import Primitive

HYPERDUAL_LEVEL = 2  # shared level of directly constructed HyperDuals


class HyperDual(PrimalShaped, ArrayLike, Value):
    """A hyper-dual number: exact first and second derivatives in one pass.

    ``f(HyperDual(x, u, w, 0))`` has ``primal = f(x)``, ``eps1 = f'(x) u``,
    ``eps2 = f'(x) w`` and ``eps1eps2 = u^T f''(x) w``.

    Examples
    --------
    >>> from dualad import HyperDual, ops
    >>> y = ops.sin(HyperDual(1.0, 1.0, 1.0, 0.0))
    >>> round(y.eps1eps2, 12) == round(-ops.sin(1.0), 12)
    True
    """

    __slots__ = ("primal", "eps1", "eps2", "eps1eps2")
    __array_priority__ = 100

    def __init__(self, primal: Any, eps1: Any = 0.0, eps2: Any = 0.0, eps1eps2: Any = 0.0, *,
                 level: int | None = None):
        check_differentiable(primal, "HyperDual: primal")
        parts = []
        for name, part in (("eps1", eps1), ("eps2", eps2), ("eps1eps2", eps1eps2)):
            if isinstance(part, (int, float)) and shape_of(part) != shape_of(primal):
                part = zeros(primal) + part
            part, nb = validate_tangent(primal, part, f"HyperDual: {name}", "HyperDual: primal")
            if nb:
                raise ValueError(f"HyperDual: {name} must have the shape of primal, "
                                 f"{shape_of(primal)}, got {shape_of(part)}")
            parts.append(part)
        if level is None:
            inner = max(level_of(p) for p in (primal, *parts))
            level = HYPERDUAL_LEVEL if inner < 0 else level_around("HyperDual", inner)
        self.primal = primal
        self.eps1, self.eps2, self.eps1eps2 = parts
        self._level = level

    @classmethod
    def _make(cls, a, b, c, d, level):
        h = object.__new__(cls)
        h.primal, h.eps1, h.eps2, h.eps1eps2, h._level = a, b, c, d, level
        return h

    def __repr__(self) -> str:
        return f"HyperDual({self.primal!r}, {self.eps1!r}, {self.eps2!r}, {self.eps1eps2!r})"

    def _value_hint(self) -> str:
        return ".primal"

    # -- fast scalar arithmetic (the algebra itself, not a rule) -----------------
    def _scalar_parts(self, other):
        if type(other) is HyperDual and other._level == self._level:
            return other.primal, other.eps1, other.eps2, other.eps1eps2
        if type(other) in (float, int):
            return other, 0.0, 0.0, 0.0
        return None

    def __add__(self, other):
        o = self._scalar_parts(other) if type(self.primal) is float else None
        if o is None:
            return ArrayLike.__add__(self, other)
        return HyperDual._make(self.primal + o[0], self.eps1 + o[1], self.eps2 + o[2],
                               self.eps1eps2 + o[3], self._level)

    __radd__ = __add__

    def __sub__(self, other):
        o = self._scalar_parts(other) if type(self.primal) is float else None
        if o is None:
            return ArrayLike.__sub__(self, other)
        return HyperDual._make(self.primal - o[0], self.eps1 - o[1], self.eps2 - o[2],
                               self.eps1eps2 - o[3], self._level)

    def __rsub__(self, other):
        o = self._scalar_parts(other) if type(self.primal) is float else None
        if o is None:
            return ArrayLike.__rsub__(self, other)
        return HyperDual._make(o[0] - self.primal, o[1] - self.eps1, o[2] - self.eps2,
                               o[3] - self.eps1eps2, self._level)

    def __mul__(self, other):
        o = self._scalar_parts(other) if type(self.primal) is float else None
        if o is None:
            return ArrayLike.__mul__(self, other)
        a, b, c, d = self.primal, self.eps1, self.eps2, self.eps1eps2
        x, y, z, w = o
        return HyperDual._make(a * x, a * y + b * x, a * z + c * x,
                               a * w + b * z + c * y + d * x, self._level)

    __rmul__ = __mul__

    def __truediv__(self, other):
        o = self._scalar_parts(other) if type(self.primal) is float else None
        if o is None or o[0] == 0:
            return ArrayLike.__truediv__(self, other)
        return self * _scalar_reciprocal(o, self._level)

    def __rtruediv__(self, other):
        o = self._scalar_parts(other) if type(self.primal) is float else None
        if o is None or self.primal == 0:
            return ArrayLike.__rtruediv__(self, other)
        inv = _scalar_reciprocal((self.primal, self.eps1, self.eps2, self.eps1eps2), self._level)
        return inv * other

    def __pow__(self, other):
        if other == 2 and type(other) in (int, float) and type(self.primal) is float:
            return self * self  # the squares in most formulas, without a rule lookup
        return ArrayLike.__pow__(self, other)

    # -- every primitive ----------------------------------------------------------
    def _process(self, prim: Primitive, args: tuple, params: dict) -> Any:
        level = self._level
        if prim.partials is not None and len(args) == 1 and type(self.primal) is float:
            return _scalar_unary(prim, self, params)
        l1, l2 = new_level(), new_level()
        nested = [_to_nested(a, l1, l2) if type(a) is HyperDual and a._level == level else a
                  for a in args]
        out = bind(prim, *nested, **params)
        if prim.multiple_results:
            return tuple(_from_nested(o, l1, l2, level) for o in out)
        return _from_nested(out, l1, l2, level)


def _scalar_reciprocal(parts, level):
    x, y, z, w = parts
    inv = 1.0 / x
    d1 = -inv * inv  # f'(x) of 1/x
    d2 = -2.0 * d1 * inv  # f''(x)
    return HyperDual._make(inv, d1 * y, d1 * z, d1 * w + d2 * y * z, level)


def _scalar_unary(prim, h, params):
    """f(a + b e1 + c e2 + d e1e2) = f + f' b e1 + f' c e2 + (f' d + f'' b c) e1e2."""
    a = h.primal
    f = prim.impl(scalar_xp, a, **params)
    partial = prim.partials[0]
    d1 = partial(f, a, **params)
    if d1 is None:
        return f
    lvl = new_level()
    # The partial evaluated on a dual number gives f' and f'' together.
    p = partial(Dual._make(f, d1 if type(d1) is not int else float(d1), lvl, 0),
                Dual._make(a, 1.0, lvl, 0), **params)
    d2 = p.tangent if type(p) is Dual else 0.0
    d1 = float(d1)
    return HyperDual._make(f, d1 * h.eps1, d1 * h.eps2,
                           d1 * h.eps1eps2 + d2 * h.eps1 * h.eps2, h._level)


def _to_nested(h, l1, l2):
    return Dual._make(Dual._make(h.primal, h.eps1, l1, 0), Dual._make(h.eps2, h.eps1eps2, l1, 0), l2, 0)


def _parts(x, l1):
    if type(x) is Dual and x._level == l1:
        return x.primal, x.tangent
    return x, None


def _from_nested(out, l1, l2, level):
    if not (type(out) is Dual and out._level == l2):
        a, b = _parts(out, l1)
        if b is None:
            return a
        return HyperDual._make(a, b, zeros(a), zeros(a), level)
    a, b = _parts(out.primal, l1)
    c, d = _parts(out.tangent, l1)
    return HyperDual._make(a, zeros(a) if b is None else b, c, zeros(a) if d is None else d, level)

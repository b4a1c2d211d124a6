"""The VJP of a table entry, derived from its rule.

``residuals`` is what a tape keeps at record time; ``vjp`` turns a
cotangent of the output into cotangents of the inputs. Both are written with
differentiable operations, so a backward pass run on ``Dual`` or tape values
is itself differentiated.
"""

from __future__ import annotations

from typing import Any

from dualad import _inplace, ops
from dualad._core import Primitive
from dualad._shapes import dtype_of, is_mask, raw, shape_of


def aval(x: Any) -> tuple:
    """Shape and dtype: all a linear primitive's VJP needs of an input."""
    return shape_of(x), dtype_of(raw(x))


class Dropped:
    """Stands for a value the VJP does not read: keeps its shape, not its data.

    ``Dropped.of(x)`` shares one instance per shape, so a tape of many
    operations does not hold (and the cyclic GC does not scan) one per input.
    """

    __slots__ = ("shape",)

    def __init__(self, x: Any):
        self.shape = shape_of(x)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @staticmethod
    def of(x: Any) -> "Dropped":
        return shared_by_key(("of", shape_of(x)), lambda: Dropped(x))

    @staticmethod
    def all(args: Any) -> tuple:
        """``tuple(Dropped.of(a) for a in args)``, shared per tuple of shapes."""
        return shared_by_key(("all",) + tuple([shape_of(a) for a in args]),
                             lambda: tuple([Dropped.of(a) for a in args]))

    @staticmethod
    def nothing(args: Any) -> tuple:
        """``(None, Dropped.all(args))``: the residuals of a rule that reads no value."""
        return shared_by_key(("nothing",) + tuple([shape_of(a) for a in args]),
                             lambda: (None, Dropped.all(args)))


_SHARED_BY_KEY: dict[tuple, Any] = {}


def shared_by_key(key: tuple, make: Any) -> Any:
    """``make()``, made once per ``key`` (a tag, then shapes or avals) and shared after.

    Tapes keep these instead of one copy per record, which keeps the objects
    Python's cyclic GC scans on long tapes few. The table starts over at 4096 keys.
    """
    out = _SHARED_BY_KEY.get(key)
    if out is None:
        if len(_SHARED_BY_KEY) >= 4096:
            _SHARED_BY_KEY.clear()
        out = _SHARED_BY_KEY[key] = make()
    return out


def saves_values(prim: Primitive) -> bool:
    """Whether a record of ``prim`` keeps (some of) its input and output values,
    rather than only shapes or a residual computed at record time."""
    return prim.residual is None and prim.kind != "linear" and prim.saves != "avals"


def residuals(prim: Primitive, ans: Any, args: tuple, params: dict, needs: tuple | None = None) -> Any:
    """What the VJP of ``prim`` needs, computed when the operation is recorded.

    ``needs`` says which inputs will get a cotangent; values that no needed
    partial reads are replaced by :class:`Dropped`, so a tape does not keep
    temporaries alive for nothing (``prim.saves``: "none" for constant
    partials, "output" or "inputs" for partials that read only those,
    "cross" for products, whose partial in one input is the other inputs).
    """
    if prim.residual is not None:
        return prim.residual(ans, *args, **params), tuple(aval(a) for a in args)
    if not saves_values(prim):
        return tuple(aval(a) for a in args)
    saves = prim.saves
    if saves == "all":
        return ans, tuple(args)
    if saves == "inputs":
        return None, tuple(args)
    if saves == "cross":  # a binary product: keep x if y needs a cotangent, and y if x does
        x, y = args
        if needs is None:
            return None, tuple(args)
        return None, (x if needs[1] else Dropped.of(x), y if needs[0] else Dropped.of(y))
    if saves == "output":
        return ans, Dropped.all(args)
    return Dropped.nothing(args)


def vjp(prim: Primitive, g: Any, res: Any, needs: tuple, params: dict) -> tuple:
    """Cotangents of the inputs of ``prim`` (``None`` where not needed or zero)."""
    kind = prim.kind
    if kind == "elementwise":
        if prim.residual is not None:
            partials, avals = res
            parts = [p if need else None for p, need in zip(partials, needs)]
            shapes = [av[0] for av in avals]
        else:
            ans, args = res
            cots = []
            for f, need, a in zip(prim.partials, needs, args):
                p = f(ans, *args, **params) if need else None
                cots.append(None if p is None else _unbroadcast_scaled(g, p, shape_of(a)))
            return tuple(cots)
        return tuple(None if p is None else _unbroadcast_scaled(g, p, shape)
                     for p, shape in zip(parts, shapes))
    if kind == "linear":
        cots = prim.transpose(g, *res, **params)
        return tuple(c if need else None for c, need in zip(cots, needs))
    if kind == "custom":
        if prim.residual is not None:
            cots = prim.vjp(g, res[0], **params)
        else:
            ans, args = res
            if isinstance(prim.vjp, tuple):  # one rule per input: skip what nobody needs
                return tuple(rule(g, ans, *args, **params) if need else None
                             for rule, need in zip(prim.vjp, needs))
            cots = prim.vjp(g, ans, *args, **params)
        return tuple(c if need else None for c, need in zip(cots, needs))
    return (None,) * len(needs)


def scale(p: Any, t: Any, owners: int = 1) -> Any:
    """``p * t`` for a local partial ``p``: an int 1/-1 costs nothing, a mask selects.

    ``owners`` counts the callers' references to ``p`` (1: one local), which
    do not stop ``p`` from being reused for the product.
    """
    if type(p) is int:
        return t if p == 1 else -t if p == -1 else t * p
    if is_mask(p):
        return ops.where(p, t, 0.0)
    return _inplace.mul(p, t, owners + 1)


def _unbroadcast_scaled(g, p, shape):
    t = scale(p, g, 2)  # p: this parameter and vjp's local
    t_shape = shape_of(t)
    if t_shape != shape:
        t = ops.unbroadcast(t, shape) if len(t_shape) >= len(shape) else ops.broadcast_to(t, shape)
    return t

"""What a tape keeps for a VJP, and the scaling of cotangents by partials.

``Dropped`` and ``aval`` stand for values a VJP does not read (their shape,
or shape and dtype); ``scale`` and ``unbroadcast_scaled`` apply a local
partial to a tangent or cotangent. All are written with differentiable
operations, so a backward pass run on ``Dual`` or tape values is itself
differentiated.
"""

from __future__ import annotations

from typing import Any

from dualad._base.backend import NUMPY_ARRAY, SCALAR_TYPES, namespace_of
from dualad._base.shapes import dtype_of, is_complex, is_mask, raw, shape_of
from dualad._table import operations
from dualad._table import ownership as _inplace


def aval(x: Any) -> tuple:
    """Shape and dtype: all a linear primitive's VJP needs of an input."""
    tx = type(x)
    if tx is NUMPY_ARRAY:  # the common cases, recorded for most inputs: without the helpers
        return x.shape, x.dtype
    if tx is float:
        return (), float
    return shape_of(x), dtype_of(raw(x))


class Dropped:
    """Stands for a value the VJP does not read: keeps its shape and dtype, not its data.

    ``Dropped.of(x)`` shares one instance per shape and dtype, so a tape of
    many operations does not hold (and the cyclic GC does not scan) one per input.
    """

    __slots__ = ("shape", "dtype")

    def __init__(self, x: Any):
        self.shape, self.dtype = aval(x)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    # Each is a lookup of a shared instance (recorded for most operations of a tape):
    # the table is read first, and ``shared_by_key`` is called, with a function that
    # makes the instance, only when it misses.
    @staticmethod
    def of(x: Any) -> "Dropped":
        key = ("of",) + aval(x)
        return _SHARED_BY_KEY.get(key) or shared_by_key(key, lambda: Dropped(x))

    @staticmethod
    def all(args: Any) -> tuple:
        """``tuple(Dropped.of(a) for a in args)``, shared per tuple of avals."""
        key = ("all",) + tuple([aval(a) for a in args])
        return _SHARED_BY_KEY.get(key) or shared_by_key(key, lambda: tuple([Dropped.of(a) for a in args]))

    @staticmethod
    def nothing(args: Any) -> tuple:
        """``(None, Dropped.all(args))``: the residuals of a rule that reads no value."""
        key = ("nothing",) + tuple([aval(a) for a in args])
        return _SHARED_BY_KEY.get(key) or shared_by_key(key, lambda: (None, Dropped.all(args)))


def cotangent_for(c: Any, x: Any) -> Any:
    """The cotangent ``c`` of the input ``x`` (a value, ``Dropped`` or aval), in ``x``'s
    dtype: a real input gets the real part, a float32 input a float32 cotangent
    (as PyTorch and JAX give) although the operation promoted it.

    A cotangent whose innermost array is NumPy's, in the input's dtype (the common
    case on every backward step, tape values and duals included), returns after
    a few type tests and one dtype comparison.
    """
    if c is None:
        return c
    tx = type(x)
    dtype = x.dtype if tx is NUMPY_ARRAY or tx is Dropped else x[1] if tx is tuple else dtype_of(raw(x))
    rc = c if type(c) is NUMPY_ARRAY else raw(c)
    if type(rc) is NUMPY_ARRAY and rc.dtype is dtype:
        return c
    if dtype is float or dtype is int:
        return operations.real(c) if is_complex(c) else c
    if type(rc) is complex and getattr(dtype, "kind", None) == "f":
        return operations.real(c)  # a Python complex for a real array: its real part, a float
    if dtype_of(rc) == dtype or type(rc) in SCALAR_TYPES:
        return c
    kind = getattr(dtype, "kind", None)  # NumPy and CuPy dtypes; others are asked by name
    xp = namespace_of([rc])
    if kind == "c" or (kind is None and xp.isdtype(dtype, "complex floating")):
        return operations.astype(c, dtype)
    if kind not in (None, "f") and not (kind is None and xp.isdtype(dtype, "real floating")):
        return c  # an integer or boolean input's cotangent is not read
    return operations.astype(operations.real(c) if is_complex(c) else c, dtype)


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


def scale(p: Any, t: Any, p_owned: bool = False, track: bool = True) -> tuple[Any, bool]:
    """``p * t`` for a local partial ``p`` (an int 1/-1 costs nothing, a mask
    selects), written into ``p`` when the caller owns it; and whether the
    caller owns the product (see ``dualad._table.ownership``; False without ``track``)."""
    if type(p) is int:
        if p == 1:
            return t, False
        out = -t if p == -1 else t * p
    elif is_mask(p):
        out = operations.where(p, t, 0.0)
    else:
        return _inplace.mul(p, t, p_owned, track)
    # A negation, a product or a selection is new memory; a Dual's may keep a part of t.
    return out, track and _inplace.made_by_call(out, (p, t))


def small_product(g: Any, p: Any, x: Any) -> Any:
    """``p * g``, the cotangent of the input ``x`` (a value or its ``Dropped``) for the
    local partial ``p``, where that product is all that :func:`unbroadcast_scaled` and
    :func:`cotangent_for` would do; else None.

    That is when ``g`` and ``x`` are NumPy arrays of one shape and dtype, too small
    for anybody to write into (``ownership``), and ``p`` an array of the same, a
    float or an int (as :func:`scale` takes it: 1 hands ``g`` on, -1 negates it): no
    sum over broadcast axes, no cast, no ownership to decide. It is most of the
    steps of a reverse pass over a loop on small arrays, where the general route's
    five calls cost about 0.6 us a step more (sin's VJP on one number: 2.2 us here,
    2.8 by them; ``ReverseOverhead``: 8.4 us a recorded and walked operation, 9.0;
    benchmarks/README.md, "Measurements behind the code").
    """
    tx = type(x)
    if type(g) is not NUMPY_ARRAY or (tx is not NUMPY_ARRAY and tx is not Dropped):
        return None
    dtype, shape = x.dtype, x.shape
    if g.dtype is not dtype or g.size >= _inplace._MIN_SIZE or g.shape != shape:
        return None  # (``is_large``, asked inline: g is an array)
    tp = type(p)
    if tp is NUMPY_ARRAY:
        return p * g if p.dtype is dtype and p.shape == shape else None
    if tp is float:
        return p * g
    if tp is int:
        return g if p == 1 else -g if p == -1 else g * p
    return None


def unbroadcast_scaled(g, p, shape, p_owned: bool = False):
    """``p * g`` summed or broadcast to ``shape``: the cotangent of an input of that shape."""
    t = scale(p, g, p_owned, track=False)[0]  # the walk asks about the cotangent it gets
    t_shape = shape_of(t)
    if t_shape != shape:
        if len(t_shape) >= len(shape):
            t = operations.unbroadcast(t, shape)
        else:
            t = operations.broadcast_to(t, shape)
    return t

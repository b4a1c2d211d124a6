"""``Dual``: primal + tangent at one level, and how it interprets the table."""

from __future__ import annotations

from typing import Any

from dualad import ops
from dualad._base.checks import validate_tangent
from dualad._base.core import Value, bind, level_around, level_of
from dualad._base.shapes import reported_dtype, shape_of
from dualad._numpy.arraylike import ArrayLike
from dualad._table.entries import Primitive

DUAL_LEVEL = 1  # shared level of directly constructed Duals


class PrimalShaped:
    """Mixin of the forward-mode values (Dual, HyperDual, Jet, Pattern): their shape
    and dtype are their primal's, and stripped of what they carry they are it."""

    __slots__ = ()

    def _strip(self):
        return self.primal

    @property
    def shape(self):
        return shape_of(self.primal)

    @property
    def dtype(self):
        return reported_dtype(self.primal)


class Dual(PrimalShaped, ArrayLike, Value):
    """A dual number ``primal + tangent * eps`` with ``eps**2 = 0``.

    The tangent has the primal's shape and dtype, or one extra leading axis
    of ``k`` directions (chunk mode: ``k`` JVPs from one primal pass).

    Parameters
    ----------
    primal : array, float or value type
        Where the function is evaluated.
    tangent : array or float
        The direction(s); shape ``primal.shape`` or ``(k,) + primal.shape``.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import Dual
    >>> y = np.sin(Dual(np.array([0.0, 1.0]), np.array([1.0, 1.0])))
    >>> np.allclose(y.tangent, np.cos([0.0, 1.0]))
    True
    """

    __slots__ = ("primal", "tangent", "_nb")
    __array_priority__ = 100
    made_by = "a forward-mode transform (jvp, jacfwd, hessian)"

    def __init__(self, primal: Any, tangent: Any, *, level: int | None = None):
        tangent, nb = validate_tangent(primal, tangent, "Dual")
        if level is None:
            inner = max(level_of(primal), level_of(tangent))
            level = DUAL_LEVEL if inner < 0 else level_around("Dual", inner)
        self.primal, self.tangent, self._level, self._nb = primal, tangent, level, nb

    @classmethod
    def _make(cls, primal, tangent, level, nb):
        d = object.__new__(cls)
        d.primal, d.tangent, d._level, d._nb = primal, tangent, level, nb
        return d

    def __repr__(self) -> str:
        return f"Dual({self.primal!r}, {self.tangent!r})"

    def _writable_parts(self) -> tuple:
        return self.primal, self.tangent

    def __setitem__(self, idx, value):
        """``d[idx] = value`` as NumPy assigns (last write wins on a repeated index).

        The Dual takes a new primal and tangent; the arrays it held, which may
        be the caller's, are never written.
        """
        new = ops.index_set(self, value, idx)
        if type(new) is not Dual or new._level != self._level:
            raise TypeError(
                "d[idx] = value: value carries a derivative of an outer transform, which a "
                f"Dual of this level cannot hold; build the result with "
                f"dualad.ops.index_set(d, value, idx) instead (value is {type(value).__name__})")
        self.primal, self.tangent, self._nb = new.primal, new.tangent, new._nb

    def _process(self, prim: Primitive, args: tuple, params: dict) -> Any:
        level = self._level
        if len(args) == 1:  # the common unary case, without the loops below
            primals, tangents, nb = (self.primal,), (self.tangent,), self._nb
        else:
            nb = 0
            unbatched = False  # a Dual operand with one direction beside chunked ones
            primals, tangents = [], []
            for a in args:
                if type(a) is Dual and a._level == level:
                    primals.append(a.primal)
                    tangents.append(a.tangent)
                    if a._nb:
                        nb = 1
                    else:
                        unbatched = True
                else:
                    primals.append(a)
                    tangents.append(None)
            if nb and unbatched:  # every tangent of a chunked call carries the batch axis
                k = next(shape_of(t)[0] for t, a in zip(tangents, args)
                         if t is not None and a._nb)
                tangents = [_batch(t, p, k) if t is not None and not a._nb else t
                            for t, p, a in zip(tangents, primals, args)]
        ans = bind(prim, *primals, **params)
        out = prim.jvp(primals, tangents, ans, params, nb)
        if out is None:
            return ans
        if prim.multiple_results:
            return tuple(_wrap(a, t, level, nb) for a, t in zip(ans, out))
        d = _new(Dual)
        d.primal, d.tangent, d._level, d._nb = ans, out, level, nb
        return d


_new = object.__new__


def _wrap(ans, tangent, level, nb):
    if tangent is None:
        return ans
    return Dual._make(ans, tangent, level, nb)


def _batch(t, primal, k):
    return ops.broadcast_to(t, (k,) + shape_of(primal))

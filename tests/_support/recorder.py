"""Record the primitive applications a function makes, with their raw operands.

``record(fn, args)`` runs ``fn`` on :class:`Recorder` values (a value type at
a level above every other, which unwraps its operands, calls ``bind`` on the
raw arrays and logs the call). Each logged ``(primitive, args, params, ans)``
can then be checked on its own: its VJP rule against its JVP through the
adjoint identity, with exactly the shapes, dtypes and parameters the case
produced.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dualad._base.core import Value, bind, new_level
from dualad._base.shapes import dtype_of, shape_of
from dualad._numpy.arraylike import ArrayLike
from dualad.extend import Primitive


@dataclass
class Call:
    prim: Primitive
    args: tuple
    params: dict
    ans: Any

    def __repr__(self) -> str:
        shapes = ", ".join(str(shape_of(a)) for a in self.args)
        return f"{self.prim.name}({shapes}; {self.params})"


class Recorder(ArrayLike, Value):
    """Wraps every result, booleans included, so that calls on them are logged too."""

    __slots__ = ("value", "log")

    def __init__(self, value, log, level):
        self.value, self.log, self._level = value, log, level

    def _strip(self):
        return self.value

    @property
    def shape(self):
        return shape_of(self.value)

    @property
    def dtype(self):
        return dtype_of(self.value)

    def _process(self, prim: Primitive, args: tuple, params: dict) -> Any:
        level = self._level
        raw_args = tuple(a.value if type(a) is Recorder and a._level == level else a for a in args)
        ans = bind(prim, *raw_args, **params)
        self.log.append(Call(prim, raw_args, dict(params), ans))
        if prim.multiple_results:
            return tuple(Recorder(a, self.log, level) for a in ans)
        return Recorder(ans, self.log, level)


def record(fn, args: tuple, kw: dict, wrap: tuple) -> list[Call]:
    """The primitive calls of ``fn(*args, **kw)`` made on the arguments at positions ``wrap``."""
    log: list[Call] = []
    level = new_level()
    wrapped = tuple(Recorder(a, log, level) if i in wrap else a for i, a in enumerate(args))
    fn(*wrapped, **kw)
    return log

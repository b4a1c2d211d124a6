"""SciPy's solvers for arrays of another library: the solve runs on NumPy copies.

SciPy's optimizers and integrators take and give NumPy arrays. Where the unknowns are
arrays of another library (CuPy, or any array-API library), :class:`Host` moves them:
SciPy gets NumPy copies of the initial guess and the bounds, the user's functions get
their own library's arrays (SciPy's iterates copied over) and hand back theirs (copied
to NumPy for SciPy), and the solution comes back in the user's library. The
derivative's rules run in the user's library too; only its dense linear algebra goes to
the host (:mod:`dualad.scipy._tangent`). For NumPy arrays nothing is wrapped or copied.

Examples
--------
>>> import array_api_strict as xp
>>> import dualad
>>> import dualad.numpy as dnp
>>> from dualad.scipy import optimize
>>> def x_star(a):   # the root of x**3 + x - a, in the library of a
...     return optimize.root(lambda x: dnp.subtract(x ** 3 + x, a), xp.zeros(1), tol=1e-12).x
>>> x_star(xp.asarray([2.0]))
Array([1.], dtype=array_api_strict.float64)
>>> dualad.jacfwd(x_star)(xp.asarray([2.0]))   # 1 / (3 x*^2 + 1)
Array([[0.25]], dtype=array_api_strict.float64)
"""

from __future__ import annotations

import copy
from typing import Any

import array_api_compat
import numpy as np

from dualad._base.backend import namespace_of, on_host, to_host
from dualad._base.core import Value
from dualad._base.shapes import raw

__all__ = ["Host", "float_operand", "host_values"]


def host_values(out: Any) -> Any:
    """``out``, what a user's function returned, with its arrays as NumPy arrays: the arrays
    themselves, or inside the tuples and lists SciPy takes (``(f, jac)``)."""
    if isinstance(out, (tuple, list)):
        return type(out)(host_values(v) for v in out)
    if out is None or isinstance(out, (np.ndarray, np.generic, float, int, complex, bool, Value)):
        return out  # (a value being differentiated: for the caller's check of constants)
    if hasattr(out, "__array_namespace__"):
        return to_host(out)
    return out  # a sparse matrix, a LinearOperator: SciPy's own


def float_operand(x: Any) -> Any:
    """``x`` as SciPy's solves take it: a value of a transform, or an array of another
    library, as it is; anything else (a list, a number) as a NumPy array; integers and
    booleans as float64, in their library, as SciPy casts them."""
    if isinstance(x, Value):
        return x
    if hasattr(x, "__array_namespace__") and not isinstance(x, np.ndarray):
        xp = namespace_of([x])
        if not on_host(xp):
            return x if xp.isdtype(x.dtype, ("real floating", "complex floating")) else \
                xp.astype(x, xp.float64)
    x = np.asarray(x)
    return x.astype(np.float64) if x.dtype.kind in "biu" else x


class Host:
    """The library of ``like``'s arrays (``xp``, and their ``device``) and SciPy's (NumPy).

    ``foreign`` says they differ; where they do not, every method returns what it gets.
    """

    __slots__ = ("xp", "foreign", "device")

    def __init__(self, like: Any):
        like = raw(like)
        self.xp = namespace_of([like])
        self.foreign = not on_host(self.xp)
        self.device = array_api_compat.device(like) if self.foreign else None

    @property
    def library(self) -> str:
        """The user's library's name, for messages (``cupy``, ``array_api_strict``)."""
        return getattr(self.xp, "__name__", repr(self.xp)).removeprefix("array_api_compat.")

    def to_scipy(self, x: Any) -> Any:
        """A raw array of the user's library as a NumPy array, for SciPy."""
        return to_host(x) if self.foreign else x

    def to_user(self, x: Any) -> Any:
        """A NumPy array of SciPy's as an array of the user's library, on its device."""
        return self.xp.asarray(x, device=self.device) if self.foreign else x

    def bounds(self, bounds: Any) -> Any:
        """``minimize``'s or ``least_squares``'s ``bounds`` (a ``scipy.optimize.Bounds``, pairs,
        or ``(lb, ub)``) with the user's library's arrays as NumPy arrays, for SciPy."""
        if not self.foreign or bounds is None:
            return bounds
        if hasattr(bounds, "lb") and hasattr(bounds, "ub"):
            return type(bounds)(host_values(bounds.lb), host_values(bounds.ub),
                                bounds.keep_feasible)
        return host_values(bounds)

    def dtype(self, dtype: Any) -> np.dtype:
        """The NumPy dtype of the user's library's ``dtype``."""
        if not self.foreign:
            return np.dtype(dtype)
        return to_host(self.xp.zeros(0, dtype=dtype, device=self.device)).dtype

    def wrap(self, fn: Any, given: int = 1) -> Any:
        """``fn`` as SciPy calls it: its first ``given`` arguments and its keyword arguments,
        SciPy's NumPy arrays, as the user's library's (a SciPy result handed to a callback,
        ``intermediate_result``, a copy with its arrays so; Python numbers and the user's own
        ``args`` as they are), and the arrays it returns as NumPy arrays. ``fn`` itself where
        there is nothing to move, or where it is no function (``jac=True``, ``"2-point"``,
        ``None``)."""
        if not (self.foreign and callable(fn)):
            return fn

        def on_host(*args: Any, **kwargs: Any) -> Any:
            moved = tuple(self._moved(a) if i < given else a for i, a in enumerate(args))
            return host_values(fn(*moved, **{k: self._moved(v) for k, v in kwargs.items()}))
        on_host.__wrapped__ = fn  # SciPy reads the callback's signature
        return on_host

    def _moved(self, a: Any) -> Any:
        if isinstance(a, np.ndarray):
            return self.to_user(a)
        if isinstance(a, dict) and any(isinstance(v, np.ndarray) for v in a.values()):
            result = copy.copy(a)  # an OptimizeResult: the same type, its arrays moved
            for k, v in a.items():
                if isinstance(v, np.ndarray):
                    result[k] = self.to_user(v)
            return result
        return a

    def __repr__(self) -> str:
        return f"Host({self.library}, foreign={self.foreign})"

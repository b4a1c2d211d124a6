"""Bounds on the unknowns: the active set at a solution decides the implicit system.

At a solution ``x*`` of ``min f(x, theta)`` over ``lb <= x <= ub`` (KKT), a variable at
one of its bounds with the gradient pushing outward is *active*: it stays at the bound
when ``theta`` moves a little, so its derivative is zero; the *free* variables solve
the stationarity of ``f`` in them with the active ones held at their bounds. The
condition handed to ``custom_root`` is therefore

    F(x)_i = x_i - b_i                      (i active, b_i its bound)
    F(x)_i = grad f(x with x_A = b_A)_i     (i free)

whose Jacobian in ``x`` is ``I`` on the active rows and the free block of the Hessian on
the free rows (symmetric, as without bounds). The active set is read from ``x`` with the
library's comparisons, so that under ``vmap`` each element has its own and ``jit``
recomputes it at every replay. A variable at a bound whose gradient is near zero
(a degenerate multiplier) makes the derivative one-sided there: the derivative warns.
A variable at a bound whose gradient points into the box, or outside the box, is no
KKT point: the derivative raises.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from dualad._base.core import Value
from dualad._base.tree import flatten
from dualad._primitives.elementwise import less_equal, logical_or, subtract, where
from dualad.scipy._host import Host

__all__ = ["AT_BOUND_RTOL", "DEGENERATE", "Box", "least_squares_box", "minimize_box"]

AT_BOUND_RTOL = 1e-8  # |x - b| <= AT_BOUND_RTOL * max(1, |b|): x sits at the bound b (SciPy's xtol)
DEGENERATE = 1e-6     # |g_i| <= DEGENERATE * max(1, max |g|) at a bound: a degenerate multiplier


def _constant(bounds: Any, who: str) -> None:
    if any(isinstance(leaf, Value) for leaf in flatten(bounds)[0]):
        raise TypeError(f"{who}: bounds must be constants (plain numbers or arrays); got a value "
                        "being differentiated, and the derivative with respect to a bound is not "
                        "supported")


def _vector(b: Any, n: int, fill: float, who: str, name: str) -> np.ndarray:
    b = np.asarray(fill if b is None else b, dtype=np.float64)
    try:
        return np.array(np.broadcast_to(b, (n,)))
    except ValueError:
        raise ValueError(f"{who}: {name} must be a number or hold one entry per unknown ({n}), "
                         f"got shape {b.shape}") from None


def minimize_box(bounds: Any, n: int, dtype: Any, who: str, host: Host) -> Box | None:
    """``minimize``'s ``bounds`` (a ``scipy.optimize.Bounds``, or a sequence of ``n``
    ``(min, max)`` pairs, ``None`` for no bound; on the host) as a :class:`Box` in the
    unknowns' ``dtype`` (NumPy's) and library (``host``); None for none."""
    if bounds is None:
        return None
    _constant(bounds, who)
    if hasattr(bounds, "lb") and hasattr(bounds, "ub"):
        lb, ub = bounds.lb, bounds.ub
    else:
        pairs = list(bounds)
        if len(pairs) != n or any(np.ndim(p) != 1 or len(p) != 2 for p in pairs):
            raise ValueError(f"{who}: bounds must be a scipy.optimize.Bounds or {n} (min, max) "
                             f"pairs, one per unknown; got {bounds!r}")
        lb = [-np.inf if lo is None else lo for lo, _ in pairs]
        ub = [np.inf if hi is None else hi for _, hi in pairs]
    return Box(_vector(lb, n, -np.inf, who, "the lower bound"),
               _vector(ub, n, np.inf, who, "the upper bound"), who, dtype, host)


def least_squares_box(bounds: Any, n: int, dtype: Any, who: str, host: Host) -> Box | None:
    """``least_squares``'s ``bounds`` (a ``scipy.optimize.Bounds``, or ``(lb, ub)``, each a
    number or one per unknown; on the host) as a :class:`Box` in the unknowns' ``dtype``
    (NumPy's) and library (``host``); None where no bound is finite."""
    _constant(bounds, who)
    if hasattr(bounds, "lb") and hasattr(bounds, "ub"):
        lb, ub = bounds.lb, bounds.ub
    elif isinstance(bounds, (tuple, list)) and len(bounds) == 2:
        lb, ub = bounds
    else:
        raise ValueError(f"{who}: bounds must be a scipy.optimize.Bounds or a pair (lb, ub); "
                         f"got {bounds!r}")
    box = Box(_vector(lb, n, -np.inf, who, "the lower bound"),
              _vector(ub, n, np.inf, who, "the upper bound"), who, dtype, host)
    return box if np.isfinite(box.lb).any() or np.isfinite(box.ub).any() else None


class Box:
    """``lb <= x <= ub``: the condition whose root is a KKT point, and its check.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad.scipy._bounds import Box
    >>> box = Box(np.zeros(2), np.full(2, np.inf), "example")
    >>> grad = lambda x: x - np.array([-1.0, 2.0])   # of |x - (-1, 2)|^2 / 2: x* = (0, 2)
    >>> box.condition(grad)(np.array([0.0, 2.0]))
    array([0., 0.])
    >>> box.check(np.array([0.0, 2.0]), grad(np.array([0.0, 2.0])))
    (None, None)
    """

    __slots__ = ("lb", "ub", "tol_lb", "tol_ub", "who", "user")

    def __init__(self, lb: np.ndarray, ub: np.ndarray, who: str, dtype: Any = np.float64,
                 host: Host | None = None):
        if np.isnan(lb).any() or np.isnan(ub).any() or (lb > ub).any():
            raise ValueError(f"{who}: bounds must satisfy lb <= ub, without nan; got lb={lb}, "
                             f"ub={ub}")
        # in the unknowns' dtype, where SciPy's float64 solution is rounded to it
        rtol = max(AT_BOUND_RTOL, 4.0 * float(np.finfo(dtype).eps))
        self.lb, self.ub, self.who = lb.astype(dtype), ub.astype(dtype), who
        self.tol_lb, self.tol_ub = self._tolerance(self.lb, rtol), self._tolerance(self.ub, rtol)
        # lb, ub and their tolerances in the unknowns' library, for the condition
        limits = (self.lb, self.ub, self.tol_lb, self.tol_ub)
        self.user = limits if host is None else tuple(map(host.to_user, limits))

    @staticmethod
    def _tolerance(b: np.ndarray, rtol: float) -> np.ndarray:
        finite = np.isfinite(b)
        return np.where(finite, rtol * np.maximum(1.0, np.abs(np.where(finite, b, 0))),
                        -1).astype(b.dtype)  # -1: an infinite bound is never reached

    def pin(self, x: Any) -> tuple:
        """``(active, pinned)`` at ``x`` (of any value type): which variables sit at a bound,
        and that bound (0 for the free ones)."""
        lb, ub, tol_lb, tol_ub = self.user
        at_lb = less_equal(subtract(x, lb), tol_lb)
        at_ub = less_equal(subtract(ub, x), tol_ub)
        return logical_or(at_lb, at_ub), where(at_lb, lb, where(at_ub, ub, 0.0))

    def held(self, x: np.ndarray) -> np.ndarray:
        """The variables of SciPy's ``x`` (a plain array) that sit at a bound, as a mask."""
        return (self.lb - x >= -self.tol_lb) | (x - self.ub >= -self.tol_ub)

    def condition(self, stationarity: Callable) -> Callable:
        """``F(x)`` of the module's docstring, for ``stationarity(x) = grad f(x)``."""
        def kkt(x):
            active, pinned = self.pin(x)
            return where(active, subtract(x, pinned), stationarity(where(active, pinned, x)))
        return kkt

    def check(self, x: Any, g: Any) -> tuple:
        """``(problem, caveat)`` at SciPy's ``x`` with the gradient ``g`` (plain arrays): why
        ``x`` is no KKT point (None if it is one), and the variables at a degenerate bound
        (None if there are none)."""
        x, g = np.asarray(x, dtype=np.float64), np.asarray(g, dtype=np.float64)
        outside = np.flatnonzero((self.lb - x > np.maximum(self.tol_lb, 0.0))
                                 | (x - self.ub > np.maximum(self.tol_ub, 0.0)))
        if outside.size:
            return (f"x[{outside[0]}] = {x[outside[0]]:.6g} lies outside its bounds "
                    f"[{self.lb[outside[0]]:.6g}, {self.ub[outside[0]]:.6g}] (does the method "
                    "take bounds?)", None)
        at_lb, at_ub = self.lb - x >= -self.tol_lb, x - self.ub >= -self.tol_ub
        small = DEGENERATE * max(1.0, float(np.abs(g).max(initial=0.0)))
        inward = np.flatnonzero((at_lb & (g < -small)) | (at_ub & (g > small)))
        if inward.size:
            i = inward[0]
            return (f"x[{i}] sits at its {'lower' if at_lb[i] else 'upper'} bound with the "
                    f"gradient {g[i]:.3g} pointing into the box: not a KKT point", None)
        degenerate = np.flatnonzero((at_lb | at_ub) & (np.abs(g) <= small))
        if degenerate.size:
            where = ", ".join(f"x[{i}]" for i in degenerate)
            return None, (f"{where} sit(s) at a bound with a near-zero gradient (a degenerate "
                          "active set): the derivative there is one-sided; this one holds them "
                          "at the bound")
        return None, None

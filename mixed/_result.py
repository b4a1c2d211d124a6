"""The result of a Newton solve (:class:`OptimizeResult`, with SciPy's fields and
status codes) and what a solve reports while it runs: the results handed to the
callback after each step, and the lines ``disp=True`` prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["OptimizeResult"]


#: ``status`` codes, as SciPy's Newton-CG and trust-ncg number them.
SUCCESS, MAXITER, NO_PROGRESS, NOT_FINITE, IN_PROGRESS, STOPPED = 0, 1, 2, 3, -1, 99


@dataclass(repr=False)
class OptimizeResult:
    """The outcome of a solve, with SciPy's fields, read as attributes or as ``r["x"]``.

    Attributes
    ----------
    x : array
        The final point (the best one found).
    fun : float
        f at ``x``.
    jac : array
        The gradient of f at ``x``.
    nit : int
        Steps taken (for ``trust_region``, steps tried, taken or not).
    nfev, njev : int
        Evaluations of f and of its gradient (the same: one reverse pass gives both).
    nhev : int
        Hessian-vector products (SciPy's count of Hessian evaluations); on a
        small Dask ``x0``, CG's products with H formed at each point.
    status : int
        0 converged; 1 iteration limit; 2 no further progress possible (the
        line search failed, or the trust region collapsed); 3 f, its
        gradient or an H-product not finite; 99 the callback raised
        ``StopIteration``; -1 in the results handed to the callback.
    success : bool
        ``status == 0``.
    message : str
        What ended the solve, in words.

    Examples
    --------
    >>> import numpy as np
    >>> from mixed import newton_cg
    >>> r = newton_cg(lambda x: ((x - 2.0) ** 2).sum(), np.zeros(3))
    >>> r.x, r["status"], r.success
    (array([2., 2., 2.]), 0, True)
    """

    x: Any
    fun: float
    jac: Any
    nit: int
    nfev: int
    njev: int
    nhev: int
    status: int
    success: bool
    message: str

    def __getitem__(self, key: str) -> Any:
        if not isinstance(key, str) or key not in self.__dataclass_fields__:
            raise KeyError(f"OptimizeResult has no field {key!r}; its fields are "
                           f"{', '.join(self.__dataclass_fields__)}")
        return getattr(self, key)

    def keys(self) -> list[str]:
        return list(self.__dataclass_fields__)

    def __repr__(self) -> str:
        order = ("message", "success", "status", "fun", "x", "nit", "jac", "nfev", "njev", "nhev")
        width = max(map(len, order))
        indent = "\n" + " " * (width + 2)  # a multi-line value (an array) stays in its column
        return "\n".join(f"{name:>{width}}: " + _shown(getattr(self, name)).replace("\n", indent)
                         for name in order)


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else repr(value)


def _result(x, fval, g, nit: int, nfev: int, nhev: int, status: int, message: str) -> OptimizeResult:
    """A result; ``njev`` is ``nfev``, as each evaluation gives f and its gradient."""
    return OptimizeResult(x, fval, g, nit, nfev, nfev, nhev, status, status == SUCCESS, message)


def _progress(callback: Callable | None, x, fval, g, nit, nfev, nhev) -> OptimizeResult | None:
    """Hand the solve so far to ``callback`` (after each step); the final result
    if it asked to stop by raising ``StopIteration``, as SciPy's callbacks may."""
    if callback is None:
        return None
    try:
        callback(_result(x, fval, g, nit, nfev, nhev, IN_PROGRESS, "in progress"))
    except StopIteration:
        return _result(x, fval, g, nit, nfev, nhev, STOPPED, "stopped by the callback (StopIteration)")
    return None


class _Report:
    """What ``disp=True`` prints: a line per iteration, then a summary."""

    def __init__(self, disp: bool, columns: str):
        self.disp = bool(disp)
        if self.disp:
            print(f"{'nit':>5} {'f':>15} {'|grad f|':>10} {'nfev':>6} {'nhev':>7}{columns}")

    def step(self, it: int, fval: float, gnorm: float, nfev: int, nhev: int, extra: str = "") -> None:
        if self.disp:
            print(f"{it:5d} {fval:15.8e} {gnorm:10.3e} {nfev:6d} {nhev:7d}{extra}")

    def end(self, res: OptimizeResult) -> OptimizeResult:
        if self.disp:
            print(res.message if res.success else f"Warning: {res.message}")
            print(f"         Current function value: {res.fun:f}")
            for label, count in (("Iterations", res.nit), ("Function evaluations", res.nfev),
                                 ("Gradient evaluations", res.njev), ("Hessian evaluations", res.nhev)):
                print(f"         {label}: {count:d}")
        return res

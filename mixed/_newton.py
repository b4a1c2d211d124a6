"""Newton-type optimizers driven by Hessian-vector products.

Both run entirely on the backend of ``x0`` (NumPy or CuPy, float32 or
float64); the gradient and H v come from one forward-over-reverse pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import reverse
from dualad._dual import check_differentiable
from mixed._hvp import hvp as _hvp
from mixed._krylov import dot, steihaug_cg, truncated_cg

__all__ = ["OptimizeResult", "newton_cg", "trust_region"]


@dataclass
class OptimizeResult:
    """The outcome of a solve, with the fields SciPy users know."""

    x: Any
    fun: float
    jac: Any
    nit: int
    nfev: int
    nhvp: int
    success: bool
    message: str
    history: list = field(default_factory=list, repr=False)

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)


def _check_x0(x0: Any) -> Any:
    if type(x0) is float or getattr(x0, "ndim", None) != 1:
        raise ValueError(f"x0 must be a 1-d floating array, got {type(x0).__name__} "
                         f"with shape {getattr(x0, 'shape', ())}")
    check_differentiable(x0, "x0")
    return x0


def _norm(a: Any) -> float:
    return math.sqrt(dot(a, a))


def _value_and_grad(f: Callable) -> Callable:
    vg = reverse.value_and_grad(f)

    def call(x):
        value, g = vg(x)
        return float(value), g
    return call


def newton_cg(f: Callable, x0: Any, *, tol: float = 1e-8, maxiter: int = 200,
              cg_maxiter: int | None = None, c1: float = 1e-4) -> OptimizeResult:
    """Minimize ``f`` by matrix-free truncated Newton (Newton-CG) with a line search.

    Each outer step solves H p = -g by CG to a relative tolerance
    min(0.5, sqrt(|g|)) |g| (a superlinear forcing sequence), with H p from
    :func:`mixed.hvp`; negative curvature ends CG with a descent direction;
    a backtracking Armijo line search picks the step length.

    Parameters
    ----------
    f : callable
        Scalar objective of a 1-d array.
    x0 : array
        Starting point; its backend (NumPy or CuPy) and dtype are kept.
    tol : float
        Stop when the gradient's 2-norm is at most ``tol``.
    maxiter : int
        Maximum number of Newton steps.

    Examples
    --------
    >>> import numpy as np
    >>> from mixed import newton_cg
    >>> r = newton_cg(lambda x: ((x - 3.0) ** 2).sum() + (x ** 4).sum(), np.zeros(3))
    >>> bool(r.success), np.round(r.x, 6)
    (True, array([1., 1., 1.]))
    """
    x = _check_x0(x0)
    vg = _value_and_grad(f)
    n = x.shape[0]
    cg_maxiter = cg_maxiter or max(2 * n, 20)
    fval, g = vg(x)
    nfev, nhvp = 1, 0
    for it in range(maxiter + 1):
        gnorm = _norm(g)
        if not (math.isfinite(fval) and math.isfinite(gnorm)):
            return OptimizeResult(x, fval, g, it, nfev, nhvp, False,
                                  "non-finite objective or gradient")
        if gnorm <= tol:
            return OptimizeResult(x, fval, g, it, nfev, nhvp, True,
                                  f"gradient norm {gnorm:.3g} <= tol")
        if it == maxiter:
            break
        x_now = x
        p, used, finite = truncated_cg(lambda d: _hvp(f, x_now, d), g,
                                       min(0.5, math.sqrt(gnorm)) * gnorm, cg_maxiter)
        nhvp += used
        if not finite:
            return OptimizeResult(x, fval, g, it, nfev, nhvp, False,
                                  "non-finite Hessian-vector product")
        slope = dot(g, p)
        if slope >= 0:  # not a descent direction (inexact CG); fall back to -g
            p, slope = -g, -gnorm * gnorm
        step = 1.0
        for _ in range(60):
            f_new, g_new = vg(x + step * p)
            nfev += 1
            if math.isfinite(f_new) and f_new <= fval + c1 * step * slope:
                break
            step *= 0.5
        else:
            return OptimizeResult(x, fval, g, it, nfev, nhvp, False,
                                  "line search found no decrease")
        x, fval, g = x + step * p, f_new, g_new
    return OptimizeResult(x, fval, g, maxiter, nfev, nhvp, False,
                          f"maximum number of iterations ({maxiter}) reached")


def trust_region(f: Callable, x0: Any, *, tol: float = 1e-8, maxiter: int = 500,
                 initial_radius: float = 1.0, max_radius: float = 1e4, eta: float = 0.15,
                 cg_maxiter: int | None = None) -> OptimizeResult:
    """Minimize ``f`` by a trust-region Newton method with Steihaug-CG steps.

    Examples
    --------
    >>> import numpy as np
    >>> from mixed import trust_region
    >>> r = trust_region(lambda x: ((x - 3.0) ** 2).sum() + (x ** 4).sum(), np.zeros(3))
    >>> bool(r.success), np.round(r.x, 6)
    (True, array([1., 1., 1.]))
    """
    x = _check_x0(x0)
    if not 0 <= eta < 0.25:
        raise ValueError(f"eta must be in [0, 0.25), got {eta}")
    if not 0 < initial_radius <= max_radius:
        raise ValueError(f"need 0 < initial_radius <= max_radius, got {initial_radius} and {max_radius}")
    vg = _value_and_grad(f)
    n = x.shape[0]
    cg_maxiter = cg_maxiter or max(2 * n, 20)
    radius = initial_radius
    fval, g = vg(x)
    nfev, nhvp = 1, 0
    for it in range(maxiter + 1):
        gnorm = _norm(g)
        if not (math.isfinite(fval) and math.isfinite(gnorm)):
            return OptimizeResult(x, fval, g, it, nfev, nhvp, False,
                                  "non-finite objective or gradient")
        if gnorm <= tol:
            return OptimizeResult(x, fval, g, it, nfev, nhvp, True,
                                  f"gradient norm {gnorm:.3g} <= tol")
        if it == maxiter:
            break
        x_now = x
        p, hp, used, finite = steihaug_cg(lambda d: _hvp(f, x_now, d), g, radius,
                                          min(0.5, math.sqrt(gnorm)) * gnorm, cg_maxiter)
        nhvp += used
        if not finite:
            return OptimizeResult(x, fval, g, it, nfev, nhvp, False,
                                  "non-finite Hessian-vector product")
        predicted = -(dot(g, p) + 0.5 * dot(p, hp))
        f_new, g_new = vg(x + p)
        nfev += 1
        actual = fval - f_new if math.isfinite(f_new) else -math.inf
        rho = actual / predicted if predicted > 0 else -1.0
        pnorm = _norm(p)
        if rho < 0.25:
            radius = 0.25 * pnorm
            if radius < 1e-14 * max(1.0, _norm(x)):
                return OptimizeResult(x, fval, g, it, nfev, nhvp, False,
                                      "trust region collapsed (no decrease possible)")
        elif rho > 0.75 and pnorm >= 0.99 * radius:
            radius = min(2.0 * radius, max_radius)
        if rho > eta:
            x, fval, g = x + p, f_new, g_new
    return OptimizeResult(x, fval, g, maxiter, nfev, nhvp, False,
                          f"maximum number of iterations ({maxiter}) reached")



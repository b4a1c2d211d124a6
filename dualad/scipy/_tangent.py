"""The linear solves of the implicit derivatives: with ``dF/dx`` (``tangent_solve``).

``dF/dx`` is only ever applied to vectors (forward mode, or reverse mode for its
transpose). Up to :data:`DENSE_MAX` unknowns it is assembled from ``n`` products and
solved densely, after its condition number is read; beyond, a Krylov method solves
with the products alone (MINRES where ``dF/dx`` is symmetric, a Hessian; GMRES
otherwise). Either way a Jacobian that is singular at the solution (the solution does
not determine its derivative) raises, and an ill-conditioned one warns: never a
silent wrong derivative.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

from dualad._base.backend import NUMPY_XP, scipy_module

__all__ = ["DENSE_MAX", "ILL_CONDITIONED", "KRYLOV_RTOL", "tangent_solver"]

DENSE_MAX = 200          # unknowns up to which dF/dx is assembled (n products) and factorized
ILL_CONDITIONED = 1e10   # a condition number above which the derivative warns: digits are lost
KRYLOV_RTOL = 1e-10      # the Krylov methods' relative residual for the derivative's solve


def tangent_solver(who: str, symmetric: bool) -> Callable:
    """``tangent_solve(g, y)``: ``z`` with ``g(z) = y`` for the linear ``g`` (``dF/dx`` or
    its transpose, on plain NumPy arrays of the unknowns' shape), for the function ``who``."""
    def tangent_solve(g: Callable, y: Any) -> Any:
        y = np.asarray(y)
        if y.size <= DENSE_MAX:
            return _dense(g, y, who)
        return _krylov(g, y, who, symmetric)
    return tangent_solve


def _dense(g: Callable, y: np.ndarray, who: str) -> np.ndarray:
    n = y.size
    jac = np.empty((n, n), dtype=np.result_type(y.dtype, np.float64))
    for j, e in enumerate(np.eye(n, dtype=jac.dtype)):
        jac[:, j] = np.ravel(g(e.reshape(y.shape)))
    if n == 0:
        return np.zeros_like(y)
    s = np.linalg.svd(jac, compute_uv=False)
    cond = np.inf if s[-1] == 0 else s[0] / s[-1]
    if not np.isfinite(cond) or cond * np.finfo(jac.dtype).eps * n >= 1.0:
        raise np.linalg.LinAlgError(
            f"{who}: the Jacobian of the solution's condition in the unknowns (dF/dx) is singular "
            f"at the solution (condition number {cond:.3g}), so the solution does not determine "
            "its derivative: the problem is degenerate there (a non-isolated root, a flat minimum)")
    if cond > ILL_CONDITIONED:
        warnings.warn(f"{who}: dF/dx is ill-conditioned at the solution (condition number "
                      f"{cond:.3g}); the derivative may have lost about {int(np.log10(cond))} digits",
                      RuntimeWarning, stacklevel=2)
    return np.linalg.solve(jac, y.ravel()).reshape(y.shape).astype(y.dtype, copy=False)


def _krylov(g: Callable, y: np.ndarray, who: str, symmetric: bool) -> np.ndarray:
    spla = scipy_module(NUMPY_XP, "sparse.linalg", who)
    n = y.size
    op = spla.LinearOperator((n, n), matvec=lambda v: np.ravel(g(v.reshape(y.shape))), dtype=y.dtype)
    method, name = (spla.minres, "MINRES") if symmetric else (spla.gmres, "GMRES")
    z, info = method(op, y.ravel(), rtol=KRYLOV_RTOL, maxiter=10 * n)
    if info != 0:
        raise np.linalg.LinAlgError(
            f"{who}: {name} with dF/dx did not converge at the solution (info={info}): dF/dx is "
            "singular or ill-conditioned there, so the derivative cannot be trusted")
    return z.reshape(y.shape)

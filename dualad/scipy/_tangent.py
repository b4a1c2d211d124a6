"""The linear solves of the implicit derivatives: with ``dF/dx`` (``tangent_solve``).

Up to :data:`DENSE_MAX` unknowns ``dF/dx`` is built as a matrix in one forward-mode
pass (:meth:`dualad._implicit.operators.JacobianProduct.matrix`), factorized once
(Cholesky where it is symmetric and positive definite, a Hessian at a minimum; LU
otherwise) after its condition number is estimated from the factors, and the
factorization is kept for every solve at the same solution: the tangents of a
``jacfwd`` chunk (one stack of right-hand sides, one LAPACK call), the cotangent of a
VJP (the transposed solve, by the same factors), and the solves of a second
derivative. Beyond, a Krylov method solves with the products alone (MINRES where
``dF/dx`` is symmetric; GMRES otherwise), one right-hand side at a time. Either way a
Jacobian that is singular at the solution (the solution does not determine its
derivative) raises, and an ill-conditioned one warns: never a silent wrong derivative.
The systems are real, as SciPy's solutions are: a complex ``dF/dx`` or right-hand side
is refused (``TypeError``) rather than cast to float64, which would drop its imaginary
part.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Callable

import numpy as np

from dualad._base.backend import NUMPY_XP, scipy_module, to_host
from dualad._base.shapes import ndim_of, raw, shape_of
from dualad.scipy._host import Host

__all__ = ["DENSE_MAX", "ILL_CONDITIONED", "KRYLOV_RTOL", "Factorization", "tangent_solver"]

DENSE_MAX = 200          # unknowns up to which dF/dx is built as a matrix and factorized
ILL_CONDITIONED = 1e10   # a condition number above which the derivative warns: digits are lost
KRYLOV_RTOL = 1e-10      # the Krylov methods' relative residual for the derivative's solve


def tangent_solver(who: str, symmetric: bool) -> Callable:
    """``tangent_solve(g, y)``: ``z`` with ``g(z) = y`` for ``g`` a
    :class:`~dualad._implicit.operators.JacobianProduct` (``dF/dx`` or its transpose at
    a solution, on raw arrays), for the function ``who``. ``y`` is of the unknowns' shape,
    or a stack of such right-hand sides (``stacked``: the tangents of a ``jacfwd`` chunk).
    The last solution's factorization is kept (:class:`Factorization`). The solves run
    on NumPy: arrays of another library are copied to the host, and ``z`` is NumPy's."""
    kept: list = []  # [Factorization] of the last point solved at

    def tangent_solve(g: Any, y: Any) -> Any:
        y = _real(y, who, "the right-hand side of the derivative's solve (a tangent or cotangent)")
        x, host = g.point[0], Host(g.point[0])  # z in the solution's library, on its device
        if math.prod(shape_of(x)) > DENSE_MAX:
            if np.ndim(y) > ndim_of(x):
                z = np.stack([_krylov(g, row, who, symmetric, host) for row in y]) if len(y) else y
            else:
                z = _krylov(g, y, who, symmetric, host)
            return host.to_user(z)
        if not (kept and kept[0].at(g.point)):
            kept[:] = [Factorization(g.point, g.matrix(), who, symmetric)]
        return host.to_user(kept[0].solve(y, g.transposed))
    tangent_solve.stacked = True
    tangent_solve.factorizes_up_to = DENSE_MAX
    return tangent_solve


class Factorization:
    """``dF/dx`` at ``point`` (the solution and the operands, plain arrays), factorized.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad.scipy._tangent import Factorization
    >>> lu = Factorization((), np.array([[2.0, 1.0], [0.0, 4.0]]), "example", symmetric=False)
    >>> lu.solve(np.array([1.0, 4.0]), transposed=True)   # A^T z = y
    array([0.5  , 0.875])
    """

    __slots__ = ("point", "shape", "factors", "cholesky", "who")

    def __init__(self, point: tuple, matrix: Any, who: str, symmetric: bool):
        la = scipy_module(NUMPY_XP, "linalg", who)
        self.point, self.who = point, who
        a = _real(raw(matrix), who, "dF/dx at the solution").astype(np.float64, copy=False)
        self.shape = a.shape
        # LAPACK's 1-norm (the condition estimate's too) is finite only where every entry
        # is (NaN and inf propagate through it); a column sum past the largest float is
        # told apart by the test of the entries themselves
        lange, = la.get_lapack_funcs(("lange",), (a,))
        anorm = float(lange("1", a)) if a.size else 0.0
        if not np.isfinite(anorm) and not np.all(np.isfinite(a)):
            raise FloatingPointError(f"{who}: dF/dx at the solution holds non-finite entries "
                                     "(inf or nan), so the derivative cannot be computed")
        # LAPACK's routines themselves: SciPy's lu_factor and lu_solve (their checks and
        # stacked-array handling) cost more than the factorization at tens of unknowns
        self.cholesky = False
        if symmetric and a.size:
            potrf, = la.get_lapack_funcs(("potrf",), (a,))
            c, info = potrf(a)
            # info > 0: not positive definite (a saddle point, or singular): LU below
            self.cholesky = info == 0
            self.factors = (c, False)  # the upper triangle, A = C^T C
        if not a.size:  # no unknowns: nothing to factorize (LAPACK would print an error)
            self.factors = (a, None)
        elif not self.cholesky:
            getrf, = la.get_lapack_funcs(("getrf",), (a,))
            lu, piv, _ = getrf(a)  # info > 0, an exactly zero pivot: the rcond below says so
            self.factors = (lu, piv)
        self._check(la, a, anorm)

    def _check(self, la: Any, a: np.ndarray, anorm: float) -> None:
        n = a.shape[0]
        if n == 0:
            return
        if self.cholesky:
            pocon, = la.get_lapack_funcs(("pocon",), (a,))
            rcond, _ = pocon(self.factors[0], anorm, uplo="L" if self.factors[1] else "U")
        else:
            gecon, = la.get_lapack_funcs(("gecon",), (a,))
            rcond, _ = gecon(self.factors[0], anorm)
        cond = np.inf if rcond == 0 or not np.isfinite(rcond) else 1.0 / rcond
        if not np.isfinite(cond) or cond * np.finfo(a.dtype).eps * n >= 1.0:
            raise np.linalg.LinAlgError(
                f"{self.who}: the Jacobian of the solution's condition in the unknowns (dF/dx) is "
                f"singular at the solution (condition number {cond:.3g}), so the solution does not "
                "determine its derivative: the problem is degenerate there (a non-isolated root, "
                "a flat minimum)")
        if cond > ILL_CONDITIONED:
            warnings.warn(f"{self.who}: dF/dx is ill-conditioned at the solution (condition number "
                          f"{cond:.3g}); the derivative may have lost about {int(np.log10(cond))} "
                          "digits", RuntimeWarning, stacklevel=4)

    def at(self, point: tuple) -> bool:
        """Whether ``point`` is the one factorized (the same arrays, not equal ones)."""
        return len(point) == len(self.point) and all(a is b for a, b in zip(point, self.point))

    def solve(self, y: Any, transposed: bool) -> Any:
        """``z`` with ``A z = y`` (``A^T z = y`` where ``transposed``), of ``y``'s shape and
        dtype: ``y`` one right-hand side, or a stack of them (its rows, of ``A``'s size
        each), solved at once."""
        y = _real(y, self.who, "the right-hand side of the derivative's solve")
        if not y.size:
            return np.zeros_like(y)
        la = scipy_module(NUMPY_XP, "linalg", self.who)
        b = y.reshape(-1, self.shape[0]).T.astype(np.float64)  # a column per right-hand side
        if self.cholesky:
            potrs, = la.get_lapack_funcs(("potrs",), (b,))
            z, _ = potrs(self.factors[0], b, lower=self.factors[1])
        else:
            getrs, = la.get_lapack_funcs(("getrs",), (b,))
            z, _ = getrs(*self.factors, b, trans=1 if transposed else 0)
        return z.T.reshape(y.shape).astype(y.dtype, copy=False)


def _real(a: Any, who: str, name: str) -> np.ndarray:
    """``a`` as a NumPy array (a host copy of another library's), refused where it is
    complex: the solves here are real (SciPy's solutions are real vectors), and a cast to
    float64 would drop the imaginary part."""
    a = np.asarray(a) if isinstance(a, np.ndarray) else to_host(a)
    if np.iscomplexobj(a):
        raise TypeError(f"{who}: {name} must be real (a floating dtype), got {a.dtype}: the "
                        "implicit derivative solves real systems; does the function return "
                        "complex values, or close over complex parameters?")
    return a


def _krylov(g: Callable, y: np.ndarray, who: str, symmetric: bool, host: Host) -> np.ndarray:
    spla = scipy_module(NUMPY_XP, "sparse.linalg", who)
    n = y.size

    def matvec(v: np.ndarray) -> np.ndarray:  # the products in the solution's library
        product = g(host.to_user(v.reshape(y.shape)))
        return np.ravel(_real(product, who, "dF/dx times a vector"))
    op = spla.LinearOperator((n, n), matvec=matvec, dtype=y.dtype)
    method, name = (spla.minres, "MINRES") if symmetric else (spla.gmres, "GMRES")
    z, info = method(op, y.ravel(), rtol=KRYLOV_RTOL, maxiter=10 * n)
    if info != 0:
        raise np.linalg.LinAlgError(
            f"{who}: {name} with dF/dx did not converge at the solution (info={info}): dF/dx is "
            "singular or ill-conditioned there, so the derivative cannot be trusted")
    return z.reshape(y.shape)

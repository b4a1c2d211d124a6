"""Triangular and orthogonal factorizations: ``cholesky``, ``qr`` and ``lu``."""

from __future__ import annotations

from dualad._base.backend import scipy_module
from dualad._base.core import bind
from dualad._base.shapes import ndim_of, shape_of
from dualad._primitives import shape as _shape
from dualad._primitives.linalg.common import (
    _T,
    QRResult,
    _add,
    _mul,
    _neg,
    _real_only,
    _sub,
    _sym,
    _tril_mask,
    check_matrix,
    eye_like,
)
from dualad._primitives.linalg.matmul import matmul
from dualad._primitives.linalg.solve import _solve_m
from dualad._table.entries import custom

__all__ = ["cholesky", "qr", "lu"]


# -- cholesky ------------------------------------------------------------------------------
def _phi(x):
    """The lower triangle of ``x`` with its diagonal halved."""
    n = shape_of(x)[-1]
    return _mul(x, _sub(_tril_mask(x, n), _mul(eye_like(x, n), 0.5)))


def _cholesky_jvp(primals, tangents, ans):
    # A = L L^T  =>  dL = L phi(L^-1 dA L^-T), with dA symmetrized.
    (ta,), low = tangents, ans
    y = _solve_m(low, _sym(ta))
    return matmul(low, _phi(_T(_solve_m(low, _T(y)))))


def _cholesky_vjp(g, ans, a):
    # The transpose of the JVP: gA = sym(L^-T phi(L^T g) L^-1).
    low_t = _T(ans)
    m = _solve_m(low_t, _phi(matmul(low_t, g)))
    return (_sym(_T(_solve_m(low_t, _T(m)))),)


_cholesky_p = custom("cholesky", lambda xp, a: xp.linalg.cholesky(a),
                     jvp=_cholesky_jvp, vjp=_cholesky_vjp, chunked=True,
                     saves="output", fresh=True, core_ndims=(2,))


def cholesky(a, /, *, upper=False):
    """The Cholesky factor of symmetric positive definite matrices, as ``numpy.linalg.cholesky``.

    Returns the lower triangular ``L`` with ``a = L @ L.T`` (``upper=True``:
    its transpose). Only one triangle of ``a`` is read, so the derivative is
    that of ``cholesky((a + a.T) / 2)``: it assumes ``a`` symmetric and
    symmetrizes the perturbation (the same convention as JAX).

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import derivative, ops
    >>> float(derivative(lambda s: ops.linalg.cholesky(s * np.eye(2))[1, 1])(4.0))
    0.25
    """
    _real_only(a, "cholesky")
    check_matrix(a, "cholesky")
    low = bind(_cholesky_p, a)
    return _T(low) if upper else low


# -- qr ---------------------------------------------------------------------------------------
def _qr_impl(xp, a):
    q, r = xp.linalg.qr(a)
    return q, r


def _qr_jvp(primals, tangents, ans):
    # See J. Townsend, "Differentiating the QR decomposition" (2018); m >= n.
    (ta,), (q, r) = tangents, ans
    n = shape_of(r)[-1]
    x = _T(_solve_m(_T(r), _T(ta)))  # dA R^-1
    c = matmul(_T(q), x)
    low = _mul(c, _tril_mask(c, n, -1))
    omega = _sub(low, _T(low))  # antisymmetric: Q^T dQ
    dq = _add(matmul(q, _sub(omega, c)), x)
    dr = matmul(_sub(c, omega), r)
    return dq, dr


def _qr_vjp(g, ans, a):
    # The transpose of the JVP: with M = Q^T gQ - gR R^T,
    # gA = (Q (tril(M - M^T, -1) - M) + gQ) R^-T.
    (gq, gr), (q, r) = g, ans
    if gq is None and gr is None:
        return (None,)
    n = shape_of(r)[-1]
    m = None
    if gq is not None:
        m = matmul(_T(q), gq)
    if gr is not None:
        term = _neg(matmul(gr, _T(r)))
        m = term if m is None else _add(m, term)
    inner = _sub(_mul(_sub(m, _T(m)), _tril_mask(m, n, -1)), m)
    big = matmul(q, inner)
    if gq is not None:
        big = _add(big, gq)
    return (_T(_solve_m(r, _T(big))),)


_qr_p = custom("qr", _qr_impl, jvp=_qr_jvp, vjp=_qr_vjp, chunked=True,
               multiple_results=True, saves="output", fresh=True, core_ndims=(2,))


def qr(a, mode="reduced"):
    """The reduced QR decomposition, as ``numpy.linalg.qr``.

    Parameters
    ----------
    a : (..., m, n) array or value type, with ``m >= n`` and full column rank.
    mode : {"reduced", "r", "complete"}
        ``"reduced"`` returns ``(Q, R)`` with ``Q`` of shape (..., m, n);
        ``"r"`` returns ``R`` alone; ``"complete"`` is accepted for square
        matrices only (where it equals ``"reduced"``): a complete ``Q`` of a
        tall matrix has no unique derivative.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp, ops
    >>> a = np.array([[3.0, 0.0], [4.0, 5.0], [0.0, 0.0]])
    >>> (q, r), (dq, dr) = jvp(lambda a: ops.linalg.qr(a), (a,), (np.ones_like(a),))
    >>> bool(np.allclose(dq @ r + q @ dr, np.ones_like(a)))
    True
    """
    _real_only(a, "qr")
    check_matrix(a, "qr", square=False)
    m, n = shape_of(a)[-2:]
    if mode not in ("reduced", "r", "complete"):
        raise ValueError(f"qr: mode must be 'reduced', 'r' or 'complete', got {mode!r}")
    if mode == "complete" and m != n:
        raise ValueError(f"qr: mode='complete' of a non-square matrix (shape {shape_of(a)}) "
                         "has no unique derivative; use mode='reduced'")
    if m < n:
        raise ValueError(f"qr: a must have at least as many rows as columns (m >= n) to be "
                         f"differentiated, got shape {shape_of(a)} (m = {m}, n = {n})")
    q, r = bind(_qr_p, a)
    return r if mode == "r" else QRResult((q, r))


# -- lu ----------------------------------------------------------------------------------------
def _lu_impl(xp, a):
    module = scipy_module(xp, "linalg", "lu")
    if a.ndim == 2 or module.__name__ == "scipy.linalg":  # SciPy (>= 1.11) takes a batch
        p, low, up = module.lu(a)
        return p, low, up
    # cupyx.scipy.linalg.lu takes one matrix at a time.
    parts = zip(*[module.lu(m) for m in xp.reshape(a, (-1,) + tuple(a.shape[-2:]))])
    return tuple(xp.reshape(xp.stack(ps), tuple(a.shape[:-2]) + tuple(ps[0].shape)) for ps in parts)


def _widths(nd, rows=0, cols=0):
    """``pad_width`` that adds ``rows`` and ``cols`` zeros at the end of a stack of matrices."""
    return ((0, 0),) * (nd - 2) + ((0, rows), (0, cols))


def _lu_square(low, up):
    """``L`` (m x k) and ``U`` (k x n) completed to invertible square matrices: identity
    in the extra columns of ``L`` (m x m) and in the extra rows of ``U`` (n x n)."""
    m, k = shape_of(low)[-2:]
    n = shape_of(up)[-1]
    if m > k:
        low = _add(_shape.pad(low, _widths(ndim_of(low), cols=m - k)),
                   _shape.pad(eye_like(low, m - k), ((k, 0), (k, 0))))
    if n > k:
        up = _add(_shape.pad(up, _widths(ndim_of(up), rows=n - k)),
                  _shape.pad(eye_like(up, n - k), ((k, 0), (k, 0))))
    return low, up


def _lu_jvp(primals, tangents, ans):
    # A = P L U  =>  with F = L^-1 P^T dA U^-1 (L, U completed to square),
    # dL = L tril(F, -1) and dU = triu(F) U, cut to L's columns and U's rows
    # (JAX's lu_jvp_rule). P is constant: it has no derivative.
    (ta,), (p, low, up) = tangents, ans
    m, k = shape_of(low)[-2:]
    n = shape_of(up)[-1]
    low_sq, up_sq = _lu_square(low, up)
    f = _T(_solve_m(_T(up_sq), _T(_solve_m(low_sq, matmul(_T(p), ta)))))
    strict = _tril_mask(low, m, -1, cols=n)
    dl = matmul(low_sq, _mul(f, strict))
    du = matmul(_mul(f, _sub(1.0, strict)), up_sq)
    return None, dl[..., :k] if n > k else dl, du[..., :k, :] if m > k else du


def _lu_vjp(g, ans, a):
    # The transpose of the JVP (plain transposes for complex, as JAX): with gL and
    # gU padded with zeros to m x n, M = tril(L^T gL, -1) + triu(gU U^T) and
    # gA = P L^-T M U^-T.
    (_, gl, gu), (p, low, up) = g, ans
    if gl is None and gu is None:
        return (None,)
    m, k = shape_of(low)[-2:]
    n = shape_of(up)[-1]
    low_sq, up_sq = _lu_square(low, up)
    strict = _tril_mask(low, m, -1, cols=n)
    inner = None
    if gl is not None:
        if n > k:
            gl = _shape.pad(gl, _widths(ndim_of(gl), cols=n - k))
        inner = _mul(matmul(_T(low_sq), gl), strict)
    if gu is not None:
        if m > k:
            gu = _shape.pad(gu, _widths(ndim_of(gu), rows=m - k))
        term = _mul(matmul(gu, _T(up_sq)), _sub(1.0, strict))
        inner = term if inner is None else _add(inner, term)
    y = _solve_m(_T(low_sq), inner)
    return (matmul(p, _T(_solve_m(up_sq, _T(y)))),)


_lu_p = custom("lu", _lu_impl, jvp=_lu_jvp, vjp=_lu_vjp, chunked=True,
               multiple_results=True, saves="output", fresh=True, core_ndims=(2,))


def lu(a, permute_l=False):
    """The LU decomposition with partial pivoting ``a = P @ L @ U``, as ``scipy.linalg.lu``.

    Parameters
    ----------
    a : (..., m, n) array or value type
        Matrices of any shape; a leading batch is decomposed matrix by matrix.
    permute_l : bool
        Return ``(P @ L, U)`` instead of ``(P, L, U)``.

    Returns
    -------
    P : (..., m, m) array
        A permutation matrix, constant: it has no derivative. As SciPy's, it
        has the real dtype of ``a`` (float64 for complex128 input).
    L : (..., m, k) unit lower trapezoidal, ``k = min(m, n)``.
    U : (..., k, n) upper trapezoidal.

    Values come from ``scipy.linalg.lu`` on NumPy arrays and from
    ``cupyx.scipy.linalg.lu`` on CuPy; other namespaces (``array_api_strict``)
    have no LU and raise NotImplementedError.

    The derivative is that of ``L`` and ``U`` for the pivoting chosen at ``a``;
    it needs the leading ``k x k`` block of ``P.T @ a`` to be nonsingular
    (``U``'s diagonal nonzero), and changes where a pivot would change.
    Complex matrices follow JAX's convention (the VJP is the plain transpose
    of the JVP).

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp, ops
    >>> a = np.array([[1.0, 2.0], [4.0, 3.0]])
    >>> (p, l, u), (dp, dl, du) = jvp(ops.linalg.lu, (a,), (np.eye(2),))
    >>> p.tolist(), l.tolist(), u.tolist()
    ([[0.0, 1.0], [1.0, 0.0]], [[1.0, 0.0], [0.25, 1.0]], [[4.0, 3.0], [0.0, 1.25]])
    >>> bool(np.allclose(p @ (dl @ u + l @ du), np.eye(2)))
    True
    """
    check_matrix(a, "lu", square=False)
    p, low, up = bind(_lu_p, a)
    return (matmul(p, low), up) if permute_l else (p, low, up)

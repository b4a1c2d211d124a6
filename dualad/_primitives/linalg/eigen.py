"""Eigenvalues and eigenvectors: ``eigh`` (and ``eigvalsh``), ``eig`` (and ``eigvals``)."""

from __future__ import annotations

import math

from dualad._base.core import bind
from dualad._base.shapes import is_complex, shape_of
from dualad._primitives import elementwise as _ew
from dualad._primitives import shape as _shape
from dualad._primitives.indexing import native_indexing
from dualad._primitives.linalg.common import (
    _H,
    _T,
    EighResult,
    EigResult,
    _add,
    _col,
    _diag_embed,
    _div,
    _eye_mask,
    _mul,
    _row,
    _sub,
    _tril_mask,
    check_matrix,
    diag_part,
)
from dualad._primitives.linalg.matmul import matmul
from dualad._primitives.linalg.solve import inv
from dualad._table.entries import custom

__all__ = ["eigh", "eigvalsh", "eig", "eigvals"]


# -- eigh ------------------------------------------------------------------------------------
def _eigh_impl(xp, a, *, upper=False):
    # The rules read the lower triangle of ``a``; ``upper`` says ``a`` is the conjugate
    # transpose of the user's matrix, whose upper triangle NumPy and CuPy then read
    # themselves, so that the eigenvectors carry the signs (phases) numpy.linalg.eigh(a, "U")
    # gives (LAPACK's depend on the triangle). The array API's eigh reads the lower
    # triangle only.
    if upper and native_indexing(xp):
        user = xp.swapaxes(a, -1, -2)
        w, v = xp.linalg.eigh(xp.conj(user) if user.dtype.kind == "c" else user, UPLO="U")
    else:
        w, v = xp.linalg.eigh(a)
    return w, v


def _gap_inverse(w):
    """``F[..., i, j] = 1 / (w_j - w_i)`` off the diagonal, 0 on it, inf for ties."""
    n = shape_of(w)[-1]
    on_diag = _eye_mask(w, n)
    diff = _sub(_row(w), _col(w))
    tie = _ew.logical_or(_ew.equal(diff, 0), on_diag)  # no division by 0 (and no warning)
    inverse = _ew.where(tie, math.inf, _ew.reciprocal(_ew.where(tie, 1.0, diff)))
    return _ew.where(on_diag, 0.0, inverse)


def _mul_or_zero(f, m):
    """``f * m``, and 0 where ``m`` is exactly 0 even if ``f`` is inf there.

    At tied eigenvalues (singular values) ``f`` is inf; a zero coefficient --
    a direction that does not mix the tied pair, or a zero cotangent that the
    tape materializes for an unused output -- then contributes 0, not nan.
    Only such an inf is replaced, so that elsewhere the product keeps its own
    derivative where ``m`` is 0 (a second derivative at a diagonal matrix).
    """
    return _mul(_ew.where(_ew.logical_and(_ew.isinf(f), _ew.equal(m, 0)), 0.0, f), m)


def _div_or_zero(m, s):
    """``m / s``, and 0 where ``m`` is exactly 0 even if ``s`` is 0 there (elsewhere
    the quotient keeps its own derivative, as in :func:`_mul_or_zero`)."""
    return _div(m, _ew.where(_ew.logical_and(_ew.equal(s, 0), _ew.equal(m, 0)), 1.0, s))


def _from_lower(x):
    """The Hermitian (for real ``x``: symmetric) matrix that eigh reads from the
    lower triangle of ``x``: ``tril(x) + tril(x, -1)^H``, less the imaginary part
    of the diagonal, which LAPACK does not read."""
    n = shape_of(x)[-1]
    if not is_complex(x):
        return _add(_mul(x, _tril_mask(x, n)), _T(_mul(x, _tril_mask(x, n, -1))))
    strict = _mul(x, _tril_mask(x, n, -1))
    return _add(_add(strict, _H(strict)), _diag_embed(_ew.real(diag_part(x))))


def _from_lower_transpose(b):
    """The transpose of :func:`_from_lower` (``Re sum(b * from_lower(x)) = Re sum(
    from_lower_transpose(b) * x)``): ``tril(b) + tril(b^H, -1)``, with the real part
    of the diagonal."""
    n = shape_of(b)[-1]
    if not is_complex(b):
        return _add(_mul(b, _tril_mask(b, n)), _mul(_T(b), _tril_mask(b, n, -1)))
    strict = _mul(_add(b, _H(b)), _tril_mask(b, n, -1))
    return _add(strict, _diag_embed(_ew.real(diag_part(b))))


def _eigh_jvp(primals, tangents, ans, *, upper=False):
    # A = V diag(w) V^H  =>  dw = Re diag(S), dV = V (F * S), S = V^H dA V, where dA is
    # the Hermitian perturbation eigh reads: the lower triangle of the tangent. The
    # imaginary diagonal of V^H dV, a change of the eigenvectors' phases, is 0 (JAX's).
    (ta,), (w, v) = tangents, ans
    s = matmul(_H(v), matmul(_from_lower(ta), v))
    return _ew.real(diag_part(s)), matmul(v, _mul_or_zero(_gap_inverse(w), s))


def _eigh_vjp(g, ans, a, *, upper=False):
    # The transpose of the JVP for the pairing Re sum(x * y) (JAX's, no conjugation):
    # gA = from_lower_transpose(conj(V) M V^T), M = diag(gw) + F * (V^T gV).
    (gw, gv), (w, v) = g, ans
    inner = None if gw is None else _diag_embed(gw)
    if gv is not None:  # skipped when only w is used, so ties cost nothing then
        term = _mul_or_zero(_gap_inverse(w), matmul(_T(v), gv))
        inner = term if inner is None else _add(inner, term)
    if inner is None:
        return (None,)
    return (_from_lower_transpose(matmul(_ew.conj(v), matmul(inner, _T(v)))),)


_eigh_p = custom("eigh", _eigh_impl, jvp=_eigh_jvp, vjp=_eigh_vjp,
                 chunked=True, multiple_results=True, saves="output", fresh=True, core_ndims=(2,))


def eigh(a, UPLO="L"):
    """Eigenvalues (ascending) and eigenvectors of Hermitian (real: symmetric)
    matrices, as ``numpy.linalg.eigh``.

    Returns a named tuple ``(eigenvalues, eigenvectors)``; the eigenvalues are real.

    Only the ``UPLO`` triangle of ``a`` is read, as NumPy reads it, and the
    derivative is that of the function computed: a perturbation of the other
    triangle changes nothing (nor one of the imaginary part of the diagonal, for
    complex ``a``). Eigenvectors are defined up to sign (complex ones up to a
    phase); functions of them that do not depend on it (``V diag(f(w)) V^H``,
    ``|V|``) have well-defined derivatives, and the derivatives of complex
    eigenvectors follow JAX's convention (the phase does not move). Where two
    eigenvalues coincide the eigenvectors are not differentiable and their
    derivative is inf/nan; the eigenvalues' derivative stays finite.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp, ops
    >>> a = np.diag([1.0, 3.0])
    >>> (w, v), (dw, dv) = jvp(ops.linalg.eigh, (a,), (np.array([[1.0, 0.0], [0.0, 2.0]]),))
    >>> dw.tolist()
    [1.0, 2.0]
    >>> h = np.array([[2.0, 1j], [-1j, 2.0]])  # Hermitian: eigenvalues 1 and 3
    >>> (w, v), (dw, dv) = jvp(ops.linalg.eigh, (h,), (np.array([[0.0, 1j], [-1j, 0.0]]),))
    >>> w.tolist(), dw.round(12).tolist()
    ([1.0, 3.0], [-1.0, 1.0])
    """
    check_matrix(a, "eigh")
    if UPLO not in ("L", "U"):
        raise ValueError(f"eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    if UPLO == "U":  # the rules read the lower triangle; that of a^H is a's upper, conjugated
        a = _H(a)
    return EighResult(bind(_eigh_p, a, upper=UPLO == "U"))


# -- eig ------------------------------------------------------------------------------------------
def _eig_jvp(primals, tangents, ans):
    # A V = V diag(w)  =>  dw = diag(M), dV = V (F * M) with M = V^-1 dA V, then the
    # part that would change each column's unit norm removed, as NumPy normalizes them.
    (ta,), (w, v) = tangents, ans
    m = matmul(inv(v), matmul(ta, v))
    du = matmul(v, _mul_or_zero(_gap_inverse(w), m))
    stretch = _ew.real(_shape.sum(_mul(_ew.conj(v), du), axis=-2))
    return diag_part(m), _sub(du, _mul(v, _row(stretch)))


def _eig_vjp(g, ans, a):
    (gw, gv), (w, v) = g, ans
    inner = None if gw is None else _diag_embed(gw)
    if gv is not None:
        stretch = _ew.real(_shape.sum(_mul(v, gv), axis=-2))
        gu = _sub(gv, _mul(_ew.conj(v), _row(stretch)))
        term = _mul_or_zero(_gap_inverse(w), matmul(_T(v), gu))
        inner = term if inner is None else _add(inner, term)
    if inner is None:
        return (None,)
    return (matmul(_T(inv(v)), matmul(inner, _T(v))),)


_eig_p = custom("eig", lambda xp, a: tuple(xp.linalg.eig(a)), jvp=_eig_jvp, vjp=_eig_vjp, chunked=True,
                multiple_results=True, saves="output", fresh=True, core_ndims=(2,))


def eig(a):
    """Eigenvalues and right eigenvectors (unit columns) of square matrices, as
    ``numpy.linalg.eig``, always complex (as JAX's; NumPy answers real arrays when
    the eigenvalues happen to be real, a dtype that would depend on the values).

    The derivatives follow JAX's convention for complex values. Eigenvectors are
    defined up to a complex phase; functions that do not depend on it
    (``V diag(f(w)) V^-1``, ``|V|``) have well-defined derivatives. Where two
    eigenvalues coincide the eigenvectors are not differentiable (inf/nan).

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp, ops
    >>> (w, v), (dw, dv) = jvp(ops.linalg.eig, (np.diag([1.0, 3.0]),), (np.eye(2),))
    >>> dw.real.tolist()
    [1.0, 1.0]
    """
    check_matrix(a, "eig")
    return EigResult(bind(_eig_p, a))


def eigvals(a):
    """The eigenvalues of square matrices (see :func:`eig`)."""
    return eig(a).eigenvalues


def eigvalsh(x, /, UPLO="L"):
    """Eigenvalues of Hermitian (real: symmetric) matrices (see :func:`eigh`), ascending.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import ops
    >>> ops.linalg.eigvalsh(np.diag([3.0, 1.0])).tolist()
    [1.0, 3.0]
    """
    return eigh(x, UPLO).eigenvalues

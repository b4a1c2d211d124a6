"""The singular value decomposition: ``svd`` and ``svdvals``."""

from __future__ import annotations

from dualad._base.core import bind
from dualad._base.shapes import is_complex, shape_of
from dualad._primitives import elementwise as _ew
from dualad._primitives.linalg.common import (
    _H,
    _T,
    SVDResult,
    _add,
    _col,
    _diag_embed,
    _mul,
    _row,
    _sub,
    check_matrix,
    diag_part,
)
from dualad._primitives.linalg.eigen import _div_or_zero, _gap_inverse, _mul_or_zero
from dualad._primitives.linalg.matmul import matmul
from dualad._table.entries import custom

__all__ = ["svd", "svdvals"]


# -- svd ----------------------------------------------------------------------------------------
def _svd_impl(xp, a):
    u, s, vh = xp.linalg.svd(a, full_matrices=False)
    return u, s, vh


def _svd_jvp(primals, tangents, ans):
    # dS = U^H dA V; ds = Re diag(dS); F_ij = 1 / (s_j^2 - s_i^2);
    # dU = U (F * (dS S + S dS^H) + i Im(diag(dS)) / s) + (I - U U^H) dA V / s       (m > n)
    # dV = V (F * (S dS + dS^H S)) + (I - V V^H) dA^H U / s                            (n > m)
    # The term i Im(diag(dS)) / s (complex only) puts the change of the pairs' common
    # phase in U, V's phases staying put (JAX's convention).
    (a,), (ta,), (u, s, vh) = primals, tangents, ans
    m, n = shape_of(a)[-2:]
    v = _H(vh)
    ds_mat = matmul(_H(u), matmul(ta, v))
    ds = _ew.real(diag_part(ds_mat))
    f = _gap_inverse(_ew.square(s))
    dss = _mul(ds_mat, _row(s))
    sds = _mul(_col(s), ds_mat)
    inner = _mul_or_zero(f, _add(dss, _H(dss)))
    if is_complex(ds_mat):
        inner = _add(inner, _diag_embed(_div_or_zero(_sub(diag_part(ds_mat), ds), s)))
    du = matmul(u, inner)
    dv = matmul(v, _mul_or_zero(f, _add(sds, _H(sds))))
    if m > n:
        dav = matmul(ta, v)
        du = _add(du, _div_or_zero(_sub(dav, matmul(u, matmul(_H(u), dav))), _row(s)))
    if n > m:
        dau = matmul(_H(ta), u)
        dv = _add(dv, _div_or_zero(_sub(dau, matmul(v, matmul(vh, dau))), _row(s)))
    return du, ds, _H(dv)


def _svd_vjp(g, ans, a):
    # The transpose of the JVP for the pairing Re sum(x * y) (JAX's, no conjugation):
    # gA = conj(U) Z V^T + (I - conj(U) U^T) gU S^-1 V^T + conj(U) S^-1 gVh (I - Vh^T conj(Vh)),
    # Z = diag(gS) + (J + J^H) S + S (K + K^H) + i Im(diag(U^T gU)) / s,
    # J = F * (U^T gU), K = F * conj(Vh gVh^T). Real: conj and ^H drop out.
    (gu, gs, gvh), (u, s, vh) = g, ans
    m, n = shape_of(u)[-2], shape_of(vh)[-1]
    uc, vt = _ew.conj(u), _ew.conj(vh)  # V^T = conj(Vh)
    terms = []
    z = None if gs is None else _diag_embed(gs)
    f = None
    if gu is not None or gvh is not None:
        f = _gap_inverse(_ew.square(s))
    if gu is not None:
        utgu = matmul(_T(u), gu)
        j = _mul_or_zero(f, utgu)
        t = _mul(_add(j, _H(j)), _row(s))
        if is_complex(utgu):
            diag = diag_part(utgu)
            t = _add(t, _diag_embed(_div_or_zero(_sub(diag, _ew.real(diag)), s)))
        z = t if z is None else _add(z, t)
        if m > n:
            comp = _div_or_zero(_sub(gu, matmul(uc, utgu)), _row(s))
            terms.append(matmul(comp, vt))
    if gvh is not None:
        k = _mul_or_zero(f, _ew.conj(matmul(vh, _T(gvh))))
        t = _mul(_col(s), _add(k, _H(k)))
        z = t if z is None else _add(z, t)
        if n > m:
            comp = _div_or_zero(_sub(gvh, matmul(matmul(gvh, _T(vh)), vt)), _col(s))
            terms.append(matmul(uc, comp))
    if z is not None:
        terms.insert(0, matmul(uc, matmul(z, vt)))
    if not terms:
        return (None,)
    out = terms[0]
    for t in terms[1:]:
        out = _add(out, t)
    return (out,)


_svd_p = custom("svd", _svd_impl, jvp=_svd_jvp, vjp=_svd_vjp,
                chunked=True, multiple_results=True, saves="output", fresh=True, core_ndims=(2,))


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """The singular value decomposition ``a = U @ diag(S) @ Vh``, as ``numpy.linalg.svd``.

    Returns a named tuple ``(U, S, Vh)`` with ``k = min(m, n)`` columns of
    ``U`` and rows of ``Vh`` and ``S`` descending; ``compute_uv=False``
    returns ``S`` alone (of any shape). With ``U`` and ``Vh``,
    ``full_matrices=True`` (NumPy's default) is accepted for square matrices
    only, where it equals ``False``: the extra columns of a complete ``U`` have
    no unique derivative. ``hermitian`` is accepted
    and ignored (the general algorithm gives an equally valid SVD).

    Singular vectors are defined up to sign (complex ones: up to a phase
    shared by ``U[:, i]`` and ``Vh[i]``), so only functions that do not depend
    on it (``S``, ``U diag(f(S)) Vh``, ``|U|``) have well-defined derivatives;
    those of complex ``U`` and ``Vh`` follow JAX's convention. Singular
    vectors are not differentiable where singular values coincide, or (for
    non-square or complex ``a``) where one is 0: there their derivative is inf/nan. The
    derivative of ``S`` alone is always finite.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jacfwd, jvp, ops
    >>> jacfwd(lambda a: ops.linalg.svd(a, full_matrices=False).S[0])(np.diag([3.0, 1.0]))
    array([[1., 0.],
           [0., 0.]])
    >>> s, ds = jvp(ops.linalg.svdvals, (np.array([[3j, 0.0], [0.0, 1.0]]),),
    ...             (np.array([[1j, 0.0], [0.0, 1j]]),))
    >>> s.tolist(), ds.round(12).tolist()
    ([3.0, 1.0], [1.0, 0.0])
    """
    check_matrix(a, "svd", square=False)
    m, n = shape_of(a)[-2:]
    if full_matrices and compute_uv and m != n:
        raise ValueError(f"svd: full_matrices=True for a non-square matrix (shape {shape_of(a)}) "
                         "has no unique derivative; pass full_matrices=False")
    u, s, vh = bind(_svd_p, a)
    return SVDResult((u, s, vh)) if compute_uv else s


def svdvals(x, /):
    """The array API's ``linalg.svdvals``: singular values, descending.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import ops
    >>> ops.linalg.svdvals(np.diag([1.0, 3.0])).tolist()
    [3.0, 1.0]
    """
    return svd(x, full_matrices=False, compute_uv=False)

"""The singular value decomposition: ``svd`` and ``svdvals``."""

from __future__ import annotations

from dualad._base.core import bind
from dualad._base.shapes import shape_of
from dualad._primitives import elementwise as _ew
from dualad._primitives.linalg.common import (
    _T,
    SVDResult,
    _add,
    _check_matrix,
    _col,
    _diag_embed,
    _diag_part,
    _mul,
    _real_only,
    _row,
    _sub,
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
    # dS = U^T dA V; ds = diag(dS); F_ij = 1 / (s_j^2 - s_i^2);
    # dU = U (F * (dS S + S dS^T)) + (I - U U^T) dA V / s          (m > n)
    # dV = V (F * (S dS + dS^T S)) + (I - V V^T) dA^T U / s        (n > m)
    (a,), (ta,), (u, s, vh) = primals, tangents, ans
    m, n = shape_of(a)[-2:]
    v = _T(vh)
    ds_mat = matmul(_T(u), matmul(ta, v))
    f = _gap_inverse(_ew.square(s))
    dss = _mul(ds_mat, _row(s))
    sds = _mul(_col(s), ds_mat)
    du = matmul(u, _mul_or_zero(f, _add(dss, _T(dss))))
    dv = matmul(v, _mul_or_zero(f, _add(sds, _T(sds))))
    if m > n:
        dav = matmul(ta, v)
        du = _add(du, _div_or_zero(_sub(dav, matmul(u, matmul(_T(u), dav))), _row(s)))
    if n > m:
        dau = matmul(_T(ta), u)
        dv = _add(dv, _div_or_zero(_sub(dau, matmul(v, matmul(vh, dau))), _row(s)))
    return du, _diag_part(ds_mat), _T(dv)


def _svd_vjp(g, ans, a):
    # The transpose of the JVP: gA = U Z V^T + (I - U U^T) gU S^-1 V^T
    # + U S^-1 gV^T (I - V V^T), Z = diag(gS) + (J + J^T) S + S (K + K^T),
    # J = F * (U^T gU), K = F * (V^T gV), gV = gVh^T.
    (gu, gs, gvh), (u, s, vh) = g, ans
    m, n = shape_of(u)[-2], shape_of(vh)[-1]
    v = _T(vh)
    terms = []
    z = None if gs is None else _diag_embed(gs)
    f = None
    if gu is not None or gvh is not None:
        f = _gap_inverse(_ew.square(s))
    if gu is not None:
        j = _mul_or_zero(f, matmul(_T(u), gu))
        t = _mul(_add(j, _T(j)), _row(s))
        z = t if z is None else _add(z, t)
        if m > n:
            comp = _div_or_zero(_sub(gu, matmul(u, matmul(_T(u), gu))), _row(s))
            terms.append(matmul(comp, vh))
    if gvh is not None:
        gv = _T(gvh)
        k = _mul_or_zero(f, matmul(vh, gv))
        t = _mul(_col(s), _add(k, _T(k)))
        z = t if z is None else _add(z, t)
        if n > m:
            comp = _div_or_zero(_T(_sub(gv, matmul(v, matmul(vh, gv)))), _col(s))
            terms.append(matmul(u, comp))
    if z is not None:
        terms.insert(0, matmul(u, matmul(z, vh)))
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

    Singular vectors are defined up to sign and are not differentiable where
    singular values coincide, or (for non-square ``a``) where one is 0:
    there their derivative is inf/nan. The derivative of ``S`` alone is
    always finite.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jacfwd, ops
    >>> jacfwd(lambda a: ops.linalg.svd(a, full_matrices=False).S[0])(np.diag([3.0, 1.0]))
    array([[1., 0.],
           [0., 0.]])
    """
    _real_only(a, "svd")
    _check_matrix(a, "svd", square=False)
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

"""``det`` and ``slogdet``."""

from __future__ import annotations

import math

from dualad._base.core import bind
from dualad._base.shapes import raw, shape_of
from dualad._primitives import elementwise as _ew
from dualad._primitives import reductions as _red
from dualad._primitives import shape as _shape
from dualad._primitives.linalg.common import (
    _T,
    SlogdetResult,
    _any,
    _eye_mask,
    _mat,
    _mul,
    _real_only,
    _row,
    check_matrix,
    eye_like,
)
from dualad._primitives.linalg.matmul import matmul
from dualad._primitives.linalg.solve import inv
from dualad._primitives.linalg.svd import _svd_p
from dualad._table.entries import custom

__all__ = ["det", "slogdet"]


# -- det and slogdet ---------------------------------------------------------------------
def _cofactor(a, d):
    """``adj(a).T``, the derivative of ``det`` at ``a``; exact at singular ``a`` too.

    Where ``a`` is nonsingular it is ``det(a) * inv(a).T``. Where ``det(a)``
    is exactly 0 the inverse does not exist, so the adjugate comes from an
    SVD instead: ``adj(a).T = sign * U diag(p) Vh`` with ``p_i`` the product of
    the other singular values and ``sign = det(U) det(Vh)`` (a locally
    constant +-1).
    """
    n = shape_of(a)[-1]
    singular = raw(d) == 0
    if not _any(singular):
        return _mul(_mat(d), _T(inv(a)))
    mask = _mat(singular)
    u, s, vh = bind(_svd_p, a)
    sign = _mul(det(raw(u)), det(raw(vh)))
    others = _red.prod(_ew.where(_eye_mask(s, n), 1.0, _row(s)), axis=-1)
    from_svd = _mul(_mat(sign), matmul(_mul(u, _row(others)), vh))
    from_inv = _mul(_mat(d), _T(inv(_ew.where(mask, eye_like(a, n), a))))
    return _ew.where(mask, from_svd, from_inv)


def _det_jvp(primals, tangents, ans):
    (a,), (ta,) = primals, tangents
    return _shape.sum(_mul(_cofactor(a, ans), ta), axis=(-2, -1))


def _det_vjp(g, ans, a):
    return (_mul(_mat(g), _cofactor(a, ans)),)


_det_p = custom("det", lambda xp, a: xp.linalg.det(a), jvp=_det_jvp,
                vjp=_det_vjp, chunked=True, fresh=True, core_ndims=(2,))


def det(a):
    """The determinant of each square matrix of ``a``, as ``numpy.linalg.det``.

    The derivative is the cofactor matrix ``adj(a).T``, which exists
    everywhere (``det`` is a polynomial): at an exactly singular matrix it
    is computed from an SVD rather than from ``inv``. Its own derivative
    there (a second derivative of ``det``) needs distinct singular values.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jacfwd, ops
    >>> jacfwd(ops.linalg.det)(np.array([[1.0, 2.0], [2.0, 4.0]]))  # singular
    array([[ 4., -2.],
           [-2.,  1.]])
    """
    check_matrix(a, "det")
    return bind(_det_p, a)


def _inv_t_or_nan(a, logabsdet):
    """``inv(a).T``, with ``nan`` for the matrices that are singular."""
    singular = raw(logabsdet) == -math.inf
    if not _any(singular):
        return _T(inv(a))
    mask = _mat(singular)
    safe = _ew.where(mask, eye_like(a, shape_of(a)[-1]), a)
    return _ew.where(mask, math.nan, _T(inv(safe)))


def _slogdet_impl(xp, a):
    sign, logabsdet = xp.linalg.slogdet(a)
    return sign, logabsdet


def _slogdet_jvp(primals, tangents, ans):
    (a,), (ta,) = primals, tangents
    return None, _shape.sum(_mul(_inv_t_or_nan(a, ans[1]), ta), axis=(-2, -1))


def _slogdet_vjp(g, ans, a):
    g_logabsdet = g[1]
    if g_logabsdet is None:
        return (None,)
    return (_mul(_mat(g_logabsdet), _inv_t_or_nan(a, ans[1])),)


_slogdet_p = custom("slogdet", _slogdet_impl, jvp=_slogdet_jvp,
                    vjp=_slogdet_vjp, chunked=True, multiple_results=True, fresh=True, core_ndims=(2,))


def slogdet(a):
    """Sign and log of the absolute value of the determinant, as ``numpy.linalg.slogdet``.

    Returns a named tuple ``(sign, logabsdet)``. ``sign`` has no derivative
    (it is locally constant); the derivative of ``logabsdet`` is
    ``inv(a).T``, and ``nan`` at a singular matrix, where ``logabsdet`` is
    ``-inf``.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jacfwd, ops
    >>> jacfwd(lambda a: ops.linalg.slogdet(a).logabsdet)(np.array([[-2.0, 0.0], [0.0, 4.0]]))
    array([[-0.5 ,  0.  ],
           [ 0.  ,  0.25]])
    """
    _real_only(a, "slogdet")
    check_matrix(a, "slogdet")
    return SlogdetResult(bind(_slogdet_p, a))

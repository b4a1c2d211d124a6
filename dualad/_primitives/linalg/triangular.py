"""Triangular systems as SciPy solves them: ``solve_triangular``, ``cho_factor`` and
``cho_solve``, each computed by ``scipy.linalg`` (``cupyx.scipy.linalg`` on CuPy, where it
has the function), so the numbers are SciPy's; ``dualad.scipy.linalg`` gives them SciPy's
signatures.

Each reads one triangle of its matrix, and its derivative is with respect to the entries
it reads: a triangular solve's in its triangle (without the diagonal where it is taken as
unit), ``cho_solve``'s in the factor's triangle. ``cho_factor`` returns SciPy's ``c``,
whose other triangle holds the input's entries as they were; the factor's derivative is
that of :func:`~dualad._primitives.linalg.decompositions.cholesky`, of
``cholesky((a + a^T) / 2)``. Real matrices, as ``cholesky``'s: the rules transpose, they
do not conjugate.

The JVPs solve once more with the same matrix, ``dx = op(T)^-1 (db - op(dT) x)``; the VJPs
solve with its transpose and take the matrix's cotangent from one product,
``-lambda x^T`` restricted to the triangle read (for ``cho_solve``, through
``A = U^T U``: ``triu(U (G + G^T))`` with ``G = -lambda x^T``).
"""

from __future__ import annotations

from dualad._base.backend import scipy_module
from dualad._base.core import bind
from dualad._base.shapes import ndim_of, shape_of
from dualad._primitives.linalg.common import _T, _add, _col, _mul, _neg, _sub, _tril_mask
from dualad._primitives.linalg.decompositions import _cholesky_jvp, _cholesky_vjp
from dualad._primitives.linalg.matmul import matmul
from dualad._primitives.linalg.solve import _drop_last
from dualad._table.entries import custom

__all__ = ["cho_factor", "cho_solve", "solve_triangular"]


def _scipy(xp, name: str):
    """``scipy.linalg.<name>`` for arrays of ``xp`` (CuPy's where it has one)."""
    module = scipy_module(xp, "linalg", name)
    if not hasattr(module, name):
        raise NotImplementedError(f"{name}: {module.__name__} has no {name}")
    return getattr(module, name)


def _part(x, lower: bool, strict: bool = False):
    """``x``'s lower (upper) triangle, without its diagonal where ``strict``."""
    n = shape_of(x)[-1]
    k = (-1 if lower else 1) if strict else 0
    return _mul(x, _tril_mask(x, n, k) if lower else _T(_tril_mask(x, n, -k)))


def _columns(v, vector: bool):
    return _col(v) if vector else v


def _vector(v, vector: bool):
    return _drop_last(v) if vector else v


# -- solve_triangular -----------------------------------------------------------------------
def _solve_triangular_impl(xp, a, b, *, trans, lower, unit_diagonal, check_finite):
    return _scipy(xp, "solve_triangular")(a, b, trans=trans, lower=lower,
                                           unit_diagonal=unit_diagonal, check_finite=check_finite)


def _solve_triangular_jvp(primals, tangents, ans, *, trans, lower, unit_diagonal, check_finite):
    # op(T) x = b  =>  dx = op(T)^-1 (db - op(dT) x), dT the triangle read of da
    a, _ = primals
    ta, tb = tangents
    vector = ndim_of(ans) == 1
    rhs = None if tb is None else _columns(tb, vector)
    if ta is not None:
        dt = _part(ta, lower, strict=unit_diagonal)
        term = matmul(_T(dt) if trans else dt, _columns(ans, vector))
        rhs = _neg(term) if rhs is None else _sub(rhs, term)
    dx = bind(_solve_triangular_p, a, rhs, trans=trans, lower=lower, unit_diagonal=unit_diagonal,
              check_finite=False)
    return _vector(dx, vector)


def _solve_triangular_vjp(g, ans, a, b, *, trans, lower, unit_diagonal, check_finite):
    # lambda = op(T)^-T g; gb = lambda, ga = -(lambda x^T, or x lambda^T for T^T) in the triangle
    vector = ndim_of(ans) == 1
    lam = bind(_solve_triangular_p, a, g, trans=0 if trans else 1, lower=lower,
               unit_diagonal=unit_diagonal, check_finite=False)
    lam_m, x = _columns(lam, vector), _columns(ans, vector)
    outer = matmul(x, _T(lam_m)) if trans else matmul(lam_m, _T(x))
    return _neg(_part(outer, lower, strict=unit_diagonal)), lam


_solve_triangular_p = custom("solve_triangular", _solve_triangular_impl,
                             jvp=_solve_triangular_jvp, vjp=_solve_triangular_vjp)


def solve_triangular(a, b, *, trans: int = 0, lower: bool = False, unit_diagonal: bool = False,
                     check_finite: bool = False):
    """``x`` with ``T x = b`` (``trans`` 1 or 2: ``T^T x = b``), ``T`` the lower (upper) triangle
    of the square matrix ``a``, its diagonal taken as ones where ``unit_diagonal``; ``b`` of
    shape ``(n,)`` or ``(n, k)``. SciPy's code 2 (``T^H``) is ``T^T`` for the real matrices
    here, and is passed to SciPy as it came (its numbers differ from 1's in the last bits).
    ``check_finite`` is SciPy's. Arguments are not checked (``dualad.scipy.linalg`` does).

    Examples
    --------
    >>> import numpy as np
    >>> import reverse
    >>> from dualad._primitives.linalg.triangular import solve_triangular
    >>> a = np.array([[2.0, 0.0], [1.0, 4.0]])
    >>> solve_triangular(a, np.array([2.0, 9.0]), lower=True)
    array([1., 2.])
    >>> reverse.grad(lambda b: solve_triangular(a, b, lower=True).sum())(np.ones(2))  # T^-T 1
    array([0.375, 0.25 ])
    """
    return bind(_solve_triangular_p, a, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal,
                check_finite=check_finite)


# -- cho_factor -----------------------------------------------------------------------------
def _cho_factor_impl(xp, a, *, lower, check_finite):
    return _scipy(xp, "cho_factor")(a, lower=lower, check_finite=check_finite)[0]


def _lower_factor(c, lower: bool):
    """``L`` with ``A = L L^T``, from SciPy's ``c``."""
    factor = _part(c, lower)
    return factor if lower else _T(factor)


def _cho_factor_jvp(primals, tangents, ans, *, lower, check_finite):
    (ta,) = tangents
    d_low = _cholesky_jvp(primals, tangents, _lower_factor(ans, lower))
    return _add(d_low if lower else _T(d_low), _part(ta, not lower, strict=True))


def _cho_factor_vjp(g, ans, a, *, lower, check_finite):
    g_low = _part(g, True) if lower else _T(_part(g, False))
    (ga,) = _cholesky_vjp(g_low, _lower_factor(ans, lower), a)
    return (_add(ga, _part(g, not lower, strict=True)),)


_cho_factor_p = custom("cho_factor", _cho_factor_impl, jvp=_cho_factor_jvp,
                       vjp=_cho_factor_vjp, chunked=True)


def cho_factor(a, *, lower: bool = False, check_finite: bool = False):
    """SciPy's ``c`` of ``cho_factor``: the Cholesky factor of the symmetric positive
    definite ``a`` in its upper (``lower``: lower) triangle, ``a``'s entries in the other.
    ``check_finite`` is SciPy's. Arguments are not checked (``dualad.scipy.linalg`` does).

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import derivative
    >>> from dualad._primitives.linalg.triangular import cho_factor
    >>> cho_factor(np.array([[4.0, 2.0], [2.0, 5.0]]))
    array([[2., 1.],
           [2., 2.]])
    >>> float(derivative(lambda s: cho_factor(s * np.eye(2))[0, 0])(4.0))   # of sqrt(s)
    0.25
    """
    return bind(_cho_factor_p, a, lower=lower, check_finite=check_finite)


# -- cho_solve ------------------------------------------------------------------------------
def _cho_solve_impl(xp, c, b, *, lower, check_finite):
    return _scipy(xp, "cho_solve")((c, lower), b, check_finite=check_finite)


def _cho_solve_jvp(primals, tangents, ans, *, lower, check_finite):
    # A = U^T U (L L^T)  =>  dA = dU^T U + U^T dU (dL L^T + L dL^T), dx = A^-1 (db - dA x)
    c, _ = primals
    tc, tb = tangents
    vector = ndim_of(ans) == 1
    rhs = None if tb is None else _columns(tb, vector)
    if tc is not None:
        f, df = _part(c, lower), _part(tc, lower)
        if lower:
            da = _add(matmul(df, _T(f)), matmul(f, _T(df)))
        else:
            da = _add(matmul(_T(df), f), matmul(_T(f), df))
        term = matmul(da, _columns(ans, vector))
        rhs = _neg(term) if rhs is None else _sub(rhs, term)
    return _vector(bind(_cho_solve_p, c, rhs, lower=lower, check_finite=False), vector)


def _cho_solve_vjp(g, ans, c, b, *, lower, check_finite):
    # lambda = A^-1 g (A symmetric); G = -lambda x^T is A's cotangent, and through A = U^T U
    # the factor's is triu(U (G + G^T)) (through A = L L^T: tril((G + G^T) L))
    vector = ndim_of(ans) == 1
    lam = bind(_cho_solve_p, c, g, lower=lower, check_finite=False)
    outer = _neg(matmul(_columns(lam, vector), _T(_columns(ans, vector))))
    both, f = _add(outer, _T(outer)), _part(c, lower)
    return _part(matmul(both, f) if lower else matmul(f, both), lower), lam


_cho_solve_p = custom("cho_solve", _cho_solve_impl, jvp=_cho_solve_jvp, vjp=_cho_solve_vjp)


def cho_solve(c, b, *, lower: bool = False, check_finite: bool = False):
    """``x`` with ``A x = b``, ``A = U^T U`` for ``U`` the upper triangle of ``c`` (``lower``:
    ``A = L L^T``, ``L`` its lower triangle), as ``cho_factor`` returns it; ``b`` of shape
    ``(n,)`` or ``(n, k)``. ``check_finite`` is SciPy's. Arguments are not checked
    (``dualad.scipy.linalg`` does).

    Examples
    --------
    >>> import numpy as np
    >>> from dualad._primitives.linalg.triangular import cho_factor, cho_solve
    >>> a = np.array([[4.0, 2.0], [2.0, 5.0]])
    >>> cho_solve(cho_factor(a), np.array([6.0, 7.0]))
    array([1., 1.])
    """
    return bind(_cho_solve_p, c, b, lower=lower, check_finite=check_finite)

"""Linear systems and inverses: ``solve``, ``inv`` and ``pinv``."""

from __future__ import annotations

from dualad._base.core import bind
from dualad._base.shapes import ndim_of, shape_of
from dualad._primitives import shape as _shape
from dualad._primitives.linalg.common import (
    _T,
    _add,
    _batched,
    _broadcast_batch,
    _col,
    _lift,
    _neg,
    _real_only,
    _sub,
    check_matrix,
    eye_like,
)
from dualad._primitives.linalg.matmul import matmul
from dualad._table.entries import custom

__all__ = ["solve", "inv", "pinv"]


# -- solve ----------------------------------------------------------------------------
def _solve_impl(xp, a, b, *, vector):
    # A vector b is solved as one column, and batch axes are broadcast here:
    # backends differ on both (NumPy 1 vs 2, the array API, CuPy).
    if vector:
        b = xp.expand_dims(b, axis=-1)
    if a.shape[:-2] != b.shape[:-2]:
        batch = _shape._broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
        a = xp.broadcast_to(a, batch + tuple(a.shape[-2:]))
        b = xp.broadcast_to(b, batch + tuple(b.shape[-2:]))
    x = xp.linalg.solve(a, b)
    return x[..., 0] if vector else x


def _solve_m(a, b):
    """``solve`` with a matrix right-hand side and no validation (for rules)."""
    return bind(_solve_p, a, b, vector=False)


def _drop_last(x):
    return _shape.reshape(x, shape_of(x)[:-1])


def _solve_jvp(primals, tangents, ans, *, vector):
    # x = A^-1 b  =>  dx = A^-1 (db - dA x)
    a, b = primals
    ta, tb = tangents
    x = _col(ans) if vector else ans
    batched = _batched(primals, tangents)
    rhs = None
    if tb is not None:
        rhs = _col(tb) if vector else tb
        if batched:
            rhs = _lift(rhs, ndim_of(x))
    if ta is not None:
        term = _neg(matmul(_lift(ta, ndim_of(x)) if batched else ta, x))
        rhs = term if rhs is None else _add(rhs, term)
    dx = _solve_m(a, rhs)
    return _drop_last(dx) if vector else dx


def _solve_vjp(g, ans, a, b, *, vector):
    # gb = A^-T g, gA = -gb x^T, each summed over the axes it was broadcast along.
    gm = _col(g) if vector else g
    x = _col(ans) if vector else ans
    gb = _solve_m(_T(a), gm)
    ga = _shape.unbroadcast(_neg(matmul(gb, _T(x))), shape_of(a))
    gb = _shape.unbroadcast(_drop_last(gb) if vector else gb, shape_of(b))
    return ga, gb


_solve_p = custom("solve", _solve_impl, jvp=_solve_jvp, vjp=_solve_vjp,
                  chunked=True, fresh=True, core_ndims=lambda params: (2, 1 if params["vector"] else 2))


def solve(a, b):
    """Solve ``a @ x = b`` for ``x``, as ``numpy.linalg.solve``.

    Parameters
    ----------
    a : (..., n, n) array or value type
        Square, nonsingular coefficient matrices.
    b : (n,) or (..., n, k) array or value type
        A 1-d ``b`` is one vector (solved against every matrix of ``a``);
        otherwise ``b`` holds ``k`` columns and its batch axes broadcast
        against those of ``a``.

    Returns
    -------
    x : (..., n) or (..., n, k)

    Notes
    -----
    JVP: ``dx = solve(a, db - da @ x)``; VJP: ``gb = solve(a.T, g)``,
    ``ga = -gb @ x.T``.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp, ops
    >>> a = np.array([[2.0, 0.0], [0.0, 4.0]])
    >>> b = np.array([2.0, 4.0])
    >>> x, dx = jvp(lambda b: ops.linalg.solve(a, b), (b,), (np.array([1.0, 0.0]),))
    >>> x.tolist(), dx.tolist()
    ([1.0, 1.0], [0.5, 0.0])
    """
    check_matrix(a, "solve")
    sa, sb = shape_of(a), shape_of(b)
    n = sa[-1]
    if len(sb) == 0:
        raise ValueError("solve: b must be a vector (n,) or matrices (..., n, k), got a 0-d b")
    vector = len(sb) == 1
    rows = sb[0] if vector else sb[-2]
    if rows != n:
        what = "b.shape[0]" if vector else "b.shape[-2]"
        raise ValueError(f"solve: {what} must equal a's size n = {n} (a has shape {sa}), "
                         f"got b of shape {sb}")
    if not vector:
        _broadcast_batch("solve", sa[:-2], sb[:-2])
    return bind(_solve_p, a, b, vector=vector)


# -- inv ---------------------------------------------------------------------------------
def _inv_jvp(primals, tangents, ans):
    (ta,) = tangents
    return _neg(matmul(ans, matmul(ta, ans)))


def _inv_vjp(g, ans, a):
    ans_t = _T(ans)
    return (_neg(matmul(ans_t, matmul(g, ans_t))),)


_inv_p = custom("inv", lambda xp, a: xp.linalg.inv(a), jvp=_inv_jvp,
                vjp=_inv_vjp, chunked=True, saves="output", fresh=True, core_ndims=(2,))


def inv(a):
    """The inverse of each square matrix of ``a``, as ``numpy.linalg.inv``.

    JVP: ``-inv(a) @ da @ inv(a)``; VJP: ``-inv(a).T @ g @ inv(a).T``.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import derivative, ops
    >>> float(derivative(lambda s: ops.linalg.inv(s * np.eye(2))[0, 0])(2.0))
    -0.25
    """
    check_matrix(a, "inv")
    return bind(_inv_p, a)


def _pinv_jvp(primals, tangents, ans, **_):
    (a,), (ta,) = primals, tangents
    p = ans
    m, n = shape_of(a)[-2], shape_of(a)[-1]
    left = _sub(eye_like(a, m), matmul(a, p))   # I - A P, m x m
    right = _sub(eye_like(a, n), matmul(p, a))  # I - P A, n x n
    tt = _T(ta)
    return _add(_sub(matmul(matmul(p, _T(p)), matmul(tt, left)), matmul(p, matmul(ta, p))),
                matmul(right, matmul(tt, matmul(_T(p), p))))


def _pinv_vjp(g, ans, a, **_):
    p = ans
    m, n = shape_of(a)[-2], shape_of(a)[-1]
    left = _sub(eye_like(a, m), matmul(a, p))
    right = _sub(eye_like(a, n), matmul(p, a))
    gt, pt = _T(g), _T(p)
    return (_add(_sub(matmul(left, matmul(gt, matmul(p, pt))), matmul(pt, matmul(g, pt))),
                 matmul(matmul(pt, p), matmul(gt, right))),)


def _pinv_impl(xp, a, *, rcond):
    return xp.linalg.pinv(a) if rcond is None else xp.linalg.pinv(a, rtol=rcond)


_pinv_p = custom("pinv", _pinv_impl, jvp=_pinv_jvp, vjp=_pinv_vjp, chunked=True, saves="all", fresh=True,
                 core_ndims=(2,))


def pinv(a, rcond=None, hermitian=False, *, rtol=None):
    """The Moore-Penrose pseudo-inverse, as ``numpy.linalg.pinv``.

    Its derivative (Golub and Pereyra's formula) holds where the rank of ``a``
    does not change, which full-rank matrices satisfy.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp, ops
    >>> a = np.array([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]])
    >>> y, t = jvp(ops.linalg.pinv, (a,), (np.eye(3, 2),))
    >>> np.allclose(y, np.linalg.pinv(a)), np.allclose(t, [[-1, 0, 0], [0, -0.25, 0]])
    (True, True)
    """
    del hermitian
    check_matrix(a, "pinv", square=False)
    _real_only(a, "pinv")
    return bind(_pinv_p, a, rcond=rtol if rtol is not None else rcond)

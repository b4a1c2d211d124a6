"""Linear algebra primitives: matmul (with NumPy's 1-d rules), ``einsum`` and
the ``linalg`` family (solve, inv, det, slogdet, cholesky, qr, lu, eigh, svd,
norm), each with its JVP and VJP side by side.

Every rule is written with the differentiable operations of the table, so a
rule applied to ``Dual``, ``HyperDual`` or tape values is itself
differentiated; only the ``impl`` functions touch the array namespace
``xp``. The JVP rules are written for matrices broadcast from the right, so
a chunk of ``k`` tangents (a leading axis) passes through them unchanged
(``chunked=True``).

Conventions at points where the derivative does not exist or is not unique
(each is stated again in the function's docstring):

- ``det`` is a polynomial, so its derivative (the cofactor matrix) exists
  everywhere; at an exactly singular matrix it is computed from an SVD.
- ``slogdet``: the derivative of ``logabsdet`` at a singular matrix is ``nan``
  (``logabsdet`` is ``-inf`` there); ``sign`` has no derivative.
- ``cholesky`` reads one triangle of its input; its derivative is that of
  ``cholesky((A + A^T) / 2)``, i.e. it assumes symmetric inputs and
  symmetrizes the perturbations. ``eigh`` differentiates what it computes:
  the ``UPLO`` triangle's entries, the other triangle's not at all.
- ``eigh`` and ``svd``: eigenvectors and singular vectors are not
  differentiable where eigenvalues (singular values) coincide (or, for a
  non-square ``svd``, where one is 0); a direction or cotangent that mixes
  the tied pair then gets ``inf``/``nan``, never a silently wrong number.
  A zero coefficient contributes 0 (not ``inf * 0``), so the derivatives of
  the eigenvalues (singular values) alone stay finite, in forward mode and
  on the tape (which passes zeros for unused outputs) alike.
- ``norm``: the 2-norm (and Frobenius norm) has the subgradient 0 at 0, and
  so do the other p-norms; ``abs`` has derivative 0 at 0 and ``max``/``min``
  split ties equally (the ``inf``, 1 and 2 norms).
"""

from __future__ import annotations

import math
import string
from collections import Counter
from functools import lru_cache
from operator import itemgetter
from types import MappingProxyType

import numpy as np

from dualad import ops
from dualad._base.backend import namespace_of, scipy_module, to_host
from dualad._base.core import bind
from dualad._base.shapes import dtype_of, is_complex, ndim_of, normalize_axes, on_values, raw, shape_of
from dualad._primitives import elementwise as _ew
from dualad._primitives import reductions as _red
from dualad._primitives import shape as _shape
from dualad._table.entries import custom

__all__ = ["matmul", "einsum", "matvec", "vecmat", "vecdot"]

# Rules call functions rather than operators: ``raw_array * value`` would ask
# the raw array's own ``__mul__`` first, and strict array-API arrays refuse
# foreign operands instead of returning NotImplemented.
_add, _sub, _mul, _div, _neg = _ew.add, _ew.subtract, _ew.multiply, _ew.divide, _ew.negative
_T = _shape.matrix_transpose


def _result_type(name, fields, doc):
    """A tuple with named fields, like ``numpy.linalg``'s results.

    Unlike a ``namedtuple`` it is built from one iterable, as ``tuple`` is,
    so code that rebuilds containers generically (``type(t)(items)``, as the
    transforms do with outputs) keeps the type and its field names.
    """
    def __new__(cls, iterable):
        values = tuple(iterable)
        if len(values) != len(fields):
            raise TypeError(f"{name} needs {len(fields)} values {fields}, got {len(values)}")
        return tuple.__new__(cls, values)

    def __repr__(self):
        return f"{name}(" + ", ".join(f"{f}={v!r}" for f, v in zip(fields, self)) + ")"

    namespace = {"__slots__": (), "__new__": __new__, "__repr__": __repr__, "__doc__": doc,
                 "__getnewargs__": lambda self: (tuple(self),), "__module__": __name__}
    for i, f in enumerate(fields):
        namespace[f] = property(itemgetter(i), doc=f"Alias for field number {i}")
    return type(name, (tuple,), namespace)


SlogdetResult = _result_type("SlogdetResult", ("sign", "logabsdet"), "The result of :func:`slogdet`.")
QRResult = _result_type("QRResult", ("Q", "R"), "The result of :func:`qr`.")
EighResult = _result_type("EighResult", ("eigenvalues", "eigenvectors"), "The result of :func:`eigh`.")
SVDResult = _result_type("SVDResult", ("U", "S", "Vh"), "The result of :func:`svd`.")
EigResult = _result_type("EigResult", ("eigenvalues", "eigenvectors"), "The result of :func:`eig`.")


# -- helpers: constants in the operand's backend and dtype, and matrix pieces --
def _constant(like, creator, *args):
    """``xp.<creator>(*args)`` in the namespace, dtype and device of ``like``."""
    r = raw(like)
    fn = getattr(namespace_of([r]), creator)
    device = getattr(r, "device", None)
    if device is not None:
        try:
            return fn(*args, dtype=r.dtype, device=device)
        except TypeError:  # a namespace without the keyword: its current device
            pass
    return fn(*args, dtype=r.dtype)


def _eye(like, n):
    return _constant(like, "eye", n)


def _eye_mask(like, n):
    return _eye(like, n) == 1


def _tril_mask(like, n, k=0, cols=None):
    """A 0/1 float matrix (n x n, or n x cols) that is 1 on and below the k-th diagonal."""
    ones = _constant(like, "ones", (n, n if cols is None else cols))
    return namespace_of([ones]).tril(ones, k=k)


def _any(mask):
    """Whether any entry of a raw boolean array is true (control flow, not math)."""
    if isinstance(mask, bool):
        return mask
    return bool(namespace_of([mask]).any(mask))


def _sym(x):
    return _mul(_add(x, _T(x)), 0.5)


def _diag_part(x):
    """The diagonals of a stack of square matrices, shape ``(..., n)``."""
    return _red.sum(_mul(x, _eye(x, shape_of(x)[-1])), axis=-1)


def _diag_embed(v):
    """Diagonal matrices from a stack of vectors."""
    return _mul(_shape.expand_dims(v, -1), _eye(v, shape_of(v)[-1]))


def _row(v):
    """``(..., n) -> (..., 1, n)``: scales the columns of a matrix."""
    return _shape.expand_dims(v, -2)


def _col(v):
    """``(..., n) -> (..., n, 1)``: scales the rows of a matrix."""
    return _shape.expand_dims(v, -1)


def _mat(v):
    """``(...) -> (..., 1, 1)``: a scalar per matrix."""
    return _shape.expand_dims(v, (-2, -1))


def _lift(t, ndim):
    """Give a chunk of tangents ``(k,) + shape`` room to broadcast to ``ndim`` dims."""
    s = shape_of(t)
    if len(s) - 1 >= ndim:
        return t
    return _shape.reshape(t, s[:1] + (1,) * (ndim - len(s) + 1) + s[1:])


def _batched(primals, tangents):
    return any(t is not None and ndim_of(t) > ndim_of(p) for p, t in zip(primals, tangents))


def _check_matrix(a, name, arg="a", square=True):
    s = shape_of(a)
    if len(s) < 2:
        raise ValueError(f"{name}: {arg} must be a matrix or a stack of matrices "
                         f"(ndim >= 2), got shape {s} (ndim {len(s)})")
    if square and s[-1] != s[-2]:
        raise ValueError(f"{name}: {arg} must be square in its last two axes, "
                         f"got shape {s} ({s[-2]} x {s[-1]})")


def _real_only(a, name):
    """Refuse complex input to a rule written for real matrices (transposes, not
    conjugate transposes), rather than return a wrong derivative."""
    if is_complex(a):
        raise NotImplementedError(
            f"{name}: complex matrices are not supported yet (got dtype {dtype_of(raw(a))}); "
            "its derivative rules assume real input")


def _broadcast_batch(name, *shapes):
    try:
        return _shape._broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(f"{name}: the batch shapes {', '.join(map(str, shapes))} "
                         "do not broadcast together") from None


# -- matmul -------------------------------------------------------------------------
def _matmul_jvp(primals, tangents, ans, **_):
    x, y = primals
    tx, ty = tangents
    if not _batched(primals, tangents):
        out = None if tx is None else matmul(tx, y)
        if ty is not None:
            term = matmul(x, ty)
            out = term if out is None else _add(out, term)
        return out
    # A chunk of k directions: promote 1-d operands to matrices as NumPy does
    # (so that k is never taken for a matrix axis), give each tangent the
    # output's batch rank behind k, and drop the promoted axes at the end.
    nx, ny = ndim_of(x), ndim_of(y)
    x2 = _shape.expand_dims(x, 0) if nx == 1 else x
    y2 = _shape.expand_dims(y, -1) if ny == 1 else y
    nd = max(ndim_of(x2), ndim_of(y2))
    out = None
    if tx is not None:
        out = matmul(_lift(_shape.expand_dims(tx, 1) if nx == 1 else tx, nd), y2)
    if ty is not None:
        term = matmul(x2, _lift(_shape.expand_dims(ty, -1) if ny == 1 else ty, nd))
        out = term if out is None else _add(out, term)
    s = shape_of(out)
    if nx == 1:
        s = s[:-2] + s[-1:]
    if ny == 1:
        s = s[:-1]
    return _shape.reshape(out, s)


# One VJP rule per operand, so that the cotangent of constant data (a batch of
# inputs, a design matrix) is never computed: it costs a whole matmul.
def _matmul_vjp_x(g, ans, x, y):
    nx, ny = ndim_of(x), ndim_of(y)
    if nx == 1 and ny == 1:
        return _mul(g, y)
    if nx == 1:
        return _shape.unbroadcast(matmul(y, _shape.expand_dims(g, -1))[..., 0], shape_of(x))
    if ny == 1:
        return _shape.unbroadcast(_mul(_shape.expand_dims(g, -1), y), shape_of(x))
    return _shape.unbroadcast(matmul(g, _shape.matrix_transpose(y)), shape_of(x))


def _matmul_vjp_y(g, ans, x, y):
    nx, ny = ndim_of(x), ndim_of(y)
    if nx == 1 and ny == 1:
        return _mul(g, x)
    if nx == 1:
        return _shape.unbroadcast(_mul(_shape.expand_dims(x, -1), _shape.expand_dims(g, -2)), shape_of(y))
    if ny == 1:
        # x^T g as a matrix-vector product (faster than g^T x as a 1 x m matrix product)
        return _shape.unbroadcast(matmul(_shape.matrix_transpose(x), _shape.expand_dims(g, -1))[..., 0],
                                  shape_of(y))
    return _shape.unbroadcast(matmul(_shape.matrix_transpose(x), g), shape_of(y))


_matmul_p = custom("matmul", lambda xp, x, y: xp.matmul(x, y),
                   jvp=_matmul_jvp, vjp=(_matmul_vjp_x, _matmul_vjp_y), chunked=True,
                   saves="inputs", fresh=True)


def matmul(x, y):
    """``x @ y`` with NumPy's rules for 1-d operands and batch broadcasting."""
    if ndim_of(x) == 0 or ndim_of(y) == 0:
        raise ValueError(f"matmul needs operands of ndim >= 1, got shapes {shape_of(x)} and {shape_of(y)}")
    return bind(_matmul_p, x, y)


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
                  chunked=True, fresh=True)


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
    _check_matrix(a, "solve")
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
                vjp=_inv_vjp, chunked=True, saves="output", fresh=True)


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
    _check_matrix(a, "inv")
    return bind(_inv_p, a)


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
    from_inv = _mul(_mat(d), _T(inv(_ew.where(mask, _eye(a, n), a))))
    return _ew.where(mask, from_svd, from_inv)


def _det_jvp(primals, tangents, ans):
    (a,), (ta,) = primals, tangents
    return _red.sum(_mul(_cofactor(a, ans), ta), axis=(-2, -1))


def _det_vjp(g, ans, a):
    return (_mul(_mat(g), _cofactor(a, ans)),)


_det_p = custom("det", lambda xp, a: xp.linalg.det(a), jvp=_det_jvp,
                vjp=_det_vjp, chunked=True, fresh=True)


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
    _check_matrix(a, "det")
    return bind(_det_p, a)


def _inv_t_or_nan(a, logabsdet):
    """``inv(a).T``, with ``nan`` for the matrices that are singular."""
    singular = raw(logabsdet) == -math.inf
    if not _any(singular):
        return _T(inv(a))
    mask = _mat(singular)
    safe = _ew.where(mask, _eye(a, shape_of(a)[-1]), a)
    return _ew.where(mask, math.nan, _T(inv(safe)))


def _slogdet_impl(xp, a):
    sign, logabsdet = xp.linalg.slogdet(a)
    return sign, logabsdet


def _slogdet_jvp(primals, tangents, ans):
    (a,), (ta,) = primals, tangents
    return None, _red.sum(_mul(_inv_t_or_nan(a, ans[1]), ta), axis=(-2, -1))


def _slogdet_vjp(g, ans, a):
    g_logabsdet = g[1]
    if g_logabsdet is None:
        return (None,)
    return (_mul(_mat(g_logabsdet), _inv_t_or_nan(a, ans[1])),)


_slogdet_p = custom("slogdet", _slogdet_impl, jvp=_slogdet_jvp,
                    vjp=_slogdet_vjp, chunked=True, multiple_results=True, fresh=True)


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
    _check_matrix(a, "slogdet")
    return SlogdetResult(bind(_slogdet_p, a))


# -- cholesky ------------------------------------------------------------------------------
def _phi(x):
    """The lower triangle of ``x`` with its diagonal halved."""
    n = shape_of(x)[-1]
    return _mul(x, _sub(_tril_mask(x, n), _mul(_eye(x, n), 0.5)))


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
                     saves="output", fresh=True)


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
    _check_matrix(a, "cholesky")
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
               multiple_results=True, saves="output", fresh=True)


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
    _check_matrix(a, "qr", square=False)
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
                   _shape.pad(_eye(low, m - k), ((k, 0), (k, 0))))
    if n > k:
        up = _add(_shape.pad(up, _widths(ndim_of(up), rows=n - k)),
                  _shape.pad(_eye(up, n - k), ((k, 0), (k, 0))))
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
               multiple_results=True, saves="output", fresh=True)


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
    _check_matrix(a, "lu", square=False)
    p, low, up = bind(_lu_p, a)
    return (matmul(p, low), up) if permute_l else (p, low, up)


# -- eigh ------------------------------------------------------------------------------------
def _eigh_impl(xp, a):
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
    """
    zero = _ew.equal(m, 0)
    return _ew.where(zero, 0.0, _mul(f, _ew.where(zero, 1.0, m)))


def _div_or_zero(m, s):
    """``m / s``, and 0 where ``m`` is exactly 0 even if ``s`` is 0 there."""
    zero = _ew.equal(m, 0)
    return _ew.where(zero, 0.0, _div(m, _ew.where(zero, 1.0, s)))


def _from_lower(x):
    """The symmetric matrix that eigh reads from the lower triangle of ``x``."""
    n = shape_of(x)[-1]
    return _add(_mul(x, _tril_mask(x, n)), _T(_mul(x, _tril_mask(x, n, -1))))


def _from_lower_transpose(b):
    """The adjoint of :func:`_from_lower`: ``tril(b) + tril(b.T, -1)``."""
    n = shape_of(b)[-1]
    return _add(_mul(b, _tril_mask(b, n)), _mul(_T(b), _tril_mask(b, n, -1)))


def _eigh_jvp(primals, tangents, ans):
    # A = V diag(w) V^T  =>  dw = diag(S), dV = V (F * S), S = V^T dA V, where dA is
    # the symmetric perturbation eigh reads: the lower triangle of the tangent.
    (ta,), (w, v) = tangents, ans
    s = matmul(_T(v), matmul(_from_lower(ta), v))
    return _diag_part(s), matmul(v, _mul_or_zero(_gap_inverse(w), s))


def _eigh_vjp(g, ans, a):
    (gw, gv), (w, v) = g, ans
    inner = None if gw is None else _diag_embed(gw)
    if gv is not None:  # skipped when only w is used, so ties cost nothing then
        term = _mul_or_zero(_gap_inverse(w), matmul(_T(v), gv))
        inner = term if inner is None else _add(inner, term)
    if inner is None:
        return (None,)
    return (_from_lower_transpose(_sym(matmul(v, matmul(inner, _T(v))))),)


_eigh_p = custom("eigh", _eigh_impl, jvp=_eigh_jvp, vjp=_eigh_vjp,
                 chunked=True, multiple_results=True, saves="output", fresh=True)


def eigh(a, UPLO="L"):
    """Eigenvalues (ascending) and eigenvectors of symmetric matrices, as ``numpy.linalg.eigh``.

    Returns a named tuple ``(eigenvalues, eigenvectors)``.

    Only the ``UPLO`` triangle of ``a`` is read, as NumPy reads it, and the
    derivative is that of the function computed: a perturbation of the other
    triangle changes nothing. Eigenvectors are defined up to sign; functions
    of them that do not depend on the sign (``V diag(f(w)) V.T``) have
    well-defined derivatives. Where two eigenvalues coincide the
    eigenvectors are not differentiable and their derivative is inf/nan;
    the eigenvalues' derivative stays finite.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp, ops
    >>> a = np.diag([1.0, 3.0])
    >>> (w, v), (dw, dv) = jvp(ops.linalg.eigh, (a,), (np.array([[1.0, 0.0], [0.0, 2.0]]),))
    >>> dw.tolist()
    [1.0, 2.0]
    """
    _real_only(a, "eigh")
    _check_matrix(a, "eigh")
    if UPLO not in ("L", "U"):
        raise ValueError(f"eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    if UPLO == "U":  # the array API reads the lower triangle; that of a.T is a's upper
        a = _T(a)
    return EighResult(bind(_eigh_p, a))


# -- eig ------------------------------------------------------------------------------------------
def _eig_jvp(primals, tangents, ans):
    # A V = V diag(w)  =>  dw = diag(M), dV = V (F * M) with M = V^-1 dA V, then the
    # part that would change each column's unit norm removed, as NumPy normalizes them.
    (ta,), (w, v) = tangents, ans
    m = matmul(inv(v), matmul(ta, v))
    du = matmul(v, _mul_or_zero(_gap_inverse(w), m))
    stretch = _ew.real(_red.sum(_mul(_ew.conj(v), du), axis=-2))
    return _diag_part(m), _sub(du, _mul(v, _row(stretch)))


def _eig_vjp(g, ans, a):
    (gw, gv), (w, v) = g, ans
    inner = None if gw is None else _diag_embed(gw)
    if gv is not None:
        stretch = _ew.real(_red.sum(_mul(v, gv), axis=-2))
        gu = _sub(gv, _mul(_ew.conj(v), _row(stretch)))
        term = _mul_or_zero(_gap_inverse(w), matmul(_T(v), gu))
        inner = term if inner is None else _add(inner, term)
    if inner is None:
        return (None,)
    return (matmul(_T(inv(v)), matmul(inner, _T(v))),)


_eig_p = custom("eig", lambda xp, a: tuple(xp.linalg.eig(a)), jvp=_eig_jvp, vjp=_eig_vjp, chunked=True,
                multiple_results=True, saves="output", fresh=True)


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
    _check_matrix(a, "eig")
    return EigResult(bind(_eig_p, a))


def eigvals(a):
    """The eigenvalues of square matrices (see :func:`eig`)."""
    return eig(a).eigenvalues


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
                chunked=True, multiple_results=True, saves="output", fresh=True)


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


# -- norm ---------------------------------------------------------------------------------------
def _norm2_impl(xp, x, *, axis, keepdims):
    # What numpy.linalg.norm computes (no rescaling against overflow), and
    # faster for small inputs than linalg.vector_norm.
    return xp.sqrt(xp.sum(x * x, axis=axis, keepdims=keepdims))


def _kept_shape(shape, axis):
    n = len(shape)
    return tuple(1 if i - n in axis else s for i, s in enumerate(shape))


def _safe_divide(num, den):
    """``num / den``, and 0 where ``den`` is 0 (the subgradient of a norm at 0)."""
    zero = _ew.equal(den, 0)
    return _ew.where(zero, 0.0, _div(num, _ew.where(zero, 1.0, den)))


def _norm2_jvp(primals, tangents, ans, *, axis, keepdims):
    (x,), (tx,) = primals, tangents
    return _safe_divide(_red.sum(_mul(x, tx), axis, keepdims), ans)


def _norm2_vjp(g, ans, x, *, axis, keepdims):
    if not keepdims:
        kept = _kept_shape(shape_of(x), axis)
        g, ans = _shape.reshape(g, kept), _shape.reshape(ans, kept)
    return (_mul(_safe_divide(g, ans), x),)


_norm2_p = custom("norm2", _norm2_impl, jvp=_norm2_jvp, vjp=_norm2_vjp,
                  chunked=True, fresh=True)


def _norm2(x, axis, keepdims):
    """The Euclidean norm over ``axis`` (a tuple of negative axes); derivative 0 at 0."""
    if is_complex(x):  # the norm of the moduli, differentiated through them
        x = _ew.abs(x)
    if ndim_of(x) == 0:
        return _ew.abs(x)
    return bind(_norm2_p, x, axis=axis, keepdims=keepdims)


def _restore(out, shape, axis, keepdims):
    return _shape.reshape(out, _kept_shape(shape, axis)) if keepdims else out


def _vector_norm(x, ord, axis, keepdims):
    if isinstance(ord, str):
        raise ValueError(f"norm: ord={ord!r} is a matrix norm; for a vector norm ord must be a "
                         "number (None, inf, -inf, 0, 1, 2, ...)")
    if ord is None or ord == 2:
        return _norm2(x, axis, keepdims)
    ax = _ew.abs(x)
    if ord == math.inf:
        return _red.max(ax, axis, keepdims)
    if ord == -math.inf:
        return _red.min(ax, axis, keepdims)
    if ord == 0:  # a count: zero derivative
        r = raw(x)
        nonzero = _shape.astype(_ew.not_equal(r, 0), dtype_of(r))
        return _red.sum(nonzero, axis, keepdims)
    if ord == 1:
        return _red.sum(ax, axis, keepdims)
    total = _red.sum(_ew.power(ax, float(ord)), axis, keepdims)
    zero = _ew.equal(total, 0)  # the subgradient 0 at 0, as for the 2-norm
    return _ew.where(zero, 0.0, _ew.power(_ew.where(zero, 1.0, total), 1.0 / ord))


_MATRIX_ORDS = (None, "fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)


def _matrix_norm(x, ord, axes, keepdims):
    row, col = axes
    if ord not in _MATRIX_ORDS:
        raise ValueError(f"norm: ord={ord!r} is not a matrix norm; expected one of "
                         "None, 'fro', 'nuc', 1, -1, 2, -2, inf, -inf")
    shape = shape_of(x)
    both = tuple(sorted((row, col)))
    if ord is None or ord == "fro":
        return _norm2(x, both, keepdims)
    if ord in ("nuc", 2, -2):
        s = svd(_shape.moveaxis(x, (row, col), (-2, -1)), full_matrices=False, compute_uv=False)
        reduce = {"nuc": _red.sum, 2: _red.max, -2: _red.min}[ord]
        return _restore(reduce(s, axis=-1), shape, both, keepdims)
    ax = _ew.abs(x)
    reduce = _red.max if ord > 0 else _red.min
    summed, over = (row, col) if abs(ord) == 1 else (col, row)  # 1: column sums; inf: row sums
    out = reduce(_red.sum(ax, summed, keepdims=True), over, keepdims=True)
    return out if keepdims else _shape.reshape(out, tuple(
        s for i, s in enumerate(shape) if i - len(shape) not in both))


def norm(x, ord=None, axis=None, keepdims=False):
    """Vector and matrix norms, as ``numpy.linalg.norm``.

    Parameters
    ----------
    x : array or value type
    ord : {None, 'fro', 'nuc', inf, -inf, 0, 1, -1, 2, -2, other numbers}
        As in NumPy: with an int ``axis`` (or a 1-d ``x``) a vector norm,
        with a 2-tuple ``axis`` (or a 2-d ``x``) a matrix norm.
    axis : None, int or 2-tuple of ints
        ``None`` with ``ord=None`` is the 2-norm of ``x`` flattened (any
        ndim); ``None`` with another ``ord`` needs a 1-d or 2-d ``x``.
    keepdims : bool

    Notes
    -----
    The 2-norm and the Frobenius norm are one primitive whose derivative
    at 0 is 0 (a subgradient) instead of ``nan``; the other norms are
    composites (``max``/``min`` split ties equally, ``abs`` has derivative 0
    at 0, ``p``-norms are 0-safe like the 2-norm; ``ord=0`` counts and has
    zero derivative; ``'nuc'``, 2 and -2 go through ``svd``).

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jacfwd, ops
    >>> jacfwd(ops.linalg.norm)(np.array([3.0, 4.0]))
    array([0.6, 0.8])
    >>> jacfwd(ops.linalg.norm)(np.zeros(2))
    array([0., 0.])
    """
    n = ndim_of(x)
    shape = shape_of(x)
    if axis is None:
        if ord is None:
            out = _norm2(x, tuple(range(-n, 0)), keepdims)
            return out
        if n == 1:
            return _vector_norm(x, ord, (-1,), keepdims)
        if n == 2:
            return _matrix_norm(x, ord, (-2, -1), keepdims)
        raise ValueError(f"norm: with ord={ord!r} and axis=None, x must be 1-d or 2-d, "
                         f"got shape {shape}; pass axis")
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    if len(axes) not in (1, 2):
        raise ValueError(f"norm: axis must be an int or a tuple of 1 or 2 ints, got {axis!r}")
    normalized = [normalize_axes(a, n, "norm: axis")[0] for a in axes]
    if len(axes) == 1:
        return _vector_norm(x, ord, tuple(normalized), keepdims)
    if normalized[0] == normalized[1]:
        raise ValueError(f"norm: axis={axis!r} repeats an axis")
    return _matrix_norm(x, ord, tuple(normalized), keepdims)


# -- array-API spellings -------------------------------------------------------------------
def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """The array API's ``linalg.vector_norm``: a vector norm over ``axis`` (all axes by default).

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import ops
    >>> float(ops.linalg.vector_norm(np.array([[3.0], [4.0]])))
    5.0
    """
    axes = normalize_axes(axis, ndim_of(x), "vector_norm: axis")
    return _vector_norm(x, ord, axes, keepdims)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """The array API's ``linalg.matrix_norm`` over the last two axes.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import ops
    >>> float(ops.linalg.matrix_norm(np.eye(2), ord="nuc"))
    2.0
    """
    _check_matrix(x, "matrix_norm", "x", square=False)
    return _matrix_norm(x, ord, (-2, -1), keepdims)


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


def eigvalsh(x, /, UPLO="L"):
    """Eigenvalues of symmetric matrices (see :func:`eigh`), ascending.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import ops
    >>> ops.linalg.eigvalsh(np.diag([3.0, 1.0])).tolist()
    [1.0, 3.0]
    """
    return eigh(x, UPLO).eigenvalues


# -- einsum ---------------------------------------------------------------------------------
def _einsum_impl(xp, *operands, subscripts):
    fn = getattr(xp, "einsum", None)
    if fn is None:
        name = getattr(xp, "__name__", type(xp).__name__)
        raise NotImplementedError(
            f"einsum: the array namespace {name!r} has no einsum function (it is not part of "
            "the array API standard); use NumPy or CuPy arrays, or write the contraction "
            "with matmul, tensordot, sum and broadcasting")
    if len(operands) > 2:
        # Without a contraction order, three or more operands run as one nested
        # loop over every letter (the VJP's identity and ones operands included).
        try:
            return fn(subscripts, *operands, optimize=True)
        except TypeError:  # an einsum without the keyword
            pass
    return fn(subscripts, *operands)


def _split_subscripts(subscripts):
    ins, out = subscripts.split("->")
    return ins.split(","), out


def _unused_letters(subscripts):
    return iter([c for c in string.ascii_letters if c not in subscripts])


def _einsum_jvp(primals, tangents, ans, *, subscripts):
    # Multilinear: the sum over operands of einsum with that operand's tangent.
    terms, out = _split_subscripts(subscripts)
    batch = next(_unused_letters(subscripts)) if _batched(primals, tangents) else ""
    result = None
    for i, t in enumerate(tangents):
        if t is None:
            continue
        subs = list(terms)
        subs[i] = batch + subs[i]
        ops_ = list(primals)
        ops_[i] = t
        term = bind(_einsum_p, *ops_, subscripts=",".join(subs) + "->" + batch + out)
        result = term if result is None else _add(result, term)
    return result


def _einsum_vjp(g, ans, *args, subscripts):
    # The cotangent of operand i contracts g with the other operands onto
    # operand i's subscripts; a letter found only in operand i is supplied by
    # a vector of ones (broadcasting), a repeated letter (a diagonal) by an
    # identity matrix pairing it with a fresh letter.
    terms, out = _split_subscripts(subscripts)
    sizes = {}
    for term, a in zip(terms, args):
        sizes.update(zip(term, shape_of(a)))
    cots = []
    for i, term in enumerate(terms):
        others = [j for j in range(len(terms)) if j != i]
        available = set(out).union(*(terms[j] for j in others))
        fresh = _unused_letters(subscripts)
        target, extra_subs, extra_ops, seen = [], [], [], set()
        for c in term:
            if c in seen:
                c2 = next(fresh)
                target.append(c2)
                extra_subs.append(c + c2)
                extra_ops.append(_eye(args[i], sizes[c]))
                continue
            seen.add(c)
            target.append(c)
            if c not in available:
                extra_subs.append(c)
                extra_ops.append(_constant(args[i], "ones", (sizes[c],)))
        subs = ",".join([out] + [terms[j] for j in others] + extra_subs) + "->" + "".join(target)
        cots.append(bind(_einsum_p, g, *[args[j] for j in others], *extra_ops, subscripts=subs))
    return tuple(cots)


_einsum_p = custom("einsum", _einsum_impl, jvp=_einsum_jvp, vjp=_einsum_vjp,
                   chunked=True, saves="inputs", fresh=True)


@lru_cache(maxsize=512)
def _parse_einsum(subscripts, shapes):
    """Explicit subscripts without ellipses, the output, and the size of each letter.

    ``shapes`` is a tuple of shapes; the result is cached, since a program
    calls einsum with the same subscripts and shapes over and over.
    """
    s = subscripts.replace(" ", "")
    if s.count("->") > 1:
        raise ValueError(f"einsum: subscripts {subscripts!r} contain '->' more than once")
    ins, arrow, out = s.partition("->")
    terms = ins.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum: subscripts {subscripts!r} name {len(terms)} operand(s), "
                         f"got {len(shapes)} operand(s)")
    ellipsis_ndims = []
    for i, (term, shape) in enumerate(zip(terms, shapes)):
        letters = term.replace("...", "", 1)
        bad = [c for c in letters if c not in string.ascii_letters]
        if bad:
            raise ValueError(f"einsum: operand {i} subscripts {term!r} contain invalid "
                             f"character(s) {bad!r}; use letters and one '...'")
        if "..." in term:
            if len(shape) < len(letters):
                raise ValueError(f"einsum: operand {i} has shape {shape} (ndim {len(shape)}), "
                                 f"fewer axes than the {len(letters)} letters of {term!r}")
            ellipsis_ndims.append(len(shape) - len(letters))
        else:
            if len(letters) != len(shape):
                raise ValueError(f"einsum: operand {i} has shape {shape} (ndim {len(shape)}), "
                                 f"but its subscripts {term!r} name {len(letters)} axes")
            ellipsis_ndims.append(None)
    fresh = [c for c in string.ascii_letters if c not in s]
    n_ell = max((d for d in ellipsis_ndims if d is not None), default=0)
    if n_ell > len(fresh):
        raise ValueError("einsum: too many axes under '...' for the letters left")
    ell = "".join(fresh[:n_ell])
    terms_x = [t if d is None else t.replace("...", ell[n_ell - d:]) for t, d in zip(terms, ellipsis_ndims)]
    if arrow:
        if "..." in out:
            out = out.replace("...", ell, 1)
        elif n_ell:
            raise ValueError(f"einsum: the operands have axes under '...' but the output "
                             f"{out!r} has no '...'")
        bad = [c for c in out if c not in string.ascii_letters]
        if bad:
            raise ValueError(f"einsum: output subscripts {out!r} contain invalid character(s) {bad!r}")
        counts = Counter(out)
        if any(k > 1 for k in counts.values()):
            raise ValueError(f"einsum: output subscripts {out!r} repeat a letter")
        missing = [c for c in out if c not in "".join(terms_x)]
        if missing:
            raise ValueError(f"einsum: output letter(s) {missing} do not appear in the inputs")
    else:
        counts = Counter("".join(t.replace("...", "") for t in terms))
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1))
    sizes = {}
    for i, (term, shape) in enumerate(zip(terms_x, shapes)):
        own = {}
        for c, n in zip(term, shape):
            if own.setdefault(c, n) != n:
                raise ValueError(f"einsum: operand {i} repeats letter {c!r} over axes of "
                                 f"different sizes ({own[c]} != {n}), shape {shape}")
            if sizes.get(c, 1) == 1:
                sizes[c] = n
            elif n not in (1, sizes[c]):
                raise ValueError(f"einsum: letter {c!r} has size {sizes[c]} in one operand and "
                                 f"{n} in operand {i} (shape {shape})")
    return tuple(terms_x), out, MappingProxyType(sizes)


def einsum(subscripts, *operands, optimize=None):
    """Einstein summation, as ``numpy.einsum``, differentiable in every mode.

    Parameters
    ----------
    subscripts : str
        Letters per operand separated by commas, ``'...'`` for broadcast
        axes, and optionally ``'->'`` and the output letters (without it,
        the output is the letters that appear once, sorted, as in NumPy).
        Axes of size 1 broadcast against the same letter elsewhere.
    *operands : arrays or value types
    optimize : ignored
        Accepted for NumPy compatibility; the contraction order is chosen
        by the backend.

    The backend must provide ``einsum`` (NumPy and CuPy do; the array API
    standard does not, so ``array_api_strict`` raises NotImplementedError).

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp, ops
    >>> a = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> out, t = jvp(lambda a: ops.einsum("ij,ij->", a, a), (a,), (np.ones_like(a),))
    >>> float(out), float(t)
    (30.0, 20.0)
    """
    del optimize
    if not isinstance(subscripts, str):  # the interleaved form: operand, sublist, ...
        subscripts, operands = _einsum_subscripts((subscripts,) + operands)
    if not operands:
        raise ValueError("einsum: needs at least one operand")
    terms, out, sizes = _parse_einsum(subscripts, tuple(shape_of(o) for o in operands))
    ops_ = []
    for term, o in zip(terms, operands):
        target = tuple(sizes[c] for c in term)
        if shape_of(o) != target:
            o = _shape.broadcast_to(o, target)
        ops_.append(o)
    return bind(_einsum_p, *ops_, subscripts=",".join(terms) + "->" + out)



def _einsum_subscripts(args):
    """The operands and subscripts of the interleaved form
    ``einsum(a, [0, 1], b, [1, 2], [0, 2])``."""
    letters = string.ascii_letters

    def term(sub):
        if not isinstance(sub, (list, tuple)) or not all(
                s is Ellipsis or (isinstance(s, int) and 0 <= s < len(letters)) for s in sub):
            raise TypeError("einsum: subscripts must be a string such as 'ij,jk->ik', or the "
                            "interleaved form einsum(a, [0, 1], b, [1, 2], [0, 2]) with sublists "
                            f"of ints below {len(letters)}; got a sublist {sub!r}")
        return "".join("..." if s is Ellipsis else letters[s] for s in sub)

    operands, terms = list(args[0::2]), [term(s) for s in args[1::2]]
    out = "->" + term(args[-1]) if len(args) % 2 else ""
    if len(args) % 2:
        operands = operands[:-1]
    return ",".join(terms) + out, operands


# -- built from the entries above ---------------------------------------------------------
def _pinv_jvp(primals, tangents, ans, **_):
    (a,), (ta,) = primals, tangents
    p = ans
    m, n = shape_of(a)[-2], shape_of(a)[-1]
    left = _sub(_eye(a, m), matmul(a, p))   # I - A P, m x m
    right = _sub(_eye(a, n), matmul(p, a))  # I - P A, n x n
    tt = _T(ta)
    return _add(_sub(matmul(matmul(p, _T(p)), matmul(tt, left)), matmul(p, matmul(ta, p))),
                matmul(right, matmul(tt, matmul(_T(p), p))))


def _pinv_vjp(g, ans, a, **_):
    p = ans
    m, n = shape_of(a)[-2], shape_of(a)[-1]
    left = _sub(_eye(a, m), matmul(a, p))
    right = _sub(_eye(a, n), matmul(p, a))
    gt, pt = _T(g), _T(p)
    return (_add(_sub(matmul(left, matmul(gt, matmul(p, pt))), matmul(pt, matmul(g, pt))),
                 matmul(matmul(pt, p), matmul(gt, right))),)


def _pinv_impl(xp, a, *, rcond):
    return xp.linalg.pinv(a) if rcond is None else xp.linalg.pinv(a, rtol=rcond)


_pinv_p = custom("pinv", _pinv_impl, jvp=_pinv_jvp, vjp=_pinv_vjp, chunked=True, saves="all", fresh=True)


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
    _check_matrix(a, "pinv", square=False)
    _real_only(a, "pinv")
    return bind(_pinv_p, a, rcond=rtol if rtol is not None else rcond)


def matrix_power(a, n):
    """``a`` to the integer power ``n`` by repeated squaring (``inv(a)`` for ``n < 0``)."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"matrix_power: n must be an int, got {type(n).__name__}")
    _check_matrix(a, "matrix_power")
    if n < 0:
        a, n = inv(a), -n
    if n == 0:
        return _shape.broadcast_to(_eye(a, shape_of(a)[-1]), shape_of(a))
    out = None
    while n:
        if n & 1:
            out = a if out is None else matmul(out, a)
        n >>= 1
        if n:
            a = matmul(a, a)
    return out


def multi_dot(arrays, *, out=None):
    """``numpy.linalg.multi_dot``: the chained product (first and last may be 1-d)."""
    if out is not None:
        raise TypeError("multi_dot: out= is not supported; assign the result instead")
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError(f"multi_dot: needs at least two arrays, got {len(arrays)}")
    result = arrays[0]
    for x in arrays[1:]:
        result = matmul(result, x)
    return result


def cond(x, p=None):
    """The condition number, as ``numpy.linalg.cond``: a ratio of singular values
    for ``p`` None, 2 or -2, else ``norm(x, p) * norm(inv(x), p)``."""
    if p is None or p in (2, -2):
        s = svdvals(x)
        big, small = s[..., 0], s[..., -1]
        return _div(small, big) if p == -2 else _div(big, small)
    return _mul(norm(x, p, axis=(-2, -1)), norm(inv(x), p, axis=(-2, -1)))


def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    """``numpy.linalg.matrix_rank`` of the values: an integer, no derivative."""
    def rank(r):  # each element's under vmap
        if isinstance(r, np.ndarray):
            return np.linalg.matrix_rank(r, tol, hermitian, rtol=rtol)
        xp = namespace_of([r])
        return xp.linalg.matrix_rank(r) if rtol is None else xp.linalg.matrix_rank(r, rtol=rtol)
    return on_values(rank, A)


def lstsq(a, b, rcond=None):
    """``numpy.linalg.lstsq``: ``(x, residuals, rank, s)``, with ``x = pinv(a) @ b``;
    singular values below ``rcond`` times the largest count as zero (default
    ``max(m, n) * eps``, as NumPy).

    ``x``, ``residuals`` and ``s`` are differentiable where the rank of ``a`` does not change.
    """
    _check_matrix(a, "lstsq", square=False)
    m, n = shape_of(a)
    rank = matrix_rank(a, rtol=rcond)
    x = matmul(pinv(a, rcond=rcond), b)
    if _all_full_rank(rank, n, "lstsq") and m > n:
        resid = _sub(b, matmul(a, x))
        residuals = _red.sum(_mul(resid, resid), axis=0)
        if ndim_of(b) == 1:
            residuals = _shape.reshape(residuals, (1,))
    else:
        residuals = _constant(a, "zeros", (0,))
    return x, residuals, rank, svdvals(a)


def _all_full_rank(rank, n, who):
    """Whether ``rank == n``; under vmap, for every element (NumPy's residuals are
    empty below full rank, so a batch mixing both has no one shape: refused)."""
    full = to_host(raw(rank)) == n  # every element's: a check, not a choice per element
    if full.all() or not full.any():
        return bool(full.all())
    raise TypeError(f"vmap: {who}: the residuals are empty for the elements of the batch whose "
                    "matrix is rank deficient and not for the others, so they have no one shape")


def tensorinv(a, ind=2):
    """``numpy.linalg.tensorinv``: ``inv`` of ``a`` reshaped to a square matrix."""
    s = shape_of(a)
    rows = math.prod(s[:ind])
    return _shape.reshape(inv(_shape.reshape(a, (rows, -1))), s[ind:] + s[:ind])


def tensorsolve(a, b, axes=None):
    """``numpy.linalg.tensorsolve``: ``solve`` of ``a`` reshaped to a square matrix."""
    if axes is not None:
        moved = [ax % ndim_of(a) for ax in axes]
        a = _shape.moveaxis(a, moved, [-len(moved) + i for i in range(len(moved))])
    rest = shape_of(a)[ndim_of(b):]
    x = solve(_shape.reshape(a, (math.prod(shape_of(b)), -1)), _shape.reshape(b, (-1,)))
    return _shape.reshape(x, rest)


def vecdot(x1, x2, /, *, axis=-1):
    """The array API's (and NumPy's) ``vecdot``: ``sum(conj(x1) * x2, axis)``."""
    return _red.sum(_mul(_ew.conj(x1), x2), axis=axis)


def matvec(x1, x2, /):
    """``numpy.matvec``: matrices of ``x1`` times vectors of ``x2``, broadcast."""
    return _shape.squeeze(matmul(x1, _shape.expand_dims(x2, -1)), -1)


def vecmat(x1, x2, /):
    """``numpy.vecmat``: conjugated vectors of ``x1`` times matrices of ``x2``, broadcast."""
    return _shape.squeeze(matmul(_shape.expand_dims(_ew.conj(x1), -2), x2), -2)


def diagonal(x, /, *, offset=0):
    """The diagonals of the last two axes (the array API's ``linalg.diagonal``)."""
    return ops.diagonal(x, offset, -2, -1)


def trace(x, /, *, offset=0, dtype=None):
    """The traces over the last two axes (the array API's ``linalg.trace``)."""
    return _red.sum(diagonal(x, offset=offset), axis=-1)


# The array API's spellings in ``linalg`` of functions ``ops`` has at the top level.
def cross(x1, x2, /, *, axis=-1):
    return ops.cross(x1, x2, axis=axis)


def outer(x1, x2, /):
    return ops.outer(x1, x2)


def tensordot(x1, x2, /, *, axes=2):
    return ops.tensordot(x1, x2, axes)


def matrix_transpose(x, /):
    return _T(x)

"""``numpy.linalg`` (``ops.linalg``): the linear-algebra entries' functions
(``dualad/_primitives/linalg/``), the composites built from them (``matrix_power``,
``multi_dot``, ``cond``, ``matrix_rank``, ``lstsq``, ``tensorinv``, ``tensorsolve``) and
the array API's spellings in ``linalg`` of functions ``ops`` has at the top level.
"""

from __future__ import annotations

import math

import numpy as np

from dualad._base.backend import namespace_of, to_host
from dualad._base.shapes import ndim_of, raw, shape_of
from dualad._numpy import diagonals as _diagonals
from dualad._numpy import products as _products
from dualad._numpy.products import matvec, vecdot, vecmat
from dualad._primitives import elementwise as _ew
from dualad._primitives import shape as _shape
from dualad._primitives.linalg import triangular as _triangular  # noqa: F401  (the table's; dualad.scipy.linalg's)
from dualad._primitives.linalg.common import (
    EighResult,
    EigResult,
    QRResult,
    SlogdetResult,
    SVDResult,
    check_matrix,
    constant_like,
    eye_like,
)
from dualad._primitives.linalg.decompositions import cholesky, lu, qr
from dualad._primitives.linalg.determinants import det, slogdet
from dualad._primitives.linalg.eigen import eig, eigh, eigvals, eigvalsh
from dualad._primitives.linalg.einsum import einsum
from dualad._primitives.linalg.matmul import matmul
from dualad._primitives.linalg.norm import matrix_norm, norm, vector_norm
from dualad._primitives.linalg.solve import inv, pinv, solve
from dualad._primitives.linalg.svd import svd, svdvals
from dualad._table.host import on_values

__all__ = ["EigResult", "EighResult", "QRResult", "SVDResult", "SlogdetResult", "cholesky", "cond",
           "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "einsum", "inv",
           "lstsq", "lu", "matmul", "matrix_norm", "matrix_power", "matrix_rank",
           "matrix_transpose", "matvec", "multi_dot", "norm", "outer", "pinv", "qr", "slogdet",
           "solve", "svd", "svdvals", "tensordot", "tensorinv", "tensorsolve", "trace", "vecdot",
           "vecmat", "vector_norm"]


def matrix_power(a, n):
    """``a`` to the integer power ``n`` by repeated squaring (``inv(a)`` for ``n < 0``)."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"matrix_power: n must be an int, got {type(n).__name__}")
    check_matrix(a, "matrix_power")
    if n < 0:
        a, n = inv(a), -n
    if n == 0:
        return _shape.broadcast_to(eye_like(a, shape_of(a)[-1]), shape_of(a))
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
        return _ew.divide(small, big) if p == -2 else _ew.divide(big, small)
    return _ew.multiply(norm(x, p, axis=(-2, -1)), norm(inv(x), p, axis=(-2, -1)))


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
    return (*least_squares_solution(a, b, rcond), svdvals(a))


def least_squares_solution(a, b, rcond=None):
    """:func:`lstsq`'s ``(x, residuals, rank)``, without the singular values (whose
    derivative, which forward mode carries along, needs distinct ones)."""
    check_matrix(a, "lstsq", square=False)
    m, n = shape_of(a)
    rank = matrix_rank(a, rtol=rcond)
    x = matmul(pinv(a, rcond=rcond), b)
    if _all_full_rank(rank, n, "lstsq") and m > n:
        resid = _ew.subtract(b, matmul(a, x))
        residuals = _shape.sum(_ew.multiply(resid, resid), axis=0)
        if ndim_of(b) == 1:
            residuals = _shape.reshape(residuals, (1,))
    else:
        residuals = constant_like(a, "zeros", (0,))
    return x, residuals, rank


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



def diagonal(x, /, *, offset=0):
    """The diagonals of the last two axes (the array API's ``linalg.diagonal``)."""
    return _diagonals.diagonal(x, offset, -2, -1)


def trace(x, /, *, offset=0, dtype=None):
    """The traces over the last two axes (the array API's ``linalg.trace``)."""
    return _shape.sum(diagonal(x, offset=offset), axis=-1)


# The array API's spellings in ``linalg`` of functions ``ops`` has at the top level.
def cross(x1, x2, /, *, axis=-1):
    return _products.cross(x1, x2, axis=axis)


def outer(x1, x2, /):
    return _products.outer(x1, x2)


def tensordot(x1, x2, /, *, axes=2):
    return _products.tensordot(x1, x2, axes)


def matrix_transpose(x, /):
    return _shape.matrix_transpose(x)

"""``matmul``, with NumPy's 1-d rules, and its JVP and VJPs."""

from __future__ import annotations

import numpy as np

from dualad._base.core import bind
from dualad._base.shapes import ndim_of, shape_of
from dualad._primitives import shape as _shape
from dualad._primitives.linalg.common import _add, _batched, _lift, _mul
from dualad._table import batching
from dualad._table.entries import custom

__all__ = ["matmul"]


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
    nx, ny = ndim_of(x), ndim_of(y)
    # A chunk of k directions through a matrix-vector product, where only the vector
    # moves (jacfwd of A @ x, of x @ B): the k products are one matrix product, (k, n)
    # rows against the matrix, with no promoted axes to add and drop
    if nx == 2 and ny == 1 and tx is None:
        return matmul(ty, _shape.matrix_transpose(x))
    if nx == 1 and ny == 2 and ty is None:
        return matmul(tx, y)
    # Otherwise: promote 1-d operands to matrices as NumPy does (so that k is never
    # taken for a matrix axis), give each tangent the output's batch rank behind k,
    # and drop the promoted axes at the end.
    x2 = _shape.expand_dims(x, 0) if nx == 1 else x
    y2 = _shape.expand_dims(y, -1) if ny == 1 else y
    nd = max(ndim_of(x2), ndim_of(y2))
    out = None
    if tx is not None:
        out = matmul(_lift(_shape.expand_dims(tx, 1) if nx == 1 else tx, nd), y2)
    if ty is not None:
        ty2 = _lift(_shape.expand_dims(ty, -1) if ny == 1 else ty, nd)
        k, n, cols = shape_of(ty2)[0], shape_of(x2)[-1], shape_of(ty2)[-1]
        if ndim_of(x2) == 2 and ndim_of(ty2) == 3 and cols == 1:
            # k matrix-vector products x2 @ ty[i] are one matrix product ty x2^T: one BLAS
            # call where matmul's stack would make k (the JVP of A @ x by a chunk, and of
            # its VJP's A^T g under forward-over-reverse)
            term = _shape.reshape(matmul(_shape.reshape(ty2, (k, n)), _shape.matrix_transpose(x2)),
                                  (k, shape_of(x2)[0], 1))
        else:
            term = matmul(x2, ty2)
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


def _matmul_batch(vals, batched, params, k):
    """matmul of a batch (vmap): a batched vector becomes a stack of one-row (``x``) or
    one-column (``y``) matrices, whose unit axis the result then drops; the rest
    broadcasts as NumPy's stacked matrices do, in one call."""
    x, y = vals
    row = batched[0] and ndim_of(x) == 2  # a batch of vectors x
    col = batched[1] and ndim_of(y) == 2  # a batch of vectors y
    y_vector = ndim_of(y) - batched[1] == 1
    if row:
        x = _shape.expand_dims(x, -2)
    if col:
        y = _shape.expand_dims(y, -1)
    cores = tuple(1 if ndim_of(v) - b == 1 else 2 for v, b in zip((x, y), batched))
    out = batching.stacked(_matmul_p, cores, [x, y], batched, params)
    if row and col:
        return _shape.reshape(out, shape_of(out)[:-2])
    if row:
        return _shape.squeeze(out, -1 if y_vector else -2)
    return _shape.squeeze(out, -1) if col else out


def _matmul_impl(xp, x, y):
    # NumPy's arrays without array_api_compat's wrapper (0.4 us a call on small matrices)
    return np.matmul(x, y) if type(x) is np.ndarray is type(y) else xp.matmul(x, y)


_matmul_p = custom("matmul", _matmul_impl,
                   jvp=_matmul_jvp, vjp=(_matmul_vjp_x, _matmul_vjp_y), chunked=True,
                   saves="inputs", fresh=True, batch=_matmul_batch,
                   sparsity="matmul", second_order="matmul", taylor="product", partition="matmul")


def matmul(x, y):
    """``x @ y`` with NumPy's rules for 1-d operands and batch broadcasting."""
    if ndim_of(x) == 0 or ndim_of(y) == 0:
        raise ValueError(f"matmul needs operands of ndim >= 1, got shapes {shape_of(x)} and {shape_of(y)}")
    return bind(_matmul_p, x, y)

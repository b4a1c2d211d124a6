"""Linear algebra primitives: matmul (with NumPy's 1-d rules) and the
``linalg`` family, each with its JVP and VJP side by side."""

from __future__ import annotations

from dualad._core import Primitive, bind
from dualad._rules import shape as _shape
from dualad._shapes import ndim_of, shape_of

__all__ = ["matmul"]


def _lift(t, ndim):
    """Give a chunk of tangents ``(k,) + shape`` room to broadcast to ``ndim`` dims."""
    s = shape_of(t)
    if len(s) - 1 >= ndim:
        return t
    return _shape.reshape(t, s[:1] + (1,) * (ndim - len(s) + 1) + s[1:])


def _matmul_jvp(primals, tangents, ans, **_):
    x, y = primals
    tx, ty = tangents
    nx, ny = ndim_of(x), ndim_of(y)
    out = None
    if tx is not None:
        batched = ndim_of(tx) > nx
        if batched and nx >= 2 and ny > nx:
            tx = _lift(tx, ny)
        out = matmul(tx, y)
    if ty is not None:
        if ndim_of(ty) > ny:  # a chunk of directions on the right operand
            if ny == 1:
                term = matmul(x, _shape.matrix_transpose(ty)) if nx >= 1 else None
                if nx >= 2:
                    term = _shape.moveaxis(term, -1, 0)
            else:
                term = matmul(x, _lift(ty, nx) if nx > ny else ty)
        else:
            term = matmul(x, ty)
        out = term if out is None else out + term
    return out


def _matmul_vjp(g, ans, x, y):
    nx, ny = ndim_of(x), ndim_of(y)
    if nx == 1 and ny == 1:
        return g * y, g * x
    if nx == 1:
        gx = _shape.unbroadcast(matmul(y, _shape.expand_dims(g, -1))[..., 0], shape_of(x))
        gy = _shape.unbroadcast(_shape.expand_dims(x, -1) * _shape.expand_dims(g, -2), shape_of(y))
        return gx, gy
    if ny == 1:
        gx = _shape.unbroadcast(_shape.expand_dims(g, -1) * y, shape_of(x))
        gy = _shape.unbroadcast(matmul(_shape.expand_dims(g, -2), x)[..., 0, :], shape_of(y))
        return gx, gy
    gx = _shape.unbroadcast(matmul(g, _shape.matrix_transpose(y)), shape_of(x))
    gy = _shape.unbroadcast(matmul(_shape.matrix_transpose(x), g), shape_of(y))
    return gx, gy


_matmul_p = Primitive("matmul", lambda xp, x, y: xp.matmul(x, y), "custom",
                      jvp=_matmul_jvp, vjp=_matmul_vjp, batch_params=True, saves="inputs")


def matmul(x, y):
    """``x @ y`` with NumPy's rules for 1-d operands and batch broadcasting."""
    if ndim_of(x) == 0 or ndim_of(y) == 0:
        raise ValueError(f"matmul needs operands of ndim >= 1, got shapes {shape_of(x)} and {shape_of(y)}")
    return bind(_matmul_p, x, y)


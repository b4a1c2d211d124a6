"""Products of vectors, matrices and tensors, as NumPy spells them: ``dot``, ``vdot``,
``inner``, ``outer``, ``tensordot``, ``kron``, ``cross``, and the array API's
``vecdot``, ``matvec`` and ``vecmat``.
"""

from __future__ import annotations

from dualad._base.core import as_arrays
from dualad._base.shapes import ndim_of, shape_of
from dualad._primitives import elementwise as _ew
from dualad._primitives import shape as _shape
from dualad._primitives.linalg.matmul import matmul

__all__ = ["tensordot", "dot", "vdot", "inner", "outer", "kron", "cross", "vecdot", "matvec", "vecmat"]


def tensordot(x, y, axes=2):
    """``numpy.tensordot`` as transposes, reshapes and one matmul."""
    nx, ny = ndim_of(x), ndim_of(y)
    if isinstance(axes, int):
        ax, ay = list(range(nx - axes, nx)), list(range(axes))
    else:
        ax, ay = ([a] if isinstance(a, int) else list(a) for a in axes)
    ax, ay = [a % nx for a in ax], [a % ny for a in ay]
    sx, sy = shape_of(x), shape_of(y)
    if [sx[a] for a in ax] != [sy[a] for a in ay]:
        raise ValueError(f"tensordot: contracted axes have shapes {[sx[a] for a in ax]} "
                         f"and {[sy[a] for a in ay]}")
    fx = [a for a in range(nx) if a not in ax]
    fy = [a for a in range(ny) if a not in ay]
    k = 1
    for a in ax:
        k *= sx[a]
    mx = 1
    for a in fx:
        mx *= sx[a]
    my = 1
    for a in fy:
        my *= sy[a]
    xm = _shape.reshape(_shape.permute_dims(x, tuple(fx + ax)), (mx, k))
    ym = _shape.reshape(_shape.permute_dims(y, tuple(ay + fy)), (k, my))
    return _shape.reshape(matmul(xm, ym), tuple(sx[a] for a in fx) + tuple(sy[a] for a in fy))


def dot(x, y):
    """``numpy.dot``: matmul for 1-d and 2-d, a sum-product over the last and
    second-to-last axes otherwise, scaling for 0-d."""
    nx, ny = ndim_of(x), ndim_of(y)
    if nx == 0 or ny == 0:
        return x * y
    if ny == 1 or (nx <= 2 and ny <= 2):
        return matmul(x, y)
    return tensordot(x, y, axes=([-1], [-2]))


def vdot(x, y):
    return _shape.sum(_shape.ravel(x) * _shape.ravel(y))


def inner(x, y):
    if ndim_of(x) == 0 or ndim_of(y) == 0:
        return x * y
    return tensordot(x, y, axes=([-1], [-1]))


def outer(x, y):
    return _shape.reshape(x, (-1, 1)) * _shape.reshape(y, (1, -1))


# -- products of vectors ------------------------------------------------------------------------------
def kron(a, b):
    """``numpy.kron``: an outer product with interleaved axes, reshaped."""
    nd = max(ndim_of(a), ndim_of(b))
    sa = (1,) * (nd - ndim_of(a)) + shape_of(a)
    sb = (1,) * (nd - ndim_of(b)) + shape_of(b)
    a = _shape.reshape(a, tuple(d for s in sa for d in (s, 1)))
    b = _shape.reshape(b, tuple(d for s in sb for d in (1, s)))
    return _shape.reshape(a * b, tuple(x * y for x, y in zip(sa, sb)))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """``numpy.cross`` of 3-vectors (and of 2-vectors: the z component)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = as_arrays((a, b))
    a = _shape.moveaxis(a, axisa, -1)
    b = _shape.moveaxis(b, axisb, -1)
    na, nb = shape_of(a)[-1], shape_of(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError(f"cross: vectors must have 2 or 3 components, got {na} and {nb}")

    def comp(v, i, n):
        return v[..., i] if i < n else 0.0 * v[..., 0]

    a0, a1, a2 = (comp(a, i, na) for i in range(3))
    b0, b1, b2 = (comp(b, i, nb) for i in range(3))
    z = a0 * b1 - a1 * b0
    if na == 2 and nb == 2:
        return z
    out = _shape.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, z], axis=-1)
    return _shape.moveaxis(out, -1, axisc)


def vecdot(x1, x2, /, *, axis=-1):
    """The array API's (and NumPy's) ``vecdot``: ``sum(conj(x1) * x2, axis)``."""
    return _shape.sum(_ew.multiply(_ew.conj(x1), x2), axis=axis)


def matvec(x1, x2, /):
    """``numpy.matvec``: matrices of ``x1`` times vectors of ``x2``, broadcast."""
    return _shape.squeeze(matmul(x1, _shape.expand_dims(x2, -1)), -1)


def vecmat(x1, x2, /):
    """``numpy.vecmat``: conjugated vectors of ``x1`` times matrices of ``x2``, broadcast."""
    return _shape.squeeze(matmul(_shape.expand_dims(_ew.conj(x1), -2), x2), -2)

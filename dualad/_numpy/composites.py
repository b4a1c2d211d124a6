"""Functions composed from primitives: they need no entry in the table,
since every mode differentiates them through the primitives they call."""

from __future__ import annotations

import math

import numpy as np

from dualad._base.backend import SCALAR_TYPES, namespace_of, to_host
from dualad._base.core import as_arrays
from dualad._base.shapes import across_batch, is_complex, primal, raw, shape_of
from dualad._primitives import elementwise as _ew
from dualad._primitives import indexing as _indexing
from dualad._primitives import reductions as _red
from dualad._primitives import shape as _shape
from dualad._table.host import on_values

__all__ = ["clip", "sigmoid", "softplus", "logsumexp", "softmax",
           "log_softmax", "positive", "fmax", "fmin", "nan_to_num", "sinc", "deg2rad",
           "rad2deg", "radians", "degrees", "logaddexp2", "mod",
           "fmod", "divmod", "copysign", "heaviside", "fix", "modf", "ldexp", "frexp", "float_power",
           "real_if_close"]


def clip(x, a_min=None, a_max=None):
    """Clip ``x`` to ``[a_min, a_max]``; the derivative in ``x`` is 1 on the closed
    interval (its ends included, as ``torch.clamp``), 0 outside.

    Examples
    --------
    >>> from dualad import derivative, ops
    >>> [derivative(lambda x: ops.clip(x, 0.0, 1.0))(x) for x in (-1.0, 0.0, 1.0, 2.0)]
    [0.0, 1.0, 1.0, 0.0]
    """
    r = primal(x)
    if a_min is not None:
        x = _ew.where(_ew.less(r, primal(a_min)), a_min, x)
    if a_max is not None:
        x = _ew.where(_ew.greater(r, primal(a_max)), a_max, x)
    return x


def sigmoid(x):
    """The logistic function, stable for large ``|x|``.

    Examples
    --------
    >>> from dualad import derivative, ops
    >>> derivative(ops.sigmoid)(0.0)
    0.25
    """
    # exp(-|x|), written with where: abs'(0) = 0 would make sigmoid'(0) = 0.
    positive = _ew.greater_equal(x, 0)
    e = _ew.exp(_ew.where(positive, _ew.negative(x), x))
    return _ew.where(positive, 1.0 / (1.0 + e), e / (1.0 + e))


def softplus(x):
    """``log(1 + exp(x))`` without overflow."""
    positive = _ew.greater_equal(x, 0)
    e = _ew.exp(_ew.where(positive, _ew.negative(x), x))  # exp(-|x|), see sigmoid
    return _ew.where(positive, x, 0.0) + _ew.log1p(e)


def logsumexp(x, axis=None, keepdims=False):
    """``log(sum(exp(x)))`` over ``axis``, shifted by the (constant) maximum."""
    m = _ew.stop_gradient(_red.max(x, axis, keepdims=True))
    m = _ew.where(_ew.isfinite(m), m, 0.0)
    out = _ew.log(_shape.sum(_ew.exp(x - m), axis, keepdims=True)) + m
    return out if keepdims else _shape.squeeze(out, axis) if axis is not None else _shape.reshape(out, ())


def log_softmax(x, axis=-1):
    return x - logsumexp(x, axis, keepdims=True)


def softmax(x, axis=-1):
    return _ew.exp(log_softmax(x, axis))


# -- more elementwise functions, as NumPy spells them ---------------------------------------
def positive(x):
    return x


def fmax(x, y):
    """``numpy.fmax``: the maximum, ignoring a NaN in either argument."""
    return _ew.where(_ew.isnan(primal(y)), x, _ew.where(_ew.isnan(primal(x)), y, _ew.maximum(x, y)))


def fmin(x, y):
    """``numpy.fmin``: the minimum, ignoring a NaN in either argument."""
    return _ew.where(_ew.isnan(primal(y)), x, _ew.where(_ew.isnan(primal(x)), y, _ew.minimum(x, y)))


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """``numpy.nan_to_num``: replaced entries are constants (no derivative)."""
    r = raw(x)
    info = np.finfo(float) if _is_scalar(r) else namespace_of([r]).finfo(r.dtype)
    hi = float(info.max) if posinf is None else posinf
    lo = float(info.min) if neginf is None else neginf
    r = primal(x)  # masks from the values (batched under vmap)
    out = _ew.where(_ew.isnan(r), nan, x)
    out = _ew.where(_ew.logical_and(_ew.isinf(r), _ew.greater(r, 0)), hi, out)
    return _ew.where(_ew.logical_and(_ew.isinf(r), _ew.less(r, 0)), lo, out)


def sinc(x):
    """``sin(pi x) / (pi x)``; near 0 its Taylor series, so every derivative is right there too.

    The series takes over where the quotient's derivatives lose digits to
    cancellation (their error grows as eps / x**k): below 1e-3, or 0.1 in
    single precision, where the series' first left-out term is below its eps.
    """
    px = x * math.pi
    r = raw(x)
    single = not _is_scalar(r) and namespace_of([r]).finfo(r.dtype).eps > 1e-10
    small = _ew.less(_ew.abs(primal(x)), 0.1 if single else 1e-3)
    safe = _ew.where(small, 1.0, px)
    p2 = px * px
    series = 1.0 - p2 / 6.0 + p2 * p2 / 120.0 - p2 * p2 * p2 / 5040.0
    return _ew.where(small, series, _ew.sin(safe) / safe)


def deg2rad(x):
    return x * (math.pi / 180.0)


def rad2deg(x):
    return x * (180.0 / math.pi)


radians, degrees = deg2rad, rad2deg


def logaddexp2(x, y):
    """``log2(2**x + 2**y)``."""
    x, y = as_arrays((x, y))
    ln2 = math.log(2.0)
    return _ew.logaddexp(x * ln2, y * ln2) / ln2


mod = _ew.remainder


def fmod(x, y):
    """C's ``fmod``: the remainder with the sign of ``x``."""
    return _ew.subtract(x, _ew.multiply(_ew.stop_gradient(_ew.trunc(_ew.divide(x, y))), y))


def divmod(x, y):
    return _ew.floor_divide(x, y), _ew.remainder(x, y)


def copysign(x, y):
    """``|x|`` with the sign of ``y`` (derivative 0 at ``x = 0``, as ``abs``)."""
    x, y = as_arrays((x, y))
    r = raw(y)
    negative = (math.copysign(1.0, r) < 0 if _is_scalar(r) else
                on_values(lambda v: namespace_of([v]).signbit(v), y))
    return _ew.where(negative, -_ew.abs(x), _ew.abs(x))


def heaviside(x, h0):
    """The step function: 0 below 0, ``h0`` at 0, 1 above. The derivative in ``x``
    is 0; ``h0``'s derivative reaches the entries where ``x == 0``."""
    r = primal(x)
    return _ew.where(_ew.less(r, 0), 0.0, _ew.where(_ew.equal(r, 0), h0, 1.0))


fix = _ew.trunc


def float_power(x, y):
    """``numpy.float_power``: ``x ** y`` in at least double precision."""
    x, y = as_arrays((x, y))
    return _ew.power(_promote64(x), _promote64(y))


def _promote64(x):
    r = raw(x)
    if _is_scalar(r):
        return x
    xp = namespace_of([raw(x)])
    wide = xp.complex128 if xp.isdtype(r.dtype, "complex floating") else xp.float64
    return _ew.astype(x, wide)


def _is_scalar(r):
    return type(r) in SCALAR_TYPES


def modf(x):
    """``numpy.modf``: ``(x - trunc(x), trunc(x))``; the fraction has derivative 1."""
    whole = _ew.trunc(x)
    return _ew.subtract(x, whole), whole


def ldexp(x1, x2):
    """``numpy.ldexp``: ``x1 * 2 ** x2`` for integer ``x2``."""
    return _ew.multiply(x1, _ew.power(2.0, primal(x2)))


def frexp(x):
    """``numpy.frexp``: ``(mantissa, exponent)``; the mantissa is ``x / 2 ** exponent``,
    the exponent an integer array with no derivative."""
    r = raw(x)
    exponent = (math.frexp(r)[1] if _is_scalar(r) else
                on_values(lambda v: _indexing._numbers_like(v, np.frexp(to_host(v))[1]), x))
    return _ew.divide(x, _ew.power(2.0, exponent)), exponent


def real_if_close(a, tol=100):
    """``a``'s real part where every imaginary part is below ``tol`` in size, else ``a``,
    as ``numpy.real_if_close``: ``tol`` above 1 counts machine epsilons of ``a``'s dtype.

    The choice is NumPy's, taken on the values (a guard under ``dualad.compile``, one
    choice for a whole batch under ``vmap``); the derivative is that of the result,
    ``real`` or the identity.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp, ops
    >>> jvp(ops.real_if_close, (np.array([2.0 + 1e-20j]),), (np.array([1.0 + 1.0j]),))
    (array([2.]), array([1.]))
    """
    if isinstance(a, (list, tuple)):
        a = _shape.asarray(a)
    if not is_complex(a):
        return a
    if tol > 1:
        r = raw(a)
        finfo = np.finfo(np.float64) if type(r) is complex else namespace_of([r]).finfo(r.dtype)
        tol = float(finfo.eps) * tol
    p = across_batch(a)
    if math.prod(shape_of(p)) == 0:
        return _ew.real(a)  # all of no imaginary parts are small
    # The largest imaginary part, by entries (a guard under compile): a NaN makes it NaN,
    # which is not below tol, as NumPy's all(abs(imag) < tol) is False at a NaN.
    largest = _red.max(_ew.abs(_ew.imag(p)))
    return _ew.real(a) if bool(_ew.less(largest, tol)) else a

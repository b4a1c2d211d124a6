"""Polynomials that need linear algebra or long division, as NumPy spells them
(coefficients highest power first): ``polyfit``, ``poly``, ``roots``, ``polydiv``.

Composites of the table's entries: a least-squares fit through ``lstsq``,
roots as the eigenvalues of the companion matrix, coefficients from roots by
repeated multiplication with ``(x - z)``. What NumPy decides from the values
(which leading zeros to strip, how many steps to divide) is decided on the
host from the values here too; it never reaches the derivatives.
"""

from __future__ import annotations

import warnings

import numpy as np

from dualad._base.backend import SCALAR_TYPES, is_float_dtype, namespace_of, to_host
from dualad._base.core import as_arrays
from dualad._base.shapes import (
    complex_dtype,
    concrete,
    dtype_of,
    is_complex,
    ndim_of,
    raw,
    same_for_every_element,
    shape_of,
)
from dualad._numpy.common import _fill_like, _slice
from dualad._numpy.conv import convolve
from dualad._numpy.joining import atleast_1d
from dualad._numpy.linalg import least_squares_solution
from dualad._numpy.products import outer
from dualad._primitives import elementwise as _ew
from dualad._primitives import indexing as _indexing
from dualad._primitives import shape as _shape
from dualad._primitives.linalg.eigen import eigvals
from dualad._primitives.linalg.matmul import matmul
from dualad._primitives.linalg.solve import inv
from dualad._primitives.linalg.svd import svdvals

__all__ = ["polyfit", "poly", "roots", "polydiv", "polyval", "polyadd", "polysub", "polymul", "polyder",
           "polyint", "vander"]

_numbers = _indexing._numbers_like  # host numbers in an operand's backend (and dtype)


def _host_to_array(p):
    """Lists and Python numbers as arrays (``asarray``); arrays and values as they are."""
    return _shape.asarray(p) if isinstance(p, (list, tuple)) or type(p) in SCALAR_TYPES else p


def _floating(p, like=None):
    """``p`` as an array of at least one dimension with a floating dtype (NumPy's
    ``atleast_1d(p) + 0.0``): host lists take the backend of ``like``."""
    if isinstance(p, (list, tuple)) or type(p) in SCALAR_TYPES:
        p = _shape.asarray(p, like=like if hasattr(raw(like), "dtype") else None)
    r = raw(p)
    xp = namespace_of([r])
    if not is_float_dtype(xp, dtype_of(r)):
        p = _ew.astype(p, xp.float64)
    return atleast_1d(p)


def _entry(x, i):
    """``x[i]`` as a 0-d value."""
    return _indexing.getitem(x, (i,))


# -- fitting --------------------------------------------------------------------------------------
def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """``numpy.polyfit``: the least-squares polynomial of degree ``deg`` through the
    points ``(x, y)`` (``y`` 1-d, or 2-d with one fit per column), optionally
    weighted by ``w``. Computed as NumPy computes it: the Vandermonde matrix,
    weighted, its columns scaled to unit norm, ``lstsq``, the scale divided out.

    Differentiable in ``x``, ``y`` and ``w`` where the fit's rank does not change
    (distinct ``x``, at least ``deg + 1`` of them). ``full`` and ``cov`` (``True``
    or ``"unscaled"``) return NumPy's extra outputs; ``rank`` has no derivative.
    float32 data give a float32 fit (NumPy's ``lstsq``, hence its ``polyfit``,
    answers float64 there).

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp, ops
    >>> x = np.array([0.0, 1.0, 2.0, 3.0])
    >>> c, dc = jvp(lambda y: ops.polyfit(x, y, 1), (2.0 * x + 1.0,), (x,))
    >>> np.round(c, 12).tolist(), np.round(dc, 12).tolist()
    ([2.0, 1.0], [1.0, 0.0])
    """
    order = int(deg) + 1
    if order < 1:
        raise ValueError(f"polyfit: expected deg >= 0, got {deg}")
    x = _floating(x, like=y)
    y = _floating(y, like=x)
    if ndim_of(x) != 1:
        raise TypeError(f"polyfit: expected a 1-d x, got shape {shape_of(x)}")
    if shape_of(x)[0] == 0:
        raise TypeError("polyfit: expected a non-empty x")
    if ndim_of(y) > 2:
        raise TypeError(f"polyfit: expected a 1-d or 2-d y, got shape {shape_of(y)}")
    if shape_of(x)[0] != shape_of(y)[0]:
        raise TypeError(f"polyfit: x and y have lengths {shape_of(x)[0]} and {shape_of(y)[0]}")
    n = shape_of(x)[0]
    if rcond is None:
        rx = raw(x)
        rcond = n * float(namespace_of([rx]).finfo(rx.dtype).eps)
    lhs, rhs = vander(x, order), y
    if w is not None:
        w = _floating(w, like=x)
        if ndim_of(w) != 1 or shape_of(w)[0] != n:
            raise TypeError(f"polyfit: expected w of shape ({n},), got {shape_of(w)}")
        column = _shape.reshape(w, (n, 1))
        lhs = _ew.multiply(lhs, column)
        rhs = _ew.multiply(rhs, column if ndim_of(rhs) == 2 else w)
    scale = _ew.sqrt(_shape.sum(_ew.multiply(lhs, lhs), axis=0))  # columns to unit norm
    lhs = _ew.divide(lhs, scale)
    # the columns have unit norm, so for evenly spread x the singular values tie: s (and
    # its derivative, undefined at ties) only where full=True asks for it
    c, resids, rank = least_squares_solution(lhs, rhs, rcond)
    c = _ew.divide(c, _shape.reshape(scale, (-1, 1)) if ndim_of(c) == 2 else scale)
    if not full and np.any(to_host(raw(rank)) != order):  # under vmap: any element's
        warnings.warn("Polyfit may be poorly conditioned", np.exceptions.RankWarning, stacklevel=2)
    if full:
        return c, resids, rank, svdvals(lhs), rcond
    if not cov:
        return c
    base = _ew.divide(inv(matmul(_shape.matrix_transpose(lhs), lhs)), outer(scale, scale))
    if ndim_of(y) == 2:  # one covariance matrix per column of y, along a last axis
        base = _shape.reshape(base, (order, order, 1))
    if cov == "unscaled":
        return c, base
    if n <= order:
        raise ValueError("polyfit: the number of data points must exceed order to scale the "
                         "covariance matrix")
    return c, _ew.multiply(base, _ew.divide(resids, float(n - order)))


# -- roots and coefficients -----------------------------------------------------------------------
def poly(seq_of_zeros):
    """``numpy.poly``: the coefficients of the monic polynomial with the given roots
    (1-d input), or the characteristic polynomial of a square matrix (its
    eigenvalues' polynomial), by repeated multiplication with ``(x - z)``.

    Dtypes: real roots give real coefficients, and so does a real matrix (its
    characteristic polynomial is real; NumPy also returns the real part there).
    Complex roots give complex coefficients, even when they come in conjugate
    pairs, where NumPy drops the (zero) imaginary part: a dtype that would
    depend on the values (JAX's ``jnp.poly`` keeps them complex too). An empty
    input gives ``1.0``, as NumPy's.

    The derivative for a matrix goes through its eigenvalues, so it needs them
    distinct (the coefficients themselves are smooth everywhere).

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp, ops
    >>> c, dc = jvp(ops.poly, (np.array([1.0, 2.0]),), (np.array([1.0, 0.0]),))
    >>> c.tolist(), dc.tolist()
    ([1.0, -3.0, 2.0], [-0.0, -1.0, 2.0])
    """
    z = atleast_1d(_host_to_array(seq_of_zeros))
    sh = shape_of(z)
    real_matrix = False
    if len(sh) == 2 and sh[0] == sh[1] and sh[0] != 0:
        real_matrix = not is_complex(z)
        z = eigvals(_floating(z))
    elif len(sh) == 1:
        z = _floating(z)
    else:
        raise ValueError(f"poly: input must be 1-d or a square 2-d array, got shape {sh}")
    if shape_of(z)[0] == 0:
        return 1.0
    zero = _numbers(z, [0.0])
    a = _numbers(z, [1.0])
    for k in range(shape_of(z)[0]):  # a(x) (x - z_k)
        a = _ew.subtract(_shape.concatenate([a, zero]), _ew.multiply(_indexing.getitem(z, (slice(k, k + 1),)),
                                                                     _shape.concatenate([zero, a])))
    return _ew.real(a) if real_matrix else a


def roots(p):
    """``numpy.roots``: the roots of the polynomial with coefficients ``p`` (highest
    power first), as the eigenvalues of its companion matrix. Leading zeros are
    dropped and trailing zeros give zero roots, as NumPy decides from the values.

    The roots are always complex (NumPy returns a real array when they all happen
    to be real: a dtype that would depend on the values) and come in the order
    ``eigvals`` gives, which is NumPy's. Derivatives need distinct roots; for
    functions that do not depend on the order (``sum(abs(r) ** 2)``) they are
    well defined.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import derivative, ops
    >>> float(derivative(lambda c: ops.sum(ops.real(ops.roots(ops.stack([1.0, -c, 2.0]))) ** 2))(3.0))
    6.0
    """
    p = atleast_1d(_host_to_array(p))
    if ndim_of(p) != 1:
        raise ValueError(f"roots: input must be a rank-1 array, got shape {shape_of(p)}")
    nonzero = np.flatnonzero(concrete(p, "roots (its length is set by the leading and trailing zeros of p)"))
    if nonzero.size == 0:
        return _numbers(_floating(p), np.zeros(0), complex_dtype(_floating(p)))
    trailing = shape_of(p)[0] - int(nonzero[-1]) - 1
    p = _floating(_indexing.getitem(p, (slice(int(nonzero[0]), int(nonzero[-1]) + 1),)))
    n = shape_of(p)[0]
    if n > 1:
        first = _ew.divide(_ew.negative(_indexing.getitem(p, (slice(1, None),))), _entry(p, 0))
        companion = _shape.concatenate([_shape.reshape(first, (1, n - 1)),
                                        _numbers(p, np.eye(n - 2, n - 1))], axis=0)
        out = eigvals(companion)
    else:
        out = _numbers(p, np.zeros(0), complex_dtype(p))
    if trailing:
        out = _shape.concatenate([out, _numbers(out, np.zeros(trailing))])
    return out


# -- division -------------------------------------------------------------------------------------
def polydiv(u, v):
    """``numpy.polydiv``: quotient and remainder of ``u / v`` by NumPy's long division,
    differentiable in ``u`` and ``v`` (``v[0] != 0``).

    The leading entries that each step cancels are dropped as exact zeros, where
    NumPy leaves their rounding residue and strips it when below ``1e-8``; then,
    as NumPy, leading remainder entries within ``1e-8`` of zero are stripped
    (keeping one). The two agree except where the residue exceeds ``1e-8``
    (float32, or coefficients near ``1e8``), where NumPy keeps a spurious
    leading entry.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp, ops
    >>> (q, r), (dq, dr) = jvp(lambda u: ops.polydiv(u, np.array([1.0, -1.0])),
    ...                        (np.array([1.0, 0.0, -2.0]),), (np.array([0.0, 0.0, 1.0]),))
    >>> q.tolist(), r.tolist(), dq.tolist(), dr.tolist()
    ([1.0, 1.0], [-1.0], [0.0, 0.0], [1.0])
    """
    u, v = _floating(u, like=v), _floating(v, like=u)
    xp = namespace_of([raw(u), raw(v)])
    common = xp.result_type(dtype_of(raw(u)), dtype_of(raw(v)))
    u, v = _ew.astype(u, common), _ew.astype(v, common)
    m, n = shape_of(u)[0] - 1, shape_of(v)[0] - 1
    scale = _ew.divide(1.0, _entry(v, 0))
    rest_of_v = _indexing.getitem(v, (slice(1, None),))
    r, q = u, []
    for _ in range(m - n + 1):  # r's leading entry cancelled: r <- r[1:] - d v[1:]
        d = _ew.multiply(scale, _entry(r, 0))
        q.append(d)
        head = _ew.subtract(_indexing.getitem(r, (slice(1, n + 1),)), _ew.multiply(d, rest_of_v))
        r = _shape.concatenate([head, _indexing.getitem(r, (slice(n + 1, None),))])
    q = _shape.stack(q) if q else _numbers(u, [0.0])
    if shape_of(r)[0] == 0:  # v a constant: every entry cancelled
        return q, _numbers(u, [0.0])
    k = same_for_every_element(r, _leading_zeros, "polydiv (its remainder's length is set by its values)")
    return q, _indexing.getitem(r, (slice(k, None),)) if k else r


def _leading_zeros(host):
    """How many leading entries of a remainder are zero to NumPy (keeping one)."""
    k = 0
    while k < host.shape[0] - 1 and np.allclose(host[k], 0, rtol=1e-14):
        k += 1
    return k


def polyval(p, x):
    """``numpy.polyval`` by Horner's rule (coefficients highest power first)."""
    if isinstance(x, (list, tuple)):  # numbers, as NumPy takes them, in p's library
        x = as_arrays((x,) if isinstance(p, (list, tuple)) else (x, p))[0]
    coeffs = [p[i] for i in range(shape_of(p)[0])] if not isinstance(p, (list, tuple)) else list(p)
    out = 0.0 * x
    for c in coeffs:
        out = out * x + c
    return out


def vander(x, N=None, increasing=False):
    """``numpy.vander``: the powers of a 1-d ``x`` as columns."""
    n = shape_of(x)[0] if N is None else N
    powers = np.arange(n) if increasing else np.arange(n - 1, -1, -1)
    if n == 0:
        return _shape.broadcast_to(_fill_like(x, 0.0), (shape_of(x)[0], 0))
    return _shape.stack([_ew.power(x, int(k)) if k else _ew.add(_ew.multiply(x, 0.0), 1.0)
                         for k in powers], axis=1)


# -- polynomials (coefficients highest power first) -----------------------------------------------
def _coefficients(p):
    return _shape.asarray(p) if isinstance(p, (list, tuple)) else p


def polyadd(a1, a2):
    """``numpy.polyadd``."""
    a1, a2 = _coefficients(a1), _coefficients(a2)
    n = max(shape_of(a1)[0], shape_of(a2)[0])
    return _ew.add(_shape.pad(a1, [(n - shape_of(a1)[0], 0)]), _shape.pad(a2, [(n - shape_of(a2)[0], 0)]))


def polysub(a1, a2):
    """``numpy.polysub``."""
    return polyadd(a1, _ew.negative(_coefficients(a2)))


def polymul(a1, a2):
    """``numpy.polymul``: the coefficients convolved."""
    return convolve(_coefficients(a1), _coefficients(a2))


def polyder(p, m=1):
    """``numpy.polyder``: the ``m``-th derivative's coefficients."""
    p = _coefficients(p)
    for _ in range(m):
        n = shape_of(p)[0] - 1
        if n <= 0:
            return _ew.multiply(_slice(p, 0, 0, 1), 0.0)
        p = _ew.multiply(_slice(p, 0, 0, n), _numbers(p, np.arange(n, 0, -1)))
    return p


def polyint(p, m=1, k=None):
    """``numpy.polyint``: ``m`` antiderivatives, the integration constants ``k`` (0)."""
    p = _coefficients(p)
    ks = [0.0] * m if k is None else [k] * m if np.ndim(raw(k)) == 0 else list(k)
    for c in ks:
        n = shape_of(p)[0]
        p = _shape.concatenate([_ew.divide(p, _numbers(p, np.arange(n, 0, -1))),
                                _shape.reshape(_fill_like(p, c), (1,))])
    return p

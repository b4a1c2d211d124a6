"""Discrete Fourier transforms, as ``numpy.fft`` spells them (``ops.fft``).

Three linear entries carry them: the complex transform over some axes
(``fftn``, or ``ifftn`` with ``inverse``), the real-input transform along one
axis (``rfft``) and its inverse (``irfft``). Their transposes follow JAX's
convention for complex values (a real input's cotangent is the real part):

- the DFT matrix is symmetric, so ``fftn`` and ``ifftn`` are their own
  transposes, ``norm`` included;
- ``rfft`` keeps the first ``n // 2 + 1`` outputs of the DFT: its transpose
  zero-fills the cotangent to length ``n`` and applies the DFT;
- ``irfft`` reads a Hermitian half-spectrum, so its transpose is ``rfft`` of
  the cotangent, conjugated, with the entries that stand for two of the full
  spectrum counted twice (JAX's rule; the dual ``norm`` keeps the scale).

Everything else (``fft`` with ``n``, the 2-d and n-d forms, the real n-d
transforms, the Hermitian ``hfft``/``ihfft``) is a composite of these and
the shape entries; ``fftshift`` is in ``dualad/_numpy/fft.py``, the namespace.
"""

from __future__ import annotations

from dualad._base.backend import whole_along
from dualad._base.core import bind
from dualad._base.shapes import complex_dtype, is_complex, ndim_of, shape_of
from dualad._primitives import elementwise as _ew
from dualad._primitives import indexing as _indexing
from dualad._primitives import shape as _shape
from dualad._table.entries import linear

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft"]

_DUAL_NORM = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _negative(axes, ndim):
    """Axes counted from the end, so a leading chunk axis of tangents leaves them valid."""
    return tuple(a % ndim - ndim for a in axes)


def _fftn_impl(xp, x, *, axes, norm, inverse):
    return (xp.fft.ifftn if inverse else xp.fft.fftn)(whole_along(x, axes), axes=axes, norm=norm)


_fftn_p = linear("fftn", _fftn_impl,
                 lambda g, x, *, axes, norm, inverse: (bind(_fftn_p, g, axes=axes, norm=norm,
                                                            inverse=inverse),), fresh=True)


def _rfft_transpose(g, x, *, axis, norm):
    n = x[0][axis]
    m = shape_of(g)[axis]
    full = _shape.pad(g, [(0, 0)] * (ndim_of(g) + axis) + [(0, n - m)] + [(0, 0)] * (-axis - 1))
    return (bind(_fftn_p, _complex(full), axes=(axis,), norm=norm, inverse=False),)


_rfft_p = linear("rfft",
                 lambda xp, x, *, axis, norm: xp.fft.rfft(whole_along(x, (axis,)), axis=axis, norm=norm),
                 _rfft_transpose, fresh=True)


def _irfft_transpose(g, c, *, n, axis, norm):
    x = bind(_rfft_p, g, axis=axis, norm=_DUAL_NORM[norm])
    m = shape_of(x)[axis]
    twice = m - 1 if n % 2 else m - 2  # entries 1 .. twice stand for a pair of the full spectrum
    weights = [1.0] + [2.0] * twice + [1.0] * (m - 1 - twice)
    shape = [1] * ndim_of(x)
    shape[axis] = m
    w = _shape.reshape(_shape.asarray(weights, like=x), tuple(shape))
    return (_ew.conj(_ew.multiply(x, w)),)


_irfft_p = linear("irfft",
                  lambda xp, c, *, n, axis, norm: xp.fft.irfft(whole_along(c, (axis,)), n=n, axis=axis,
                                                               norm=norm),
                  _irfft_transpose, fresh=True)


def _complex(x):
    """``x`` as complex of its precision (array-API namespaces transform complex input only)."""
    return x if is_complex(x) else _ew.astype(x, complex_dtype(x))


def _fit(x, n, axis):
    """``x`` cropped or zero-padded to length ``n`` along ``axis``, as ``numpy.fft`` does."""
    size = shape_of(x)[axis]
    if n is None or n == size:
        return x
    if n < 1:
        raise ValueError(f"fft: n must be at least 1, got {n}")
    nd = ndim_of(x)
    if n < size:
        return _indexing.getitem(x, (slice(None),) * (axis % nd) + (slice(0, n),))
    widths = [(0, 0)] * nd
    widths[axis % nd] = (0, n - size)
    return _shape.pad(x, widths)


def _axes_and_sizes(x, s, axes, default_axes):
    nd = ndim_of(x)
    if axes is None:
        axes = default_axes if s is None else tuple(range(-len(s), 0))
    axes = _negative(axes, nd) if nd else tuple(axes)
    if s is None:
        s = [None] * len(axes)
    if len(s) != len(axes):
        raise ValueError(f"fft: s {tuple(s)} and axes {tuple(axes)} differ in length")
    return axes, list(s)


def _norm(norm):
    norm = "backward" if norm is None else norm
    if norm not in _DUAL_NORM:
        raise ValueError(f'fft: norm must be "backward", "ortho" or "forward", got {norm!r}')
    return norm


def fftn(a, s=None, axes=None, norm=None):
    """``numpy.fft.fftn``: the n-d discrete Fourier transform, differentiable in every mode.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp, ops
    >>> x = np.array([1.0, 2.0, 0.0, -1.0])
    >>> y, t = jvp(ops.fft.fftn, (x,), (np.ones(4),))
    >>> np.allclose(y, np.fft.fftn(x)) and np.allclose(t, np.fft.fftn(np.ones(4)))
    True
    """
    axes, s = _axes_and_sizes(a, s, axes, tuple(range(-ndim_of(a), 0)))
    for n, ax in zip(s, axes):
        a = _fit(a, n, ax)
    return bind(_fftn_p, _complex(a), axes=axes, norm=_norm(norm), inverse=False) if axes else a


def ifftn(a, s=None, axes=None, norm=None):
    """``numpy.fft.ifftn``: the inverse n-d discrete Fourier transform."""
    axes, s = _axes_and_sizes(a, s, axes, tuple(range(-ndim_of(a), 0)))
    for n, ax in zip(s, axes):
        a = _fit(a, n, ax)
    return bind(_fftn_p, _complex(a), axes=axes, norm=_norm(norm), inverse=True) if axes else a


def fft(a, n=None, axis=-1, norm=None):
    """``numpy.fft.fft`` along one axis."""
    return fftn(a, None if n is None else (n,), (axis,), norm)


def ifft(a, n=None, axis=-1, norm=None):
    """``numpy.fft.ifft`` along one axis."""
    return ifftn(a, None if n is None else (n,), (axis,), norm)


def fft2(a, s=None, axes=(-2, -1), norm=None):
    return fftn(a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    return ifftn(a, s, axes, norm)


def rfft(a, n=None, axis=-1, norm=None):
    """``numpy.fft.rfft``: the transform of real input, its ``n // 2 + 1`` non-negative frequencies."""
    axis = _negative((axis,), ndim_of(a))[0]
    return bind(_rfft_p, _fit(a, n, axis), axis=axis, norm=_norm(norm))


def irfft(a, n=None, axis=-1, norm=None):
    """``numpy.fft.irfft``: the real signal of length ``n`` (default ``2 (m - 1)``) whose
    spectrum's non-negative half is ``a``."""
    axis = _negative((axis,), ndim_of(a))[0]
    m = shape_of(a)[axis]
    n = 2 * (m - 1) if n is None else n
    return bind(_irfft_p, _fit(a, n // 2 + 1, axis), n=n, axis=axis, norm=_norm(norm))


def rfftn(a, s=None, axes=None, norm=None):
    """``numpy.fft.rfftn``: ``rfft`` along the last of ``axes``, ``fft`` along the others."""
    axes, s = _axes_and_sizes(a, s, axes, tuple(range(-ndim_of(a), 0)))
    out = rfft(a, s[-1], axes[-1], norm)
    return fftn(out, s[:-1], axes[:-1], norm) if len(axes) > 1 else out


def irfftn(a, s=None, axes=None, norm=None):
    """``numpy.fft.irfftn``: ``ifft`` along all but the last of ``axes``, then ``irfft``."""
    axes, s = _axes_and_sizes(a, s, axes, tuple(range(-ndim_of(a), 0)))
    if len(axes) > 1:
        a = ifftn(a, s[:-1], axes[:-1], norm)
    return irfft(a, s[-1], axes[-1], norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    return rfftn(a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    return irfftn(a, s, axes, norm)


def hfft(a, n=None, axis=-1, norm=None):
    """``numpy.fft.hfft``: the real spectrum of a signal with Hermitian symmetry, given
    by its first half ``a``. As NumPy defines it, ``irfft(conj(a), n)`` with the
    opposite normalization (``"backward"`` leaves ``hfft`` unscaled).

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp, ops
    >>> a = np.array([1.0, 2.0 - 1.0j, 0.5])
    >>> y, t = jvp(lambda a: ops.fft.hfft(a, norm="ortho"), (a,), (np.ones(3, complex),))
    >>> np.allclose(y, np.fft.hfft(a, norm="ortho")), np.allclose(t, np.fft.hfft(np.ones(3), norm="ortho"))
    (True, True)
    """
    return irfft(_ew.conj(_complex(a)), n, axis, _DUAL_NORM[_norm(norm)])


def ihfft(a, n=None, axis=-1, norm=None):
    """``numpy.fft.ihfft``: the inverse of :func:`hfft`, the first half of the
    Hermitian spectrum of a real signal: ``conj(rfft(a, n))`` with the opposite
    normalization (``"backward"`` scales by ``1 / n``)."""
    return _ew.conj(rfft(a, n, axis, _DUAL_NORM[_norm(norm)]))

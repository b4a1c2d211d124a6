"""``numpy.fft`` (``ops.fft``): the transforms of the fft entries, and ``fftshift`` and
``ifftshift``, composites that roll half of each axis round.
"""

from __future__ import annotations

from dualad._base.shapes import ndim_of, shape_of
from dualad._numpy import rearranging as _rearranging
from dualad._primitives.fft import (
    fft,
    fft2,
    fftn,
    hfft,
    ifft,
    ifft2,
    ifftn,
    ihfft,
    irfft,
    irfft2,
    irfftn,
    rfft,
    rfft2,
    rfftn,
)

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft", "fftshift", "ifftshift"]


def _roll_half(x, axes, inverse=False):
    """``numpy.fft.fftshift`` (``ifftshift`` with ``inverse``) over ``axes``."""
    axes = tuple(range(ndim_of(x))) if axes is None else (axes,) if isinstance(axes, int) else tuple(axes)
    shifts = [shape_of(x)[a] // 2 * (-1 if inverse else 1) for a in axes]
    return _rearranging.roll(x, shifts, axes) if axes else x


def fftshift(x, axes=None):
    """``numpy.fft.fftshift``: the zero frequency moved to the centre."""
    return _roll_half(x, axes)


def ifftshift(x, axes=None):
    """``numpy.fft.ifftshift``: the inverse of ``fftshift``."""
    return _roll_half(x, axes, inverse=True)

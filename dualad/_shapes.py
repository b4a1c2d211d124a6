"""Shape helpers shared by the rules and the value types."""

from __future__ import annotations

from typing import Any

import numpy as np

from dualad._backend import SCALAR_TYPES, namespace_of


def shape_of(x: Any) -> tuple:
    return () if type(x) in SCALAR_TYPES else tuple(x.shape)


def ndim_of(x: Any) -> int:
    return 0 if type(x) in SCALAR_TYPES else x.ndim


def dtype_of(x: Any):
    return type(x) if type(x) in SCALAR_TYPES else x.dtype


def raw(x: Any) -> Any:
    """The innermost raw array (or float) inside nested value types."""
    while hasattr(x, "_strip"):
        x = x._strip()
    return x


def zeros(like: Any, shape: tuple | None = None, dtype: Any = None) -> Any:
    """Raw zeros with the backend of ``like``, and its dtype and shape unless given."""
    r = raw(like)
    if type(r) in SCALAR_TYPES:
        if not shape and dtype is None:
            return 0.0
        r = np.zeros((), dtype=np.float64)
    xp = namespace_of([r])
    if dtype is None:
        dtype = r.dtype if hasattr(r, "dtype") else xp.float64
    device = getattr(r, "device", None)
    shape = shape_of(like) if shape is None else shape
    try:
        return xp.zeros(shape, dtype=dtype, device=device)
    except TypeError:  # namespaces without a ``device`` keyword
        return xp.zeros(shape, dtype=dtype)


def normalize_axes(axis: Any, ndim: int, name: str = "axis") -> tuple:
    """``axis`` (None, int or sequence) as a sorted tuple of negative axes."""
    if axis is None:
        return tuple(range(-ndim, 0))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in axes:
        if not isinstance(a, int) or isinstance(a, bool):
            raise TypeError(f"{name} must be an int or a tuple of ints, got {axis!r}")
        if not -ndim <= a < ndim:
            raise ValueError(f"{name}={axis!r} is out of range for an array of ndim {ndim}")
        out.append(a - ndim if a >= 0 else a)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}={axis!r} repeats an axis")
    return tuple(sorted(out))


def normalize_axis(axis: int, ndim: int, name: str = "axis") -> int:
    return normalize_axes(axis, ndim, name)[0]


def complex_dtype(x: Any) -> Any:
    """The complex dtype of the precision of the array inside ``x`` (complex64 for
    float32 and complex64, else complex128)."""
    r = raw(x)
    xp = namespace_of([r])
    return xp.complex64 if r.dtype in (xp.float32, xp.complex64) else xp.complex128


def is_complex(x: Any) -> bool:
    """Whether the raw value inside ``x`` has a complex floating dtype."""
    r = raw(x)
    if type(r) in SCALAR_TYPES:
        return type(r) is complex
    kind = getattr(r.dtype, "kind", None)
    if kind is not None:
        return kind == "c"
    return namespace_of([r]).isdtype(r.dtype, "complex floating")


def is_mask(x: Any) -> bool:
    """Whether ``x`` is boolean (a partial that selects rather than scales).

    Masks come from comparisons, which return raw arrays in every mode.
    """
    t = type(x)
    if t is np.ndarray:  # the common case first
        return x.dtype.kind == "b"
    if t is bool:
        return True
    if t in SCALAR_TYPES:
        return False
    if hasattr(x, "_strip"):  # a mask staged by compile is still a mask; a derivative carrier is not
        return not x.carries_derivative and is_mask(x._strip())
    kind = getattr(x.dtype, "kind", None)
    if kind is not None:
        return kind == "b"
    return namespace_of([x]).isdtype(x.dtype, "bool")

"""Shape helpers shared by the rules and the value types."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dualad._base.backend import SCALAR_TYPES, namespace_of, to_host
from dualad._base.core import Value


def shape_of(x: Any) -> tuple:
    if type(x) in SCALAR_TYPES:
        return ()
    try:
        return tuple(x.shape)
    except AttributeError:  # a Python list or tuple of numbers, as NumPy reads one
        return np.shape(x)


def ndim_of(x: Any) -> int:
    if type(x) in SCALAR_TYPES:
        return 0
    try:
        return x.ndim
    except AttributeError:
        return np.ndim(x)


def dtype_of(x: Any):
    if type(x) in SCALAR_TYPES:
        return type(x)
    try:
        return x.dtype
    except AttributeError:
        return np.asarray(x).dtype


def reported_dtype(x: Any) -> Any:
    """The ``dtype`` a value type reports for ``x``, as NumPy would: a Python number's
    is NumPy's (``float64`` for a float, as ``np.asarray(2.0).dtype``), an array's its own.

    The rules keep ``dtype_of``, which gives ``float`` for a float, to tell a Python
    number from a 0-d array; only the user-facing attribute is NumPy's.

    Examples
    --------
    >>> reported_dtype(2.0)
    dtype('float64')
    """
    r = raw(x)
    return np.dtype(type(r)) if type(r) in SCALAR_TYPES else dtype_of(r)


def raw(x: Any) -> Any:
    """The innermost raw array (or float) inside nested value types."""
    while isinstance(x, Value):
        x = x._strip()
    return x


def primal(x: Any) -> Any:
    """``x`` without the derivatives its value types carry, for masks, indices and
    sort orders computed from its values.

    Outside :func:`dualad.vmap` this is :func:`raw`. A value batched by vmap
    stands for several values at once, so it is kept (its elements stripped):
    a comparison on it then gives a batched mask, where :func:`raw` would
    spread the batch axis into the numbers as if it were one more axis.
    """
    while True:
        if not isinstance(x, Value):
            return x
        if x.container:  # a dualad.numpy buffer is its content
            x = x._contents()
        elif x.carries_derivative:
            x = x._strip()
        else:
            return x._constant(primal(x._strip()))


def batched(x: Any) -> bool:
    """Whether ``x`` is batched by :func:`dualad.vmap` (its primal stands for several
    values at once), as opposed to a plain, differentiated or traced value."""
    p = primal(x)
    return isinstance(p, Value) and p.batches


def across_batch(x: Any) -> Any:
    """:func:`primal` of ``x`` with each :func:`dualad.vmap` batch axis kept as an axis
    of its numbers: a decision taken on it (does any entry vanish?) holds for every
    element of the batch at once, where a decision on a batched value is refused."""
    p = primal(x)
    while isinstance(p, Value) and p.batches:
        p = primal(p._strip())
    return p


def concrete(x: Any, what: str) -> Any:
    """The numbers of ``x`` as a NumPy array, for a decision taken on the host (which
    entries to keep, how long a result is).

    Under :func:`dualad.vmap` a batched ``x`` has different numbers for each
    element, so no one decision holds for the batch: a ``TypeError`` names
    vmap and ``what`` (the operation and argument), as JAX refuses a traced
    value where a concrete one is needed, rather than return a wrong result.
    """
    y = x
    while True:
        if not isinstance(y, Value):
            return to_host(y)
        if y.container:
            y = y._contents()
        elif not y.batches:  # a derivative carrier, or a value compile traces (its trace hears of the read)
            y = y._strip()
        else:
            raise TypeError(
                f"vmap: {what} depends on the values of a batched argument, which differ from "
                "element to element, so the result's shape (or a choice made on the host) is not "
                "the same for the whole batch; vmap cannot batch it. Loop over the batch instead, "
                "or keep that argument out of the batch (in_axes=None)")


def same_for_every_element(x: Any, decide: Any, what: str) -> Any:
    """``decide(numbers)`` for ``x``'s numbers (a NumPy array); under vmap, for each
    element's, and that answer if every element gives the same one (a result's
    length, say), else the ``TypeError`` of :func:`concrete` naming ``what``."""
    host = to_host(raw(x))
    lead = host.ndim - ndim_of(x)  # batch axes, one per vmap that batches x
    answers = {decide(e) for e in host.reshape((-1,) + host.shape[lead:])} if lead else {decide(host)}
    if len(answers) != 1:
        concrete(x, what)
    return answers.pop()


def zeros(like: Any, shape: tuple | None = None, dtype: Any = None) -> Any:
    """Raw zeros with the backend of ``like``, and its dtype and shape unless given."""
    if type(like) is np.ndarray:  # the common case, without asking for the namespace
        return np.zeros(like.shape if shape is None else shape, dtype=like.dtype if dtype is None else dtype)
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
    if isinstance(x, Value):  # a mask staged by compile is still a mask; a derivative carrier is not
        return not x.carries_derivative and is_mask(x._strip())
    kind = getattr(x.dtype, "kind", None)
    if kind is not None:
        return kind == "b"
    return namespace_of([x]).isdtype(x.dtype, "bool")


def reshape_impl(xp, x, *, shape):
    """``xp.reshape`` of a raw array, where Dask's fails (the reshape entry's impl; getitem's too)."""
    if type(x) is np.ndarray or type(x) is np.float64:  # the method: 0.15 us, against 0.75
        return x.reshape(shape)                           # through the namespace
    if 0 in shape_of(x):  # nothing to move; Dask's reshape fails on an empty array
        return xp.zeros(shape, dtype=x.dtype)
    try:
        return xp.reshape(x, shape)
    except NotImplementedError:  # Dask, where axes neither merge nor split: (2, 3) -> (3, 2)
        return xp.reshape(xp.reshape(x, (math.prod(x.shape),)), shape)

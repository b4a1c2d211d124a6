"""Argument checks shared by every transform, in all three packages.

Each error names the argument, says what was expected and what came
(:func:`describe`), so a wrong call fails where it is made rather than as an
``AttributeError`` deep inside a rule.
"""

from __future__ import annotations

import math
import reprlib
from typing import Any

import numpy as np

from dualad._base.backend import SCALAR_TYPES, is_float_dtype, namespace_of
from dualad._base.core import Value
from dualad._base.shapes import dtype_of, raw, shape_of
from dualad._base.tree import leaf_paths

__all__ = ["check_callable", "check_count", "check_differentiable", "check_number", "check_output_leaves",
           "check_points", "check_scalar_output", "describe", "is_operand", "seed_tangents",
           "validate_tangent"]

_short = reprlib.Repr()
_short.maxstring = _short.maxother = 30


def is_operand(x: Any) -> bool:
    """Whether ``x`` is something a transform can compute with: a number, an array
    (anything with ``shape`` and ``dtype``) or a value type holding one."""
    r = raw(x)
    return type(r) in SCALAR_TYPES or (hasattr(r, "shape") and hasattr(r, "dtype"))


def describe(x: Any) -> str:
    """What ``x`` is, for the "got ..." part of an error message."""
    if x is None:
        return "None"
    r = raw(x)
    wrapper = f" (in a {type(x).__name__})" if r is not x else ""
    if type(r) in SCALAR_TYPES:
        return f"{type(r).__name__} {r!r}{wrapper}"
    if hasattr(r, "shape") and hasattr(r, "dtype"):
        return f"an array of shape {shape_of(r)} and dtype {dtype_of(r)}{wrapper}"
    return f"a {type(x).__name__} ({_short.repr(x)})"


def check_callable(f: Any, who: str, name: str = "f", how: str | None = None) -> None:
    """``f`` is callable: checked where the transform ``who`` is made, so that
    ``grad(3.0)`` fails there, naming the argument (and ``how`` it is called, where
    given), not later inside a call.

    Examples
    --------
    >>> check_callable(3.0, "grad")
    Traceback (most recent call last):
    ...
    TypeError: grad: f must be callable, got float 3.0
    """
    if not callable(f):
        called = f" as {how}" if how else ""
        raise TypeError(f"{who}: {name} must be callable{called}, got {describe(f)}")


def check_differentiable(x: Any, name: str) -> None:
    """``x`` is a float, a floating array or a value type holding one.

    The one rule of every transform for a point to differentiate at: a Python
    ``int`` is an integer input, refused as an integer array is (its
    derivative would be taken in float arithmetic it never asked for), with
    the float to write instead.

    Raises
    ------
    TypeError
        ``x`` is not a number or array, or is an integer, a bool or an
        integer array.
    """
    r = raw(x)
    if not is_operand(r):
        raise TypeError(f"{name} must be a float or a floating array, got {describe(x)}")
    if type(r) is int:
        raise TypeError(f"{name} must be a float or a floating array, got {describe(x)}; "
                        f"write {float(r)!r} instead of {r!r}")
    if isinstance(r, bool) or (type(r) not in SCALAR_TYPES
                               and not is_float_dtype(namespace_of([r]), r.dtype)):
        raise TypeError(f"{name} must be floating point to be differentiated, "
                        f"got dtype {dtype_of(r)}; convert it with astype(float)")


def _float_array(x: Any) -> bool:
    """Whether ``x`` is a floating NumPy array: a point every check passes as it is."""
    return type(x) is np.ndarray and x.dtype.kind in "fc"


def check_points(leaves: list, tree: Any, prefix: str) -> None:
    """:func:`check_differentiable` for each leaf of ``tree`` (its ``leaves``), named by its
    path under ``prefix`` (``primals[0]``); the paths are made only for a leaf that is
    not a floating NumPy array, the common case needing no message."""
    names = None
    for i, leaf in enumerate(leaves):
        if not _float_array(leaf):
            names = leaf_paths(tree, prefix) if names is None else names
            check_differentiable(leaf, names[i])


def seed_tangents(primals: list, tangents: list, tree: Any, prefix: str,
                  primal_prefix: str | None = None) -> list:
    """``(tangent, batch axes)`` for each pair of leaves, as :func:`validate_tangent` gives,
    named by their paths in ``tree`` under ``prefix`` (a primal's under ``primal_prefix``,
    if given); the paths are made only for a pair other than floating NumPy arrays of one
    dtype (the common case, checked here)."""
    names, out = None, []
    for i, (p, t) in enumerate(zip(primals, tangents)):
        if _float_array(p) and type(t) is np.ndarray and t.dtype == p.dtype:
            if t.shape == p.shape:
                out.append((t, 0))
                continue
            if t.ndim == p.ndim + 1 and t.shape[1:] == p.shape:
                out.append((t, 1))
                continue
        if names is None:
            names = leaf_paths(tree, prefix)
            primal_names = leaf_paths(tree, primal_prefix) if primal_prefix else [None] * len(names)
        out.append(validate_tangent(p, t, names[i], primal_names[i]))
    return out


def validate_tangent(primal: Any, tangent: Any, name: str,
                     primal_name: str | None = None) -> tuple[Any, int]:
    """Check ``tangent`` against ``primal``; return it and its number of batch axes.

    Errors about the primal name it ``primal_name`` (default ``"{name}: primal"``),
    so that ``hvp`` blames ``x``, not ``v``, for an integer point.
    """
    primal_name = f"{name}: primal" if primal_name is None else primal_name
    check_differentiable(primal, primal_name)
    pshape = shape_of(primal)
    if not is_operand(tangent):
        raise TypeError(f"{name}: tangent must be a float or an array of the primal's shape "
                        f"{pshape}, got {describe(tangent)}")
    tshape = shape_of(tangent)
    if tshape == pshape:
        nb = 0
    elif tshape[1:] == pshape and len(tshape) == len(pshape) + 1:
        nb = 1
    else:
        raise ValueError(f"{name}: tangent must have the primal's shape {pshape} or "
                         f"(k,) + {pshape} for k directions, got shape {tshape}")
    pdt, tdt = dtype_of(raw(primal)), dtype_of(raw(tangent))
    if pdt is float:
        if tdt not in (float, int) and not (nb == 0 and isinstance(tangent, Value)):
            raise TypeError(f"{name}: the tangent of a float must be a float, got {tdt}")
        return (float(tangent) if type(tangent) is int else tangent), nb
    if pdt != tdt:
        raise TypeError(f"{name}: tangent dtype {tdt} does not match primal dtype {pdt}")
    return tangent, nb


def check_output_leaves(leaves: list, out: Any, who: str) -> None:
    """The output ``out`` of a user's ``f`` (flattened to ``leaves``) holds only
    numbers, arrays and value types: None or a string is an error naming its place."""
    for i, leaf in enumerate(leaves):
        if not is_operand(leaf):
            path = leaf_paths(out)[i]
            where = f" at output{path}" if path else ""
            raise TypeError(f"{who}: f must return arrays or floats (or tuples, lists or dicts of "
                            f"them), got {describe(leaf)}{where}")


def check_scalar_output(out: Any, who: str, hint: str = "", one_element: bool = True) -> None:
    """``out`` is one scalar: a number, an array of one element, or a value type
    holding one.

    A one-element array of any shape ((), (1,), (1, 1), ...) is accepted, as
    PyTorch's ``backward()`` and HIPS autograd's ``grad`` accept it: the
    derivative is that of its one element. With ``one_element=False`` only
    shape () is (a solver reports the value as a number).
    """
    shape = shape_of(out) if is_operand(out) else None
    if isinstance(out, (tuple, list, dict)) or shape is None or (
            math.prod(shape) != 1 if one_element else shape != ()):
        what = "a float, a 0-d array or an array of one element" if one_element else "a float or a 0-d array"
        raise TypeError(f"{who}: f must return a scalar ({what}), got {describe(out)}{hint}")


def check_count(value: Any, name: str, low: int = 0) -> int:
    """``value`` as an int >= ``low`` (a bool or a float such as 1.5 is refused)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int >= {low}, got {describe(value)}")
    if value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value}")
    return value


def check_number(name: str, value: Any, low: float = 0.0, high: float | None = None,
                 high_open: bool = False, low_open: bool = False) -> float:
    """``value`` as a float in ``[low, high]`` (either end open on request), else an
    error naming it; NaN is never in range."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    value = float(value)
    above = value > low if low_open else value >= low
    below = high is None or (value < high if high_open else value <= high)
    if not (above and below) or math.isnan(value):
        lower = f"{'>' if low_open else '>='} {low}"
        upper = "" if high is None else f" and {'<' if high_open else '<='} {high}"
        raise ValueError(f"{name} must be {lower}{upper}, got {value}")
    return value

"""Anomaly mode: ``detect_anomaly`` and the two things the tape does under it.

While it is on (per thread, like ``no_grad``), each recorded operation keeps a
short summary of the stack that recorded it, and each backward step is checked:
the first NaN or inf it produces in a cotangent, or an error it raises, is
reported with the primitive's name and that summary. While it is off, the tape
does neither: recording tests one flag and the walk one local per node.
"""

from __future__ import annotations

import cmath
import itertools
import sys
import threading
import traceback
from contextlib import ContextDecorator
from typing import Any

from dualad import Dual
from dualad.interpreter import SCALAR_TYPES, Value, describe, namespace_of, user_frames

__all__ = ["ANOMALY", "checked_vjp", "detect_anomaly", "recorded_at"]


class _AnomalyState(threading.local):
    on = False
    check_nan = True


ANOMALY = _AnomalyState()

# A summary keeps the user's frames (dualad.interpreter.user_frames): this library's are
# left out everywhere, and the array libraries' (NumPy's dispatch to dualad) at the
# recording end.
_FRAMES = 8  # the innermost user frames kept


class detect_anomaly(ContextDecorator):
    """Find the backward step that first produces a NaN or inf (as ``torch.autograd.detect_anomaly``).

    Inside the block (or the decorated function), every operation recorded on
    the tape remembers where in your code it was applied, and ``backward``,
    ``grad``, ``vjp``, ``gradients`` and ``hvp`` check each step: the first
    cotangent with a NaN or an inf raises ``RuntimeError`` naming the primitive
    and showing where its forward operation was recorded; an error raised by a
    step gets that place added as a note. Recording is slower in this mode;
    outside it nothing is kept or checked. The setting is per thread.

    Parameters
    ----------
    check_nan : bool
        Check the cotangents (default). With False, only errors get the note.

    Examples
    --------
    >>> import numpy as np
    >>> from reverse import Tensor, detect_anomaly
    >>> x = Tensor(np.array([0.0, 4.0]), requires_grad=True)
    >>> with detect_anomaly(), np.errstate(divide="ignore"):  # NumPy's own warning of 0.5 / 0
    ...     y = np.sqrt(x).sum()  # sqrt'(0) is inf
    ...     try:
    ...         y.backward()
    ...     except RuntimeError as err:
    ...         print(str(err).splitlines()[0])
    detect_anomaly: the backward step of 'sqrt' produced inf in the cotangent of its input 0
    """

    def __init__(self, check_nan: bool = True):
        self.check_nan = bool(check_nan)
        self._saved: list = []

    def __enter__(self):
        self._saved.append((ANOMALY.on, ANOMALY.check_nan))
        ANOMALY.on, ANOMALY.check_nan = True, self.check_nan
        return self

    def __exit__(self, *exc):
        ANOMALY.on, ANOMALY.check_nan = self._saved.pop()
        return False

    def _recreate_cm(self):  # a decorated function may run in several threads at once
        return type(self)(self.check_nan)


def recorded_at() -> traceback.StackSummary:
    """The user's frames of the stack recording an operation, innermost last (as
    tracebacks print); source lines are read only if the summary is printed."""
    frames = [(frame, frame.f_lineno) for frame in itertools.islice(user_frames(sys._getframe(1)), _FRAMES)]
    summary = traceback.StackSummary.extract(iter(frames), lookup_lines=False)
    summary.reverse()
    return summary


def _where(node: Any) -> str:
    summary = getattr(node, "where", None)  # unset on nodes recorded outside anomaly mode
    if summary is None:
        return ("  (not known: the forward operation was recorded outside detect_anomaly; "
                "record it inside the block too)")
    return "".join(summary.format()).rstrip()


def checked_vjp(node: Any, g: Any, res: Any) -> tuple:
    """``node``'s VJP, with its errors, and NaN and inf in what it returns, reported
    with the primitive's name and where the forward operation was recorded."""
    try:
        cots = node.prim.vjp(g, res, node.needs, node.params)
    except Exception as err:
        if hasattr(err, "add_note"):  # Python 3.11 and later
            err.add_note(f"detect_anomaly: raised by the backward step of '{node.prim.name}', whose "
                         f"forward operation was recorded at (most recent call last):\n{_where(node)}")
        raise
    if not ANOMALY.check_nan:
        return cots
    for i, c in enumerate(cots):
        bad = None if c is None else _non_finite(c)
        if bad is not None:
            raise RuntimeError(
                f"detect_anomaly: the backward step of '{node.prim.name}' produced {bad} in the "
                f"cotangent of its input {i}\n(the cotangent is {describe(c)}); its forward operation "
                f"was recorded at (most recent call last):\n{_where(node)}")
    return cots


def _non_finite(c: Any) -> str | None:
    """"NaN" or "inf" if some array inside ``c`` (Dual tangents included) has one."""
    parts = [c]
    while parts:
        x = parts.pop()
        if isinstance(x, Dual):
            parts.extend((x.primal, x.tangent))
            continue
        if isinstance(x, Value):
            parts.append(x._strip())
            continue
        if type(x) in SCALAR_TYPES:
            if not cmath.isfinite(x):
                return "NaN" if cmath.isnan(x) else "inf"
            continue
        xp = namespace_of([x])
        if not bool(xp.all(xp.isfinite(x))):
            return "NaN" if bool(xp.any(xp.isnan(x))) else "inf"
    return None

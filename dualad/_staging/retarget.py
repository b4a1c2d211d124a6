"""Programs traced on NumPy, replayed on another array library (array_api_strict, CuPy).

:func:`dualad.compile` traces on NumPy only: the numbers a rule reads on the
host are visible there (:mod:`dualad._base.taint`), and nowhere else. A call on
another library's arrays is traced on NumPy copies of them, and the program
is then *retargeted*: each primitive that ran on NumPy's namespace runs on
the inputs' namespace (the table's implementations are written against the
array API, so the same call works there), and the constants are moved to the
inputs' library and device. The first call checks the replay of the
retargeted program against eager evaluation on the inputs themselves
(:func:`difference`); where they differ (a rule that takes another path on
that library), the call runs eagerly from then on, and so does a function
whose trace on NumPy fails. An array of the library that the function
closes over is copied to NumPy where the trace meets it as an operand or
parameter of a primitive (:meth:`~dualad._staging.trace.Trace.on_host`),
and is then a constant like any other; but a transform's own arithmetic
inside the function (a product of a partial it saved with a cotangent made
on NumPy) can meet it where no primitive is recorded, and that trace fails:
such arrays are better passed as arguments.
"""

from __future__ import annotations

from typing import Any

import array_api_compat
import numpy as np

from dualad._base.backend import NUMPY_XP
from dualad._base.tree import flatten, treedef
from dualad._program.ir import Eqn
from dualad._program.program import Program

__all__ = ["difference", "retarget"]


def retarget(program: Program, xp: Any, device: Any) -> Program:
    """``program`` (traced on NumPy) with its NumPy primitives run by ``xp`` and its
    NumPy constants (arrays and NumPy scalars, which promote as 0-d arrays) made
    ``xp`` arrays on ``device``."""
    steps = [Eqn(s.prim, {k: _moved(v, xp, device) for k, v in s.params.items()}, s.ins, s.outs, xp)
             if type(s) is Eqn and s.xp is NUMPY_XP else s for s in program.steps]
    consts = {slot: _moved(v, xp, device) for slot, v in program.consts.items()}
    return program.with_steps(steps, consts=consts)


def _moved(v: Any, xp: Any, device: Any) -> Any:
    """A constant or parameter of a NumPy program, as ``xp`` has it: arrays (index arrays
    among parameters too) on ``device``, dtypes by name, in tuples and lists too."""
    if isinstance(v, (np.ndarray, np.generic)):
        return xp.asarray(v, device=device)
    if isinstance(v, np.dtype) or (isinstance(v, type) and issubclass(v, np.generic)):
        return getattr(xp, np.dtype(v).name)
    if type(v) in (tuple, list):
        return type(v)(_moved(e, xp, device) for e in v)
    return v


def difference(got: Any, want: Any) -> str | None:
    """How the pytree ``got`` differs from ``want`` (structure, a leaf's type, shape,
    dtype, or numbers beyond rounding), or None where they agree."""
    got_leaves, want_leaves = flatten(got)[0], flatten(want)[0]
    if len(got_leaves) != len(want_leaves) or treedef(got) != treedef(want):
        return "the structure of the result differs"
    for j, (g, w) in enumerate(zip(got_leaves, want_leaves)):
        if type(g) is not type(w):
            return f"output {j} is a {type(g).__name__}, eager gives a {type(w).__name__}"
        if not hasattr(w, "shape"):
            if g != w and not (g != g and w != w):
                return f"output {j} is {g!r}, eager gives {w!r}"
            continue
        if g.shape != w.shape or g.dtype != w.dtype:
            return f"output {j} is {g.dtype}{list(g.shape)}, eager gives {w.dtype}{list(w.shape)}"
        if not _close(g, w):
            return f"output {j}'s numbers differ from eager"
    return None


def _close(got: Any, want: Any) -> bool:
    """Whether two arrays of one library, shape and dtype agree within rounding (NumPy's
    ``allclose`` with ``equal_nan``, its tolerances scaled by the largest finite entry
    of ``want``), computed by their library, where they are: on a GPU, a comparison of
    arrays of 1e8 numbers on the host took seconds of the first call."""
    xp = array_api_compat.array_namespace(want)
    if not xp.isdtype(want.dtype, ("real floating", "complex floating")) or not want.size:
        return bool(xp.all(got == want))
    rtol = _RTOL.get(str(want.dtype).rsplit(".", 1)[-1], 1e-12)
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf where both are inf
        finite = xp.isfinite(got) & xp.isfinite(want)  # infinities agree only where equal
        magnitude = xp.abs(want)
        scale = float(xp.max(xp.where(finite, magnitude, xp.zeros_like(magnitude))))
        near = finite & (xp.abs(got - want) <= rtol * scale + rtol * magnitude)
        return bool(xp.all(near | (got == want) | (xp.isnan(got) & xp.isnan(want))))


_RTOL = {"float16": 1e-2, "float32": 1e-5, "complex64": 1e-5}  # else (double) 1e-12

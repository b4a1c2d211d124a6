"""Differentiable array operations that work on every value type.

Each function here accepts NumPy/CuPy arrays, Python floats, ``Dual``,
``HyperDual`` and ``reverse.Tensor`` values alike: primitives go through
``bind``, composites are written with primitives. NumPy names and array-API
names are both provided, so this module also serves as the
``__array_namespace__`` of the value types.

Examples
--------
>>> from dualad import derivative, ops
>>> derivative(lambda x: ops.sin(x) * ops.exp(x))(0.0)
1.0
"""

from __future__ import annotations

from dualad._base.backend import ARRAY_API_NAMES
from dualad._numpy.arrays import *  # noqa: F403
from dualad._numpy.arrays import __all__ as _arrays
from dualad._numpy.composites import *  # noqa: F403
from dualad._numpy.composites import __all__ as _composites
from dualad._numpy.conv import *  # noqa: F403
from dualad._numpy.conv import __all__ as _conv
from dualad._numpy.polynomials import *  # noqa: F403
from dualad._numpy.polynomials import __all__ as _polynomials
from dualad._numpy.statistics import *  # noqa: F403
from dualad._numpy.statistics import __all__ as _statistics
from dualad._numpy.values import *  # noqa: F403
from dualad._numpy.values import __all__ as _values
from dualad._primitives import fft as fft  # noqa: F401  (ops.fft.fft, ...)
from dualad._primitives import linalg as linalg  # noqa: F401  (ops.linalg.solve, ...)
from dualad._primitives.elementwise import *  # noqa: F403
from dualad._primitives.elementwise import __all__ as _elementwise
from dualad._primitives.linalg import *  # noqa: F403
from dualad._primitives.linalg import __all__ as _linalg_names
from dualad._primitives.reductions import *  # noqa: F403
from dualad._primitives.reductions import __all__ as _reductions
from dualad._primitives.shape import *  # noqa: F403
from dualad._primitives.shape import __all__ as _shape_names
from dualad._primitives.special import *  # noqa: F403
from dualad._primitives.special import __all__ as _special
from dualad._table.entries import seal_builtins as _seal_builtins

# Array-API and other spellings of the NumPy names above.
_ALIASES = {
    **ARRAY_API_NAMES, "concat": "concatenate", "absolute": "abs",
    "true_divide": "divide", "cumulative_sum": "cumsum", "around": "round", "fabs": "abs",
    "conjugate": "conj", "trapz": "trapezoid", "expit": "sigmoid", "psi": "digamma",
}
for _alias, _name in _ALIASES.items():
    globals()[_alias] = globals()[_name]

__all__ = sorted({*_arrays, *_composites, *_conv, *_elementwise, *_linalg_names, *_polynomials,
                  *_reductions, *_shape_names, *_special, *_statistics, *_values, *_ALIASES, "fft",
                  "linalg"})

_seal_builtins()  # the table is complete: entries added from here on are users'

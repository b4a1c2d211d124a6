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
from dualad._numpy import fft as fft  # noqa: F401  (ops.fft.fft, ...)
from dualad._numpy import linalg as linalg  # noqa: F401  (ops.linalg.solve, ...)
from dualad._numpy.applying import *  # noqa: F403
from dualad._numpy.applying import __all__ as _applying
from dualad._numpy.composites import *  # noqa: F403
from dualad._numpy.composites import __all__ as _composites
from dualad._numpy.conv import *  # noqa: F403
from dualad._numpy.conv import __all__ as _conv
from dualad._numpy.counting import *  # noqa: F403
from dualad._numpy.counting import __all__ as _counting
from dualad._numpy.creation import *  # noqa: F403
from dualad._numpy.creation import __all__ as _creation
from dualad._numpy.diagonals import *  # noqa: F403
from dualad._numpy.diagonals import __all__ as _diagonals
from dualad._numpy.differences import *  # noqa: F403
from dualad._numpy.differences import __all__ as _differences
from dualad._numpy.grids import *  # noqa: F403
from dualad._numpy.grids import __all__ as _grids
from dualad._numpy.joining import *  # noqa: F403
from dualad._numpy.joining import __all__ as _joining
from dualad._numpy.padding import *  # noqa: F403
from dualad._numpy.padding import __all__ as _padding
from dualad._numpy.piecewise import *  # noqa: F403
from dualad._numpy.piecewise import __all__ as _piecewise
from dualad._numpy.polynomials import *  # noqa: F403
from dualad._numpy.polynomials import __all__ as _polynomials
from dualad._numpy.products import *  # noqa: F403
from dualad._numpy.products import __all__ as _products
from dualad._numpy.rearranging import *  # noqa: F403
from dualad._numpy.rearranging import __all__ as _rearranging
from dualad._numpy.selecting import *  # noqa: F403
from dualad._numpy.selecting import __all__ as _selecting
from dualad._numpy.sorting import *  # noqa: F403
from dualad._numpy.sorting import __all__ as _sorting
from dualad._numpy.statistics import *  # noqa: F403
from dualad._numpy.statistics import __all__ as _statistics
from dualad._numpy.values import *  # noqa: F403
from dualad._numpy.values import __all__ as _values
from dualad._primitives.elementwise import *  # noqa: F403
from dualad._primitives.elementwise import __all__ as _elementwise
from dualad._primitives.indexing import *  # noqa: F403
from dualad._primitives.indexing import __all__ as _indexing
from dualad._primitives.linalg.einsum import *  # noqa: F403
from dualad._primitives.linalg.einsum import __all__ as _einsum
from dualad._primitives.linalg.matmul import *  # noqa: F403
from dualad._primitives.linalg.matmul import __all__ as _matmul
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

__all__ = sorted({*_applying, *_composites, *_conv, *_counting, *_creation, *_diagonals, *_differences,
                  *_grids, *_joining, *_padding, *_piecewise, *_polynomials, *_products, *_rearranging,
                  *_selecting, *_sorting, *_statistics, *_values, *_elementwise, *_indexing, *_einsum,
                  *_matmul, *_reductions, *_shape_names, *_special, *_ALIASES, "fft", "linalg"})

_seal_builtins()  # the table is complete: entries added from here on are users'

"""The interpreter contract: what a differentiation mode built on ``dualad`` uses.

``reverse`` (the tape) and ``mixed`` (forward-over-reverse) are written
against this module, :mod:`dualad.extend` (the table and ``bind``) and the
public transforms, never against ``dualad``'s private modules; a test of
the package layout holds them to it. A new mode (batching, a tracer) uses
the same names:

Values and levels
    ``Value`` (the base of every value type a mode defines), ``ArrayLike``
    (operators, methods and NumPy's protocols, for a value type), ``bind``,
    ``new_level``, ``level_of`` and ``is_closed`` (each transform call opens
    a level, closed when it returns), ``get_cut``/``set_cut`` (the level
    below which values are constants, for ``stop_gradient`` and ``no_grad``).
Plain values
    ``raw`` (a value without any derivative parts), ``shape_of``,
    ``dtype_of``, ``reported_dtype`` (the dtype NumPy reports: float64 for a
    float), ``is_complex``, ``zeros`` (zeros like a value, on its
    backend), ``namespace_of`` (the array namespace of operands),
    ``is_float_dtype``, ``SCALAR_TYPES``, ``to_host``.
Dask arrays
    ``match_chunks`` (an array with another's chunks), ``persist``,
    ``to_floats`` (several scalars read in one pass), ``fresh_keys``.
Pytrees and calling conventions
    ``flatten``, ``leaf_paths``, ``check_argnums``, ``positions`` (argnums
    as distinct non-negative positions), ``Selection`` (the arguments
    ``argnums`` picks), ``split_aux``, ``paired_leaves`` (a second pytree
    checked against the first's structure).
Closures
    ``reach`` (the value types a function uses without being passed them, and the
    places that hold them, to run it at other values: ``checkpoint``, ``custom_root``).
Programs
    ``traceable`` (whether a value is an input a trace records, so that
    :func:`dualad.compile` and :func:`dualad.linearize` make programs of it),
    ``compiled_on_repeat`` (a function run eagerly once, compiled from its
    second call).
Forward mode and Jacobian assembly
    ``Dual``, ``jvp``, ``primals_at`` (a pytree with one level's Duals
    replaced by their primals), ``check_inputs``, ``basis_chunks``,
    ``chunk_of``, ``split``, ``blocks``.
Sparse derivatives
    ``Compressed`` (a sparse derivative evaluated by its products with one
    seed direction per colour: the base of ``SparseJacobian`` and
    ``mixed.SparseHessian``), ``per_point`` (one made per shape and dtype of
    the point), ``seed_matrix`` (one direction per colour of a colouring),
    ``recover_symmetric`` (a Hessian from its products with those directions,
    for a star colouring), ``check_point`` (the 1-d floating NumPy point a
    sparsity trace takes, of the shape and dtype a pattern was detected for).
Reverse rules
    ``aval`` (shape and dtype of an output), ``Dropped`` (an output whose
    cotangent is not needed), ``shared_by_key``.
Cotangent buffers
    ``Accumulator`` (sums cotangents, in place once it owns a buffer),
    ``made_by_call`` (whether a result its entry declares fresh, ``Primitive.fresh``,
    may be written: it is none of the call's direct arguments), ``is_large``.
Errors that read the same in every mode
    ``describe``, ``is_operand``, ``check_callable``, ``check_count``, ``check_number``,
    ``check_differentiable``, ``check_scalar_output``, ``check_output_leaves``,
    ``validate_tangent``; ``check_points`` and ``seed_tangents`` (the same checks of every
    leaf of a pytree, naming a leaf by its path only where one fails); ``user_frames``
    (the frames of the stack that are the user's code, told by module name, for a
    message that points at a line).

Examples
--------
>>> import numpy as np
>>> from dualad.interpreter import raw, shape_of
>>> from dualad import Dual
>>> shape_of(Dual(np.ones(3), np.zeros(3))), raw(Dual(2.0, 1.0))
((3,), 2.0)
"""

from dualad._base.backend import (
    SCALAR_TYPES,
    fresh_keys,
    is_float_dtype,
    match_chunks,
    namespace_of,
    persist,
    to_floats,
    to_host,
)
from dualad._base.calling import Selection, check_argnums, paired_leaves, positions, split_aux
from dualad._base.checks import (
    check_callable,
    check_count,
    check_differentiable,
    check_number,
    check_output_leaves,
    check_points,
    check_scalar_output,
    describe,
    is_operand,
    seed_tangents,
    validate_tangent,
)
from dualad._base.core import Value, bind, get_cut, is_closed, level_of, new_level, set_cut
from dualad._base.frames import user_frames
from dualad._base.reach import Reached, reach
from dualad._base.shapes import dtype_of, is_complex, raw, reported_dtype, shape_of, zeros
from dualad._base.tree import flatten, leaf_paths
from dualad._forward.dual import Dual
from dualad._forward.transforms import basis_chunks, blocks, check_inputs, chunk_of, jvp, primals_at, split
from dualad._numpy.arraylike import ArrayLike
from dualad._sparse.coloring import recover_symmetric, seed_matrix
from dualad._sparse.compressed import Compressed, per_point
from dualad._sparse.detection import check_point
from dualad._staging.compile import compiled_on_repeat
from dualad._staging.record import traceable
from dualad._table.ownership import Accumulator, is_large, made_by_call
from dualad._table.vjp import Dropped, aval, shared_by_key

__all__ = [
    "Accumulator", "ArrayLike", "Compressed", "Dropped", "Dual", "Reached", "SCALAR_TYPES", "Selection",
    "Value", "aval",
    "basis_chunks", "bind", "blocks", "check_argnums", "check_callable", "check_count",
    "check_differentiable", "check_inputs", "check_number", "check_output_leaves", "check_point",
    "check_points",    "check_scalar_output", "chunk_of",
    "compiled_on_repeat", "describe", "dtype_of", "flatten", "fresh_keys", "get_cut", "is_closed",
    "is_complex", "is_float_dtype", "is_large", "is_operand", "jvp", "leaf_paths", "level_of", "made_by_call",
    "match_chunks", "namespace_of", "new_level", "paired_leaves", "per_point", "persist", "positions",
    "primals_at", "raw", "reach", "recover_symmetric", "reported_dtype", "seed_matrix", "seed_tangents",
    "set_cut", "shape_of", "shared_by_key", "split", "split_aux", "to_floats", "to_host", "traceable",
    "user_frames", "validate_tangent",
    "zeros",
]

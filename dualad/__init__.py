"""dualad: forward-mode automatic differentiation for NumPy, CuPy and float code.

``Dual`` and ``HyperDual`` numbers run unmodified array code and give JVPs,
Jacobians and exact second derivatives. The primitive table in
:mod:`dualad.ops` is shared by every mode (``reverse`` and ``mixed`` too).

Examples
--------
>>> import numpy as np
>>> import dualad
>>> dualad.derivative(lambda x: np.sin(x) * x)(0.0)
0.0
"""

import importlib

from dualad import extend, ops
from dualad._base.core import EscapedValueError, bind
from dualad._base.tree import register_pytree_node
from dualad._batching.vmap import vmap
from dualad._forward.dual import Dual
from dualad._forward.hyperdual import HyperDual
from dualad._forward.jet import jet, jet_rules
from dualad._forward.transforms import derivative, hessian, jacfwd, jvp
from dualad._implicit.linear_solve import custom_linear_solve
from dualad._implicit.root import custom_root
from dualad._numpy.arraylike import register_numpy
from dualad._program.program import Program
from dualad._sparse.coloring import color_columns, color_symmetric
from dualad._sparse.detection import hessian_sparsity, jacobian_sparsity, sparsity_rules
from dualad._sparse.jacobian import SparseJacobian, sparse_jacfwd
from dualad._staging.compile import Compiled, compile
from dualad._staging.linearize import linear_transpose, linearize
from dualad._table.entries import Primitive, seal_builtins

seal_builtins()  # again: the implicit entries (custom_root, ...) load above ops, which sealed first

jit = compile  # JAX's name for it; ``from dualad import *`` brings ``jit``, never a ``compile``
# that would shadow Python's builtin.

__all__ = ["Compiled", "Dual", "EscapedValueError", "HyperDual", "Primitive", "Program", "SparseJacobian",
           "bind", "color_columns", "color_symmetric", "custom_linear_solve", "custom_root", "derivative",
           "extend", "hessian", "hessian_sparsity", "jacfwd", "jacobian_sparsity", "jet", "jet_rules",
           "jit", "jvp", "linear_transpose", "linearize", "ops", "register_numpy", "register_pytree_node",
           "sparse_jacfwd", "sparsity_rules", "vmap"]
__version__ = "0.1.0"

# JAX's names for transforms that live in the layers above dualad.
_ELSEWHERE = {"grad": "reverse.grad", "value_and_grad": "reverse.value_and_grad", "vjp": "reverse.vjp",
              "jacrev": "reverse.jacrev", "jacobian": "reverse.jacobian", "hvp": "mixed.hvp"}


def __getattr__(name: str):
    """``dualad.reverse`` and ``dualad.mixed`` on first use (see ``dualad._alias``), and
    ``dualad.scipy`` (which needs SciPy only when its functions are called)."""
    if name in ("reverse", "mixed", "scipy"):
        return importlib.import_module(f"dualad.{name}")
    if name in _ELSEWHERE:
        raise AttributeError(f"module 'dualad' has no attribute {name!r}: dualad is forward mode; "
                             f"use {_ELSEWHERE[name]} (`import {_ELSEWHERE[name].split('.')[0]}`)")
    raise AttributeError(f"module 'dualad' has no attribute {name!r}")

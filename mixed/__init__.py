"""mixed: forward-over-reverse Hessian-vector products, the Hessian at a point
as a linear operator (``linearize``), and the Newton optimizers that use
them, on NumPy or CuPy arrays.

The adapters for ``scipy.optimize.minimize`` (``jac=``, ``hessp=``) are in
:mod:`mixed.scipy`, which needs no SciPy to import.

Examples
--------
>>> import numpy as np
>>> from mixed import hvp
>>> hvp(lambda x: (x ** 4).sum(), np.array([1.0, 2.0]), np.array([1.0, 1.0]))
array([12., 48.])
"""

from mixed import scipy as scipy  # mixed.scipy after `import mixed`; it imports no SciPy
from mixed._hvp import grad_and_hvp, hessian, hvp
from mixed._linearize import HessianOperator, linearize
from mixed._newton_cg import newton_cg
from mixed._result import OptimizeResult
from mixed._sparse_hessian import SparseHessian, sparse_hessian
from mixed._trust_region import trust_region

__all__ = ["HessianOperator", "OptimizeResult", "SparseHessian", "grad_and_hvp", "hessian", "hvp",
           "linearize", "newton_cg", "sparse_hessian", "trust_region"]

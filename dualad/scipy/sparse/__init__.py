"""Sparse matrices whose entries carry derivatives, and ``dualad.scipy.sparse.linalg``.

:class:`csr_array` is SciPy's constructor ``csr_array((data, indices, indptr), shape=...)``
with ``data`` a value of any transform (the structure stays plain integers): its product
with a vector is differentiable, and :mod:`dualad.scipy.sparse.linalg`'s solves are
differentiable with respect to ``data``.

Examples
--------
>>> import numpy as np
>>> import dualad
>>> from dualad.scipy.sparse import csr_array
>>> a = csr_array((np.array([2.0, 1.0, 3.0]), np.array([0, 1, 1]), np.array([0, 2, 3])), shape=(2, 2))
>>> a @ np.array([1.0, 1.0])
array([3., 3.])
>>> dualad.jacfwd(lambda d: csr_array((d, a.indices, a.indptr), shape=(2, 2)) @ np.ones(2))(a.data)
array([[1., 1., 0.],
       [0., 0., 1.]])
"""

import importlib

from dualad.scipy.sparse._csr import csr_array

__all__ = ["csr_array", "linalg"]


def __getattr__(name: str):
    if name == "linalg":
        return importlib.import_module("dualad.scipy.sparse.linalg")
    raise AttributeError(f"module 'dualad.scipy.sparse' has no attribute {name!r}")

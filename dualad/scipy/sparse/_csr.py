"""A CSR matrix whose ``data`` may be a value of any transform."""

from __future__ import annotations

from typing import Any

import numpy as np

from dualad import ops
from dualad._base.backend import NUMPY_XP, scipy_module
from dualad._base.checks import check_differentiable, describe
from dualad._base.core import Value
from dualad._base.shapes import shape_of
from dualad.scipy._host import Host

__all__ = ["csr_array"]


class csr_array:  # noqa: N801 (SciPy's name)
    """``scipy.sparse.csr_array((data, indices, indptr), shape=shape)`` with differentiable
    ``data``.

    ``a @ x`` is the matrix-vector product (differentiable in ``data`` and ``x``);
    ``to_scipy()`` is SciPy's matrix of ``data``'s numbers. A SciPy sparse matrix is taken
    with :meth:`from_scipy`. See :mod:`dualad.scipy.sparse`.
    """

    __slots__ = ("data", "indices", "indptr", "shape")

    def __init__(self, arg: tuple, shape: tuple):
        who = "dualad.scipy.sparse.csr_array"
        if not (isinstance(arg, tuple) and len(arg) == 3):
            raise TypeError(f"{who}: the first argument must be (data, indices, indptr), got "
                            f"{describe(arg)}")
        data, indices, indptr = arg
        check_differentiable(data, f"{who}: data")
        indices, indptr = np.asarray(indices), np.asarray(indptr)
        if not (isinstance(shape, tuple) and len(shape) == 2):
            raise TypeError(f"{who}: shape must be a pair (rows, columns), got {shape!r}")
        if indices.dtype.kind not in "iu" or indptr.dtype.kind not in "iu":
            raise TypeError(f"{who}: indices and indptr must be integer arrays, got dtypes "
                            f"{indices.dtype} and {indptr.dtype}")
        nnz = shape_of(data)
        if len(nnz) != 1 or indices.shape != nnz or indptr.shape != (shape[0] + 1,) \
                or int(indptr[-1]) != nnz[0]:
            raise ValueError(f"{who}: data and indices must be vectors of one length nnz, indptr of "
                             f"length rows + 1 = {shape[0] + 1} ending at nnz; got data {nnz}, "
                             f"indices {indices.shape}, indptr {indptr.shape}")
        self.data, self.indices, self.indptr, self.shape = data, indices, indptr, shape

    @classmethod
    def from_scipy(cls, a: Any) -> "csr_array":
        """A SciPy sparse matrix or array, as CSR (its data constant)."""
        a = a.tocsr()
        return cls((a.data, a.indices, a.indptr), shape=tuple(a.shape))

    @property
    def rows(self) -> np.ndarray:
        """The row of each stored entry."""
        return np.repeat(np.arange(self.shape[0]), np.diff(self.indptr))

    def to_scipy(self, data: Any = None) -> Any:
        """SciPy's CSR array of ``data`` (plain numbers, a NumPy copy of another library's;
        default this matrix's)."""
        sparse = scipy_module(NUMPY_XP, "sparse", "dualad.scipy.sparse.csr_array")
        data = Host(data).to_scipy(self.data if data is None else data)
        return sparse.csr_array((data, self.indices, self.indptr), shape=self.shape)

    def matvec(self, v: Any, data: Any = None, transpose: bool = False) -> Any:
        """``A v`` (``A^T v`` with ``transpose``) with the entries ``data`` (default this
        matrix's): SciPy's product on plain numbers; on values of a transform a gather and
        a sum per row, differentiable in ``data`` and ``v``."""
        data = self.data if data is None else data
        if not isinstance(data, Value) and not isinstance(v, Value):
            a, host = self.to_scipy(data), Host(v)
            return host.to_user((a.T if transpose else a) @ host.to_scipy(v))
        rows, cols = self.rows, self.indices
        if transpose:
            rows, cols = cols, rows
        return ops.bincount(rows, weights=ops.multiply(data, ops.take(v, cols)),
                            minlength=self.shape[1 if transpose else 0])

    def __matmul__(self, v: Any) -> Any:
        return self.matvec(v)

    def __repr__(self) -> str:
        return f"csr_array(shape={self.shape}, nnz={self.indices.size}, data={type(self.data).__name__})"

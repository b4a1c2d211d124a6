"""``scipy.sparse.linalg``'s solves, whose solutions carry derivatives.

``spsolve``, ``cg``, ``gmres`` and ``minres`` with SciPy's signatures: SciPy solves,
and the solution is differentiable with respect to ``b`` and to the matrix's entries
(a :class:`dualad.scipy.sparse.csr_array` whose ``data`` is a value of a transform;
a SciPy sparse matrix is a constant), through :func:`dualad.custom_linear_solve`. A
JVP is one more solve of the same system; a gradient one solve of the transposed
system by the same method (``A^T`` for ``spsolve`` and ``gmres``, ``A`` itself for
the symmetric ``cg`` and ``minres``) and one sparse product: never a dense matrix.
The derivative of an iterative solve is as accurate as the solve (its ``rtol``),
and taking it where SciPy reports no convergence (``info != 0``) raises
:class:`dualad.scipy.optimize.NotConvergedError`. ``b`` and the entries may be arrays of
another library (CuPy, any array-API library): SciPy solves NumPy copies, and the
solution comes back in that library (:mod:`dualad.scipy._host`).

Examples
--------
>>> import numpy as np
>>> import reverse
>>> from dualad.scipy.sparse import csr_array
>>> from dualad.scipy.sparse.linalg import spsolve
>>> structure = (np.array([0, 1, 0, 1]), np.array([0, 2, 4]))   # a full 2 x 2 matrix
>>> def x_of(data, b):
...     return spsolve(csr_array((data, *structure), shape=(2, 2)), b)
>>> data, b = np.array([2.0, 1.0, 1.0, 3.0]), np.array([1.0, 2.0])
>>> x_of(data, b)
array([0.2, 0.6])
>>> gdata, gb = reverse.grad(lambda d, b: x_of(d, b).sum(), argnums=(0, 1))(data, b)
>>> np.round(gb, 6), np.round(gdata, 6)       # A^-T 1, and -(A^-T 1)_i x_j per entry
(array([0.4, 0.2]), array([-0.08, -0.24, -0.04, -0.12]))
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from dualad._base.backend import NUMPY_XP, scipy_module
from dualad._base.checks import check_differentiable, describe
from dualad._base.core import Value
from dualad._base.shapes import dtype_of, ndim_of, shape_of
from dualad._batching.vmap import vmap
from dualad._implicit.linear_solve import custom_linear_solve
from dualad._primitives.elementwise import astype
from dualad._primitives.shape import reshape
from dualad.scipy._host import Host, float_operand, host_values
from dualad.scipy._solves import Solves
from dualad.scipy.sparse._csr import csr_array

__all__ = ["cg", "gmres", "minres", "spsolve"]


def _matrix(A: Any, b: Any, who: str, columns: bool = False) -> csr_array:
    """``A`` as a :class:`csr_array` (a SciPy sparse matrix as a constant one), square and
    of ``b``'s length (with ``columns``, of the length of ``b``'s columns)."""
    if not isinstance(A, csr_array):
        if not hasattr(A, "tocsr"):
            raise TypeError(f"{who}: A must be a dualad.scipy.sparse.csr_array or a SciPy sparse "
                            f"matrix, got {describe(A)}")
        A = csr_array.from_scipy(A)
        host = Host(b)
        if host.foreign:  # SciPy's constant matrix, in b's library for the products
            A = csr_array((host.to_user(A.data), A.indices, A.indptr), shape=A.shape)
    check_differentiable(b, f"{who}: b")
    n, m = A.shape
    if n != m or shape_of(b)[:1] != (n,) or ndim_of(b) != (2 if columns else 1):
        expected = "a matrix whose columns are" if columns else "a vector"
        raise ValueError(f"{who}: A must be square and b {expected} of its size; got A of shape "
                         f"{A.shape} and b of shape {shape_of(b)}")
    return A


def _result_dtype(a: csr_array, b: Any) -> Any:
    """The solution's dtype: SciPy's, of ``A``'s entries and ``b`` (a complex A, real b)."""
    host = Host(b)
    if host.foreign:
        return host.xp.result_type(dtype_of(a.data), dtype_of(b))
    return np.result_type(dtype_of(a.data), dtype_of(b))


def _solve(A: Any, b: Any, who: str, method: Callable, symmetric: bool) -> Any:
    """``custom_linear_solve`` of the sparse product, ``method(matrix, rhs)`` solving with
    SciPy's matrix of the entries (transposed for the transposed system)."""
    a = _matrix(A, b, who)
    data = a.data  # the operand: a closure cell, where the solve's rules put other values
    dtype = _result_dtype(a, b)
    if dtype != dtype_of(b):
        b = astype(b, dtype)
    host = Host(b)  # SciPy solves on NumPy copies of another library's arrays

    def matvec(v):
        return a.matvec(v, data)

    def solve(_, rhs):
        return host.to_user(method(a.to_scipy(data), host.to_scipy(rhs)))

    def transpose_solve(_, rhs):
        return host.to_user(method(a.to_scipy(data).T.tocsr(), host.to_scipy(rhs)))
    return custom_linear_solve(matvec, b, solve, None if symmetric else transpose_solve,
                               symmetric=symmetric)


def spsolve(A: Any, b: Any, permc_spec: str | None = None, use_umfpack: bool = True) -> Any:
    """The solution of ``A x = b`` by ``scipy.sparse.linalg.spsolve`` (a sparse LU), with ``x``
    differentiable in ``b`` and ``A``'s entries; its gradient is one more sparse solve
    (with ``A^T``).

    ``b`` is a vector, or a dense matrix of right-hand sides (``(n, k)``: ``x`` is ``(n, k)``,
    and a vector for ``k = 1``, as SciPy gives it); with no derivative to take, SciPy solves
    all the columns at once, and each column's derivative is its own.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse
    >>> import dualad
    >>> from dualad.scipy.sparse.linalg import spsolve
    >>> A = scipy.sparse.diags([1.0, 2.0, 4.0]).tocsr()            # a constant matrix
    >>> dualad.jacfwd(lambda b: spsolve(A, b))(np.ones(3)).diagonal()
    array([1.  , 0.5 , 0.25])
    >>> spsolve(A, np.ones((3, 2)))                               # two right-hand sides
    array([[1.  , 1.  ],
           [0.5 , 0.5 ],
           [0.25, 0.25]])
    """
    who = "dualad.scipy.sparse.linalg.spsolve"
    spla = scipy_module(NUMPY_XP, "sparse.linalg", who)
    b = float_operand(b)

    def method(m, rhs):
        return spla.spsolve(m, rhs, permc_spec=permc_spec, use_umfpack=use_umfpack)
    if ndim_of(b) < 2:
        return _solve(A, b, who, method, symmetric=False)
    columns = shape_of(b)[1]
    a = _matrix(A, b, who, columns=True)
    if not isinstance(a.data, Value) and not isinstance(b, Value):
        host = Host(b)  # SciPy's numbers, (n,) for one column
        return host.to_user(method(a.to_scipy(a.data), host.to_scipy(b)))
    if columns == 0:  # nothing to solve: b is the empty solution, in the solution's dtype
        return astype(b, _result_dtype(a, b))
    x = vmap(lambda column: _solve(a, column, who, method, symmetric=False), in_axes=1, out_axes=1)(b)
    return x[:, 0] if columns == 1 else x


def _iterative(name: str, A: Any, b: Any, symmetric: bool, kwargs: dict) -> tuple:
    """SciPy's iterative ``name`` as a differentiable solve: ``(x, info)``, SciPy's ``info``
    of the forward solve; a derivative taken where a solve did not converge raises."""
    who = f"dualad.scipy.sparse.linalg.{name}"
    method = getattr(scipy_module(NUMPY_XP, "sparse.linalg", who), name)
    b = float_operand(b)
    if ndim_of(b) == 2 and shape_of(b)[1] == 1:  # SciPy's (N, 1) b, and its (N,) solution
        b = reshape(b, shape_of(b)[:1])
    host = Host(b)
    kwargs = dict(kwargs, x0=host_values(kwargs["x0"]), callback=host.wrap(kwargs["callback"]))
    solves = Solves(who)

    def run(m, rhs):
        x, info = method(m, rhs, **kwargs)
        solves.record(info, info == 0, f"info={info}")
        return x

    x = _solve(A, b, who, run, symmetric)
    if isinstance(x, Value) and x.carries_derivative:  # a derivative is being taken
        solves.check()
    # SciPy's info of the forward solve; under vmap, where SciPy solves each element, the
    # first that did not converge (one info serves the batch: never a success it did not have)
    infos = [info for info, _, _ in solves.outcomes]
    return x, next((info for info in infos if info != 0), 0)


def cg(A: Any, b: Any, x0: Any = None, *, rtol: float = 1e-5, atol: float = 0.0,
       maxiter: int | None = None, M: Any = None, callback: Callable | None = None) -> tuple:
    """``scipy.sparse.linalg.cg`` (``A`` symmetric positive definite): ``(x, info)``, with ``x``
    differentiable in ``b`` and ``A``'s entries; each derivative is one more CG solve with
    ``A``, to the same ``rtol``.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse
    >>> import reverse
    >>> from dualad.scipy.sparse.linalg import cg
    >>> A = scipy.sparse.diags([2.0, 4.0]).tocsr()
    >>> np.round(reverse.grad(lambda b: cg(A, b, rtol=1e-12)[0].sum())(np.ones(2)), 12)
    array([0.5 , 0.25])
    """
    return _iterative("cg", A, b, True, dict(x0=x0, rtol=rtol, atol=atol, maxiter=maxiter, M=M,
                                              callback=callback))


def gmres(A: Any, b: Any, x0: Any = None, *, rtol: float = 1e-5, atol: float = 0.0,
          restart: int | None = None, maxiter: int | None = None, M: Any = None,
          callback: Callable | None = None, callback_type: str | None = None) -> tuple:
    """``scipy.sparse.linalg.gmres``: ``(x, info)``, with ``x`` differentiable in ``b`` and
    ``A``'s entries; a JVP is one more GMRES solve with ``A``, a VJP one with ``A^T``, each
    with the same keywords (``M``, ``A``'s preconditioner, serves ``A^T``'s solve too, where
    it may help less; ``callback`` is called by these solves as well).

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse
    >>> import dualad
    >>> from dualad.scipy.sparse.linalg import gmres
    >>> A = scipy.sparse.csr_array(np.array([[2.0, 1.0], [0.0, 4.0]]))
    >>> np.round(dualad.jacfwd(lambda b: gmres(A, b, rtol=1e-12)[0])(np.ones(2)), 12)
    array([[ 0.5  , -0.125],
           [ 0.   ,  0.25 ]])
    """
    return _iterative("gmres", A, b, False, dict(x0=x0, rtol=rtol, atol=atol, restart=restart,
                                                 maxiter=maxiter, M=M, callback=callback,
                                                 callback_type=callback_type))


def minres(A: Any, b: Any, x0: Any = None, *, rtol: float = 1e-5, shift: float = 0.0,
           maxiter: int | None = None, M: Any = None, callback: Callable | None = None,
           show: bool = False, check: bool = False) -> tuple:
    """``scipy.sparse.linalg.minres`` (``A`` symmetric): ``(x, info)``, with ``x``
    differentiable in ``b`` and ``A``'s entries (the system solved is ``(A - shift I) x = b``);
    each derivative is one more MINRES solve, to the same ``rtol``.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse
    >>> import reverse
    >>> from dualad.scipy.sparse.linalg import minres
    >>> A = scipy.sparse.diags([2.0, -4.0]).tocsr()                # symmetric, indefinite
    >>> np.round(reverse.grad(lambda b: minres(A, b, rtol=1e-12)[0].sum())(np.ones(2)), 12)
    array([ 0.5 , -0.25])
    """
    if shift != 0.0:
        raise NotImplementedError(f"dualad.scipy.sparse.linalg.minres: shift is not supported yet "
                                  f"(the derivative would need A - shift I); got shift={shift!r}")
    return _iterative("minres", A, b, True, dict(x0=x0, rtol=rtol, maxiter=maxiter, M=M,
                                                 callback=callback, show=show, check=check))

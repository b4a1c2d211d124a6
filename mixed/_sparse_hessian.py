"""Sparse Hessians: the pattern detected by tracing, star-coloured, then one
forward-over-reverse Hessian-vector product per colour.

Detection (:func:`dualad.hessian_sparsity`) and colouring
(:func:`dualad.color_symmetric`) are paid once per shape of the point. The
first evaluation is one eager forward-over-reverse pass carrying the ``c``
seed directions; from the second, their products are one program
(:func:`dualad.compile`, with the seeds as its constants) replayed at each
point: ``f``'s Python is not run again where its guards hold, and arrays it
closes over are read at its trace. The Hessian's nonzeros are read from the
``c x n`` products (:func:`dualad.interpreter.recover_symmetric`).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

import dualad
from dualad.interpreter import (
    Compressed,
    check_point,
    compiled_on_repeat,
    per_point,
    recover_symmetric,
)
from mixed._hvp import check_function, check_objective, grad_and_hvp, hvp

__all__ = ["SparseHessian", "sparse_hessian"]


class SparseHessian(Compressed):
    """The Hessian of scalar ``f`` as a ``scipy.sparse.csr_matrix``: detected and
    star-coloured once (at ``x``), evaluated at many points with one
    forward-over-reverse Hessian-vector product per colour.

    Parameters
    ----------
    f : callable
        The objective ``f(x, *args)``, returning a real scalar, of a 1-d floating
        NumPy array ``x``.
    x : numpy.ndarray
        The point at which the pattern is detected; control flow that depends on
        values takes the branches it takes here.
    args : tuple
        ``f``'s other arguments, held constant (SciPy's ``args``).

    Attributes
    ----------
    pattern : scipy.sparse.csr_matrix
        The detected pattern (boolean, symmetric, ``n x n``).
    colors : numpy.ndarray
        The star colouring of the pattern; ``n_colors`` colours.

    Examples
    --------
    >>> import numpy as np
    >>> from mixed import SparseHessian
    >>> def rosenbrock(x):
    ...     return (100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2).sum()
    >>> H = SparseHessian(rosenbrock, np.zeros(5))
    >>> H.n_colors, H.pattern.nnz
    (3, 13)
    >>> H(np.ones(5)).toarray()
    array([[ 802., -400.,    0.,    0.,    0.],
           [-400., 1002., -400.,    0.,    0.],
           [   0., -400., 1002., -400.,    0.],
           [   0.,    0., -400., 1002., -400.],
           [   0.,    0.,    0., -400.,  200.]])
    """

    who = "SparseHessian"

    def __init__(self, f: Callable, x: np.ndarray, *, args: tuple = ()):
        self._f, self._args = check_objective(f, args, "SparseHessian"), args
        x = check_point(x, "SparseHessian")
        self.shape, self.dtype = (x.size, x.size), x.dtype
        self.pattern = dualad.hessian_sparsity(self._f, x)
        self.colors = dualad.color_symmetric(self.pattern)
        f_of_x = self._f
        # The products with the seeds: at the first point one eager pass carrying them all;
        # from the second one program of one product per colour, which replays faster than a
        # (c, n) block of them (benchmarks/README.md, "Measurements behind the code").
        self._compress(x, lambda seeds: compiled_on_repeat(
            lambda v: [hvp(f_of_x, v, seed) for seed in seeds],
            first=lambda v: grad_and_hvp(f_of_x, v, seeds)[1]), recover_symmetric(self.pattern, self.colors))

    def __repr__(self) -> str:
        n, nnz = self.shape[0], self.pattern.nnz
        return f"<SparseHessian {n}x{n} nnz={nnz} colors={self.n_colors}>"


def sparse_hessian(f: Callable) -> Callable:
    """The Hessian of scalar ``f`` as a ``scipy.sparse.csr_matrix``, forward over reverse
    through a star colouring (:class:`SparseHessian`).

    At the first call for each shape and dtype of ``x``, and again when
    ``args`` are other objects (or other numbers) than the last call's, the
    pattern is detected (:func:`dualad.hessian_sparsity`) and star-coloured
    (:func:`dualad.color_symmetric`); each call then costs one
    forward-over-reverse Hessian-vector product per colour.

    Parameters
    ----------
    f : callable
        The objective ``f(x, *args)``, returning a real scalar, of a 1-d floating
        NumPy array ``x``.

    Returns
    -------
    callable
        ``(x, *args) -> scipy.sparse.csr_matrix`` of shape ``(x.size, x.size)``
        (the signature of SciPy's ``hess=``).

    Examples
    --------
    >>> import numpy as np
    >>> from mixed import sparse_hessian
    >>> hess = sparse_hessian(lambda x, a: (a * x ** 3).sum() + x[0] * x[-1])
    >>> hess(np.array([1.0, 2.0, 3.0]), 2.0).toarray()
    array([[12.,  0.,  1.],
           [ 0., 24.,  0.],
           [ 1.,  0., 36.]])
    """
    check_function(f, "sparse_hessian")
    return per_point(lambda x, *args: SparseHessian(f, x, args=args), "sparse_hessian",
                     lambda held, args: _same_args(args, held._args))


def _same_args(args: tuple, held: tuple) -> bool:
    """The same objects, or equal numbers (SciPy passes the same ``args`` at every call)."""
    return len(args) == len(held) and all(
        a is b or (type(a) is type(b) and isinstance(a, (bool, int, float, complex)) and a == b)
        for a, b in zip(args, held))

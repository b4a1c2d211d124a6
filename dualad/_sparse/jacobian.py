"""Sparse Jacobians by compressed forward mode: detected and coloured once
(:mod:`dualad._forward.sparsity`, :mod:`dualad._forward.coloring`), then one forward
pass carrying one direction per colour, compiled (:func:`dualad.compile`): the
seeds are constants of the program, so what the Jacobian does not take from the
point (the linear parts of a residual) is folded once, and each evaluation
replays the rest."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from dualad._base.checks import check_callable
from dualad._forward.coloring import _sparse, color_columns, seed_matrix
from dualad._forward.sparsity import _output, check_point, jacobian_sparsity
from dualad._forward.transforms import jvp
from dualad._staging.compile import compiled_on_repeat

__all__ = ["SparseJacobian", "sparse_jacfwd"]


class SparseJacobian:
    """The Jacobian of ``f`` as a sparse matrix: detected and coloured once (at ``x``),
    evaluated at many points with one forward pass of one direction per colour.

    The first evaluation runs that pass eagerly; from the second, it is a
    program (:func:`dualad.compile`) replayed at each point, so arrays ``f``
    closes over are read when it is traced, and where ``f`` cannot be traced
    the pass runs eagerly, with compile's warning saying why.

    Parameters
    ----------
    f : callable
        A function of one 1-d array returning one array (see :func:`jacobian_sparsity`).
    x : numpy.ndarray
        The point at which the pattern is detected.

    Attributes
    ----------
    pattern : scipy.sparse.csr_matrix
        The detected sparsity pattern (boolean, ``m x n``).
    colors : numpy.ndarray
        The colour of each column; ``n_colors`` of them.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import SparseJacobian
    >>> jac = SparseJacobian(lambda x: x[1:] - x[:-1] ** 2, np.ones(4))
    >>> jac.n_colors
    2
    >>> jac(np.array([1.0, 2.0, 3.0, 4.0])).toarray()
    array([[-2.,  1.,  0.,  0.],
           [ 0., -4.,  1.,  0.],
           [ 0.,  0., -6.,  1.]])
    """

    def __init__(self, f: Callable, x: np.ndarray):
        self.f = f
        self.shape, self.dtype = x.shape, x.dtype
        self.pattern = jacobian_sparsity(f, x)
        self.colors = color_columns(self.pattern)
        self._seeds = seed_matrix(self.colors, x.dtype)
        self.n_colors = self._seeds.shape[0]
        m = self.pattern.shape[0]
        rows = np.repeat(np.arange(m), np.diff(self.pattern.indptr))
        self._read = self.colors[self.pattern.indices] * m + rows  # in the compressed Jacobian
        seeds = self._seeds
        # the Jacobian times the seeds (one JVP of n_colors directions)
        self._compressed = compiled_on_repeat(
            lambda v: jvp(lambda u: _output(f(u), "SparseJacobian"), (v,), (seeds,))[1])

    def __call__(self, x: np.ndarray) -> Any:
        """The Jacobian at ``x`` (of the shape and dtype the pattern was detected for)."""
        x = check_point(x, "SparseJacobian", (self.shape, self.dtype))
        sp = _sparse()
        p = self.pattern
        if self.n_colors:
            data = np.take(np.asarray(self._compressed(x)), self._read)
        else:
            data = np.zeros(0, dtype=x.dtype)
        return sp.csr_matrix((data, p.indices.copy(), p.indptr.copy()), shape=p.shape)


def sparse_jacfwd(f: Callable) -> Callable:
    """The Jacobian of ``f`` as a ``scipy.sparse.csr_matrix``, by compressed forward mode.

    At the first call for each input shape and dtype, the pattern is detected
    (:func:`jacobian_sparsity`) and its columns coloured (:func:`color_columns`);
    each call then costs one forward pass carrying one direction per colour.

    Parameters
    ----------
    f : callable
        A function of one 1-d floating array returning one array.

    Returns
    -------
    callable
        ``x -> scipy.sparse.csr_matrix`` of shape ``(f(x).size, x.size)``.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import sparse_jacfwd
    >>> jac = sparse_jacfwd(lambda x: np.sin(x) * 2.0)
    >>> jac(np.zeros(3)).toarray()
    array([[2., 0., 0.],
           [0., 2., 0.],
           [0., 0., 2.]])
    """
    check_callable(f, "sparse_jacfwd")
    cache: dict[tuple, SparseJacobian] = {}

    def jac(x: np.ndarray) -> Any:
        x = check_point(x, "sparse_jacfwd")
        key = (x.shape, x.dtype)
        if key not in cache:
            cache[key] = SparseJacobian(f, x)
        return cache[key](x)

    return jac

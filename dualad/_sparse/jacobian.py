"""Sparse Jacobians by compressed forward mode: detected and coloured once
(:mod:`dualad._sparse.detection`, :mod:`dualad._sparse.coloring`), then one forward
pass carrying one direction per colour (:mod:`dualad._sparse.compressed`), compiled
(:func:`dualad.compile`): the seeds are constants of the program, so what the
Jacobian does not take from the point (the linear parts of a residual) is folded
once, and each evaluation replays the rest."""

from __future__ import annotations

from typing import Callable

import numpy as np

from dualad._base.checks import check_callable
from dualad._forward.transforms import jvp
from dualad._sparse.coloring import color_columns, recover_columns
from dualad._sparse.compressed import Compressed, per_point
from dualad._sparse.detection import _output, jacobian_sparsity
from dualad._staging.compile import compiled_on_repeat

__all__ = ["SparseJacobian", "sparse_jacfwd"]


class SparseJacobian(Compressed):
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

    who = "SparseJacobian"

    def __init__(self, f: Callable, x: np.ndarray):
        self.f = f
        self.shape, self.dtype = x.shape, x.dtype
        self.pattern = jacobian_sparsity(f, x)
        self.colors = color_columns(self.pattern)
        # the Jacobian times the seeds: one JVP of n_colors directions
        self._compress(x, lambda seeds: compiled_on_repeat(
            lambda v: jvp(lambda u: _output(f(u), "SparseJacobian"), (v,), (seeds,))[1]),
            recover_columns(self.pattern, self.colors))


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
    at = per_point(lambda x: SparseJacobian(f, x), "sparse_jacfwd", lambda held, args: True)
    return lambda x: at(x)

"""Colourings that compress a sparse derivative into a few directions, and the recovery.

:func:`color_columns` (Jacobians) gives two columns the same colour only where
they share no row, so the product of the Jacobian with one seed direction per
colour holds each nonzero alone in its row. :func:`color_symmetric`
(Hessians) is a *star* colouring of the adjacency graph (Gebremedhin, Manne
and Pothen 2005): distance-1, and every path on four vertices takes at least
three colours, so that each nonzero ``H[i, j]`` is alone of its colour in row
``i`` or in row ``j``, and is read directly from ``H @ seeds`` by the symmetry
(:func:`recover_symmetric`). It needs far fewer colours than a column colouring
where a row is dense (an arrowhead: 2 against ``n``).

Both greedy loops run as Numba kernels where Numba is installed (the
``fast`` extra), and as the same Python otherwise.
"""

from __future__ import annotations

import heapq
from typing import Any, Callable

import numpy as np

from dualad._base.kernel_cache import njit

__all__ = ["color_columns", "color_symmetric", "recover_columns", "recover_symmetric", "seed_matrix"]


def _sparse():
    """``scipy.sparse``, imported on first use (SciPy is optional)."""
    try:
        import scipy.sparse
    except ImportError as e:  # pragma: no cover - SciPy is installed where the tests run
        raise ImportError("dualad's sparse derivatives need SciPy: pip install scipy") from e
    return scipy.sparse


def _ones(pattern: Any, name: str) -> Any:
    """``pattern`` as a float CSR matrix of ones at its stored entries."""
    sp = _sparse()
    if not (sp.issparse(pattern) or isinstance(pattern, np.ndarray)) or np.ndim(pattern) != 2:
        raise TypeError(f"{name}: pattern must be a 2-d scipy.sparse matrix or NumPy array, got "
                        f"{type(pattern).__name__}" + (f" of {np.ndim(pattern)} dimensions"
                                                        if isinstance(pattern, np.ndarray) else ""))
    p = sp.csr_matrix(pattern, dtype=np.float64, copy=True)  # never the caller's index arrays
    p.eliminate_zeros()
    p.data[:] = 1.0
    return p


def color_columns(pattern: Any, *, native: bool | None = None) -> np.ndarray:
    """A colour per column such that no two columns of one colour share a row.

    Greedy distance-1 colouring of the column intersection graph in DSATUR
    order (Brelaz): next, the uncoloured column whose neighbours already hold
    the most distinct colours, ties by degree, then by index. It reaches the
    least number for stencils: 3 on a tridiagonal Jacobian, 5 on the 2-d
    5-point Laplacian (largest-first order took 7 there).

    Parameters
    ----------
    pattern : scipy.sparse matrix or numpy.ndarray
        The Jacobian's sparsity pattern, ``m x n`` (nonzero where it may be nonzero).
    native : bool, optional
        Run the greedy loop compiled by Numba (True), in Python (False), or
        by Numba where it is installed (None, the default). Both give the
        same colours.

    Returns
    -------
    numpy.ndarray
        ``n`` integer colours ``0 .. c - 1``; ``c`` directions recover the Jacobian.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from dualad import color_columns
    >>> color_columns(sp.diags([1.0, 1.0, 1.0], [-1, 0, 1], shape=(5, 5)))
    array([2, 1, 0, 2, 1])
    """
    p = _ones(pattern, "color_columns")
    graph = (p.T @ p).tocsr()
    return _run(_dsatur_loop, native, "color_columns", graph.indptr, graph.indices)


def _dsatur_loop(indptr, indices, color):
    """DSATUR over a graph (self loops allowed), into ``color`` (-1: not yet). Written for
    both Numba (arrays) and Python (lists)."""
    n = len(color)
    seen = [0] * (indptr[n] + n)  # from indptr[j] + j: the distinct colours among j's neighbours
    saturation = [0] * n  # how many of them
    queue = [(0, -(indptr[j + 1] - indptr[j]), j) for j in range(n)]  # (-saturation, -degree, vertex)
    heapq.heapify(queue)
    while queue:
        s, _, j = heapq.heappop(queue)
        if color[j] >= 0 or -s != saturation[j]:  # coloured, or an outdated entry
            continue
        start, c, i = indptr[j] + j, 0, 0
        while i < saturation[j]:  # the least colour not seen: rescan after each taken one
            if seen[start + i] == c:
                c, i = c + 1, -1
            i += 1
        color[j] = c
        for k in range(indptr[j], indptr[j + 1]):
            m = indices[k]
            if color[m] >= 0:
                continue
            start = indptr[m] + m
            held = False
            for i in range(start, start + saturation[m]):
                held = held or seen[i] == c
            if not held:
                seen[start + saturation[m]] = c
                saturation[m] += 1
                heapq.heappush(queue, (-saturation[m], -(indptr[m + 1] - indptr[m]), m))


def _star_loop(indptr, indices, order, color):
    """Greedy star colouring in ``order`` (GMP 2005, algorithm 4.1) of a graph without
    self loops, into ``color`` (-1: not yet). Written for both Numba and Python."""
    forbidden = [-1] * (len(color) + 1)
    for v in order:
        for k in range(indptr[v], indptr[v + 1]):  # distance 1
            if color[indices[k]] >= 0:
                forbidden[color[indices[k]]] = v
        for k in range(indptr[v], indptr[v + 1]):
            w = indices[k]
            cw = color[w]
            for m in range(indptr[w], indptr[w + 1]):
                x = indices[m]
                cx = color[x]
                if x == v or cx < 0:
                    continue
                if cw < 0:  # w uncoloured: x's colour would meet v's across w
                    forbidden[cx] = v
                    continue
                for q in range(indptr[x], indptr[x + 1]):  # the path v - w - x - y, two-coloured
                    y = indices[q]
                    if y != w and color[y] == cw:
                        forbidden[cx] = v
                        break
        c = 0
        while forbidden[c] == v:
            c += 1
        color[v] = c


_compiled: dict[Callable, Callable] = {}


def _run(loop: Callable, native: bool | None, who: str, *graph: np.ndarray) -> np.ndarray:
    """The colours ``loop(*graph, color)`` gives (``graph``: integer arrays of a graph's
    vertices), compiled by Numba where it is installed (``native`` None), or as asked;
    Python runs it on lists, which it indexes faster."""
    if loop not in _compiled:
        try:
            _compiled[loop] = njit(loop, nogil=True)  # kept on disk, outside the package
        except ImportError:
            _compiled[loop] = loop
    kernel = _compiled[loop]
    if native and kernel is loop:
        raise ImportError(f"{who}(native=True) needs Numba: pip install numba")
    args = [a.astype(np.int64) for a in graph] + [np.full(len(graph[0]) - 1, -1, dtype=np.int64)]
    if native is False or kernel is loop:
        args = [a.tolist() for a in args]
        loop(*args)
    else:
        kernel(*args)
    return np.asarray(args[-1], dtype=np.int64)


def color_symmetric(pattern: Any, *, native: bool | None = None) -> np.ndarray:
    """A star colouring of a symmetric pattern: one colour per column such that each
    nonzero ``H[i, j]`` can be read directly from ``H @ seed_matrix(colors)``.

    Two columns that share a row never share a colour, and every path of four
    vertices takes three colours. The fewer colours of two greedy colourings:
    the star colouring in largest-first order (most nonzeros first, ties by
    index), which takes 2 colours on an arrowhead (one dense row and column)
    where a distance-2 colouring takes ``n``, and :func:`color_columns`'
    DSATUR distance-2 colouring (also a star colouring), which takes 5 on the
    2-d 5-point Laplacian where the greedy star one takes 6. Both take 3 on
    a tridiagonal pattern.

    Parameters
    ----------
    pattern : scipy.sparse matrix or numpy.ndarray
        A symmetric ``n x n`` pattern (nonzero where the Hessian may be nonzero).
    native : bool, optional
        Run the greedy loop compiled by Numba (True), in Python (False), or
        by Numba where it is installed (None, the default). Both give the
        same colours.

    Returns
    -------
    numpy.ndarray
        ``n`` integer colours ``0 .. c - 1``.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import color_symmetric
    >>> arrow = np.eye(5)
    >>> arrow[0, :] = arrow[:, 0] = 1.0
    >>> color_symmetric(arrow)
    array([0, 1, 1, 1, 1])
    """
    p = _ones(pattern, "color_symmetric")
    n = p.shape[0]
    if p.shape != (n, n) or (p != p.T).nnz:
        raise ValueError(f"color_symmetric: pattern must be square and symmetric, got shape {p.shape}"
                         + ("" if p.shape != (n, n) else " and an unsymmetric pattern"))
    star = _run(_star_loop, native, "color_symmetric", *_off_diagonal(p))
    closed = p + _sparse().identity(n, format="csr")  # each vertex and its neighbours, per row
    if star.max(initial=-1) < np.diff(closed.indptr).max(initial=0):
        return star  # a distance-2 colouring takes at least a row's nonzeros: it cannot do better
    distance2 = color_columns(closed, native=native)
    return distance2 if distance2.max(initial=-1) < star.max(initial=-1) else star


def _off_diagonal(p: Any) -> tuple:
    """The adjacency graph of a symmetric pattern (CSR without the diagonal), and the
    largest-first order of its vertices (most neighbours first, ties by index)."""
    rows = np.repeat(np.arange(p.shape[0]), np.diff(p.indptr))
    keep = rows != p.indices
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows[keep], minlength=p.shape[0]))])
    return indptr, p.indices[keep], np.argsort(-np.diff(indptr), kind="stable")


def seed_matrix(colors: np.ndarray, dtype: Any = np.float64) -> np.ndarray:
    """The ``c x n`` seed directions: row ``k`` is one at the columns of colour ``k``.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad._sparse.coloring import seed_matrix
    >>> seed_matrix(np.array([0, 1, 0]))
    array([[1., 0., 1.],
           [0., 1., 0.]])
    """
    seeds = np.zeros((_count(colors), colors.size), dtype=dtype)
    seeds[colors, np.arange(colors.size)] = 1.0
    return seeds


def recover_symmetric(pattern: Any, colors: np.ndarray) -> Callable[[np.ndarray], Any]:
    """From a symmetric pattern and its star colouring, ``compressed -> H``: ``compressed``
    is ``seed_matrix(colors) @ H`` (``c x n``), ``H`` comes back as a CSR matrix.

    Each stored ``H[i, j]`` is read at ``compressed[colour j, i]`` where ``j``'s colour
    is alone in row ``i``, else at ``compressed[colour i, j]`` (alone in row ``j``).

    Examples
    --------
    >>> import numpy as np
    >>> from dualad._sparse.coloring import color_symmetric, recover_symmetric, seed_matrix
    >>> h = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 4.0], [0.0, 4.0, 5.0]])
    >>> colors = color_symmetric(h != 0)
    >>> recover_symmetric(h != 0, colors)(seed_matrix(colors) @ h).toarray()
    array([[2., 1., 0.],
           [1., 3., 4.],
           [0., 4., 5.]])
    """
    p = _ones(pattern, "recover_symmetric")
    n = p.shape[0]
    n_colors = _count(colors)
    rows = np.repeat(np.arange(n), np.diff(p.indptr))
    cols = p.indices
    counts = np.bincount(rows * n_colors + colors[cols], minlength=n * n_colors)
    alone = counts[rows * n_colors + colors[cols]] == 1  # j's colour alone in row i
    if not (alone | (counts[cols * n_colors + colors[rows]] == 1)).all():
        raise ValueError("recover_symmetric: colors is not a star colouring of pattern: some "
                         "nonzero is alone of its colour in neither its row nor its column")
    flat = np.where(alone, colors[cols] * n + rows, colors[rows] * n + cols)  # in compressed.ravel()
    return _reading(p, flat, n_colors, "recover_symmetric")


def recover_columns(pattern: Any, colors: np.ndarray) -> Callable[[np.ndarray], Any]:
    """From a pattern and a colouring of its columns, ``compressed -> J``: ``compressed``
    is ``(J @ seed_matrix(colors).T).T`` (``c x m``: the product with each colour's seed
    direction), ``J`` comes back as a CSR matrix; each stored ``J[i, j]`` is read at
    ``compressed[colour j, i]``, where no other column of its colour has a nonzero.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad._sparse.coloring import color_columns, recover_columns, seed_matrix
    >>> j = np.array([[1.0, 2.0, 0.0], [0.0, 3.0, 4.0]])
    >>> colors = color_columns(j != 0)
    >>> recover_columns(j != 0, colors)(seed_matrix(colors) @ j.T).toarray()
    array([[1., 2., 0.],
           [0., 3., 4.]])
    """
    p = _ones(pattern, "recover_columns")
    m = p.shape[0]
    rows = np.repeat(np.arange(m), np.diff(p.indptr))
    return _reading(p, colors[p.indices] * m + rows, _count(colors), "recover_columns")


def _count(colors: np.ndarray) -> int:
    """The number of colours of a colouring (colours are ``0 .. c - 1``)."""
    return int(colors.max()) + 1 if colors.size else 0


def _reading(p: Any, flat: np.ndarray, n_colors: int, who: str) -> Callable[[np.ndarray], Any]:
    """``compressed -> `` the matrix of pattern ``p`` whose stored entries, in order, are
    ``compressed.ravel()[flat]`` (``compressed`` is ``n_colors x p.shape[0]``); each
    matrix has index arrays of its own, which a caller may write into."""
    sp = _sparse()
    shape = (n_colors, p.shape[0])
    indices, indptr = p.indices.copy(), p.indptr.copy()

    def recover(compressed: np.ndarray) -> Any:
        if np.shape(compressed) != shape:
            raise ValueError(f"{who}: compressed must have shape {shape}, got {np.shape(compressed)}")
        return sp.csr_matrix((np.take(compressed, flat), indices.copy(), indptr.copy()), shape=p.shape)
    return recover

"""Sparse Jacobians: sparsity detection by tracing, column colouring, compressed evaluation.

:func:`jacobian_sparsity` runs the user's function once on a ``Pattern``: the
primal beside, for each of its elements, the set of input indices it
depends on, held as a boolean ``scipy.sparse`` CSR matrix with one row per
element (C order) and one column per input. Each entry of the table maps
its operands' patterns to its output's through a *local* pattern ``S_i``
(rows: output elements, columns: operand ``i``'s elements), ``P_out = OR_i
S_i @ P_i``. The rules are global, as SparseConnectivityTracer's: they
never look at the values (``x * 0`` and ``maximum`` keep both
dependencies), so the pattern holds at every point that takes the same
control flow as the point traced. The rules (:func:`sparsity_rules`):

- ``constant``: an entry with no derivative (comparisons, ``floor``): no dependence;
- ``elementwise``: each element depends on the element of each operand it
  is broadcast from (every elementwise entry, and ``real``, ``imag``,
  ``conj``, ``astype``, ``copy``);
- ``selection``: entries that move elements (``getitem``, ``gather``,
  ``reshape``, ``permute_dims``, ``broadcast_to``, ``concatenate``,
  ``flip``, ``pad``): the entry itself is run on an array of element
  numbers, which says where each output element comes from;
- ``scatter``: ``scatter`` and ``scatter_at`` add each value into its target;
- ``reduction``: ``sum``, ``prod``, ``max``, ``min``: the union over the reduced axes;
- ``cumsum``: the union over the prefix;
- ``matmul``: ``out[..., i, j]`` on row ``i`` of the left operand and column ``j`` of the right;
- ``fallback``: every other entry (linear algebra, FFTs, ``einsum``):
  every output element depends on every element of every operand. Never
  too sparse; too dense only by the structure the entry has.

:func:`color_columns` colours the columns greedily in DSATUR order;
:class:`SparseJacobian` detects and colours once and evaluates the Jacobian
at many points with one chunked forward pass of one direction per colour.
"""

from __future__ import annotations

import heapq
import math
from typing import Any, Callable

import numpy as np

from dualad import ops
from dualad._base.core import Value, bind, transform_level
from dualad._base.shapes import shape_of
from dualad._base.tree import flatten
from dualad._forward.dual import PrimalShaped
from dualad._forward.transforms import jvp
from dualad._numpy.arraylike import ArrayLike
from dualad._primitives.indexing import _filled
from dualad._table.entries import REGISTRY, Elementwise, Primitive

__all__ = ["SparseJacobian", "color_columns", "jacobian_sparsity", "sparse_jacfwd", "sparsity_rules"]


def _sparse():
    """``scipy.sparse``, imported on first use (SciPy is optional)."""
    try:
        import scipy.sparse
    except ImportError as e:  # pragma: no cover - SciPy is installed where the tests run
        raise ImportError("dualad's sparse Jacobians need SciPy: pip install scipy") from e
    return scipy.sparse


class Pattern(PrimalShaped, ArrayLike, Value):
    """A value and, per element (C order), the inputs it depends on (made by
    :func:`jacobian_sparsity`): ``rows`` is a CSR matrix of ``size`` rows and one
    column per input, nonzero where the element depends on the input."""

    __slots__ = ("primal", "rows")
    __array_priority__ = 100
    made_by = "dualad.jacobian_sparsity"

    @classmethod
    def _make(cls, primal: Any, rows: Any, level: int) -> "Pattern":
        p = object.__new__(cls)
        p.primal, p.rows, p._level = primal, rows, level
        return p

    def __repr__(self) -> str:
        return f"Pattern({self.primal!r}, nnz={self.rows.nnz})"

    def __setitem__(self, idx, value):
        """``p[idx] = value`` as NumPy assigns: the Pattern takes the new value's parts."""
        new = ops.index_set(self, value, idx)
        if type(new) is not Pattern or new._level != self._level:
            raise TypeError("p[idx] = value: value belongs to another transform than the sparsity "
                            f"trace (value is {type(value).__name__})")
        self.primal, self.rows = new.primal, new.rows

    def _process(self, prim: Primitive, args: tuple, params: dict) -> Any:
        level = self._level
        primals = [a.primal if type(a) is Pattern and a._level == level else a for a in args]
        rows = [a.rows if type(a) is Pattern and a._level == level else None for a in args]
        ans = bind(prim, *primals, **params)
        rule = _rule(prim)
        if rule is _constant:
            return ans
        n = self.rows.shape[1]
        if prim.multiple_results:
            return tuple(Pattern._make(a, _combine(rule(prim, primals, rows, a, params), rows, a, n),
                                       level) for a in ans)
        return Pattern._make(ans, _combine(rule(prim, primals, rows, ans, params), rows, ans, n), level)


def _size(x: Any) -> int:
    return math.prod(shape_of(x))


def _combine(local: list, rows: list, ans: Any, n: int) -> Any:
    """``OR_i S_i @ P_i`` over the operands that carry a pattern."""
    sp = _sparse()
    out = sp.csr_matrix((_size(ans), n), dtype=np.float64)
    for s, r in zip(local, rows):
        if r is not None and s is not None:
            out = out + s @ r
    out.data[:] = 1.0  # counts of paths: every stored entry is positive, so nonzero
    return out


def _local(out_rows: np.ndarray, in_cols: np.ndarray, out_size: int, in_size: int) -> Any:
    """The local pattern with an entry at each (out_rows[k], in_cols[k])."""
    sp = _sparse()
    return sp.csr_matrix((np.ones(out_rows.size), (out_rows.ravel(), in_cols.ravel())),
                         shape=(out_size, in_size))


def _numbers(shape: tuple) -> np.ndarray:
    return np.arange(math.prod(shape)).reshape(shape)


# -- the rules: each returns one local pattern per operand (None where it has none) ----------
def _constant(prim, primals, rows, ans, params):
    raise AssertionError("constant entries return their value")  # pragma: no cover


def _elementwise(prim, primals, rows, ans, params):
    out_shape = shape_of(ans)
    out = _numbers(out_shape)
    return [None if r is None else
            _local(out, np.broadcast_to(_numbers(shape_of(p)), out_shape), out.size, _size(p))
            for p, r in zip(primals, rows)]


def _selection(prim, primals, rows, ans, params):
    """The entry run on element numbers (plus 1; 0 where an output element comes from none)."""
    moved = range(len(primals)) if prim.linear_args is None else prim.linear_args
    encoded, offsets, start = list(primals), {}, 1
    for i in moved:
        offsets[i] = start
        encoded[i] = _numbers(shape_of(primals[i])) + start
        start += _size(primals[i])
    source = np.asarray(prim.impl(np, *encoded, **params)).ravel()
    out = np.arange(source.size)
    local = []
    for i, (p, r) in enumerate(zip(primals, rows)):
        if r is None:
            local.append(None)
            continue
        hit = (source >= offsets[i]) & (source < offsets[i] + _size(p))
        local.append(_local(out[hit], source[hit] - offsets[i], out.size, _size(p)))
    return local


def _gather_selection(prim, primals, rows, ans, params):
    x, *indices = primals
    source = prim.impl(np, _numbers(shape_of(x)), *indices, **params).ravel()
    return [_local(np.arange(source.size), source, source.size, _size(x))] + [None] * len(indices)


def _scatter(prim, primals, rows, ans, params):
    values = primals[0]
    idx = params["idx"] if "idx" in params else _filled(params["template"], primals[1:])
    target = _numbers(params["shape"])[idx]
    source = np.broadcast_to(_numbers(shape_of(values)), target.shape)
    return [_local(target, source, _size(ans), _size(values))] + [None] * (len(primals) - 1)


def _reduction(prim, primals, rows, ans, params):
    (x,), shape = primals, shape_of(primals[0])
    n = len(shape)
    kept = tuple(1 if i - n in params["axis"] else s for i, s in enumerate(shape))
    target = np.broadcast_to(_numbers(kept), shape)
    return [_local(target, _numbers(shape), _size(ans), _size(x))]


def _cumsum(prim, primals, rows, ans, params):
    (x,), shape = primals, shape_of(primals[0])
    numbers = np.moveaxis(_numbers(shape), params["axis"], -1)
    later, earlier = np.tril_indices(numbers.shape[-1] if shape else 1)
    return [_local(numbers[..., later], numbers[..., earlier], _size(ans), _size(x))]


def _matmul(prim, primals, rows, ans, params):
    """``out[..., i, j]`` on ``x[..., i, k]`` and ``y[..., k, j]`` for every ``k``, with
    NumPy's 1-d rules (a 1-d operand is a row or column, its axis then dropped)."""
    x, y = primals
    nx = _numbers(shape_of(x))
    ny = _numbers(shape_of(y))
    nx = nx[None, :] if nx.ndim == 1 else nx
    ny = ny[:, None] if ny.ndim == 1 else ny
    # (..., m, n, k): the element of each operand each output element reads for each k
    from_x = nx[..., :, None, :]
    from_y = np.swapaxes(ny, -1, -2)[..., None, :, :]
    lead = np.broadcast_shapes(from_x.shape, from_y.shape)
    out = np.broadcast_to(_numbers(lead[:-1])[..., None], lead)
    return [None if r is None else _local(out, np.broadcast_to(src, lead), _size(ans), _size(p))
            for src, p, r in ((from_x, x, rows[0]), (from_y, y, rows[1]))]


def _fallback(prim, primals, rows, ans, params):
    """Every output element on every element of every operand."""
    out = np.arange(_size(ans))
    return [None if r is None else
            _local(np.repeat(out, _size(p)), np.tile(np.arange(_size(p)), out.size), out.size, _size(p))
            for p, r in zip(primals, rows)]


_NAMED: dict[str, Callable] = {
    **dict.fromkeys(("real", "imag", "conj", "astype", "copy"), _elementwise),
    **dict.fromkeys(("getitem", "reshape", "permute_dims", "broadcast_to", "concatenate", "flip",
                     "pad"), _selection),
    "gather": _gather_selection,
    **dict.fromkeys(("scatter", "scatter_at"), _scatter),
    **dict.fromkeys(("sum", "prod", "max", "min"), _reduction),
    "cumsum": _cumsum, "matmul": _matmul,
}
_KINDS = {_constant: "constant", _elementwise: "elementwise", _selection: "selection",
          _gather_selection: "selection", _scatter: "scatter", _reduction: "reduction",
          _cumsum: "cumsum", _matmul: "matmul", _fallback: "fallback"}


def _rule(prim: Primitive) -> Callable:
    if not prim.records:
        return _constant
    if isinstance(prim, Elementwise):
        return _elementwise
    rule = _NAMED.get(prim.name)
    return rule if rule is not None and REGISTRY.get(prim.name) is prim else _fallback


def sparsity_rules() -> dict[str, str]:
    """Which sparsity rule :func:`jacobian_sparsity` uses for each entry of the table.

    Returns
    -------
    dict
        Entry name to ``"constant"``, ``"elementwise"``, ``"selection"``,
        ``"scatter"``, ``"reduction"``, ``"cumsum"``, ``"matmul"`` or
        ``"fallback"`` (every output element on every input element: correct,
        and as dense as can be; see :mod:`dualad._forward.sparsity`).

    Examples
    --------
    >>> from dualad import sparsity_rules
    >>> rules = sparsity_rules()
    >>> rules["sin"], rules["getitem"], rules["sum"], rules["floor"], rules["solve"]
    ('elementwise', 'selection', 'reduction', 'constant', 'fallback')
    """
    return {name: _KINDS[_rule(prim)] for name, prim in REGISTRY.items()}


# -- detection ------------------------------------------------------------------------------
def _check_point(x: Any, name: str) -> np.ndarray:
    if not isinstance(x, np.ndarray) or x.ndim != 1 or x.dtype.kind != "f":
        got = (f"an array of shape {x.shape} and dtype {x.dtype}" if isinstance(x, np.ndarray)
               else type(x).__name__)
        raise TypeError(f"{name}: x must be a 1-d floating NumPy array, got {got}")
    return x


def _output(out: Any, name: str) -> Any:
    leaves, _ = flatten(out)
    if len(leaves) != 1 or not (isinstance(leaves[0], (Value, np.ndarray, float))):
        raise TypeError(f"{name}: f must return one array, got {type(out).__name__}")
    return leaves[0]


def jacobian_sparsity(f: Callable, x: np.ndarray) -> Any:
    """Which outputs of ``f`` depend on which inputs, from one traced call of ``f`` at ``x``.

    Parameters
    ----------
    f : callable
        A function of one 1-d array, returning one array (of any shape; its
        elements are the rows, in C order).
    x : numpy.ndarray
        A 1-d floating point; control flow that depends on values takes the
        branches it takes here.

    Returns
    -------
    scipy.sparse.csr_matrix
        Boolean, of shape ``(f(x).size, x.size)``: True where the output may
        depend on the input. It holds every nonzero of the Jacobian at every
        point that takes ``x``'s control flow (see :func:`sparsity_rules`).

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jacobian_sparsity
    >>> f = lambda x: x[1:] * x[:-1]
    >>> jacobian_sparsity(f, np.ones(4)).toarray()
    array([[ True,  True, False, False],
           [False,  True,  True, False],
           [False, False,  True,  True]])
    """
    x = _check_point(x, "jacobian_sparsity")
    sp = _sparse()
    n = x.size
    with transform_level() as level:
        out = _output(f(Pattern._make(x, sp.identity(n, format="csr", dtype=np.float64), level)),
                      "jacobian_sparsity")
        if type(out) is Pattern and out._level == level:
            rows = out.rows
        else:  # an output that depends on no input
            rows = sp.csr_matrix((_size(out), n), dtype=np.float64)
    return rows.astype(bool)


# -- colouring ------------------------------------------------------------------------------
def color_columns(pattern: Any) -> np.ndarray:
    """A colour per column such that no two columns of one colour share a row.

    Greedy distance-1 colouring of the column intersection graph in DSATUR
    order (Brelaz): next, the uncoloured column whose neighbours already hold
    the most distinct colours, ties by degree, then by index. It reaches the
    least number for stencils: 3 on a tridiagonal Jacobian, 5 on the 2-d
    5-point Laplacian (largest-first order took 7 there).

    Parameters
    ----------
    pattern : scipy.sparse matrix
        The Jacobian's sparsity pattern, ``m x n``.

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
    sp = _sparse()
    p = sp.csr_matrix(pattern, dtype=np.float64)
    p.data[:] = 1.0
    graph = (p.T @ p).tocsr()
    n = graph.shape[0]
    indptr, indices = graph.indptr, graph.indices
    degree = np.diff(indptr).tolist()
    colors = np.full(n, -1, dtype=np.int64)
    seen: list[set] = [set() for _ in range(n)]  # the colours among each column's neighbours
    queue = [(0, -degree[j], j) for j in range(n)]  # (-saturation, -degree, column)
    heapq.heapify(queue)
    while queue:
        saturation, _, j = heapq.heappop(queue)
        if colors[j] >= 0 or -saturation != len(seen[j]):  # coloured, or an outdated entry
            continue
        c = 0
        while c in seen[j]:
            c += 1
        colors[j] = c
        for k in indices[indptr[j]:indptr[j + 1]].tolist():
            if colors[k] < 0 and c not in seen[k]:
                seen[k].add(c)
                heapq.heappush(queue, (-len(seen[k]), -degree[k], k))
    return colors


# -- compressed evaluation -------------------------------------------------------------------
class SparseJacobian:
    """The Jacobian of ``f`` as a sparse matrix: detected and coloured once (at ``x``),
    evaluated at many points with one forward pass of one direction per colour.

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
        self.n_colors = int(self.colors.max()) + 1 if self.colors.size else 0
        seeds = np.zeros((self.n_colors, x.size), dtype=x.dtype)
        seeds[self.colors, np.arange(x.size)] = 1.0
        self._seeds = seeds
        self._rows = np.repeat(np.arange(self.pattern.shape[0]), np.diff(self.pattern.indptr))

    def __call__(self, x: np.ndarray) -> Any:
        """The Jacobian at ``x`` (of the shape and dtype the pattern was detected for)."""
        x = _check_point(x, "SparseJacobian")
        if x.shape != self.shape or x.dtype != self.dtype:
            raise ValueError(f"SparseJacobian: x must have the shape {self.shape} and dtype "
                             f"{self.dtype} its pattern was detected for, got {x.shape} and {x.dtype}")
        sp = _sparse()
        p = self.pattern
        if self.n_colors:
            _, t = jvp(lambda v: _output(self.f(v), "SparseJacobian"), (x,), (self._seeds,))
            compressed = np.reshape(np.asarray(t), (self.n_colors, -1))
            data = compressed[self.colors[p.indices], self._rows]
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
    cache: dict[tuple, SparseJacobian] = {}

    def jac(x: np.ndarray) -> Any:
        x = _check_point(x, "sparse_jacfwd")
        key = (x.shape, x.dtype)
        if key not in cache:
            cache[key] = SparseJacobian(f, x)
        return cache[key](x)

    return jac

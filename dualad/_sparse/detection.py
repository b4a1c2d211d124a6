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

:func:`hessian_sparsity` runs a scalar function on Patterns that also collect
the second-order structure, as SparseConnectivityTracer's Hessian tracer
does: the Hessian of ``f`` is a sum, over the entries applied, of each
entry's second derivative taken between its operands' first-order patterns,
so an entry adds ``T_i^T T_j`` for each pair of operands ``(i, j)`` it is
nonlinear in, ``T_i = S_i @ P_i`` being operand ``i``'s pattern carried to
the output's elements (:func:`second_order_rules`):

- ``linear``: entries linear in their differentiable operands, and those
  declared piecewise linear (``Primitive.piecewise_linear``: ``maximum``,
  ``where``, ``abs`` of real values, ``max``, ...): nothing;
- ``product``: ``multiply``, the two operands together but neither with itself;
- ``quotient``: ``divide``, the denominator with both;
- ``matmul``: ``x[..., i, k]`` with ``y[..., k, j]`` only;
- ``nonlinear``: every other entry, every pair among the output's inputs.

Terms of values that the output never uses still count, as do both
branches of a ``where``: the pattern may be denser than needed, never sparser.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from dualad import ops
from dualad._base.checks import check_callable
from dualad._base.core import Value, bind, transform_level
from dualad._base.shapes import batched, shape_of
from dualad._base.tree import flatten
from dualad._forward.dual import PrimalShaped
from dualad._numpy.arraylike import ArrayLike
from dualad._primitives.indexing import filled_index
from dualad._sparse.coloring import _sparse
from dualad._table.entries import REGISTRY, Primitive, piecewise_linear_at

__all__ = ["hessian_sparsity", "jacobian_sparsity", "sparsity_rules"]


class Pattern(PrimalShaped, ArrayLike, Value):
    """A value and, per element (C order), the inputs it depends on (made by
    :func:`jacobian_sparsity`): ``rows`` is a CSR matrix of ``size`` rows and one
    column per input, nonzero where the element depends on the input. ``terms``,
    shared by the Patterns of one :func:`hessian_sparsity` trace, collects the
    Hessian's structure (None when only the Jacobian's is wanted)."""

    __slots__ = ("primal", "rows", "terms")
    __array_priority__ = 100
    made_by = "dualad.jacobian_sparsity"

    @classmethod
    def _make(cls, primal: Any, rows: Any, level: int, terms: "_HessianTerms | None" = None) -> "Pattern":
        p = object.__new__(cls)
        p.primal, p.rows, p._level, p.terms = primal, rows, level, terms
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
        mine = [type(a) is Pattern and a._level == level for a in args]
        primals = [a.primal if m else a for a, m in zip(args, mine)]
        rows = [a.rows if m else None for a, m in zip(args, mine)]
        ans = bind(prim, *primals, **params)
        rule = _RULES[_kind(prim)]
        if rule is _constant:
            return ans
        n, terms = self.rows.shape[1], self.terms
        made = []
        for a in (ans if prim.multiple_results else (ans,)):
            carried = rule(prim, primals, rows, a, params)
            out = _union(carried, a, n)
            if terms is not None:
                terms.add(prim, primals, rows, carried, out)
            made.append(Pattern._make(a, out, level, terms))
        return tuple(made) if prim.multiple_results else made[0]


def _size(x: Any) -> int:
    return math.prod(shape_of(x))


def _union(carried: list, ans: Any, n: int) -> Any:
    """``OR_i T_i`` over the operands that carry a pattern."""
    out = _sparse().csr_matrix((_size(ans), n), dtype=np.float64)
    for t in carried:
        if t is not None:
            out = out + t
    out.data[:] = 1.0  # counts of paths: every stored entry is positive, so nonzero
    return out


def _local(out_rows: np.ndarray, in_cols: np.ndarray, out_size: int, in_size: int) -> Any:
    """The local pattern with an entry at each (out_rows[k], in_cols[k])."""
    sp = _sparse()
    return sp.csr_matrix((np.ones(out_rows.size), (out_rows.ravel(), in_cols.ravel())),
                         shape=(out_size, in_size))


def _carry(out_rows: np.ndarray, in_cols: np.ndarray, out_size: int, r: Any) -> Any:
    """``S @ r``, ``S`` the local pattern with an entry at each ``(out_rows[k], in_cols[k])``:
    an operand's pattern carried to the output's elements (rows of ``r`` where each
    output element has one source)."""
    out_rows, in_cols = np.ravel(out_rows), np.ravel(in_cols)
    if out_rows.size == out_size and np.array_equal(out_rows, np.arange(out_size)):
        return r if np.array_equal(in_cols, np.arange(r.shape[0])) else r[in_cols]
    return _local(out_rows, in_cols, out_size, r.shape[0]) @ r


def _numbers(shape: tuple) -> np.ndarray:
    return np.arange(math.prod(shape)).reshape(shape)


# -- the rules: each returns each operand's pattern carried to the output (None where it has none)
def _constant(prim, primals, rows, ans, params):
    raise AssertionError("constant entries return their value")  # pragma: no cover


def _elementwise(prim, primals, rows, ans, params):
    out_shape = shape_of(ans)
    return [r if r is None or shape_of(p) == out_shape else
            _carry(_numbers(out_shape), np.broadcast_to(_numbers(shape_of(p)), out_shape), _size(ans), r)
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
    carried = []
    for i, (p, r) in enumerate(zip(primals, rows)):
        if r is None:
            carried.append(None)
            continue
        hit = (source >= offsets[i]) & (source < offsets[i] + _size(p))
        carried.append(_carry(out[hit], source[hit] - offsets[i], out.size, r))
    return carried


def _gather_selection(prim, primals, rows, ans, params):
    x, *indices = primals
    source = prim.impl(np, _numbers(shape_of(x)), *indices, **params).ravel()
    return [_carry(np.arange(source.size), source, source.size, rows[0])] + [None] * len(indices)


def _scatter(prim, primals, rows, ans, params):
    values = primals[0]
    idx = params["idx"] if "idx" in params else filled_index(params["template"], primals[1:])
    target = _numbers(params["shape"])[idx]
    source = np.broadcast_to(_numbers(shape_of(values)), target.shape)
    return [_carry(target, source, _size(ans), rows[0])] + [None] * (len(primals) - 1)


def _reduction(prim, primals, rows, ans, params):
    shape = shape_of(primals[0])
    n = len(shape)
    kept = tuple(1 if i - n in params["axis"] else s for i, s in enumerate(shape))
    target = np.broadcast_to(_numbers(kept), shape)
    return [_carry(target, _numbers(shape), _size(ans), rows[0])]


def _cumsum(prim, primals, rows, ans, params):
    numbers = np.moveaxis(_numbers(shape_of(primals[0])), params["axis"], -1)
    later, earlier = np.tril_indices(numbers.shape[-1] if numbers.ndim else 1)
    return [_carry(numbers[..., later], numbers[..., earlier], _size(ans), rows[0])]


def _matmul_sources(x: Any, y: Any) -> tuple:
    """For each output element of ``x @ y`` and each ``k``: the element of ``x`` and of ``y``
    it reads, as two arrays of shape ``(..., m, n, k)``, and the output element's number.
    NumPy's 1-d rules: a 1-d operand is a row or column, its axis then dropped."""
    nx = _numbers(shape_of(x))
    ny = _numbers(shape_of(y))
    nx = nx[None, :] if nx.ndim == 1 else nx
    ny = ny[:, None] if ny.ndim == 1 else ny
    from_x = nx[..., :, None, :]
    from_y = np.swapaxes(ny, -1, -2)[..., None, :, :]
    lead = np.broadcast_shapes(from_x.shape, from_y.shape)
    out = np.broadcast_to(_numbers(lead[:-1])[..., None], lead)
    return np.broadcast_to(from_x, lead), np.broadcast_to(from_y, lead), out


def _matmul(prim, primals, rows, ans, params):
    """``out[..., i, j]`` on ``x[..., i, k]`` and ``y[..., k, j]`` for every ``k``."""
    from_x, from_y, out = _matmul_sources(*primals)
    return [None if r is None else _carry(out, src, _size(ans), r)
            for src, r in ((from_x, rows[0]), (from_y, rows[1]))]


def _fallback(prim, primals, rows, ans, params):
    """Every output element on every element of every operand."""
    sp = _sparse()
    every = sp.csr_matrix(np.ones((_size(ans), 1)))
    return [None if r is None else every @ sp.csr_matrix(np.asarray(r.sum(axis=0)) > 0, dtype=np.float64)
            for r in rows]


# The rule of each kind an entry declares (``Primitive.declare``'s ``sparsity``).
_RULES: dict[str, Callable] = {
    "constant": _constant, "elementwise": _elementwise, "selection": _selection,
    "gather": _gather_selection, "scatter": _scatter, "reduction": _reduction, "cumsum": _cumsum,
    "matmul": _matmul, "fallback": _fallback}


def _kind(prim: Primitive) -> str:
    """The entry's first-order kind: as declared, else by what it declares of itself."""
    if not prim.records:
        return "constant"
    return prim.sparsity or ("elementwise" if prim.broadcasts else "fallback")


def _second_order(prim: Primitive, primals: list | tuple = ()) -> str:
    """The entry's second-order kind (at ``primals``: a piecewise linear entry is not
    linear in complex operands, ``|z|`` being smooth there)."""
    if not prim.records:
        return "constant"
    if prim.linear_args != () or piecewise_linear_at(prim, primals):
        return "linear"
    return prim.second_order or "nonlinear"


def sparsity_rules(order: int = 1) -> dict[str, str]:
    """Which sparsity rule each entry of the table follows: for Jacobians
    (:func:`jacobian_sparsity`, ``order=1``) or the Hessian's second-order
    structure (:func:`hessian_sparsity`, ``order=2``).

    Parameters
    ----------
    order : {1, 2}
        The order of the derivative.

    Returns
    -------
    dict
        Entry name to its rule. Order 1: ``"constant"``, ``"elementwise"``,
        ``"selection"``, ``"gather"`` (a selection by index arrays), ``"scatter"``,
        ``"reduction"``, ``"cumsum"``,
        ``"matmul"`` or ``"fallback"`` (every output element on every input
        element: correct, and as dense as can be). Order 2: ``"constant"``,
        ``"linear"`` (linear or piecewise linear: ``abs`` is linear on real
        values only), ``"product"``, ``"quotient"``, ``"matmul"`` or
        ``"nonlinear"`` (every pair of the output's inputs). See
        :mod:`dualad._sparse.detection`.

    Examples
    --------
    >>> from dualad import sparsity_rules
    >>> rules = sparsity_rules()
    >>> rules["sin"], rules["getitem"], rules["sum"], rules["floor"], rules["solve"]
    ('elementwise', 'selection', 'reduction', 'constant', 'fallback')
    >>> second = sparsity_rules(order=2)
    >>> second["sin"], second["getitem"], second["maximum"], second["multiply"], second["solve"]
    ('nonlinear', 'linear', 'linear', 'product', 'nonlinear')
    """
    if order not in (1, 2):
        raise ValueError(f"sparsity_rules: order must be 1 or 2, got {order!r}")
    if order == 2:
        return {name: _second_order(prim) for name, prim in REGISTRY.items()}
    return {name: _kind(prim) for name, prim in REGISTRY.items()}


class _HessianTerms:
    """The Hessian's structure from one trace: a sum of ``A^T B`` products of
    first-order patterns, one per nonlinear pair of operands of an entry."""

    def __init__(self, n: int):
        self.n, self.products = n, []

    def add(self, prim: Primitive, primals: list, rows: list, carried: list, out: Any) -> None:
        kind = _second_order(prim, primals)
        if kind == "linear":
            return
        if kind in ("product", "quotient"):
            a, b = carried
            if b is not None and kind == "quotient":
                self.products.append(b.T @ b)
            if a is not None and b is not None:
                self.products.append(a.T @ b)
        elif kind == "matmul":
            if rows[0] is not None and rows[1] is not None:
                from_x, from_y, _ = _matmul_sources(*primals)
                pairs = _local(from_x, from_y, _size(primals[0]), _size(primals[1]))
                self.products.append(rows[0].T @ (pairs @ rows[1]))
        else:
            self.products.append(out.T @ out)

    def pattern(self, support: Any) -> Any:
        """The symmetric boolean pattern, kept to the inputs the output depends on."""
        sp = _sparse()
        h = sp.csr_matrix((self.n, self.n), dtype=np.float64)
        for t in self.products:  # counts of paths, all positive: no entry cancels
            h = h + t
        h = (h + h.T).tocsr()
        kept = np.asarray(support.sum(axis=0)).ravel() > 0
        if not kept.all():
            mask = sp.diags(kept.astype(np.float64), format="csr")
            h = (mask @ h @ mask).tocsr()
            h.eliminate_zeros()
        return h.astype(bool)


# -- detection ------------------------------------------------------------------------------
def check_point(x: Any, name: str, detected: tuple | None = None) -> np.ndarray:
    """``x``, checked to be the 1-d floating NumPy point a sparsity trace takes (a
    TypeError naming ``name`` if not), and where a pattern was detected at a point of
    ``detected = (shape, dtype)``, of that shape and dtype (a ValueError if not)."""
    if batched(x):
        raise TypeError(f"{name}: x is batched by dualad.vmap, and a batch of sparse matrices has no "
                        "SciPy type: take vmap(jacfwd(f)) for a dense batch of Jacobians, or "
                        f"{name} of the function of the whole batch (its Jacobian is block-diagonal, "
                        "which the colouring finds)")
    if not isinstance(x, np.ndarray) or x.ndim != 1 or x.dtype.kind != "f":
        got = (f"an array of shape {x.shape} and dtype {x.dtype}" if isinstance(x, np.ndarray)
               else type(x).__name__)
        raise TypeError(f"{name}: x must be a 1-d floating NumPy array, got {got}")
    if detected is not None and (x.shape, x.dtype) != detected:
        raise ValueError(f"{name}: x must have the shape {detected[0]} and dtype {detected[1]} its "
                         f"pattern was detected for, got {x.shape} and {x.dtype}")
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
    _, rows = _traced(f, check_point(x, "jacobian_sparsity"), "jacobian_sparsity")
    return rows.astype(bool)


def _traced(f: Callable, x: Any, who: str, terms: _HessianTerms | None = None) -> tuple:
    """``f``'s output at the checked point ``x``, run on Patterns (which add to ``terms``),
    and its rows: for each output element, the inputs it depends on (none for an output
    of constants)."""
    check_callable(f, who)
    sp = _sparse()
    with transform_level() as level:
        out = _output(f(Pattern._make(x, sp.identity(x.size, format="csr", dtype=np.float64), level,
                                      terms)), who)
        if type(out) is Pattern and out._level == level:
            return out, out.rows
    return out, sp.csr_matrix((_size(out), x.size), dtype=np.float64)


def hessian_sparsity(f: Callable, x: np.ndarray) -> Any:
    """Which second derivatives of scalar ``f`` may be nonzero, from one traced call at ``x``.

    Parameters
    ----------
    f : callable
        A function of one 1-d array, returning a scalar (a 0-d or one-element array).
    x : numpy.ndarray
        A 1-d floating point; control flow that depends on values takes the
        branches it takes here.

    Returns
    -------
    scipy.sparse.csr_matrix
        Boolean and symmetric, of shape ``(x.size, x.size)``: True where
        ``d2f / dx_i dx_j`` may be nonzero at a point that takes ``x``'s
        control flow (the rules: ``sparsity_rules(order=2)``).

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import hessian_sparsity
    >>> f = lambda x: (x[1:] * x[:-1]).sum() + (x ** 2).sum() + x[0] * 3.0
    >>> hessian_sparsity(f, np.ones(4)).toarray().astype(int)
    array([[1, 1, 0, 0],
           [1, 1, 1, 0],
           [0, 1, 1, 1],
           [0, 0, 1, 1]])
    """
    x = check_point(x, "hessian_sparsity")
    terms = _HessianTerms(x.size)
    out, rows = _traced(f, x, "hessian_sparsity", terms)
    if _size(out) != 1:
        raise TypeError(f"hessian_sparsity: f must return a scalar, got an output of shape {shape_of(out)}")
    return terms.pattern(rows)  # kept to the inputs the output depends on: none for a constant

"""Forward-mode transforms: ``jvp``, ``derivative``, ``jacfwd``, ``hessian``."""

from __future__ import annotations

import math
from typing import Any, Callable

import array_api_compat
import numpy as np

from dualad import ops
from dualad._base.backend import match_chunks, namespace_of, on_host
from dualad._base.calling import Selection, check_argnums, paired_leaves, split_aux
from dualad._base.checks import (
    check_callable,
    check_count,
    check_differentiable,
    check_output_leaves,
    check_points,
    seed_tangents,
)
from dualad._base.core import Value, transform_level
from dualad._base.shapes import raw, shape_of, zeros
from dualad._base.tree import flatten
from dualad._forward.dual import Dual

__all__ = ["jvp", "derivative", "jacfwd", "hessian"]


def split(out: Any, level: int, k: int | None = None, like: Any = None,
          who: str | None = None) -> tuple[Any, Any]:
    """Primal and tangent parts of the leaves of ``out`` at ``level``; zeros
    (with ``k`` directions in front, if given) where a leaf has no tangent.
    ``like`` (same structure as ``out``) gives those zeros' shapes and dtypes, and
    the chunks of both parts where they are Dask arrays (by default the chunks of
    the primal output). With ``who``, ``out`` is a user's output, checked first
    (errors name ``who``)."""
    leaves, build = flatten(out)
    if who is not None:
        check_output_leaves(leaves, out, who)
    likes = leaves if like is None else flatten(like)[0]
    primals, tangents = [], []
    for leaf, ref in zip(leaves, likes):
        if isinstance(leaf, Dual) and leaf._level == level:
            primals.append(match_chunks(leaf.primal, raw(ref)))
            tangents.append(match_chunks(leaf.tangent, raw(ref)))
            continue
        primals.append(match_chunks(leaf, raw(ref)))
        if type(ref) in (int, float) and k is None:
            tangents.append(0.0)
        else:
            tangents.append(match_chunks(zeros(ref, shape_of(ref) if k is None else (k,) + shape_of(ref)),
                                         raw(ref)))
    return build(primals), build(tangents)


def jvp(f: Callable, primals: tuple, tangents: tuple, has_aux: bool = False) -> tuple:
    """Evaluate ``f(*primals)`` and its directional derivative along ``tangents``.

    Parameters
    ----------
    f : callable
        A function of arrays, floats, or pytrees of them (tuples, lists,
        dicts, dataclasses, ``None``, registered types).
    primals, tangents : tuple
        The arguments of ``f`` and one direction for each (same structure,
        shapes and dtypes; a tangent may add a leading axis of k directions).
    has_aux : bool
        ``f`` returns ``(output, aux)``; ``aux`` is returned as computed, not differentiated.

    Returns
    -------
    (out, out_tangent), or (out, out_tangent, aux) with ``has_aux``

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp
    >>> out, t = jvp(lambda x: (x ** 2).sum(), (np.array([1.0, 2.0]),), (np.array([1.0, 0.0]),))
    >>> float(out), float(t)
    (5.0, 2.0)
    """
    check_callable(f, "jvp")
    return named_jvp(f, primals, tangents, "jvp", has_aux)


def named_jvp(f: Callable, primals: tuple, tangents: tuple, who: str, has_aux: bool = False) -> tuple:
    """:func:`jvp`, with errors about ``f``'s output in the name of the transform ``who``."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(f"{who}: primals and tangents must be tuples (one entry per argument of f), "
                        f"got {type(primals).__name__} and {type(tangents).__name__}")
    primals, tangents = tuple(primals), tuple(tangents)
    p_leaves, t_leaves = paired_leaves(primals, tangents, "primals", "tangents", who)
    build = flatten(primals)[1]
    checked = seed_tangents(p_leaves, t_leaves, primals, "primals")
    with transform_level() as level:
        seeded = [Dual._make(p, t, level, nb) for p, (t, nb) in zip(p_leaves, checked)]
        k = next((shape_of(d.tangent)[0] for d in seeded if d._nb), None)
        out, aux = split_aux(f(*build(seeded)), has_aux, who)
        result = split(out, level, k, who=who)
        if not has_aux:
            return result
        return (*result, primals_at(aux, level))


def primals_at(tree: Any, level: int) -> Any:
    """``tree`` with this level's Duals replaced by their primals; anything else kept."""
    leaves, build = flatten(tree)
    return build([leaf.primal if isinstance(leaf, Dual) and leaf._level == level else leaf
                  for leaf in leaves])


def derivative(f: Callable) -> Callable:
    """``x -> f'(x)`` for a scalar ``x``: a float or a 0-d array (the output may be
    anything). For an array ``x``, take a directional derivative with :func:`jvp`
    or the Jacobian with :func:`jacfwd`.

    Examples
    --------
    >>> from dualad import derivative, ops
    >>> derivative(ops.sin)(0.0)
    1.0
    """
    check_callable(f, "derivative")

    def df(x):
        check_differentiable(x, "derivative: x")
        if shape_of(x) != ():
            raise TypeError(f"derivative: x must be a scalar (a float or a 0-d array), got an array "
                            f"of shape {shape_of(x)}; use dualad.jvp(f, (x,), (v,)) for a "
                            "directional derivative or dualad.jacfwd(f)(x) for the Jacobian")
        # zeros(x) is of x's own shape: () under vmap too, where raw(x) holds the batch
        one = 1.0 if type(x) is float else zeros(x) + 1
        return named_jvp(f, (x,), (one,), "derivative")[1]
    return df


def chunk_of(n: int, chunk_size: int | None) -> int:
    """The number of directions per pass: ``chunk_size``, or all n by default."""
    return max(n, 1) if chunk_size is None else check_count(chunk_size, "chunk_size", low=1)


def basis_chunks(leaves: list, chunk: int):
    """The basis directions of the space of ``leaves`` (their entries one after the
    other), ``chunk`` at a time: for each chunk of k, one ``(k,) + shape`` array
    per leaf, in its namespace and dtype (a float leaf gets a float64 NumPy array)."""
    sizes = [math.prod(shape_of(leaf)) for leaf in leaves]
    n = sum(sizes)
    for start in range(0, n, chunk):
        k = min(chunk, n - start)
        eye = np.eye(k, n, start)
        out, offset = [], 0
        for leaf, size in zip(leaves, sizes):
            block = eye[:, offset:offset + size]
            offset += size
            r = raw(leaf)
            if type(r) is float:
                out.append(block[:, 0])
            elif type(r) is np.ndarray:  # NumPy's own calls: a view where the dtype is float64
                out.append(block.astype(r.dtype, copy=False).reshape((k,) + shape_of(leaf)))
            else:  # on the leaf's device (a CuPy array on a second GPU)
                xp = namespace_of([r])
                where = {} if on_host(xp) else {"device": array_api_compat.device(r)}
                out.append(xp.reshape(xp.asarray(block, dtype=r.dtype, **where),
                                      (k,) + shape_of(leaf)))
        yield out


def blocks(flat: Any, out_leaf: Any, x_leaves: list) -> list:
    """The Jacobian of one output leaf, one block per input leaf, from ``flat``: its
    rows stacked, ``(n,) + out.shape`` over the n entries of the inputs in order.
    Block i has shape ``out.shape + shape of input i``."""
    out_shape = shape_of(out_leaf)
    result, start = [], 0
    for leaf in x_leaves:
        size = math.prod(shape_of(leaf))
        b = ops.getitem(flat, (slice(start, start + size),)) if len(x_leaves) > 1 else flat
        start += size
        b = ops.moveaxis(b, 0, -1) if out_shape else b
        b = ops.reshape(b, out_shape + shape_of(leaf))
        if type(raw(out_leaf)) is float and type(raw(leaf)) is float and not isinstance(b, Value):
            b = float(b)  # d float / d float is a float, as derivative() gives
        result.append(b)
    return result


def check_inputs(x: Any, who: str) -> list:
    """The leaves of the differentiated arguments ``x``, each checked (there must be one)."""
    leaves = flatten(x)[0]
    if not leaves:
        check_differentiable(x, f"{who}: x")  # raises: None, or containers of nothing
    check_points(leaves, x, f"{who}: x")
    return leaves


def jacfwd(f: Callable, argnums: int | tuple = 0, has_aux: bool = False, *,
           chunk_size: int | None = None) -> Callable:
    """The Jacobian of ``f`` with respect to the arguments ``argnums``, by forward mode.

    The inputs are pushed through ``f`` in chunks of ``chunk_size`` basis
    directions at once (a batched tangent), so the Jacobian of an n-input
    function costs ceil(n / chunk_size) passes. For an output leaf of shape
    ``o`` and an input leaf of shape ``i``, the block has shape ``o + i``;
    pytrees nest as in JAX: the output's structure, holding at each leaf the
    structure of the inputs (a tuple of them for a tuple ``argnums``).

    Parameters
    ----------
    f : callable
    argnums : int or tuple of int
        Which positional arguments to differentiate.
    has_aux : bool
        ``f`` returns ``(output, aux)``; the result is then ``(jacobian, aux)``.
    chunk_size : int, optional
        Directions per pass (default: all of them at once).

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jacfwd
    >>> jacfwd(lambda x: x ** 2)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    >>> jacfwd(lambda x, y: x * y, argnums=(0, 1))(2.0, 3.0)
    (3.0, 2.0)
    """
    return _jacfwd(f, argnums, has_aux, chunk_size, "jacfwd")


def _jacfwd(f: Callable, argnums: int | tuple, has_aux: bool, chunk_size: int | None,
            who: str) -> Callable:
    """:func:`jacfwd`, with errors in the name of the transform ``who`` (``hessian``
    is two of them)."""
    check_callable(f, who)
    single, nums = check_argnums(argnums)
    chunk_of(1, chunk_size)  # a bad chunk_size fails here, not at the first call

    def jac(*args):
        sel = Selection(f, args, argnums, single, nums)
        x_leaves, x_build = flatten(sel.x)
        check_inputs(sel.x, who)
        n = sum(math.prod(shape_of(leaf)) for leaf in x_leaves)
        pieces, out, aux = [], None, None
        for directions in basis_chunks(x_leaves, chunk_of(n, chunk_size)):
            res = named_jvp(sel.f_of_x, (sel.x,), (x_build(directions),), who, has_aux)
            out, t = res[0], res[1]
            aux = res[2] if has_aux else None
            pieces.append((shape_of(directions[0])[0], flatten(t)[0]))
        if not pieces:  # empty inputs: f is evaluated once, its Jacobian is empty
            out, aux = split_aux(sel.f_of_x(sel.x), has_aux, who)
        out_leaves, out_build = flatten(out)
        result = []
        for j, leaf in enumerate(out_leaves):
            if pieces:
                parts = [ops.broadcast_to(tl[j], (k,) + shape_of(leaf)) for k, tl in pieces]
                flat = parts[0] if len(parts) == 1 else ops.concatenate(parts, axis=0)
                result.append(x_build(blocks(flat, leaf, x_leaves)))
            else:
                result.append(x_build([zeros(leaf, shape_of(leaf) + shape_of(x)) for x in x_leaves]))
        jacobian = out_build(result)
        return (jacobian, aux) if has_aux else jacobian
    return jac


def hessian(f: Callable, argnums: int | tuple = 0, has_aux: bool = False, *,
            chunk_size: int | None = None) -> Callable:
    """The exact Hessian of a scalar ``f``, forward over forward: ``jacfwd(jacfwd(f))``.

    Two nested forward levels (a Dual of Duals, ``a + b e1 + c e2 + d e1 e2``,
    the hyper-dual numbers) carry chunks of basis directions on both levels
    and give every second derivative exactly, with no step size; for n
    inputs that is ceil(n / chunk_size)**2 passes. For large n prefer
    :func:`mixed.hessian` (forward over reverse: ceil(n / chunk_size) passes).
    Shape ``x.shape * 2`` for one array; pytrees nest as in :func:`jacfwd`.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import hessian, ops
    >>> hessian(lambda x: ops.sum(x ** 3))(np.array([1.0, 2.0]))
    array([[ 6.,  0.],
           [ 0., 12.]])
    """
    inner = _jacfwd(f, argnums, has_aux, chunk_size, "hessian")
    return _jacfwd(inner, argnums, has_aux, chunk_size, "hessian")

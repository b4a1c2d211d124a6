"""Forward-mode transforms: ``jvp``, ``derivative``, ``jacfwd``, ``hessian``."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from dualad import ops
from dualad._backend import namespace_of
from dualad._checks import check_count, check_differentiable, check_output_leaves, validate_tangent
from dualad._core import transform_level
from dualad._dual import Dual
from dualad._shapes import dtype_of, raw, shape_of, zeros
from dualad._tree import flatten, leaf_paths

__all__ = ["jvp", "derivative", "jacfwd", "hessian"]


def _seed(primal: Any, tangent: Any, level: int, name: str) -> Dual:
    tangent, nb = validate_tangent(primal, tangent, name)
    return Dual._make(primal, tangent, level, nb)


def split(out: Any, level: int, k: int | None = None, like: Any = None,
          who: str | None = None) -> tuple[Any, Any]:
    """Primal and tangent parts of the leaves of ``out`` at ``level``; zeros
    (with ``k`` directions in front, if given) where a leaf has no tangent.
    ``like`` (same structure as ``out``) gives those zeros' shapes and dtypes.
    With ``who``, ``out`` is a user's output, checked first (errors name ``who``)."""
    leaves, build = flatten(out)
    if who is not None:
        check_output_leaves(leaves, out, who)
    likes = leaves if like is None else flatten(like)[0]
    primals, tangents = [], []
    for leaf, ref in zip(leaves, likes):
        if isinstance(leaf, Dual) and leaf._level == level:
            primals.append(leaf.primal)
            tangents.append(leaf.tangent)
            continue
        primals.append(leaf)
        if type(ref) in (int, float) and k is None:
            tangents.append(0.0)
        else:
            tangents.append(zeros(ref, shape_of(ref) if k is None else (k,) + shape_of(ref)))
    return build(primals), build(tangents)


def jvp(f: Callable, primals: tuple, tangents: tuple) -> tuple[Any, Any]:
    """Evaluate ``f(*primals)`` and its directional derivative along ``tangents``.

    Parameters
    ----------
    f : callable
        A function of arrays, floats, or tuples/lists/dicts of them.
    primals, tangents : tuple
        The arguments of ``f`` and one direction for each (same structure,
        shapes and dtypes; a tangent may add a leading axis of k directions).

    Returns
    -------
    (out, out_tangent)

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp
    >>> out, t = jvp(lambda x: (x ** 2).sum(), (np.array([1.0, 2.0]),), (np.array([1.0, 0.0]),))
    >>> float(out), float(t)
    (5.0, 2.0)
    """
    return _jvp(f, primals, tangents, "jvp")


def _jvp(f: Callable, primals: tuple, tangents: tuple, who: str) -> tuple[Any, Any]:
    """:func:`jvp`, with errors about ``f``'s output in the name of the transform ``who``."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp: primals and tangents must be tuples (one entry per argument of f), "
                        f"got {type(primals).__name__} and {type(tangents).__name__}")
    p_leaves, build = flatten(tuple(primals))
    t_leaves, _ = flatten(tuple(tangents))
    if len(p_leaves) != len(t_leaves):
        raise ValueError(f"jvp: tangents have {len(t_leaves)} leaves, primals have {len(p_leaves)}")
    names = [f"primals{p}" for p in leaf_paths(tuple(primals))]
    with transform_level() as level:
        seeded = [_seed(p, t, level, n) for p, t, n in zip(p_leaves, t_leaves, names)]
        k = next((shape_of(d.tangent)[0] for d in seeded if d._nb), None)
        return split(f(*build(seeded)), level, k, who=who)


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
    def df(x):
        if isinstance(x, int) and not isinstance(x, bool):
            raise TypeError("derivative: x must be a float, got int; write 1.0 instead of 1")
        check_differentiable(x, "derivative: x")
        if shape_of(x) != ():
            raise TypeError(f"derivative: x must be a scalar (a float or a 0-d array), got an array "
                            f"of shape {shape_of(x)}; use dualad.jvp(f, (x,), (v,)) for a "
                            "directional derivative or dualad.jacfwd(f)(x) for the Jacobian")
        one = 1.0 if type(x) is float else ops.astype(raw(x) * 0 + 1, dtype_of(raw(x)))
        return _jvp(f, (x,), (one,), "derivative")[1]
    return df


def chunk_of(n: int, chunk_size: int | None) -> int:
    """The number of directions per pass: ``chunk_size``, or all n by default."""
    return max(n, 1) if chunk_size is None else check_count(chunk_size, "chunk_size", low=1)


def basis_chunks(x, chunk: int):
    """The basis directions of ``x``'s space, ``chunk`` at a time: (k,) + x.shape each."""
    r = raw(x)
    n = math.prod(shape_of(x))
    for start in range(0, n, chunk):
        k = min(chunk, n - start)
        eye = np.zeros((k, n))
        eye[np.arange(k), np.arange(start, start + k)] = 1.0
        if type(r) is float:
            yield eye[:, 0]
        else:
            xp = namespace_of([r])
            yield xp.reshape(xp.asarray(eye, dtype=r.dtype), (k,) + shape_of(x))


def jacfwd(f: Callable, chunk_size: int | None = None) -> Callable:
    """The Jacobian of ``f`` at an array or float ``x``, by forward mode.

    The input is pushed through ``f`` in chunks of ``chunk_size`` basis
    directions at once (a batched tangent), so the Jacobian of an n-input
    function costs ceil(n / chunk_size) passes. The result has shape
    ``out.shape + x.shape`` for every output leaf.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jacfwd
    >>> jacfwd(lambda x: x ** 2)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    """
    chunk_of(1, chunk_size)  # a bad chunk_size fails here, not at the first call

    def jac(x):
        check_differentiable(x, "jacfwd: x")
        pieces = []
        out = None
        for directions in basis_chunks(x, chunk_of(math.prod(shape_of(x)), chunk_size)):
            out, t = _jvp(f, (x,), (directions,), "jacfwd")
            pieces.append((shape_of(directions)[0], t))
        if not pieces:  # an empty input
            out = f(x)
            leaves, build = flatten(out)
            return build([zeros(leaf, shape_of(leaf) + shape_of(x)) for leaf in leaves])
        xs = shape_of(x)
        out_leaves, build = flatten(out)
        t_leaves = [(k, flatten(p)[0]) for k, p in pieces]
        result = []
        for j, leaf in enumerate(out_leaves):
            parts = [ops.broadcast_to(tl[j], (k,) + shape_of(leaf)) for k, tl in t_leaves]
            t = parts[0] if len(parts) == 1 else ops.concatenate(parts, axis=0)
            t = ops.moveaxis(t, 0, -1) if shape_of(leaf) else t
            result.append(ops.reshape(t, shape_of(leaf) + xs))
        return build(result)
    return jac


def hessian(f: Callable, chunk_size: int | None = None) -> Callable:
    """The exact Hessian of a scalar ``f`` at ``x``, by hyper-dual numbers.

    Two nested forward levels (``a + b e1 + c e2 + d e1 e2``, computed as a
    Dual of Duals with chunks of basis directions on both levels) give every
    second derivative exactly, with no step size. Shape: ``x.shape * 2``.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import hessian, ops
    >>> hessian(lambda x: ops.sum(x ** 3))(np.array([1.0, 2.0]))
    array([[ 6.,  0.],
           [ 0., 12.]])
    """
    return jacfwd(jacfwd(f, chunk_size), chunk_size)

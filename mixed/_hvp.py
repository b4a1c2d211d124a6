"""Hessian-vector products by forward-over-reverse (or reverse-over-reverse).

Forward-over-reverse wraps ``x`` as ``Dual(x, v)`` and runs the ordinary
reverse-mode gradient on it: every value on the tape is a Dual, so the
backward pass in Dual arithmetic returns grad f (primal part) and H v
(tangent part). It only composes ``dualad`` and ``reverse``.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import reverse
from dualad import ops
from dualad.extend import transform_level
from dualad.interpreter import (
    Dual,
    Selection,
    basis_chunks,
    blocks,
    check_argnums,
    check_callable,
    check_differentiable,
    check_inputs,
    check_scalar_output,
    chunk_of,
    describe,
    flatten,
    leaf_paths,
    paired_leaves,
    positions,
    primals_at,
    seed_tangents,
    shape_of,
    split,
    split_aux,
    validate_tangent,
    zeros,
)

__all__ = ["hvp", "grad_and_hvp", "hessian"]

MODES = ("forward-over-reverse", "reverse-over-reverse")


def check_scalar(f: Callable, who: str, has_aux: bool = False, one_element: bool = True) -> Callable:
    """``f``, checked to return a scalar (with ``has_aux``, a pair whose first
    entry is one): an array of one element of any shape, unless ``one_element``
    is False (then of shape ()); errors name the transform ``who``."""
    def checked(*args):
        out = f(*args)
        check_scalar_output(split_aux(out, has_aux, who)[0], who, one_element=one_element)
        return out
    return checked


def check_vector(x: Any, name: str) -> None:
    """``x`` is a 1-d array (the point of a solver or of ``linearize``), or a ValueError
    names ``name``."""
    if type(x) is float or getattr(x, "ndim", None) != 1:
        raise ValueError(f"{name} must be a 1-d floating array, got {describe(x)}")


def check_function(f: Any, who: str) -> None:
    """``f`` is callable, as the objective ``f(x, *args)`` of ``who`` must be."""
    if not callable(f):
        raise TypeError(f"{who}: f must be the objective, a function f(x, *args) returning a scalar, "
                        f"got {describe(f)}")


def check_objective(f: Any, args: Any, who: str) -> Callable:
    """``x -> f(x, *args)``, checked to return a scalar, after checking that ``f`` is
    a function and ``args`` a tuple (the objective of a solver or of ``linearize``)."""
    check_function(f, who)
    if not isinstance(args, tuple):
        raise TypeError(f"{who}: args must be a tuple of f's other arguments, got {describe(args)}; "
                        "write args=(a,) for one")
    # a solver reports f's value as a number: shape () only
    return check_scalar(lambda x: f(x, *args) if args else f(x), who, one_element=False)


def select(f: Callable, x: Any, v: Any, args: tuple, argnums: int | tuple,
           who: str) -> tuple[Selection, Any, Any]:
    """``f`` called with the primals ``x`` at the positions ``argnums`` and ``args``
    at the others, in order; ``x`` and ``v`` checked against ``argnums`` (a tuple
    ``argnums`` takes a tuple of as many primals, and as many directions)."""
    single, nums = check_argnums(argnums)
    if not isinstance(args, tuple):
        raise TypeError(f"{who}: args must be a tuple of f's other arguments, got {describe(args)}; "
                        "write args=(a,) for one")
    if not single:
        for name, value, what in (("x", x, "primals"), ("v", v, "directions")):
            if not isinstance(value, (tuple, list)) or len(value) != len(nums):
                raise TypeError(f"{who}: argnums={argnums!r} selects {len(nums)} arguments, so {name} "
                                f"must be a tuple of {len(nums)} {what}, one each, got {describe(value)}")
        x, v = tuple(x), tuple(v)
    picked = (x,) if single else x
    where = positions(argnums, nums, len(picked) + len(args))
    rest = iter(args)
    full = tuple(picked[where.index(i)] if i in where else next(rest)
                 for i in range(len(picked) + len(args)))
    return Selection(f, full, argnums, single, nums), x, v


def grad_and_hvp(f: Callable, x: Any, v: Any, *, args: tuple = (), argnums: int | tuple = 0,
                 has_aux: bool = False, mode: str = "forward-over-reverse") -> tuple:
    """The gradient of scalar ``f`` and the Hessian-vector product H v, in one pass.

    With the defaults, ``f(x)`` is differentiated at ``x`` along ``v``. In
    general ``f`` is called with ``x`` at the positions ``argnums`` and the
    ``args`` at the other positions, in order, and differentiated in the
    selected arguments only (as :func:`reverse.grad` with the same
    ``argnums``): for a tuple ``argnums``, ``x`` and ``v`` are tuples with one
    primal and one direction per selected argument, and the gradient and
    H v are tuples of the same form.

    Parameters
    ----------
    f : callable
        Function returning a real scalar (with ``has_aux``, a pair
        ``(scalar, aux)``); its arguments are arrays, floats or pytrees of them.
    x : array, float or pytree; a tuple of them for a tuple ``argnums``
        The point: the values of the selected arguments.
    v : same structure, shapes and dtypes as ``x``
        The direction (a leading axis of ``k`` on a leaf gives ``k`` products).
    args : tuple
        ``f``'s other positional arguments, held constant (SciPy's ``args``).
    argnums : int or tuple of int
        The positions in ``f``'s signature that ``x`` fills (default 0).
    has_aux : bool
        ``f`` returns ``(output, aux)``; ``aux`` is returned as computed, not
        differentiated.
    mode : {"forward-over-reverse", "reverse-over-reverse"}
        Forward-over-reverse (default) pushes a Dual through the tape;
        reverse-over-reverse differentiates ``<grad f(x), v>`` with the tape
        (slower, see benchmarks/README.md).

    Returns
    -------
    (grad, hv), or (grad, hv, aux) with ``has_aux`` (as :func:`dualad.jvp`
    returns the output, its tangent and aux): each shaped as ``x``.

    Examples
    --------
    >>> import numpy as np
    >>> from mixed import grad_and_hvp
    >>> g, hv = grad_and_hvp(lambda x: (x ** 3).sum(), np.array([1.0, 2.0]), np.array([1.0, 0.0]))
    >>> g, hv
    (array([ 3., 12.]), array([6., 0.]))

    With respect to the second argument, the first held at 2, and an aux output:

    >>> def f(a, x):
    ...     return (a * x ** 2).sum(), x.size
    >>> grad_and_hvp(f, np.array([1.0, 3.0]), np.ones(2), args=(2.0,), argnums=1, has_aux=True)
    (array([ 4., 12.]), array([4., 4.]), 2)
    """
    return _grad_and_hvp(f, x, v, args, argnums, has_aux, mode, "grad_and_hvp")


def _grad_and_hvp(f: Callable, x: Any, v: Any, args: tuple, argnums: int | tuple, has_aux: bool,
                  mode: str, who: str) -> tuple:
    """:func:`grad_and_hvp`, with errors in the name of ``who``."""
    check_callable(f, who)
    if mode not in MODES:
        raise ValueError(f"{who}: mode must be one of {MODES}, got {mode!r}")
    sel, x, v = select(f, x, v, args, argnums, who)
    x_leaves, build = flatten(x)
    if not x_leaves:
        check_differentiable(x, "x")  # raises: None, or containers of nothing
    x_leaves, v_leaves = paired_leaves(x, v, "x", "v", who)
    f_of_x = check_scalar(sel.f_of_x, who, has_aux)
    if mode == "reverse-over-reverse":
        for xl, vl, name, x_name in zip(x_leaves, v_leaves, leaf_paths(x, "v"), leaf_paths(x, "x")):
            _, nb = validate_tangent(xl, vl, name, x_name)
            if nb:
                raise ValueError(f"{name}: reverse-over-reverse takes one direction at a time")
        g_fn = reverse.grad(f_of_x, has_aux=has_aux)

        def directional(y):  # <grad f(y), v>, with grad f(y) and aux kept as aux
            g, aux = g_fn(y) if has_aux else (g_fn(y), None)
            return sum(ops.vdot(gl, vl) for gl, vl in zip(flatten(g)[0], v_leaves)), (g, aux)
        hv, (g, aux) = reverse.grad(directional, has_aux=True)(x)
        return (g, hv, aux) if has_aux else (g, hv)
    with transform_level() as level:
        seeded = [Dual._make(xl, vl, level, nb)
                  for xl, (vl, nb) in zip(x_leaves, seed_tangents(x_leaves, v_leaves, x, "v", "x"))]
        k = next((shape_of(d.tangent)[0] for d in seeded if d._nb), None)
        out = reverse.grad(f_of_x, has_aux=has_aux)(build(seeded))
        g, hv = split(out[0] if has_aux else out, level, k, like=x)
        g, hv = floats_like(g, x_leaves), hv if k is not None else floats_like(hv, x_leaves)
        return (g, hv, primals_at(out[1], level)) if has_aux else (g, hv)


def floats_like(tree: Any, x_leaves: list) -> Any:
    """``tree`` with a Python float where ``x`` has one (as ``reverse.grad`` gives,
    not the NumPy scalar a reduction leaves in the tangent)."""
    leaves, build = flatten(tree)
    return build([float(leaf) if type(xl) is float else leaf for leaf, xl in zip(leaves, x_leaves)])


def hvp(f: Callable, x: Any, v: Any, *, args: tuple = (), argnums: int | tuple = 0,
        has_aux: bool = False, mode: str = "forward-over-reverse") -> Any:
    """The Hessian-vector product H v of scalar ``f`` at ``x``: ``grad_and_hvp``'s
    second part, for the same arguments.

    Parameters
    ----------
    f : callable
        Function returning a real scalar (with ``has_aux``, a pair ``(scalar, aux)``).
    x : array, float or pytree; a tuple of them for a tuple ``argnums``
        The point: the values of the arguments ``argnums`` of ``f``.
    v : same structure, shapes and dtypes as ``x``
        The direction (a leading axis of ``k`` on a leaf gives ``k`` products).
    args : tuple
        ``f``'s other positional arguments, in order, held constant.
    argnums : int or tuple of int
        The positions in ``f``'s signature that ``x`` fills (default 0); for
        a tuple, ``x`` and ``v`` are tuples of one entry per position, and so
        is H v (the blocks ``sum_j H[i][j] v[j]``).
    has_aux : bool
        ``f`` returns ``(output, aux)``; the result is ``(hv, aux)``.
    mode : {"forward-over-reverse", "reverse-over-reverse"}
        How H v is computed (see :func:`grad_and_hvp`).

    Returns
    -------
    H v, shaped as ``x`` (or ``(hv, aux)`` with ``has_aux``).

    Examples
    --------
    >>> import numpy as np
    >>> from mixed import hvp
    >>> hvp(lambda x: (x[0] * x[1]) ** 2, np.array([1.0, 2.0]), np.array([1.0, 0.0]))
    array([8., 8.])

    Two arguments at once (``argnums=(0, 1)``), a third held constant with ``args``:

    >>> def f(w, b, data):
    ...     return ((data @ w + b) ** 2).sum()
    >>> data = np.array([[1.0, 0.0], [0.0, 2.0]])
    >>> hvp(f, (np.ones(2), 0.5), (np.array([1.0, 0.0]), 0.0), args=(data,), argnums=(0, 1))
    (array([2., 0.]), 2.0)
    """
    out = _grad_and_hvp(f, x, v, args, argnums, has_aux, mode, "hvp")
    return (out[1], out[2]) if has_aux else out[1]


def hessian(f: Callable, argnums: int | tuple = 0, has_aux: bool = False, *,
            chunk_size: int | None = None) -> Callable:
    """The dense Hessian of scalar ``f``, forward over reverse: from batched HVPs.

    ``chunk_size`` basis directions go through the tape at once (default:
    all n), so the cost is ceil(n / chunk_size) HVP passes (``dualad.hessian``,
    forward over forward, takes ceil(n / chunk_size)**2). Shape
    ``x.shape * 2`` for one array; for pytrees (or a tuple ``argnums``) the
    block for leaves ``a`` and ``b`` is ``H[a][b]``, of shape ``a.shape + b.shape``,
    nested as JAX's ``hessian`` nests them.

    Parameters
    ----------
    f : callable
        A function returning a real scalar.
    argnums : int or tuple of int
        Which positional arguments to differentiate.
    has_aux : bool
        ``f`` returns ``(output, aux)``; the result is ``(hessian, aux)``, aux
        from one more plain call of ``f``.
    chunk_size : int, optional
        Directions per HVP pass.

    Examples
    --------
    >>> import numpy as np
    >>> from mixed import hessian
    >>> hessian(lambda x: x[0] ** 2 * x[1])(np.array([1.0, 3.0]))
    array([[6., 2.],
           [2., 0.]])
    """
    check_callable(f, "hessian")
    single, nums = check_argnums(argnums)
    chunk_of(1, chunk_size)  # a bad chunk_size fails here, not at the first call

    def hess(*args):
        sel = Selection(f, args, argnums, single, nums)
        x_leaves, x_build = flatten(sel.x)
        check_inputs(sel.x, "hessian")
        checked = check_scalar(lambda x: split_aux(sel.f_of_x(x), has_aux, "hessian")[0], "hessian")
        n = sum(math.prod(shape_of(leaf)) for leaf in x_leaves)
        chunks = [flatten(grad_and_hvp(checked, sel.x, x_build(directions))[1])[0]
                  for directions in basis_chunks(x_leaves, chunk_of(n, chunk_size))]
        if not chunks:  # no entries: an empty Hessian
            h = x_build([x_build([zeros(b, shape_of(b) + shape_of(a)) for a in x_leaves]) for b in x_leaves])
        else:  # H v for the basis directions: row i of each leaf's product is H's row i
            rows = [c[0] if len(c) == 1 else ops.concatenate(c, axis=0) for c in zip(*chunks)]
            h = x_build([x_build(blocks(row, b, x_leaves)) for row, b in zip(rows, x_leaves)])
        if has_aux:
            return h, split_aux(sel.f_of_x(sel.x), True, "hessian")[1]
        return h
    return hess

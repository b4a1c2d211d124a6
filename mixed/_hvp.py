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
    check_differentiable,
    check_inputs,
    check_scalar_output,
    chunk_of,
    flatten,
    leaf_paths,
    paired_leaves,
    shape_of,
    split,
    split_aux,
    validate_tangent,
    zeros,
)

__all__ = ["hvp", "grad_and_hvp", "hessian", "hessp", "jac"]

MODES = ("forward-over-reverse", "reverse-over-reverse")


def check_scalar(f: Callable, who: str) -> Callable:
    """``f``, checked to return a scalar; errors name the transform ``who``."""
    def checked(*args):
        out = f(*args)
        check_scalar_output(out, who)
        return out
    return checked


def grad_and_hvp(f: Callable, x: Any, v: Any, *, mode: str = "forward-over-reverse") -> tuple[Any, Any]:
    """The gradient of scalar ``f`` at ``x`` and the Hessian-vector product H v, in one pass.

    Parameters
    ----------
    f : callable
        Scalar function of an array, a float or a tuple/list/dict of arrays.
    x : array, float or pytree
        Where the derivatives are taken.
    v : same structure, shapes and dtypes as ``x``
        The direction (a leading axis of ``k`` directions gives ``k`` products).
    mode : {"forward-over-reverse", "reverse-over-reverse"}
        Forward-over-reverse (default) pushes a Dual through the tape;
        reverse-over-reverse differentiates ``<grad f(x), v>`` with the tape
        (slower, see benchmarks/README.md).

    Examples
    --------
    >>> import numpy as np
    >>> from mixed import grad_and_hvp
    >>> g, hv = grad_and_hvp(lambda x: (x ** 3).sum(), np.array([1.0, 2.0]), np.array([1.0, 0.0]))
    >>> g, hv
    (array([ 3., 12.]), array([6., 0.]))
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    x_leaves, build = flatten(x)
    if not x_leaves:
        check_differentiable(x, "x")  # raises: None, or containers of nothing
    x_leaves, v_leaves = paired_leaves(x, v, "x", "v", "hvp")
    names, x_names = leaf_paths(x, "v"), leaf_paths(x, "x")
    f = check_scalar(f, "hvp")
    if mode == "reverse-over-reverse":
        for xl, vl, name, x_name in zip(x_leaves, v_leaves, names, x_names):
            _, nb = validate_tangent(xl, vl, name, x_name)
            if nb:
                raise ValueError(f"{name}: reverse-over-reverse takes one direction at a time")
        g_fn = reverse.grad(f)

        def directional(y):
            return sum(ops.vdot(gl, vl) for gl, vl in zip(flatten(g_fn(y))[0], v_leaves))
        g, gd = reverse.grad(lambda y: _with_grad(g_fn, directional, y), has_aux=True)(x)
        return gd, g
    with transform_level() as level:
        seeded = []
        for xl, vl, name, x_name in zip(x_leaves, v_leaves, names, x_names):
            vl, nb = validate_tangent(xl, vl, name, x_name)
            seeded.append(Dual._make(xl, vl, level, nb))
        k = next((shape_of(d.tangent)[0] for d in seeded if d._nb), None)
        return split(reverse.grad(f)(build(seeded)), level, k, like=x)


def _with_grad(g_fn, directional, y):
    return directional(y), g_fn(y)


def hvp(f: Callable, x: Any, v: Any, *, mode: str = "forward-over-reverse") -> Any:
    """The Hessian-vector product H v of scalar ``f`` at ``x``.

    Examples
    --------
    >>> import numpy as np
    >>> from mixed import hvp
    >>> hvp(lambda x: (x[0] * x[1]) ** 2, np.array([1.0, 2.0]), np.array([1.0, 0.0]))
    array([8., 8.])
    """
    return grad_and_hvp(f, x, v, mode=mode)[1]


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


def hessp(f: Callable) -> Callable:
    """``(x, p) -> H(x) p`` for ``scipy.optimize.minimize(..., hessp=hessp(f))``.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.optimize import minimize
    >>> from mixed import hessp, jac
    >>> f = lambda x: ((x - 1.0) ** 2).sum() + (x[0] * x[1]) ** 2
    >>> r = minimize(f, np.zeros(2), jac=jac(f), hessp=hessp(f), method="trust-krylov")
    >>> bool(r.success)
    True
    """
    def hp(x, p):
        return hvp(check_scalar(f, "hessp"), x, p)
    return hp


def jac(f: Callable) -> Callable:
    """The gradient of scalar ``f`` as a callable (``scipy.optimize.minimize(jac=...)``)."""
    return reverse.grad(check_scalar(f, "jac"))


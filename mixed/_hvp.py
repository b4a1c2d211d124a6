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
from dualad._checks import check_differentiable, check_scalar_output, validate_tangent
from dualad._dual import Dual
from dualad._shapes import shape_of, zeros
from dualad._transforms import basis_chunks, chunk_of, split
from dualad._tree import flatten, leaf_paths, structure
from dualad.extend import transform_level

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
    v_leaves, _ = flatten(v)
    if structure(x) != structure(v):
        raise ValueError(f"v must have the structure of x, {structure(x)}, got {structure(v)}")
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


def hessian(f: Callable, chunk_size: int | None = None) -> Callable:
    """The dense Hessian of scalar ``f`` at an array ``x``, from batched HVPs.

    ``chunk_size`` directions go through the tape at once (default: all n),
    so the cost is ceil(n / chunk_size) HVP passes.

    Examples
    --------
    >>> import numpy as np
    >>> from mixed import hessian
    >>> hessian(lambda x: x[0] ** 2 * x[1])(np.array([1.0, 3.0]))
    array([[6., 2.],
           [2., 0.]])
    """
    chunk_of(1, chunk_size)  # a bad chunk_size fails here, not at the first call

    def hess(x):
        check_differentiable(x, "hessian: x")
        n = math.prod(shape_of(x))
        chunk = chunk_of(n, chunk_size)
        if n == 0:
            return zeros(x, shape_of(x) * 2)
        checked = check_scalar(f, "hessian")
        rows = [grad_and_hvp(checked, x, directions)[1] for directions in basis_chunks(x, chunk)]
        h = rows[0] if len(rows) == 1 else ops.concatenate(rows, axis=0)
        return ops.reshape(h, shape_of(x) * 2)
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


"""Adapters for ``scipy.optimize``: the exact gradient and Hessian-vector
product of a scalar function, as the callables ``minimize`` takes.

``jac(f)`` is SciPy's ``jac=`` (called ``jac(x, *args)``) and ``hessp(f)`` its
``hessp=`` (called ``hessp(x, p, *args)``), for the methods that use them:
Newton-CG, trust-ncg, trust-krylov and trust-constr. ``jac(f)`` and
``hessp(f)`` of the same ``f`` share one linearization (:func:`mixed.linearize`),
traced once per pair: each new point replays its primal half, each product
its tangent half, as ``linearized(f)``, which returns the two at once, does.
``hess(f)`` is ``hess=``, the Hessian as a sparse matrix
(:func:`mixed.sparse_hessian`), for trust-constr on large sparse problems.
The module is named for
the convention it follows; it does not import SciPy (not a dependency of
dualad), and imports in this package are absolute, so ``import scipy`` still
means SciPy there, never this module.

Examples
--------
>>> import numpy as np
>>> from scipy.optimize import minimize
>>> from mixed.scipy import hessp, jac
>>> def f(x, a):
...     return ((x - a) ** 2).sum() + (x[0] * x[1]) ** 2
>>> r = minimize(f, np.zeros(2), args=(1.0,), jac=jac(f), hessp=hessp(f), method="trust-krylov")
>>> bool(r.success), np.round(r.x, 6)
(True, array([0.682328, 0.682328]))
"""

from __future__ import annotations

import operator
import weakref
from typing import Any, Callable

import reverse
from dualad.interpreter import describe, dtype_of, namespace_of, raw, shape_of
from mixed._hvp import check_function, check_scalar
from mixed._linearize import linearize
from mixed._sparse_hessian import sparse_hessian

__all__ = ["hess", "hessp", "jac", "linearized"]


def jac(f: Callable) -> Callable:
    """The gradient of scalar ``f`` in its first argument, as SciPy's ``jac=``.

    Parameters
    ----------
    f : callable
        The objective ``f(x, *args)``, returning a real scalar; ``x`` a
        floating array.

    Returns
    -------
    callable
        ``(x, *args) -> grad f(x, *args)`` with respect to ``x`` (shape and
        dtype of ``x``); ``args`` are held constant, as
        ``scipy.optimize.minimize(f, x0, args=args, jac=jac(f))`` passes them.
        Alone, each call is one reverse pass. Once a :func:`hessp` of the
        same ``f`` (the same object) has been made while this function
        lives, the two share one linearization, as :func:`linearized`'s pair
        does (the same numbers; ``f``'s Python runs once, at the trace, and
        arrays it closes over are read there).

    See Also
    --------
    linearized : the pair from one trace per solve, made explicit.

    Examples
    --------
    >>> import numpy as np
    >>> from mixed.scipy import jac
    >>> jac(lambda x, a: (a * x ** 2).sum())(np.array([1.0, 2.0]), 3.0)
    array([ 6., 12.])
    """
    check_function(f, "jac")
    eager, shared = reverse.grad(check_scalar(f, "jac")), _shared(f)

    def jac_(x: Any, *args: Any) -> Any:
        return shared.jac(x, *args) if shared.with_hessp else eager(x, *args)
    return jac_


def hessp(f: Callable) -> Callable:
    """The Hessian-vector product of scalar ``f`` in its first argument, as SciPy's ``hessp=``.

    Computed by forward over reverse, without forming H, from one
    linearization (:func:`mixed.linearize`) shared with :func:`jac` of the
    same ``f``: the first call traces ``f``; at each new ``x`` one replay of
    the primal half gives the operator (and ``jac``'s gradient), and each
    product replays the tangent half, so ``f``'s Python runs once per
    pair, and arrays ``f`` closes over are read at that trace (make a new
    pair for a changed ``f``, as for :func:`linearized`). SciPy's methods
    probe with vectors of their own dtype (trust-constr sends int8 ones);
    ``p`` of any real dtype is cast to ``x``'s floating dtype, so that the
    product has the dtype of ``x``.

    Parameters
    ----------
    f : callable
        The objective ``f(x, *args)``, returning a real scalar.

    Returns
    -------
    callable
        ``(x, p, *args) -> H p``, H the Hessian of ``f(., *args)`` at ``x``;
        ``p`` an array of ``x``'s shape (integer or floating), the result of
        ``x``'s shape and dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from mixed.scipy import hessp
    >>> hp = hessp(lambda x, a: (a * x[0] ** 2 * x[1]))
    >>> hp(np.array([1.0, 2.0]), np.array([1, 0], dtype=np.int8), 3.0)
    array([12.,  6.])
    """
    check_function(f, "hessp")
    shared = _shared(f)
    shared.with_hessp = True

    def hessp_(x: Any, p: Any, *args: Any) -> Any:
        return shared.hessp(x, p, *args)
    return hessp_


def hess(f: Callable) -> Callable:
    """The Hessian of scalar ``f`` in its first argument as a sparse matrix, as SciPy's
    ``hess=`` for ``minimize(method="trust-constr")`` (and Newton-CG, trust-exact).

    :func:`mixed.sparse_hessian`: the pattern is detected by tracing ``f`` and
    star-coloured at the first call, and each call costs one forward-over-reverse
    Hessian-vector product per colour, so a banded Hessian of ``1e5``
    variables costs a few products, not ``1e5``.

    Parameters
    ----------
    f : callable
        The objective ``f(x, *args)``, returning a real scalar, of a 1-d
        floating NumPy array ``x``.

    Returns
    -------
    callable
        ``(x, *args) -> scipy.sparse.csr_matrix``, the ``n x n`` Hessian at ``x``.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.optimize import minimize
    >>> from mixed.scipy import hess, jac
    >>> def chained(x):
    ...     return ((x[1:] - x[:-1] ** 2) ** 2).sum() + ((x - 0.5) ** 2).sum()
    >>> r = minimize(chained, np.zeros(1000), jac=jac(chained), hess=hess(chained),
    ...              method="trust-constr", options={"gtol": 1e-10})
    >>> bool(r.success), hess(chained)(r.x).nnz
    (True, 2998)
    """
    check_function(f, "hess")
    return sparse_hessian(f)


class _Shared:
    """The linearization that :func:`jac` and :func:`hessp` of one ``f`` share."""

    def __init__(self, f: Callable):
        self.jac, self.hessp = linearized(f)
        self.with_hessp = False


# f's id -> its _Shared, while a jac or hessp made for f holds it (it holds f, so the id
# is not reused meanwhile); a new pair after both are dropped traces afresh.
_SHARED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def _shared(f: Callable) -> _Shared:
    shared = _SHARED.get(id(f))
    if shared is None:
        shared = _SHARED[id(f)] = _Shared(f)
    return shared


def linearized(f: Callable) -> tuple[Callable, Callable]:
    """SciPy's ``jac=`` and ``hessp=`` for scalar ``f``, from one linearization per point.

    The first call traces ``f`` once (:func:`mixed.linearize`); at each new
    ``x`` the gradient and the Hessian operator come from one replay of the
    trace's primal half, and each ``hessp(x, p)`` at that ``x`` replays its
    tangent half, so ``f``'s Python runs once per solve. The numbers are
    :func:`jac`'s and :func:`hessp`'s (the iterates of a solve are the same to
    the bit). As with ``mixed.linearize``, arrays ``f`` closes over are those
    of the first trace: make a new pair for a changed ``f``; new ``args``
    (other objects) trace again, but an argument changed in place is not
    seen, as SciPy never changes them.

    Parameters
    ----------
    f : callable
        The objective ``f(x, *args)``, returning a real scalar; ``x`` a 1-d floating array.

    Returns
    -------
    jac, hessp : callable
        ``jac(x, *args) -> grad f`` and ``hessp(x, p, *args) -> H p``, as :func:`jac` and
        :func:`hessp` (``p`` of any real dtype is cast to ``x``'s).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.optimize import minimize
    >>> from mixed.scipy import linearized
    >>> def f(x, a):
    ...     return ((x - a) ** 2).sum() + (x[0] * x[1]) ** 2
    >>> jac, hessp = linearized(f)
    >>> r = minimize(f, np.zeros(2), args=(1.0,), jac=jac, hessp=hessp, method="Newton-CG")
    >>> bool(r.success), np.round(r.x, 6)
    (True, array([0.682328, 0.682328]))
    """
    check_function(f, "linearized")
    last: dict = {}  # "x": a copy of the point, "args", "grad" and "H" there

    def at(x: Any, args: tuple) -> Any:
        if "H" in last and len(args) == len(last["args"]) and all(map(operator.is_, args, last["args"])):
            if _same_point(x, last["x"]):
                return last["H"]
            last["grad"], last["H"] = last["H"].at(x)
        else:
            last["grad"], last["H"] = linearize(f, x, args=args)
        last["x"], last["args"] = namespace_of([raw(x)]).asarray(raw(x), copy=True), args
        return last["H"]

    def jac_(x: Any, *args: Any) -> Any:
        at(x, args)
        return namespace_of([last["grad"]]).asarray(last["grad"], copy=True)  # the caller's to write

    def hessp_(x: Any, p: Any, *args: Any) -> Any:
        return at(x, args) @ _probe(x, p)
    return jac_, hessp_


def _same_point(x: Any, y: Any) -> bool:
    """Whether ``x`` holds the numbers of ``y`` (a copy the caller cannot change), signs of
    zeros included (the derivative of sqrt at -0.0 is -inf); a NaN is never the same."""
    x = raw(x)
    if shape_of(x) != shape_of(y) or dtype_of(x) != dtype_of(y):
        return False
    xp = namespace_of([x, y])
    return bool(xp.all((x == y) & (xp.signbit(x) == xp.signbit(y))))


def _probe(x: Any, p: Any) -> Any:
    """``p`` as a direction for ``x``: of ``x``'s shape, cast to its floating
    dtype. An ``x`` that is not a real floating array is left to ``hvp`` to
    reject, and so is a ``p`` that is not an array (a value type, say)."""
    x, r = raw(x), raw(p)
    if not (hasattr(x, "shape") and hasattr(x, "dtype")):
        return p
    xp = namespace_of([x])
    if not xp.isdtype(x.dtype, "real floating"):
        return p
    if not (hasattr(r, "shape") and hasattr(r, "dtype")):
        raise TypeError(f"hessp: p must be an array of x's shape {shape_of(x)}, got {describe(p)}")
    if shape_of(r) != shape_of(x):
        raise ValueError(f"hessp: p must have x's shape {shape_of(x)}, got shape {shape_of(r)}")
    if not xp.isdtype(r.dtype, ("integral", "real floating")):
        raise TypeError(f"hessp: p must be a real array (integer or floating), got dtype {dtype_of(r)}")
    if r is not p or r.dtype == x.dtype:
        return p
    return namespace_of([x, r]).astype(r, x.dtype)

"""``linearize`` and ``linear_transpose``, as JAX's: a function's linear part, and
the transpose of a linear function."""

from __future__ import annotations

from typing import Any, Callable

from dualad._checks import describe
from dualad._reverse_mode import registered_vjp
from dualad._transforms import _jvp

__all__ = ["linearize", "linear_transpose"]


def linearize(f: Callable, *primals: Any) -> tuple[Any, Callable]:
    """``f(*primals)`` and its JVP at ``primals`` as a function of the tangents, as ``jax.linearize``.

    Cost: ``f`` is evaluated once here, and the returned ``f_jvp`` evaluates
    it again, in forward mode, on every call (JAX records the linear program
    once and replays only it). Pass a chunk of k tangents (a leading axis on
    each) to push k directions through one call.

    Parameters
    ----------
    f : callable
        A function of arrays, floats, or pytrees of them.
    *primals
        The point at which ``f`` is linearized.

    Returns
    -------
    out : the output of ``f(*primals)``
    f_jvp : callable
        ``f_jvp(*tangents)`` is ``jvp(f, primals, tangents)``'s output tangent;
        the tangents have the structure, shapes and dtypes of ``primals``.

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> out, f_jvp = dualad.linearize(lambda x: np.sin(x) * 2.0, np.array([0.0, np.pi]))
    >>> f_jvp(np.array([1.0, 1.0]))
    array([ 2., -2.])
    """
    if not callable(f):
        raise TypeError(f"linearize: f must be callable, got {describe(f)}")
    out = f(*primals)

    def f_jvp(*tangents: Any) -> Any:
        return _jvp(f, primals, tangents, "linearize")[1]
    return out, f_jvp


def linear_transpose(f: Callable, *primals: Any) -> Callable:
    """The transpose of a linear ``f``, as ``jax.linear_transpose``.

    ``primals`` give the structure, shapes and dtypes of ``f``'s arguments
    (their values matter only if ``f`` is not linear: then the result is the
    transpose of ``f``'s linearization at ``primals``). ``f`` is recorded
    once, by reverse mode, when this is called; the returned function walks
    that record back for each cotangent. The reverse mode is the one
    registered with :func:`dualad.extend.register_vjp`: ``import reverse``
    registers it (``dualad`` never imports the packages built on it).

    Parameters
    ----------
    f : callable
        A linear function of arrays, floats, or pytrees of them.
    *primals
        Example arguments of ``f``.

    Returns
    -------
    callable
        ``f_transpose(out_cotangent)``: a tuple with one cotangent per argument
        of ``f``, as ``primals``; ``out_cotangent`` has the structure, shapes
        and dtypes of ``f``'s output.

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> import reverse  # the reverse mode that transposes
    >>> A = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    >>> f_t = dualad.linear_transpose(lambda x: A @ x, np.zeros(2))
    >>> f_t(np.array([1.0, 0.0, 1.0]))
    (array([6., 8.]),)
    """
    if not callable(f):
        raise TypeError(f"linear_transpose: f must be callable, got {describe(f)}")
    vjp = registered_vjp("linear_transpose", "or build the matrix with dualad.jacfwd and transpose it")
    return vjp(f, *primals)[1]

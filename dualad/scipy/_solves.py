"""What SciPy said of the solves behind one result, and the check a derivative makes.

A function of ``dualad.scipy`` runs SciPy's solve once per call, once per element
under ``vmap`` and once per replay under ``jit``; each outcome is recorded here. The
implicit derivative holds at a solution only, so taking it where SciPy did not
converge raises (:meth:`Solves.check`, called by the entry's rules); a replay under
``jit`` of a call whose derivative was taken warns instead, since the derivative's
steps replay without asking.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from dualad._base.tree import flatten, register_pytree_node

__all__ = ["NotConvergedError", "Solves", "as_pytree", "check_args"]

_REGISTERED: set = set()  # the result types made pytree nodes


def as_pytree(result: Any) -> Any:
    """``result``, a SciPy result (``OptimizeResult``, ``RootResults``, ``OdeResult``: dicts
    with attribute access), whose type is made a pytree node that rebuilds as itself, so that
    ``dualad.jit`` of a function returning it gives it back, ``res.x`` and all, not a plain
    dict (a dict subclass is otherwise flattened and rebuilt as a dict).

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> from dualad.scipy.optimize import root
    >>> res = dualad.jit(lambda a: root(lambda x: x ** 3 - a, np.ones(1), tol=1e-12))(np.array([8.0]))
    >>> type(res).__name__, np.round(res.x, 10)
    ('OptimizeResult', array([2.]))
    """
    kind = type(result)
    if kind not in _REGISTERED:
        register_pytree_node(kind, _result_children, lambda keys, values: _rebuilt(kind, keys, values))
        _REGISTERED.add(kind)
    return result


def _result_children(result: Any) -> tuple:
    keys = sorted(result)
    return [result[k] for k in keys], tuple(keys)


def _rebuilt(kind: type, keys: tuple, values: list) -> Any:
    """A result of type ``kind`` holding ``keys: values``, made without ``kind``'s
    ``__init__`` (``RootResults``'s takes its fields one by one)."""
    result = kind.__new__(kind)
    dict.update(result, zip(keys, values))
    return result


class NotConvergedError(RuntimeError):
    """The derivative of a solution was asked for where SciPy's solve did not converge.

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> from dualad.scipy import optimize
    >>> from dualad.scipy.optimize import NotConvergedError
    >>> f = lambda a: optimize.root(lambda x: x ** 2 + a, np.ones(1)).x   # no real root
    >>> try:
    ...     dualad.jacfwd(f)(1.0)
    ... except NotConvergedError as err:
    ...     print(str(err)[:60])
    dualad.scipy.optimize.root: SciPy's solve did not converge (
    """


class Solves:
    """The outcomes of the SciPy solves of one call of the function ``who``."""

    __slots__ = ("who", "outcomes", "differentiated", "caveats", "singular")

    def __init__(self, who: str):
        self.who = who
        self.outcomes: list = []  # (SciPy's result, converged, what SciPy said)
        self.differentiated = False
        self.caveats: list = []   # what the derivative warns of where it is taken
        self.singular: list = []  # why the solution does not determine its derivative

    def record(self, result: Any, converged: bool, message: Any, doubtful: bool = False,
               caveat: str | None = None, singular: str | None = None) -> None:
        """One solve's outcome; ``doubtful`` where SciPy reports a failure that usually is
        none (BFGS's loss of precision at the minimum): the derivative warns there, as it
        does of a ``caveat`` (a degenerate active set); ``singular`` says why the solution
        does not determine its derivative (dependent active constraints), which the
        derivative raises as ``numpy.linalg.LinAlgError``."""
        if caveat is not None:
            self.caveats.append(caveat)
        if singular is not None:
            self.singular.append(singular)
        if doubtful:
            warnings.warn(f"{self.who}: SciPy says {message!r}; the derivative assumes the "
                          "solution is one", RuntimeWarning, stacklevel=3)
            converged = True
        self.outcomes.append((result, bool(converged), message))
        if not converged and self.differentiated:
            warnings.warn(f"{self.who}: SciPy's solve did not converge ({message}) in a replay of a "
                          "compiled derivative; the derivative there does not hold",
                          RuntimeWarning, stacklevel=2)
        elif singular is not None and self.differentiated:
            warnings.warn(f"{self.who}: {singular}, in a replay of a compiled derivative; the "
                          "derivative there does not hold", RuntimeWarning, stacklevel=2)

    def check(self) -> None:
        """Raise where a solve behind this result did not converge (called before a derivative)."""
        self.differentiated = True
        for caveat in self.caveats:
            warnings.warn(f"{self.who}: {caveat}", RuntimeWarning, stacklevel=3)
        failed = [message for _, converged, message in self.outcomes if not converged]
        if failed:
            raise NotConvergedError(
                f"{self.who}: SciPy's solve did not converge ({failed[-1]}), and the derivative "
                "of a solution holds only at a solution: tighten the tolerance, raise the "
                "iteration limit or start closer")
        if self.singular:
            raise np.linalg.LinAlgError(f"{self.who}: {self.singular[-1]}")

    @property
    def last(self) -> Any:
        return self.outcomes[-1][0]

    @property
    def all_converged(self) -> bool:
        return all(converged for _, converged, _ in self.outcomes)


def check_args(args: Any, who: str) -> tuple:
    """SciPy's ``args``: a tuple of extra arguments (one value is taken as a 1-tuple, as SciPy
    does)."""
    if not isinstance(args, tuple):
        args = (args,)
    flatten(args)  # a pytree of values: raises naming what it cannot hold
    return args


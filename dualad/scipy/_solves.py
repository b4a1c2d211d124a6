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

from dualad._base.tree import flatten

__all__ = ["NotConvergedError", "Solves", "check_args"]


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

    __slots__ = ("who", "outcomes", "differentiated", "caveats")

    def __init__(self, who: str):
        self.who = who
        self.outcomes: list = []  # (SciPy's result, converged, what SciPy said)
        self.differentiated = False
        self.caveats: list = []   # what the derivative warns of where it is taken

    def record(self, result: Any, converged: bool, message: Any, doubtful: bool = False,
               caveat: str | None = None) -> None:
        """One solve's outcome; ``doubtful`` where SciPy reports a failure that usually is
        none (BFGS's loss of precision at the minimum): the derivative warns there, as it
        does of a ``caveat`` (a degenerate active set)."""
        if caveat is not None:
            self.caveats.append(caveat)
        if doubtful:
            warnings.warn(f"{self.who}: SciPy says {message!r}; the derivative assumes the "
                          "solution is one", RuntimeWarning, stacklevel=3)
            converged = True
        self.outcomes.append((result, bool(converged), message))
        if not converged and self.differentiated:
            warnings.warn(f"{self.who}: SciPy's solve did not converge ({message}) in a replay of a "
                          "compiled derivative; the derivative there does not hold",
                          RuntimeWarning, stacklevel=2)

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


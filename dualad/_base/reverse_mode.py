"""The reverse mode dualad's own functions use where they need one.

``dualad`` never imports the packages built on it: ``reverse`` registers its
``vjp`` here when it is imported (:func:`register_vjp`, public in
:mod:`dualad.extend`), and ``check_grads``' mode ``"rev"`` and
``linear_transpose`` look it up.
"""

from __future__ import annotations

from typing import Callable

from dualad._base.checks import describe

_REGISTERED: list[Callable] = []


def register_vjp(vjp: Callable) -> None:
    """Make ``vjp`` the reverse mode of ``check_grads``' ``"rev"`` and of ``linear_transpose``.

    ``vjp(f, *primals)`` must return ``(f(*primals), pullback)`` with
    ``pullback(cotangent)`` a tuple of input cotangents, as ``reverse.vjp``
    does (``import reverse`` registers it). The last registration wins.

    Examples
    --------
    >>> import numpy as np
    >>> import reverse  # registers reverse.vjp
    >>> from dualad.testing import check_grads
    >>> check_grads(lambda x: np.sin(x) * x, (np.array([0.5, 1.0]),), modes=("rev",))
    """
    if not callable(vjp):
        raise TypeError(f"register_vjp: vjp must be callable as vjp(f, *primals) -> (out, pullback), "
                        f"got {describe(vjp)}")
    _REGISTERED[:] = [vjp]


def registered_vjp(who: str, otherwise: str) -> Callable:
    """The registered reverse mode's ``vjp``; ``who`` needs it, ``otherwise`` says
    what the user can do without one."""
    if not _REGISTERED:
        raise NotImplementedError(
            f"{who} needs a reverse mode, and none is registered: `import reverse` registers "
            f"reverse.vjp (see dualad.extend.register_vjp); {otherwise}")
    return _REGISTERED[0]

"""The extension contract: how to add an entry to the table, or read it.

Everything a new primitive needs is here: the constructors for each kind of
entry (their JVP, VJP and batching are derived when the entry is made),
``bind`` to apply one, ``register_numpy`` to route a NumPy function to
it, and ``register_vjp``, through which a reverse mode built on ``dualad``
serves ``check_grads`` and ``linear_transpose`` without ``dualad`` importing
it. ``reverse`` builds ``Function`` and ``checkpoint`` on this contract.
A transform runs its function inside ``with transform_level() as level``
(closed when the block ends, so escaped values raise :class:`EscapedValueError`).
An elementwise entry states where it is smooth (``domain=(POSITIVE,)`` for
``log``; :data:`REAL` by default), and the table's tests draw from that.

Examples
--------
>>> import numpy as np
>>> from dualad import derivative, ops
>>> from dualad.extend import bind, elementwise, unregister
>>> softsign = elementwise("softsign", lambda xp, x: x / (1.0 + xp.abs(x)),
...                        lambda ans, x: 1.0 / ops.square(1.0 + ops.abs(x)))
>>> derivative(lambda x: bind(softsign, x))(1.0)
0.25
>>> unregister("softsign")
"""

from dualad._base.core import EscapedValueError, bind, transform_level
from dualad._base.reverse_mode import register_vjp
from dualad._numpy.arraylike import register_numpy
from dualad._table.entries import (
    NONZERO,
    POSITIVE,
    REAL,
    REGISTRY,
    UNIT,
    Primitive,
    custom,
    elementwise,
    linear,
    non_differentiable,
    unregister,
    zero_derivative,
)

__all__ = ["EscapedValueError", "NONZERO", "POSITIVE", "REAL", "REGISTRY", "UNIT",
           "Primitive", "bind", "custom", "elementwise", "linear", "non_differentiable",
           "register_numpy", "register_vjp", "transform_level", "unregister", "zero_derivative"]

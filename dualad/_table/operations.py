"""The few differentiable operations the table's own machinery applies.

Deriving a JVP or VJP from an entry's partials needs a handful of the
table's own operations (a reshape that keeps a chunk axis in front, the sum
over broadcast axes, a cast, ...). Those are entries, defined above this
floor; so that the table imports nothing that defines entries, the modules
that define them register them here (:func:`provide`) as they load, and the
table calls them as ``operations.reshape(...)`` at run time.

Examples
--------
>>> import numpy as np
>>> import dualad
>>> from dualad._table import operations
>>> operations.reshape(np.ones(4), (2, 2)).shape
(2, 2)
"""

from __future__ import annotations

from typing import Any, Callable

# What the table applies; each is provided by the module of the entry it binds.
NEEDED = frozenset({"add", "astype", "broadcast_to", "multiply", "real", "reshape", "stack", "subtract",
                    "unbroadcast", "where"})


def provide(*functions: Callable) -> None:
    """Register the table's own uses of ``functions`` (each under its ``__name__``)."""
    for fn in functions:
        if fn.__name__ not in NEEDED:
            raise ValueError(f"operations.provide: {fn.__name__!r} is not one of the operations the "
                             f"table applies ({sorted(NEEDED)})")
        globals()[fn.__name__] = fn


def __getattr__(name: str) -> Any:
    if name in NEEDED:
        raise AttributeError(f"the table's operation {name!r} has not been provided yet: the module of "
                             "its entry provides it when it loads (import dualad first)")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

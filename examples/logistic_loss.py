"""The objective of the logistic-regression examples (NumPy, GPU and Dask), written once.

Run any of them from the repository root: Python puts this folder on the
module path, so ``from logistic_loss import make_loss`` finds this file.
"""

from __future__ import annotations

from typing import Any, Callable

from dualad import ops


def make_loss(x: Any, y: Any, lam: float) -> Callable:
    """The L2-regularized mean logistic loss of the weights, for features ``x``
    and labels ``y`` in {-1, +1} (NumPy, CuPy or Dask arrays).

    ``ops.logaddexp(0, -m)`` is log(1 + exp(-m)) without overflow; the
    margins are computed as ``(x @ w) * y`` so that the value type (``w``'s
    tape or Dual wrapper) is the left operand whatever the array backend.

    Examples
    --------
    >>> import numpy as np
    >>> loss = make_loss(np.array([[1.0, 2.0], [1.0, -1.0]]), np.array([1.0, -1.0]), 0.5)
    >>> round(float(loss(np.zeros(2))), 6)  # log 2
    0.693147
    """
    def loss(w):
        margins = ops.matmul(x, w) * y
        return ops.mean(ops.logaddexp(0.0, -margins)) + 0.5 * lam * ops.sum(w * w)
    return loss

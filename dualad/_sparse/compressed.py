"""The compressed evaluation that :class:`~dualad._sparse.jacobian.SparseJacobian` and
``mixed.SparseHessian`` share: a derivative matrix of a known pattern, evaluated at a
point by its products with one seed direction per colour, from which the nonzeros are
read back. Only how the pattern is found and coloured, and what the products are (a
chunked JVP, one H v per colour), differ between the two.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from dualad._sparse.coloring import seed_matrix
from dualad._sparse.detection import check_point

__all__ = ["Compressed", "per_point"]


class Compressed:
    """A sparse derivative at any point of the shape and dtype of ``x``: ``self(x)`` is
    ``recover(products(x))``, where ``products(x)`` gives the ``c x m`` products of the
    derivative with the seeds of ``colors`` (:func:`~dualad._sparse.coloring.seed_matrix`).

    Subclasses set ``pattern`` and ``colors``, then call :meth:`_compress` with their
    ``products`` (a function of the point and the seeds) and ``recover``; errors name
    ``who``.

    Attributes
    ----------
    pattern : scipy.sparse.csr_matrix
        The detected sparsity pattern (boolean).
    colors : numpy.ndarray
        The colour of each column; ``n_colors`` of them.
    """

    who = "Compressed"
    pattern: Any
    colors: np.ndarray

    def _compress(self, x: np.ndarray, products: Callable[[np.ndarray], Callable], recover: Callable) -> None:
        self._point = (x.shape, x.dtype)
        self._seeds = seed_matrix(self.colors, x.dtype)
        self.n_colors = self._seeds.shape[0]
        self._products = products(self._seeds)
        self._recover = recover

    def __call__(self, x: np.ndarray) -> Any:
        """The derivative at ``x`` (of the shape and dtype the pattern was detected for)."""
        x = check_point(x, self.who, self._point)
        if not self.n_colors:
            return self._recover(np.zeros((0, self.pattern.shape[0]), dtype=x.dtype))
        return self._recover(np.asarray(self._products(x)))


def per_point(make: Callable[..., Compressed], who: str, same: Callable[[Compressed, tuple], bool]
              ) -> Callable:
    """``(x, *args) -> make(x, *args)(x)``, made once per shape and dtype of ``x`` and
    again where ``same(held, args)`` says the held one was made for other ``args``."""
    held_for: dict[tuple, Compressed] = {}

    def at(x: np.ndarray, *args: Any) -> Any:
        x = check_point(x, who)
        key = (x.shape, x.dtype)
        held = held_for.get(key)
        if held is None or not same(held, args):
            held = held_for[key] = make(x, *args)
        return held(x)
    return at

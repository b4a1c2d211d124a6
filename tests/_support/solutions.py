"""The oracle of the dualad.scipy tests (issue 37): central differences of a SciPy solve, and a
comparison that checks shapes before values."""

from __future__ import annotations

import numpy as np

RTOL = 1e-6


def fd(f, x, h=1e-3):
    """The Jacobian of ``f`` at the vector ``x`` by the five-point stencil (error O(h^4)),
    one column per coordinate of ``x`` (a scalar ``f`` gives the gradient)."""
    x = np.asarray(x, dtype=float)
    cols = []
    for e in np.eye(x.size):
        d = e.reshape(x.shape) * h
        cols.append((8 * (f(x + d) - f(x - d)) - (f(x + 2 * d) - f(x - 2 * d))) / (12 * h))
    return np.stack([np.asarray(c) for c in cols], axis=-1)


def close(got, want, rtol=RTOL, atol=1e-9):
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)

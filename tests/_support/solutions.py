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


def richardson(estimate, h, levels=3):
    """Richardson's extrapolation to step 0 of ``estimate(s)``, a symmetric difference whose
    error is a series in even powers of ``s``: the estimates at ``h, h/2, ..., h/2**(levels-1)``,
    each column of the tableau removing the next power (``s**2``, ``s**4``, ...), so the
    result's error is ``O(h**(2 levels))`` while the smallest step stays ``h / 2**(levels-1)``
    (the solver's noise is divided by it, not by a tiny step).

    >>> d = richardson(lambda s: (np.sin(1 + s) - np.sin(1 - s)) / (2 * s), 0.5)   # sin' at 1
    >>> bool(abs(d - np.cos(1.0)) < 1e-7)   # at steps 0.5, 0.25, 0.125 (the last alone: 1e-3)
    True
    """
    previous = []
    for k in range(levels):
        row = [np.asarray(estimate(h / 2 ** k), dtype=float)]
        for j in range(1, k + 1):
            row.append(row[j - 1] + (row[j - 1] - previous[j - 1]) / (4 ** j - 1))
        previous = row
    return previous[-1]


def richardson_jacobian(f, x, h=1e-2, levels=3):
    """The Jacobian of ``f`` at the vector ``x``, one column per coordinate: central differences
    with the step ``h |x_i|`` (``h`` where ``x_i = 0``), Richardson-extrapolated
    (:func:`richardson`)."""
    x = np.asarray(x, dtype=float)
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = 1.0
        cols.append(richardson(lambda s, e=e: (np.asarray(f(x + s * e)) - np.asarray(f(x - s * e)))
                               / (2 * s), h * (abs(x.flat[i]) or 1.0), levels))
    return np.stack(cols, axis=-1)


def richardson_second(f, x, v, h=1e-2, levels=3):
    """``d^2/ds^2 f(x + s v)`` at ``s = 0`` for a scalar ``f``: the central second difference,
    Richardson-extrapolated (:func:`richardson`)."""
    x, v = np.asarray(x, dtype=float), np.asarray(v, dtype=float)
    f0 = float(f(x))
    return float(richardson(lambda s: (float(f(x + s * v)) - 2 * f0 + float(f(x - s * v))) / s ** 2,
                            h, levels))


def normwise_error(got, want):
    """``||got - want|| / ||want||`` (Frobenius), after checking that the shapes agree: one
    number for a whole Jacobian, its small entries judged at the scale of its large ones."""
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert got.shape == want.shape, (got.shape, want.shape)
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))

"""Functions written once for JAX and for dualad (each takes the NumPy namespace
``xp`` it computes with), and their points: ``tests/reverse/make_jax_golden.py``
records what JAX computes of them, and ``tests/reverse/test_rev_jax_golden.py``
checks dualad against those numbers."""

from __future__ import annotations

TRAJECTORY_POINT = [0.5, 0.1]


def trajectory(xp, params, steps=60):
    """An SIR epidemic's (steps, 3) trajectory: 180 outputs of 2 parameters."""
    beta, gamma = params[0], params[1]
    s, i, r = 0.99, 0.01, 0.0
    rows = []
    for _ in range(steps):
        infected, recovered = beta * s * i, gamma * i
        s, i, r = s - infected, i + infected - recovered, r + recovered
        rows.append(xp.stack([s, i, r]))
    return xp.stack(rows)


TWO_ARGS_POINT = ([0.3, -1.2, 2.0], 0.7)


def two_args(xp, w, b):
    """A pytree output of two arguments."""
    return {"y": xp.tanh(w * b), "s": xp.sum(w ** 2) * xp.sin(b)}

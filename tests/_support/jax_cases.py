"""Functions written once for JAX and for dualad (each takes the NumPy namespace
``xp`` it computes with), and their points: ``tests/reverse/make_jax_golden.py``
records what JAX computes of them, and ``tests/reverse/test_rev_jax_golden.py``
checks dualad against those numbers."""

from __future__ import annotations

from benchmarks.common import sir_trajectory

TRAJECTORY_POINT = [0.5, 0.1]


def trajectory(xp, params, steps=60):
    """``benchmarks.common.sir_trajectory``: 180 outputs of 2 parameters."""
    return sir_trajectory(params, steps, xp)


TWO_ARGS_POINT = ([0.3, -1.2, 2.0], 0.7)


def two_args(xp, w, b):
    """A pytree output of two arguments."""
    return {"y": xp.tanh(w * b), "s": xp.sum(w ** 2) * xp.sin(b)}


# A custom rule given only as a JVP (JAX's custom_jvp): softplus, whose naive
# derivative exp(x) / (1 + exp(x)) is NaN at x = 1000, and a rule of two inputs
# and two outputs. Each ``*_jvp(xp, primals, tangents)`` returns the output
# tangents; JAX transposes it for reverse mode, as dualad must.
SOFTPLUS_POINT = [-3.0, 0.0, 2.0, 40.0, 1000.0]


def softplus(xp, x):
    return xp.logaddexp(0.0, x)


def softplus_jvp(xp, primals, tangents):
    (x,), (t,) = primals, tangents
    return t / (1.0 + xp.exp(-x))


POLAR_POINT = ([1.0, -0.5, 2.0], [0.3, 1.2, -2.0])


def polar(xp, r, theta):
    return r * xp.cos(theta), r * xp.sin(theta)


def polar_jvp(xp, primals, tangents):
    (r, theta), (dr, dtheta) = primals, tangents
    c, s = xp.cos(theta), xp.sin(theta)
    return c * dr - r * s * dtheta, s * dr + r * c * dtheta


def polar_loss(xp, polar_fn, r, theta):
    x, y = polar_fn(r, theta)
    return xp.sum(x * y ** 2 + xp.tanh(x))

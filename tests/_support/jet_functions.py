"""Functions for comparing ``dualad.jet`` with ``jax.experimental.jet``, written once
against an array namespace ``xp`` (``jax.numpy`` or NumPy), with a fixed draw of
inputs each (see tests/dualad/forward/make_jax_jet_golden.py). Every function uses
only primitives that JAX's jet has a rule for."""

import numpy as np

ORDER = 4

FUNCTIONS = {
    "sin_exp": lambda xp, x: xp.sin(x) * xp.exp(x),
    "log_quotient": lambda xp, x: xp.log(1.0 + x * x) / (2.0 + xp.cos(x)),
    "tanh_sqrt": lambda xp, x: xp.tanh(xp.sqrt(x) - 1.0),
    "power": lambda xp, x: x ** 3.5 - 2.0 * x ** 3,
    "matmul_sum": lambda xp, x: xp.sum(xp.exp(xp.reshape(x, (2, 2)) @ xp.reshape(x, (2, 2)).T),
                                       axis=0),
    "two_args": lambda xp, x, y: xp.exp(x * y) + xp.sin(x) / y,
}


def inputs(name):
    """The primals and the ORDER terms of each argument of FUNCTIONS[name] (a fixed draw)."""
    rng = np.random.default_rng(sum(map(ord, name)))
    nargs = FUNCTIONS[name].__code__.co_argcount - 1
    primals = [rng.uniform(0.5, 1.5, 4) for _ in range(nargs)]
    series = [[rng.standard_normal(4) for _ in range(ORDER)] for _ in range(nargs)]
    return primals, series

"""The small problems the optimizer tests run on, with their gradients in plain NumPy.

The losses are written once for ``reverse`` and PyTorch alike: ``lib`` is
:data:`REVERSE` by default, or the namespace of the same names for PyTorch
that ``_support.optim_cases.torch_lib`` builds.
"""

from types import SimpleNamespace

import numpy as np

import reverse
from dualad import ops

REVERSE = SimpleNamespace(tensor=reverse.Tensor, sin=ops.sin, optim=reverse.optim, clip=reverse.optim)

A = np.array([[3.0, 0.5], [0.5, 1.0]])
B = np.array([1.0, -2.0])
X0 = np.array([0.7, -1.3])
U0 = np.array([0.5, 1.5, -1.0])
ROSENBROCK_X0 = np.array([-1.2, 1.0, -0.5, 0.8])


def dtype_name(x) -> str:
    """"float32" or "float64", for a Tensor of either library."""
    return str(x.dtype).removeprefix("torch.")


def loss(x, lib=REVERSE):
    """A convex quadratic with a sine bump (gradients change along the path), in x's dtype."""
    a, b = (lib.tensor(c.astype(dtype_name(x))) for c in (A, B))
    return 0.5 * (x @ (a @ x)) - b @ x + 0.1 * lib.sin(x).sum()


def grad_np(x):
    a, b = A.astype(x.dtype), B.astype(x.dtype)
    return a @ x - b + x.dtype.type(0.1) * np.cos(x)


def joint_loss(w, u, lib=REVERSE):
    """``loss(w)`` coupled to a second parameter ``u``: for parameter groups."""
    return loss(w, lib) + (u * u * w[0]).sum()


def rosenbrock(x):
    return (100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2).sum()


def rosenbrock_grad_np(x):
    g = np.zeros_like(x)
    r = x[1:] - x[:-1] ** 2
    g[:-1] = -400.0 * x[:-1] * r - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * r
    return g

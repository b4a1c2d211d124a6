"""SciPy's solvers, differentiable: ``dualad.scipy.optimize``, ``dualad.scipy.sparse.linalg``,
``dualad.scipy.integrate`` (``solve_ivp``, whose derivative solves an ODE too) and
``dualad.scipy.linalg`` (``solve_triangular``, ``cho_factor``, ``cho_solve``).

Each function has SciPy's signature and calls SciPy for the solve itself, so its
numbers are SciPy's; what it adds is the derivative of the solution, with respect to
every value the function (``fun``, ``matvec``), its ``args`` and the matrix close
over, in every mode (``reverse.grad``, ``jvp``/``jacfwd``, ``mixed.hvp``, ``vmap``,
``jit``). The derivative comes from the implicit function theorem, one linear solve
with the Jacobian of the condition the solution satisfies (``dualad.custom_root``,
``dualad.custom_linear_solve``), never from SciPy's iterations. Where SciPy reports
that it did not converge, or that Jacobian is singular at the solution, taking the
derivative raises an error that says so.

SciPy is imported when a function is first called (``pip install scipy``, or
``pip install dualad[scipy]``); importing this package does not need it.

Examples
--------
>>> import numpy as np
>>> import reverse
>>> from dualad.scipy import optimize
>>> def x_star(a):   # the root of x**3 + x - a
...     return optimize.root(lambda x: x ** 3 + x - a, np.zeros(1), tol=1e-12).x[0]
>>> round(float(reverse.grad(x_star)(2.0)), 10)   # 1 / (3 x*^2 + 1) at x* = 1
0.25
"""

import importlib

__all__ = ["integrate", "linalg", "optimize", "sparse"]


def __getattr__(name: str):
    if name in __all__:
        return importlib.import_module(f"dualad.scipy.{name}")
    raise AttributeError(f"module 'dualad.scipy' has no attribute {name!r}")

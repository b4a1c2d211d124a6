"""Sensitivities of solutions: derivatives of SciPy's root, minimize and spsolve.

Three small models whose outputs are solutions, each differentiated with
``dualad.scipy`` (SciPy solves; the derivative is one linear solve at the
solution, by the implicit function theorem) and checked against central
differences of the SciPy solve:

- an equilibrium: how market prices move with demand (``optimize.root``);
- a bilevel fit: the validation error's slope in a regularization weight,
  through the inner ``optimize.minimize``;
- a 2-D Poisson problem: the gradient of a flux with respect to the
  conductivities (the matrix's entries) through ``sparse.linalg.spsolve``.

Run it with ``python examples/sensitivities_of_solutions.py [--grid 60]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.sparse

import dualad
import reverse
from dualad.scipy import optimize
from dualad.scipy.sparse import csr_array
from dualad.scipy.sparse.linalg import spsolve


def prices(a: np.ndarray) -> np.ndarray:
    """Prices where a cubic supply meets a linear demand a - B x."""
    b = np.array([[2.0, 0.5], [0.3, 1.5]])
    return optimize.root(lambda x: x ** 3 + x - (a - b @ x), np.ones(2), tol=1e-12).x


T = np.linspace(0.0, 1.0, 12)
Y = np.sin(3.0 * T)
FEATURES = np.stack([T ** k for k in range(5)], axis=1)


def validation_error(lam: float) -> float:
    """Fit weights on the even points with ridge weight lam; the error on the odd points."""
    def loss(w):
        r = FEATURES[::2] @ w - Y[::2]
        return (r ** 2).sum() + lam * (w ** 2).sum()
    w = optimize.minimize(loss, np.zeros(5), method="BFGS", jac=lambda w: reverse.grad(loss)(w),
                          options={"gtol": 1e-8}).x
    return ((FEATURES[1::2] @ w - Y[1::2]) ** 2).sum()


def conductance_matrix(m: int) -> scipy.sparse.csr_array:
    t = scipy.sparse.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))
    return scipy.sparse.csr_array(scipy.sparse.kronsum(t, t).tocsr())


def central(f, x, v, h=1e-5):
    return (f(x + h * v) - f(x - h * v)) / (2 * h)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid", type=int, default=60, help="Poisson grid side (unknowns: grid**2)")
    m = parser.parse_args().grid

    a = np.array([4.0, 3.0])
    jac = dualad.jacfwd(prices)(a)
    fd = np.stack([central(prices, a, e) for e in np.eye(2)], axis=1)
    print(f"equilibrium prices {prices(a)}, d prices / d demand:\n{jac}\n"
          f"  max difference to central differences {np.abs(jac - fd).max():.1e}")

    g = reverse.grad(validation_error)(0.1)
    print(f"bilevel fit: d(validation error)/d(lambda) = {g:.6f}, central differences "
          f"{central(validation_error, 0.1, 1.0, 1e-4):.6f}")

    A = conductance_matrix(m)
    b = np.ones(A.shape[0])

    def flux(data):
        return spsolve(csr_array((data, A.indices, A.indptr), shape=A.shape), b).sum()
    start = time.perf_counter()
    flux(A.data)
    solve_time = time.perf_counter() - start
    start = time.perf_counter()
    gdata = reverse.grad(flux)(A.data)
    grad_time = time.perf_counter() - start
    v = np.cos(np.arange(A.nnz))
    print(f"Poisson, {A.shape[0]} unknowns: gradient in {A.nnz} entries, <g, v> = {gdata @ v:.6f}, "
          f"central differences {central(flux, A.data, v):.6f}; solve {solve_time * 1e3:.1f} ms, "
          f"solve + gradient {grad_time * 1e3:.1f} ms")


if __name__ == "__main__":
    main()

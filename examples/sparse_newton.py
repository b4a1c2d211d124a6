"""Newton's method on 1e5 variables with an exact sparse Hessian (``mixed.SparseHessian``).

The problem is a convex, Bratu-like energy on a ``side x side`` grid,

    E(u) = sum 1/2 |grad u|^2 + h^2 (exp(u) - s u),

whose minimizer solves the nonlinear PDE ``-lap u + exp(u) = s``. Its Hessian
is the 5-point Laplacian plus a diagonal: ``mixed.SparseHessian`` finds that
pattern by tracing ``energy`` once, colours it with 5 colours, and then forms
the exact Hessian at each iterate from 5 Hessian-vector products. Each Newton
step solves ``H p = -g`` with ``scipy.sparse.linalg.spsolve`` and takes the
longest step of ``1, 1/2, 1/4, ...`` that decreases E::

    python examples/sparse_newton.py --side 316          # 99,856 variables
    python examples/sparse_newton.py --method trust-constr --side 100

``--method trust-constr`` hands the same Hessian to ``scipy.optimize.minimize``
as ``hess=`` (``mixed.scipy.hess``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.optimize import minimize
from scipy.sparse.linalg import spsolve

import reverse
from mixed import SparseHessian
from mixed.scipy import hess, jac


def make_energy(side: int):
    """E(u) for ``u`` the grid's values in C order, with the source ``s`` a bump."""
    h = 1.0 / (side + 1)
    t = np.linspace(h, 1.0 - h, side)
    source = (50.0 * np.exp(-50.0 * ((t[:, None] - 0.5) ** 2 + (t[None, :] - 0.5) ** 2))).ravel()

    def energy(x):
        u = x.reshape(side, side)
        gradient = ((u[1:, :] - u[:-1, :]) ** 2).sum() + ((u[:, 1:] - u[:, :-1]) ** 2).sum()
        boundary = (u[0] ** 2).sum() + (u[-1] ** 2).sum() + (u[:, 0] ** 2).sum() + (u[:, -1] ** 2).sum()
        return 0.5 * (gradient + boundary) + h * h * (np.exp(x) - source * x).sum()
    return energy


def newton(energy, x, tol=1e-10, maxiter=30, out=print):
    """Newton's method with backtracking; returns the solution and the iterations taken.

    Examples
    --------
    >>> x, it = newton(make_energy(8), np.zeros(64), out=lambda *a: None)
    >>> it <= 6, bool(np.linalg.norm(reverse.grad(make_energy(8))(x)) < 1e-10)
    (True, True)
    """
    grad = reverse.grad(energy)
    start = time.perf_counter()
    H = SparseHessian(energy, x)
    out(f"pattern: {H.pattern.nnz:,} nonzeros, {H.n_colors} colours "
        f"(detection and colouring {time.perf_counter() - start:.2f} s)")
    e = energy(x)
    for it in range(maxiter + 1):
        g = grad(x)
        gnorm = float(np.linalg.norm(g))
        out(f"  iteration {it:2d}  E = {e: .12e}  |g| = {gnorm:.2e}")
        if gnorm < tol:
            return x, it
        tic = time.perf_counter()
        h = H(x)
        t_hessian = time.perf_counter() - tic
        tic = time.perf_counter()
        p = spsolve(h.tocsc(), -g)
        t_solve = time.perf_counter() - tic
        step = 1.0
        while energy(x + step * p) >= e and step > 1e-8:
            step *= 0.5
        x = x + step * p
        e = energy(x)
        out(f"      Hessian {t_hessian * 1e3:7.1f} ms, spsolve {t_solve * 1e3:7.1f} ms, step {step:g}")
    return x, maxiter


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--side", type=int, default=316, help="grid side (side**2 variables)")
    parser.add_argument("--method", choices=("newton", "trust-constr"), default="newton")
    args = parser.parse_args(argv)
    energy = make_energy(args.side)
    x0 = np.zeros(args.side * args.side)
    f0 = energy(x0)
    t_f = min(_timed(energy, x0) for _ in range(5))
    print(f"{x0.size:,} variables; E(0) = {f0:.6e}; one E costs {t_f * 1e3:.2f} ms")
    tic = time.perf_counter()
    if args.method == "newton":
        x, it = newton(energy, x0)
    else:
        r = minimize(energy, x0, jac=jac(energy), hess=hess(energy), method="trust-constr",
                     options={"gtol": 1e-10, "maxiter": 200})
        x, it = r.x, r.nit
        print(f"trust-constr: {r.message}")
    total = time.perf_counter() - tic
    g = reverse.grad(energy)(x)
    print(f"{args.method}: {it} iterations in {total:.2f} s ({total / t_f:,.0f} E); "
          f"E = {energy(x):.12e}, |g| = {np.linalg.norm(g):.2e}, max u = {x.max():.6f}")
    return {"x": x, "iterations": it, "grad_norm": float(np.linalg.norm(g)), "energy": float(energy(x))}


def _timed(fn, x) -> float:
    tic = time.perf_counter()
    fn(x)
    return time.perf_counter() - tic


if __name__ == "__main__":
    main()

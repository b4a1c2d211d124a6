"""The implicit derivative of a solution beside JAX's, on ``bench_solutions``'s problems (issue 37).

``python -m benchmarks.solution_peers`` (``--n 50 200``): the root of
``F(x) = x^3 + A x - p`` and the minimizer of the quartic of ``bench_solutions``, ``n``
unknowns and ``n`` parameters ``p``, differentiated as ``reverse.grad`` of ``sum(x*(p))``.

- dualad: SciPy's ``root`` (hybr, tol 1e-12) and ``minimize`` (BFGS with the exact
  gradient) through ``dualad.scipy.optimize``, eager and under ``dualad.jit`` (settled:
  past its choice of how its calls run); the forward solve is SciPy's on plain arrays.
- JAX (``jax.jit``): ``jax.lax.custom_root`` around Newton's method (a dense solve with
  the Jacobian or Hessian per step, to 1e-12), its ``tangent_solve`` a dense solve with
  the materialized Jacobian: the same implicit rule as dualad's, on a solve that runs
  inside XLA; and optimistix's ``root_find`` (Newton) and ``minimise`` (BFGS), whose
  default adjoint is the implicit one too.

Each row: the forward solve and the gradient (best of several calls after a warm-up;
XLA's compile excluded), what the derivative adds over the library's own solve
(``(gradient - solve) / solve``, the issue's measure, target <= 0.1), and the gradient's
largest difference to dualad's eager one, relative to its largest entry (each taken
after the timed calls: a compiled gradient's replay). A library that is not
installed is skipped. The figures are in benchmarks/README.md ("Sensitivities of
solutions").
"""

from __future__ import annotations

import argparse

import numpy as np

from .bench_solutions import ImplicitBackward, _matrix
from .common import peer_gradients

NEWTON_STEPS = 50  # an upper bound: JAX's Newton stops at |F| <= 1e-12 (3-8 steps here)


def dualad_rows(problem: str, n: int) -> dict:
    import reverse

    bench = ImplicitBackward()
    bench.setup(problem, n)
    grad = reverse.grad(lambda p: bench.solve(p).sum())
    return {"dualad (SciPy), eager": (bench.forward, lambda: grad(bench.p)),
            "dualad (SciPy), dualad.jit": (bench.forward, bench.compiled_gradient())}


def _jax_problem(problem: str, n: int):
    """JAX's residual ``F(x, p)`` (the objective's gradient for ``minimize``) and ``p``."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    p = jnp.linspace(0.5, 1.5, n)
    if problem == "root":
        a = jnp.asarray(_matrix(n))
        return (lambda x, q: x ** 3 + a @ x - q), None, p

    def objective(x, q):
        d = x[1:] - x[:-1]
        return jnp.sum((x - q) ** 4) / 4.0 + jnp.sum(x ** 2) / 2.0 + jnp.sum(d ** 2) / 2.0
    return jax.grad(objective), objective, p


def jax_rows(problem: str, n: int) -> dict:
    import jax
    import jax.numpy as jnp

    residual, _, p = _jax_problem(problem, n)

    def newton(f, x0):
        def step(state):
            x, i = state
            return x - jnp.linalg.solve(jax.jacfwd(f)(x), f(x)), i + 1

        def going(state):
            x, i = state
            return (jnp.max(jnp.abs(f(x))) > 1e-12) & (i < NEWTON_STEPS)
        return jax.lax.while_loop(going, step, (x0, 0))[0]

    def tangent_solve(g, y):
        return jnp.linalg.solve(jax.jacfwd(g)(y), y)

    def solution(q):
        return jax.lax.custom_root(lambda x: residual(x, q), jnp.zeros(n), newton, tangent_solve)
    forward = jax.jit(solution)
    gradient = jax.jit(jax.grad(lambda q: jnp.sum(solution(q))))
    return {"JAX custom_root + Newton (jax.jit)": (lambda: forward(p).block_until_ready(),
                                                  lambda: np.asarray(gradient(p)))}


def optimistix_rows(problem: str, n: int) -> dict:
    import jax
    import jax.numpy as jnp
    import optimistix

    residual, objective, p = _jax_problem(problem, n)
    if problem == "root":
        solver = optimistix.Newton(rtol=1e-12, atol=1e-12)

        def solution(q):
            return optimistix.root_find(residual, solver, jnp.zeros(n), args=q, max_steps=256).value
        name = "optimistix root_find, Newton (jax.jit)"
    else:
        solver = optimistix.BFGS(rtol=1e-10, atol=1e-10)

        def solution(q):
            return optimistix.minimise(objective, solver, jnp.zeros(n), args=q, max_steps=1024).value
        name = "optimistix minimise, BFGS (jax.jit)"
    forward = jax.jit(solution)
    gradient = jax.jit(jax.grad(lambda q: jnp.sum(solution(q))))
    return {name: (lambda: forward(p).block_until_ready(), lambda: np.asarray(gradient(p)))}


PEERS = (dualad_rows, jax_rows, optimistix_rows)


def run(problem: str, n: int) -> list:
    rows, want = [], None
    for name, f, g, got in peer_gradients(PEERS, problem, n, repeat=20):
        want = got if want is None else want  # dualad's eager gradient, the first row
        difference = np.abs(got - want).max() / np.abs(want).max()
        rows.append((problem, n, name, f, g, difference))
        print(f"| `{problem}` | {n} | {name} | {f * 1e3:.3g} | {g * 1e3:.3g} | "
              f"{(g - f) / f:.2f} | {difference:.1e} |", flush=True)
    return rows

def main(argv: list | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[50, 200], help="unknowns")
    parser.add_argument("--problems", nargs="+", default=["root", "minimize"],
                        choices=["root", "minimize"])
    args = parser.parse_args(argv)
    print("| problem | unknowns | library | forward solve ms | gradient ms | "
          "(gradient - solve) / solve | difference to dualad's |\n"
          "| --- | --- | --- | --- | --- | --- | --- |")
    for problem in args.problems:
        for n in args.n:
            run(problem, n)


if __name__ == "__main__":
    main()

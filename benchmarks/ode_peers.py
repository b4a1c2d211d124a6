"""``solve_ivp``'s gradient beside torchdiffeq's and diffrax's, on the same neural ODE (issue 37).

``python -m benchmarks.ode_peers`` (``--n 3 31``): the problem of ``bench_ode.py``,
``y' = -y + tanh(W y + b)`` of n states and the gradient of ``sum(y(t_i)^2)`` at 20 times
with respect to ``(W, b)``, by Dormand-Prince 5(4) (SciPy's RK45, torchdiffeq's ``dopri5``,
diffrax's ``Dopri5``) at rtol 1e-6 and atol 1e-9, float64, one CPU thread. Each library's
gradient over its own forward solve, the times the best of several calls after a warm-up
(``jax.jit``'s compile excluded), and each gradient's largest difference to dualad's,
relative to its largest entry (the step-size controllers differ, so they agree to about
the tolerances). A library that is not installed is skipped.
"""

from __future__ import annotations

import argparse

import numpy as np

from .bench_ode import T_EVAL, TOLERANCES, _NeuralOde
from .common import peer_gradients

T_END = 10.0


def dualad_rows(problem: _NeuralOde) -> dict:
    return {"dualad (SciPy RK45)": (problem.forward_solve, problem.gradient)}


def torchdiffeq_rows(problem: _NeuralOde) -> dict:
    import torch
    import torchdiffeq

    torch.set_num_threads(1)
    n = problem.n
    y0 = torch.tensor(problem.y0, dtype=torch.float64)
    times = torch.tensor([0.0, *T_EVAL], dtype=torch.float64)

    class Field(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.theta = torch.nn.Parameter(torch.tensor(problem.theta, dtype=torch.float64))

        def forward(self, t, y):
            return -y + torch.tanh(self.theta[:n * n].reshape(n, n) @ y + self.theta[n * n:])
    field = Field()

    def loss(solve):
        ys = solve(field, y0, times, method="dopri5", **TOLERANCES)
        return (ys[1:] ** 2).sum()

    def forward():
        with torch.no_grad():
            return float(loss(torchdiffeq.odeint))

    def gradient(solve):
        def run():
            field.theta.grad = None
            loss(solve).backward()
            return field.theta.grad.numpy().copy()
        return run
    return {"torchdiffeq, through the solver": (forward, gradient(torchdiffeq.odeint)),
            "torchdiffeq, adjoint": (forward, gradient(torchdiffeq.odeint_adjoint))}


def diffrax_rows(problem: _NeuralOde) -> dict:
    import jax

    jax.config.update("jax_enable_x64", True)
    import diffrax
    import jax.numpy as jnp

    n = problem.n
    y0 = jnp.asarray(problem.y0)

    def loss(theta):
        w, b = theta[:n * n].reshape(n, n), theta[n * n:]
        term = diffrax.ODETerm(lambda t, y, args: -y + jnp.tanh(w @ y + b))
        sol = diffrax.diffeqsolve(term, diffrax.Dopri5(), t0=0.0, t1=T_END, dt0=None, y0=y0,
                                  saveat=diffrax.SaveAt(ts=jnp.asarray(T_EVAL)),
                                  stepsize_controller=diffrax.PIDController(**TOLERANCES),
                                  max_steps=100_000)
        return jnp.sum(sol.ys ** 2)
    theta = jnp.asarray(problem.theta)
    forward, gradient = jax.jit(loss), jax.jit(jax.grad(loss))
    return {"diffrax (jax.jit)": (lambda: float(forward(theta)),
                                  lambda: np.asarray(gradient(theta)))}


PEERS = (dualad_rows, torchdiffeq_rows, diffrax_rows)


def run(n: int) -> list:
    problem = _NeuralOde()
    problem.setup(n)
    want = np.asarray(problem.gradient())
    rows = []
    for name, f, g, got in peer_gradients(PEERS, problem):
        difference = np.abs(got - want).max() / np.abs(want).max()
        rows.append((n, name, f, g, difference))
        print(f"| {n * n + n} | {name} | {f * 1e3:.3g} | {g * 1e3:.3g} | {g / f:.2f} | "
              f"{difference:.1e} |", flush=True)
    return rows

def main(argv: list | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[3, 31], help="states of the ODE")
    args = parser.parse_args(argv)
    print("| parameters | library | forward solve ms | gradient ms | gradient / forward | "
          "difference to dualad's |\n| --- | --- | --- | --- | --- | --- |")
    for n in args.n:
        run(n)


if __name__ == "__main__":
    main()

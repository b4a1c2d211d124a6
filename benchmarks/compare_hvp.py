"""Hessian-vector products side by side: ``mixed.hvp`` and its alternatives.

Not an asv benchmark (nothing here is named ``time_*``/``track_*``): a script
that times one HVP of the extended Rosenbrock function (``common.rosenbrock``)
at each size, in seconds and as a multiple of one plain NumPy evaluation of
the same function, for:

- ``mixed (for)``: ``mixed.hvp``, forward-over-reverse (the default);
- ``mixed (ror)``: ``mixed.hvp(..., mode="reverse-over-reverse")``;
- ``fd of grad``: ``(grad(x + h v) - grad(x - h v)) / 2h`` with the tape
  gradient (two gradients, and only ~sqrt(eps) accurate);
- ``hand-written``: ``scipy.optimize.rosen_hess_prod`` (what a person
  writes by hand; the floor);
- ``jax``, ``torch``, ``autograd``: the same workload in each peer library
  (forward-over-reverse where it has it), if that library is installed;
  a missing one is listed as such, never silently dropped.

Run from the repository root::

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.compare_hvp [--sizes 1000 100000]
"""

from __future__ import annotations

import argparse
import importlib.util
import platform
import timeit
from typing import Callable

import numpy as np

import reverse
from mixed import hvp

from .common import direction, rosenbrock, vector


def _best(fn: Callable, repeat: int = 5, sample_s: float = 0.05) -> float:
    timer = timeit.Timer(fn)
    number = 1
    while timer.timeit(number) < sample_s:
        number *= 2
    return min(timer.timeit(number) / number for _ in range(repeat))


def _ours(x, v) -> dict[str, Callable]:
    grad = reverse.grad(rosenbrock)
    h = 1e-6

    def fd():
        return (grad(x + h * v) - grad(x - h * v)) / (2 * h)

    from scipy.optimize import rosen_hess_prod
    return {
        "mixed (for)": lambda: hvp(rosenbrock, x, v),
        "mixed (ror)": lambda: hvp(rosenbrock, x, v, mode="reverse-over-reverse"),
        "fd of grad": fd,
        "hand-written": lambda: rosen_hess_prod(x, v),
    }


def _jax(x, v):
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)

    def f(x):
        return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    fn = jax.jit(lambda x, v: jax.jvp(jax.grad(f), (x,), (v,))[1])
    xj, vj = jnp.asarray(x), jnp.asarray(v)
    fn(xj, vj).block_until_ready()
    return lambda: fn(xj, vj).block_until_ready()


def _torch(x, v):
    import torch
    from torch.func import grad, jvp

    def f(x):
        return torch.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    xt, vt = torch.from_numpy(np.array(x)), torch.from_numpy(np.array(v))
    return lambda: jvp(grad(f), (xt,), (vt,))[1]


def _autograd(x, v):
    import autograd.numpy as anp
    from autograd import hessian_vector_product

    def f(x):
        return anp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    hvp_fn = hessian_vector_product(f)
    return lambda: hvp_fn(x, v)


PEERS = {"jax": _jax, "torch": _torch, "autograd": _autograd}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 100_000, 1_000_000])
    args = parser.parse_args(argv)

    missing = [name for name in PEERS if importlib.util.find_spec(name) is None]
    print(f"machine: {platform.machine()}; NumPy {np.__version__}; one HVP of rosenbrock; "
          f"seconds (multiple of one NumPy evaluation of f)")
    if missing:
        print(f"not installed, so not measured: {', '.join(missing)}")
    print()
    rows = {}
    for n in args.sizes:
        x, v = np.array(vector(n)), np.array(direction(n))
        t_f = _best(lambda x=x: rosenbrock(x))
        candidates = _ours(x, v)
        for name, make in PEERS.items():
            if name not in missing:
                candidates[name] = make(x, v)
        rows[n] = {name: _best(fn) for name, fn in candidates.items()}
        rows[n]["f"] = t_f
    names = [k for k in next(iter(rows.values())) if k != "f"]
    print("| n | " + " | ".join(names) + " |")
    print("| --- " * (len(names) + 1) + "|")
    for n, times in rows.items():
        cells = [f"{times[k]:.2e} ({times[k] / times['f']:.1f}x)" for k in names]
        print(f"| {n} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The same workloads in dualad and in every peer library installed, side by side.

Not an asv benchmark: a script, and nothing in it is named like one
(``time_*``, ``track_*``, ``mem_*``, ``peakmem_*``), so asv and
tests/test_benchmarks_smoke.py import it and find nothing to run. Peers
are imported only when the script runs; they are not project dependencies.

Libraries (columns). Each workload is written once, in ``common``, with the
functions of a namespace ``xp``; every library runs that one expression with
its own namespace (``jax.numpy``, ``torch``, ``autograd.numpy``, ``mygrad``;
num_dual's methods for ``g``):

- ``numpy``: the plain function, no AD (the baseline of every ratio);
- ``dualad``: ``dualad.jvp``, ``reverse.grad``, ``mixed.hvp`` (forward-over-reverse),
  ``mixed.hessian``, ``HyperDual``, ``mixed.newton_cg``;
- ``dualad.compile`` and ``dualad.compile[numba]``: the same under ``dualad.compile``,
  replayed by the NumPy executor and by the Numba one (``executor=``);
- ``jax`` (op by op, no ``jit``) and ``jax.jit``: ``jax.jvp``, ``jax.grad``,
  ``jax.jvp(jax.grad(f))``, ``jax.hessian``; float64 (``jax_enable_x64``);
- ``torch.func``: ``torch.func.jvp``, ``grad``, ``jvp(grad(f))``, ``hessian``;
- ``torch``: eager PyTorch: ``forward_ad`` dual tensors, ``.backward()``, double
  backward for H v, ``torch.autograd.functional.hessian``;
- ``torch.compile``: ADBench's problems only, compiled by ``torch.compile``;
- ``autograd`` (HIPS): ``make_jvp``, ``grad``, ``make_hvp`` (reverse-over-reverse), ``hessian``;
- ``mygrad``: ``.backward()`` (it has no forward mode and no H v);
- ``num_dual``: scalar second derivatives (``hessian`` with its dual2 numbers, ``HyperDual64``).

Workloads (rows):

- ``chain``: ``common.op_chain``, 200 elementwise operations (``sin`` and
  ``* 1.5`` alternating) and a sum on arrays of size 1 and 16: ``f`` and
  record + backward (``grad``); also printed in microseconds per operation;
- ``rosenbrock`` (``common.rosenbrock``) and ``mlp`` (``common.mlp_loss``, a tanh
  MLP with widths ``common.mlp_widths(N)``, batch 256, softmax cross-entropy,
  gradients with respect to the six weight arrays) at N = 1e3, 1e5, 1e6
  (and 784-256-256-10, N = 269,322): ``f``, ``jvp``, ``grad``, ``hvp``;
- ``hessian50``: the dense Hessian of ``common.tanh_rosenbrock``, ``sum(tanh(A x)**2) +
  rosenbrock(x)``, x in R^50;
- ``scalar``: value, gradient and Hessian of ``common.g(x, y) = exp(xy) sin(x) /
  (1 + y^2) + log(1 + x^2)`` at two floats (``vgh``), and one hyper-dual
  evaluation (``hyperdual``); the baseline is the ``math``-module ``g``;
- ``newton``: Rosenbrock, n = 1000, from 0.5 * ones until the gradient's 2-norm
  is at most 1e-8: ``scipy.optimize.minimize(method="Newton-CG")`` with each
  library's gradient and H v (baseline: SciPy's hand-written ``rosen_der`` and
  ``rosen_hess_prod``), and ``mixed.newton_cg`` (row ``mixed.newton_cg``, op ``own``).
  A solve that stops short of the tolerance is printed;
- ``gmm``, ``ba``, ``hand``, ``lstm``: ADBench's problems (``benchmarks/adbench``, the
  data of each size made by its generator), in dualad eager and under ``dualad.jit`` (the
  ``dualad.compile[auto]`` column), ``jax.jit``, ``torch`` and ``torch.compile``, each
  with its library's namespace (a shim of NumPy's names for torch): ``objective``, then
  ``gradient`` (GMM, LSTM) or the Jacobian (BA: as a CSR matrix, ``jacobian`` from
  ``vmap(jacfwd)`` blocks over observations in every library; hand tracking, simple and
  complicated at each size: ``jacobian`` by ``jacfwd`` of the 26 ``theta``, and for
  complicated ``vmap(jacfwd)`` of each point's two ``us``, in every library; both:
  ``sparse jacobian`` from dualad's ``sparse_jacfwd``, checked against dualad's
  ``jacobian``). Every result is
  checked to ``ADBENCH_RTOL`` = 1e-10 of dualad's; each derivative over the same
  library's objective is printed below the table. ``--quick`` runs the smallest size.
  Cells a library leaves out on purpose are printed as ``not run:`` with the reason.

Every cell is "library time / baseline time [dualad time / library time]";
a bracket below 1 means dualad is faster. Each library's result is checked
against dualad's before it is timed (a mismatch is printed, never hidden).
Times are the fastest of interleaved samples (all libraries of a row take
turns), as in ``common.speed_ratio``.

Run from the repository root, with single-threaded BLAS (on the 2-CPU VM a
threaded BLAS is pathological; ``--threads`` also sets torch's and XLA's, and
on Linux pins the process to that many CPUs, because XLA's CPU runtime ran
its matrix products on 1.8 cores with its thread flags set to one)::

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 python -m benchmarks.compare
    ... python -m benchmarks.compare --quick                  # N <= 1e5, fewer samples
    ... python -m benchmarks.compare --device cuda            # CuPy / JAX-GPU / torch-cuda, N up to 1e8

Results go to ``--out`` (default ``benchmarks/compare_results/``): ``compare.json``,
``compare.md`` (the table) and ``compare.png`` (cost ratio against N, if
matplotlib is installed).
"""

from __future__ import annotations

import argparse
import functools
import importlib.metadata
import importlib.util
import json
import math
import os
import platform
import sys
import time
import timeit
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

import numpy as np

from .adbench import ba as _ba
from .adbench import gmm as _gmm
from .adbench import hand as _hand
from .adbench import lstm as _lstm
from .common import CHAIN_OPS as _CHAIN_OPS
from .common import (
    MLP_WIDTHS,
    calling,
    g,
    g_math,
    hyperdual_value_grad_hessian,
    mlp_classifier,
    mlp_loss,
    mlp_size,
    mlp_widths,
    op_chain,
    rosenbrock,
    settle,
    square_matrix,
    tanh_rosenbrock,
    vector,
)
from .common import direction as _direction

OPS = ("f", "jvp", "grad", "hvp")
CPU_SIZES = [1_000, 100_000, 1_000_000]
QUICK_SIZES = [1_000, 100_000]
MLP_EXTRA = [mlp_size(MLP_WIDTHS)]  # 784-256-256-10, added to the MLP sizes on CPU (not --quick)
CUDA_SIZES = [1_000, 100_000, 1_000_000, 10_000_000, 100_000_000]
CHAIN_SIZES = [1, 16]
HESSIAN_N = 50
NEWTON_N, NEWTON_TOL = 1000, 1e-8
SCALAR_AT = (0.5, -0.7)
DEFAULT_OUT = Path(__file__).resolve().parent / "compare_results"
_BLAS_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
# ADBench's problems (benchmarks/adbench): the ops of each, and how close every library's
# result must be to dualad's (relative to its largest number)
ADBENCH_OPS = {"gmm": ("objective", "gradient"), "ba": ("objective", "jacobian", "sparse jacobian"),
               "hand": ("objective", "jacobian", "sparse jacobian"), "lstm": ("objective", "gradient")}
ADBENCH_RTOL = 1e-10
JAX_LSTM_CHARACTERS = 128  # jax.jit's LSTM objective is compiled up to this many characters
SPARSE_UNDER_JIT = ("dualad.jit(sparse_jacfwd(f)) refuses its traced point (TypeError: x must be a 1-d "
                    "floating NumPy array, got Tracer); sparse_jacfwd compiles its own pass from its "
                    "second call, so the dualad column is that replay")
NOT_RUN: list[str] = []  # "library: workload what: why", for cells left out on purpose


def not_run(library: str, workload: str, what: str, why: str) -> None:
    """Say why a library leaves a cell of a row out (printed and saved with the table)."""
    line = f"{library}: {workload} {what}: {why}"
    if line not in NOT_RUN:
        NOT_RUN.append(line)


# -- the device: where arrays live and how to wait for them -----------------------------
class Device:
    """``cpu`` (NumPy) or ``cuda`` (CuPy); ``sync`` waits for queued kernels."""

    def __init__(self, name: str):
        self.name = name
        if name == "cpu":
            self.xp, self.sync = np, (lambda: None)
            return
        try:
            import cupy
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:  # ImportError, or CUDA errors without a driver
            raise SystemExit(f"--device cuda needs CuPy and an NVIDIA GPU "
                             f"(pip install '.[gpu]'); here: {type(exc).__name__}: {exc}") from None
        if count < 1:
            raise SystemExit("--device cuda: CuPy is installed but sees no CUDA device")
        self.xp = cupy
        self.sync = cupy.cuda.Device().synchronize

    def put(self, tree: Any) -> Any:
        return _tree_map(lambda a: self.xp.asarray(a), tree)

    def mlp(self, loss: Callable, params: tuple, v: tuple) -> tuple:
        """``common.mlp_classifier``'s ``(loss, params, v)`` with every array on this device."""
        if self.name == "cpu":
            return loss, params, v
        from .common import mlp_loss

        inputs, targets = self.put(loss.inputs), self.put(loss.targets)

        def on_device(params):
            return mlp_loss(params, inputs, targets)

        return on_device, self.put(params), self.put(v)


def _tree_map(fn: Callable, tree: Any) -> Any:
    if isinstance(tree, (tuple, list)):
        return type(tree)(_tree_map(fn, t) for t in tree)
    return fn(tree)


def _to_numpy(obj: Any) -> np.ndarray:
    """Any library's result (arrays, tensors, scalars, nested tuples) as one flat float array."""
    if isinstance(obj, (tuple, list)):
        parts = [_to_numpy(o) for o in obj]
        return np.concatenate(parts) if parts else np.zeros(0)
    if hasattr(obj, "tocoo"):  # a SciPy sparse matrix: its stored values, row by row
        coo = obj.tocoo()
        return np.asarray(coo.data, dtype=np.float64)[np.lexsort((coo.col, coo.row))]
    if hasattr(obj, "detach"):  # torch
        obj = obj.detach().cpu().numpy()
    elif hasattr(obj, "get") and type(obj).__module__.startswith("cupy"):
        obj = obj.get()
    elif type(obj).__module__.startswith("mygrad"):
        obj = obj.data
    return np.asarray(obj, dtype=np.float64).ravel()


# -- the libraries ----------------------------------------------------------------------
class Library:
    """One column. A workload method returns ``{op: callable}``; a missing op is "-".

    Workload methods get NumPy arrays and put them where the library computes
    (``Device.put`` for NumPy/CuPy code, ``put`` of each peer). Each callable
    runs one computation and waits for it (``block_until_ready``, device
    synchronisation), and returns the derivative it computed (for ``jvp``,
    the tangent) so it can be checked against dualad's.
    """

    name = ""
    modules: tuple = ()
    devices = ("cpu",)

    def __init__(self, device: Device, threads: int):
        self.device = device


class NumPy(Library):
    """The plain functions of ``common``: NumPy arrays, or CuPy arrays with ``--device cuda``."""

    name = "numpy"
    devices = ("cpu", "cuda")

    def __init__(self, device, threads):
        super().__init__(device, threads)
        self.name = "cupy" if device.name == "cuda" else "numpy"

    def rosenbrock(self, x, v):
        x = self.device.put(x)
        return {"f": lambda: _synced(self.device, rosenbrock, x)}

    def mlp(self, loss, params, v):
        loss, params, _ = self.device.mlp(loss, params, v)
        return {"f": lambda: _synced(self.device, loss, params)}

    def chain(self, x):
        x = self.device.put(x)
        return {"f": lambda: _synced(self.device, op_chain, x)}

    def hessian50(self, f, x):
        return {"f": lambda: f(x)}

    def scalar(self, x, y):
        return {"vgh": lambda: g_math(x, y), "hyperdual": lambda: g_math(x, y)}

    def newton(self):
        from scipy.optimize import rosen_der, rosen_hess_prod
        return rosen_der, rosen_hess_prod

    def gmm(self, inp):
        return {"f": lambda: _gmm.objective(inp)}

    def ba(self, inp):
        return {"f": lambda: _ba.objective(inp)}

    def hand(self, inp):
        return {"f": lambda: _hand.objective(inp)}

    def lstm(self, inp):
        return {"f": lambda: _lstm.objective(inp)}


def _synced(device: Device, fn: Callable, *args):
    out = fn(*args)
    device.sync()
    return out


class Dualad(Library):
    name = "dualad"
    devices = ("cpu", "cuda")

    def __init__(self, device, threads):
        super().__init__(device, threads)
        import dualad
        import mixed
        import reverse
        self.dualad, self.reverse, self.mixed = dualad, reverse, mixed

    def _vector_ops(self, f, x, v):
        d, sync = self, self.device.sync
        grad = d.reverse.grad(f)

        def jvp():
            out = d.dualad.jvp(f, (x,), (v,))[1]
            sync()
            return out

        def gradient():
            out = grad(x)
            sync()
            return out

        def hvp():
            out = d.mixed.hvp(f, x, v)
            sync()
            return out
        return {"jvp": jvp, "grad": gradient, "hvp": hvp}

    def rosenbrock(self, x, v):
        return self._vector_ops(rosenbrock, self.device.put(x), self.device.put(v))

    def mlp(self, loss, params, v):
        return self._vector_ops(*self.device.mlp(loss, params, v))

    def chain(self, x):
        grad, x = self.reverse.grad(op_chain), self.device.put(x)
        return {"grad": lambda: _synced(self.device, grad, x)}

    def hessian50(self, f, x):
        return {"hessian": lambda: self.mixed.hessian(f)(x),
                "hessian (hyper-dual)": lambda: self.dualad.hessian(f)(x)}

    def scalar(self, x, y):
        hx = self.dualad.HyperDual(x, 1.0, 0.0, 0.0)
        hy = self.dualad.HyperDual(y, 0.0, 1.0, 0.0)

        def hyperdual():
            out = g(hx, hy)
            return out.primal, out.eps1, out.eps2, out.eps1eps2
        return {"vgh": lambda: hyperdual_value_grad_hessian(g, x, y), "hyperdual": hyperdual}

    def newton(self):
        return self.mixed.scipy.jac(rosenbrock), self.mixed.scipy.hessp(rosenbrock)

    def newton_own(self, x0):
        return self.mixed.newton_cg(rosenbrock, x0, tol=NEWTON_TOL)

    # ADBench: the objective is NumPy's own (dualad's value of it is the reference the
    # peers' objectives are checked against)
    def gmm(self, inp):
        return {"objective": lambda: _gmm.objective(inp), "gradient": lambda: _gmm.gradient(*inp)}

    def ba(self, inp):
        return {"objective": lambda: _ba.objective(inp), "jacobian": _ba.vmap_jacobian(inp),
                "sparse jacobian": _ba.sparse_jacobian(inp)}

    def hand(self, inp):
        ops = {"objective": lambda: _hand.objective(inp), "jacobian": _hand.jacobian(inp)}
        if inp.us is not None:
            ops["sparse jacobian"] = _hand.sparse_jacobian(inp)
        return ops

    def lstm(self, inp):
        return {"objective": lambda: _lstm.objective(inp), "gradient": lambda: _lstm.gradient(*inp)}


class DualadCompiled(Dualad):
    """dualad's transforms under ``dualad.compile`` on its NumPy executor: traced on the
    first call, replayed after (the first call is reported apart, as JIT compilation is
    for ``jax.jit``; the second, the first replay, too)."""

    name = "dualad.compile"
    devices = ("cpu",)
    executor = "numpy"

    def __init__(self, device, threads):
        super().__init__(device, threads)
        self.compile = functools.partial(self.dualad.compile, executor=self.executor)

    def _vector_ops(self, f, x, v):
        d, compile_, device = self, self.compile, self.device
        jvp = compile_(lambda x, v: d.dualad.jvp(f, (x,), (v,))[1])
        grad = compile_(d.reverse.grad(f))
        hvp = compile_(lambda x, v: d.mixed.hvp(f, x, v))
        return {"jvp": lambda: _synced(device, jvp, x, v), "grad": lambda: _synced(device, grad, x),
                "hvp": lambda: _synced(device, hvp, x, v)}

    def chain(self, x):
        grad, x, device = self.compile(self.reverse.grad(op_chain)), self.device.put(x), self.device
        return {"grad": lambda: _synced(device, grad, x)}

    def hessian50(self, f, x):
        hessian = self.compile(self.mixed.hessian(f))
        return {"hessian": lambda: hessian(x)}

    def scalar(self, x, y):
        vgh = self.compile(lambda x, y: hyperdual_value_grad_hessian(g, x, y))
        x, y = np.float64(x), np.float64(y)  # arrays are traced; Python floats are static
        return {"vgh": lambda: vgh(x, y)}

    newton = newton_own = None  # the Newton row times SciPy's and our solvers, not a program
    gmm = ba = hand = lstm = None  # ADBench's problems run under dualad.jit only (DualadAuto)


class DualadNumba(DualadCompiled):
    """The same, on the Numba executor: elementwise groups as compiled loops (its first
    replay compiles the kernels, or loads them from the disk cache)."""

    name = "dualad.compile[numba]"
    modules = ("numba",)
    executor = "numba"


class DualadAuto(DualadCompiled):
    """The same, with compile's own choice of executor (``executor=None``): what a user
    gets without asking (Numba's kernels where installed and they pay, Python floats for
    programs of a few numbers that unroll cheaper, NumPy's calls otherwise; on CuPy
    arrays, the CuPy executor's CUDA kernels: the Rosenbrock and MLP rows of
    ``--device cuda``)."""

    name = "dualad.compile[auto]"
    devices = ("cpu", "cuda")
    executor = None

    # ADBench's problems under dualad.jit (which is compile with executor=None)
    def gmm(self, inp):
        objective, gradient = _gmm.compiled_objective(), _gmm.compiled_gradient()
        return {"objective": calling(objective, *inp), "gradient": calling(gradient, *inp)}

    def ba(self, inp):
        objective = self.compile(_ba.ba_objective)
        not_run(self.name, "ba", "sparse jacobian", SPARSE_UNDER_JIT)
        return {"objective": lambda: objective(*inp), "jacobian": _ba.vmap_jacobian(inp, compiled=True)}

    def hand(self, inp):
        if inp.us is not None:
            not_run(self.name, "hand", "sparse jacobian", SPARSE_UNDER_JIT)
        return {"objective": _hand.compiled_objective(inp), "jacobian": _hand.jacobian(inp, compiled=True)}

    def lstm(self, inp):
        objective, gradient = _lstm.compiled_objective(), _lstm.compiled_gradient()
        return {"objective": calling(objective, *inp), "gradient": calling(gradient, *inp)}


class Jax(Library):
    name = "jax"
    modules = ("jax",)
    devices = ("cpu", "cuda")
    jit = False

    def __init__(self, device, threads):
        super().__init__(device, threads)
        if device.name == "cpu" and "XLA_FLAGS" not in os.environ:
            os.environ["XLA_FLAGS"] = (f"--xla_cpu_multi_thread_eigen={'true' if threads > 1 else 'false'} "
                                       f"intra_op_parallelism_threads={threads}")
        if device.name == "cuda":  # share the GPU with CuPy and torch: no 75% preallocation
            os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
        import jax
        jax.config.update("jax_enable_x64", True)
        self.jax, self.jnp = jax, jax.numpy
        self.where = jax.devices("gpu" if device.name == "cuda" else "cpu")[0]

    def put(self, tree):
        return self.jax.device_put(_tree_map(np.asarray, tree), self.where)

    def _wrap(self, fn):
        return self.jax.jit(fn) if self.jit else fn

    def _run(self, fn, *args):
        block = self.jax.block_until_ready
        return lambda: block(fn(*args))

    def _vector_ops(self, f, x, v):
        jax = self.jax
        x, v = self.put(x), self.put(v)
        ops = {"f": self._wrap(f),
               "jvp": self._wrap(lambda x, v: jax.jvp(f, (x,), (v,))[1]),
               "grad": self._wrap(jax.grad(f)),
               "hvp": self._wrap(lambda x, v: jax.jvp(jax.grad(f), (x,), (v,))[1])}
        return {op: self._run(fn, x) if op in ("f", "grad") else self._run(fn, x, v)
                for op, fn in ops.items()}

    def rosenbrock(self, x, v):
        return self._vector_ops(_in(rosenbrock, self.jnp), x, v)

    def mlp(self, loss, params, v):
        inputs, targets = self.put(loss.inputs), self.put(loss.targets)
        return self._vector_ops(_in(mlp_loss, self.jnp, inputs, targets), tuple(params), tuple(v))

    def chain(self, x):
        f, x = _in(op_chain, self.jnp), self.put(x)
        return {"f": self._run(self._wrap(f), x), "grad": self._run(self._wrap(self.jax.grad(f)), x)}

    def hessian50(self, f_np, x):
        f = _in(tanh_rosenbrock, self.jnp, self.put(f_np.a))
        return {"hessian": self._run(self._wrap(self.jax.hessian(f)), self.put(x))}

    def scalar(self, x, y):
        jax, f = self.jax, _scalar_in(self.jnp)
        vgh = self._wrap(lambda xy: (f(xy), jax.grad(f)(xy), jax.hessian(f)(xy)))
        return {"vgh": self._run(vgh, self.put(np.array([x, y])))}

    def newton(self):
        jax = self.jax
        f = _in(rosenbrock, self.jnp)
        grad = self._wrap(jax.grad(f))
        hvp = self._wrap(lambda x, v: jax.jvp(jax.grad(f), (x,), (v,))[1])
        return (lambda x: np.asarray(grad(self.put(x))),
                lambda x, p: np.asarray(hvp(self.put(x), self.put(p))))


class JaxJit(Jax):
    name = "jax.jit"
    jit = True

    # ADBench's problems: under jax.jit only (op by op, JAX runs their Python loops slowly)
    def gmm(self, inp):
        jax, jnp = self.jax, self.jnp

        def f(alphas, means, icf, x):
            return _gmm.gmm_objective(alphas, means, icf, x, inp.wishart_gamma, inp.wishart_m, xp=jnp)
        args = self.put(tuple(inp[:4]))
        return {"objective": self._run(jax.jit(f), *args),
                "gradient": self._run(jax.jit(jax.grad(f, argnums=(0, 1, 2))), *args)}

    def ba(self, inp):
        jax, jnp = self.jax, self.jnp
        reproj = jax.vmap(jax.jacfwd(functools.partial(_ba.compute_reproj_err, xp=jnp), argnums=(0, 1, 2)))
        w_err = jax.vmap(jax.grad(_ba.compute_w_err))

        def blocks(cams, x, w, obs, feats):
            return (*reproj(cams[obs[:, 0]], x[obs[:, 1]], w, feats), w_err(w))
        objective, blocks = jax.jit(functools.partial(_ba.ba_objective, xp=jnp)), jax.jit(blocks)
        args, sizes = self.put(tuple(inp)), (len(inp.cams), len(inp.x), len(inp.w))
        run = self._run(blocks, *args)
        return {"objective": self._run(objective, *args), "jacobian": lambda: _ba.to_csr(run(), *sizes)}

    def hand(self, inp):
        jax, jnp = self.jax, self.jnp
        objective, jacobian, arrays = _hand_in(inp, jnp, jax.jacfwd, jax.vmap)
        args = self.put(arrays)
        return {"objective": self._run(jax.jit(objective), *args),
                "jacobian": self._run(jax.jit(jacobian), *args)}

    def lstm(self, inp):
        jax, jnp = self.jax, self.jnp
        why = ("XLA's compile of the unrolled loop grows faster than the characters "
               "(benchmarks/README.md, ADBench)")
        not_run(self.name, "lstm", "gradient", why)
        if len(inp.sequence) > JAX_LSTM_CHARACTERS:
            not_run(self.name, "lstm", f"objective beyond {JAX_LSTM_CHARACTERS} characters", why)
            return {}
        objective = jax.jit(functools.partial(_lstm.lstm_objective, xp=jnp))
        return {"objective": self._run(objective, *self.put(tuple(inp)))}


class _Torch(Library):
    modules = ("torch",)
    devices = ("cpu", "cuda")

    def __init__(self, device, threads):
        super().__init__(device, threads)
        import torch
        if device.name == "cuda" and not torch.cuda.is_available():
            raise RuntimeError(f"torch {torch.__version__} sees no CUDA device (a CPU-only build?)")
        torch.set_num_threads(threads)
        self.torch = torch
        self.where = "cuda" if device.name == "cuda" else "cpu"
        self.sync = torch.cuda.synchronize if device.name == "cuda" else (lambda: None)

    def put(self, tree, requires_grad=False):
        return _tree_map(lambda a: self.torch.tensor(np.asarray(a), device=self.where,
                                                     requires_grad=requires_grad), tree)

    def _run(self, fn, *args):
        def call():
            out = fn(*args)
            self.sync()
            return out
        return call

    def hessian50_f(self, f_np):
        return _in(tanh_rosenbrock, self.torch, self.put(f_np.a))

    def rosenbrock(self, x, v):
        return self._vector_ops(_in(rosenbrock, self.torch), x, v)

    def mlp(self, loss, params, v):
        inputs, targets = self.put(loss.inputs), self.put(loss.targets)
        return self._vector_ops(_in(mlp_loss, self.torch, inputs, targets), tuple(params), tuple(v))

    def newton(self):
        """NumPy in, NumPy out, for SciPy: each call converts ``x`` (and ``p``) to tensors."""
        f = _in(rosenbrock, self.torch)

        def grad(x):
            return self._vector_ops(f, x, x, only="grad")["grad"]().cpu().numpy()

        def hessp(x, p):
            return self._vector_ops(f, x, p, only="hvp")["hvp"]().cpu().numpy()
        return grad, hessp


class TorchFunc(_Torch):
    name = "torch.func"

    def _vector_ops(self, f, x, v, only=None):
        from torch.func import grad, jvp
        x, v = self.put(x), self.put(v)
        primals, tangents = (x,), (v,)
        ops = {"f": lambda: f(x),
               "jvp": lambda: jvp(f, primals, tangents)[1],
               "grad": lambda: grad(f)(x),
               "hvp": lambda: jvp(grad(f), primals, tangents)[1]}
        return {op: self._run(fn) for op, fn in ops.items() if only in (None, op)}

    def chain(self, x):
        from torch.func import grad
        f, x = _in(op_chain, self.torch), self.put(x)
        return {"f": self._run(f, x), "grad": self._run(grad(f), x)}

    def hessian50(self, f_np, x):
        from torch.func import hessian
        return {"hessian": self._run(hessian(self.hessian50_f(f_np)), self.put(x))}

    def scalar(self, x, y):
        from torch.func import grad, hessian
        f = _scalar_in(self.torch)
        xy = self.put(np.array([x, y]))
        return {"vgh": self._run(lambda: (f(xy), grad(f)(xy), hessian(f)(xy)))}


def _hand_in(inp, xp, jacfwd, vmap) -> tuple[Callable, Callable, tuple]:
    """A hand input's objective and Jacobian (``hand.jacobians`` by the library's ``jacfwd``
    and ``vmap``), as functions of its arrays only, and those arrays (NumPy's): the
    model's arrays go after the others, and its parents (Python ints, which ``jax.jit``
    would trace) are closed over."""
    simple, compact = _hand.jacobians(jacfwd, vmap, xp)
    objective, fields = _hand.for_kind(inp, _hand.hand_objective, _hand.hand_objective_complicated)
    jacobian = simple if inp.us is None else compact
    k = len(fields) - 3  # theta, or us and theta, before the model
    parents = inp.model.parents

    def of_arrays(fn, **kwargs):
        def f(*arrays):
            return fn(*arrays[:k], _hand.HandModel(parents, *arrays[k + 2:]), *arrays[k:k + 2], **kwargs)
        return f
    return of_arrays(objective, xp=xp), of_arrays(jacobian), (*fields[:k], *fields[k + 1:], *inp.model[1:])


def _torch_numpy(torch) -> SimpleNamespace:
    """The NumPy functions ADBench's problems call, as torch's (NumPy's names and arguments)."""
    def sum_(x, axis=None, keepdims=False):
        return torch.sum(x) if axis is None else torch.sum(x, dim=axis, keepdim=keepdims)

    def max_(x, axis=None):
        return torch.max(x) if axis is None else torch.amax(x, dim=axis)
    return SimpleNamespace(exp=torch.exp, log=torch.log, sqrt=torch.sqrt, cos=torch.cos, sin=torch.sin,
                           tanh=torch.tanh, einsum=torch.einsum, sum=sum_, max=max_,
                           concatenate=lambda xs, axis=0: torch.cat(tuple(xs), dim=axis),
                           stack=lambda xs, axis=0: torch.stack(tuple(xs), dim=axis),
                           zeros=lambda n: torch.zeros(n, dtype=torch.float64),
                           cross=torch.linalg.cross)


class TorchEager(_Torch):
    name = "torch"

    def _wrap(self, fn):
        return fn

    # ADBench's problems: gradients by .backward(), the BA Jacobian by torch.func's
    # vmap(jacfwd) (eager, as ADBench's own PyTorch module takes one Jacobian per observation)
    def _objective_and_gradient(self, f, arrays: tuple, n_leaves: int) -> dict:
        torch, f = self.torch, self._wrap(f)
        plain = [self.put(a) for a in arrays]
        leaves = [self.put(a, requires_grad=True) for a in arrays[:n_leaves]] + plain[n_leaves:]

        def objective():
            with torch.no_grad():
                return f(*plain)

        def gradient():
            for p in leaves[:n_leaves]:
                p.grad = None
            f(*leaves).backward()
            return tuple(p.grad for p in leaves[:n_leaves])
        return {"objective": self._run(objective), "gradient": self._run(gradient)}

    def gmm(self, inp):
        xp = _torch_numpy(self.torch)

        def f(alphas, means, icf, x):
            return _gmm.gmm_objective(alphas, means, icf, x, inp.wishart_gamma, inp.wishart_m, xp=xp)
        return self._objective_and_gradient(f, tuple(inp[:4]), 3)

    def ba(self, inp):
        from torch.func import grad, jacfwd, vmap
        torch, xp = self.torch, _torch_numpy(self.torch)
        reproj = vmap(jacfwd(functools.partial(_ba.compute_reproj_err, xp=xp), argnums=(0, 1, 2)))
        w_err = vmap(grad(_ba.compute_w_err))

        def blocks(cams, x, w, obs, feats):
            return (*reproj(cams[obs[:, 0]], x[obs[:, 1]], w, feats), w_err(w))
        objective = self._wrap(functools.partial(_ba.ba_objective, xp=xp))
        blocks = self._wrap(blocks)
        args, sizes = [self.put(a) for a in inp], (len(inp.cams), len(inp.x), len(inp.w))

        def plain_objective():
            with torch.no_grad():
                return objective(*args)
        return {"objective": self._run(plain_objective),
                "jacobian": self._run(lambda: _ba.to_csr(blocks(*args), *sizes))}

    def hand(self, inp):
        from torch.func import jacfwd, vmap
        torch = self.torch
        objective, jacobian, arrays = _hand_in(inp, _torch_numpy(torch), jacfwd, vmap)
        objective, jacobian, args = self._wrap(objective), self._wrap(jacobian), self.put(arrays)

        def plain_objective():
            with torch.no_grad():
                return objective(*args)
        return {"objective": self._run(plain_objective), "jacobian": self._run(jacobian, *args)}

    def lstm(self, inp):
        xp = _torch_numpy(self.torch)
        return self._objective_and_gradient(functools.partial(_lstm.lstm_objective, xp=xp), tuple(inp), 2)

    def _vector_ops(self, f, x, v, only=None):
        torch = self.torch
        import torch.autograd.forward_ad as fwAD
        single = not isinstance(x, tuple)
        plain, tangent = self.put(x), self.put(v)
        leaves = self.put(x, requires_grad=True)
        leaf_list = [leaves] if single else list(leaves)
        tangent_list = [tangent] if single else list(tangent)

        def unpack(out):
            return out[0] if single else tuple(out)

        def jvp():
            with fwAD.dual_level():
                duals = [fwAD.make_dual(p, t) for p, t in
                         zip([plain] if single else plain, tangent_list)]
                out = f(duals[0] if single else tuple(duals))
                return fwAD.unpack_dual(out).tangent

        def grad():
            for p in leaf_list:
                p.grad = None
            f(leaves).backward()
            return unpack([p.grad for p in leaf_list])

        def hvp():
            gs = torch.autograd.grad(f(leaves), leaf_list, create_graph=True)
            return unpack(torch.autograd.grad(gs, leaf_list, grad_outputs=tangent_list))

        def plain_f():
            with torch.no_grad():
                return f(plain)

        ops = {"f": plain_f, "jvp": jvp, "grad": grad, "hvp": hvp}
        return {op: self._run(fn) for op, fn in ops.items() if only in (None, op)}

    def chain(self, x):
        ops = self._vector_ops(_in(op_chain, self.torch), x, x)
        return {"f": ops["f"], "grad": ops["grad"]}

    def hessian50(self, f_np, x):
        from torch.autograd.functional import hessian
        f = self.hessian50_f(f_np)
        return {"hessian": self._run(hessian, f, self.put(x))}

    def scalar(self, x, y):
        from torch.autograd.functional import hessian
        f = _scalar_in(self.torch)
        xy_plain = self.put(np.array([x, y]))
        xy = self.put(np.array([x, y]), requires_grad=True)

        def vgh():
            xy.grad = None
            value = f(xy)
            value.backward()
            return value.detach(), xy.grad, hessian(f, xy_plain)
        return {"vgh": self._run(vgh)}


class TorchCompile(TorchEager):
    """ADBench's problems under ``torch.compile`` (Inductor's C++ on CPU), objective and
    gradient (``.backward()`` through the compiled graph); the other workloads are not run."""

    name = "torch.compile"
    devices = ("cpu",)
    rosenbrock = mlp = chain = hessian50 = scalar = newton = None

    def _wrap(self, fn):
        return self.torch.compile(fn)

    def ba(self, inp):
        not_run(self.name, "ba", "jacobian", "torch.compile of torch.func's vmap(jacfwd) and "
                "vmap(grad) fails (TorchRuntimeError, an INTERNAL ASSERT in _fw_primal), and once it "
                "has, a garbage collection turns autograd off in the process: later .backward() calls fail")
        return {"objective": super().ba(inp)["objective"]}

    def hand(self, inp):
        not_run(self.name, "hand", "jacobian", "torch.compile of torch.func's jacfwd crashed the "
                "process (SIGSEGV) after 6 minutes of compiling, at hand1-c100 simple (benchmarks/README.md, "
                "ADBench)")
        return {"objective": super().hand(inp)["objective"]}

    def lstm(self, inp):
        not_run(self.name, "lstm", "objective and gradient", "Dynamo and Inductor compile the unrolled "
                "loop for minutes even at 64 characters (benchmarks/README.md, ADBench)")
        return {}


class Autograd(Library):
    name = "autograd"
    modules = ("autograd",)

    def __init__(self, device, threads):
        super().__init__(device, threads)
        import autograd
        import autograd.numpy as anp
        self.autograd, self.anp = autograd, anp

    def _vector_ops(self, f, x, v):
        ag = self.autograd
        grad = ag.grad(f)
        return {"f": lambda: f(x),
                "jvp": lambda: ag.make_jvp(f)(x)(v)[1],
                "grad": lambda: grad(x),
                "hvp": lambda: ag.make_hvp(f)(x)[0](v)}

    def rosenbrock(self, x, v):
        return self._vector_ops(_in(rosenbrock, self.anp), x, v)

    def mlp(self, loss, params, v):
        f = _in(mlp_loss, self.anp, loss.inputs, loss.targets)
        return self._vector_ops(f, tuple(params), tuple(v))

    def chain(self, x):
        f = _in(op_chain, self.anp)
        return {"f": lambda: f(x), "grad": lambda: self.autograd.grad(f)(x)}

    def hessian50(self, f_np, x):
        f = _in(tanh_rosenbrock, self.anp, f_np.a)
        return {"hessian": lambda: self.autograd.hessian(f)(x)}

    def scalar(self, x, y):
        ag, f = self.autograd, _scalar_in(self.anp)
        xy = np.array([x, y])
        value_and_grad, hessian = ag.value_and_grad(f), ag.hessian(f)
        return {"vgh": lambda: (*value_and_grad(xy), hessian(xy))}

    def newton(self):
        f = _in(rosenbrock, self.anp)
        return self.autograd.grad(f), lambda x, p: self.autograd.make_hvp(f)(x)[0](p)


def _in(workload: Callable, xp, *data) -> Callable:
    """``x -> workload(x, *data, xp=xp)``: a ``common`` workload written with ``xp``'s functions."""
    return lambda x: workload(x, *data, xp=xp)


def _scalar_in(xp) -> Callable:
    """``common.g`` written with ``xp``'s functions, on a vector ``[x, y]``."""
    return lambda xy: g(xy[0], xy[1], xp=xp)


class MyGrad(Library):
    name = "mygrad"
    modules = ("mygrad",)

    def __init__(self, device, threads):
        super().__init__(device, threads)
        import mygrad
        self.mg = mygrad

    def _grad_ops(self, f, x):
        mg = self.mg
        single = not isinstance(x, tuple)
        leaves = mg.tensor(x) if single else tuple(mg.tensor(p) for p in x)
        constant = mg.tensor(x, constant=True) if single else tuple(mg.tensor(p, constant=True) for p in x)

        def grad():
            f(leaves).backward()
            return leaves.grad if single else tuple(p.grad for p in leaves)
        return {"f": lambda: f(constant), "grad": grad}

    def rosenbrock(self, x, v):
        return self._grad_ops(_in(rosenbrock, self.mg), x)

    def mlp(self, loss, params, v):
        return self._grad_ops(_in(mlp_loss, self.mg, loss.inputs, loss.targets), tuple(params))

    def chain(self, x):
        return self._grad_ops(_in(op_chain, self.mg), x)


class NumDual(Library):
    name = "num_dual"
    modules = ("num_dual",)

    def __init__(self, device, threads):
        super().__init__(device, threads)
        import num_dual
        self.nd = num_dual

    # num_dual's numbers carry their functions as methods
    _METHODS = SimpleNamespace(exp=lambda z: z.exp(), sin=lambda z: z.sin(), log=lambda z: z.log())

    def scalar(self, x, y):
        nd, g_nd = self.nd, functools.partial(g, xp=self._METHODS)
        hx, hy = nd.HyperDual64(x, 1.0, 0.0, 0.0), nd.HyperDual64(y, 0.0, 1.0, 0.0)

        def hyperdual():
            out = g_nd(hx, hy)
            return out.value, out.first_derivative[0], out.first_derivative[1], out.second_derivative

        return {"vgh": lambda: nd.hessian(lambda v: g_nd(v[0], v[1]), [x, y]), "hyperdual": hyperdual}

    def hessian50(self, f_np, x):
        nd, a = self.nd, f_np.a

        def f(v):  # one dual2 number per variable, in a NumPy object array
            return tanh_rosenbrock(np.array(v, dtype=object), a)
        return {"hessian": lambda: nd.hessian(f, list(x))[2]}


LIBRARIES = [NumPy, Dualad, DualadCompiled, DualadNumba, DualadAuto, Jax, JaxJit, TorchFunc, TorchEager,
             TorchCompile, Autograd, MyGrad, NumDual]
PEER_NAMES = [cls.name for cls in LIBRARIES[2:]]


def load_libraries(device: Device, threads: int,
                   peers: list[str] | None = None) -> tuple[list[Library], dict[str, str]]:
    """The libraries that run here, and why each other one does not.

    ``peers`` names the peer libraries to run (NumPy and dualad always run);
    None runs every one that is installed.
    """
    loaded, skipped = [], {}
    for cls in LIBRARIES:
        missing = [m for m in cls.modules if importlib.util.find_spec(m) is None]
        if peers is not None and cls.name not in ("numpy", "dualad") and cls.name not in peers:
            skipped[cls.name] = "not asked for (--peers)"
        elif missing:
            skipped[cls.name] = f"not installed ({', '.join(missing)})"
        elif device.name not in cls.devices:
            skipped[cls.name] = f"no {device.name} support"
        else:
            try:
                loaded.append(cls(device, threads))
            except SystemExit:
                raise
            except Exception as exc:
                skipped[cls.name] = f"failed to load: {type(exc).__name__}: {exc}"
    return loaded, skipped


# -- timing -------------------------------------------------------------------------------
def measure(candidates: dict[str, Callable], repeat: int, sample_s: float,
            budget_s: float) -> dict[str, dict]:
    """Seconds per call of each candidate: the fastest of interleaved samples.

    The first call of each (JIT compilation, caches) is timed apart as
    ``first_call_s``, and the second as ``second_call_s`` (a compiled
    program's first replay, which generates the replay and compiles its
    Numba kernels). Then every candidate is called ``common.SETTLING_CALLS``
    times more (fewer where they take ``budget_s``), untimed: ``dualad.jit``
    times its first calls to choose how the next run (``stats["chosen"]``),
    and the samples must be of those; the calls per sample are sized by one
    call after these (sized by the second, a sample of a scalar program held
    two calls, and read 2x slow; sized by a call before ``dualad.jit`` chose,
    a NumPy replay while its kernels compiled, the LSTM's gradient held 4
    calls of 0.4 ms, the first after another library's sample slow, and read
    1.3x slow). A candidate whose call is slow gets fewer samples, so that
    none takes much more than ``budget_s``.
    """
    out: dict[str, dict] = {}
    timers: dict[str, tuple] = {}
    for name, fn in candidates.items():
        try:
            start = time.perf_counter()
            value = fn()
            first = time.perf_counter() - start
            start = time.perf_counter()
            fn()  # dualad.compile generates a program's replay at its first replay
            replay = time.perf_counter() - start
            settle(fn, budget_s)
            start = time.perf_counter()
            fn()
            second = time.perf_counter() - start
        except Exception as exc:
            out[name] = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}
            continue
        number = max(1, math.ceil(sample_s / max(second, 1e-9)))
        samples = max(1, min(repeat, int(budget_s / max(second * number, 1e-9))))
        timers[name] = (timeit.Timer(fn), number, samples)
        out[name] = {"value": value, "first_call_s": first, "second_call_s": replay, "seconds": second}
    for i in range(repeat):
        for name, (timer, number, samples) in timers.items():
            if i < samples:
                out[name]["seconds"] = min(out[name]["seconds"], timer.timeit(number) / number)
    return out


def _check(value: Any, reference: np.ndarray | None, rtol: float = 1e-6) -> str:
    if reference is None:
        return ""
    try:
        got = _to_numpy(value)
    except Exception as exc:
        return f"unreadable result: {type(exc).__name__}"
    if got.shape != reference.shape:
        return f"MISMATCH: {got.size} numbers, dualad has {reference.size}"
    scale = float(np.max(np.abs(reference))) if reference.size else 0.0
    err = float(np.max(np.abs(got - reference))) if reference.size else 0.0
    if not err <= rtol * scale + 1e-300:
        return f"MISMATCH: max |diff| {err:.3g} (max |dualad| {scale:.3g})"
    return "ok"


# -- the workloads ------------------------------------------------------------------------
class Runner:
    """Builds each row's candidates, measures them, and collects the rows."""

    def __init__(self, libraries: list[Library], device: Device, repeat: int, sample_s: float,
                 budget_s: float):
        self.libraries, self.device = libraries, device
        self.base = "cupy" if device.name == "cuda" else "numpy"
        self.repeat, self.sample_s, self.budget_s = repeat, sample_s, budget_s
        self.rows: list[dict] = []

    def row(self, workload: str, n: int, label: str, built: dict[str, dict], op: str,
            baseline: str | None = None, baseline_op: str = "f", rtol: float = 1e-6) -> dict:
        """Measure one row; return each library's results (with its ``value``)."""
        baseline = baseline or self.base
        candidates = {}
        if baseline_op in built.get(baseline, {}):
            candidates[baseline] = built[baseline][baseline_op]
        for lib, ops in built.items():
            if lib != baseline and op in ops:
                candidates[lib] = ops[op]
        results = measure(candidates, self.repeat, self.sample_s, self.budget_s)
        ours = results.get("dualad", {})
        reference = _to_numpy(ours["value"]) if "value" in ours and op != "f" else None
        base_s = results.get(baseline, {}).get("seconds")
        cells = {}
        for lib, r in results.items():
            if lib == baseline:
                continue
            cell = {k: v for k, v in r.items() if k != "value"}
            if "seconds" in cell:
                cell["check"] = "" if lib == "dualad" else _check(r["value"], reference, rtol)
                if base_s:
                    cell["over_baseline"] = cell["seconds"] / base_s
                if "seconds" in ours and lib != "dualad" and op != "f":
                    cell["dualad_over"] = ours["seconds"] / cell["seconds"]
            cells[lib] = cell
        record = {"workload": workload, "n": n, "label": label, "op": op, "baseline": baseline,
                  "baseline_s": base_s, "libraries": cells}
        self.rows.append(record)
        _print_progress(record)
        return results

    def build(self, method: str, *args) -> dict[str, dict]:
        built = {}
        for lib in self.libraries:
            fn = getattr(lib, method, None)
            if fn is None:
                continue
            try:
                built[lib.name] = fn(*args)
            except Exception as exc:
                print(f"  {lib.name}: {method} failed to build: {type(exc).__name__}: {exc}")
        return built

    def chain(self, sizes):
        for size in sizes:
            x = np.array(vector(size))
            built = self.build("chain", x)
            for op in ("f", "grad"):
                self.row("chain", size, f"size {size}", built, op)
                for cell in self.rows[-1]["libraries"].values():
                    if "seconds" in cell:
                        cell["us_per_op"] = cell["seconds"] / _CHAIN_OPS * 1e6

    def vector(self, workload: str, sizes):
        for n in sizes:
            if workload == "rosenbrock":
                args = (np.array(vector(n)), np.array(_direction(n)))
                label = f"n = {n:,}"
            else:
                widths = mlp_widths(n)
                args = mlp_classifier(widths)
                label = "-".join(map(str, widths))
                n = mlp_size(widths)
            built = self.build(workload, *args)
            for op in OPS:
                self.row(workload, n, label, built, op)
            del built, args

    def adbench(self, problem: str, quick: bool) -> None:
        """One of ADBench's problems at its sizes (the smallest with ``quick``; hand tracking
        simple and complicated at each): the objective, then each derivative, every result
        within ``ADBENCH_RTOL`` of dualad's."""
        module = {"gmm": _gmm, "ba": _ba, "hand": _hand, "lstm": _lstm}[problem]
        for label, dims in list(module.SIZES.items())[:1 if quick else None]:
            if problem == "hand":
                cases = [(f"{label} {kind}", dims, _hand.data(dims, kind == "complicated"))
                         for kind in ("simple", "complicated")]
            else:
                cases = [(label, dims[-1], module.data(*dims))]
            for name, n, inp in cases:
                built = self.build(problem, inp)
                results = {op: self.row(problem, n, name, built, op, rtol=ADBENCH_RTOL)
                           for op in ADBENCH_OPS[problem] if any(op in ops for ops in built.values())}
                if "sparse jacobian" in results:
                    self._same_jacobian(results["jacobian"], results["sparse jacobian"],
                                        _hand.to_csr if problem == "hand" else None)
                del built, results

    def _same_jacobian(self, by_blocks: dict, sparse: dict, as_matrix: Callable | None) -> None:
        """Check dualad's ``sparse_jacfwd`` matrix against its Jacobian by ``jacfwd`` or
        ``vmap(jacfwd)`` (the row before; ``as_matrix`` makes its blocks a CSR matrix, where
        they are not one), which the peers are checked against: no peer has a sparse Jacobian."""
        cell = self.rows[-1]["libraries"].get("dualad")
        if cell is None or any("value" not in r.get("dualad", {}) for r in (by_blocks, sparse)):
            return
        want, got = by_blocks["dualad"]["value"], sparse["dualad"]["value"]
        want = want if as_matrix is None else as_matrix(want)
        scale, err = abs(want).max(), abs(got - want).max()
        if got.shape == want.shape and err <= ADBENCH_RTOL * scale:
            cell["cross_check"] = "equals the jacobian row's"
        else:
            cell["check"] = f"MISMATCH: max |diff| {err:.3g} from the jacobian row's (max {scale:.3g})"
            print(f"  {self.rows[-1]['workload']} {self.rows[-1]['label']} sparse jacobian: {cell['check']}")

    def hessian50(self):
        f = _hessian50_function()
        x = np.array(vector(HESSIAN_N))
        built = self.build("hessian50", f, x)
        self.row("hessian50", HESSIAN_N, f"n = {HESSIAN_N}", built, "hessian")
        self.row("hessian50", HESSIAN_N, f"n = {HESSIAN_N}", built, "hessian (hyper-dual)")

    def scalar(self):
        built = self.build("scalar", *SCALAR_AT)
        self.row("scalar", 2, "g(x, y)", built, "vgh", baseline_op="vgh")
        self.row("scalar", 2, "g(x, y)", built, "hyperdual", baseline_op="hyperdual")

    def newton(self):
        from scipy.optimize import minimize, rosen_der

        x0 = np.full(NEWTON_N, 0.5)
        solves, info = {}, {}

        def scipy_solve(name, jac, hessp):
            def solve():
                def stop(intermediate_result):
                    if np.linalg.norm(rosen_der(intermediate_result.x)) <= NEWTON_TOL:
                        raise StopIteration
                r = minimize(rosenbrock, x0, jac=jac, hessp=hessp, method="Newton-CG",
                             callback=stop, options={"xtol": 1e-16, "maxiter": 500})
                info[name] = {"nit": int(r.nit), "grad_norm": float(np.linalg.norm(rosen_der(r.x)))}
                return r.x
            return solve

        for lib in self.libraries:
            if getattr(lib, "newton", None) is not None:
                try:
                    solves[lib.name] = {"scipy": scipy_solve(lib.name, *lib.newton())}
                except Exception as exc:
                    print(f"  {lib.name}: newton failed to build: {type(exc).__name__}: {exc}")
        own = next((lib for lib in self.libraries if type(lib) is Dualad), None)
        saved, self.sample_s = self.sample_s, 0.0  # a solve is long: one per sample
        self.row("newton", NEWTON_N, "scipy Newton-CG", solves, "scipy", baseline_op="scipy")
        for lib, cell in self.rows[-1]["libraries"].items():
            cell.update(info.get(lib, {}))
        self.rows[-1]["baseline_info"] = info.get("numpy", {})
        if own is not None:
            def own_solve():
                r = own.newton_own(x0)
                info["own"] = {"nit": int(r.nit), "nhev": int(r.nhev),
                               "grad_norm": float(np.linalg.norm(rosen_der(r.x)))}
                return r.x
            built = {"numpy": solves.get("numpy", {}), "dualad": {"own": own_solve}}
            self.row("newton", NEWTON_N, "mixed.newton_cg", built, "own", baseline_op="scipy")
            self.rows[-1]["libraries"]["dualad"].update(info.get("own", {}))
        self.sample_s = saved
        for name, got in info.items():
            if not got["grad_norm"] <= NEWTON_TOL:
                print(f"  newton: {name} stopped at |grad| = {got['grad_norm']:.3g} > {NEWTON_TOL:g}")


def _hessian50_function():
    a = np.array(square_matrix(HESSIAN_N))
    f = _in(tanh_rosenbrock, np, a)
    f.a = a
    return f


def pool_baselines(rows: list[dict]) -> None:
    """Give every row of one workload and size the fastest baseline measured in any of them.

    Each row times its baseline among its own samples; on a loaded machine
    those minima differ by up to 2x between the rows of one size, which would
    show as noise across ops. The pooled minimum is the best estimate of the
    baseline's cost; every ``over_baseline`` is recomputed from it (the row's
    own value is kept as ``baseline_s_row``). ADBench's rows pool by label too:
    hand tracking's simple and complicated objectives share a size, not a baseline.
    """
    def key(r: dict) -> tuple:
        return r["workload"], r["n"], r["baseline"], r["label"] if r["workload"] in ADBENCH_OPS else None

    best: dict[tuple, float] = {}
    for r in rows:
        if r["baseline_s"]:
            best[key(r)] = min(best.get(key(r), math.inf), r["baseline_s"])
    for r in rows:
        k = key(r)
        if k in best:
            r["baseline_s_row"], r["baseline_s"] = r["baseline_s"], best[k]
            for cell in r["libraries"].values():
                if "seconds" in cell:
                    cell["over_baseline"] = cell["seconds"] / best[k]


# -- output ---------------------------------------------------------------------------------
def _print_progress(record: dict) -> None:
    parts = []
    for lib, cell in record["libraries"].items():
        if "seconds" in cell:
            check = "" if cell.get("check") in ("", "ok") else f" {cell['check']}"
            parts.append(f"{lib} {cell['seconds']:.3g}s{check}")
        else:
            parts.append(f"{lib} {cell.get('error', '?')}")
    base = record["baseline_s"]
    base_text = f"{record['baseline']} {base:.3g}s; " if base else ""
    print(f"  {record['workload']} {record['label']} {record['op']}: {base_text}" + "; ".join(parts),
          flush=True)


def _cell(cell: dict | None) -> str:
    if not cell:
        return "-"
    if "error" in cell:
        return "error"
    text = f"{cell['over_baseline']:.3g}" if "over_baseline" in cell else f"{cell['seconds']:.3g} s"
    if "dualad_over" in cell:
        text += f" [{cell['dualad_over']:.2g}]"
    if cell.get("check", "").startswith(("MISMATCH", "unreadable")):
        text += " (!)"
    return text


def table(rows: list[dict], names: list[str]) -> str:
    """The Markdown table: baseline seconds, then library / baseline [dualad / library]."""
    peers = [n for n in names if n not in ("numpy", "cupy")]
    lines = ["| workload | size | op | baseline s | " + " | ".join(peers) + " |",
             "| --- " * (4 + len(peers)) + "|"]
    for r in rows:
        base = f"{r['baseline_s']:.3g}" if r["baseline_s"] else "-"
        cells = [_cell(r["libraries"].get(p)) for p in peers]
        lines.append(f"| {r['workload']} | {r['label']} | {r['op']} | {base} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def per_op_lines(rows: list[dict]) -> list[str]:
    lines = []
    for r in rows:
        if r["workload"] == "chain" and r["op"] == "grad":
            cells = ", ".join(f"{lib} {c['us_per_op']:.3g}" for lib, c in r["libraries"].items()
                              if "us_per_op" in c)
            base = r["baseline_s"] / _CHAIN_OPS * 1e6 if r["baseline_s"] else float("nan")
            lines.append(f"record + backward, us per op, {r['label']}: "
                         f"{r['baseline']} forward only {base:.3g}; {cells}")
    return lines


def adbench_lines(rows: list[dict]) -> list[str]:
    """Each ADBench derivative over the same library's objective (ADBench's measure), also
    stored in the cell as ``over_own_objective``."""
    objectives = {(r["workload"], r["label"]): r["libraries"] for r in rows
                  if r["workload"] in ADBENCH_OPS and r["op"] == "objective"}
    lines = []
    for r in rows:
        own = objectives.get((r["workload"], r["label"]))
        if own is None or r["op"] == "objective":
            continue
        cells = []
        for lib, cell in r["libraries"].items():
            if "seconds" in cell and "seconds" in own.get(lib, {}):
                cell["over_own_objective"] = cell["seconds"] / own[lib]["seconds"]
                cells.append(f"{lib} {cell['over_own_objective']:.3g}")
        if cells:
            lines.append(f"{r['workload']} {r['label']} {r['op']} / that library's objective: "
                         + ", ".join(cells))
    return lines


def _pyplot() -> Any:
    """matplotlib's pyplot drawing to files, or None where matplotlib is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def _save(plt: Any, fig: Any, path: Path, fontsize: int, bottom: float, dpi: int) -> None:
    """One legend of every panel's labels below the panels, and ``fig`` saved to ``path``."""
    handles = {}
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=len(handles),
               fontsize=fontsize)
    fig.tight_layout(rect=(0, bottom, 1, 1))
    fig.savefig(path, dpi=dpi)
    plt.close(fig)


def plot(rows: list[dict], names: list[str], path: Path) -> str:
    plt = _pyplot()
    if plt is None:
        return "matplotlib is not installed: no plot"
    workloads = [w for w in ("rosenbrock", "mlp") if any(r["workload"] == w for r in rows)]
    ops = [op for op in OPS if op != "f"]
    if not workloads:
        return "no size sweep to plot"
    fig, axes = plt.subplots(len(workloads), len(ops), figsize=(4.2 * len(ops), 3.6 * len(workloads)),
                             squeeze=False)
    for i, w in enumerate(workloads):
        for j, op in enumerate(ops):
            ax = axes[i][j]
            for lib in names:
                pts = [(r["n"], r["libraries"][lib]["over_baseline"]) for r in rows
                       if r["workload"] == w and r["op"] == op
                       and "over_baseline" in r["libraries"].get(lib, {})]
                if pts:
                    ax.plot(*zip(*pts), marker="o", label=lib, lw=2.5 if lib == "dualad" else 1.2)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"{w}: {op}")
            ax.set_xlabel("N")
            ax.set_ylabel("time / NumPy f")
            ax.grid(True, which="both", alpha=0.3)
    _save(plt, fig, path, fontsize=9, bottom=0.05, dpi=110)
    return f"plot: {path}"


ADBENCH = ("gmm", "ba", "hand", "lstm")  # ADBench's problems, in the order the paper gives them
# the best derivative / objective ratio published for each (issue 36: ADBench's paper, arXiv 1807.10129)
ADBENCH_BEST = {"gmm": 1.3, "ba": 10.0, "hand": 33.0, "lstm": 2.1}


def plot_adbench(rows: list[dict], names: list[str], path: Path) -> str:
    """ADBench's rows as bars: each derivative's time over the NumPy objective's (ADBench's
    measure), per library, one panel per problem and size, with the best ratio published for
    the problem (the chart of docs/guides/adbench.rst)."""
    plt = _pyplot()
    if plt is None:
        return "matplotlib is not installed: no ADBench plot"
    panels: dict[tuple, list] = {}
    for r in rows:
        if r["workload"] in ADBENCH and r["op"] != "objective":
            panels.setdefault((r["workload"], r["label"]), []).append(r)
    if not panels:
        return "no ADBench rows to plot"
    libraries = [lib for lib in names if any(lib in r["libraries"] for rs in panels.values() for r in rs)]
    colours = dict(zip(libraries, plt.get_cmap("tab10").colors))
    fig, axes = plt.subplots(len(panels), 1, figsize=(8, 1.1 + 0.55 * sum(len(rs) for rs in panels.values())
                                                      * len(libraries) / 3), squeeze=False)
    for ax, ((workload, label), rs) in zip(axes[:, 0], panels.items()):
        ticks = []
        for i, r in enumerate(rs):
            for j, lib in enumerate(libraries):
                value = r["libraries"].get(lib, {}).get("over_baseline")
                if value is not None:
                    y = i * (len(libraries) + 1) + j
                    ax.barh(y, value, color=colours[lib], label=lib)
                    ax.text(value, y, f" {value:.3g}", va="center", fontsize=7)
            ticks.append((i * (len(libraries) + 1) + (len(libraries) - 1) / 2, r["op"]))
        ax.set_yticks([t for t, _ in ticks], [op for _, op in ticks])
        ax.invert_yaxis()
        ax.axvline(ADBENCH_BEST[workload], color="black", ls="--", lw=1, label="best published")
        ax.set_title(f"{workload} {label}", fontsize=9, loc="left")
        ax.grid(True, axis="x", which="both", alpha=0.3)
    axes[-1, 0].set_xlabel("derivative time / NumPy objective time (lower is better)")
    _save(plt, fig, path, fontsize=8, bottom=0.04, dpi=100)
    return f"ADBench plot: {path}"


def pin_cpus(threads: int) -> list[int] | None:
    """Keep this process (and the threads it starts later) on ``threads`` CPUs.

    Thread-count settings are per library and not all are obeyed (XLA's
    CPU matrix products used 1.8 cores of 2 with one thread asked for), so
    on Linux the CPU affinity makes every library share the same cores.
    Returns the CPUs, or None where the platform has no affinity call.
    """
    if not hasattr(os, "sched_setaffinity"):
        return None
    cpus = sorted(os.sched_getaffinity(0))[:max(threads, 1)]
    os.sched_setaffinity(0, cpus)
    return cpus


def machine(device: Device, libraries: list[Library], skipped: dict, threads: int) -> dict:
    cpu = platform.processor()
    if not cpu and os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as fh:
            cpu = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), "")
    versions = {"python": platform.python_version(), "numpy": np.__version__}
    for dist in ("scipy", "jax", "jaxlib", "torch", "autograd", "mygrad", "num_dual", "cupy",
                 "matplotlib"):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    return {"cpu": cpu or "?", "arch": platform.machine(), "nproc": os.cpu_count(),
            "device": device.name, "threads": threads,
            "cpu_affinity": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "blas_env": {v: os.environ.get(v, "unset") for v in _BLAS_VARS},
            "xla_flags": os.environ.get("XLA_FLAGS", ""), "versions": versions,
            "libraries": [lib.name for lib in libraries], "skipped": skipped}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for json/md/png")
    parser.add_argument("--quick", action="store_true", help="N <= 1e5, fewer and shorter samples")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--sizes", type=int, nargs="+", help="N for rosenbrock and mlp")
    parser.add_argument("--only", nargs="+", help="workloads to run (chain rosenbrock mlp "
                        "hessian50 scalar newton gmm ba hand lstm); default: all")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch / XLA threads, and CPUs the process is pinned to (default 1)")
    parser.add_argument("--peers", nargs="+", metavar="NAME",
                        help=f"peers to run ({', '.join(PEER_NAMES)}, or none); default: every "
                        "one installed")
    args = parser.parse_args(argv)
    peers = None if args.peers is None else [p for p in args.peers if p != "none"]
    unknown = sorted(set(peers or ()) - set(PEER_NAMES))
    if unknown:
        parser.error(f"--peers: unknown {', '.join(unknown)}; choose from {', '.join(PEER_NAMES)} or none")

    device = Device(args.device)
    for var in _BLAS_VARS:
        if os.environ.get(var) != str(args.threads):
            print(f"note: {var}={os.environ.get(var, 'unset')} (set it to {args.threads} before "
                  "starting Python for NumPy's BLAS to match --threads)")
    if device.name == "cpu" and pin_cpus(args.threads) is None:
        print(f"note: no CPU affinity on this platform; libraries may use more than {args.threads} "
              "thread(s)")
    libraries, skipped = load_libraries(device, args.threads, peers)
    info = machine(device, libraries, skipped, args.threads)
    print(f"machine: {info['cpu']} {info['arch']}, {info['nproc']} CPUs; device {device.name}; "
          + ", ".join(f"{k} {v}" for k, v in info["versions"].items()))
    for name, why in skipped.items():
        print(f"skipped {name}: {why}")

    sizes = args.sizes or (CUDA_SIZES if args.device == "cuda" else QUICK_SIZES if args.quick else CPU_SIZES)
    repeat, sample_s, budget_s = (3, 0.02, 2.0) if args.quick else (5, 0.05, 4.0)
    runner = Runner(libraries, device, repeat, sample_s, budget_s)
    workloads = args.only or ["chain", "rosenbrock", "mlp", "hessian50", "scalar", "newton", *ADBENCH_OPS]
    if args.device == "cuda":
        cpu_only = [w for w in workloads if w in ("hessian50", "scalar", "newton", *ADBENCH_OPS)]
        if cpu_only:
            print(f"--device cuda: {', '.join(cpu_only)} are CPU workloads (scalars, SciPy, ADBench), "
                  "not run")
        workloads = [w for w in workloads if w not in cpu_only]
    start = time.perf_counter()
    for w in workloads:
        print(f"{w}:", flush=True)
        if w == "chain":
            runner.chain(CHAIN_SIZES)
        elif w == "rosenbrock":
            runner.vector(w, sizes)
        elif w == "mlp":
            runner.vector(w, sizes if args.sizes or args.quick or args.device == "cuda"
                          else sorted(sizes + MLP_EXTRA))
        elif w == "hessian50":
            runner.hessian50()
        elif w == "scalar":
            runner.scalar()
        elif w == "newton":
            runner.newton()
        elif w in ADBENCH_OPS:
            runner.adbench(w, args.quick)
        else:
            parser.error(f"unknown workload {w!r}")
    elapsed = time.perf_counter() - start
    pool_baselines(runner.rows)

    names = [lib.name for lib in libraries]
    text = table(runner.rows, names)
    notes = per_op_lines(runner.rows) + adbench_lines(runner.rows) + [f"not run: {n}" for n in NOT_RUN]
    mismatches = [f"{r['workload']} {r['label']} {r['op']}: {lib}: {c['check']}"
                  for r in runner.rows for lib, c in r["libraries"].items()
                  if c.get("check", "").startswith(("MISMATCH", "unreadable"))]
    errors = [f"{r['workload']} {r['label']} {r['op']}: {lib}: {c['error']}"
              for r in runner.rows for lib, c in r["libraries"].items() if "error" in c]
    print(f"\ncell = time / baseline [dualad time / that library's time]; baseline = "
          f"{'CuPy' if args.device == 'cuda' else 'NumPy'} f (math-module g for scalar, "
          "SciPy Newton-CG with hand-written derivatives for newton)\n")
    print(text)
    for line in notes + [f"mismatch: {m}" for m in mismatches] + [f"error: {e}" for e in errors]:
        print(line)
    print(f"({elapsed:.0f} s)")

    args.out.mkdir(parents=True, exist_ok=True)
    payload = {"machine": info, "args": {"quick": args.quick, "device": args.device, "sizes": sizes,
                                         "repeat": repeat, "sample_s": sample_s},
               "elapsed_s": elapsed, "rows": runner.rows}
    (args.out / "compare.json").write_text(json.dumps(payload, indent=1, default=float))
    (args.out / "compare.md").write_text(text + "\n\n" + "\n".join(notes + mismatches + errors) + "\n")
    print(f"saved: {args.out / 'compare.json'}, {args.out / 'compare.md'}")
    print(plot(runner.rows, names, args.out / "compare.png"))
    print(plot_adbench(runner.rows, names, args.out / "adbench.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

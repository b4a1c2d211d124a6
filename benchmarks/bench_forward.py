"""Forward mode: ``jvp``, ``HyperDual`` second derivatives, ``jacfwd`` chunking.

Every class names its workload and sizes. ``time_*`` methods hold only the
measured call; ``track_*`` methods return a ratio of two times measured in
the same process (``common.speed_ratio``), which is what the targets are
stated in and what stays comparable across machines. ``Control`` does no
AD at all, so a slow machine shows up as such.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from dualad import Dual, HyperDual, jacfwd, jvp, ops

from .common import (
    HYPERDUAL_EVALUATIONS,
    SIZES,
    VECTOR_WORKLOADS,
    direction,
    g,
    g_math,
    hyperdual_value_grad_hessian,
    ratio,
    rosenbrock,
    speed_ratio,
    tanh_map,
    vector,
)


class ForwardJVP:
    """``jvp(f, (x,), (v,))`` for f: R^n -> R, against ``f(x)`` on plain NumPy arrays.

    Workloads (``common``): ``rosenbrock`` (slices, memory-bound) and
    ``elementwise`` (sin, exp, log1p, tanh: compute-bound). Target: at most
    2.5x the function's own time at n = 1e6.
    """

    params = [list(VECTOR_WORKLOADS), SIZES]
    param_names = ["workload", "n"]

    def setup(self, workload, n):
        self.f = VECTOR_WORKLOADS[workload]
        self.x = vector(n)
        self.v = direction(n)

    def _jvp(self):
        return jvp(self.f, (self.x,), (self.v,))

    def time_function(self, workload, n):
        self.f(self.x)

    def time_jvp(self, workload, n):
        jvp(self.f, (self.x,), (self.v,))

    @ratio
    def track_jvp_over_function(self, workload, n):
        return speed_ratio(self._jvp, lambda: self.f(self.x))

    def peakmem_function(self, workload, n):
        self.f(self.x)

    def peakmem_jvp(self, workload, n):
        jvp(self.f, (self.x,), (self.v,))


class HyperDualScalar:
    """Value, gradient and Hessian of ``common.g(x, y)`` at two Python floats.

    ``g(x, y) = exp(x y) sin(x) / (1 + y^2) + log(1 + x^2)`` is written with
    ``dualad.ops``, so on floats it runs the ``math`` fast path and on
    ``HyperDual`` values their scalar path. The full value + gradient +
    Hessian takes ``common.HYPERDUAL_EVALUATIONS = 3`` evaluations of ``g``.
    Target: one HyperDual evaluation costs at most 25x one float evaluation.
    """

    def setup(self):
        self.x, self.y = 0.5, -0.7
        self.hx = HyperDual(self.x, 1.0, 0.0, 0.0)
        self.hy = HyperDual(self.y, 0.0, 1.0, 0.0)

    def time_float(self):
        g(self.x, self.y)

    def time_math(self):
        g_math(self.x, self.y)

    def time_hyperdual_evaluation(self):
        g(self.hx, self.hy)

    def time_value_grad_hessian(self):
        hyperdual_value_grad_hessian(g, self.x, self.y)

    @ratio
    def track_evaluation_over_float(self):
        """One evaluation on prepared HyperDual inputs / one float evaluation of ``g``."""
        return speed_ratio(lambda: g(self.hx, self.hy), lambda: g(self.x, self.y))

    @ratio
    def track_evaluation_over_math(self):
        """One evaluation on prepared HyperDual inputs / the ``math``-module ``g``."""
        return speed_ratio(lambda: g(self.hx, self.hy), lambda: g_math(self.x, self.y))

    @ratio
    def track_value_grad_hessian_per_evaluation_over_float(self):
        """(value + grad + Hessian, inputs built with the public constructor) / 3 / float ``g``."""
        full = speed_ratio(lambda: hyperdual_value_grad_hessian(g, self.x, self.y),
                           lambda: g(self.x, self.y))
        return full / HYPERDUAL_EVALUATIONS


class JacfwdChunks:
    """``jacfwd`` of ``x -> tanh(A @ x) + x**2`` (R^100 -> R^100) by chunk size.

    ``chunk_size = k`` pushes k basis directions per pass (ceil(100 / k)
    passes); ``1`` is one direction at a time, ``100`` the whole Jacobian in
    one pass.
    """

    params = [[1, 8, 32, 100]]
    param_names = ["chunk_size"]
    n = 100

    def setup(self, chunk_size):
        self.f = tanh_map(self.n)
        self.x = vector(self.n)
        self.jac = jacfwd(self.f, chunk_size=chunk_size)

    def time_jacfwd(self, chunk_size):
        self.jac(self.x)

    @ratio
    def track_jacfwd_over_function(self, chunk_size):
        return speed_ratio(lambda: self.jac(self.x), lambda: self.f(self.x))


class Control:
    """No AD at all: plain NumPy Rosenbrock (n = 1e5) and the ``math``-module ``g``.

    If these move, the machine or NumPy moved, not dualad.
    """

    n = 100_000

    def setup(self):
        self.x = vector(self.n)

    def time_numpy_rosenbrock(self):
        rosenbrock(self.x)

    def time_python_math(self):
        g_math(0.5, -0.7)


# name -> (on floats, on size-1 arrays, on value types); binary ops take two
# operands of the same kind, as ``x * y`` in user code does.
_OVERHEAD_OPS = {
    "add": (operator.add, operator.add, operator.add),
    "multiply": (operator.mul, operator.mul, operator.mul),
    "sin": (math.sin, np.sin, ops.sin),
    "exp": (math.exp, np.exp, ops.exp),
}


class Overhead:
    """Per-operation overhead on the smallest inputs, where Python dominates.

    ``kind``: Python ``float`` operands or size-1 float64 arrays. ``raw`` is
    the operation without dualad (``math``/operators or NumPy), ``ops`` is
    ``dualad.ops`` on the same raw values (dispatch only), ``dual`` and
    ``hyperdual`` apply it to ``Dual`` / ``HyperDual`` values with unit
    perturbations.
    """

    params = [["float", "size1"], list(_OVERHEAD_OPS)]
    param_names = ["kind", "op"]

    def setup(self, kind, op):
        on_float, on_array, on_value = _OVERHEAD_OPS[op]
        self.raw_fn = on_float if kind == "float" else on_array
        self.value_fn = on_value
        self.ops_fn = getattr(ops, op)
        if kind == "float":
            a, b = 0.3, -0.4
            one = 1.0
        else:
            a, b = np.array([0.3]), np.array([-0.4])
            one = np.ones(1)
        self.nargs = 1 if op in ("sin", "exp") else 2
        self.raw = (a, b)[: self.nargs]
        self.dual = tuple(Dual(p, one) for p in self.raw)
        self.hyperdual = tuple(HyperDual(p, one, one, 0.0 * one) for p in self.raw)

    def time_raw(self, kind, op):
        self.raw_fn(*self.raw)

    def time_ops(self, kind, op):
        self.ops_fn(*self.raw)

    def time_dual(self, kind, op):
        self.value_fn(*self.dual)

    def time_hyperdual(self, kind, op):
        self.value_fn(*self.hyperdual)

    @ratio
    def track_dual_over_raw(self, kind, op):
        return speed_ratio(lambda: self.value_fn(*self.dual), lambda: self.raw_fn(*self.raw))

    @ratio
    def track_hyperdual_over_raw(self, kind, op):
        return speed_ratio(lambda: self.value_fn(*self.hyperdual), lambda: self.raw_fn(*self.raw))

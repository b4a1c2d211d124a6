"""An initial value problem whose parameters are operands, as SciPy solves it on plain arrays.

``fun(t, y, *args)`` reaches values of dualad's transforms (in ``args``, in what it
closes over): :class:`dualad._implicit.closure.Closed` finds them, and the entries of
:mod:`dualad._ode.entries` take them as operands. What the rules need of ``fun`` at a
point is a product with its Jacobian (``J_y s + J_theta dtheta`` by forward mode,
``a^T J_y, a^T J_theta`` by the registered reverse mode) or the Jacobian ``J_y`` itself
(for the stiff methods' Newton iterations). SciPy asks for one at every stage of every
step, so each is one function compiled by :func:`dualad.jit` per solve: traced once,
replayed on the next calls for a few microseconds where the same product run eagerly
through the value types takes a hundred or more (benchmarks/README.md, "solve_ivp
sensitivities"). ``jit`` guards what ``fun`` decides on traced values and runs it
eagerly where a program cannot hold it, so the products are ``fun``'s in every case.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from dualad._base.backend import NUMPY_XP, scipy_module
from dualad._base.reverse_mode import registered_vjp
from dualad._forward.transforms import jacfwd, jvp
from dualad._implicit.closure import Closed
from dualad._staging.compile import compile as jit
from dualad.numpy import asarray

__all__ = ["STIFF", "Problem"]

STIFF = ("BDF", "Radau", "LSODA")
# The options that describe the user's fun, not an augmented system's.
_OF_FUN = ("jac", "jac_sparsity", "lband", "uband", "vectorized", "events")
# A product is compiled for one solve: replayed always (timing it against eager calls,
# each a hundred times a replay, cost more than it could save) by NumPy's calls (no
# Numba kernel compiled for a program that lives one solve).
_ONCE_PER_SOLVE = {"measure": False, "executor": "numpy"}
# Up to this many unknowns a stiff method gets a dense block Jacobian, beyond a sparse one.
_DENSE_JACOBIAN = 400
# The dense outputs of this many primal solves are kept for the adjoint (more under vmap's
# loop, one per element: the adjoint of an element whose output went solves y again).
_CHECKPOINTS_KEPT = 4


class Problem:
    """``fun``, ``args`` and SciPy's settings of one ``solve_ivp`` call; the values of
    dualad's transforms they reach are ``closed.values``, the operands after ``y0``.

    ``solves`` (:class:`dualad.scipy._solves.Solves`) records what SciPy said of each
    solve of the primal; ``sensitivity`` is how reverse mode differentiates (resolved:
    ``"forward"`` or ``"adjoint"``).
    """

    def __init__(self, fun: Callable, args: tuple, t_span: tuple, t_eval: Any, method: Any,
                 rtol: Any, atol: Any, options: dict, sensitivity: str, solves: Any, who: str):
        def rhs(t, y):
            return fun(t, y, *args)
        jac = options.get("jac")
        self.jac = jac
        if callable(jac):  # with args read where rhs reads them, so that both see the stand-ins
            def jac(t, y):
                return self.options["jac"](t, y, *args)
            self.jac = jac
        self.closed = Closed(rhs, [self.jac] if callable(self.jac) else [], who, "fun")
        self.fun, self.args, self.who = fun, args, who
        self.t_span, self.t_eval, self.method = t_span, t_eval, method
        self.rtol, self.atol, self.options = rtol, atol, options
        self.sensitivity, self.solves = sensitivity, solves
        self._checkpoints: dict = {}

    @property
    def stiff(self) -> bool:
        return self.method in STIFF

    def scipy_solve(self, fun: Callable, y0: Any, *, t_span: Any = None, t_eval: Any = None,
                    atol: Any = None, jac: Any = None, first_step: float | None = None,
                    dense_output: bool = False,
                    user: bool = False) -> Any:
        """SciPy's ``solve_ivp`` with this problem's method, tolerances and step options: of
        the user's system (``user``: every option), or of an augmented one (the options that
        describe the user's ``fun`` left out). ``args`` are not passed: ``fun`` (``closed.fn``)
        and ``jac`` read them where the stand-ins of the operands are put."""
        si = scipy_module(NUMPY_XP, "integrate", self.who)
        options = {k: v for k, v in self.options.items() if user or k not in _OF_FUN}
        if jac is not None:
            options["jac"] = jac
        if first_step is not None:
            options["first_step"] = first_step
        return si.solve_ivp(fun, self.t_span if t_span is None else t_span, y0, method=self.method,
                            t_eval=t_eval, dense_output=dense_output, rtol=self.rtol,
                            atol=self.atol if atol is None else atol, **options)

    def solve(self, y0: Any, theta: tuple, *, t_eval: Any, dense_output: bool = False) -> Any:
        """The user's problem at the operands ``theta`` (plain arrays), as SciPy solves it;
        a stiff method gets ``fun``'s Jacobian by forward mode where the user gave none."""
        with self.closed.running(theta):
            jac = self.jac
            if self.stiff and jac is None and "jac_sparsity" not in self.options:
                jacobian = self.jacobian(theta)
                jac = lambda t, y: jacobian(np.float64(t), y)  # noqa: E731
            return self.scipy_solve(self.closed.fn, y0, t_eval=t_eval, jac=jac,
                                    dense_output=dense_output, user=True)

    # -- the primal solve's dense output, the adjoint's checkpoints ---------------------------
    def keep_checkpoints(self, y0: Any, theta: tuple, sol: Any) -> None:
        """Keep ``sol`` (the dense output of the solve at ``y0``, ``theta``) for the adjoint,
        which then needs no second forward solve of its own."""
        if len(self._checkpoints) >= _CHECKPOINTS_KEPT:
            self._checkpoints.pop(next(iter(self._checkpoints)))
        self._checkpoints[_key(y0, theta)] = sol

    def checkpoints(self, y0: Any, theta: tuple) -> Any:
        """The dense output kept for ``y0``, ``theta`` (the same numbers), or None."""
        return self._checkpoints.get(_key(y0, theta))

    def user_jacobian(self, theta: tuple) -> Callable | None:
        """``J_y(t, y)`` for a stiff method's Newton iterations: the user's ``jac`` (a
        callable run with ``theta`` in place, or a constant matrix), else by forward mode."""
        if not self.stiff:
            return None
        jac = self.jac
        if jac is None:
            return self.jacobian(theta)
        if not callable(jac):
            return lambda t, y: jac

        def user(t, y):
            with self.closed.running(theta):
                return jac(float(t), y)
        return user

    # -- products with fun's Jacobian, each compiled once per solve ------------------------
    def _at(self, t: Any, y: Any, theta: tuple) -> Any:
        """``fun(t, y, *args)`` with ``theta`` in place of the operands, as a vector."""
        with self.closed.running(theta):
            out = asarray(self.closed.fn(t, y))
        if tuple(out.shape) != tuple(y.shape):
            raise ValueError(f"{self.who}: fun must return the derivative of y, of y's shape "
                             f"{tuple(y.shape)}, got shape {tuple(out.shape)}")
        return out

    def tangent_product(self, theta: tuple, directions: dict) -> Callable:
        """``(t, y, s) -> (f, J_y s + sum_i J_theta_i directions[i])``, where ``s`` and each
        direction carry a leading axis of k directions."""
        moved = sorted(directions)

        def product(t, y, s, *values):
            def f(y, *th):
                return self._at(t, y, _put(values[:len(theta)], moved, th))
            return jvp(f, (y, *(values[i] for i in moved)), (s, *values[len(theta):]))
        compiled = jit(product, **_ONCE_PER_SOLVE)
        dirs = [directions[i] for i in moved]
        return lambda t, y, s: compiled(t, y, s, *theta, *dirs)

    def cotangent_product(self, theta: tuple) -> Callable:
        """``(t, y, a) -> (a^T J_y, a^T J_theta_1, ...)`` by the registered reverse mode."""
        vjp = registered_vjp(f"the reverse-mode derivative of {self.who}",
                             "or use forward mode (dualad.jvp, jacfwd) through it")

        def product(t, y, a, *values):
            return vjp(lambda y, *th: self._at(t, y, th), y, *values)[1](a)
        compiled = jit(product, **_ONCE_PER_SOLVE)
        return lambda t, y, a: compiled(t, y, a, *theta)

    def jacobian(self, theta: tuple) -> Callable:
        """``(t, y) -> J_y``, dense, by forward mode."""
        compiled = jit(lambda t, y, *values: jacfwd(lambda y: self._at(t, y, values))(y),
                       **_ONCE_PER_SOLVE)
        return lambda t, y: compiled(t, y, *theta)


def _key(y0: Any, theta: tuple) -> tuple:
    """The operands' numbers, as a key: the adjoint finds the solve of the same numbers."""
    return tuple((a.dtype.str, a.shape, a.tobytes()) for a in map(np.asarray, (y0, *theta)))


def _put(values: tuple, at: list, new: tuple) -> tuple:
    values = list(values)
    for i, v in zip(at, new):
        values[i] = v
    return tuple(values)


def block_jacobian(problem: Problem, jacobian: Callable, blocks: list, at: Callable) -> Callable:
    """The Jacobian of an augmented state for a stiff method's Newton iterations, block
    diagonal: ``blocks`` lists, per block, a function of ``J_y`` (the solution's and each
    sensitivity's block: ``J_y``; an adjoint's: ``-J_y^T``; a quadrature's: None, a zero
    block of the given size). ``at(t, z)`` is the point ``y`` where ``J_y`` is taken. The
    coupling between blocks (second derivatives of ``fun``, the quadrature's dependence on
    the adjoint) is left out: Newton's iterations still converge, only more slowly, and the
    step's error estimate is of the full residual."""
    sizes = [size for _, size in blocks]
    total = sum(sizes)
    dense = total <= _DENSE_JACOBIAN or problem.method == "LSODA"  # LSODA takes dense only

    def jac(t, z):
        j = jacobian(np.float64(t), at(t, z))
        j = np.asarray(j.toarray() if hasattr(j, "toarray") else j, dtype=float)  # a sparse jac
        parts = [np.zeros((size, size)) if block is None else block(j) for block, size in blocks]
        if not dense:
            return scipy_module(NUMPY_XP, "sparse", problem.who).block_diag(parts, format="csc")
        out, start = np.zeros((total, total)), 0
        for part, size in zip(parts, sizes):
            out[start:start + size, start:start + size] = part
            start += size
        return out
    return jac

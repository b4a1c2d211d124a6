"""An initial value problem whose parameters are operands, as SciPy solves it on plain arrays.

``fun(t, y, *args)`` reaches values of dualad's transforms (in ``args``, in what it
closes over): :class:`dualad._implicit.closure.Closed` finds them, and the entries of
:mod:`dualad._ode.entries` take them as operands. What the rules need of ``fun`` at a
point is a product with its Jacobian (``J_y s + J_theta dtheta`` by forward mode,
``a^T J_y, a^T J_theta`` by the registered reverse mode) or a Jacobian (for the stiff
methods' Newton iterations: ``J_y``, and the blocks that couple an augmented system, by
forward mode over the tangent product or from the pullback's rows). SciPy asks for one
at every stage of every step, so each is one function compiled by :func:`dualad.jit` per solve: traced once,
replayed on the next calls for a few microseconds where the same product run eagerly
through the value types takes a hundred or more (benchmarks/README.md, "solve_ivp
sensitivities"). ``jit`` guards what ``fun`` decides on traced values and runs it
eagerly where a program cannot hold it, so the products are ``fun``'s in every case.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from dualad._base.backend import NUMPY_XP, scipy_module
from dualad._base.reverse_mode import registered_vjp
from dualad._base.shapes import raw, shape_of
from dualad._batching.batched import BatchedChoiceError
from dualad._batching.vmap import vmap
from dualad._forward.transforms import jacfwd, jvp
from dualad._implicit.closure import Closed
from dualad._ode.steps import METHODS, Steps, recorded, recursion
from dualad._staging.compile import compile as jit
from dualad.numpy import asarray, stack
from dualad.ops import concatenate, reshape

__all__ = ["COUPLED_UP_TO", "STIFF", "Problem", "newton_matrix"]

STIFF = ("BDF", "Radau", "LSODA")
# sensitivity=None: forward sensitivities up to this many numbers in y0 and the values fun
# reaches together, the adjoint beyond (the crossing measured in benchmarks/README.md).
FORWARD_UP_TO = 20
# The options that describe the user's fun, not an augmented system's.
_OF_FUN = ("jac", "jac_sparsity", "lband", "uband", "vectorized", "events")
# A product is compiled for one solve: replayed always (timing it against eager calls,
# each a hundred times a replay, cost more than it could save) by NumPy's calls (no
# Numba kernel compiled for a program that lives one solve).
_ONCE_PER_SOLVE = {"measure": False, "executor": "numpy"}
# Up to this many unknowns an augmented system's Newton matrix is dense, beyond it sparse.
_DENSE_JACOBIAN = 400
# Up to this many in y, the Newton matrix holds the blocks that couple the sensitivities to
# y, or the quadratures to the adjoint (k n^2 numbers, n products each as J_y's); beyond it
# J_y's blocks alone.
COUPLED_UP_TO = 400
# What this many primal solves kept for their derivatives (an explicit Runge-Kutta method's
# steps; another's dense output, the adjoint's checkpoints) is kept; more under vmap's loop,
# one per element: the derivative of an element whose record went solves y again.
_SOLVES_KEPT = 4


class Problem:
    """``fun``, ``args`` and SciPy's settings of one ``solve_ivp`` call; the values of
    dualad's transforms they reach are ``closed.values``, the operands after ``y0``.

    ``solves`` (:class:`dualad.scipy._solves.Solves`) records what SciPy said of each
    solve of the primal; ``asked`` is the ``sensitivity`` given (None, ``"forward"`` or
    ``"adjoint"``), ``sensitivity`` how reverse mode differentiates (:meth:`resolve`);
    ``compiled``, whether the solve of ``y`` runs ``fun`` compiled by :func:`dualad.jit`
    (one written with dualad's transforms, as :meth:`sensitivity_system`'s, whose eager
    run costs a hundred times a replay; the user's runs as it is).
    """

    def __init__(self, fun: Callable, args: tuple, t_span: tuple, t_eval: Any, method: Any,
                 rtol: Any, atol: Any, options: dict, sensitivity: str | None, solves: Any,
                 who: str, *, compiled: bool = False, second_order: str | None = None):
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
        self.asked = self.sensitivity = sensitivity
        self.solves, self.compiled = solves, compiled
        # how second derivatives are taken: as asked, or on the steps where the method records
        # them, through the sensitivities' ODE otherwise
        self.second_order = second_order or ("steps" if self.on_steps else "sensitivities")
        self._kept: dict = {}

    def resolve(self, n_y0: int) -> None:
        """:attr:`sensitivity`: as asked, or, where None was, forward sensitivities up to
        ``FORWARD_UP_TO`` numbers in ``y0`` (``n_y0`` of them) and the operands together, the
        adjoint beyond."""
        size = n_y0 + sum(math.prod(shape_of(v)) for v in self.closed.values)  # an element's
        self.sensitivity = self.asked or ("forward" if size <= FORWARD_UP_TO else "adjoint")

    @property
    def stiff(self) -> bool:
        return self.method in STIFF

    @property
    def on_steps(self) -> bool:
        """Whether the derivatives are taken on the primal solve's steps
        (:mod:`dualad._ode.steps`): SciPy's explicit Runge-Kutta methods."""
        return isinstance(self.method, str) and self.method in METHODS

    def scipy_solve(self, fun: Callable, y0: Any, *, t_span: Any = None, t_eval: Any = None,
                    atol: Any = None, jac: Any = None, first_step: float | None = None,
                    dense_output: bool = False, user: bool = False,
                    method: Any = None) -> Any:
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
        return si.solve_ivp(fun, self.t_span if t_span is None else t_span, y0,
                            method=self.method if method is None else method,
                            t_eval=t_eval, dense_output=dense_output, rtol=self.rtol,
                            atol=self.atol if atol is None else atol, **options)

    def sensitivity_atol(self, k: int) -> Any:
        """``atol`` for ``y`` and k forward sensitivities: a scalar as it is; a per-component
        array repeated for each sensitivity of its component."""
        atol = np.asarray(self.atol, dtype=float)
        return atol if atol.ndim == 0 else np.tile(atol, k + 1)

    def sensitivity_system(self, t_eval: Any, n: int, theta: tuple, directions: dict,
                           k: int) -> Problem:
        """The forward sensitivities' ODE as a problem of its own: ``z = (y, s_1, ..., s_k)``
        (``n (1 + k)`` numbers), ``z' = (f, J_y s_j + sum_i J_theta_i directions[i][j])``,
        solved at ``t_eval`` with this problem's method, ``rtol`` and step options, and
        :meth:`sensitivity_atol`. ``theta`` and the ``directions`` (each ``(k,
        *theta[i].shape)``) may be values of dualad's transforms: its ``fun`` reaches them, so
        its solution, through the entries of :mod:`dualad._ode.entries`, has derivatives as
        any solution has, by ``fun``'s second derivatives; reverse mode takes its
        ``sensitivity`` as :meth:`resolve` says for its size. Its solves are recorded apart
        from the user's."""
        moved = sorted(directions)
        product = self._tangent(len(theta), moved)
        dirs = [directions[i] for i in moved]

        def augmented(t, z):
            f, ds = product(t, z[:n], reshape(z[n:], (k, n)), *theta, *dirs)
            return concatenate([f, reshape(ds, (-1,))])
        options = {key: v for key, v in self.options.items() if key not in _OF_FUN}
        system = Problem(augmented, (), self.t_span, t_eval, self.method, self.rtol,
                         self.sensitivity_atol(k), options, self.asked,
                         type(self.solves)(self.who), self.who, compiled=True,
                         second_order=self.second_order)
        system.resolve(n * (1 + k))
        return system

    def solve(self, y0: Any, theta: tuple, *, t_eval: Any, dense_output: bool = False,
              records: list | None = None) -> Any:
        """The problem at the operands ``theta`` (plain arrays), as SciPy solves it (``fun``
        compiled where :attr:`compiled`); a stiff method gets ``fun``'s Jacobian by forward
        mode where the user gave none.
        With ``records`` (:attr:`on_steps`), its accepted steps are appended there."""
        with self.closed.running(theta):
            jac = self.jac
            if self.stiff and jac is None and "jac_sparsity" not in self.options:
                jacobian = self.jacobian(theta)
                jac = lambda t, y: jacobian(np.float64(t), y)  # noqa: E731
            method = None if records is None else recorded(self.method, records)
            fun = self.closed.fn
            if self.compiled:
                compiled = jit(lambda t, y, *values: self._at(t, y, values), **_ONCE_PER_SOLVE)
                fun = lambda t, y: compiled(np.float64(t), y, *theta)  # noqa: E731
            return self.scipy_solve(fun, y0, t_eval=t_eval, jac=jac,
                                    dense_output=dense_output, user=True, method=method)

    # -- what the primal solve keeps for the derivatives -------------------------------------
    def keep(self, y0: Any, theta: tuple, kept: Any) -> None:
        """Keep ``kept`` (the steps or the dense output of the solve at ``y0``, ``theta``) for
        the derivatives, which then need no second solve of ``y``."""
        if len(self._kept) >= _SOLVES_KEPT:
            self._kept.pop(next(iter(self._kept)))
        self._kept[_key(y0, theta)] = kept

    def kept(self, y0: Any, theta: tuple) -> Any:
        """What the solve at ``y0``, ``theta`` (the same numbers) kept, or None."""
        return self._kept.get(_key(y0, theta))

    def steps(self, y0: Any, theta: tuple) -> Steps:
        """The accepted steps of the solve at ``y0``, ``theta``: kept, or solved again (at
        ``t_eval``, whose steps' dense output DOP853 records)."""
        steps = self.kept(y0, theta)
        if steps is None:
            records: list = []
            res = self.solve(y0, theta, t_eval=self.t_eval, records=records)
            if not res.success:
                raise RuntimeError(f"{self.who}: the solve of y, for its steps, failed: SciPy "
                                   f"says {res.message!r}")
            steps = Steps(self.method, records, y0)
        return steps

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

    def _tangent(self, n_theta: int, moved: list) -> Callable:
        """``(t, y, s, *theta, *directions) -> (f, J_y s + sum_i J_theta_i directions[i])``."""
        def product(t, y, s, *values):
            def f(y, *th):
                return self._at(t, y, _put(values[:n_theta], moved, th))
            return jvp(f, (y, *(values[i] for i in moved)), (s, *values[n_theta:]))
        return product

    def tangent_product(self, theta: tuple, directions: dict) -> Callable:
        """``(t, y, s) -> (f, J_y s + sum_i J_theta_i directions[i])``, where ``s`` and each
        direction carry a leading axis of k directions."""
        moved = sorted(directions)
        compiled = jit(self._tangent(len(theta), moved), **_ONCE_PER_SOLVE)
        dirs = [directions[i] for i in moved]
        return lambda t, y, s: compiled(t, y, s, *theta, *dirs)

    def tangent_jacobian(self, theta: tuple, directions: dict) -> Callable:
        """``(t, y, s) -> (J_y, C)``, the Jacobian in ``y`` of :meth:`tangent_product`'s two
        results: ``C[j] = d/dy (J_y s_j + J_theta dtheta_j)``, of shape ``(k, n, n)``, the
        block that couples the j-th sensitivity to ``y`` (second derivatives of ``fun``, by
        forward mode over forward mode)."""
        moved = sorted(directions)
        product = self._tangent(len(theta), moved)

        def both(t, y, s, *values):
            return jacfwd(lambda y: product(t, y, s, *values))(y)
        compiled = jit(both, **_ONCE_PER_SOLVE)
        dirs = [directions[i] for i in moved]
        return lambda t, y, s: compiled(t, y, s, *theta, *dirs)

    def _reverse_mode(self) -> Callable:
        """The registered reverse mode's ``vjp``, which the cotangent products need."""
        return registered_vjp(f"the reverse-mode derivative of {self.who}",
                              "or use forward mode (dualad.jvp, jacfwd) through it")

    def cotangent_product(self, theta: tuple) -> Callable:
        """``(t, y, a) -> (a^T J_y, a^T J_theta_1, ...)`` by the registered reverse mode."""
        vjp = self._reverse_mode()

        def product(t, y, a, *values):
            return vjp(lambda y, *th: self._at(t, y, th), y, *values)[1](a)
        compiled = jit(product, **_ONCE_PER_SOLVE)
        return lambda t, y, a: compiled(t, y, a, *theta)

    def jacobian_rows(self, theta: tuple) -> Callable:
        """``(t, y) -> (J_y, J_theta_1, ...)``, each of n rows (``J_theta_i`` of shape
        ``(n, *theta[i].shape)``): the n products ``e_i^T J`` of one pullback of the
        registered reverse mode (the adjoint's Newton matrix, whose quadratures' rows are
        ``-J_theta^T``)."""
        vjp = self._reverse_mode()

        def rows(t, y, *values):
            pull = vjp(lambda y, *th: self._at(t, y, th), y, *values)[1]
            eye = np.eye(y.shape[0])
            cots = [pull(e) for e in eye]
            return tuple(stack([c[i] for c in cots]) for i in range(1 + len(values)))
        compiled = jit(rows, **_ONCE_PER_SOLVE)
        return lambda t, y: compiled(t, y, *theta)

    def through_steps(self, times: Any, y0: Any, theta: tuple) -> Callable:
        """``(y0, theta) -> y`` at ``times``: the method's formulas on the steps of the solve
        at the numbers of ``y0``, ``theta`` (which may carry derivatives), differentiable to
        any order (:func:`dualad._ode.steps.recursion`; :attr:`on_steps` methods only)."""
        steps = self.steps(raw(y0), tuple(np.asarray(raw(th)) for th in theta))
        return recursion(steps, raw(times), self.t_eval is not None,
                         lambda t, y, th: self._at(np.float64(t), y, th))

    # -- products at every stage of every step at once (dualad._ode.steps) -------------------
    def stage_products(self, theta: tuple, directions: dict, T: Any, Y: Any) -> tuple:
        """``(J_y, J_theta dtheta)`` at the points ``(T[i], Y[i])``, ``(N, n, n)`` and
        ``(N, n, k)``, along the k ``directions`` of the operands (as
        :meth:`tangent_product`'s): one call of ``fun``'s JVP mapped over the points, or,
        where ``fun`` decides on its values (``if y[0] > 0``), one replay per point."""
        n, moved = Y.shape[1], sorted(directions)
        k = directions[moved[0]].shape[0] if moved else 0
        seeds = np.concatenate([np.eye(n), np.zeros((k, n))])
        padded = {i: np.concatenate([np.zeros((n, *np.shape(theta[i])), theta[i].dtype),
                                     directions[i]]) for i in moved}
        product = self._tangent(len(theta), moved)
        dirs = [padded[i] for i in moved]
        try:
            ds = np.asarray(vmap(lambda t, y: product(t, y, seeds, *theta, *dirs)[1])(T, Y),
                            dtype=float)
        except BatchedChoiceError:
            one = self.tangent_product(theta, padded)
            ds = np.stack([np.asarray(one(t, y, seeds)[1], dtype=float) for t, y in zip(T, Y)])
        return ds[:, :n].transpose(0, 2, 1), ds[:, n:].transpose(0, 2, 1)

    def stage_pullback(self, theta: tuple, T: Any, Y: Any, mu: Any) -> tuple:
        """``sum_i mu[i]^T J_theta(T[i], Y[i])`` for each operand: one pullback of ``fun``
        mapped over the points, or, where ``fun`` decides on its values, one per point."""
        vjp = self._reverse_mode()

        def mapped(*th):
            return vmap(lambda t, y: self._at(t, y, th))(T, Y)
        try:
            return tuple(np.asarray(c, dtype=float) for c in vjp(mapped, *theta)[1](mu))
        except BatchedChoiceError:
            one = self.cotangent_product(theta)
            sums = [np.zeros(np.shape(th)) for th in theta]
            for t, y, a in zip(T, Y, mu):
                for total, part in zip(sums, one(t, y, a)[1:]):
                    total += np.asarray(part, dtype=float)
            return tuple(sums)

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


def newton_matrix(problem: Problem, sizes: list, blocks: Callable) -> Callable:
    """SciPy's ``jac(t, z)`` for an augmented state made of blocks of ``sizes``:
    ``blocks(t, z)`` gives the nonzero blocks, ``{(row, column): matrix}`` (a sparse one is
    made dense), assembled dense up to ``_DENSE_JACOBIAN`` unknowns (always for LSODA,
    which takes no other), beyond it as a sparse matrix (the blocks a stiff method factorizes
    stay small: one of y's size per block row, a quadrature's block column is zero)."""
    total = sum(sizes)
    starts = np.cumsum([0, *sizes])
    dense = total <= _DENSE_JACOBIAN or problem.method == "LSODA"
    sparse = None if dense else scipy_module(NUMPY_XP, "sparse", problem.who)

    def jac(t, z):
        parts = {at: np.asarray(m.toarray() if hasattr(m, "toarray") else m, dtype=float)
                 for at, m in blocks(np.float64(t), z).items()}
        if dense:
            out = np.zeros((total, total))
            for (i, j), m in parts.items():
                out[starts[i]:starts[i + 1], starts[j]:starts[j + 1]] = m
            return out
        grid = [[None if (i, j) not in parts else sparse.csc_array(parts[i, j])
                 for j in range(len(sizes))] for i in range(len(sizes))]
        for i, size in enumerate(sizes):  # bmat needs each block row and column sized
            if grid[i][i] is None:
                grid[i][i] = sparse.csc_array((size, size))
        return sparse.bmat(grid, format="csc")
    return jac

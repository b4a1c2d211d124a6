"""Newton-type optimizers driven by Hessian-vector products.

Both run on the backend of ``x0`` (NumPy, CuPy or Dask, float32 or float64);
the gradient comes from a reverse pass, and H v from the tangent half of a
forward-over-reverse program traced once per iterate (:func:`mixed.linearize`,
on NumPy) or from one forward-over-reverse pass each. Iterates and gradients
are persisted as they are made, and the scalars a decision needs (f, norms,
slopes) are read together, as in ``mixed._krylov``.

A Dask ``x0`` of one chunk and at most :data:`FORMED_AT_MOST` entries (a model
of few parameters fit to data on a cluster) is the exception: every read of a
scalar is then a round trip to the cluster, dearer than the products
themselves, so the solve runs on the client and each point costs one
computation, which returns f, the gradient and H (see :class:`_Formed`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from concurrent.futures import CancelledError
from dataclasses import dataclass
from typing import Any, Callable

import array_api_compat

import dualad
import reverse
from dualad.interpreter import (
    check_count,
    check_differentiable,
    check_number,
    describe,
    fresh_keys,
    namespace_of,
    persist,
    to_floats,
    traceable,
)
from mixed._hvp import check_objective, check_vector
from mixed._hvp import hessian as _hessian
from mixed._hvp import hvp as _hvp
from mixed._krylov import abs_sum, steihaug_cg, truncated_cg, vdot
from mixed._linearize import linearize as _linearize

__all__ = ["OptimizeResult", "newton_cg", "trust_region"]


#: ``status`` codes, as SciPy's Newton-CG and trust-ncg number them.
SUCCESS, MAXITER, NO_PROGRESS, NOT_FINITE, IN_PROGRESS, STOPPED = 0, 1, 2, 3, -1, 99


@dataclass(repr=False)
class OptimizeResult:
    """The outcome of a solve, with SciPy's fields, read as attributes or as ``r["x"]``.

    Attributes
    ----------
    x : array
        The final point (the best one found).
    fun : float
        f at ``x``.
    jac : array
        The gradient of f at ``x``.
    nit : int
        Steps taken (for ``trust_region``, steps tried, taken or not).
    nfev, njev : int
        Evaluations of f and of its gradient (the same: one reverse pass gives both).
    nhev : int
        Hessian-vector products (SciPy's count of Hessian evaluations); on a
        small Dask ``x0``, CG's products with H formed at each point.
    status : int
        0 converged; 1 iteration limit; 2 no further progress possible (the
        line search failed, or the trust region collapsed); 3 f, its
        gradient or an H-product not finite; 99 the callback raised
        ``StopIteration``; -1 in the results handed to the callback.
    success : bool
        ``status == 0``.
    message : str
        What ended the solve, in words.

    Examples
    --------
    >>> import numpy as np
    >>> from mixed import newton_cg
    >>> r = newton_cg(lambda x: ((x - 2.0) ** 2).sum(), np.zeros(3))
    >>> r.x, r["status"], r.success
    (array([2., 2., 2.]), 0, True)
    """

    x: Any
    fun: float
    jac: Any
    nit: int
    nfev: int
    njev: int
    nhev: int
    status: int
    success: bool
    message: str

    def __getitem__(self, key: str) -> Any:
        if not isinstance(key, str) or key not in self.__dataclass_fields__:
            raise KeyError(f"OptimizeResult has no field {key!r}; its fields are "
                           f"{', '.join(self.__dataclass_fields__)}")
        return getattr(self, key)

    def keys(self) -> list[str]:
        return list(self.__dataclass_fields__)

    def __repr__(self) -> str:
        order = ("message", "success", "status", "fun", "x", "nit", "jac", "nfev", "njev", "nhev")
        width = max(map(len, order))
        indent = "\n" + " " * (width + 2)  # a multi-line value (an array) stays in its column
        return "\n".join(f"{name:>{width}}: " + _shown(getattr(self, name)).replace("\n", indent)
                         for name in order)


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else repr(value)


def _result(x, fval, g, nit: int, nfev: int, nhev: int, status: int, message: str) -> OptimizeResult:
    """A result; ``njev`` is ``nfev``, as each evaluation gives f and its gradient."""
    return OptimizeResult(x, fval, g, nit, nfev, nfev, nhev, status, status == SUCCESS, message)


def _check_x0(x0: Any) -> Any:
    check_vector(x0, "x0")
    check_differentiable(x0, "x0")
    return x0


def _check_solver(f: Any, args: Any, x: Any, tol: float, maxiter: int | None, cg_maxiter: int | None,
                  callback: Callable | None, who: str) -> tuple[Callable, int]:
    """The settings both solvers share, checked (a NaN or negative ``tol`` would
    never stop, or never start, the iteration; a negative ``maxiter`` returns
    garbage); returns ``x -> f(x, *args)``, checked to be a scalar, and the
    iteration limit (SciPy's default ``200 * len(x0)`` for None)."""
    objective = check_objective(f, args, who)
    check_number("tol", tol)
    if maxiter is None:
        maxiter = 200 * x.shape[0]
    check_count(maxiter, "maxiter")
    if cg_maxiter is not None:
        check_count(cg_maxiter, "cg_maxiter", low=1)
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be a function of the OptimizeResult so far, or None, "
                        f"got {describe(callback)}")
    return objective, maxiter


def _progress(callback: Callable | None, x, fval, g, nit, nfev, nhev) -> OptimizeResult | None:
    """Hand the solve so far to ``callback`` (after each step); the final result
    if it asked to stop by raising ``StopIteration``, as SciPy's callbacks may."""
    if callback is None:
        return None
    try:
        callback(_result(x, fval, g, nit, nfev, nhev, IN_PROGRESS, "in progress"))
    except StopIteration:
        return _result(x, fval, g, nit, nfev, nhev, STOPPED, "stopped by the callback (StopIteration)")
    return None


def _shown_to(callback: Callable | None, oracle: Any) -> Callable | None:
    """``callback``, handed the results as the caller's backend holds them."""
    return callback if callback is None else lambda result: callback(oracle.given(result))


class _Report:
    """What ``disp=True`` prints: a line per iteration, then a summary."""

    def __init__(self, disp: bool, columns: str):
        self.disp = bool(disp)
        if self.disp:
            print(f"{'nit':>5} {'f':>15} {'|grad f|':>10} {'nfev':>6} {'nhev':>7}{columns}")

    def step(self, it: int, fval: float, gnorm: float, nfev: int, nhev: int, extra: str = "") -> None:
        if self.disp:
            print(f"{it:5d} {fval:15.8e} {gnorm:10.3e} {nfev:6d} {nhev:7d}{extra}")

    def end(self, res: OptimizeResult) -> OptimizeResult:
        if self.disp:
            print(res.message if res.success else f"Warning: {res.message}")
            print(f"         Current function value: {res.fun:f}")
            for label, count in (("Iterations", res.nit), ("Function evaluations", res.nfev),
                                 ("Gradient evaluations", res.njev), ("Hessian evaluations", res.nhev)):
                print(f"         {label}: {count:d}")
        return res


def _eps(x: Any) -> float:
    return float(namespace_of([x]).finfo(x.dtype).eps)


def _max_abs(a: Any) -> Any:
    """The largest |entry| of ``a``, as a scalar of the backend (0.0 if empty)."""
    xp = namespace_of([a])
    return xp.max(xp.abs(a)) if a.shape[0] else 0.0


def _noise(fval: float, x: Any) -> float:
    """How far apart two values of f near ``fval`` can be from rounding alone."""
    return 10.0 * _eps(x) * max(abs(fval), 1e-300)


def _trapezoid_decrease(g: Any, g_new: Any, p: Any) -> float:
    """f(x) - f(x + p) from the slopes at both ends: exact for a quadratic, and
    free of the cancellation that makes ``f(x) - f(x + p)`` useless once the
    decrease is below f's rounding level (near a minimum with f* != 0)."""
    slope, slope_new = to_floats(vdot(g, p), vdot(g_new, p))
    return -0.5 * (slope + slope_new)


def _stop(x, fval, g, gnorm, tol, it, nfev, nhev) -> OptimizeResult | None:
    """The result, if the solve ends here: converged, or met a non-finite value."""
    if not (math.isfinite(fval) and math.isfinite(gnorm)):
        return _result(x, fval, g, it, nfev, nhev, NOT_FINITE, "non-finite objective or gradient")
    if gnorm <= tol:
        return _result(x, fval, g, it, nfev, nhev, SUCCESS,
                       f"Optimization terminated successfully: gradient norm {gnorm:.3g} <= tol")
    return None


def _lost_values_are_an_error(solver: Callable) -> Callable:
    """``solver``, raising an error that says what happened when a value it has
    persisted is cancelled under it: on a Dask cluster, a restart (or workers that
    left with the only copy of what cannot be recomputed) mid-solve. Nothing the
    caller passed in has changed, so the solve can simply be run again."""
    @functools.wraps(solver)
    def run(f, x0, **options):
        try:
            return solver(f, x0, **options)
        except CancelledError as err:
            raise RuntimeError(
                f"{solver.__name__}: values this solve had computed were cancelled before it "
                f"finished ({type(err).__name__}: {err}); on a Dask cluster that is a restart, or "
                "workers that left with the only copy. f and x0 are as they were: run the solve "
                "again") from err
    return run


@_lost_values_are_an_error
def newton_cg(f: Callable, x0: Any, *, args: tuple = (), tol: float = 1e-8, maxiter: int | None = None,
              cg_maxiter: int | None = None, c1: float = 1e-4,
              callback: Callable[[OptimizeResult], None] | None = None,
              disp: bool = False, linearize: bool = True) -> OptimizeResult:
    """Minimize ``f`` by matrix-free truncated Newton (Newton-CG) with a line search.

    Each outer step solves H p = -g by CG until the residual's 1-norm is
    at most ``min(0.5, sqrt(||g||_1)) ||g||_1`` (a superlinear forcing sequence,
    SciPy's rule), with H p from :func:`mixed.linearize` (see ``linearize``); negative curvature ends
    CG with a descent direction; a backtracking Armijo line search picks the
    step length. A trial point where f is NaN or infinite is backtracked
    from; once f's change is below its rounding level, the Armijo test is
    applied to the slopes at both ends instead.

    The problem is unconstrained: there are no bounds, as SciPy's
    Newton-CG takes none (SciPy's L-BFGS-B, TNC or trust-constr, with
    :mod:`mixed.scipy`'s ``jac`` and ``hessp``, solve bounded problems).

    Parameters
    ----------
    f : callable
        Scalar objective ``f(x, *args)`` of a 1-d array ``x``.
    x0 : array
        Starting point; its backend (NumPy, CuPy or Dask) and dtype are kept.
    args : tuple
        Further arguments of ``f``, held constant (SciPy's ``args``).
    tol : float
        Stop when the gradient's 2-norm is at most ``tol`` (>= 0; choose
        about 1e-4 or looser in float32).
    maxiter : int, optional
        Maximum number of Newton steps (>= 0); default ``200 * len(x0)``,
        SciPy's default for its Newton-CG (Rosenbrock's function in 1000
        variables, from zeros, takes about 1500).
    cg_maxiter : int, optional
        Maximum number of CG iterations (H-products) per step; default
        ``max(2 n, 20)``.
    c1 : float
        The Armijo sufficient-decrease constant, in (0, 1).
    callback : callable, optional
        Called after each step with an :class:`OptimizeResult` of the solve so
        far (``x``, ``fun``, ``jac`` and the counts; ``status`` -1, ``message``
        "in progress"). Raising ``StopIteration`` in it ends the solve, with
        status 99, as in SciPy.
    disp : bool
        Print a line per iteration (f, the gradient's norm, the counts so
        far) and a summary at the end, as SciPy's ``disp`` option does.
    linearize : bool
        On NumPy, take each step's H-products from :func:`mixed.linearize` at
        the iterate: the forward-over-reverse program is traced once per
        solve, its primal half computed once per iterate, and each product
        replays its tangent half (the same numbers, without f's Python). False, or another backend:
        one :func:`mixed.hvp` pass per product. A Dask ``x0`` of one chunk and at most 64
        entries forms H at each point instead, in the computation that gives f and the
        gradient (n directions, 16 to a pass over the data), and CG takes its products from
        it on the client: one round trip to the cluster per point instead of one per
        product.

    Returns
    -------
    OptimizeResult
        ``success`` is False, with the reason in ``message`` and ``status``
        (see :class:`OptimizeResult`), when the iteration limit is reached
        (1), the line search finds no decrease (2), or f, its gradient or an
        H-product is not finite (3).

    Examples
    --------
    >>> import numpy as np
    >>> from mixed import newton_cg
    >>> r = newton_cg(lambda x, a: ((x - a) ** 2).sum() + (x ** 4).sum(), np.zeros(3), args=(3.0,))
    >>> bool(r.success), r.status, np.round(r.x, 6)
    (True, 0, array([1., 1., 1.]))
    >>> r = newton_cg(lambda x: ((x - 1.0) ** 2).sum(), np.zeros(2), disp=True)
      nit               f   |grad f|   nfev    nhev
        0  2.00000000e+00  2.828e+00      1       0
        1  0.00000000e+00  0.000e+00      2       1
    Optimization terminated successfully: gradient norm 0 <= tol
             Current function value: 0.000000
             Iterations: 1
             Function evaluations: 2
             Gradient evaluations: 2
             Hessian evaluations: 1
    """
    x = _check_x0(x0)
    f, maxiter = _check_solver(f, args, x, tol, maxiter, cg_maxiter, callback, "newton_cg")
    check_number("c1", c1, 0.0, 1.0, high_open=True, low_open=True)
    report, oracle = _Report(disp, ""), _oracle(f, x, linearize)
    return report.end(oracle.given(_newton_cg_steps(
        oracle, oracle.start(x), tol, maxiter, cg_maxiter or max(2 * x.shape[0], 20), c1,
        _shown_to(callback, oracle), report)))


def _on_dask(fn: Callable) -> Callable:
    """``fn``, compiled for Dask arrays: a call then builds one task per chunk of the
    data (see :func:`dualad.compile`) instead of a graph of tasks per primitive, which
    cost more than computing them. Where ``fn`` does not split so, compile runs it as
    before, eagerly; its warning is compile's, not the solver's."""
    compiled = dualad.compile(fn)

    def call(*args: Any) -> Any:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", r"dualad\.compile\(", RuntimeWarning)
            return compiled(*args)
    return call


#: A Dask ``x0`` of one chunk and at most this many entries is solved on the client,
#: with H formed at each point (see :class:`_Formed`).
FORMED_AT_MOST = 64
#: H's directions batched in one pass over a chunk: each intermediate of a pass holds this
#: many values per row, for a little more time than one pass of all (benchmarks/README.md).
DIRECTIONS_PER_PASS = 16


def _oracle(f: Callable, x: Any, linearize: bool) -> "_OnTheBackend | _Formed":
    """What the steps ask of ``f``, for a solve from ``x``."""
    if (array_api_compat.is_dask_array(x) and x.shape[0] <= FORMED_AT_MOST
            and len(x.chunks[0]) == 1):
        return _Formed(f, x)
    return _OnTheBackend(f, x, linearize)


class _OnTheBackend:
    """f, its gradient and H at points of ``x0``'s backend. ``at(x)`` gives ``(x, f(x),
    grad f(x))``, persisted (on Dask: computed and kept, so that reading f and the
    gradient's norms later does not run f again; f(x) is a scalar of the backend,
    read by the caller with what else it needs). ``hessian(x)`` gives H at ``x`` as
    something with ``matvec``: on NumPy with ``linearize``, the operator of
    :func:`mixed.linearize` (from the last one's trace); else one forward-over-reverse
    pass per product (compiled once per solve on Dask)."""

    def __init__(self, f: Callable, x: Any, linearize: bool):
        self.f, self.linearize = f, linearize and traceable(x)
        vg, products = reverse.value_and_grad(f), lambda x, d: _hvp(f, x, d)
        if array_api_compat.is_dask_array(x):
            vg, products = _on_dask(vg), _on_dask(products)
        self.vg, self.products = vg, products
        self.last = None  # the operator of linearize at the last iterate

    def start(self, x0: Any) -> Any:
        """``x0``; on Dask with keys of its own, and so every array of the solve
        (see ``fresh_keys``)."""
        return fresh_keys(x0)

    def at(self, x: Any) -> tuple:
        value, g = self.vg(x)
        return persist(x, value, g)

    def hessian(self, x: Any) -> Any:
        if not self.linearize:
            return _PerProduct(self.products, x)
        self.last = self.last.at(x)[1] if self.last is not None else _linearize(self.f, x)[1]
        return self.last

    def given(self, result: OptimizeResult) -> OptimizeResult:
        return result


class _PerProduct:
    """H at ``x`` by one forward-over-reverse pass per product, ``products(x, d)``."""

    def __init__(self, products: Callable, x: Any):
        self.products, self.x = products, x

    def matvec(self, d: Any) -> Any:
        return self.products(self.x, d)


class _Formed:
    """f at points of a Dask ``x0`` of one chunk and at most :data:`FORMED_AT_MOST`
    entries: the solve runs on the client, on NumPy copies of the iterates, and each
    point is one computation on the cluster, compiled to one task per chunk of the
    data, that returns f, its gradient and H (the n directions' H-products batched,
    :data:`DIRECTIONS_PER_PASS` to a pass over each chunk: :func:`mixed.hessian`). CG
    then takes its products
    from that matrix, so a Newton step whose first trial point is accepted costs
    one round trip to the cluster instead of one per H-product and per read. The
    results, and what the callback sees, are Dask arrays of ``x0``'s chunks."""

    def __init__(self, f: Callable, x0: Any):
        self.chunks = x0.chunks
        hessian = _hessian(f, chunk_size=DIRECTIONS_PER_PASS)
        self.evaluate = _on_dask(lambda x: (*reverse.value_and_grad(f)(x), hessian(x)))
        self.last = None  # (x, H) of the last point

    def start(self, x0: Any) -> Any:
        """``x0`` on the client, as NumPy."""
        return x0.compute()

    def at(self, x: Any) -> tuple:
        import dask
        import dask.array as da
        value, g, h = dask.compute(*self.evaluate(da.from_array(x, chunks=-1)))
        self.last = x, h
        return x, value, g

    def hessian(self, x: Any) -> Any:
        if self.last is None or self.last[0] is not x:  # not the last point evaluated
            self.at(x)
        return _Matrix(self.last[1])

    def given(self, result: OptimizeResult) -> OptimizeResult:
        import dask.array as da
        return dataclasses.replace(result, x=da.from_array(result.x, chunks=self.chunks),
                                   jac=da.from_array(result.jac, chunks=self.chunks))


class _Matrix:
    """H as a matrix in memory."""

    def __init__(self, h: Any):
        self.h = h

    def matvec(self, d: Any) -> Any:
        return self.h @ d


def _newton_cg_steps(oracle, x, tol, maxiter, cg_maxiter, c1, callback, report) -> OptimizeResult:
    x, fval, g = oracle.at(x)
    nfev, nhev = 1, 0
    for it in range(maxiter + 1):
        fval, gg, g1 = to_floats(fval, vdot(g, g), abs_sum(g))  # fval is read here only at x0
        gnorm = math.sqrt(gg)
        report.step(it, fval, gnorm, nfev, nhev)
        done = _stop(x, fval, g, gnorm, tol, it, nfev, nhev)
        if done is not None:
            return done
        if it == maxiter:
            break
        # The 1-norm (SciPy's choice) rather than the 2-norm in the forcing
        # test. Measured on Rosenbrock n = 1000 from zeros: the 2-norm took
        # 2333 steps and 5800 f-evaluations (3466 of them halvings in the
        # line search), the 1-norm 1524 and 1936, with about the same number
        # of H-products (16.9k vs 16.2k); from 0.5 * ones 47 vs 40 steps.
        hess = oracle.hessian(x)
        p, used, finite = truncated_cg(hess.matvec, g,
                                       min(0.5, math.sqrt(g1)) * g1, cg_maxiter, norm=abs_sum)
        nhev += used
        if not finite:
            return _result(x, fval, g, it, nfev, nhev, NOT_FINITE, "non-finite Hessian-vector product")
        slope, x_max, p_max = to_floats(vdot(g, p), _max_abs(x), _max_abs(p))
        if slope >= 0:  # not a descent direction (inexact CG); fall back to -g
            (p,), slope, p_max = persist(-g), -gnorm * gnorm, to_floats(_max_abs(g))[0]
        step, accepted, trials, finite_trials = 1.0, False, 0, 0
        noise = _noise(fval, x)
        # Below this step x + step p rounds to x: no trial point is left.
        smallest = _eps(x) * x_max / max(p_max, 1e-300)
        while trials < 60 and step > smallest:
            x_new, f_new, g_new = oracle.at(x + step * p)
            (f_new,) = to_floats(f_new)
            nfev += 1
            trials += 1
            if math.isfinite(f_new):
                finite_trials += 1
                if f_new <= fval + c1 * step * slope:
                    accepted = True
                    break
                # Armijo on the slopes when f's change is lost in rounding.
                if (abs(f_new - fval) <= noise
                        and _trapezoid_decrease(g, g_new, step * p) >= -c1 * step * slope):
                    accepted = True
                    break
            step *= 0.5
        if not accepted:
            why = ("the step is below the rounding of x" if trials == 0
                   else "f was not finite at any" if finite_trials == 0
                   else "f did not decrease enough at any")
            return _result(x, fval, g, it, nfev, nhev, NO_PROGRESS,
                           f"line search failed after {trials} trial points: {why}")
        x, fval, g = x_new, f_new, g_new
        stopped = _progress(callback, x, fval, g, it + 1, nfev, nhev)
        if stopped is not None:
            return stopped
    return _result(x, fval, g, maxiter, nfev, nhev, MAXITER,
                   f"maximum number of iterations ({maxiter}) reached")


@_lost_values_are_an_error
def trust_region(f: Callable, x0: Any, *, args: tuple = (), tol: float = 1e-8, maxiter: int | None = None,
                 initial_radius: float = 1.0, max_radius: float = 1e4, eta: float = 0.15,
                 cg_maxiter: int | None = None,
                 callback: Callable[[OptimizeResult], None] | None = None,
                 disp: bool = False, linearize: bool = True) -> OptimizeResult:
    """Minimize ``f`` by a trust-region Newton method with Steihaug-CG steps.

    Each step minimizes the quadratic model ``g.p + p.Hp / 2`` over ``||p|| <= radius``
    by Steihaug's truncated CG (H p from :func:`mixed.linearize`); the step is
    taken if the actual decrease is more than ``eta`` times the predicted
    one, and the radius shrinks (ratio < 1/4) or doubles (ratio > 3/4 at
    the boundary). Once f's change is below its rounding level, the actual
    decrease is estimated from the slopes at both ends.

    The problem is unconstrained: there are no bounds, as SciPy's
    trust-ncg takes none (SciPy's trust-constr, with :mod:`mixed.scipy`'s
    ``jac`` and ``hessp``, solves bounded and constrained problems).

    Parameters
    ----------
    f : callable
        Scalar objective ``f(x, *args)`` of a 1-d array ``x``.
    x0 : array
        Starting point; its backend (NumPy, CuPy or Dask) and dtype are kept.
    args : tuple
        Further arguments of ``f``, held constant (SciPy's ``args``).
    tol : float
        Stop when the gradient's 2-norm is at most ``tol`` (>= 0).
    maxiter : int, optional
        Maximum number of steps, accepted or not (>= 0); default
        ``200 * len(x0)``, SciPy's default for its trust-ncg (Rosenbrock's
        function in 1000 variables, from zeros, takes about 4300).
    initial_radius, max_radius : float
        The first and the largest trust radius.
    eta : float
        Acceptance threshold on actual / predicted decrease, in [0, 1/4).
    cg_maxiter : int, optional
        Maximum number of CG iterations per step; default ``max(2 n, 20)``.
    callback : callable, optional
        Called after each step, taken or not, with an :class:`OptimizeResult`
        of the solve so far (``status`` -1, ``message`` "in progress").
        Raising ``StopIteration`` in it ends the solve, with status 99.
    disp : bool
        Print a line per iteration (f, the gradient's norm, the counts so
        far, the trust radius) and a summary at the end.
    linearize : bool
        On NumPy, take each step's H-products from :func:`mixed.linearize` at
        the iterate: the forward-over-reverse program is traced once per
        solve, its primal half computed once per iterate, and each product
        replays its tangent half (the same numbers, without f's Python). False, or another backend:
        one :func:`mixed.hvp` pass per product. A Dask ``x0`` of one chunk and at most 64
        entries forms H at each point instead, in the computation that gives f and the
        gradient (n directions, 16 to a pass over the data), and CG takes its products from
        it on the client: one round trip to the cluster per point instead of one per
        product.

    Returns
    -------
    OptimizeResult
        ``success`` is False, with the reason in ``message`` and ``status``
        (see :class:`OptimizeResult`), when the iteration limit is reached
        (1), the radius collapses (2), or f, its gradient or an H-product is
        not finite (3).

    Examples
    --------
    >>> import numpy as np
    >>> from mixed import trust_region
    >>> r = trust_region(lambda x, a: ((x - a) ** 2).sum() + (x ** 4).sum(), np.zeros(3), args=(3.0,))
    >>> bool(r.success), np.round(r.x, 6)
    (True, array([1., 1., 1.]))
    >>> r["nit"] == r.nit, r.nfev == r.njev
    (True, True)
    """
    x = _check_x0(x0)
    f, maxiter = _check_solver(f, args, x, tol, maxiter, cg_maxiter, callback, "trust_region")
    if not 0 <= eta < 0.25:
        raise ValueError(f"eta must be in [0, 0.25), got {eta}")
    if not 0 < initial_radius <= max_radius:
        raise ValueError(f"need 0 < initial_radius <= max_radius, got {initial_radius} and {max_radius}")
    report, oracle = _Report(disp, f" {'radius':>10}"), _oracle(f, x, linearize)
    return report.end(oracle.given(_trust_region_steps(
        oracle, oracle.start(x), tol, maxiter, initial_radius, max_radius, eta,
        cg_maxiter or max(2 * x.shape[0], 20), _shown_to(callback, oracle), report)))


def _trust_region_steps(oracle, x, tol, maxiter, radius, max_radius, eta, cg_maxiter, callback,
                        report) -> OptimizeResult:
    x, fval, g = oracle.at(x)
    nfev, nhev = 1, 0
    hess_x = hess = None  # a rejected step keeps x, and its H-products
    for it in range(maxiter + 1):
        fval, gg = to_floats(fval, vdot(g, g))  # fval is read here only at x0
        gnorm = math.sqrt(gg)
        report.step(it, fval, gnorm, nfev, nhev, f" {radius:10.3e}")
        done = _stop(x, fval, g, gnorm, tol, it, nfev, nhev)
        if done is not None:
            return done
        if it == maxiter:
            break
        if x is not hess_x:
            hess_x, hess = x, oracle.hessian(x)
        p, hp, used, finite = steihaug_cg(hess.matvec, g, radius,
                                          min(0.5, math.sqrt(gnorm)) * gnorm, cg_maxiter)
        nhev += used
        if not finite:
            return _result(x, fval, g, it, nfev, nhev, NOT_FINITE, "non-finite Hessian-vector product")
        x_new, f_new, g_new = oracle.at(x + p)
        gp, php, pp, f_new = to_floats(vdot(g, p), vdot(p, hp), vdot(p, p), f_new)
        predicted = -(gp + 0.5 * php)
        nfev += 1
        actual = fval - f_new if math.isfinite(f_new) else -math.inf
        if abs(actual) <= _noise(fval, x):
            estimate = _trapezoid_decrease(g, g_new, p)
            actual = estimate if math.isfinite(estimate) else -math.inf
        rho = actual / predicted if predicted > 0 else -1.0
        pnorm = math.sqrt(pp)
        if rho < 0.25:
            radius = 0.25 * pnorm
            if radius < 1e-14 * max(1.0, math.sqrt(to_floats(vdot(x, x))[0])):
                return _result(x, fval, g, it, nfev, nhev, NO_PROGRESS,
                               "trust region collapsed (no decrease possible)")
        elif rho > 0.75 and pnorm >= 0.99 * radius:
            radius = min(2.0 * radius, max_radius)
        if rho > eta:
            x, fval, g = x_new, f_new, g_new
        stopped = _progress(callback, x, fval, g, it + 1, nfev, nhev)
        if stopped is not None:
            return stopped
    return _result(x, fval, g, maxiter, nfev, nhev, MAXITER,
                   f"maximum number of iterations ({maxiter}) reached")

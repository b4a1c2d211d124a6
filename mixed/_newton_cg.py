"""``newton_cg``: matrix-free truncated Newton (Newton-CG) with a line search,
on the backend of ``x0``; the oracle (:mod:`mixed._oracles`) gives f, its
gradient and H at each point.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from dualad.interpreter import check_number, namespace_of, persist, to_floats
from mixed._krylov import abs_sum, truncated_cg, vdot
from mixed._oracles import _oracle
from mixed._result import MAXITER, NO_PROGRESS, NOT_FINITE, OptimizeResult, _progress, _Report, _result
from mixed._solver import (
    _check_solver,
    _check_x0,
    _eps,
    _lost_values_are_an_error,
    _noise,
    _shown_to,
    _stop,
    _trapezoid_decrease,
)

__all__ = ["newton_cg"]


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


def _max_abs(a: Any) -> Any:
    """The largest |entry| of ``a``, as a scalar of the backend (0.0 if empty)."""
    xp = namespace_of([a])
    return xp.max(xp.abs(a)) if a.shape[0] else 0.0


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

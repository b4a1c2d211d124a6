"""``trust_region``: a trust-region Newton method with Steihaug-CG steps, on the
backend of ``x0``; the oracle (:mod:`mixed._oracles`) gives f, its gradient and
H at each point.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from dualad.interpreter import to_floats
from mixed._krylov import steihaug_cg, vdot
from mixed._oracles import _oracle
from mixed._result import MAXITER, NO_PROGRESS, NOT_FINITE, OptimizeResult, _progress, _Report, _result
from mixed._solver import (
    _check_solver,
    _check_x0,
    _lost_values_are_an_error,
    _noise,
    _shown_to,
    _stop,
    _trapezoid_decrease,
)

__all__ = ["trust_region"]


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

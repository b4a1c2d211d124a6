"""What ``newton_cg`` and ``trust_region`` share: their settings checked, the
test that ends a solve, f's rounding level and the decrease measured below it,
the callback handed results on the caller's backend, and the error raised when
a Dask cluster loses values a solve had computed.
"""

from __future__ import annotations

import functools
import math
from concurrent.futures import CancelledError
from typing import Any, Callable

from dualad.interpreter import (
    check_count,
    check_differentiable,
    check_number,
    describe,
    namespace_of,
    to_floats,
)
from mixed._hvp import check_objective, check_vector
from mixed._krylov import vdot
from mixed._result import NOT_FINITE, SUCCESS, OptimizeResult, _result


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


def _shown_to(callback: Callable | None, oracle: Any) -> Callable | None:
    """``callback``, handed the results as the caller's backend holds them."""
    return callback if callback is None else lambda result: callback(oracle.given(result))


def _eps(x: Any) -> float:
    return float(namespace_of([x]).finfo(x.dtype).eps)


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

"""The strong-Wolfe line search of PyTorch's L-BFGS, and the cubic interpolation it steps by.

Both follow ``torch/optim/lbfgs.py`` (``_strong_wolfe``, ``_cubic_interpolate``),
themselves ported from minFunc's ``lswolfe.lua`` and ``polyinterp.lua``, branch
for branch, so that ``LBFGS(line_search_fn="strong_wolfe")`` takes PyTorch's
steps. Step lengths, losses and directional derivatives are Python floats;
gradients and the direction are flat arrays of the parameters' backend.
"""

from __future__ import annotations

from typing import Any, Callable

from dualad import ops

__all__ = ["cubic_interpolate", "strong_wolfe"]


def cubic_interpolate(x1: float, f1: float, g1: float, x2: float, f2: float, g2: float,
                      bounds: tuple[float, float] | None = None) -> float:
    """The minimizer, clipped to ``bounds`` (default: between ``x1`` and ``x2``), of the
    cubic through two points with their values ``f`` and slopes ``g``; the middle of
    the bounds when the cubic has no minimum."""
    low, high = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    # ops.divide: a zero denominator gives inf or nan, as in PyTorch, rather than an exception.
    d1 = g1 + g2 - 3 * ops.divide(f1 - f2, x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = ops.sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ops.divide(g2 + d2 - d1, g2 - g1 + 2 * d2)
        else:
            min_pos = x1 - (x1 - x2) * ops.divide(g1 + d2 - d1, g1 - g2 + 2 * d2)
        return min(max(min_pos, low), high)
    return (low + high) / 2.0


def strong_wolfe(evaluate: Callable[[float], tuple[float, Any]], d: Any, t: float, f: float, g: Any,
                 gtd: float, c1: float = 1e-4, c2: float = 0.9, tolerance_change: float = 1e-9,
                 max_ls: int = 25) -> tuple[float, Any, float, int]:
    """A step length along ``d`` that meets the strong Wolfe conditions, if one is found.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(t)`` is the loss and flat gradient at ``x + t d``.
    d : array
        The search direction (flat).
    t : float
        The first step length to try.
    f, g, gtd : float, array, float
        The loss, flat gradient and directional derivative ``g . d`` at ``x``.
    c1, c2 : float
        The sufficient-decrease and curvature constants.
    tolerance_change : float
        Stop when the bracket, times ``max |d|``, is shorter than this.
    max_ls : int
        The most evaluations after the first.

    Returns
    -------
    f_new, g_new, t, evaluations : float, array, float, int
        The loss and gradient at the step found, its length, and how many
        times ``evaluate`` ran.

    Examples
    --------
    >>> import numpy as np
    >>> from reverse.optim._line_search import strong_wolfe
    >>> x, d = np.array([2.0]), np.array([-1.0])       # f(x) = x**2 along -1 from 2
    >>> evaluate = lambda t: (float((x + t * d)[0] ** 2), 2 * (x + t * d))
    >>> f_new, g_new, t, n = strong_wolfe(evaluate, d, 1.0, 4.0, 2 * x, -4.0)
    >>> f_new, t, n  # x = 1 meets both conditions at once
    (1.0, 1.0, 1)
    """
    d_norm = ops.max(ops.abs(d))

    def point(step: float) -> tuple[float, float, Any, float]:
        f_step, g_step = evaluate(step)
        return step, f_step, g_step, ops.vdot(g_step, d)

    new = point(t)
    evaluations, ls_iter = 1, 0
    prev = (0.0, f, g, gtd)
    done = False
    # Bracket an interval that holds a point meeting the conditions (or find one).
    while ls_iter < max_ls:
        t, f_new, _, gtd_new = new
        if f_new > f + c1 * t * gtd or (ls_iter > 1 and f_new >= prev[1]):
            bracket = [prev, new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, done = [new], True
            break
        if gtd_new >= 0:
            bracket = [prev, new]
            break
        step = cubic_interpolate(prev[0], prev[1], prev[3], t, f_new, gtd_new,
                                 bounds=(t + 0.01 * (t - prev[0]), t * 10))
        prev, new = new, point(step)
        evaluations += 1
        ls_iter += 1
    if ls_iter == max_ls:
        bracket = [(0.0, f, g, gtd), new]

    # Zoom: shrink the bracket until a point in it meets the conditions.
    insufficient_progress = False
    low, high = (0, 1) if bracket[0][1] <= bracket[-1][1] else (1, 0)
    while not done and ls_iter < max_ls:
        (t0, f0, _, gtd0), (t1, f1, _, gtd1) = bracket
        if abs(t1 - t0) * d_norm < tolerance_change:
            break
        t = cubic_interpolate(t0, f0, gtd0, t1, f1, gtd1)
        # Near an end of the bracket, twice running or past it: move to a tenth of its length inside.
        lo, hi = min(t0, t1), max(t0, t1)
        eps = 0.1 * (hi - lo)
        if min(hi - t, t - lo) < eps:
            if insufficient_progress or t >= hi or t <= lo:
                t = hi - eps if abs(t - hi) < abs(t - lo) else lo + eps
                insufficient_progress = False
            else:
                insufficient_progress = True
        else:
            insufficient_progress = False
        new = point(t)
        evaluations += 1
        ls_iter += 1
        _, f_new, _, gtd_new = new
        if f_new > f + c1 * t * gtd or f_new >= bracket[low][1]:
            bracket[high] = new  # too high: the new point closes the bracket
            low, high = (0, 1) if bracket[0][1] <= bracket[1][1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high][0] - bracket[low][0]) >= 0:
                bracket[high] = bracket[low]  # the old low end becomes the high one
            bracket[low] = new
    t, f_new, g_new, _ = bracket[low]
    return f_new, g_new, t, evaluations

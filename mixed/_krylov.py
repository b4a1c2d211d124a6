"""Matrix-free Krylov solvers for Newton steps, on the backend of their inputs.

Only scalars (dot products, norms) cross to the host, for control flow, and
the ones a decision needs are read together (``to_floats``: one
``dask.compute`` on Dask arrays, so that they share the work behind them).
The vectors the next iteration builds on are persisted (``persist``), so that
on Dask each H-product's graph starts from the chunks of the last iterate
instead of growing with every iteration; on NumPy and CuPy both are no-ops.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from dualad._backend import namespace_of, persist, to_floats


def vdot(a: Any, b: Any) -> Any:
    """``sum(a * b)`` as a scalar of the backend (not yet read: see ``to_floats``)."""
    xp = namespace_of([a])
    return xp.sum(a * b)


def abs_sum(a: Any) -> Any:
    """The 1-norm of ``a``, as a scalar of the backend."""
    xp = namespace_of([a])
    return xp.sum(xp.abs(a))


def norm2(a: Any) -> Any:
    """The 2-norm of ``a``, as a scalar of the backend."""
    return namespace_of([a]).sqrt(vdot(a, a))


def truncated_cg(hvp: Callable, g: Any, tol: float, maxiter: int,
                 norm: Callable[[Any], Any] = norm2) -> tuple[Any, int, bool]:
    """Approximately solve H p = -g by CG, stopping at negative curvature.

    CG stops when ``norm(residual) <= tol`` (``norm`` returns a scalar of the
    backend). Returns the step, the number of H-products used, and whether
    the step is finite. At negative curvature the last descent iterate is
    returned; if that happens on the first iteration, the steepest-descent
    direction scaled by ``|g|^2 / |g.Hg|`` (as SciPy's Newton-CG does) rather
    than the raw ``-g``, whose length has nothing to do with the problem's
    scale. Two reads of the host per iteration: the curvature, then the
    residual.
    """
    p = g * 0.0
    r = g * 1.0
    d = -r
    rr = vdot(r, r)  # read with the first curvature
    for i in range(maxiter):
        d, hd = persist(d, hvp(d))
        curvature, dd, rr = to_floats(vdot(d, hd), vdot(d, d), rr)
        if not math.isfinite(curvature):
            return p, i + 1, False
        if curvature <= 1e-12 * dd:
            if i > 0:
                return p, i + 1, True
            # d = -g here, so dd = |g|^2; at (near) zero curvature keep -g.
            scale = dd / -curvature if curvature < -1e-12 * dd else 1.0
            return -scale * g, i + 1, True
        alpha = rr / curvature
        p, r = persist(p + alpha * d, r + alpha * hd)
        rr_new, r_norm = to_floats(vdot(r, r), norm(r))
        if r_norm <= tol:
            return p, i + 1, True
        d = -r + (rr_new / rr) * d
        rr = rr_new
    return p, maxiter, True


def steihaug_cg(hvp: Callable, g: Any, radius: float, tol: float, maxiter: int
                ) -> tuple[Any, Any, int, bool]:
    """Steihaug's CG for the trust-region subproblem min g.p + p.Hp/2, |p| <= radius.

    Returns the step, H times the step, the number of H-products, and
    whether everything stayed finite. Two reads of the host per iteration:
    the curvature, then the step's and the residual's lengths.
    """
    p = g * 0.0
    hp = g * 0.0
    r = g * 1.0
    d = -r
    rr = vdot(r, r)  # read with the first curvature
    for i in range(maxiter):
        d, hd = persist(d, hvp(d))
        curvature, rr = to_floats(vdot(d, hd), rr)
        if not math.isfinite(curvature):
            return p, hp, i + 1, False
        if curvature <= 0:
            tau = _to_boundary(p, d, radius)
            return p + tau * d, hp + tau * hd, i + 1, True
        alpha = rr / curvature
        # r is updated before the radius test, which may make it unneeded, so
        # that one read serves both tests.
        p_next, hp_next, r = persist(p + alpha * d, hp + alpha * hd, r + alpha * hd)
        pp_next, rr_new = to_floats(vdot(p_next, p_next), vdot(r, r))
        if math.sqrt(pp_next) >= radius:
            tau = _to_boundary(p, d, radius)
            return p + tau * d, hp + tau * hd, i + 1, True
        p, hp = p_next, hp_next
        if math.sqrt(rr_new) <= tol:
            return p, hp, i + 1, True
        d = -r + (rr_new / rr) * d
        rr = rr_new
    return p, hp, maxiter, True


def _to_boundary(p: Any, d: Any, radius: float) -> float:
    """The tau >= 0 with |p + tau d| = radius."""
    a, pd, pp = to_floats(vdot(d, d), vdot(p, d), vdot(p, p))
    b, c = 2.0 * pd, pp - radius * radius
    return (-b + math.sqrt(max(b * b - 4.0 * a * c, 0.0))) / (2.0 * a)

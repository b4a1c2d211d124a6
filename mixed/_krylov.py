"""Matrix-free Krylov solvers for Newton steps, on the backend of their inputs.

Only scalars (dot products, norms) cross to the host, for control flow, and
the ones a decision needs are read together (``to_floats``: one
``dask.compute`` on Dask arrays, so that they share the work behind them).
The vectors the next iteration builds on are persisted (``persist``), so that
on Dask each H-product's graph starts from the chunks of the last iterate
instead of growing with every iteration; on NumPy and CuPy both are no-ops.
Each CG iteration reads the host once: its step is computed with a step
length the host has not seen yet (a scalar of the backend), and dropped when
the curvature it reads says so. What a read or a later graph uses is
persisted first, the steps returned included: a lazy value used by two
computations is sent to the cluster twice, fused differently under the same
task names, which the distributed scheduler warns about (dask/dask#9888).
"""

from __future__ import annotations

import math
from typing import Any, Callable

from dualad.interpreter import namespace_of, persist, to_floats


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


def _step_length(rr: Any, curvature: Any) -> Any:
    """``rr / curvature`` as a scalar of the backend, computed before the curvature
    is read (so that the step can be taken in the same computation); where the
    curvature is 0 the caller stops before using it, and NumPy is spared a
    division by zero."""
    xp = namespace_of([curvature])
    return rr / xp.where(curvature == 0, 1.0, curvature)


def truncated_cg(hvp: Callable, g: Any, tol: float, maxiter: int,
                 norm: Callable[[Any], Any] = norm2) -> tuple[Any, int, bool]:
    """Approximately solve H p = -g by CG, stopping at negative curvature.

    CG stops when ``norm(residual) <= tol`` (``norm`` returns a scalar of the
    backend). Returns the step, the number of H-products used, and whether
    the step is finite. At negative curvature the last descent iterate is
    returned; if that happens on the first iteration, the steepest-descent
    direction scaled by ``|g|^2 / |g.Hg|`` (as SciPy's Newton-CG does) rather
    than the raw ``-g``, whose length has nothing to do with the problem's
    scale. One read of the host per iteration: the step and the residual are
    computed with the curvature, and dropped if the curvature ends CG.
    """
    p = g * 0.0
    r = g * 1.0
    d = -r
    rr = vdot(r, r)  # read with the first curvature
    for i in range(maxiter):
        hd = hvp(d)
        curvature = vdot(d, hd)
        alpha = _step_length(rr, curvature)
        d, hd, curvature, rr, p_next, r_next = persist(d, hd, curvature, rr, p + alpha * d, r + alpha * hd)
        curvature, dd, rr, rr_next, r_norm = to_floats(curvature, vdot(d, d), rr, vdot(r_next, r_next),
                                                       norm(r_next))
        if not math.isfinite(curvature):
            return p, i + 1, False
        if curvature <= 1e-12 * dd:
            if i > 0:
                return p, i + 1, True
            # d = -g here, so dd = |g|^2; at (near) zero curvature keep -g.
            scale = dd / -curvature if curvature < -1e-12 * dd else 1.0
            return persist(-scale * g)[0], i + 1, True
        p, r = p_next, r_next
        if r_norm <= tol:
            return p, i + 1, True
        d = -r + (rr_next / rr) * d
        rr = rr_next
    return p, maxiter, True


def steihaug_cg(hvp: Callable, g: Any, radius: float, tol: float, maxiter: int
                ) -> tuple[Any, Any, int, bool]:
    """Steihaug's CG for the trust-region subproblem min g.p + p.Hp/2, |p| <= radius.

    Returns the step, H times the step, the number of H-products, and
    whether everything stayed finite. One read of the host per iteration,
    as in :func:`truncated_cg` (and one more for the step to the boundary).
    """
    p = g * 0.0
    hp = g * 0.0
    r = g * 1.0
    d = -r
    rr = vdot(r, r)  # read with the first curvature
    for i in range(maxiter):
        hd = hvp(d)
        curvature = vdot(d, hd)
        alpha = _step_length(rr, curvature)
        d, hd, curvature, rr, p_next, hp_next, r_next = persist(
            d, hd, curvature, rr, p + alpha * d, hp + alpha * hd, r + alpha * hd)
        curvature, rr, pp_next, rr_next = to_floats(curvature, rr, vdot(p_next, p_next),
                                                    vdot(r_next, r_next))
        if not math.isfinite(curvature):
            return p, hp, i + 1, False
        if curvature <= 0 or math.sqrt(pp_next) >= radius:
            tau = _to_boundary(p, d, radius)
            return *persist(p + tau * d, hp + tau * hd), i + 1, True
        p, hp, r = p_next, hp_next, r_next
        if math.sqrt(rr_next) <= tol:
            return p, hp, i + 1, True
        d = -r + (rr_next / rr) * d
        rr = rr_next
    return p, hp, maxiter, True


def _to_boundary(p: Any, d: Any, radius: float) -> float:
    """The tau >= 0 with |p + tau d| = radius."""
    a, pd, pp = to_floats(vdot(d, d), vdot(p, d), vdot(p, p))
    b, c = 2.0 * pd, pp - radius * radius
    return (-b + math.sqrt(max(b * b - 4.0 * a * c, 0.0))) / (2.0 * a)

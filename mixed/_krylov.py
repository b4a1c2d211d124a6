"""Matrix-free Krylov solvers for Newton steps, on the backend of their inputs.

Only scalars (dot products, norms) cross to the host, for control flow.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from dualad._backend import namespace_of


def dot(a: Any, b: Any) -> float:
    xp = namespace_of([a])
    return float(xp.sum(a * b))


def norm1(a: Any) -> float:
    """The 1-norm of ``a``, as a host float."""
    xp = namespace_of([a])
    return float(xp.sum(xp.abs(a)))


def norm2(a: Any) -> float:
    """The 2-norm of ``a``, as a host float."""
    return math.sqrt(dot(a, a))


def truncated_cg(hvp: Callable, g: Any, tol: float, maxiter: int,
                 norm: Callable[[Any], float] = norm2) -> tuple[Any, int, bool]:
    """Approximately solve H p = -g by CG, stopping at negative curvature.

    CG stops when ``norm(residual) <= tol``. Returns the step, the number of
    H-products used, and whether the step is finite. At negative curvature
    the last descent iterate is returned; if that happens on the first
    iteration, the steepest-descent direction scaled by ``|g|^2 / |g.Hg|``
    (as SciPy's Newton-CG does) rather than the raw ``-g``, whose length
    has nothing to do with the problem's scale.
    """
    p = g * 0.0
    r = g * 1.0
    d = -r
    rr = dot(r, r)
    for i in range(maxiter):
        hd = hvp(d)
        curvature = dot(d, hd)
        if not math.isfinite(curvature):
            return p, i + 1, False
        dd = dot(d, d)
        if curvature <= 1e-12 * dd:
            if i > 0:
                return p, i + 1, True
            # d = -g here, so dd = |g|^2; at (near) zero curvature keep -g.
            scale = dd / -curvature if curvature < -1e-12 * dd else 1.0
            return -scale * g, i + 1, True
        alpha = rr / curvature
        p = p + alpha * d
        r = r + alpha * hd
        rr_new = dot(r, r)
        if norm(r) <= tol:
            return p, i + 1, True
        d = -r + (rr_new / rr) * d
        rr = rr_new
    return p, maxiter, True


def steihaug_cg(hvp: Callable, g: Any, radius: float, tol: float, maxiter: int
                ) -> tuple[Any, Any, int, bool]:
    """Steihaug's CG for the trust-region subproblem min g.p + p.Hp/2, |p| <= radius.

    Returns the step, H times the step, the number of H-products, and
    whether everything stayed finite.
    """
    p = g * 0.0
    hp = g * 0.0
    r = g * 1.0
    d = -r
    rr = dot(r, r)
    for i in range(maxiter):
        hd = hvp(d)
        curvature = dot(d, hd)
        if not math.isfinite(curvature):
            return p, hp, i + 1, False
        if curvature <= 0:
            tau = _to_boundary(p, d, radius)
            return p + tau * d, hp + tau * hd, i + 1, True
        alpha = rr / curvature
        p_next = p + alpha * d
        if math.sqrt(dot(p_next, p_next)) >= radius:
            tau = _to_boundary(p, d, radius)
            return p + tau * d, hp + tau * hd, i + 1, True
        p, hp = p_next, hp + alpha * hd
        r = r + alpha * hd
        rr_new = dot(r, r)
        if math.sqrt(rr_new) <= tol:
            return p, hp, i + 1, True
        d = -r + (rr_new / rr) * d
        rr = rr_new
    return p, hp, maxiter, True


def _to_boundary(p: Any, d: Any, radius: float) -> float:
    """The tau >= 0 with |p + tau d| = radius."""
    a, b, c = dot(d, d), 2.0 * dot(p, d), dot(p, p) - radius * radius
    return (-b + math.sqrt(max(b * b - 4.0 * a * c, 0.0))) / (2.0 * a)

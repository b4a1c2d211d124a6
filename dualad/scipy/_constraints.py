"""Constraints of ``minimize``: the KKT system of the Lagrangian decides the derivative.

Every constraint SciPy takes is read as rows ``y(x)`` held in ``lb <= y(x) <= ub``: a
dict's ``fun(x, *args)`` in ``[0, 0]`` (``'eq'``) or ``[0, inf)`` (``'ineq'``), a
``NonlinearConstraint``'s ``fun(x)`` and a ``LinearConstraint``'s ``A x`` between their
``lb`` and ``ub`` (a row with ``lb == ub`` is an equality). At a solution ``x*`` the
multipliers ``mu`` (one per row) satisfy stationarity,

    grad f(x) = J(x)^T mu        (J = dy/dx; on the free variables where bounds hold some)

with ``mu >= 0`` on a row at its lower bound, ``mu <= 0`` at its upper one, ``mu = 0`` on
a row at neither (inactive) and any sign on an equality: SciPy's SLSQP's convention, and
minus trust-constr's ``v``. The unknowns of the implicit system are ``z = (x, mu)``, and
the condition handed to ``custom_root`` is

    F_x  = grad f(x) - J(x)^T mu       (the free variables; x - b where a bound holds x)
    F_mu = b_r - y_r(x)                (an active row r, b_r the bound it sits at)
    F_mu = mu_r                        (an inactive row: its multiplier stays 0)

whose Jacobian in ``z`` is the KKT matrix ``[[H_L, -J_A^T], [-J_A, 0]]`` (symmetric and
indefinite; ``H_L`` the Hessian of the Lagrangian ``f - mu . y``, ``J_A`` the active
rows), with the identity on the inactive rows and the variables at a bound: one
factorization per solution, as without constraints.

Which rows are active is decided once per solve, at SciPy's ``x`` on plain arrays
(:func:`recover`): a row within ``ACTIVE_RTOL`` of a bound (relative to the size of its
terms) is active, and so is a row whose multiplier, where SciPy reports one
(trust-constr's ``v``), outweighs its slack. The multipliers are then the least-squares
solution of stationarity over the active rows. The decision is carried by ``mu`` itself:
an inequality row is active exactly when its multiplier is nonzero, its sign saying at
which bound, so that ``F`` reads it with the library's comparisons (each element its own
under ``vmap``, recomputed at every replay of ``jit``); an active row whose multiplier
is zero (strict complementarity fails) keeps the smallest normal number of its side.
The same recovery says where no derivative holds: a violated constraint or a
stationarity residual (no KKT point), a multiplier of the wrong sign, active rows whose
gradients are linearly dependent (LICQ fails: the multipliers are not determined), and
warns of an active row with a near-zero multiplier (the derivative is one-sided there).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from dualad import ops
from dualad._base.core import Value
from dualad._base.shapes import shape_of
from dualad._base.tree import flatten
from dualad._primitives.shape import reshape
from dualad.scipy._bounds import DEGENERATE, Box
from dualad.scipy._solves import check_args

__all__ = ["ACTIVE_RTOL", "LICQ_RTOL", "STATIONARY_RTOL", "Recovered", "kkt_condition", "recover",
           "rows_of"]

ACTIVE_RTOL = 1e-6      # |y_r - b_r| <= ACTIVE_RTOL * scale_r: row r sits at its bound b_r
LICQ_RTOL = 1e-10       # sigma_min <= LICQ_RTOL * sigma_max of the active rows' Jacobian: dependent
STATIONARY_RTOL = 1e-5  # |grad f - J^T mu| <= STATIONARY_RTOL * max(1, |grad f|): a KKT point


def _constant(value: Any, who: str, name: str) -> None:
    if any(isinstance(leaf, Value) for leaf in flatten(value)[0]):
        raise TypeError(f"{who}: {name} must be constants (plain numbers or arrays); got a value "
                        "being differentiated: write a parameter of a constraint into its fun "
                        "(a closure or a dict's args) instead")


def _dense(a: Any) -> np.ndarray:
    return np.asarray(a.toarray() if hasattr(a, "toarray") else a, dtype=np.float64)


def _piece(con: Any, name: str, so: Any, who: str) -> dict:
    """One constraint as ``{'rows': x -> y(x), 'lb', 'ub', 'found'}``: ``found`` holds what
    SciPy calls (its ``jac`` and ``hess`` too), so that the closure walk, which does not look
    into SciPy's constraint objects, reaches what they close over through ``rows_of``'s
    ``rows`` and substitutes raw arrays there while SciPy solves."""
    if isinstance(con, dict):
        kind = con.get("type")
        if not isinstance(kind, str) or kind.lower() not in ("eq", "ineq"):
            raise ValueError(f"{who}: {name}['type'] must be 'eq' or 'ineq', got {kind!r}")
        if not callable(con.get("fun")):
            raise TypeError(f"{who}: {name}['fun'] must be a callable fun(x, *args), got "
                            f"{type(con.get('fun')).__name__}")
        check_args(con.get("args", ()), who)
        upper = 0.0 if kind.lower() == "eq" else np.inf
        # fun and args are read from the dict at each call: the closure walk substitutes them
        # there, where SciPy reads them too
        return {"rows": lambda x: con["fun"](x, *check_args(con.get("args", ()), who)), "lb": 0.0,
                "ub": upper, "found": [con]}
    if isinstance(con, so.NonlinearConstraint):
        _constant((con.lb, con.ub), who, f"the lb and ub of {name}")
        fun = con.fun
        return {"rows": fun, "lb": con.lb, "ub": con.ub,
                "found": [c for c in (fun, con.jac, con.hess) if callable(c)]}
    if isinstance(con, so.LinearConstraint):
        _constant((con.A, con.lb, con.ub), who, f"the A, lb and ub of {name}")
        a = _dense(con.A)
        return {"rows": lambda x: ops.matmul(a, x), "lb": con.lb, "ub": con.ub, "found": []}
    raise TypeError(f"{who}: {name} must be a dict {{'type': 'eq' or 'ineq', 'fun', ...}}, a "
                    f"NonlinearConstraint or a LinearConstraint, got {type(con).__name__}")


def rows_of(constraints: Any, x0: Any, so: Any, who: str) -> tuple:
    """``(rows, lb, ub, names)`` of ``minimize``'s ``constraints``: ``rows(x)`` every
    constraint's rows in one vector (it closes over every piece, what SciPy calls included),
    their bounds (float64 arrays), and each row's name for messages."""
    many = isinstance(constraints, (list, tuple))
    cons = list(constraints) if many else [constraints]
    pieces = [_piece(c, f"constraints[{k}]" if many else "constraints", so, who)
              for k, c in enumerate(cons)]
    sizes = [int(np.prod(shape_of(p["rows"](x0)), dtype=int)) for p in pieces]
    lb, ub, names = [], [], []
    for piece, size, k in zip(pieces, sizes, range(len(pieces))):
        name = f"constraints[{k}]" if many else "constraints"
        for key, bound in (("lb", lb), ("ub", ub)):
            try:
                bound.append(np.broadcast_to(np.asarray(piece[key], dtype=np.float64), (size,)))
            except ValueError:
                raise ValueError(f"{who}: the {key} of {name} must be a number or hold one entry per "
                                 f"row of its function ({size}), got shape "
                                 f"{np.shape(piece[key])}") from None
        names += [name] if size == 1 else [f"{name}[{i}]" for i in range(size)]
    lb = np.concatenate(lb) if lb else np.zeros(0)
    ub = np.concatenate(ub) if ub else np.zeros(0)
    if np.isnan(lb).any() or np.isnan(ub).any() or (lb > ub).any():
        bad = int(np.flatnonzero(np.isnan(lb) | np.isnan(ub) | (lb > ub))[0])
        raise ValueError(f"{who}: {names[bad]} must have lb <= ub, without nan; got lb={lb[bad]}, "
                         f"ub={ub[bad]}")

    def rows(x):
        return ops.concatenate([reshape(p["rows"](x), (-1,)) for p in pieces])
    return rows, lb, ub, names


def kkt_condition(gradient: Callable, objective: Callable, rows: Callable, lb: np.ndarray,
                  ub: np.ndarray, n: int, box: Box | None, dtype: Any) -> Callable:
    """``F(z)`` of the module's docstring for ``z = (x, mu)`` of ``dtype``, ``n`` the number
    of unknowns; ``gradient(fn, x)`` the gradient of a scalar function."""
    eq = lb == ub
    # in z's dtype: float64 bounds would promote a float32 condition, and its derivative
    lb0 = np.where(np.isfinite(lb), lb, 0.0).astype(dtype)
    ub0 = np.where(np.isfinite(ub), ub, 0.0).astype(dtype)

    def condition(z):
        x, mu = z[:n], z[n:]
        if box is not None:
            held, pinned = box.pin(x)
            x_at = ops.where(held, pinned, x)
        else:
            x_at = x
        active = ops.logical_or(eq, ops.not_equal(mu, 0.0))
        upper = ops.logical_and(~eq, ops.less(mu, 0.0))
        mu_active = ops.where(active, mu, 0.0)
        fx = gradient(lambda y: objective(y) - ops.sum(mu_active * rows(y)), x_at)
        if box is not None:
            fx = ops.where(held, x - pinned, fx)
        fmu = ops.where(active, ops.where(upper, ub0, lb0) - rows(x_at), mu)
        return ops.concatenate([fx, fmu])
    return condition


class Recovered:
    """What :func:`recover` found at SciPy's ``x``: the multipliers ``mu`` (active rows
    marked, in ``dtype``), the gradient of the Lagrangian ``g - J^T mu``, and why the
    derivative does not hold there (``problem``: no KKT point; ``singular``: LICQ fails),
    or what it warns of (``caveat``), each None where there is nothing to say."""

    __slots__ = ("mu", "lagrangian_gradient", "problem", "singular", "caveat")

    def __init__(self, mu, lagrangian_gradient, problem=None, singular=None, caveat=None):
        self.mu, self.lagrangian_gradient = mu, lagrangian_gradient
        self.problem, self.singular, self.caveat = problem, singular, caveat


def recover(x: Any, g: Any, jac: Any, y: Any, lb: np.ndarray, ub: np.ndarray, names: list,
            dtype: Any, held: np.ndarray | None = None, hint: Any = None) -> Recovered:
    """The multipliers at SciPy's ``x`` (plain arrays: the objective's gradient ``g``, the
    rows ``y`` and their Jacobian ``jac``, ``held`` the variables at a bound), by least
    squares over the active rows, and the checks of the module's docstring. ``hint``:
    SciPy's own multipliers where it reports them (our sign), evidence of activity.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad.scipy._constraints import recover
    >>> x = np.array([0.6, 0.8])   # the projection of (3, 4) onto the unit circle
    >>> out = recover(x, 2 * (x - [3.0, 4.0]), 2 * x[None], np.array([1.0]), np.ones(1), np.ones(1),
    ...               ["constraints[0]"], np.float64)
    >>> out.mu, out.problem, out.singular      # grad f = mu grad(|x|^2): mu = 1 - |c|
    (array([-4.]), None, None)
    """
    x, g = np.asarray(x, dtype=np.float64), np.asarray(g, dtype=np.float64).reshape(-1)
    jac, y = np.asarray(jac, dtype=np.float64).reshape(y.size, x.size), np.asarray(y, np.float64)
    free = np.ones(x.size, bool) if held is None else ~held
    eq = lb == ub
    width = np.abs(jac).max(axis=1, initial=0.0)
    bound = np.maximum(np.where(np.isfinite(lb), np.abs(lb), 0), np.where(np.isfinite(ub), np.abs(ub), 0))
    scale = np.maximum.reduce([np.ones_like(y), bound, width * max(1.0, np.abs(x).max(initial=0))])
    tol = ACTIVE_RTOL * scale
    with np.errstate(invalid="ignore"):  # inf - inf on a row bounded on neither side
        below, above = y - lb, ub - y
    gscale = max(1.0, float(np.abs(g).max(initial=0.0)))
    mu = np.zeros(y.size)

    violated = np.flatnonzero(np.where(eq, np.abs(below) > tol, (below < -tol) | (above < -tol)))
    if violated.size:
        r = violated[0]
        return Recovered(mu.astype(dtype), g, problem=(
            f"{names[r]} is violated at x: its value {y[r]:.6g} lies outside [{lb[r]:.6g}, "
            f"{ub[r]:.6g}] by more than {tol[r]:.3g} (does the method take constraints?)"))
    at_lo = ~eq & (below <= tol)
    at_hi = ~eq & ~at_lo & (above <= tol)
    if hint is not None:  # SciPy's multiplier outweighs the slack: active (trust-constr's barrier)
        force = np.abs(hint) * width / gscale
        at_lo |= ~eq & ~at_hi & (hint > 0) & (force > below / scale)
        at_hi |= ~eq & ~at_lo & (hint < 0) & (force > above / scale)
    active = eq | at_lo | at_hi

    singular = None
    a = jac[active][:, free]
    if a.size:
        mu[active] = np.linalg.lstsq(a.T, g[free], rcond=None)[0]
        s = np.linalg.svd(a, compute_uv=False)
        if a.shape[0] > a.shape[1] or s.min() <= LICQ_RTOL * s.max():
            which = ", ".join(names[r] for r in np.flatnonzero(active))
            bounds = " (on the variables no bound holds)" if held is not None and held.any() else ""
            smallest = 0.0 if a.shape[0] > a.shape[1] else s.min() / max(s.max(), 1e-300)
            singular = (f"the gradients of the active constraints {which} are linearly dependent "
                        f"at the solution{bounds} (LICQ fails: {a.shape[0]} active rows, the "
                        f"smallest singular value of their Jacobian {smallest:.3g} of the largest), "
                        "so the multipliers, and with them the KKT matrix and the derivative, are "
                        "not determined")
    lagrangian_gradient = g - jac.T @ mu
    residual = float(np.abs(lagrangian_gradient[free]).max(initial=0.0))
    if residual > STATIONARY_RTOL * gscale:
        near = np.flatnonzero(~active & np.isfinite(np.minimum(below, above)))
        hint_text = ""
        if near.size:
            r = near[np.argmin(np.minimum(below, above)[near] / scale[near])]
            hint_text = (f"; the inactive row nearest its bound is {names[r]}, "
                         f"{min(below[r], above[r]):.3g} from it")
        return Recovered(mu.astype(dtype), lagrangian_gradient, singular=singular, problem=(
            f"x is no KKT point: the gradient of the Lagrangian is {residual:.3g} there (more "
            f"than {STATIONARY_RTOL:g} of the gradient's {gscale:.3g}){hint_text}"))

    if singular is not None:  # the multipliers are not unique: their signs say nothing
        return Recovered(mu.astype(dtype), lagrangian_gradient, singular=singular)
    small = DEGENERATE * gscale
    force = np.abs(mu) * width
    wrong = np.flatnonzero(((at_lo & (mu < 0)) | (at_hi & (mu > 0))) & (force > small))
    if wrong.size:
        r = wrong[0]
        return Recovered(mu.astype(dtype), lagrangian_gradient, singular=singular, problem=(
            f"{names[r]} sits at its {'lower' if at_lo[r] else 'upper'} bound with the "
            f"multiplier {mu[r]:.3g}, of the wrong sign: the objective pulls x off it, into the "
            "feasible set: not a KKT point"))
    caveat = None
    degenerate = np.flatnonzero((at_lo | at_hi) & (force <= small))
    if degenerate.size:
        caveat = (f"{', '.join(names[r] for r in degenerate)} sit(s) at a bound with a near-zero "
                  "multiplier (strict complementarity fails): the derivative there is one-sided; "
                  "this one holds them at the bound")
    # the nonzero multiplier marks an active inequality row, its sign the bound (see above)
    side = np.where(at_hi, -1.0, 1.0)
    mark = (at_lo | at_hi) & (mu * side <= 0)
    mu = mu.astype(dtype)
    mu[mark] = side[mark] * np.finfo(dtype).tiny
    return Recovered(mu, lagrangian_gradient, singular=singular, caveat=caveat)

"""dualad.scipy.optimize.minimize with constraints: the KKT system of the Lagrangian at SciPy's
solution (equalities, the active inequalities, the bounds) decides the derivative of x, of the
multipliers and of the minimum, in every mode; checked against closed forms computed here from
the problem alone, against the KKT system assembled here with NumPy, and against central
differences of plain SciPy's solve. Dependent active constraints (LICQ), a degenerate active
constraint, an infeasible x and malformed constraints are named (issue 37)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy
import scipy.optimize as so
from _support.solutions import close, fd
from scipy.optimize import LinearConstraint, NonlinearConstraint

import dualad
import mixed
import reverse
from dualad.scipy._constraints import recover
from dualad.scipy._tangent import Factorization
from dualad.scipy.optimize import NotConvergedError, minimize

SLSQP = {"ftol": 1e-12, "maxiter": 500}
# the references: plain SciPy's solves at the tolerances where each stops closest to the
# solution (SLSQP at ftol 1e-15 about 1e-9 off on these problems; some need 1e-14 to converge),
# differenced with h = 3e-2, where the stencil's O(h^4) error and the solve's error over h
# balance at a few 1e-8 to 3e-7 (measured against the closed forms below)
REFERENCE = {"ftol": 1e-15, "maxiter": 1000}
H = 3e-2
FD_ATOL = 5e-7
TRUST = {"gtol": 1e-12, "xtol": 1e-15, "maxiter": 5000}
OPTIONS = {"SLSQP": SLSQP, "trust-constr": TRUST, "COBYLA": {"tol": 1e-12, "maxiter": 10000},
           "COBYQA": {"final_tr_radius": 1e-12, "maxiter": 10000}}
# trust-constr's quasi-Newton update of a linear constraint's Hessian (zero) says so, harmlessly
SCIPY_NOISE = pytest.mark.filterwarnings("ignore:delta_grad == 0.0:UserWarning")
SCIPY_VERSION = tuple(int(v) for v in scipy.__version__.split(".")[:2])


# -- the projection onto the unit sphere: equality only, everything in closed form --------------
def sphere(c, method="SLSQP", solver=minimize):
    """argmin |x - c|^2 subject to |x|^2 = 1: x = c / |c|, the multiplier 1 - |c|, the
    minimum (|c| - 1)^2."""
    options = {"ftol": 1e-14} if method == "SLSQP" else TRUST
    return solver(lambda x: ((x - c) ** 2).sum(), np.array([1.0, 0.0, 0.0]), method=method,
                  constraints=[{"type": "eq", "fun": lambda x: x @ x - 1.0}], options=options)


C = np.array([1.0, 2.0, 2.0])


@SCIPY_NOISE
@pytest.mark.parametrize("method", ["SLSQP", "trust-constr"])
def test_sphere_projection_in_closed_form(method):
    r = np.linalg.norm(C)
    x = C / r
    res = sphere(C, method)
    close(res.x, x, rtol=0, atol=2e-8)
    close(res.multipliers, [1.0 - r], rtol=0, atol=2e-8)
    want = {"x": (np.eye(3) - np.outer(x, x)) / r, "multipliers": -x[None], "fun": 2 * (r - 1) * x}
    for field, jac in want.items():
        def of(c, field=field):
            return sphere(c, method)[field]
        got = dualad.jacfwd(of)(C)
        close(got, jac, rtol=0, atol=2e-8)   # SciPy's x is a few 1e-9 off
        close(reverse.jacrev(of)(C), got, rtol=1e-12, atol=1e-14)
    close(dualad.jacfwd(lambda c: sphere(c, method).x)(C),
          fd(lambda c: sphere(c, method, so.minimize).x, C, h=H), rtol=0, atol=FD_ATOL)


@SCIPY_NOISE
@pytest.mark.parametrize("method", ["SLSQP", "trust-constr"])
def test_a_parameter_in_a_nonlinear_constraint_object_and_its_jac(method):
    """The radius r enters a NonlinearConstraint's fun and jac (closures SciPy calls, inside
    an object the closure walk does not look into): x = r c / |c|, the multiplier r - |c|."""
    def ball(theta):
        c, r = theta[:3], theta[3]
        con = NonlinearConstraint(lambda x: x @ x / r - r, 0.0, 0.0, jac=_jacobian_of_ball(r))
        res = minimize(lambda x: ((x - c) ** 2).sum(), np.array([1.0, 0.0, 0.0]), method=method,
                       constraints=[con], options={"ftol": 1e-14} if method == "SLSQP" else TRUST)
        return np.concatenate([res.x, res.multipliers])
    theta = np.array([1.0, 2.0, 2.0, 2.0])
    u = C / 3.0
    # SciPy's SLSQP stops 1e-9 to 3e-8 off, as the last bits of BLAS kernels fall
    close(ball(theta), np.concatenate([2.0 * u, [2.0 - 3.0]]), rtol=0, atol=1e-7)
    want = np.zeros((4, 4))
    want[:3, :3] = 2.0 * (np.eye(3) - np.outer(u, u)) / 3.0   # r (I - u u') / |c|
    want[:3, 3] = u
    want[3] = [*(-u), 1.0]
    close(reverse.jacrev(ball)(theta), want, rtol=0, atol=2e-8)
    close(dualad.jacfwd(ball)(theta), want, rtol=0, atol=2e-8)


def _jacobian_of_ball(r):   # a closure of its own: only SciPy calls it
    return lambda x: 2.0 * x[None] / r


def test_float32_stays_float32():
    """The bounds of the rows were float64 and promoted the condition, and the derivative."""
    def proj(c):   # onto the unit ball, as an inequality
        return minimize(lambda x: ((x - c) ** 2).sum(), np.array([1.0, 0.0, 0.0], np.float32),
                        method="SLSQP", constraints=({"type": "ineq", "fun": lambda x: 1 - x @ x},),
                        options={"ftol": 1e-11})
    c = C.astype(np.float32)
    res = proj(c)
    assert res.x.dtype == res.multipliers.dtype == np.float32
    jac = dualad.jacfwd(lambda c: proj(c).x)(c)
    assert jac.dtype == np.float32
    close(jac, (np.eye(3) - np.outer(C, C) / 9) / 3, rtol=1e-5, atol=1e-6)
    close(reverse.jacrev(lambda c: proj(c).x)(c / 10), np.eye(3), rtol=1e-6)   # inside: x = c


# -- a quadratic program with linear equalities: the derivative is the inverse KKT matrix -------
Q4 = np.array([[3.0, 0.5, 0.0, 0.2], [0.5, 2.0, 0.3, 0.0], [0.0, 0.3, 2.5, 0.4],
               [0.2, 0.0, 0.4, 1.5]])
A2 = np.array([[1.0, 1.0, 1.0, 1.0], [1.0, -1.0, 2.0, 0.0]])


def qp(theta, method="SLSQP", solver=minimize, options=None):
    """argmin x'Qx/2 - p'x subject to A x = b, theta = (p, b): p in a closure, b in args."""
    p, b = theta[:4], theta[4:]
    return solver(lambda x: 0.5 * x @ Q4 @ x - p @ x, np.zeros(4), method=method,
                  constraints=[{"type": "eq", "fun": lambda x, b: A2 @ x - b, "args": (b,)}],
                  options=options or OPTIONS[method])


def qp_in_closed_form(theta):
    """[x; mu] from K [x; -mu] = [p; b], K = [[Q, A'], [A, 0]], and its Jacobian in theta."""
    k = np.block([[Q4, A2.T], [A2, np.zeros((2, 2))]])
    kinv = np.linalg.inv(k)
    sign = np.diag([1.0] * 4 + [-1.0] * 2)
    return sign @ kinv @ theta, sign @ kinv


THETA = np.array([1.0, -0.5, 2.0, 0.3, 1.0, 0.5])


@SCIPY_NOISE
@pytest.mark.parametrize("method", ["SLSQP", "trust-constr"])
def test_equality_qp_sensitivity_is_the_inverse_kkt_matrix(method):
    value, jac = qp_in_closed_form(THETA)
    res = qp(THETA, method)
    close(np.concatenate([res.x, res.multipliers]), value, rtol=1e-7, atol=1e-9)

    def both(t):
        res = qp(t, method)
        return np.concatenate([res.x, res.multipliers])
    close(dualad.jacfwd(both)(THETA), jac, rtol=1e-10, atol=1e-12)
    close(reverse.jacrev(both)(THETA), jac, rtol=1e-10, atol=1e-12)
    # x is linear in theta: any step is exact but for the solve's error, which SLSQP leaves
    # at 1e-8 here (1.1e-8 with single-threaded BLAS, whose sums round otherwise)
    close(fd(lambda t: qp(t, "SLSQP", so.minimize, REFERENCE).x, THETA, h=1.0), jac[:4], rtol=0,
          atol=3e-8)


@SCIPY_NOISE
def test_linear_constraint_object_with_trust_constr():
    def x_of(p):
        return minimize(lambda x: 0.5 * x @ Q4 @ x - p @ x, np.zeros(4), method="trust-constr",
                        constraints=LinearConstraint(A2, THETA[4:], THETA[4:]), options=TRUST).x
    close(reverse.jacrev(x_of)(THETA[:4]), qp_in_closed_form(THETA)[1][:4, :4], rtol=1e-10,
          atol=1e-12)


# -- active and inactive inequalities beside an equality: theta in the objective and in args ----
def market(theta, method="SLSQP", solver=minimize, options=None):
    """argmin |x - c|^2 + sum(x^4) / 10 subject to x0 <= 1, sum(x) = s, x2 >= -5; theta =
    (c, s). At THETA3 the first is active, the last inactive."""
    c, s = theta[:3], theta[3]
    cons = [{"type": "ineq", "fun": lambda x: 1.0 - x[0]},
            {"type": "eq", "fun": lambda x, s: x.sum() - s, "args": (s,)},
            {"type": "ineq", "fun": lambda x: x[2] + 5.0}]
    return solver(lambda x: ((x - c) ** 2).sum() + 0.1 * (x ** 4).sum(), np.zeros(3),
                  method=method, constraints=cons, options=options or OPTIONS[method])


THETA3 = np.array([2.0, 1.0, 0.5, 1.5])      # x0 held at 1
INTERIOR = np.array([0.2, 1.0, 0.5, 1.5])    # x0 < 1: only the equality is active


def market_kkt(theta):
    """dx/dtheta from the KKT system assembled here, [[H, J_A'], [J_A, 0]] with H = 2 I +
    1.2 diag(x^2) and the rows of the constraints active at SciPy's x, at that x polished to
    machine precision by a root of the KKT equations (SciPy's SLSQP stops about 1e-8 off)."""
    c, s = theta[:3], theta[3]
    x = so.minimize(lambda x: ((x - c) ** 2).sum() + 0.1 * (x ** 4).sum(), np.zeros(3),
                    method="SLSQP", options=SLSQP,
                    constraints=[{"type": "ineq", "fun": lambda x: 1.0 - x[0]},
                                 {"type": "eq", "fun": lambda x: x.sum() - s}]).x
    ja = np.array([[1.0, 1.0, 1.0]] + ([[1.0, 0.0, 0.0]] if x[0] > 1.0 - 1e-6 else []))
    b = np.array([s, 1.0])[:len(ja)]
    m = len(ja)

    def kkt(z):
        y, nu = z[:3], z[3:]
        return np.concatenate([2.0 * (y - c) + 0.4 * y ** 3 + ja.T @ nu, ja @ y - b])
    x = so.root(kkt, np.concatenate([x, np.zeros(m)]), tol=1e-15).x[:3]
    k = np.block([[np.diag(2.0 + 1.2 * x ** 2), ja.T], [ja, np.zeros((m, m))]])
    rhs = np.zeros((3 + m, 4))
    rhs[:3, :3] = 2.0 * np.eye(3)  # d(grad f)/dc = -2 I, moved to the right-hand side
    rhs[3, 3] = 1.0                # sum(x) = s
    return np.linalg.solve(k, rhs)[:3]


@SCIPY_NOISE
@pytest.mark.parametrize("method", ["SLSQP", "trust-constr"])
@pytest.mark.parametrize("theta", [THETA3, INTERIOR], ids=["active", "inactive"])
def test_active_and_inactive_inequalities(method, theta):
    def x_of(t):
        return market(t, method).x
    want = market_kkt(theta)
    jac = dualad.jacfwd(x_of)(theta)
    close(jac, want, rtol=0, atol=1e-7)   # SLSQP's x is about 1e-8 off; trust-constr's closer
    close(reverse.jacrev(x_of)(theta), jac, rtol=1e-12, atol=1e-14)
    close(jac, fd(lambda t: market(t, "SLSQP", so.minimize, REFERENCE).x, theta, h=H), rtol=0,
          atol=FD_ATOL)
    mu = market(theta, method).multipliers
    assert (mu[0] > 0.5) == (theta is THETA3) and mu[2] == 0.0


@SCIPY_NOISE
def test_multipliers_are_scipy_s():
    """SLSQP's own (SciPy >= 1.16: the equalities first), and minus trust-constr's v."""
    ours = market(THETA3).multipliers
    if SCIPY_VERSION >= (1, 16):
        theirs = market(THETA3, "SLSQP", so.minimize).multipliers
        close(ours, theirs[[1, 0, 2]], rtol=1e-6, atol=1e-8)
    v = market(THETA3, "trust-constr", so.minimize).v
    close(ours, -np.concatenate(v), rtol=1e-6, atol=1e-7)


def test_hvp_vmap_and_jit_through_a_constrained_solution():
    def loss(t):
        res = market(t, options=REFERENCE)
        return (res.x ** 2).sum() + res.x[1] * t[0] + res.fun
    v = np.array([0.3, -0.2, 0.5, 1.0])
    hv = mixed.hvp(loss, THETA3, v)
    close(hv, dualad.jacfwd(reverse.grad(loss))(THETA3) @ v, rtol=1e-10, atol=1e-12)
    want = fd(lambda s: reverse.grad(loss)(THETA3 + s[0] * v), np.zeros(1), h=H)[:, 0]
    close(hv, want, rtol=0, atol=FD_ATOL)
    close(reverse.grad(loss)(THETA3), fd(loss, THETA3, h=H), rtol=0, atol=FD_ATOL)

    # each element its own active set
    thetas = np.stack([THETA3, INTERIOR, THETA3 + 0.1])
    x_of = lambda t: market(t).x  # noqa: E731
    close(dualad.vmap(x_of)(thetas), np.stack([x_of(t) for t in thetas]), rtol=1e-12)
    close(dualad.vmap(dualad.jacfwd(x_of))(thetas), np.stack([market_kkt(t) for t in thetas]),
          rtol=0, atol=1e-7)

    jitted = dualad.jit(reverse.grad(lambda t: market(t).x @ np.array([1.0, 2.0, 3.0])))
    for t in (THETA3, INTERIOR, THETA3 + 0.1):   # the trace, then replays across active sets
        close(jitted(t), np.array([1.0, 2.0, 3.0]) @ market_kkt(t), rtol=0, atol=1e-6)


# -- bounds beside nonlinear and linear constraints ---------------------------------------------
Q = np.array([[2.0, 0.5, 0.0, 0.0], [0.5, 2.0, 0.5, 0.0], [0.0, 0.5, 2.0, 0.5],
              [0.0, 0.0, 0.5, 2.0]])
P = np.array([4.0, -2.0, 1.0, 1.5])


def boxed(p, method="SLSQP", solver=minimize):
    """argmin x'Qx/2 - p'x + sum(x^4)/10 on [0, 1]^4 with x2^2 + x3 in [-1, 0.6] and
    sum(x) <= 10: at P x0 sits at 1, x1 at 0, the nonlinear constraint at its upper bound."""
    cons = [NonlinearConstraint(lambda x: x[2] ** 2 + x[3], -1.0, 0.6),
            LinearConstraint(np.ones((1, 4)), -np.inf, 10.0)]
    return solver(lambda x: 0.5 * x @ Q @ x - p @ x + 0.1 * (x ** 4).sum(), np.full(4, 0.5),
                  method=method, bounds=[(0.0, 1.0)] * 4, constraints=cons,
                  options=OPTIONS[method])


def boxed_kkt(p):
    """x, the multiplier and dx/dp at P's active set: x0 = 1 and x1 = 0 (their bounds), and
    x2^2 + x3 = 0.6; x2, x3 and mu from the root of the KKT equations, dx/dp zero on the
    rows of x0, x1 and, on x2, x3, the KKT system of the Lagrangian f - mu (x2^2 + x3)."""
    def kkt(z):
        x = np.array([1.0, 0.0, z[0], z[1]])
        g = Q @ x - p + 0.4 * x ** 3
        return np.array([g[2] - z[2] * 2.0 * x[2], g[3] - z[2], x[2] ** 2 + x[3] - 0.6])
    x2, x3, mu = so.root(kkt, np.array([0.3, 0.5, -0.3]), tol=1e-15).x
    h = Q[2:, 2:] + np.diag(1.2 * np.array([x2, x3]) ** 2) - mu * np.diag([2.0, 0.0])
    j = np.array([[2.0 * x2, 1.0]])
    jac = np.zeros((4, 4))
    jac[2:, 2:] = np.linalg.inv(np.block([[h, j.T], [j, np.zeros((1, 1))]]))[:2, :2]
    return np.array([1.0, 0.0, x2, x3]), mu, jac


@SCIPY_NOISE
@pytest.mark.parametrize("method", ["SLSQP", "trust-constr"])
def test_bounds_with_nonlinear_and_linear_constraints(method):
    x, mu, want = boxed_kkt(P)
    res = boxed(P, method)
    close(res.x, x, rtol=0, atol=1e-7)
    close(res.multipliers, [mu, 0.0], rtol=0, atol=1e-7)   # mu < 0: at the upper bound 0.6
    close(dualad.jacfwd(lambda p: boxed(p, method).x)(P), want, rtol=0, atol=1e-7)
    close(reverse.jacrev(lambda p: boxed(p, method).x)(P), want, rtol=0, atol=1e-7)
    # trust-constr's solve is the closer here (SLSQP stops about 1e-8 off, with any ftol),
    # and still only to about 1e-7 on some machines: over h = 3e-2 that leaves the
    # differences (the check of the KKT oracle itself) 4e-6 off there; a wrong oracle is
    # off by tenths
    close(want, fd(lambda p: boxed(p, "trust-constr", so.minimize).x, P, h=H), rtol=0,
          atol=1e-5)


@pytest.mark.skipif(SCIPY_VERSION < (1, 16), reason="COBYLA takes equalities from SciPy 1.16")
@pytest.mark.parametrize("method", ["COBYLA", "COBYQA"])
def test_derivative_free_methods(method):
    """Their solve is coarser (x to about 1e-8 here): the derivative at their x is the KKT's."""
    close(dualad.jacfwd(lambda t: market(t, method).x)(THETA3), market_kkt(THETA3), rtol=0,
          atol=1e-7)


# -- where no derivative holds --------------------------------------------------------------------
def test_dependent_active_constraints_raise_naming_licq():
    # the disk |x| <= 1 and the half-plane x0 <= 1 both hold x = (1, 0): parallel gradients
    def x_of(a):
        return minimize(lambda x: (x[0] - a) ** 2 + x[1] ** 2, np.zeros(2), method="SLSQP",
                        constraints=[{"type": "ineq", "fun": lambda x: 1.0 - x @ x},
                                     {"type": "ineq", "fun": lambda x: 1.0 - x[0]}]).x
    close(x_of(2.0), [1.0, 0.0], atol=1e-8)   # the value is SciPy's
    for derivative in (dualad.derivative(x_of), reverse.jacrev(x_of)):
        with pytest.raises(np.linalg.LinAlgError,
                           match=r"constraints\[0\], constraints\[1\] are linearly dependent.*"
                                 r"LICQ fails"):
            derivative(2.0)


def test_a_degenerate_active_constraint_warns_and_holds_it():
    # the unconstrained minimizer (0, 0.5) sits on x0 >= 0: the multiplier is 0
    def x_of(a):
        return minimize(lambda x: ((x - a) ** 2).sum(), np.array([0.5, 0.5]), method="SLSQP",
                        constraints={"type": "ineq", "fun": lambda x: x[0]}, options=SLSQP).x
    with pytest.warns(RuntimeWarning, match=r"constraints sit\(s\) at a bound with a near-zero "
                                            r"multiplier \(strict complementarity fails\)"):
        jac = dualad.jacfwd(x_of)(np.array([0.0, 0.5]))
    close(jac, np.diag([0.0, 1.0]))   # held at the bound: the derivative from below


def test_an_infeasible_x_raises():
    # BFGS ignores constraints (SciPy warns): its minimizer violates x0 >= 0
    def x_of(a):
        return minimize(lambda x: ((x - a) ** 2).sum(), np.array([0.5, 0.5]), method="BFGS",
                        constraints=[{"type": "ineq", "fun": lambda x: x[0]}]).x
    with pytest.warns(RuntimeWarning, match="cannot handle constraints"):
        with pytest.raises(NotConvergedError, match=r"constraints\[0\] is violated at x"):
            dualad.jacfwd(x_of)(np.array([-1.0, 0.5]))


def test_recover_names_what_is_no_kkt_point():
    names = ["constraints[0]"]
    x = np.array([0.0, 1.0])
    # at x0 >= 0 with the objective falling into the feasible set: the wrong sign
    out = recover(x, np.array([-1.0, 0.0]), np.array([[1.0, 0.0]]), np.array([0.0]), np.zeros(1),
                  np.full(1, np.inf), names, np.float64)
    assert "constraints[0] sits at its lower bound with the multiplier -1" in out.problem
    # an inactive row and a gradient that does not vanish
    out = recover(x, np.array([1.0, 0.0]), np.array([[1.0, 0.0]]), np.array([0.01]), np.zeros(1),
                  np.full(1, np.inf), names, np.float64)
    assert "x is no KKT point" in out.problem and "constraints[0], 0.01 from it" in out.problem


def test_bad_constraints_are_named():
    fun = lambda x: (x ** 2).sum()  # noqa: E731
    with pytest.raises(TypeError, match=r"constraints\[1\] must be a dict"):
        minimize(fun, np.zeros(2), constraints=[{"type": "eq", "fun": sum}, 3.0])
    with pytest.raises(TypeError, match=r"constraints\[0\]\['fun'\] must be a callable"):
        minimize(fun, np.zeros(2), constraints=[{"type": "eq"}])
    with pytest.raises(ValueError, match="must have lb <= ub"):
        minimize(fun, np.zeros(2), constraints=NonlinearConstraint(lambda x: x, 1.0, 0.0))
    with pytest.raises(ValueError, match=r"the lb of constraints\[0\] must be a number or hold "
                                         r"one entry per row of its function \(2\)"):
        minimize(fun, np.zeros(2), constraints=[NonlinearConstraint(lambda x: x, np.zeros(3), 1.0)])
    with pytest.raises(TypeError, match="the lb and ub of constraints must be constants"):
        reverse.grad(lambda b: minimize(fun, np.zeros(2), constraints=NonlinearConstraint(
            lambda x: x.sum(), b, np.inf)).x.sum())(1.0)


def test_a_complex_jacobian_is_refused():
    """dF/dx was cast to float64, dropping its imaginary part without a word."""
    with pytest.raises(TypeError, match=r"dF/dx at the solution must be real .*got complex128"):
        Factorization((), np.array([[1.0 + 1.0j, 0.0], [0.0, 1.0]]), "example", symmetric=False)
    lu = Factorization((), np.eye(2), "example", symmetric=False)
    with pytest.raises(TypeError, match="right-hand side .* must be real"):
        lu.solve(np.array([1.0j, 0.0]), transposed=False)

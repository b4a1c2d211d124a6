"""Standard test problems for issue 37's target: derivatives of ``dualad.scipy``'s solutions
against central differences of SciPy's own solve, on problems of the standard sets.

Each problem is a function ``solution(api, theta)`` that solves one problem, whose data
depend on the parameters ``theta``, with ``api``'s solvers: :data:`SCIPY` (plain SciPy),
:data:`DUALAD` (``dualad.scipy``, whose solution carries derivatives; the same call,
arguments and tolerances included, so that its solution is SciPy's, bit for bit) or
:data:`ORACLE` (SciPy, whose minimizers end with a polish, :func:`polish`). The first
docstring line names the problem's source; the rest says how ``theta`` enters. The
problems are written from their mathematical definitions:

- MGH: J. J. More, B. S. Garbow, K. E. Hillstrom, "Testing unconstrained optimization
  software", ACM TOMS 7 (1981) 17-41 (problem numbers as there; at theta's values that
  give MGH's data, the minima found are MGH's f*);
- HS: W. Hock, K. Schittkowski, "Test examples for nonlinear programming codes" (1981);
- CUTEst's GENROSE (the chained Rosenbrock function);
- Robertson's stiff chemical kinetics and the Van der Pol oscillator, as in E. Hairer,
  G. Wanner, "Solving Ordinary Differential Equations II" (IV.1 and IV.10);
- the 5-point finite-difference diffusion (Poisson) equation on the unit square.

The solvers' derivatives (``jac`` of ``root``, ``minimize`` and ``least_squares``) are
complex steps of the problem's own function: exact to rounding, and independent of dualad.
"""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest

__all__ = ["DUALAD", "ORACLE", "PROBLEMS", "SCIPY", "Api", "Problem"]

# The solves' tolerances, those of SciPy's oracle and of dualad's call alike.
# least_squares: trf and dogbox stop on their step (xtol), without ftol, which stops them at
# |x - x*| ~ sqrt(ftol); lm takes no tolerance below eps
LSQ = {"trf": {"xtol": 1e-15, "ftol": None, "gtol": 1e-15},
       "dogbox": {"xtol": 1e-15, "ftol": None, "gtol": 1e-15},
       "lm": {"xtol": 1e-15, "ftol": 3e-16, "gtol": 1e-15}}
ROOT_TOL = 1e-13                                        # root (hybr's relative xtol)
GTOL = 1e-9                                             # minimize's gradient norm (trust-exact)
LBFGSB = {"ftol": 1e-16, "gtol": 1e-12, "maxiter": 2000}
ODE_RTOL = 1e-10                                        # solve_ivp (atol: 0.1 rtol, scaled)
CG_RTOL = 1e-13


@dataclass(frozen=True)
class Api:
    """The solvers a problem calls: SciPy's, or dualad.scipy's of the same names.
    ``polish``: the oracle's, which ends each minimization with a root of its gradient;
    ``ivp``: more keywords of ``solve_ivp`` (dualad's reverse mode by the adjoint: with 2 or
    3 parameters it would take the forward sensitivities, which ``jacfwd`` tests already)."""
    optimize: Any
    solve_ivp: Callable
    spsolve: Callable
    cg: Callable
    csr_array: Callable
    polish: bool = False
    ivp: dict = field(default_factory=dict)


def _scipy(polish: bool) -> Api:
    import scipy.integrate
    import scipy.optimize
    import scipy.sparse
    import scipy.sparse.linalg
    return Api(scipy.optimize, scipy.integrate.solve_ivp, scipy.sparse.linalg.spsolve,
               scipy.sparse.linalg.cg, scipy.sparse.csr_array, polish)


def _dualad() -> Api:
    from dualad.scipy import integrate, optimize
    from dualad.scipy.sparse import csr_array, linalg
    return Api(optimize, integrate.solve_ivp, linalg.spsolve, linalg.cg, csr_array,
               ivp={"sensitivity": "adjoint"})


# SciPy's call as dualad makes it; the oracle (the same, and the polish); dualad.scipy's
SCIPY, ORACLE, DUALAD = _scipy(False), _scipy(True), _dualad()


@dataclass(frozen=True)
class Problem:
    """One problem: ``solution(api, theta)`` at the parameters ``theta``.

    ``h`` is the largest central-difference step (relative to ``|theta_i|``);
    ``second_order`` says whether H v applies (``solve_ivp`` has no second derivatives);
    ``directional`` checks one direction of ``theta`` instead of the whole Jacobian (a
    system too large for one finite difference per parameter); ``marks`` are pytest's, for
    every test of the problem; ``xfail`` maps a test ("forward", "reverse", "hvp") to the
    error it raises and why (a known bug, reported; the test is a strict xfail).
    """
    name: str
    source: str
    solution: Callable
    theta: np.ndarray
    h: float = 1e-2
    second_order: bool = True
    directional: bool = False
    marks: tuple = field(default=())
    xfail: dict = field(default_factory=dict)


PROBLEMS: dict[str, Problem] = {}


def problem(theta, name=None, **options):
    """Register the decorated ``solution(api, theta)`` under ``name`` (its own by default)."""
    def register(solution):
        source = solution.__doc__.strip().splitlines()[0]
        key = name or solution.__name__
        PROBLEMS[key] = Problem(key, source, solution, np.asarray(theta, dtype=float), **options)
        return solution
    return register


# -- the solvers' derivatives: complex steps -----------------------------------------------------
CS = 1e-30


def cs_jacobian(fun):
    """The Jacobian of the real-analytic ``fun(x, *args)`` (a vector) by complex steps."""
    def jac(x, *args):
        x = np.asarray(x, dtype=float)
        cols = []
        for i in range(x.size):
            z = x.astype(complex)
            z[i] += CS * 1j
            cols.append(np.imag(fun(z, *args)) / CS)
        return np.stack(cols, axis=-1)
    return jac


def cs_gradient(fun):
    """The gradient of the real-analytic scalar ``fun(x, *args)`` by complex steps."""
    jac = cs_jacobian(fun)
    return lambda x, *args: jac(x, *args).reshape(-1)


def fd_hessian(grad):
    """The Hessian by central differences of the exact ``grad`` (error ~1e-10: it only
    steers trust-exact's steps; the gradient decides where they stop)."""
    def hess(x, *args):
        x = np.asarray(x, dtype=float)
        cols = []
        for i in range(x.size):
            e = np.zeros_like(x)
            e[i] = 1e-5 * max(1.0, abs(x[i]))
            cols.append((grad(x + e, *args) - grad(x - e, *args)) / (2 * e[i]))
        h = np.stack(cols, axis=-1)
        return (h + h.T) / 2
    return hess


def polish(api, objective, x, theta, bounds=None):
    """``x``, SciPy's minimizer of ``objective(., theta)``; the oracle's (``api.polish``) ends
    with SciPy's root (hybr) of the gradient in the variables SciPy left off their bounds.

    A minimizer that accepts its steps by comparing values of the objective stops where
    their decrease drowns in rounding: ``|x - x*|`` about ``sqrt(eps f* / lambda)``, 1e-9
    on the nonzero-residual fits, which central differences would divide by their step.
    The root of the exact (complex-step) gradient is accurate to rounding.
    """
    if not api.polish:
        return x
    lb, ub = (np.full(x.size, -np.inf), np.full(x.size, np.inf)) if bounds is None else bounds
    at_lb = np.isfinite(lb) & (x - lb <= 1e-8 * np.maximum(1, abs(lb)))
    at_ub = np.isfinite(ub) & (ub - x <= 1e-8 * np.maximum(1, abs(ub)))
    free = ~(at_lb | at_ub)
    grad = cs_gradient(objective)

    def g(z):
        y = x.copy()
        y[free] = z
        return grad(y, theta)[free]
    res = api.optimize.root(g, x[free], jac=fd_hessian(g), tol=1e-15)
    assert np.linalg.norm(res.x - x[free]) <= 1e-6 * max(1.0, np.linalg.norm(x)), (
        "the polish moved far: SciPy's solve was no minimizer", x, res.x)
    y = x.copy()
    y[free] = res.x
    return y


def least_squares(api, residuals, x0, theta, method="trf", bounds=None):
    x = api.optimize.least_squares(residuals, np.asarray(x0, dtype=float), jac="cs", method=method,
                                   args=(theta,), **({} if bounds is None else {"bounds": bounds}),
                                   **LSQ[method]).x
    return polish(api, sum_of_squares(residuals), x, theta, bounds)


def root(api, residuals, x0, theta, method="hybr"):
    return api.optimize.root(residuals, np.asarray(x0, dtype=float), args=(theta,), method=method,
                             jac=cs_jacobian(residuals), tol=ROOT_TOL).x


def minimize(api, objective, x0, theta, gtol=GTOL):
    grad = cs_gradient(objective)
    x = api.optimize.minimize(objective, np.asarray(x0, dtype=float), args=(theta,),
                              method="trust-exact", jac=grad, hess=fd_hessian(grad),
                              options={"gtol": gtol}).x
    return polish(api, objective, x, theta)


def bounded(api, objective, x0, theta, bounds, method="L-BFGS-B", options=None):
    x = api.optimize.minimize(objective, np.asarray(x0, dtype=float), args=(theta,), method=method,
                              jac=cs_gradient(objective), bounds=bounds,
                              options=LBFGSB if options is None else options).x
    lb = np.array([-np.inf if lo is None else lo for lo, _ in bounds])
    ub = np.array([np.inf if hi is None else hi for _, hi in bounds])
    return polish(api, objective, x, theta, (lb, ub))


def sum_of_squares(residuals):
    return lambda x, theta: (residuals(x, theta) ** 2).sum() / 2


# -- MGH: nonlinear least squares ------------------------------------------------------------------
@problem([1.5, 2.25, 2.625])
def beale(api, theta):
    """Beale (MGH 5), by least_squares (trf).
    theta: the data y, MGH's (1.5, 2.25, 2.625: the zero-residual minimizer (3, 0.5)) times
    (1, 1.02, 0.97), which leaves a residual."""
    i = np.arange(1.0, 4.0)
    return least_squares(api, lambda x, y: y - x[0] * (1 - x[1] ** i), [1.0, 1.0],
                         theta * np.array([1.0, 1.02, 0.97]))


# x* = (1e6, 2e-6): the Hessian's condition number is 1e12 in these units, and dualad says so
@problem([1.0, 1.0], marks=(pytest.mark.filterwarnings("ignore:.*dF/dx is ill-conditioned:RuntimeWarning"),))
def brown_badly_scaled(api, theta):
    """Brown badly scaled (MGH 4), by least_squares (lm).
    theta scales the targets 1e6 and 2 (a nonzero residual where they disagree)."""
    def r(x, t):
        return np.stack([x[0] - 1e6 * t[0], x[1] - 2e-6, x[0] * x[1] - 2.0 * t[1]])
    return least_squares(api, r, [1.0, 1.0], theta * np.array([1.0, 1.1]), method="lm")


BARD_Y = np.array([0.14, 0.18, 0.22, 0.25, 0.29, 0.32, 0.35, 0.39, 0.37, 0.58, 0.73, 0.96, 1.34,
                   2.10, 4.39])


@problem(BARD_Y)
def bard(api, theta):
    """Bard (MGH 8), by least_squares (trf).
    theta: the 15 data y."""
    return least_squares(api, _bard_residual, [1.0, 1.0, 1.0], theta, method="trf")


def _bard_residual(x, y):
    """Bard's residual at the data ``y`` (MGH 8)."""
    u = np.arange(1.0, 16.0)
    v = 16.0 - u
    return y - (x[0] + u / (v * x[1] + np.minimum(u, v) * x[2]))


GAUSSIAN_Y = np.array([0.0009, 0.0044, 0.0175, 0.0540, 0.1295, 0.2420, 0.3521, 0.3989, 0.3521,
                       0.2420, 0.1295, 0.0540, 0.0175, 0.0044, 0.0009])


@problem([1.0, 0.5])
def gaussian(api, theta):
    """Gaussian (MGH 9), by least_squares (lm).
    theta: the data's scale, and a tilt 0.01 theta_1 t added to them."""
    t = (8.0 - np.arange(1.0, 16.0)) / 2

    def r(x, p):
        return x[0] * np.exp(-x[1] * (t - x[2]) ** 2 / 2) - (p[0] * GAUSSIAN_Y + 0.01 * p[1] * t)
    return least_squares(api, r, [0.4, 1.0, 0.0], theta, method="lm")


@problem([1.0, 0.5])
def box_3d(api, theta):
    """Box three-dimensional (MGH 12), m = 10, by least_squares (lm).
    theta: the second exponential's rate 10 theta_0 in the data, and a perturbation
    0.01 theta_1 cos(i) of them (the minimizer (1, 10, 1) at theta = (1, 0))."""
    t = 0.1 * np.arange(1.0, 11.0)
    d = 0.01 * np.cos(np.arange(1.0, 11.0))

    def r(x, p):
        return (np.exp(-t * x[0]) - np.exp(-t * x[1]) - x[2] * (np.exp(-t) - np.exp(-10 * p[0] * t))
                - p[1] * d)
    return least_squares(api, r, [1.2, 9.0, 1.1], theta, method="lm")


KOWALIK_Y = np.array([0.1957, 0.1947, 0.1735, 0.1600, 0.0844, 0.0627, 0.0456, 0.0342, 0.0323,
                      0.0235, 0.0246])
KOWALIK_U = np.array([4.0, 2.0, 1.0, 0.5, 0.25, 0.167, 0.125, 0.1, 0.0833, 0.0714, 0.0625])


@problem(KOWALIK_Y)
def kowalik_osborne(api, theta):
    """Kowalik and Osborne (MGH 15), by least_squares (trf).
    theta: the 11 data y."""
    u = KOWALIK_U

    def r(x, y):
        return y - x[0] * (u ** 2 + u * x[1]) / (u ** 2 + u * x[2] + x[3])
    return least_squares(api, r, [0.25, 0.39, 0.415, 0.39], theta)


@problem([1.0, 1.0])
def brown_dennis(api, theta):
    """Brown and Dennis (MGH 16), m = 20, by least_squares (trf).
    theta scales the targets exp(t) and cos(t)."""
    t = np.arange(1.0, 21.0) / 5

    def r(x, p):
        return ((x[0] + t * x[1] - p[0] * np.exp(t)) ** 2
                + (x[2] + x[3] * np.sin(t) - p[1] * np.cos(t)) ** 2)
    return least_squares(api, r, [-11.6, 13.2, -0.4, 0.6], theta)


OSBORNE1_Y = np.array([0.844, 0.908, 0.932, 0.936, 0.925, 0.908, 0.881, 0.850, 0.818, 0.784, 0.751,
                       0.718, 0.685, 0.658, 0.628, 0.603, 0.580, 0.558, 0.538, 0.522, 0.506, 0.490,
                       0.478, 0.467, 0.457, 0.448, 0.438, 0.431, 0.424, 0.420, 0.414, 0.411, 0.406])


@problem([1.0, 0.5])
def osborne_1(api, theta):
    """Osborne 1 (MGH 17), by least_squares (trf).
    theta: the data's scale, and a tilt 0.01 theta_1 t / 320 added to them."""
    t = 10.0 * np.arange(33.0)

    def r(x, p):
        model = x[0] + x[1] * np.exp(-t * x[3]) + x[2] * np.exp(-t * x[4])
        return p[0] * OSBORNE1_Y + 0.01 * p[1] * t / 320 - model
    return least_squares(api, r, [0.5, 1.5, -1.0, 0.01, 0.02], theta)


@problem([1.0, 0.5])
def biggs_exp6(api, theta):
    """Biggs EXP6 (MGH 18), m = 13, by least_squares (lm).
    theta: the data's scale, and a perturbation 0.01 theta_1 cos(3 t) of them (the
    zero-residual minimizer (1, 10, 1, 5, 4, 3) at theta = (1, 0))."""
    t = 0.1 * np.arange(1.0, 14.0)
    y = np.exp(-t) - 5 * np.exp(-10 * t) + 3 * np.exp(-4 * t)

    def r(x, p):
        return (x[2] * np.exp(-t * x[0]) - x[3] * np.exp(-t * x[1]) + x[5] * np.exp(-t * x[4])
                - (p[0] * y + 0.01 * p[1] * np.cos(3 * t)))
    return least_squares(api, r, [1.1, 9.5, 1.1, 5.2, 4.1, 2.9], theta, method="lm")


@problem([1.0, 1.0])
def watson(api, theta):
    """Watson (MGH 20), n = 6, by least_squares (lm).
    theta: the constants 1 of the 29 residuals and of the last one."""
    t = np.arange(1.0, 30.0) / 29
    j = np.arange(1, 7)
    slope = (j[1:] - 1) * t[:, None] ** (j[1:] - 2)     # d/dt of sum x_j t^(j-1), j >= 2
    value = t[:, None] ** (j - 1)

    def r(x, p):
        return np.concatenate([slope @ x[1:] - (value @ x) ** 2 - p[0],
                               np.stack([x[0], x[1] - x[0] ** 2 - p[1]])])
    return least_squares(api, r, np.zeros(6), theta, method="lm")


@problem([1.0, 1.0])
def penalty_1(api, theta):
    """Penalty function I (MGH 23), n = 4, by least_squares (lm).
    theta: the targets 1 of the penalties and 1/4 of the norm."""
    def r(x, p):
        return np.concatenate([np.sqrt(1e-5) * (x - p[0]),
                               np.stack([(x ** 2).sum() - 0.25 * p[1]])])
    return least_squares(api, r, np.arange(1.0, 5.0), theta, method="lm")


@problem([0.5, 1.0])
def variably_dimensioned(api, theta):
    """Variably dimensioned (MGH 25), n = 8, by least_squares (trf).
    theta: a shift theta_0 sin(j) of the targets 1 of x_j, and the 1 of the sums."""
    n = 8
    j = np.arange(1.0, n + 1)

    def r(x, p):
        s = (j * (x - p[1])).sum()
        return np.concatenate([x - 1 - p[0] * np.sin(j), np.stack([s, s ** 2])])
    return least_squares(api, r, 1 - j / n, theta)


@problem(np.linspace(0.8, 1.2, 10))
def linear_full_rank(api, theta):
    """Linear function, full rank (MGH 32), n = 5, m = 10, by least_squares (trf).
    theta: the 10 constants 1 of the residuals."""
    def r(x, c):
        s = 2.0 / 10 * x.sum()
        return np.concatenate([x - s, -s * np.ones(5)]) - c
    return least_squares(api, r, np.ones(5), theta, method="trf")


@problem([1.0, 1.2, 0.9, 1.1, 1.0])
def extended_rosenbrock(api, theta):
    """Extended Rosenbrock (MGH 21), n = 10, by least_squares (trf).
    theta: the targets 1 of the 5 pairs (their minimizer (theta_k, theta_k**2))."""
    def r(x, c):
        odd, even = x[0::2], x[1::2]
        return np.concatenate([10 * (even - odd ** 2), c - odd])
    return least_squares(api, r, np.tile([-1.2, 1.0], 5), theta, method="trf")


# -- MGH and CUTEst: minimization --------------------------------------------------------------------
@problem([1.0, 1.0])
def rosenbrock(api, theta):
    """Rosenbrock (MGH 1), by minimize (trust-exact).
    theta: the target 1 of x_1 and the weight 100 of the valley (x* = (theta_0, theta_0**2))."""
    def f(x, p):
        return 100 * p[1] * (x[1] - x[0] ** 2) ** 2 + (p[0] - x[0]) ** 2
    return minimize(api, f, [-1.2, 1.0], theta)


def _wood(x, p):
    """MGH 14's sum of squares, with the targets 1 of x_1 and x_3 given by p."""
    return (100 * (x[1] - x[0] ** 2) ** 2 + (p[0] - x[0]) ** 2 + 90 * (x[3] - x[2] ** 2) ** 2
            + (p[1] - x[2]) ** 2 + 10 * (x[1] + x[3] - 2) ** 2 + 0.1 * (x[1] - x[3]) ** 2)


@problem([1.1, 0.9])
def wood(api, theta):
    """Wood (MGH 14), by minimize (trust-exact).
    theta: the targets 1 of x_1 and x_3 (a nonzero residual away from (1, 1))."""
    return minimize(api, _wood, [-3.0, -1.0, -3.0, -1.0], theta)


@problem([0.1, 1.0])
def helical_valley(api, theta):
    """Helical valley (MGH 7), by minimize (trust-exact).
    theta: a target theta_0 of x_3 and the radius 1 of the helix."""
    def f(x, p):
        phi = np.arctan(x[1] / x[0]) / (2 * np.pi)   # x_1 > 0 along the path taken
        return (100 * (x[2] - 10 * phi) ** 2 + 100 * (np.sqrt(x[0] ** 2 + x[1] ** 2) - p[1]) ** 2
                + (x[2] - p[0]) ** 2)
    return minimize(api, f, [1.0, 0.5, 0.5], theta)


@problem([1.1, 1.0])
def genrose(api, theta):
    """GENROSE (CUTEst; the chained Rosenbrock function), n = 8, by minimize (trust-exact).
    theta: the targets 1 of the x_i and the weight 100 of the valleys."""
    def f(x, p):
        return 1 + (100 * p[1] * (x[1:] - x[:-1] ** 2) ** 2 + (p[0] - x[1:]) ** 2).sum()
    return minimize(api, f, np.full(8, 1.0 / 9), theta)


# -- MGH: systems of equations ---------------------------------------------------------------------
@problem([1.0, 1.0])
def freudenstein_roth(api, theta):
    """Freudenstein and Roth (MGH 2), as a root (hybr).
    theta scales the constants 13 and 29 (the root (5, 4) at theta = (1, 1))."""
    def f(x, p):
        return np.stack([-13 * p[0] + x[0] + ((5 - x[1]) * x[1] - 2) * x[1],
                         -29 * p[1] + x[0] + ((x[1] + 1) * x[1] - 14) * x[1]])
    return root(api, f, [4.5, 4.2], theta)


@problem([1.0, 1.0])
def powell_badly_scaled(api, theta):
    """Powell badly scaled (MGH 3), as a root (hybr).
    theta: the constant 1 of the first equation and 1e-4 theta_1 of the second."""
    def f(x, p):
        return np.stack([1e4 * x[0] * x[1] - p[0], np.exp(-x[0]) + np.exp(-x[1]) - 1 - 1e-4 * p[1]])
    return root(api, f, [1e-5, 9.0], theta)


@problem([1.0, 0.3])
def trigonometric(api, theta):
    """Trigonometric (MGH 26), n = 5, as a root (hybr).
    theta: the weight of sin(x_i), and a shift 0.01 theta_1 i of the i-th equation."""
    n = 5
    i = np.arange(1.0, n + 1)

    def f(x, p):
        return n - np.cos(x).sum() + i * (1 - np.cos(x)) - p[0] * np.sin(x) - 0.01 * p[1] * i
    # near the root that 1/n (MGH's start) leads to: central differences' neighbours from
    # 1/n reach other roots of the system, which has many
    return root(api, f, [0.11, 0.12, 0.13, 0.35, 0.23], theta)


@problem([1.0, 1.0], h=3e-4)   # x* moves 6x as fast as theta_0, and curves: a smaller step
def brown_almost_linear(api, theta):
    """Brown almost-linear (MGH 27), n = 5, as a root (hybr).
    theta: the constant n + 1 (scaled) and the 1 of the product (the root ones at (1, 1))."""
    n = 5

    def f(x, p):
        return np.concatenate([x[:-1] + x.sum() - (n + 1) * p[0],
                               np.stack([functools.reduce(operator.mul, [x[k] for k in range(n)])
                                         - p[1]])])
    return root(api, f, np.full(n, 0.5), theta)


def _grid(n):
    h = 1.0 / (n + 1)
    return h, h * np.arange(1.0, n + 1)


@problem([1.0, 1.0])
def discrete_boundary_value(api, theta):
    """Discrete boundary value (MGH 28), n = 10, as a root (hybr).
    theta: the weight of the cubic term and the constant 1 in it."""
    n = 10
    h, t = _grid(n)

    def f(x, p):
        padded = np.concatenate([np.zeros(1), x, np.zeros(1)])
        return (2 * x - padded[:-2] - padded[2:]
                + p[0] * h ** 2 * (x + t + p[1]) ** 3 / 2)
    return root(api, f, t * (t - 1), theta)


@problem([1.0, 1.0])
def discrete_integral_equation(api, theta):
    """Discrete integral equation (MGH 29), n = 10, as a root (hybr).
    theta: the weight of the integral and the constant 1 in its integrand."""
    n = 10
    h, t = _grid(n)
    lower = np.tril(np.ones((n, n)))                   # j <= i
    upper = 1 - lower                                  # j > i

    def f(x, p):
        g = (x + t + p[1]) ** 3
        return x + p[0] * h * ((1 - t) * (lower @ (t * g)) + t * (upper @ ((1 - t) * g))) / 2
    return root(api, f, t * (t - 1), theta)


@problem([1.0, 1.0])
def broyden_tridiagonal(api, theta):
    """Broyden tridiagonal (MGH 30), n = 10, as a root (hybr).
    theta: the weight 2 of the quadratic term (as 2 theta_0) and the constant 1."""
    n = 10

    def f(x, p):
        padded = np.concatenate([np.zeros(1), x, np.zeros(1)])
        return (3 - 2 * p[0] * x) * x - padded[:-2] - 2 * padded[2:] + p[1]
    return root(api, f, -np.ones(n), theta)


@problem([1.0, 1.0])
def broyden_banded(api, theta):
    """Broyden banded (MGH 31), n = 10, as a root (hybr).
    theta: the weight 5 of the cube (as 5 theta_0) and the constant 1."""
    n = 10
    band = np.array([[1.0 if j != i and max(0, i - 5) <= j <= min(n - 1, i + 1) else 0.0
                      for j in range(n)] for i in range(n)])

    def f(x, p):
        return x * (2 + 5 * p[0] * x ** 2) + p[1] - band @ (x * (1 + x))
    return root(api, f, -np.ones(n), theta)


@problem([1.0, 0.5])
def chebyquad(api, theta):
    """Chebyquad (MGH 35), n = 6, as a root (hybr).
    theta: the scale of the integrals of the shifted Chebyshev polynomials, and a shift
    0.01 theta_1 i of the i-th equation."""
    n = 6
    i = np.arange(1, n + 1)
    integral = np.where(i % 2 == 0, -1.0 / np.maximum(i ** 2 - 1.0, 1.0), 0.0)

    def f(x, p):
        y = 2 * x - 1
        rows, previous, current = [], np.ones(n), y
        for _ in range(n):
            rows.append(current.sum() / n)
            previous, current = current, 2 * y * current - previous
        return np.stack(rows) - p[0] * integral - 0.01 * p[1] * i
    return root(api, f, i / (n + 1.0), theta)


# -- bound-constrained: HS, and MGH problems with bounds --------------------------------------------
@problem([1.0, 1.0])
def hs1(api, theta):
    """HS 1 (Rosenbrock with x_2 >= -1.5: inactive), by minimize (L-BFGS-B).
    theta: the target 1 of x_1 and the weight 100."""
    def f(x, p):
        return 100 * p[1] * (x[1] - x[0] ** 2) ** 2 + (p[0] - x[0]) ** 2
    return bounded(api, f, [-2.0, 1.0], theta, [(None, None), (-1.5, None)])


@problem([1.0, 1.0])
def hs2(api, theta):
    """HS 2 (Rosenbrock with x_2 >= 1.5: active), by minimize (L-BFGS-B).
    theta: the target 1 of x_1 and the weight 100 (x_1 moves, x_2 stays at 1.5). From (1, 2):
    from HS's start (-2, 1) L-BFGS-B finds the other local minimum, x_1 = -1.221."""
    def f(x, p):
        return 100 * p[1] * (x[1] - x[0] ** 2) ** 2 + (p[0] - x[0]) ** 2
    return bounded(api, f, [1.0, 2.0], theta, [(None, None), (1.5, None)])


@problem([1.5, 2.5])
def hs5(api, theta):
    """HS 5 (-1.5 <= x_1 <= 4, -3 <= x_2 <= 3: an interior minimum), by minimize (TNC).
    theta: the linear coefficients 1.5 and 2.5."""
    def f(x, p):
        return np.sin(x[0] + x[1]) + (x[0] - x[1]) ** 2 - p[0] * x[0] + p[1] * x[1] + 1
    return bounded(api, f, [0.0, 0.0], theta, [(-1.5, 4.0), (-3.0, 3.0)], method="TNC",
                   options={"gtol": 1e-13, "xtol": 1e-15, "ftol": 0.0, "maxfun": 2000})


@problem([1.1, 0.9])
def hs38(api, theta):
    """HS 38 (Wood, MGH 14, with -10 <= x <= 10: inactive), by minimize (L-BFGS-B).
    theta: the targets 1 of x_1 and x_3."""
    return bounded(api, _wood, [-3.0, -1.0, -3.0, -1.0], theta, [(-10.0, 10.0)] * 4)


@problem([1.1, 0.9])
def wood_upper(api, theta):
    """Wood (MGH 14) with x_1 <= 0.9 (active), by minimize (L-BFGS-B).
    theta: the targets 1 of x_1 and x_3 (x_2, x_3, x_4 move, x_1 stays at 0.9)."""
    return bounded(api, _wood, [0.0, 0.0, 0.0, 0.0], theta, [(None, 0.9), (None, None),
                                                             (None, None), (None, None)])


@problem([1.5, 2.25, 2.625])
def beale_bounded(api, theta):
    """Beale (MGH 5) with 0 <= x_1 <= 2.5 (upper active) and 0 <= x_2 <= 1, by minimize (L-BFGS-B).
    theta: the data y."""
    i = np.arange(1.0, 4.0)
    return bounded(api, sum_of_squares(lambda x, y: y - x[0] * (1 - x[1] ** i)), [1.0, 0.5],
                   theta, [(0.0, 2.5), (0.0, 1.0)])


@problem([1.1, 1.0])
def genrose_bounded(api, theta):
    """GENROSE (CUTEst), n = 8, with x_i <= 1.05 for odd i (some active), by minimize (L-BFGS-B).
    theta: the targets 1 of the x_i and the weight 100 of the valleys."""
    def f(x, p):
        return 1 + (100 * p[1] * (x[1:] - x[:-1] ** 2) ** 2 + (p[0] - x[1:]) ** 2).sum()
    return bounded(api, f, np.full(8, 0.5), theta,
                   [(None, 1.05) if k % 2 else (None, None) for k in range(8)])


@problem(BARD_Y)
def bard_bounded(api, theta):
    """Bard (MGH 8) with x_2 >= 1.5 (active), by least_squares (dogbox).
    theta: the 15 data y."""
    bounds = (np.array([-np.inf, 1.5, -np.inf]), np.full(3, np.inf))
    return least_squares(api, _bard_residual, [0.1, 1.6, 2.0],
                         theta, method="dogbox", bounds=bounds)


# -- stiff ODEs ----------------------------------------------------------------------------------
ROBERTSON_SCALE = np.array([1.0, 1e4, 1.0])   # y_2 is about 1e-5: each output of order 1


def robertson(method):
    def solution(api, theta):
        """Robertson's stiff kinetics (Hairer-Wanner II, IV.1), y(40), by solve_ivp.
        theta multiplies the rate constants 0.04, 3e7, 1e4; y_2 is reported times 1e4."""
        def rates(p):
            return 0.04 * p[0], 3e7 * p[1], 1e4 * p[2]

        def f(t, y):
            k1, k2, k3 = rates(theta)
            return np.stack([-k1 * y[0] + k3 * y[1] * y[2],
                             k1 * y[0] - k3 * y[1] * y[2] - k2 * y[1] ** 2,
                             k2 * y[1] ** 2])

        def jac(t, y):
            k1, k2, k3 = rates(theta)
            return np.array([[-k1, k3 * y[2], k3 * y[1]],
                             [k1, -k3 * y[2] - 2 * k2 * y[1], -k3 * y[1]],
                             [0.0, 2 * k2 * y[1], 0.0]])
        res = api.solve_ivp(f, (0.0, 40.0), np.array([1.0, 0.0, 0.0]), method=method, jac=jac,
                            t_eval=[40.0], atol=0.1 * ODE_RTOL / ROBERTSON_SCALE, rtol=ODE_RTOL,
                            **api.ivp)
        return res.y[:, -1] * ROBERTSON_SCALE
    return solution


def van_der_pol(method):
    def solution(api, theta):
        """Van der Pol's oscillator (Hairer-Wanner II, IV.10), mu = 20, y(20), by solve_ivp.
        theta: mu, and the initial value y_1(0) = theta_1 (y_2(0) = 0); y(20) is past the
        first fast transition."""
        def f(t, y):
            return np.stack([y[1], theta[0] * (1 - y[0] ** 2) * y[1] - y[0]])

        def jac(t, y):
            return np.array([[0.0, 1.0], [-2 * theta[0] * y[0] * y[1] - 1, theta[0] * (1 - y[0] ** 2)]])
        y0 = np.concatenate([theta[1:2], np.zeros(1)])
        res = api.solve_ivp(f, (0.0, 20.0), y0, method=method, jac=jac, t_eval=[20.0],
                            atol=0.1 * ODE_RTOL, rtol=ODE_RTOL, **api.ivp)
        return res.y[:, -1]
    return solution


for _method in ("BDF", "Radau", "LSODA"):
    problem([1.0, 1.0, 1.0], f"robertson_{_method}", second_order=False)(robertson(_method))
    problem([20.0, 2.0], f"van_der_pol_{_method}", second_order=False)(van_der_pol(_method))


# -- sparse linear systems -------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def diffusion(m):
    """The 5-point finite-difference matrix of -div(k grad u) on the unit square, m x m
    interior points, zero boundary values, for k = theta_0 + theta_1 x: ``(A_0, A_1)`` on one
    sparsity structure (``A = theta_0 A_0 + theta_1 A_1``, each face weighted by k at its
    midpoint), and the mesh's x of each unknown."""
    import scipy.sparse
    h = 1.0 / (m + 1)
    x = h * np.arange(1, m + 1)
    X = np.repeat(x, m)                       # unknown (i, j) -> i m + j, x along i

    def assemble(k):
        """The matrix for the face coefficient ``k(x)``."""
        rows, cols, vals = [], [], []
        idx = np.arange(m * m).reshape(m, m)
        for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            xf = (X + di * h / 2).reshape(m, m)  # the face's midpoint, in x
            kf = k(xf)
            rows.append(idx.ravel())
            cols.append(idx.ravel())
            vals.append(kf.ravel())
            i0, i1 = max(0, -di), m - max(0, di)
            j0, j1 = max(0, -dj), m - max(0, dj)
            rows.append(idx[i0:i1, j0:j1].ravel())
            cols.append(idx[i0 + di:i1 + di, j0 + dj:j1 + dj].ravel())
            vals.append(-kf[i0:i1, j0:j1].ravel())
        a = scipy.sparse.coo_array((np.concatenate(vals) / h ** 2,
                                    (np.concatenate(rows), np.concatenate(cols))),
                                   shape=(m * m, m * m)).tocsr()
        a.sum_duplicates()
        a.sort_indices()
        return a
    a0, a1 = assemble(np.ones_like), assemble(lambda x: x)
    assert np.array_equal(a0.indices, a1.indices) and np.array_equal(a0.indptr, a1.indptr)
    return a0, a1, X


def _poisson(api, theta, m, solve):
    a0, a1, X = diffusion(m)
    data = theta[0] * a0.data + theta[1] * a1.data
    A = api.csr_array((data, a0.indices, a0.indptr), shape=a0.shape)
    b = theta[2] * np.sin(np.pi * X) + 1.0
    return solve(api, A, b)


@problem([1.0, 0.5, 1.0], directional=True, second_order=False)
def poisson_1e5(api, theta):
    """The 2-D Poisson (diffusion) equation, 5-point stencil, 317 x 317 = 100,489 unknowns,
    by spsolve. theta: the diffusivity k = theta_0 + theta_1 x and the source's amplitude."""
    return _poisson(api, theta, 317, lambda api, A, b: api.spsolve(A, b, permc_spec="MMD_AT_PLUS_A"))


@problem([1.0, 0.5, 1.0])
def poisson_cg(api, theta):
    """The 2-D Poisson (diffusion) equation, 5-point stencil, 40 x 40 unknowns, by cg.
    theta: the diffusivity k = theta_0 + theta_1 x and the source's amplitude."""
    return _poisson(api, theta, 40, lambda api, A, b: api.cg(A, b, rtol=CG_RTOL)[0])

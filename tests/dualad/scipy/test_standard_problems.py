"""Issue 37's correctness target: derivatives of dualad.scipy's solutions equal central
differences of SciPy's solve, Richardson-extrapolated, to 1e-6 relative (norm-wise: one
number for a whole Jacobian), on the problems of tests/_support/standard_problems.py: MGH
least squares, minimization and systems of equations; HS and MGH problems with bounds, some
active; stiff Robertson and Van der Pol (BDF, Radau, LSODA); a 2-D Poisson system of 100,489
unknowns (spsolve) and a smaller one (cg).

The oracle is SciPy alone, at these tolerances: least_squares xtol = gtol = 1e-15 (lm's ftol
3e-16, none for trf and dogbox); root (hybr) 1e-13; trust-exact's gtol 1e-9; L-BFGS-B's
ftol 1e-16 and gtol 1e-12; TNC's gtol 1e-13; each minimizer's solution then polished by
SciPy's root (hybr, 1e-15) of the complex-step gradient in the variables off their bounds
(standard_problems.polish: a minimizer stops at |x - x*| ~ sqrt(eps f*), 1e-9 on the fits);
solve_ivp by LSODA at rtol 1e-10 (atol 1e-11, scaled) for every method; spsolve's LU; cg to
1e-13. Its central differences are taken at the steps h, h/2, h/4 (h = 1e-2 |theta_i|
unless the problem says; h, h/2 for the system of 1e5 unknowns) and extrapolated to the
step 0 (tests/_support/solutions.py's ``richardson``). dualad differentiates the same SciPy
call as the oracle's before its polish (solve_ivp at rtol 1e-10 by the method named), whose
solution it returns bit for bit.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from _support.solutions import RTOL, normwise_error, richardson, richardson_jacobian, richardson_second
from _support.standard_problems import DUALAD, ORACLE, PROBLEMS, SCIPY

import dualad
import mixed
import reverse

# The stiff ODEs' oracle: SciPy's LSODA (rtol 1e-10), whatever the method differentiated: the
# derivative of the exact solution is every method's to approximate, and LSODA's central
# differences agree with Radau's at rtol 1e-13 to 2e-8 in a tenth of the time.
ODE_ORACLE = {"robertson": "robertson_LSODA", "van_der_pol": "van_der_pol_LSODA"}


def _oracle_of(problem):
    base = problem.name.rsplit("_", 1)[0]
    return PROBLEMS[ODE_ORACLE.get(base, problem.name)]


def _params(test, select=lambda p: True):
    """The problems of one test, with their marks: a known bug's a strict xfail."""
    def marks(p):
        if test not in p.xfail:
            return p.marks
        raises, reason = p.xfail[test]
        return [*p.marks, pytest.mark.xfail(strict=True, raises=raises, reason=reason)]
    return [pytest.param(p, id=name, marks=marks(p)) for name, p in PROBLEMS.items() if select(p)]


def _weights(n, seed):
    return np.random.default_rng(seed).uniform(0.5, 1.5, n) * np.where(np.arange(n) % 2, -1.0, 1.0)


def _direction(problem):
    """A direction of theta, relative to each |theta_i| (so that a step of it is too)."""
    scale = np.where(problem.theta == 0, 1.0, np.abs(problem.theta))
    return scale * np.cos(1.0 + np.arange(problem.theta.size))


@functools.lru_cache(maxsize=None)
def reference(name):
    """The oracle's Jacobian (its derivative along :func:`_direction`, for a directional
    problem): central differences of SciPy's solve, Richardson-extrapolated."""
    problem = PROBLEMS[name]
    oracle = _oracle_of(problem)

    def solution(theta):
        return oracle.solution(ORACLE, theta)
    if problem.directional:   # two levels: the four solves of 1e5 unknowns
        v = _direction(problem)
        return richardson(lambda s: (solution(problem.theta + s * v) - solution(problem.theta - s * v))
                          / (2 * s), problem.h, levels=2)
    return richardson_jacobian(solution, problem.theta, problem.h)


def _solution(problem):
    return lambda theta: problem.solution(DUALAD, theta)


@pytest.mark.parametrize("problem", _params("forward"))
def test_forward_mode_equals_finite_differences_of_scipy(problem):
    """jacfwd (jvp along one direction where the problem is directional) against the oracle."""
    want = reference(problem.name)
    if problem.directional:
        _, got = dualad.jvp(_solution(problem), (problem.theta,), (_direction(problem),))
    else:
        got = dualad.jacfwd(_solution(problem))(problem.theta)
    assert normwise_error(got, want) <= RTOL, problem.source


@pytest.mark.parametrize("problem", _params("reverse"))
def test_reverse_mode_equals_finite_differences_of_scipy(problem):
    """reverse.grad of u . x*(theta) against u^T of the oracle's Jacobian; the solution it
    returned is SciPy's own, bit for bit."""
    want = reference(problem.name)
    scipy_x = problem.solution(SCIPY, problem.theta)
    u = _weights(scipy_x.size, 0)

    def loss(theta):
        x = problem.solution(DUALAD, theta)
        return (x * u).sum(), x
    got, x = reverse.grad(loss, has_aux=True)(problem.theta)
    assert np.array_equal(x, scipy_x)
    if problem.directional:
        got, want = got @ _direction(problem), u @ want
    else:
        want = u @ want
    assert normwise_error(got, want) <= RTOL, problem.source


@pytest.mark.parametrize("problem", _params("hvp", lambda p: p.second_order))
def test_hvp_equals_second_differences_of_scipy(problem):
    """mixed.hvp of L = u . x* + |x*|^2 / 2 along v, as v.Hv and w.Hv, against second
    differences of L through SciPy's solve (w.Hv by polarization), Richardson-extrapolated."""
    u = _weights(problem.solution(SCIPY, problem.theta).size, 1)

    def loss(api):
        def L(theta):
            x = problem.solution(api, theta)
            return (x * u).sum() + (x * x).sum() / 2
        return L
    v = _direction(problem)
    w = np.abs(problem.theta) * _weights(problem.theta.size, 2) + (problem.theta == 0)
    hv = mixed.hvp(loss(DUALAD), problem.theta, v)
    second = functools.partial(richardson_second, loss(ORACLE), problem.theta, h=problem.h)
    want = np.array([second(v), (second(w + v) - second(w - v)) / 4])
    assert normwise_error([hv @ v, hv @ w], want) <= RTOL, problem.source


def test_the_problem_set_is_the_issue_s():
    """At least 30 problems of the standard sets, each naming its source."""
    sources = {p.source.split(" (")[0].split(",")[0] for p in PROBLEMS.values()}
    assert len(sources) >= 30, sorted(sources)
    assert all(p.solution.__doc__ for p in PROBLEMS.values())

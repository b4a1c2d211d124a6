"""dualad.scipy.optimize.minimize with bounds: the active set at SciPy's solution decides the
derivative (zero for an active variable, the free block of the Hessian for the others), checked
against the closed form of the KKT system and against central differences of SciPy's solve, in
every mode; a degenerate bound warns, a point that is no KKT point raises (issue 37)."""

from __future__ import annotations

import numpy as np
import pytest
from _support.solutions import close, fd
from scipy.optimize import Bounds

import dualad
import mixed
import reverse
from dualad.scipy._bounds import Box
from dualad.scipy.optimize import NotConvergedError, minimize

# f(x, p) = x'Qx / 2 - p'x + sum(x^4) / 10 on [0, 1]^4: at P, x0 sits at its upper bound,
# x1 at its lower one (both with multipliers far from zero), x2 and x3 are free
Q = np.array([[2.0, 0.5, 0.0, 0.0], [0.5, 2.0, 0.5, 0.0], [0.0, 0.5, 2.0, 0.5],
              [0.0, 0.0, 0.5, 2.0]])
P = np.array([4.0, -2.0, 1.0, 1.5])
FREE = [2, 3]


def f(x, p):
    return 0.5 * x @ Q @ x - p @ x + 0.1 * (x ** 4).sum()


# each method at tolerances near what it can reach; the finite differences of its solve are as
# good as the solve: Powell's line searches along the box's edges stop about 1e-7 off, and TNC
# stops by its own test of f's change (whatever ftol) 3e-8 to 7e-6 off, as the last bits of f
# fall (BLAS kernels of another CPU), so theirs are taken of L-BFGS-B's solve. L-BFGS-B at
# gtol 1e-12 and ftol 1e-15 ended "ABNORMAL" (its line search at f's rounding) in a replay of
# the jit below with OpenBLAS's Haswell kernels: it is asked for what it reaches on each
METHODS = {
    "L-BFGS-B": ({"gtol": 1e-10, "ftol": 1e-13}, 1e-5),
    "TNC": ({"gtol": 1e-12, "xtol": 1e-12, "ftol": 1e-15, "maxfun": 2000}, 1e-5),
    "SLSQP": ({"ftol": 1e-15}, 1e-5),
    "trust-constr": ({"gtol": 1e-12, "xtol": 1e-14}, 1e-5),
    "Nelder-Mead": ({"xatol": 1e-12, "fatol": 1e-15, "maxiter": 20000, "maxfev": 40000}, 1e-5),
}
SCIPY_NOISE = pytest.mark.filterwarnings("ignore:delta_grad == 0.0:UserWarning")


def solution(method):
    options = METHODS[method][0]
    return lambda p: minimize(f, np.full(4, 0.5), args=(p,), method=method,
                              bounds=[(0.0, 1.0)] * 4, options=options).x


def kkt_jacobian(x, free):
    """dx*/dp from the KKT system: zero rows for the active variables, (H_FF)^-1 for the free."""
    hess = Q + np.diag(1.2 * x ** 2)
    jac = np.zeros((x.size, x.size))
    jac[np.ix_(free, free)] = np.linalg.inv(hess[np.ix_(free, free)])
    return jac


@SCIPY_NOISE
@pytest.mark.parametrize("method", list(METHODS))
def test_jacobian_with_active_and_free_variables(method):
    sol = solution(method)
    x = sol(P)
    assert x[0] == pytest.approx(1.0) and x[1] == pytest.approx(0.0, abs=1e-8)
    assert 0.0 < x[2] < 1.0 and 0.0 < x[3] < 1.0
    want = kkt_jacobian(x, FREE)
    jf, jr = dualad.jacfwd(sol)(P), reverse.jacrev(sol)(P)
    close(jf, want, rtol=1e-10, atol=1e-12)
    close(jr, want, rtol=1e-10, atol=1e-12)
    differenced = solution("L-BFGS-B") if method == "TNC" else sol
    close(jf, fd(differenced, P, h=1e-2), rtol=0, atol=METHODS[method][1])


def test_powell_bounds_of_one_side_and_none():
    """Pairs with None, a bound on one side only. Powell's solve is too coarse (about 1e-7)
    for differences of its own solve, so they are taken of L-BFGS-B's solve of the problem."""
    q3, p3 = Q[:3, :3], np.array([4.0, 1.0, -1.5])
    bounds = [(None, 1.0), (None, None), (-0.5, 0.5)]

    def sol(p, method="Powell", options=None):
        return minimize(lambda x: 0.5 * x @ q3 @ x - p @ x + 0.1 * (x ** 4).sum(), np.zeros(3),
                        method=method, bounds=bounds,
                        options=options or {"xtol": 1e-12, "ftol": 1e-15, "maxfev": 20000}).x
    x = sol(p3)
    assert x[0] == pytest.approx(1.0, abs=1e-12) and x[2] == pytest.approx(-0.5, abs=1e-12)
    want = np.zeros((3, 3))
    want[1, 1] = 1.0 / (q3[1, 1] + 1.2 * x[1] ** 2)
    close(reverse.jacrev(sol)(p3), want, rtol=1e-10, atol=1e-12)
    lbfgsb = fd(lambda p: sol(p, "L-BFGS-B", METHODS["L-BFGS-B"][0]), p3, h=1e-2)
    close(dualad.jacfwd(sol)(p3), lbfgsb, rtol=0, atol=1e-5)


def test_hvp_vmap_and_jit_through_a_bounded_solution():
    sol = solution("L-BFGS-B")

    def loss(p):
        x = sol(p)
        return (x ** 2).sum() + x[2] * p[3]
    v = np.array([0.3, -0.2, 0.5, 1.0])
    want = fd(lambda s: reverse.grad(loss)(P + s[0] * v), np.zeros(1), h=1e-2)[:, 0]
    close(mixed.hvp(loss, P, v), want, rtol=0, atol=1e-5)

    # each element has its own active set: at 0.2 P nothing is at the upper bound
    ps = np.stack([P, 0.2 * P, P[::-1]])
    close(dualad.vmap(dualad.jacfwd(sol))(ps), np.stack([dualad.jacfwd(sol)(q) for q in ps]),
          rtol=1e-12)
    x = sol(0.2 * P)
    assert (x < 1.0).all()
    close(dualad.jacfwd(sol)(0.2 * P), kkt_jacobian(x, [0, 2, 3]), rtol=1e-10, atol=1e-12)

    jitted = dualad.jit(reverse.grad(lambda p: sol(p).sum()))
    for q in (P, 0.2 * P):
        close(jitted(q), kkt_jacobian(sol(q), FREE if q is P else [0, 2, 3]).sum(axis=0),
              rtol=1e-10, atol=1e-12)


def test_bounds_object_and_float32():
    def sol(p):
        return minimize(f, np.full(4, 0.5, dtype=np.float32), args=(p,), method="L-BFGS-B",
                        bounds=Bounds(0.0, 1.0), options=METHODS["L-BFGS-B"][0]).x
    p = P.astype(np.float32)
    jac = dualad.jacfwd(sol)(p)
    assert jac.dtype == np.float32
    close(jac, kkt_jacobian(sol(P).astype(np.float64), FREE), rtol=1e-5, atol=1e-6)


def test_a_degenerate_active_bound_warns():
    # the unconstrained minimizer of (x - p)^2 at p = 0 is the bound 0 itself
    def sol(p):
        return minimize(lambda x: ((x - p) ** 2).sum(), np.full(2, 0.5), method="L-BFGS-B",
                        bounds=[(0.0, 1.0), (-1.0, 1.0)]).x
    with pytest.warns(RuntimeWarning, match=r"x\[0\] sit\(s\) at a bound with a near-zero gradient"):
        jac = dualad.jacfwd(sol)(np.array([0.0, 0.5]))
    close(jac, np.diag([0.0, 1.0]))  # held at the bound: the derivative from above is 0


def test_a_point_that_is_no_kkt_point_raises():
    # BFGS ignores the bounds (SciPy warns), so its minimizer lies outside them
    def sol(p):
        return minimize(lambda x: ((x - p) ** 2).sum(), np.full(2, 0.5), method="BFGS",
                        bounds=[(0.0, 1.0), (0.0, 1.0)]).x
    with pytest.warns(RuntimeWarning, match="cannot handle"):
        with pytest.raises(NotConvergedError, match=r"x\[1\] = 2 lies outside its bounds"):
            dualad.jacfwd(sol)(np.array([0.5, 2.0]))
    box = Box(np.zeros(2), np.ones(2), "test")
    problem, caveat = box.check(np.array([0.0, 0.5]), np.array([-3.0, 0.0]))
    assert "x[0] sits at its lower bound with the gradient -3 pointing into the box" in problem
    assert caveat is None


def test_bad_bounds_are_named():
    fun = lambda x: (x ** 2).sum()  # noqa: E731
    with pytest.raises(ValueError, match=r"bounds must be a scipy.optimize.Bounds or 2 \(min, max\)"):
        minimize(fun, np.zeros(2), bounds=[(0, 1)])
    with pytest.raises(ValueError, match="lb <= ub"):
        minimize(fun, np.zeros(2), bounds=[(0, 1), (2, 1)])
    with pytest.raises(ValueError, match="the lower bound must be a number or hold one entry"):
        minimize(fun, np.zeros(2), bounds=Bounds(np.zeros(3), 1.0))
    with pytest.raises(TypeError, match="bounds must be constants"):
        reverse.grad(lambda b: minimize(fun, np.zeros(2), method="L-BFGS-B",
                                        bounds=[(b, 1.0), (0.0, 1.0)]).x.sum())(0.1)

"""dualad.scipy.optimize.least_squares: the derivative of SciPy's fit (the stationarity of the
cost, with its full Hessian: J^T J and the residuals' second-order terms) against central
differences of SciPy's solve, in forward and reverse mode, H v, vmap and jit; robust losses,
kwargs, bounds and the errors (issue 37)."""

from __future__ import annotations

import numpy as np
import pytest
from _support.solutions import close, fd

import dualad
import mixed
import reverse
from dualad.scipy.optimize import NotConvergedError, least_squares

T = np.linspace(0.0, 3.0, 12)
# data off the model (the sin term), so that the residuals at the fit are not zero and the
# Hessian's second-order terms matter
Y = 2.0 * np.exp(-0.7 * T) + 0.3 + 0.05 * np.sin(5 * T)
TIGHT = {"ftol": 1e-15, "xtol": 1e-15, "gtol": 1e-15}
# SciPy stops with the cost's gradient about 1e-11 from zero: differences of its solve over
# steps of 1e-2 (five points, error O(h^4)) resolve the derivative to a few 1e-7
H, RTOL, ATOL = 1e-2, 1e-5, 1e-6


def residuals(w, y):
    return w[0] * np.exp(-w[1] * T) + w[2] - y


def jacobian(w, y):
    """The residuals' Jacobian, for SciPy's solve: its default finite differences leave the
    solution about 1e-8 off, too coarse for central differences of the solve."""
    e = np.exp(-w[1] * T)
    return np.stack([e, -w[0] * T * e, np.ones_like(T)], axis=1)


def fit(method, x0=(1.5, 0.5, 0.0), **kw):
    return lambda y: least_squares(residuals, np.array(x0), jac=jacobian, args=(y,),
                                   method=method, **TIGHT, **kw).x


@pytest.mark.parametrize("method", ["trf", "dogbox", "lm"])
def test_jacobian_equals_finite_differences(method):
    sol = fit(method)
    want = fd(sol, Y, H)
    close(dualad.jacfwd(sol)(Y), want, rtol=RTOL, atol=ATOL)
    close(reverse.jacrev(sol)(Y), want, rtol=RTOL, atol=ATOL)


def test_the_second_order_terms_are_in_the_derivative():
    """Gauss-Newton alone, (J^T J)^-1 J^T, is off by the residuals' curvature."""
    sol = fit("trf")
    w = sol(Y)
    jac = jacobian(w, Y)
    gauss_newton = np.linalg.solve(jac.T @ jac, jac.T)
    r, e = residuals(w, Y), np.exp(-w[1] * T)
    hess = jac.T @ jac   # + sum r_i d2r_i: d2r/dw0dw1 = -t e, d2r/dw1^2 = w0 t^2 e
    hess[0, 1] = hess[1, 0] = hess[0, 1] - (r * T * e).sum()
    hess[1, 1] += (r * w[0] * T ** 2 * e).sum()
    got = dualad.jacfwd(sol)(Y)
    close(got, np.linalg.solve(hess, jac.T), rtol=1e-10, atol=1e-12)
    close(got, fd(sol, Y, H), rtol=RTOL, atol=ATOL)
    assert np.abs(got - gauss_newton).max() > 1e-3


@pytest.mark.parametrize("loss", ["soft_l1", "huber", "cauchy", "arctan"])
def test_robust_losses_and_f_scale(loss):
    """At f_scale 0.1 the losses bend within the residuals' range (huber's kink among them):
    differences over steps of 1e-2 cross it, steps of 1e-3 resolve the derivative to 1e-5."""
    sol = fit("trf", loss=loss, f_scale=0.1)
    close(reverse.jacrev(sol)(Y), fd(sol, Y, 1e-3), rtol=1e-5, atol=1e-5)


def test_kwargs_and_closures_are_differentiated():
    def sol(scale, shift):
        return least_squares(lambda w, y, c: scale * (w[0] * np.exp(-w[1] * T) + w[2]) - y - c,
                             np.array([1.5, 0.5, 0.0]), args=(Y,), kwargs={"c": shift},
                             jac=lambda w, y, c: scale * jacobian(w, y), **TIGHT).x
    g = reverse.grad(lambda s, c: sol(s, c).sum(), argnums=(0, 1))(1.2, 0.1)
    want = fd(lambda q: sol(q[0], q[1]).sum(), np.array([1.2, 0.1]), H)
    close(np.array(g), want, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("method", ["trf", "dogbox"])
def test_bounds_hold_active_variables(method):
    bounds = ([0.0, 0.0, 0.5], [1.8, 5.0, 5.0])   # w0 at its upper bound, w2 at its lower
    sol = fit(method, x0=(1.5, 0.5, 1.0), bounds=bounds)
    w = sol(Y)
    assert w[0] == pytest.approx(1.8) and w[2] == pytest.approx(0.5)
    jf, jr = dualad.jacfwd(sol)(Y), reverse.jacrev(sol)(Y)
    assert not jf[[0, 2]].any() and not jr[[0, 2]].any()
    close(jf, fd(sol, Y, H), rtol=RTOL, atol=ATOL)
    close(jr, jf, rtol=1e-12, atol=1e-14)


def test_hvp_and_jit_through_the_fit():
    sol = fit("trf")

    def loss(y):
        return (sol(y) ** 2).sum() + sol(y)[1] * y[0]
    v = np.cos(np.arange(Y.size))
    # the gradient at each point is the implicit one, exact at SciPy's solution; the step is
    # the file's H, over which the solve's own error (a step of 1e-3 left 3e-6 of it, with
    # another CPU's BLAS kernels) stays below the tolerance
    want = fd(lambda s: reverse.grad(loss)(Y + s[0] * v), np.zeros(1), H)[:, 0]
    close(mixed.hvp(loss, Y, v), want, rtol=RTOL, atol=ATOL)

    jitted = dualad.jit(reverse.grad(lambda y: sol(y).sum()))
    for y in (Y, 1.1 * Y):
        close(jitted(y), fd(lambda s: sol(s).sum(), y, H), rtol=RTOL, atol=ATOL)


def test_vmap_over_data_sets():
    ys = np.stack([Y, 1.2 * Y, Y + 0.1])
    sol = fit("lm")
    close(dualad.vmap(dualad.jacfwd(sol))(ys), np.stack([fd(sol, y, H) for y in ys]),
          rtol=RTOL, atol=ATOL)


def test_errors():
    with pytest.raises(ValueError, match="loss must be"):
        least_squares(residuals, np.ones(3), args=(Y,), loss="l1")
    with pytest.raises(ValueError, match=r"bounds must be a scipy.optimize.Bounds or a pair"):
        least_squares(residuals, np.ones(3), args=(Y,), bounds=(0.0, 1.0, 2.0))
    short = lambda y: least_squares(residuals, np.array([1.5, 0.5, 0.0]), args=(y,),  # noqa: E731
                                    max_nfev=2).x
    with pytest.raises(NotConvergedError, match="did not converge"):
        dualad.jacfwd(short)(Y)

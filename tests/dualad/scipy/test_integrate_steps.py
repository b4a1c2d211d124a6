"""solve_ivp's derivatives on the steps of RK23's, RK45's and DOP853's solve (dualad._ode.steps): the
derivative of SciPy's numbers with its step sizes held fixed, against dualad's forward mode
through the same Runge-Kutta recursion written out, central differences of SciPy's solve,
and the ODE-integrated sensitivities; backwards in time, at the solver's own times, for a
``fun`` that decides on its values, and beyond the size where the steps are used (issue 37)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.integrate as si

import dualad
import reverse
from dualad.scipy.integrate import solve_ivp

TOL = {"rtol": 1e-8, "atol": 1e-10}


def lotka_volterra(t, y, p):
    return np.stack([p[0] * y[0] - p[1] * y[0] * y[1], -p[2] * y[1] + p[3] * y[0] * y[1]])


P = np.array([1.5, 1.0, 3.0, 1.0])
Y0 = np.array([1.0, 1.0])


def close(got, want, rtol):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.abs(want).max())


def dop853_dense(t, h, y, y_new, K, fun, p, x):
    """DOP853's dense output as SciPy computes it: three more stages after ``K`` (which ends
    with ``f(t + h, y_new)``), then ``F`` and its polynomial in ``x`` and ``1 - x``."""
    scheme = si.DOP853
    K = list(K)
    for a, c in zip(scheme.A_EXTRA, scheme.C_EXTRA):
        K.append(fun(t + c * h, y + h * sum(a[j] * K[j] for j in range(len(K))), p))
    dy = y_new - y
    F = [dy, h * K[0] - dy, 2 * dy - h * (K[scheme.n_stages] + K[0])]
    F += [h * sum(d[j] * K[j] for j in range(len(K))) for d in scheme.D]
    out = 0
    for i, f in enumerate(reversed(F)):
        out = (out + f) * (x if i % 2 == 0 else 1 - x)
    return y + out


def runge_kutta(method, times, fun, y0, p, t_eval):
    """SciPy's ``method`` written out: its tableau stepped over the steps ending at ``times``,
    ``y`` at ``t_eval`` by its dense output."""
    scheme = getattr(si, method)
    A, B, C, P_, S = scheme.A, scheme.B, scheme.C, scheme.P, scheme.n_stages
    y, out, wanted = y0, [], list(t_eval)
    for t, t_new in zip(times[:-1], times[1:]):
        h = t_new - t
        K = []
        for s in range(S):
            stage = y + h * sum(A[s, j] * K[j] for j in range(s)) if s else y
            K.append(fun(t + C[s] * h, stage, p))
        y_new = y + h * sum(B[s] * K[s] for s in range(S))
        K.append(fun(t_new, y_new, p))
        while wanted and (wanted[0] - t_new) * np.sign(h) <= 0:
            x = (wanted.pop(0) - t) / h
            if method == "DOP853":
                out.append(dop853_dense(t, h, y, y_new, K, fun, p, x))
                continue
            w = P_ @ x ** np.arange(1, P_.shape[1] + 1)
            out.append(y + h * sum(w[s] * K[s] for s in range(S + 1)))
        y = y_new
    return np.stack(out, axis=1)


@pytest.mark.parametrize("method", ["RK23", "RK45", "DOP853"])
@pytest.mark.parametrize("t_span, t_eval", [((0.0, 5.0), [0.0, 0.7, 2.0, 5.0]),
                                            ((5.0, 0.5), [4.5, 3.0, 0.5])])
def test_the_derivative_is_that_of_scipy_s_steps(method, t_span, t_eval):
    """In both directions of time: y is SciPy's, and its Jacobian in every mode equals forward
    mode through the method's recursion on SciPy's steps to 1e-11."""
    steps = si.solve_ivp(lambda t, y: lotka_volterra(t, y, P), t_span, Y0, method=method, **TOL).t

    def recursion(p):
        return runge_kutta(method, steps, lotka_volterra, Y0, p, t_eval)

    def solution(p, **kw):
        return solve_ivp(lotka_volterra, t_span, Y0, method=method, t_eval=t_eval, args=(p,),
                         **TOL, **kw).y
    assert np.array_equal(solution(P), si.solve_ivp(lotka_volterra, t_span, Y0, method=method,
                                                    t_eval=t_eval, args=(P,), **TOL).y)
    close(recursion(P), solution(P), rtol=1e-12)
    want = dualad.jacfwd(recursion)(P)
    close(dualad.jacfwd(solution)(P), want, rtol=1e-11)
    weights = np.random.default_rng(1).standard_normal(want.shape[:2])
    for sensitivity in ("forward", "adjoint"):
        got = reverse.grad(lambda p, s=sensitivity: (solution(p, sensitivity=s) * weights).sum())(P)
        close(got, np.tensordot(weights, want, axes=2), rtol=1e-11)


@pytest.mark.parametrize("method", ["RK23", "RK45", "DOP853"])
def test_at_the_solver_s_own_times_and_y0(method):
    """t_eval=None: y at SciPy's steps (and t0), with respect to y0 and the parameters, equals
    the recursion's at those times."""
    def solution(y0, p, **kw):
        return solve_ivp(lambda t, y: lotka_volterra(t, y, p), (0.0, 3.0), y0, method=method,
                         **TOL, **kw).y
    times = si.solve_ivp(lambda t, y: lotka_volterra(t, y, P), (0.0, 3.0), Y0, method=method,
                         **TOL).t
    want = dualad.jacfwd(lambda y0, p: runge_kutta(method, times, lotka_volterra, y0, p, times),
                         argnums=(0, 1))(Y0, P)
    got = dualad.jacfwd(solution, argnums=(0, 1))(Y0, P)
    for g, w in zip(got, want):
        close(g, w, rtol=1e-11)
    weights = np.random.default_rng(2).standard_normal(want[0].shape[:2])
    grads = reverse.grad(lambda y0, p: (solution(y0, p, sensitivity="adjoint") * weights).sum(),
                         argnums=(0, 1))(Y0, P)
    for g, w in zip(grads, want):
        close(g, np.tensordot(weights, w, axes=2), rtol=1e-11)


def test_equals_central_differences_and_the_integrated_sensitivities(monkeypatch):
    """The derivative on the steps equals central differences of SciPy's solve and, past the
    size where the steps are used (monkeypatched down), the sensitivities integrated as an
    ODE, to the tolerances' order."""
    from dualad._ode import steps

    def y_at(p, solve=solve_ivp, **kw):
        return solve(lotka_volterra, (0.0, 5.0), Y0, t_eval=[1.0, 5.0], args=(p,),
                     rtol=1e-11, atol=1e-13, **kw).y
    h = 1e-5
    central = np.stack([(y_at(P + h * e, si.solve_ivp) - y_at(P - h * e, si.solve_ivp)) / (2 * h)
                        for e in np.eye(4)], axis=-1)
    on_steps = dualad.jacfwd(y_at)(P)
    close(on_steps, central, rtol=1e-6)
    grad_on_steps = reverse.grad(lambda p: y_at(p, sensitivity="adjoint").sum())(P)
    monkeypatch.setattr(steps, "_MOST_NUMBERS", 0)
    close(dualad.jacfwd(y_at)(P), on_steps, rtol=1e-8)
    close(reverse.grad(lambda p: y_at(p, sensitivity="adjoint").sum())(P), grad_on_steps, rtol=1e-8)


def test_a_fun_that_decides_on_its_values_gets_one_product_per_stage():
    """``if t < 1`` cannot be mapped over the stages at once: each stage's product is then taken
    alone, with the same derivative as the same ``fun`` written with ``where``."""
    def branching(t, y, k):
        if t < 1.0:
            return -k[0] * y
        return -k[1] * y * y

    def mapped(t, y, k):
        return np.where(t < 1.0, -k[0] * y, -k[1] * y * y)
    k = np.array([0.8, 0.5])

    def solution(fun, k, **kw):
        return solve_ivp(fun, (0.0, 2.0), np.array([1.0, 2.0]), t_eval=[0.5, 2.0], args=(k,),
                         **TOL, **kw).y
    close(dualad.jacfwd(lambda k: solution(branching, k))(k),
          dualad.jacfwd(lambda k: solution(mapped, k))(k), rtol=1e-13)
    close(reverse.grad(lambda k: solution(branching, k, sensitivity="adjoint").sum())(k),
          reverse.grad(lambda k: solution(mapped, k, sensitivity="adjoint").sum())(k), rtol=1e-13)


@pytest.mark.parametrize("method", ["RK45", "DOP853"])
def test_vmap_beyond_the_solves_kept_solves_the_steps_again(method):
    """Under vmap each element is solved in turn and only the last few keep their steps: an
    element's derivative that finds none solves its steps again (DOP853's at t_eval, for the
    extra stages of its dense output), with the same numbers."""
    ps = P * np.linspace(0.9, 1.1, 6)[:, None]

    def loss(p):
        return (solve_ivp(lotka_volterra, (0.0, 2.0), Y0, method=method, t_eval=[1.0, 2.0],
                          args=(p,), sensitivity="adjoint", **TOL).y ** 2).sum()
    close(dualad.vmap(reverse.grad(loss))(ps), np.stack([reverse.grad(loss)(p) for p in ps]),
          rtol=1e-13)


def test_an_empty_interval_has_the_identity_for_derivative():
    """t_span of zero length: y stays y0, and so do its tangents."""
    got = dualad.jacfwd(lambda y0: solve_ivp(lambda t, y: -y, (1.0, 1.0), y0).y)(Y0)
    close(got, np.broadcast_to(np.eye(2)[:, None, :], (2, 2, 2)), rtol=1e-15)
    g = reverse.grad(lambda y0: solve_ivp(lambda t, y: -y, (1.0, 1.0), y0,
                                          sensitivity="adjoint").y.sum())(Y0)
    close(g, 2 * np.ones(2), rtol=1e-15)


# RK23's third order takes 20 times RK45's steps at TOL: it gets looser tolerances here
SECOND_TOL = {"RK45": TOL, "RK23": {"rtol": 1e-6, "atol": 1e-9}, "DOP853": TOL}


def _loss(p, method="RK45", t_eval=(1.0, 3.0), **kw):
    return (solve_ivp(lotka_volterra, (0.0, 3.0), Y0, method=method, t_eval=t_eval, args=(p,),
                      **SECOND_TOL[method], **kw).y ** 2).sum()


@pytest.mark.parametrize("method", ["RK23", "RK45", "DOP853"])
def test_second_derivatives_in_every_mode(method):
    """H and H v by forward over forward, forward over reverse (both sensitivities), reverse
    over forward and reverse over reverse equal forward over forward through the method's
    recursion written out on SciPy's steps (1e-11), and central differences of the
    gradient (to a hundred times rtol)."""
    import mixed
    steps = si.solve_ivp(lambda t, y: lotka_volterra(t, y, P), (0.0, 3.0), Y0, method=method,
                         **SECOND_TOL[method]).t
    want = dualad.hessian(lambda p: (runge_kutta(method, steps, lotka_volterra, Y0, p, [1.0, 3.0])
                                     ** 2).sum())(P)
    v = np.array([0.3, -1.0, 0.5, 2.0])
    close(dualad.hessian(lambda p: _loss(p, method))(P), want, rtol=1e-11)
    close(reverse.jacrev(dualad.jacfwd(lambda p: _loss(p, method)))(P), want, rtol=1e-11)
    for sensitivity in ("adjoint", "forward"):
        for mode in ("forward-over-reverse", "reverse-over-reverse"):
            got = mixed.hvp(lambda p, s=sensitivity: _loss(p, method, sensitivity=s), P, v, mode=mode)
            close(got, want @ v, rtol=1e-11)
    h = 1e-5
    grad = reverse.grad(lambda p: _loss(p, method))
    central = np.stack([(grad(P + h * e) - grad(P - h * e)) / (2 * h) for e in np.eye(4)], axis=-1)
    close(want, central, rtol=100 * SECOND_TOL[method]["rtol"])  # the steps move with p


@pytest.mark.parametrize("method", ["RK45", "DOP853"])
@pytest.mark.parametrize("t_span, t_eval", [((0.0, 3.0), None), ((3.0, 0.5), None),
                                            ((3.0, 0.5), [2.5, 1.0, 0.5])])
def test_second_derivatives_of_y0_at_the_solver_s_own_times_and_backwards(method, t_span, t_eval):
    """t_eval=None, and backwards in time, with y0 among the arguments: the Hessian in y0 and
    p together."""
    steps = si.solve_ivp(lambda t, y: lotka_volterra(t, y, P), t_span, Y0, method=method,
                         **TOL).t

    def both(x, solve):
        return (solve(x[:2], x[2:]) ** 2).sum()
    x = np.concatenate([Y0, P])
    at = steps if t_eval is None else t_eval
    want = dualad.hessian(lambda x: both(x, lambda y0, p: runge_kutta(method, steps, lotka_volterra,
                                                                      y0, p, at)))(x)
    got = dualad.hessian(lambda x: both(x, lambda y0, p: solve_ivp(
        lotka_volterra, t_span, y0, method=method, t_eval=t_eval, args=(p,), **TOL).y))(x)
    close(got, want, rtol=1e-11)

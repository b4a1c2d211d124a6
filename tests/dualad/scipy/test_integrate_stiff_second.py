"""solve_ivp's second derivatives with BDF, Radau and LSODA: those of the forward sensitivities'
ODE, solved again by the same method (dualad._ode.entries), in every mode, against central
differences of the gradient, RK45's Hessian on its steps and a closed form; on a non-stiff
problem and a stiff one, at the solver's own times, backwards in time, with events, under
vmap; and what an H v costs in solves (issue 37)."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import scipy.integrate as si

import dualad
import mixed
import reverse
from dualad.scipy.integrate import solve_ivp

TOL = {"rtol": 1e-9, "atol": 1e-11}
METHODS = ["BDF", "Radau", "LSODA"]


def lotka_volterra(t, y, p):
    return np.stack([p[0] * y[0] - p[1] * y[0] * y[1], -p[2] * y[1] + p[3] * y[0] * y[1]])


def van_der_pol(t, y, mu):
    return np.stack([y[1], mu[0] * (1 - y[0] ** 2) * y[1] - y[0]])


def lotka_volterra_loss(p, method, tol=TOL, **kw):
    """Non-stiff: the four rates."""
    y = solve_ivp(lotka_volterra, (0.0, 1.5), np.array([1.0, 1.0]), method=method,
                  t_eval=[0.5, 1.5], args=(p,), **tol, **kw).y
    return (y ** 2).sum()


def van_der_pol_loss(x, method, tol=TOL, **kw):
    """Stiff (mu = 100: J_y's eigenvalue near -300 at the start, over t up to 2): mu and y0."""
    y = solve_ivp(van_der_pol, (0.0, 2.0), x[1:], method=method, t_eval=[2.0 / 3.0, 2.0],
                  args=(x[:1],), **tol, **kw).y
    return (y ** 2).sum()


PROBLEMS = {  # name -> (loss, point, a direction)
    "lotka_volterra": (lotka_volterra_loss, np.array([1.5, 1.0, 3.0, 1.0]),
                       np.array([0.3, -1.0, 0.5, 2.0])),
    "van_der_pol": (van_der_pol_loss, np.array([100.0, 2.0, 0.0]), np.array([0.01, -1.0, 0.5])),
}


def close(got, want, rtol):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.abs(want).max())


@functools.cache
def central_hessian(name):
    """Central differences of the gradient (the first derivative by LSODA at rtol 1e-11),
    Richardson-extrapolated from the steps h and h / 2, h = 1e-3 max(1, |x_i|): truncation
    O(h^4); about 1e-9 of the largest entry off on both problems, where plain central
    differences at h are 1e-7 off and at smaller h the solves' errors take over."""
    loss, x, _ = PROBLEMS[name]
    grad = reverse.grad(lambda x: loss(x, "LSODA", {"rtol": 1e-11, "atol": 1e-13}))

    def differences(steps):
        return np.stack([(grad(x + h * e) - grad(x - h * e)) / (2 * h)
                         for h, e in zip(steps, np.eye(x.size))], axis=-1)
    steps = 1e-3 * np.maximum(1.0, np.abs(x))
    return (4 * differences(steps / 2) - differences(steps)) / 3


@functools.cache
def rk45_hessian():
    """Lotka-Volterra's Hessian through RK45's formulas on its steps, at rtol 1e-10 (4e-10 of
    the largest entry off DOP853's at 1e-13)."""
    loss, p, _ = PROBLEMS["lotka_volterra"]
    return dualad.hessian(lambda p: loss(p, "RK45", {"rtol": 1e-10, "atol": 1e-12}))(p)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", PROBLEMS)
def test_second_derivatives_in_every_mode(name, method):
    """Forward over forward (hessian), forward over reverse (jacfwd of grad; hvp with either
    sensitivity), reverse over forward (jacrev of jacfwd) and reverse over reverse (hvp) equal
    central differences of the gradient to a hundred times rtol, and, on Lotka-Volterra,
    RK45's Hessian on its steps at tighter tolerances; the Hessian is symmetric."""
    loss, x, v = PROBLEMS[name]
    want = {"central differences": central_hessian(name)}
    if name == "lotka_volterra":
        want["RK45 on its steps"] = rk45_hessian()
    rtol = 100 * TOL["rtol"]
    hessian = dualad.hessian(lambda x: loss(x, method))(x)
    close(hessian, hessian.T, rtol=10 * TOL["rtol"])
    got = {"hessian": hessian,
           "jacfwd(grad)": dualad.jacfwd(reverse.grad(lambda x: loss(x, method)))(x),
           "jacrev(jacfwd)": reverse.jacrev(dualad.jacfwd(lambda x: loss(x, method)))(x)}
    products = {f"hvp, sensitivity={s}": mixed.hvp(lambda x, s=s: loss(x, method, sensitivity=s),
                                                   x, v) for s in ("forward", "adjoint")}
    products["hvp, reverse over reverse"] = mixed.hvp(
        lambda x: loss(x, method, sensitivity="adjoint"), x, v, mode="reverse-over-reverse")
    for reference in want.values():
        for h in got.values():
            close(h, reference, rtol=rtol)
        for hv in products.values():
            close(hv, reference @ v, rtol=rtol)


@pytest.mark.parametrize("method", METHODS)
def test_a_closed_form(method):
    """y' = -k y, y(0) = 1: y(1) = exp(-k), whose second derivative in k is exp(-k)."""
    def y_at_1(k):
        return solve_ivp(lambda t, y: -k * y, (0.0, 1.0), np.ones(1), method=method,
                         t_eval=[1.0], **TOL).y[0, 0]
    close(dualad.derivative(dualad.derivative(y_at_1))(0.7), np.exp(-0.7), rtol=1e-8)
    close(mixed.hvp(y_at_1, 0.7, 1.0), np.exp(-0.7), rtol=1e-8)


@pytest.mark.parametrize("t_span", [(0.0, 1.5), (1.5, 0.2)])
def test_y0_and_parameters_at_the_solver_s_own_times_and_backwards(t_span):
    """With y0 among the arguments, at the solver's own times and backwards in time: the
    Hessian of the last column (at the end of t_span, where every method has a time) equals
    DOP853's on its steps at tighter tolerances."""
    def last(x, method, tol=TOL):
        return (solve_ivp(lotka_volterra, t_span, x[:2], method=method, args=(x[2:],),
                          **tol).y[:, -1] ** 2).sum()
    x = np.array([1.0, 1.0, 1.5, 1.0, 3.0, 1.0])
    want = dualad.hessian(lambda x: last(x, "DOP853", {"rtol": 1e-11, "atol": 1e-13}))(x)
    close(dualad.hessian(lambda x: last(x, "BDF"))(x), want, rtol=100 * TOL["rtol"])
    close(mixed.hvp(lambda x: last(x, "LSODA"), x, np.ones(6)), want.sum(axis=1),
          rtol=100 * TOL["rtol"])


def test_events():
    """A terminal event's time and state: their Hessian by BDF equals DOP853's on its steps."""
    def event(t, y, p):
        return y[0] - 2.0
    event.terminal = True

    def at_event(p, method, tol=TOL):
        res = solve_ivp(lotka_volterra, (0.0, 5.0), np.array([1.0, 1.0]), method=method,
                        events=event, args=(p,), **tol)
        return res.t_events[0][0] + (res.y_events[0][0] ** 2).sum()
    p = PROBLEMS["lotka_volterra"][1]
    want = dualad.hessian(lambda p: at_event(p, "DOP853", {"rtol": 1e-12, "atol": 1e-14}))(p)
    close(dualad.hessian(lambda p: at_event(p, "BDF"))(p), want, rtol=100 * TOL["rtol"])


def test_vmap_of_a_hessian_is_the_loop():
    loss, p, _ = PROBLEMS["lotka_volterra"]
    hessian = dualad.hessian(lambda p: loss(p, "LSODA"))
    ps = np.stack([p, 1.1 * p])
    close(dualad.vmap(hessian)(ps), np.stack([hessian(q) for q in ps]), rtol=1e-13)


@pytest.mark.parametrize("method", ["RK45", "DOP853"])
def test_vmap_of_a_hessian_through_the_steps_methods_solves_the_sensitivities_per_element(method):
    """Each element of a batch has steps of its own: under vmap, RK45's and DOP853's second
    derivatives come from the sensitivities' ODE solved for each element (not the steps of
    one solve), equal to central differences of the gradient to the solve's tolerance."""
    loss, p, _ = PROBLEMS["lotka_volterra"]
    hessian = dualad.hessian(lambda p: loss(p, method))
    got = dualad.vmap(hessian)(np.stack([p, p]))
    close(got[0], got[1], rtol=1e-15)
    close(got[0], central_hessian("lotka_volterra"), rtol=100 * TOL["rtol"])


@pytest.mark.parametrize("method", ["RK45", "DOP853"])
def test_second_order_sensitivities_takes_the_sensitivities_ode_with_the_rk_methods(method, monkeypatch):
    """second_order="sensitivities": RK45's and DOP853's second derivatives through the
    sensitivities' ODE, never the steps' formulas, equal to central differences of the
    gradient and to the Hessian on the steps within the tolerances."""
    from dualad._ode.problem import Problem

    loss, p, v = PROBLEMS["lotka_volterra"]
    want, on_steps = central_hessian("lotka_volterra"), rk45_hessian()

    def fast(p):
        return loss(p, method, second_order="sensitivities")

    def refused(*args, **kwargs):
        raise AssertionError("the steps' formulas were taken")
    monkeypatch.setattr(Problem, "through_steps", refused)
    close(dualad.hessian(fast)(p), want, rtol=100 * TOL["rtol"])
    close(mixed.hvp(fast, p, v), want @ v, rtol=100 * TOL["rtol"])
    close(dualad.hessian(fast)(p), on_steps, rtol=100 * TOL["rtol"])


def test_second_order_is_checked():
    loss, p, _ = PROBLEMS["lotka_volterra"]
    with pytest.raises(ValueError, match=r"second_order must be one of \(None, 'steps', "
                                         r"'sensitivities'\), got 'fast'"):
        loss(p, "RK45", second_order="fast")
    with pytest.raises(ValueError, match="second_order='steps' needs method='RK45', 'RK23' or "
                                         "'DOP853'.*got method='BDF'"):
        dualad.hessian(lambda p: loss(p, "BDF", second_order="steps"))(p)


@pytest.mark.parametrize("method", ["RK45", "BDF"])
def test_vmap_of_an_hvp_is_the_loop(method):
    """Forward over reverse under vmap: the gradient's derivative takes the directions of
    one element's numbers (not the batch's), each element solved in turn."""
    loss, p, v = PROBLEMS["lotka_volterra"]
    ps = np.stack([p, 1.01 * p])
    got = dualad.vmap(lambda q: mixed.hvp(lambda q: loss(q, method), q, v))(ps)
    want = np.stack([mixed.hvp(lambda q: loss(q, method, second_order="sensitivities"), q, v)
                     for q in ps])
    close(got, want, rtol=1e-12)


@pytest.mark.parametrize("method", ["RK45", "BDF"])
def test_vmap_over_y0_of_second_derivatives_is_the_loop(method):
    """y0 batched: the sensitivities' system takes an element's n and k (not the batch's),
    and a direction not given (y0's, when p moves) is zeros of an element's shape."""
    p, v = PROBLEMS["lotka_volterra"][1:]
    y0s = np.array([[1.0, 1.0], [1.2, 0.8], [0.9, 1.1]])

    def loss(p, y0):
        return (solve_ivp(lotka_volterra, (0.0, 1.5), y0, method=method, t_eval=[0.5, 1.5],
                          args=(p,), second_order="sensitivities", **TOL).y ** 2).sum()
    for one in (lambda y0: mixed.hvp(lambda q: loss(q, y0), p, v),
                lambda y0: dualad.hessian(lambda q: loss(q, y0))(p),
                lambda y0: mixed.hvp(lambda y: loss(p, y), y0, np.array([1.0, -0.5]))):
        close(dualad.vmap(one)(y0s), np.stack([one(y0) for y0 in y0s]), rtol=1e-13)


def test_vmap_chooses_the_sensitivity_by_an_element_s_size():
    """sensitivity=None chooses forward sensitivities up to 20 numbers in y0 and the
    parameters: an element's (6 here), not the batch's (62), so each element's gradient is
    the one it has alone, not the adjoint's (1e-7 off at rtol 1e-8)."""
    loss, p, _ = PROBLEMS["lotka_volterra"]
    ps = np.stack([p * (1 + 0.01 * i) for i in range(15)])
    grad = reverse.grad(lambda q: loss(q, "BDF"))
    close(dualad.vmap(grad)(ps), np.stack([grad(q) for q in ps]), rtol=1e-13)


def test_jit_of_an_hvp_on_the_steps_runs_eagerly_and_through_the_sensitivities_compiles():
    """On the steps a program would replay the traced point's step sizes at other points:
    jit runs it eagerly, with a warning; through the sensitivities' ODE it compiles, and
    its solves are SciPy's at each call."""
    loss, p, v = PROBLEMS["lotka_volterra"]
    for second_order in ("steps", "sensitivities"):
        f = functools.partial(loss, method="RK45", second_order=second_order)
        compiled = dualad.jit(lambda q, v, f=f: mixed.hvp(f, q, v))
        if second_order == "steps":
            with pytest.warns(RuntimeWarning, match="second derivatives on the solve.s steps"):
                compiled(p, v)
        else:
            compiled(p, v)
        for q in (p, 1.01 * p):
            close(compiled(q, v), mixed.hvp(f, q, v), rtol=1e-15)
        assert compiled.stats["traces"] == 1
        assert (compiled.stats["replays"] > 0) == (second_order == "sensitivities")


def test_an_empty_interval_has_no_curvature_but_y0_s():
    """t_span of zero length: y stays y0 (at both times SciPy gives), the loss 2 |y0|^2."""
    def loss(y0):
        return (solve_ivp(lambda t, y: -y * y, (1.0, 1.0), y0, method="BDF").y ** 2).sum()
    y0 = np.array([1.0, 2.0])
    close(dualad.hessian(loss)(y0), 4 * np.eye(2), rtol=1e-15)
    close(mixed.hvp(loss, y0, np.array([1.0, -1.0])), np.array([4.0, -4.0]), rtol=1e-15)


@pytest.mark.parametrize("sensitivity", ["forward", "adjoint"])
def test_an_hvp_costs_five_solves_whatever_the_parameters(sensitivity, monkeypatch):
    """H v by forward over reverse (n = 2 states, p = 4 parameters): SciPy solves y, its
    tangent along v (2n unknowns), the gradient (forward: the sensitivities along all n + p
    directions of y0 and p, n (1 + n + p) unknowns; adjoint: one backward solve of n + p per
    interval between the times of y), then the forward sensitivities' system again and its
    tangent along v (2 n (1 + n + p)): never a solve per parameter."""
    sizes, real = [], si.solve_ivp
    monkeypatch.setattr(si, "solve_ivp",
                        lambda fun, t_span, y0, **kw: sizes.append(len(y0)) or real(
                            fun, t_span, y0, **kw))
    loss, p, v = PROBLEMS["lotka_volterra"]
    mixed.hvp(lambda p: loss(p, "BDF", sensitivity=sensitivity), p, v)
    gradient = [14] if sensitivity == "forward" else [6, 6]
    assert sizes == [2, 4, *gradient, 14, 28]

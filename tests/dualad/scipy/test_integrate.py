"""dualad.scipy.integrate.solve_ivp: the derivative of SciPy's solution in every mode, against
closed forms and central differences of SciPy's own solve at tighter tolerances, and the
errors where it does not hold (issue 37)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.integrate as si

import dualad
import reverse
from dualad.scipy.integrate import NotConvergedError, solve_ivp

TIGHT = {"rtol": 1e-10, "atol": 1e-12}


def central(f, p, h=1e-4):
    """Columns ``(f(p + h e_i) - f(p - h e_i)) / 2h``, with ``h`` relative to ``|p_i|``."""
    p = np.asarray(p, dtype=float)
    cols = []
    for i in range(p.size):
        step = h * max(1.0, abs(p.flat[i]))
        e = np.zeros_like(p)
        e.flat[i] = step
        cols.append((np.asarray(f(p + e)) - np.asarray(f(p - e))) / (2 * step))
    return np.stack(cols, axis=-1)


def close(got, want, rtol=1e-6):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.abs(want).max())


# -- the problems: each a function of parameters p giving y at t_eval, through dualad and SciPy --
def decay(solve, method="RK45", **kw):
    """y' = -p0 y, y(0) = p1: y = p1 exp(-p0 t)."""
    return lambda p: solve(lambda t, y: -p[0] * y, (0.0, 2.0), p[1:2] * np.ones(1), method=method,
                           t_eval=[0.5, 1.0, 2.0], **kw).y


def oscillator(solve, method="RK45", **kw):
    """x'' = -p0 x - p1 x', parameters through args."""
    def f(t, y, q):
        return np.stack([y[1], -q[0] * y[0] - q[1] * y[1]])
    return lambda p: solve(f, (0.0, 3.0), np.array([1.0, 0.0]), method=method, args=(p,),
                           t_eval=np.linspace(0.5, 3.0, 6), **kw).y


def lotka_volterra(solve, method="RK45", **kw):
    """Closed over: prey-predator rates p0..p3."""
    return lambda p: solve(lambda t, y: np.stack([p[0] * y[0] - p[1] * y[0] * y[1],
                                                  -p[2] * y[1] + p[3] * y[0] * y[1]]),
                           (0.0, 5.0), np.array([1.0, 1.0]), method=method,
                           t_eval=np.linspace(1.0, 5.0, 5), **kw).y


def robertson(solve, method="BDF", **kw):
    """The stiff Robertson kinetics, its three rate constants the parameters."""
    def f(t, y):
        a, b, c = p_of[0][0], p_of[0][1], p_of[0][2]
        return np.stack([-a * y[0] + c * y[1] * y[2], a * y[0] - c * y[1] * y[2] - b * y[1] ** 2,
                         b * y[1] ** 2])
    p_of = [None]

    def run(p):
        p_of[0] = p
        return solve(f, (0.0, 10.0), np.array([1.0, 0.0, 0.0]), method=method,
                     t_eval=[0.1, 1.0, 10.0], **kw).y
    return run


def van_der_pol(solve, method="Radau", **kw):
    """mu = p0 (10), and the initial state p1, p2."""
    return lambda p: solve(lambda t, y: np.stack([y[1], p[0] * (1 - y[0] ** 2) * y[1] - y[0]]),
                           (0.0, 5.0), p[1:3], method=method, t_eval=[1.0, 3.0, 5.0], **kw).y


PROBLEMS = {  # name -> (problem, p, its methods, tolerances of the derivative, of the reference)
    "decay": (decay, [0.7, 2.0], ["RK45", "DOP853"], TIGHT, {"rtol": 1e-12, "atol": 1e-14}),
    "oscillator": (oscillator, [4.0, 0.3], ["RK45", "DOP853"], TIGHT, {"rtol": 1e-12, "atol": 1e-14}),
    "lotka_volterra": (lotka_volterra, [1.5, 1.0, 3.0, 1.0], ["RK45", "DOP853"], TIGHT,
                       {"rtol": 1e-12, "atol": 1e-14}),
    "robertson": (robertson, [0.04, 3e7, 1e4], ["BDF", "Radau", "LSODA"],
                  {"rtol": 1e-10, "atol": 1e-14}, {"rtol": 1e-12, "atol": 1e-16}),
    "van_der_pol": (van_der_pol, [10.0, 2.0, 0.0], ["Radau", "BDF", "LSODA"], TIGHT,
                    {"rtol": 1e-12, "atol": 1e-14}),
}
CASES = [(name, method) for name, (_, _, methods, _, _) in PROBLEMS.items() for method in methods]


def _reference(name, method):
    """Central differences of SciPy's own solve (Radau for the stiff ones' reference)."""
    problem, p, _, _, ref = PROBLEMS[name]
    ref_method = method if method in ("RK45", "DOP853") else "Radau"
    return central(problem(si.solve_ivp, ref_method, **ref), np.array(p))


@pytest.mark.parametrize("name, method", CASES)
def test_jacfwd_equals_central_differences(name, method):
    problem, p, _, tol, _ = PROBLEMS[name]
    got = dualad.jacfwd(problem(solve_ivp, method, **tol))(np.array(p))
    close(got, _reference(name, method), rtol=2e-6)


@pytest.mark.parametrize("name, method", CASES)
def test_reverse_adjoint_and_forward_agree_with_central_differences(name, method):
    problem, p, _, tol, _ = PROBLEMS[name]
    reference = _reference(name, method)
    weights = np.random.default_rng(0).standard_normal(reference.shape[:-1])
    want = np.tensordot(weights, reference, axes=weights.ndim)
    got = {}
    for sensitivity in ("adjoint", "forward"):
        f = problem(solve_ivp, method, sensitivity=sensitivity, **tol)
        got[sensitivity] = reverse.grad(lambda q, f=f: (f(q) * weights).sum())(np.array(p))
        close(got[sensitivity], want, rtol=2e-6)
    close(got["adjoint"], got["forward"], rtol=1e-6)


def test_decay_matches_its_closed_form_in_both_modes():
    k, c = 0.7, 2.0
    t = np.array([0.5, 1.0, 2.0])
    want = np.stack([-t * c * np.exp(-k * t), np.exp(-k * t)], axis=-1)[None]
    f = decay(solve_ivp, **TIGHT)
    close(dualad.jacfwd(f)(np.array([k, c])), want, rtol=1e-8)
    close(reverse.jacrev(f)(np.array([k, c])), want, rtol=1e-8)
    _, tangent = dualad.jvp(f, (np.array([k, c]),), (np.array([1.0, 0.0]),))
    close(tangent, want[..., 0], rtol=1e-8)


def test_the_solution_is_scipy_s_own():
    p = np.array([1.5, 1.0, 3.0, 1.0])
    want = lotka_volterra(si.solve_ivp)(p)
    out, _ = dualad.jvp(lotka_volterra(solve_ivp), (p,), (np.ones(4),))
    assert np.array_equal(out, want)
    plain = solve_ivp(lambda t, y: -y, (0.0, 1.0), np.ones(2))   # nothing traced: SciPy's result
    ref = si.solve_ivp(lambda t, y: -y, (0.0, 1.0), np.ones(2))
    assert np.array_equal(plain.t, ref.t) and np.array_equal(plain.y, ref.y)


@pytest.mark.parametrize("method, kept", [("Radau", "dense_output"), ("DOP853", "records"),
                                          ("RK45", "records")])
@pytest.mark.parametrize("sensitivity", ["adjoint", "forward"])
def test_the_derivative_takes_what_the_solve_of_y_kept(method, kept, sensitivity, monkeypatch):
    """One solve of the user's system per gradient, not two: RK45's and DOP853's record their
    steps, on which both derivatives are taken; Radau's keeps its dense output for the adjoint
    (y itself unchanged), whose checkpoints it is."""
    from dualad._ode.problem import Problem
    solves, real = [], Problem.solve
    monkeypatch.setattr(Problem, "solve", lambda self, *a, **kw: solves.append(kw) or real(self, *a, **kw))
    p = np.array([1.5, 1.0, 3.0, 1.0])
    f = lotka_volterra(solve_ivp, method, sensitivity=sensitivity, **TIGHT)
    g = reverse.grad(lambda q: (f(q) ** 2).sum())(p)
    assert len(solves) == 1
    if sensitivity == "adjoint" or kept == "records":
        assert solves[0].get(kept) not in (None, False)
    other = "forward" if sensitivity == "adjoint" else "adjoint"
    close(g, reverse.grad(lambda q: (lotka_volterra(solve_ivp, method, sensitivity=other, **TIGHT)(q)
                                     ** 2).sum())(p), rtol=1e-7)
    y = reverse.value_and_grad(lambda q: f(q)[0, 0])(p)[0]
    assert y == lotka_volterra(si.solve_ivp, method, **TIGHT)(p)[0, 0]


def test_at_the_solver_s_own_steps():
    """t_eval=None: y at SciPy's steps, differentiated as at those times fixed."""
    p = np.array([1.5, 1.0, 3.0, 1.0])

    def steps(q):
        return solve_ivp(lambda t, y: np.stack([q[0] * y[0] - q[1] * y[0] * y[1],
                                                -q[2] * y[1] + q[3] * y[0] * y[1]]),
                         (0.0, 5.0), np.array([1.0, 1.0]), **TIGHT)
    res = steps(p)
    ref = si.solve_ivp(lambda t, y: np.stack([p[0] * y[0] - p[1] * y[0] * y[1],
                                              -p[2] * y[1] + p[3] * y[0] * y[1]]),
                       (0.0, 5.0), np.array([1.0, 1.0]), **TIGHT)
    assert np.array_equal(res.t, ref.t) and np.array_equal(res.y, ref.y)
    got = dualad.jacfwd(lambda q: steps(q).y)(p)
    want = dualad.jacfwd(lambda q: solve_ivp(
        lambda t, y: np.stack([q[0] * y[0] - q[1] * y[0] * y[1], -q[2] * y[1] + q[3] * y[0] * y[1]]),
        (0.0, 5.0), np.array([1.0, 1.0]), t_eval=ref.t, **TIGHT).y)(p)
    close(got, want, rtol=1e-7)
    g = reverse.grad(lambda q: steps(q).y.sum())(p)
    close(g, want.sum(axis=(0, 1)), rtol=1e-7)


def test_vmap_over_parameters_is_the_loop():
    f = oscillator(solve_ivp, **TIGHT)
    ps = np.array([[4.0, 0.3], [2.0, 0.1], [1.0, 0.5]])
    close(dualad.vmap(f)(ps), np.stack([f(p) for p in ps]), rtol=1e-14)
    grads = dualad.vmap(reverse.grad(lambda p: f(p)[0].sum()))(ps)
    close(grads, np.stack([reverse.grad(lambda p: f(p)[0].sum())(p) for p in ps]), rtol=1e-12)
    jacs = dualad.vmap(dualad.jacfwd(f))(ps)
    close(jacs, np.stack([dualad.jacfwd(f)(p) for p in ps]), rtol=1e-12)


def test_jit_replays_the_solve_and_its_derivatives():
    f = lotka_volterra(solve_ivp, **TIGHT)
    loss = lambda p: (f(p) ** 2).sum()   # noqa: E731
    grad = dualad.jit(reverse.grad(loss))
    jac = dualad.jit(dualad.jacfwd(f))
    value = dualad.jit(loss)
    for p in (np.array([1.5, 1.0, 3.0, 1.0]), np.array([1.4, 1.1, 2.9, 1.05])):
        close(value(p), loss(p), rtol=1e-14)
        close(grad(p), reverse.grad(loss)(p), rtol=1e-12)
        close(jac(p), dualad.jacfwd(f)(p), rtol=1e-12)
    assert grad.stats["traces"] == 1 and grad.stats["replays"] + grad.stats["eager"] == 1


def test_jit_runs_the_solver_s_own_times_eagerly():
    """t_eval=None: the number of y's times changes with the parameters, which a program's
    shapes cannot: jit runs the function eagerly (warning why), each call right."""
    def loss(p):
        res = solve_ivp(lambda t, y: np.stack([p[0] * y[0] - p[1] * y[0] * y[1],
                                               -p[2] * y[1] + p[3] * y[0] * y[1]]),
                        (0.0, 5.0), np.array([1.0, 1.0]))
        return (res.y ** 2).sum() + res.t.sum()
    p, q = np.array([1.5, 1.0, 3.0, 1.0]), np.array([1.2, 0.7, 2.0, 1.3])
    for f in (loss, reverse.grad(loss)):
        compiled = dualad.jit(f)
        with pytest.warns(RuntimeWarning, match="runs eagerly.*t_eval=None"):
            close(compiled(p), f(p), rtol=1e-14)
        close(compiled(q), f(q), rtol=1e-14)


def test_y0_derivative_and_float32():
    y0 = np.array([1.0, 0.5], dtype=np.float32)
    f = lambda y0: solve_ivp(lambda t, y: -y * y, (0.0, 1.0), y0, t_eval=[1.0], **TIGHT).y  # noqa: E731
    g = reverse.grad(lambda y0: f(y0).sum())(y0)
    assert g.dtype == np.float32
    close(g, 1.0 / (1.0 + y0.astype(float)) ** 2, rtol=1e-6)   # y = y0 / (1 + y0 t)
    close(dualad.jacfwd(f)(y0.astype(float))[:, 0], np.diag(1.0 / (1.0 + y0) ** 2), rtol=1e-8)


@pytest.mark.parametrize("sensitivity", ["forward", "adjoint"])
def test_float32_in_float32_out_in_every_mode(sensitivity):
    """float32 y0 and parameter: y, its tangents and the gradients are float32 (SciPy solves in
    float64), against the closed form y = y0 exp(-k t)."""
    t = np.array([0.5, 1.0])
    y0, k = np.array([1.0, 0.5], dtype=np.float32), np.float32(0.7)

    def f(y0, k):
        return solve_ivp(lambda t, y: -k * y, (0.0, 1.0), y0, t_eval=t, **TIGHT).y
    decay = np.exp(-0.7 * t)
    y, ty = dualad.jvp(f, (y0, k), (np.ones(2, np.float32), np.float32(1.0)))
    assert y.dtype == ty.dtype == np.float32
    close(y, y0.astype(float)[:, None] * decay, rtol=1e-6)
    close(ty, (1.0 - t * y0.astype(float)[:, None]) * decay, rtol=1e-6)
    jac = dualad.jacfwd(f, argnums=1)(y0, k)
    assert jac.dtype == np.float32
    close(jac, -t * y0.astype(float)[:, None] * decay, rtol=1e-6)
    w = np.array([[1.0, -2.0], [0.5, 3.0]])
    gy0, gk = reverse.grad(lambda y0, k: (solve_ivp(lambda t, y: -k * y, (0.0, 1.0), y0, t_eval=t,
                                                    sensitivity=sensitivity, **TIGHT).y * w).sum(),
                           argnums=(0, 1))(y0, k)
    assert gy0.dtype == gk.dtype == np.float32
    close(gy0, w @ decay, rtol=1e-6)
    close(gk, -(w * y0.astype(float)[:, None] * t * decay).sum(), rtol=1e-6)


def test_a_stiff_solve_s_sensitivities_take_about_y_s_steps(monkeypatch):
    """BDF's Newton matrix for ``(y, s)`` is the Jacobian of the augmented system, coupling ``s``
    to ``y``: Robertson's sensitivities along one direction take about as many evaluations as
    ``y`` alone (1.2 times; with ``J_y``'s blocks alone, 6 times), and equal central
    differences."""
    nfev = []
    real = si.solve_ivp
    monkeypatch.setattr(si, "solve_ivp", lambda *a, **kw: nfev.append((r := real(*a, **kw)).nfev) or r)
    problem, p, _, tol, _ = PROBLEMS["robertson"]
    v = np.ones(3)
    _, tangent = dualad.jvp(problem(solve_ivp, "BDF", **tol), (np.array(p),), (v,))
    primal, sensitivities = nfev
    assert sensitivities <= 3 * primal, nfev
    monkeypatch.setattr(si, "solve_ivp", real)
    close(tangent, _reference("robertson", "BDF") @ v, rtol=2e-6)


@pytest.mark.parametrize("sensitivity", ["adjoint", "forward"])
def test_a_stiff_solve_of_many_unknowns_gets_a_sparse_newton_matrix(sensitivity, monkeypatch):
    """Past 400 unknowns (20 states and 400 parameters: the adjoint's 420, the forward
    sensitivities' 8,420) BDF's Newton matrix is sparse, with its coupling blocks: the
    gradient along a direction equals central differences of SciPy's solve."""
    import scipy.sparse
    n, rng = 20, np.random.default_rng(0)
    rates, u = np.logspace(0, 3, n), rng.standard_normal(n)
    w0, v = rng.standard_normal((n, n)) / n, rng.standard_normal((n, n))

    def loss(solve, w, **kw):
        return (solve(lambda t, y: -rates * y + np.tanh(w @ y), (0.0, 1.0), np.ones(n),
                      method="BDF", t_eval=[0.5, 1.0], **TIGHT, **kw).y[:, -1] * u).sum()
    want = (loss(si.solve_ivp, w0 + 1e-4 * v) - loss(si.solve_ivp, w0 - 1e-4 * v)) / 2e-4
    made, bmat = [], scipy.sparse.bmat
    monkeypatch.setattr(scipy.sparse, "bmat", lambda *a, **kw: made.append(1) or bmat(*a, **kw))
    g = reverse.grad(lambda w: loss(solve_ivp, w, sensitivity=sensitivity))(w0)
    assert made
    close((g * v).sum(), want, rtol=1e-6)


def test_dense_output_is_differentiable():
    def sol(k):
        return solve_ivp(lambda t, y: -k * y, (0.0, 2.0), np.ones(1), dense_output=True, **TIGHT).sol
    close(dualad.derivative(lambda k: sol(k)(1.5)[0])(0.7), -1.5 * np.exp(-0.7 * 1.5), rtol=1e-7)
    close(reverse.grad(lambda k: sol(k)(np.array([0.5, 1.0])).sum())(0.7),
          -0.5 * np.exp(-0.35) - np.exp(-0.7), rtol=1e-7)


# -- errors -----------------------------------------------------------------------------------
def _blow_up(k):   # y' = k y^2 from 1: infinite at t = 1 / k < 2
    return solve_ivp(lambda t, y: k * y ** 2, (0.0, 2.0), np.ones(1), t_eval=[1.5]).y


def test_a_failed_solve_has_no_derivative():
    seen = []

    def loss(k):
        res = solve_ivp(lambda t, y: k * y ** 2, (0.0, 2.0), np.ones(1))
        seen.append(res.success)
        return res.y[0, -1]
    with pytest.raises(NotConvergedError, match="did not converge.*step size"):
        reverse.grad(loss)(1.0)
    assert seen == [False]   # the forward pass returned SciPy's failed result; the backward raised
    with pytest.raises(NotConvergedError, match="did not converge.*step size"):
        dualad.derivative(lambda k: _blow_up(k).sum())(1.0)
    with pytest.raises(NotConvergedError, match="did not converge.*step size"):
        reverse.grad(lambda k: _blow_up(k).sum())(1.0)


def test_bad_arguments_are_named():
    f = lambda k, **kw: solve_ivp(lambda t, y: -k * y, (0.0, 1.0), np.ones(1), **kw).y  # noqa: E731
    with pytest.raises(ValueError, match="sensitivity must be one of .*got 'backward'"):
        reverse.grad(lambda k: f(k, sensitivity="backward").sum())(1.0)
    with pytest.raises(TypeError, match="t_eval must be plain numbers"):
        dualad.derivative(lambda k: f(1.0, t_eval=k * np.ones(1)).sum())(0.5)
    with pytest.raises(ValueError, match="under vmap needs t_eval"):
        dualad.vmap(lambda k: f(k)[0, -1])(np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match="fun must be callable"):
        solve_ivp(3.0, (0.0, 1.0), np.ones(1))
    with pytest.raises(ValueError, match="y0 must be 1-dimensional"):
        dualad.derivative(lambda y0: solve_ivp(lambda t, y: -y, (0.0, 1.0), y0).y.sum())(1.0)

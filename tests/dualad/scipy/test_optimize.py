"""dualad.scipy.optimize: the derivative of SciPy's solution in every mode, against central
differences (a five-point stencil) of the SciPy solve itself, and the errors where it does
not hold (issue 37)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize
from _support.solutions import RTOL, close, fd

import dualad
import mixed
import reverse
from dualad.scipy._tangent import Factorization
from dualad.scipy.optimize import NotConvergedError, minimize, minimize_scalar, root, root_scalar


# -- the problems -------------------------------------------------------------------------------
def equilibrium(p):
    """A nonlinear market equilibrium: prices x where supply meets demand,
    x**3 / 3 + A x = p * c + p[::-1]**2 (a unique root: the map is monotone)."""
    a = np.array([[3.0, 1.0, 0.0], [0.5, 4.0, 1.0], [0.0, 1.0, 2.5]])
    c = np.array([1.0, 2.0, 0.5])
    res = root(lambda x: x ** 3 / 3 + a @ x - p * c - p[::-1] ** 2, np.zeros(3), tol=1e-12)
    return res.x


def rosenbrock_min(p):
    """The minimizer of a shifted, scaled Rosenbrock function (its parameters p = (a, b))."""
    def f(x, a, b):
        return (a - x[0]) ** 2 + b * (x[1] - x[0] ** 2) ** 2 + 0.1 * (x ** 2).sum()
    return minimize(f, np.array([0.5, 0.5]), args=(p[0], p[1]), method="trust-krylov",
                    jac=lambda x, a, b: reverse.grad(f)(x, a, b),
                    hessp=lambda x, v, a, b: mixed.hvp(lambda y: f(y, a, b), x, v),
                    options={"gtol": 1e-9}).x


T = np.linspace(0.0, 2.0, 7)


def fit(y):
    """A parametric least-squares fit of y(t) ~ w0 exp(-w1 t) + w2, by minimize."""
    def loss(w):
        return ((w[0] * np.exp(-w[1] * T) + w[2] - y) ** 2).sum()
    return minimize(loss, np.array([1.5, 0.5, 0.0]), method="Newton-CG",
                    jac=lambda w: reverse.grad(loss)(w), hessp=lambda w, v: mixed.hvp(loss, w, v),
                    options={"xtol": 1e-10}).x


Y = 2.0 * np.exp(-0.7 * T) + 0.3 + 0.05 * np.sin(5 * T)
P3 = np.array([0.7, 1.3, 0.4])
AB = np.array([1.5, 20.0])

# (name, solution, parameters, rtol): the fit's Newton-CG stops at xtol 1e-10, which bounds what
# finite differences of its solve can resolve to a few 1e-6
PROBLEMS = [("equilibrium", equilibrium, P3, RTOL), ("rosenbrock", rosenbrock_min, AB, RTOL),
            ("fit", fit, Y, 1e-5)]
# Newton-CG's line search ends the fit with SciPy's "precision loss" (status 2) at its minimum:
# dualad.scipy warns that it takes the derivative there, which these tests then check
PRECISION_LOSS = pytest.mark.filterwarnings("ignore:.*precision loss:RuntimeWarning")


@PRECISION_LOSS
@pytest.mark.parametrize("name, solution, p, rtol", PROBLEMS, ids=[p[0] for p in PROBLEMS])
def test_jacobian_in_forward_and_reverse_mode_equals_finite_differences(name, solution, p, rtol):
    want = fd(solution, p)
    close(dualad.jacfwd(solution)(p), want, rtol)
    close(reverse.jacrev(solution)(p), want, rtol)


@PRECISION_LOSS
@pytest.mark.parametrize("name, solution, p, rtol", PROBLEMS, ids=[p[0] for p in PROBLEMS])
def test_hvp_equals_finite_differences_of_the_gradient(name, solution, p, rtol):
    def loss(q):
        x = solution(q)
        return (x ** 2).sum() + x[0] * q[0]
    v = np.linspace(-1.0, 1.0, p.size)
    hv = mixed.hvp(loss, p, v)
    want = fd(lambda s: reverse.grad(loss)(p + s[0] * v), np.zeros(1))[:, 0]
    close(hv, want, rtol=10 * rtol)


@PRECISION_LOSS
@pytest.mark.parametrize("transform", ["jacfwd", "jacrev", "hvp"])
@pytest.mark.parametrize("name, solution, p, rtol", PROBLEMS[:2], ids=[p[0] for p in PROBLEMS[:2]])
def test_dF_dx_is_built_and_factorized_once_per_solution(monkeypatch, transform, name, solution, p,
                                                         rtol):
    """Every tangent of a jacfwd chunk, every cotangent of jacrev, and the solves of an H v
    reuse the one factorization of dF/dx at the solution."""
    from dualad._implicit.operators import JacobianProduct
    built = []
    matrix = JacobianProduct.matrix
    monkeypatch.setattr(JacobianProduct, "matrix", lambda self: built.append(1) or matrix(self))
    if transform == "hvp":
        mixed.hvp(lambda q: (solution(q) ** 2).sum(), p, np.ones_like(p))
    else:
        getattr(dualad if transform == "jacfwd" else reverse, transform)(solution)(p)
    assert len(built) == 1


def test_jacfwd_evaluates_the_residual_once_for_every_direction():
    """A jacfwd chunk of k directions takes dF/dtheta along all of them in one forward pass
    (custom_root's JVP takes the chunk), then solves them as one stack by the one
    factorization: the residual sees traced values twice (that pass, and dF/dx's), not
    once per direction."""
    n = 6
    a = np.eye(n) * 3 + 0.1
    traced = []

    def residual(x, q):
        if type(x) is not np.ndarray or type(q) is not np.ndarray:
            traced.append(1)
        return x ** 3 + a @ x - q
    jac = dualad.jacfwd(lambda q: root(residual, np.zeros(n), args=(q,), tol=1e-12).x)(np.ones(n))
    assert len(traced) == 2
    x = root(residual, np.zeros(n), args=(np.ones(n),), tol=1e-12).x
    np.testing.assert_allclose(jac, np.linalg.inv(np.diag(3 * x ** 2) + a), rtol=1e-12)


@pytest.mark.parametrize("name, solution, p, rtol", PROBLEMS[:2], ids=[p[0] for p in PROBLEMS[:2]])
def test_jacfwd_solves_its_chunk_as_one_stack_equal_to_each_direction(monkeypatch, name, solution,
                                                                     p, rtol):
    """The k tangents of a jacfwd chunk reach the kept factorization as one (k, n) right-hand
    side (one LAPACK call), and give what k separate JVPs (one vector solve each) and
    central differences give."""
    from dualad.scipy._tangent import Factorization
    shapes = []
    solve = Factorization.solve
    monkeypatch.setattr(Factorization, "solve",
                        lambda self, y, transposed: shapes.append(np.shape(y)) or solve(self, y, transposed))
    jac = dualad.jacfwd(solution)(p)
    n = solution(p).size
    assert shapes == [(p.size, n)]
    shapes.clear()
    columns = [dualad.jvp(solution, (p,), (e,))[1] for e in np.eye(p.size)]
    assert shapes == [(n,)] * p.size
    close(jac, np.stack(columns, axis=-1), rtol=1e-12)
    close(jac, fd(solution, p), rtol)


def test_second_derivatives_through_the_stacked_solve_equal_finite_differences():
    """A jacfwd's stacked solve differentiated again, in forward and in reverse mode: the
    Jacobian of the Jacobian against central differences of it."""
    want = fd(dualad.jacfwd(equilibrium), P3)
    close(dualad.jacfwd(dualad.jacfwd(equilibrium))(P3), want, rtol=1e-5)
    close(reverse.jacrev(dualad.jacfwd(equilibrium))(P3), want, rtol=1e-5)


def test_vmap_over_parameters_equals_each_solve():
    ps = np.stack([P3, 0.5 * P3, P3[::-1]])
    close(dualad.vmap(equilibrium)(ps), np.stack([equilibrium(q) for q in ps]), rtol=1e-12)
    close(dualad.vmap(dualad.jacfwd(equilibrium))(ps), np.stack([fd(equilibrium, q) for q in ps]))


def test_jit_replays_the_solve_and_its_derivative_at_new_parameters():
    jitted = dualad.jit(reverse.grad(lambda q: equilibrium(q).sum()))
    for q in (P3, 0.5 * P3, 1.5 * P3):
        close(jitted(q), fd(lambda s: equilibrium(s).sum(), q))


def test_closures_and_args_are_both_differentiated():
    """fun closes over a and receives b through args: the derivative sees both."""
    def x_of(a, b):
        return root(lambda x, b: x ** 3 + a * x - b, np.ones(1), args=(b,), tol=1e-12).x[0]
    ga, gb = reverse.grad(x_of, argnums=(0, 1))(2.0, 3.0)
    close(np.array([ga, gb]), np.array([fd(lambda a: x_of(a[0], 3.0), [2.0])[0],
                                        fd(lambda b: x_of(2.0, b[0]), [3.0])[0]]))


@pytest.mark.parametrize("method", ["hybr", "lm", "krylov", "df-sane"])
def test_root_methods(method):
    def x_of(p):
        return root(lambda x: x ** 3 / 3 + 2.0 * x - p, np.zeros(2), method=method,
                    tol=1e-12).x
    p = np.array([0.5, -1.0])
    close(dualad.jacfwd(x_of)(p), fd(x_of, p), rtol=1e-5)


def test_root_scalar_and_minimize_scalar():
    def r(a):
        return root_scalar(lambda x, a: np.exp(x) - a * x - 2.0, args=(a,), bracket=(0.0, 3.0),
                           xtol=1e-15).root
    close(reverse.grad(r)(1.5), fd(lambda a: r(a[0]), [1.5])[0])
    close(dualad.derivative(r)(1.5), fd(lambda a: r(a[0]), [1.5])[0])

    def m(a):
        return minimize_scalar(lambda x: np.cosh(x - a) + 0.3 * x ** 2, bracket=(-1.0, 2.0),
                               options={"xtol": 1e-14}).x
    # Brent's minimum is found to about sqrt(eps) in x whatever xtol says (f' is 1.6e-8
    # there), and the differences divide that by h = 1e-3: a reference good to 2e-5 only,
    # which failed a tolerance of 1e-5 on one machine. The implicit function theorem at
    # SciPy's own minimizer, -f_xa / f_xx = cosh(x - a) / (cosh(x - a) + 0.6), is the tight
    # check; the differences stay as one within their own error.
    x = float(scipy.optimize.minimize_scalar(lambda x: np.cosh(x - 0.8) + 0.3 * x ** 2,
                                             bracket=(-1.0, 2.0), options={"xtol": 1e-14}).x)
    implicit = np.cosh(x - 0.8) / (np.cosh(x - 0.8) + 0.6)
    for derivative in (reverse.grad(m)(0.8), dualad.derivative(m)(0.8)):
        close(derivative, implicit, rtol=1e-12)
        close(derivative, fd(lambda a: m(a[0]), [0.8])[0], rtol=1e-4)


def test_minimize_scalar_bounded_at_a_bound_raises():
    """A bounded minimum at a bound (f' != 0 there) is no root of f': the interior
    formula -(df'/da) / f'' would say 1 where the solution does not move (0); refused."""
    def m(a):
        return minimize_scalar(lambda x: (x - a) ** 2, bounds=(0.0, 1.0), method="bounded",
                               options={"xatol": 1e-12}).x
    assert abs(float(m(2.0)) - 1.0) < 1e-6           # the value is SciPy's
    for derivative in (dualad.derivative(m), reverse.grad(m)):
        with pytest.raises(NotConvergedError, match="at a bound"):
            derivative(2.0)
    close(dualad.derivative(m)(0.4), 1.0)            # an interior bounded minimum: x = a


def test_large_problems_take_the_krylov_solve():
    """Above 200 unknowns dF/dx is never assembled: GMRES with its products."""
    n = 300
    def x_of(p):
        return root(lambda x: x ** 3 / 3 + 3.0 * x - p + 0.5 * np.roll(x, 1), np.zeros(n),
                    method="krylov", tol=1e-12).x
    p = np.linspace(-1.0, 1.0, n)
    u = np.cos(np.arange(n))
    g = reverse.grad(lambda q: x_of(q) @ u)(p)
    want = fd(lambda s: x_of(p + s[0] * np.sin(np.arange(n))) @ u, np.zeros(1))[0]
    close(g @ np.sin(np.arange(n)), want, rtol=1e-5)


def test_a_jacfwd_chunk_of_a_large_problem_takes_a_krylov_solve_per_tangent():
    n = 300
    u, w = np.cos(np.arange(n)), np.sin(np.arange(n))
    def x_of(s):
        return root(lambda x: x ** 3 / 3 + 3.0 * x - s[0] * u - s[1] * w + 0.5 * np.roll(x, 1),
                    np.zeros(n), method="krylov", tol=1e-12).x
    s = np.array([0.5, -1.0])
    close(dualad.jacfwd(x_of)(s), fd(x_of, s), rtol=1e-5)


def test_the_result_is_scipy_s():
    from scipy import optimize as so
    f = lambda x: x ** 3 + x - np.array([1.0, 2.0])  # noqa: E731
    ours, theirs = root(f, np.zeros(2)), so.root(f, np.zeros(2))
    np.testing.assert_array_equal(ours.x, theirs.x)
    assert ours.nfev == theirs.nfev and ours.success


# -- errors ---------------------------------------------------------------------------------------
def test_a_derivative_where_scipy_did_not_converge_raises():
    f = lambda a: root(lambda x: x ** 2 + a, np.ones(1)).x  # noqa: E731  (no real root)
    assert not root(lambda x: x ** 2 + 1.0, np.ones(1)).success
    with pytest.raises(NotConvergedError, match="did not converge"):
        dualad.jacfwd(f)(1.0)
    with pytest.raises(NotConvergedError, match="did not converge"):
        reverse.grad(lambda a: f(a).sum())(1.0)
    f(1.0)  # the value alone is SciPy's, as SciPy returns it


def test_a_singular_jacobian_at_the_solution_raises():
    # x**2 = a at a = 0: the root 0 is double, dF/dx = 2x = 0 there
    f = lambda a: root_scalar(lambda x: x ** 3 - a, bracket=(-1.0, 1.0), xtol=1e-300).root  # noqa: E731
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        dualad.derivative(f)(0.0)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("symmetric", [False, True])
def test_a_jacobian_with_non_finite_entries_at_the_solution_raises(bad, symmetric):
    """dF/dx at the solution holds a NaN or an infinity, anywhere: an error saying so (its
    test reads LAPACK's 1-norm, which they make non-finite), not a factorization of them."""
    for at in [(0, 0), (1, 2), (2, 1)]:
        a = np.eye(3) * 4.0 + 1.0
        a[at] = bad
        with pytest.raises(FloatingPointError, match="non-finite entries"):
            Factorization((), a, "root", symmetric=symmetric)
    lu = Factorization((), np.eye(3) * 4.0 + 1.0, "root", symmetric=symmetric)
    np.testing.assert_allclose(lu.solve(np.ones(3), transposed=False), np.ones(3) / 7.0)
    # finite entries whose column sums pass the largest float: not "non-finite entries"
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        Factorization((), np.array([[1e308, 0.0], [1e308, 1e308]]), "root", symmetric=symmetric)


def test_the_condition_number_is_the_one_norms(capfd):
    """The estimate reads dF/dx's 1-norm (its largest column sum), not the largest row
    sum: on a matrix where the two differ, the condition number warned of is cond_1. An
    empty dF/dx (no unknowns) factorizes without LAPACK's complaint on the output."""
    a = np.array([[1.0, 1e5, 1e5], [0.0, 1.0, 0.0], [1e-7, 0.0, 1.0]])  # cond_1 1.0e10, cond_inf 4.0e10
    assert not np.isclose(np.linalg.cond(a, 1), np.linalg.cond(a, np.inf), rtol=0.5)
    with pytest.warns(RuntimeWarning, match="ill-conditioned") as caught:
        Factorization((), a, "root", symmetric=False)
    warned = float(str(caught[0].message).split("condition number ")[1].split(")")[0])
    np.testing.assert_allclose(warned, np.linalg.cond(a, 1), rtol=0.05)
    lu = Factorization((), np.zeros((0, 0)), "root", symmetric=False)
    assert lu.solve(np.zeros(0), transposed=True).shape == (0,)
    assert "illegal value" not in capfd.readouterr().out


@pytest.mark.filterwarnings("ignore:.*precision loss:RuntimeWarning")
def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="fun"):
        root(3.0, np.zeros(1))
    with pytest.raises(TypeError, match="x0"):
        root(lambda x: x, np.zeros(1, dtype=int))
    with pytest.raises(ValueError, match=r"constraints\[0\]\['type'\] must be 'eq' or 'ineq'"):
        minimize(lambda x: (x ** 2).sum(), np.zeros(1), constraints=[{"type": "lt", "fun": sum}])
    with pytest.raises(ValueError, match="scalar"):
        reverse.grad(lambda a: minimize(lambda x: x * a, np.ones(2)).x.sum())(1.0)


def test_an_ill_conditioned_jacobian_at_the_solution_warns():
    a = np.array([[1.0, 1.0], [1.0, 1.0 + 1e-11]])   # condition number 4e11
    def x_of(p):
        return root(lambda x: a @ x - p, np.array([1.1, 1.9]), method="lm", tol=1e-14).x
    with pytest.warns(RuntimeWarning, match="ill-conditioned.*condition number 4e"):
        jac = dualad.jacfwd(x_of)(a @ np.array([1.0, 2.0]))
    close(jac, np.linalg.inv(a), rtol=1e-4)


def test_jit_of_a_function_returning_scipy_s_result_gives_it_back():
    """A result is a dict subclass with attribute access: under jit it came back a plain
    dict (``res.x`` raised AttributeError); now its type is a pytree node."""
    from dualad.scipy.integrate import solve_ivp

    res = dualad.jit(lambda a: root(lambda x: x ** 3 - a, np.ones(1), tol=1e-12))
    for a in (8.0, 27.0):  # the trace, then a replay
        got = res(np.array([a]))
        assert type(got).__name__ == "OptimizeResult" and np.allclose(got.x, np.cbrt(a), rtol=1e-12)
    scalar = dualad.jit(lambda a: root_scalar(lambda x: x ** 3 - a, bracket=(0.0, 4.0), xtol=1e-14))
    got = [scalar(np.float64(a)) for a in (8.0, 27.0)]
    assert [type(g).__name__ for g in got] == ["RootResults"] * 2
    assert [round(float(g.root), 12) for g in got] == [2.0, 3.0] and got[1].converged
    ivp = dualad.jit(lambda k: solve_ivp(lambda t, y: -k * y, (0.0, 1.0), np.ones(1), t_eval=[1.0],
                                         rtol=1e-10, atol=1e-12))
    got = ivp(np.float64(2.0))
    assert type(got).__name__ == "OdeResult" and np.allclose(got.y, np.exp(-2.0), rtol=1e-8)
    grad = reverse.grad(lambda a: res(a).x[0])(np.array([8.0]))  # a derivative through it
    np.testing.assert_allclose(grad, [1.0 / 12.0], rtol=1e-10)

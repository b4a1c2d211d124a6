"""dualad.scipy.optimize and sparse.linalg on arrays of another library (array-api-strict standing in for
CuPy and the rest): SciPy solves on NumPy copies, the user's functions get their own
library's arrays, and the solution and every derivative equal NumPy's (issue 37)."""

from __future__ import annotations

import array_api_strict as strict
import numpy as np
import pytest
import scipy.optimize
import scipy.sparse
from _support.solutions import fd
from array_api_compat import array_namespace

import dualad
import dualad.numpy as dnp
import mixed
import reverse
from dualad.interpreter import Value
from dualad.scipy import integrate, optimize
from dualad.scipy.linalg import cho_factor, cho_solve, solve_triangular
from dualad.scipy.sparse import csr_array
from dualad.scipy.sparse import linalg as sparse_linalg

LIBRARIES = {"numpy": np, "array_api_strict": strict}


def host(a):
    """``a`` (an array of either library, or a number) as a NumPy array."""
    return np.asarray(a) if isinstance(a, (np.ndarray, float)) else np.from_dlpack(a)


class Seen:
    """The kinds of array the user's functions were handed (raw ones: dualad's values are
    the library's arrays inside)."""

    def __init__(self):
        self.kinds = set()

    def __call__(self, *arrays):
        for a in arrays:
            while isinstance(a, Value):
                a = a._strip()
            scalar = isinstance(a, (float, np.generic))  # what SciPy's scalar solvers pass
            self.kinds.add("scalar" if scalar else type(a).__module__.split(".")[0])


class Functions:
    """``lib``'s functions, or dualad.numpy's where an operand is dualad's value, with NumPy's
    scalars as Python floats: as a user of array-api-strict must write (it refuses other
    types as a right operand, NumPy's scalars, which SciPy's scalar solvers pass, among
    them; and dualad.numpy on its raw arrays computes on NumPy copies)."""

    def __init__(self, lib):
        self.lib = lib

    def __getattr__(self, name):
        def function(*args, **kwargs):
            args = [float(a) if isinstance(a, np.generic) else a for a in args]
            traced = any(isinstance(a, Value) for a in args)
            return getattr(dnp if traced else self.lib, name)(*args, **kwargs)
        return function


# -- the problems: each builds its arrays in ``lib`` -------------------------------------------
def root_with_jac(lib, p, seen):
    fn = Functions(lib)

    def residual(x):
        seen(x)
        return fn.subtract(x ** 3 + x, p)

    def jac(x):
        seen(x)
        return lib.eye(2, dtype=x.dtype) * (3.0 * x ** 2 + 1.0)
    return optimize.root(residual, lib.zeros(2, dtype=p.dtype), jac=jac, tol=1e-12).x


def bfgs(lib, p, seen):
    fn = Functions(lib)

    def f(x, scale):
        seen(x, scale)
        return fn.sum(fn.multiply(scale, fn.subtract(x, p) ** 2) + x ** 4)

    def gradient(x, scale):
        seen(x, scale)
        return 2.0 * fn.multiply(scale, fn.subtract(x, p)) + 4.0 * x ** 3
    return optimize.minimize(f, lib.zeros(2, dtype=p.dtype), args=(lib.asarray([1.0, 2.0]),),
                             jac=gradient, method="BFGS", options={"gtol": 1e-10}).x


def lbfgsb_at_a_bound(lib, p, seen):
    fn = Functions(lib)

    def f(x):
        seen(x)
        return fn.sum(fn.subtract(x, p) ** 2 + x ** 4)
    bounds = scipy.optimize.Bounds(lib.asarray([0.0, 0.0]), lib.asarray([0.5, 2.0]))
    return optimize.minimize(f, lib.asarray([0.25, 0.25]), method="L-BFGS-B", bounds=bounds,
                             options={"ftol": 1e-15, "gtol": 1e-12}).x


def least_squares_robust(lib, p, seen):
    fn = Functions(lib)
    t = lib.asarray([0.0, 0.5, 1.0, 1.5, 2.0])

    def residuals(w):
        seen(w)
        data = p[0] * fn.exp(-p[1] * t) + 0.01 * t ** 2
        return fn.subtract(w[0] * fn.exp(-w[1] * t), data)
    return optimize.least_squares(residuals, lib.asarray([1.0, 1.0]), loss="soft_l1",
                                  bounds=(lib.asarray([0.0, 0.0]), lib.asarray([10.0, 10.0])),
                                  x_scale=lib.asarray([1.0, 2.0]), ftol=1e-15, xtol=1e-15,
                                  gtol=1e-15).x


def scalar_root(lib, p, seen):
    fn = Functions(lib)

    def f(x):
        seen(x)
        return fn.subtract(fn.add(x ** 3, fn.multiply(p[1], x)), p[0])
    return optimize.root_scalar(f, bracket=(0.0, 3.0), xtol=1e-14).root


def scalar_minimum(lib, p, seen):
    fn = Functions(lib)

    def f(x):
        seen(x)
        return fn.add(fn.subtract(x, p[0]) ** 2, fn.multiply(p[1], x ** 4))
    return optimize.minimize_scalar(f, bracket=(0.0, 1.0), options={"xtol": 1e-12}).x


PROBLEMS = [root_with_jac, bfgs, lbfgsb_at_a_bound, least_squares_robust, scalar_root,
            scalar_minimum]
P = [1.0, 2.0]
MODES = {
    "value": lambda f, p: f(p),
    "grad": lambda f, p: reverse.grad(lambda p: dnp.sum(f(p) ** 3))(p),
    "jacfwd": lambda f, p: dualad.jacfwd(f)(p),
    "hvp": lambda f, p: mixed.hvp(lambda p: dnp.sum(f(p) ** 2), p, p * 0.5 - 1.0),
    "vmap": lambda f, p: dualad.vmap(f)(array_namespace(p).stack([p, p * 0.8])),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.__name__)
def test_another_librarys_arrays_give_numpys_numbers(problem, mode):
    results = {}
    for name, lib in LIBRARIES.items():
        seen = Seen()
        out = MODES[mode](lambda p, lib=lib, seen=seen: problem(lib, p, seen), lib.asarray(P))
        results[name] = host(out)
        assert seen.kinds and seen.kinds <= {name, "scalar"}, (name, seen.kinds)
        if mode != "value" or problem not in (scalar_root, scalar_minimum):  # SciPy's float
            assert type(out).__module__.split(".")[0] == name, type(out)
    ours, numpys = results["array_api_strict"], results["numpy"]
    assert ours.shape == numpys.shape and ours.dtype == numpys.dtype, (ours.shape, numpys.shape)
    np.testing.assert_allclose(ours, numpys, rtol=1e-12,
                               atol=1e-14)


@pytest.mark.filterwarnings("ignore:.*precision loss:RuntimeWarning")  # BFGS, at some steps
@pytest.mark.parametrize("problem", [root_with_jac, bfgs],
                         ids=lambda p: p.__name__)
def test_the_jacobian_on_another_library_matches_finite_differences(problem):
    jac = host(dualad.jacfwd(lambda p: problem(strict, p, Seen()))(strict.asarray(P)))
    expected = fd(lambda p: host(problem(np, np.asarray(p), Seen())), np.asarray(P))
    np.testing.assert_allclose(jac, expected, rtol=1e-6, atol=1e-7)  # the solves' own noise


def test_float32_stays_float32_in_the_library():
    p = strict.asarray(P, dtype=strict.float32)
    x = root_with_jac(strict, p, Seen())
    jac = dualad.jacfwd(lambda p: root_with_jac(strict, p, Seen()))(p)
    assert x.dtype == strict.float32 and jac.dtype == strict.float32
    expected = dualad.jacfwd(lambda p: root_with_jac(np, p, Seen()))(np.asarray(P, np.float32))
    np.testing.assert_allclose(host(jac), expected, rtol=1e-5)


def test_krylov_solve_beyond_the_dense_limit():
    """250 unknowns: dF/dx's products (in the library) drive GMRES on the host."""
    n = 250
    weights = np.linspace(0.5, 1.5, n)

    def solution(lib, p):
        c = lib.asarray(np.linspace(1.0, 2.0, n))
        fn = Functions(lib)
        x = optimize.root(lambda x: fn.subtract(fn.add(x ** 3, fn.multiply(c, x)), p),
                          lib.zeros(n), tol=1e-12).x
        return fn.sum(fn.multiply(x, lib.asarray(weights)))
    p = np.linspace(0.0, 1.0, n)
    ours = host(reverse.grad(lambda p: solution(strict, p))(strict.asarray(p)))
    np.testing.assert_allclose(ours, reverse.grad(lambda p: solution(np, p))(p), rtol=1e-8)


def test_constraints_on_another_library_say_what_to_do():
    p = strict.asarray(P)
    with pytest.raises(NotImplementedError, match=r"constraints, x0 must be a NumPy array.*"
                                                  r"array_api_strict"):
        optimize.minimize(lambda x: dnp.sum(dnp.subtract(x, p) ** 2), strict.zeros(2),
                          method="SLSQP", constraints={"type": "eq", "fun": lambda x: x[0]})


def test_solve_ivp_derivatives_on_another_library_say_what_to_do():
    k = strict.asarray([1.0, 2.0])
    with pytest.raises(NotImplementedError, match=r"NumPy arrays.*array_api_strict"):
        dualad.jacfwd(lambda k: integrate.solve_ivp(lambda t, y: dnp.multiply(-k, y), (0.0, 1.0),
                                                    strict.ones(2), t_eval=[1.0]).y)(k)


# -- sparse solves: b and A's entries in the library ---------------------------------------------
STRUCTURE = (np.array([0, 1, 0, 1, 2, 1, 2]), np.array([0, 2, 5, 7]))  # tridiagonal, 3 x 3
ENTRIES = [4.0, 1.0, 1.0, 3.0, 0.5, 0.5, 2.0]
SPARSE = {
    "spsolve": lambda A, b: sparse_linalg.spsolve(A, b),
    "cg": lambda A, b: sparse_linalg.cg(A, b, rtol=1e-13)[0],
    "gmres": lambda A, b: sparse_linalg.gmres(A, b, rtol=1e-13)[0],
    "minres": lambda A, b: sparse_linalg.minres(A, b, rtol=1e-13)[0],
}


@pytest.mark.parametrize("mode", ["value", "grad", "jacfwd", "vmap"])
@pytest.mark.parametrize("method", SPARSE)
def test_sparse_solves_in_another_library_give_numpys_numbers(method, mode):
    """Differentiable in b and in the entries (a csr_array of the library's data), and with
    SciPy's constant matrix beside the library's b."""
    solve = SPARSE[method]
    constant = scipy.sparse.csr_array((np.array(ENTRIES), *STRUCTURE), shape=(3, 3))
    results = {}
    for name, lib in LIBRARIES.items():
        fn = Functions(lib)

        def x(data, b, fn=fn):
            return fn.add(solve(csr_array((data, *STRUCTURE), shape=(3, 3)), b), solve(constant, b))
        data, b = lib.asarray(ENTRIES), lib.asarray([1.0, 2.0, -1.0])
        if mode == "value":
            out = x(data, b)
        elif mode == "grad":
            out = fn.concat(reverse.grad(lambda d, b, fn=fn: fn.sum(x(d, b) ** 2),
                                         argnums=(0, 1))(data, b))
        elif mode == "jacfwd":
            out = dualad.jacfwd(x, argnums=(0, 1))(data, b)
            out = fn.concat([out[0], out[1]], axis=1)
        else:
            out = dualad.vmap(x, in_axes=(None, 0))(data, lib.stack([b, b * 2.0 - 1.0]))
        assert type(out).__module__.split(".")[0] == name, type(out)
        results[name] = host(out)
    ours, numpys = results["array_api_strict"], results["numpy"]
    assert ours.shape == numpys.shape and ours.dtype == numpys.dtype, (ours.shape, numpys.shape)
    np.testing.assert_allclose(ours, numpys, rtol=1e-10,
                               atol=1e-13)


def test_sparse_solve_of_many_columns_in_another_library():
    A = scipy.sparse.csr_array((np.array(ENTRIES), *STRUCTURE), shape=(3, 3))
    b = np.arange(6.0).reshape(3, 2)
    x = sparse_linalg.spsolve(A, strict.asarray(b))
    assert type(x).__module__.startswith("array_api_strict"), type(x)
    np.testing.assert_allclose(host(x), sparse_linalg.spsolve(A, b), rtol=1e-14)
    jac = dualad.jacfwd(lambda b: sparse_linalg.spsolve(A, b))(strict.asarray(b))
    np.testing.assert_allclose(host(jac), dualad.jacfwd(lambda b: sparse_linalg.spsolve(A, b))(b),
                               rtol=1e-12, atol=1e-15)


def test_triangular_solves_name_the_libraries_they_run_on():
    """The table's entries (NumPy's SciPy, CuPy's cupyx.scipy): another library's arrays
    are refused by name, not turned into NumPy's."""
    a, b = strict.asarray([[2.0, 0.0], [1.0, 3.0]]), strict.asarray([1.0, 2.0])
    for call in (lambda: solve_triangular(a, b, lower=True), lambda: cho_factor(a),
                 lambda: cho_solve((a, True), b),
                 lambda: dualad.jacfwd(lambda b: solve_triangular(a, b, lower=True))(b)):
        with pytest.raises(NotImplementedError, match=r"NumPy.*CuPy.*array_api_strict has none"):
            call()


def test_callbacks_get_the_librarys_arrays_in_either_form():
    """SciPy's ``callback(intermediate_result)`` (by keyword) and ``callback(xk)``, root's
    ``callback(x, f)``."""
    p, kinds = strict.asarray([1.0, 2.0]), set()

    def objective(x):
        return dnp.sum(dnp.subtract(x, p) ** 2)

    def result_form(intermediate_result):  # (its fun: SciPy's number)
        kinds.add(type(intermediate_result.x).__module__)

    def old_form(xk):
        kinds.add(type(xk).__module__)

    def residual_form(x, f):
        kinds.update({type(x).__module__, type(f).__module__})
    optimize.minimize(objective, strict.zeros(2), method="BFGS", callback=result_form)
    optimize.minimize(objective, strict.zeros(2), method="L-BFGS-B", callback=old_form)
    optimize.least_squares(lambda x: dnp.subtract(x ** 3, p), strict.ones(2), callback=result_form)
    optimize.root(lambda x: dnp.subtract(x ** 3, p), strict.ones(2), method="broyden1",
                  callback=residual_form)
    assert kinds == {"array_api_strict._array_object"}, kinds


@pytest.mark.parametrize("how", ["hessp", "hess", "jac=True"])
def test_second_derivatives_and_jacobians_handed_to_scipy_in_the_library(how):
    results = {}
    for name, lib in LIBRARIES.items():
        fn, seen = Functions(lib), Seen()

        def x_star(p, fn=fn, lib=lib, seen=seen):
            if how == "jac=True":
                def both(x):
                    seen(x)
                    r = fn.subtract(x ** 3 + x, p)
                    return r, fn.multiply(lib.eye(2, dtype=x.dtype), 3.0 * x ** 2 + 1.0)
                return optimize.root(both, lib.zeros(2), jac=True, tol=1e-12).x

            def f(x):
                return fn.sum(fn.subtract(x, p) ** 2 + x ** 4)

            def grad(x):
                return 2.0 * fn.subtract(x, p) + 4.0 * x ** 3

            def hessp(x, v):
                seen(x, v)
                return (2.0 + 12.0 * x ** 2) * v

            def hess(x):
                seen(x)
                return lib.eye(2, dtype=x.dtype) * (2.0 + 12.0 * x ** 2)
            extra = {"hessp": hessp, "method": "Newton-CG"} if how == "hessp" else \
                {"hess": hess, "method": "trust-exact"}
            return optimize.minimize(f, lib.zeros(2), jac=grad, options={"gtol": 1e-10}
                                     if how == "hess" else {"xtol": 1e-14}, **extra).x
        p = lib.asarray(P)
        results[name] = host(dualad.jacfwd(x_star)(p)), host(x_star(p))
        assert seen.kinds == {name}, seen.kinds
    for ours, numpys in zip(results["array_api_strict"], results["numpy"]):
        np.testing.assert_allclose(ours, numpys, rtol=1e-12, atol=1e-14)


def test_a_bounded_scalar_minimum_and_a_scale_in_the_library():
    a = strict.asarray(8.0)

    def argmin(a):
        return optimize.minimize_scalar(
            lambda x: Functions(strict).subtract(x ** 4 / 4.0, Functions(strict).multiply(a, x)),
            bounds=(0.0, 5.0), method="bounded", options={"xatol": 1e-12}).x
    np.testing.assert_allclose(float(argmin(a)), 2.0, rtol=1e-8)
    np.testing.assert_allclose(host(reverse.grad(argmin)(a)), 1.0 / 12.0, rtol=1e-6)  # a^(-2/3)/3
    p = strict.asarray([1.0, 8.0])
    x = optimize.least_squares(lambda x: dnp.subtract(x ** 3, p), strict.ones(2), loss="soft_l1",
                               f_scale=strict.asarray(2.0), ftol=1e-15, xtol=1e-15, gtol=1e-15).x
    np.testing.assert_allclose(host(x), [1.0, 2.0], rtol=1e-8)


def test_the_solution_and_its_derivative_stay_on_the_arrays_device():
    device, fn = strict.Device("device1"), Functions(strict)
    p = strict.asarray([2.0, 10.0], device=device)

    def x_star(p):
        return optimize.root(lambda x: fn.subtract(x ** 3 + x, p), strict.zeros(2, device=device),
                             tol=1e-12).x
    assert x_star(p).device == device
    jac = dualad.jacfwd(x_star)(p)
    assert jac.device == device
    np.testing.assert_allclose(np.diag(host(jac)), [0.25, 1.0 / 13.0], rtol=1e-10)
    A = scipy.sparse.csr_array((np.array(ENTRIES), *STRUCTURE), shape=(3, 3))
    b = strict.asarray([1.0, 2.0, -1.0], device=device)
    grad = reverse.grad(lambda b: fn.sum(sparse_linalg.spsolve(A, b)))(b)
    assert grad.device == device

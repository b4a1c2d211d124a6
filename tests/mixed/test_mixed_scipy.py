"""``mixed.scipy``'s ``jac`` and ``hessp`` with ``scipy.optimize.minimize``.

SciPy's own Rosenbrock derivatives (``rosen_der``, ``rosen_hess_prod``) are the
reference for ours, and every SciPy method that takes ``hessp`` must converge
with them, along the same path as with SciPy's, also with ``args``.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from _support.harness import Counted
from scipy.optimize import minimize, rosen, rosen_der, rosen_hess_prod

import mixed
import reverse
from dualad import ops
from mixed.scipy import hessp, jac

METHODS = ["trust-krylov", "trust-ncg", "Newton-CG"]
# Every method of minimize that takes hessp (trust-exact and dogleg take only hess).
HESSP_METHODS = [*METHODS, "trust-constr"]


def rosenbrock(x):
    return ops.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def test_jac_and_hessp_match_scipy_rosenbrock_derivatives():
    rng = np.random.default_rng(0)
    x, p = rng.uniform(-2, 2, 30), rng.standard_normal(30)
    assert float(rosenbrock(x)) == pytest.approx(rosen(x), rel=1e-14)
    np.testing.assert_allclose(jac(rosenbrock)(x), rosen_der(x), rtol=1e-13, atol=1e-11)
    np.testing.assert_allclose(hessp(rosenbrock)(x, p), rosen_hess_prod(x, p), rtol=1e-12, atol=1e-10)


@pytest.mark.parametrize("method", METHODS)
def test_minimize_rosenbrock(method):
    x0 = np.full(50, 0.5)
    options = {"xtol": 1e-12} if method == "Newton-CG" else {"gtol": 1e-9}
    res = minimize(rosenbrock, x0, jac=jac(rosenbrock), hessp=hessp(rosenbrock), method=method,
                   options=options)
    assert res.success, res.message
    np.testing.assert_allclose(res.x, np.ones(50), atol=1e-7)
    ref = minimize(rosen, x0, jac=rosen_der, hessp=rosen_hess_prod, method=method, options=options)
    assert res.nit == ref.nit  # the same derivatives, so the same path


def _logistic_problem():
    rng = np.random.default_rng(1)
    data = rng.standard_normal((200, 8)) * np.array([1, 1, 2, 5, 0.5, 1, 3, 10])
    w_true = rng.standard_normal(8)
    y = np.where(rng.uniform(size=200) < 1 / (1 + np.exp(-data @ w_true)), 1.0, -1.0)

    def loss(w):
        margins = ops.matmul(data, w) * y
        return ops.mean(ops.logaddexp(0.0, -margins)) + 1e-3 * ops.sum(w * w)
    return loss


@pytest.mark.parametrize("method", METHODS)
def test_minimize_logistic_regression(method):
    loss = _logistic_problem()
    # gtol 1e-10 is below what SciPy's trust-krylov can certify at f* = 0.16:
    # it stops with "A bad approximation caused failure to predict improvement".
    options = {"xtol": 1e-12} if method == "Newton-CG" else {"gtol": 1e-8}
    res = minimize(loss, np.zeros(8), jac=jac(loss), hessp=hessp(loss), method=method, options=options)
    assert res.success, res.message
    assert np.linalg.norm(jac(loss)(res.x)) <= 1e-8
    lbfgs = minimize(loss, np.zeros(8), jac=jac(loss), method="L-BFGS-B",
                     options={"gtol": 1e-12, "ftol": 0.0})
    np.testing.assert_allclose(res.x, lbfgs.x, rtol=1e-5, atol=1e-6)


def test_jac_returns_an_array_scipy_accepts_in_float32():
    x = np.full(5, 0.5, np.float32)
    g = jac(rosenbrock)(x)
    hp = hessp(rosenbrock)(x, np.ones(5, np.float32))
    assert g.dtype == np.float32 and hp.dtype == np.float32 and g.shape == hp.shape == (5,)


# -- args, and the probe vectors SciPy sends ----------------------------------------
def shifted(x, c, s):
    """s * Rosenbrock(x - c + 1): SciPy passes c and s with args=; the minimum is at c."""
    y = x - c + 1.0
    return s * ops.sum(100.0 * (y[1:] - y[:-1] ** 2) ** 2 + (1.0 - y[:-1]) ** 2)


def shifted_by_hand(x, c, s):
    return s * rosen(x - c + 1.0)


def shifted_der(x, c, s):
    return s * rosen_der(x - c + 1.0)


def shifted_hess_prod(x, p, c, s):
    return s * rosen_hess_prod(x - c + 1.0, p)


@pytest.mark.parametrize("method", HESSP_METHODS)
def test_minimize_with_args_follows_scipys_own_derivatives(method):
    c = np.linspace(0.5, 1.5, 10)
    x0, args = c - 0.3, (c, 0.5)
    options = ({"xtol": 1e-12} if method == "Newton-CG" else {"gtol": 1e-9, "xtol": 1e-14}
               if method == "trust-constr" else {"gtol": 1e-9})
    res = minimize(shifted, x0, args=args, jac=jac(shifted), hessp=hessp(shifted), method=method,
                   options=options)
    ref = minimize(shifted_by_hand, x0, args=args, jac=shifted_der, hessp=shifted_hess_prod,
                   method=method, options=options)
    assert res.success and ref.success, (res.message, ref.message)
    assert (res.nit, res.nhev) == (ref.nit, ref.nhev)  # the same derivatives, so the same path
    np.testing.assert_allclose(res.x, ref.x, rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.x, c, atol=1e-8)


def test_jac_and_hessp_pass_args_through():
    rng = np.random.default_rng(4)
    x, p, c = rng.uniform(-2, 2, 12), rng.standard_normal(12), rng.uniform(0, 1, 12)
    np.testing.assert_allclose(jac(shifted)(x, c, 3.0), shifted_der(x, c, 3.0), rtol=1e-13, atol=1e-11)
    np.testing.assert_allclose(hessp(shifted)(x, p, c, 3.0), shifted_hess_prod(x, p, c, 3.0),
                               rtol=1e-12, atol=1e-10)


def test_trust_constr_probes_with_int8_vectors():
    """trust-constr asks for H p with p = int8 unit vectors: this raised a dtype error."""
    seen = []
    hp = hessp(rosenbrock)

    def recording(x, p):
        seen.append(p.dtype)
        return hp(x, p)
    res = minimize(rosenbrock, np.zeros(4), jac=jac(rosenbrock), hessp=recording, method="trust-constr")
    assert np.dtype(np.int8) in seen  # the case this test is about still happens
    assert res.success, res.message
    np.testing.assert_allclose(res.x, np.ones(4), atol=1e-5)


@pytest.mark.parametrize("x_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("p_dtype", [np.int8, np.int64, np.uint8, np.float32, np.float64])
def test_probe_vectors_are_cast_to_the_dtype_of_x(x_dtype, p_dtype):
    x = np.linspace(-1.0, 1.0, 6).astype(x_dtype)
    p = np.array([1, 0, 2, 0, 0, 1]).astype(p_dtype)
    hp = hessp(rosenbrock)(x, p)
    assert hp.dtype == x_dtype and hp.shape == x.shape
    np.testing.assert_allclose(hp, rosen_hess_prod(x.astype(np.float64), p.astype(np.float64)),
                               rtol=1e-12 if x_dtype == np.float64 else 1e-5)
    assert p.dtype == p_dtype  # the caller's array is not converted in place


@pytest.mark.parametrize("p, error, pattern", [
    (np.ones(4), ValueError, r"^hessp: p must have x's shape \(5,\), got shape \(4,\)"),
    (np.ones((5, 1)), ValueError, r"^hessp: p must have x's shape \(5,\), got shape \(5, 1\)"),
    (np.ones((2, 5)), ValueError, r"^hessp: p must have x's shape \(5,\), got shape \(2, 5\)"),
    ([1.0] * 5, TypeError, r"^hessp: p must be an array of x's shape \(5,\), got a list"),
    (None, TypeError, r"^hessp: p must be an array of x's shape \(5,\), got None"),
    (np.ones(5, complex), TypeError,
     r"^hessp: p must be a real array \(integer or floating\), got dtype complex128"),
    (np.ones(5, bool), TypeError, r"^hessp: p must be a real array .*got dtype bool"),
])
def test_a_bad_probe_vector_is_named(p, error, pattern):
    with pytest.raises(error, match=pattern):
        hessp(rosenbrock)(np.zeros(5), p)


def test_a_bad_point_or_objective_is_named():
    with pytest.raises(TypeError, match="floating point"):
        hessp(rosenbrock)(np.zeros(5, int), np.ones(5))
    with pytest.raises(TypeError, match=r"^hessp: f must be the objective, a function f\(x, \*args\)"):
        hessp(None)
    with pytest.raises(TypeError, match=r"^jac: f must be the objective"):
        jac(np.ones(3))


def test_the_module_imports_no_scipy_and_shadows_none():
    code = ("import sys, mixed, mixed.scipy\n"
            "assert 'scipy' not in sys.modules, 'importing mixed imported SciPy'\n"
            "import scipy.optimize\n"
            "assert scipy.__name__ == 'scipy' and hasattr(scipy.optimize, 'minimize')\n"
            "assert mixed.scipy.__name__ == 'mixed.scipy' and mixed.scipy.jac.__module__ == 'mixed.scipy'\n")
    subprocess.run([sys.executable, "-c", code], check=True)
    assert not hasattr(mixed, "jac") and not hasattr(mixed, "hessp")  # one name per role


# -- linearized: jac and hessp from one trace per solve ----------------------------------------
@pytest.mark.parametrize("method", HESSP_METHODS)
def test_linearized_takes_the_path_of_jac_and_hessp_and_traces_once(method):
    """The same iterates to the bit as jac(f) and hessp(f), with f's Python run once (the
    trace) for every derivative of the solve."""
    counted = Counted(rosenbrock)
    x0 = np.full(30, 0.5)
    jac_f, hessp_f = mixed.scipy.linearized(counted)
    ours = minimize(rosenbrock, x0, jac=jac_f, hessp=hessp_f, method=method)
    ref = minimize(rosenbrock, x0, jac=reverse.grad(rosenbrock),
                   hessp=lambda x, p: mixed.hvp(rosenbrock, x, p.astype(x.dtype)), method=method)
    assert (ours.nit, ours.nfev, ours.njev, ours.nhev) == (ref.nit, ref.nfev, ref.njev, ref.nhev)
    np.testing.assert_array_equal(ours.x, ref.x)
    assert ours.nhev > 10 and counted.calls == 1


@pytest.mark.parametrize("method", HESSP_METHODS)
def test_jac_and_hessp_of_one_f_share_one_trace(method):
    """jac(f) and hessp(f) passed together take linearized(f)'s path: the same
    iterates to the bit, f's Python run once per pair (issue 23 §4: the pair
    traced nothing, and was 9-15x SciPy's closed forms against 1.2-1.7x)."""
    counted = Counted(rosenbrock)
    x0 = np.full(30, 0.5)
    ours = minimize(rosenbrock, x0, jac=jac(counted), hessp=hessp(counted), method=method)
    ref = minimize(rosenbrock, x0, jac=mixed.scipy.linearized(rosenbrock)[0],
                   hessp=mixed.scipy.linearized(rosenbrock)[1], method=method)
    assert (ours.nit, ours.nfev, ours.njev, ours.nhev) == (ref.nit, ref.nfev, ref.njev, ref.nhev)
    np.testing.assert_array_equal(ours.x, ref.x)
    assert ours.nhev > 10 and counted.calls == 1
    minimize(rosenbrock, x0, jac=jac(counted), hessp=hessp(counted), method=method)
    assert counted.calls == 2  # a new pair, once the old one is dropped, traces anew


def test_jac_alone_runs_f_at_each_call_and_sees_new_data():
    data = {"a": np.array([1.0, 2.0])}

    def f(x):
        return ops.sum(data["a"] * x ** 2)

    counted = Counted(f)
    g = jac(counted)
    x = np.array([1.0, 1.0])
    np.testing.assert_array_equal(g(x), [2.0, 4.0])
    data["a"][:] = [3.0, 5.0]  # changed in place: an eager gradient reads it
    np.testing.assert_array_equal(g(x), [6.0, 10.0])
    assert counted.calls == 2


def test_linearized_follows_new_points_args_and_arrays_changed_in_place():
    def f(x, a):
        return ops.sum(a * x ** 3) + x[0] * x[1]
    jac_f, hessp_f = mixed.scipy.linearized(f)
    x, p, a = np.array([1.0, 2.0]), np.array([1.0, -1.0]), np.array([2.0, 3.0])
    for x_, a_ in [(x, a), (x, a), (np.array([3.0, -1.0]), a), (x, np.array([1.0, 1.0]))]:
        np.testing.assert_array_equal(jac_f(x_, a_), jac(f)(x_, a_))
        np.testing.assert_array_equal(hessp_f(x_, p, a_), hessp(f)(x_, p, a_))
    x[0] = -4.0  # the same array, other numbers: not the point linearized before
    np.testing.assert_array_equal(hessp_f(x, p, a), hessp(f)(x, p, a))
    np.testing.assert_array_equal(hessp_f(x, np.array([1, 0], dtype=np.int8), a),
                                  hessp(f)(x, np.array([1.0, 0.0]), a))
    with pytest.raises(TypeError, match="linearized: f must be the objective"):
        mixed.scipy.linearized(np.ones(2))


def test_linearized_gives_gradients_to_keep_and_tells_signed_zeros_apart():
    jac_f, _ = mixed.scipy.linearized(lambda x: ops.sum(ops.sqrt(x)) + ops.sum(x ** 3))
    x = np.array([1.0, 4.0])
    g = jac_f(x)
    g *= -1.0  # the caller's array
    np.testing.assert_array_equal(jac_f(x.copy()), [3.5, 48.25])
    with np.errstate(divide="ignore", invalid="ignore"):
        assert jac_f(np.array([0.0, 1.0]))[0] == np.inf
        assert jac_f(np.array([-0.0, 1.0]))[0] == -np.inf  # sqrt's slope at -0.0

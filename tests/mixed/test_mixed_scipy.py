"""``jac`` and ``hessp`` with ``scipy.optimize.minimize``.

SciPy's own Rosenbrock derivatives (``rosen_der``, ``rosen_hess_prod``) are the
reference for ours, and every Hessian-free SciPy method must converge with them.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize, rosen, rosen_der, rosen_hess_prod

from dualad import ops
from mixed import hessp, jac

METHODS = ["trust-krylov", "trust-ncg", "Newton-CG"]


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

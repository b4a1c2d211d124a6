"""``scipy.special`` on dualad values: dispatch through ``__array_ufunc__``, the
backends that have the functions, and derivatives against JAX's."""

from __future__ import annotations

import array_api_strict
import numpy as np
import pytest
from _support.golden import assert_close, decode
from _support.jax_peer_cases import SPECIAL_JAX, recorded, special_point

import dualad
import mixed
import reverse
from dualad import Dual, ops

sp = pytest.importorskip("scipy.special")

UFUNCS = ["erf", "erfc", "erfinv", "erfcx", "gamma", "gammaln", "digamma", "psi", "ndtr",
          "log_ndtr", "ndtri", "i0", "i1", "i0e", "i1e", "logit", "expit"]


@pytest.mark.parametrize("name", UFUNCS)
def test_scipy_ufuncs_dispatch_with_values_and_derivatives_in_every_mode(name):
    f, x = getattr(sp, name), special_point(name)
    d = f(Dual(x, np.ones(3)))
    np.testing.assert_allclose(d.primal, f(x), rtol=1e-15)
    fd = (f(x + 1e-6) - f(x - 1e-6)) / 2e-6
    np.testing.assert_allclose(d.tangent, fd, rtol=1e-6)
    np.testing.assert_allclose(reverse.grad(lambda x: f(x).sum())(x), fd, rtol=1e-6)
    # the second derivative, forward over reverse, against differences of the first
    second = (d.tangent - f(Dual(x - 1e-5, np.ones(3))).tangent) / 1e-5
    np.testing.assert_allclose(mixed.hvp(lambda x: f(x).sum(), x, np.ones(3)), second, rtol=1e-3)


def test_binary_special_functions_and_their_zero_conventions():
    """As JAX's: x / y is xlogy's partial in y, also along x = 0 (nan at the origin)."""
    x, y = np.array([0.0, 1.5, -2.0]), np.array([0.0, 2.0, 0.5])
    with np.errstate(divide="ignore", invalid="ignore"):  # log(0) and 0 / 0 at the origin
        out, (gx, gy) = reverse.value_and_grad(lambda x, y: sp.xlogy(x, y).sum(), argnums=(0, 1))(x, y)
    assert out == sp.xlogy(x, y).sum()
    np.testing.assert_allclose(gx[1:], np.log(y[1:]))
    np.testing.assert_array_equal(gy, [np.nan, 1.5 / 2.0, -2.0 / 0.5])
    np.testing.assert_allclose(dualad.jvp(lambda y: sp.xlog1py(x, y), (y,), (np.ones(3),))[1], x / (1 + y))
    np.testing.assert_allclose(dualad.derivative(lambda x: ops.polygamma(1, x))(1.5),
                               float(sp.polygamma(2, 1.5)))


def test_python_floats_stay_floats():
    y, t = dualad.jvp(ops.erf, (0.5,), (1.0,))
    assert type(y) is float and type(t) is float
    assert y == pytest.approx(float(sp.erf(0.5)), rel=1e-15)


def test_a_backend_without_special_functions_says_so():
    x = array_api_strict.asarray([0.5, 1.0])
    with pytest.raises(NotImplementedError, match="erf.*NumPy.*CuPy.*array_api_strict"):
        dualad.jvp(ops.erf, (x,), (x,))


@pytest.mark.parametrize("name", SPECIAL_JAX)
def test_derivatives_match_jax(name):
    """Second derivatives against jax.scipy.special's, recorded by tests/make_jax_peer_golden.py."""
    case = recorded()["special"][name]
    x = decode(case["x"])
    ours = np.diag(dualad.hessian(lambda x: getattr(ops, name)(x).sum())(x))
    assert_close(ours, case["second"], rtol=1e-10, err_msg=name)

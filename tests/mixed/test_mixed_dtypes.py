"""A float32 input whose function promotes to float64 (float64 data, an ``np.float64``
scalar) keeps float32 where JAX and PyTorch do.

A gradient, a VJP, a Jacobian by reverse mode and H v have the dtype of the
input; a JVP and a Jacobian by forward mode have the dtype of the output (the
tangent of a float64 result is float64), as in JAX. The Newton solvers, which
combine gradients and H v with x, then run in float32 throughout: once they
crashed on float32 parameters, from a float64 gradient.
"""

from __future__ import annotations

import numpy as np
import pytest
from _support.backends import BACKENDS, NUMPY, dtype_name, to_numpy

import dualad
import mixed
import reverse
from dualad import ops

X = np.array([0.5, 1.5, -1.0])
C = np.array([1.0, 2.0, 3.0])
A = np.array([[2.0, 0.5, 0.0], [0.5, 3.0, 0.1], [0.0, 0.1, 1.0]])

# Each promotes a float32 x to float64 and has its minimum at x = 1. (The value comes
# first in a product: array_api_strict arrays raise rather than defer to it.)
PROMOTERS = {
    "float64 data": lambda c, a: lambda x: ops.sum((x - 1.0) ** 2 * c + 0.1 * (x - 1.0) ** 4),
    "float64 matrix": lambda c, a: lambda x: ops.sum(ops.tanh(ops.matmul(a, x - 1.0)) ** 2),
    "np.float64 scalar": lambda c, a: lambda x: np.float64(2.0) * ops.sum((x - 1.0) ** 2),
}


def _case(backend, name):
    if name == "np.float64 scalar" and backend is not NUMPY:
        pytest.skip("np.float64 scalars mix with NumPy arrays only")
    f = PROMOTERS[name](backend.asarray(C), backend.asarray(A))
    x = backend.asarray(X, "float32")
    assert dtype_name(f(x)) == "float64", "the case must promote"
    return f, x, backend.asarray(X * 0.0 + 1.0, "float32")


@pytest.mark.parametrize("name", list(PROMOTERS))
@pytest.mark.parametrize("backend", BACKENDS)
def test_reverse_results_have_the_input_dtype(backend, name):
    f, x, v = _case(backend, name)
    assert dtype_name(reverse.grad(f)(x)) == "float32"
    assert dtype_name(reverse.value_and_grad(f)(x)[1]) == "float32"
    assert dtype_name(reverse.jacrev(lambda z: f(z) * z)(x)) == "float32"
    for mode in mixed._hvp.MODES:
        g, hv = mixed.grad_and_hvp(f, x, v, mode=mode)
        assert (dtype_name(g), dtype_name(hv)) == ("float32", "float32"), mode
    t = reverse.Tensor(x, requires_grad=True)
    f(t).backward()
    assert dtype_name(t.grad) == "float32"


@pytest.mark.parametrize("name", list(PROMOTERS))
@pytest.mark.parametrize("backend", BACKENDS)
def test_forward_results_have_the_output_dtype(backend, name):
    f, x, v = _case(backend, name)
    out, t = dualad.jvp(lambda z: f(z) * z, (x,), (v,))
    assert dtype_name(out) == dtype_name(t) == "float64"
    assert dtype_name(dualad.jacfwd(lambda z: f(z) * z)(x)) == "float64"
    out, t = dualad.jvp(lambda z: z * 2.0, (x,), (v,))  # no promotion: float32 throughout
    assert dtype_name(out) == dtype_name(t) == "float32"


@pytest.mark.parametrize("name", list(PROMOTERS))
@pytest.mark.parametrize("solver", [mixed.newton_cg, mixed.trust_region])
@pytest.mark.parametrize("backend", BACKENDS)
def test_newton_solvers_on_float32_parameters(backend, solver, name):
    f, x, _ = _case(backend, name)
    r = solver(f, x, tol=1e-3)
    assert r.success, r.message
    assert dtype_name(r.x) == dtype_name(r.jac) == "float32"
    np.testing.assert_allclose(to_numpy(r.x), 1.0, atol=1e-2)

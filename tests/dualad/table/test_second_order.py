"""Second derivatives from the case table: the exact ``dualad.hessian`` against
central finite differences of ``dualad.jacfwd``, and its symmetry.

Each case is reduced to a scalar ``s(z)`` (a random weighted sum of its
outputs, with all floating inputs packed into one vector ``z``), so every
output and input takes part. (HyperDual against nested Duals runs with the
first-order checks in test_rules.py, on every backend and dtype.)
"""

from __future__ import annotations

import numpy as np
import pytest
from _support.backends import NUMPY, STRICT, to_numpy
from _support.cases import CASES
from _support.harness import FEW, Prepared, params, scalarize
from hypothesis import given
from hypothesis import strategies as st

import dualad

SECOND = [c for c in CASES if c.kind == "diff" and c.second_order]
STEP = 1e-5  # central differences of a gradient in float64: error ~ STEP**2 + 1e-16 / STEP


def check_hessian(case, drawn, backend):
    prep = Prepared(case, drawn, backend, "float64")
    rng = np.random.default_rng(0)
    s, z = scalarize(prep, backend, rng)
    n = z.shape[0]
    if n == 0:
        return
    h = to_numpy(dualad.hessian(s)(z))
    assert h.shape == (n, n), f"hessian has shape {h.shape}, expected {(n, n)}"
    scale = max(1.0, float(np.max(np.abs(h))))
    np.testing.assert_allclose(h, h.T, rtol=1e-9, atol=1e-9 * scale, err_msg="the Hessian is not symmetric")
    v = rng.standard_normal(n)
    vb = backend.asarray(v)
    jac = dualad.jacfwd(s)
    fd = (to_numpy(jac(z + STEP * vb)) - to_numpy(jac(z - STEP * vb))) / (2 * STEP)
    np.testing.assert_allclose(h @ v, fd, rtol=1e-5, atol=1e-5 * max(1.0, float(np.max(np.abs(fd)))),
                               err_msg="hessian(f) v differs from finite differences of jacfwd(f)")


@pytest.mark.parametrize("case, backend, dtype", params("hessian", SECOND, [NUMPY.param], ["float64"]))
@given(data=st.data())
def test_hessian_matches_finite_differences_of_jacfwd(case, backend, dtype, data):
    check_hessian(case, data.draw(case.args, label="args"), backend)


@pytest.mark.parametrize("case, backend, dtype", params("hessian", SECOND, [STRICT.param], ["float64"]))
@FEW
@given(data=st.data())
def test_hessian_on_array_api_strict(case, backend, dtype, data):
    check_hessian(case, data.draw(case.args, label="args"), backend)

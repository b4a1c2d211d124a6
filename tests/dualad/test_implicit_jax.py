"""``custom_root`` and ``custom_linear_solve`` against JAX's ``jax.lax.custom_root`` and
``jax.lax.custom_linear_solve`` on the same problems, solved the same way (Newton, dense
solves): JAX's values and derivatives are recorded, with their inputs, by
tests/make_jax_peer_golden.py, and every mode of ours is compared with them (shape, dtype
and values). The solves are exact (Newton to machine precision, LU), so the tolerance is
float64's 1e-10 throughout (1e-6, a few float32 ulps, for the float32 point).
"""

from __future__ import annotations

import numpy as np
import pytest
from _support import jax_peer_cases as c
from _support.golden import assert_close, decode

import dualad
import mixed
import reverse
from dualad import custom_linear_solve, custom_root

RTOL = {"float64": 1e-10, "float32": 1e-6}


def cube_root(a):
    return c.cube_root(custom_root, a, np, dualad.jacfwd)


def system_root(m, s, p):
    return c.system_root(custom_root, m, s, p, np, dualad.jacfwd)


def linear_solution(a, b, symmetric):
    return c.linear_solution(custom_linear_solve, a, b, symmetric, np, dualad.jacfwd)


@pytest.mark.parametrize("case", c.recorded()["cube_root"],
                         ids=lambda case: f"{case['a']['re'][0]}-{case['a']['dtype']}")
def test_cube_root(case):
    """x**3 = a by Newton: the root, d/da in forward and reverse mode, d2/da2 in four ways."""
    a = decode(case["a"])
    rtol = RTOL[case["a"]["dtype"]]
    assert_close(cube_root(a), case["x"], rtol, err_msg="root")
    for name, first in (("derivative", dualad.derivative), ("jacfwd", dualad.jacfwd),
                        ("reverse.grad", reverse.grad), ("reverse.jacrev", reverse.jacrev)):
        assert_close(first(cube_root)(a), case["first"], rtol, err_msg=name)
    seconds = {"dualad.hessian": dualad.hessian(cube_root)(a),
               "mixed.hessian": mixed.hessian(cube_root)(a),
               "mixed.hvp": mixed.hvp(cube_root, a, np.ones_like(a)),
               "derivative of derivative": dualad.derivative(dualad.derivative(cube_root))(a),
               "grad of grad": reverse.grad(reverse.grad(cube_root))(a)}
    for name, second in seconds.items():
        assert_close(second, case["second"], rtol, err_msg=name)


def test_system_root():
    """m @ x + s x**3 = p by Newton with dense tangent solves: the Jacobians in p and s by
    jacfwd and jacrev, the VJP in (m, s, p), and second derivatives of a loss of the root."""
    case = c.recorded()["system_root"]
    m, s, p, g, w, v = (decode(case[k]) for k in ("m", "s", "p", "g", "w", "v"))
    rtol = RTOL["float64"]
    assert_close(system_root(m, s, p), case["x"], rtol, err_msg="root")
    for name, jac in (("jacfwd", dualad.jacfwd), ("jacrev", reverse.jacrev)):
        assert_close(jac(system_root, argnums=2)(m, s, p), case["jac_p"], rtol, err_msg=f"{name} in p")
        assert_close(jac(system_root, argnums=1)(m, s, p), case["jac_s"], rtol, err_msg=f"{name} in s")
    _, pull = reverse.vjp(system_root, m, s, p)
    for name, got, want in zip("msp", pull(g), case["vjp"]):
        assert_close(got, want, rtol, err_msg=f"VJP in {name}")

    def loss(p):
        return c.implicit_loss(system_root(m, s, p), w)
    assert_close(mixed.hessian(loss)(p), case["hessian_p"], rtol, err_msg="mixed.hessian")
    assert_close(dualad.hessian(loss)(p), case["hessian_p"], rtol, err_msg="dualad.hessian")
    assert_close(mixed.hvp(loss, p, v), case["hvp_p"], rtol, err_msg="mixed.hvp")

    def loss_s(s):
        return c.implicit_loss(system_root(m, s, p), w)
    for name, second in (("mixed.hvp", mixed.hvp(loss_s, s, np.ones_like(s))),
                         ("dualad.hessian", dualad.hessian(loss_s)(s)),
                         ("grad of grad", reverse.grad(reverse.grad(loss_s))(s))):
        assert_close(second, case["second_s"], rtol, err_msg=f"{name} in s")


@pytest.mark.parametrize("name", ["symmetric", "general"])
def test_linear_solve(name):
    """A x = b, positive definite (symmetric=True) and general (transpose_solve): JVPs in b,
    in A's entries and in both, by jvp and by contracting jacfwd's and jacrev's Jacobians,
    and the gradient of a loss of x by reverse.grad and by jacfwd."""
    case = c.recorded()["linear_solve"][name]
    a, b, da, db, w = (decode(case[k]) for k in ("a", "b", "da", "db", "w"))
    rtol = RTOL["float64"]

    def solution(a, b):
        return linear_solution(a, b, name == "symmetric")
    x, jvp_b = dualad.jvp(lambda b: solution(a, b), (b,), (db,))
    assert_close(x, case["x"], rtol, err_msg="solution")
    assert_close(jvp_b, case["jvp_b"], rtol, err_msg="jvp in b")
    assert_close(dualad.jvp(lambda a: solution(a, b), (a,), (da,))[1], case["jvp_a"], rtol,
                 err_msg="jvp in A")
    assert_close(dualad.jvp(solution, (a, b), (da, db))[1], case["jvp_ab"], rtol, err_msg="jvp in both")
    for mode, jac in (("jacfwd", dualad.jacfwd), ("jacrev", reverse.jacrev)):
        ja, jb = jac(solution, argnums=(0, 1))(a, b)
        assert_close(jb @ db, case["jvp_b"], rtol, err_msg=f"{mode} in b")
        assert_close(np.einsum("ijk,jk->i", ja, da), case["jvp_a"], rtol, err_msg=f"{mode} in A")

    def loss(a, b):
        return c.implicit_loss(solution(a, b), w)
    for mode, grad in (("reverse.grad", reverse.grad), ("jacfwd", dualad.jacfwd)):
        ga, gb = grad(loss, argnums=(0, 1))(a, b)
        assert_close(ga, case["grad_a"], rtol, err_msg=f"{mode} in A")
        assert_close(gb, case["grad_b"], rtol, err_msg=f"{mode} in b")

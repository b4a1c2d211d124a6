"""examples/sparse_newton.py runs: Newton with the sparse Hessian and SciPy's trust-constr with
``hess=`` reach the same minimizer, and it solves the PDE it stands for."""

from __future__ import annotations

import doctest

import numpy as np
from _support.examples import load_example


def test_newton_and_trust_constr_agree(capsys):
    example = load_example("sparse_newton")
    newton = example.main(["--side", "12"])
    out = capsys.readouterr().out
    assert "5 colours" in out and "iteration" in out
    assert newton["grad_norm"] < 1e-10 and newton["iterations"] <= 8
    trust = example.main(["--side", "12", "--method", "trust-constr"])
    np.testing.assert_allclose(trust["x"], newton["x"], atol=1e-8)
    assert doctest.testmod(example).failed == 0


def test_the_minimizer_solves_the_pde():
    """-lap u + exp(u) = s, written out with the 5-point stencil (zero boundary values)."""
    example = load_example("sparse_newton")
    side = 12
    x, _ = example.newton(example.make_energy(side), np.zeros(side * side), out=lambda *a: None)
    h = 1.0 / (side + 1)
    u = np.pad(x.reshape(side, side), 1)
    lap = (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1]) / h ** 2
    t = np.linspace(h, 1.0 - h, side)
    source = 50.0 * np.exp(-50.0 * ((t[:, None] - 0.5) ** 2 + (t[None, :] - 0.5) ** 2))
    np.testing.assert_allclose(-lap + np.exp(u[1:-1, 1:-1]), source, rtol=1e-8, atol=1e-8)

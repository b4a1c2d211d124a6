"""The residual of a compiled derivative through a solution (closed in the trace) has its
``dF/dx`` built by a compiled program of its own from its second point: each matrix equal
to the one forward mode builds eagerly and to the Jacobian written by hand, on both sides
of a branch the residual takes on its numbers; the derivatives of the replays equal
eager ones; eager calls and ``vmap``'s elements compile nothing."""

from __future__ import annotations

import numpy as np
import pytest

import dualad
import dualad._implicit.operators as operators
import reverse
from dualad._implicit.closure import Closed
from dualad._implicit.operators import Jacobian
from dualad.scipy.optimize import minimize, root

A = np.array([[4.0, 1.0, 0.5], [0.3, 3.5, 1.0], [0.0, 0.7, 5.0]])
P = np.array([0.7, -1.2, 0.4])


def branching(x):
    """``x^3 + A x - P`` where ``x[0] > 0``, ``x^3 - A x - P`` elsewhere: a guard in a trace."""
    if x[0] > 0:
        return x ** 3 + A @ x - P
    return x ** 3 - A @ x - P


def traced(fn):
    closed = Closed(fn, [], "test", "f")
    closed.traced = True  # as a compile trace that reaches it sets it
    return closed


@pytest.fixture
def residual_programs(monkeypatch):
    """The compiled residuals made, in order."""
    made = []

    def spy(f):
        made.append(compiled_on_repeat(f))
        return made[-1]
    compiled_on_repeat = operators.compiled_on_repeat
    monkeypatch.setattr(operators, "compiled_on_repeat", spy)
    return made


def test_a_traced_residuals_matrices_replay_a_program_equal_to_eager_mode():
    closed = traced(branching)
    rng = np.random.default_rng(0)
    points = rng.standard_normal((12, 3))
    points[::3, 0] = -np.abs(points[::3, 0])  # both sides of the branch, after the trace too
    for i, x in enumerate(points):
        got = Jacobian(closed)(x).matrix()
        want = np.diag(3 * x ** 2) + (A if x[0] > 0 else -A)
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-15, err_msg=f"point {i}")
    assert closed.derived["matrix"].compiled.stats["traces"] == 2  # a program per branch


def test_a_point_of_transformed_values_gives_an_eager_matrix():
    closed = traced(branching)
    x = np.array([0.5, 0.1, -0.3])
    for _ in range(3):
        # the point holds Duals (a jvp of the entry's rule): never traced
        got = dualad.jvp(lambda y: Jacobian(closed)(y).matrix(), (x,), (np.ones(3),))[1]
        np.testing.assert_allclose(got, np.diag(6 * x), rtol=1e-14)
    assert "matrix" not in closed.derived


def gradient(x, q):
    """The gradient of ``minimize``'s objective below, for SciPy's BFGS."""
    return 4 * (x - q) ** 3 + 2 * x + np.array([x[1], x[0], 0.0])


def solution(problem):
    def x_of(p):
        if problem == "root":
            return root(lambda x, q: x ** 3 + A @ x - q, np.zeros(3), args=(p,), tol=1e-13).x
        return minimize(lambda x, q: ((x - q) ** 4).sum() + (x ** 2).sum() + x[0] * x[1],
                        np.zeros(3), args=(p,), method="BFGS", jac=gradient).x
    return x_of


@pytest.mark.parametrize("problem", ["root", "minimize"])
def test_a_compiled_gradient_through_a_solution_equals_eager_at_every_point(problem,
                                                                            residual_programs):
    x_of = solution(problem)
    grad = reverse.grad(lambda p: (x_of(p) * np.arange(1.0, 4.0)).sum())
    compiled = dualad.jit(grad)
    rng = np.random.default_rng(1)
    for i in range(30):
        p = P + 0.3 * rng.standard_normal(3)
        np.testing.assert_allclose(compiled(p), grad(p), rtol=1e-11, atol=1e-13,
                                   err_msg=f"call {i}")
    assert compiled.stats["traces"] == 1 and compiled.stats["replays"] > 10
    residual, = residual_programs  # the trace's, whose matrices the replays took
    assert residual.compiled.stats["traces"] == 1


@pytest.mark.parametrize("problem", ["root", "minimize"])
def test_eager_derivatives_and_vmaps_compile_no_residual(problem, residual_programs):
    grad = reverse.grad(lambda p: solution(problem)(p).sum())
    ps = P + 0.1 * np.random.default_rng(2).standard_normal((6, 3))
    np.testing.assert_allclose(dualad.vmap(grad)(ps), np.stack([grad(p) for p in ps]),
                               rtol=1e-13)
    assert residual_programs == []

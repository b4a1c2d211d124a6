"""The residual of a compiled derivative through a solution (closed in the trace) builds
its ``dF/dx`` by a program of its own, traced with the outer program and replayed at each
of its replays: each matrix equal to the one forward mode builds eagerly and to the
Jacobian written by hand, on both sides of a branch the residual takes on its numbers;
the derivatives of the replays (gradients, ``jacfwd``, H v; residuals that close over
arrays or take ``args``; float32) equal eager ones; eager calls and ``vmap`` outside a
program compile nothing."""

from __future__ import annotations

import numpy as np
import pytest

import dualad
import dualad._implicit.operators as operators
import mixed
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
    """The residuals' programs made, in order."""
    made = []

    def spy(f, **options):
        made.append(jit(f, **options))
        return made[-1]
    jit = operators.jit
    monkeypatch.setattr(operators, "jit", spy)
    return made


def test_a_traced_residuals_matrices_replay_a_program_equal_to_eager_mode():
    closed = traced(branching)
    rng = np.random.default_rng(0)
    points = rng.standard_normal((12, 3))
    points[::3, 0] = -np.abs(points[::3, 0])  # both sides of the branch
    for i, x in enumerate(points):
        got = Jacobian(closed)(x).matrix()
        want = np.diag(3 * x ** 2) + (A if x[0] > 0 else -A)
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-15, err_msg=f"point {i}")
    stats = closed.derived["matrix"].stats
    assert stats["traces"] == 2 and stats["replays"] == len(points) - 2  # a program per branch


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


def solution(problem, dtype=np.float64):
    """``x*(p)``: by ``root`` (the residual closing over ``A``, ``p`` in ``args``) or by
    ``minimize`` (the objective closing over ``p``)."""
    a = A.astype(dtype)

    def x_of(p):
        if problem == "root":
            return root(lambda x, q: x ** 3 + a @ x - q, np.zeros(3, dtype), args=(p,), tol=1e-13).x
        return minimize(lambda x: ((x - p) ** 4).sum() + (x ** 2).sum() + x[0] * x[1],
                        np.zeros(3, dtype), method="BFGS", jac=lambda x: gradient(x, p)).x
    return x_of


@pytest.mark.parametrize("problem", ["root", "minimize"])
def test_compiled_derivatives_through_a_solution_equal_eager_ones_at_every_point(
        problem, residual_programs):
    x_of = solution(problem)
    derivatives = {
        "grad": reverse.grad(lambda p: (x_of(p) * np.arange(1.0, 4.0)).sum()),
        "jacfwd": dualad.jacfwd(x_of),
        "hvp": lambda p: mixed.hvp(lambda q: (x_of(q) ** 2).sum(), p, np.array([1.0, -2.0, 0.5]))}
    rng = np.random.default_rng(1)
    points = P + 0.3 * rng.standard_normal((8, 3))
    for name, derivative in derivatives.items():
        compiled, made = dualad.jit(derivative), len(residual_programs)
        for i, p in enumerate(points):
            np.testing.assert_allclose(compiled(p), derivative(p), rtol=1e-10, atol=1e-12,
                                       err_msg=f"{name}, call {i}")
            if i == 0:  # traced with the program, not at a replay
                assert [r.stats["traces"] for r in residual_programs[made:]] == [1], name
        assert compiled.stats["traces"] == 1 and compiled.stats["replays"] > 0, name
        assert sum(r.stats["replays"] for r in residual_programs[made:]) > 0, name


def test_a_residual_that_reaches_an_element_of_a_traced_array_is_compiled(residual_programs):
    def x_of(p):
        s = p[0]  # a NumPy scalar at the entry's impl
        return root(lambda x: x ** 3 + s * (A @ x) - p, np.zeros(3), tol=1e-13).x
    grad = reverse.grad(lambda p: x_of(p).sum())
    compiled = dualad.jit(grad)
    for p in (P + 2.0, P + 2.5, P + 3.0, P + 2.2):
        np.testing.assert_allclose(compiled(p), grad(p), rtol=1e-10, atol=1e-12)
    residual, = residual_programs
    assert residual.stats["traces"] == 1 and residual.stats["replays"] == 3


def test_a_float32_solution_compiled_stays_float32():
    grad = reverse.grad(lambda p: solution("root", np.float32)(p).sum())
    compiled = dualad.jit(grad)
    for p in (P, P + 0.1, P - 0.2):
        got = compiled(p.astype(np.float32))
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, grad(p.astype(np.float32)), rtol=1e-5)


@pytest.mark.parametrize("problem", ["root", "minimize"])
def test_eager_derivatives_and_vmaps_compile_no_residual(problem, residual_programs):
    grad = reverse.grad(lambda p: solution(problem)(p).sum())
    ps = P + 0.1 * np.random.default_rng(2).standard_normal((6, 3))
    np.testing.assert_allclose(dualad.vmap(grad)(ps), np.stack([grad(p) for p in ps]),
                               rtol=1e-13)
    assert residual_programs == []


def test_threads_share_a_compiled_gradient_through_a_solution():
    """The residual's places (its closure) are the threads' in common: each call puts its
    values there in turn, and every gradient equals the eager one."""
    import threading
    x_of = solution("root")
    grad = reverse.grad(lambda p: x_of(p).sum())
    compiled = dualad.jit(grad)
    compiled(P)
    errors, results = [], {}

    def work(i):
        try:
            for j in range(10):
                p = P + 0.01 * (i + j)
                results[i, j] = (compiled(p), p)
        except Exception as err:  # noqa: BLE001 - collected, reported below
            errors.append(err)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for got, p in results.values():
        np.testing.assert_allclose(got, grad(p), rtol=1e-10, atol=1e-12)

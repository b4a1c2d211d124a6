"""``custom_root``'s JVP of a ``jacfwd`` chunk: its tangents are one stack of right-hand
sides, given at once to a ``tangent_solve`` that says it takes a stack (``stacked = True``)
and one at a time to any other; both against each other, against one JVP per direction and
against central differences, to first and second order."""

from __future__ import annotations

import numpy as np
import pytest

import dualad
import reverse
from dualad import custom_root

A = np.array([[4.0, 1.0, 0.5, 0.0], [0.3, 3.5, 1.0, 0.2], [0.0, 0.7, 5.0, 1.0],
              [0.4, 0.0, 0.6, 3.0]])
P = np.array([0.7, -1.2, 0.4, 2.0])


def newton(f, x):
    for _ in range(40):
        x = x - np.linalg.solve(dualad.jacfwd(f)(x), f(x))
    return x


def dense_solver(stacked: bool, calls: list):
    """A tangent solve that builds ``g``'s matrix from its products and solves with it,
    noting the shape of every right-hand side it is given."""
    def tangent_solve(g, y):
        calls.append(np.shape(y))
        n = np.shape(y)[-1]
        m = np.stack([g(e) for e in np.eye(n)], axis=1)
        return np.linalg.solve(m, y.T).T if np.ndim(y) == 2 else np.linalg.solve(m, y)
    tangent_solve.stacked = stacked
    return tangent_solve


def solution(tangent_solve):
    def x_of(p):
        return custom_root(lambda x: x ** 3 + A @ x - p * p[::-1], np.zeros(4), newton,
                           tangent_solve)
    return x_of


def central(f, x, h=1e-4):
    return np.stack([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.size)], axis=-1)


@pytest.mark.parametrize("stacked", [True, False])
def test_a_chunk_is_one_call_of_a_stacked_solve_and_one_per_tangent_otherwise(stacked):
    calls = []
    jac = dualad.jacfwd(solution(dense_solver(stacked, calls)))(P)
    assert calls == ([(4, 4)] if stacked else [(4,)] * 4)
    columns = [dualad.jvp(solution(dense_solver(stacked, [])), (P,), (e,))[1] for e in np.eye(4)]
    np.testing.assert_allclose(jac, np.stack(columns, axis=-1), rtol=1e-13, atol=1e-15)
    x = solution(dense_solver(stacked, []))(P)
    # the implicit function theorem by hand: (3 x**2 + A) dx = d(p * p[::-1])
    want = np.linalg.solve(np.diag(3 * x ** 2) + A, np.diag(P[::-1]) + np.diag(P)[:, ::-1])
    np.testing.assert_allclose(jac, want, rtol=1e-12)
    np.testing.assert_allclose(jac, central(solution(dense_solver(stacked, [])), P), rtol=1e-7)


@pytest.mark.parametrize("stacked", [True, False])
def test_the_stacked_entry_differentiated_again_equals_finite_differences(stacked):
    x_of = solution(dense_solver(stacked, []))
    want = central(dualad.jacfwd(x_of), P)
    for name, second in (("jacfwd of jacfwd", dualad.jacfwd(dualad.jacfwd(x_of))),
                         ("jacrev of jacfwd", reverse.jacrev(dualad.jacfwd(x_of)))):
        got = second(P)
        assert got.shape == (4, 4, 4), name
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9, err_msg=name)

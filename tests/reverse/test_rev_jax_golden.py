"""reverse against JAX's own numbers (recorded by make_jax_golden.py in
jax_golden.json, so no JAX is needed here), and the cost of ``jacrev`` counted
in walks of the tape (issue 23 §3)."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
from _support import jax_cases as c

import dualad
import reverse
import reverse._functional as functional

GOLDEN = json.loads((pathlib.Path(__file__).parent / "jax_golden.json").read_text())


def trajectory(p):
    return c.trajectory(np, p)


def two_args(w, b):
    return c.two_args(np, w, b)


@pytest.mark.parametrize("transform", [reverse.jacrev, reverse.jacobian, dualad.jacfwd])
def test_trajectory_jacobian_equals_jax(transform):
    got = transform(trajectory)(np.array(c.TRAJECTORY_POINT))
    assert got.shape == (60, 3, 2)
    np.testing.assert_allclose(got, GOLDEN["trajectory_jacrev"], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("chunk_size", [None, 1, 2, 3])
@pytest.mark.parametrize("transform", [reverse.jacrev, reverse.jacobian])
def test_pytree_jacobian_equals_jax(transform, chunk_size):
    w, b = np.array(c.TWO_ARGS_POINT[0]), c.TWO_ARGS_POINT[1]
    got = transform(two_args, argnums=(0, 1), chunk_size=chunk_size)(w, b)
    want = GOLDEN["two_args_jacrev"]
    assert sorted(got) == sorted(want)
    for key in want:
        assert len(got[key]) == len(want[key])
        for block, expected in zip(got[key], want[key]):
            assert np.shape(block) == np.shape(expected)  # assert_allclose would broadcast
            np.testing.assert_allclose(block, expected, rtol=1e-13, atol=1e-15)


def test_jacrev_of_a_float_of_a_float_is_a_float():
    assert reverse.jacrev(lambda t: t * t)(2.0) == 4.0
    assert type(reverse.jacrev(lambda t: t * t)(2.0)) is float  # as jacfwd and derivative give


@pytest.mark.parametrize("chunk_size, walks", [(None, 1), (180, 1), (50, 4), (179, 2)])
def test_jacrev_walks_the_tape_once_per_chunk_of_outputs(monkeypatch, chunk_size, walks):
    calls = []
    real = functional.run_backward
    monkeypatch.setattr(functional, "run_backward", lambda *a, **k: calls.append(1) or real(*a, **k))
    p = np.array(c.TRAJECTORY_POINT)
    got = reverse.jacrev(trajectory, chunk_size=chunk_size)(p)
    assert len(calls) == walks
    np.testing.assert_allclose(got, dualad.jacfwd(trajectory)(p), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("n_out, modes", [(2, ["Tensor"]), (4, ["Tensor"]), (8, ["Tensor", "Dual"])])
def test_jacobian_takes_reverse_mode_unless_the_output_is_larger(n_out, modes):
    """Reverse mode's tape, where the output has no more entries than the input;
    else forward mode, which runs f once more."""
    seen = []

    def f(x):
        seen.append("Tensor" if isinstance(x, reverse.Tensor) else type(x).__name__)
        return np.concatenate([x, x ** 2])[:n_out] * x[0]

    x = np.arange(1.0, 5.0)
    got = reverse.jacobian(f)(x)
    assert seen == modes
    np.testing.assert_array_equal(got, dualad.jacfwd(f)(x))
    np.testing.assert_array_equal(got, reverse.jacrev(f)(x))


def test_jacrev_under_other_transforms():
    """The batched walk nests: a Hessian as jacfwd of jacrev and as jacrev of grad."""
    def f(x):
        return np.sum(np.sin(x) * x ** 2)

    x = np.array([0.3, -0.4, 1.1])
    want = dualad.hessian(f)(x)
    np.testing.assert_allclose(dualad.jacfwd(reverse.jacrev(f))(x), want, rtol=1e-12)
    np.testing.assert_allclose(reverse.jacrev(reverse.grad(f))(x), want, rtol=1e-12)
    np.testing.assert_allclose(reverse.jacrev(reverse.jacrev(f))(x), want, rtol=1e-12)


def test_jacrev_of_an_empty_output_and_a_bad_chunk_size():
    x = np.ones(3)
    assert reverse.jacrev(lambda x: x[:0])(x).shape == (0, 3)
    with pytest.raises(ValueError, match="chunk_size must be an int >= 1, got 0"):
        reverse.jacrev(lambda x: x * 2.0, chunk_size=0)(x)

"""examples/taylor_ode.py runs, and its Taylor steps converge as their order says."""

from __future__ import annotations

import doctest

from _support.examples import load_example


def test_taylor_ode_example(capsys):
    example = load_example("taylor_ode")
    rows = example.main(["--order", "6", "--size", "50", "--steps", "10"])
    assert "derivatives of y at 0" in capsys.readouterr().out
    errors = [r["error"] for r in rows]
    assert all(b < a / 5 for a, b in zip(errors, errors[1:])), errors  # h = 0.2: about h per order
    assert errors[-1] < 1e-7
    assert doctest.testmod(example).failed == 0

"""``dualad.jet`` against the numbers ``jax.experimental.jet`` recorded in
jax_jet_golden.json (make_jax_jet_golden.py regenerates it), on functions
whose every primitive has a rule in JAX's jet (tests/_support/jet_functions.py)."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
from _support.jet_functions import FUNCTIONS, ORDER, inputs

import dualad

GOLDEN = json.loads((pathlib.Path(__file__).resolve().parent / "jax_jet_golden.json").read_text())
CASES = {case["name"]: case for case in GOLDEN["cases"]}


def test_the_golden_file_covers_every_function():
    assert set(CASES) == set(FUNCTIONS) and GOLDEN["order"] == ORDER


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_jet_matches_jax(name):
    primals, series = inputs(name)
    f = FUNCTIONS[name]
    y0, ys = dualad.jet(lambda *a: f(np, *a), tuple(primals), tuple(series))
    want = CASES[name]
    assert np.shape(y0) == np.shape(want["primal"])  # assert_allclose would broadcast
    np.testing.assert_allclose(y0, want["primal"], rtol=1e-12)
    assert len(ys) == ORDER
    for k, (got, expected) in enumerate(zip(ys, want["series"])):
        assert np.shape(got) == np.shape(expected), f"term {k + 1} of {name}"
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10,
                                   err_msg=f"term {k + 1} of {name} (jax {GOLDEN['jax']})")

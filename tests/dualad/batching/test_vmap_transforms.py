"""``vmap`` of every derivative transform against JAX's ``vmap`` of the same
transform: shape, dtype and numbers (issue 34: ``vmap(derivative(f))`` gave a
(3, 3) result where JAX gives (3,)). JAX's results are recorded in
vmap_transforms_golden.json by make_vmap_transforms_golden.py."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
from _support.vmap_transforms import CASES, DTYPES, X, dualad_kit, vector

import dualad
from dualad._base.tree import flatten

GOLDEN = json.loads((pathlib.Path(__file__).parent / "vmap_transforms_golden.json").read_text())
RTOL = {"float64": 1e-12, "float32": 2e-5}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(CASES))
def test_vmap_of_each_transform_equals_jax(name, dtype):
    got = flatten(CASES[name](dualad_kit(), lambda a: np.asarray(a, dtype=dtype)))[0]
    want = GOLDEN[f"{name} [{dtype}]"]
    assert len(got) == len(want), f"{name}: {len(got)} outputs, JAX gives {len(want)}"
    for leaf, ref in zip(got, want):
        leaf = np.asarray(leaf)
        assert (list(leaf.shape), str(leaf.dtype)) == (ref["shape"], ref["dtype"]), name
        np.testing.assert_allclose(leaf, np.asarray(ref["value"]), rtol=RTOL[dtype], atol=RTOL[dtype])


def test_the_golden_file_covers_every_case():
    assert {f"{n} [{d}]" for n in CASES for d in DTYPES} == set(GOLDEN) - {"jax"}


def test_sparse_jacfwd_under_vmap_says_what_to_take_instead():
    with pytest.raises(TypeError, match=r"sparse_jacfwd: x is batched by dualad.vmap.*vmap\(jacfwd\(f\)\)"):
        dualad.vmap(dualad.sparse_jacfwd(lambda x: vector(np, x)))(X)

"""The compile examples run, small: their replays equal eager evaluation and optimization
shortens the gradient's program."""

import inspect

import pytest
from _support.examples import load_example

from dualad._program.passes import fusion
from dualad._staging.choice import MOST


def test_static_graph_example_replays_as_eager():
    module = load_example("compile_static_graph")
    result = module.main(n=50, verbose=False)
    for graph in result.values():
        assert graph["worst"] == 0.0
        stats = graph["stats"]  # one trace, then replays, and eager calls only as measured
        assert stats["traces"] == 1 and stats["replays"] >= 4 and stats["chosen"] is not None
        assert stats["eager"] <= 1 + MOST or stats["chosen"].startswith("eager")  # the eager calls timed
    assert result["gradient"]["after"] < result["gradient"]["before"]


def test_fuse_and_preallocate_example_replays_as_eager():
    module = load_example("compile_fuse_and_preallocate")
    result = module.main(n=70_000, verbose=False)
    assert result["worst"] == 0.0
    assert result["optimized"] < result["traced"]
    assert result["buffers"] + result["kernels"] >= 2  # planned buffers, or fused kernels


def test_fuse_and_preallocate_example_fuses_at_its_size_and_says_what_it_measured(capsys):
    """Its default size fuses (it printed "0 of them fused kernels" at 1e5), fused and unfused
    replays run on the same executor (its "compiled" was Numba's loops, its "fused" NumPy's
    calls), and the sentence it ends with is what its own timings say."""
    pytest.importorskip("numexpr")
    module = load_example("compile_fuse_and_preallocate")
    assert inspect.signature(module.main).parameters["n"].default >= fusion.MIN_SIZE
    result = module.main(n=fusion.MIN_SIZE + 1, verbose=True)  # x[1:] of MIN_SIZE: the least that fuses
    out = capsys.readouterr().out
    assert result["worst"] == 0.0
    assert result["kernels"] >= 1 and f"{result['kernels']} of them fused kernels" in out
    assert result["executors"]["unfused"] == result["executors"]["fused"] == "numpy"
    ratio = result["fused_over_f"] / result["unfused_over_f"]
    said = out.strip().splitlines()[-1]
    assert f"took {ratio:.2f} times the unfused replay's time" in said
    if ratio < 0.9:
        assert said.endswith("it paid.")
    elif ratio > 1.1:
        assert said.endswith("it did not pay.")
    else:
        assert "no difference" in said

"""The compile examples run, small: their replays equal eager evaluation and optimization
shortens the gradient's program."""

from _support.examples import load_example


def test_static_graph_example_replays_as_eager():
    module = load_example("compile_static_graph")
    result = module.main(n=50, verbose=False)
    for graph in result.values():
        assert graph["worst"] == 0.0
        assert graph["stats"]["eager"] == 0 and graph["stats"]["replays"] >= 4
    assert result["gradient"]["after"] < result["gradient"]["before"]


def test_fuse_and_preallocate_example_replays_as_eager():
    module = load_example("compile_fuse_and_preallocate")
    result = module.main(n=70_000, verbose=False)
    assert result["worst"] == 0.0
    assert result["optimized"] < result["traced"]
    assert result["buffers"] + result["kernels"] >= 2  # planned buffers, or fused kernels

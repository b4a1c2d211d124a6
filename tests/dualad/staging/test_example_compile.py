"""The compile examples run, small: their replays equal eager evaluation and optimization
shortens the gradient's program."""

import importlib.util
import pathlib

EXAMPLE = pathlib.Path(__file__).resolve().parents[3] / "examples" / "compile_static_graph.py"


def test_static_graph_example_replays_as_eager():
    spec = importlib.util.spec_from_file_location("compile_static_graph", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.main(n=50, verbose=False)
    for graph in result.values():
        assert graph["worst"] == 0.0
        assert graph["stats"]["eager"] == 0 and graph["stats"]["replays"] >= 4
    assert result["gradient"]["after"] < result["gradient"]["before"]


def test_fuse_and_preallocate_example_replays_as_eager():
    path = EXAMPLE.parent / "compile_fuse_and_preallocate.py"
    spec = importlib.util.spec_from_file_location("compile_fuse_and_preallocate", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.main(n=70_000, verbose=False)
    assert result["worst"] == 0.0
    assert result["optimized"] < result["traced"]
    assert result["buffers"] + result["kernels"] >= 2  # planned buffers, or fused kernels

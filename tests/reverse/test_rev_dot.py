"""``to_dot``: the recorded graph as Graphviz DOT text."""

import re
import shutil
import subprocess

import numpy as np
import pytest

from dualad import ops
from reverse import Function, Tensor, to_dot


def _edges(dot):
    return re.findall(r"^\s+(\w+) -> (\w+)", dot, flags=re.M)


def _labels(dot):
    return dict(re.findall(r'^\s+(\w+) \[label="([^"]*)"', dot, flags=re.M))


def test_nodes_edges_and_labels():
    x = Tensor(np.ones((2, 3), dtype=np.float32), requires_grad=True)
    w = Tensor(np.ones((3, 4), dtype=np.float32), requires_grad=True)
    y = ops.tanh(x @ w).sum()
    dot = to_dot(y)
    assert dot.startswith("digraph tape {") and dot.rstrip().endswith("}")
    labels = _labels(dot)
    assert labels["leaf0"] == r"leaf\n(2, 3) float32"
    assert labels["leaf1"] == r"leaf\n(3, 4) float32"
    assert [labels[f"op{k}"] for k in range(3)] == [
        r"matmul\n(2, 4) float32", r"tanh\n(2, 4) float32", r"sum\n() float32"]
    assert sorted(_edges(dot)) == sorted([("leaf0", "op0"), ("leaf1", "op0"), ("op0", "op1"),
                                          ("op1", "op2")])
    assert "op2 [" in dot and "peripheries=2" in dot.split("op2 [", 1)[1].split("\n")[0]


def test_constants_are_not_drawn_and_fan_out_is():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    h = x * np.array([3.0, 4.0])  # the constant operand has no node
    y = (h * h + h).sum()
    dot = to_dot(y)
    labels = _labels(dot)
    assert sum(lbl.startswith("leaf") for lbl in labels.values()) == 1
    ops_ = [lbl.split("\\n")[0] for k, lbl in sorted(labels.items()) if k.startswith("op")]
    assert sorted(ops_) == ["add", "multiply", "multiply", "sum"]
    assert ("op0", "op1") in _edges(dot)
    assert _edges(dot).count(("op0", "op1")) == 2  # h * h uses h twice


def test_multiple_outputs_label_the_edge_with_the_output_index():
    class SinCos(Function):
        @staticmethod
        def forward(ctx, x):
            return np.sin(x), np.cos(x)

        @staticmethod
        def backward(ctx, a, b):
            return a

    x = Tensor(np.ones(3), requires_grad=True)
    s, c = SinCos.apply(x)
    dot = to_dot((s * c).sum())
    labels = _labels(dot)
    assert labels["op0"] == r"SinCos\n(3,) float64\n(3,) float64"
    assert 'op0 -> op1 [label="0"];' in dot and 'op0 -> op1 [label="1"];' in dot


def test_leaf_and_constant_tensors():
    assert 'label="leaf\\n(2,) float64"' in to_dot(Tensor(np.ones(2), requires_grad=True))
    assert 'label="constant\\n() float"' in to_dot(Tensor(1.0))
    with pytest.raises(TypeError, match="reverse.Tensor"):
        to_dot(np.ones(2))


def test_a_deep_graph_is_drawn_without_recursion():
    x = Tensor(1.0, requires_grad=True)
    y = x
    for _ in range(20_000):
        y = y + 1.0
    dot = to_dot(y)
    assert dot.count("->") == 20_000
    assert f"op{19_999} [" in dot


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_graphviz_accepts_the_text():
    x = Tensor(np.ones(2), requires_grad=True)
    subprocess.run(["dot", "-Tsvg"], input=to_dot((ops.exp(x) * x).sum()), text=True,
                   check=True, capture_output=True)


def test_shapes_are_known_after_backward_frees_the_graph():
    for retain in (False, True):
        x = Tensor(np.ones(3), requires_grad=True)
        y = (ops.sin(x) * 2.0).sum()
        y.backward(retain_graph=retain)
        labels = _labels(to_dot(y))
        assert labels["op2"] == r"sum\n() float64"
        assert labels["op0"] == r"sin\n(3,) float64"

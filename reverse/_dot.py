"""``to_dot``: the recorded graph behind a tensor, as Graphviz DOT text."""

from __future__ import annotations

from dualad.interpreter import aval
from reverse._tape import Node, reachable
from reverse._tensor import Tensor

__all__ = ["to_dot"]


def _aval_text(av: tuple) -> str:
    shape, dtype = av
    name = getattr(dtype, "__name__", None) or str(dtype)
    return f"{tuple(shape)} {name}"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(tensor: Tensor, name: str = "tape") -> str:
    """The graph of recorded operations that ``tensor`` depends on, in DOT.

    One box per recorded primitive application (its name, and the shape and
    dtype of each output), one ellipse per leaf tensor that requires grad
    (its shape and dtype), and an edge from each input to the operation that
    consumed it; the output tensor is drawn with a double border. The walk
    is iterative, so graphs of any depth can be drawn. Render the text with
    Graphviz, e.g. ``dot -Tsvg``.

    Parameters
    ----------
    tensor : Tensor
        The output whose graph is drawn.
    name : str
        The name of the DOT digraph.

    Returns
    -------
    str
        DOT source text.

    Examples
    --------
    >>> import numpy as np
    >>> from reverse import Tensor, to_dot
    >>> x = Tensor(np.ones(3), requires_grad=True)
    >>> print(to_dot((np.sin(x) * 2.0).sum()))
    digraph tape {
      node [fontname="monospace"];
      leaf0 [label="leaf\\n(3,) float64", shape=ellipse];
      op0 [label="sin\\n(3,) float64", shape=box];
      op1 [label="multiply\\n(3,) float64", shape=box];
      op2 [label="sum\\n() float64", shape=box, peripheries=2];
      leaf0 -> op0;
      op0 -> op1;
      op1 -> op2;
    }
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dot: tensor must be a reverse.Tensor, got {type(tensor).__name__}")
    lines = [f"digraph {name} {{", '  node [fontname="monospace"];']
    root = tensor._node
    if root is None:
        kind = "leaf" if tensor.requires_grad else "constant"
        lines.append(f"  leaf0 [label={_quote(kind + chr(10) + _aval_text(aval(tensor.value)))}, "
                     "shape=ellipse, peripheries=2];")
        lines.append("}")
        return "\n".join(lines)
    ordered = reachable([root])
    names = {id(n): f"op{k}" for k, n in enumerate(ordered)}
    # Leaves are numbered in the order their first consumer ran.
    leaf_names: dict[int, str] = {}
    leaves: dict[int, Tensor] = {}
    for n in ordered:
        for p in n.parents:
            if p is not None and not isinstance(p[0], Node) and id(p[0]) not in leaf_names:
                leaf_names[id(p[0])] = f"leaf{len(leaf_names)}"
                leaves[id(p[0])] = p[0]
    for key, label in leaf_names.items():
        leaf = leaves[key]
        lines.append(f"  {label} [label={_quote('leaf' + chr(10) + _aval_text(aval(leaf.value)))}, "
                     "shape=ellipse];")
    for n in ordered:
        outs = "\n".join(_aval_text(av) for av in n.out_avals)
        extra = ", peripheries=2" if n is root else ""
        lines.append(f"  {names[id(n)]} [label={_quote(n.prim.name + chr(10) + outs)}, shape=box{extra}];")
    for n in ordered:
        for p in n.parents:
            if p is None:
                continue
            parent, index = p
            if isinstance(parent, Node):
                port = f' [label="{index}"]' if parent.n_out > 1 else ""
                lines.append(f"  {names[id(parent)]} -> {names[id(n)]}{port};")
            else:
                lines.append(f"  {leaf_names[id(parent)]} -> {names[id(n)]};")
    lines.append("}")
    return "\n".join(lines)

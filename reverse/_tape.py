"""Tape records: one ``Node`` per primitive applied to values that require grad.

A node holds the primitive, its parameters, edges to the nodes (or leaf
Tensors) that produced its inputs, and the residuals its VJP needs; not a
closure. Nodes are numbered in program order, which is all the backward
walk needs to visit them in a valid order without recursion.
"""

from __future__ import annotations

import itertools
from typing import Any

from dualad.extend import Primitive

_sequence = itertools.count()


class Node:
    """The record of one primitive application."""

    # ``where`` (the recording stack, under reverse.detect_anomaly) is set only in
    # anomaly mode: left unset, the slot costs a node no time.
    __slots__ = ("prim", "params", "parents", "needs", "res", "seq", "n_out", "out_avals",
                 "versions", "hooks", "freed", "where", "__weakref__")

    def __init__(self, prim: Primitive, params: dict, parents: tuple, needs: tuple, res: Any,
                 n_out: int, out_avals: tuple, versions: tuple):
        self.prim = prim
        self.params = params
        self.parents = parents  # per input: None, or (Node | leaf Tensor, output index)
        self.needs = needs  # per input: whether a cotangent flows to it
        self.res = res
        self.seq = next(_sequence)
        self.n_out = n_out
        self.out_avals = out_avals  # (shape, dtype) per output
        self.versions = versions  # ((version counter, version when saved, input index), ...)
        self.hooks: dict[int, list] | None = None
        self.freed = False

    def __repr__(self) -> str:
        return f"<Node {self.prim.name} #{self.seq}>"


def reachable(roots) -> list[Node]:
    """The nodes reachable from the nodes ``roots`` through their parents, in program
    order (walked without recursion: tapes of 1e5 nodes are normal)."""
    seen: dict[int, Node] = {}
    stack = list(roots)
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen[id(node)] = node
        for p in node.parents:
            if p is not None and type(p[0]) is Node and id(p[0]) not in seen:
                stack.append(p[0])
    return sorted(seen.values(), key=lambda n: n.seq)


class VersionCounter:
    """Shared by a Tensor and its detached views; bumped by in-place updates."""

    __slots__ = ("version",)

    def __init__(self):
        self.version = 0


class HookHandle:
    """Returned by ``register_hook``; ``remove()`` unregisters the hook."""

    def __init__(self, hooks: list, fn: Any):
        self._hooks, self._fn = hooks, fn

    def remove(self) -> None:
        if self._fn in self._hooks:
            self._hooks.remove(self._fn)

"""Pytrees: nested containers of leaves, flattened and rebuilt as JAX does.

Containers are tuples, lists, namedtuples, dicts (flattened in sorted key
order, so two dicts with the same keys pair their leaves by key whatever
order they were written in), dataclass instances (their ``__init__`` fields),
``None`` (a container of no leaves) and the types registered with
:func:`register_pytree_node`. Everything else is a leaf.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any, Callable

import numpy as np

from dualad._base.core import Value

# User containers: type -> (flatten(obj) -> (children, aux), unflatten(aux, children) -> obj).
_NODES: dict[type, tuple[Callable, Callable]] = {}
# Leaves known by their type alone, before the tests of a container (a dataclass's costs most):
# a compiled call walks its arguments at each call (ADBench's hand model, 31 leaves: 22 us
# before, 9.5 after). A value type found to be a leaf joins them (a Dual, a Tensor: each
# transform walks its values several times a call); registering a type takes it out. Other
# types are tested each time: a proxy's isinstance reads the object it stands for.
_LEAVES = {np.ndarray, np.float64, np.float32, float, int, bool, complex, str, bytes}
_MOST_LEAF_TYPES = 64  # value types made at run time stay collectable beyond these


def register_pytree_node(kind: type, flatten_fn: Callable, unflatten_fn: Callable) -> None:
    """Let every transform look inside instances of ``kind``, as ``jax.tree_util.register_pytree_node``.

    Parameters
    ----------
    kind : type
        The container type.
    flatten_fn : callable
        ``flatten_fn(obj) -> (children, aux)``: the sub-trees, in order, and
        anything hashable needed to rebuild ``obj`` from them.
    unflatten_fn : callable
        ``unflatten_fn(aux, children) -> obj``.

    Examples
    --------
    >>> import numpy as np
    >>> import dualad, reverse
    >>> class Pair:
    ...     def __init__(self, a, b): self.a, self.b = a, b
    >>> dualad.register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda _, ch: Pair(*ch))
    >>> g = reverse.grad(lambda p: p.a * p.b)(Pair(2.0, 3.0))
    >>> g.a, g.b
    (3.0, 2.0)
    """
    if not isinstance(kind, type):
        raise TypeError(f"register_pytree_node: kind must be a type, got {type(kind).__name__}")
    for name, fn in (("flatten_fn", flatten_fn), ("unflatten_fn", unflatten_fn)):
        if not callable(fn):
            raise TypeError(f"register_pytree_node: {name} must be callable, got {type(fn).__name__}")
    _NODES[kind] = (flatten_fn, unflatten_fn)
    _LEAVES.discard(kind)


def _sorted_keys(d: dict) -> list:
    try:
        return sorted(d)
    except TypeError:  # keys of several types: an order that does not depend on insertion
        return sorted(d, key=lambda k: (type(k).__name__, repr(k)))


def tree_node(tree: Any) -> tuple | None:
    """``(kind, aux, children, labels)`` for a container, None for a leaf."""
    node = _node(tree)
    if node is None:
        return None
    kind, aux, children = node
    if kind is dict:
        labels = [f"[{k!r}]" for k in aux]
    elif kind is not None and kind not in _NODES and aux is not None:  # a dataclass
        labels = [f".{n}" for n in aux]
    else:
        labels = [(".{}" if kind in _NODES else "[{}]").format(i) for i in range(len(children))]
    return kind, aux, children, labels


def _node(tree: Any) -> tuple | None:
    """``(kind, aux, children)`` for a container, None for a leaf: :func:`tree_node` without
    the labels, which only messages read (a compiled call flattens its arguments with it)."""
    if tree is None:
        return None, None, []
    kind = type(tree)
    if kind in _NODES:
        children, aux = _NODES[kind][0](tree)
        return kind, aux, list(children)
    if kind in _LEAVES:
        return None
    if isinstance(tree, (tuple, list)):
        return kind, None, list(tree)
    if isinstance(tree, dict):
        keys = _sorted_keys(tree)
        return dict, tuple(keys), [tree[k] for k in keys]
    if dataclasses.is_dataclass(tree) and not isinstance(tree, type):
        names = tuple(f.name for f in dataclasses.fields(tree) if f.init)
        return kind, names, [getattr(tree, n) for n in names]
    if isinstance(tree, Value) and len(_LEAVES) < _MOST_LEAF_TYPES:
        _LEAVES.add(kind)  # dualad's own value types: leaves by their type alone
    return None


def _rebuild(kind: Any, aux: Any, values: list) -> Any:
    if kind is None:
        return None
    if kind in _NODES:
        return _NODES[kind][1](aux, values)
    if kind is dict:
        return dict(zip(aux, values))
    if aux is not None:  # a dataclass
        return kind(**dict(zip(aux, values)))
    return kind(*values) if hasattr(kind, "_fields") else kind(values)  # namedtuples


def _flatten(tree: Any, leaves: list) -> Any:
    node = _node(tree)
    if node is None:
        # a container (dualad.numpy's buffer) stands for the value it holds
        leaves.append(tree._contents() if isinstance(tree, Value) and tree.container else tree)
        return "*"
    kind, aux, children = node
    return kind, aux, tuple(_flatten(c, leaves) for c in children)


def _build(spec: Any, it) -> Any:
    if spec == "*":
        return next(it)
    kind, aux, children = spec
    return _rebuild(kind, aux, [_build(c, it) for c in children])


def flatten(tree: Any, reused: bool = False) -> tuple[list, Callable[[list], Any]]:
    """The leaves of ``tree`` in order, and a function that rebuilds it (``reused``: one
    to be called many times, a program's outputs: see :func:`_generated_build`)."""
    leaves: list = []
    spec = _flatten(tree, leaves)
    if reused:
        return leaves, _generated_build(spec)
    return leaves, lambda new: _build(spec, iter(new))


def _generated_build(spec: Any) -> Callable[[list], Any]:
    """``spec``'s rebuild as one generated expression: tuples and lists are literals, other
    containers one ``_rebuild`` call each, many times faster than :func:`_build`'s walk
    (benchmarks/README.md). Deep trees (Python's parser limits nesting) keep the walk."""
    env: dict[str, Any] = {"_rebuild": _rebuild}
    leaves = itertools.count()

    def source(spec: Any, depth: int) -> str:
        if depth > 40:
            raise RecursionError
        if spec == "*":
            return f"v[{next(leaves)}]"
        kind, aux, children = spec
        inner = [source(c, depth + 1) for c in children]
        if kind is tuple:
            return "(" + ", ".join(inner) + ("," if len(inner) == 1 else "") + ")"
        if kind is list:
            return "[" + ", ".join(inner) + "]"
        env[f"_k{len(env)}"] = (kind, aux)
        return f"_rebuild(*_k{len(env) - 1}, [{', '.join(inner)}])"

    try:
        return eval(f"lambda v: {source(spec, 0)}", env)  # noqa: S307 - our own generated code
    except RecursionError:
        return lambda new: _build(spec, iter(new))


def treedef(tree: Any) -> Any:
    """The layout of ``tree`` without its leaves: equal for trees whose leaves pair up."""
    return _flatten(tree, [])


def leaves_and_treedef(tree: Any) -> tuple[list, Any]:
    """:func:`flatten`'s leaves and :func:`treedef`'s layout of ``tree``, in one walk."""
    leaves: list = []
    return leaves, _flatten(tree, leaves)


def leaf_paths(tree: Any, prefix: str = "") -> list[str]:
    """Human-readable names of the leaves, for error messages."""
    node = tree_node(tree)
    if node is None:
        return [prefix]
    return [p for child, label in zip(node[2], node[3]) for p in leaf_paths(child, prefix + label)]


def structure(tree: Any) -> str:
    """The container layout of ``tree``, with ``*`` for each leaf, for messages."""
    return _describe(treedef(tree))


def _describe(spec: Any) -> str:
    if spec == "*":
        return "*"
    kind, aux, children = spec
    if kind is None:
        return "None"
    inner = [_describe(c) for c in children]
    if kind is dict:
        return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(aux, inner)) + "}"
    if kind is list:
        return "[" + ", ".join(inner) + "]"
    if kind is tuple:
        return "(" + ", ".join(inner) + ("," if len(inner) == 1 else "") + ")"
    return f"{kind.__name__}(" + ", ".join(inner) + ")"

"""Flatten and rebuild nested tuples, lists and dicts of leaves (pytrees)."""

from __future__ import annotations

from typing import Any, Callable

# Containers that stand for the value they hold (dualad.numpy's buffers): a leaf
# of such a type is replaced by its content.
_UNWRAP: dict[type, Callable[[Any], Any]] = {}


def register_unwrap(kind: type, content: Callable[[Any], Any]) -> None:
    _UNWRAP[kind] = content


def flatten(tree: Any) -> tuple[list, Callable[[list], Any]]:
    """The leaves of ``tree`` in order, and a function that rebuilds it."""
    leaves: list = []
    spec = _flatten(tree, leaves)
    return leaves, lambda new: _build(spec, iter(new))


def _flatten(tree, leaves):
    if isinstance(tree, (tuple, list)):
        return (type(tree), [_flatten(t, leaves) for t in tree])
    if isinstance(tree, dict):
        return (dict, [(k, _flatten(tree[k], leaves)) for k in tree])
    unwrap = _UNWRAP.get(type(tree))
    leaves.append(tree if unwrap is None else unwrap(tree))
    return None


def _build(spec, it):
    if spec is None:
        return next(it)
    kind, children = spec
    if kind is dict:
        return {k: _build(c, it) for k, c in children}
    values = [_build(c, it) for c in children]
    return kind(*values) if hasattr(kind, "_fields") else kind(values)  # namedtuples


def leaf_paths(tree: Any, prefix: str = "") -> list[str]:
    """Human-readable names of the leaves, for error messages."""
    if isinstance(tree, (tuple, list)):
        return [p for i, t in enumerate(tree) for p in leaf_paths(t, f"{prefix}[{i}]")]
    if isinstance(tree, dict):
        return [p for k, t in tree.items() for p in leaf_paths(t, f"{prefix}[{k!r}]")]
    return [prefix]


def structure(tree: Any) -> Any:
    """The container layout of ``tree`` with its leaves replaced by ``*``."""
    leaves, build = flatten(tree)
    return build(["*"] * len(leaves))

"""``vmap``: a function of one element mapped over a batch, as JAX's.

The arguments' batch axes (``in_axes``) are moved to the front and each
batched leaf becomes a :class:`~dualad._batching.batched.Batched` value at the run's
level; the function runs once on them, and the batch axis of each output
leaf is moved to where ``out_axes`` says.
"""

from __future__ import annotations

import numbers
from typing import Any, Callable

from dualad import ops
from dualad._base.checks import check_callable, describe
from dualad._base.core import transform_level
from dualad._base.shapes import ndim_of, shape_of
from dualad._base.tree import flatten, leaf_paths, structure, tree_node
from dualad._batching.batched import Batched

__all__ = ["vmap"]


def vmap(f: Callable, in_axes: Any = 0, out_axes: Any = 0) -> Callable:
    """``f`` mapped over a batch axis of its arguments, as ``jax.vmap``.

    ``vmap(f)(xs)`` equals stacking ``f(x)`` over the entries ``x`` of ``xs``
    along their first axis, computed in one call of ``f`` on values that
    stand for the whole batch: elementwise, linear and shape operations run
    on the batch at once; any other primitive is applied element by element.
    It composes with every transform, both ways: ``vmap(reverse.grad(loss))``
    gives per-example gradients, and a function that calls ``vmap`` can be
    differentiated.

    Parameters
    ----------
    f : callable
        A function of arrays, floats, or pytrees of them.
    in_axes : int, None, or tuple
        The batch axis of each argument (negative counts from the end), or
        ``None`` for an argument that is the same for every element. An int
        or ``None`` applies to every argument; a tuple has one entry per
        positional argument, each an int, ``None`` or a pytree prefix of that
        argument (``{"w": None, "x": 0}`` for a dict argument). Keyword
        arguments are batched along their axis 0.
    out_axes : int, None, or pytree prefix of the output
        Where the batch axis goes in each output leaf. An output that does
        not depend on the batched arguments is broadcast along it; ``None``
        returns such an output as it is (and is an error for one that does).

    Returns
    -------
    callable
        The batched function.

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> dot = lambda x, y: (x * y).sum()
    >>> dualad.vmap(dot)(np.ones((3, 2)), np.arange(6.0).reshape(3, 2))
    array([1., 5., 9.])
    >>> dualad.vmap(dot, in_axes=(0, None))(np.eye(2), np.array([1.0, 2.0]))
    array([1., 2.])
    >>> dualad.vmap(lambda x: x * 2.0, out_axes=1)(np.ones((3, 2))).shape
    (2, 3)
    """
    check_callable(f, "vmap")
    _check_spec(in_axes, "in_axes")
    _check_spec(out_axes, "out_axes")

    def batched(*args: Any, **kwargs: Any) -> Any:
        specs = _arg_specs(in_axes, args)
        leaves, build = flatten((args, kwargs))
        axes = [a for i, (spec, arg) in enumerate(zip(specs, args))
                for a in _prefix_axes(spec, arg, "in_axes", f"[{i}]")]
        axes += [0] * (len(leaves) - len(axes))  # the keyword arguments' leaves
        names = leaf_paths(args, "args") + leaf_paths(kwargs, "kwargs")
        size = _batch_size(leaves, axes, names)
        with transform_level() as level:
            inputs = [leaf if axis is None else Batched(_move(leaf, axis, 0), level)
                      for leaf, axis in zip(leaves, axes)]
            new_args, new_kwargs = build(inputs)
            out = f(*new_args, **new_kwargs)
            out_leaves, out_build = flatten(out)
            out_specs = _prefix_axes(out_axes, out, "out_axes")
            paths = leaf_paths(out, "output")
            return out_build([_unbatch(leaf, axis, size, level, path)
                              for leaf, axis, path in zip(out_leaves, out_specs, paths)])
    return batched


def _is_axis(spec: Any) -> bool:
    return spec is None or (isinstance(spec, numbers.Integral) and not isinstance(spec, bool))


def _check_spec(spec: Any, name: str) -> None:
    """Every leaf of ``spec`` is an int or None (checked when the transform is made)."""
    if _is_axis(spec):
        return
    node = tree_node(spec)
    if node is None:
        raise TypeError(f"vmap: {name} must be an int, None, or a pytree of them, got {describe(spec)}")
    for child in node[2]:
        _check_spec(child, name)


def _arg_specs(in_axes: Any, args: tuple) -> list:
    """One ``in_axes`` entry per positional argument."""
    if _is_axis(in_axes):
        return [in_axes] * len(args)
    if not isinstance(in_axes, (tuple, list)):
        raise TypeError(f"vmap: in_axes must be an int, None, or a tuple with one entry per positional "
                        f"argument, got {describe(in_axes)}; wrap a single pytree entry in a tuple")
    if len(in_axes) != len(args):
        raise ValueError(f"vmap: in_axes has {len(in_axes)} entries but the function was called with "
                         f"{len(args)} positional arguments")
    return list(in_axes)


def _prefix_axes(spec: Any, tree: Any, name: str, path: str = "") -> list:
    """The axis of each leaf of ``tree``, from ``spec``, a pytree prefix of it."""
    if _is_axis(spec):
        return [spec] * len(flatten(tree)[0])
    node, spec_node = tree_node(tree), tree_node(spec)
    if node is None or node[:2] != spec_node[:2] or len(node[2]) != len(spec_node[2]):
        raise ValueError(f"vmap: {name}{path} must be an int, None, or a pytree prefix of the value it "
                         f"describes, {structure(tree)}; got {structure(spec)}")
    return [a for child, sub, label in zip(node[2], spec_node[2], node[3])
            for a in _prefix_axes(sub, child, name, path + label)]


def _batch_size(leaves: list, axes: list, names: list) -> int:
    """The common length of the batched leaves along their batch axes."""
    sizes = {}
    for leaf, axis, name in zip(leaves, axes, names):
        if axis is None:
            continue
        ndim = ndim_of(leaf) if hasattr(leaf, "shape") or isinstance(leaf, float) else None
        if ndim is None or not -ndim <= axis < ndim:
            what = f"an array of shape {shape_of(leaf)}" if ndim is not None else describe(leaf)
            raise ValueError(f"vmap: in_axes gives {name} the batch axis {axis}, but {name} is {what}; "
                             "use None for an argument that is not batched")
        sizes[name] = (axis, shape_of(leaf)[axis])
    if not sizes:
        raise ValueError("vmap: in_axes batches none of the arguments (all None, or no arguments); "
                         "give at least one argument a batch axis")
    if len({s for _, s in sizes.values()}) > 1:
        listed = "; ".join(f"{n} has size {s} along axis {a}" for n, (a, s) in sizes.items())
        raise ValueError(f"vmap: the batched arguments must have one batch size, got: {listed}")
    return next(iter(sizes.values()))[1]


def _move(x: Any, source: int, destination: int) -> Any:
    return x if source == destination else ops.moveaxis(x, source, destination)


def _unbatch(leaf: Any, axis: Any, size: int, level: int, path: str) -> Any:
    """An output leaf with its batch axis at ``axis`` (broadcast if it has none)."""
    mine = type(leaf) is Batched and leaf._level == level
    if axis is None:
        if mine:
            raise ValueError(f"vmap: out_axes is None for {path}, which depends on the batched "
                             "arguments; give it a batch axis")
        return leaf
    val = leaf.val if mine else ops.broadcast_to(leaf, (size,) + shape_of(leaf))
    ndim = ndim_of(val)
    if not -ndim <= axis < ndim:
        raise ValueError(f"vmap: out_axes gives {path} the batch axis {axis}, but with its batch axis "
                         f"it has shape {shape_of(val)} ({ndim} axes)")
    return _move(val, 0, axis % ndim)

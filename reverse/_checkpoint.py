"""``checkpoint``: trade compute for memory by recomputing a block in backward.

The block becomes one application of a ``"checkpoint"`` primitive of kind
``custom``. Its ``impl`` runs the user's function on raw values, so nothing
inside it is recorded; the tape keeps only the block's inputs and outputs.
Its VJP re-runs the function under ``reverse.vjp`` at the values the tape
saved and pulls the cotangent back through that short-lived tape; its JVP
runs it under ``dualad.jvp``. Both are written with the transforms
themselves, so a checkpointed block is differentiated to any order and
inside any other transform, like every other primitive.
"""

from __future__ import annotations

from typing import Any, Callable

from dualad._backend import SCALAR_TYPES, is_float_dtype, namespace_of
from dualad._core import Value
from dualad._shapes import raw
from dualad._transforms import jvp as _forward_jvp
from dualad._tree import flatten
from dualad.extend import bind, custom
from reverse._function import _is_operand, merge_operands, split_operands

__all__ = ["checkpoint"]


class _Block:
    """One call of ``checkpoint``: the function and where its array arguments go."""

    def __init__(self, fn: Callable, layout: list, build: Callable):
        self.fn, self.layout, self.build = fn, layout, build
        self.out_build = None

    def __repr__(self) -> str:
        return f"<checkpointed {getattr(self.fn, '__name__', 'function')}>"

    def call(self, operands) -> tuple:
        """``fn`` at ``operands`` (array leaves in order), as a tuple of output leaves."""
        leaves = merge_operands(self.layout, operands)
        out_leaves, self.out_build = flatten(self.fn(*self.build(leaves)))
        return tuple(out_leaves)


def _impl(xp, *operands, block):
    outs = block.call(operands)
    for j, o in enumerate(outs):
        if isinstance(o, Value):
            raise TypeError(
                f"checkpoint: output leaf {j} of {block!r} is a {type(o).__name__} although fn was run "
                "on plain arrays: fn uses a differentiable value it closes over; pass every Tensor "
                "(or Dual) that fn uses as an argument of checkpoint")
        if not _is_operand(o):
            raise TypeError(f"checkpoint: output leaf {j} of {block!r} is a {type(o).__name__}; "
                            "fn must return arrays or floats (or tuples/lists/dicts of them)")
    return outs


def _split_differentiable(operands):
    return [i for i, x in enumerate(operands) if _is_float(x)]


def _restricted(block, operands, where):
    """``fn`` as a function of the operands at ``where``, the others held fixed."""
    def f(*xs):
        full = list(operands)
        for i, x in zip(where, xs):
            full[i] = x
        return block.call(full)
    return f


def _vjp(g, ans, *operands, block):
    # Recompute the block on a fresh tape at the saved inputs and pull g back.
    from reverse._functional import vjp

    where = _split_differentiable(operands)
    cots = [None] * len(operands)
    if where:
        _, pullback = vjp(_restricted(block, operands, where), *[operands[i] for i in where])
        for i, c in zip(where, pullback(tuple(g))):
            cots[i] = c
    return tuple(cots)


def _jvp(primals, tangents, ans, *, block):
    where = [i for i, t in enumerate(tangents) if t is not None]
    _, out_tangents = _forward_jvp(_restricted(block, primals, where),
                                   tuple(primals[i] for i in where), tuple(tangents[i] for i in where))
    return tuple(out_tangents)


# A higher-order primitive around user code: not an entry of the built-in
# table, whose table-driven tests and benchmarks need a domain per entry.
_checkpoint_p = custom("checkpoint", _impl, jvp=_jvp, vjp=_vjp, multiple_results=True,
                       scalar_ok=True, register=False)


def checkpoint(fn: Callable, *args: Any) -> Any:
    """``fn(*args)``, without keeping ``fn``'s intermediate values for backward.

    Only the inputs and outputs of the block are saved; backward runs
    ``fn`` again at the saved inputs to get the intermediates it needs
    (about one extra forward pass of ``fn``). The gradients are the same as
    without checkpointing, to any order, with ``Tensor`` inputs at the
    user's level and inside ``reverse.grad``, ``vjp`` or ``dualad.jvp``.

    Parameters
    ----------
    fn : callable
        A function of arrays (and constants), returning an array, a float,
        or a tuple/list/dict of them. Every differentiable value it uses must
        be passed in ``args``, not closed over.
    *args
        The arguments of ``fn``: arrays, floats and value types (``Tensor``,
        ``Dual``), or tuples/lists/dicts of them; ints, strings and ``None``
        are passed through as constants.

    Returns
    -------
    The output of ``fn``, with the same structure.

    Examples
    --------
    >>> import numpy as np
    >>> from reverse import Tensor, checkpoint
    >>> x = Tensor(np.array([0.0, 1.0]), requires_grad=True)
    >>> y = checkpoint(lambda v: np.exp(np.sin(v)) * 2.0, x)
    >>> y.sum().backward()
    >>> np.allclose(x.grad, 2.0 * np.cos([0.0, 1.0]) * np.exp(np.sin([0.0, 1.0])))
    True
    """
    if not callable(fn):
        raise TypeError(f"checkpoint: fn must be callable, got {type(fn).__name__}")
    leaves, build = flatten(args)
    operands, layout = split_operands(leaves)
    block = _Block(fn, layout, build)
    if not operands:
        return fn(*args)
    outs = bind(_checkpoint_p, *operands, block=block)
    return block.out_build(list(outs))


def _is_float(x: Any) -> bool:
    r = raw(x)
    if type(r) in SCALAR_TYPES:
        return isinstance(r, float)
    return is_float_dtype(namespace_of([r]), r.dtype)

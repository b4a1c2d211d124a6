"""``checkpoint``: trade compute for memory by recomputing a block in backward.

The block becomes one application of a ``"checkpoint"`` primitive of kind
``custom``. Its ``impl`` runs the user's function on raw values, so nothing
inside it is recorded; the tape keeps only the block's inputs and outputs.
Its VJP re-runs the function under ``reverse.vjp`` at the values the tape
saved and pulls the cotangent back through that short-lived tape; its JVP
runs it under ``dualad.jvp``. Both are written with the transforms
themselves, so a checkpointed block is differentiated to any order and
inside any other transform, like every other primitive.

Random streams the block draws from are saved at its first run and set
again around each later run (:mod:`reverse._rng`), so a recomputation draws
what the forward pass drew and leaves the streams where it found them.

Value types the block uses without being passed them (a closure's weights,
a model object's attribute Tensors, an ``nn.Linear``'s parameters) are found
by :func:`dualad.interpreter.reach` and become extra operands of the primitive,
after the arguments, so that the tape routes their cotangents like the
arguments'. Each run of the block puts the operand as that run sees it in the
places where the value was found, and the value back after.

What a run holds for an operand is a raw array in ``impl``, the
recomputation's own Tensor in the VJP, a Dual in the JVP. Where checkpoint
was given a Tensor (an argument or a value found), the block sees, in every
run, a Tensor of that Tensor's class (PyTorch's methods for a ``Tensor``,
NumPy's for the values the functional transforms pass into ``f``) around
what the run holds, as PyTorch's block gets its tensors: :class:`_Views`
makes them at levels of their own above every other, at which nothing is
recorded, and takes them off the outputs.

Against PyTorch (from the ``torch.utils.checkpoint`` documentation and
source; a block using an ``nn.Linear`` was compared with torch 2.13's
checkpoint, test_rev_checkpoint.py, where torch is installed): its default
``preserve_rng_state=True`` stashes the default CPU and device generator
states at the forward call and restores them for the recomputation inside
``torch.random.fork_rng``, which puts the surrounding states back after; it
does not save ``torch.Generator`` objects the user makes, which the search
here does for NumPy's. Its non-reentrant variant (``use_reentrant=False``)
lets the block use tensors it is not passed, including inside custom
objects, lists and dicts, and works with ``torch.autograd.grad``; that is
the behaviour followed here.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable

from dualad.extend import bind, custom, transform_level
from dualad.interpreter import (
    SCALAR_TYPES,
    Value,
    flatten,
    is_float_dtype,
    namespace_of,
    raw,
    reach,
)
from dualad.interpreter import (
    jvp as _forward_jvp,
)
from reverse._function import _is_operand, _tracks_derivative, merge_operands, split_operands
from reverse._rng import RandomStreams, is_random_stream
from reverse._tensor import NUMPY_LEVELS, NumpyTensor, Tensor

__all__ = ["checkpoint"]


class _Views:
    """How one run of the block sees its operands: those that checkpoint was given
    as Tensors are Tensors of the same class around what the run holds.

    Each class (``Tensor``, PyTorch's methods; ``NumpyTensor``, NumPy's) gets a
    level of its own, open while the run lasts (``with _Views(kinds)``) and
    above every other level, so the block's operations are computed on what
    the views hold underneath, and nothing is recorded at these levels (no
    view requires grad). ``kinds`` is in the order of the levels of the
    Tensors given, so that, as without checkpoint, an operation of two kinds
    gives the kind of the higher.
    """

    def __init__(self, kinds: tuple):
        self.kinds = kinds
        self.levels: dict[type, int] = {}
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> _Views:
        with self._stack as stack:
            for kind in self.kinds:
                level = stack.enter_context(transform_level())
                if kind is NumpyTensor:
                    NUMPY_LEVELS.add(level)
                    stack.callback(NUMPY_LEVELS.discard, level)
                self.levels[kind] = level
            self._stack = stack.pop_all()  # all opened: kept open until __exit__
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stack.close()

    def show(self, x: Any, kind: type | None) -> Any:
        """``x`` as the block sees it: itself, or a ``kind`` Tensor around it."""
        return x if kind is None else Tensor._make(x, self.levels[kind])

    def unwrap(self, out: Any) -> Any:
        """An output leaf without the views around it."""
        levels = self.levels.values()
        while isinstance(out, Tensor) and out._level in levels:
            out = out.value
        return out


class _Block:
    """One call of ``checkpoint``: the function, where its array arguments go, and
    where the values it closes over are found.

    The primitive's operands are the array arguments (``n_args`` of them) and
    then the closed-over values not among them; ``slots[k]`` is the operand
    that stands for ``reached.values[k]``. ``kinds[i]`` is the Tensor class the
    block sees operand ``i`` as, or None where it was not given a Tensor;
    ``view_kinds`` are those classes, in the order of the levels of their Tensors.
    """

    def __init__(self, fn: Callable, layout: list, build: Callable, n_args: int, reached, slots,
                 operands: list, streams: RandomStreams | None):
        self.fn, self.layout, self.build = fn, layout, build
        self.n_args, self.reached, self.slots = n_args, reached, slots
        # per operand: whether a transform tracks its derivative
        self.tracked = tuple(_tracks_derivative(x) for x in operands)
        self.kinds = tuple(type(x) if isinstance(x, Tensor) else None for x in operands)
        highest = {}
        for x, kind in zip(operands, self.kinds):
            if kind is not None:
                highest[kind] = max(highest.get(kind, x._level), x._level)
        self.view_kinds = tuple(sorted(highest, key=highest.get))
        self.streams = streams  # None: preserve_rng_state=False
        self.out_build = None

    def __repr__(self) -> str:
        return f"<checkpointed {getattr(self.fn, '__name__', 'function')}>"

    def call(self, operands) -> tuple:
        """``fn`` at ``operands`` (array leaves in order), as a tuple of output leaves."""
        streams = self.streams
        with _Views(self.view_kinds) as views:
            shown = [views.show(x, kind) for x, kind in zip(operands, self.kinds)]
            args = self.build(merge_operands(self.layout, shown[:self.n_args]))
            tokens = streams.enter() if streams is not None else None
            try:
                if self.slots:
                    with self.reached.substituted([shown[i] for i in self.slots]):
                        out = self.fn(*args)
                else:
                    out = self.fn(*args)
            finally:
                if streams is not None:
                    streams.exit(tokens)
            out_leaves, self.out_build = flatten(out)
            return tuple([views.unwrap(o) for o in out_leaves])


def _impl(xp, *operands, block):
    outs = block.call(operands)
    for j, o in enumerate(outs):
        if isinstance(o, Value):
            raise TypeError(
                f"checkpoint: output leaf {j} of {block!r} is a {type(o).__name__} computed from a "
                "value fn was not run on: fn closes over a Tensor (or Dual) that checkpoint did not "
                "find in its closure, the globals it names or the attributes of the objects those "
                "hold (a class attribute, a __slots__ object, a partial's positional argument); "
                "pass every Tensor that fn uses as an argument of checkpoint")
        if not _is_operand(o):
            raise TypeError(f"checkpoint: output leaf {j} of {block!r} is a {type(o).__name__}; "
                            "fn must return arrays or floats (or tuples/lists/dicts of them)")
    return outs


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
    # Only operands that a transform tracks get a cotangent; one the block does
    # not use (a model's other weights) gets None rather than zeros.
    from reverse._functional import _vjp as vjp

    where = [i for i, x in enumerate(operands) if block.tracked[i] and _is_float(x)]
    cots = [None] * len(operands)
    if where:
        _, pullback = vjp(_restricted(block, operands, where), tuple(operands[i] for i in where),
                          has_aux=False, who="checkpoint", unused_as_zeros=False)
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


def checkpoint(fn: Callable, *args: Any, use_reentrant: bool | None = None,
               preserve_rng_state: bool = True) -> Any:
    """``fn(*args)``, without keeping ``fn``'s intermediate values for backward.

    Only the inputs and outputs of the block are saved; backward runs
    ``fn`` again at the saved inputs to get the intermediates it needs
    (about one extra forward pass of ``fn``). The gradients are the same as
    without checkpointing, to any order, with ``Tensor`` inputs at the
    user's level and inside ``reverse.grad``, ``vjp`` or ``dualad.jvp``.

    Random numbers drawn inside ``fn`` are drawn again, the same, when
    backward recomputes it, as PyTorch does by default: NumPy's global
    state, the NumPy ``Generator``s and ``RandomState``s ``fn`` reaches (in
    its arguments, closure, the globals it names, the attributes of objects
    those hold) are saved when ``fn`` first runs and set again for the
    recomputation, which then puts back the states it found, so the user's
    later draws are those without checkpointing; CuPy's global state, which
    cannot be read, is replaced by a seeded stand-in for both runs.
    :mod:`reverse._rng` says exactly what is covered.

    ``fn`` receives its arguments as they were given, as PyTorch's block
    does: a ``Tensor`` as a ``Tensor`` with PyTorch's methods
    (``a.sin()``, ``a.std()`` unbiased, ``a.max(0)`` values and indices), a
    value that ``reverse.grad`` or another functional transform passed into
    ``f`` with NumPy's methods, an array as an array; the Tensors it uses
    without being passed them (below) likewise. So it is the same code, with
    the same numbers, as without checkpoint, both when it first runs and when
    backward recomputes it. Those Tensors do not require grad inside ``fn``
    (nothing is recorded there; ``checkpoint`` records the block as one
    step), so ``requires_grad`` reads False on them.

    ``fn`` may use Tensors it is not passed, as PyTorch's non-reentrant
    checkpoint allows: weights in its closure, globals it names, attributes of
    a model object (``checkpoint(model, x)`` with ``model.w1`` a Tensor), the
    parameters of ``reverse.nn`` modules (``checkpoint(nn.Linear(2, 3), x)``,
    a model of ``nn.Sequential`` layers), also inside lists, dicts and tuples.
    They get the same gradients as without checkpointing (a weight the block
    does not use keeps ``.grad`` None).
    Every Tensor found is an input of the block, used or not, so an in-place
    change to one before backward is refused as for an argument: give
    checkpoint the block itself (``checkpoint(model.block1, x)``) rather than
    a closure over the whole model, and the search finds only the block's own.
    The search is bounded; :mod:`dualad._base.reach` lists what it covers. A
    Tensor it does not find (a class attribute, an attribute of an object
    with ``__slots__``) is a clear error: pass it as an argument. While
    ``fn`` runs, the places that hold such Tensors hold the values ``fn``
    is run at (another thread reading them then sees those), and ``fn``
    may not assign to them (an error says so): pass state such as a
    recurrent cell's hidden Tensor in and return its new value. As in
    PyTorch, other side effects of ``fn`` happen again when backward
    recomputes it.

    Parameters
    ----------
    fn : callable
        A function of arrays or Tensors (and constants), such as an
        ``nn.Module``, returning an array, a float, a Tensor, or a
        tuple/list/dict of them.
    *args
        The arguments of ``fn``: arrays, floats and value types (``Tensor``,
        ``Dual``), or tuples/lists/dicts of them; ints, strings, ``None`` and
        other objects are passed through as constants.
    use_reentrant : bool, optional
        Accepted as PyTorch 2 asks everyone to pass it. ``False`` (PyTorch's
        recommendation) and ``True`` both give the non-reentrant variant's
        gradients: the reentrant variant's limits (no gradient for Tensors
        ``fn`` closes over, at least one input that requires grad) are not
        reproduced.
    preserve_rng_state : bool
        Save and replay the random state as above (the default, as in
        PyTorch). ``False`` skips that work; the recomputation then draws new
        numbers, which is right only if ``fn`` draws none.

    Returns
    -------
    The output of ``fn``, with the same structure.

    Examples
    --------
    >>> import numpy as np
    >>> from reverse import Tensor, checkpoint
    >>> x = Tensor(np.array([0.0, 1.0]), requires_grad=True)
    >>> y = checkpoint(lambda v: np.exp(np.sin(v)) * 2.0, x, use_reentrant=False)
    >>> y.sum().backward()
    >>> np.allclose(x.grad, 2.0 * np.cos([0.0, 1.0]) * np.exp(np.sin([0.0, 1.0])))
    True

    PyTorch code: the block gets ``x`` as a Tensor, and the parameters of the
    module it uses get their gradients (``out = x W^T + b``, so ``dL/db`` is
    the column sums of ``dL/dout = 2 out``):

    >>> from reverse import nn
    >>> lin = nn.Linear(2, 3, rng=np.random.default_rng(0))
    >>> x = Tensor(np.ones((4, 2)), requires_grad=True)
    >>> out = checkpoint(lambda a: lin(a.sin()), x, use_reentrant=False)
    >>> (out ** 2).sum().backward()
    >>> np.allclose(lin.bias.grad, 2.0 * out.detach().value.sum(0))
    True

    Dropout inside the block gets the same mask in backward, and a closed-over
    weight gets its gradient:

    >>> rng = np.random.default_rng(0)
    >>> w = Tensor(np.array([2.0, 3.0, 4.0, 5.0]), requires_grad=True)
    >>> def dropout_layer(v):
    ...     keep = rng.random(v.shape) < 0.5
    ...     return np.where(keep, np.tanh(v * w) / 0.5, 0.0)
    >>> checkpoint(dropout_layer, np.ones(4)).sum().backward()
    >>> g = w.grad
    >>> rng, w.grad = np.random.default_rng(0), None
    >>> dropout_layer(np.ones(4)).sum().backward()
    >>> np.array_equal(g, w.grad)
    True
    """
    if not callable(fn):
        raise TypeError(f"checkpoint: fn must be callable, got {type(fn).__name__}")
    if use_reentrant not in (None, True, False):
        raise TypeError(f"checkpoint: use_reentrant must be True, False or None, got {use_reentrant!r}")
    leaves, build = flatten(args)
    operands, layout = split_operands(leaves)
    n_args = len(operands)
    reached = reach(fn, [a for a in leaves if not _is_operand(a)], who="checkpoint",
                    streams=is_random_stream)
    slots = _closed_over_operands(reached.values, operands)
    if not operands:
        return fn(*args)
    streams = RandomStreams(list(reached.streams.values())) if preserve_rng_state else None
    block = _Block(fn, layout, build, n_args, reached, slots, operands, streams)
    outs = bind(_checkpoint_p, *operands, block=block)
    return block.out_build(list(outs))


def _closed_over_operands(values: list, operands: list) -> list:
    """Append the closed-over ``values`` that are not arguments to ``operands``;
    return the operand index standing for each value."""
    index = {id(x): i for i, x in enumerate(operands)}
    slots = []
    for v in values:
        if id(v) not in index:
            index[id(v)] = len(operands)
            operands.append(v)
        slots.append(index[id(v)])
    return slots


def _is_float(x: Any) -> bool:
    r = raw(x)
    if type(r) in SCALAR_TYPES:
        return isinstance(r, float)
    return is_float_dtype(namespace_of([r]), r.dtype)

"""The backward walk: iterative, in reverse program order, freeing as it goes."""

from __future__ import annotations

import math
import warnings
from heapq import heappop, heappush
from typing import Any, Sequence

from dualad import ops
from dualad.interpreter import (
    Accumulator,
    describe,
    dtype_of,
    is_complex,
    is_large,
    is_operand,
    made_by_call,
    raw,
    shape_of,
    zeros,
)
from reverse._anomaly import ANOMALY, checked_vjp
from reverse._saved_hooks import Packed
from reverse._tape import Node
from reverse._tensor import Tensor


def _ref(t: Tensor):
    return (t, 0) if t._node is None else (t._node, t._index)


def key(ref) -> tuple:
    """A hashable key for a ref (Tensors define ``==`` elementwise, so no hash)."""
    return id(ref[0]), ref[1]


def _modified(node: Node, counter, saved: int, index: int) -> RuntimeError:
    what = f"input {index}" if index >= 0 else f"output {-1 - index}"
    return RuntimeError(
        f"{what} of '{node.prim.name}' was modified in place after it was saved "
        f"for backward (version {counter.version}, saved at {saved}); compute on a "
        "copy, or do the in-place update after backward")


def pytorch_convention(g: Any) -> Any:
    """A cotangent in PyTorch's convention from JAX's (the conjugate, for complex
    values), and back: ``.grad``, hooks and the cotangents given to ``backward``
    speak PyTorch's, so PyTorch code and ``reverse.optim`` step complex
    parameters downhill; the tape and the functional API speak JAX's."""
    return ops.conj(g) if g is not None and is_complex(g) else g


def _run_hooks(hooks, g, level):
    """``g`` after the hooks: each is given a Tensor, as PyTorch's hooks are (one
    of the tape's level, without a graph unless ``create_graph`` made one), and
    may return a replacement."""
    if not hooks:
        return g
    plain = not isinstance(g, Tensor)
    g = pytorch_convention(g)
    for hook in list(hooks):
        out = hook(Tensor._make(g, level) if plain else g)
        if out is not None:
            g = _checked_hook_result(hook, out, g)
            if plain and isinstance(out, Tensor):
                g = out.value
    return pytorch_convention(g)


def _checked_hook_result(hook, out, g):
    """``out``, the gradient a hook returned in place of ``g``, if it has g's shape
    and dtype: a different one would reach ``.grad`` or flow on upstream, where
    the error (if any) could no longer name the hook."""
    name = getattr(hook, "__name__", None) or repr(hook)
    ro, rg = raw(out), raw(g)
    expected = (f"expected shape {shape_of(rg)} and dtype {_dtype_name(rg)}, those of the gradient "
                "it was given")
    if not is_operand(out):
        raise TypeError(f"hook '{name}' returned a {type(out).__name__}; expected None or an array "
                        f"of shape {shape_of(rg)} and dtype {_dtype_name(rg)}")
    if shape_of(ro) != shape_of(rg):
        raise ValueError(f"hook '{name}' has changed the shape of the gradient: it returned shape "
                         f"{shape_of(ro)}; {expected}")
    if dtype_of(ro) != dtype_of(rg):  # NumPy's float64 == float, as a Python float's dtype
        raise TypeError(f"hook '{name}' has changed the dtype of the gradient: it returned dtype "
                        f"{_dtype_name(ro)}; {expected}")
    return out


def _dtype_name(r) -> str:
    dtype = dtype_of(r)
    return dtype.__name__ if isinstance(dtype, type) else str(dtype)


def _as_tensor_args(node: Node, res, level):
    """Residuals as tape values, so that a backward pass is itself recorded."""
    ans, args = res
    outs = ans if node.prim.multiple_results else (ans,)
    outs = tuple(Tensor._make(a, level, node, j, True) for j, a in enumerate(outs))
    args = tuple(a if p is None else p[0] if isinstance(p[0], Tensor)
                 else Tensor._make(a, level, p[0], p[1], True)
                 for a, p in zip(args, node.parents))
    return (outs if node.prim.multiple_results else outs[0]), args


class _Cotangents:
    """The cotangents a walk has gathered so far, and the nodes still to visit.

    A node is queued when its first cotangent arrives and visited latest first
    (``seq``, its place in program order, on a heap): every node that hands it a
    cotangent was recorded after it, so it is visited after all of them, and a
    node no cotangent reaches is never looked at. Each slot sums its cotangents
    in an :class:`~dualad.interpreter.Accumulator`.
    """

    __slots__ = ("nodes", "leaves", "queue")

    def __init__(self) -> None:
        self.nodes: dict[int, tuple] = {}  # seq -> (node, one Accumulator or None per output)
        self.leaves: dict[int, tuple] = {}  # id(leaf) -> (leaf, Accumulator)
        self.queue: list[int] = []  # -seq of the queued nodes: a heap, the latest first

    def slot(self, target: Any, index: int) -> Accumulator:
        """The accumulator of output ``index`` of ``target`` (a node or a leaf)."""
        if type(target) is Node:
            accs = self.outputs(target)
            acc = accs[index]
            if acc is None:
                acc = accs[index] = Accumulator()
            return acc
        entry = self.leaves.get(id(target))
        if entry is None:
            entry = self.leaves[id(target)] = (target, Accumulator())
        return entry[1]

    def outputs(self, node: Node) -> list:
        """``node``'s accumulators, one per output (None until one gets a cotangent);
        the first call queues the node."""
        entry = self.nodes.get(node.seq)
        if entry is None:
            entry = self.nodes[node.seq] = (node, [None] * node.n_out)
            heappush(self.queue, -node.seq)
        return entry[1]

    def add(self, target: Any, index: int, c: Any, owned: bool) -> None:
        """Add the cotangent ``c`` (``owned``: see ``Accumulator.add``) to its slot."""
        if type(target) is not Node:
            self.slot(target, index).add(c, owned)
            return
        seq = target.seq
        entry = self.nodes.get(seq)  # ``outputs``, inline: this runs for every edge
        if entry is None:
            if target.n_out == 1:
                accs = [Accumulator(c, owned)]
            else:
                accs = [None] * target.n_out
                accs[index] = Accumulator(c, owned)
            self.nodes[seq] = (target, accs)
            heappush(self.queue, -seq)
            return
        acc = entry[1][index]
        if acc is None:
            entry[1][index] = Accumulator(c, owned)
        else:
            acc.add(c, owned)


def _cotangent_in(node: Node, accs: list, level: int, captured: Any, capture: dict | None) -> Any:
    """The cotangent a node's VJP takes, from its accumulators: after its hooks, noted
    in ``capture`` where asked, zeros for the outputs none reached (several results);
    None if none reached any."""
    gs = [None if acc is None else acc.value for acc in accs]
    if node.hooks:
        gs = [_run_hooks(node.hooks.get(j), g, level) if g is not None else g for j, g in enumerate(gs)]
    if id(node) in captured:
        for j, g in enumerate(gs):
            if (id(node), j) in capture:
                capture[(id(node), j)] = g
    if not node.prim.multiple_results:
        return gs[0]
    if all(g is None for g in gs):
        return None
    some = next(g for g in gs if g is not None)
    return tuple(zeros(some, shape, dtype) if g is None else g
                 for g, (shape, dtype) in zip(gs, node.out_avals))


def run_backward(roots: Sequence, cotangents: Sequence, *, retain_graph: bool,
                 create_graph: bool, capture: dict | None = None, accumulate: bool = True,
                 level: int = 0) -> bool:
    """Propagate ``cotangents`` from the tensor refs ``roots`` to the leaves.

    ``capture`` maps ``key(ref)`` of refs (``(node, index)`` or ``(leaf, 0)``) to ``None``; the
    walk fills in the total cotangent that reaches each. With ``accumulate``,
    leaves that require grad get it added to ``.grad``; the result says whether
    one of those is a Tensor that requires grad (a reference cycle).

    Each slot sums its cotangents in an :class:`~dualad.interpreter.Accumulator`:
    the cotangents given here are borrowed, and so is any a VJP passes on
    unchanged; one its entry declares fresh (``Primitive.fresh``) may be added into.
    The nodes are visited as :class:`_Cotangents` queues them: latest first, and
    only those a cotangent reaches.
    """
    cotangents_of = _Cotangents()
    for (target, index), g in zip(roots, cotangents):
        cotangents_of.slot(target, index).add(g)
    # Without create_graph the pass runs on the inner values, so this level
    # records nothing (inner levels, say a Dual under hvp, still do); with
    # it, the residuals are rewrapped as tape values and the pass is recorded.
    captured = {k[0] for k in capture} if capture else ()
    anomaly = ANOMALY.on  # reverse.detect_anomaly: each step checked, through the plain VJPs
    nodes, queue, add = cotangents_of.nodes, cotangents_of.queue, cotangents_of.add
    while queue:  # the queued nodes, latest first, as _Cotangents queues them
        node, accs = nodes.pop(-heappop(queue))
        prim = node.prim
        if node.hooks is None and not prim.multiple_results and id(node) not in captured:
            g = accs[0].value  # the common case: one output, no hook, nothing captured
            if g is None:
                continue
        else:
            g = _cotangent_in(node, accs, level, captured, capture)
            if g is None:
                continue
        if node.freed:
            raise RuntimeError(
                f"trying to backward through the graph a second time (node '{prim.name}'): "
                "its saved values were freed; pass retain_graph=True to the first backward")
        for counter, saved, index in node.versions:
            if counter.version != saved:
                raise _modified(node, counter, saved, index)
        res = node.res
        if type(res) is Packed:  # recorded inside saved_tensors_hooks
            res = res.unpack()
        parents = node.parents
        if prim.add_transpose is None or create_graph or anomaly or parents[0] is None \
                or not prim.add_transpose(cotangents_of.slot(*parents[0]), g, *res, **node.params):
            if create_graph and prim.saves_values:
                res = _as_tensor_args(node, res, level)
            cots = checked_vjp(node, g, res) if anomaly else prim.vjp(g, res, node.needs, node.params)
            i = 0
            for p, c in zip(parents, cots):
                if p is not None and c is not None:
                    owned = is_large(c) and i in prim.fresh_cotangents and made_by_call(c, (g,))
                    add(p[0], p[1], c, owned)
                i += 1
        if not retain_graph:
            node.res = None
            node.freed = True
    cycle = False
    for leaf, acc in cotangents_of.leaves.values():
        g = _run_hooks(leaf._hooks, acc.value, leaf._level)
        if capture is not None and (id(leaf), 0) in capture:
            capture[(id(leaf), 0)] = g
        if accumulate and leaf.requires_grad:
            if create_graph and not isinstance(g, Tensor):
                g = Tensor._make(g, leaf._level)
            owned = acc.owned and g is acc.value
            g = pytorch_convention(g)
            cycle = leaf._add_grad(g, owned) and create_graph or cycle
    return cycle


def _warn_grad_cycle() -> None:
    """PyTorch warns here too: a ``.grad`` made with ``create_graph=True`` holds a graph
    that holds its leaf. (The tape is Python objects, so the cycle is freed, but by the
    cyclic collector, which may run long after the arrays were last needed.)"""
    warnings.warn(
        "backward(create_graph=True) stored gradients that require grad in .grad: each one's graph "
        "refers back to its leaf, a reference cycle that keeps both, and the arrays the graph saved, "
        "alive until Python's cyclic garbage collector runs; use reverse.gradients(outputs, inputs, "
        "create_graph=True) instead, or set .grad = None after use", UserWarning, stacklevel=4)


def _default_cotangent(t: Tensor, name: str):
    if math.prod(shape_of(t)) != 1 or is_complex(t):  # one element of any shape, as PyTorch
        raise RuntimeError(f"{name}: grad can be implicitly created only for real scalar outputs, "
                           f"got shape {shape_of(t)} and dtype {dtype_of(raw(t))}; pass the cotangent "
                           "explicitly (an output of one element, of any shape, needs none)")
    r = raw(t.value)
    return 1.0 if type(r) is float else zeros(r) + 1


def check_cotangent(ct: Any, out: Any, name: str) -> None:
    """A cotangent given for the output ``out``: an array or number, and not complex
    for a real output (whose cotangent's imaginary part would be dropped unseen)."""
    if not is_operand(ct):
        raise TypeError(f"{name} must be an array or float of the output's shape {shape_of(out)}, "
                        f"got {describe(ct)}")
    if _complex_value(ct) and not _complex_value(out):
        raise TypeError(f"{name} is complex ({describe(ct)}) but the output is real "
                        f"({describe(out)}); pass a real cotangent")


def _complex_value(x: Any) -> bool:
    return type(raw(x)) is complex or is_complex(x)


def _check_cotangent(t: Tensor, g: Any, name: str):
    if isinstance(g, Tensor) and not g.requires_grad:
        g = g.value
    check_cotangent(g, t, name)
    if shape_of(g) != shape_of(t):
        raise ValueError(f"{name}: cotangent shape {shape_of(g)} does not match output shape {shape_of(t)}")
    return pytorch_convention(g)


def _per_output(grads: Any, n: int, name: str, outputs: str) -> list:
    """``grads`` (None, one cotangent, or a list or tuple of them) as one entry per output."""
    if grads is None:
        return [None] * n
    grads = [grads] if not isinstance(grads, (list, tuple)) else list(grads)
    if len(grads) != n:
        raise ValueError(f"{name} has {len(grads)} entries for {n} {outputs}")
    return grads


def _check_inputs(inputs: list) -> None:
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor) or not t.requires_grad:
            raise RuntimeError(f"inputs[{i}] does not require grad; call requires_grad_() on it "
                               "before computing the outputs")


def backward(tensors: Tensor | Sequence[Tensor], grad_tensors: Any = None,
             retain_graph: bool | None = None, create_graph: bool = False,
             inputs: Tensor | Sequence[Tensor] | None = None) -> None:
    """Add the gradients of ``tensors`` to ``.grad`` of the leaves, as ``torch.autograd.backward``.

    Parameters
    ----------
    tensors : Tensor or sequence of Tensor
        The outputs to differentiate (their gradients are summed).
    grad_tensors : array, Tensor, float or sequence of them, optional
        The cotangent of each output, or ``None`` for a real scalar output
        (1); one value stands for a single output.
    retain_graph : bool, optional
        Keep the saved values for another backward (default: ``create_graph``).
    create_graph : bool
        Record the backward pass, for higher derivatives.
    inputs : Tensor or sequence of Tensor, optional
        Add gradients only to these tensors' ``.grad`` (leaves or not).

    Examples
    --------
    >>> import reverse
    >>> from reverse import Tensor
    >>> a, b = Tensor(1.0, requires_grad=True), Tensor(3.0, requires_grad=True)
    >>> reverse.backward([a * b, b * b], grad_tensors=[1.0, 2.0])
    >>> a.grad, b.grad
    (Tensor(3.0), Tensor(13.0))
    """
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    grad_tensors = _per_output(grad_tensors, len(tensors), "grad_tensors", "tensors")
    if not tensors:
        return  # as PyTorch: nothing to differentiate
    if retain_graph is None:
        retain_graph = create_graph
    roots, cots = [], []
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor) or not t.requires_grad:
            raise RuntimeError(f"output {i} does not require grad and has no graph to backward through")
        g = _default_cotangent(t, "backward") if grad_tensors[i] is None \
            else _check_cotangent(t, grad_tensors[i], "backward: gradient")
        roots.append(_ref(t))
        cots.append(g)
    if inputs is not None:
        inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
        if not inputs:
            raise ValueError("backward: inputs is empty; pass the Tensors whose .grad to fill, or None")
        _check_inputs(inputs)
        capture = {key(_ref(t)): None for t in inputs}
        run_backward(roots, cots, retain_graph=retain_graph, create_graph=create_graph,
                     capture=capture, accumulate=False, level=tensors[0]._level)
        cycle = False
        for t in inputs:
            g = pytorch_convention(capture[key(_ref(t))])
            if g is not None:
                cycle = t._add_grad(g) and create_graph or cycle
    else:
        cycle = run_backward(roots, cots, retain_graph=retain_graph, create_graph=create_graph,
                             level=tensors[0]._level)
    if cycle:
        _warn_grad_cycle()


def gradients(outputs, inputs, grad_outputs=None, retain_graph: bool | None = None,
              create_graph: bool = False, allow_unused: bool = False) -> tuple:
    """d(outputs)/d(inputs), like ``torch.autograd.grad``; ``.grad`` is not touched.

    Examples
    --------
    >>> from reverse import Tensor, gradients
    >>> x1, x2 = Tensor(1.0, requires_grad=True), Tensor(2.0, requires_grad=True)
    >>> gradients([x1 * x2, x1 + x2], [x1, x2], grad_outputs=[1.0, 1.0])
    (3.0, 2.0)
    """
    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    single = isinstance(inputs, Tensor)
    inputs = [inputs] if single else list(inputs)
    for what, items, role in (("outputs", outputs, "to differentiate"),
                              ("inputs", inputs, "to differentiate with respect to")):
        if not items:
            raise ValueError(f"gradients: {what} is empty; pass the Tensor or Tensors {role}")
    grad_outputs = _per_output(grad_outputs, len(outputs), "grad_outputs", "outputs")
    if retain_graph is None:
        retain_graph = create_graph
    _check_inputs(inputs)
    roots, cots = [], []
    for i, t in enumerate(outputs):
        if not isinstance(t, Tensor) or not t.requires_grad:
            raise RuntimeError(f"outputs[{i}] does not require grad (it does not depend on any input)")
        g = grad_outputs[i]
        if g is None:
            g = _default_cotangent(t, f"outputs[{i}]")
        else:
            g = _check_cotangent(t, g, f"grad_outputs[{i}]")
        roots.append(_ref(t))
        cots.append(g)
    capture = {key(_ref(t)): None for t in inputs}
    run_backward(roots, cots, retain_graph=retain_graph, create_graph=create_graph,
                 capture=capture, accumulate=False, level=outputs[0]._level)
    result = []
    for i, t in enumerate(inputs):
        g = capture[key(_ref(t))]
        if g is None and not allow_unused:
            raise RuntimeError(f"inputs[{i}] was not used to compute the outputs; pass allow_unused=True "
                               "to get None for it")
        if create_graph and g is not None and not isinstance(g, Tensor):
            g = Tensor._make(g, t._level)
        result.append(pytorch_convention(g))
    return tuple(result)


def _tensor_backward(self: Tensor, gradient: Any = None, retain_graph: bool | None = None,
                     create_graph: bool = False, inputs: Any = None) -> None:
    """Accumulate d(self)/d(leaf) into ``.grad`` of the leaves that require grad.

    ``gradient`` is the cotangent (required for non-scalar tensors);
    ``retain_graph`` keeps the saved values for another backward;
    ``create_graph`` records the backward pass, for higher derivatives.

    Examples
    --------
    >>> from reverse import Tensor
    >>> x = Tensor(3.0, requires_grad=True)
    >>> (x * x).backward()
    >>> x.grad
    Tensor(6.0)
    """
    backward([self], None if gradient is None else [gradient], retain_graph, create_graph, inputs)


# The walk makes Tensors, so it sits above the Tensor class, and gives it its method here.
_tensor_backward.__name__, _tensor_backward.__qualname__ = "backward", "Tensor.backward"
Tensor.backward = _tensor_backward

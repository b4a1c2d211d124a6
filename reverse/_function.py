"""``Function``: user-defined primitives, written PyTorch-style.

A subclass gives ``forward(ctx, *args)`` on raw arrays and floats, and
``backward(ctx, *grads)`` (and optionally ``jvp(ctx, *tangents)``). At class
creation it gets one entry made by :func:`dualad.extend.custom`; each
``apply`` binds it with a fresh context object in the parameters. So the
tape, ``dualad.Dual`` (through ``jvp``), ``HyperDual`` and nested
transforms all interpret a custom op as they interpret ``sin``: the
primitive table has no second path for it.

Saved values are remembered as *which input or output* they are rather than
as arrays. A rule running at some level then sees the input or output as
that level knows it (a raw array at first order; a ``Dual`` or a recorded
``Tensor`` under a nested transform or ``create_graph``), so a ``backward``
or ``jvp`` written with array operations is itself differentiated, and the
tape alone holds the arrays (they are freed with it).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from dualad import ops
from dualad.extend import Primitive, bind, custom
from dualad.interpreter import (
    SCALAR_TYPES,
    Value,
    describe,
    dtype_of,
    get_cut,
    is_operand,
    raw,
    shape_of,
    zeros,
)
from reverse._grad_mode import no_grad
from reverse._tensor import Tensor

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


class FunctionCtx:
    """The per-call context handed to ``forward``, ``backward`` and ``jvp``.

    Attributes
    ----------
    needs_input_grad : tuple of bool
        One entry per argument of ``apply``: whether a derivative with respect
        to it is being tracked (a ``Tensor`` that requires grad, a ``Dual``,
        ...). ``backward`` may skip the gradients of the others.

    Other attributes (shapes, flags, constants) may be set freely in
    ``forward``; arrays that ``backward`` needs should go through
    :meth:`save_for_backward`.

    Examples
    --------
    >>> import numpy as np
    >>> from reverse import Function, Tensor
    >>> class Scale(Function):
    ...     @staticmethod
    ...     def forward(ctx, x, k):
    ...         ctx.k = k  # a constant: any attribute will do
    ...         return x * k
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         return (g * ctx.k if ctx.needs_input_grad[0] else None), None
    >>> x = Tensor(np.ones(2), requires_grad=True)
    >>> Scale.apply(x, 3).sum().backward()
    >>> x.grad
    Tensor(array([3., 3.]))
    """

    def __init__(self, cls: type, needs_input_grad: tuple, layout: tuple = ()):
        self._cls = cls
        self.needs_input_grad = needs_input_grad
        self._layout = layout  # per argument of apply: _OPERAND, or the constant itself
        self._pending: tuple | None = None  # what forward saved, before it returns
        self._spec: tuple | None = None  # per saved value: ("in", i) | ("out", j) | ("val", v)
        self._single = True
        self._view: tuple | None = None  # (inputs, outputs) as the running rule sees them

    def save_for_backward(self, *values: Any) -> None:
        """Keep ``values`` (inputs, outputs, or other arrays) for ``backward``/``jvp``.

        Inputs and outputs of ``forward`` are not copied: they are recorded as
        such and are differentiable again under higher-order transforms.
        Other values are constants; they cannot be used under a nested
        transform (a clear error says so), since how they depend on the
        inputs is unknown.
        """
        if self._spec is not None:
            raise RuntimeError(f"{self._cls.__name__}: save_for_backward can only be called in forward")
        self._pending = values

    @property
    def saved_tensors(self) -> tuple:
        """The values given to ``save_for_backward``, as the running rule sees them."""
        if self._spec is None:
            return tuple(self._pending or ())
        if self._view is None:
            raise RuntimeError(f"{self._cls.__name__}: saved_tensors is only available inside "
                               "backward and jvp")
        inputs, outputs = self._view
        nested = any(isinstance(v, Value) for v in (*inputs, *outputs))
        out = []
        for k, (kind, what) in enumerate(self._spec):
            if kind == "in":
                out.append(inputs[what])
            elif kind == "out":
                out.append(outputs[what])
            else:
                if nested:
                    raise RuntimeError(
                        f"{self._cls.__name__}: saved value {k} is neither an input nor an output of "
                        "forward, so how it depends on the inputs is unknown, and a nested or "
                        "higher-order derivative (create_graph=True, a transform over another) "
                        "through it would be wrong; save the inputs or outputs it is computed from "
                        "and recompute it in backward/jvp")
                out.append(what)
        return tuple(out)


class Function:
    """Base class of custom differentiable operations, PyTorch-style.

    Subclasses define static methods:

    - ``forward(ctx, *args)``: the value, on raw arrays and floats (never
      value types); returns one array or a tuple of arrays.
    - ``backward(ctx, *grads)``: one cotangent per output in, one gradient
      per argument of ``forward`` out (``None`` for none); each gradient has
      its input's shape.
    - ``jvp(ctx, *tangents)`` (optional, for forward mode): one tangent per
      argument in (zeros where the argument has none; ``None`` for
      non-array arguments), one tangent per output out.

    One of the two is enough for both modes where it is ``jvp``: without
    ``backward``, reverse mode transposes ``jvp`` (linear in the tangents,
    written with array operations), as JAX derives a ``custom_jvp``'s VJP;
    each backward step then evaluates ``jvp`` once, recorded, and walks it
    back. Without ``jvp``, forward mode raises.

    Call ``Cls.apply(*args)``. Array and float arguments may be ``Tensor``,
    ``dualad.Dual``, ``HyperDual`` or plain arrays; other arguments (ints,
    strings, ``None``) are passed to ``forward`` as constants.

    ``backward`` and ``jvp`` get raw values at first order. Under
    ``create_graph=True`` or nested transforms they get the value types of
    the outer levels, so write them with array operations (operators, NumPy
    functions, ``dualad.ops``) and take inputs and outputs from
    ``ctx.saved_tensors``; then they are differentiated in turn.

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> from reverse import Function, Tensor
    >>> class Cube(Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x ** 3
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         (x,) = ctx.saved_tensors
    ...         return 3.0 * x ** 2 * g
    ...     @staticmethod
    ...     def jvp(ctx, t):
    ...         (x,) = ctx.saved_tensors
    ...         return 3.0 * x ** 2 * t
    >>> x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    >>> Cube.apply(x).sum().backward()
    >>> x.grad
    Tensor(array([ 3., 12.]))
    >>> dualad.derivative(Cube.apply)(2.0)
    12.0

    A ``jvp`` alone serves reverse mode too:

    >>> import reverse
    >>> class Softplus(Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return np.logaddexp(0.0, x)
    ...     @staticmethod
    ...     def jvp(ctx, t):
    ...         (x,) = ctx.saved_tensors
    ...         return t / (1.0 + np.exp(-x))
    >>> reverse.grad(lambda x: Softplus.apply(x).sum())(np.array([0.0, 1000.0]))
    array([0.5, 1. ])
    """

    _primitive: Primitive | None = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        name = cls.__name__
        # A user's op is not an entry of the built-in table (whose tests and
        # benchmarks iterate over it), and must not shadow one of the same name.
        # With a jvp and no backward, the table transposes the jvp (JAX's custom_jvp).
        jvp_only = cls.backward is Function.backward and getattr(cls, "jvp", None) is not None
        cls._primitive = custom(
            name, _make_impl(cls), jvp=_make_jvp(cls), vjp=None if jvp_only else _make_vjp(cls),
            multiple_results=True, scalar_ok=True, register=False)

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any) -> Any:
        raise NotImplementedError("subclasses of Function define @staticmethod forward(ctx, *args)")

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> Any:
        raise NotImplementedError("subclasses of Function define @staticmethod backward(ctx, *grads)")

    @classmethod
    def apply(cls, *args: Any) -> Any:
        """Run ``forward`` on ``args``, recording it for every transform present."""
        if cls._primitive is None:
            raise TypeError("apply is called on a subclass of Function, not on Function itself")
        operands, layout = split_operands(args)
        ctx = FunctionCtx(cls, tuple(_tracks_derivative(a) if o is _OPERAND else False
                                     for a, o in zip(args, layout)), tuple(layout))
        outs = bind(cls._primitive, *operands, ctx=ctx)
        return outs[0] if ctx._single else outs


_OPERAND = object()  # marks an operand's place among the arguments of apply


def _is_operand(a: Any) -> bool:
    """Arrays, floats and value types are operands; other arguments are constants."""
    if isinstance(a, (Value, float)):
        return True
    if type(a) in SCALAR_TYPES or a is None or isinstance(a, (str, bytes, tuple, list, dict)):
        return False
    return hasattr(a, "shape") and hasattr(a, "dtype")


def _tracks_derivative(a: Any) -> bool:
    """Whether some transform active in this thread tracks a derivative of ``a``."""
    cut = get_cut()
    while isinstance(a, Value):
        if a._level >= cut and (not isinstance(a, Tensor) or a.requires_grad):
            return True
        a = a._strip()
    return False


def split_operands(items) -> tuple[list, list]:
    """The operands among ``items``, and a layout holding ``_OPERAND`` in their
    places and the constants themselves elsewhere."""
    operands, layout = [], []
    for a in items:
        if _is_operand(a):
            layout.append(_OPERAND)
            operands.append(a)
        else:
            layout.append(a)
    return operands, layout


def merge_operands(layout, operands, fill=None) -> list:
    """Inverse of :func:`split_operands`: operands in place, constants (or ``fill(c)``) elsewhere."""
    it = iter(operands)
    return [next(it) if o is _OPERAND else (o if fill is None else fill(o)) for o in layout]


def _full_args(ctx: FunctionCtx, operands, fill=None) -> list:
    """The arguments of ``forward`` in order."""
    return merge_operands(ctx._layout, operands, fill)


def _make_impl(cls):
    def impl(xp, *operands, ctx):
        out = cls.forward(ctx, *_full_args(ctx, operands))
        single = not isinstance(out, tuple)
        outs = (out,) if single else out
        for j, o in enumerate(outs):
            if not _is_operand(o) or isinstance(o, Value):
                raise TypeError(f"{cls.__name__}.forward must return arrays or floats (or a tuple of "
                                f"them), got {type(o).__name__} for output {j}")
        spec = []
        for v in ctx._pending or ():
            i = next((i for i, x in enumerate(operands) if x is v), None)
            j = None if i is not None else next((j for j, o in enumerate(outs) if o is v), None)
            spec.append(("in", i) if i is not None else ("out", j) if j is not None else ("val", v))
        ctx._spec, ctx._pending, ctx._single = tuple(spec), None, single
        return outs
    impl.__name__ = f"{cls.__name__}.forward"
    return impl


def _make_jvp(cls):
    def jvp(primals, tangents, ans, *, ctx):
        rule = getattr(cls, "jvp", None)
        if rule is None:
            raise NotImplementedError(
                f"{cls.__name__} has no jvp, so forward mode (dualad.Dual, dualad.jvp, jacfwd, "
                f"hessian, forward-over-reverse) cannot differentiate it; define "
                f"@staticmethod jvp(ctx, *tangents) on {cls.__name__}, returning one tangent per output")
        tangents = [zeros(p) if t is None else t for p, t in zip(primals, tangents)]
        full = _full_args(ctx, tangents, fill=lambda c: None)
        ctx._view = (tuple(primals), tuple(ans))
        try:
            out = rule(ctx, *full)
        finally:
            ctx._view = None
        if ctx._single and not isinstance(out, tuple):
            out = (out,)
        outs = out
        if not isinstance(outs, (tuple, list)) or len(outs) != len(ans):
            got = len(outs) if isinstance(outs, (tuple, list)) else 1
            raise ValueError(f"{cls.__name__}.jvp returned {got} tangents; forward has "
                             f"{len(ans)} outputs, so it must return {len(ans)}")
        return tuple(None if t is None else _conform(cls, "jvp", "tangent of output", j, t, a)
                     for j, (t, a) in enumerate(zip(outs, ans)))
    return jvp


def _make_vjp(cls):
    def vjp(g, ans, *operands, ctx):
        ctx._view = (operands, tuple(ans))
        try:
            grads = cls.backward(ctx, *g)
        finally:
            ctx._view = None
        if not isinstance(grads, tuple):
            grads = (grads,)
        n = len(ctx._layout)
        if len(grads) != n:
            raise ValueError(f"{cls.__name__}.backward returned {len(grads)} gradients; forward has "
                             f"{n} inputs, so it must return {n} (None for an input without one)")
        out = []
        for i, (gi, o) in enumerate(zip(grads, ctx._layout)):
            if o is not _OPERAND:
                if gi is not None:
                    raise TypeError(f"{cls.__name__}.backward returned a gradient for input {i}, "
                                    f"a {type(o).__name__} constant; return None for it")
                continue
            x = operands[len(out)]
            out.append(None if gi is None else _conform(cls, "backward", "gradient of input", i, gi, x))
        return tuple(out)
    return vjp


def _conform(cls, rule: str, what: str, i: int, t: Any, like: Any) -> Any:
    """Check a returned tangent or gradient against its primal; match the dtype."""
    if not is_operand(t):
        raise TypeError(f"{cls.__name__}.{rule} returned {describe(t)} as the {what} {i}; expected "
                        f"an array or float of shape {shape_of(like)} (or None for no {what.split()[0]})")
    if shape_of(t) != shape_of(like):
        raise ValueError(f"{cls.__name__}.{rule} returned a {what} {i} of shape {shape_of(t)}; "
                         f"expected {shape_of(like)}, the shape of the {what.split()[-1]}")
    rt, rl = raw(t), raw(like)
    if type(rl) not in SCALAR_TYPES and type(rt) not in SCALAR_TYPES and dtype_of(rt) != dtype_of(rl):
        t = ops.astype(t, dtype_of(rl))
    return t


def once_differentiable(backward: Callable) -> Callable:
    """Mark a ``Function``'s ``backward`` as differentiable once only, as PyTorch's
    ``torch.autograd.function.once_differentiable``.

    The decorated ``backward`` always gets plain arrays (its arguments and
    ``ctx.saved_tensors`` without their derivatives) and runs under
    ``no_grad``, so it may use code that cannot be differentiated: NumPy
    calls with ``out=``, SciPy, loops writing into buffers. Its gradients are
    right at first order. Differentiating them again (a second backward
    after ``create_graph=True``, a transform over reverse mode, or
    forward-over-reverse such as ``mixed.hvp``) raises a ``RuntimeError``
    naming the Function, where it would otherwise be wrong: PyTorch raises
    only when a gradient flowing into the backward requires grad, and
    otherwise drops the term.

    Examples
    --------
    >>> import numpy as np
    >>> from reverse import Function, Tensor, gradients, once_differentiable
    >>> class Cos(Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.x = x  # an attribute will do: backward is differentiated once only
    ...         return np.cos(x)
    ...     @staticmethod
    ...     @once_differentiable
    ...     def backward(ctx, g):
    ...         return np.negative(np.sin(ctx.x), out=np.empty_like(g)) * g
    >>> x = Tensor(np.array([0.0, 1.0]), requires_grad=True)
    >>> (g,) = gradients(Cos.apply(x).sum(), [x], create_graph=True)
    >>> np.allclose(g.value, -np.sin([0.0, 1.0]))
    True
    >>> try:
    ...     gradients(g.sum(), [x])
    ... except RuntimeError as err:
    ...     print(str(err).split(":")[0])
    Cos.backward is marked @once_differentiable
    """
    @functools.wraps(backward)
    def once(ctx: FunctionCtx, *grads: Any) -> Any:
        view = ctx._view
        carried = [v for v in (*grads, *view[0], *view[1]) if isinstance(v, Value)]
        ctx._view = tuple(tuple(raw(v) for v in part) for part in view)
        try:
            with no_grad():
                out = backward(ctx, *[raw(g) for g in grads])
        finally:
            ctx._view = view
        if not carried:
            return out
        # Each gradient depends on the values that carry derivatives, through a primitive
        # whose own derivative is the error: a differentiation that reaches it raises.
        name = ctx._cls.__name__
        single = not isinstance(out, tuple)
        outs = tuple(bind(_once_p, o, *carried, function=name) if is_operand(o) else o
                     for o in ((out,) if single else out))
        return outs[0] if single else outs
    return once


def _differentiated_twice(*args: Any, function: str) -> None:
    raise RuntimeError(
        f"{function}.backward is marked @once_differentiable: its gradient cannot be differentiated "
        "again (a second backward after create_graph=True, a transform over reverse mode, or "
        "forward-over-reverse such as mixed.hvp); write backward with array operations (dualad.ops, "
        "NumPy functions on its arguments) and drop the decorator to differentiate it")


# The identity on a once_differentiable gradient, with the values its backward read as
# further (unused) operands; its JVP and VJP are the error above.
_once_p = custom("once_differentiable", lambda xp, g, *carried, function: g,
                 jvp=_differentiated_twice, vjp=_differentiated_twice, saves="none", scalar_ok=True,
                 register=False)

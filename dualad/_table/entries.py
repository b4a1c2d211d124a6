"""The primitive table: its entries, and how each kind of entry derives its modes.

A primitive is made once, by one of the constructors at the end of this
module, from ``impl(xp, *args, **params)`` and its derivative in one form:

- :func:`elementwise`: one local partial per argument; the JVP (sum of
  partial times tangent) and the VJP (cotangent times partial, summed over
  broadcast axes) are both derived from them, so the modes cannot drift.
- :func:`linear`: the JVP applies the primitive to the tangents and a
  ``transpose`` gives the VJP; ``batch`` says how to prefix a chunk axis.
- :func:`custom`: an explicit JVP and VJP written side by side.
- :func:`zero_derivative` (a float result that carries no derivative) and
  :func:`non_differentiable` (a boolean or integer result, returned as a
  plain array in every mode).

Every entry answers the same three questions, so an interpreter never asks
which kind it holds: ``jvp`` (the output tangent, ``None`` for zero),
``residuals`` (what a tape keeps at record time) and ``vjp`` (input
cotangents, ``None`` where not needed or zero). ``records`` is False where
no mode tracks a derivative, and ``plain_output`` where the result is never
wrapped in a value type.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from dualad._base.backend import SCALAR_TYPES
from dualad._base.core import bind
from dualad._base.reverse_mode import registered_vjp
from dualad._base.shapes import dtype_of, is_complex, ndim_of, raw, shape_of, zeros
from dualad._table import batching, operations
from dualad._table import ownership as _inplace
from dualad._table.vjp import Dropped, aval, cotangent_for, scale, small_product, unbroadcast_scaled

__all__ = ["NONZERO", "POSITIVE", "REAL", "REGISTRY", "UNIT", "Primitive", "custom", "elementwise",
           "linear", "moves_elements", "non_differentiable", "piecewise_linear_at", "zero_derivative"]

REGISTRY: dict[str, "Primitive"] = {}


def _registered(name: str) -> "Primitive":
    """The registered entry ``name``: what a pickled one becomes (see ``Primitive.__reduce_ex__``)."""
    return REGISTRY[name]

# Where an elementwise entry is smooth in one argument: a tuple of open intervals.
REAL = ((-math.inf, math.inf),)
POSITIVE = ((0.0, math.inf),)
NONZERO = ((-math.inf, 0.0), (0.0, math.inf))
UNIT = ((-1.0, 1.0),)


class Primitive:
    """One entry of the table; made by :func:`elementwise`, :func:`linear`,
    :func:`custom`, :func:`zero_derivative` or :func:`non_differentiable`.

    ``saves`` says what the tape keeps for the VJP: ``"all"`` (inputs and
    output), ``"inputs"``, ``"output"``, ``"cross"`` (a binary product:
    each input only if the other needs a cotangent), ``"none"`` or
    ``"avals"`` (shapes and dtypes only). ``residual(ans, *args,
    **params)``, when given, replaces them with something smaller computed
    at record time (a mask, a weight).

    ``broadcasts`` says that the entry applies entry by entry to operands that
    broadcast (every elementwise entry, and comparisons, ``floor``, ...), so
    :func:`dualad.vmap` applies it to a whole batch at once.

    ``fresh`` is the entry's declaration of which of its rules' results are
    fresh (the ``fresh=`` of its constructor): the local partials of an
    elementwise entry, the VJP cotangents of a linear or custom one, by
    position. Each array a fresh result holds is new memory, shared with
    nothing the rule was given nor kept by it, or a view (never written); a
    fresh cotangent may also be the cotangent handed on as it is, and a
    partial of Dual arguments may keep an argument's tangent (Dual arithmetic
    adding a constant does), which the caller tells by identity
    (``dualad._table.ownership.made_by_call``).
    The code calling the rule may then write into it. ``fresh_cotangents``
    is what a reverse pass reads: for one of dualad's elementwise entries
    every cotangent, since those are products it computes (a partial of 1
    hands the cotangent on as it is). Nothing is fresh unless declared; the
    table's tests check every declaration on every case.

    ``piecewise_linear`` declares that the JVP is linear in the tangents with
    coefficients constant wherever the primals' comparisons hold (``add``,
    ``maximum``, ``where``, ``abs`` of real values, ``max``, ``gather``): its
    second and higher derivatives vanish there, so a Taylor series passes
    through it coefficient by coefficient and a Hessian's pattern gains nothing
    from it, on real operands (``abs`` of a complex number is smooth; see
    :func:`piecewise_linear_at`). The table's tests check every declaration.

    ``moves_elements`` declares that the impl only selects, copies or
    rearranges its operands' elements, whatever their dtype (``getitem``,
    ``reshape``, ``concatenate``, ``pad``'s zeros aside): run on arrays of
    element names, it says where each output element comes from. Program
    executors that unroll small arrays move names through it. It may be a
    function of the step's parameters (a scatter by basic indices moves
    elements; by index arrays it adds them); :func:`moves_elements` asks.

    ``builtin`` marks the entries of dualad's own table (:func:`seal_builtins`),
    whose derived products the code calling them may write into.

    What the program passes and executors may rely on is declared on the entry
    (:meth:`declare`), never looked up by its name: ``ufunc``, ``ufunc_params``,
    ``scalar_form``, ``new_array`` and ``simplifications``. ``effect``,
    ``format`` and ``takes_out`` are those of every program step
    (``dualad._program.ir.Step``): an entry has no effect, prints as a call of
    its impl and is not itself called with ``out=``.

    Examples
    --------
    >>> from dualad import Primitive
    >>> from dualad.extend import REGISTRY
    >>> sin = REGISTRY["sin"]
    >>> sin, isinstance(sin, Primitive), sin.name
    (Elementwise('sin'), True, 'sin')
    """

    __slots__ = ("name", "impl", "multiple_results", "scalar_ok", "saves", "residual",
                 "builtin", "broadcasts", "ufunc", "ufunc_params", "scalar_form", "new_array",
                 "simplifications", "fresh", "piecewise_linear", "moves_elements", "sparsity",
                 "second_order", "taylor", "partition", "combine", "lowering", "__weakref__")
    records = True          # some mode tracks a derivative through it
    plain_output = False    # every mode returns its result as a raw array
    effect = False          # as a program step: a replay may skip, merge or fold it
    format = None           # as a program step: printed as a call of its impl
    takes_out = False       # as a program step: not itself called with out= (see ``ufunc``)
    partials = None         # local partials, for entries that have them (elementwise)
    add_transpose = None    # adds a cotangent in place, for linear entries that can
    linear_args: tuple | None = ()  # the arguments it is linear in (None: all; linear entries)

    def __init__(self, name: str, impl: Callable, *, multiple_results: bool = False,
                 scalar_ok: bool = False, saves: str = "all", residual: Callable | None = None,
                 register: bool = True, **facts: Any):
        if not callable(impl):
            raise TypeError(f"primitive {name!r}: impl must be callable, got {type(impl).__name__}")
        self.name = name
        self.impl = impl
        self.multiple_results = multiple_results
        self.scalar_ok = scalar_ok
        self.saves = saves
        self.residual = residual
        self.builtin = False
        self.declare(**facts)
        if register:
            REGISTRY[name] = self

    def __reduce_ex__(self, protocol: Any) -> Any:
        """A registered entry pickles as its name (a program sent to a Dask worker, which has
        the same table); another as its attributes."""
        if REGISTRY.get(self.name) is self:
            return _registered, (self.name,)
        return super().__reduce_ex__(protocol)

    def declare(self, *, ufunc: str | None = None, ufunc_params: dict | None = None,
                scalar_form: str | None = None, new_array: bool = False,
                simplifications: tuple = (), fresh: Any = (), broadcasts: bool = False,
                piecewise_linear: bool = False, moves_elements: bool | Callable = False,
                sparsity: str | None = None, second_order: str | None = None,
                taylor: str | None = None, partition: str | None = None,
                combine: str | None = None, lowering: str | None = None) -> "Primitive":
        """Declare what the interpreters and program passes may rely on (all of it
        checked against the impl by ``tests/dualad/table/test_entries.py``), every
        fact at once; returns the entry.

        ``ufunc``: the name of the NumPy ufunc that the impl equals on NumPy, bit
        for bit, called with the parameters ``ufunc_params`` (none by default),
        so that a replay may call it with ``out=``. ``scalar_form``: the Python
        expression on floats (``"{0} + {1}"``) that equals that ufunc on float64
        numbers, bit for bit. ``new_array``: the impl on NumPy reads its operands
        into a new array, never a view, and keeps no reference to them.
        ``simplifications``: the names of the exact rewrites of
        ``dualad._program.passes.simplify`` that hold for the entry. ``fresh``:
        which of its rules' results are fresh (positions, or True for all; see
        the class's docstring): ``lambda ans, x: ops.cos(x)`` is,
        ``lambda ans, x, y: y`` is not. ``broadcasts``, ``piecewise_linear`` and
        ``moves_elements``: see the class's docstring.

        What the other interpreters read, each by a kind that names its rule there:
        ``sparsity``, the pattern of the Jacobian (``dualad.sparsity_rules``):
        ``"selection"``, ``"gather"``, ``"scatter"``, ``"reduction"``,
        ``"cumsum"`` or ``"matmul"`` (by default ``"elementwise"`` for an entry that
        broadcasts, ``"constant"`` for one with no derivative, else the dense
        fallback); ``second_order``, the pattern of its Hessian where it is
        bilinear: ``"product"``, ``"quotient"`` or ``"matmul"`` (by default linear
        entries are linear and others nonlinear); ``taylor``, its recurrence in
        Taylor mode (``dualad.jet_rules``): ``"product"``, ``"quotient"``,
        ``"square"``, ``"exp"``, ``"log"``, ``"sqrt"``, ``"sin"``, ``"cos"``,
        ``"tanh"``, ``"power"`` or ``"integer_pow"`` (by default its JVP, linear
        or differentiated along the series); ``partition``, its rule where an operand
        is split into chunks along an axis (``dualad._program.passes.partition``):
        ``"matmul"``, ``"permute_dims"``, ``"reshape"``, ``"broadcast_to"``,
        ``"getitem"``, ``"concatenate"`` or ``"reduction"`` (by default an entry that
        broadcasts is split as it is, others not at all), with ``combine``, for a
        reduction, the entry's name whose ufunc combines the chunks' partial results
        (``"add"`` for ``sum``); ``lowering``, what a loop nest of
        ``dualad._program.lowering`` may make of it besides a declared ufunc:
        ``"where"`` (a choice by a condition), ``"sum"`` (a sum a nest may end in),
        ``"scatter"`` (a sum of two ranges a nest may end in) or ``"view"`` (a slice
        a nest reads at an offset).
        """
        self.ufunc, self.ufunc_params = ufunc, {} if ufunc_params is None else ufunc_params
        self.scalar_form, self.new_array = scalar_form, new_array
        self.simplifications = tuple(simplifications)
        self.fresh = _declared(fresh)
        self.broadcasts, self.piecewise_linear = broadcasts, piecewise_linear
        self.moves_elements = moves_elements
        self.sparsity, self.second_order, self.taylor = sparsity, second_order, taylor
        self.partition, self.combine, self.lowering = partition, combine, lowering
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    @property
    def fresh_cotangents(self) -> Any:
        """The positions of the VJP's cotangents that are fresh (see ``fresh``)."""
        return self.fresh

    @property
    def saves_values(self) -> bool:
        """Whether a record keeps input or output values (``(ans, args)``), which a
        later in-place update could invalidate, rather than shapes or a residual."""
        return self.residual is None and self.saves != "avals"

    # -- the three questions every interpreter asks --------------------------------
    def jvp(self, primals: tuple, tangents: list, ans: Any, params: dict, nb: int) -> Any:
        """The output tangent (a tuple for several results), or ``None`` for zero.

        ``tangents`` holds ``None`` for constant operands; ``nb`` is 1 when the
        tangents carry a leading axis of directions (a chunk).
        """
        raise NotImplementedError

    def residuals(self, ans: Any, args: tuple, params: dict, needs: tuple | None = None) -> Any:
        """What the VJP needs, computed when the operation is recorded.

        ``needs`` says which inputs will get a cotangent; values that no needed
        rule reads are replaced by :class:`Dropped`, so a tape does not keep
        temporaries alive for nothing.
        """
        if self.residual is not None:
            return self.residual(ans, *args, **params), tuple([aval(a) for a in args])
        saves = self.saves
        if saves == "all":
            return ans, tuple(args)
        if saves == "inputs":
            return None, tuple(args)
        if saves == "cross":
            x, y = args
            if needs is None:
                return None, tuple(args)
            return None, (x if needs[1] else Dropped.of(x), y if needs[0] else Dropped.of(y))
        if saves == "output":
            return ans, Dropped.all(args)
        if saves == "avals":
            return tuple([aval(a) for a in args])
        return Dropped.nothing(args)

    def vjp(self, g: Any, res: Any, needs: tuple, params: dict) -> tuple:
        """Cotangents of the inputs (``None`` where not needed or zero)."""
        raise NotImplementedError

    def batch(self, vals: list, batched: list, params: dict, k: int) -> Any:
        """The entry applied to a batch of ``k`` elements at once (``dualad.vmap``): the
        operands flagged in ``batched`` carry the batch on their leading axis, and so does
        the result. An entry that ``broadcasts`` broadcasts the batch; one that declares
        nothing else is applied one element at a time (see ``dualad._table.batching``)."""
        if self.broadcasts:
            return batching.broadcasting(self, vals, batched, params)
        return batching.one_element_at_a_time(self, vals, batched, params, k)


# -- which results of an entry's rules are fresh ----------------------------------------
class _Every:
    """``fresh=True``: every position."""

    __slots__ = ()

    def __contains__(self, i: object) -> bool:
        return True

    def __repr__(self) -> str:
        return "EVERY"


EVERY = _Every()
NOTHING: frozenset = frozenset()


def _declared(fresh: Any) -> Any:
    """A constructor's ``fresh=``: True for every position, else the positions given."""
    return EVERY if fresh is True else frozenset(fresh) if fresh else NOTHING


# -- elementwise: local partials -----------------------------------------------------
class Elementwise(Primitive):
    __slots__ = ("partials", "domain")

    @property
    def fresh_cotangents(self) -> Any:
        """Every cotangent, for dualad's own entries: products, negations or selections
        of their partials (``scale``), new memory, or the cotangent itself for a partial
        of 1 (told by identity). A user's partial may return a value whose product is
        not new: nothing, as for every rule of a user's entry not declared fresh."""
        return EVERY if self.builtin else NOTHING


    def jvp(self, primals, tangents, ans, params, nb):
        """Sum of local partial times tangent, broadcast to the output."""
        out, owned, track = None, False, None
        unary = len(primals) == 1
        ans_ndim = ndim_of(ans) if nb and not unary else 0
        fresh = self.fresh
        for i, (partial, t, x) in enumerate(zip(self.partials, tangents, primals)):
            if t is None:
                continue
            p = partial(ans, *primals, **params)
            if p is None:
                continue
            if ans_ndim and ndim_of(x) < ans_ndim:  # keep the batch axis in front
                s = shape_of(t)
                t = operations.reshape(t, s[:1] + (1,) * (ans_ndim - ndim_of(x)) + s[1:])
            if track is None:  # ownership is worth asking about only for large tangents
                track = self.builtin and _inplace.is_large(t)
            if out is not None and type(p) is int and p == -1:
                out, owned = _inplace.sub(out, t, owned, track=track)  # one pass, not negate and add
                continue
            p_owned = track and i in fresh and _inplace.made_by_call(p, (ans, primals))
            term, term_owned = scale(p, t, p_owned, track)
            if out is None:
                out, owned = term, term_owned
            else:
                out, owned = _inplace.add(out, term, owned, term_owned, track)
        if out is None or unary:  # a unary partial has the shape and dtype of its input
            return out
        out_shape = shape_of(out)
        want = out_shape[:1] + shape_of(ans) if nb else shape_of(ans)
        if type(out) in SCALAR_TYPES and want:  # only a Python number moved: into ans's backend
            return _inplace.add(zeros(ans, want), out, True)[0]
        if out_shape != want:
            out = operations.broadcast_to(out, want)
        r_out = raw(out)
        if type(r_out) not in SCALAR_TYPES:
            r_ans = raw(ans)
            if r_out.dtype != dtype_of(r_ans):
                out = operations.astype(out, r_ans.dtype)
        return out

    def vjp(self, g, res, needs, params):
        if self.residual is not None:
            partials, avals = res
            return tuple(None if p is None or not need else
                         cotangent_for(unbroadcast_scaled(g, p, av[0]), av)
                         for p, need, av in zip(partials, needs, avals))
        ans, args = res
        if len(args) == 1:  # sin, exp, tanh, ...: one partial, no loop (a tape's most common step)
            if not needs[0]:
                return (None,)
            # By position where there are no params: a call through *args/**params is not
            # inlined by CPython (see benchmarks/README.md, "Tape per-operation cost").
            p = self.partials[0](ans, *args, **params) if params else self.partials[0](ans, args[0])
            if p is None:
                return (None,)
            c = small_product(g, p, args[0])
            return (self._cotangent(0, g, p, ans, args) if c is None else c,)
        partials = self.partials
        cots = [None] * len(args)
        for i in range(len(args)):  # by index, not enumerate(zip()): see benchmarks/README.md
            if needs[i]:
                p = partials[i](ans, *args, **params) if params or len(args) != 2 \
                    else partials[i](ans, args[0], args[1])
                if p is not None:
                    c = small_product(g, p, args[i])
                    cots[i] = self._cotangent(i, g, p, ans, args) if c is None else c
        return tuple(cots)

    def _cotangent(self, i, g, p, ans, args):
        """The cotangent of input ``i`` for its partial ``p``, by the general route
        (broadcasting, casts, ownership) that ``small_product`` declined."""
        owned = i in self.fresh and _inplace.is_large(g) and _inplace.made_by_call(p, (ans, args))
        return cotangent_for(unbroadcast_scaled(g, p, shape_of(args[i]), owned), args[i])


# -- linear: the primitive itself is the JVP, a transpose the VJP --------------------
class Linear(Primitive):
    __slots__ = ("transpose", "linear_args", "batch_params", "add_transpose")

    def batch(self, vals, batched, params, k):
        """The batch as a chunk of directions (``batch_params``), where the batched operands
        are linear ones and the parameters take a leading axis; else one element at a time."""
        if self.broadcasts:
            return batching.broadcasting(self, vals, batched, params)
        out = batching.as_chunk(self, list(vals), batched, params, k)
        return batching.one_element_at_a_time(self, vals, batched, params, k) if out is None else out

    def jvp(self, primals, tangents, ans, params, nb):
        lin = range(len(primals)) if self.linear_args is None else self.linear_args
        if all(tangents[i] is None for i in lin):
            return None
        k = 0
        if nb:
            k = next(shape_of(tangents[j])[0] for j in lin if tangents[j] is not None)
            batched = self.batch_params(params, k)
            if batched is None:  # these parameters cannot take a leading batch axis
                return one_direction_at_a_time(
                    lambda ts: self.jvp(primals, ts, ans, params, 0), tangents, ans, False)
            params = batched
        args = list(primals)
        for i in lin:
            t = tangents[i]
            if t is None:
                shape = shape_of(primals[i])
                t = zeros(primals[i], (k,) + shape if nb else shape)
            args[i] = t
        return bind(self, *args, **params)

    def vjp(self, g, res, needs, params):
        cots = self.transpose(g, *res, **params)
        return tuple(cotangent_for(c, x) if need else None for c, need, x in zip(cots, needs, res))


# -- custom: a JVP and a VJP side by side ----------------------------------------------
class Custom(Primitive):
    __slots__ = ("jvp_rule", "vjp_rule", "chunked", "core_ndims", "batch_rule")

    def batch(self, vals, batched, params, k):
        """The entry's own batch rule, or its impl on stacked operands where it declares
        ``core_ndims``; else one element at a time."""
        out = None
        if self.batch_rule is not None:
            out = self.batch_rule(list(vals), batched, params, k)
        elif self.core_ndims is not False:
            out = batching.stacked(self, self.core_ndims, list(vals), batched, params)
        return batching.one_element_at_a_time(self, vals, batched, params, k) if out is None else out

    def jvp(self, primals, tangents, ans, params, nb):
        if all(t is None for t in tangents):
            return None
        if not nb or self.chunked:
            return self.jvp_rule(primals, tangents, ans, **params)
        return one_direction_at_a_time(lambda ts: self.jvp_rule(primals, ts, ans, **params),
                                       tangents, ans, self.multiple_results)

    def vjp(self, g, res, needs, params):
        rule = self.vjp_rule
        if rule is None:
            return self._transposed_jvp(g, res, needs, params)
        if self.residual is not None:
            cots, inputs = rule(g, res[0], **params), res[1]
        else:
            ans, inputs = res
            if isinstance(rule, tuple):  # one rule per input: skip what nobody needs
                return tuple(cotangent_for(r(g, ans, *inputs, **params), x) if need else None
                             for r, need, x in zip(rule, needs, inputs))
            cots = rule(g, ans, *inputs, **params)
        return tuple(cotangent_for(c, x) if need else None for c, need, x in zip(cots, needs, inputs))

    def _transposed_jvp(self, g, res, needs, params):
        """The VJP of an entry given only its JVP, as JAX derives a ``custom_jvp``'s: the
        JVP at the recorded point is linear in the tangents, and the registered reverse
        mode pulls ``g`` back through it (one JVP evaluation, recorded, then walked back)."""
        ans, inputs = res
        wanted = [i for i, need in enumerate(needs) if need]
        outs = ans if self.multiple_results else (ans,)

        def tangent_map(*ts):
            tangents = [None] * len(inputs)
            for i, t in zip(wanted, ts):
                tangents[i] = t
            out = self.jvp_rule(list(inputs), tangents, ans, **params)
            out = out if self.multiple_results else (out,)
            return tuple(zeros(a) if t is None else t for t, a in zip(out, outs))

        vjp = registered_vjp(f"the VJP of {self.name!r}, derived from its JVP",
                             "or give the entry a vjp")
        _, pullback = vjp(tangent_map, *[zeros(inputs[i]) for i in wanted])
        gs = g if self.multiple_results else (g,)
        cots = pullback(tuple(zeros(a) if gj is None or isinstance(gj, Dropped) else gj
                                 for gj, a in zip(gs, outs)))
        it = iter(cots)
        return tuple(cotangent_for(next(it), x) if need else None for need, x in zip(needs, inputs))


# -- no derivative ----------------------------------------------------------------------
class ZeroDerivative(Primitive):
    __slots__ = ()
    records = False

    def jvp(self, primals, tangents, ans, params, nb):
        return None

    def vjp(self, g, res, needs, params):
        return (None,) * len(needs)


class NonDifferentiable(ZeroDerivative):
    __slots__ = ()
    plain_output = True


# -- chunks that a rule cannot take at once ---------------------------------------------
def one_direction_at_a_time(rule: Callable, tangents: list, ans: Any, multiple: bool) -> Any:
    """``rule`` applied to each of a chunk's k directions, the results stacked."""
    k = next(shape_of(t)[0] for t in tangents if t is not None)
    outs = [rule([None if t is None else t[i, ...] for t in tangents]) for i in range(k)]  # (array API)
    if multiple:
        return tuple(_stack_or_none([o[j] for o in outs], a) for j, a in enumerate(ans))
    return _stack_or_none(outs, ans)


def _stack_or_none(ts, like):
    if all(t is None for t in ts):
        return None
    return operations.stack([zeros(like) if t is None else t for t in ts], axis=0)


# -- constructors -------------------------------------------------------------------------
def elementwise(name: str, impl: Callable, *partials: Callable, saves: str = "inputs",
                save_partials: bool = False, domain: tuple | None = None,
                **facts: Any) -> Elementwise:
    """An entry given by its local partials, one per argument.

    ``partials[i](ans, *args, **params)`` is d ans / d args[i] elementwise:
    an array or value, ``1``/``-1`` (an int: no multiplication happens), a
    boolean mask (selects), or ``None`` (no dependence). With
    ``save_partials`` the tape keeps the partials instead of the inputs.
    ``domain[i]`` is the tuple of open intervals ``(lo, hi)`` on which the
    entry is smooth in argument ``i`` (default :data:`REAL` for each, or
    :data:`POSITIVE`, :data:`NONZERO`, :data:`UNIT`): it says where the
    derivative exists, and the table's tests draw their inputs from it.
    ``facts`` are those of :meth:`Primitive.declare` (``ufunc="sin"``).

    Examples
    --------
    >>> from dualad import bind, derivative
    >>> from dualad.extend import elementwise
    >>> from dualad import ops
    >>> cube = elementwise("my_cube", lambda xp, x: x * x * x, lambda ans, x: 3.0 * ops.square(x))
    >>> derivative(lambda x: bind(cube, x))(2.0)
    12.0
    >>> from dualad.extend import unregister
    >>> unregister("my_cube")
    """
    if domain is None:
        domain = (REAL,) * len(partials)
    if len(domain) != len(partials) or not all(
            iv and all(len(i) == 2 and i[0] < i[1] for i in iv) for iv in domain):
        raise ValueError(f"elementwise {name!r}: domain must give, for each of the {len(partials)} "
                         f"arguments, a tuple of intervals (lo, hi) with lo < hi; got {domain!r}")
    prim = Elementwise(name, impl, scalar_ok=True, saves=saves, broadcasts=True, **facts)
    prim.partials, prim.domain = partials, tuple(domain)
    if save_partials:
        prim.residual = lambda ans, *args, **params: tuple(p(ans, *args, **params) for p in partials)
    return prim


def linear(name: str, impl: Callable, transpose: Callable, *, batch: Callable | None = None,
           linear_args: tuple | None = (0,), scalar_ok: bool = False,
           add_transpose: Callable | None = None, **facts: Any) -> Linear:
    """An entry linear in the arguments at ``linear_args`` (all of them for ``None``).

    ``transpose(g, *avals, **params)`` returns one cotangent per argument
    from the output cotangent and each argument's ``(shape, dtype)``.
    ``batch(params, k)`` returns the parameters for tangents with a leading
    chunk axis of ``k`` directions, or ``None`` when they cannot take one
    (then the chunk is done one direction at a time); without it, the
    parameters are taken to apply to a leading axis unchanged.
    ``add_transpose(acc, g, *avals, **params)``, for an entry of one
    argument, may add the transpose of ``g`` into the accumulated cotangent
    ``acc`` (a ``dualad._table.ownership.Accumulator``) in place and return True, or
    return False to have ``transpose`` used (getitem: ``acc[idx] += g``).
    ``facts`` are those of :meth:`Primitive.declare`.
    """
    prim = Linear(name, impl, scalar_ok=scalar_ok, saves="avals", **facts)
    prim.transpose, prim.linear_args, prim.add_transpose = transpose, linear_args, add_transpose
    prim.batch_params = batch if batch is not None else _same_params
    return prim


def _same_params(params, k):
    return params


def custom(name: str, impl: Callable, *, jvp: Callable, vjp: Callable | tuple | None = None,
           chunked: bool = False, multiple_results: bool = False, saves: str = "all",
           residual: Callable | None = None, scalar_ok: bool = False,
           register: bool = True, core_ndims: Any = False, batch: Callable | None = None,
           **facts: Any) -> Custom:
    """An entry with its JVP, and its VJP written beside it or derived from it.

    ``jvp(primals, tangents, ans, **params)`` gets ``None`` for constant
    operands; with ``chunked`` it also takes tangents with a leading axis of
    directions (otherwise a chunk is done one direction at a time).
    ``vjp(g, ans, *args, **params)`` returns one cotangent per input; it may
    be a tuple of one such function per input (so that cotangents nobody
    needs are not computed), or ``vjp(g, residual, **params)`` with
    ``residual``. Without ``vjp`` (JAX's ``custom_jvp``), reverse mode
    transposes the JVP: it must be linear in the tangents and written with
    differentiable operations (``dualad.ops``, NumPy functions, operators),
    and each VJP records one JVP evaluation at the saved point and walks it
    back, through the reverse mode registered with
    :func:`dualad.extend.register_vjp` (``import reverse`` registers one).
    ``register=False`` keeps a user's operation out of the built-in table.
    Under :func:`dualad.vmap` the entry is applied one element at a time,
    unless it declares how its impl takes a batch: ``core_ndims``, where the
    impl broadcasts over leading stack axes as NumPy's stacked ``linalg``
    functions do (a tuple of each operand's number of trailing core axes, a
    function of the parameters returning one, or None where the parameters
    count axes from the end so that leading axes pass through), or
    ``batch(vals, batched, params, k)``, a rule of its own (see
    ``dualad._table.batching``; None: the loop after all).
    ``facts`` are those of :meth:`Primitive.declare`.

    Examples
    --------
    >>> import numpy as np
    >>> import reverse
    >>> from dualad import ops
    >>> from dualad.extend import bind, custom
    >>> softplus = custom("my_softplus", lambda xp, x: xp.logaddexp(0.0, x), register=False,
    ...                   jvp=lambda primals, tangents, ans: tangents[0] / (1.0 + ops.exp(-primals[0])))
    >>> reverse.grad(lambda x: bind(softplus, x).sum())(np.array([0.0, 1000.0]))  # from the JVP
    array([0.5, 1. ])
    """
    if vjp is None and (residual is not None or saves != "all"):
        raise ValueError(f"custom {name!r}: without a vjp, the VJP derived from the JVP reads the "
                         f"inputs and outputs, so it needs saves='all' and no residual; got "
                         f"saves={saves!r} and residual={residual!r}")
    prim = Custom(name, impl, multiple_results=multiple_results, scalar_ok=scalar_ok,
                  saves=saves, residual=residual, register=register, **facts)
    prim.jvp_rule, prim.vjp_rule, prim.chunked = jvp, vjp, chunked
    prim.core_ndims, prim.batch_rule = core_ndims, batch
    return prim


def zero_derivative(name: str, impl: Callable, **facts: Any) -> ZeroDerivative:
    """An entry with a float result whose derivative is zero (floor, sign); ``facts``
    those of :meth:`Primitive.declare` (``broadcasts=True`` for one that applies entry
    by entry)."""
    return ZeroDerivative(name, impl, scalar_ok=True, saves="avals", **facts)


def non_differentiable(name: str, impl: Callable, *, scalar_ok: bool = True,
                       **facts: Any) -> NonDifferentiable:
    """An entry with a boolean or integer result, returned as a plain array in every mode;
    ``facts`` those of :meth:`Primitive.declare` (``broadcasts=True`` for one that
    applies entry by entry)."""
    return NonDifferentiable(name, impl, scalar_ok=scalar_ok, saves="avals", **facts)


def piecewise_linear_at(prim: Primitive, primals: list) -> bool:
    """Whether ``prim`` is linear, with piecewise constant coefficients, at operands
    ``primals``: declared ``piecewise_linear`` (see ``Primitive``) and none of them complex."""
    return prim.piecewise_linear and not any(is_complex(p) for p in primals if p is not None)


def moves_elements(prim: Any, params: dict) -> bool:
    """Whether ``prim`` (an entry, or a program's own step) applied with ``params`` only
    moves its operands' elements (see ``Primitive.moves_elements``)."""
    moves = prim.moves_elements
    return bool(moves(params) if callable(moves) else moves)


_RULES = {"jvp": "JVP", "vjp": "VJP", "transpose": "transpose", "batch": "batch rule"}


def running_operation(frames: list) -> str | None:
    """The innermost entry that the stack ``frames`` (innermost first) is running, as a
    message names it: ``"prod's VJP"`` in its VJP, ``"prod"`` elsewhere (its ``impl``,
    ``bind`` of it); None where no frame runs one. For warnings and errors that name the
    operation at fault (read on that path only: it reads the frames' locals)."""
    for frame in frames:
        local = frame.f_locals
        entry = local.get("self", local.get("prim"))
        if isinstance(entry, Primitive):
            rule = _RULES.get(frame.f_code.co_name)
            return f"{entry.name}'s {rule}" if rule else entry.name
    return None


def seal_builtins() -> None:
    """Mark every entry registered so far as dualad's own: called once the
    table's modules have loaded, so that entries users add later are not."""
    for prim in REGISTRY.values():
        prim.builtin = True


def unregister(name: str) -> None:
    """Remove the entry ``name`` from the table (a throwaway or test primitive)."""
    REGISTRY.pop(name, None)

"""The table of test cases for forward mode: one or more per registered primitive.

Each :class:`Case` is a differentiable function written with ``dualad.ops``,
a hypothesis strategy for its arguments (NumPy float64 arrays whose shapes
cover 0-d, empty and broadcasting pairs, with values kept away from
singularities and kinks), and the names of the primitives it exercises.
The tests in ``tests/dualad`` are parametrized over :data:`CASES`, so adding
a primitive and its case adds its tests. An elementwise entry needs no case
written here: its default case draws from the domain the entry declares
(written cases of the same name replace it, others add special points);
``test_every_primitive_has_a_case``
fails while a registered primitive has none here or in ``test_linalg.py``'s
table of the linear-algebra primitives (``solve``, ``cholesky``, ...).
"""

from __future__ import annotations

import functools
import inspect
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import array_api_compat
import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import strategies as st

import dualad.numpy as dnp
from dualad import custom_linear_solve, custom_root, ops
from dualad._base.shapes import raw, shape_of
from dualad._table.entries import Elementwise
from dualad.extend import REGISTRY, bind


@dataclass(frozen=True)
class Case:
    """One row of the table.

    ``args`` draws ``(args, kw)``: ``fn(*args, **kw)`` is the function under
    test, differentiated with respect to its floating ``args`` except those
    at the positions in ``static``. ``kind`` is ``"diff"`` (checked against
    finite differences), ``"zero"`` (a float output whose derivative is 0 by
    definition, e.g. ``floor`` or ``stop_gradient``) or ``"nondiff"`` (a
    boolean output, returned as a plain array). ``scalar_args`` draws Python
    floats for the math-module fast path, where it applies. ``backends``
    names the array libraries that have the function (None: all of them).
    ``warns`` holds the messages (regular expressions) of the RuntimeWarnings
    that NumPy raises at the points the case draws on purpose (the log of a
    negative, a division by 0): the tests over the table ignore those, for
    this case only (:func:`expected_warnings`), and every other one shows.
    """

    name: str
    fn: Callable
    args: Any
    prims: tuple
    kind: str = "diff"
    second_order: bool = True
    static: tuple = ()
    scalar_args: Any = None
    backends: tuple | None = None
    warns: tuple = ()
    notes: str = field(default="", compare=False)

    def __repr__(self) -> str:
        return self.name

    def _repr_pretty_(self, printer, cycle):  # hypothesis prints falsifying examples with this
        printer.text(self.name)


# -- element strategies: float32-exact values, away from the edges of domains -------
def _f32(v: float, toward: float) -> float:
    r = np.float32(v)
    if (r < v and toward > v) or (r > v and toward < v):
        r = np.nextafter(r, np.float32(toward))
    return float(r)


def floats(lo: float, hi: float):
    """Floats in [lo, hi] that float32 represents exactly (a cast moves no value)."""
    return st.floats(_f32(lo, math.inf), _f32(hi, -math.inf), width=32, allow_nan=False,
                     allow_infinity=False, allow_subnormal=False)


def away_from_zero(lo: float, hi: float):
    return st.one_of(floats(lo, hi), floats(-hi, -lo))


def grid(offset: float = 0.0, lo: int = -8, hi: int = 8):
    """Multiples of 1/4 plus ``offset``: values of two grids never come within 1/8."""
    return st.integers(lo, hi).map(lambda i: i / 4 + offset)


def off_grid_knots():
    """Values in [-2.5, 2.5] at least 0.1 from the knots -2, -1, ..., 2 of the interp cases."""
    return st.builds(lambda k, f: k + f, st.integers(-3, 2), floats(0.1, 0.9))


def off_integers():
    """Values at least 0.1 from an integer and from a half-integer (floor, round)."""
    return st.builds(lambda k, f: k + f, st.integers(-3, 3),
                     st.one_of(floats(0.1, 0.4), floats(0.6, 0.9)))


def with_zeros(elements):
    return st.one_of(st.just(0.0), elements)


# -- shape and array strategies -----------------------------------------------------------
MAX_SIDE = 4


def shapes(min_dims=0, max_dims=3, min_side=0, max_side=MAX_SIDE):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def array(shape, elements, unique=False):
    return hnp.arrays(np.float64, shape, elements=elements, unique=unique)


def _elementwise_args(elements, min_side=0):
    """Arrays of mutually broadcastable shapes (or one array of any shape)."""
    n = len(elements)
    if n == 1:
        return shapes(min_side=min_side).flatmap(lambda s: st.tuples(array(s, elements[0])))
    return hnp.mutually_broadcastable_shapes(num_shapes=n, min_dims=0, max_dims=3,
                                             min_side=min_side, max_side=MAX_SIDE).flatmap(
        lambda bs: st.tuples(*[array(s, e) for s, e in zip(bs.input_shapes, elements)]))


def _no_kw(args):
    return args.map(lambda a: (a, {}))


def _scalars(elements):
    return st.tuples(*elements).map(lambda a: (tuple(float(x) for x in a), {}))


def _axes(ndim, nonempty=False):
    """None, one axis (possibly negative) or a tuple of distinct axes (maybe none)."""
    options = [st.none()]
    if ndim:
        options.append(st.integers(-ndim, ndim - 1))
        options.append(st.lists(st.integers(0, ndim - 1), unique=True, min_size=int(nonempty),
                                max_size=ndim).map(tuple))
    return st.one_of(options)


def xp_of(x):
    """The array namespace of the raw array inside ``x`` (for dtypes)."""
    return array_api_compat.array_namespace(raw(x))


def _in_place(name):
    """``fill_diagonal``, ``put`` or ``place``, which write in place: into a buffer here."""
    def f(x, y):
        import dualad.numpy as dnp
        out = dnp.zeros_like(x)
        out[...] = x
        if name == "fill_diagonal":
            ops.fill_diagonal(out, y[0, 0] * 2.0)
        elif name == "put":
            ops.put(out, _like_index(x, [1, 0]), y[-1, :2])
        else:
            ops.place(out, y > 0.0, [y[0, 1], 0.5])
        return ops.copy(out)
    return f


def _put_along_axis(x, y):
    """``put_along_axis`` writes in place, into a ``dualad.numpy`` buffer here."""
    import dualad.numpy as dnp
    out = dnp.zeros_like(x)
    out[...] = x
    ops.put_along_axis(out, _like_index(x, [[1, 0]] * shape_of(x)[0]), y[:, :2], axis=1)
    return ops.copy(out)


def _like_index(x, host):
    return xp_of(x).asarray(np.asarray(host))


def _like(x, host):
    """The NumPy constant ``host`` in the backend and dtype of ``x`` (a grid, knots)."""
    return xp_of(x).asarray(host, dtype=raw(x).dtype)


def expected_warnings(case: Case) -> list:
    """pytest marks that ignore, for ``case`` only, the RuntimeWarnings of the points it
    draws on purpose (``Case.warns``)."""
    return [pytest.mark.filterwarnings(f"ignore:{message}:RuntimeWarning") for message in case.warns]


def case_params(cases) -> list:
    """``cases`` as pytest params, each named for its case and with its expected warnings."""
    return [pytest.param(c, id=c.name, marks=expected_warnings(c)) for c in cases]


CASES: list[Case] = []


def case(name, fn, args, prims, **kw):
    CASES.append(Case(name, fn, args, tuple(prims), **kw))


def elementwise(name, fn, *elements, prims=None, scalar=True, **kw):
    """A case for an elementwise function of ``len(elements)`` broadcasting arrays."""
    case(name, fn, _no_kw(_elementwise_args(elements)), prims or (name,),
         scalar_args=_scalars(elements) if scalar else None, **kw)


# -- arithmetic -----------------------------------------------------------------------------
elementwise("power_scalar_base", lambda x: ops.power(2.0, x), floats(-2, 2), prims=("power",))
elementwise("power_negative_base_integer_exponent", ops.power, away_from_zero(0.5, 2),
            st.integers(-3, 3).map(float), prims=("power",), static=(1,),
            warns=("invalid value encountered in log",),
            notes="the exponent's partial x**y log(x), which the harness evaluates for every "
                  "argument, is nan at a negative base")
elementwise("integer_pow_cube", lambda x: ops.power(x, 3), floats(-2, 2), prims=("integer_pow",))
elementwise("integer_pow_square", lambda x: x ** 2, floats(-2, 2), prims=("integer_pow",))
elementwise("integer_pow_one", lambda x: ops.power(x, 1), floats(-2, 2), prims=("integer_pow",))
elementwise("integer_pow_zero_at_zero", lambda x: ops.power(x, 0), with_zeros(floats(-2, 2)),
            prims=("integer_pow",))
elementwise("integer_pow_negative", lambda x: ops.power(x, -2), away_from_zero(0.4, 2),
            prims=("integer_pow",))
elementwise("integer_pow_fractional", lambda x: ops.power(x, 0.5), floats(0.2, 4),
            prims=("integer_pow",))
elementwise("operators", lambda x, y: (x * y - y / 2.0 + 1.0) / (y * y + 1.0) - (-x) ** 3,
            floats(-2, 2), floats(-2, 2),
            prims=("multiply", "subtract", "divide", "add", "negative", "integer_pow"))
elementwise("scalar_operands", lambda x: 2.0 / (1.5 - x) + 3.0 * x - 0.5,
            floats(-1, 1), prims=("divide", "subtract", "multiply"))

# -- exponentials, logarithms, trigonometric, hyperbolic ---------------------------------------

# -- piecewise: operands on two grids 1/8 apart, so no tie lies within a finite-difference step
elementwise("maximum", ops.maximum, grid(), grid(0.125))
elementwise("minimum", ops.minimum, grid(), grid(0.125))
elementwise("clip", lambda x: ops.clip(x, -1.125, 0.875), grid(), prims=("where",))
elementwise("sigmoid", ops.sigmoid, floats(-4, 4),
            prims=("exp", "negative", "where", "greater_equal", "divide", "add"))
elementwise("softplus", ops.softplus, floats(-4, 4),
            prims=("log1p", "exp", "where", "negative"))


def _where_args():
    def build(bs):
        c, x, y = bs.input_shapes
        return st.tuples(hnp.arrays(np.bool_, c), array(x, floats(-3, 3)), array(y, floats(-3, 3)))
    return _no_kw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3,
                                                    max_side=MAX_SIDE).flatmap(build))


case("where", ops.where, _where_args(), ("where",),
     scalar_args=st.tuples(st.booleans(), floats(-3, 3), floats(-3, 3)).map(
         lambda a: ((a[0], float(a[1]), float(a[2])), {})))

# -- complex values inside a real function (real in, real out) ------------------------------------
def complexify(x):
    """``x * (0.5 + 1j) + 0.25j`` as a complex array of ``x``'s precision."""
    xp = xp_of(x)
    z = ops.astype(x, xp.complex64 if raw(x).dtype == xp.float32 else xp.complex128)
    return z * (0.5 + 1j) + 0.25j


elementwise("real", lambda x: ops.real(ops.exp(complexify(x))), floats(-2, 2),
            prims=("real", "exp", "astype", "multiply", "add"), scalar=False)
elementwise("imag", lambda x: ops.imag(ops.sin(complexify(x))), floats(-2, 2),
            prims=("imag", "sin", "astype"), scalar=False)
elementwise("conj", lambda x: ops.real(ops.conj(complexify(x)) * ops.exp(complexify(x))), floats(-2, 2),
            prims=("conj", "real", "multiply"), scalar=False)
elementwise("real_if_close", lambda x: ops.real_if_close(complexify(x) - ops.imag(complexify(x)) * 1j),
            floats(-2, 2), prims=("real", "imag"), scalar=False,
            notes="imaginary parts exactly zero: NumPy's choice is the real part")
elementwise("real_if_close_far", lambda x: ops.abs(ops.real_if_close(complexify(x))), floats(0, 2),
            prims=("real", "imag", "hypot"), scalar=False,
            notes="imaginary parts x + 0.25 >= 0.25: NumPy's choice is the complex array")
elementwise("abs_complex", lambda x: ops.abs(complexify(x)), floats(-2, 2),
            prims=("real", "imag", "hypot"), scalar=False)
elementwise("angle", lambda x: ops.angle(complexify(x) + 2.0), floats(-2, 2),
            prims=("real", "imag", "arctan2"), scalar=False,
            notes="real part > 0: away from the branch cut on the negative real axis")

# -- zero derivative and non-differentiable ------------------------------------------------------
for _name in ("floor", "ceil", "trunc", "round", "rint"):
    elementwise(_name, getattr(ops, _name), off_integers(), prims=("round",) if _name == "rint" else None,
                kind="zero")
elementwise("round_decimals", lambda x: ops.round(x, 1), st.builds(lambda v: v + 0.03, off_integers()),
            prims=("round", "multiply", "divide"), kind="zero", scalar=False)
elementwise("positive", lambda x: ops.positive(x) * 2.0, floats(-3, 3), prims=("multiply",))
elementwise("sign", ops.sign, away_from_zero(0.1, 3), kind="zero")
elementwise("stop_gradient", ops.stop_gradient, floats(-3, 3), kind="zero")
for _name in ("less", "less_equal", "greater", "greater_equal", "equal", "not_equal"):
    elementwise(_name, getattr(ops, _name), grid(), grid(), kind="nondiff")
elementwise("logical_and", lambda x, y: ops.logical_and(x > 0, y > 0), floats(-1, 1), floats(-1, 1),
            prims=("logical_and", "greater"), kind="nondiff", scalar=False)
elementwise("logical_or", lambda x, y: ops.logical_or(x < 0, y < 0), floats(-1, 1), floats(-1, 1),
            prims=("logical_or", "less"), kind="nondiff", scalar=False)
elementwise("logical_not", lambda x: ops.logical_not(x > 0), floats(-1, 1),
            prims=("logical_not", "greater"), kind="nondiff", scalar=False)
def _of_log(name):
    test = getattr(ops, name)
    return lambda x: test(ops.log(x))


for _name in ("isnan", "isfinite", "isinf"):  # log of [-1, 2]: nan, -inf and numbers to test
    elementwise(_name, _of_log(_name), floats(-1, 2), prims=(_name, "log"), kind="nondiff",
                warns=("(divide by zero|invalid value) encountered in log",
                       "divide by zero encountered in divide"))  # log's partial 1 / x at 0


def _of_integers(name):
    """``name`` of integer values (sort orders, which every mode keeps as values: a cast to
    an integer dtype gives plain numbers), 0 among the divisors."""
    op = getattr(ops, name)
    order = functools.partial(bind, REGISTRY["argsort"], axis=-1)
    return lambda x, y: op(order(x) - 2, order(y) - 1)


def _two_vectors():
    return shapes(min_dims=1, max_dims=1, min_side=1).flatmap(lambda s: st.tuples(
        st.tuples(array(s, floats(-3, 3)), array(s, floats(-3, 3))), st.just({})))


for _name in ("floor_divide", "remainder"):
    case(f"integer_{_name}", _of_integers(_name), _two_vectors(), (_name, "argsort"), kind="nondiff",
         warns=("divide by zero encountered in (floor_divide|remainder)",))  # remainder's partial


# -- reductions --------------------------------------------------------------------------------
def _reduce_args(elements, min_side=0, keepdims=True, max_side=MAX_SIDE, unique=False, min_dims=0):
    def build(shape):
        kw = {"axis": _axes(len(shape), nonempty=min_dims > 0)}
        if keepdims:
            kw["keepdims"] = st.booleans()
        return st.tuples(st.tuples(array(shape, elements, unique=unique)), st.fixed_dictionaries(kw))
    return shapes(min_dims=min_dims, min_side=min_side, max_side=max_side).flatmap(build)


case("sum", ops.sum, _reduce_args(floats(-3, 3)), ("sum",))
case("sum_method", lambda x, **kw: x.sum(**kw) if hasattr(x, "sum") else ops.sum(x, **kw),
     _reduce_args(floats(-3, 3)), ("sum",))
case("mean", ops.mean, _reduce_args(floats(-3, 3), min_side=1), ("sum", "divide"))
case("prod", ops.prod, _reduce_args(away_from_zero(0.5, 1.5), max_side=3), ("prod",))
case("prod_with_zeros", ops.prod,
     _reduce_args(with_zeros(away_from_zero(0.5, 1.5)), max_side=3), ("prod",),
     notes="exact where entries are 0, at every order")
case("max", ops.max, _reduce_args(grid(lo=-40, hi=40), min_side=1, unique=True), ("max",))
case("min", ops.min, _reduce_args(grid(lo=-40, hi=40), min_side=1, unique=True), ("min",))
case("var", ops.var, _reduce_args(floats(-3, 3), min_side=1), ("sum", "subtract", "multiply"))
case("var_ddof", lambda x, **kw: ops.var(x, ddof=1, **kw),
     _reduce_args(floats(-3, 3), min_side=2), ("sum", "subtract", "multiply"))
case("var_complex", lambda x, **kw: ops.var(complexify(x), **kw), _reduce_args(floats(-3, 3), min_side=1),
     ("real", "conj", "sum"))
case("std", ops.std, _reduce_args(grid(lo=-40, hi=40), min_side=2, unique=True, min_dims=1),
     ("sum", "sqrt"), notes="std'(x) is nan where std(x) = 0: at least two distinct entries")
case("logsumexp", ops.logsumexp, _reduce_args(floats(-3, 3), min_side=1),
     ("max", "stop_gradient", "exp", "log", "sum", "isfinite", "where"))


def _axis_args(elements, min_dims=1, min_side=0):
    def build(shape):
        return st.tuples(st.tuples(array(shape, elements)),
                         st.fixed_dictionaries({"axis": st.integers(-len(shape), len(shape) - 1)}))
    return shapes(min_dims=min_dims, min_side=min_side).flatmap(build)


case("cumsum", ops.cumsum, _axis_args(floats(-3, 3)), ("cumsum",))
case("cumsum_flat", ops.cumsum, _no_kw(_elementwise_args([floats(-3, 3)])), ("cumsum", "reshape"))
case("softmax", ops.softmax, _axis_args(floats(-3, 3), min_side=1),
     ("exp", "subtract", "log", "sum", "max"))
case("log_softmax", ops.log_softmax, _axis_args(floats(-3, 3), min_side=1),
     ("subtract", "log", "sum", "max"))


# -- shapes -----------------------------------------------------------------------------------
def _one_array(build, min_dims=0, min_side=0, elements=None):
    """Draw a shape, then ``(array,)`` and the keywords ``build(shape)`` draws."""
    elements = floats(-3, 3) if elements is None else elements
    return shapes(min_dims=min_dims, min_side=min_side).flatmap(
        lambda s: st.tuples(st.tuples(array(s, elements)), build(s)))


def _reshape_targets(s):
    n = math.prod(s)
    options = [tuple(reversed(s)), (n,), (1,) + s, s + (1,)]
    if n:
        options.append((-1,) + s[1:] if s else (-1,))
    return st.sampled_from(options).map(lambda t: {"shape": t})


case("reshape", ops.reshape, _one_array(_reshape_targets), ("reshape",))
case("ravel", lambda x: x.ravel() if hasattr(x, "ravel") else ops.ravel(x),
     _no_kw(_elementwise_args([floats(-3, 3)])), ("reshape",))
case("transpose", ops.transpose,
     _one_array(lambda s: st.permutations(range(len(s))).map(lambda p: {"axes": tuple(p)})),
     ("permute_dims",))
case("transpose_default", ops.transpose, _no_kw(_elementwise_args([floats(-3, 3)])),
     ("permute_dims",))
case("matrix_transpose", lambda x: x.mT if hasattr(x, "mT") else ops.matrix_transpose(x),
     _one_array(lambda s: st.just({}), min_dims=2), ("permute_dims",))
case("swapaxes", ops.swapaxes,
     _one_array(lambda s: st.fixed_dictionaries({"axis1": st.integers(-len(s), len(s) - 1),
                                                 "axis2": st.integers(-len(s), len(s) - 1)}),
                min_dims=1), ("permute_dims",))
case("moveaxis", ops.moveaxis,
     _one_array(lambda s: st.fixed_dictionaries({"source": st.integers(-len(s), len(s) - 1),
                                                 "destination": st.integers(-len(s), len(s) - 1)}),
                min_dims=1), ("permute_dims",))


def _with_unit_axes():
    def build(s):
        unit = [i for i, d in enumerate(s) if d == 1]
        axis = st.one_of(st.none(), st.sampled_from(unit)) if unit else st.none()
        return st.tuples(st.tuples(array(s, floats(-3, 3))), st.fixed_dictionaries({"axis": axis}))
    return shapes(max_side=2).flatmap(build)


case("squeeze", ops.squeeze, _with_unit_axes(), ("reshape",))
case("expand_dims", ops.expand_dims,
     _one_array(lambda s: st.integers(-len(s) - 1, len(s)).map(lambda a: {"axis": a})),
     ("reshape",))


def _broadcast_args():
    def build(bs):
        (s,), target = bs.input_shapes, bs.result_shape
        extra = st.lists(st.integers(1, 3), max_size=1).map(tuple)
        return extra.flatmap(lambda e: st.tuples(st.tuples(array(s, floats(-3, 3))),
                                                  st.just({"shape": e + target})))
    return hnp.mutually_broadcastable_shapes(num_shapes=1, base_shape=(2, 3), max_dims=3,
                                             max_side=MAX_SIDE).flatmap(build)


case("broadcast_to", ops.broadcast_to, _broadcast_args(), ("broadcast_to",))
case("broadcast_arrays", lambda x, y: tuple(ops.broadcast_arrays(x, y)),
     _no_kw(_elementwise_args([floats(-3, 3), floats(-3, 3)])), ("broadcast_to",))


def _concat_args(n, stack=False):
    def build(s):
        nd = len(s) + (1 if stack else 0)
        axis = st.integers(-nd, nd - 1)
        if stack:
            return st.tuples(st.tuples(*[array(s, floats(-3, 3)) for _ in range(n)]),
                             st.fixed_dictionaries({"axis": axis}))
        return axis.flatmap(lambda a: st.tuples(
            st.tuples(*[st.integers(0, 3).flatmap(
                lambda k: array(s[:a % nd] + (k,) + s[a % nd + 1:], floats(-3, 3))) for _ in range(n)]),
            st.just({"axis": a})))
    return shapes(min_dims=0 if stack else 1).flatmap(build)


case("concatenate", lambda *xs, axis: ops.concatenate(list(xs), axis=axis), _concat_args(3),
     ("concatenate",))
case("stack", lambda *xs, axis: ops.stack(list(xs), axis=axis), _concat_args(2, stack=True),
     ("concatenate", "reshape"))


def _split_args():
    def build(s):
        axis = st.integers(-len(s), len(s) - 1)
        return axis.flatmap(lambda a: st.tuples(
            st.tuples(array(s, floats(-3, 3))),
            st.fixed_dictionaries({
                "axis": st.just(a),
                "indices_or_sections": st.one_of(
                    st.sampled_from([d for d in (1, 2, 3, 4) if s[a] % d == 0]),
                    st.lists(st.integers(0, s[a]), max_size=2).map(sorted))})))
    return shapes(min_dims=1, min_side=1).flatmap(build)


case("split", lambda x, **kw: tuple(ops.split(x, **kw)), _split_args(), ("getitem",))
case("flip", ops.flip, _one_array(lambda s: _axes(len(s)).map(lambda a: {"axis": a})), ("flip",))


def _repeat_args():
    def build(s):
        axis = st.one_of(st.none(), st.integers(-len(s), len(s) - 1)) if s else st.none()
        return axis.flatmap(lambda a: st.tuples(
            st.tuples(array(s, floats(-3, 3))),
            st.fixed_dictionaries({"axis": st.just(a), "repeats": st.one_of(
                st.integers(0, 3),
                st.lists(st.integers(0, 3), min_size=math.prod(s) if a is None else s[a],
                         max_size=math.prod(s) if a is None else s[a]))})))
    return shapes().flatmap(build)


case("repeat", lambda x, **kw: ops.repeat(x, **kw), _repeat_args(), ("getitem", "reshape"))
case("tile", ops.tile,
     _one_array(lambda s: st.lists(st.integers(0, 3), max_size=3).map(lambda r: {"reps": tuple(r)})),
     ("reshape", "broadcast_to"))
case("pad", ops.pad,
     _one_array(lambda s: st.fixed_dictionaries({
         "pad_width": st.one_of(st.integers(0, 2),
                                st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)),
                                         min_size=len(s), max_size=len(s)).map(tuple)),
         "constant_values": st.sampled_from([0.0, 1.5])}), min_dims=1),
     ("pad", "add"))


def _pad_mode_args():
    modes = st.sampled_from(["edge", "reflect", "symmetric", "wrap", "linear_ramp", "maximum",
                             "minimum", "mean", "median", "constant"])

    def build(s):
        widths = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=len(s),
                          max_size=len(s)).map(tuple)
        return st.tuples(st.tuples(array(s, grid(lo=-40, hi=40), unique=True)),
                         st.fixed_dictionaries({"pad_width": widths, "mode": modes}))
    return shapes(min_dims=1, max_dims=2, min_side=2, max_side=3).flatmap(build)


case("pad_modes", ops.pad, _pad_mode_args(), ("getitem", "concatenate", "max", "sum"),
     notes="reflect/symmetric/wrap/edge gather; the statistics modes reduce the edge regions")


# -- indexing -----------------------------------------------------------------------------------
def _basic_index_args():
    return shapes().flatmap(lambda s: st.tuples(
        st.tuples(array(s, floats(-3, 3))),
        hnp.basic_indices(s, allow_newaxis=True, allow_ellipsis=True).map(lambda i: {"idx": i})))


case("getitem_basic", lambda x, idx: ops.getitem(x, idx), _basic_index_args(), ("getitem",))
case("getitem_operator", lambda x, idx: x[idx] if hasattr(x, "_level") else ops.getitem(x, idx),
     _basic_index_args(), ("getitem",))


def _array_index_args():
    """Integer arrays (with repeats) indexing the leading axes, optionally a slice after."""
    def build(s):
        return st.tuples(
            st.tuples(array(s, floats(-3, 3))),
            hnp.integer_array_indices(s, result_shape=shapes(max_dims=2, max_side=4)).map(
                lambda i: {"idx": i}))
    return shapes(min_dims=1, min_side=1).flatmap(build)


case("getitem_int_arrays", lambda x, idx: ops.getitem(x, idx), _array_index_args(), ("getitem",),
     notes="repeated indices accumulate in the VJP")


def _mixed_index_args():
    """One integer-array index with slices around it (x[:, idx], x[idx, 1:])."""
    def build(s):
        axis = st.integers(0, len(s) - 1)
        return axis.flatmap(lambda a: st.tuples(
            st.tuples(array(s, floats(-3, 3))),
            hnp.arrays(np.int64, st.integers(0, 5), elements=st.integers(-s[a], s[a] - 1)).map(
                lambda i: {"idx": (slice(None),) * a + (i,) + (slice(1, None),) * (len(s) > a + 1)})))
    return shapes(min_dims=1, min_side=1).flatmap(build)


case("getitem_mixed", lambda x, idx: ops.getitem(x, idx), _mixed_index_args(), ("getitem",))


def _mask_args():
    return shapes(min_dims=1).flatmap(lambda s: st.tuples(
        st.tuples(array(s, floats(-3, 3)), hnp.arrays(np.bool_, s)), st.just({})))


case("getitem_mask", lambda x, m: ops.getitem(x, m), _mask_args(), ("getitem",))


def _take_args():
    def build(s):
        axis = st.integers(-len(s), len(s) - 1)
        return axis.flatmap(lambda a: st.tuples(
            st.tuples(array(s, floats(-3, 3)),
                      hnp.arrays(np.int64, st.integers(0, 6), elements=st.integers(0, s[a] - 1))),
            st.just({"axis": a})))
    return shapes(min_dims=1, min_side=1).flatmap(build)


case("take", ops.take, _take_args(), ("getitem",))


def _index_add_args():
    def build(s):
        return st.integers(0, 6).flatmap(lambda k: st.tuples(
            st.tuples(array(s, floats(-3, 3)), array((k,) + s[1:], floats(-3, 3))),
            hnp.arrays(np.int64, (k,), elements=st.integers(0, s[0] - 1)).map(lambda i: {"idx": i})))
    return shapes(min_dims=1, min_side=1).flatmap(build)


case("index_add", lambda base, values, idx: ops.index_add(base, values, (idx,)), _index_add_args(),
     ("scatter", "add"), notes="repeated indices accumulate")


case("index_set", lambda base, values, idx: ops.index_set(base, values, (idx,)), _index_add_args(),
     ("where", "scatter"), notes="repeated indices: the last write wins, as NumPy assigns")


def _astype_other(x):
    xp = xp_of(x)
    other = xp.float32 if raw(x).dtype == xp.float64 else xp.float64
    return ops.astype(x, other) * 1.5


case("astype", _astype_other, _no_kw(_elementwise_args([floats(-3, 3)])),
     ("astype", "multiply"))
case("astype_to_int", lambda x: x + ops.astype(ops.astype(x, xp_of(x).int64), raw(x).dtype),
     _no_kw(_elementwise_args([off_integers()])), ("add",),
     notes="a cast to an integer dtype has no derivative")


# -- contractions -----------------------------------------------------------------------------
def _matmul_args():
    """1-d and n-d operands with broadcasting batch dimensions (NumPy's matmul rules)."""
    def build(draw):
        n, k, m = (draw(st.integers(0, 3)) for _ in range(3))
        bs = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3))
        left = draw(st.sampled_from(["vector", "matrix"]))
        right = draw(st.sampled_from(["vector", "matrix"]))
        xs = (k,) if left == "vector" else bs.input_shapes[0] + (n, k)
        ys = (k,) if right == "vector" else bs.input_shapes[1] + (k, m)
        return ((draw(array(xs, floats(-2, 2))), draw(array(ys, floats(-2, 2)))), {})
    return st.composite(lambda draw: build(draw))()


case("matmul", ops.matmul, _matmul_args(), ("matmul",))
case("matmul_operator", lambda x, y: x @ y, _matmul_args(), ("matmul",))


def _pair(xshape, yshape):
    return st.tuples(st.tuples(array(xshape, floats(-2, 2)), array(yshape, floats(-2, 2))), st.just({}))


def _dot_args():
    return st.one_of(
        st.integers(0, 3).flatmap(lambda k: _pair((k,), (k,))),
        st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(1, 3)).flatmap(
            lambda nkm: _pair((nkm[0], nkm[1]), (nkm[1], nkm[2]))),
        st.tuples(st.integers(1, 3), st.integers(0, 3), st.integers(1, 3)).flatmap(
            lambda nkm: _pair((2, nkm[0], nkm[1]), (3, nkm[1], nkm[2]))),
        shapes(max_dims=2).flatmap(lambda s: _pair((), s)))


case("dot", ops.dot, _dot_args(), ("matmul", "multiply", "reshape", "permute_dims"))
case("inner", ops.inner,
     st.tuples(shapes(max_dims=2), shapes(max_dims=2), st.integers(0, 3)).flatmap(
         lambda t: _pair(t[0] + (t[2],), t[1] + (t[2],))), ("matmul", "reshape"))
case("inner_scalar", ops.inner, shapes(max_dims=2).flatmap(lambda s: _pair(s, ())), ("multiply",))
case("vdot", ops.vdot, shapes().flatmap(lambda s: _pair(s, s)), ("sum", "multiply", "reshape"))
case("outer", ops.outer, st.tuples(shapes(), shapes()).flatmap(lambda t: _pair(*t)),
     ("reshape", "multiply"))


def _tensordot_args():
    def build(draw):
        free_x = draw(shapes(max_dims=2, max_side=3))
        free_y = draw(shapes(max_dims=2, max_side=3))
        contracted = draw(shapes(max_dims=2, max_side=3))
        if draw(st.booleans()):  # axes as an int: the last of x against the first of y
            return ((draw(array(free_x + contracted, floats(-2, 2))),
                     draw(array(contracted + free_y, floats(-2, 2)))), {"axes": len(contracted)})
        xs, ys = list(free_x + contracted), list(contracted + free_y)
        px = draw(st.permutations(range(len(xs))))
        py = draw(st.permutations(range(len(ys))))
        nx, nc = len(free_x), len(contracted)
        ax = [px.index(nx + i) for i in range(nc)]
        ay = [py.index(i) for i in range(nc)]
        return ((draw(array(tuple(xs[p] for p in px), floats(-2, 2))),
                 draw(array(tuple(ys[p] for p in py), floats(-2, 2)))), {"axes": (ax, ay)})
    return st.composite(lambda draw: build(draw))()


case("tensordot", ops.tensordot, _tensordot_args(), ("matmul", "reshape", "permute_dims"))


def _diagonal_args():
    def build(s):
        nd = len(s)
        return st.tuples(st.integers(0, nd - 1), st.integers(0, nd - 1), st.integers(-3, 3)).filter(
            lambda t: t[0] != t[1]).map(lambda t: {"axis1": t[0], "axis2": t[1], "offset": t[2]}).flatmap(
            lambda kw: st.tuples(st.tuples(array(s, floats(-3, 3))), st.just(kw)))
    return shapes(min_dims=2).flatmap(build)


case("diagonal", ops.diagonal, _diagonal_args(), ("getitem", "permute_dims"))
case("trace", ops.trace, _diagonal_args(), ("getitem", "permute_dims", "sum"))




# -- assembly, rearranging, order (dualad/_numpy/, one module per kind) ---------------------------
case("diag_of_matrix", lambda x, **kw: ops.diag(x, **kw),
     shapes(min_dims=2, max_dims=2).flatmap(lambda s: st.tuples(
         st.tuples(array(s, floats(-3, 3))), st.integers(-3, 3).map(lambda k: {"k": k}))), ("getitem",))
case("diag_of_vector", lambda x, **kw: ops.diag(x, **kw),
     shapes(min_dims=1, max_dims=1).flatmap(lambda s: st.tuples(
         st.tuples(array(s, floats(-3, 3))), st.integers(-2, 2).map(lambda k: {"k": k}))), ("scatter",))
case("diagflat", ops.diagflat, _no_kw(_elementwise_args([floats(-3, 3)])), ("scatter", "reshape"))
for _name in ("tril", "triu"):
    case(_name, getattr(ops, _name), _one_array(lambda s: st.integers(-2, 2).map(lambda k: {"k": k}),
                                                 min_dims=2), ("where",))


def _stack_args(n, min_dims=0, max_dims=3, min_side=0, elements=None):
    elements = floats(-3, 3) if elements is None else elements
    return shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side).flatmap(
        lambda s: st.tuples(st.tuples(*[array(s, elements) for _ in range(n)]), st.just({})))


for _name, _lo in (("hstack", 0), ("vstack", 0), ("dstack", 0), ("column_stack", 0)):
    case(_name, (lambda f: lambda *xs: f(list(xs)))(getattr(ops, _name)),
         _stack_args(2, _lo, 2), ("concatenate",))
for _name in ("atleast_1d", "atleast_2d", "atleast_3d"):
    case(_name, getattr(ops, _name), _no_kw(_elementwise_args([floats(-3, 3)])), ("reshape",))
case("block", lambda a, b, c, d: ops.block([[a, b], [c, d]]), _stack_args(4, 2, 2), ("concatenate",))
case("append", lambda x, y: ops.append(x, y), _stack_args(2), ("concatenate", "reshape"))
case("array_split", lambda x, **kw: tuple(ops.array_split(x, **kw)),
     _one_array(lambda s: st.fixed_dictionaries({"indices_or_sections": st.integers(1, 4),
                                                 "axis": st.integers(0, len(s) - 1)}), min_dims=1),
     ("getitem",))
case("hsplit", lambda x: tuple(ops.hsplit(x, 1)), _stack_args(1, 1), ("getitem",))
case("vsplit", lambda x: tuple(ops.vsplit(x, [1])), _stack_args(1, 2), ("getitem",))
case("dsplit", lambda x: tuple(ops.dsplit(x, [1])), _stack_args(1, 3), ("getitem",))
case("roll", ops.roll, _one_array(lambda s: st.fixed_dictionaries({
    "shift": st.integers(-5, 5),
    "axis": st.none() if not s else st.one_of(st.none(), st.integers(0, len(s) - 1))})),
    ("getitem",))
case("rot90", ops.rot90, _one_array(lambda s: st.integers(-3, 4).map(lambda k: {"k": k}), min_dims=2),
     ("flip", "permute_dims"))
case("flipud", ops.flipud, _stack_args(1, 1), ("flip",))
case("fliplr", ops.fliplr, _stack_args(1, 2), ("flip",))
case("diff", ops.diff, _one_array(lambda s: st.fixed_dictionaries({
    "n": st.integers(0, 2), "axis": st.integers(-len(s), len(s) - 1)}), min_dims=1), ("getitem", "subtract"))
case("index_set_slice", lambda base, values: ops.index_set(base, values[:1, ...], slice(None, None, 2)),
     _stack_args(2, 1, min_side=1), ("where", "scatter", "getitem"))
case("scatter", lambda v, **kw: ops.scatter(v, **kw), _one_array(lambda s: st.fixed_dictionaries({
    "shape": st.just((s[0] + 1,) + s[1:]), "idx": st.just((slice(1, None),))}), min_dims=1), ("scatter",))
case("unbroadcast", lambda x: ops.unbroadcast(x, (1,) + shape_of(x)[1:]),
     _one_array(lambda s: st.just({}), min_dims=1), ("sum", "reshape"))
case("put_along_axis", _put_along_axis, _stack_args(2, 2, 2, min_side=2), ("where", "scatter"),
     backends=("numpy", "cupy"), notes="advanced-index assignment into a raw buffer: NumPy, CuPy")
for _name in ("fill_diagonal", "put", "place"):
    case(_name, _in_place(_name), _stack_args(2, 2, 2, min_side=2, elements=away_from_zero(0.1, 2)),
         ("where", "scatter"), backends=("numpy", "cupy"))
case("insert", lambda x, y: ops.insert(x, [0, 1, 1], y[..., :1], axis=-1), _stack_args(2, 1, 2, min_side=1),
     ("getitem", "concatenate"))
case("compress", lambda x: ops.compress([True, False, True], x, axis=0),
     _one_array(lambda s: st.just({}), min_dims=1, min_side=3), ("getitem",))
case("divmod", lambda x, y: ops.divmod(x, y)[1] + ops.divmod(x, y)[0], _no_kw(_elementwise_args(
    [floats(0.1, 0.9), floats(1.25, 2)])), ("floor_divide", "remainder"))
case("copy", lambda x: ops.copy(x) * 1.5, _no_kw(_elementwise_args([floats(-3, 3)])), ("copy", "multiply"))
case("asarray", lambda x, y: ops.asarray([[x, y], [y * x, x]]), _stack_args(2), ("concatenate",))
case("diff_prepend", lambda x: ops.diff(x, prepend=0.5, append=x[..., :1]),
     _stack_args(1, 1, min_side=1), ("concatenate", "subtract"))
case("ediff1d", lambda x: ops.ediff1d(x, to_begin=x[:1]), _stack_args(1, 1, 1, min_side=1),
     ("getitem", "concatenate"))
case("kron", ops.kron, st.tuples(shapes(max_dims=2, max_side=3), shapes(max_dims=2, max_side=3)).flatmap(
    lambda t: _pair(*t)), ("multiply", "reshape"))
case("cross", ops.cross, hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3).flatmap(
    lambda bs: st.sampled_from([(3, 3), (2, 3), (2, 2)]).flatmap(lambda n: _pair(
        bs.input_shapes[0] + (n[0],), bs.input_shapes[1] + (n[1],)))), ("multiply", "subtract"))
case("trapezoid", ops.trapezoid, _stack_args(1, 1), ("add", "sum"))
case("trapezoid_x", lambda y, x: ops.trapezoid(y, x), st.integers(1, 5).flatmap(
    lambda n: _pair((2, n), (n,))), ("add", "sum", "subtract"))


def _take_along_args():
    def build(s):
        axis = st.integers(0, len(s) - 1)
        return axis.flatmap(lambda a: st.tuples(
            st.tuples(array(s, floats(-3, 3)),
                      hnp.arrays(np.int64, s[:a] + (3,) + s[a + 1:], elements=st.integers(0, s[a] - 1))),
            st.just({"axis": a})))
    return shapes(min_dims=1, min_side=1).flatmap(build)


case("take_along_axis", ops.take_along_axis, _take_along_args(), ("getitem",))


def _gather_args():
    """An index of integer arrays and slices as compile traces it: the arrays are operands
    (``gather``, ``scatter_at``: the getitem and scatter of traced index arrays)."""
    def build(s):
        axis = st.integers(0, len(s) - 1)
        return axis.flatmap(lambda a: st.tuples(
            st.tuples(array(s, floats(-3, 3)),
                      hnp.arrays(np.int64, shapes(max_dims=2, max_side=3),
                                 elements=st.integers(-s[a], s[a] - 1))),
            st.just({"template": (slice(None),) * a + (Ellipsis,) + (slice(1, None),) * (len(s) > a + 1)})))
    return shapes(min_dims=1, min_side=1).flatmap(build)


case("gather", lambda x, i, template: bind(REGISTRY["gather"], x, i, template=template), _gather_args(),
     ("gather",), notes="repeated indices accumulate in the VJP (scatter_at)")


def _scatter_at_args():
    def build(s):
        return st.tuples(
            st.tuples(array((3,) + s[1:], floats(-3, 3)),
                      hnp.arrays(np.int64, st.just(3), elements=st.integers(-s[0], s[0] - 1))),
            st.just({"shape": s, "template": (Ellipsis,) + (slice(None),) * (len(s) - 1)}))
    return shapes(min_dims=1, min_side=1).flatmap(build)


case("scatter_at", lambda v, i, shape, template: bind(REGISTRY["scatter_at"], v, i, shape=shape,
                                                      template=template),
     _scatter_at_args(), ("scatter_at",), notes="repeated indices accumulate")


def _last_writes_args():
    """Values for the elements of ``base[i]`` (``base`` of shape ``s``) and distinct keys
    whose sort order, halved, is ``i``: positions 0, 0 and 1 in some order, so one repeats
    (an index computed from an operand, as compile traces one; argsort's keeps the keys
    away from a tie, where the order would change)."""
    def build(s):
        return st.tuples(
            st.tuples(array((3,) + s[1:], floats(-3, 3)), array((3,), grid(), unique=True)),
            st.just({"shape": s, "template": (Ellipsis,) + (slice(None),) * (len(s) - 1)}))
    return shapes(min_dims=1).filter(lambda s: s[0] >= 2).flatmap(build)


def _kept_writes(v, keys, shape, template):
    """``v`` where ``base[i] = v`` keeps the write, zero where a later one overwrites it."""
    i = ops.floor_divide(bind(REGISTRY["argsort"], keys, axis=-1), 2)
    return ops.where(bind(REGISTRY["last_writes"], i, shape=shape, template=template), v, 0.0)


case("last_writes", _kept_writes, _last_writes_args(), ("last_writes", "where"),
     notes="NumPy's assignment keeps the last write of a repeated position")
def _distinct(min_dims=1, axis=True):
    """One array of distinct grid values (sort has a kink where two entries tie)."""
    return shapes(min_dims=min_dims, min_side=1).flatmap(lambda s: st.tuples(
        st.tuples(array(s, grid(lo=-40, hi=40), unique=True)),
        st.integers(-len(s), len(s) - 1).map(lambda a: {"axis": a}) if axis else st.just({})))


case("sort", ops.sort, _distinct(), ("getitem", "argsort"))
case("sort_flat", lambda x: ops.sort(x, axis=None), _distinct(0, axis=False),
     ("getitem", "reshape", "argsort"))
case("partition", lambda x: ops.partition(x, 0, axis=-1), _distinct(axis=False), ("getitem", "argpartition"))
case("msort", ops.msort, _distinct(axis=False), ("getitem",))
case("sort_complex", lambda x: ops.sort_complex(ops.ravel(x)), _distinct(axis=False), ("getitem",))
case("meshgrid", lambda x, y: tuple(ops.meshgrid(x, y)), _stack_args(2, 1, 1), ("broadcast_to",))
case("meshgrid_ij", lambda x, y, z: tuple(ops.meshgrid(x, y, z, indexing="ij")), _stack_args(3, 1, 1),
     ("broadcast_to",))
case("linspace", lambda a, b: ops.linspace(a, b, 5), _no_kw(st.tuples(array((), floats(-3, 3)),
                                                                         array((), floats(-3, 3)))),
     ("multiply", "add", "subtract"))
case("gradient", ops.gradient, shapes(min_dims=1, max_dims=2, min_side=2).flatmap(
         lambda s: st.tuples(st.tuples(array(s, floats(-3, 3))), st.just({}))), ("subtract", "concatenate"))
case("select", lambda x, y: ops.select([x > 0.5, y < 0.125], [x * y, y], 0.25),
     _no_kw(_elementwise_args([grid(0.125), grid()])), ("where", "multiply"))
case("polyval", lambda p, x: ops.polyval(p, x), st.integers(1, 4).flatmap(
    lambda n: shapes(max_dims=2).flatmap(lambda s: _pair((n,), s))), ("multiply", "add"))
case("convolve", ops.convolve, st.tuples(st.integers(1, 5), st.integers(1, 4),
                                         st.sampled_from(["full", "same", "valid"])).flatmap(
    lambda t: st.tuples(st.tuples(array((t[0],), floats(-2, 2)), array((t[1],), floats(-2, 2))),
                        st.just({"mode": t[2]}))), ("getitem", "multiply", "sum"))
case("correlate", ops.correlate, st.tuples(st.integers(1, 5), st.integers(1, 4)).flatmap(
    lambda t: _pair((max(t),), (min(t),))), ("getitem", "flip"))
case("cumprod", ops.cumprod, _axis_args(with_zeros(away_from_zero(0.5, 1.5))), ("multiply", "concatenate"),
     notes="exact where entries are 0")
case("interp", lambda x, fp: ops.interp(x, _like(fp, np.linspace(-2.0, 2.0, 5)), fp),
     st.tuples(shapes(max_dims=2), st.just((5,))).flatmap(lambda t: st.tuples(
         st.tuples(array(t[0], off_grid_knots()), array(t[1], floats(-3, 3))), st.just({}))),
     ("getitem", "multiply", "where"))

case("rollaxis", lambda x, **kw: ops.rollaxis(x, **kw), _one_array(lambda s: st.fixed_dictionaries({
    "axis": st.integers(0, len(s) - 1), "start": st.integers(0, len(s))}), min_dims=1), ("permute_dims",))
case("unstack", lambda x: ops.stack(ops.unstack(x, axis=-1)[::-1]),
     _one_array(lambda s: st.just({}), min_dims=1, min_side=1), ("getitem", "concatenate"))
case("delete", lambda x, **kw: ops.delete(x, **kw), _one_array(lambda s: st.fixed_dictionaries({
    "obj": st.lists(st.integers(0, s[0] - 1), max_size=3), "axis": st.just(0)}), min_dims=1, min_side=1),
     ("getitem",))
case("resize", lambda x, **kw: ops.resize(x, **kw), _one_array(lambda s: st.fixed_dictionaries({
    "new_shape": st.tuples(st.integers(1, 4), st.integers(1, 3))}), min_side=1), ("getitem",))
case("choose", lambda x, y: ops.choose(ops.astype(x > 0.0, xp_of(x).int64), [x, y, x * y]),
     _stack_args(2, 1, 2, elements=away_from_zero(0.1, 2)), ("where", "multiply"))
case("extract", lambda x: ops.extract(x > 0.0, x),
     _one_array(lambda s: st.just({}), min_dims=1, elements=away_from_zero(0.1, 3)), ("getitem",))
case("piecewise", lambda x: ops.piecewise(x, [x < -1.0, x > 1.0], [lambda v: v * v, 0.5,
                                                                            lambda v: -v]),
     _no_kw(_elementwise_args([off_grid_knots()])), ("where", "multiply"))
case("apply_along_axis", lambda x, **kw: ops.apply_along_axis(lambda r: r[::-1] * r[0], kw["axis"], x),
     _one_array(lambda s: st.fixed_dictionaries({"axis": st.integers(0, len(s) - 1)}), min_dims=1,
                min_side=1), ("getitem", "multiply", "concatenate"))
case("trim_zeros", lambda x: ops.trim_zeros(ops.concatenate([x * 0.0, x, x * 0.0])),
     _stack_args(1, 1, 1, min_side=1, elements=away_from_zero(0.1, 3)), ("getitem",))
case("vander", lambda x: ops.vander(x, 4), _stack_args(1, 1, 1), ("integer_pow", "concatenate"))
case("logspace", lambda a, b: ops.logspace(a, b, 4, base=2.0), _no_kw(st.tuples(
    array((), floats(-2, 2)), array((), floats(-2, 2)))), ("power",))
case("geomspace", lambda a, b: ops.geomspace(a, b, 4), _no_kw(st.tuples(
    array((), floats(0.5, 3)), array((), floats(0.5, 3)))), ("exp", "log"))
for _name in ("polyadd", "polysub", "polymul"):
    case(_name, getattr(ops, _name), st.tuples(st.integers(1, 4), st.integers(1, 4)).flatmap(
        lambda t: _pair((t[0],), (t[1],))), ("pad", "add") if _name != "polymul" else ("getitem",))
case("polyder", lambda p: ops.polyder(p, 2), _stack_args(1, 1, 1, min_side=1), ("multiply",))
case("polyint", lambda p: ops.polyint(p, 2, k=[0.5, -1.0]), _stack_args(1, 1, 1, min_side=1),
     ("divide", "concatenate"))
case("matvec", ops.matvec, st.tuples(st.integers(1, 3), st.integers(1, 3)).flatmap(
    lambda t: _pair((2,) + t, (t[1],))), ("matmul",))
case("vecmat", ops.vecmat, st.tuples(st.integers(1, 3), st.integers(1, 3)).flatmap(
    lambda t: _pair((t[0],), t)), ("matmul",))
case("vecdot", ops.vecdot, _stack_args(2, 1), ("multiply", "sum"))
case("cumulative_prod", lambda x: ops.cumulative_prod(x, include_initial=True),
     _stack_args(1, 1, 1), ("multiply", "concatenate"))
case("modf", lambda x: ops.modf(x)[0] + ops.modf(x)[1], _no_kw(_elementwise_args([off_integers()])),
     ("subtract", "trunc"))
case("ldexp", lambda x: ops.ldexp(x, 3), _no_kw(_elementwise_args([floats(-2, 2)])), ("multiply",))
case("frexp", lambda x: ops.frexp(x)[0],  # values away from powers of 2, where the exponent jumps
     _no_kw(_elementwise_args([st.sampled_from([-5.5, -3.3, -0.7, 0.3, 0.7, 1.3, 2.6, 5.5, 11.0])])),
     ("divide",))


# -- convolution (dualad/_numpy/conv.py) -----------------------------------------------------------
def _conv_args():
    def build(t):
        n, c, g, size, k, stride = t
        return st.tuples(st.tuples(array((n, c * g, size, size + 1), floats(-2, 2)),
                                   array((2 * g, c, k, k), floats(-2, 2))),
                         st.fixed_dictionaries({"stride": st.just(stride), "groups": st.just(g),
                                                "padding": st.sampled_from([0, 1, "valid"]),
                                                "dilation": st.sampled_from([1, 2])}))
    return st.tuples(st.integers(1, 2), st.integers(1, 2), st.integers(1, 2), st.integers(5, 6),
                     st.integers(1, 2), st.integers(1, 2)).flatmap(build)


case("conv", ops.conv, _conv_args(), ("getitem", "matmul"))
case("sliding_window_view", lambda x: ops.sliding_window_view(x, 2, axis=-1),
     _one_array(lambda s: st.just({}), min_dims=1, min_side=2), ("getitem",))

# -- weighted counts and fill values (dualad/_numpy/counting.py, creation.py) -------------------
def _weighted_counts_args():
    """Weights of n positions, and the positions (with repeats) or the values to bin."""
    return st.integers(1, 6).flatmap(lambda n: st.tuples(
        st.tuples(array((n,), floats(-3, 3))),
        st.fixed_dictionaries({"x": hnp.arrays(np.int64, (n,), elements=st.integers(0, 4)),
                               "minlength": st.integers(0, 7)})))


case("bincount", lambda w, x, minlength: ops.bincount(x, weights=w, minlength=minlength),
     _weighted_counts_args(), ("scatter", "add"), notes="linear in the weights")


def _histogram_args():
    return st.integers(1, 6).flatmap(lambda n: st.tuples(
        st.tuples(array((n,), floats(0.5, 3))),  # positive: the density divides by their sum
        st.fixed_dictionaries({"a": array((n,), floats(0, 1)), "bins": st.integers(1, 4),
                               "density": st.booleans()})))


case("histogram", lambda w, a, bins, density: ops.histogram(a, bins, (0.0, 1.0), density, w)[0],
     _histogram_args(), ("scatter", "add"), second_order=False,
     notes="linear in the weights (the density divides by their sum: nonlinear, first order only)")
case("full_like", lambda a, y: ops.full_like(a, y),
     _no_kw(shapes(min_dims=1, min_side=1).flatmap(lambda s: st.tuples(array(s, floats(-3, 3)),
                                                                          array((), floats(-3, 3))))),
     ("add",), static=(0,), notes="not 0-d nor empty: the tangent of a Python number added to a 0-d "
     "array is a Python float, and broadcast to an empty array_api_strict array it mixes namespaces "
     "(both of Elementwise.jvp, for any such sum, left for now)")


def _copied(dst, src, mask):
    out = dnp.zeros(dst.shape, dtype=raw(dst).dtype)
    ops.copyto(out, dst)
    ops.copyto(out, src, where=mask)
    return out


case("copyto", _copied, shapes().flatmap(lambda s: st.tuples(
    st.tuples(array(s, floats(-3, 3)), array(s, floats(-3, 3))),
    hnp.arrays(np.bool_, s).map(lambda m: {"mask": m}))), ("where", "scatter"), backends=("numpy",),
    notes="dualad.numpy's buffers hold NumPy arrays")


def _putmasked(dst, values, mask):
    out = dnp.zeros(dst.shape, dtype=raw(dst).dtype)
    ops.copyto(out, dst)
    ops.putmask(out, mask, values)
    return out


def _putmask_args():
    return shapes(min_dims=1).flatmap(lambda s: st.integers(1, 4).flatmap(lambda k: st.tuples(
        st.tuples(array(s, floats(-3, 3)), array((k,), floats(-3, 3))),
        hnp.arrays(np.bool_, s).map(lambda m: {"mask": m}))))


case("putmask", _putmasked, _putmask_args(), ("where", "scatter"), backends=("numpy",),
    notes="dualad.numpy's buffers hold NumPy arrays; values repeat by position")


# -- statistics (dualad/_numpy/statistics.py) ------------------------------------------------------
case("median", ops.median, _reduce_args(grid(lo=-40, hi=40), min_side=1, unique=True), ("getitem",))
case("quantile", lambda x, **kw: ops.quantile(x, np.array([0.1, 0.5, 0.9]), **kw),
     _reduce_args(grid(lo=-40, hi=40), min_side=1, unique=True), ("getitem", "multiply"))
case("percentile", lambda x, **kw: ops.percentile(x, 30.0, **kw),
     _reduce_args(grid(lo=-40, hi=40), min_side=1, unique=True), ("getitem",))
for _name in ("nansum", "nanmean", "nanmax", "nanmin", "nanvar", "nanstd", "nanprod"):
    case(_name, (lambda f: lambda x, **kw: f(ops.where(ops.greater(x, 2.875), np.nan, x), **kw))(
        getattr(ops, _name)),
         # unique entries, one at most NaN: nanstd sees two distinct values (std'= nan at 0)
         _reduce_args(grid(lo=-12, hi=12), min_side=3 if _name == "nanstd" else 2, min_dims=1,
                      unique=True), ("where",), second_order=_name not in ("nanstd",))
for _name in ("nancumsum", "nancumprod"):
    case(_name, (lambda f: lambda x, **kw: f(ops.where(ops.greater(x, 2.875), np.nan, x), **kw))(
        getattr(ops, _name)), _axis_args(grid(lo=-12, hi=12)), ("where", "cumsum" if _name == "nancumsum"
                                                                  else "multiply"))


def _nan_order(f):
    """``f`` (an order statistic ignoring NaNs) of ``x`` with its entries above 4.125
    made NaN (about a third; slices of NaN only too), its all-NaN results read as 0
    so that the weighted sums of the checks stay finite."""
    return lambda x, **kw: ops.nan_to_num(f(ops.where(ops.greater(x, 4.125), np.nan, x), **kw))


for _name, _f in (("nanpercentile", lambda x, **kw: ops.nanpercentile(x, 40.0, **kw)),
                  ("nanquantile", lambda x, **kw: ops.nanquantile(x, np.array([0.0, 0.3, 0.5, 1.0]), **kw)),
                  ("nanmedian", ops.nanmedian)):
    case(_name, _nan_order(_f), _reduce_args(grid(lo=-40, hi=40), min_side=1, unique=True),
         ("where", "getitem"), notes="unique entries: a tie has no unique derivative")
case("ptp", ops.ptp, _reduce_args(grid(lo=-40, hi=40), min_side=1, unique=True), ("max", "min"))
case("average", lambda x, w: ops.average(x, axis=-1, weights=w),
     shapes(min_dims=1, min_side=1).flatmap(lambda s: st.tuples(
         st.tuples(array(s, floats(-3, 3)), array(s[-1:], floats(0.5, 2))), st.just({}))),
     ("multiply", "sum", "divide"))
case("cov", ops.cov, st.tuples(st.integers(1, 3), st.integers(2, 5)).flatmap(
    lambda t: st.tuples(st.tuples(array(t, floats(-3, 3))),
                        st.fixed_dictionaries({"rowvar": st.booleans()}))),
     ("matmul", "subtract"))
case("corrcoef", ops.corrcoef, st.tuples(st.integers(2, 3), st.integers(3, 5)).flatmap(
    lambda t: st.tuples(st.tuples(array(t, floats(-3, 3), unique=True)), st.just({}))),
     ("matmul", "sqrt", "divide"))

# -- elementwise extras (dualad/_numpy/composites.py) ---------------------------------------------
elementwise("fmax", ops.fmax, grid(), grid(0.125), prims=("maximum", "where"), scalar=False)
elementwise("fmin", ops.fmin, grid(), grid(0.125), prims=("minimum", "where"), scalar=False)
elementwise("nan_to_num", lambda x: ops.nan_to_num(ops.log(x)), away_from_zero(0.2, 3),
            prims=("where", "log"), scalar=False, warns=("invalid value encountered in log",),
            notes="log of a negative is nan, replaced by 0")
elementwise("sinc", ops.sinc, with_zeros(floats(-2, 2)), prims=("sin", "divide", "where"))
elementwise("deg2rad", ops.deg2rad, floats(-180, 180), prims=("multiply",))
elementwise("rad2deg", ops.rad2deg, floats(-3, 3), prims=("multiply",))
elementwise("logaddexp2", ops.logaddexp2, floats(-3, 3), floats(-3, 3), prims=("logaddexp",))
elementwise("remainder", ops.remainder, off_integers(), st.just(1.0), prims=("remainder",),
            static=(1,), scalar=False)
elementwise("remainder_divisor", lambda x, y: x % y if hasattr(x, "_level") else ops.remainder(x, y),
            floats(0.1, 0.9), floats(1.25, 2), prims=("remainder",), scalar=False)
elementwise("fmod", ops.fmod, floats(-0.9, 0.9), floats(1.25, 2), prims=("subtract", "trunc"), scalar=False)
elementwise("floor_divide", ops.floor_divide, off_integers(), st.just(1.0), prims=("floor_divide",),
            kind="zero", static=(1,), scalar=False)
elementwise("copysign", ops.copysign, away_from_zero(0.2, 3), away_from_zero(0.2, 3),
            prims=("where", "abs"), scalar=False)
elementwise("heaviside", ops.heaviside, away_from_zero(0.2, 3), floats(-1, 1), prims=("where",),
            scalar=False)
elementwise("float_power", ops.float_power, floats(0.5, 3), floats(-2, 2), prims=("power",), scalar=False)


# -- numpy.fft (dualad/_primitives/fft.py, dualad/_numpy/fft.py): real in, real out through complex spectra --
def _realify(z):
    return ops.real(z) + 0.5 * ops.imag(z)


_NORMS = st.sampled_from([None, "ortho", "forward"])


def _fft_args(min_side=1):
    def build(s):
        return st.fixed_dictionaries({"axis": st.integers(-len(s), len(s) - 1),
                                      "n": st.one_of(st.none(), st.integers(min_side, 6)),
                                      "norm": _NORMS})
    return _one_array(build, min_dims=1, min_side=min_side)


def _fftn_args():
    def build(s):
        return st.fixed_dictionaries({"axes": st.permutations(range(len(s))).flatmap(
            lambda p: st.integers(1, len(p)).map(lambda k: tuple(p[:k]))), "norm": _NORMS})
    return _one_array(build, min_dims=1, min_side=2)


case("fft", lambda x, **kw: _realify(ops.fft.fft(x, **kw)), _fft_args(), ("fftn",))
case("ifft_complex", lambda x, **kw: _realify(ops.fft.ifft(complexify(x), **kw)), _fft_args(),
     ("fftn", "astype"))
case("rfft", lambda x, **kw: _realify(ops.fft.rfft(x, **kw)), _fft_args(), ("rfft",))
case("irfft", lambda x, **kw: ops.fft.irfft(complexify(x), **kw), _fft_args(min_side=2), ("irfft",))
case("fftn", lambda x, **kw: _realify(ops.fft.fftn(x, **kw)), _fftn_args(), ("fftn",))
case("rfftn", lambda x, **kw: _realify(ops.fft.rfftn(x, **kw)), _fftn_args(), ("rfft", "fftn"))
case("irfftn", lambda x, **kw: ops.fft.irfftn(complexify(x), **kw), _fftn_args(), ("irfft",))
case("fftshift", lambda x, **kw: ops.fft.fftshift(x, **kw), _one_array(
    lambda s: st.fixed_dictionaries({"axes": st.one_of(st.none(), st.integers(0, len(s) - 1))}),
    min_dims=1), ("getitem",))
case("ifftshift", lambda x: ops.fft.ifftshift(x), _one_array(lambda s: st.just({}), min_dims=1),
     ("getitem",))

# -- more of NumPy: functional put_along_axis, unwrap, hfft/ihfft, polynomials, apply_over_axes ------
def _put_along_axis_functional(x, y):
    """JAX's functional form; index 1 repeats, so the last write wins and y[:, 0] is lost."""
    idx = _like_index(x, [[1, 0, 1]] * shape_of(x)[0])
    return ops.put_along_axis(x, idx, y[:, :3], axis=1, inplace=False)


case("put_along_axis_functional", _put_along_axis_functional, _stack_args(2, 2, 2, min_side=3),
     ("where", "scatter"))


def _unwrap_args():
    """Multiples of 3/4 in [-6, 6]: a jump between neighbours is never within 0.14 of a
    threshold (pi, 4.1, or an odd multiple of period / 2), where the correction changes."""
    def build(s):
        return st.fixed_dictionaries({"axis": st.integers(-len(s), len(s) - 1),
                                      "discont": st.sampled_from([None, 4.1]),
                                      "period": st.sampled_from([2 * math.pi, 5.3])})
    return _one_array(build, min_dims=1, elements=st.integers(-8, 8).map(lambda i: i * 0.75))


case("unwrap", ops.unwrap, _unwrap_args(), ("add",), notes="the corrections are constants")
case("hfft", lambda x, **kw: ops.fft.hfft(complexify(x), **kw), _fft_args(min_side=2), ("irfft", "conj"))
case("ihfft", lambda x, **kw: _realify(ops.fft.ihfft(x, **kw)), _fft_args(), ("rfft", "conj"))


def _polyfit_args():
    """``x`` within 0.2 of evenly spread nodes (a well-conditioned fit), ``y`` one or
    more columns, optional weights; ``cov`` where there are more points than coefficients."""
    def build(t):
        n, deg, cols, weighted = t
        arrays = [array((n,), floats(-0.2, 0.2)), array((n,) if cols == 0 else (n, cols), floats(-3, 3))]
        if weighted:
            arrays.append(array((n,), floats(0.5, 2)))
        cov = st.booleans() if n > deg + 1 else st.just(False)
        return st.tuples(st.tuples(*arrays), st.fixed_dictionaries({"deg": st.just(deg), "cov": cov}))
    return st.integers(1, 5).flatmap(lambda n: st.tuples(
        st.just(n), st.integers(0, min(n - 1, 3)), st.integers(0, 2), st.booleans())).flatmap(build)


def _polyfit(x, y, *w, deg, cov):
    nodes = _like(x, np.linspace(-1.5, 1.5, shape_of(x)[0]))
    return ops.polyfit(ops.add(x, nodes), y, deg, w=w[0] if w else None, cov=cov)


case("polyfit", _polyfit, _polyfit_args(), ("pinv", "matmul", "integer_pow", "sqrt", "divide"))
case("poly", ops.poly, _stack_args(1, 1, 1, min_side=1), ("multiply", "subtract", "concatenate"))

# Matrices near one with well-separated eigenvalues (real; a complex pair and a real
# one), so the eigenvalues stay distinct: eig is differentiable there. NumPy only: the
# array API has no eig.
_EIG_BASES = [np.diag([-2.0, 0.5, 2.5]), np.array([[0.0, -1.5, 0.0], [1.5, 0.0, 0.0], [0.0, 0.0, 2.5]])]


def _poly_matrix_args():
    return st.tuples(st.integers(1, 3), st.sampled_from(_EIG_BASES)).flatmap(lambda t: st.tuples(
        st.tuples(array((t[0], t[0]), floats(-0.3, 0.3))), st.just({"base": t[1][:t[0], :t[0]]})))


case("poly_matrix", lambda x, base: ops.poly(ops.add(x, base)), _poly_matrix_args(), ("eig", "real"),
     backends=("numpy",))

# -- complex svd and eigh (dualad/_primitives/linalg/svd.py, eigen.py) ---------------------------
# Complex matrices x + i y near a real base with singular values (eigenvalues) 2 apart,
# the smallest 1 (-2): the real and imaginary parts within 0.1 move them by at most 0.43
# (n <= 3), so they stay distinct and nonzero and the singular vectors differentiable.
# The views depend on no vector's phase (only those have derivatives).
def _complex_of(x, y):
    """``x + i y`` in the complex dtype of ``x``'s precision (``y`` cast by a sum: it may
    be a list)."""
    xp = xp_of(x)
    z = ops.astype(x, xp.complex64 if raw(x).dtype == xp.float32 else xp.complex128)
    return ops.add(z, ops.multiply(ops.add(ops.zeros_like(z), y), 1j))


def _near_base_args(square, **kw):
    def build(t):
        batch, m, n = t
        shape = batch + (m, m if square else n)
        base = np.zeros(shape[-2:])
        k = min(shape[-2:])
        base[range(k), range(k)] = [-2.0, 0.0, 2.0][:k] if square else [5.0, 3.0, 1.0][:k]
        return st.tuples(st.tuples(array(shape, floats(-0.1, 0.1)), array(shape, floats(-0.1, 0.1))),
                         st.fixed_dictionaries({"base": st.just(base), **kw}))
    return st.tuples(shapes(max_dims=1, max_side=2), st.integers(1, 3), st.integers(1, 3)).flatmap(build)


def _modulus2(z):
    """``|z|^2``, smooth where ``z`` is 0 (``abs`` is not)."""
    return ops.real(z * ops.conj(z))


def _svd_complex(x, y, base):
    u, s, vh = ops.linalg.svd(_complex_of(ops.add(x, base), y), full_matrices=False)
    rec = ops.matmul(u * ops.expand_dims(ops.sin(s), -2), vh)
    return s, _modulus2(u), _modulus2(vh), ops.real(rec), ops.imag(rec)


def _eigh_complex(x, y, base, UPLO):
    w, v = ops.linalg.eigh(_complex_of(ops.add(x, base), y), UPLO=UPLO)
    rec = ops.matmul(v * ops.expand_dims(ops.sin(w), -2), ops.conj(ops.matrix_transpose(v)))
    return w, _modulus2(v), ops.real(rec), ops.imag(rec)


_NOT_DASK = ("numpy", "array_api_strict", "cupy")
case("svd_complex", _svd_complex, _near_base_args(square=False), ("svd",), backends=_NOT_DASK,
     notes="Dask's svd takes tall-and-skinny single-column-chunk arrays only")
case("matrix_norm_complex", lambda x, y, base, ord: ops.linalg.matrix_norm(_complex_of(ops.add(x, base), y),
                                                                          ord=ord),
     _near_base_args(square=False, ord=st.sampled_from(["nuc", 2, -2])), ("svd",), backends=_NOT_DASK)
case("eigh_complex", _eigh_complex, _near_base_args(square=True, UPLO=st.sampled_from(["L", "U"])),
     ("eigh",), backends=_NOT_DASK, notes="the triangle not read (and the diagonal's imaginary part) "
     "has no influence: zero derivative")
case("eigvalsh_complex", lambda x, y, base, UPLO: ops.linalg.eigvalsh(_complex_of(ops.add(x, base), y), UPLO),
     _near_base_args(square=True, UPLO=st.sampled_from(["L", "U"])), ("eigh",), backends=_NOT_DASK)

# Coefficients of polynomials with distinct roots (real ones; a complex pair), perturbed;
# constant leading and trailing zeros, which roots strips (a trailing one is a zero root).
_ROOT_BASES = [np.poly([-2.0, 0.5, 2.5]), np.poly([1.5j, -1.5j, 2.0]).real, np.poly([-1.0, 1.5]),
               np.poly([0.75])]


def _roots_args():
    def build(base):
        return st.tuples(st.tuples(array(base.shape, floats(-0.05, 0.05))), st.fixed_dictionaries({
            "base": st.just(base), "lead": st.integers(0, 2), "trail": st.integers(0, 2)}))
    return st.sampled_from(_ROOT_BASES).flatmap(build)


def _roots(x, base, lead, trail):
    p = ops.concatenate([_like(x, np.zeros(lead)), ops.add(x, base), _like(x, np.zeros(trail))])
    r = ops.roots(p)
    return ops.sum(ops.real(r * ops.conj(r))), ops.sum(ops.real(r) ** 3)  # both independent of order


case("roots", _roots, _roots_args(), ("eig", "divide", "concatenate"), backends=("numpy",))


def _polydiv_args():
    """``u`` and ``v`` (``v[0]`` away from 0) whose remainder keeps its full length with a
    leading entry away from 0: NumPy strips a leading remainder entry near 0, so
    there the output's length would change under a perturbation."""
    def full_remainder(args):
        u, v = (np.asarray(a) for a in args[0])
        r = np.polydiv(u, v)[1]
        expected = len(v) - 1 if len(u) >= len(v) else len(u)
        return expected == 0 or (len(r) == expected and abs(r[0]) > 0.1)
    return st.tuples(st.integers(1, 5), st.integers(1, 3)).flatmap(lambda t: st.tuples(st.tuples(
        array((t[0],), away_from_zero(0.25, 2)),
        st.tuples(away_from_zero(0.5, 2), st.lists(floats(-2, 2), min_size=t[1] - 1, max_size=t[1] - 1)).map(
            lambda h: np.array([h[0], *h[1]]))), st.just({}))).filter(full_remainder)


case("polydiv", ops.polydiv, _polydiv_args(), ("divide", "multiply", "subtract", "concatenate"))


def _over_axes_args(min_side=0):
    return _one_array(lambda s: st.lists(st.integers(-len(s), len(s) - 1), max_size=3).map(
        lambda a: {"axes": a}), min_dims=1, min_side=min_side)


case("apply_over_axes", lambda x, axes: ops.apply_over_axes(ops.sum, x, axes), _over_axes_args(),
     ("sum", "reshape"))
case("apply_over_axes_mean", lambda x, axes: ops.apply_over_axes(ops.mean, x, axes),
     _over_axes_args(min_side=1), ("sum", "divide", "reshape"))


# -- scipy.special (dualad/_primitives/special.py): NumPy with SciPy, CuPy ---------------------------
# Points the entries' domains leave out of their default cases.
SPECIAL_BACKENDS = ("numpy", "cupy")
elementwise("i1_near_zero", ops.i1, with_zeros(floats(-0.2, 0.2)), prims=("i1",), backends=SPECIAL_BACKENDS,
            notes="i1(x)/x by its series near 0")
elementwise("xlogy_zero_x", ops.xlogy, st.just(0.0), floats(0.2, 3), prims=("xlogy",),
            backends=SPECIAL_BACKENDS)
elementwise("xlog1py_zero_x", ops.xlog1py, st.just(0.0), floats(-0.8, 3), prims=("xlog1py",),
            backends=SPECIAL_BACKENDS)
elementwise("polygamma", lambda x: ops.polygamma(2, x), floats(0.3, 4), backends=SPECIAL_BACKENDS)


# -- solutions as entries (dualad/_implicit/): the solver's numbers, the implicit derivative --------
def _same_shape_args(*elements):
    """Arrays of one shape, one per element strategy."""
    return shapes().flatmap(lambda s: st.tuples(*[array(s, e) for e in elements])).map(lambda a: (a, {}))


def _diagonal_solve(d, b):
    """x with d * x = b, by a solver that sees only the product (and must not be differentiated)."""
    return custom_linear_solve(lambda v: ops.multiply(d, v), b, lambda mv, r: r / mv(r * 0.0 + 1.0),
                                      symmetric=True)


def _cubic_root(d, c):
    """The root of x**3 + d x - c (d > 0: one root), by Newton steps on plain arrays (the solver
    closes over d and c too: it sees their numbers) and a diagonal tangent solve."""
    def newton(f, x):
        for _ in range(40):
            x = x - f(x) / (3.0 * x * x + d)
        return x
    # ops, not operators: the rules call f on the root's plain array and d's derivative
    # parts, and an array_api_strict array on the left refuses a value type
    return custom_root(lambda x: ops.add(ops.power(x, 3), ops.multiply(d, x)) - c, c * 0.0, newton,
                              lambda g, y: y / g(y * 0.0 + 1.0))


case("custom_linear_solve", _diagonal_solve, _same_shape_args(floats(1, 3), floats(-2, 2)),
     ("custom_linear_solve",))
case("custom_root", _cubic_root, _same_shape_args(floats(1, 3), floats(-2, 2)),
     ("custom_root",))


# -- the default case of every elementwise entry that has none above ------------------------------
def _inside(lo: float, hi: float):
    """Floats in a closed interval inside the open ``(lo, hi)``, away from its ends
    (and within 4 of a finite end, within 3 of 0 on the whole line)."""
    if math.isinf(lo) and math.isinf(hi):
        return floats(-3, 3)
    if math.isinf(hi):
        return floats(lo + 0.25, lo + 4)
    if math.isinf(lo):
        return floats(hi - 4, hi - 0.25)
    margin = 0.15 * (hi - lo)
    return floats(lo + margin, hi - margin)


def _from_domain(intervals):
    return st.one_of(*[_inside(lo, hi) for lo, hi in intervals])


def _a_point(intervals):
    lo, hi = intervals[0]
    return 0.5 if math.isinf(lo) and math.isinf(hi) else lo + 1 if math.isinf(hi) else \
        hi - 1 if math.isinf(lo) else (lo + hi) / 2


def _backends_of(prim):
    """The test backends whose namespace has ``prim`` (SciPy's functions have no
    array-API version: the strict namespace raises the clear NotImplementedError)."""
    import array_api_strict
    try:
        prim.impl(array_api_strict, *[array_api_strict.asarray(_a_point(d)) for d in prim.domain])
    except NotImplementedError:
        return SPECIAL_BACKENDS
    return None


def _needs_params(prim):
    """Whether the entry's impl takes required keywords (``integer_pow``'s exponent):
    those need a case of their own."""
    return any(p.kind is p.KEYWORD_ONLY and p.default is p.empty
               for p in inspect.signature(prim.impl).parameters.values())


_hand_written = {c.name for c in CASES}
for _prim in list(REGISTRY.values()):
    if isinstance(_prim, Elementwise) and _prim.name not in _hand_written and not _needs_params(_prim):
        elementwise(_prim.name, functools.partial(bind, _prim), *map(_from_domain, _prim.domain),
                    backends=_backends_of(_prim), notes=f"from the entry's domain {_prim.domain}")


CASES_BY_NAME = {c.name: c for c in CASES}
assert len(CASES_BY_NAME) == len(CASES), "duplicate case names"


def covered_primitives() -> set:
    return {p for c in CASES for p in c.prims}

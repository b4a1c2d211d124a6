"""Elementwise primitives: an impl and one local partial per argument.

The JVP (sum of partial * tangent) and the VJP (unbroadcast of cotangent *
partial) are both derived from the partials, so the modes cannot drift.
A partial of ``1``/``-1`` is an int so that no multiplication happens; a
boolean partial is a mask (``where(mask, t, 0)``), which is also what the
tape keeps for ReLU-like primitives instead of their inputs.
"""

from __future__ import annotations

import math
from functools import partial as _partial

import numpy as np

from dualad._base.backend import NUMPY_XP, SCALAR_TYPES, is_float_dtype, namespace_of, scalar_xp
from dualad._base.core import Value, bind
from dualad._base.shapes import dtype_of, is_complex, raw, zeros
from dualad._primitives.short_loops import paired
from dualad._table import operations
from dualad._table.entries import (
    NONZERO,
    POSITIVE,
    REAL,
    UNIT,
    elementwise,
    linear,
    non_differentiable,
    zero_derivative,
)
from dualad._table.host import on_values

__all__ = [
    "astype",
    "add", "subtract", "multiply", "divide", "power", "negative", "abs",
    "sign", "square", "sqrt", "cbrt", "reciprocal", "exp", "exp2", "expm1",
    "log", "log2", "log10", "log1p", "sin", "cos", "tan", "arcsin", "arccos",
    "arctan", "arctan2", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
    "arctanh", "hypot", "logaddexp", "maximum", "minimum", "relu", "where", "floor",
    "ceil", "round", "rint", "trunc", "floor_divide", "remainder", "less", "less_equal", "greater",
    "greater_equal", "equal", "not_equal", "logical_and", "logical_or",
    "logical_not", "isnan", "isfinite", "isinf", "stop_gradient", "real", "imag",
    "conj", "angle",
]


def _elementwise(name, impl, *partials, saves="inputs", save_partials=False, domain=None, doc=None,
                 **facts):
    """An elementwise entry; ``saves`` says what its partials read (see ``Primitive``),
    ``domain`` where it is smooth (see ``elementwise``), ``facts`` what the program
    passes may rely on (see ``Primitive.declare``)."""
    return _function(elementwise(name, impl, *partials, saves=saves, save_partials=save_partials,
                                 domain=domain, **facts), doc)


def _function(prim, doc=None):
    fn = _partial(bind, prim)
    fn.__name__ = fn.__qualname__ = prim.name
    fn.__doc__ = doc or f"Elementwise ``{prim.name}``, differentiable in every mode."
    fn.primitive = prim
    return fn


def _one(ans, *args):
    return 1


def _minus_one(ans, *args):
    return -1


def _zero(name, impl, **facts):
    return _function(zero_derivative(name, impl, broadcasts=True, **facts),
                     f"``{name}``: a float result with zero derivative.")


def _nondiff(name, impl, **facts):
    return _function(non_differentiable(name, impl, broadcasts=True, **facts),
                     f"``{name}``: a boolean result, not differentiable.")


# -- arithmetic ---------------------------------------------------------------
# NumPy arrays of two shapes go by short_loops.paired, which gives NumPy's numbers faster
# where broadcasting would leave NumPy short inner loops (x[:, None, :] - means[None]).
def _add(xp, x, y):
    return paired(np.add, x, y) if type(x) is np.ndarray is type(y) and x.shape != y.shape else x + y


def _subtract(xp, x, y):
    return paired(np.subtract, x, y) if type(x) is np.ndarray is type(y) and x.shape != y.shape else x - y


def _multiply(xp, x, y):
    return paired(np.multiply, x, y) if type(x) is np.ndarray is type(y) and x.shape != y.shape else x * y


def _divide(xp, x, y):
    if type(x) is np.ndarray is type(y) and x.shape != y.shape:
        return paired(np.divide, x, y)
    return xp.divide(x, y)


add = _elementwise("add", _add, _one, _one, saves="none",
                   ufunc="add", scalar_form="{0} + {1}",
                   simplifications=("add_zero", "scatter_add", "scatter_sum", "uniform_const",
                                    "broadcast_operand"),
                   piecewise_linear=True)
subtract = _elementwise("subtract", _subtract, _one, _minus_one, saves="none",
                        ufunc="subtract", scalar_form="{0} - {1}",
                        simplifications=("sub_zero", "uniform_const", "broadcast_operand"),
                        piecewise_linear=True)
multiply = _elementwise("multiply", _multiply,
                        lambda ans, x, y: y, lambda ans, x, y: x, saves="cross",
                        ufunc="multiply", scalar_form="{0} * {1}",
                        simplifications=("mul_one", "uniform_const", "neg_scale", "broadcast_operand"),
                        second_order="product", taylor="product")
# x / y is not x * (1 / y) in floating point, so divide keeps its own impl.
divide = _elementwise("divide", _divide,
                      lambda ans, x, y: reciprocal(y),
                      lambda ans, x, y: divide(negative(ans), y), saves="all", domain=(REAL, NONZERO),
                      ufunc="divide", scalar_form="{0} / {1}",
                      simplifications=("div_one", "uniform_const", "broadcast_operand"), fresh=True,
                      second_order="quotient", taylor="quotient")
negative = _elementwise("negative", lambda xp, x: -x, _minus_one, saves="none",
                        ufunc="negative", scalar_form="-{0}", simplifications=("neg_neg", "neg_scale"),
                        piecewise_linear=True)


def _pow_base_partial(ans, x, y):
    # y * x**(y-1), taken as 0 at x = y = 0 (where x**0 = 1 is constant). Only
    # that point is guarded, so the partial stays exact (and differentiable in
    # y) everywhere else.
    both_zero = logical_and(equal(x, 0), equal(y, 0))
    safe_x = where(both_zero, 1.0, x)
    return where(both_zero, 0.0, multiply(y, power(safe_x, y - 1.0)))


def _pow_exponent_partial(ans, x, y):
    # d/dy x**y = x**y log x; its limit at x = 0 (for y > 0) is 0.
    is_zero = equal(x, 0)
    return where(is_zero, 0.0, multiply(ans, log(where(is_zero, 1.0, x))))


_pow = _elementwise("power", lambda xp, x, y: xp.pow(x, y),
                    _pow_base_partial, _pow_exponent_partial, saves="all", domain=(POSITIVE, REAL),
                    ufunc="power", fresh=True, taylor="power")


def _integer_pow_partial(ans, x, *, exponent):
    if exponent == 0:
        return None
    if exponent == 1:
        return 1
    if exponent == 2:
        return multiply(2.0, x)
    return multiply(exponent, _integer_pow(x, exponent=exponent - 1))


def _const_pow(xp, x, *, exponent):
    if exponent == 2:
        return x * x
    if xp is scalar_xp:
        return xp.pow(x, float(exponent))
    return x ** exponent


# A constant exponent (``x ** 3``) needs no log(x) and is exact for negative
# bases, so it gets its own primitive, as JAX's integer_pow does.
_integer_pow = _elementwise("integer_pow", _const_pow, _integer_pow_partial,
                            ufunc="square", ufunc_params={"exponent": 2},
                            scalar_form="{0} * {0}", fresh=True, taylor="integer_pow")


def power(x, y):
    """``x ** y``; a constant Python-number exponent uses an exact rule.

    Examples
    --------
    >>> from dualad import derivative, ops
    >>> derivative(lambda x: ops.power(x, 3))(-2.0)
    12.0
    """
    if isinstance(y, (int, float)) and not isinstance(y, bool):
        if y == 0:
            return _integer_pow(x, exponent=0)
        return _integer_pow(x, exponent=y)
    return _pow(x, y)


_abs = _elementwise("abs", lambda xp, x: xp.abs(x), lambda ans, x: sign(x), domain=(NONZERO,),
                    ufunc="abs", scalar_form="abs({0})", fresh=True, piecewise_linear=True)


def abs(x):
    """``abs``; its derivative at 0 is taken to be 0.

    A complex ``x`` gives ``hypot(real(x), imag(x))``: ``|z|`` is not
    complex-differentiable, so it is built from the parts.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp, ops
    >>> jvp(ops.abs, (np.array([3 + 4j]),), (np.array([1 + 0j]),))[1].tolist()
    [0.6]
    """
    if is_complex(x):
        return hypot(real(x), imag(x))
    return _abs(x)


abs.primitive = _abs.primitive
sign = _zero("sign", lambda xp, x: xp.sign(x), ufunc="sign")
square = _elementwise("square", lambda xp, x: x * x, lambda ans, x: multiply(2.0, x),
                      ufunc="square", scalar_form="{0} * {0}", fresh=True, taylor="square")
sqrt = _elementwise("sqrt", lambda xp, x: xp.sqrt(x), lambda ans, x: divide(0.5, ans), saves="output",
                    domain=(POSITIVE,),
                    doc="``sqrt``; its derivative at 0 is ``inf``.", ufunc="sqrt", fresh=True, taylor="sqrt")
cbrt = _elementwise("cbrt", lambda xp, x: _cbrt(xp, x),
                    lambda ans, x: reciprocal(3.0 * square(ans)), saves="output", domain=(NONZERO,),
                    ufunc="cbrt", fresh=True)


def _cbrt(xp, x):
    if hasattr(xp, "cbrt"):
        return xp.cbrt(x)
    return xp.sign(x) * xp.abs(x) ** (1.0 / 3.0)


reciprocal = _elementwise("reciprocal", lambda xp, x: xp.divide(1.0, x),
                          lambda ans, x: negative(square(ans)), saves="output", domain=(NONZERO,),
                          ufunc="reciprocal", scalar_form="1.0 / {0}", fresh=True)

# -- exponentials and logarithms ------------------------------------------------
exp = _elementwise("exp", lambda xp, x: xp.exp(x), lambda ans, x: ans, saves="output", ufunc="exp",
                   taylor="exp")
exp2 = _elementwise("exp2", lambda xp, x: 2.0 ** x if hasattr(xp, "exp2") else 2.0 ** x,
                    lambda ans, x: multiply(ans, math.log(2.0)), saves="output", fresh=True)
expm1 = _elementwise("expm1", lambda xp, x: xp.expm1(x), lambda ans, x: ans + 1.0, saves="output",
                     ufunc="expm1", fresh=True)
log = _elementwise("log", lambda xp, x: xp.log(x), lambda ans, x: reciprocal(x), domain=(POSITIVE,),
                   ufunc="log", fresh=True, taylor="log")
log2 = _elementwise("log2", lambda xp, x: xp.log2(x),
                    lambda ans, x: reciprocal(multiply(x, math.log(2.0))), domain=(POSITIVE,),
                    ufunc="log2", fresh=True)
log10 = _elementwise("log10", lambda xp, x: xp.log10(x),
                     lambda ans, x: reciprocal(multiply(x, math.log(10.0))), domain=(POSITIVE,),
                     ufunc="log10", fresh=True)
log1p = _elementwise("log1p", lambda xp, x: xp.log1p(x),
                     lambda ans, x: reciprocal(x + 1.0), domain=(((-1.0, math.inf),),),
                     ufunc="log1p", fresh=True)
logaddexp = _elementwise("logaddexp", lambda xp, x, y: xp.logaddexp(x, y),
                         lambda ans, x, y: exp(x - ans), lambda ans, x, y: exp(y - ans), saves="all",
                         ufunc="logaddexp", fresh=True)

# -- trigonometric and hyperbolic --------------------------------------------------
sin = _elementwise("sin", lambda xp, x: xp.sin(x), lambda ans, x: cos(x), ufunc="sin", fresh=True,
                   taylor="sin")
cos = _elementwise("cos", lambda xp, x: xp.cos(x), lambda ans, x: negative(sin(x)), ufunc="cos", fresh=True,
                   taylor="cos")
tan = _elementwise("tan", lambda xp, x: xp.tan(x), lambda ans, x: square(ans) + 1.0, saves="output",
                   domain=(((-math.pi / 2, math.pi / 2),),),
                   ufunc="tan", fresh=True)  # one branch of its period
arcsin = _elementwise("arcsin", lambda xp, x: xp.asin(x),
                      lambda ans, x: reciprocal(sqrt(1.0 - square(x))), domain=(UNIT,),
                      ufunc="arcsin", fresh=True)
arccos = _elementwise("arccos", lambda xp, x: xp.acos(x),
                      lambda ans, x: negative(reciprocal(sqrt(1.0 - square(x)))), domain=(UNIT,),
                      ufunc="arccos", fresh=True)
arctan = _elementwise("arctan", lambda xp, x: xp.atan(x),
                      lambda ans, x: reciprocal(square(x) + 1.0), ufunc="arctan", fresh=True)
arctan2 = _elementwise(
    "arctan2", lambda xp, y, x: xp.atan2(y, x),
    lambda ans, y, x: divide(x, square(x) + square(y)),
    lambda ans, y, x: divide(negative(y), square(x) + square(y)),
    domain=(REAL, POSITIVE),
    ufunc="arctan2", fresh=True)  # smooth off the origin and the cut x < 0; x > 0 is inside
sinh = _elementwise("sinh", lambda xp, x: xp.sinh(x), lambda ans, x: cosh(x), ufunc="sinh", fresh=True)
cosh = _elementwise("cosh", lambda xp, x: xp.cosh(x), lambda ans, x: sinh(x), ufunc="cosh", fresh=True)
tanh = _elementwise("tanh", lambda xp, x: xp.tanh(x), lambda ans, x: 1.0 - square(ans), saves="output",
                    ufunc="tanh", fresh=True, taylor="tanh")
arcsinh = _elementwise("arcsinh", lambda xp, x: xp.asinh(x),
                       lambda ans, x: reciprocal(sqrt(square(x) + 1.0)), ufunc="arcsinh", fresh=True)
arccosh = _elementwise("arccosh", lambda xp, x: xp.acosh(x),
                       lambda ans, x: reciprocal(sqrt(square(x) - 1.0)), domain=(((1.0, math.inf),),),
                       ufunc="arccosh", fresh=True)
arctanh = _elementwise("arctanh", lambda xp, x: xp.atanh(x),
                       lambda ans, x: reciprocal(1.0 - square(x)),
                       domain=(UNIT,), ufunc="arctanh", fresh=True)


def _hypot_partial(ans, x, y):
    # x / hypot(x, y), taken as 0 at the origin (a subgradient).
    return divide(x, where(equal(ans, 0), 1.0, ans))


hypot = _elementwise("hypot", lambda xp, x, y: xp.hypot(x, y),
                     _hypot_partial, lambda ans, x, y: _hypot_partial(ans, y, x), saves="all",
                     domain=(NONZERO, REAL), ufunc="hypot", fresh=True)  # smooth off the origin

# -- piecewise: the partials are masks, which the tape keeps instead of inputs --
def _tie_shared(wins):
    """The partial of maximum/minimum in one argument: 1 where it ``wins``
    alone, 1/2 where the two tie (the derivative is shared, as ``torch.maximum``
    and ``jnp.maximum`` do), 0 elsewhere.

    On arrays without a tie it stays a mask (the tape keeps one byte an entry,
    and a loser's tangent is dropped, not multiplied by 0). On a value that
    vmap batches or compile traces, whether there is a tie is not one Python
    decision, so the weights are always computed, with ``where``: the numbers
    are the same, but for an infinite or nan tangent at a losing entry (nan,
    as ``jax.numpy.maximum`` gives, where the mask gives 0)."""
    def partial(ans, x, y):
        win, tie = wins(x, y), equal(x, y)
        if type(tie) is bool:  # Python floats
            return 0.5 if tie else 1.0 if win else 0.0
        if not isinstance(tie, Value) and not bool(namespace_of([tie]).any(tie)):
            return win
        return where(tie, 0.5, astype(win, dtype_of(raw(ans))))
    return partial


maximum = _elementwise("maximum", lambda xp, x, y: xp.maximum(x, y),
                       _tie_shared(lambda x, y: greater(x, y)),
                       _tie_shared(lambda x, y: greater(y, x)),
                       save_partials=True, ufunc="maximum", fresh=True, piecewise_linear=True)
minimum = _elementwise("minimum", lambda xp, x, y: xp.minimum(x, y),
                       _tie_shared(lambda x, y: less(x, y)),
                       _tie_shared(lambda x, y: less(y, x)), save_partials=True, ufunc="minimum", fresh=True,
                       piecewise_linear=True)
relu = _elementwise("relu", lambda xp, x: xp.maximum(x, 0.0), lambda ans, x: greater(x, 0),
                    save_partials=True, domain=(NONZERO,),
                    doc="``max(x, 0)`` with ``relu'(0) = 0``, as ``torch.relu`` and ``jax.nn.relu``; "
                        "the tape keeps a mask, not ``x``.", fresh=True, piecewise_linear=True)


def _where_impl(xp, c, x, y):
    if xp is scalar_xp:
        return x if c else y
    # The array API wants an array condition and at most one Python scalar.
    if type(c) is bool:
        c = xp.asarray(c)
    if type(x) in _PYTHON_NUMBERS and type(y) in _PYTHON_NUMBERS and xp is not NUMPY_XP:
        x = xp.asarray(x, dtype=getattr(xp, np.result_type(x, y).name))  # NumPy's dtype for the two
    return xp.where(c, x, y)


_PYTHON_NUMBERS = (bool, int, float, complex)


where = _elementwise("where", _where_impl,
                     lambda ans, c, x, y: None,
                     lambda ans, c, x, y: c,
                     lambda ans, c, x, y: logical_not(c), save_partials=True,
                     doc="``where(condition, x, y)``; no derivative flows to the condition.", fresh=(2,),
                     piecewise_linear=True, lowering="where")



# -- complex parts: linear over the reals --------------------------------------------
# Each sees complex inputs only (the functions below answer real ones), and
# transposes by JAX's convention: the cotangent of a complex input is the one
# ``grad`` of a real-valued function returns (the conjugate of PyTorch's).
def _complex_constant(like, value):
    """``value`` as a 0-d array of the backend and complex dtype of ``like``."""
    r = raw(like)
    return namespace_of([r]).asarray(value, dtype=dtype_of(r))


def _to_complex(g, dtype):
    if type(g) in (float, int):  # a seed cotangent of a 0-d real output
        return complex(g)
    return astype(g, dtype)


_real_p = linear("real", lambda xp, x: xp.real(x),
                 lambda g, x: (_to_complex(g, x[1]),), fresh=True, broadcasts=True)


def _imag_transpose(g, x):
    g = _to_complex(g, x[1])
    return (multiply(g, _complex_constant(g, -1j)),)  # d Im(z) pairs with -i


_imag_p = linear("imag", lambda xp, x: xp.imag(x), _imag_transpose, fresh=True, broadcasts=True)
_conj_p = linear("conj", lambda xp, x: xp.conj(x), lambda g, x: (conj(g),), fresh=True, broadcasts=True)


def real(x):
    """The real part; a real ``x`` is returned as it is.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp, ops
    >>> jvp(ops.real, (np.array([1 + 2j]),), (np.array([3 + 4j]),))[1].tolist()
    [3.0]
    """
    return bind(_real_p, x) if is_complex(x) else x


def imag(x):
    """The imaginary part; of a real ``x``, constant zeros."""
    return bind(_imag_p, x) if is_complex(x) else zeros(x)


def conj(x):
    """The complex conjugate; a real ``x`` is returned as it is."""
    return bind(_conj_p, x) if is_complex(x) else x


def angle(x, deg=False):
    """The argument of complex ``x`` (``arctan2(imag, real)``); of a real ``x``,
    the constant 0 or pi."""
    if is_complex(x):
        out = arctan2(imag(x), real(x))
    else:
        out = stop_gradient(where(less(x, 0), math.pi, 0.0))
    return multiply(out, 180.0 / math.pi) if deg else out


real.primitive, imag.primitive, conj.primitive = _real_p, _imag_p, _conj_p


# -- casts ------------------------------------------------------------------------------
# The transpose casts back: a linear entry's cotangent takes its input's dtype (the
# real part first for a real input, since strict namespaces refuse complex-to-real).
_astype_p = linear("astype", lambda xp, x, *, dtype: xp.astype(x, dtype),
                   lambda g, x, *, dtype: (g,), simplifications=("same_dtype",), fresh=True, broadcasts=True)


_PYTHON_DTYPES = {float: "float64", complex: "complex128", int: "int64", bool: "bool"}


def astype(x, dtype):
    """Cast ``x``; a cast to a non-float dtype has no derivative. ``dtype`` may be
    spelled as NumPy spells it too (``"float32"``, ``float``, ``np.float32``)."""
    r = raw(x)
    if type(r) in SCALAR_TYPES:
        if x is r:
            return dtype(r) if isinstance(dtype, type) else namespace_of([r]).asarray(r, dtype=dtype)
        if type(r) is dtype:
            return x
        # a value type around a Python number keeps its derivative: cast as a 0-d array
        dtype = np.dtype(_PYTHON_DTYPES.get(dtype, dtype))
        if not is_float_dtype(NUMPY_XP, dtype):
            return on_values(lambda v: NUMPY_XP.astype(NUMPY_XP.asarray(v), dtype), x)
        return bind(_astype_p, x, dtype=dtype)
    if isinstance(dtype, str) or dtype in _PYTHON_DTYPES:
        xp = namespace_of([r])
        name = _PYTHON_DTYPES.get(dtype, dtype)
        dtype = np.dtype(name) if xp is NUMPY_XP else getattr(xp, name)
    if dtype_of(r) == dtype:
        return x
    if not is_float_dtype(namespace_of([r]), dtype):
        return on_values(lambda v: namespace_of([v]).astype(v, dtype), x)
    return bind(_astype_p, x, dtype=dtype)


# -- zero derivative and non-differentiable --------------------------------------
floor = _zero("floor", lambda xp, x: xp.floor(x), ufunc="floor")
ceil = _zero("ceil", lambda xp, x: xp.ceil(x), ufunc="ceil")
trunc = _zero("trunc", lambda xp, x: xp.trunc(x), ufunc="trunc")
rint = _zero("round", lambda xp, x: xp.round(x))
floor_divide = _zero("floor_divide", lambda xp, x, y: xp.floor_divide(x, y))
floor_divide.__doc__ = ("``x // y``, NumPy's floored division (not ``floor(x / y)``: ``1.0 // 0.1`` "
                        "is 9.0), with zero derivative; of integers, an integer.")
# NumPy's remainder (by fmod, exact, where x - (x // y) * y rounds), with the sign of y:
# derivatives 1 and -(x // y), jumping where x / y is an integer.
remainder = _elementwise("remainder", lambda xp, x, y: xp.remainder(x, y), _one,
                         lambda ans, x, y: negative(floor_divide(x, y)),
                         doc="``x % y``, NumPy's remainder (the sign of ``y``); of integers, an integer.",
                         fresh=(1,), piecewise_linear=True)


def round(x, decimals=0):
    """``numpy.round``: to ``decimals`` places, half to even, as NumPy scales and
    rounds; the derivative is 0."""
    if decimals == 0:
        return rint(x)
    if decimals > 0:
        return rint(x * 10.0 ** decimals) / 10.0 ** decimals
    return rint(x / 10.0 ** -decimals) * 10.0 ** -decimals


round.primitive = rint.primitive
stop_gradient = _zero("stop_gradient", lambda xp, x: x)
stop_gradient.__doc__ = """The value of ``x`` with no derivative in any mode.

It cuts tape edges and Dual tangents alike.

Examples
--------
>>> from dualad import derivative, ops
>>> derivative(lambda x: x * ops.stop_gradient(x))(3.0)
3.0
"""
less = _nondiff("less", lambda xp, x, y: x < y, ufunc="less")
less_equal = _nondiff("less_equal", lambda xp, x, y: x <= y, ufunc="less_equal")
greater = _nondiff("greater", lambda xp, x, y: x > y, ufunc="greater")
greater_equal = _nondiff("greater_equal", lambda xp, x, y: x >= y, ufunc="greater_equal")
equal = _nondiff("equal", lambda xp, x, y: x == y, ufunc="equal")
not_equal = _nondiff("not_equal", lambda xp, x, y: x != y, ufunc="not_equal")
logical_and = _nondiff("logical_and", lambda xp, x, y: xp.logical_and(x, y), ufunc="logical_and")
logical_or = _nondiff("logical_or", lambda xp, x, y: xp.logical_or(x, y), ufunc="logical_or")
logical_not = _nondiff("logical_not", lambda xp, x: xp.logical_not(x), ufunc="logical_not")
isnan = _nondiff("isnan", lambda xp, x: xp.isnan(x), ufunc="isnan")
isfinite = _nondiff("isfinite", lambda xp, x: xp.isfinite(x), ufunc="isfinite")
isinf = _nondiff("isinf", lambda xp, x: xp.isinf(x), ufunc="isinf")

operations.provide(add, subtract, multiply, real, where, astype)

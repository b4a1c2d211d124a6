"""Taylor mode: ``Jet``, a truncated Taylor series, and :func:`jet` (JAX's signature).

A ``Jet`` of order K holds ``x(t) = c_0 + c_1 t + ... + c_K t^K`` with the
*normalized* coefficients ``c_k = x^(k)(0) / k!``, so products are Cauchy
products. :func:`jet` takes and returns JAX's terms ``x^(k)(0)`` (the
coefficients times ``k!``), converting at the boundary.

Every entry of the table gets a rule, asked in this order:

- an entry with no derivative (``records`` False): the result is constant in t;
- a recurrence of :data:`RECURRENCES` (O(K^2) products), by the kind the entry
  declares (``Primitive.declare``'s ``taylor``): ``multiply`` and ``matmul``
  (Cauchy products), ``divide``, ``square``, ``exp``, ``log``,
  ``sqrt``, ``sin``, ``cos``, ``tanh``, ``power`` and ``integer_pow`` with a
  constant exponent on a base with no zero;
- an entry linear in the operands that carry a series (``linear_args`` of a
  linear entry), or declared piecewise linear (``Primitive.piecewise_linear``:
  ``add``, ``maximum``, ``where``, ``abs`` of real values, ``max``, ``gather``,
  ...) on real operands: its JVP at the primals applied to the K coefficients
  at once, as a chunk of K directions (the series stays on one linear piece);
- every other entry: the fallback, which differentiates the entry's JVP along
  the series. With ``y(t) = f(x(t))``, ``y'(t) = jvp(f)(x(t), x'(t))``, so the
  K - 1 first coefficients of ``y'`` are the JVP rule run on Jets of order
  K - 1 (of ``x``, of ``x'`` and of ``y``, the last by the same rule one order
  lower); ``y_k = y'_{k-1} / k``. Exact; about K times a recurrence's cost
  where the JVP rule uses entries with recurrences, but doubling with each
  order, as nested ``jvp`` does, where the rule calls the entry itself
  (``solve``, ``inv``, the decompositions).

:func:`jet_rules` says which rule each entry of the table uses.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from dualad import ops
from dualad._base.checks import check_callable, validate_tangent
from dualad._base.core import Value, bind, new_level, transform_level
from dualad._base.shapes import across_batch, dtype_of, shape_of, zeros
from dualad._base.tree import flatten
from dualad._forward.dual import PrimalShaped
from dualad._numpy.arraylike import ArrayLike
from dualad._table.entries import REGISTRY, Primitive, piecewise_linear_at

__all__ = ["Jet", "jet", "jet_rules"]


class Jet(PrimalShaped, ArrayLike, Value):
    """A truncated Taylor series ``primal + c_1 t + ... + c_K t^K`` (made by :func:`jet`).

    ``coeffs`` holds the normalized coefficients ``c_k = x^(k)(0) / k!``, each
    of the primal's shape and dtype.
    """

    __slots__ = ("primal", "coeffs")
    __array_priority__ = 100
    made_by = "dualad.jet"

    @classmethod
    def _make(cls, primal: Any, coeffs: list, level: int) -> "Jet":
        j = object.__new__(cls)
        j.primal, j.coeffs, j._level = primal, coeffs, level
        return j

    def __repr__(self) -> str:
        return f"Jet({self.primal!r}, {self.coeffs!r})"

    def _process(self, prim: Primitive, args: tuple, params: dict) -> Any:
        level, order = self._level, len(self.coeffs)
        primals, series = [], []
        for a in args:
            if type(a) is Jet and a._level == level:
                primals.append(a.primal)
                series.append(a.coeffs)
            else:
                primals.append(a)
                series.append(None)
        ans, coeffs = _rule(prim, primals, series)(prim, primals, series, params, order)
        if coeffs is None:  # constant in t
            return ans
        if prim.multiple_results:
            return tuple(_wrap(a, c, level) for a, c in zip(ans, coeffs))
        return _wrap(ans, coeffs, level)


def _wrap(ans: Any, coeffs: list | None, level: int) -> Any:
    """A Jet of ``ans`` whose coefficients take its shape and dtype, or ``ans`` for no series
    (an output of several without a series)."""
    if coeffs is None:
        return ans
    shape, dtype = shape_of(ans), dtype_of(ans)
    out = []
    for c in coeffs:
        if shape_of(c) != shape:
            c = ops.broadcast_to(c, shape)
        if type(ans) is not float and dtype_of(c) != dtype:
            c = ops.astype(c, dtype)
        out.append(c)
    return Jet._make(ans, out, level)


# -- which rule ---------------------------------------------------------------------
def _rule(prim: Primitive, primals: list, series: list) -> Callable:
    if not prim.records:
        return _constant
    if prim.taylor is not None:
        return RECURRENCES[prim.taylor]
    return _linear if _is_linear_in(prim, series) or piecewise_linear_at(prim, primals) else _fallback


def _is_linear_in(prim: Primitive, series: list) -> bool:
    """Whether the entry declares itself linear (``linear_args``, None for all of them)
    in every operand that carries a series."""
    lin = prim.linear_args
    if lin == ():
        return False
    return lin is None or all(s is None for i, s in enumerate(series) if i not in lin)


def jet_rules() -> dict[str, str]:
    """Which Taylor rule :func:`jet` uses for each entry of the table.

    Returns
    -------
    dict
        Entry name to ``"recurrence"``, ``"linear"`` (coefficient by
        coefficient), ``"constant"`` (no derivative) or ``"fallback"`` (the
        entry's JVP differentiated along the series; see :mod:`dualad._forward.jet`).
        A linear entry given a series in an argument it is not linear in
        uses the fallback there, as does a power on a base with a zero.

    Examples
    --------
    >>> from dualad import jet_rules
    >>> rules = jet_rules()
    >>> rules["exp"], rules["reshape"], rules["floor"], rules["solve"]
    ('recurrence', 'linear', 'constant', 'fallback')
    """
    kinds = {_constant: "constant", _linear: "linear", _fallback: "fallback"}
    return {name: kinds.get(_rule(prim, (), ()), "recurrence") for name, prim in REGISTRY.items()}


def _constant(prim, primals, series, params, order):
    return bind(prim, *primals, **params), None


def _linear(prim, primals, series, params, order):
    """The entry's JVP on the K coefficients as one chunk of K directions."""
    ans = bind(prim, *primals, **params)
    if order == 0:
        return ans, []
    tangents = [None if s is None else ops.stack(s, axis=0) for s in series]
    out = prim.jvp(primals, tangents, ans, params, 1)
    if out is None:
        return ans, None
    if prim.multiple_results:
        return ans, [None if o is None else _unstack(o, order) for o in out]
    return ans, _unstack(out, order)


def _unstack(stacked, order):
    return [ops.getitem(stacked, (k,)) for k in range(order)]


def _fallback(prim, primals, series, params, order):
    """``y_k = y'_{k-1} / k``, with ``y'`` the entry's JVP rule run on Jets one order lower."""
    if order == 0:
        return bind(prim, *primals, **params), []
    if order == 1:
        xs = primals
        ts = [None if s is None else s[0] for s in series]
        ans = bind(prim, *xs, **params)
    else:
        lvl = new_level()
        xs = [p if s is None else Jet._make(p, s[:-1], lvl) for p, s in zip(primals, series)]
        ts = [None if s is None else Jet._make(s[0], [(j + 1) * s[j] for j in range(1, order)], lvl)
              for s in series]
        ans = bind(prim, *xs, **params)
    try:
        dy = prim.jvp(xs, ts, ans, params, 0)
    except NotImplementedError as e:
        raise NotImplementedError(f"jet: the entry {prim.name!r} has no Taylor rule and no JVP rule "
                                  "for the fallback to differentiate") from e
    if prim.multiple_results:
        outs = [_integrate(a, d, order) for a, d in zip(ans, dy or (None,) * len(ans))]
        return tuple(o[0] for o in outs), [o[1] for o in outs]
    return _integrate(ans, dy, order)


def _integrate(ans, dy, order):
    """The primal of ``ans`` and the coefficients ``y_k = y'_{k-1} / k`` from the series ``dy``."""
    primal = ans.primal if type(ans) is Jet else ans
    if dy is None:
        return primal, None
    if type(dy) is Jet:
        ds = [dy.primal, *dy.coeffs]
    else:  # a derivative constant in t
        ds = [dy] + [zeros(primal)] * (order - 1)
    return primal, [d if k == 0 else d / (k + 1) for k, d in enumerate(ds)]


# -- recurrences (normalized coefficients; a constant operand has no series) -----------
def _full(primal, s):
    return [primal, *s]


def _multiply(prim, primals, series, params, order):
    (x, y), (sx, sy) = primals, series
    ans = bind(prim, x, y, **params)
    if sx is None:
        return ans, [bind(prim, x, c, **params) for c in sy]
    if sy is None:
        return ans, [bind(prim, c, y, **params) for c in sx]
    return ans, _cauchy(lambda a, b: bind(prim, a, b, **params), _full(x, sx), _full(y, sy), order)


def _cauchy(mul, a, b, order):
    """Coefficients 1..K of the product of two series of coefficients 0..K."""
    out = []
    for k in range(1, order + 1):
        term = mul(a[0], b[k])
        for j in range(1, k + 1):
            term = term + mul(a[j], b[k - j])
        out.append(term)
    return out


def _square(prim, primals, series, params, order):
    (x,), (sx,) = primals, series
    a = _full(x, sx)
    return bind(prim, x), _cauchy(lambda u, v: u * v, a, a, order)


def _divide(prim, primals, series, params, order):
    (x, y), (sx, sy) = primals, series
    q = [bind(prim, x, y)]
    for k in range(1, order + 1):
        num = sx[k - 1] if sx is not None else None
        if sy is not None:
            s = _sum(sy[j - 1] * q[k - j] for j in range(1, k + 1))
            num = -s if num is None else num - s
        q.append(num / y)
    return q[0], q[1:]


def _sum(terms):
    """The sum of an iterable of at least one array (no 0 + array for a strict backend)."""
    it = iter(terms)
    total = next(it)
    for t in it:
        total = total + t
    return total


def _exp(prim, primals, series, params, order):
    (x,), (sx,) = primals, series
    a, y = _full(x, sx), [bind(prim, x)]
    for k in range(1, order + 1):
        y.append(_sum(j * a[j] * y[k - j] for j in range(1, k + 1)) / k)
    return y[0], y[1:]


def _log(prim, primals, series, params, order):
    (x,), (sx,) = primals, series
    a, y = _full(x, sx), [bind(prim, x)]
    for k in range(1, order + 1):
        num = k * a[k]
        for j in range(1, k):
            num = num - (k - j) * a[j] * y[k - j]
        y.append(num / (k * x))
    return y[0], y[1:]


def _sqrt(prim, primals, series, params, order):
    (x,), (sx,) = primals, series
    a, y = _full(x, sx), [bind(prim, x)]
    for k in range(1, order + 1):
        num = a[k]
        for j in range(1, k):
            num = num - y[j] * y[k - j]
        y.append(num / (2.0 * y[0]))
    return y[0], y[1:]


def _sin_cos(x, sx, order):
    a, s, c = _full(x, sx), [ops.sin(x)], [ops.cos(x)]
    for k in range(1, order + 1):
        s.append(_sum(j * a[j] * c[k - j] for j in range(1, k + 1)) / k)
        c.append(-_sum(j * a[j] * s[k - j] for j in range(1, k + 1)) / k)
    return s, c


def _sin(prim, primals, series, params, order):
    s = _sin_cos(primals[0], series[0], order)[0]
    return s[0], s[1:]


def _cos(prim, primals, series, params, order):
    c = _sin_cos(primals[0], series[0], order)[1]
    return c[0], c[1:]


def _tanh(prim, primals, series, params, order):
    """``y' = (1 - y^2) x'``: ``z = 1 - y^2`` and ``y`` one coefficient at a time."""
    (x,), (sx,) = primals, series
    a, y = _full(x, sx), [bind(prim, x)]
    z = [1.0 - y[0] * y[0]]
    for k in range(1, order + 1):
        y.append(_sum(j * a[j] * z[k - j] for j in range(1, k + 1)) / k)
        z.append(-_sum(y[i] * y[k - i] for i in range(k + 1)))
    return y[0], y[1:]


def _power_series(ans, x, a, r, order):
    """``y = x^r`` for a constant ``r``: ``x y' = r x' y``, on a base with no zero."""
    y = [ans]
    for k in range(1, order + 1):
        y.append(_sum(((r + 1) * j - k) * a[j] * y[k - j] for j in range(1, k + 1)) / (k * x))
    return y[1:]


def _no_zero(x) -> bool:
    """Whether no entry of ``x`` is zero (in any element of a vmap batch: one branch for all)."""
    return not bool(ops.any(ops.equal(across_batch(x), 0)))


def _power(prim, primals, series, params, order):
    (x, r), (sx, sr) = primals, series
    if sr is not None or sx is None or not _no_zero(x):
        return _fallback(prim, primals, series, params, order)
    ans = bind(prim, x, r)
    return ans, _power_series(ans, x, _full(x, sx), r, order)


def _integer_pow(prim, primals, series, params, order):
    (x,), (sx,) = primals, series
    if not _no_zero(x):
        return _fallback(prim, primals, series, params, order)
    ans = bind(prim, x, **params)
    return ans, _power_series(ans, x, _full(x, sx), params["exponent"], order)


# The recurrence of each kind an entry declares (``Primitive.declare``'s ``taylor``).
RECURRENCES: dict[str, Callable] = {
    "product": _multiply, "quotient": _divide, "square": _square, "exp": _exp, "log": _log,
    "sqrt": _sqrt, "sin": _sin, "cos": _cos, "tanh": _tanh, "power": _power,
    "integer_pow": _integer_pow}


# -- the transform -----------------------------------------------------------------------
def _term(primal: Any, term: Any, name: str, primal_name: str) -> Any:
    """One input term, checked: the primal's shape and dtype (no chunk of directions)."""
    term, nb = validate_tangent(primal, term, name, primal_name)
    if nb:
        raise ValueError(f"{name}: a term must have the primal's shape {shape_of(primal)}, "
                         f"got shape {shape_of(term)}")
    return term


def jet(fun: Callable, primals: tuple, series: tuple) -> tuple:
    r"""Taylor-mode derivatives of ``fun`` along a curve, as ``jax.experimental.jet.jet``.

    With the input curve ``x(t) = x_0 + x_1 t + x_2 t^2 / 2! + ... + x_K t^K / K!``
    (``x_0`` from ``primals``, ``x_1 .. x_K`` from ``series``), returns
    ``y_0 = fun(x_0)`` and ``y_k = d^k/dt^k fun(x(t))`` at ``t = 0`` for
    k = 1..K, in one pass that propagates the truncated series (see
    :func:`jet_rules` for each entry's rule). With ``series = ([v, 0, ..., 0],)``,
    ``y_k`` is the k-th directional derivative of ``fun`` along ``v``.

    Parameters
    ----------
    fun : callable
        A function of arrays or floats, returning an array, a float or a pytree of them.
    primals : tuple
        The arguments of ``fun`` (arrays or floats; one entry per positional argument).
    series : tuple
        For each argument, a list of K terms ``x_1 .. x_K``, each of its shape and dtype.

    Returns
    -------
    (primal_out, series_out)
        ``fun(*primals)``, and for each leaf of it the list of K terms ``y_1 .. y_K``.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jet
    >>> y0, (y1, y2, y3) = jet(np.exp, (0.0,), ([1.0, 0.0, 0.0],))
    >>> float(y0), float(y1), float(y2), float(y3)
    (1.0, 1.0, 1.0, 1.0)
    >>> _, (d1, d2) = jet(lambda x: x ** 3, (np.array([2.0]),), ([np.array([1.0]), np.array([0.0])],))
    >>> d1, d2
    (array([12.]), array([12.]))
    """
    check_callable(fun, "jet", "fun")
    if not isinstance(primals, (tuple, list)) or not isinstance(series, (tuple, list)):
        raise TypeError(f"jet: primals and series must be tuples (one entry per argument of fun), "
                        f"got {type(primals).__name__} and {type(series).__name__}")
    if len(primals) != len(series):
        raise ValueError(f"jet: series must have one list of terms per primal ({len(primals)}), "
                         f"got {len(series)}")
    for i, s in enumerate(series):
        if not isinstance(s, (tuple, list)):
            raise TypeError(f"jet: series[{i}] must be a list of terms x_1 .. x_K, "
                            f"got {type(s).__name__}")
    orders = {len(s) for s in series}
    if len(orders) > 1:
        raise ValueError(f"jet: every argument needs the same number of terms, got {sorted(orders)}")
    order = orders.pop() if orders else 0
    with transform_level() as level:
        args = []
        for i, (p, terms) in enumerate(zip(primals, series)):
            coeffs = [_term(p, t, f"jet: series[{i}][{k}]", f"jet: primals[{i}]")
                      / math.factorial(k + 1) for k, t in enumerate(terms)]
            args.append(Jet._make(p, coeffs, level))
        out_leaves, build = flatten(fun(*args))
        out_primals, out_series = [], []
        for leaf in out_leaves:
            if type(leaf) is Jet and leaf._level == level:
                out_primals.append(leaf.primal)
                out_series.append([c * math.factorial(k + 1) for k, c in enumerate(leaf.coeffs)])
            else:
                out_primals.append(leaf)
                out_series.append([zeros(leaf) for _ in range(order)])
    return build(out_primals), build(out_series)

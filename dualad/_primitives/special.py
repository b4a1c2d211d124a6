"""SciPy's special functions (``scipy.special``), each an elementwise entry.

Values come from ``scipy.special`` on NumPy arrays and floats and from
``cupyx.scipy.special`` on CuPy; other namespaces have none and say so. The
partials are written with the table's functions, so every order of
derivative is available (``gammaln`` -> ``digamma`` -> ``polygamma``).
``scipy.special.<name>(value)`` dispatches here through ``__array_ufunc__``.
"""

from __future__ import annotations

import math

from dualad._base.backend import SCALAR_TYPES, scalar_xp, scipy_module
from dualad._primitives import elementwise as _ew
from dualad._primitives.elementwise import _elementwise
from dualad._table.entries import NONZERO, POSITIVE, REAL, UNIT

__all__ = ["erf", "erfc", "erfinv", "erfcx", "gamma", "gammaln", "digamma", "polygamma",
           "ndtr", "log_ndtr", "ndtri", "i0", "i1", "i0e", "i1e", "logit", "xlogy", "xlog1py", "entr",
           "rel_entr", "erfcinv", "log_expit"]

_SQRT_PI = math.sqrt(math.pi)
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_MATH = {"erf": math.erf, "erfc": math.erfc, "gamma": math.gamma, "gammaln": math.lgamma}


def _scipy(name):
    """The implementation of ``name``: ``math`` or SciPy on floats, the backend's module
    on arrays, in the dtype of the last argument (SciPy's polygamma answers float64).
    On arrays a Python number (polygamma's order) goes in as an array of the backend:
    ``cupyx.scipy.special.polygamma`` refuses a Python int."""
    on_floats = _MATH.get(name)

    def impl(xp, *args):
        module = scipy_module(xp, "special", name)
        if xp is scalar_xp:
            return on_floats(*args) if on_floats is not None else float(getattr(module, name)(*args))
        out = getattr(module, name)(*(xp.asarray(a) if type(a) in SCALAR_TYPES else a for a in args))
        x = args[-1]
        return out.astype(x.dtype) if hasattr(x, "dtype") and out.dtype != x.dtype else out
    return impl


_OPEN_UNIT = ((0.0, 1.0),)


def _special(name, *partials, saves="inputs", domain=None):
    # Every partial here computes its value from the arguments: a new array.
    return _elementwise(name, _scipy(name), *partials, saves=saves, domain=domain, fresh=True,
                        doc=f"``scipy.special.{name}``, differentiable in every mode "
                            "(NumPy with SciPy, CuPy, and Python floats).")


def _gauss(x):
    return _ew.exp(-0.5 * _ew.square(x)) / _SQRT_2PI


erf = _special("erf", lambda ans, x: (2.0 / _SQRT_PI) * _ew.exp(-_ew.square(x)))
erfc = _special("erfc", lambda ans, x: (-2.0 / _SQRT_PI) * _ew.exp(-_ew.square(x)))
erfinv = _special("erfinv", lambda ans, x: (_SQRT_PI / 2.0) * _ew.exp(_ew.square(ans)), saves="all",
                  domain=(UNIT,))
erfcx = _special("erfcx", lambda ans, x: 2.0 * _ew.multiply(x, ans) - 2.0 / _SQRT_PI, saves="all")
ndtr = _special("ndtr", lambda ans, x: _gauss(x))
log_ndtr = _special("log_ndtr", lambda ans, x: _ew.exp(-0.5 * _ew.square(x) - ans) / _SQRT_2PI, saves="all")
ndtri = _special("ndtri", lambda ans, x: _SQRT_2PI * _ew.exp(0.5 * _ew.square(ans)), saves="all",
                 domain=(_OPEN_UNIT,))
# The gamma family is smooth off the poles 0, -1, -2, ...; x > 0 is the domain tested.
polygamma = _special("polygamma", lambda ans, n, x: None, lambda ans, n, x: polygamma(n + 1, x),
                     domain=(REAL, POSITIVE))  # n, the order, takes no derivative
digamma = _special("digamma", lambda ans, x: polygamma(1, x), domain=(POSITIVE,))
gammaln = _special("gammaln", lambda ans, x: digamma(x), domain=(POSITIVE,))
gamma = _special("gamma", lambda ans, x: _ew.multiply(ans, digamma(x)), saves="all", domain=(POSITIVE,))
i0 = _special("i0", lambda ans, x: i1(x))


def _i1_over_x(i1x, x):
    """``i1(x) / x`` given ``i1x = i1(x)``: near 0 its series (1/2 at 0), so no
    cancellation spoils the derivatives there; elsewhere the quotient."""
    small = _ew.less(_ew.abs(x), 0.1)
    y = 0.25 * _ew.square(x)
    series = 0.5 * (1.0 + y * (0.5 + y * (1.0 / 12.0 + y * (1.0 / 144.0 + y / 2880.0))))
    return _ew.where(small, series, _ew.divide(i1x, _ew.where(small, 1.0, x)))


def _i1_partial(ans, x):
    return i0(x) - _i1_over_x(ans, x)


def _i1e_partial(ans, x):
    # i0e(x) - i1e(x) (sign(x) + 1 / x), with i1e(x) / x = exp(-|x|) i1(x) / x
    scaled = _ew.exp(-_ew.abs(x)) * _i1_over_x(i1(x), x)
    return i0e(x) - _ew.multiply(_ew.sign(x), ans) - scaled


i1 = _special("i1", _i1_partial, saves="all")
i0e = _special("i0e", lambda ans, x: i1e(x) - _ew.multiply(_ew.sign(x), ans), saves="all",
                domain=(NONZERO,))  # exp(-|x|) has a kink at 0
i1e = _special("i1e", _i1e_partial, saves="all", domain=(NONZERO,))
logit = _special("logit", lambda ans, x: _ew.reciprocal(_ew.multiply(x, 1.0 - x)), domain=(_OPEN_UNIT,))


# As JAX's: x / y in y, so (x, y) = (0, 0) gives nan there.
xlogy = _special("xlogy", lambda ans, x, y: _ew.log(y), lambda ans, x, y: _ew.divide(x, y),
                 domain=(REAL, POSITIVE))
xlog1py = _special("xlog1py", lambda ans, x, y: _ew.log1p(y), lambda ans, x, y: _ew.divide(x, 1.0 + y),
                   domain=(REAL, ((-1.0, math.inf),)))
entr = _special("entr", lambda ans, x: -(_ew.log(x) + 1.0), domain=(POSITIVE,))
rel_entr = _special("rel_entr", lambda ans, x, y: _ew.log(_ew.divide(x, y)) + 1.0,
                    lambda ans, x, y: -_ew.divide(x, y), domain=(POSITIVE, POSITIVE))
erfcinv = _special("erfcinv", lambda ans, x: (-_SQRT_PI / 2.0) * _ew.exp(_ew.square(ans)), saves="all",
                   domain=(((0.0, 2.0),),))
log_expit = _special("log_expit", lambda ans, x: _ew.exp(ans - x), saves="all")  # expit(-x)

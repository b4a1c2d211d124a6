"""Array behaviour shared by the value types: operators, attributes, methods,
and NumPy's and the array API's dispatch protocols."""

from __future__ import annotations

import math
import operator
import sys
from typing import Any

import numpy as np

from dualad import ops
from dualad._base.backend import SCALAR_TYPES, namespace_of
from dualad._base.shapes import raw

# How to put values that a NumPy array cannot hold into an array: every value type's
# refusal to become a number says it (NumPy asks for one at buf[i] = x).
BUILDING_ARRAYS = ("to build an array of such values, np.array([x, y]), or to fill one, out[i] = x, "
                   "use `import dualad.numpy as np`")

# NumPy ufuncs and functions routed to ``ops``; ``register_numpy`` adds more.
NUMPY_FUNCTIONS: dict[Any, Any] = {}


def register_numpy(numpy_function: Any, implementation: Any) -> None:
    """Route ``numpy_function`` called on a value type to ``implementation``.

    The implementation must be written with differentiable operations
    (``dualad.ops`` or other registered functions).

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import Dual, ops, register_numpy
    >>> register_numpy(np.sinc, lambda x: ops.sin(np.pi * x) / (np.pi * x))
    >>> float(np.sinc(Dual(0.5, 1.0)).primal) == float(np.sinc(0.5))
    True
    """
    NUMPY_FUNCTIONS[numpy_function] = implementation


def _register_defaults() -> None:
    """Route each NumPy function or ufunc to the ``ops`` function of the same name.

    Generated from the namespaces, not listed: every public name of ``numpy``,
    ``numpy.linalg``, ``numpy.fft`` and ``numpy.lib.stride_tricks`` that ``ops``,
    ``ops.linalg`` or ``ops.fft`` defines (aliases included) is dispatched.
    """
    for numpy_ns, ours in ((np, ops), (np.linalg, ops.linalg), (np.fft, ops.fft),
                           (np.lib.stride_tricks, ops)):
        for name in dir(numpy_ns):
            impl = getattr(ours, name, None)
            if name.startswith("_") or not callable(impl) or isinstance(impl, type):
                continue
            fn = getattr(numpy_ns, name)
            if callable(fn) and not isinstance(fn, type):
                NUMPY_FUNCTIONS[fn] = impl
    for name in ("shape", "ndim", "size"):  # attributes every value type has
        NUMPY_FUNCTIONS[getattr(np, name)] = operator.attrgetter(name)


def _converting_caller() -> str:
    """Who converted a value with ``np.asarray``, where it is a library function that has
    a dualad spelling (read off the stack, on this error path only)."""
    frame = sys._getframe(2)
    library = None
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith("numpy.lib") and frame.f_code.co_name in ("__call__", "_vectorize_call"):
            return (" (np.vectorize converts its arguments so: call the function on the value "
                    "itself, written with NumPy functions, or map it with dualad.vmap)")
        if module.startswith("scipy."):
            library = (module, frame.f_code.co_name)
        frame = frame.f_back
    if library is not None and hasattr(ops, library[1]):
        public = library[0].split("._")[0]  # scipy.special, not scipy.special._logsumexp
        return f" ({public}.{library[1]} converts its arguments so: use dualad.ops.{library[1]})"
    return ""


def scipy_special_ufunc(ufunc: Any) -> Any:
    """The ``ops`` function of a ``scipy.special`` ufunc of the same name (then
    registered), or None. SciPy is not imported here: a caller holding one of
    its ufuncs has imported it already."""
    special = sys.modules.get("scipy.special")
    name = getattr(ufunc, "__name__", "")
    impl = getattr(ops, name, None)
    if special is None or impl is None or getattr(special, name, None) is not ufunc:
        return None
    NUMPY_FUNCTIONS[ufunc] = impl
    return impl


def _defers(other: Any) -> bool:
    """Whether ``other`` asks array operators to leave the comparison to it, as NumPy's
    arrays do (NEP 13: ``__array_ufunc__ = None``; ``pytest.approx`` is one such)."""
    return getattr(type(other), "__array_ufunc__", False) is None


def _no_rule(what: str) -> TypeError:
    return TypeError(
        f"{what} has no dualad rule. Write it with dualad.ops functions, or "
        "register one with dualad.register_numpy(numpy_function, implementation) "
        "or a new dualad.Primitive")


class ArrayLike:
    """Mixin for value types; subclasses provide ``shape`` and ``dtype``."""

    __slots__ = ()
    __array_priority__ = 100

    # -- attributes ---------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def T(self):
        return ops.permute_dims(self)

    @property
    def mT(self):
        return ops.matrix_transpose(self)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d value")
        return self.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    # -- operators ----------------------------------------------------------
    def __add__(self, other): return ops.add(self, other)
    def __radd__(self, other): return ops.add(other, self)
    def __sub__(self, other): return ops.subtract(self, other)
    def __rsub__(self, other): return ops.subtract(other, self)
    def __mul__(self, other): return ops.multiply(self, other)
    def __rmul__(self, other): return ops.multiply(other, self)
    def __truediv__(self, other): return ops.divide(self, other)
    def __rtruediv__(self, other): return ops.divide(other, self)
    def __pow__(self, other): return ops.power(self, other)
    def __rpow__(self, other): return ops.power(other, self)
    def __mod__(self, other): return ops.remainder(self, other)
    def __rmod__(self, other): return ops.remainder(other, self)
    def __floordiv__(self, other): return ops.floor_divide(self, other)
    def __rfloordiv__(self, other): return ops.floor_divide(other, self)
    def __divmod__(self, other): return ops.divmod(self, other)
    def __rdivmod__(self, other): return ops.divmod(other, self)
    def __matmul__(self, other): return ops.matmul(self, other)
    def __rmatmul__(self, other): return ops.matmul(other, self)
    def __neg__(self): return ops.negative(self)
    def __pos__(self): return self
    def __abs__(self): return ops.abs(self)
    def __lt__(self, other): return ops.less(self, other)
    def __le__(self, other): return ops.less_equal(self, other)
    def __gt__(self, other): return ops.greater(self, other)
    def __ge__(self, other): return ops.greater_equal(self, other)
    def __eq__(self, other):
        return NotImplemented if _defers(other) else ops.equal(self, other)

    def __ne__(self, other):
        return NotImplemented if _defers(other) else ops.not_equal(self, other)

    __hash__ = None

    def __getitem__(self, idx): return ops.getitem(self, idx)

    # -- methods ------------------------------------------------------------
    def sum(self, axis=None, keepdims=False): return ops.sum(self, axis, keepdims)
    def mean(self, axis=None, keepdims=False): return ops.mean(self, axis, keepdims)
    def prod(self, axis=None, keepdims=False): return ops.prod(self, axis, keepdims)
    def max(self, axis=None, keepdims=False): return ops.max(self, axis, keepdims)
    def min(self, axis=None, keepdims=False): return ops.min(self, axis, keepdims)
    def var(self, axis=None, keepdims=False, ddof=0): return ops.var(self, axis, keepdims, ddof)
    def std(self, axis=None, keepdims=False, ddof=0): return ops.std(self, axis, keepdims, ddof)
    def cumsum(self, axis=None): return ops.cumsum(self, axis)
    def ravel(self): return ops.ravel(self)
    def flatten(self): return ops.ravel(self)
    def squeeze(self, axis=None): return ops.squeeze(self, axis)
    def swapaxes(self, a, b): return ops.swapaxes(self, a, b)
    def astype(self, dtype, copy=True):  # as NumPy's: a copy unless told otherwise
        out = ops.astype(self, dtype)
        return ops.copy(out) if copy and out is self else out

    def clip(self, a_min=None, a_max=None): return ops.clip(self, a_min, a_max)
    def dot(self, other): return ops.dot(self, other)
    def repeat(self, repeats, axis=None): return ops.repeat(self, repeats, axis)
    def diagonal(self, offset=0, axis1=0, axis2=1): return ops.diagonal(self, offset, axis1, axis2)
    def trace(self, offset=0, axis1=0, axis2=1): return ops.trace(self, offset, axis1, axis2)

    def copy(self): return ops.copy(self)
    def take(self, indices, axis=None): return ops.take(self, indices, axis)
    def cumprod(self, axis=None): return ops.cumprod(self, axis)
    def round(self, decimals=0): return ops.round(self, decimals)
    def conj(self): return ops.conj(self)
    def conjugate(self): return ops.conj(self)
    def compress(self, condition, axis=None): return ops.compress(condition, self, axis)
    def ptp(self, axis=None, keepdims=False): return ops.ptp(self, axis, keepdims)
    def argmax(self, axis=None, keepdims=False): return ops.argmax(self, axis, keepdims=keepdims)
    def argmin(self, axis=None, keepdims=False): return ops.argmin(self, axis, keepdims=keepdims)
    def argsort(self, axis=-1): return ops.argsort(self, axis=axis)
    def nonzero(self): return ops.nonzero(self)
    def all(self, axis=None, keepdims=False): return ops.all(self, axis, keepdims=keepdims)
    def any(self, axis=None, keepdims=False): return ops.any(self, axis, keepdims=keepdims)
    def searchsorted(self, v, side="left"): return ops.searchsorted(self, v, side)

    @property
    def real(self):
        return ops.real(self)

    @property
    def imag(self):
        return ops.imag(self)

    def sort(self, axis=-1):
        """Sort in place, as ``ndarray.sort`` (for value types that take item assignment)."""
        self[...] = ops.sort(self, axis)

    def reshape(self, *shape):
        return ops.reshape(self, shape[0] if len(shape) == 1 else shape)

    def transpose(self, *axes):
        return ops.permute_dims(self, (axes[0] if len(axes) == 1 else axes) or None)

    # -- conversions that would drop the derivative ----------------------------
    def _refuse(self, what: str):
        raise TypeError(
            f"{what} of a {type(self).__name__} would drop its derivative; use "
            f"{self._value_hint()} (or .item() for one number) for the value, or ops/NumPy functions "
            f"to keep differentiating ({BUILDING_ARRAYS})")

    def item(self) -> Any:
        """The one element as a Python number (``float``, ``int``, ``bool`` or
        ``complex`` by dtype), without its derivative, as ``torch.Tensor.item``
        and NumPy's ``item`` give it: the one conversion to a Python number that
        drops a derivative, so it is spelled out (``float(x)`` refuses).

        Examples
        --------
        >>> import numpy as np
        >>> from dualad import Dual
        >>> Dual(np.array([[2.5]]), np.ones((1, 1))).item()
        2.5
        """
        r = raw(self)
        if type(r) in SCALAR_TYPES:
            return r
        if isinstance(r, np.generic):
            return r.item()
        size = math.prod(r.shape)
        if size != 1:
            raise RuntimeError(f"item(): a {type(self).__name__} with {size} elements (shape "
                               f"{tuple(r.shape)}) cannot be converted to one Python number; index "
                               "one element, or use .tolist()")
        xp = namespace_of([r])
        one = xp.reshape(r, ())
        for kind, convert in (("bool", bool), ("integral", int), ("complex floating", complex)):
            if xp.isdtype(r.dtype, kind):
                return convert(one)
        return float(one)

    def __float__(self): self._refuse("float()")
    def __int__(self): self._refuse("int()")
    def __complex__(self): self._refuse("complex()")
    def __index__(self): self._refuse("use as an index")
    def __bool__(self): self._refuse("bool() (an if-statement on the value?)")
    def __array__(self, dtype=None, copy=None): self._refuse("np.asarray()" + _converting_caller())

    def _value_hint(self) -> str:
        return ".primal"

    # -- NumPy and array API dispatch ------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if "out" in kwargs:
            raise TypeError(
                f"numpy.{ufunc.__name__} with out= (acc += term into a NumPy array?) would write a "
                "value with a derivative into an array that cannot hold it; make the array with "
                "`import dualad.numpy as np` (np.zeros, ...), or write acc = acc + term")
        if method != "__call__" or kwargs:
            raise _no_rule(f"numpy.{ufunc.__name__}.{method} with {sorted(kwargs) or 'no'} keywords")
        fn = NUMPY_FUNCTIONS.get(ufunc) or scipy_special_ufunc(ufunc)
        if fn is None:
            raise _no_rule(f"numpy.{ufunc.__name__}")
        return fn(*inputs)

    def __array_function__(self, func, types, args, kwargs):
        fn = NUMPY_FUNCTIONS.get(func)
        if fn is None:
            raise _no_rule(f"numpy.{getattr(func, '__qualname__', func)}")
        return fn(*args, **kwargs)

    def __array_namespace__(self, *, api_version=None):
        return namespace_for(self)


class _Namespace:
    """``dualad.ops`` plus the creation functions and dtypes of the inner backend."""

    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        fn = getattr(ops, name, None)
        if fn is not None:
            return fn
        return getattr(self._inner, name)


def namespace_for(value):
    return _Namespace(namespace_of([raw(value)]))


_register_defaults()

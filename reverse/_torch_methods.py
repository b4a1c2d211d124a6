"""PyTorch's ``Tensor`` methods for ``reverse.Tensor``, and NumPy's for the values
the functional transforms pass into ``f``.

One name can mean two things: ``x.transpose(0, 1)`` swaps two axes in PyTorch
and permutes none in NumPy; ``x.std()`` is unbiased in PyTorch and not in
NumPy; ``x.max(0)`` gives values and indices in PyTorch and values in NumPy.
The meaning follows who made the tensor. A ``Tensor`` the user constructs
(and everything computed from it) speaks PyTorch: :class:`TorchMethods`. The
values that ``reverse.grad``, ``vjp``, ``value_and_grad`` and ``jacrev`` pass
into the user's ``f`` speak NumPy (:class:`NumpyMethods`), so NumPy code
differentiates as it runs; both are recorded on the same tape. Names in
:data:`CONFLICTING` are the ones whose meanings differ. On a NumPy-speaking
value, PyTorch's keywords (``dim=``, ``keepdim=``, ``unbiased=``) raise a
``TypeError`` naming both spellings, since which meaning was wanted is unknown.
A PyTorch-speaking ``Tensor`` takes NumPy's ``axis=`` and ``keepdims=`` for
``dim=`` and ``keepdim=`` with PyTorch's meaning, as PyTorch does, on every
method that has them (:func:`_numpy_aliases`).

Each method is written with ``dualad.ops``, so it is recorded (and
differentiated in every mode) like the operator or NumPy function it stands
for, with PyTorch's gradients where they differ from NumPy's natural rule
(``max(dim)`` and ``sort`` send the gradient to the index they return;
``clamp`` passes it at the bounds). Methods that change a tensor's own state
(``zero_``, ``detach_``, ``data``, ``requires_grad_``) are
:class:`reverse.Tensor`'s own. The few PyTorch names with another spelling
here (``to``, ``cpu``, in-place ``add_``) are class attributes
(:class:`_Spelling`) raising an error that names it, not a ``__getattr__``: a
``__getattr__`` stops CPython from specializing the attribute reads of every
Tensor, and recording reads many.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import types
from typing import Any, NamedTuple

import numpy as np

from dualad import ops
from dualad.interpreter import ArrayLike, Value, dtype_of, raw, shape_of, to_host

__all__ = ["CONFLICTING", "IN_PLACE_SPELLINGS", "SPELLINGS", "NumpyMethods", "TorchMethods", "ValuesIndices"]

_KCPU = 1  # DLPack's device type of host memory


class _Spelling:
    """A PyTorch name read on a Tensor: an ``AttributeError`` that names the NumPy
    spelling that works (``expression``, written with ``x`` for the tensor)."""

    def __init__(self, name: str, expression: str):
        self.name, self.expression = name, expression

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self  # the class itself, for introspection
        raise AttributeError(f"'{type(obj).__name__}' object has no attribute '{self.name}' (a "
                             f"PyTorch name); write {self.expression}")


def _dim(dim: Any, ndim: int, method: str) -> int:
    """``dim`` as a non-negative position among ``ndim`` (PyTorch's range
    ``[-ndim, ndim - 1]``, with a 0-d tensor taking ``-1`` and ``0``)."""
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
        raise TypeError(f"{method}: dim must be an int, got {type(dim).__name__}")
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"{method}: dim {dim} is out of range for this tensor: expected a dim in "
                         f"[{-n}, {n - 1}]")
    return int(dim) % n


# NumPy's keywords that PyTorch's methods take for their own (its argument parser's aliases).
_NUMPY_ALIASES = (("axis", "dim"), ("keepdims", "keepdim"))


def _numpy_aliases(method: Any, name: str | None = None) -> Any:
    """``method`` also taking NumPy's ``axis=`` and ``keepdims=`` for its ``dim`` and
    ``keepdim``, as PyTorch's methods do (``x.max(axis=0)`` is ``x.max(dim=0)``);
    errors call it ``name`` (its own name by default).

    Giving one argument under both names (``x.sum(0, axis=0)``) is a TypeError
    naming both. :class:`TorchMethods` wraps every method that has ``dim`` or
    ``keepdim`` with it, so a new method takes the aliases without a line of its own.
    """
    names = list(inspect.signature(method).parameters)[1:]  # after self
    aliases = [(numpy_name, torch_name, names.index(torch_name))
               for numpy_name, torch_name in _NUMPY_ALIASES if torch_name in names]
    if not aliases:
        return method
    name = name or method.__name__

    @functools.wraps(method)
    def takes_numpy_names(self, *args, **kwargs):
        if kwargs:  # the common call has none: nothing to look up
            for numpy_name, torch_name, position in aliases:
                if numpy_name in kwargs:
                    if torch_name in kwargs or len(args) > position:
                        raise TypeError(f"{name}: got {torch_name}= (PyTorch's name) and "
                                        f"{numpy_name}= (NumPy's, which PyTorch takes for it) for "
                                        "one argument; pass one of them")
                    kwargs[torch_name] = kwargs.pop(numpy_name)
        return method(self, *args, **kwargs)
    return takes_numpy_names


# Names whose PyTorch and NumPy meanings differ: TorchMethods gives PyTorch's,
# NumpyMethods NumPy's (ArrayLike's).
CONFLICTING = ("transpose", "repeat", "std", "var", "max", "min", "argsort", "cumsum", "cumprod",
               "nonzero", "flatten", "sum", "mean", "prod", "argmax", "argmin", "all", "any", "squeeze")


class ValuesIndices(NamedTuple):
    """``(values, indices)``, as ``torch.max(x, dim)``, ``torch.sort`` and friends return."""

    values: Any
    indices: Any


class _Size(int):
    """The number of elements (NumPy's ``x.size``) that, called, is PyTorch's
    ``x.size()`` (the shape) or ``x.size(dim)``: one attribute serves both."""

    def __new__(cls, shape: tuple):
        n = int.__new__(cls, math.prod(shape))
        n.shape = shape
        return n

    def __call__(self, dim: Any = None) -> Any:
        if dim is None:
            return self.shape
        return self.shape[_dim(dim, len(self.shape), "size")]

    __call__ = _numpy_aliases(__call__, "size")


def _dims(dim: Any, ndim: int, method: str) -> Any:
    """PyTorch's ``dim`` (None, an int, or a tuple or list of ints) as NumPy's ``axis``."""
    if dim is None:
        return None
    if isinstance(dim, (tuple, list)):
        return tuple(_dim(d, ndim, method) for d in dim)
    return _dim(dim, ndim, method)


def _torch_reduction(name: str) -> Any:
    """PyTorch's ``x.<name>(dim=None, keepdim=False, *, dtype=None)``."""
    op = getattr(ops, name)

    def reduction(self, dim=None, keepdim=False, *, dtype=None):
        axis = _dims(dim, self.ndim, name)
        if name == "logsumexp" and axis is None:
            raise TypeError("logsumexp: dim is required, as in PyTorch")
        out = op(self, axis, keepdims=keepdim)
        return out if dtype is None else ops.astype(out, dtype)

    reduction.__name__ = reduction.__qualname__ = name
    reduction.__doc__ = (f"``torch.Tensor.{name}``: over ``dim`` (an int or a tuple; all "
                         "dimensions if None), keeping it with ``keepdim=True``.")
    return reduction


def _binary(name: str, ufunc: str) -> Any:
    op = getattr(ops, ufunc)

    def method(self, other):
        return op(self, other)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``torch.Tensor.{name}``, as ``np.{ufunc}(x, other)``."
    return method


def _unary(name: str, ufunc: str) -> Any:
    op = (lambda x: 1.0 / ops.sqrt(x)) if ufunc == "rsqrt" else getattr(ops, ufunc)

    def method(self):
        return op(self)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``torch.Tensor.{name}``" + ("" if ufunc == "rsqrt" else f", as ``np.{ufunc}(x)``.")
    return method


def _cast(name: str, dtype: str) -> Any:
    def method(self):
        return ops.astype(self, dtype)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``torch.Tensor.{name}()``: the values as {dtype}."
    return method


def _dim_of(self, dim: Any, method: str) -> int:
    return _dim(dim, self.ndim, method)


def _values_at(x, index, dim: int, keepdim: bool) -> ValuesIndices:
    """The values of ``x`` at ``index`` (kept dims) along ``dim``: the gradient goes to
    those positions alone, as PyTorch's ``max(dim)`` and ``sort`` send it."""
    values = ops.take_along_axis(x, index, dim)
    if not keepdim and x.ndim:
        values, index = ops.squeeze(values, dim), ops.squeeze(index, dim)
    return ValuesIndices(values, index)


def _dtype_name(x: Any) -> str:
    """"bool", "float64", ... of an array or value of any backend (a Python scalar's type)."""
    return str(dtype_of(raw(x))).rsplit(".", 1)[-1] if hasattr(x, "dtype") else type(x).__name__


def _index_shape(index: Any, x: Any, method: str) -> tuple:
    """``index``'s shape, checked against ``x``'s as PyTorch checks it."""
    ishape, shape = shape_of(index), shape_of(x)
    if len(ishape) != len(shape):
        raise RuntimeError(f"{method}: index has {len(ishape)} dimensions, the tensor {len(shape)}; "
                           "they must have the same number")
    return ishape


class TorchMethods:
    """Mixin of :class:`reverse.Tensor`: PyTorch's methods that compute or convert."""

    __slots__ = ()

    # -- elementwise -------------------------------------------------------------
    def exp(self) -> Any:
        """``e ** x``, as ``np.exp(x)``."""
        return ops.exp(self)

    def log(self) -> Any:
        """The natural logarithm, as ``np.log(x)``."""
        return ops.log(self)

    def sin(self) -> Any:
        """As ``np.sin(x)``."""
        return ops.sin(self)

    def cos(self) -> Any:
        """As ``np.cos(x)``."""
        return ops.cos(self)

    def tanh(self) -> Any:
        """As ``np.tanh(x)``."""
        return ops.tanh(self)

    def sigmoid(self) -> Any:
        """``1 / (1 + exp(-x))``, as ``dualad.ops.sigmoid(x)``."""
        return ops.sigmoid(self)

    def relu(self) -> Any:
        """``max(x, 0)``, with derivative 0 at 0 (as ``torch.relu``)."""
        return ops.relu(self)

    def abs(self) -> Any:
        """As ``np.abs(x)`` (derivative 0 at 0)."""
        return ops.abs(self)

    def sqrt(self) -> Any:
        """As ``np.sqrt(x)``."""
        return ops.sqrt(self)

    def pow(self, exponent: Any) -> Any:
        """``x ** exponent``."""
        return ops.power(self, exponent)

    # -- matrices ------------------------------------------------------------------
    def matmul(self, other: Any) -> Any:
        """``x @ other``, with NumPy's (and PyTorch's) rules for 1-d and stacked operands."""
        return ops.matmul(self, other)

    def mm(self, mat2: Any) -> Any:
        """The product of two matrices (2-d only, as ``torch.mm``; ``matmul`` takes others).

        Examples
        --------
        >>> import numpy as np
        >>> from reverse import Tensor
        >>> a = Tensor(np.eye(2), requires_grad=True)
        >>> a.mm(np.array([[1.0], [2.0]])).sum().backward()
        >>> a.grad
        Tensor(array([[1., 2.],
               [1., 2.]]))
        """
        for name, m in (("self", self), ("mat2", mat2)):
            if len(shape_of(m)) != 2:
                raise RuntimeError(f"mm: {name} must be a matrix (2-d), got shape {shape_of(m)}; "
                                   "use matmul (or @) for other shapes")
        return ops.matmul(self, mat2)

    def t(self) -> Any:
        """The transpose of a matrix; a 0-d or 1-d tensor as it is (as ``torch.Tensor.t``)."""
        if self.ndim > 2:
            raise RuntimeError(f"t() takes a tensor of at most 2 dimensions, got shape {self.shape}; "
                               "use .mT to transpose the last two axes, or .transpose(*axes)")
        return ops.permute_dims(self)

    # -- shapes ----------------------------------------------------------------------
    def view(self, *shape: Any) -> Any:
        """The same elements in ``shape`` (ints, or one tuple; one entry may be -1).

        As ``torch.Tensor.view``, the number of elements must stay the same.
        The result is a recorded reshape: it never fails on memory layout
        (PyTorch's ``view`` does, on a transposed tensor), and in-place
        changes to it do not reach this tensor.

        Examples
        --------
        >>> import numpy as np
        >>> from reverse import Tensor
        >>> Tensor(np.arange(6.0)).view(2, -1).shape
        (2, 3)
        """
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        for s in shape:
            if isinstance(s, bool) or not isinstance(s, numbers.Integral):
                raise TypeError(f"view: the shape must be ints, got {s!r} ({type(s).__name__}) in "
                                f"{shape}; view(dtype), which reinterprets bits, has no derivative: "
                                ".astype(dtype) converts the values")
        size, known, inferred = self.size, 1, [i for i, s in enumerate(shape) if s == -1]
        for s in shape:
            if s < -1:
                raise RuntimeError(f"view: invalid size {s} in shape {tuple(shape)}")
            known *= s if s != -1 else 1
        if len(inferred) > 1:
            raise RuntimeError(f"view: only one dimension can be -1 (inferred), got shape {tuple(shape)}")
        if inferred and (known == 0 or size % known) or not inferred and known != size:
            raise RuntimeError(f"view: shape {tuple(shape)} is invalid for a tensor of {size} "
                               f"elements (shape {self.shape})")
        return ops.reshape(self, tuple(int(s) for s in shape))

    def unsqueeze(self, dim: int) -> Any:
        """A new axis of size 1 at ``dim`` (in ``[-ndim - 1, ndim]``; -1 appends one)."""
        return ops.expand_dims(self, _dim(dim, self.ndim + 1, "unsqueeze"))

    def squeeze(self, dim: Any = None) -> Any:
        """Drop axes of size 1: all of them, or those among ``dim`` (an int or a
        tuple); as in PyTorch, an axis in ``dim`` whose size is not 1 is kept
        (NumPy's ``squeeze`` raises there).

        Examples
        --------
        >>> import numpy as np
        >>> from reverse import Tensor
        >>> x = Tensor(np.zeros((1, 3, 1)))
        >>> x.squeeze().shape, x.squeeze(1).shape, x.squeeze((0, 2)).shape
        ((3,), (1, 3, 1), (3,))
        """
        if dim is None:
            return ops.squeeze(self, None)
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        shape = self.shape
        axes = sorted({_dim(d, len(shape), "squeeze") for d in dims})
        return ops.squeeze(self, tuple(a for a in axes if a < len(shape) and shape[a] == 1))

    def clone(self) -> Any:
        """A copy, recorded (the gradient flows back to this tensor), as ``torch.clone``."""
        return ops.copy(self)

    # -- where PyTorch and NumPy differ (NumpyMethods keeps NumPy's) -------------------
    @property
    def size(self) -> _Size:
        """The number of elements (NumPy's ``x.size``), which called gives PyTorch's
        ``x.size()`` (the shape) and ``x.size(dim)``.

        Examples
        --------
        >>> import numpy as np
        >>> from reverse import Tensor
        >>> x = Tensor(np.zeros((3, 4)))
        >>> x.size(), x.size(0), x.size(-1), x.size * 1
        ((3, 4), 3, 4, 12)
        """
        return _Size(self.shape)

    def dim(self) -> int:
        """The number of dimensions (``x.ndim``), as ``torch.Tensor.dim``."""
        return self.ndim

    ndimension = dim

    def numel(self) -> int:
        """The number of elements, as ``torch.Tensor.numel``."""
        return math.prod(self.shape)

    def transpose(self, dim0: int, dim1: int) -> Any:
        """``dim0`` and ``dim1`` swapped, as ``torch.Tensor.transpose``
        (``permute`` reorders all dimensions).

        Examples
        --------
        >>> import numpy as np
        >>> from reverse import Tensor
        >>> Tensor(np.zeros((3, 4))).transpose(0, 1).shape
        (4, 3)
        """
        return ops.swapaxes(self, _dim_of(self, dim0, "transpose"), _dim_of(self, dim1, "transpose"))

    def permute(self, *dims: Any) -> Any:
        """The dimensions in the order ``dims`` (ints, or one tuple), as ``torch.Tensor.permute``."""
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = tuple(dims[0])
        axes = tuple(_dim_of(self, d, "permute") for d in dims)
        if sorted(axes) != list(range(self.ndim)):
            raise RuntimeError(f"permute: dims {dims} must name each of the {self.ndim} dimensions once")
        return ops.permute_dims(self, axes)

    def repeat(self, *sizes: Any) -> Any:
        """The tensor tiled ``sizes`` times along each dimension, as ``torch.Tensor.repeat``
        (``np.tile``; extra leading sizes add dimensions). NumPy's ``repeat`` is
        ``repeat_interleave`` here.

        Examples
        --------
        >>> import numpy as np
        >>> from reverse import Tensor
        >>> Tensor(np.zeros((3, 4))).repeat(2, 1).shape
        (6, 4)
        """
        if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
            sizes = tuple(sizes[0])
        if len(sizes) < self.ndim:
            raise RuntimeError(f"repeat: {len(sizes)} sizes for a tensor of {self.ndim} dimensions; "
                               "the number of sizes can not be smaller than the number of dimensions")
        return ops.tile(self, tuple(sizes))

    def repeat_interleave(self, repeats: Any, dim: Any = None) -> Any:
        """Each element repeated ``repeats`` times along ``dim`` (the flattened tensor
        if None), as ``torch.Tensor.repeat_interleave`` (NumPy's ``repeat``)."""
        return ops.repeat(self, repeats, None if dim is None else _dim_of(self, dim, "repeat_interleave"))

    def var(self, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
            correction: Any = None) -> Any:
        """The variance with Bessel's correction unless told otherwise
        (``unbiased=False`` or ``correction=0``), as ``torch.Tensor.var``.

        Examples
        --------
        >>> import numpy as np
        >>> from reverse import Tensor
        >>> float(Tensor(np.array([1.0, 2.0, 3.0, 4.0])).var())
        1.6666666666666667
        """
        return ops.var(self, *self._spread_args(dim, unbiased, keepdim, correction, "var"))

    def std(self, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
            correction: Any = None) -> Any:
        """The standard deviation with Bessel's correction unless told otherwise
        (``unbiased=False`` or ``correction=0``), as ``torch.Tensor.std``."""
        return ops.std(self, *self._spread_args(dim, unbiased, keepdim, correction, "std"))

    def _spread_args(self, dim, unbiased, keepdim, correction, method):
        if isinstance(dim, bool):  # std(False): PyTorch's overload std(unbiased)
            dim, unbiased = None, dim
        if unbiased is not None and correction is not None:
            raise TypeError(f"{method}: pass unbiased or correction, not both")
        ddof = correction if correction is not None else 0 if unbiased is False else 1
        return _dims(dim, self.ndim, method), keepdim, ddof

    def max(self, dim: Any = None, keepdim: bool = False) -> Any:
        """The largest element; with ``dim``, ``(values, indices)`` along it; with a
        tensor, the elementwise maximum: ``torch.Tensor.max``'s three forms.

        Along ``dim`` the gradient goes to the index returned (the first largest),
        as in PyTorch; the largest element's is shared among ties.

        Examples
        --------
        >>> import numpy as np
        >>> from reverse import Tensor
        >>> values, indices = Tensor(np.array([[1.0, 5.0], [7.0, 2.0]])).max(0)
        >>> values, indices
        (Tensor(array([7., 5.])), array([1, 0]))
        """
        return self._extreme(dim, keepdim, "max")

    def min(self, dim: Any = None, keepdim: bool = False) -> Any:
        """The smallest element; with ``dim``, ``(values, indices)``; with a tensor,
        the elementwise minimum, as ``torch.Tensor.min``."""
        return self._extreme(dim, keepdim, "min")

    def _extreme(self, dim, keepdim, which):
        if dim is None:
            return getattr(ops, which)(self)
        if not isinstance(dim, numbers.Integral):  # max(other): elementwise
            return getattr(ops, "maximum" if which == "max" else "minimum")(self, dim)
        d = _dim_of(self, dim, which)
        if self.ndim == 0:
            return ValuesIndices(ops.copy(self), np.zeros((), dtype=np.int64))
        index = getattr(ops, "argmax" if which == "max" else "argmin")(self, d, keepdims=True)
        return _values_at(self, index, d, keepdim)

    def sort(self, dim: int = -1, descending: bool = False, stable: bool = False) -> ValuesIndices:
        """``(values, indices)`` sorted along ``dim``, as ``torch.Tensor.sort`` (a new
        tensor; NumPy's in-place ``sort`` is ``x[...] = np.sort(x)`` here). Equal
        elements keep their order; the gradient goes back through the indices."""
        d = _dim_of(self, dim, "sort")
        index = self.argsort(d, descending)
        return _values_at(self, index, d, True) if self.ndim else ValuesIndices(ops.copy(self), index)

    def argsort(self, dim: int = -1, descending: bool = False, stable: bool = False) -> Any:
        """The indices that sort along ``dim``, as ``torch.Tensor.argsort`` (equal
        elements in their order, also with ``descending=True``)."""
        if self.ndim == 0:
            return np.zeros((), dtype=np.int64)
        d = _dim_of(self, dim, "argsort")
        return ops.argsort(ops.negative(self) if descending else self, axis=d, stable=True)

    def cumsum(self, dim: int, *, dtype: Any = None) -> Any:
        """Running sums along ``dim`` (required, as in PyTorch)."""
        out = ops.cumsum(self, _dim_of(self, dim, "cumsum"))
        return out if dtype is None else ops.astype(out, dtype)

    def cumprod(self, dim: int, *, dtype: Any = None) -> Any:
        """Running products along ``dim`` (required, as in PyTorch)."""
        out = ops.cumprod(self, _dim_of(self, dim, "cumprod"))
        return out if dtype is None else ops.astype(out, dtype)

    def nonzero(self, *, as_tuple: bool = False) -> Any:
        """The indices of the nonzero elements, one row each (shape ``(n, ndim)``),
        as ``torch.Tensor.nonzero``; ``as_tuple=True`` gives NumPy's tuple."""
        where = ops.nonzero(self)
        return where if as_tuple else np.stack([to_host(w) for w in where], axis=-1).astype(np.int64)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Any:
        """Dimensions ``start_dim`` to ``end_dim`` merged into one, as ``torch.Tensor.flatten``."""
        if self.ndim == 0:
            return ops.reshape(self, (1,))
        a, b = _dim_of(self, start_dim, "flatten"), _dim_of(self, end_dim, "flatten")
        shape = self.shape
        return ops.reshape(self, shape[:a] + (math.prod(shape[a:b + 1]),) + shape[b + 1:])

    # -- PyTorch's names that NumPy spells otherwise ----------------------------------------
    def expand(self, *sizes: Any) -> Any:
        """A broadcast view to ``sizes`` (-1 keeps a dimension), as ``torch.Tensor.expand``."""
        if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
            sizes = tuple(sizes[0])
        lead = len(sizes) - self.ndim
        if lead < 0:
            raise RuntimeError(f"expand: {len(sizes)} sizes for a tensor of {self.ndim} dimensions")
        shape = tuple(self.shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(sizes))
        if any(s < 0 for s in shape):
            raise RuntimeError(f"expand: -1 is only allowed for existing dimensions, got sizes {sizes}")
        return ops.broadcast_to(self, shape)

    def expand_as(self, other: Any) -> Any:
        """``expand(other.shape)``."""
        return self.expand(shape_of(other))

    def view_as(self, other: Any) -> Any:
        """``view(other.shape)``."""
        return self.view(shape_of(other))

    def reshape_as(self, other: Any) -> Any:
        """``reshape(other.shape)``."""
        return ops.reshape(self, shape_of(other))

    def flip(self, *dims: Any) -> Any:
        """The elements in reverse order along ``dims``, as ``torch.Tensor.flip``."""
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = tuple(dims[0])
        return ops.flip(self, tuple(_dim_of(self, d, "flip") for d in dims))

    def clamp(self, min: Any = None, max: Any = None) -> Any:  # noqa: A002 (PyTorch's names)
        """The values limited to ``[min, max]``, as ``torch.Tensor.clamp``: the gradient
        passes where ``min <= x <= max`` (bounds included), and is 0 elsewhere.

        Examples
        --------
        >>> import numpy as np
        >>> from reverse import Tensor
        >>> x = Tensor(np.array([-1.0, 0.0, 0.5, 1.0, 2.0]), requires_grad=True)
        >>> x.clamp(0.0, 1.0).sum().backward()
        >>> x.grad
        Tensor(array([0., 1., 1., 1., 0.]))
        """
        if min is None and max is None:
            raise RuntimeError("clamp: at least one of min and max must be given")
        out = self
        for bound, beyond in ((min, ops.less), (max, ops.greater)):
            if bound is not None:  # a tensor bound in this tensor's dtype, as PyTorch's
                fill = ops.astype(bound, self.dtype) if hasattr(bound, "dtype") else bound
                out = ops.where(beyond(out, bound), fill, out)
        return out

    clip = clamp

    def clamp_min(self, min: Any) -> Any:  # noqa: A002
        """``clamp(min=min)``."""
        return self.clamp(min, None)

    def clamp_max(self, max: Any) -> Any:  # noqa: A002
        """``clamp(max=max)``."""
        return self.clamp(None, max)

    def masked_fill(self, mask: Any, value: Any) -> Any:
        """``value`` where ``mask`` is true, as ``torch.Tensor.masked_fill`` (the
        gradient reaches ``x`` elsewhere, and a tensor ``value`` where the mask is)."""
        if _dtype_name(mask) != "bool":
            raise TypeError(f"masked_fill: mask must be a boolean array, got dtype {_dtype_name(mask)}")
        return ops.where(mask, value, self)

    def softmax(self, dim: int) -> Any:
        """``exp(x) / sum(exp(x))`` along ``dim``, as ``torch.Tensor.softmax``."""
        return ops.softmax(self, axis=_dim_of(self, dim, "softmax"))

    def log_softmax(self, dim: int) -> Any:
        """``log(softmax(x, dim))``, computed stably, as ``torch.Tensor.log_softmax``."""
        return ops.log_softmax(self, axis=_dim_of(self, dim, "log_softmax"))

    def norm(self, p: Any = "fro", dim: Any = None, keepdim: bool = False) -> Any:
        """The ``p``-norm over ``dim`` (all elements if None), as ``torch.Tensor.norm``:
        ``"fro"`` and 2 are the 2-norm of the elements, ``"nuc"`` the nuclear norm
        of a matrix; other ``p`` are vector norms (``inf``, ``-inf``, 0, 1, ...)."""
        axis = _dims(dim, self.ndim, "norm")
        if p == "nuc":
            return ops.linalg.matrix_norm(self, ord="nuc", keepdims=keepdim) if axis is None else \
                ops.linalg.norm(self, "nuc", axis, keepdim)
        return ops.linalg.vector_norm(self, axis=axis, keepdims=keepdim, ord=2 if p == "fro" else p)

    def gather(self, dim: int, index: Any) -> Any:
        """``out[i][j] = x[index[i][j]][j]`` for ``dim = 0`` (and so on), as
        ``torch.Tensor.gather``: ``index`` has this tensor's number of dimensions,
        and no larger size than it along the others."""
        d, ishape = _dim_of(self, dim, "gather"), _index_shape(index, self, "gather")
        part = ops.getitem(self, tuple(slice(None) if i == d else slice(0, n) for i, n in enumerate(ishape)))
        return ops.take_along_axis(part, index, d)

    def scatter_add(self, dim: int, index: Any, src: Any) -> Any:
        """A copy with ``src`` added at ``index`` along ``dim`` (repeated indices add
        up), as ``torch.Tensor.scatter_add``: ``out[index[i][j]][j] += src[i][j]``
        for ``dim = 0``.

        Examples
        --------
        >>> import numpy as np
        >>> from reverse import Tensor
        >>> Tensor(np.zeros(3)).scatter_add(0, np.array([0, 2, 0]), np.array([1.0, 2.0, 3.0]))
        Tensor(array([4., 0., 2.]))
        """
        d, ishape = _dim_of(self, dim, "scatter_add"), _index_shape(index, self, "scatter_add")
        grid = np.indices(ishape, sparse=True)
        target = tuple(to_host(raw(index)) if i == d else np.broadcast_to(g, ishape)
                       for i, g in enumerate(grid))
        part = ops.getitem(src, tuple(slice(0, n) for n in ishape))
        return ops.index_add(self, part, target)

    # -- conversions ---------------------------------------------------------------------
    def tolist(self) -> Any:
        """The elements as nested Python lists (a number for a 0-d tensor), without
        their derivatives, as ``torch.Tensor.tolist``; copied to the host."""
        return to_host(raw(self.value)).tolist()

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The data as a NumPy array, sharing memory where it is host memory.

        As in PyTorch, a tensor that requires grad is refused (``.detach().numpy()``
        gives its data) and data on a GPU is not copied to the host implicitly;
        ``force=True`` does both. A tensor whose value is a ``Dual`` (inside a
        forward-mode transform) is refused too: the array would drop its tangent.

        Examples
        --------
        >>> import numpy as np
        >>> from reverse import Tensor
        >>> x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
        >>> (x * 2.0).detach().numpy()
        array([2., 4.])
        """
        if not force:
            if self.requires_grad:
                raise TypeError("numpy() of a Tensor that requires grad would drop its derivative; "
                                "call .detach().numpy() (as in PyTorch), or numpy(force=True)")
            if isinstance(self.value, Value):
                raise TypeError(f"numpy() of a Tensor that holds a {type(self.value).__name__} would "
                                "drop its tangent (the derivative a forward-mode transform is "
                                "computing); call numpy(force=True) for the values alone")
        r = raw(self.value)
        if type(r) is np.ndarray:
            return r
        device = getattr(r, "__dlpack_device__", None)
        if device is not None and device()[0] != _KCPU:
            if not force:
                raise TypeError(f"numpy(): the data is in device memory ({type(r).__module__}."
                                f"{type(r).__name__}), which numpy() does not copy to the host "
                                "implicitly; call numpy(force=True) to copy it")
            return to_host(r)
        return np.asarray(r) if device is None else np.from_dlpack(r)

    def __format__(self, spec: str) -> str:
        """A 0-d tensor formats as its number (``f"{loss:.4f}"``), as PyTorch's;
        others take only the empty spec (their ``str``)."""
        if self.ndim == 0:
            return format(self.item(), spec)
        if not spec:
            return str(self)
        raise TypeError(f"format spec {spec!r} needs a 0-d Tensor, got one of shape {self.shape}; "
                        "format .item() of one element, or each entry of .tolist()")


# PyTorch names with another spelling here (``x`` is the tensor).
SPELLINGS = {
    "to": "x.astype(dtype)", "type_as": "x.astype(other.dtype)",
    "cpu": "x.detach().numpy()", "contiguous": "x",
}
# In-place forms: statements, not expressions.
IN_PLACE_SPELLINGS = {
    "add_": "x += other", "sub_": "x -= other", "mul_": "x *= other", "div_": "x /= other",
    "fill_": "x[...] = value", "copy_": "x[...] = other",
}
# Why a spelling is not a plain rename.
_NOTES = {
    "to": " (data never moves between devices implicitly)",
    "cpu": " for a NumPy array (numpy(force=True) copies from a GPU)",
    "contiguous": " itself: arrays here need no contiguous layout, so drop the call",
}

for _name, _expression in {**SPELLINGS, **IN_PLACE_SPELLINGS}.items():
    setattr(TorchMethods, _name, _Spelling(_name, _expression + _NOTES.get(_name, "")))
for _name in ("sum", "mean", "prod", "amax", "amin", "logsumexp", "argmax", "argmin", "all", "any"):
    setattr(TorchMethods, _name, _torch_reduction(_name))
for _name, _ufunc in (("add", "add"), ("sub", "subtract"), ("mul", "multiply"), ("div", "divide"),
                      ("atan2", "arctan2"), ("maximum", "maximum"), ("minimum", "minimum")):
    setattr(TorchMethods, _name, _binary(_name, _ufunc))
for _name, _ufunc in (("neg", "negative"), ("reciprocal", "reciprocal"), ("square", "square"),
                      ("asin", "arcsin"), ("acos", "arccos"), ("atan", "arctan"), ("log1p", "log1p"),
                      ("expm1", "expm1"), ("log2", "log2"), ("log10", "log10"), ("sinh", "sinh"),
                      ("cosh", "cosh"), ("tan", "tan"), ("floor", "floor"), ("ceil", "ceil"),
                      ("sign", "sign"), ("rsqrt", "rsqrt")):
    setattr(TorchMethods, _name, _unary(_name, _ufunc))
for _name, _dtype in (("float", "float32"), ("double", "float64"), ("half", "float16"),
                      ("long", "int64"), ("int", "int32"), ("bool", "bool")):
    setattr(TorchMethods, _name, _cast(_name, _dtype))
for _name, _method in list(vars(TorchMethods).items()):
    if isinstance(_method, types.FunctionType) and not _name.startswith("_"):
        setattr(TorchMethods, _name, _numpy_aliases(_method))
del _name, _expression, _ufunc, _dtype, _method


# -- NumPy's meanings, for the values the functional transforms pass into f --------------
# PyTorch's keywords, and NumPy's spelling of each.
_KEYWORDS = {"dim": "axis= for dim=", "keepdim": "keepdims= for keepdim=",
             "unbiased": "ddof=1 for unbiased=True (ddof=0 for False)",
             "correction": "ddof=c for correction=c"}


def _numpy_meaning(name: str) -> Any:
    """ArrayLike's (NumPy's) method ``name``; PyTorch's keywords (``dim=``, ...), whose
    meaning here is unknown (NumPy's reduction, or PyTorch's values and indices?),
    raise a TypeError naming both spellings."""
    method = getattr(ArrayLike, name)

    @functools.wraps(method)
    def numpy_method(self, *args, **kwargs):
        torch_only = [spelling for k, spelling in _KEYWORDS.items() if k in kwargs]
        if torch_only:
            raise TypeError(
                f"x.{name}() with PyTorch's keywords, on a value that a functional transform "
                f"(reverse.grad, vjp, jacrev) passed into f, which speaks NumPy: write "
                f"{', '.join(torch_only)}, or call f on a reverse.Tensor you made, which speaks "
                "PyTorch")
        return method(self, *args, **kwargs)
    return numpy_method


class NumpyMethods:
    """Mixin of the tensors ``reverse.grad``, ``vjp``, ``value_and_grad`` and
    ``jacrev`` pass into ``f``: where PyTorch and NumPy give one name two meanings
    (``transpose``, ``repeat``, ``std``, ``max``, ``sort``, ...), NumPy's, so that a
    user's NumPy code differentiates as it runs. Names only PyTorch has (``permute``,
    ``clamp``, ``masked_fill``) keep their one meaning."""

    __slots__ = ()


for _name in CONFLICTING:
    setattr(NumpyMethods, _name, _numpy_meaning(_name))
NumpyMethods.size = ArrayLike.size
NumpyMethods.sort = ArrayLike.sort
del _name

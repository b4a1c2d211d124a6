"""PyTorch's ``Tensor`` methods that compute or convert, for ``reverse.Tensor``.

Each method is written with ``dualad.ops``, so it is recorded (and
differentiated in every mode) like the operator or NumPy function it
stands for, and keeps PyTorch's checks: ``view`` needs the same number of
elements, ``squeeze(dim)`` leaves dimensions whose size is not 1 alone,
``unsqueeze`` and ``squeeze`` count negative dimensions from the end,
``t()`` takes at most two dimensions, ``mm`` two matrices, ``item()`` one
element. Methods that change a tensor's own state (``zero_``, ``detach_``,
``data``, ``requires_grad_``) are :class:`reverse.Tensor`'s own.

PyTorch names with a NumPy spelling here (``numel``, ``permute``,
``clamp``, ``x.sum(dim=0)``, ...) raise an ``AttributeError`` or
``TypeError`` that names the spelling that works. The names are class
attributes (:class:`_Spelling`), not a ``__getattr__``: a ``__getattr__``
stops CPython from specializing the attribute reads of every Tensor (on
Python 3.11, reading two slots of a class with one took 2.2-3.1x as long as
without, in a loop of 1000 reads measured here), and recording reads many.
"""

from __future__ import annotations

import functools
import numbers
from typing import Any

import numpy as np

from dualad import ops
from dualad.interpreter import ArrayLike, Value, raw, shape_of, to_host

__all__ = ["IN_PLACE_SPELLINGS", "SPELLINGS", "TorchMethods"]

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


# PyTorch's keywords of reductions, and NumPy's spelling of each.
_KEYWORDS = {"dim": "axis= for dim=", "keepdim": "keepdims= for keepdim=",
             "unbiased": "ddof=1 for unbiased=True (ddof=0 for False)",
             "correction": "ddof=c for correction=c"}


def _numpy_keywords(name: str) -> Any:
    """ArrayLike's method ``name``, with PyTorch's keywords (``dim=``, ``keepdim=``,
    ``unbiased=``, ``correction=``) answered by a TypeError naming NumPy's."""
    method = getattr(ArrayLike, name)

    @functools.wraps(method)
    def numpy_method(self, *args, **kwargs):
        if kwargs:
            torch_only = [spelling for k, spelling in _KEYWORDS.items() if k in kwargs]
            if torch_only:
                raise TypeError(f"Tensor.{name}() takes NumPy's keywords: write "
                                f"{', '.join(torch_only)}")
        return method(self, *args, **kwargs)
    return numpy_method


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

    def squeeze(self, dim: Any = None, *, axis: Any = None) -> Any:
        """Drop axes of size 1: all of them, or those among ``dim`` (an int or a
        tuple); as in PyTorch, an axis in ``dim`` whose size is not 1 is kept.
        With NumPy's ``axis=`` it behaves as NumPy's (which raises there instead).

        Examples
        --------
        >>> import numpy as np
        >>> from reverse import Tensor
        >>> x = Tensor(np.zeros((1, 3, 1)))
        >>> x.squeeze().shape, x.squeeze(1).shape, x.squeeze((0, 2)).shape
        ((3,), (1, 3, 1), (3,))
        """
        if axis is not None:
            if dim is not None:
                raise TypeError("squeeze: pass dim (PyTorch's) or axis (NumPy's), not both")
            return ops.squeeze(self, axis)
        if dim is None:
            return ops.squeeze(self, None)
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        shape = self.shape
        axes = sorted({_dim(d, len(shape), "squeeze") for d in dims})
        return ops.squeeze(self, tuple(a for a in axes if a < len(shape) and shape[a] == 1))

    def clone(self) -> Any:
        """A copy, recorded (the gradient flows back to this tensor), as ``torch.clone``."""
        return ops.copy(self)

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


# PyTorch names with another spelling here, and that spelling (``x`` is the tensor).
SPELLINGS = {
    "numel": "x.size", "dim": "x.ndim", "ndimension": "x.ndim",
    "permute": "x.transpose(*axes)", "expand": "np.broadcast_to(x, shape)",
    "expand_as": "np.broadcast_to(x, other.shape)", "view_as": "x.reshape(other.shape)",
    "reshape_as": "x.reshape(other.shape)", "flip": "np.flip(x, axis)", "clamp": "x.clip(low, high)",
    "clamp_min": "np.maximum(x, low)", "clamp_max": "np.minimum(x, high)",
    "masked_fill": "np.where(mask, value, x)", "softmax": "dualad.ops.softmax(x, axis)",
    "log_softmax": "dualad.ops.log_softmax(x, axis)", "norm": "np.linalg.norm(x)",
    "to": "x.astype(dtype)", "type_as": "x.astype(other.dtype)",
    "float": "x.astype(np.float32)", "double": "x.astype(np.float64)",
    "half": "x.astype(np.float16)", "long": "x.astype(np.int64)", "int": "x.astype(np.int32)",
    "cpu": "x.detach().numpy()", "contiguous": "x",
    "add": "x + other", "sub": "x - other", "mul": "x * other", "div": "x / other", "neg": "-x",
    "reciprocal": "1 / x", "rsqrt": "1 / np.sqrt(x)", "square": "x ** 2",
    "asin": "np.arcsin(x)", "acos": "np.arccos(x)", "atan": "np.arctan(x)",
    "atan2": "np.arctan2(x, other)", "log1p": "np.log1p(x)", "expm1": "np.expm1(x)",
    "log2": "np.log2(x)", "log10": "np.log10(x)", "sinh": "np.sinh(x)", "cosh": "np.cosh(x)",
    "tan": "np.tan(x)", "floor": "np.floor(x)", "ceil": "np.ceil(x)", "sign": "np.sign(x)",
    "amax": "x.max(axis)", "amin": "x.min(axis)",
}
# In-place forms: statements, not expressions.
IN_PLACE_SPELLINGS = {
    "add_": "x += other", "sub_": "x -= other", "mul_": "x *= other", "div_": "x /= other",
    "fill_": "x[...] = value", "copy_": "x[...] = other",
}
# Why a spelling is not a plain rename.
_NOTES = {
    "numel": " (a property)", "dim": " (a property)", "ndimension": " (a property)",
    "to": " (data never moves between devices implicitly)",
    "cpu": " for a NumPy array (numpy(force=True) copies from a GPU)",
    "contiguous": " itself: arrays here need no contiguous layout, so drop the call",
}

for _name, _expression in {**SPELLINGS, **IN_PLACE_SPELLINGS}.items():
    setattr(TorchMethods, _name, _Spelling(_name, _expression + _NOTES.get(_name, "")))
for _name in ("sum", "mean", "prod", "max", "min", "var", "std", "cumsum", "cumprod", "argmax",
              "argmin", "all", "any"):
    setattr(TorchMethods, _name, _numpy_keywords(_name))
del _name, _expression

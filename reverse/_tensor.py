"""``Tensor``: a value plus, when it requires grad, the tape node that made it."""

from __future__ import annotations

import warnings
import weakref
from typing import Any

import numpy as np

from dualad import ops
from dualad.extend import Primitive
from dualad.interpreter import (
    SCALAR_TYPES,
    ArrayLike,
    Dropped,
    Value,
    aval,
    bind,
    dtype_of,
    get_cut,
    is_float_dtype,
    is_operand,
    level_of,
    namespace_of,
    new_level,
    raw,
    reported_dtype,
    shape_of,
)
from reverse._anomaly import ANOMALY, recorded_at
from reverse._saved_hooks import HOOKS
from reverse._tape import HookHandle, Node, VersionCounter
from reverse._torch_methods import NumpyMethods, TorchMethods

TENSOR_LEVEL = 0  # shared level of directly constructed Tensors
# Levels of the functional transforms (grad, vjp, ...) now running: their tensors speak NumPy.
NUMPY_LEVELS: set[int] = set()


class Tensor(TorchMethods, ArrayLike, Value):
    """An array (NumPy, CuPy, float, or ``dualad.Dual``) whose operations are recorded.

    Parameters
    ----------
    value : array, float, list or Dual
        The data, copied (as ``torch.tensor`` copies): changing the array
        afterwards does not change the tensor, and in-place updates of the
        tensor (an optimizer's step) do not change the array. Lists are
        converted with ``numpy.asarray``. :meth:`from_numpy` and
        :func:`reverse.as_tensor` share the array instead.
    requires_grad : bool
        Record operations on this tensor so that ``backward`` can reach it.
    dtype : dtype, optional
        The data converted to this dtype (``np.float32``, ``"float64"``, ...), as
        ``torch.tensor(data, dtype=...)``.

    The methods speak PyTorch (``x.transpose(0, 1)`` swaps two axes, ``x.std()`` is
    unbiased, ``x.max(0)`` gives values and indices, ``x.size()`` the shape); the
    values ``reverse.grad`` and the other functional transforms pass into ``f``
    speak NumPy instead (:class:`reverse._tensor.NumpyTensor`).

    Examples
    --------
    >>> import numpy as np
    >>> from reverse import Tensor
    >>> x = Tensor(np.array([2.0, 3.0]), requires_grad=True)
    >>> (x ** 2).sum().backward()
    >>> x.grad
    Tensor(array([4., 6.]))
    >>> Tensor([1, 2], dtype=np.float32, requires_grad=True).dtype
    dtype('float32')
    """

    __slots__ = ("value", "_grad", "requires_grad", "_node", "_index", "_version",
                 "_hooks", "_retains_grad", "__weakref__")
    __array_priority__ = 100
    made_by = "a reverse-mode transform (grad, vjp, jacrev)"

    def __hash__(self) -> int:
        """By identity, as PyTorch's: a Tensor can key a dict (``optimizer.state[p]``)
        or sit in a set, while ``==`` stays elementwise."""
        return id(self)

    def __init__(self, value: Any, requires_grad: bool = False, *, dtype: Any = None,
                 level: int | None = None):
        if isinstance(value, Tensor) and level is None:
            value = value.value
        if isinstance(value, (list, tuple)):
            value = np.asarray(value, dtype=dtype)  # a new array already
        else:
            _check_data(value, "Tensor")
            # np.float64 and friends are immutable, as Python numbers are (which copy returns as is).
            if dtype is not None:
                converted = ops.astype(np.asarray(value) if type(value) in SCALAR_TYPES else value, dtype)
                value = converted if converted is not value else ops.copy(value)  # same dtype: as is
            elif not isinstance(value, np.generic):
                value = ops.copy(value)
        self._init(value, requires_grad, level)

    @classmethod
    def from_numpy(cls, array: np.ndarray) -> Tensor:
        """A tensor that shares ``array``'s memory, as ``torch.from_numpy`` does.

        Changes to the array are seen by the tensor and in-place updates of the
        tensor (an optimizer's step) write the array. An in-place change of the
        array is not seen by the tape's version checks: make it before the
        forward pass or after backward. ``Tensor(array)`` copies instead.

        Parameters
        ----------
        array : numpy.ndarray
            The data, shared.

        Examples
        --------
        >>> import numpy as np
        >>> from reverse import Tensor, no_grad
        >>> a = np.array([1.0, 2.0])
        >>> x = Tensor.from_numpy(a).requires_grad_()
        >>> (x * x).sum().backward()
        >>> with no_grad():
        ...     x -= 0.25 * x.grad
        >>> a
        array([0.5, 1. ])
        """
        if not isinstance(array, np.ndarray):
            raise TypeError(f"Tensor.from_numpy: array must be a numpy.ndarray, got "
                            f"{type(array).__name__}; use Tensor(data) or reverse.as_tensor(data) "
                            "for other data")
        t = object.__new__(cls)
        t._init(array, False, None)
        return t

    def _init(self, value: Any, requires_grad: bool, level: int | None) -> None:
        """Set up a user-made tensor on ``value``, which it uses as is (not copied)."""
        if isinstance(value, int) and not isinstance(value, bool) and requires_grad:
            value = float(value)
        self.value = value
        self._grad = None
        self.requires_grad = False
        self._node = None
        self._index = 0
        self._version = None  # made when first needed: see _counter
        self._hooks = None
        self._retains_grad = False
        if level is None:
            level = TENSOR_LEVEL if level_of(value) < 0 else new_level()
        self._level = level
        if requires_grad:
            self.requires_grad_()

    @classmethod
    def _make(cls, value, level, node=None, index=0, requires_grad=False):
        t = object.__new__(NumpyTensor if level in NUMPY_LEVELS else cls)
        t.value, t._grad, t.requires_grad = value, None, requires_grad
        t._node, t._index, t._version = node, index, None
        t._hooks, t._retains_grad, t._level = None, False, level
        return t

    def _counter(self) -> VersionCounter:
        """This tensor's version counter, made when first asked for: by a record that
        saves the tensor, or a view that shares it (``detach``). Until then nothing can
        hold it, so an in-place update with none has no one to tell (``_bump``), and most
        tensors of a tape, which no record saves, never make one."""
        counter = self._version
        if counter is None:
            counter = self._version = VersionCounter()
        return counter

    def _bump(self) -> None:
        """Tell the records that saved this tensor that it was updated in place."""
        if self._version is not None:
            self._version.version += 1

    def __repr__(self) -> str:
        extra = ", requires_grad=True" if self.requires_grad else ""
        return f"Tensor({self.value!r}{extra})"

    # -- array attributes -------------------------------------------------------
    @property
    def shape(self):
        return shape_of(self.value)

    @property
    def dtype(self):
        return reported_dtype(self.value)

    @property
    def grad(self) -> Tensor | None:
        """The gradient accumulated by ``backward`` (PyTorch's convention), or None.

        A ``Tensor`` that does not require grad (one that does after
        ``backward(create_graph=True)``), as PyTorch's: ``x.grad.zero_()``
        clears it in place, and ``x.grad.value`` is the array. Later
        ``backward`` calls add into this same Tensor, as PyTorch's do (with
        ``create_graph=True``, a new one holds the recorded sum). Only leaves,
        and tensors that called :meth:`retain_grad`, get one; reading it on
        any other tensor warns, as PyTorch does, since it stays None.
        """
        g = self._grad
        if g is None and self._node is not None and not self._retains_grad:
            warnings.warn("reading .grad of a Tensor that is not a leaf: backward does not fill it "
                          "in, so it is None; call .retain_grad() on this tensor before backward "
                          "to keep its gradient, or read .grad of the leaf tensor you meant",
                          UserWarning, stacklevel=2)
        return g

    @grad.setter
    def grad(self, value: Any) -> None:
        if value is None or isinstance(value, Tensor):
            self._grad = value
        elif is_operand(value):  # an array is wrapped, not copied (its shape is checked on use)
            self._grad = Tensor._make(value, self._level)
        else:
            raise TypeError(f"Tensor.grad: the value assigned must be a Tensor, an array or None, "
                            f"got {type(value).__name__}")

    @property
    def is_leaf(self) -> bool:
        """True for tensors made by the user rather than by a recorded operation."""
        return self._node is None

    @property
    def grad_fn(self) -> Node | None:
        return self._node

    # -- autograd API -------------------------------------------------------------
    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set whether this leaf tensor requires grad (in place); returns it.

        As in PyTorch, a computed tensor requires grad already, so
        ``requires_grad_()`` returns it as it is, and ``requires_grad_(False)``
        on it is an error (``detach()`` makes a leaf that does not).

        Examples
        --------
        >>> from reverse import Tensor
        >>> x = Tensor(2.0).requires_grad_()
        >>> y = (x * x).requires_grad_()  # computed: already recording
        >>> y.requires_grad, y.is_leaf
        (True, False)
        """
        if not self.is_leaf:
            if requires_grad and self.requires_grad:
                return self
            if not requires_grad:
                raise RuntimeError(
                    f"requires_grad_(False) on a computed tensor (the output of "
                    f"'{self._node.prim.name}'): only a leaf's flag can change; use .detach() for a "
                    "copy cut from the graph, or .detach_() to cut this one")
        if requires_grad:
            r = raw(self.value)
            if not isinstance(r, (float, complex)) and (
                    type(r) in SCALAR_TYPES or not is_float_dtype(namespace_of([r]), r.dtype)):
                raise TypeError(f"only floating-point or complex tensors can require gradients, got dtype "
                                f"{dtype_of(r)}; convert with astype(float) first")
        self.requires_grad = bool(requires_grad)
        return self

    def detach(self) -> Tensor:
        """The same data, cut from the graph (and from any Dual tangent at this level)."""
        t = Tensor._make(self._detached_value(), self._level)
        t._version = self._counter()  # in-place changes to either are seen by both
        return t

    def _detached_value(self) -> Any:
        value = self.value
        return ops.stop_gradient(value) if isinstance(value, Value) else value  # cuts Dual tangents too

    def detach_(self) -> Tensor:
        """Cut this tensor from the graph in place: it becomes a leaf that does not
        require grad (and stops keeping ``.grad`` if it called :meth:`retain_grad`).

        Examples
        --------
        >>> from reverse import Tensor
        >>> y = Tensor(2.0, requires_grad=True) * 3.0
        >>> y.detach_().requires_grad, y.is_leaf
        (False, True)
        """
        self.value = self._detached_value()
        self._node, self._index, self.requires_grad, self._retains_grad = None, 0, False, False
        return self

    @property
    def data(self) -> Tensor:
        """The data as a Tensor that does not require grad, sharing the memory of an
        array: in-place changes through it (``p.data -= lr * g``) change this
        tensor, and, as in PyTorch, the version checks of the graph do not see
        them (it has its own version counter; :meth:`detach` shares this
        tensor's). A 0-d tensor held as a Python or NumPy scalar gets a 0-d
        array for it the first time, so that there is memory to share.
        Assigning ``x.data = t`` (a Tensor or an array) replaces the data, unrecorded.

        Examples
        --------
        >>> import numpy as np
        >>> from reverse import Tensor
        >>> w = Tensor(np.array([1.0, 2.0]), requires_grad=True)
        >>> w.data *= 0.5
        >>> w
        Tensor(array([0.5, 1. ]), requires_grad=True)
        """
        if _immutable(self.value):
            self.value = np.asarray(self.value)
        return Tensor._make(self._detached_value(), self._level)

    @data.setter
    def data(self, value: Any) -> None:
        value = value.value if isinstance(value, Tensor) else value
        _check_data(value, "Tensor.data")
        self.value = value

    def zero_(self) -> Tensor:
        """Fill with zeros in place, as ``torch.Tensor.zero_``: the version counter
        moves on (a graph that saved the old values refuses to use them), a leaf
        that requires grad needs ``no_grad``, and on a computed tensor the
        update is recorded (nothing flows back through the zeros).

        Examples
        --------
        >>> import numpy as np
        >>> from reverse import Tensor
        >>> x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
        >>> (x * x).sum().backward()
        >>> x.grad.zero_()
        Tensor(array([0., 0.]))
        """
        return self._inplace_op(_zeros_of_first, 0.0)

    @property
    def retains_grad(self) -> bool:
        """Whether :meth:`retain_grad` was called on this (computed) tensor."""
        return self._retains_grad

    def retain_grad(self) -> None:
        """Keep ``.grad`` on this computed tensor after backward (a leaf keeps it anyway).

        As in PyTorch 2, the gradient kept is the one after every hook
        registered on this tensor, also hooks registered after this call.
        """
        if not self.requires_grad:
            raise RuntimeError("retain_grad() on a tensor that does not require grad: no gradient "
                               "reaches it; call it on a tensor computed from one that requires grad")
        if self.is_leaf or self._retains_grad:
            return
        self._retains_grad = True
        self._register(_StoreGrad(self))

    def _add_grad(self, g: Any, owned: bool = False) -> bool:
        """Accumulate ``g`` (an array, or a Tensor under ``create_graph``) into ``.grad``;
        whether ``.grad`` now holds a graph (a Tensor that requires grad: a reference cycle).

        As in PyTorch, a first-order gradient is added into the Tensor ``.grad``
        already holds, so a reference to it sees the sum; a recorded one makes a
        new Tensor (the recorded sum). ``.grad`` owns its array, to be changed in
        place (``x.grad.zero_()``): ``g`` is copied unless ``owned`` says that the
        walk made it and holds it nowhere else (it may be another leaf's too, a
        cotangent the user passed, or a read-only broadcast).
        """
        grad = self._grad
        if (isinstance(g, Tensor) and g.requires_grad) or (grad is not None and grad.requires_grad):
            grad = self._grad = g if grad is None else grad + g
        elif grad is None:
            value = g.value if isinstance(g, Tensor) else g
            grad = self._grad = Tensor._make(value if owned else ops.copy(value), self._level)
        else:
            grad.value = grad.value + (g.value if isinstance(g, Tensor) else g)
            grad._bump()
        return grad.requires_grad

    def register_hook(self, fn) -> HookHandle:
        """Call ``fn(grad)`` when this tensor's gradient is computed; a non-None
        return value replaces the gradient."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that does not require grad")
        return self._register(fn)

    def _register(self, fn) -> HookHandle:
        if self.is_leaf:
            if self._hooks is None:
                self._hooks = []
            hooks = self._hooks
        else:
            node = self._node
            if node.hooks is None:
                node.hooks = {}
            hooks = node.hooks.setdefault(self._index, [])
        if hooks and type(hooks[-1]) is _StoreGrad:  # retain_grad's store stays last
            hooks.insert(len(hooks) - 1, fn)
        else:
            hooks.append(fn)
        return HookHandle(hooks, fn)

    def _value_hint(self) -> str:
        return ".detach().value (or .value)"

    def __array__(self, dtype=None, copy=None):
        if self.requires_grad:
            self._refuse("np.asarray()")
        return np.asarray(raw(self.value), dtype=dtype)

    def __float__(self):
        if self.requires_grad:
            self._refuse("float()")
        return float(raw(self.value))

    def __bool__(self):
        if self.requires_grad:
            self._refuse("bool()")
        return bool(raw(self.value))

    # -- in-place updates -----------------------------------------------------------
    def _records_with(self, other) -> bool:
        """Whether an in-place update with ``other`` must be recorded on the tape."""
        if get_cut() > self._level:
            return False
        return self.requires_grad or (isinstance(other, Tensor) and other._level == self._level
                                      and other.requires_grad)

    def _inplace(self, other, functional, raw_update):
        if not self._records_with(other):
            raw_update()  # a true in-place update, seen by nodes that saved this array
            self._bump()
            return self
        if self.requires_grad and self.is_leaf:
            raise RuntimeError("a leaf tensor that requires grad is used in an in-place "
                               "operation; do it under reverse.no_grad() or on a detach()ed copy")
        # Recorded: rebind to the new node. The old array is untouched, so nodes
        # that saved it stay valid; this tensor gets a fresh version counter.
        new = functional()
        self.value, self._node, self._index = new.value, new._node, new._index
        self.requires_grad, self._version = True, None
        return self

    def _inplace_op(self, fn, other):
        def raw_update():
            value = raw(other.value if isinstance(other, Tensor) else other)
            if _immutable(self.value):
                self.value = fn(self.value, value)
            else:
                self.value[...] = fn(self.value, value)
        return self._inplace(other, lambda: fn(self, other), raw_update)

    def __iadd__(self, other): return self._inplace_op(ops.add, other)
    def __isub__(self, other): return self._inplace_op(ops.subtract, other)
    def __imul__(self, other): return self._inplace_op(ops.multiply, other)
    def __itruediv__(self, other): return self._inplace_op(ops.divide, other)

    def __setitem__(self, idx, v):
        def functional():
            return ops.index_set(self, v, idx)

        def raw_update():
            self.value[idx] = raw(v.value if isinstance(v, Tensor) else v)
        self._inplace(v, functional, raw_update)

    # -- interpretation of the table ---------------------------------------------------
    def _strip(self):
        return self.value

    def _constant(self, out):
        if isinstance(out, tuple):
            return tuple(Tensor._make(o, self._level) for o in out)
        return Tensor._make(out, self._level) if _is_float_value(out) else out

    def _process(self, prim: Primitive, args: tuple, params: dict) -> Any:
        level = self._level
        # The values are bound again; NumPy arrays (with Python numbers beside them) go
        # straight to the entry's impl, as bind sends them, without a second dispatch.
        if len(args) == 1:  # the operand is this tensor (bind hands it the call): no loop
            value = self.value
            values = (value,)
            recording = self.requires_grad
            if recording:
                parents = ((self, 0) if self._node is None else (self._node, self._index),)
                needs = _NEEDED
            kind = type(value)
            if kind is np.ndarray or kind is np.float64:  # by position where it can: see below
                ans = prim.impl(_NUMPY, value, **params) if params else prim.impl(_NUMPY, value)
            else:
                ans = bind(prim, value, **params)
        else:
            values, parents, needs = [], [], []
            recording = False
            arrays, others = False, False  # NumPy arrays among the values; values neither that nor numbers
            tensors = _NO_VERSIONS  # the positions of this level's tensors (see _saved_versions)
            for a in args:
                if type(a) in _TAPE_TYPES and a._level == level:
                    tensors += (len(values),)
                    value = a.value
                    if a.requires_grad:
                        recording = True
                        parents.append((a, 0) if a._node is None else (a._node, a._index))
                        needs.append(True)
                    else:
                        parents.append(None)
                        needs.append(False)
                else:
                    value = a
                    parents.append(None)
                    needs.append(False)
                values.append(value)
                kind = type(value)
                if kind is np.ndarray or kind is np.float64:
                    arrays = True
                elif kind is not float and kind is not int:
                    others = True
            if not arrays or others:
                ans = bind(prim, *values, **params)
            elif params or len(values) != 2:
                ans = prim.impl(_NUMPY, *values, **params)
            else:  # by position: CPython does not inline a call through *args/**params
                ans = prim.impl(_NUMPY, values[0], values[1])
        if prim.plain_output and type(self) is not Tensor:  # a comparison, floor: NumPy's array
            return ans
        multiple = prim.multiple_results
        if not recording or not prim.records:  # plain outputs too: PyTorch's tensors, unrecorded
            return tuple([Tensor._make(a, level) for a in ans]) if multiple else Tensor._make(ans, level)
        if type(needs) is list:
            parents, needs = tuple(parents), tuple(needs)
        res = prim.residuals(ans, values, params, needs)
        saved_ans = False
        versions = _NO_VERSIONS
        if prim.saves_values:  # an in-place update of a saved value must be caught
            if len(args) == 1:
                if type(res[1][0]) is not Dropped:
                    counter = self._counter()
                    versions = ((counter, counter.version, 0),)
            else:
                versions = _saved_versions(args, res[1], tensors)
            saved_ans = res[0] is not None
        if HOOKS.entered:  # inside saved_tensors_hooks: the tape keeps what pack_hook makes
            res = HOOKS.pack(res, Tensor, level, prim.name)
        # Objects a node keeps are few and shared where possible (empty versions,
        # avals): on long tapes the cyclic GC's full scans cost more than recording.
        if not multiple:
            if type(ans) is np.ndarray:  # the common case, without the generic helpers
                dtype = ans.dtype
                key = (ans.shape, dtype)
                avals = _AVALS.get(key) or _shared_avals(key)
                is_float = dtype.kind in "fc"
            else:
                avals, is_float = (aval(ans),), _is_float_value(ans)
            out = Tensor._make(ans, level, None, 0, is_float)
            if saved_ans:
                versions = versions + ((out._counter(), 0, -1),)
            out._node = node = Node(prim, params, parents, needs, res, 1, avals, versions)
            if ANOMALY.on:
                node.where = recorded_at()
            return out
        outs = tuple([Tensor._make(a, level, None, j, _is_float_value(a)) for j, a in enumerate(ans)])
        if saved_ans:
            versions = versions + tuple([(t._counter(), 0, -1 - j) for j, t in enumerate(outs)])
        node = Node(prim, params, parents, needs, res, len(ans), tuple([aval(a) for a in ans]), versions)
        if ANOMALY.on:
            node.where = recorded_at()
        for t in outs:
            t._node = node
        return outs


class NumpyTensor(NumpyMethods, Tensor):
    """A :class:`Tensor` that speaks NumPy: the values ``reverse.grad``, ``vjp``,
    ``value_and_grad`` and ``jacrev`` pass into ``f``, and what is computed from
    them. Where PyTorch and NumPy give a method two meanings (``transpose``,
    ``std``, ``max``, ...), it has NumPy's, so a user's NumPy code differentiates
    as it runs; a ``Tensor`` the user constructs has PyTorch's. Both are recorded
    on the same tape.

    Examples
    --------
    >>> import numpy as np
    >>> import reverse
    >>> x = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> reverse.grad(lambda a: a.std())(x)  # NumPy's std (ddof=0)
    array([[-0.3354102, -0.1118034],
           [ 0.1118034,  0.3354102]])
    >>> reverse.Tensor(x).std().item()  # PyTorch's (unbiased)
    1.2909944487358056
    """

    __slots__ = ()


_TAPE_TYPES = (Tensor, NumpyTensor)


def as_tensor(data: Any, dtype: Any = None) -> Tensor:
    """``data`` as a ``Tensor``, sharing its memory when it can, as ``torch.as_tensor``.

    A ``Tensor`` of the requested dtype is returned as is; an array of the
    requested dtype (NumPy, CuPy, any array-API library, or a ``Dual``) is
    wrapped without a copy. Lists, numbers and arrays of another dtype are
    converted, which makes new memory; a ``Tensor`` of another dtype is cast
    by a recorded ``astype``, so gradients flow through the cast.

    Parameters
    ----------
    data : Tensor, array, Dual, float, list or tuple
        The data.
    dtype : dtype, optional
        The dtype of the result; by default that of ``data``.

    Returns
    -------
    Tensor

    Examples
    --------
    >>> import numpy as np
    >>> import reverse
    >>> a = np.array([1.0, 2.0])
    >>> reverse.as_tensor(a).value is a
    True
    >>> reverse.as_tensor(a, dtype=np.float32).dtype
    dtype('float32')
    """
    if isinstance(data, Tensor):
        return data if dtype is None or data.dtype == dtype else ops.astype(data, dtype)
    if isinstance(data, (list, tuple)) or (dtype is not None and type(data) in SCALAR_TYPES):
        data = np.asarray(data, dtype=dtype)
    else:
        _check_data(data, "as_tensor")
        if dtype is not None and dtype_of(raw(data)) != dtype:
            data = ops.astype(data, dtype)
    t = object.__new__(Tensor)
    t._init(data, False, None)
    return t


def _saved_versions(args: tuple, kept: tuple, tensors: tuple) -> tuple:
    """``(counter, version, position)`` of each tensor of the record's level among
    ``args`` (at the positions ``tensors``, which the record's loop over its operands
    noted) whose value the record keeps (``kept``: the residuals' inputs, ``Dropped``
    where not kept). Every such input is checked, not only those that require grad:
    x's cotangent in x * w reads w, so an in-place w += 1 makes it wrong."""
    versions = _NO_VERSIONS
    for i in tensors:
        if type(kept[i]) is not Dropped:
            counter = args[i]._counter()
            versions = versions + ((counter, counter.version, i),)
    return versions


_NUMPY = namespace_of([np.empty(0)])  # the namespace bind gives NumPy arrays
_NO_VERSIONS: tuple = ()
_NEEDED = (True,)  # the needs of a unary record: shared, as a tape keeps one per node
# ((shape, dtype),), the avals of a single NumPy output, one per shape and dtype and shared
# by the nodes that have it (see _process); started over at 4096 keys.
_AVALS: dict[tuple, tuple] = {}


def _shared_avals(key: tuple) -> tuple:
    if len(_AVALS) >= 4096:
        _AVALS.clear()
    avals = _AVALS[key] = (key,)
    return avals


def _check_data(value: Any, name: str) -> None:
    if not is_operand(value):
        raise TypeError(f"{name}: data must be an array, a number, a list or tuple of numbers, or a "
                        f"Dual, got {type(value).__name__}")


def _is_float_value(x) -> bool:
    r = raw(x)
    if type(r) in SCALAR_TYPES:
        return type(r) is float or type(r) is complex
    kind = getattr(r.dtype, "kind", None)
    if kind is not None:
        return kind in "fc"
    return is_float_dtype(namespace_of([r]), r.dtype)


def _immutable(value: Any) -> bool:
    """A Python number or a NumPy scalar: updated by rebinding, having no memory to write."""
    return type(value) in SCALAR_TYPES or isinstance(value, np.generic)


def _zeros_of_first(x: Any, zero: Any) -> Any:
    """Zeros of ``x``'s shape and dtype, whose derivative with respect to ``x`` is exactly 0."""
    return ops.where(False, x, zero)


class _StoreGrad:
    """``retain_grad``'s hook: adds the gradient that reaches a computed tensor into its
    ``.grad``. ``Tensor._register`` keeps it after the tensor's other hooks."""

    __slots__ = ("ref",)

    def __init__(self, t: Tensor):
        self.ref = weakref.ref(t)

    def __call__(self, g: Any) -> None:
        t = self.ref()
        if t is not None and t._retains_grad:
            t._add_grad(g)

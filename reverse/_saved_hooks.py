"""``saved_tensors_hooks``: what the tape keeps for backward, packed when an
operation is recorded and unpacked when backward reads it.

As ``torch.autograd.graph.saved_tensors_hooks``: inside the block, each array
a recorded operation saves for its VJP (an input, an output, a mask) is
given to ``pack_hook`` as a Tensor that does not require grad (sharing the
array's memory), and the tape keeps only what ``pack_hook`` returns; when
backward needs it, ``unpack_hook`` gets that back and returns the array (or
a Tensor holding it) again. Blocks nest (the innermost pair packs) and are
per thread. Numbers a record keeps (Python or NumPy scalars) and shapes are
kept as they are, as PyTorch keeps its scalars.

Recording tests one attribute, :attr:`_Registry.entered` (how many blocks are
open in any thread), while no block is open; the walk over a record's
residuals happens only inside one.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np

from dualad.interpreter import SCALAR_TYPES, Dropped, Value, describe, dtype_of, is_operand, raw, shape_of

__all__ = ["HOOKS", "Packed", "saved_tensors_hooks"]


class _Saved:
    """One packed value: what ``pack_hook`` returned, the hook that unpacks it, and
    what the value was (to check what comes back)."""

    __slots__ = ("packed", "unpack_hook", "shape", "dtype", "array_type", "value_type")

    def __init__(self, packed: Any, unpack_hook: Callable, value: Any):
        self.packed, self.unpack_hook = packed, unpack_hook
        r = raw(value)
        self.shape, self.dtype, self.array_type = shape_of(r), dtype_of(r), type(r)
        self.value_type = type(value) if isinstance(value, Value) else None

    def unpack(self, tensor_type: type, prim_name: str) -> Any:
        out = self.unpack_hook(self.packed)
        if isinstance(out, tensor_type):
            out = out.value
        if not is_operand(out) or type(raw(out)) is not self.array_type:
            raise TypeError(f"{self._returned(out, prim_name)}; unpack must return the array pack "
                            "was given (or a Tensor of it)")
        if shape_of(out) != self.shape or dtype_of(raw(out)) != self.dtype:
            raise ValueError(f"{self._returned(out, prim_name)}; unpack must give back the shape and "
                             "dtype pack was given")
        if self.value_type is not None and type(out) is not self.value_type:
            raise TypeError(f"{self._returned(out, prim_name)}: the value was a "
                            f"{self.value_type.__name__} (inside a forward-mode transform), and an "
                            "array alone drops its tangent; pack and unpack the Tensor itself there "
                            "(or its .value)")
        return out

    def _returned(self, out: Any, prim_name: str) -> str:
        hook = getattr(self.unpack_hook, "__name__", None) or repr(self.unpack_hook)
        kind = f"{self.array_type.__module__}.{self.array_type.__name__}"
        return (f"saved_tensors_hooks: unpack hook '{hook}' returned {describe(out)} for a value "
                f"'{prim_name}' saved as a {kind} of shape {self.shape} and dtype {self.dtype}")


class Packed:
    """A record's residuals with their arrays packed; :meth:`unpack` rebuilds them."""

    __slots__ = ("tree", "tensor_type", "prim_name")

    def __init__(self, tree: Any, tensor_type: type, prim_name: str):
        self.tree, self.tensor_type, self.prim_name = tree, tensor_type, prim_name

    def unpack(self) -> Any:
        return _map(self.tree, lambda s: s.unpack(self.tensor_type, self.prim_name)
                    if type(s) is _Saved else s)


def _map(tree: Any, fn: Callable) -> Any:
    """``fn`` on each leaf of nested tuples (a record's residuals are tuples of values)."""
    if type(tree) is tuple:
        return tuple([_map(t, fn) for t in tree])
    return fn(tree)


def _is_saved_array(x: Any) -> bool:
    if type(x) is Dropped or not is_operand(x):
        return False
    r = raw(x)
    return type(r) not in SCALAR_TYPES and not isinstance(r, np.generic)


class _Registry:
    """The open ``saved_tensors_hooks`` blocks: a count over all threads, which
    recording reads, and each thread's stack of (pack, unpack) pairs."""

    __slots__ = ("entered", "_lock", "_local")

    def __init__(self):
        self.entered = 0
        self._lock = threading.Lock()
        self._local = threading.local()

    def stack(self) -> list:
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def enter(self, pair: tuple) -> None:
        self.stack().append(pair)
        with self._lock:
            self.entered += 1

    def exit(self) -> None:
        self.stack().pop()
        with self._lock:
            self.entered -= 1

    def pack(self, res: Any, tensor_type: type, level: int, prim_name: str) -> Any:
        """``res`` with each saved array replaced by what this thread's innermost pack
        hook makes of it (``res`` itself when no block is open in this thread)."""
        stack = self.stack()
        if not stack:
            return res
        pack_hook, unpack_hook = stack[-1]
        found = False

        def pack(x):
            nonlocal found
            if not _is_saved_array(x):
                return x
            found = True
            return _Saved(pack_hook(tensor_type._make(x, level)), unpack_hook, x)

        tree = _map(res, pack)
        return Packed(tree, tensor_type, prim_name) if found else res


HOOKS = _Registry()


class saved_tensors_hooks:
    """Pack what the tape saves for backward, and unpack it when backward needs it.

    As ``torch.autograd.graph.saved_tensors_hooks``. Inside the block, each
    array that a recorded operation saves (an input, an output, a mask) is
    passed to ``pack_hook`` as a Tensor that does not require grad and
    shares the array's memory; the tape keeps only what ``pack_hook``
    returns, so the array itself may be freed (offloaded to host memory or
    disk, compressed). When backward reads it, ``unpack_hook`` gets that
    object and must return the same values (an array, or a Tensor holding
    one) of the same shape, dtype and array type; a wrong one is an error
    naming the hook and the operation. ``pack_hook`` must not change the
    array it is given. Unpacking happens at each backward that reads the
    value (again after ``retain_graph=True``), with the hooks that packed
    it, also after the block has ended. Blocks nest (the innermost pair
    packs) and apply to the thread that opens them. Python and NumPy scalars
    a record keeps are not packed.

    Parameters
    ----------
    pack_hook : callable
        ``pack_hook(tensor) -> packed``, any object.
    unpack_hook : callable
        ``unpack_hook(packed) -> array or Tensor``.

    Examples
    --------
    Keep saved float64 arrays as float32 while waiting for backward:

    >>> import numpy as np
    >>> from reverse import Tensor, saved_tensors_hooks
    >>> x = Tensor(np.array([0.5, 1.0]), requires_grad=True)
    >>> with saved_tensors_hooks(lambda t: t.value.astype(np.float32),
    ...                          lambda p: p.astype(np.float64)):
    ...     y = np.sin(x).sum()
    >>> y.backward()
    >>> np.allclose(x.grad.value, np.cos([0.5, 1.0]), rtol=1e-6)
    True
    """

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]):
        for name, hook in (("pack_hook", pack_hook), ("unpack_hook", unpack_hook)):
            if not callable(hook):
                raise TypeError(f"saved_tensors_hooks: {name} must be callable, got "
                                f"{type(hook).__name__}")
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self) -> saved_tensors_hooks:
        HOOKS.enter((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc: Any) -> bool:
        HOOKS.exit()
        return False

"""What a compiled function reads besides its arguments, and the guard that it is unchanged.

A program holds what ``f`` read through names as constants: the globals its
code names, the variables it closes over, the attributes of the object a
bound method belongs to, the arguments a ``functools.partial`` fixes, and,
through them, the same of the Python functions it reaches (a helper of the
user's module, the function ``reverse.grad`` wraps). :func:`reads` lists
them; :class:`Bindings` checks at each call that every name still holds the
object it held at the trace (one identity test a name), as ``torch.compile``
guards on the globals a frame reads, so that ``W = new_array`` or
``scale = 3.0`` traces anew instead of replaying the old value. Names ``f``
itself assigns (``global n; n += 1``) are not guarded: they change on every
call by design.
"""

from __future__ import annotations

import dis
import functools
import sys
import types
from typing import Any, Callable, Iterator

__all__ = ["Bindings", "reads"]

_OURS = ("dualad", "reverse", "mixed", "numpy", "scipy")  # library code: its names are not the user's
_MISSING = object()


def reads(f: Callable) -> Iterator[tuple[Any, Any, Any]]:
    """``(holder, name, value)`` for each name ``f`` reads: ``holder`` is the globals,
    ``__dict__`` or closure cell that holds ``value``, or None where the user cannot
    rebind it (a partial's fixed arguments, the names of library code)."""
    seen: set = set()
    stack: list = [(None, None, f)]
    while stack:
        holder, key, fn = stack.pop()
        if fn is not f:
            yield holder, key, fn
        if id(fn) in seen or isinstance(fn, types.ModuleType):
            continue
        seen.add(id(fn))
        if isinstance(fn, functools.partial):
            stack.extend((None, None, v) for v in (fn.func, *fn.args, *fn.keywords.values()))
            continue
        target = getattr(fn, "__func__", fn)
        code = getattr(target, "__code__", None)
        if code is None or not isinstance(code, types.CodeType):
            continue
        library = _library(target.__globals__)
        owner = getattr(fn, "__self__", None)
        if owner is not None and not isinstance(owner, types.ModuleType):
            attributes = getattr(owner, "__dict__", None)
            if isinstance(attributes, dict):  # looked through (a Generator there), guarded for the user's
                stack.extend((None if library else attributes, k, v) for k, v in list(attributes.items()))
        assigned = _assigned(code)
        cells = target.__closure__ or ()
        for name, cell in zip(code.co_freevars, cells):
            try:
                value = cell.cell_contents
            except ValueError:  # not yet assigned
                continue
            stack.append((None if library or name in assigned else cell, name, value))
        names = target.__globals__
        for name in _global_names(code):
            value = names.get(name, _MISSING)
            if value is not _MISSING:
                stack.append((None if library or name in assigned else names, name, value))


def _library(names: dict) -> bool:
    """Whether ``names`` are the globals of a module of dualad, NumPy or SciPy."""
    module = sys.modules.get(names.get("__name__", ""))
    return module is not None and module.__dict__ is names and module.__name__.split(".")[0] in _OURS


@functools.lru_cache(maxsize=1024)
def _global_names(code: types.CodeType) -> tuple:
    """The names ``code`` and the code nested in it (lambdas, comprehensions) look up."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names.update(_global_names(const))
    return tuple(sorted(names))


@functools.lru_cache(maxsize=1024)
def _assigned(code: types.CodeType) -> frozenset:
    """The globals and closure variables ``code`` (or code nested in it) assigns."""
    stores = {"STORE_GLOBAL", "DELETE_GLOBAL", "STORE_DEREF", "DELETE_DEREF"}
    names = {i.argval for i in dis.get_instructions(code) if i.opname in stores}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _assigned(const)
    return frozenset(names)


class Bindings:
    """The names ``f`` read when it was traced, and the objects they held.

    Examples
    --------
    >>> scale = 2.0
    >>> b = Bindings(lambda x: x * scale)
    >>> b.hold()
    True
    >>> scale = 3.0
    >>> b.hold(), b.changed()
    (False, ['scale'])
    """

    __slots__ = ("names", "cells", "hold")

    def __init__(self, f: Callable):
        read = [r for r in reads(f) if r[0] is not None and not isinstance(r[2], types.ModuleType)]
        self.cells = tuple(r for r in read if type(r[0]) is types.CellType)
        self.names = tuple(r for r in read if type(r[0]) is not types.CellType)
        self.hold = _holding(self.names, self.cells)

    def changed(self) -> list:
        """The names that no longer hold what they held."""
        return [name for holder, name, value in self.names if holder.get(name, _MISSING) is not value] + \
            [name for cell, name, value in self.cells if _contents(cell) is not value]


def _holding(names: tuple, cells: tuple) -> Callable[[], bool]:
    """``hold()``: whether every name still holds the object it held (a test of identity
    each), generated as one expression, since ``compile`` asks at every call (a loop over
    the names costs several times as much: benchmarks/README.md)."""
    env: dict[str, Any] = {"_MISSING": _MISSING}
    tests = []
    for i, (holder, name, value) in enumerate(names):
        env[f"get{i}"], env[f"n{i}"], env[f"v{i}"] = holder.get, name, value
        tests.append(f"get{i}(n{i}, _MISSING) is v{i}")
    for i, (cell, _name, value) in enumerate(cells):
        env[f"c{i}"], env[f"w{i}"] = cell, value
        tests.append(f"c{i}.cell_contents is w{i}")
    source = (f"def hold():\n    try:\n        return {' and '.join(tests) or 'True'}\n"
              "    except ValueError:  # a cell deleted since\n        return False\n")
    exec(compile(source, "<dualad bindings>", "exec"), env)  # noqa: S102 - our own generated code
    return env["hold"]


def _contents(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # deleted since
        return _MISSING

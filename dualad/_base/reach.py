"""What a function reaches besides its arguments, and where it finds it.

A transform that runs a user's function at other values than those it closes
over needs the value types the function uses without being passed them: its
closure, the globals it names, a model object's attributes. ``reverse``'s
``checkpoint`` recomputes a block with them; the implicit-function entries
(``dualad.custom_root``, ``dualad.custom_linear_solve``) make them operands,
as JAX's closure conversion does. :func:`reach` walks those from the function
and from its constant arguments, and remembers each value together with the
*place* that holds it (a closure cell, a dict entry, a list item, an
attribute), so that :meth:`Reached.substituted` can put another value in
every place for the duration of a call and put the original back after.
The same walk collects the objects a ``streams`` predicate accepts (the random
generators a checkpointed block may draw from), wherever they are held.

What the walk follows, from ``fn`` and the constant arguments, to
``MAX_DEPTH`` steps:

- a function's closure cells, the globals its code names (``co_names``,
  nested code objects included), attributes of modules it names that its
  code also names (``cfg.w``), and its default arguments;
- a bound method's ``__self__`` and function (so ``uniform = rng.random``
  leads to ``rng``); a callable object's
  attributes and its class's ``__call__``; ``functools.partial``'s function
  and keywords (and its positional arguments, for generators only: a tuple
  there has no place to be replaced in);
- items of lists and dicts, items of tuples (a tuple is rebuilt in the
  place that holds it), and the ``__dict__`` attributes of objects.

It does not look into classes (class attributes), modules other than by
name as above, objects without a ``__dict__`` (``__slots__``), the objects
and globals of NumPy, SciPy, CuPy, dualad itself, ``logging`` and ``threading``
(the closures of their functions, which hold user functions, it does look
into; and the modules of ``reverse.nn``, which hold the user's weights, it
looks into as into the user's own objects), nor past ``MAX_OBJECTS`` objects per call (a warning says when it
stops there).
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
import types
import warnings
from typing import Any, Callable

import numpy as np

from dualad._base.core import Value, is_closed

__all__ = ["Reached", "reach"]

MAX_DEPTH = 8
MAX_OBJECTS = 20_000  # objects and items looked at (what each costs: benchmarks/README.md)

# The globals and objects of these packages hold no user values, and are large.
_LIBRARIES = frozenset({
    "builtins", "numpy", "scipy", "cupy", "cupyx", "cupy_backends", "array_api_strict",
    "array_api_compat", "dualad", "reverse", "mixed", "logging", "threading"})
# Modules of those packages whose objects hold the user's values: a model's layers
# (``nn.Linear``) hold its weights.
_HOLDERS = frozenset({"reverse.nn"})
_ATOMS = (str, bytes, int, float, complex, bool, type(None), type, types.ModuleType,
          types.BuiltinFunctionType, types.CodeType)
_ATOM_TYPES = frozenset(_ATOMS) | {np.ndarray, np.float64}  # the common ones, by a set lookup


class _Cell:
    """A closure cell."""

    __slots__ = ("cell", "name")

    def __init__(self, cell, name: str):
        self.cell, self.name = cell, name

    def get(self):
        return self.cell.cell_contents

    def set(self, value):
        self.cell.cell_contents = value

    def __str__(self) -> str:
        return f"the closure variable {self.name!r}"


class _Item:
    """An entry of a dict (globals, an object's ``__dict__``) or an item of a list;
    ``kind``, a format string of the key, names it in messages."""

    __slots__ = ("container", "key", "kind")

    def __init__(self, container, key, kind: str):
        self.container, self.key, self.kind = container, key, kind

    def get(self):
        return self.container[self.key]

    def set(self, value):
        self.container[self.key] = value

    def __str__(self) -> str:
        return self.kind.format(self.key)


class _Attr:
    """An attribute kept outside ``__dict__`` (a function's ``__defaults__``)."""

    __slots__ = ("obj", "name")

    def __init__(self, obj, name):
        self.obj, self.name = obj, name

    def get(self):
        return getattr(self.obj, self.name)

    def set(self, value):
        setattr(self.obj, self.name, value)

    def __str__(self) -> str:
        return f"{self.name} of {getattr(self.obj, '__qualname__', type(self.obj).__name__)}"


class Reached:
    """The values a walk found and the places that hold them, and the random generators."""

    def __init__(self, who: str):
        self.who = who  # the transform that substitutes, as its messages name it
        self.values: list = []  # in the order found, each once
        self.streams: dict[int, Any] = {}  # id -> an object the walk's ``streams`` accepts
        self._index: dict[int, int] = {}  # id(value) -> position in values
        # id of a place -> (place, [(path into the tuples it holds, value position)])
        self._places: dict[tuple, tuple] = {}

    def add_value(self, value, place, key, path) -> None:
        k = self._index.get(id(value))
        if k is None:
            k = self._index[id(value)] = len(self.values)
            self.values.append(value)
        entry = self._places.setdefault(key, (place, []))
        entry[1].append((path, k))

    def substituted(self, replacements: list) -> _Substitution:
        """A context in which ``replacements[k]`` stands wherever ``values[k]`` was found."""
        return _Substitution(self._places.values(), replacements, self.who)


# The places are the user's (closure cells, dicts, lists), shared by every thread that
# runs the function: one substitution at a time, or a second thread would take the first's
# stand-ins for the originals and put them back as such. Re-entrant: a substitution runs
# the function, which may substitute again (a solution inside a residual).
_SUBSTITUTING = threading.RLock()


class _Substitution:
    """Puts the replacements in their places on entry and the originals back on
    exit; a place the call assigned to meanwhile is an error (see ``__exit__``).
    Substitutions run one at a time in the process (:data:`_SUBSTITUTING`)."""

    __slots__ = ("places", "replacements", "who", "done")

    def __init__(self, places, replacements, who):
        self.places, self.replacements, self.who, self.done = places, replacements, who, []

    def __enter__(self):
        _SUBSTITUTING.acquire()
        try:
            for place, entries in self.places:
                old = place.get()
                new = old
                for path, k in entries:
                    new = _replaced(new, path, self.replacements[k])
                place.set(new)
                self.done.append((place, old, new))
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        done, self.done = self.done, []
        try:
            assigned = [place for place, _, new in done if place.get() is not new]
            for place, old, _ in reversed(done):
                place.set(old)
        finally:
            _SUBSTITUTING.release()
        if assigned and exc_type is None:
            # What was assigned is made of this run's stand-ins (raw arrays, or Tensors of
            # a recomputation's closed level); putting the user's value back loses it.
            raise RuntimeError(
                f"{self.who}: the block assigned to {', '.join(map(str, assigned))}, which held a "
                f"value that {self.who} replaces while the block runs, so the assignment cannot "
                "be kept; keep such state outside the block, or pass it to the block and return "
                "its new value")
        return False


def _replaced(tree, path: tuple, value):
    """``tree`` with the item at ``path`` (indices into nested tuples) replaced by ``value``."""
    if not path:
        return value
    items = list(tree)
    items[path[0]] = _replaced(tree[path[0]], path[1:], value)
    return type(tree)(*items) if hasattr(tree, "_fields") else type(tree)(items)


def reach(fn: Callable, constants: list, *, who: str,
          streams: Callable[[Any], bool] | None = None) -> Reached:
    """The value types that ``fn`` reaches besides its array arguments, and the objects
    ``streams`` accepts (see the module docstring); ``who`` (``"checkpoint"``) names the
    transform in the messages.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import Dual
    >>> from dualad.interpreter import reach
    >>> theta = Dual(np.ones(2), np.zeros(2))
    >>> f = lambda x: x * theta
    >>> found = reach(f, [], who="an example")
    >>> found.values[0] is theta
    True
    >>> with found.substituted([np.full(2, 3.0)]):  # f at another theta
    ...     f(np.ones(2))
    array([3., 3.])
    """
    walk = _Walk(who, streams)
    walk.visit(fn, None, (), 0)
    for c in constants:
        walk.visit(c, None, (), 0)
    if walk.budget <= 0:
        warnings.warn(
            f"{who} stopped looking for the values (and random generators) {fn!r} uses "
            f"after {MAX_OBJECTS} objects, so it may have missed some; pass them as "
            "arguments, and keep large containers out of what fn names", stacklevel=3)
    return walk.found


def _live(value: Value) -> bool:
    """Not a buffer of raw numbers (level -1), nor a value that escaped a transform that
    has returned: if the block uses one of those, it raises as it would without checkpoint."""
    level = value._level
    return level >= 0 and not is_closed(level)


def _is_library(module_name: str | None) -> bool:
    return (module_name or "").partition(".")[0] in _LIBRARIES


def _library_function(fn: types.FunctionType) -> bool:
    """Defined in a library module (not merely named after one, as a doctest's are)."""
    module = sys.modules.get(fn.__module__ or "")
    return _is_library(fn.__module__) and module is not None and vars(module) is fn.__globals__


@functools.lru_cache(maxsize=1024)
def _class_info(cls: type) -> tuple[bool, types.FunctionType | None]:
    """Whether ``cls`` is a library's, and the Python ``__call__`` of its instances."""
    library = _is_library(cls.__module__) and cls.__module__ not in _HOLDERS and getattr(
        sys.modules.get(cls.__module__), cls.__name__, None) is cls
    call = inspect.getattr_static(cls, "__call__", None)
    return library, call if isinstance(call, types.FunctionType) else None


class _Walk:
    def __init__(self, who: str, streams: Callable[[Any], bool] | None):
        self.found = Reached(who)
        self.streams = streams
        self.seen: set[int] = set()
        self.budget = MAX_OBJECTS

    def visit(self, obj, place, path: tuple, depth: int) -> None:
        """Record ``obj`` if it is a value type; otherwise look inside it."""
        if type(obj) in _ATOM_TYPES or self.budget <= 0:
            return
        self.budget -= 1
        if isinstance(obj, Value):
            if place is not None and _live(obj):
                self.found.add_value(obj, place, _key(place), path)
            return
        if self.streams is not None and self.streams(obj):
            self.found.streams[id(obj)] = obj
            return
        if isinstance(obj, _ATOMS) or depth > MAX_DEPTH:
            return
        if isinstance(obj, tuple):  # immutable: its items are replaced through its place
            for i, item in enumerate(obj):
                self.visit(item, place, path + (i,), depth + 1)
            return
        if id(obj) in self.seen:
            return
        self.seen.add(id(obj))
        if isinstance(obj, list):
            self.items(obj, enumerate(obj), depth, "item {} of a list")
        elif isinstance(obj, dict):
            self.items(obj, obj.items(), depth, "entry {!r} of a dict")
        else:
            self.callable(obj, depth)

    def items(self, container, pairs, depth: int, kind: str) -> None:
        """The items of a list or dict, each counted against the budget."""
        for key, item in pairs:
            if self.budget <= 0:
                return
            if type(item) in _ATOM_TYPES:  # most items of a long list: no place made for them
                self.budget -= 1
            else:
                self.visit(item, _Item(container, key, kind), (), depth + 1)

    def callable(self, obj, depth: int) -> None:
        """Look into a function, a method, a partial, or an object's attributes."""
        if isinstance(obj, types.FunctionType):
            self.function(obj, depth)
        elif isinstance(obj, types.MethodType):
            self.visit(obj.__self__, None, (), depth + 1)
            self.visit(obj.__func__, None, (), depth + 1)
        elif isinstance(obj, functools.partial):
            self.visit(obj.func, None, (), depth + 1)
            self.visit(obj.args, None, (), depth + 1)
            self.visit(obj.keywords, None, (), depth + 1)
        else:
            library, call = _class_info(type(obj))
            if library:
                return
            try:  # without running a __getattr__ of the object's
                attributes = object.__getattribute__(obj, "__dict__")
            except AttributeError:  # __slots__ only
                return
            if id(attributes) not in self.seen:
                self.seen.add(id(attributes))
                self.items(attributes, attributes.items(), depth,
                           f"the attribute {{}} of a {type(obj).__name__}")
            if call is not None:
                self.visit(call, None, (), depth + 1)

    def function(self, fn: types.FunctionType, depth: int) -> None:
        """Its closure and defaults; its globals too, unless it is a library's."""
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                content = cell.cell_contents
            except ValueError:  # a free variable not assigned yet
                continue
            self.visit(content, _Cell(cell, name), (), depth + 1)
        if not _library_function(fn):
            names = _names(fn.__code__)
            scope = fn.__globals__
            for name in names:
                if name not in scope:
                    continue
                value = scope[name]
                if isinstance(value, types.ModuleType):
                    if not _is_library(value.__name__):
                        self.module_attributes(value, names, depth + 1)
                else:
                    self.visit(value, _Item(scope, name, "the global {}"), (), depth + 1)
        if fn.__defaults__:
            self.visit(fn.__defaults__, _Attr(fn, "__defaults__"), (), depth + 1)
        if fn.__kwdefaults__:
            self.visit(fn.__kwdefaults__, None, (), depth + 1)

    def module_attributes(self, module, names, depth: int) -> None:
        """The attributes of a module named by the code that names the module."""
        attributes = vars(module)
        for name in names:
            if name in attributes and not isinstance(attributes[name], types.ModuleType):
                self.visit(attributes[name], _Item(attributes, name, f"{module.__name__}.{{}}"),
                           (), depth)


def _names(code: types.CodeType) -> list[str]:
    """Global and attribute names used by ``code`` and the code objects nested in it."""
    names, stack = [], [code]
    while stack:
        c = stack.pop()
        names.extend(c.co_names)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return list(dict.fromkeys(names))


def _key(place) -> tuple:
    if type(place) is _Cell:
        return ("cell", id(place.cell))
    if type(place) is _Item:
        return ("item", id(place.container), place.key)  # dict keys and list indices hash
    return ("attr", id(place.obj), place.name)

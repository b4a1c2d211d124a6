"""Where dualad keeps the machine code it compiles: a per-user folder, never the package.

Numba's ``cache=True`` writes a function's machine code beside its source
file, in ``__pycache__``: for an installed dualad, inside site-packages. An
install over it left those folders behind, and one of them then shadowed the
next (editable) install as an empty namespace package. :func:`njit` compiles
with Numba's disk cache in :func:`cache_root` instead. It does so for the
functions it is given only: Numba's own settings (``NUMBA_CACHE_DIR``) stay
the user's, for the user's functions, and do not move dualad's.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any, Callable

__all__ = ["cache_root", "njit"]


def cache_root() -> str:
    """The folder dualad keeps compiled kernels in: ``$DUALAD_CACHE_DIR``, else ``dualad``
    in the platform's per-user cache folder (``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux,
    ``~/Library/Caches`` on macOS, ``%LOCALAPPDATA%`` on Windows).

    Examples
    --------
    >>> os.path.isabs(cache_root())
    True
    """
    root = os.environ.get("DUALAD_CACHE_DIR")
    if root:
        return os.path.abspath(os.path.expanduser(root))
    home = os.path.expanduser("~")
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local")
    elif sys.platform == "darwin":
        base = os.path.join(home, "Library", "Caches")
    else:  # the XDG base directory specification: a relative path is to be ignored
        base = os.environ.get("XDG_CACHE_HOME", "")
        base = base if os.path.isabs(base) else os.path.join(home, ".cache")
    return os.path.join(base, "dualad")


def njit(function: Callable | None = None, **options: Any) -> Callable:
    """``numba.njit(**options)(function)``, its machine code kept on disk under
    :func:`cache_root` (``numba/``, a folder per source folder) for the next process;
    compiled anew in each process where that folder cannot be written (or the function
    has no source file). Without ``function``, the decorator, as ``numba.njit(**options)``.

    Examples
    --------
    >>> import importlib.util
    >>> def twice(a):
    ...     return 2 * a
    >>> njit(twice, nogil=True)(21) if importlib.util.find_spec("numba") else 42
    42
    """
    if function is None:
        return functools.partial(njit, **options)
    import numba
    kernel = numba.njit(**options)(function)
    cache = _disk_cache(function)
    if cache is not None:
        kernel._cache = cache  # what ``cache=True`` sets (Dispatcher.enable_caching), ours instead
    return kernel


def _disk_cache(function: Callable) -> Any:
    """Numba's cache of ``function`` under :func:`cache_root`, or None where that folder
    cannot be written (or this Numba's caching classes are not the ones known here)."""
    try:
        return _cache_class()(function)
    except (RuntimeError, OSError, ImportError, AttributeError, TypeError):
        return None


@functools.cache
def _cache_class() -> type:
    """Numba's ``FunctionCache`` with one locator, ours: Numba's registry of locators
    (``CacheImpl._locator_classes``) is left as it is, so no other function changes."""
    from numba.core import caching

    class Locator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
        """Numba's user-wide locator's layout, rooted at :func:`cache_root`; the source
        file's hash (Numba's source stamp) still decides whether a cached entry is fresh."""

        def __init__(self, py_func: Callable, py_file: str):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._cache_path = os.path.join(cache_root(), "numba", self.get_suitable_cache_subpath(py_file))

        def get_cache_path(self) -> str:
            return self._cache_path

    class Impl(caching.CompileResultCacheImpl):
        _locator_classes = [Locator]

    class FunctionCache(caching.FunctionCache):
        _impl_class = Impl

    return FunctionCache

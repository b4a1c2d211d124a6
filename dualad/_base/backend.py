"""Resolve the array namespace of a primitive's raw operands.

This is the only module that names a backend. Python floats get a scalar
namespace built on :mod:`math` (a dual number of two floats should cost
little more than two floats); arrays get their array-API namespace through
``array_api_compat``. Dask arrays are lazy: the few places that must hold
numbers (host control, a solver's iterates) go through :func:`to_host`,
:func:`to_floats` and :func:`persist`, and Dask itself is imported only when
a Dask array is already there.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import threading
from typing import Callable

import array_api_compat
import numpy as np

from dualad._base.taint import TaintingNamespace, TracedArray, tainting_namespace

NUMPY_XP = array_api_compat.array_namespace(np.zeros(0))
# The types ``bind`` sends straight to ``NUMPY_XP`` (with Python numbers beside them),
# as ``namespace_of`` would: arrays, and the scalars that indexing them gives.
NUMPY_ARRAY, NUMPY_FLOAT64 = np.ndarray, np.float64
SCALAR_TYPES = (float, int, bool, complex)
# The array types (exactly: no subclass) whose arrays own their memory or view another's
# through ``.base``, which ``dualad._table.ownership`` may write into: NumPy's, and CuPy's
# once a CuPy array has been met here.
WRITABLE_ARRAYS = {np.ndarray}


# The array API's (and math's) spellings of NumPy's names for the same functions.
ARRAY_API_NAMES = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
                   "acosh": "arccosh", "atanh": "arctanh", "atan2": "arctan2", "pow": "power"}


def _numpy_fallback(name: str):
    ufunc = getattr(np, name)

    def call(*args):
        return float(ufunc(*args))

    return call


def _guarded(fast, name: str):
    """Use ``math.<fast>`` but follow NumPy's IEEE conventions outside its domain."""
    slow = _numpy_fallback(name)

    def call(*args):
        try:
            return fast(*args)
        except (ValueError, OverflowError, ZeroDivisionError):
            with np.errstate(all="ignore"):
                return slow(*args)

    call.__name__ = name
    return call


class _ScalarNamespace:
    """The namespace of Python floats, resolved by name on first use, not listed:
    ``math.<name>`` where it exists (following NumPy's IEEE results where math
    raises: ``log(0) = -inf``, ``sin(inf) = nan``), else NumPy's ufunc of that
    name as a float. Only the functions whose float semantics differ from both
    are written out below.
    """

    _MATH_NAMES = {numpy: spelled for spelled, numpy in ARRAY_API_NAMES.items()}

    floor = staticmethod(lambda x: float(math.floor(x)))
    ceil = staticmethod(lambda x: float(math.ceil(x)))
    trunc = staticmethod(lambda x: float(math.trunc(x)))
    round = staticmethod(lambda x: float(round(x)))
    logical_and = staticmethod(lambda x, y: bool(x and y))
    logical_or = staticmethod(lambda x, y: bool(x or y))
    logical_not = staticmethod(lambda x: not x)
    abs = staticmethod(abs)
    maximum = staticmethod(lambda x, y: x if x >= y or x != x else y)
    minimum = staticmethod(lambda x, y: x if x <= y or x != x else y)
    where = staticmethod(lambda c, x, y: x if c else y)
    divide = staticmethod(_guarded(lambda x, y: x / y, "divide"))
    # NumPy's floored division and remainder (math.remainder is IEEE's, to the nearest); two
    # Python ints give an int, as NumPy gives an integer
    floor_divide = staticmethod(lambda x, y: np.floor_divide(x, y).item())
    remainder = staticmethod(lambda x, y: np.remainder(x, y).item())
    isnan, isfinite, isinf = staticmethod(math.isnan), staticmethod(math.isfinite), staticmethod(math.isinf)

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        numpy_name = ARRAY_API_NAMES.get(name, name)
        fast = getattr(math, self._MATH_NAMES.get(name, name), None)
        if fast is None and not isinstance(getattr(np, numpy_name, None), np.ufunc):
            raise AttributeError(f"no float implementation of {name!r}")
        fn = _guarded(fast, numpy_name) if fast is not None else _numpy_fallback(numpy_name)
        setattr(self, name, fn)  # resolved once
        return fn


scalar_xp = _ScalarNamespace()


_BY_TYPES: dict[tuple, object] = {}  # operand types -> namespace, when that settles it


def namespace_of(args) -> object:
    """The array namespace shared by the raw operands ``args``.

    Python scalars adopt the namespace of the arrays beside them; if there
    are only scalars, the :mod:`math`-based scalar namespace is returned.
    Mixing array libraries (say CuPy and NumPy) is an error, since moving
    data between host and device implicitly would hide a costly copy.
    """
    types = tuple(map(type, args))
    xp = _BY_TYPES.get(types)
    if xp is not None:
        return xp
    arrays = [a for a in args if type(a) not in SCALAR_TYPES and a is not None]
    if not arrays:  # math has no complex functions: complex scalars go to NumPy
        xp = NUMPY_XP if complex in types else scalar_xp
    elif all(type(a) is np.ndarray or isinstance(a, np.generic) for a in arrays):
        xp = NUMPY_XP
    else:
        staged = tainting_namespace(arrays, NUMPY_XP)  # numbers read from compile's traced values
        if staged is not None:
            return staged
        try:
            xp = array_api_compat.array_namespace(*arrays)
        except TypeError as err:
            kinds = sorted({type(a).__module__ + "." + type(a).__name__ for a in arrays})
            hint = ("; lift a NumPy array into Dask with dask.array.from_array(a, chunks=...)"
                    if any(map(array_api_compat.is_dask_array, arrays)) else "")
            raise TypeError(
                f"operands come from different array libraries ({', '.join(kinds)}); "
                "dualad never moves data between backends implicitly: convert them "
                f"to one library first{hint}"
            ) from err
        if array_api_compat.is_cupy_namespace(xp):
            WRITABLE_ARRAYS.add(importlib.import_module("cupy").ndarray)
        return xp
    _BY_TYPES[types] = xp  # NumPy and scalars only: their namespace is the type's
    return xp


def is_float_dtype(xp, dtype) -> bool:
    """Whether ``dtype`` is a real or complex floating dtype of ``xp``."""
    if xp is scalar_xp:
        return dtype is float
    if xp is NUMPY_XP and isinstance(dtype, np.dtype):  # without isdtype's parsing of it
        return dtype.kind in "fc"
    return xp.isdtype(dtype, ("real floating", "complex floating"))


def on_host(xp) -> bool:
    """Whether ``xp`` computes on NumPy arrays (NumPy's, the scalar namespace's, or that of
    compile's traced values), where SciPy's functions take them as they are."""
    return xp is scalar_xp or xp is NUMPY_XP or type(xp) is TaintingNamespace


def scipy_module(xp, submodule: str, name: str):
    """SciPy's ``submodule`` (``"special"``, ``"linalg"``) for arrays of ``xp`` (and
    for floats): ``scipy.<submodule>`` on NumPy, ``cupyx.scipy.<submodule>`` on CuPy.

    ``name`` is the function asking, for the errors: an ImportError when SciPy is
    missing, NotImplementedError on a namespace that has no such module.
    """
    if on_host(xp):
        try:
            return importlib.import_module(f"scipy.{submodule}")
        except ImportError as err:
            raise ImportError(f"{name} on NumPy arrays and floats needs SciPy "
                              f"(scipy.{submodule}): pip install scipy") from err
    if array_api_compat.is_cupy_namespace(xp):
        return importlib.import_module(f"cupyx.scipy.{submodule}")
    raise NotImplementedError(
        f"{name}: scipy.{submodule} functions run on NumPy (with SciPy) and CuPy arrays "
        f"(cupyx.scipy.{submodule}); {getattr(xp, '__name__', xp)} has none")


def to_host(x):
    """The numbers of a raw array (or Python number, or list) as a NumPy array: for
    control computed on the host (indices, masks, sort orders), never for math."""
    if type(x) is TracedArray:  # a traced value's numbers: compile's trace hears of it
        return x.on_host()
    if isinstance(x, (np.ndarray, np.generic, list, tuple)) or type(x) in SCALAR_TYPES:
        return np.asarray(x)
    if array_api_compat.is_cupy_array(x):
        return x.get()
    if array_api_compat.is_dask_array(x):  # computed here: the host needs the numbers now
        report = getattr(_DASK_READS, "report", None)
        if report is not None:
            report()
        return np.asarray(x)
    try:
        return np.from_dlpack(x)
    except (BufferError, RuntimeError, ValueError) as err:  # on a device NumPy cannot read
        try:
            return np.from_dlpack(x, device="cpu")  # a copy to the host (NumPy 2.1 and later)
        except TypeError:
            raise err from None


# What to tell when a Dask array's numbers are read on the host in this thread (while
# compile traces Dask arrays, which TracedArray cannot mark: see dualad._base.taint).
_DASK_READS = threading.local()


@contextlib.contextmanager
def dask_host_reads(report: Callable[[], None]):
    """While in the block, ``report()`` at each read of a Dask array's numbers on the host
    (:func:`to_host`) in this thread: ``compile``'s trace of Dask arrays hears of the
    numbers a program would bake in."""
    saved = getattr(_DASK_READS, "report", None)
    _DASK_READS.report = report
    try:
        yield
    finally:
        _DASK_READS.report = saved


def positions(xp, index):
    """Host integer positions (a NumPy array) as an index for ``xp``'s ``take``.
    Dask gets them as they are: a Dask array as an index can give a result of
    the wrong shape (``x[i]`` of shape (2,) for an ``i`` of shape (1,), dask
    2026.8) and costs a graph for numbers the host already has."""
    return index if array_api_compat.is_dask_namespace(xp) else xp.asarray(index)


def to_floats(*values) -> tuple[float, ...]:
    """Python floats of scalar raw values (0-d arrays, NumPy scalars, floats), all
    read at once: Dask computes them in one ``dask.compute``, sharing the work
    they have in common, where one ``float()`` each would compute each alone."""
    if any(map(array_api_compat.is_dask_array, values)):
        import dask
        values = dask.compute(*values, optimize_graph=_OPTIMIZE_GRAPH)
    return tuple(map(float, values))


# Dask's graph optimization fuses a chain of tasks into one named after the chain
# and leaves the first task's key as an alias to it; a task read alone in one
# computation and fused with its only consumer in the next is then one key with
# two definitions, which a distributed scheduler that still remembers the first
# warns about ("Detected different `run_spec`", and may deadlock: dask/dask#9888).
# Over the steps of an iteration (a solve reading x @ w for its value and gradient,
# then within an H-product) that is the rule, so the computations here skip it: a
# key always names the same task. The schedulers still run only what the requested
# keys need; what is lost is the fusion, a few tasks per chunk.
_OPTIMIZE_GRAPH = False


def persist(*arrays) -> tuple:
    """``arrays``, with the Dask arrays among them computed and kept in memory (on
    the cluster, with a distributed client) so that later graphs start from their
    chunks instead of growing with every step of an iteration. Other arrays are
    returned as they are."""
    if not any(map(array_api_compat.is_dask_array, arrays)):
        return arrays
    import dask
    return dask.persist(*arrays, optimize_graph=_OPTIMIZE_GRAPH)


def fresh_keys(a):
    """``a``, as a Dask array whose graph keys no other computation shares
    (``dask.graph_manipulation.clone``); any other array as it is.

    Dask names a task by what it computes, and its optimizer names a fused
    chain of tasks after the chain's last one, so two computations that start
    from the same array (two solves from one ``x0``) make tasks of the same
    name that fuse different work. A distributed scheduler that still holds
    the first warns "Detected different `run_spec` for key ..." and may
    deadlock (dask/dask#9888); keys of its own keep an iteration apart."""
    if not array_api_compat.is_dask_array(a):
        return a
    from dask.graph_manipulation import clone
    return clone(a)


def whole_along(a, axes):
    """``a`` in one chunk along ``axes`` where it is a Dask array (Dask transforms,
    as its FFTs, only along an axis of one chunk); any other array as it is."""
    if not array_api_compat.is_dask_array(a) or all(len(a.chunks[ax]) == 1 for ax in axes):
        return a
    return a.rechunk({ax % a.ndim: -1 for ax in axes})


def match_chunks(a, like):
    """``a`` rechunked as ``like`` when both are Dask arrays (a leading axis that
    ``like`` lacks, a batch of directions, stays in one chunk); else ``a`` itself."""
    if not (array_api_compat.is_dask_array(a) and array_api_compat.is_dask_array(like)):
        return a
    chunks = tuple((n,) for n in a.shape[:a.ndim - like.ndim]) + like.chunks
    return a if a.chunks == chunks else a.rechunk(chunks)

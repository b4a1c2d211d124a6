"""The array backends every rule test runs on, and conversions to and from them.

Test data is drawn as NumPy float64 arrays (and int/bool index arrays) and
converted here, so one hypothesis strategy serves every backend and dtype:
``numpy``, ``array_api_strict`` (proves that no NumPy-only call leaks into a
rule), ``cupy`` (only with a GPU; its tests carry the ``gpu`` marker) and
``dask`` (lazy, chunked: every axis of length 3 or more in two chunks of
unequal size; its tests carry the ``dask`` marker and are skipped without
Dask; ``dask-rows`` splits the first axis only).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest


@dataclass(frozen=True)
class Backend:
    name: str
    module: str

    @property
    def xp(self):
        return importlib.import_module(self.module)

    def dtype(self, name: str):
        """The backend's dtype called ``name`` ("float32", "int64", ...)."""
        return getattr(self.xp, name)

    def asarray(self, a: Any, dtype: str | None = None) -> Any:
        """Convert a NumPy array (float arrays to ``dtype`` if given)."""
        a = np.asarray(a)
        if dtype is not None and a.dtype.kind == "f":
            a = a.astype(dtype)
        if self.name == "numpy":
            return a
        if self.name in ("dask", "dask-rows"):
            import dask.array as da
            rows = self.name == "dask-rows"
            chunks = uneven_chunks(a.shape[:1]) + a.shape[1:] if rows else uneven_chunks(a.shape)
            return da.from_array(a, chunks=chunks)
        return self.xp.asarray(a)

    def convert(self, tree: Any, dtype: str) -> Any:
        """Every NumPy array inside ``tree`` (tuples, lists, dicts) converted."""
        if isinstance(tree, (np.ndarray, np.generic)) and not isinstance(tree, float):
            return self.asarray(tree, dtype)
        if isinstance(tree, tuple):
            return tuple(self.convert(t, dtype) for t in tree)
        if isinstance(tree, list):
            return [self.convert(t, dtype) for t in tree]
        if isinstance(tree, dict):
            return {k: self.convert(v, dtype) for k, v in tree.items()}
        if isinstance(tree, np.float64):  # a drawn float64 scalar: a 0-d array here
            return self.asarray(np.asarray(tree), dtype)
        return tree

    def __repr__(self) -> str:
        return self.name

    @property
    def param(self):
        """This backend as an entry of :data:`BACKENDS` or :data:`DASK_PARAM` (with its marks)."""
        return next(p for p in [*BACKENDS, DASK_PARAM] if p.values[0] is self)

    def _repr_pretty_(self, printer, cycle):
        printer.text(self.name)


def to_numpy(x: Any) -> np.ndarray:
    """A NumPy copy of a raw array, float or ``reverse.Tensor`` from any backend (dtype kept)."""
    from reverse import Tensor

    if isinstance(x, Tensor):  # np.asarray(tensor) copies from the device implicitly: CuPy refuses
        x = x.value
    if isinstance(x, (bool, int, float, np.ndarray, np.generic)):
        return np.asarray(x)
    if type(x).__module__.startswith("cupy"):
        return x.get()
    return np.asarray(np.from_dlpack(x)) if hasattr(x, "__dlpack__") else np.asarray(x)


def dtype_name(x: Any) -> str:
    """"float32", "float64", "bool", ... for an array of any backend or a Python scalar."""
    if isinstance(x, (bool, int, float)) and not isinstance(x, np.generic):
        return {bool: "bool", int: "int64", float: "float64"}[type(x)]
    return str(x.dtype).rsplit(".", 1)[-1]


def uneven_chunks(shape: tuple) -> tuple:
    """Two chunks of unequal sizes along every axis of length 3 or more (so that
    no chunk size divides the shape), one chunk along shorter axes."""
    return tuple((s // 2 + 1, s - s // 2 - 1) if s >= 3 else (s,) for s in shape)


def _dask_available() -> bool:
    try:
        import dask.array  # noqa: F401  (dask without its [array] extra lacks NumPy glue)
        return True
    except ImportError:
        return False


def _gpu_available() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no driver, no device: all mean "skip"
        return False


NUMPY = Backend("numpy", "numpy")
STRICT = Backend("array_api_strict", "array_api_strict")
CUPY = Backend("cupy", "cupy")
DASK = Backend("dask", "array_api_compat.dask.array")
# Dask arrays split along their first axis only, as data are in rows: what a compiled
# program runs chunk by chunk (tests/dask/test_dask_compile_cases.py).
DASK_ROWS = Backend("dask-rows", "array_api_compat.dask.array")


def _empty_input(prep: Any) -> bool:
    return any(0 in np.shape(to_numpy(x)) for x in prep.xs)


# Case name -> (the draws Dask cannot do, why): those draws are left out of the Dask runs.
DASK_CANNOT_DRAW = {
    "ravel": (_empty_input, "the case calls x.ravel(), Dask's own method, which fails on an "
                            "empty array (dask 2026.8: reduce() of empty iterable)"),
}
# Case name -> why Dask cannot do it at all: expected to fail on Dask (strict, so
# that a Dask that can is noticed).
DASK_CANNOT = {
    "polyfit": "least squares by svd(compute_uv=False), which Dask's svd lacks "
               "(test_linalg.py's DASK_CANNOT has the linear algebra)",
}

# The parametrization every backend-generic test uses.
BACKENDS = [
    pytest.param(NUMPY, id="numpy"),
    pytest.param(STRICT, id="strict"),
    pytest.param(CUPY, id="cupy", marks=[
        pytest.mark.gpu,
        pytest.mark.skipif(not _gpu_available(), reason="needs CuPy and an NVIDIA GPU")]),
]
# Not among them: each Dask operation builds a graph and each result is a
# computation, which made the backend-generic tests of tests/mixed 4 minutes
# longer. Dask runs the table and the transforms in tests/dask, with budgets
# of their own, and the tape's backend tests (tests/reverse/test_rev_backends.py).
DASK_PARAM = pytest.param(DASK, id="dask", marks=[
    pytest.mark.dask,
    pytest.mark.skipif(not _dask_available(), reason='needs Dask: pip install "dualad[dask]"')])
DTYPES = ["float64", "float32"]

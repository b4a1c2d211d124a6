"""The array backends every rule test runs on, and conversions to and from them.

Test data is drawn as NumPy float64 arrays (and int/bool index arrays) and
converted here, so one hypothesis strategy serves every backend and dtype:
``numpy``, ``array_api_strict`` (proves that no NumPy-only call leaks into a
rule) and ``cupy`` (only with a GPU; its tests carry the ``gpu`` marker).
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
        """This backend as an entry of :data:`BACKENDS` (with its marks)."""
        return next(p for p in BACKENDS if p.values[0] is self)

    def _repr_pretty_(self, printer, cycle):
        printer.text(self.name)


def to_numpy(x: Any) -> np.ndarray:
    """A NumPy copy of a raw array or float from any backend (dtype kept)."""
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


def _gpu_available() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no driver, no device: all mean "skip"
        return False


NUMPY = Backend("numpy", "numpy")
STRICT = Backend("array_api_strict", "array_api_strict")
CUPY = Backend("cupy", "cupy")

# The parametrization every backend-generic test uses.
BACKENDS = [
    pytest.param(NUMPY, id="numpy"),
    pytest.param(STRICT, id="strict"),
    pytest.param(CUPY, id="cupy", marks=[
        pytest.mark.gpu,
        pytest.mark.skipif(not _gpu_available(), reason="needs CuPy and an NVIDIA GPU")]),
]
DTYPES = ["float64", "float32"]

"""Arrays in golden JSON files, written by a peer (JAX, PyTorch) and read back here.

``encode`` keeps an array's shape and dtype beside its numbers (real and
imaginary parts apart, as JSON has no complex numbers; Python's float repr
round-trips them exactly); ``decode`` gives the array back, and ``assert_close``
checks an answer of ours against a recorded one: shape, dtype and values
(``assert_allclose`` alone would broadcast a (3, 3) result against a (3,)
reference).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def encode(a: Any) -> dict:
    """A JSON-able record of the array ``a`` (anything ``np.asarray`` takes)."""
    a = np.asarray(a)
    out = {"shape": list(a.shape), "dtype": str(a.dtype), "re": np.real(a).ravel().tolist()}
    if np.iscomplexobj(a):
        out["im"] = np.imag(a).ravel().tolist()
    return out


def decode(entry: dict) -> np.ndarray:
    """The array ``encode`` recorded."""
    values = np.asarray(entry["re"], dtype=float)
    if "im" in entry:
        values = values + 1j * np.asarray(entry["im"], dtype=float)
    return values.astype(entry["dtype"]).reshape(entry["shape"])


def assert_close(got: Any, entry: dict, rtol: float, atol: float = 0.0, err_msg: str = "") -> None:
    """``got`` has the recorded shape and dtype, and its values are within tolerance."""
    got, want = np.asarray(got), decode(entry)
    assert (got.shape, str(got.dtype)) == (want.shape, str(want.dtype)), \
        f"{err_msg}: shape {got.shape} and dtype {got.dtype}, recorded {want.shape} and {want.dtype}"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=err_msg)

"""Core bugs the table-driven tests found, until the core is fixed.

Each bug has a deterministic reproduction in ``tests/dualad/test_regressions.py``
marked ``xfail(strict=True)``: when the bug is fixed that test passes, the
strict xfail turns it into a failure, and the bug's entries here must be
deleted, which re-enables the property tests below.

The property tests (hypothesis draws) of the (test, case, backend, dtype)
combinations a bug breaks are not run meanwhile (``xfail(run=False)``): a
random draw need not hit the bug, so a strict xfail would be flaky, and a
failing property test spends most of its time shrinking. ``None`` matches
any value.
"""

from __future__ import annotations

import pytest

# Keys are (test, case, backend, dtype), None matching anything; values are the reason.
# Reproduction: tests/dualad/test_vmap.py::test_composites_that_compute_on_raw_values.
_RAW_UNDER_VMAP = ("vmap: the composite computes a mask or an index from raw(x), which strips the "
                   "batch axis into the data, so the result has the wrong shape or fails")
KNOWN_BUGS: dict[tuple, str] = {
    ("vmap", 'clip', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'pad', None, None): _RAW_UNDER_VMAP,
    ("vmap", "pad_modes", None, None): _RAW_UNDER_VMAP,
    ("vmap", 'astype_to_int', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'unbroadcast', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'put_along_axis', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'fill_diagonal', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'put', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'place', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'sort', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'sort_flat', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'partition', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'msort', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'sort_complex', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'select', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'interp', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'choose', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'extract', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'piecewise', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'trim_zeros', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'frexp', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'median', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'quantile', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'percentile', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'nansum', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'nanmean', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'nanmax', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'nanmin', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'nanvar', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'nanstd', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'nanprod', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'nancumsum', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'nancumprod', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'nanpercentile', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'nanquantile', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'nanmedian', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'fmax', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'fmin', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'nan_to_num', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'sinc', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'copysign', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'heaviside', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'put_along_axis_functional', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'unwrap', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'polyfit', None, None): _RAW_UNDER_VMAP,
    ("vmap", 'roots', None, None): _RAW_UNDER_VMAP,
}


def known_bug_marks(test: str, case: str, backend: str, dtype: str) -> list:
    for (t, c, b, d), reason in KNOWN_BUGS.items():
        if all(k is None or k == v for k, v in ((t, test), (c, case), (b, backend), (d, dtype))):
            return [pytest.mark.xfail(run=False, reason=reason)]
    return []

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

BUGS = {
    "strict-indexing": "core bug: on array_api_strict, getitem with integer arrays next to slices "
                       "(diagonal, batched tangents, x[idx, 1:]) or a mask after a batch slice, and "
                       "its transpose (scatter) with None, two integer arrays or empty indices; see "
                       "test_regressions.py",
}

# Cases whose draws can hit the bug on array_api_strict.
_STRICT_INDEXING = ("getitem_basic", "getitem_operator", "getitem_int_arrays", "getitem_mixed",
                    "getitem_mask", "index_add", "take", "repeat", "diagonal", "trace")

KNOWN_BUGS: dict[tuple, str] = {
    (None, case, "array_api_strict", None): BUGS["strict-indexing"] for case in _STRICT_INDEXING}


def known_bug_marks(test: str, case: str, backend: str, dtype: str) -> list:
    for (t, c, b, d), reason in KNOWN_BUGS.items():
        if all(k is None or k == v for k, v in ((t, test), (c, case), (b, backend), (d, dtype))):
            return [pytest.mark.xfail(run=False, reason=reason)]
    return []

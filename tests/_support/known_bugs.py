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

# Empty: every bug the table found is fixed (its reproduction lives on in
# tests/dualad/test_regressions.py). Keys are (test, case, backend, dtype),
# None matching anything; values are the reason.
KNOWN_BUGS: dict[tuple, str] = {}


def known_bug_marks(test: str, case: str, backend: str, dtype: str) -> list:
    for (t, c, b, d), reason in KNOWN_BUGS.items():
        if all(k is None or k == v for k, v in ((t, test), (c, case), (b, backend), (d, dtype))):
            return [pytest.mark.xfail(run=False, reason=reason)]
    return []

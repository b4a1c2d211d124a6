"""Python's cyclic garbage collector held off while a program is traced and optimized.

A trace makes a step object, its tuples and its values for every primitive the
function applies, and keeps them all until the program is built: hundreds of
thousands of live objects for a Python loop of a thousand iterations. Each
collection of the oldest generation walks every one of them, and the number of
such collections grows with the objects made, so the collector's time grows
faster than the trace (ADBench's LSTM objective, traced: 22% of the first call at
128 characters, 39% at 1,024; benchmarks/README.md, "Measurements behind the
code"). Nothing a trace makes is garbage before it ends, so holding collections
off loses nothing; the collector runs as before once the last trace in the process
ends, and not at all where the user turned it off.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from typing import Iterator

__all__ = ["collector_paused"]

_lock = threading.Lock()
_holders = 0          # traces running now, in every thread
_we_disabled = False  # whether the first of them turned the collector off


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Hold cyclic garbage collection off for the block (and any other thread's such
    block running at the same time); restore it as it was after the last one.

    Examples
    --------
    >>> import gc
    >>> with collector_paused():
    ...     gc.isenabled()
    False
    >>> gc.isenabled()
    True
    """
    global _holders, _we_disabled
    with _lock:
        if _holders == 0:
            _we_disabled = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _we_disabled:
                gc.enable()

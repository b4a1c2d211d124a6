"""The random streams of a checkpointed block: saved when it first runs, replayed
for each recomputation.

PyTorch's ``checkpoint`` (``preserve_rng_state=True``, its default) stashes
the CPU and device RNG states at the forward call, sets them again before the
recomputation and, through ``torch.random.fork_rng``, puts back afterwards
the states the recomputation found; so dropout gets the same mask twice and
the user's later draws are those without checkpointing. This module does the
same for the streams a NumPy or CuPy block draws from:

- NumPy's global state (``np.random.rand``, ``np.random.normal``, ...), always;
- each ``numpy.random.Generator``, ``RandomState`` and ``BitGenerator`` that
  :func:`dualad.interpreter.reach` finds (among the block's arguments, in its
  closure, the globals it names, the attributes of objects those hold): its
  bit generator's state;
- CuPy's global ``RandomState`` of the current device, when CuPy is imported
  and that state exists (as PyTorch only stashes a device state that is
  initialized). cuRAND gives no way to read it, so the block runs on a
  stand-in ``RandomState`` seeded from one draw of the user's (a device
  sync), both times; the user's stream then moves by that draw instead of by
  the block's draws.

Not covered: Python's ``random`` module, generators the search does not
reach, CuPy ``Generator``s and ``RandomState`` instances (a warning says so
when one is found), and a CuPy global state first created inside the block.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, Callable

import numpy as np

__all__ = ["RandomStreams", "is_random_stream"]

_NUMPY_STREAMS = (np.random.Generator, np.random.RandomState, np.random.BitGenerator)


def is_random_stream(obj: Any) -> bool:
    """A generator object whose state a block's draws may change."""
    return isinstance(obj, _NUMPY_STREAMS) or type(obj).__module__.startswith("cupy.random")


class _Saved:
    """A stream whose state can be read and written.

    One the first run did not draw from is left alone afterwards: reading and
    writing the state of MT19937 (NumPy's global stream) costs some thirty
    times PCG64's (benchmarks/README.md), so a block that draws nothing from
    it pays one read before and one after its forward run, and nothing in
    backward.
    """

    __slots__ = ("get", "set", "state")

    def __init__(self, get: Callable[[], Any], set: Callable[[Any], None]):
        self.get, self.set, self.state = get, set, None

    def first_run(self) -> None:
        self.state = self.get()

    def after_first_run(self) -> None:
        if _same_state(self.state, self.get()):
            self.state = None  # not drawn from: nothing to replay

    def replay(self):
        if self.state is None:
            return None
        now = self.get()
        self.set(self.state)
        return now

    def undo(self, now) -> None:
        if now is not None:
            self.set(now)


def _same_state(a, b) -> bool:
    """Equality of two states as ``get_state`` or ``bit_generator.state`` give them."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_state(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same_state(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    return a == b


def _saved(stream) -> _Saved:
    if isinstance(stream, np.random.RandomState):  # get_state also keeps its cached Gaussian
        return _Saved(stream.get_state, stream.set_state)
    bits = stream.bit_generator if isinstance(stream, np.random.Generator) else stream
    return _Saved(lambda: bits.state, lambda state: setattr(bits, "state", state))


class _CupyGlobal:
    """CuPy's global ``RandomState``, run on a stand-in seeded from one draw of it."""

    def __init__(self, cupy):
        self.random, self.seed, self.method, self.user = cupy.random, None, None, None

    def _stand_in(self):
        return self.random.RandomState(self.seed, method=self.method)

    def first_run(self) -> None:
        self.user = self.random.get_random_state()
        self.seed, self.method = int(self.user.randint(0, 2 ** 62)), self.user.method
        self.random.set_random_state(self._stand_in())

    def after_first_run(self) -> None:
        self.random.set_random_state(self.user)
        self.user = None

    def replay(self):
        user = self.random.get_random_state()
        self.random.set_random_state(self._stand_in())
        return user

    def undo(self, user) -> None:
        self.random.set_random_state(user)


def _cupy_global() -> _CupyGlobal | None:
    """CuPy's global stream, if CuPy is imported and it exists on the current device."""
    cupy = sys.modules.get("cupy")
    if cupy is None:
        return None
    try:
        states = getattr(getattr(cupy.random, "_generator", None), "_random_states", None)
        if states is not None and cupy.cuda.get_device_id() not in states:
            return None  # never drawn from: do not create it (nor a CUDA context)
    except Exception:  # CuPy without a usable device has no stream to keep
        return None
    return _CupyGlobal(cupy)


class RandomStreams:
    """The streams one checkpointed block may draw from.

    Wrap every run of the block in ``enter``/``exit``: the first run saves
    each stream's state and moves the streams on as a run without checkpoint
    would; each later run (a recomputation) starts from the saved states and
    leaves the streams as it found them.
    """

    def __init__(self, found: list):
        streams: list = [_Saved(np.random.get_state, np.random.set_state)]
        for g in found:
            if isinstance(g, _NUMPY_STREAMS):
                streams.append(_saved(g))
            else:
                warnings.warn(
                    f"checkpoint cannot save the state of a {type(g).__module__}.{type(g).__name__} "
                    "the block uses, so its recomputation draws other numbers than the forward "
                    "pass; draw them outside the block and pass them in, or use the global "
                    "cupy.random functions", stacklevel=3)
        cupy = _cupy_global()
        if cupy is not None:
            streams.append(cupy)
        self.streams, self.started = streams, False

    def enter(self) -> list | None:
        """Call before each run of the block; give what it returns to :meth:`exit`."""
        if self.started:
            return [s.replay() for s in self.streams]
        self.started = True
        for s in self.streams:
            s.first_run()
        return None

    def exit(self, tokens: list | None) -> None:
        """Call after each run of the block, also when it raised."""
        if tokens is None:
            for s in reversed(self.streams):
                s.after_first_run()
        else:
            for s, token in zip(reversed(self.streams), reversed(tokens)):
                s.undo(token)

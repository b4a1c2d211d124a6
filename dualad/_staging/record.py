"""Tracing a call: ``record`` runs a function once with its array and Generator
arguments traced, and says whether the program it gives can stand for the call
(what spoils it: a draw from a generator that is not an argument, an unseeded
``default_rng``, a value type returned, another library's arrays it could not trace).
"""

from __future__ import annotations

import contextlib
import functools
import random
import threading
from typing import Any, Callable

import array_api_compat
import numpy as np

from dualad._base.backend import dask_host_reads, to_host
from dualad._base.core import Value, transform_level
from dualad._base.taint import TracedArray
from dualad._base.tree import flatten
from dualad._program.ir import aval
from dualad._program.program import Program
from dualad._staging.random import RecordingGenerator
from dualad._staging.reads import reads
from dualad._staging.trace import Trace, Tracer

__all__ = ["STREAMS", "elsewhere", "is_input", "record", "traceable"]

STREAMS = (np.random.Generator, np.random.RandomState, np.random.BitGenerator)


def record(f: Callable, args: tuple, kwargs: dict, inputs: list) -> tuple:
    """Run ``f(*args, **kwargs)`` once with ``inputs`` (its array and Generator leaves, in
    order) traced: ``(program, the eager result, None)``, or ``(None, result, why)`` where
    the trace was spoiled (see :mod:`dualad._staging.trace`); ``result`` is then None where what
    the trace computed is not the call's result (``f`` returned a value type built around
    traced values, or ran on NumPy copies of another library's arrays) or where ``f`` was
    not run (a Generator argument it also closes over), so ``f`` must run (again). The
    program is not optimized."""
    streams = _random_streams(f)
    passed = [x for x in inputs if isinstance(x, np.random.Generator)]
    if any(s is g for s in streams for g in passed):
        return None, None, ("a Generator passed as an argument is also closed over (or a global), "
                            "and its draws through that name would be baked into a program as "
                            "constants")
    before = [_stream_state(s) for s in streams]
    foreign = next((x for x in inputs if elsewhere(x)), None)  # another library's array
    with transform_level() as level:
        trace = Trace(level, foreign)
        tracers = [RecordingGenerator(x, trace.new_slot(x), trace) if isinstance(x, np.random.Generator)
                   else trace.input(to_host(x) if elsewhere(x) else x) for x in inputs]
        it = iter(tracers)
        leaves, rebuild_args = flatten((args, kwargs))
        new_leaves = [next(it) if is_input(leaf) else leaf for leaf in leaves]
        targs, tkwargs = rebuild_args(new_leaves)
        try:
            with _unseeded_generators_spoil(trace), dask_host_reads(functools.partial(
                    trace.spoil, "the numbers of a Dask array were read on the host (a value-dependent "
                    "shape or index: nonzero, boolean indexing, unique, ...), which a program would "
                    "bake in")):
                result = f(*targs, **tkwargs)
        except Exception as err:
            if foreign is not None:
                return None, None, (f"tracing it on NumPy copies of its {type(foreign).__module__} "
                                    f"arrays raised {type(err).__name__}: {err} (where it closes "
                                    "over arrays of theirs, a derivative's rule can meet them beside "
                                    "the trace's NumPy arrays: pass them as arguments)")
            if any(map(array_api_compat.is_dask_array, inputs)):  # a rule's path that reads numbers
                return None, None, f"tracing it on its Dask arrays raised {type(err).__name__}: {err}"
            raise
        finally:
            trace.active = False
        out_leaves, rebuild_out = flatten(result, reused=True)
    if any(_stream_state(s) != b for s, b in zip(streams, before)):
        trace.spoiled = ("it drew random numbers (NumPy's global generator, Python's random, or "
                         "a Generator it closes over or reaches as a global): the draws would be "
                         "baked into a program as constants; pass the numpy.random.Generator as an "
                         "argument instead, and its draws become steps of the program")
    outputs, values = [], []
    rerun = foreign is not None
    trace.active = True  # what it returned can still spoil the program
    for leaf in out_leaves:
        if type(leaf) is Tracer and leaf.trace is trace:
            outputs.append(leaf.slot)
            values.append(leaf.val)
        elif isinstance(leaf, Value):
            trace.spoil(f"it returned a {type(leaf).__name__} (a value of a transform inside "
                        "or around it), which a program cannot hold")
            rerun = True
        else:
            if type(leaf) is TracedArray:
                trace.spoil("it returned numbers computed from a traced value outside "
                            "dualad's primitives")
                leaf = leaf.view(np.ndarray)
            outputs.append(trace.const(leaf))
            values.append(leaf)
    trace.active = False
    eager_result = None if rerun else rebuild_out(values)
    if trace.spoiled is not None:
        return None, eager_result, trace.spoiled
    program = Program(len(inputs), trace.consts, trace.steps, outputs, rebuild_out,
                      {slot: aval(v) for slot, v in enumerate(trace.values)})
    return program, eager_result, None


def is_input(leaf: Any) -> bool:
    """Whether a call's leaf is an input of its program (an array or a Generator)."""
    return (traceable(leaf) or isinstance(leaf, np.random.Generator) or elsewhere(leaf)
            or array_api_compat.is_dask_array(leaf))


def traceable(leaf: Any) -> bool:
    """Whether a trace takes ``leaf`` as an input of its program (a NumPy array or
    scalar); other leaves are static, or make the call run eagerly.

    Examples
    --------
    >>> import numpy as np
    >>> traceable(np.ones(2)), traceable(np.float32(1.0)), traceable(1.0)
    (True, True, False)
    """
    return type(leaf) is np.ndarray or isinstance(leaf, np.generic)


# -- random streams ------------------------------------------------------------------------
def elsewhere(x: Any) -> bool:
    """Whether ``x`` is an array of a library other than NumPy (traced on a NumPy copy):
    one with the array API's namespace, or CuPy's, which has none of its own."""
    return ((hasattr(x, "__array_namespace__") or array_api_compat.is_cupy_array(x))
            and not isinstance(x, (np.ndarray, np.generic)))


def _random_streams(f: Callable) -> list:
    """NumPy's global generator, Python's ``random``, and the generators ``f`` reads
    through a name (see :func:`~dualad._staging.reads.reads`): a draw from any of them
    during the trace changes its state."""
    return [None, random] + [value for _, _, value in reads(f) if isinstance(value, STREAMS)]


@contextlib.contextmanager
def _unseeded_generators_spoil(trace: Trace):
    """While ``f`` is traced in this thread, ``np.random.default_rng()`` without a seed
    spoils the trace: eager calls of ``f`` would each draw new numbers from such a
    Generator, a program the same ones. (A seeded one draws the same numbers at every
    call, eager or not: its draws are constants rightly.)"""
    original, thread = np.random.default_rng, threading.get_ident()

    def default_rng(seed=None):
        if seed is None and threading.get_ident() == thread:
            trace.spoil("it made a Generator with np.random.default_rng() and no seed: each eager "
                        "call draws new numbers from it, a program would repeat the trace's; pass "
                        "the numpy.random.Generator as an argument, and its draws become steps")
        return original(seed)

    np.random.default_rng = default_rng
    try:
        yield
    finally:
        np.random.default_rng = original


def _stream_state(stream: Any) -> Any:
    """What a draw from ``stream`` (None: NumPy's global generator) changes.

    A RandomState's (the global one's too) is its key and position and the
    Gaussian it keeps for the next normal draw: a scalar ``np.random.normal()``
    that uses the kept one moves neither key nor position, and a program
    would bake its number in. ``get_state`` is read twice a trace, not per call.
    """
    if stream is random:
        return random.getstate()
    if stream is None or isinstance(stream, np.random.RandomState):
        _, key, pos, has_gauss, gauss = (np.random if stream is None else stream).get_state()
        return key.tobytes(), pos, has_gauss, gauss
    bits = stream.bit_generator if hasattr(stream, "bit_generator") else stream
    return repr(bits.state)

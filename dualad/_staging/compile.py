"""``compile``: trace a function once into a program of primitives, replay it many times.

A call is keyed by what a program depends on besides the arrays' numbers:
the pytree structure of the arguments, each array leaf's type, shape and
dtype, and the value of each other leaf (static: it must be hashable). The
first call at a key traces (the eager result is computed while recording);
later calls replay a program of that key. A key holds one program per path
through the guards met so far: a replay that misses a guard moves to the
program that took the other way there, or traces that path. The programs
of one function are bounded (least recently used dropped first).

A call runs ``f`` eagerly, without a program, when its arguments carry
derivatives of a transform (``Dual``, ``Tensor``, an outer compile's
tracer): the outer transform then sees every primitive and every construct
that acts on its values (``no_grad``, a custom ``Function``'s backward,
hooks), which a program traced on plain arrays did not record. It also runs
eagerly, with a warning the first time, where a program could be wrong: the
trace was spoiled (see :mod:`dualad._staging.trace`), ``f`` drew random numbers
from a generator that is not an argument (an argument's draws are steps:
:mod:`dualad._staging.random`), or the guards keep missing.
"""

from __future__ import annotations

import functools
import operator
import sys
import threading
import time
import warnings
from collections import OrderedDict
from typing import Any, Callable

import array_api_compat
import numpy as np

from dualad._base.checks import check_callable
from dualad._base.collection import collector_paused
from dualad._base.core import Value
from dualad._base.frames import ours_then_user
from dualad._base.tree import leaves_and_treedef
from dualad._program.executors import cupy as cupy_executor
from dualad._program.executors import numba as numba_executor
from dualad._program.executors.dask_graph import dask_program
from dualad._program.executors.loop_kernel import compile_in_background, kernel_loops
from dualad._program.executors.replay import replay, runner
from dualad._program.ir import GuardMiss
from dualad._program.passes.fusion import available as fusion_available
from dualad._program.passes.roll import roll_loops
from dualad._program.program import Program
from dualad._staging.choice import EAGER, Trial
from dualad._staging.pipeline import asked, for_executor, on_dask, optimize, prepare
from dualad._staging.reads import Bindings
from dualad._staging.record import STREAMS, elsewhere, record, traceable
from dualad._staging.retarget import difference, retarget

__all__ = ["Compiled", "compile", "compiled_on_repeat"]

_LAYOUT = operator.attrgetter("shape", "dtype")  # what an array argument keys besides its type
_STATIC = frozenset({int, float, bool, complex, str, bytes})  # leaves keyed by value


def compile(f: Callable, *, max_programs: int = 8, optimize: bool = True,
            fuse: bool | None = None, executor: str | None = None, measure: bool = True,
            roll: bool = True) -> "Compiled":
    """``f`` traced once into a program of primitives and replayed on later calls
    (JAX users know this as ``jit``: ``dualad.jit`` is this function).

    The first call at given argument shapes, dtypes and structure (and values
    of the non-array arguments, which are static) runs ``f`` once on traced
    values: each primitive it applies is recorded and computed, so that call
    returns the eager result. Later calls replay the program on the new
    arrays, calling each primitive's implementation, without running ``f``.
    Derivatives compose both ways: ``compile(reverse.grad(f))`` records the
    backward pass as primitives too, and ``reverse.grad(compile(f))`` or
    ``jvp(compile(f), ...)`` run ``f`` under the outer transform.

    Where ``f`` turns a traced value into Python control (``if x > 0``,
    ``float(x)``, ``int(n)``, ``x.item()``), the trace records a guard; a
    replay whose guard gives another outcome switches to the program of that
    branch, tracing it on first use, so a replay is never silently wrong.
    A ``numpy.random.Generator`` argument is an input of the program: each
    draw from it is a step that draws from the Generator of each call, so
    the stream moves as in eager evaluation. What a program cannot hold
    (draws from NumPy's global generator or a Generator closed over, draws
    whose size or parameters are traced, numbers read on the host for a
    value-dependent shape, NumPy functions without a rule, values of an
    outer transform closed over) makes ``f`` run eagerly at that key, with a
    warning saying why. Side effects of ``f`` (printing, appending to a
    list) happen when it is traced and in the calls that run it eagerly
    (among them those timed against replays: see ``measure``), not when it
    is replayed.

    What ``f`` reads through a name rather than an argument (a global, a
    variable it closes over, an attribute of a bound method's object) is a
    constant of the program, copied when it is traced: writing into such an
    array afterwards changes no replay, every step of the program reading
    the numbers of the trace (pass the array as an argument to have each
    call read its own). Rebinding such a name (``W = new_array``,
    ``scale = 3.0``) is seen: each call checks that every name still holds
    the object it held at the trace (a test of identity each), and traces
    anew where one does not, as ``torch.compile`` does where ``jax.jit``
    replays the old value. Draws that eager calls would make anew make ``f``
    run eagerly, with a warning: from NumPy's global generator, Python's
    ``random``, a Generator ``f`` reaches through a name, or one it makes with
    ``np.random.default_rng()`` and no seed (one made with a seed draws the
    same numbers at every call, so they are constants). Pass the Generator as
    an argument, and its draws become steps of the program. Calls from
    several threads share the programs; a trace runs in one thread at a time.

    Parameters
    ----------
    f : callable
        A function of arrays, pytrees of them, and static arguments. NumPy
        arrays are traced as they are; arrays of another library
        (array_api_strict, CuPy) are traced on NumPy copies and the program
        replays on their library, once its first replay has agreed with
        eager evaluation; an array of that library ``f`` closes over is
        copied to NumPy where the trace meets it (an operand or parameter
        of a primitive), and is a constant of the program on its device
        (a derivative's rule may still meet it beside NumPy's arrays, and
        ``f`` then runs eagerly, with a warning: pass such arrays as
        arguments).
        Dask arrays (arguments, or arrays ``f`` closes over) are traced as
        they are, and the program is split into a task before, one task per
        chunk of the data and a task after, and again
        per chunk and after for a value of each chunk read after a sum over
        them all (see :mod:`dualad._program.executors.dask_graph`): a call builds
        a graph of that many tasks, whatever the number of primitives, and
        each part runs on NumPy chunks with the executor below. Where the
        program does not split so (a guard, on any value; a primitive without
        a per-chunk rule), ``f`` runs eagerly, with a warning saying why.
    max_programs : int
        How many programs (keys and branches together) are kept; the least
        recently used is dropped first.
    optimize : bool
        Run the optimization passes on each program: exact algebraic
        simplification (``x * 1``, ``-(-x)``, a transpose of a transpose, ...:
        see :mod:`dualad._program.passes.simplify`), constant folding (of what a rewrite left
        with constant operands only: what does not depend on the inputs is
        already computed once, while tracing), common-subexpression
        elimination, then dead-code elimination. A memory plan then writes
        the results of elementwise steps into buffers kept between calls. (A
        program of float64 scalars or small arrays, optimized or not, replays
        unrolled as Python on floats where that is cheaper: see
        :mod:`dualad._program.executors.scalar`.)
    fuse : bool or None
        Fuse trees of elementwise steps (``+ - * /``, negation, squaring on
        float64 arrays of 262144 entries or more) into one numexpr kernel
        each, with the same numbers bit for bit (see
        :mod:`dualad._program.passes.fusion`). None: where numexpr is installed (``pip
        install "dualad[fast]"``); True without numexpr raises ImportError.
    executor : {None, "numpy", "numba", "cupy"}
        What replays a program. ``"numpy"``: a call per primitive (NumPy's,
        numexpr's where ``fuse``). ``"numba"``: the program's groups of
        elementwise steps, with the sums that consume them, each as one loop
        nest compiled by Numba (see :mod:`dualad._program.lowering` and
        :mod:`dualad._program.executors.numba`), the other steps as before.
        Its numbers are NumPy's (bit for bit where the operations are the
        same; a sum within ``2 (n - 1) eps sum|x|``, exp, sin and the like
        within 4 ulps). A kernel of fewer than 65,536 iterations checks
        that what it returns is finite, and where it is not the call is
        replayed by NumPy's calls, with NumPy's warnings (and, under
        ``np.errstate``, its errors); larger kernels give no floating-point
        warnings. Kernels
        are compiled at a program's first replay and kept on disk (under
        ``$DUALAD_CACHE_DIR``, else ``~/.cache/dualad``) for the next
        process. It needs Numba (``pip install "dualad[fast]"``:
        ImportError without it), and ``optimize``. ``"cupy"``: for CuPy
        arrays, the same groups each as one CUDA kernel (see
        :mod:`dualad._program.executors.cupy`: the same numbers, a sum
        within the same bound, exp, sin and the like from CUDA's math
        library), built by CuPy at a program's first replay, which is
        checked against eager evaluation as every CuPy program's is; NumPy
        arrays replay as with ``"numpy"``. It needs CuPy (``pip install
        "dualad[gpu]"``: ImportError without it), and ``optimize``. None:
        for CuPy arrays, CUDA kernels where CuPy is installed; for NumPy
        arrays, Numba for an optimized program with a group that pays for its
        kernel (of many iterations, or of many operations on a few numbers),
        where Numba is installed and the program does not replay cheaper
        unrolled on Python floats; NumPy otherwise.
        ``stats["executor"]`` tells which replays the program traced last
        (``"dask"`` for a program split into tasks per chunk).
    measure : bool
        Choose how calls run by timing them, so that a compiled function is
        never slower than ``f`` itself (see :mod:`dualad._staging.choice`):
        the calls after a trace on NumPy arrays (the first at their shapes, or a
        branch traced while they are timed, whose program the calls then try
        first) take the program's replay (its first call untimed: code is
        generated, kernels are compiled),
        then, where the executor was chosen automatically and is Numba's, the
        same program replayed by NumPy's calls, then ``f`` run eagerly, each
        timed on two calls or more (up to ten, where calls are short); the
        fastest by its best time runs the calls after them (a runner-up within
        1.5 times its time is first timed with it again, three calls each, in
        turn: the first candidate's calls meet a process still warming up).
        ``stats["chosen"]`` says what was chosen and the times that chose it
        (``"eager: replays (numpy) 8.4 ms, eager calls 4.7 ms, ..."``); a
        call run eagerly by this choice counts in ``stats["eager"]``, without
        a warning. False: replay always, as ``executor`` says. Programs of
        other libraries' arrays (CuPy, Dask) are not timed.
    roll : bool
        Keep a body that the trace repeats trip after trip (a Python loop
        over characters, observations, time steps) once, as a loop in the
        program (see :mod:`dualad._program.passes.roll`): the passes, the
        generated code and the kernels then grow with the body, not with
        the trips. ``stats["loops"]`` says what was rolled, or why a
        repetition was not. Programs of NumPy arrays, where ``optimize``.
        A rolled loop replays trip by trip (NumPy's calls, or Python on
        floats for a body of a few numbers); with Numba, a loop of float64
        values whose steps Numba compiles is also written as one kernel
        (:mod:`dualad._program.executors.loop_kernel`): with
        ``executor="numba"`` it runs from the first replay, which compiles
        it; with ``executor=None`` and ``measure`` it compiles on a thread
        of its own while the calls replay NumPy's loop, untimed, and is
        then timed against NumPy's loop and ``f`` (``"replays (numba)"``
        in ``stats["chosen"]``).

    Returns
    -------
    Compiled
        Callable like ``f``; ``.program(*args)`` gives the program for those arguments.

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> @dualad.compile
    ... def f(x):
    ...     return np.sum(np.sin(x) ** 2) if x[0] > 0 else np.sum(x)
    >>> float(f(np.array([1.0, 2.0]))) == float(np.sum(np.sin([1.0, 2.0]) ** 2))
    True
    >>> float(f(np.array([-1.0, 2.0])))  # the guard on x[0] > 0 misses: the other branch is traced
    1.0
    >>> f.stats["traces"], f.stats["replays"]
    (2, 0)
    >>> float(f(np.array([-3.0, 2.0])))
    -1.0
    >>> f.stats["replays"]
    1
    """
    check_callable(f, "compile")
    if not isinstance(max_programs, int) or max_programs < 1:
        raise ValueError(f"compile: max_programs must be a positive int, got {max_programs!r}")
    if fuse not in (None, True, False):
        raise TypeError(f"compile: fuse must be True, False or None, got {fuse!r}")
    if fuse and not fusion_available():
        raise ImportError('compile: fuse=True needs numexpr: pip install "dualad[fast]" (or numexpr)')
    if executor not in (None, "numpy", "numba", "cupy"):
        raise ValueError(f'compile: executor must be None, "numpy", "numba" or "cupy", got {executor!r}')
    if executor in ("numba", "cupy") and not optimize:
        raise ValueError(f'compile: executor="{executor}" runs optimized programs: optimize=False asks for '
                         'the program as traced, which the NumPy executor replays')
    if executor == "numba" and not numba_executor.available():
        raise ImportError('compile: executor="numba" needs Numba: pip install "dualad[fast]" (or numba)')
    if executor == "cupy" and not cupy_executor.available():
        raise ImportError('compile: executor="cupy" needs CuPy: pip install "dualad[gpu]" (or cupy)')
    if measure not in (True, False):
        raise TypeError(f"compile: measure must be True or False, got {measure!r}")
    if type(roll) is not bool:
        raise TypeError(f"compile: roll must be True or False, got {roll!r}")
    return Compiled(f, max_programs, optimize, fusion_available() if fuse is None else fuse, executor,
                    measure, roll)


class Compiled:
    """A function compiled by :func:`compile`: call it as the function itself.

    ``stats`` counts ``traces``, ``replays``, ``misses`` (guards that gave
    another outcome) and ``eager`` calls; ``stats["executor"]`` is the
    executor of the program traced last (``"numpy"``, ``"numba"`` or
    ``"cupy"``; None before the first), or ``"eager"`` where its calls were
    measured faster run eagerly; ``stats["chosen"]`` says what the timing of
    calls chose last, and why (None before a choice: see ``measure``).

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> f = dualad.compile(lambda x, n: x ** n)
    >>> f(np.array([2.0]), 3), f(np.array([3.0]), 3)
    (array([8.]), array([27.]))
    >>> f.stats["traces"], f.stats["replays"], f.stats["executor"]
    (1, 1, 'numpy')
    """

    def __init__(self, f: Callable, max_programs: int, optimize: bool, fuse: bool = False,
                 executor: str | None = None, measure: bool = True, roll: bool = True):
        self.f = f
        self.roll = roll
        self.max_programs = max_programs
        self.optimize, self.fuse, self.executor, self.measure = optimize, fuse, executor, measure
        self._programs: OrderedDict = OrderedDict()  # (key, outcomes) -> Program, LRU order
        self._by_key: dict = {}                      # key -> list of outcome tuples
        self._hot: dict = {}                         # argument types -> (cache key, program, replay): _warm
        self._eager: dict = {}                       # key -> why it runs eagerly
        self._trials: dict = {}                      # key -> its Trial, while its calls are timed
        self._faster_eagerly: set = set()            # keys whose calls were measured faster eagerly
        self._retraces: dict = {}                    # key -> traces after a missed guard
        self._warned: set = set()
        self._bindings: Bindings | None = None       # the names f read, as at the traces kept
        self._rebinds = 0                            # traces thrown away because a name changed
        self._gave_up: str | None = None             # why every call runs eagerly, if it does
        # Tracing and every change of the cache hold the lock; a replay does not: it looks
        # programs up with .get and retries under the lock where another thread evicted one.
        self._lock = threading.RLock()
        self.stats = {"traces": 0, "replays": 0, "misses": 0, "eager": 0, "executor": None, "chosen": None,
                      "loops": None}
        functools.update_wrapper(self, f, updated=())

    def __repr__(self) -> str:
        return f"<dualad.compile of {getattr(self.f, '__qualname__', self.f)!r}>"

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)

    # -- calling -----------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # the hot path: positional NumPy arrays and scalars of a signature replayed before,
        # the names f reads unchanged (see _warm); any other call takes _call's full way
        bindings = self._bindings
        if not kwargs and bindings is not None and bindings.hold():
            try:
                hot = self._hot.get(tuple(map(type, args)))
            except TypeError:  # a type that cannot be hashed: the full way says what it is
                hot = None
            if type(hot) is dict:  # arrays among the arguments: by their shapes and dtypes too
                hot = hot.get(tuple(map(_LAYOUT, args)))
            if hot is not None:
                cached, program, run = hot
                out = run(*args)
                if program is None:  # f itself, measured faster (see _choose)
                    self.stats["eager"] += 1
                    return out
                if type(out) is not GuardMiss:
                    return self._replayed(cached, program, out)
                return self._missed(cached[0], program, out, args, kwargs, list(args))
        return self._call(args, kwargs)

    def _call(self, args: tuple, kwargs: dict) -> Any:
        """A call by the full way: its key built, the names ``f`` reads checked, the program
        found (traced where there is none), replayed."""
        key, inputs, why = self._key(args, kwargs)
        if why is None:
            why = self._stale()
        if why is not None:
            return self._run_eagerly(key, why, args, kwargs)
        if key in self._eager:
            return self._run_eagerly(key, self._eager[key], args, kwargs)
        if key in self._faster_eagerly:
            if not kwargs and all(map(traceable, args)):
                self._warm(key, args)
            return self._run_eagerly(key, "", args, kwargs)
        program = self._first(key)
        if program is None:
            return self._trace(key, args, kwargs, inputs)
        trial = self._trials.get(key)
        if trial is not None and trial.program is program:  # (not where max_programs dropped it)
            if trial.waiting():  # kernels compiling: replays meanwhile, untimed, off the hot path
                out = replay(program, inputs)
                if type(out) is GuardMiss:
                    return self._missed(key, program, out, args, kwargs, inputs)
                return self._replayed((key, program.outcomes), program, out)
            return self._timed(key, trial, program, inputs, args, kwargs)
        out = replay(program, inputs)
        if type(out) is GuardMiss:
            return self._missed(key, program, out, args, kwargs, inputs)
        if not kwargs and all(map(traceable, args)):
            self._warm(key, args)
        return self._replayed((key, program.outcomes), program, out)

    def _timed(self, key: Any, trial: Trial, program: Program, inputs: list, args: tuple,
               kwargs: dict) -> Any:
        """A call of ``key`` while its calls are timed (:mod:`dualad._staging.choice`):
        the candidate whose turn it is runs it; where that was the last timing, the
        fastest is kept."""
        with self._lock:
            if trial.chosen is not None or self._trials.get(key) is not trial:
                trial = None  # another thread's call ended the trial since this one read it
            else:
                name, candidate, timed = trial.next()
        if trial is None:
            return self._call(args, kwargs)  # the way chosen
        start = time.perf_counter()
        if name == EAGER:
            out = self._run_eagerly(key, "", args, kwargs)
        else:
            out = runner(candidate)(*inputs)
            if type(out) is GuardMiss:  # another branch: replayed or traced as any call, untimed
                return self._missed(key, program, out, args, kwargs, inputs)
            out = self._replayed((key, program.outcomes), program, out)
        seconds = time.perf_counter() - start
        if timed:
            with self._lock:
                trial.timed(name, seconds)
                if trial.chosen is not None and self._trials.get(key) is trial:
                    self._choose(key, trial, program)
        return out

    def _choose(self, key: Any, trial: Trial, program: Program) -> None:
        """Keep what ``trial`` chose for the calls of ``key`` (``program``: the program
        timed)."""
        del self._trials[key]
        self.stats["executor"], self.stats["chosen"] = trial.chosen, trial.why
        if trial.chosen == EAGER:  # its programs go: no call of the key replays them (the LSTM
            self._faster_eagerly.add(key)  # objective's at 1,024 characters held 90,000 objects)
            for outcomes in self._by_key.pop(key, ()):
                self._programs.pop((key, outcomes), None)
            return
        kept = trial.candidates[trial.chosen]
        if kept is not program and self._programs.get((key, program.outcomes)) is program:
            self._programs[(key, program.outcomes)] = kept

    def _replayed(self, cached: tuple, program: Program, out: list) -> Any:
        """The result of a replay of ``program`` (kept under ``cached``, its key and outcomes)
        that gave the output leaves ``out``, counted and the program made the most recently
        used."""
        self.stats["replays"] += 1
        try:
            # the very key object the program is stored under, where the hot path has it:
            # moving the last entry to the end then costs no hash
            self._programs.move_to_end(cached)
        except KeyError:  # another thread evicted it meanwhile
            pass
        return program.rebuild(out)

    def _missed(self, key: Any, program: Program, out: GuardMiss, args: tuple, kwargs: dict,
                inputs: list) -> Any:
        """The result of a call whose replay of ``program`` missed a guard (``out``): the
        program of the other outcome there replayed, or traced where there is none."""
        while True:
            self.stats["misses"] += 1
            prefix = program.outcomes[:out.index] + (out.outcome,)
            nxt = next((o for o in list(self._by_key.get(key, ())) if o[:out.index + 1] == prefix), None)
            program = None if nxt is None else self._programs.get((key, nxt))
            if program is None:
                return self._trace(key, args, kwargs, inputs, missed=True)
            out = replay(program, inputs)
            if type(out) is not GuardMiss:
                return self._replayed((key, nxt), program, out)

    def _warm(self, key: Any, args: tuple) -> None:
        """Let calls like ``args`` (positional NumPy arrays and scalars, of key ``key``) take
        the hot path of :meth:`__call__` to the program they try first (or to ``f``, where
        calls of the key were measured faster run eagerly).

        The hot table is a shortcut of the full way, never more: it is filled
        under the lock from the programs as they are, and emptied wherever they
        change (a trace, names rebound), so a call finds there what the full
        way would find, less the check of the names ``f`` reads, which the hot
        path makes itself. It is keyed by the arguments' types, which tell a
        NumPy number's dtype, then, where arrays are among them, by their
        shapes and dtypes. It costs about half of the full way
        (benchmarks/README.md, "Measurements behind the code").
        """
        with self._lock:
            program = None if key in self._eager else self._first(key)
            if key in self._faster_eagerly:
                hot = (None, None, self.f)
            elif not isinstance(program, Program):  # none, or a program of tasks (Dask's)
                return
            else:
                # the key object it is stored under; a copy of the items, which another
                # thread's replay may reorder meanwhile (iterating them then raises)
                cached = next(k for k, p in list(self._programs.items()) if p is program)
                hot = (cached, program, runner(program))
            types = tuple(map(type, args))
            if all(isinstance(a, (np.number, np.bool_)) for a in args):
                self._hot[types] = hot
                return
            layouts = self._hot.get(types)
            if type(layouts) is not dict:
                layouts = self._hot[types] = {}
            layouts[tuple(map(_LAYOUT, args))] = hot

    def _first(self, key: Any) -> Program | None:
        """The program of ``key`` to try first, or None."""
        outcomes = self._by_key.get(key)
        if not outcomes:
            return None
        try:
            return self._programs.get((key, outcomes[0]))
        except IndexError:  # another thread emptied the list meanwhile
            return None

    def _stale(self) -> str | None:
        """Drop the programs where a name ``f`` reads was rebound since they were traced
        (:meth:`_rebound`); then why every call runs eagerly, if it does."""
        bindings = self._bindings
        if bindings is not None and not bindings.hold():
            self._rebound(bindings)
        return self._gave_up

    def _rebound(self, bindings: Bindings) -> None:
        """A name ``f`` reads holds another object than at its traces: the programs hold the
        old one, so they go (as ``torch.compile`` recompiles); where names keep changing, call
        after call, ``f`` runs eagerly from then on."""
        with self._lock:
            if self._bindings is not bindings:  # another thread saw it first
                return
            changed = ", ".join(bindings.changed())
            self._programs.clear()
            self._hot.clear()
            self._by_key.clear()
            self._retraces.clear()
            self._trials.clear()
            self._faster_eagerly.clear()
            self._bindings = None
            self._rebinds += 1
            if self._rebinds > self.max_programs:
                self._gave_up = (f"names it reads ({changed}) were rebound on more than max_programs="
                                 f"{self.max_programs} calls, and each rebinding makes the programs "
                                 "stale; pass what changes as an argument")

    def program(self, *args: Any, **kwargs: Any) -> Program:
        """The program a call with these arguments replays (traced now if there is none).

        Where the function has guards, finding the program replays it (a
        Generator argument then moves as in a call); where none is traced
        yet, this is a call.

        Examples
        --------
        >>> import numpy as np
        >>> import dualad
        >>> f = dualad.compile(lambda x: np.exp(x) + 1.0)
        >>> print(f.program(np.ones(2)))
        def program(x0):
            t1 = np.exp(x0)
            t3 = np.add(t1, 1.0)
            return t3
        """
        key, inputs, why = self._key(args, kwargs)
        with self._lock:
            return self._program_locked(key, inputs, why, args, kwargs)

    def _program_locked(self, key: Any, inputs: list, why: str | None, args: tuple, kwargs: dict) -> Program:
        why = why or self._stale()
        if why is None and key not in self._eager:
            outcomes = self._by_key.get(key)
            if outcomes:
                program = self._programs[(key, outcomes[0])]
                if not program.guards or type(replay(program, inputs)) is not GuardMiss:
                    return program
                for o in outcomes:
                    candidate = self._programs[(key, o)]
                    if type(replay(candidate, inputs)) is not GuardMiss:
                        return candidate
            self._trace(key, args, kwargs, inputs)
            if key not in self._eager:
                for o in self._by_key[key]:
                    candidate = self._programs[(key, o)]
                    if type(replay(candidate, inputs)) is not GuardMiss:
                        return candidate
        raise ValueError(f"compile: no program for these arguments: "
                         f"{why or self._eager.get(key, 'the guards keep missing')}")

    # -- keys ----------------------------------------------------------------------
    def _key(self, args: tuple, kwargs: dict) -> tuple:
        """``(key, array inputs, why not)``: why not is set when the call must run eagerly."""
        if not kwargs:  # the common call, NumPy arrays or scalars only: no pytree to flatten
            # a NumPy scalar by its dtype, which tells its type (not the other way round:
            # datetime64[D] and datetime64[s] are one type)
            parts = [(a.shape, a.dtype) if type(a) is np.ndarray else a.dtype
                     for a in args if type(a) is np.ndarray or isinstance(a, np.generic)]
            if len(parts) == len(args):
                return (None, tuple(parts)), list(args), None
        tree = (args, kwargs)
        leaves, structure = leaves_and_treedef(tree)
        parts, inputs = [], []
        for i, leaf in enumerate(leaves):
            kind = type(leaf)
            if kind is np.ndarray or isinstance(leaf, np.generic):
                parts.append((kind, leaf.shape, leaf.dtype))
                inputs.append(leaf)
                continue
            if kind in _STATIC:  # (before the tests below, which cost a microsecond a leaf)
                parts.append((kind, leaf))
                continue
            if isinstance(leaf, Value):
                return None, None, ""  # a transform's value: f runs under it (no warning)
            if isinstance(leaf, np.random.Generator):  # an input: its draws are steps
                parts.append((np.random.Generator,))
                inputs.append(leaf)
                continue
            if isinstance(leaf, STREAMS):
                return None, None, (f"a {kind.__name__} is an argument: its draws would be baked "
                                    "into a program as constants; pass a numpy.random.Generator "
                                    "instead, whose draws a program records")
            if array_api_compat.is_dask_array(leaf):  # traced as it is: its chunks key the program
                parts.append((kind, leaf.shape, leaf.dtype, leaf.chunks))
                inputs.append(leaf)
                continue
            if elsewhere(leaf):
                parts.append((kind, leaf.shape, leaf.dtype, str(array_api_compat.device(leaf))))
                inputs.append(leaf)
                continue
            if hasattr(leaf, "__cuda_array_interface__"):
                return None, None, (f"a {kind.__module__}.{kind.__name__} argument: a GPU array "
                                    "without the array API's namespace, which compile cannot trace")
            try:
                hash(leaf)
            except TypeError:
                raise TypeError(
                    f"compile: argument leaf {i} is a {kind.__name__}, which is neither an array "
                    "nor hashable; non-array arguments are static (their values key the cache of "
                    "programs), so they must be hashable: pass it as a NumPy array, a tuple, or "
                    "close over it") from None
            parts.append((kind, leaf))
        try:
            hash(structure)
        except TypeError:
            structure = repr(structure)
        libraries = {type(x) for x in inputs if elsewhere(x)}
        if len(libraries) > 1 or (libraries and any(isinstance(x, (np.ndarray, np.generic)) for x in inputs)):
            return None, None, "its arguments are arrays of more than one library"
        return (structure, tuple(parts)), inputs, None

    # -- tracing -----------------------------------------------------------------
    def _trace(self, key: Any, args: tuple, kwargs: dict, inputs: list, missed: bool = False) -> Any:
        with self._lock:  # one trace at a time, and the cache changes with it
            self._hot.clear()  # before it changes: see _warm
            return self._trace_locked(key, args, kwargs, inputs, missed)

    def _trace_locked(self, key: Any, args: tuple, kwargs: dict, inputs: list, missed: bool) -> Any:
        self.stats["traces"] += 1
        if missed:
            n = self._retraces[key] = self._retraces.get(key, 0) + 1
            if n > self.max_programs:
                why = (f"its guards missed on {n} calls in a row of new values (a float(x) or "
                       "x.item() that takes a new value each call is such a guard), more than "
                       f"max_programs={self.max_programs} programs can hold")
                self._eager[key] = why
                return self._run_eagerly(key, why, args, kwargs)
        foreign = next((x for x in inputs if elsewhere(x)), None)
        with collector_paused():  # (see dualad/_base/collection.py)
            program, result, why = record(self.f, args, kwargs, inputs)
            dask = program is not None and on_dask(inputs, program)
            if program is not None and not dask:
                program, executor, candidates, ready = self._made_ready(program, foreign)
        if program is None:
            self._eager[key] = why
            if result is None:  # what the trace computed is not this call's result
                return self._run_eagerly(key, why, args, kwargs)
            self._warn(key, why)
            return result
        if dask:
            return self._chunk(key, program, inputs, result)
        self.stats["executor"] = executor
        if foreign is not None:
            return self._retarget(key, program, foreign, args, kwargs, inputs)
        self._add(key, program)
        # a branch traced while the key's calls are timed goes first (_add), so the calls
        # the trial gets replay it: the trial starts again with it
        if self.measure and (not missed or key in self._trials):
            self._trials[key] = Trial([(executor, program), *candidates, (EAGER, None)], ready)
        return result

    def _made_ready(self, program: Program, foreign: Any) -> tuple:
        """``(program, its executor, the other candidates its calls are timed against, what
        says when they can be timed or None)``: ``program`` as traced, optimized and made
        ready for its executor (see :mod:`dualad._staging.pipeline`; ``foreign``: an
        argument of another library, or None)."""
        if not self.optimize:
            return program, "numpy", [], None
        if self.roll and foreign is None:
            program, self.stats["loops"] = roll_loops(program, self._made_ready_body)
        optimized = optimize(program, fuse=False)
        numpy_replay = ("numpy", lambda: for_executor(optimized, "numpy", self.fuse)[0])
        kernels = self._loop_kernels(optimized, foreign)
        if kernels is not None:  # rolled loops as Numba kernels
            if self.executor == "numba":
                return kernels, "numba", [], None
            return kernels, "numba", [numpy_replay], compile_in_background(kernels)
        # numexpr's kernels read NumPy's arrays only: another library's programs are not fused
        fuse = self.fuse and foreign is None
        program, executor = for_executor(optimized, asked(self.executor, foreign), fuse)
        if executor == "numba" and self.executor is None:  # chosen for it: measured against NumPy's
            return program, executor, [numpy_replay], None
        return program, executor, [], None

    def _loop_kernels(self, optimized: Program, foreign: Any) -> Program | None:
        """``optimized`` with its rolled loops (and the stretches of small steps between them)
        as Numba kernels (see :mod:`dualad._program.executors.loop_kernel`), the rest made
        ready for its executor, where they are asked for (``executor="numba"``) or may be
        measured against the NumPy replay (compiled meanwhile in the background); else None."""
        if foreign is not None or self.executor not in (None, "numba") or not numba_executor.available():
            return None
        if self.executor is None and not self.measure:
            return None
        kernels = kernel_loops(optimized)
        return None if kernels is None else for_executor(kernels, self.executor, self.fuse)[0]

    def _made_ready_body(self, body: Program) -> Program:
        """A rolled loop's body, optimized and made ready for NumPy's calls (a kernel per
        trip would cost a kernel call per trip: a body of a few numbers loses there)."""
        return for_executor(optimize(body, fuse=False), "numpy", self.fuse)[0]

    def _chunk(self, key: Any, program: Program, inputs: list, result: Any) -> Any:
        """Keep ``program`` (traced on Dask arrays) as a task before, one per chunk and
        one after (:mod:`dualad._program.executors.dask_graph`), where it splits so, and
        return its replay; else the result of the trace (a Dask graph, built eagerly).

        The trace's own graph is not returned where the program splits: its keys are
        those of the program's constants, which each replay's graph holds too in
        another form, and a distributed scheduler that saw both warns "Detected
        different run_spec" (dask/dask#9888)."""
        ready = functools.partial(prepare, optimized=self.optimize, executor=self.executor, fuse=self.fuse)
        split = dask_program(optimize(program, fuse=False) if self.optimize else program, inputs, ready)
        if isinstance(split, str):
            self._eager[key] = why = f"its Dask arrays do not split into one task per chunk: {split}"
            self._warn(key, why)
            return result
        self.stats["executor"] = "dask"
        self._add(key, split)
        return split.rebuild(split.replay(inputs))

    def _retarget(self, key: Any, program: Program, like: Any, args: tuple, kwargs: dict,
                  inputs: list) -> Any:
        """Keep ``program`` (traced on NumPy copies) retargeted to the library of ``like``
        if its replay on ``inputs`` agrees with eager evaluation; the eager result."""
        program = retarget(program, array_api_compat.array_namespace(like), array_api_compat.device(like))
        want = self.f(*args, **kwargs)
        try:
            out = replay(program, inputs)
            why = ("a guard gave another outcome" if type(out) is GuardMiss
                   else difference(program.rebuild(out), want))
        except Exception as err:  # a primitive the library cannot run as NumPy did
            why = f"{type(err).__name__}: {err}"
        if why is None:
            self._add(key, program)
        else:
            self._eager[key] = why = (f"the program traced on NumPy copies of its "
                                      f"{type(like).__module__} arrays, replayed on them, differs "
                                      f"from eager evaluation ({why})")
            self._warn(key, why)
        return want

    def _add(self, key: Any, program: Program) -> None:
        if self._bindings is None:
            self._bindings = Bindings(self.f)
        outcomes = self._by_key.setdefault(key, [])
        if program.outcomes not in outcomes:
            outcomes.insert(0, program.outcomes)
        self._programs[(key, program.outcomes)] = program
        self._programs.move_to_end((key, program.outcomes))
        while len(self._programs) > self.max_programs:
            (old_key, old_outcomes), _ = self._programs.popitem(last=False)
            self._by_key[old_key].remove(old_outcomes)

    def _run_eagerly(self, key: Any, why: str, args: tuple, kwargs: dict) -> Any:
        self.stats["eager"] += 1
        if why:
            self._warn(key, why)
        return self.f(*args, **kwargs)

    def _warn(self, key: Any, why: str) -> None:
        if why in self._warned:
            return
        self._warned.add(why)
        name = getattr(self.f, "__qualname__", repr(self.f))
        ours = ours_then_user(sys._getframe())[0]  # the warning points at the user's call
        warnings.warn(f"dualad.compile({name}) runs eagerly (no program) at these argument shapes: "
                      f"{why}", RuntimeWarning, stacklevel=len(ours) + 1)


def compiled_on_repeat(f: Callable, first: Callable | None = None) -> Callable:
    """``f`` run eagerly at its first call (or ``first``, an eager form of it that is
    cheaper untraced) and by :func:`compile` from its second: a trace (several times a
    call) pays only where calls repeat, as the evaluations of a sparse Jacobian or
    Hessian at an optimizer's iterates do.

    Examples
    --------
    >>> import numpy as np
    >>> from dualad._staging.compile import compiled_on_repeat
    >>> f = compiled_on_repeat(lambda x: np.sin(x) * 2.0)
    >>> f(np.zeros(2)), f(np.zeros(2)), f.compiled.stats["traces"]
    (array([0., 0.]), array([0., 0.]), 1)
    """
    def call(*args: Any) -> Any:
        if call.compiled is None:
            call.compiled = compile(f)
            return (f if first is None else first)(*args)
        return call.compiled(*args)
    call.compiled = None
    return call

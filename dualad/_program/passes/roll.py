"""Rolling loops: a trace that repeats one body keeps it once, as a :class:`~dualad._program.loop.Loop`.

A Python loop traces into its body repeated trip after trip: ADBench's LSTM objective
over 1,024 characters is 70,000 steps of one 69-step body. Every pass, code generator
and kernel compiler after the trace then works in time proportional to the trips.
:func:`roll_loops` finds such repetition and keeps the body once:

- **Finding it.** Each step gets a token (its primitive, namespace, parameter names and
  the types, shapes and dtypes it reads and writes); a stretch of tokens that repeats
  with period ``p`` for at least :data:`MIN_TRIPS` trips, saving at least
  :data:`MIN_SAVED` steps, is a candidate, the one covering most steps first, then the
  stretches before and after it in turn. Guards and draws have tokens of their own and
  end a stretch.
- **Checking it.** Each input of each body step must read alike at every trip: a value
  of the same trip, a value of the previous trip (carried: the first trip reads its
  initial value from before the loop), one value from before the loop (fixed), or one
  value per trip from before it (sliced: the rows ``sequence[t]`` of a loop over ``t``).
  A step that reads only values from before the loop moves before it: once where every
  trip computes the same (loop-invariant code; what reads a later trip's copy after the
  loop, a reverse sweep, then reads the first's), at each trip where its parameters change
  (``getitem`` of row ``t``) or it computes from constants (folded then). A step of the
  body whose parameters change (the scatter of row ``t``'s cotangent) takes each trip's
  as an input (:class:`~dualad._program.loop.PerTrip`). Anything else (a value of three
  trips back) keeps the stretch unrolled, and the reason is reported.
- **Keeping it.** The body becomes a program of its own (made ready by ``prepare``: the
  optimization passes and an executor, at the size of one trip), and the stretch one
  step whose outputs are the values of given trips read after the loop.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from dualad._base.backend import NUMPY_XP
from dualad._program.executors.replay import runner
from dualad._program.ir import Eqn, Guard, inline
from dualad._program.ir import reading as reading_step
from dualad._program.loop import Loop, PerTrip
from dualad._program.program import Program

__all__ = ["MIN_SAVED", "MIN_TRIPS", "roll_loops"]

MIN_TRIPS = 4     # trips below which a repetition stays unrolled
MIN_SAVED = 512   # steps a rolled loop must save: a short program gains nothing from it
_PYTHON_FLOAT, _FLOAT64 = (float, (), float), (np.float64, (), np.dtype(np.float64))
_CANDIDATES = 24  # periods tried per stretch of the program (the most frequent gaps)
_RAREST, _LAGS = 6, 16  # the tokens whose gaps to their next few occurrences are tried too


def roll_loops(program: Program, prepare: Callable | None = None) -> tuple:
    """``(program with its repeated bodies rolled into loops, what was done)``: a sentence
    for ``stats`` saying which loops were rolled, or why a repetition was not (None where
    the program repeats no body of enough trips).

    ``prepare`` makes each body ready to run (None: as traced).

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> def f(x):
    ...     for _ in range(200):
    ...         x = np.tanh(x) * 0.5 + np.sin(x)
    ...     return x
    >>> p = dualad.compile(f, optimize=False).program(np.zeros(3))
    >>> rolled, said = roll_loops(p)
    >>> len(p.steps), len(rolled.steps), said
    (800, 1, 'rolled 1 loop: 200 trips of a 4-step body')
    """
    if len(program.steps) < MIN_SAVED + MIN_TRIPS:  # too short to save enough
        return program, None
    tokens = _tokens(program)
    runs: list = []
    _find(tokens, 0, len(tokens), runs)
    if not runs:
        return program, None
    readers = program.last_readers()
    steps, loops, reasons, done = [], [], [], 0
    made_consts: dict = {}  # constants a loop's first trip reads as the others' values (_rolled)
    same: dict = {}  # a later trip's copy of a loop-invariant value -> the first trip's (_rolled)
    for start, period, trips in sorted(runs):
        program, readers = _renamed(program, readers, same, done)
        # as found; without its first trip (which may read a constant where the others read
        # the last trip's value); two trips to a body (a value of two trips back)
        tries = [(start, period, trips), (start + period, period, trips - 1),
                 (start, 2 * period, trips // 2), (start + period, 2 * period, (trips - 1) // 2)]
        made, why = None, None
        for begin, length, count in tries:
            if count >= MIN_TRIPS:
                made = _rolled(program, begin, length, count, readers, prepare, made_consts, same)
                if not isinstance(made, str):
                    break
                why = why or made  # the reason of the stretch as found
        if made is None or isinstance(made, str):
            reasons.append(f"{trips} trips of a {period}-step body stay unrolled: {why}")
            continue
        steps += program.steps[done:begin] + made
        done = begin + length * count
        loops.append(f"{count} trips of a {length}-step body")
    program, readers = _renamed(program, readers, same, done)
    steps += program.steps[done:]
    said = f"rolled {len(loops)} loop{'s' * (len(loops) != 1)}: {', '.join(loops)}" if loops else ""
    said = "; ".join(filter(None, [said, *reasons]))
    if not loops:
        return program, said
    if not made_consts:
        return program.with_steps(steps), said
    return program.with_steps(steps, consts={**program.consts, **made_consts},
                              avals={**program.avals, **dict.fromkeys(made_consts, _FLOAT64)}), said


def _renamed(program: Program, readers: dict, same: dict, start: int) -> tuple:
    """``(program, its last readers)`` with the steps from ``start`` on reading the first
    trip's copy of a loop-invariant value where they read another trip's (``same``, which
    :func:`_rolled` fills and this empties): the reverse sweep reading each forward trip's
    ``w[0]`` then reads one value, not a row of a stack of copies per trip."""
    if not same:
        return program, readers
    program = program.with_steps(program.steps[:start] + [reading_step(step, same)
                                                           for step in program.steps[start:]])
    same.clear()
    return program, program.last_readers()


# -- finding repetition ---------------------------------------------------------------
def _tokens(program: Program) -> np.ndarray:
    """One integer per step, equal where two steps may be the same step of two trips."""
    # aval -> a number, so that a step's key hashes numbers; a Python float (a constant: the
    # 0.0 a sum starts from) is a float64 number, as the trips after the first carry it
    kinds: dict = {_PYTHON_FLOAT: 0, _FLOAT64: 0}
    kind = {s: kinds.setdefault(a, len(kinds)) for s, a in program.avals.items()}.get
    ids, tokens = {}, []
    for n, step in enumerate(program.steps):
        if type(step) is Guard or step.prim.effect:
            key = ("unique", n)
        else:
            key = (step.prim, id(step.xp), tuple(step.params), *map(kind, step.ins), None,
                   *map(kind, step.outs))
        tokens.append(ids.setdefault(key, len(ids)))
    return np.asarray(tokens, dtype=np.int64)


def _find(tokens: np.ndarray, lo: int, hi: int, runs: list) -> None:
    """Add to ``runs`` the ``(start, period, trips)`` of the repetitions in ``tokens[lo:hi]``,
    the one that covers most steps first, then those before and after it."""
    best = _best_run(tokens[lo:hi])
    if best is None:
        return
    start, period, trips = best
    runs.append((lo + start, period, trips))
    _find(tokens, lo, lo + start, runs)
    _find(tokens, lo + start + period * trips, hi, runs)


def _best_run(tokens: np.ndarray) -> tuple | None:
    """``(start, period, trips)`` of the repetition covering most of ``tokens``, or None."""
    n = len(tokens)
    if n < MIN_SAVED:
        return None
    best, best_covered = None, 0
    for period in _periods(tokens):
        if period * MIN_TRIPS > n:
            continue
        equal = np.concatenate(([False], tokens[:-period] == tokens[period:], [False]))
        edges = np.flatnonzero(equal[1:] != equal[:-1])
        for first, end in zip(edges[::2], edges[1::2]):
            trips = (end - first + period) // period
            covered = trips * period
            if trips >= MIN_TRIPS and covered - period >= MIN_SAVED and (
                    covered > best_covered or (covered == best_covered and period < best[1])):
                best, best_covered = (int(first), period, int(trips)), covered
    return best


def _periods(tokens: np.ndarray) -> list:
    """The periods worth trying: the most frequent gaps between a token's occurrences and
    the next, and between the rarest tokens' occurrences and their next few (where every
    step of a body occurs many times in it, only a few apart)."""
    order = np.argsort(tokens, kind="stable")
    ranked = tokens[order]
    gaps = [(order[1:] - order[:-1])[ranked[1:] == ranked[:-1]]]
    values, counts = np.unique(tokens, return_counts=True)
    repeated = counts >= MIN_TRIPS
    values, counts = values[repeated], counts[repeated]
    for token in values[np.argsort(counts, kind="stable")][:_RAREST]:
        at = np.flatnonzero(tokens == token)
        gaps += [at[lag:] - at[:-lag] for lag in range(1, min(_LAGS, len(at) - 1) + 1)]
    counts = np.bincount(np.concatenate(gaps))
    counts[0] = 0
    return [int(p) for p in np.argsort(counts)[::-1][:_CANDIDATES] if counts[p] >= MIN_TRIPS - 1]


# -- checking and keeping it ----------------------------------------------------------
def _same(a: Any, b: Any) -> bool:
    """Whether two steps' parameters are the same (of the same types: 1 and 1.0 differ)."""
    if a is b or not (a or b):
        return True
    try:
        if not a == b:
            return False
    except (TypeError, ValueError):  # arrays among them: not known to be the same
        return False
    return all(type(a[k]) is type(b[k]) for k in a)


def _rolled(program: Program, start: int, period: int, trips: int, readers: dict,
            prepare: Callable | None, made_consts: dict, same: dict) -> list | str:
    """The steps that stand for ``program.steps[start:start + period * trips]`` (the steps
    moved before the loop, then the loop), or why there are none. A carried value whose
    first is a Python float constant (the 0.0 a sum starts from) and the others float64
    numbers starts from that constant as a float64 number, added to ``made_consts``; a
    later trip's copy of a value moved before the loop once that the program reads after
    it is added to ``same``, with the first trip's copy."""
    steps, consts = program.steps, program.consts
    end = start + period * trips
    trip_steps = [steps[start + k * period:start + (k + 1) * period] for k in range(trips)]
    body_steps = trip_steps[0]
    made_at = {s: (k, j, o) for k, trip in enumerate(trip_steps)  # slot -> (trip, position, output)
               for j, step in enumerate(trip) for o, s in enumerate(step.outs)}

    # where each step of the body goes (see _placed), and what each of its inputs reads;
    # a step moved before the loop can let others move (one that reads its value at the
    # next trip), so this is repeated until no more move
    inputs = _inputs(trip_steps, consts, made_at)
    if isinstance(inputs, str):
        return inputs
    changes = [bool(step.params) and any(not _same(step.params, trip[j].params) for trip in trip_steps[1:])
               for j, step in enumerate(body_steps)]
    # a step whose later trips' copies the program returns stays in the body: renamed to the
    # first's (_renamed), two outputs would be one array, which the caller may write into
    returned = set(program.outputs)
    pinned = [any(s in returned for trip in trip_steps[1:] for s in trip[j].outs) for j in range(period)]
    place, folds = ["body"] * period, [False] * period
    while True:
        placed = _placement(inputs, changes, pinned, place, folds)
        if placed[0] == place:
            break
        place, folds = placed[0], placed[1]
    place, folds, reading = placed
    once = [j for j, where in enumerate(place) if where == "once"]
    each = [j for j, where in enumerate(place) if where == "each"]
    kept = [j for j, where in enumerate(place) if where == "body"]
    if not kept:
        return "no step of the body reads a value of the loop"
    # the steps moved before it read the first trip's copy of a step moved once
    first_copy = {s: t for j in once for trip in trip_steps[1:]
                  for s, t in zip(trip[j].outs, body_steps[j].outs)}
    before = [body_steps[j] for j in once] + [reading_step(trip[j], first_copy)
                                              for trip in trip_steps for j in each]

    def reads_of(j: int, m: int) -> tuple:  # what each trip reads there, where it is now
        return tuple(first_copy.get(s, s) for s in (trip[j].ins[m] for trip in trip_steps))

    fixed: dict = {}       # slot before the loop -> body input
    carried: dict = {}     # (position, output, first value's slot) -> body input
    sliced: dict = {}      # the slots each trip reads -> body input
    sliced_at: dict = {}   # (position, input) -> the body input of what each trip reads there
    for j in kept:
        for m, s in enumerate(body_steps[j].ins):
            kind = reading[(j, m)]
            if kind[0] == "fixed" and s not in consts:
                fixed.setdefault(s, len(fixed))
            elif kind[0] == "carried":
                carried.setdefault(kind[1:], len(carried))
            elif kind[0] == "sliced":
                sliced_at[(j, m)] = sliced.setdefault(reads_of(j, m), len(sliced))

    # kept steps whose parameters change from trip to trip read each trip's as an input
    changing = [j for j in kept if changes[j]]

    # the body: inputs (fixed, carried, sliced, parameters), constants, then its steps' outputs
    n_inputs = len(fixed) + len(carried) + len(sliced) + len(changing)
    avals = program.avals
    body_avals = {}
    for s, i in fixed.items():
        body_avals[i] = avals.get(s)
    for (j, o, _), i in carried.items():
        body_avals[len(fixed) + i] = avals.get(body_steps[j].outs[o])
    for reads, i in sliced.items():
        body_avals[len(fixed) + len(carried) + i] = avals.get(reads[0])
    first_params = len(fixed) + len(carried) + len(sliced)
    for i in range(len(changing)):
        body_avals[first_params + i] = (dict, None, None)
    next_slot = n_inputs
    body_consts: dict = {}  # constant -> (body slot, value)
    slot_of: dict = {}  # (position, output) -> body slot
    eqns = []
    for j in kept:
        step = body_steps[j]
        ins = []
        for m, s in enumerate(step.ins):
            kind = reading[(j, m)]
            if kind[0] == "local":
                ins.append(slot_of[kind[1:]])
            elif kind[0] == "carried":
                ins.append(len(fixed) + carried[kind[1:]])
            elif kind[0] == "sliced":
                ins.append(len(fixed) + len(carried) + sliced_at[(j, m)])
            elif s in consts:
                value = consts[s]
                key = (type(value), repr(value)) if inline(value) else id(value)
                if key not in body_consts:
                    body_consts[key] = (next_slot, value)
                    body_avals[next_slot] = avals.get(s)
                    next_slot += 1
                ins.append(body_consts[key][0])
            else:
                ins.append(fixed[s])
        outs = []
        for o, s in enumerate(step.outs):
            slot_of[(j, o)] = next_slot
            body_avals[next_slot] = avals.get(s)
            outs.append(next_slot)
            next_slot += 1
        if j in changing:
            ins.insert(0, first_params + changing.index(j))
            eqns.append(Eqn(PerTrip(step.prim, step.xp is None), {}, tuple(ins), tuple(outs),
                            step.xp or NUMPY_XP))
        else:
            eqns.append(Eqn(step.prim, step.params, tuple(ins), tuple(outs), step.xp))

    # its outputs: the carried values' next ones, then the values read after the loop
    outputs, position_of = [], {}

    def output(j: int, o: int) -> int:
        if (j, o) not in position_of:
            position_of[(j, o)] = len(outputs)
            outputs.append(slot_of[(j, o)])
        return position_of[(j, o)]

    carried_from = [output(j, o) for (j, o, _) in carried]
    exported, outer_outs = [], []
    for k, trip in enumerate(trip_steps):
        for j in kept:
            for o, s in enumerate(trip[j].outs):
                if readers.get(s, -1) >= end:
                    exported.append((k, output(j, o)))
                    outer_outs.append(s)
    body = Program(n_inputs, {slot: value for slot, value in body_consts.values()}, eqns, outputs,
                   avals=body_avals)
    if prepare is not None:
        body = prepare(body)
    loop = Loop(body, trips, len(fixed), carried_from, len(sliced), exported,
                [[trip[j].params for trip in trip_steps] for j in changing], runner)
    firsts = []
    for j, o, first in carried:
        if type(consts.get(first)) is float and body_avals.get(slot_of[(j, o)]) == _FLOAT64:
            value = consts[first]
            first = 1 + max(made_consts) if made_consts else program.free_slot()
            made_consts[first] = np.float64(value)
        firsts.append(first)
    ins = [*fixed, *firsts,
           *(reads[k] for k in range(trips) for reads in sliced)]
    same.update((s, t) for s, t in first_copy.items() if readers.get(s, -1) >= end)
    return before + [Eqn(loop, {}, tuple(ins), tuple(outer_outs), body_steps[0].xp)]


def _inputs(trip_steps: list, consts: dict, made_at: dict) -> list | str:
    """For each step of the body, for each of its inputs: ``(what it reads as found (see
    :func:`_kind`), the slots each trip reads, whether one of them is neither a constant nor
    the loop's, the body positions of those that are the loop's)``; or why the stretch
    cannot roll."""
    found = []
    get = made_at.get
    for j, step in enumerate(trip_steps[0]):
        per_input = []
        ins_of = [trip[j].ins for trip in trip_steps]
        for m in range(len(step.ins)):
            reads = [ins[m] for ins in ins_of]
            where = list(map(get, reads))
            kind = _kind(reads, where, consts)
            if kind is None:
                return (f"step {j} of the body ({step.prim.name}) reads a value of two or more "
                        f"trips back, or one that changes its place from trip to trip")
            outside = any(w is None and s not in consts for s, w in zip(reads, where))
            positions = {w[1] for w in where if w is not None}
            per_input.append((kind, reads, outside, positions))
        found.append(per_input)
    return found


def _placement(inputs: list, changes: list, pinned: list, place: list, folds: list) -> tuple:
    """``(where each step of the body goes, whether it computes from constants only, what
    each of its inputs reads)`` (see :func:`_placed`), given where the steps whose values
    the next trip reads went last time."""
    new_place, new_folds, reading = [], [], {}
    for j, per_input in enumerate(inputs):
        kinds, constant = [], True
        folds_now = new_folds + folds[j:]
        for m, (kind, reads, outside, positions) in enumerate(per_input):
            source = (new_place[kind[1]] if kind[0] == "local" else
                      place[kind[1]] if kind[0] == "carried" else "body")
            if source != "body":  # a value moved before the loop: each trip reads its own, or one
                kind = ("fixed",) if source == "once" and kind[0] == "local" else ("sliced",)
            reading[(j, m)] = kind
            kinds.append((kind, reads))
            constant = constant and not outside and all(folds_now[p] for p in positions)
        where = _placed(kinds, changes[j], constant, pinned[j])
        new_place.append(where)
        new_folds.append(constant and where != "body")
    return new_place, new_folds, reading


def _placed(kinds: list, changes: bool, constant: bool, pinned: bool) -> str:
    """Where a step of the body goes: ``"body"`` where it reads a value the loop computes (each
    trip's parameters then come with the trip, where they change); else before the loop,
    ``"once"`` where every trip computes the same (loop-invariant code: what reads another
    trip's copy after the loop reads the first's, see :func:`_renamed`; not where the
    program returns another trip's copy: ``pinned``), ``"each"`` trip's copy where the
    parameters change or constants make it (constant folding then computes it), and
    ``"body"`` otherwise (a row of each trip's own)."""
    if any(kind[0] in ("local", "carried") for kind, _ in kinds):
        return "body"
    if all(kind[0] == "fixed" for kind, _ in kinds) and not changes and not pinned:
        return "once"
    return "each" if changes or constant else "body"


def _kind(reads: list, where: list, consts: dict) -> tuple | None:
    """What one input of a body step reads at every trip: ``("local", position, output)``,
    ``("carried", position, output, first value's slot)``, ``("fixed",)`` or
    ``("sliced",)``; None where it reads nothing of these."""
    first = where[0]
    if first is not None:
        at = first[1:]
        if first[0] != 0 or any(w is None or w[0] != k or (w[1], w[2]) != at for k, w in enumerate(where)):
            return None
        return ("local", *at)
    later = where[1:]
    if later and later[0] is not None:
        at = later[0][1:]
        if any(w is None or w[0] != k or (w[1], w[2]) != at for k, w in enumerate(later)):
            return None
        return ("carried", *at, reads[0])
    if any(w is not None for w in later):
        return None
    if all(s == reads[0] for s in reads) or _equal_numbers(reads, consts):
        return ("fixed",)
    return ("sliced",)


def _equal_numbers(reads: list, consts: dict) -> bool:
    """Whether each trip reads its own constant, all the same number or array (the trace
    writes a constant per use: ``x + 2.0`` in a loop reads a new ``2.0`` each trip, and a
    reverse sweep a new ``broadcast_to(-1 / n, shape)`` folded at each)."""
    if not all(s in consts for s in reads):
        return False
    first = consts[reads[0]]
    if inline(first):
        return all(type(consts[s]) is type(first) and repr(consts[s]) == repr(first) for s in reads)
    return isinstance(first, (np.ndarray, np.generic)) and all(_same_bits(consts[s], first) for s in reads)


def _same_bits(a: Any, b: Any) -> bool:
    """Whether ``a`` is a NumPy array or scalar of ``b``'s type, dtype, shape and bits."""
    return a is b or (type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape
                      and a.tobytes() == b.tobytes())

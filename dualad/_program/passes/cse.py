"""Common-subexpression elimination: a repeated primitive application is computed once."""

from __future__ import annotations

from typing import Any

from dualad._program.ir import Eqn, Guard, inline, reading

__all__ = ["eliminate_common_subexpressions"]


def eliminate_common_subexpressions(program: Any) -> Any:
    """``program`` with each repeated primitive application computed once.

    Two steps are the same when they apply the same primitive, with the same
    namespace and parameters, to the same slots (after earlier repeats are
    replaced) or to constant numbers of the same type and value (passes make
    a new slot for each number they write: ``2.0 * x`` twice may read two).
    The later one's outputs then read the earlier one's. Steps whose
    parameters cannot be compared by value (arrays among them) are kept, and
    so is any step whose output is an output of the program (two outputs the
    caller may write into must not share memory), and any step with an
    effect (two draws are different numbers). The repeats left unused are
    removed by :func:`~dualad._program.passes.dce.eliminate_dead_code`.

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> def f(x):
    ...     return np.sin(x) * np.sin(x)
    >>> p = dualad.compile(f, optimize=False).program(np.zeros(2))
    >>> [e.prim.name for e in p.eqns]
    ['sin', 'sin', 'multiply']
    >>> from dualad._program.passes.dce import eliminate_dead_code
    >>> [e.prim.name for e in eliminate_dead_code(eliminate_common_subexpressions(p)).eqns]
    ['sin', 'multiply']
    """
    returned = set(program.outputs)
    same: dict[int, int] = {}  # slot -> the slot that already holds its value
    seen: dict[Any, tuple] = {}  # step key -> the outputs of its first occurrence
    steps = []
    for step in program.steps:
        step = reading(step, same)
        if type(step) is Guard:
            steps.append(step)
            continue
        key = _step_key(step, program.consts)
        first = seen.get(key) if key is not None else None
        if first is not None and not returned.intersection(step.outs):
            same.update(zip(step.outs, first))
            continue
        if key is not None:
            seen[key] = step.outs
        steps.append(step)
    return program.with_steps(steps)


def _step_key(step: Eqn, consts: dict) -> Any:
    """What makes two steps the same computation, or None where the parameters
    cannot be hashed (arrays): such steps are kept."""
    if step.xp is None or step.prim.effect:  # two draws differ
        return None
    # a number by its type and repr: 1 != 1.0, and -0.0 and 0.0 (equal, and of one hash) differ
    ins = tuple((type(consts[s]), repr(consts[s])) if s in consts and inline(consts[s]) else s
                for s in step.ins)
    try:
        params = tuple(sorted((k, type(v), _hashable(v)) for k, v in step.params.items())) \
            if step.params else ()  # 1 != 1.0
        key = (step.prim, id(step.xp), ins, params)
        hash(key)
    except TypeError:
        return None
    return key


def _hashable(value: Any) -> Any:
    """``value`` with slices (unhashable before Python 3.12) as tuples, in tuples too."""
    if type(value) is slice:
        return (slice, value.start, value.stop, value.step)
    if type(value) is tuple:
        return tuple(_hashable(v) for v in value)
    return value

"""Partial evaluation: a program specialized to known values of some of its inputs.

Every step whose operands are all known (constants, the known inputs, or
results of such steps) is computed now; the steps left read those results
as constants, and the program takes only the other inputs. Guards on known
values are checked now: they hold (and are dropped), or the specialization
is refused with :class:`SpecializationRefused`. Guards on the other inputs
stay. With no known inputs this is constant folding.

This is how :func:`dualad.linearize` keeps only the tangent half of a
traced JVP: the primals are known, the tangents are not.
"""

from __future__ import annotations

from typing import Any

from dualad._program import Program, apply_step
from dualad._trace import GUARDS, Eqn, Guard

__all__ = ["SpecializationRefused", "partial_eval"]


class SpecializationRefused(ValueError):
    """Guard ``index`` of the program reads only known values, and they give ``outcome``,
    not the outcome the program was traced with: the program does not hold for them."""

    def __init__(self, index: int, outcome: Any, expected: Any):
        super().__init__(f"partial_eval: guard {index} gives {outcome!r} on the known inputs, "
                         f"where the program was traced with {expected!r}; it does not hold for them")
        self.index, self.outcome, self.expected = index, outcome, expected


def partial_eval(program: Program, known: dict[int, Any]) -> Program:
    """``program`` with the inputs ``known`` (input index -> value) fixed.

    The result takes the other inputs, in their order, and returns the same
    outputs: an output that depends only on known values is a constant of
    it. Known values are used, not copied: do not write into them later.

    Parameters
    ----------
    program : Program
        A traced program.
    known : dict
        Input index (0 .. ``program.n_inputs - 1``) -> its value.

    Returns
    -------
    Program

    Raises
    ------
    SpecializationRefused
        A guard that reads only known values gives another outcome.

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> p = dualad.compile(lambda x, t: np.cos(x) * t).program(np.zeros(2), np.zeros(2))
    >>> q = partial_eval(p, {0: np.array([0.0, np.pi])})
    >>> print(q)
    # c3: np.array([ 1., -1.])
    def program(x0):
        t4 = np.multiply(c3, x0)
        return t4
    >>> q.replay([np.array([2.0, 3.0])])
    [array([ 2., -3.])]
    """
    n = program.n_inputs
    if not isinstance(known, dict) or not all(type(i) is int and 0 <= i < n for i in known):
        raise ValueError(f"partial_eval: known must be a dict from input indices (0 .. {n - 1}) "
                         f"to values, got {known!r:.200}")
    unknown = [i for i in range(n) if i not in known]
    where = {i: j for j, i in enumerate(unknown)}
    m = len(unknown)

    def new(slot: int) -> int:  # unknown inputs first; every other slot shifted past them
        return where[slot] if slot in where else slot + m

    values = {**program.consts, **known}  # slot -> value, for every known slot
    steps, read, guard = [], set(program.outputs), 0  # read: the old slots the steps kept read
    for step in program.steps:
        if type(step) is Guard:
            if step.slot in values:
                outcome = GUARDS[step.kind](values[step.slot])
                if outcome != step.expected:
                    raise SpecializationRefused(guard, outcome, step.expected)
            else:
                steps.append(Guard(new(step.slot), step.kind, step.expected))
            guard += 1
        elif all(s in values for s in step.ins) and not getattr(step.prim, "effect", False):
            values.update(zip(step.outs, apply_step(step, [values[s] for s in step.ins])))
        else:
            read.update(step.ins)
            steps.append(Eqn(step.prim, step.params, tuple(map(new, step.ins)),
                             tuple(map(new, step.outs)), step.xp))
    consts = {new(s): values[s] for s in sorted(read) if s in values}
    avals = {new(s): a for s, a in program.avals.items() if s not in known}
    return Program(m, consts, steps, [new(s) for s in program.outputs], program.rebuild, avals)

"""Partial evaluation: a program split at known values of some of its inputs.

:func:`split` divides a program in two, once: the *known* half takes the
known inputs and computes every step whose operands are all known
(constants, the known inputs, or results of such steps), and checks the
guards on them; it returns the *residuals*, the known values the rest
reads. The *unknown* half takes the other inputs and the residuals and
computes the outputs. Each half is an ordinary :class:`Program` (generated
replay, memory plan, fusion), so new known values cost one replay of the
known half, not a walk over the steps. :func:`partial_eval` binds the
residuals of given values as constants of the unknown half; with no known
inputs this is constant folding.

This is how :func:`dualad.linearize` keeps only the tangent half of a
traced JVP: the primals are known, the tangents are not.
"""

from __future__ import annotations

from typing import Any, Iterable

from dualad._program.executors.replay import replay
from dualad._program.ir import Eqn, Guard, GuardMiss
from dualad._program.program import Program

__all__ = ["SpecializationRefused", "Staged", "partial_eval", "split"]


class SpecializationRefused(ValueError):
    """Guard ``index`` of the program reads only known values, and they give ``outcome``,
    not the outcome the program was traced with: the program does not hold for them."""

    def __init__(self, index: int, outcome: Any, expected: Any):
        super().__init__(f"partial_eval: guard {index} gives {outcome!r} on the known inputs, "
                         f"where the program was traced with {expected!r}; it does not hold for them")
        self.index, self.outcome, self.expected = index, outcome, expected


class Staged:
    """A program split by :func:`split`.

    Attributes
    ----------
    known : Program
        The known inputs (in the order of their indices) -> the residuals.
    unknown : Program
        The other inputs (in their order), then the residuals -> the outputs.
    guards : tuple of int
        For each guard of ``known``, its index among the whole program's guards.
    """

    __slots__ = ("known", "unknown", "guards")

    def __init__(self, known: Program, unknown: Program, guards: tuple):
        self.known, self.unknown, self.guards = known, unknown, guards

    def residuals(self, values: list) -> list:
        """The residuals at these known ``values``: one replay of ``known``.

        Raises :class:`SpecializationRefused` where a guard on them gives
        another outcome."""
        out = replay(self.known, values)
        if type(out) is GuardMiss:
            raise SpecializationRefused(self.guards[out.index], out.outcome,
                                        self.known.guards[out.index].expected)
        return out


def split(program: Program, known: Iterable[int]) -> Staged:
    """``program`` split into what its inputs ``known`` decide and the rest.

    A step is known when its operands are all known and it has no effect
    (a draw is a step of the unknown half: each replay draws anew); a guard
    is known when the value it reads is. The outputs of the unknown half
    are the program's: one that depends only on known values is a residual
    (an input of the unknown half, returned as it is).

    Parameters
    ----------
    program : Program
        A traced program.
    known : iterable of int
        Input indices (0 .. ``program.n_inputs - 1``) whose values the known half takes.

    Returns
    -------
    Staged

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> p = dualad.compile(lambda x, t: np.cos(x) * t).program(np.zeros(2), np.zeros(2))
    >>> staged = split(p, [0])
    >>> print(staged.known)
    def program(x0):
        t2 = np.cos(x0)
        return t2
    >>> print(staged.unknown)
    def program(x0, x1):
        t3 = np.multiply(x1, x0)
        return t3
    >>> replay(staged.unknown, [np.array([2.0, 3.0]), *staged.residuals([np.array([0.0, np.pi])])])
    [array([ 2., -3.])]
    """
    n = program.n_inputs
    known = sorted(set(known))
    consts = program.consts
    done = set(known) | set(consts)  # the known slots
    known_steps, unknown_steps, guards, g = [], [], [], 0
    read = set(program.outputs)  # slots the unknown half reads
    for step in program.steps:
        if type(step) is Guard:
            if step.slot in done:
                known_steps.append(step)
                guards.append(g)
            else:
                unknown_steps.append(step)
                read.add(step.slot)
            g += 1
        elif all(s in done for s in step.ins) and not step.prim.effect:
            known_steps.append(step)
            done.update(step.outs)
        else:
            unknown_steps.append(step)
            read.update(step.ins)
    residuals = sorted(s for s in read if s in done and s not in consts)
    at = {s: j for j, s in enumerate(known)}  # the known half: its inputs first, other slots kept
    unknown = [i for i in range(n) if i not in at]
    m, r = len(unknown), len(residuals)
    inner = {**{i: j for j, i in enumerate(unknown)}, **{s: m + j for j, s in enumerate(residuals)}}

    def k(s: int) -> int:
        return at.get(s, s)

    def u(s: int) -> int:  # the unknown half: its inputs, the residuals, then every other slot
        return inner[s] if s in inner else s - n + m + r

    return Staged(_renumbered(program, known_steps, residuals, len(known), k, None),
                  _renumbered(program, unknown_steps, program.outputs, m + r, u, program.rebuild),
                  tuple(guards))


def _renumbered(program: Program, steps: list, outputs: list, n_inputs: int, new: Any,
                rebuild: Any) -> Program:
    """The program of ``steps`` and ``outputs`` of ``program``, its slots renamed by ``new``;
    it keeps the constants its steps and outputs read."""
    out, read, made = [], set(outputs), set()
    for step in steps:
        if type(step) is Guard:
            out.append(Guard(new(step.slot), step.kind, step.expected))
            read.add(step.slot)
        else:
            out.append(Eqn(step.prim, step.params, tuple(map(new, step.ins)),
                           tuple(map(new, step.outs)), step.xp))
            read.update(step.ins)
            made.update(step.outs)
    consts = {new(s): v for s, v in program.consts.items() if s in read}
    avals = {new(s): a for s, a in program.avals.items() if s in read or s in made}
    return Program(n_inputs, consts, out, [new(s) for s in outputs], rebuild, avals)


def partial_eval(program: Program, known: dict[int, Any]) -> Program:
    """``program`` with the inputs ``known`` (input index -> value) fixed.

    The result takes the other inputs, in their order, and returns the same
    outputs: an output that depends only on known values is a constant of
    it. Known values are used, not copied: do not write into them later.
    The known half is computed by one replay (see :func:`split`).

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
    # c1: np.array([ 1., -1.])
    def program(x0):
        t3 = np.multiply(c1, x0)
        return t3
    >>> replay(q, [np.array([2.0, 3.0])])
    [array([ 2., -3.])]
    """
    n = program.n_inputs
    if not isinstance(known, dict) or not all(type(i) is int and 0 <= i < n for i in known):
        raise ValueError(f"partial_eval: known must be a dict from input indices (0 .. {n - 1}) "
                         f"to values, got {known!r:.200}")
    staged = split(program, known)
    residuals = staged.residuals([known[i] for i in sorted(known)])
    rest = staged.unknown
    m = rest.n_inputs - len(residuals)
    return rest.with_steps(rest.steps, n_inputs=m,
                           consts={**rest.consts, **dict(zip(range(m, rest.n_inputs), residuals))})

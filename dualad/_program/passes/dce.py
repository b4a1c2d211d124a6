"""Dead-code elimination: the steps no output or guard depends on go."""

from __future__ import annotations

from typing import Any

from dualad._program.ir import Guard

__all__ = ["eliminate_dead_code"]


def eliminate_dead_code(program: Any) -> Any:
    """``program`` without the primitives no output (and no guard) depends on.

    Guards are kept, and with them what they read: they decide which
    program runs, so a replay that skipped one could be silently wrong.
    Steps with an effect (a random draw moves its Generator's stream) are
    kept too.
    Constants no kept step uses are dropped.

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> def f(x):
    ...     unused = np.exp(x)
    ...     return np.sin(x)
    >>> p = dualad.compile(f, optimize=False).program(np.zeros(2))
    >>> [e.prim.name for e in p.eqns], [e.prim.name for e in eliminate_dead_code(p).eqns]
    (['exp', 'sin'], ['sin'])
    """
    live = set(program.outputs)
    kept = []
    for step in reversed(program.steps):
        if type(step) is Guard:
            live.add(step.slot)
            kept.append(step)
        elif not live.isdisjoint(step.outs) or step.prim.effect:
            live.update(step.ins)
            kept.append(step)
    kept.reverse()
    consts = {s: v for s, v in program.consts.items() if s in live}
    return program.with_steps(kept, consts=consts)

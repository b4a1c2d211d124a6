"""What a program step's primitive answers, for the steps that are no entry of the table.

A step of a :class:`~dualad._program.program.Program` calls a primitive: an
entry of the table (``dualad._table.entries.Primitive``) or a step of the
program's own (a random draw, a fused numexpr kernel, the two scatters' sum).
Both answer the same attributes, so the passes and executors read them and
never ask which kind they hold:

``name``, ``multiple_results``, ``impl(xp, *args, **params)``
    as a table entry's.
``effect``
    True where a replay must make the call each time (a draw): dead-code
    elimination keeps it, CSE never merges it, constant folding never folds it.
``format(names, params)``
    the step as source for the printed program, or None: printed as a call of
    its impl.
``takes_out``
    the primitive itself is called with ``out=`` as a NumPy ufunc is (a fused
    kernel), so a replay may write its result into a buffer.
``ufunc``, ``ufunc_params``, ``scalar_form``, ``new_array``, ``simplifications``
    as declared by a table entry (``Primitive.declare``): none here, unless a
    step says otherwise.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Step"]


class Step:
    """Base of the program's own steps' primitives (see the module's docstring)."""

    name = "step"
    multiple_results = False
    effect = False
    format = None
    takes_out = False
    ufunc = None
    ufunc_params: dict = {}
    scalar_form = None
    new_array = False
    simplifications: tuple = ()

    def impl(self, xp: Any, *args: Any, **params: Any) -> Any:
        raise NotImplementedError

"""Functions of values' numbers for results that carry no derivative (indices,
sort orders, masks, counts), computed on the host and batched under vmap.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dualad._base.backend import SCALAR_TYPES, namespace_of, to_host
from dualad._base.core import Value
from dualad._base.shapes import concrete, primal, raw, shape_of
from dualad._table import operations

__all__ = ["on_values"]


def on_values(fn: Any, *args: Any, what: str | None = None, reads_numbers: bool = True) -> Any:
    """``fn(*args)`` on the numbers of ``args`` (their derivatives stripped), for
    results that carry no derivative: indices, sort orders, masks, counts.

    Under :func:`dualad.vmap`, ``fn`` is applied to each element of the batch
    and the results are stacked into a batched value, so an index or order
    computed on the host is each element's own. ``what`` names an operation
    whose result's shape depends on the values: it is refused under vmap
    instead (see :func:`concrete`). Under :func:`dualad.compile`, the numbers
    of a traced value are read on the host (the trace hears of it and keeps
    no program that bakes the result in), unless ``reads_numbers`` is False:
    ``fn`` then reads only shapes and dtypes (``zeros_like``).
    """
    stripped = [_primal_within(a, reads_numbers) for a in args]
    batched = [v for a in stripped for v in _values_within(a)]
    if not batched:
        return fn(*stripped)
    if what is not None:
        concrete(batched[0], what)
    top = max(batched, key=lambda a: a._level)
    level, k = top._level, shape_of(top._strip())[0]
    outs = [on_values(fn, *[_element_within(a, i, level) for a in stripped]) for i in range(k)]
    if not outs:
        raise ValueError("vmap: the batch is empty, so the shape of a result computed from the "
                         "values of its elements is unknown")
    return top._constant(_stack_results(outs, raw(top)))


# Arguments may be lists or tuples of values (np.lexsort((a, b)), ravel_multi_index):
# the batched values inside them are found and indexed too.
# A value compile traces is read on the host here where ``fn`` reads its numbers (its
# trace hears of it, and refuses to bake what ``fn`` computes into a program): host
# functions such as np.searchsorted drop the marks of _taint from what they return.
def _primal_within(a: Any, reads_numbers: bool) -> Any:
    if type(a) in (list, tuple):
        return type(a)(_primal_within(e, reads_numbers) for e in a)
    a = primal(a)
    if isinstance(a, Value) and not a.batches:
        return to_host(a._strip()) if reads_numbers else a._strip()
    return a


def _values_within(a: Any) -> list:
    if type(a) in (list, tuple):
        return [v for e in a for v in _values_within(e)]
    return [a] if isinstance(a, Value) else []


def _element_within(a: Any, i: int, level: int) -> Any:
    if type(a) in (list, tuple):
        return type(a)(_element_within(e, i, level) for e in a)
    return a._strip()[i, ...] if isinstance(a, Value) and a._level == level else a


def _stack_results(outs: list, like: Any) -> Any:
    first = outs[0]
    if isinstance(first, tuple):
        return tuple(_stack_results([o[j] for o in outs], like) for j in range(len(first)))
    if type(first) in SCALAR_TYPES or type(first) is bool or isinstance(first, np.generic):
        return namespace_of([like]).asarray(outs)
    return operations.stack(outs, axis=0)

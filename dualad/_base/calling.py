"""The calling convention the transforms share: ``argnums``, ``has_aux`` and pytrees.

``argnums`` (an int, or a tuple of ints) picks the arguments a transform
differentiates: an int gives results shaped like that argument, a tuple a
tuple of them, as in JAX. ``has_aux=True`` says that ``f`` returns a pair
``(output, aux)`` whose ``aux`` is passed through undifferentiated.
"""

from __future__ import annotations

import numbers
from typing import Any, Callable

from dualad._base.checks import describe
from dualad._base.tree import leaves_and_treedef, structure


def check_argnums(argnums: Any) -> tuple[bool, tuple[int, ...]]:
    """Whether ``argnums`` is a single index, and its indices as a tuple of ints
    (checked when the transform is made, as JAX does)."""
    single = not isinstance(argnums, (tuple, list))
    nums = (argnums,) if single else tuple(argnums)
    for n in nums:
        if isinstance(n, bool) or not isinstance(n, numbers.Integral):
            raise TypeError(f"argnums must be an int or a tuple of ints, got {argnums!r} "
                            f"(an entry of type {type(n).__name__})")
    if not nums:
        raise ValueError("argnums is an empty tuple; name at least one argument to differentiate")
    return single, tuple(int(n) for n in nums)


def positions(argnums: Any, nums: tuple[int, ...], n_args: int) -> tuple[int, ...]:
    """``nums`` as non-negative positions among ``n_args`` arguments, each at most
    once: a repeated argument would be wrapped twice, and the derivative of all
    but the last wrapping would be silently zero."""
    seen: dict[int, int] = {}
    for n in nums:
        if not -n_args <= n < n_args:
            raise ValueError(f"argnums={argnums!r} is out of range for {n_args} arguments: "
                             f"{n} is not in [{-n_args}, {n_args})")
        position = n % n_args
        if position in seen:
            spelled = f" (as {seen[position]} and {n})" if seen[position] != n else ""
            raise ValueError(f"argnums={argnums!r} repeats argument {position}{spelled}; "
                             "list each argument once")
        seen[position] = n
    return tuple(seen)


class Selection:
    """The arguments ``argnums`` picks out of a call, and ``f`` as a function of them.

    ``x`` is the picked argument (an int ``argnums``) or the tuple of them;
    ``f_of_x(x)`` calls ``f`` with the other arguments as given.
    """

    def __init__(self, f: Callable, args: tuple, argnums: Any, single: bool, nums: tuple):
        self.where = positions(argnums, nums, len(args))
        self.single = single
        picked = tuple(args[p] for p in self.where)
        self.x = picked[0] if single else picked
        self._f, self._args = f, args

    def f_of_x(self, x: Any) -> Any:
        full = list(self._args)
        for p, a in zip(self.where, (x,) if self.single else x):
            full[p] = a
        return self._f(*full)


def split_aux(result: Any, has_aux: bool, who: str) -> tuple[Any, Any]:
    """``(output, aux)`` from what ``f`` returned (aux None without ``has_aux``)."""
    if not has_aux:
        return result, None
    if not (isinstance(result, tuple) and len(result) == 2):
        raise TypeError(f"{who}: has_aux=True: f must return a pair (output, aux), "
                        f"got {describe(result)}")
    return result


def paired_leaves(a: Any, b: Any, name_a: str, name_b: str, who: str) -> tuple[list, list]:
    """The leaves of ``a`` and of ``b``, one to one: ``b`` must have ``a``'s containers
    (for a leaf ``a``, ``b`` is taken whole, so that the check of it as ``a``'s
    partner says best what is wrong)."""
    a_leaves, spec = leaves_and_treedef(a)
    if spec == "*":
        return [a], [b]
    b_leaves, b_spec = leaves_and_treedef(b)
    if spec != b_spec:
        raise TypeError(f"{who}: {name_b} must have the structure of {name_a}, {structure(a)}; "
                         f"got {structure(b)}")
    return a_leaves, b_leaves

"""The linear operators of the implicit entries, as functions of their operands.

An operator here is a callable ``op(*operands)`` that returns the matrix-vector
product ``v -> A v`` at those operands. ``custom_linear_solve`` makes one of the
user's ``matvec`` (:class:`Matvec`); ``custom_root`` of the residual's Jacobian in
the unknowns (:class:`Jacobian`, forward mode) and its transpose
(:class:`JacobianTranspose`, the registered reverse mode). An entry's rules apply
an operator to values of any level, so the products are differentiated again
where a higher derivative asks for it (forward over reverse for ``mixed.hvp``).
"""

from __future__ import annotations

from typing import Any, Callable

from dualad._base.reverse_mode import registered_vjp
from dualad._base.shapes import zeros
from dualad._forward.transforms import jvp
from dualad._implicit.closure import Closed

__all__ = ["Jacobian", "JacobianTranspose", "Matvec", "Transposed", "pullback"]


def pullback(fn: Callable, primals: tuple, who: str) -> Callable:
    """The registered reverse mode's pullback of ``fn`` at ``primals`` (``import reverse``)."""
    vjp = registered_vjp(who, "or use forward mode (dualad.jvp, jacfwd) through it")
    return vjp(fn, *primals)[1]


class Matvec:
    """``matvec`` (closed over the operands) as an operator."""

    __slots__ = ("closed",)

    def __init__(self, closed: Closed):
        self.closed = closed

    def __call__(self, *operands: Any) -> Callable:
        return lambda v: self.closed.call(v, operands)


class Transposed:
    """The transpose of a linear operator, by the reverse mode: ``u -> A^T u``, from the
    pullback of ``v -> A v`` recorded once (at zero, where a linear map's pullback is
    the same as anywhere) at the first product."""

    __slots__ = ("operator", "who")

    def __init__(self, operator: Callable, who: str):
        self.operator, self.who = operator, who

    def __call__(self, *operands: Any) -> Callable:
        forward = self.operator(*operands)
        pulls: list = []

        def product(u):
            if not pulls:
                pulls.append(pullback(forward, (zeros(u),), f"the transpose of {self.who}'s matvec"))
            return pulls[0](u)[0]
        return product


class Jacobian:
    """``v -> dF/dx v`` of a residual ``F(x)`` (closed over the other operands) at the
    operands ``(x, *values)``, by forward mode."""

    __slots__ = ("closed",)

    def __init__(self, closed: Closed):
        self.closed = closed

    def __call__(self, x: Any, *operands: Any) -> Callable:
        return lambda v: jvp(lambda y: self.closed.call(y, operands), (x,), (v,))[1]


class JacobianTranspose:
    """``u -> dF/dx^T u`` at ``(x, *values)``, by the registered reverse mode, recorded
    once per point."""

    __slots__ = ("closed",)

    def __init__(self, closed: Closed):
        self.closed = closed

    def __call__(self, x: Any, *operands: Any) -> Callable:
        pull = pullback(lambda y: self.closed.call(y, operands), (x,),
                        f"the reverse-mode derivative of {self.closed.who}")
        return lambda u: pull(u)[0]

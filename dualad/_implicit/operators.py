"""The linear operators of the implicit entries, as functions of their operands.

An operator here is a callable ``op(*operands)`` that returns the matrix-vector
product ``v -> A v`` at those operands. ``custom_linear_solve`` makes one of the
user's ``matvec`` (:class:`Matvec`); ``custom_root`` of the residual's Jacobian in
the unknowns and its transpose (:class:`Jacobian`: forward mode, and the registered
reverse mode), which can also give itself as a matrix, to be factorized once. An entry's rules apply
an operator to values of any level, so the products are differentiated again
where a higher derivative asks for it (forward over reverse for ``mixed.hvp``).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from dualad._base.reverse_mode import registered_vjp
from dualad._base.shapes import shape_of, zeros
from dualad._forward.transforms import basis_chunks, jvp
from dualad._implicit.closure import Closed
from dualad._primitives.linalg.matmul import matmul
from dualad._primitives.shape import matrix_transpose, reshape
from dualad._staging.compile import compile as jit

__all__ = ["JOINT_UP_TO", "Jacobian", "JacobianProduct", "JointJacobian", "Matvec", "Transposed",
           "joint_jacobian", "pullback"]

# A traced residual's matrix program: traced once, with the program that holds it, and
# replayed always (no timing against eager calls: a replay takes a tenth of one, and an
# eager call would read what the residual reads anew, where the program reads the trace's)
# by NumPy's calls
_WITH_THE_PROGRAM = {"measure": False, "executor": "numpy"}

# Up to this many numbers in the unknowns and the operands together, a VJP at plain arrays
# takes dF/dx and dF/dtheta from one forward-mode pass over both (JointJacobian) rather
# than dF/dx from one and a pullback of F in theta (the crossing measured in
# benchmarks/README.md, "Sensitivities of solutions")
JOINT_UP_TO = 100


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
    """``dF/dx`` of a residual ``F(x)`` (closed over the other operands) at the operands
    ``(x, *values)``, or its transpose where ``transposed``, as a :class:`JacobianProduct`."""

    __slots__ = ("closed", "transposed")

    def __init__(self, closed: Closed, transposed: bool = False):
        self.closed, self.transposed = closed, transposed

    def __call__(self, x: Any, *operands: Any) -> JacobianProduct:
        return JacobianProduct(self.closed, (x, *operands), self.transposed)


class JacobianProduct:
    """``v -> dF/dx v`` at one point ``(x, *operands)`` by forward mode, or ``u -> dF/dx^T u``
    where ``transposed`` by the registered reverse mode (recorded once, at the first
    product).

    A tangent solver that factorizes ``dF/dx`` takes :meth:`matrix` instead of the
    products, and keeps the factorization for every solve at the same ``point`` (the
    tangents of a chunk, a cotangent, a second derivative's solves).
    """

    __slots__ = ("closed", "point", "transposed", "_pull")

    def __init__(self, closed: Closed, point: tuple, transposed: bool):
        self.closed, self.point, self.transposed = closed, point, transposed
        self._pull: Callable | None = None

    def __call__(self, v: Any) -> Any:
        x, *operands = self.point
        if not self.transposed:
            return jvp(lambda y: self.closed.call(y, operands), (x,), (v,))[1]
        if self._pull is None:
            self._pull = pullback(lambda y: self.closed.call(y, operands), (x,),
                                  f"the reverse-mode derivative of {self.closed.who}")
        return self._pull(v)[0]

    def matrix(self) -> Any:
        """``dF/dx`` (never its transpose) as a ``(size, size)`` matrix over the raveled
        unknowns (:func:`_matrix`). The residual of a compiled program (closed in its trace)
        builds it by a program of its own, traced with the outer one (the first matrix is
        asked during that trace) and replayed at each replay's new solution, without
        forward mode's cost per operation: what the residual reads through names is then
        copied at the trace, as the outer program copies it for ``dF/dtheta``
        (:func:`dualad.compile`). Elsewhere (eager calls, a ``vmap`` outside a program) a
        trace would cost more than it saves."""
        joint = self.closed.derived.get("joint")
        if joint is not None and joint.at(self.point):
            return joint.dx.copy()  # the caller's own: a solver may factorize it in place
        # NumPy's scalars (an element of a traced array) as 0-d arrays: a program keys those
        # by shape and dtype, and promotes them as NumPy promotes its scalars
        point = tuple(np.asarray(v) if isinstance(v, np.generic) else v for v in self.point)
        if not (self.closed.traced and all(type(v) is np.ndarray for v in point)):
            return _matrix(self.closed, *self.point)
        derived = self.closed.derived
        if "matrix" not in derived:  # the residual a static argument: its programs its own
            derived["matrix"] = jit(_matrix, **_WITH_THE_PROGRAM)
        return derived["matrix"](self.closed, *point)


def _matrix(closed: Closed, x: Any, *operands: Any) -> Any:
    """``dF/dx`` of ``closed`` at ``(x, *operands)`` by one forward-mode pass of ``size``
    directions at once: the basis, whose tangents out are its columns (a ``jvp``, without
    ``jacfwd``'s assembly of blocks)."""
    size = math.prod(shape_of(x))
    if not size:
        return zeros(x, (0, 0))
    basis, = next(basis_chunks([x], size))
    _, columns = jvp(lambda y: closed.call(y, operands), (x,), (basis,))
    return matrix_transpose(reshape(_square(closed, columns, x), (size, size)))


def _square(closed: Closed, columns: Any, x: Any) -> Any:
    """``columns``, the residual's tangents along a basis, where each is of the unknowns'
    shape (dF/dx is square); an error naming the residual otherwise."""
    if shape_of(columns)[1:] != shape_of(x):
        raise ValueError(f"{closed.who}: the residual must return an array of the unknowns' "
                         f"shape {shape_of(x)}, got shape {shape_of(columns)[1:]}")
    return columns


class JointJacobian:
    """``F``'s Jacobian in the unknowns and in the operands at one ``point`` of plain
    arrays, from one forward-mode pass over both (the basis of their numbers): ``dx``, the
    ``(n, n)`` block that :meth:`JacobianProduct.matrix` returns at that point, and the
    blocks in the operands, whose products with a cotangent are the VJP's pullback of ``F``
    in them (:meth:`pullback`) without recording ``F`` again."""

    __slots__ = ("point", "dx", "dtheta")

    def __init__(self, closed: Closed, point: tuple):
        x, *operands = point
        n = x.size
        sizes = [v.size for v in operands]
        basis = next(basis_chunks(list(point), n + sum(sizes)))
        _, columns = jvp(lambda y, *th: closed.call(y, th), point, tuple(basis))
        jac = np.asarray(_square(closed, columns, x)).reshape(n + sum(sizes), n).T
        self.point, self.dx, self.dtheta = point, jac[:, :n], []
        start = n
        for size in sizes:
            self.dtheta.append(jac[:, start:start + size])
            start += size

    def at(self, point: tuple) -> bool:
        """Whether ``point`` is this one (the same arrays, not equal ones)."""
        return len(point) == len(self.point) and all(a is b for a, b in zip(point, self.point))

    def pullback(self, u: Any) -> tuple:
        """``u^T dF/dtheta_i`` for each operand, of its shape; ``u`` (of the unknowns' shape)
        may carry derivatives of a transform (the operands' blocks are constants)."""
        u = reshape(u, (self.dx.shape[0],))
        return tuple(reshape(matmul(u, block), v.shape)
                     for block, v in zip(self.dtheta, self.point[1:]))


def joint_jacobian(closed: Closed, point: tuple) -> JointJacobian | None:
    """:class:`JointJacobian` of ``closed`` at ``point``, kept for the :meth:`~JacobianProduct.matrix`
    asked there, where every value of ``point`` is a real NumPy array, the operands hold
    no more numbers than the unknowns, and all together no more than :data:`JOINT_UP_TO`;
    None elsewhere, and where ``F`` has no forward mode in the operands."""
    if not all(type(v) is np.ndarray and v.dtype.kind == "f" for v in point):
        return None
    n, p = point[0].size, sum(v.size for v in point[1:])
    if not 0 < p <= n or n + p > JOINT_UP_TO:
        return None
    joint = closed.derived.get("joint")
    if joint is None or not joint.at(point):  # the rows of a jacrev share one
        try:
            joint = JointJacobian(closed, point)
        except NotImplementedError:  # no forward mode in theta (a Function with a backward
            return None              # only): the pullback records F in reverse mode instead
        closed.derived["joint"] = joint
    return joint

"""``linearize`` and ``linear_transpose``, as JAX's: a function's linear part, and
the transpose of a linear function."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from dualad._calling import paired_leaves
from dualad._checks import describe
from dualad._compile import optimize, record, traceable
from dualad._partial_eval import partial_eval
from dualad._program import GuardMiss, Program
from dualad._reverse_mode import registered_vjp
from dualad._transforms import _jvp
from dualad._tree import flatten

__all__ = ["linearize", "linear_transpose"]


def linearize(f: Callable, *primals: Any) -> tuple[Any, Callable]:
    """``f(*primals)`` and its JVP at ``primals`` as a function of the tangents, as ``jax.linearize``.

    Cost: ``f`` runs once, here, in forward mode on traced values (as
    :func:`dualad.compile` traces), recording the JVP program with the
    primals and the tangents as its inputs. That program is partially
    evaluated on the primals: what depends only on them is computed now, so each call of ``f_jvp``
    replays only the tangent half, without running ``f``. A call whose
    tangents have other shapes (a chunk of k tangents: a leading axis on
    each, k directions in one call) or dtypes, or that takes another way
    through a guard on the tangents, traces ``f`` once more for them
    (at most 8 programs are kept). Where no program can be traced (primals
    that are not NumPy arrays, such as Dask or CuPy arrays or Python floats;
    tangents that carry another transform's derivatives; ``f`` drawing
    random numbers or spoiling the trace in another way), ``f_jvp``
    silently runs ``f`` again, in forward mode, on every call: the same
    numbers, at the cost of the whole JVP.

    Parameters
    ----------
    f : callable
        A function of arrays, floats, or pytrees of them.
    *primals
        The point at which ``f`` is linearized.

    Returns
    -------
    out : the output of ``f(*primals)``
    f_jvp : callable
        ``f_jvp(*tangents)`` is ``jvp(f, primals, tangents)``'s output tangent;
        the tangents have the structure, shapes and dtypes of ``primals``.

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> out, f_jvp = dualad.linearize(lambda x: np.sin(x) * 2.0, np.array([0.0, np.pi]))
    >>> f_jvp(np.array([1.0, 1.0]))
    array([ 2., -2.])
    """
    if not callable(f):
        raise TypeError(f"linearize: f must be callable, got {describe(f)}")
    f_jvp = _Linearized(f, primals)
    if f_jvp.programs is None:
        return f(*primals), f_jvp
    zeros = f_jvp.build([np.zeros_like(leaf) for leaf in f_jvp.leaves])
    return f_jvp.trace(zeros)[0], f_jvp


class _Linearized:
    """``f_jvp`` of :func:`linearize`: the tangent half of ``f``'s traced JVP at the
    primals, replayed per call (``programs``: tangent key -> programs, one per way
    through the guards; None where no program can be traced)."""

    MAX_PROGRAMS = 8

    def __init__(self, f: Callable, primals: tuple):
        self.f, self.primals = f, primals
        self.leaves, self.build = flatten(primals)
        self.programs: dict | None = {} if all(map(traceable, self.leaves)) else None
        self.count = 0  # programs kept, over all keys

    def __call__(self, *tangents: Any) -> Any:
        if self.programs is None:
            return _jvp(self.f, self.primals, tangents, "linearize")[1]
        t_leaves = paired_leaves(self.primals, tangents, "primals", "tangents", "linearize")[1]
        if not all(map(traceable, t_leaves)):
            return _jvp(self.f, self.primals, tangents, "linearize")[1]
        for program in self.programs.get(_key(t_leaves), ()):
            out = program.replay(t_leaves)
            if type(out) is not GuardMiss:
                return program.rebuild(out)
        return self.trace(tangents)[1]

    def trace(self, tangents: tuple) -> tuple:
        """``jvp(f, primals, tangents)``, computed while recording it; its program's
        tangent half, specialized to the primals, is kept for these tangents' key."""
        f, primals = self.f, self.primals
        t_leaves = flatten(tangents)[0]
        program, (out, t_out), why = record(lambda p, t: _jvp(f, p, t, "linearize"), (primals, tangents),
                                            {}, [*self.leaves, *t_leaves])
        if program is None or self.count >= self.MAX_PROGRAMS:
            return out, t_out
        n_out = len(flatten(out)[0])
        program = Program(program.n_inputs, program.consts, program.steps, program.outputs[n_out:],
                          flatten(t_out)[1])
        program = partial_eval(optimize(program), dict(enumerate(self.leaves)))
        self.programs.setdefault(_key(t_leaves), []).append(program)
        self.count += 1
        return out, t_out


def _key(leaves: list) -> tuple:
    return tuple((type(leaf), leaf.shape, leaf.dtype) for leaf in leaves)


def linear_transpose(f: Callable, *primals: Any) -> Callable:
    """The transpose of a linear ``f``, as ``jax.linear_transpose``.

    ``primals`` give the structure, shapes and dtypes of ``f``'s arguments
    (their values matter only if ``f`` is not linear: then the result is the
    transpose of ``f``'s linearization at ``primals``). ``f`` is recorded
    once, by reverse mode, when this is called; the returned function walks
    that record back for each cotangent. The reverse mode is the one
    registered with :func:`dualad.extend.register_vjp`: ``import reverse``
    registers it (``dualad`` never imports the packages built on it).

    Parameters
    ----------
    f : callable
        A linear function of arrays, floats, or pytrees of them.
    *primals
        Example arguments of ``f``.

    Returns
    -------
    callable
        ``f_transpose(out_cotangent)``: a tuple with one cotangent per argument
        of ``f``, as ``primals``; ``out_cotangent`` has the structure, shapes
        and dtypes of ``f``'s output.

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> import reverse  # the reverse mode that transposes
    >>> A = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    >>> f_t = dualad.linear_transpose(lambda x: A @ x, np.zeros(2))
    >>> f_t(np.array([1.0, 0.0, 1.0]))
    (array([6., 8.]),)
    """
    if not callable(f):
        raise TypeError(f"linear_transpose: f must be callable, got {describe(f)}")
    vjp = registered_vjp("linear_transpose", "or build the matrix with dualad.jacfwd and transpose it")
    return vjp(f, *primals)[1]

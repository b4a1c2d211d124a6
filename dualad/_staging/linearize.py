"""``linearize`` and ``linear_transpose``, as JAX's: a function's linear part, and
the transpose of a linear function."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from dualad._base.calling import paired_leaves
from dualad._base.checks import check_callable, check_differentiable
from dualad._base.reverse_mode import registered_vjp
from dualad._base.tree import flatten, leaf_paths
from dualad._forward.transforms import named_jvp
from dualad._program.executors.replay import replay
from dualad._program.ir import GuardMiss
from dualad._program.partial_eval import SpecializationRefused, Staged, split
from dualad._program.passes.fusion import fuse_elementwise
from dualad._program.program import Program
from dualad._staging.pipeline import optimize
from dualad._staging.record import record, traceable

__all__ = ["linearize", "linear_transpose"]


def linearize(f: Callable, *primals: Any) -> tuple[Any, Callable]:
    """``f(*primals)`` and its JVP at ``primals`` as a function of the tangents, as ``jax.linearize``.

    Cost: ``f`` runs once, here, in forward mode on traced values (as
    :func:`dualad.compile` traces), recording the JVP program with the
    primals and the tangents as its inputs. That program is split once into
    a primal half, replayed now to compute what depends only on the primals,
    and a tangent half that each call of ``f_jvp`` replays, without running
    ``f``; ``f_jvp.at`` replays the primal half at its point. A call whose
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
        ``f_jvp.at(*new_primals)`` is ``linearize(f, *new_primals)`` made from
        the programs traced here, without running ``f`` again where they hold
        (for the many points of an optimizer; closed-over arrays are those of
        the first trace, as in :func:`dualad.compile`).

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> out, f_jvp = dualad.linearize(lambda x: np.sin(x) * 2.0, np.array([0.0, np.pi]))
    >>> f_jvp(np.array([1.0, 1.0]))
    array([ 2., -2.])
    """
    check_callable(f, "linearize")
    return _Linearized(f, primals, None).start()


class _Linearized:
    """``f_jvp`` of :func:`linearize`: the tangent half of ``f``'s traced JVP at the
    primals, replayed per call.

    ``traced`` (shared by the ``at`` of one another) maps a tangent key to the
    JVP programs traced for it, one per way through the guards, each split at
    the primals: ``(Staged, primal, out_rebuild)``, where the known half takes
    the primals and gives the residuals, the unknown half takes the tangents
    and the residuals and gives the output tangent, and ``primal`` are the
    slots of ``f``'s output leaves in the unknown half (residuals or
    constants); None where no program can be traced. ``programs`` holds them
    at these primals: (output, tangent program, residuals) triples.
    """

    MAX_PROGRAMS = 8

    def __init__(self, f: Callable, primals: tuple, traced: dict | None):
        self.f, self.primals = f, primals
        self.leaves, self.build = flatten(primals)
        for leaf, name in zip(self.leaves, leaf_paths(primals, "primals")):
            check_differentiable(leaf, f"linearize: {name}")
        self.flat = all(type(p) is np.ndarray for p in primals)  # each primal is a leaf
        if traced is None and all(map(traceable, self.leaves)):
            traced = {}
        self.traced = traced
        self.programs: dict = {}

    def start(self) -> tuple:
        """``(f's output, self)``: from a program traced before at other primals, or traced now."""
        if self.traced is None:
            return self.f(*self.primals), self
        # the key of zero tangents (np.zeros_like of each leaf), made only to trace
        specialized = self._specialized(tuple((np.ndarray, np.shape(leaf), leaf.dtype)
                                              for leaf in self.leaves))
        if specialized:
            return specialized[0][0], self
        return self.trace(self.build([np.zeros_like(leaf) for leaf in self.leaves]))[0], self

    def at(self, *primals: Any) -> tuple:
        """``linearize(f, *primals)``, from the programs this one traced: ``f`` is not
        run again where they hold at ``primals`` (same structure, shapes and dtypes,
        same ways through guards on the primals); arrays ``f`` closes over are
        those of the first trace, as in :func:`dualad.compile`."""
        same = self.traced is not None and _key(flatten(primals)[0]) == _key(self.leaves)
        return _Linearized(self.f, primals, self.traced if same else None).start()

    def __call__(self, *tangents: Any) -> Any:
        if self.traced is None:
            return named_jvp(self.f, self.primals, tangents, "linearize")[1]
        if self.flat and len(tangents) == len(self.primals) \
                and all(type(t) is np.ndarray for t in tangents):
            t_leaves = list(tangents)  # arrays for arrays: their structure is the primals'
        else:
            t_leaves = paired_leaves(self.primals, tangents, "primals", "tangents", "linearize")[1]
        if not all(map(traceable, t_leaves)):
            return named_jvp(self.f, self.primals, tangents, "linearize")[1]
        for _, program, residuals in self._specialized(_key(t_leaves)):
            out = replay(program, [*t_leaves, *residuals])
            if type(out) is not GuardMiss:
                return program.rebuild(out)
        return self.trace(tangents)[1]

    def _specialized(self, key: tuple) -> list:
        """The programs traced for tangents of ``key`` whose guards on the primals hold,
        with their residuals at these primals (once per key)."""
        got = self.programs.get(key)
        if got is None:
            got = self.programs[key] = []
            for whole in self.traced.get(key, ()):
                try:
                    got.append(self._specialize(*whole))
                except SpecializationRefused:
                    pass
        return got

    def _specialize(self, staged: Staged, primal: list, out_rebuild: Callable) -> tuple:
        """``(f's output, the tangent program, its residuals)`` at these primals: one
        replay of the primal half (``SpecializationRefused`` where a guard on them
        takes another way)."""
        residuals = staged.residuals(self.leaves)
        tangent = staged.unknown
        first = tangent.n_inputs - len(residuals)
        out = out_rebuild([residuals[s - first] if s < tangent.n_inputs else tangent.consts[s]
                           for s in primal])
        return out, tangent, residuals

    def trace(self, tangents: tuple) -> tuple:
        """``jvp(f, primals, tangents)``, computed while recording it; the program is
        kept for these tangents' key, and specialized to the primals."""
        f = self.f
        t_leaves = flatten(tangents)[0]
        program, result, why = record(lambda p, t: named_jvp(f, p, t, "linearize"),
                                      (self.primals, tangents), {}, [*self.leaves, *t_leaves])
        if result is None:  # it returned a value type built around traced values
            return named_jvp(f, self.primals, tangents, "linearize")
        out, t_out = result
        if program is None:  # spoiled: a new trace would be too, so later calls run the JVP
            self.traced = None
            return out, t_out
        if sum(map(len, self.traced.values())) >= self.MAX_PROGRAMS:
            return out, t_out
        out_leaves, out_rebuild = flatten(out)
        staged = split(optimize(program, fuse=False), range(len(self.leaves)))
        rest, n_out = staged.unknown, len(out_leaves)
        tangent = Program(rest.n_inputs, rest.consts, rest.steps, rest.outputs[n_out:],
                          flatten(t_out)[1], rest.avals)  # a new rebuild, so not with_steps
        # each half fused on its own: a kernel spanning both would redo primal work per call
        whole = (Staged(fuse_elementwise(staged.known), fuse_elementwise(tangent), staged.guards),
                 rest.outputs[:n_out], out_rebuild)
        key = _key(t_leaves)
        self.traced.setdefault(key, []).append(whole)
        self._specialized(key).append(self._specialize(*whole))
        return out, t_out


def _key(leaves: list) -> tuple:
    return tuple((type(leaf), getattr(leaf, "shape", None), getattr(leaf, "dtype", None))
                 for leaf in leaves)


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
    check_callable(f, "linear_transpose")
    vjp = registered_vjp("linear_transpose", "or build the matrix with dualad.jacfwd and transpose it")
    return vjp(f, *primals)[1]

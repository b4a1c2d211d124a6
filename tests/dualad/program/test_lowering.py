"""The lowering of programs to loop nests (dualad._program.lowering): which steps form a
group, how a nest reads its operands (offsets for slices, index 0 along broadcast
axes), and what stays an ordinary step. Structure only: no kernel is made here
(tests/dualad/program/test_numba.py runs them)."""

from __future__ import annotations

import numpy as np
import pytest

import dualad
import mixed
import reverse
from dualad._program import lowering
from dualad._program.executors import numba as numba_executor
from dualad._program.lowering import LoopNest, lower


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def lowered(f, *args):
    """The optimized program of ``f`` at ``args``, lowered with no kernels."""
    return lower(dualad.compile(f, executor="numpy").program(*args), emit=lambda nest: None)


def nests(program):
    return [e.prim for e in program.eqns if type(e.prim) is LoopNest]


def names(program):
    return [e.prim.name for e in program.eqns]


def test_rosenbrock_is_one_nest_reading_x_at_two_offsets_and_summing():
    p = lowered(rosenbrock, np.ones(10))
    assert names(p) == ["loop"]  # the slices were never made
    (nest,) = nests(p)
    assert nest.shape == (9,) and nest.offsets == (1,)
    assert sorted((load.offsets for load in nest.loads if not load.scalar), key=str) == [(0,), (None,)]
    assert nest.stores == () and len(nest.sums) == 1  # the terms live in registers only


def test_gradient_and_hvp_scatter_in_the_same_loop():
    """The transpose of ``x[1:]`` and ``x[:-1]`` (one scatter_sum) is written by the nest:
    the gradient is one loop, and no term of it is stored."""
    grad = lowered(reverse.grad(rosenbrock), np.ones(10))
    assert names(grad) == ["loop"]
    (nest,) = nests(grad)
    assert nest.stores == () and not nest.sums
    ((_, _, shift, start, length),) = nest.scatters
    assert (shift, start, length) == (1, 0, 10)
    hvp = lowered(lambda x, v: mixed.hvp(rosenbrock, x, v), np.ones(10), np.ones(10))
    assert names(hvp) == ["loop"] and len(nests(hvp)[0].scatters) == 1
    both = lowered(reverse.value_and_grad(rosenbrock), np.ones(10))
    assert names(both) == ["loop"] and len(nests(both)[0].sums) == len(nests(both)[0].scatters) == 1


def test_where_and_comparisons_join_the_nest():
    p = lowered(lambda x: np.sum(np.where(x > 0.0, x, 0.1 * x) ** 2), np.ones(6))
    (nest,) = nests(p)
    assert [op.ufunc for op in nest.ops] == ["greater", "multiply", "where", "square"]
    assert nest.ops[0].loop == np.float64 and nest.ops[0].dtype == np.bool_


def test_matrix_products_stay_between_nests():
    def f(x, w):
        return np.sum(np.tanh(w @ (x * 2.0 + 1.0)) * 3.0)

    p = lowered(f, np.ones(4), np.ones((3, 4)))
    assert names(p) == ["loop", "matmul", "loop"]
    first, second = nests(p)
    assert len(first.stores) == 1 and not first.sums
    assert [op.ufunc for op in second.ops] == ["tanh", "multiply"] and len(second.sums) == 1


def test_broadcast_operands_are_read_at_index_0_along_their_size_1_axes():
    def f(x, row, column, number):
        return (x * row + column) * number - x

    p = lowered(f, np.ones((3, 4)), np.ones(4), np.ones((3, 1)), np.float64(2.0))
    (nest,) = nests(p)
    axes = {load.axes for load in nest.loads if not load.scalar}
    assert axes == {(0, 1), (1,), (0, None)}
    assert sum(load.scalar for load in nest.loads) == 1


def test_slices_of_two_axes_are_offsets_per_axis():
    p = lowered(lambda x: x[1:, 2:] * x[:-1, :-2] + 1.0, np.ones((4, 5)))
    (nest,) = nests(p)
    assert names(p) == ["loop"] and nest.shape == (3, 3)
    assert sorted(nest.offsets) == [1, 2]
    assert sorted((load.offsets for load in nest.loads if not load.scalar), key=str) == [
        (0, 1), (None, None)]


def test_what_is_not_lowered():
    def f(x, h, z):
        b = h * 2.0 + 1.0                  # float16: no nest
        c = z * 2.0 + 1.0                  # complex: no nest
        d = np.sum(x * x, axis=0)          # a sum over one axis: not the nest's
        e = x[::2] * 2.0 + 1.0             # a slice of step 2 is made, then read as an array
        return b, c, d, e

    x = np.ones((4, 3))
    p = lowered(f, x, x.astype(np.float16), x + 1j)
    assert [n.shape for n in nests(p)] == [(2, 3)]
    assert sorted(names(p)) == ["add", "add", "getitem", "loop", "multiply", "multiply", "multiply", "sum"]
    lone = lowered(lambda x, w: w @ np.exp(x) + 1.0, np.ones(3), np.ones((2, 3)))
    assert names(lone) == ["exp", "matmul", "add"]  # a step alone in its group is no nest


def test_independent_steps_of_one_shape_share_a_nest():
    p = lowered(lambda x, y: (np.exp(x), np.sin(y)), np.ones(3), np.ones(3))
    (nest,) = nests(p)
    assert [op.ufunc for op in nest.ops] == ["exp", "sin"] and nest.stores == (0, 1)


def test_a_value_read_by_a_guard_or_a_later_step_is_stored():
    def f(x):
        y = np.sin(x) * 2.0
        if np.sum(y * y) > 0:  # a guard on the sum: the nest ends there
            return np.cos(y) + 1.0
        return y

    x = np.ones(5)
    p = lowered(f, x)
    first, second = nests(p)
    assert len(first.stores) == 1 and len(first.sums) == 1  # y for the second nest, the sum for the guard
    assert not second.sums and len(second.stores) == 1
    assert len(p.guards) == 1


def test_a_step_reading_its_groups_sum_starts_another_group():
    p = lowered(lambda x: np.exp(x - np.sum(x * x)) * 2.0, np.ones(5))
    assert names(p) == ["loop", "loop"]
    summing, scaling = nests(p)
    assert len(summing.sums) == 1 and not summing.stores
    assert [op.ufunc for op in scaling.ops] == ["subtract", "exp", "multiply"]


def test_sums_over_some_axes_join_the_nest_only_where_the_emitter_takes_them():
    """Numba's emitter writes them; CuPy's does not, and its lowering keeps them steps."""
    def f(x):
        return np.sum(np.sin(x) * x, axis=1, keepdims=True)
    program = dualad.compile(f, executor="numpy").program(np.ones((6, 4)))
    plain = lower(program, emit=lambda nest: None)
    assert names(plain) == ["loop", "sum"] and nests(plain)[0].partials == ()
    (nest,) = nests(lower(program, emit=lambda nest: None, partial_sums=True))
    assert nest.partials == ((1, (1,), True),) and nest.stores == ()
    assert nest.partial_shape(0) == (6, 1)


def test_nothing_to_lower_leaves_the_program_itself():
    program = dualad.compile(lambda x, w: w @ x, executor="numpy").program(np.ones(3), np.ones((2, 3)))
    assert lower(program, emit=lambda nest: None) is program


@pytest.mark.skipif(not numba_executor.available(), reason="needs Numba (the test extra has it)")
def test_a_group_the_screen_refuses_is_never_built_into_a_nest(monkeypatch):
    """Numba's executor screens groups by size and length before building their nests (a
    short chain on a few numbers cannot pay for a kernel), so a program of such groups
    costs no nest at all; a longer chain is still built and weighed."""
    built = []
    nest = lowering._nest
    monkeypatch.setattr(lowering, "_nest", lambda *a: built.append(a) or nest(*a))

    def chain(x, n):
        for _ in range(n):
            x = np.tanh(x) * 0.5 + 1.0
        return x
    short = dualad.compile(chain, executor="numpy").program(np.ones(14), 2)
    assert numba_executor.lowered(short) is None and built == []
    assert lower(short, emit=lambda nest: None, keep=lambda nest: False) is short and len(built) == 1
    long = dualad.compile(chain, executor="numpy").program(np.ones(14), numba_executor.MIN_SCALAR_OPS)
    numba_executor.lowered(long)
    assert len(built) == 2

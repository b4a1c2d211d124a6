"""The memory plan (dualad._program.passes.memory): which intermediates replays write into kept buffers,
and that a planned replay equals eager evaluation without sharing memory with its caller. The plan
is the NumPy executor's, which these programs ask for (Numba's kernels write their own results)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import dualad
import mixed
import reverse
from dualad._base.backend import NUMPY_XP
from dualad._program.passes.memory import MIN_SIZE, plan
from dualad.extend import REGISTRY

N = 2 * MIN_SIZE


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


UFUNCS = sorted(name for name, e in REGISTRY.items() if e.ufunc is not None)


def test_the_planned_entries_are_declared():
    assert len(UFUNCS) >= 51 and {"add", "sin", "integer_pow", "isnan", "trunc"} <= set(UFUNCS)


@pytest.mark.parametrize("name", UFUNCS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_each_planned_entry_is_its_numpy_ufunc(name, dtype):
    """out= calls the NumPy ufunc the entry declares: it must give what the entry gives."""
    entry = REGISTRY[name]
    ufunc = getattr(np, entry.ufunc)
    rng = np.random.default_rng(0)
    args = [rng.uniform(0.1, 0.9, 64).astype(dtype) for _ in range(ufunc.nin)]
    if name == "arccosh":
        args = [a + 1.0 for a in args]
    want = entry.impl(NUMPY_XP, *args, **entry.ufunc_params)
    got = ufunc(*args)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_integer_pow_two_is_square():
    x = np.random.default_rng(1).standard_normal(64)
    np.testing.assert_array_equal(REGISTRY["integer_pow"].impl(NUMPY_XP, x, exponent=2), np.square(x))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_planned_gradient_and_hvp_equal_eager_and_return_fresh_arrays(dtype):
    grad = dualad.compile(reverse.grad(rosenbrock), executor="numpy")
    hvp = dualad.compile(lambda x, v: mixed.hvp(rosenbrock, x, v), executor="numpy")
    rng = np.random.default_rng(2)
    x, v = rng.standard_normal(N).astype(dtype), rng.standard_normal(N).astype(dtype)
    grad(x), hvp(x, v)
    assert len(plan(grad.program(x)).slots) >= 5 and len(plan(hvp.program(x, v)).slots) >= 5
    kept = []
    for _ in range(3):
        x, v = rng.standard_normal(N).astype(dtype), rng.standard_normal(N).astype(dtype)
        g, h = grad(x), hvp(x, v)
        assert g.dtype == h.dtype == dtype
        np.testing.assert_array_equal(g, reverse.grad(rosenbrock)(x))
        np.testing.assert_array_equal(h, mixed.hvp(rosenbrock, x, v))
        kept.append((g, g.copy(), h, h.copy()))
    for g, g0, h, h0 in kept:  # a later replay wrote into none of them
        np.testing.assert_array_equal(g, g0)
        np.testing.assert_array_equal(h, h0)
    assert grad.stats["replays"] == hvp.stats["replays"] == 3


def test_results_read_by_a_view_or_returned_are_not_planned():
    def f(x):
        y = np.sin(x) * 2.0            # the product is read by a reshape (a view): not planned
        z = np.cos(x) + 1.0            # read by a ufunc: planned, as sin, cos and exp are
        w = np.exp(z) * 3.0            # returned: not planned
        return y.reshape(-1, 2), w

    compiled = dualad.compile(f, executor="numpy")
    x = np.linspace(0.0, 1.0, N)
    compiled(x)
    program = compiled.program(x)
    memory = plan(program)
    names = {s: e.prim.name for e in program.eqns for s in e.outs}
    assert sorted(names[s] for s in memory.slots) == ["add", "cos", "exp", "sin"]
    a1, w1 = compiled(x)
    a2, w2 = compiled(x + 1.0)
    np.testing.assert_array_equal(a1, f(x)[0])
    np.testing.assert_array_equal(w1, f(x)[1])
    assert not np.shares_memory(a1, a2) and not np.shares_memory(w1, w2)


def test_results_read_by_a_sum_or_the_scatters_sum_are_planned():
    """Both read into a new array: what they read may be a buffer (a gradient's last
    products are), and the replays still equal eager evaluation."""
    grad = dualad.compile(reverse.grad(rosenbrock), executor="numpy")
    value = dualad.compile(rosenbrock, executor="numpy")
    x = np.linspace(-1.0, 1.0, N)
    for compiled in (grad, value):
        compiled(x)
        program = compiled.program(x)
        memory = plan(program)
        readers = {e.prim.name for e in program.eqns if set(e.ins) & set(memory.slots)}
        assert ("scatter_sum" if compiled is grad else "sum") in readers
        for y in (x[::-1].copy(), 2.0 * x):
            np.testing.assert_array_equal(compiled(y), compiled.f(y))


def test_small_and_zero_d_results_are_not_planned():
    small = dualad.compile(lambda x: np.sum(np.sin(x) * 2.0), executor="numpy")
    x = np.ones(MIN_SIZE - 1)
    small(x)
    assert not plan(small.program(x)).slots
    scalar = dualad.compile(lambda x: np.sin(x) * 2.0 + 1.0, executor="numpy")
    out = scalar(np.float64(0.5))
    assert type(out) is type(np.sin(np.float64(0.5)) * 2.0 + 1.0)
    assert not plan(scalar.program(np.float64(0.5))).slots


def test_in_place_reuse_of_a_dying_operand():
    """A chain of ufuncs reuses one buffer: each result writes where its operand was (the
    last one too: the sum reading it makes a new array)."""
    compiled = dualad.compile(lambda x: np.sum(np.tanh(np.exp(np.sin(x) * 0.5) - 1.0)), executor="numpy")
    x = np.linspace(-1.0, 1.0, N)
    compiled(x)
    memory = plan(compiled.program(x))
    assert len(memory.slots) == 5 and len(memory.buffers) == 1
    y = x[::-1].copy()
    np.testing.assert_array_equal(compiled(y), np.sum(np.tanh(np.exp(np.sin(y) * 0.5) - 1.0)))


def test_threads_replaying_one_program_do_not_share_buffers():
    grad = dualad.compile(reverse.grad(rosenbrock), executor="numpy")
    grad(np.ones(N))
    inputs = [np.random.default_rng(k).standard_normal(N) for k in range(8)]
    wants = [reverse.grad(rosenbrock)(x) for x in inputs]
    errors = []

    def work(k):
        for _ in range(20):
            if not np.array_equal(grad(inputs[k]), wants[k]):
                errors.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors

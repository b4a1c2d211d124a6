"""The Numba executor (dualad._program.executors.numba): a program of numbers as one
kernel, how the executor is chosen, and the kernels kept on disk for the next
process. Its numbers against the NumPy executor's: test_native_numbers.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
from _support.native import assert_bits
from _support.native import numba_replays as replays

import dualad
import reverse
from dualad._program.executors import numba as numba_executor
from dualad._program.lowering import LoopNest, lower

pytest.importorskip("numba")

ROOT = Path(__file__).resolve().parents[3]


def test_scalar_program_is_one_kernel_and_equals_numpys():
    def g(x, y):
        return np.sin(x) * np.exp(y) / (1.0 + y * y) + np.log(1.0 + x * x)

    def value_grad_hessian(x, y):
        return g(x, y), reverse.grad(g, argnums=(0, 1))(x, y), dualad.hessian(lambda v: g(v[0], v[1]))(
            np.stack([x, y]))

    x, y = np.float64(0.7), np.float64(-0.3)
    compiled = dualad.compile(value_grad_hessian, executor="numba")
    program = compiled.program(x, y)
    assert [e.prim.name for e in program.eqns].count("loop") >= 1
    got, want = replays(value_grad_hessian, x, y)
    for g_, w in zip(dualad._base.tree.flatten(got)[0], dualad._base.tree.flatten(want)[0]):
        assert type(g_) is type(w) and np.shape(g_) == np.shape(w)
        np.testing.assert_allclose(g_, w, rtol=8 * np.finfo(np.float64).eps)


def test_outputs_are_fresh_and_guards_are_checked():
    compiled = dualad.compile(lambda x: x * 2.0 + 1.0 if np.sum(x * x) > 1.0 else x - 1.0,
                              executor="numba")
    big, small = np.full(3, 2.0), np.full(3, 0.1)
    compiled(big)
    first, second = compiled(big), compiled(big)
    assert first is not second
    first[:] = 0.0
    np.testing.assert_array_equal(second, big * 2.0 + 1.0)
    np.testing.assert_array_equal(compiled(small), small - 1.0)  # the guard missed: the other branch
    assert compiled.stats["misses"] == 1 and compiled.stats["executor"] == "numba"


def test_many_operations_on_a_few_numbers_take_a_kernel_unless_too_many(monkeypatch):
    """A long elementwise chain of 1 or 16 elements: one kernel call saves a NumPy call per
    operation (and costs less than the chain unrolled to floats); above
    ``MAX_AUTOMATIC_OPS`` operations the first call's compile is not taken by itself."""
    def chain(x):
        for _ in range(12):
            x = np.sin(x) * 1.5 + 0.25
        return x

    for n in (1, 16):
        x = np.linspace(0.1, 0.9, n)
        auto = dualad.compile(chain)
        got = auto(x), auto(x)
        assert auto.stats["executor"] == "numba", n
        want = dualad.compile(chain, executor="numpy")(x)
        for g in got:  # sin is Numba's math library: within its stated 4 ulps
            np.testing.assert_allclose(g, want, rtol=4 * 2.0 ** -52 * 12, atol=0)
    monkeypatch.setattr(numba_executor, "MAX_AUTOMATIC_OPS", 10)
    auto = dualad.compile(chain)
    auto(np.ones(16)), auto(np.ones(16))
    assert auto.stats["executor"] == "numpy"


def test_a_small_kernel_meeting_a_value_not_finite_replays_as_numpy():
    """A kernel of few iterations checks what it stores and sums: a value not finite
    replays the program by NumPy's calls, which warn (or raise, under ``np.errstate``) as
    NumPy does, with NumPy's numbers; finite values keep the kernel's. A kernel of
    ``MIN_SIZE`` iterations or more checks nothing."""
    def f(x, a):
        for _ in range(8):
            x = np.sin(x) * 1.5 + 0.25
        return np.log(x - a), np.sum(x * x)

    compiled = dualad.compile(f)
    x, fine, beyond = np.linspace(0.1, 0.9, 16), np.zeros(16), np.full(16, 10.0)
    compiled(x, fine)
    assert compiled.stats["executor"] == "numba"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = compiled(x, fine)  # finite: the kernel's numbers, no warning
    np.testing.assert_allclose(got[0], f(x, fine)[0], rtol=1e-14)
    with np.errstate(all="ignore"):
        want = f(x, beyond)
    with pytest.warns(RuntimeWarning, match="invalid value encountered in log"):
        got = compiled(x, beyond)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    with np.errstate(invalid="raise"), pytest.raises(FloatingPointError, match="invalid value"):
        compiled(x, beyond)
    n = numba_executor.MIN_SIZE
    program = dualad.compile(f, executor="numpy").program(np.ones(n), np.zeros(n))
    large = lower(program, emit=lambda nest: None)
    assert all("k += " not in numba_executor.source(e.prim) for e in large.eqns if e.prim.name == "loop")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sums_over_some_axes_end_the_nest_and_equal_numpys(dtype):
    """Sums over any of a nest's axes, with and without keepdims, each added into an
    array of the axes kept, in the nest that computes the value summed."""
    rng = np.random.default_rng(5)
    x, y = (rng.standard_normal(s).astype(dtype) for s in ((40, 5, 3), (5, 3)))

    def f(x, y):
        z = np.exp(x) * y - x
        return (np.sum(z, axis=2), np.sum(z * z, axis=(0, 2), keepdims=True), np.sum(z, axis=0),
                np.sum(z * y, axis=None, keepdims=True), z)
    nest, = [e.prim for e in dualad.compile(f, executor="numba").program(x, y).eqns
             if type(e.prim) is LoopNest]
    assert [(axes, keepdims) for _, axes, keepdims in nest.partials] == [
        ((2,), False), ((0, 2), True), ((0,), False), ((0, 1, 2), True)]
    rtol = 1e-13 if dtype == np.float64 else 2e-5
    for ours, numpys, eager in zip(*replays(f, x, y)[::-1], f(x, y)):
        assert ours.shape == eager.shape and ours.dtype == eager.dtype
        np.testing.assert_allclose(ours, eager, rtol=rtol, atol=rtol)
        np.testing.assert_allclose(numpys, eager, rtol=rtol, atol=rtol)


def test_a_step_reading_a_sum_over_axes_starts_another_nest():
    def softmax_rows(x):
        e = np.exp(x - 1.0) * 2.0
        return e / np.sum(e, axis=1, keepdims=True) + x
    x = np.random.default_rng(6).standard_normal((300, 7))
    numpys, ours = replays(softmax_rows, x)
    np.testing.assert_allclose(ours, softmax_rows(x), rtol=1e-14)
    program = dualad.compile(softmax_rows, executor="numba").program(x)
    assert [len(e.prim.partials) for e in program.eqns if type(e.prim) is LoopNest] == [1, 0]


def test_a_sum_over_axes_not_finite_in_a_small_kernel_replays_as_numpy():
    def f(x):
        return np.sum(np.exp(x) * 2.0 + x, axis=1)
    compiled, fine = dualad.compile(f, executor="numba"), np.zeros((20, 3))
    compiled(fine)
    big = fine.copy()
    big[4, 1] = 1000.0
    with pytest.warns(RuntimeWarning, match="overflow"):
        got = compiled(big)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got, f(big))


def test_a_float32_sum_over_long_rows_is_as_accurate_as_numpys():
    """Added in float64, then rounded: a sequential float32 sum of 262,144 squares lost
    three digits against NumPy's pairwise one."""
    x = np.random.default_rng(7).random((4, 1 << 18), dtype=np.float32)
    compiled = dualad.compile(lambda x: np.sum(x * x, axis=1), executor="numba")
    compiled(x)
    got, exact = compiled(x), np.sum(x.astype(np.float64) ** 2, axis=1)
    assert got.dtype == np.float32
    numpys = np.max(np.abs(np.sum(x * x, axis=1) - exact) / exact)
    assert np.max(np.abs(got - exact) / exact) <= max(numpys, np.finfo(np.float32).eps)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_sum_over_axes_past_the_largest_float_warns_and_raises_as_numpys(dtype):
    """Every value summed finite, the row sums beyond the dtype's range: NumPy's replay,
    with its warning (and its error under ``np.errstate``)."""
    def f(x):
        return np.sum(x * 0.5, axis=1)
    compiled = dualad.compile(f, executor="numba")
    compiled(np.ones((20, 3), dtype))
    x = np.full((20, 3), np.finfo(dtype).max * 0.75, dtype)
    with pytest.warns(RuntimeWarning, match="overflow encountered in reduce"):
        got = compiled(x)
    assert got.dtype == dtype and np.all(np.isinf(got))
    with np.errstate(over="raise"), pytest.raises(FloatingPointError, match="overflow"):
        compiled(x)


def test_of_nests_tied_at_the_cut_a_nest_saving_more_is_kept():
    def f(x):
        y = x
        for _ in range(numba_executor.MAX_SAVING_NESTS + 1):  # nests that save alike
            y = np.cumsum(y * 1.5 - x * 0.5 + y * x) * 1e-3
        # the last group saves most (more operations)
        return np.cumsum(y * 1.5 - x * 0.5 + y * x - y * 0.25 + x * x * 0.125 - y * y) * 1e-3
    x = np.linspace(-1.0, 1.0, 2000)
    program = dualad.compile(f, executor="numpy").program(x)
    kept = [e.prim for e in numba_executor.lowered(program).eqns if type(e.prim) is LoopNest]
    assert len(kept) == numba_executor.MAX_SAVING_NESTS
    assert max(len(nest.ops) for nest in kept) >= 9  # the last group's nest among them


def test_a_program_drawing_from_a_generator_is_not_replayed_again():
    """Replaying from the start would draw again: such a program's kernels do not check,
    and give the draws and numbers of eager evaluation. Found by review: a value not
    finite replayed the program, drawing twice."""
    def f(g, x):
        d = g.normal(size=16)
        for _ in range(8):
            x = np.sin(x) * 1.5 + 0.25
        return np.log(x * 2.0 + d - 3.0), d

    compiled = dualad.compile(f)
    x = np.linspace(0.1, 0.9, 16)
    with np.errstate(all="ignore"):
        compiled(np.random.default_rng(1), x)
        got, want = compiled(g1 := np.random.default_rng(0), x), f(g2 := np.random.default_rng(0), x)
    assert compiled.stats["executor"] == "numba"
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_allclose(got[0], want[0], rtol=1e-13)  # nan where eager's is
    assert g1.random() == g2.random()


def test_the_executor_is_chosen_per_program(monkeypatch):
    def f(x):
        return np.sum(np.sin(x) * 2.0 + 1.0)

    large, small = np.ones(numba_executor.MIN_SIZE), np.ones(10)
    auto = dualad.compile(f)
    auto(large)
    assert auto.stats["executor"] == "numba"
    auto(small)
    assert auto.stats["executor"] == "numpy"  # a nest of 10 iterations does not pay
    forced = dualad.compile(f, executor="numba")
    forced(small)
    assert forced.stats["executor"] == "numba"
    nothing = dualad.compile(lambda x: np.exp(x), executor="numba")
    nothing(small)
    assert nothing.stats["executor"] == "numpy"  # no group of two steps: nothing to lower
    monkeypatch.setattr(numba_executor, "available", lambda: False)
    without = dualad.compile(f)
    np.testing.assert_array_equal(without(large), f(large))
    assert without.stats["executor"] == "numpy"
    with pytest.raises(ImportError, match='executor="numba" needs Numba'):
        dualad.compile(f, executor="numba")


def test_chosen_by_itself_a_nest_of_slow_math_stays_numpys():
    """NumPy's tanh is about 9 times as fast as the one Numba calls: a group of an add and
    a tanh stays NumPy's two calls, while an arithmetic group of the same program is a nest."""
    def f(x, y):
        return np.tanh(x + 1.0), y * 2.0 - y * y

    x, y = np.linspace(-1, 1, numba_executor.MIN_SIZE), np.linspace(-1, 1, numba_executor.MIN_SIZE + 1)
    auto = dualad.compile(f)
    auto(x, y)
    assert auto.stats["executor"] == "numba"
    assert sorted(e.prim.name for e in auto.program(x, y).eqns) == ["add", "loop", "tanh"]
    for got, want in zip(auto(x, y), f(x, y)):
        assert_bits(got, want)


def test_a_nest_of_a_few_thousand_iterations_takes_a_kernel_where_it_saves_microseconds():
    """Below MIN_SIZE iterations a nest of few operations pays where the per-element costs
    say it saves SAVED_US a replay: the broadcast products of a 50 x 50 Hessian's tangents
    (NumPy's call of each costs about 3 us), not the same steps over 50 numbers."""
    def f(x, v):
        return (v * x * 2.0 - v) * x + v

    def lowered(n):
        program = dualad.compile(f, executor="numpy").program(np.linspace(-1.0, 1.0, n), np.ones((n, n)))
        return numba_executor.lowered(program)

    hessian = lowered(50)  # 2,500 iterations of five operations: 10 us saved
    assert hessian is not None and [e.prim.name for e in hessian.eqns] == ["loop"]
    assert lowered(7) is None  # 49 iterations: 0.2 us saved
    assert 50 * 50 < numba_executor.MIN_SIZE and 5 < numba_executor.MIN_SCALAR_OPS  # taken by SAVED_US alone


def test_a_program_drawing_numbers_takes_no_unchecked_kernel_for_what_it_saves():
    """A program drawing from a Generator cannot be replayed again, so its kernels do not
    check their results: nests taken for the microseconds they save would lose NumPy's
    invalid-value error at a few thousand numbers. Such groups stay NumPy's calls there."""
    def f(x, rng):
        z = rng.standard_normal(x.shape)
        return np.sqrt(x * 2.0 - 1.0) * z + x * x - z

    x = np.linspace(0.6, 2.0, 5000)
    compiled = dualad.compile(f)
    for seed in range(4):
        compiled(x, np.random.default_rng(seed))
    assert numba_executor.lowered(compiled.program(x, np.random.default_rng(0))) is None
    bad = x.copy()
    bad[0] = 0.0
    with np.errstate(invalid="raise"), pytest.raises(FloatingPointError, match="invalid value"):
        compiled(bad, np.random.default_rng(0))


def test_a_program_of_many_small_groups_takes_the_kernels_that_save_most():
    """Each nest is a compile of about 0.1 s at the first replay: past MAX_SAVING_NESTS
    groups that would each save a few microseconds, the program takes the MAX_SAVING_NESTS
    that save most, in program order, and leaves the others NumPy's calls."""
    def f(x):
        y = np.cumsum(x * 1.5 + x * x) * 1e-3  # 3 operations: the group that saves least
        for k in range(numba_executor.MAX_SAVING_NESTS):
            y = np.cumsum(y * (1.0 + k / 97.0) - x * (0.5 + k / 89.0) + y * x) * 1e-3
        return y

    x = np.linspace(-1.0, 1.0, 2000)
    program = dualad.compile(f, executor="numpy").program(x)
    nests = [e.prim for e in numba_executor.lowered(program).eqns if type(e.prim) is LoopNest]
    assert len(nests) == numba_executor.MAX_SAVING_NESTS
    assert all(len(nest.ops) > 3 for nest in nests)  # the first group stays NumPy's calls
    np.testing.assert_allclose(dualad.compile(f, executor="numba")(x), f(x), rtol=1e-12)
    one = dualad.compile(lambda x: np.cumsum(x * 1.5 + x * x) * 1e-3,
                         executor="numpy").program(x)
    assert numba_executor.lowered(one) is not None  # the same group alone


def test_executor_argument_is_checked():
    with pytest.raises(ValueError, match='executor must be None, "numpy", "numba" or "cupy", got \'cuda\''):
        dualad.compile(np.sin, executor="cuda")
    with pytest.raises(ValueError, match="optimize=False"):
        dualad.compile(np.sin, executor="numba", optimize=False)


def test_a_second_process_loads_the_kernels_from_disk(tmp_path):
    script = textwrap.dedent("""
        import json, numpy as np, dualad
        from dualad._program.executors import numba as numba_executor
        f = dualad.compile(lambda x: np.sum(np.cos(x[1:]) * x[:-1] - 0.25), executor="numba")
        x = np.linspace(0.0, 1.0, 17)
        f(x)
        value = float(f(x))
        hits = sum(sum(k.stats.cache_hits.values()) for k in numba_executor._KERNELS.values())
        misses = sum(sum(k.stats.cache_misses.values()) for k in numba_executor._KERNELS.values())
        print(json.dumps({"value": value, "hits": hits, "misses": misses}))
    """)
    env = {**os.environ, "DUALAD_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    runs = [json.loads(subprocess.run([sys.executable, "-c", script], env=env, cwd=ROOT, check=True,
                                      capture_output=True, text=True, timeout=120).stdout)
            for _ in range(2)]
    assert runs[0]["misses"] == 1 and runs[0]["hits"] == 0  # compiled, and saved
    assert runs[1]["misses"] == 0 and runs[1]["hits"] == 1  # loaded
    assert runs[0]["value"] == runs[1]["value"]
    assert len(list((tmp_path / "kernels").glob("k*.py"))) == 1


def test_kernels_compile_in_memory_where_the_cache_cannot_be_written(tmp_path, monkeypatch):
    blocked = tmp_path / "a file"
    blocked.write_text("")
    monkeypatch.setenv("DUALAD_CACHE_DIR", str(blocked))
    kernel = numba_executor._import("test", "from dualad._base.kernel_cache import njit\n\n@njit\n"
                                             "def kernel(a):\n    return a + 1\n")
    assert kernel(1) == 2

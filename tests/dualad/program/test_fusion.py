"""Elementwise fusion (dualad._program.passes.fusion): trees of + - * /, negation and squaring on float64
become one numexpr kernel, whose replays equal eager evaluation bit for bit."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import dualad
import mixed
import reverse
from dualad._program.passes import fusion as _fusion
from dualad._program.passes.memory import plan

# numexpr fusion is the NumPy executor's (Numba's loops would replace it where Numba is installed)
numpy_executor = functools.partial(dualad.compile, executor="numpy")

pytest.importorskip("numexpr")
N = _fusion.MIN_SIZE


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _kernels(program):
    return [e.prim.expression for e in program.eqns if type(e.prim) is _fusion.Fused]


def test_fused_gradient_and_hvp_equal_eager_bit_for_bit():
    grad = numpy_executor(reverse.grad(rosenbrock))
    hvp = numpy_executor(lambda x, v: mixed.hvp(rosenbrock, x, v))
    rng = np.random.default_rng(0)
    for _ in range(3):
        x, v = rng.standard_normal(N + 1), rng.standard_normal(N + 1)
        np.testing.assert_array_equal(grad(x), reverse.grad(rosenbrock)(x))
        np.testing.assert_array_equal(hvp(x, v), mixed.hvp(rosenbrock, x, v))
    assert len(_kernels(grad.program(x))) == 2 and len(_kernels(hvp.program(x, v))) >= 2
    assert grad.stats["replays"] == hvp.stats["replays"] == 2


def test_what_is_not_fused():
    def f(x, y, z):
        a = x * 2.0 + 1.0          # returned: a kernel of its own, not inlined below
        b = np.exp(a) * y - y      # exp is no fusible entry: (e * y) - y is fused over e
        c = x.astype(np.float32) * 2.0 + 1.0  # float32: left to NumPy
        d = (x * np.inf) + 1.0     # a constant that is not finite: left to NumPy
        return a, b, c, d + z[:1]  # broadcasting: the last add is not fused

    x, y, z = (np.linspace(0.5, 1.5, N) + k for k in range(3))
    compiled = numpy_executor(f)
    compiled(x, y, z)
    program = compiled.program(x, y, z)
    assert sorted(_kernels(program)) == ["((v0 * 2.0) + 1.0)", "((v0 * v1) - v1)"]
    for args in ((x, y, z), (y, z, x)):
        for got, want in zip(compiled(*args), f(*args)):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


def test_small_results_are_not_fused():
    compiled = numpy_executor(lambda x: x * 2.0 + 1.0)
    compiled(np.ones(N - 1))
    assert not _kernels(compiled.program(np.ones(N - 1)))


def test_a_fused_result_read_by_a_ufunc_goes_into_a_planned_buffer():
    compiled = numpy_executor(lambda x, y: np.sum(np.exp(2.0 * (x - y * y))))
    x, y = np.linspace(0.0, 1.0, N), np.linspace(1.0, 0.0, N)
    assert compiled(x, y) == np.sum(np.exp(2.0 * (x - y * y)))
    program = compiled.program(x, y)
    assert _kernels(program) == ["(2.0 * (v0 - (v1 * v1)))"]
    # the kernel's result (read by exp), and exp's (read by sum, which makes a new array)
    assert len(plan(program).slots) == 2 and len(plan(program).buffers) == 1
    assert "numexpr('(2.0 * (v0 - (v1 * v1)))', v0=x0, v1=x1, out=b0)" in str(program)
    assert compiled(y, x) == np.sum(np.exp(2.0 * (y - x * x)))


def test_fuse_switch_and_numexpr_absent(monkeypatch):
    x = np.ones(N)
    off = numpy_executor(lambda x: x * 2.0 + 1.0, fuse=False)
    off(x)
    assert not _kernels(off.program(x))
    monkeypatch.setattr(_fusion, "numexpr", None)
    plain = numpy_executor(lambda x: x * 2.0 + 1.0)
    np.testing.assert_array_equal(plain(x), x * 2.0 + 1.0)
    assert not _kernels(plain.program(x))
    with pytest.raises(ImportError, match="fuse=True needs numexpr"):
        numpy_executor(lambda x: x, fuse=True)
    with pytest.raises(TypeError, match="fuse must be True, False or None"):
        numpy_executor(lambda x: x, fuse="yes")

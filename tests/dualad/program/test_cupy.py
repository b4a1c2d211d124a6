"""The CuPy executor (dualad._program.executors.cupy) without a GPU: the CUDA source it
writes for representative nests (the operations, the dtypes' functions, the index
arithmetic, sums and scatters), how ``compile`` chooses it, and programs compiled
with it whose kernels are built for the CPU (tests/_support/cuda_on_cpu.py). Its
numbers, ufunc by ufunc: test_native_numbers.py; every case of the table:
tests/dualad/staging/test_compile_cases.py. On a GPU, ``benchmarks/gpu_check.py``
runs the kernels themselves."""

from __future__ import annotations

import re

import numpy as np
import pytest
from _support import cuda_on_cpu
from _support.native import assert_bits

import dualad
import mixed
import reverse
from dualad._program.executors import cupy as cupy_executor
from dualad._program.executors.kernels import FirstRun
from dualad._program.lowering import LoopNest, lower
from dualad._staging.pipeline import asked as _asked
from dualad._staging.pipeline import for_executor as _for_executor


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def nests(f, *args):
    """The loop nests of ``f``'s optimized program at ``args``."""
    program = lower(dualad.compile(f, executor="numpy", fuse=False).program(*args), emit=lambda nest: None)
    return [e.prim for e in program.eqns if type(e.prim) is LoopNest]


def the_nest(f, *args):
    (nest,) = nests(f, *args)
    return nest


def operation(nest):
    """The lines of the body computing the ops (``const T vJ = ...;``), as ``{vJ: (T, expression)}``."""
    lines = re.finditer(r"const ([\w ]+) (v\d+) = (.*);", cupy_executor.raw(nest))
    return {m[2]: (m[1], m[3]) for m in lines}


def test_rosenbrock_gradient_scatters_its_two_terms_at_neighbouring_indices():
    nest = the_nest(reverse.grad(rosenbrock), np.ones(10))
    text = cupy_executor.raw(nest)
    assert cupy_executor.elementwise(nest) is None  # offsets and a scatter: a RawKernel
    ((a, b, shift, _, _),) = nest.scatters
    assert shift == 1
    # x[1:] is read at offset d0, x[:-1] at the index; the body runs at q and at q - 1
    assert re.search(r"= a\d+\[\(i0 \+ d0\) \* s\d+_0\];", text)
    assert re.search(r"= a\d+\[i0 \* s\d+_0\];", text)
    assert "const long long i0 = q0;" in text and "const long long i0 = q0 - 1;" in text
    assert f"y0 = v{a};" in text and f"z0 = v{b};" in text and "p0[e] = y0 + z0;" in text
    assert "if (e < h0)" in text and "long long g0" in text  # every entry written: zeros outside
    assert "o0" not in text and "atomicAdd" not in text  # nothing stored or summed
    assert text.count("e += step") == 1  # one grid-stride loop


def test_hvp_of_rosenbrock_is_one_kernel_and_its_value_and_gradient_sum_per_block():
    hvp = the_nest(lambda x, v: mixed.hvp(rosenbrock, x, v), np.ones(10), np.ones(10))
    assert len(hvp.scatters) == 1 and "p0[e] = y0 + z0;" in cupy_executor.raw(hvp)
    both = cupy_executor.raw(the_nest(reverse.value_and_grad(rosenbrock), np.ones(10)))
    assert "__shared__ double r0[256];" in both and "atomicAdd(u0, r0[0]);" in both
    assert re.search(r"t0 \+= v\d+;", both)
    # the stores and sums only where e is an index of the loop (m covers the scatter's entries too)
    assert "if (e < n0) {" in both


def test_a_chain_of_ufuncs_calls_the_math_library_of_its_dtype():
    def chain(x):
        return np.tanh(np.exp(np.sin(x) * 2.0) - np.arctan2(x, 1.5)) / np.hypot(x, 3.0)

    for dtype, suffix, ctype in ((np.float64, "", "double"), (np.float32, "f", "float")):
        nest = the_nest(chain, np.ones(8, dtype))
        written = operation(nest)
        calls = [re.match(r"(\w+)\(", e)[1] for _, e in written.values() if re.match(r"\w+\(", e)]
        assert calls == [f"{name}{suffix}" for name in ("sin", "exp", "atan2", "tanh", "hypot")]
        assert {t for t, _ in written.values()} == {ctype}
        ins, outs, body = cupy_executor.elementwise(nest)
        assert ins == f"{np.dtype(dtype).name} a0" and outs == f"{np.dtype(dtype).name} o0"
        assert body.endswith(f"o0 = v{len(nest.ops) - 1};")
    float32 = cupy_executor.raw(the_nest(chain, np.ones(8, np.float32)))
    assert "double" not in float32.replace("const double x", "")  # Python numbers only, cast below
    assert "((float)x" in float32


def test_where_maximum_and_sign_have_numpys_nan_and_zero_rules():
    def f(x, y):
        return np.sign(np.where(x > 0.5, np.maximum(x, y), np.minimum(y, 0.25)))

    expressions = list(operation(the_nest(f, np.ones(4), np.ones(4))).values())
    assert [t for t, _ in expressions] == ["bool", "double", "double", "double", "double"]
    greater, maximum, minimum, where, sign = (e for _, e in expressions)
    assert re.fullmatch(r"\(x0 > x\d\)", greater)
    assert re.fullmatch(r"\(\(x0 > (x\d) \|\| x0 != x0\) \? x0 : \1\)", maximum)  # NaN in x0 wins
    assert re.fullmatch(r"\(\((x\d) < (x\d) \|\| \1 != \1\) \? \1 : \2\)", minimum)
    assert re.fullmatch(r"\(v0 \? v1 : v2\)", where)
    assert "v3 + (double)0" in sign  # a zero's sign is +0, NaN stays NaN


def test_integer_arithmetic_wraps_through_unsigned_types_and_bools_stay_bools():
    def f(i, j, b, c):
        return (i * j + i, -j, np.abs(i), np.logical_and(b, c), np.maximum(b, c), i < j)

    for dtype, unsigned in ((np.int64, "unsigned long long"), (np.int32, "unsigned int")):
        written = operation(the_nest(f, *(np.ones(4, dtype),) * 2, *(np.ones(4, bool),) * 2))
        ctype = cupy_executor.TYPES[np.dtype(dtype)]
        assert any(e == f"(({ctype})(({unsigned})x0 * ({unsigned})x1))" for _, e in written.values())
        assert any(e.startswith(f"(({ctype})(0 - ({unsigned})") for _, e in written.values())  # -j
        bools = [e for t, e in written.values() if t == "bool"]
        assert any("&&" in e for e in bools) and any("? x2 : x3" in e for e in bools)
        assert any(re.fullmatch(r"\(x0 < x1\)", e) for e in bools)


def test_python_numbers_and_special_constants_are_literals():
    nest = the_nest(lambda x, i: (x * np.inf + 2 ** 40, i * 3 + 1, x * np.float64(np.nan) - 0.1),
                    np.ones(3), np.ones(3, np.int32))
    text = cupy_executor.raw(nest)
    assert "__longlong_as_double(9218868437227405312LL)" in text  # inf, by its bits
    assert "__longlong_as_double(9221120237041090560LL)" in text  # nan
    assert "const long long x" in text and "1099511627776LL" in text
    assert re.search(r"\(\(int\)x\d\)", text)  # the Python int 3 cast to the int32 loop
    assert "const double x" in text and "= 0.1;" in text


def test_broadcasts_are_index_arithmetic_over_the_flat_index():
    def f(x, row, column, number):
        return (x * row + column) * number - x

    nest = the_nest(f, np.ones((3, 4)), np.ones(4), np.ones((3, 1)), np.float64(2.0))
    assert cupy_executor.elementwise(nest) is None
    text = cupy_executor.raw(nest)
    assert "const long long i1 = rest % n1;" in text and "const long long i0 = rest;" in text
    reads = dict(re.findall(r"const double (x\d+) = (a\d+\[[^]]*\]);", text))
    assert sorted(reads.values()) == ["a0[i0 * s0_0 + i1 * s0_1]", "a1[i1 * s1_0]", "a2[i0 * s2_0]", "a3[0]"]
    assert "o0[e] = v" in text  # stored C-ordered at the flat index


def test_a_nest_without_broadcasts_or_offsets_is_an_elementwise_kernel_and_a_sum_is_not():
    plain = the_nest(lambda x, y: x * 2.0 + y, np.ones((2, 3)), np.ones((2, 3)))
    assert cupy_executor.elementwise(plain)[:2] == ("float64 a0, float64 a2", "float64 o0")  # x1: 2.0
    summed = the_nest(lambda x: np.sum(x * 2.0 + 1.0), np.ones(5))
    assert cupy_executor.elementwise(summed) is None


def test_kernels_are_shared_by_programs_of_one_structure():
    """Sizes and offsets are arguments: the source does not depend on them."""
    small, large = (cupy_executor.raw(the_nest(reverse.grad(rosenbrock), np.ones(n))) for n in (5, 5000))
    assert small == large


def test_launch_gives_the_arguments_the_kernel_names():
    nest = the_nest(reverse.value_and_grad(rosenbrock), np.ones(6))
    x = np.arange(6.0)
    m, args, outs = cupy_executor.launch(nest, np, (x, x))
    params = cupy_executor.raw(nest).split("(")[1].split(")")[0].split(", ")
    assert len(args) == len(params) and m == 6  # the scatter has 6 entries, the loop 5 indices
    assert [o.shape for o in outs] == [(), (6,)] and outs[0] == 0.0  # the sum starts at zero
    assert all(type(a) is np.int64 for a, p in zip(args, params) if p.startswith("long long"))


@pytest.mark.skipif(cuda_on_cpu.COMPILER_CXX is None, reason="no C++ compiler")
def test_the_raw_kernels_are_cxx_without_a_warning():
    """NVRTC compiles C++ (gcc took the kernels as C): each is valid C++17, ``extern "C"``
    and all, with nothing for ``-Wall`` to say."""
    def f(x, y, i, b):
        return (np.sum(np.where(x > 0.5, np.maximum(x, y), -x) * np.inf), np.maximum(i, 3) * 2 + i,
                np.logical_or(b, x < 0), np.exp(y[:, None] * np.float32(0.5) + x) - 1.0)

    programs = [(reverse.value_and_grad(rosenbrock), np.ones(8)),
                (lambda x, v: mixed.hvp(rosenbrock, x, v), np.ones(8), np.ones(8)),
                (f, np.ones(4, np.float32), np.ones(4, np.float32), np.ones(4, np.int32), np.ones(4, bool))]
    texts = [cupy_executor.raw(nest) for f, *args in programs for nest in nests(f, *args)]
    assert len(texts) >= 4
    for text in texts:
        assert cuda_on_cpu.cxx_errors(text) == "", text


@cuda_on_cpu.NEEDS_COMPILER
def test_runs_on_the_cpu_equal_numpys_for_the_rosenbrock_gradient_and_hvp():
    x, v = np.random.default_rng(0).standard_normal((2, 3001))
    for build in (cuda_on_cpu.executor_run, cuda_on_cpu.raw_run):
        assert_bits(*cuda_on_cpu.replays(reverse.grad(rosenbrock), x, build=build))
        assert_bits(*cuda_on_cpu.replays(lambda x, v: mixed.hvp(rosenbrock, x, v), x, v, build=build))


@pytest.mark.skipif(cupy_executor.available(), reason="CuPy is installed")
def test_compile_asks_for_cupy_by_name_and_without_it_raises_naming_the_extra():
    with pytest.raises(ImportError, match=r'executor="cupy" needs CuPy: pip install "dualad\[gpu\]"'):
        dualad.compile(np.sin, executor="cupy")
    with pytest.raises(ValueError, match='executor="cupy" runs optimized programs'):
        dualad.compile(np.sin, executor="cupy", optimize=False)
    auto = dualad.compile(lambda x: np.sum(np.sin(x) * 2.0 + 1.0))
    x = np.ones(10)
    np.testing.assert_array_equal(auto(x), np.sum(np.sin(x) * 2.0 + 1.0))
    assert auto.stats["executor"] in ("numpy", "numba")


def test_cupy_kernels_are_asked_for_cupy_arrays_only(monkeypatch):
    strict = pytest.importorskip("array_api_strict")
    assert _asked("cupy", None) == "numpy"  # NumPy arrays: kernels of the GPU cannot read them
    assert _asked(None, None) is None and _asked("numba", None) == "numba"
    assert _asked(None, strict.asarray([1.0])) == "numpy"
    monkeypatch.setattr(cupy_executor, "available", lambda: True)
    compiled = dualad.compile(lambda x: x * 2.0 + 1.0, executor="cupy")
    np.testing.assert_array_equal(compiled(np.ones(3)), np.full(3, 3.0))
    assert compiled.stats["executor"] == "numpy"


def test_lowered_for_cupy_every_group_is_a_nest_built_at_its_first_call():
    """(A program of ``compile`` is optimized already.)"""
    program = dualad.compile(reverse.grad(rosenbrock), executor="numpy", fuse=False).program(np.ones(4))
    lowered, name = _for_executor(program, "cupy", False)
    assert name == "cupy" and [e.prim.name for e in lowered.eqns] == ["loop"]
    assert type(lowered.eqns[0].prim.run) is FirstRun  # CuPy is not imported before it runs
    single = dualad.compile(np.exp, executor="numpy", fuse=False).program(np.ones(4))
    assert _for_executor(single, "cupy", False)[1] == "numpy"  # no group of two steps


@cuda_on_cpu.NEEDS_COMPILER
def test_compiled_with_the_cupy_executor_the_kernels_run_and_equal_eager():
    with cuda_on_cpu.kernels_on_cpu() as ran:
        compiled = dualad.compile(lambda x, v: (reverse.grad(rosenbrock)(x), mixed.hvp(rosenbrock, x, v)),
                                  executor="cupy")
        x, v = np.random.default_rng(1).standard_normal((2, 100))
        compiled(x, v)
        got = compiled(x * 0.5, v)
    assert compiled.stats["executor"] == "cupy" and compiled.stats["replays"] == 1 and ran
    want = (reverse.grad(rosenbrock)(x * 0.5), mixed.hvp(rosenbrock, x * 0.5, v))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-13)

"""``dualad.compile`` of every case of the table (tests/_support/cases.py): the
first call (the trace) and a replay at new arguments equal eager evaluation,
and so does the compiled ``reverse.grad`` of the case's real sum, on every
executor installed (tests/_support/executors.py: NumPy's, and Numba's loops
within the tolerances of the harness), and on the CuPy executor's CUDA kernels
compiled for the CPU where a C compiler is (tests/_support/cuda_on_cpu.py).

The replay's arguments are the drawn ones reversed along every axis where the
case accepts them (so the numbers differ but the shapes, dtypes and domain
do not). A case that a program cannot hold runs eagerly with a warning:
which cases may (for some draws: a sort of one element reads nothing) is
pinned in :data:`EAGER`, so that a rule which starts reading raw numbers (and
so silently stops compiling) fails here.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _support import cuda_on_cpu
from _support.backends import BACKENDS, NUMPY, STRICT, to_numpy
from _support.cases import CASES
from _support.executors import EXECUTORS
from _support.harness import EXACT_RTOL, Prepared, params
from hypothesis import given, settings
from hypothesis import strategies as st

import dualad
import reverse
from dualad import ops
from dualad._base.tree import flatten
from dualad._program.passes import fusion as _fusion
from dualad._program.passes import memory as _memory

# Cases whose program may fall back to eager on NumPy float64 (each warns that the
# numbers of a traced value were read on the host), and why.
_SORTED = "a sort order is computed on the host (complex numbers lexsorted)"
_RANKS = "the ranks of the non-NaN entries are cast to integers on the host (astype to int)"
_SHAPE = "the result's shape depends on the values"
_HOST = "its rule reads the numbers on the host (an index, a sign, an exponent, a mask)"
EAGER: dict[str, str] = {
    "sort_complex": _SORTED, "nanmedian": _RANKS, "nanquantile": _RANKS, "nanpercentile": _RANKS,
    "extract": _SHAPE, "trim_zeros": _SHAPE, "place": _SHAPE,
    "roots": _SHAPE, "polydiv": _SHAPE,
    "interp": _HOST, "put": _HOST, "put_along_axis": _HOST,
    "fill_diagonal": _HOST, "choose": _HOST, "pad_modes": _HOST,
    "astype_to_int": _HOST, "frexp": _HOST, "copysign": _HOST,
    "unwrap": _HOST, "polyfit": _HOST,
}

# Cases whose gradient's program may fall back to eager on NumPy float64, and why.
_ZEROS = "prod's VJP counts the zeros on the host (none, one and more take three formulas)"
EAGER_GRADIENTS: dict[str, str] = {"prod": _ZEROS, "nanprod": _ZEROS, "prod_with_zeros": _ZEROS}

# Cases whose program may fall back to eager on array_api_strict (traced on NumPy copies), and why.
STRICT_EAGER: dict[str, str] = {
    "full_like": "the prototype it closes over has array_api_strict's own dtype, which reaches "
                 "NumPy's isdtype in astype's rule while tracing (CuPy's dtypes are NumPy's)",
}

SOME = settings(max_examples=max(2, settings.default.max_examples // 10))


@pytest.fixture(scope="module", autouse=True)
def _plan_and_fuse_every_size():
    """The memory plan and fusion skip small results; here they take them all, so that
    the sweep checks planned and fused replays of every primitive too."""
    saved = _memory.MIN_SIZE, _fusion.MIN_SIZE
    _memory.MIN_SIZE = _fusion.MIN_SIZE = 1
    yield
    _memory.MIN_SIZE, _fusion.MIN_SIZE = saved
TWO = settings(max_examples=2)
ONE = settings(max_examples=1)


def _replay_args(prep, backend, dtype):
    """The drawn floating arguments reversed, where ``f`` accepts them; else the drawn ones."""
    flipped = [backend.asarray(np.flip(to_numpy(x)).copy(), dtype) if hasattr(x, "shape") else x
               for x in prep.xs]
    try:
        prep.f(*flipped)
    except Exception:  # outside the case's domain
        return list(prep.xs)
    return flipped


def _assert_same(got, want, what):
    got, want = flatten(got)[0], flatten(want)[0]
    assert len(got) == len(want), f"{what}: {len(got)} outputs, eager {len(want)}"
    for j, (g, w) in enumerate(zip(got, want)):
        g, w = to_numpy(g), to_numpy(w)
        assert g.shape == w.shape, f"{what}: output {j} has shape {g.shape}, eager {w.shape}"
        assert g.dtype == w.dtype, f"{what}: output {j} has dtype {g.dtype}, eager {w.dtype}"
        tol = EXACT_RTOL.get(str(w.dtype), 0.0)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * max(1.0, float(np.max(np.abs(w), initial=0.0))),
                                   err_msg=f"{what}: output {j} differs from eager")


def _run(compiled, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return compiled(*args)


def _real_sum(f):
    def loss(*xs):
        return sum(ops.sum(ops.real(leaf)) for leaf in flatten(f(*xs))[0])
    return loss


@pytest.mark.parametrize("case, backend, dtype", params("compile", CASES, [NUMPY.param], ["float64"]))
@SOME
@given(data=st.data())
def test_compile_of_every_case(case, backend, dtype, data):
    check_compiled_case(case, backend, dtype, data, "numpy")


@pytest.mark.parametrize("executor", [e for e in EXECUTORS if e != "numpy"])
@pytest.mark.parametrize("case, backend, dtype", params("compile", CASES, [NUMPY.param], ["float64"]))
@ONE
@given(data=st.data())
def test_compile_of_every_case_on_native_executors(case, backend, dtype, executor, data):
    """Every case on each native executor installed, one draw each: a draw compiles its
    kernels (about 0.25 s each on a fresh machine)."""
    check_compiled_case(case, backend, dtype, data, executor)


@cuda_on_cpu.NEEDS_COMPILER
@pytest.mark.parametrize("case, backend, dtype", params("compile", CASES, [NUMPY.param], ["float64"]))
@ONE
@given(data=st.data())
def test_compile_of_every_case_on_cuda_kernels_built_for_the_cpu(case, backend, dtype, data):
    """Every case with ``executor="cupy"``, its kernels' CUDA source compiled as C and run
    on the NumPy arrays (no GPU here), one draw each."""
    with cuda_on_cpu.kernels_on_cpu():
        check_compiled_case(case, backend, dtype, data, "cupy")


@pytest.mark.parametrize("case, backend, dtype",
                         params("compile", CASES, [b for b in BACKENDS if b.id == "cupy"], ["float64"]))
@ONE
@given(data=st.data())
def test_compile_of_every_case_on_the_gpu_as_cuda_kernels(case, backend, dtype, data):
    """Every case on CuPy arrays with ``executor="cupy"``: its kernels built by NVRTC and
    run on the GPU, one draw each. A replay that differed from CuPy's eager calls would
    run eagerly, which fails here as on NumPy; so does a trace that could not hold the
    CuPy arrays the case closes over (its index arrays, masks and keywords)."""
    check_compiled_case(case, backend, dtype, data, "cupy")


@pytest.mark.parametrize("case, backend, dtype", params("compile", CASES, [STRICT.param], ["float32"]))
@TWO
@given(data=st.data())
def test_compile_of_every_case_array_api_strict_float32(case, backend, dtype, data):
    """Traced on NumPy copies, replayed on array_api_strict (dualad._staging.retarget)."""
    check_compiled_case(case, backend, dtype, data)


def check_compiled_case(case, backend, dtype, data, executor=None):
    prep = Prepared(case, data.draw(case.args, label="args"), backend, dtype)
    if not prep.xs:
        pytest.skip(f"{case.name} has no floating argument")
    again = _replay_args(prep, backend, dtype)
    compiled = dualad.compile(prep.f, executor=executor)
    _assert_same(_run(compiled, prep.xs), prep.f(*prep.xs), f"trace of {case.name}")
    _assert_same(_run(compiled, again), prep.f(*again), f"replay of {case.name}")
    if compiled.stats["eager"]:
        assert case.name in EAGER or (backend is STRICT and case.name in STRICT_EAGER), (
            f"{case.name} ran eagerly under compile: {sorted(set(compiled._eager.values()))}")
        return
    assert compiled.stats["replays"] + compiled.stats["traces"] == 2
    if case.kind != "diff":
        return
    grad = reverse.grad(_real_sum(prep.f), argnums=tuple(range(len(prep.xs))))
    compiled_grad = dualad.compile(grad, executor=executor)
    _assert_same(_run(compiled_grad, prep.xs), grad(*prep.xs), f"trace of the gradient of {case.name}")
    _assert_same(_run(compiled_grad, again), grad(*again), f"replay of the gradient of {case.name}")
    # On another library a derivative's rule may meet an array the case closes over beside
    # the trace's NumPy arrays (dualad._staging.retarget): that gradient runs eagerly.
    assert backend is not NUMPY or not compiled_grad.stats["eager"] or case.name in EAGER_GRADIENTS, (
        f"the gradient of {case.name} ran eagerly under compile: "
        f"{sorted(set(compiled_grad._eager.values()))}")


@pytest.mark.parametrize("make", [ops.zeros_like, ops.ones_like, lambda x: ops.full_like(x, 2.0),
                                  np.ones_like], ids=["zeros_like", "ones_like", "full_like", "np.ones_like"])
def test_arrays_made_from_a_traced_values_shape_are_constants(make):
    """They read no numbers: the program keeps them, where an argmax (which does) is refused."""
    compiled = dualad.compile(lambda x: x * 3.0 + make(x))
    for x in (np.ones(3), np.arange(3.0)):
        np.testing.assert_array_equal(_run(compiled, [x]), x * 3.0 + make(x))
    assert compiled.stats == {"traces": 1, "replays": 1, "misses": 0, "eager": 0, "executor": "numpy",
                              "chosen": None, "loops": None}
    argmax = dualad.compile(lambda x: x * ops.argmax(x))
    for x in (np.ones(3), np.arange(3.0)):
        np.testing.assert_array_equal(_run(argmax, [x]), x * np.argmax(x))
    assert argmax.stats["replays"] == 0

"""``dualad.compile`` on arrays of other libraries: traced on NumPy copies, replayed
on the arguments' own library (``dualad._staging.retarget``), checked against eager on
the first call. CuPy takes the same path; it is exercised here on
array_api_strict, the CPU stand-in the issue names."""

from __future__ import annotations

import sys
import types
import warnings

import numpy as np
import pytest
from _support.backends import _gpu_available

import dualad
import reverse
from dualad import ops
from dualad._program.passes import fusion as _fusion
from dualad._staging.record import elsewhere
from dualad._staging.retarget import difference

xp = pytest.importorskip("array_api_strict")


def loss(x, y):
    return ops.sum(ops.sin(x) * y ** 2) + 1.0


def _quiet(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # array_api_strict's dtype comparisons
        return fn(*args)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_strict_program_replays_on_strict_arrays_and_equals_eager(dtype):
    dt = getattr(xp, dtype)
    f = dualad.compile(loss)
    grad = dualad.compile(reverse.grad(loss))
    y = xp.asarray([0.5, 0.25, 2.0], dtype=dt)
    for values in ([1.0, 2.0, 3.0], [3.0, -2.0, 0.5], [0.0, 0.0, 7.0]):
        x = xp.asarray(values, dtype=dt)
        for compiled, eager in ((f, loss), (grad, reverse.grad(loss))):
            got, want = _quiet(compiled, x, y), _quiet(eager, x, y)
            assert type(got) is type(want) and got.dtype == want.dtype == dt
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert f.stats == {"traces": 1, "replays": 2, "misses": 0, "eager": 0, "executor": "numpy",
                       "chosen": None, "loops": None}
    assert grad.stats["replays"] == 2 and grad.stats["eager"] == 0


def test_strict_constants_move_to_strict():
    """Constants of the NumPy trace (ones made to match a traced value) are the
    library's own in the retargeted program."""
    def f(x):
        return x[1:] * ops.sum(x * 2.0) + ops.ones_like(x[1:])

    compiled = dualad.compile(f)
    for values in ([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]):
        x = xp.asarray(values, dtype=xp.float32)
        got = compiled(x)
        want = f(x)
        assert got.dtype == xp.float32 and type(got) is type(want)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert compiled.stats["replays"] == 1


def test_a_guard_on_a_strict_value_retraces():
    f = dualad.compile(lambda x: ops.sum(x) if ops.sum(x) > 0 else ops.sum(-x * 2.0))
    assert float(f(xp.asarray([1.0, 2.0]))) == 3.0
    assert float(f(xp.asarray([-1.0, -2.0]))) == 6.0
    assert float(f(xp.asarray([-3.0, 1.0]))) == 4.0
    assert f.stats["traces"] == 2 and f.stats["replays"] == 1


def test_a_replay_that_differs_from_eager_runs_eagerly_with_a_warning():
    """dualad.numpy's sum returns a NumPy scalar for strict arrays; the replay gives a
    0-d strict array: the first call sees it and keeps no program."""
    import dualad.numpy as dnp

    def f(x):
        return dnp.sum(dnp.sin(x))

    compiled = dualad.compile(f)
    x = xp.asarray([1.0, 2.0])
    with pytest.warns(RuntimeWarning, match="differs from eager evaluation"):
        got = compiled(x)
    assert type(got) is type(f(x)) and got == f(x)
    assert compiled(xp.asarray([3.0, 4.0])) == f(xp.asarray([3.0, 4.0]))
    assert compiled.stats["eager"] == 1 and compiled.stats["replays"] == 0


def test_the_librarys_own_dtype_in_traced_code_runs_eagerly_with_a_warning():
    """Traced on NumPy, ``astype(x, xp.float32)`` meets NumPy, which refuses a strict dtype."""
    compiled = dualad.compile(lambda x: ops.astype(x, xp.float32))
    with pytest.warns(RuntimeWarning, match="NumPy copies"):
        got = _quiet(compiled, xp.asarray([1.0, 2.0]))
    assert got.dtype == xp.float32


def test_arrays_of_two_libraries_run_eagerly_with_a_warning():
    compiled = dualad.compile(lambda x, y: ops.sum(x) + ops.sum(y))
    with pytest.warns(RuntimeWarning, match="more than one library"):
        with pytest.raises(TypeError):  # as eagerly: dualad never moves data between libraries
            compiled(xp.asarray([1.0]), np.array([2.0]))


def test_host_reads_on_the_numpy_copy_are_seen():
    """interp's interval search reads the numbers: the program is refused, not baked."""
    knots = xp.asarray(np.linspace(-2.0, 2.0, 5))
    compiled = dualad.compile(lambda x, knots, fp: ops.interp(x, knots, fp))
    fp = xp.asarray([0.0, 1.0, 4.0, 9.0, 16.0])
    with pytest.warns(RuntimeWarning, match="read on the host"):
        compiled(xp.asarray([0.5, 1.5]), knots, fp)
    got = compiled(xp.asarray([-1.5, 0.25]), knots, fp)
    np.testing.assert_allclose(np.asarray(got), np.interp([-1.5, 0.25], np.asarray(knots), np.asarray(fp)))


def test_dask_runs_chunk_by_chunk():
    """(tests/dask/test_dask_compile.py has the rest.)"""
    da = pytest.importorskip("dask.array")
    compiled = dualad.compile(lambda x: ops.sum(ops.sin(x)))
    for x in (np.array([1.0, 2.0]), np.array([0.5, -3.0])):
        got = compiled(da.from_array(x, chunks=1))
        assert float(got.compute()) == pytest.approx(np.sum(np.sin(x)), rel=1e-15)
    assert compiled.stats["executor"] == "dask" and compiled.stats["replays"] == 1


def test_a_gpu_array_without_the_array_api_runs_eagerly_with_a_warning():
    """Only a ``__cuda_array_interface__``: nothing to trace it on, nothing to replay it with
    (it was taken as an input and failed reading its device)."""
    class DeviceBuffer:
        __cuda_array_interface__: dict = {}
        shape, dtype = (2,), np.dtype(np.float64)

    compiled = dualad.compile(lambda x: x.shape)
    with pytest.warns(RuntimeWarning, match="without the array API's namespace"):
        assert compiled(DeviceBuffer()) == (2,)


def test_a_cupy_array_is_another_librarys_though_it_has_no_namespace_method(monkeypatch):
    """CuPy's ndarray has no ``__array_namespace__`` (array_api_compat gives it one): taken
    for a bare device buffer, every CuPy call ran eagerly, which the first GPU run showed.
    A stand-in class of a module named ``cupy``, as array_api_compat recognizes CuPy's."""
    cupy = types.ModuleType("cupy")

    class ndarray:  # noqa: N801  (CuPy's name)
        __module__ = "cupy"
        __cuda_array_interface__: dict = {}

    cupy.ndarray = ndarray
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    assert elsewhere(ndarray()) and not elsewhere(np.ones(2))


def test_a_program_of_another_librarys_arrays_is_not_fused_by_numexpr():
    """numexpr reads NumPy's arrays only: at fusion's sizes the retargeted program's
    numexpr kernel raised on its first replay, and every call ran eagerly (seen on CuPy
    at a million entries; array_api_strict refuses the conversion alike)."""
    host = np.linspace(0.0, 1.0, 2 * _fusion.MIN_SIZE)
    x = xp.asarray(host)
    compiled = dualad.compile(lambda x: ops.sum(ops.sin(x) * 2.0 + x * x))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a fallback to eager warns
        got = [compiled(x), compiled(x)]
    assert compiled.stats["replays"] == 1 and compiled.stats["eager"] == 0
    want = np.sum(np.sin(host) * 2.0 + host * host)
    for g in got:
        assert float(g) == pytest.approx(want, rel=1e-12)


class _Model:
    def __init__(self, weights):
        self.weights = weights

    def __call__(self, x):
        return ops.sum(ops.tanh(ops.matmul(self.weights, x)) ** 2)


PICK = xp.asarray([2, 0])  # a global of the other library, read by name


@pytest.mark.parametrize("derivative", [False, True], ids=["value", "gradient"])
def test_arrays_of_the_arguments_library_it_closes_over_are_constants_on_their_library(derivative):
    """A closure cell, an object's attribute and a global (an index array), all
    array_api_strict arrays: copied to NumPy where the trace meets them, constants of
    the program, which holds them on their library again (before, the trace mixed
    libraries and every call ran eagerly: on CuPy, a loss closing over its data). The
    function sees its own arrays while it is traced: nothing is put in their places."""
    model = _Model(xp.asarray(np.linspace(-1.0, 1.0, 6).reshape(2, 3)))
    scale = xp.asarray([0.5, 2.0, 1.0])
    seen = []

    def loss(x):
        seen.append((model.weights, scale, PICK))
        return model(x * scale) + ops.sum(ops.take(x, PICK))

    f = reverse.grad(loss) if derivative else loss
    compiled = dualad.compile(f)
    held = (model.weights, scale, PICK)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a fallback to eager warns
        for values in ([1.0, 2.0, 3.0], [0.5, -1.0, 2.0]):
            x = xp.asarray(values)
            got, want = _quiet(compiled, x), _quiet(f, x)
            assert type(got) is type(want)
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-13, atol=0)
    assert compiled.stats["replays"] == 1 and compiled.stats["eager"] == 0
    assert all(all(a is b for a, b in zip(arrays, held)) for arrays in seen)


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu_available(), reason="needs CuPy and an NVIDIA GPU")
def test_a_cupy_loss_over_its_data_compiles_to_cuda_kernels():
    """What a user of the GPU writes: a least-squares loss over data on the device, its
    gradient compiled, the data passed as arguments (as the README asks) or closed over
    (equal to eager either way: under ``reverse.grad`` a closure may run eagerly)."""
    import cupy

    rng = np.random.default_rng(0)
    data, target = cupy.asarray(rng.standard_normal((256, 8))), cupy.asarray(rng.standard_normal(256))

    def loss(w, data, target):
        return ops.mean((data @ w - target) ** 2) + 0.1 * ops.sum(ops.tanh(w) ** 2)

    grad = reverse.grad(loss)
    compiled = dualad.compile(grad)
    closure = reverse.grad(lambda w: loss(w, data, target))
    compiled_closure = dualad.compile(closure)
    for _ in range(3):
        w = cupy.asarray(rng.standard_normal(8))
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # a fallback to eager warns
            got, want = compiled(w, data, target), grad(w, data, target)
        assert type(got) is type(want) and got.dtype == want.dtype
        np.testing.assert_allclose(got.get(), want.get(), rtol=1e-12, atol=1e-14)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            np.testing.assert_allclose(compiled_closure(w).get(), want.get(), rtol=1e-12, atol=1e-14)
    assert compiled.stats["executor"] == "cupy" and compiled.stats["eager"] == 0


@pytest.mark.parametrize("got, want, agree", [
    ([1.0, np.nan, np.inf, -np.inf, 0.0], [1.0, np.nan, np.inf, -np.inf, 0.0], True),
    ([1.0 + 1e-14, np.nan, np.inf, 1e-14], [1.0, np.nan, np.inf, 0.0], True),   # rounding
    ([1.001, 2.0], [1.0, 2.0], False),
    ([1.0, np.inf], [1.0, -np.inf], False),                                     # infinities of two signs
    ([np.nan, 1.0], [1.0, 1.0], False),
    ([np.inf, 1.0 + 1e-10], [np.inf, 1.0], False),         # an infinity does not widen the tolerance
    ([1 + 1j], [1 + 1.01j], False),
    ([1, 2], [1, 2], True), ([1, 2], [1, 3], False), ([True], [False], False),
])
def test_the_first_replay_of_another_librarys_program_is_compared_on_its_library(got, want, agree):
    """compile's check of a retargeted program against eager evaluation: NumPy's
    allclose (equal NaNs, infinities equal only to themselves), by the arrays' library."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # inf - inf is never computed aloud
        for version in ("2023.12", "2024.12"):  # before 2024.12, where() takes no Python number
            with xp.ArrayAPIStrictFlags(api_version=version):
                assert (difference(xp.asarray(got), xp.asarray(want)) is None) is agree
        assert (difference(np.array(got), np.array(want)) is None) is agree
    assert difference(xp.asarray(np.zeros((0, 3))), xp.asarray(np.zeros((0, 3)))) is None


def test_half_precision_results_are_compared_within_their_rounding():
    half = np.float16([1.0, 2.0, 3.0])
    assert difference(half * np.float16(1.001), half) is None
    assert difference(half * np.float16(1.1), half) is not None


def test_a_closed_over_array_a_derivatives_rule_meets_beside_numpys_runs_eagerly_and_says_so():
    """The VJP of ``sin(x) * w`` multiplies the saved ``w`` (array_api_strict's, closed over)
    by a cotangent the trace made on NumPy, where no primitive is recorded: that call
    runs eagerly, equal to eager, and the warning says to pass ``w`` as an argument."""
    w = xp.asarray([0.5, 2.0, 1.0])
    grad = reverse.grad(lambda x: ops.sum(ops.sin(x) * w))
    compiled = dualad.compile(grad)
    x = xp.asarray([1.0, 2.0, 3.0])
    with pytest.warns(RuntimeWarning, match="pass them as arguments"):
        got = _quiet(compiled, x)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(_quiet(grad, x)))
    as_argument = dualad.compile(reverse.grad(lambda x, w: ops.sum(ops.sin(x) * w)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        _quiet(as_argument, x, w), _quiet(as_argument, x, w)
    assert as_argument.stats["replays"] == 1

"""A sum, max or min over one short axis (2 to 7 numbers) of a large float32 or float64 array
combines the axis's slices (NumPy reduces such an axis one outer element at a time, 8-25x
slower): the same numbers as NumPy's, bit for bit, in every layout, with signed zeros, NaN
and inf; other dtypes keep NumPy's own reduction (dualad/_primitives/shape.py)."""

import numpy as np
import pytest

import dualad
import dualad.numpy as dnp

SHAPES = [(1000, 5, 2), (1000, 5), (3, 700, 7), (4096, 3), (1000, 8, 2), (500, 3, 4, 2)]


def _values(shape, dtype, rng):
    x = rng.standard_normal(shape) * 10.0 ** rng.integers(-6, 6, shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    x = x.astype(dtype)
    if x.dtype.kind in "fc":
        x.flat[::7], x.flat[::11] = 0.0, -0.0  # max and min of signed zeros, in NumPy's order
        x.flat[::97], x.flat[::1013], x.flat[::2011] = -0.0, np.nan, np.inf
    return x


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes()


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.complex128, np.int64])
@pytest.mark.parametrize("shape", SHAPES)
@np.errstate(all="ignore")  # float16's overflow, inf - inf: NumPy's warnings, not the test's
def test_equal_to_numpy_bit_for_bit(shape, dtype):
    rng = np.random.default_rng(len(shape))
    x = _values(shape, dtype, rng)
    for layout in (x, np.asfortranarray(x), x[::-1]):
        for axis in range(len(shape)):
            for keepdims in (False, True):
                for ours, numpy in ((dnp.sum, np.sum), (dnp.max, np.max), (dnp.min, np.min)):
                    if numpy is not np.sum and x.dtype.kind == "c":
                        continue
                    _same_bits(ours(layout, axis=axis, keepdims=keepdims),
                               numpy(layout, axis=axis, keepdims=keepdims))


def test_in_a_program_and_its_derivative():
    x = np.random.default_rng(3).standard_normal((1000, 5, 2))
    f = dualad.jit(lambda x: np.sum(np.sum(x * x, axis=2), axis=1))
    _same_bits(f(x), np.sum(np.sum(x * x, axis=2), axis=1))
    v = np.ones_like(x)
    _, tangent = dualad.jvp(lambda x: np.sum(x * x, axis=2), (x,), (v,))
    _same_bits(tangent, np.sum(2 * x * v, axis=2))

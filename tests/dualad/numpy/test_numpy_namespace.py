"""``import dualad.numpy as np``: a NumPy user's own code, array building and
buffers filled in place included, differentiates in every mode."""

from __future__ import annotations

import numpy
import pytest

import dualad
import dualad.numpy as np
import mixed
import reverse
from dualad.numpy import Buffer
from dualad.testing import check_grads


def sir_infected(params, steps=30):
    """An SIR epidemic as a NumPy user writes it: unpack, fill a trajectory, reduce."""
    beta, gamma = np.asarray(params)
    s, i, r = 0.99, 0.01, 0.0
    trajectory = np.zeros((steps, 3))
    for t in range(steps):
        infected, recovered = beta * s * i, gamma * i
        s, i, r = s - infected, i + infected - recovered, r + recovered
        trajectory[t] = np.array([s, i, r])
    return trajectory[:, 1].sum()


def test_an_sir_model_differentiates_in_every_mode():
    p = numpy.array([0.5, 0.1])
    h = 1e-6
    fd = numpy.array([(sir_infected(p + e) - sir_infected(p - e)) / (2 * h) for e in numpy.eye(2) * h])
    np.testing.assert_allclose(reverse.grad(sir_infected)(p), fd, rtol=1e-6)
    np.testing.assert_allclose(dualad.jacfwd(sir_infected)(p), fd, rtol=1e-6)
    check_grads(sir_infected, (p,), order=2, modes=("fwd", "rev"))
    v = numpy.array([0.3, -1.0])
    np.testing.assert_allclose(mixed.hvp(sir_infected, p, v), mixed.hessian(sir_infected)(p) @ v,
                               rtol=1e-10)


@pytest.mark.parametrize("create", [
    lambda n: np.zeros(n), lambda n: np.ones(n), lambda n: np.empty(n), lambda n: np.full(n, 2.0),
    lambda n: np.zeros_like(numpy.ones(n)), lambda n: np.empty_like(numpy.ones(n)),
], ids=["zeros", "ones", "empty", "full", "zeros_like", "empty_like"])
def test_buffers_take_values_with_derivatives(create):
    def f(x):
        out = create(3)
        for k in range(3):
            out[k] = x[k] * x[(k + 1) % 3]
        return out

    x = numpy.array([1.0, 2.0, 3.0])
    expected = numpy.array([[2.0, 1.0, 0.0], [0.0, 3.0, 2.0], [3.0, 0.0, 1.0]])
    np.testing.assert_array_equal(dualad.jacfwd(f)(x), expected)
    np.testing.assert_array_equal(reverse.jacrev(f)(x), expected)


def test_a_buffer_like_a_value_keeps_its_shape_and_the_numbers_dtype():
    def f(x):
        out = np.zeros_like(x)
        out[1:] = x[:-1] ** 2
        return out

    x = numpy.array([1.0, 2.0, 3.0], numpy.float32)
    y, t = dualad.jvp(f, (x,), (numpy.ones(3, numpy.float32),))
    assert y.dtype == numpy.float32 and t.dtype == numpy.float32
    np.testing.assert_array_equal(t, [0.0, 2.0, 4.0])


def test_a_buffer_of_numbers_behaves_as_numpy_array():
    b = np.zeros(4)
    b[1] = 2.0
    b[2:] = [3.0, 4.0]
    np.testing.assert_array_equal(numpy.asarray(b), [0.0, 2.0, 3.0, 4.0])
    assert float(b.sum()) == 9.0 and float(b[3]) == 4.0 and len(b) == 4 and b.shape == (4,)
    np.testing.assert_allclose(numpy.sin(b), numpy.sin([0.0, 2.0, 3.0, 4.0]))
    assert isinstance(np.array(b), numpy.ndarray)
    c = np.array(b)
    c[0] = 5.0
    assert float(b[0]) == 0.0  # np.array copies


def test_array_of_values_is_stacked_and_copies():
    def f(x):
        a = np.array([[x[0], 1.0], [x[1] * x[0], x[1]]])
        return a @ a

    x = numpy.array([1.5, -0.5])
    check_grads(f, (x,), order=2, modes=("fwd", "rev"))
    y = dualad.jvp(lambda x: np.array(x), (x,), (x,))
    np.testing.assert_array_equal(y[0], x)


def test_r_and_c_join_values():
    x = numpy.array([1.0, 2.0])
    y, t = dualad.jvp(lambda a: np.r_[a, a ** 2, 7.0], (x,), (numpy.ones(2),))
    np.testing.assert_array_equal(y, [1.0, 2.0, 1.0, 4.0, 7.0])
    np.testing.assert_array_equal(t, [1.0, 1.0, 2.0, 4.0, 0.0])
    y, t = dualad.jvp(lambda a: np.c_[a, a ** 2], (x,), (numpy.ones(2),))
    np.testing.assert_array_equal(y, numpy.c_[x, x ** 2])
    np.testing.assert_array_equal(t, [[1.0, 2.0], [1.0, 4.0]])
    assert np.r_[1.0, 2.0].tolist() == [1.0, 2.0]  # nothing traced: NumPy's own


def test_astype_by_name_allclose_and_numpys_other_names():
    def f(x):
        assert np.allclose(x, x) and np.pi > 3
        return (x.astype("float32") * np.float32(2)).astype(float)

    y, t = dualad.jvp(f, (numpy.ones(2),), (numpy.ones(2),))
    assert y.dtype == numpy.float64
    np.testing.assert_array_equal(t, [2.0, 2.0])
    assert np.linalg is numpy.linalg and np.float32 is numpy.float32
    assert "zeros" in dir(np) and "einsum" in dir(np)


def test_a_buffer_cannot_be_read_as_numbers_once_it_holds_a_derivative():
    def f(x):
        out = np.zeros(2)
        out[0] = x
        return float(out[1])

    with pytest.raises(TypeError, match="would drop its derivative"):
        dualad.jvp(f, (1.0,), (1.0,))


def test_plain_numpy_points_to_this_module():
    def f(x):
        out = numpy.zeros(2)
        out[0] = x
        return out

    # NumPy reraises our TypeError as "setting an array element with a sequence"
    with pytest.raises((TypeError, ValueError)) as info:
        dualad.jvp(f, (1.0,), (1.0,))
    assert "import dualad.numpy as np" in f"{info.value} {info.value.__cause__}"
    assert isinstance(np.zeros(1), Buffer)


@pytest.mark.parametrize("dtype, numpy_replaces_it", [
    (numpy.float64, True), (numpy.float32, True), (bool, True), (numpy.int64, False),
    (numpy.complex128, False),
])
@pytest.mark.parametrize("transform", [
    lambda f: dualad.jvp(f, (1.5,), (1.0,)), lambda f: reverse.grad(lambda x: f(x).sum())(1.5),
    lambda f: dualad.vmap(f)(numpy.ones(2)),
], ids=["Dual", "Tensor", "vmap"])
def test_writing_a_traced_value_into_a_numpy_array_names_dualad_numpy(transform, dtype, numpy_replaces_it):
    """``buf[0] = x`` into a NumPy array asks ``x`` for a number (``__float__``, ``__int__``,
    ...), which every value type refuses with the way out. For float and bool arrays NumPy
    raises its own ValueError ("setting an array element with a sequence") in place of any
    error of a value that has ``__getitem__``, with ours as its direct cause, which a
    traceback prints above it: no value type can make NumPy raise its own there. vmap's
    refusal did not name dualad.numpy."""
    def f(x):
        buf = numpy.zeros(3, dtype=dtype)
        buf[0] = x
        return x

    with pytest.raises(ValueError if numpy_replaces_it else TypeError) as info:
        transform(f)
    ours = info.value.__cause__ if numpy_replaces_it else info.value
    assert isinstance(ours, TypeError) and "import dualad.numpy as np" in str(ours)


@pytest.mark.parametrize("f", [
    lambda v: numpy.mean(v, dtype=numpy.float32), lambda v: numpy.sum(v, axis=0, dtype=numpy.float64),
    lambda v: numpy.std(v, axis=1, dtype=numpy.float64), lambda v: numpy.prod(v, dtype=numpy.float64),
    lambda v: numpy.reshape(v, (3, 2), order="F"), lambda v: numpy.reshape(v, (-1,), order="F"),
    lambda v: numpy.linalg.svd(v, compute_uv=False),
], ids=["mean-dtype", "sum-dtype", "std-dtype", "prod-dtype", "reshape-F", "ravel-F", "svdvals-wide"])
def test_numpy_keyword_arguments_are_numpys(f):
    x = numpy.arange(6.0).reshape(2, 3) + 1.25
    d = f(dualad.Dual(x, numpy.ones_like(x)))
    np.testing.assert_array_equal(d.primal, f(x))
    assert d.primal.dtype == f(x).dtype
    check_grads(f, (x,), order=1, modes=("fwd", "rev"))


def test_out_into_a_numpy_array_says_what_to_do():
    x = numpy.ones((2, 3))
    with pytest.raises(TypeError, match="out= is not supported"):
        numpy.sum(dualad.Dual(x, x), out=numpy.zeros(3))

    def accumulate(v):
        acc = numpy.zeros(3)
        for row in v:
            acc += row  # numpy.add(acc, row, out=acc)
        return acc.sum()

    with pytest.raises(TypeError, match=r"out=.*import dualad.numpy as np"):
        reverse.grad(accumulate)(x)

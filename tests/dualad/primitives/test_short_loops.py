"""Binary ufuncs of broadcast operands computed by a repeat and a long inner loop
(dualad/_primitives/short_loops.py): NumPy's numbers bit for bit, its warnings, in eager
evaluation, its derivatives and a replay."""

import warnings

import numpy as np
import pytest

import dualad
import reverse
from dualad._primitives.short_loops import paired, plan

UFUNCS = [np.add, np.subtract, np.multiply, np.divide]


def _shapes(rng, n_cases):
    """Pairs of shapes that broadcast, of up to four axes; every other pair of the forms that
    are planned where they are large enough (points against centres, a column against a
    matrix), of one to four numbers along their last axis."""
    for case in range(n_cases):
        if case % 2:
            (n, k), d = (int(v) for v in rng.choice([3, 40, 700], 2)), int(rng.integers(1, 5))
            pair = [((n, 1, d), (1, k, d)), ((n, 1, d), (k, d)), ((n, k, d), (n, k, 1)),
                    ((n, k, d), (k, 1))][case // 2 % 4]
            yield pair if rng.random() < 0.5 else pair[::-1]
            continue
        n = int(rng.integers(1, 5))
        out = tuple(int(s) for s in rng.choice([1, 2, 3, 5, 17, 40, 300], n))
        while np.prod(out) > 200_000:
            out = out[1:]
        yield tuple(s if rng.random() < 0.6 else 1 for s in out)[int(rng.integers(0, n)):], \
            tuple(s if rng.random() < 0.6 else 1 for s in out)[int(rng.integers(0, n)):]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_paired_gives_numpys_numbers_bit_for_bit(dtype):
    rng = np.random.default_rng(11)
    planned = 0
    for shape_x, shape_y in _shapes(rng, 300):
        x = rng.standard_normal(shape_x).astype(dtype)
        y = rng.standard_normal(shape_y).astype(dtype)
        planned += plan(shape_x, shape_y) is not None
        for ufunc in UFUNCS:
            got, want = paired(ufunc, x, y), ufunc(x, y)
            assert got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
    assert planned > 40  # the draws reach the planned path


def test_the_plan_repeats_the_operand_broadcast_inside():
    # GMM's differences of points and centres: the points repeated along the centres' axis
    assert plan((1000, 1, 2), (1, 5, 2)) == (0, 1, 5, (1000, 1, 2), (1, 5, 2))
    assert plan((5, 2), (1000, 1, 2)) == (1, 1, 5, (1, 5, 2), (1000, 1, 2))
    # a cotangent times a broadcast column: the column repeated along the last axis
    assert plan((1000, 5, 2), (1000, 5, 1))[:3] == (1, 2, 2)
    # NumPy's own inner loops are long, the result is small, or shapes do not broadcast
    assert plan((50, 1), (1, 50)) is None
    assert plan((1000, 2), (1000, 2)) is None
    assert plan((10, 1, 2), (1, 5, 2)) is None
    assert plan((1000, 1, 2), (1, 5, 3)) is None
    assert plan((256, 10), (10,)) is None  # a bias added: NumPy's loops of 10 are as fast
    assert plan((10000, 1, 10), (1, 25, 10)) is not None  # loops of 10, but 2.5 million numbers


def test_warnings_errors_and_the_out_argument_are_numpys():
    x = np.zeros((1000, 1, 2))
    y = np.concatenate([np.zeros((1, 1, 2)), np.ones((1, 4, 2))], axis=1)
    with pytest.warns(RuntimeWarning, match="invalid value"):
        got = paired(np.divide, x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(got, x / y)
    with np.errstate(divide="raise", invalid="raise"), pytest.raises(FloatingPointError):
        paired(np.divide, x, y)
    out = np.empty((1000, 5, 2))
    assert paired(np.add, x, y, out) is out
    np.testing.assert_array_equal(out, x + y)
    with pytest.raises(ValueError, match="broadcast"):
        paired(np.add, np.ones((1000, 1, 2)), np.ones((1, 5, 3)))
    # NumPy's result is in the machine's byte order whatever its operands' (found by a review)
    swapped = (x.astype(">f8"), y.astype(">f8"))
    assert paired(np.subtract, *swapped).dtype == np.subtract(*swapped).dtype


def test_eager_values_derivatives_and_replays_go_by_it_with_numpys_numbers(monkeypatch):
    from dualad._program.executors import generated

    replayed = []
    monkeypatch.setattr(generated, "paired", lambda *args: replayed.append(args[0]) or paired(*args))
    rng = np.random.default_rng(3)
    x, means = rng.standard_normal((1000, 2)), rng.standard_normal((5, 2))

    def distances(x, means):
        return np.sum((x[:, None, :] - means[None, :, :]) ** 2 * x[:, None, :1])
    want = distances(x, means)
    gx, gm = reverse.grad(distances, argnums=(0, 1))(x, means)
    d = x[:, None, :] - means[None]
    np.testing.assert_allclose(gm, -2 * np.sum(d * x[:, None, :1], axis=0), rtol=1e-12)
    np.testing.assert_allclose(gx, 2 * np.sum(d * x[:, None, :1], axis=1)
                               + np.sum(d ** 2, axis=(1, 2))[:, None] * [1, 0], rtol=1e-12)
    compiled = dualad.compile(distances, executor="numpy", measure=False)
    for _ in range(2):
        assert compiled(x, means) == want
    assert np.subtract in replayed  # the replay's step called paired
    jvp_value, _ = dualad.jvp(distances, (x, means), (np.ones_like(x), np.zeros_like(means)))
    assert jvp_value == want

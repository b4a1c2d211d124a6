"""The oracle itself: ``dualad.testing.check_grads`` must catch wrong rules."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
from _support.backends import BACKENDS

from dualad import bind, jvp, ops
from dualad._base import reverse_mode as _reverse_mode
from dualad.extend import custom, elementwise, register_vjp, unregister
from dualad.testing import check_grads


@pytest.fixture
def primitive():
    """Register a throwaway primitive; remove it from the table afterwards."""
    made = []

    def make(constructor, name, *args, **kwargs):
        p = constructor(name, *args, **kwargs)
        made.append(name)
        return lambda *xs: bind(p, *xs)

    yield make
    for name in made:
        unregister(name)


def test_a_wrong_jvp_is_reported_with_the_error_found(primitive):
    bad = primitive(elementwise, "_bad_square", lambda xp, x: x * x, lambda ans, x: x)
    with pytest.raises(AssertionError, match=r"JVP of f does not match central finite differences"
                                             r"(.|\n)*max abs error"):
        check_grads(bad, (np.array([1.0, 2.0]),), modes=("fwd",))


def test_a_wrong_second_derivative_is_caught_only_at_order_2(primitive):
    # The partial is right in value but a constant to every outer derivative.
    bad = primitive(elementwise, "_bad_cube", lambda xp, x: x * x * x,
                    lambda ans, x: ops.stop_gradient(3.0 * x * x))
    x = (np.array([0.5, -1.5]),)
    check_grads(bad, x, order=1, modes=("fwd",))
    with pytest.raises(AssertionError, match=r"jvp\(f\)"):
        check_grads(bad, x, order=2, modes=("fwd",))


def test_a_wrong_vjp_is_caught_through_the_adjoint_identity(primitive):
    pytest.importorskip("reverse")
    import reverse
    if not hasattr(reverse, "vjp"):
        pytest.skip("reverse.vjp is not there yet")
    bad = primitive(custom, "_bad_scale", lambda xp, x: 2.0 * x,
                    jvp=lambda primals, tangents, ans: 2.0 * tangents[0],
                    vjp=lambda g, ans, x: (3.0 * g,))
    with pytest.raises(AssertionError, match=r"<u, J v> = <J\^T u, v>"):
        check_grads(bad, (np.array([1.0, 2.0]),), order=1, modes=("rev",))


def test_rev_mode_without_a_registered_reverse_mode_is_an_error_not_a_skip(monkeypatch):
    monkeypatch.setattr(_reverse_mode, "_REGISTERED", [])
    with pytest.raises(NotImplementedError, match="import reverse"):
        check_grads(ops.sin, (np.ones(2),))
    check_grads(ops.sin, (np.ones(2),), modes=("fwd",))  # forward alone still works


def test_check_grads_checks_the_registered_reverse_mode(monkeypatch):
    import reverse

    monkeypatch.setattr(_reverse_mode, "_REGISTERED", [])
    with pytest.raises(TypeError, match="register_vjp: vjp must be callable"):
        register_vjp("reverse.vjp")

    def wrong_vjp(f, *primals):  # the pullback of 2 * f's: the adjoint test must catch it
        out, pullback = reverse.vjp(f, *primals)
        return out, lambda u: tuple(2.0 * g for g in pullback(u))

    register_vjp(wrong_vjp)
    with pytest.raises(AssertionError, match=r"<u, J v> = <J\^T u, v>"):
        check_grads(ops.sin, (np.ones(2),), order=1, modes=("rev",))
    register_vjp(reverse.vjp)
    check_grads(ops.sin, (np.ones(2),), order=1, modes=("rev",))


def test_dualad_testing_does_not_import_reverse():
    code = "import sys, dualad.testing; print('reverse' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_rev_mode_with_the_reverse_package():
    import reverse  # noqa: F401  registers reverse.vjp
    check_grads(lambda x, y: ops.sum(ops.sin(x) * y ** 2), (np.array([0.3, 0.9]), np.array([1.5, -0.5])),
                order=2, modes=("fwd", "rev"))


def test_complex_inputs_are_checked_without_a_cast_that_drops_imaginary_parts():
    """The adjoint check cast complex cotangents to float64 (its pairing is the real part of
    the product), and NumPy warned (ComplexWarning, a RuntimeWarning) of the parts dropped."""
    import reverse  # noqa: F401  registers reverse.vjp
    a = np.array([1 + 1j, 2.0 - 0.5j])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_grads(lambda x: ops.sum(ops.abs(x) ** 2), (a,), order=1, modes=("fwd", "rev"))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_correct_functions_pass_on_every_backend_and_dtype(backend, dtype):
    x = backend.asarray(np.array([[0.3, -1.2, 2.0], [0.1, 0.5, -0.7]]), dtype)
    check_grads(lambda a: ops.sum(ops.tanh(a) * ops.exp(a), axis=0) * 40.0, (x,), order=2, modes=("fwd",))


def test_pytrees_and_constant_leaves():
    def f(p):
        return {"out": ops.sin(p["w"]) * p["scale"][0] ** p["n"], "flag": p["w"] > 0}

    check_grads(f, {"w": np.array([0.2, 0.4]), "scale": [np.array(1.5)], "n": 3}, order=2, modes=("fwd",))


def test_python_floats():
    check_grads(lambda x, y: ops.sin(x) * y + x ** 2, (0.3, 1.7), order=1, modes=("fwd",))


def test_argument_validation():
    with pytest.raises(ValueError, match="modes"):
        check_grads(ops.sin, (np.ones(2),), modes=("sideways",))
    with pytest.raises(ValueError, match="order"):
        check_grads(ops.sin, (np.ones(2),), order=0, modes=("fwd",))
    with pytest.raises(ValueError, match="floating-point"):
        check_grads(lambda n: n * 2, (np.array([1, 2]),), modes=("fwd",))


def test_float32_tolerance_absorbs_rounding_of_large_values():
    x = np.array([300.0, -250.0, 120.0], dtype=np.float32)
    check_grads(lambda a: a ** 3 / 7.0, (x,), order=2, modes=("fwd",))


def test_user_tolerances_are_used(primitive):
    off = primitive(elementwise, "_off_by_1e_4", lambda xp, x: x, lambda ans, x: 1.0 + 1e-4)
    check_grads(off, (np.ones(2),), order=1, modes=("fwd",), rtol=1e-3, atol=1e-3)
    with pytest.raises(AssertionError):
        check_grads(off, (np.ones(2),), order=1, modes=("fwd",))


@pytest.mark.parametrize("out, error, pattern", [
    (None, AssertionError, r"no floating-point output to check \(got 0 leaves"),  # None: an empty pytree
    ("x", TypeError, r"check_grads: f must return arrays or floats.*got a str"),
    ((), AssertionError, r"no floating-point output to check \(got 0 leaves"),
    (np.array([True]), AssertionError, r"no floating-point output to check \(got an array .*bool"),
], ids=["None", "str", "empty tuple", "bool"])
def test_a_function_with_nothing_to_check_fails(out, error, pattern):
    # A function that forgot its return checked nothing and passed.
    for modes in (("fwd",), ("rev",)):
        with pytest.raises(error, match=pattern):
            check_grads(lambda x: out, (np.ones(2),), modes=modes)


@pytest.mark.parametrize("seed", range(5))
def test_finite_differences_follow_the_scale_of_the_inputs(seed):
    """A correlation of numbers near 5e-5 changes on that scale: with an absolute step of
    1e-6 the check failed although the derivative was right (issue 26)."""
    x = np.random.default_rng(seed).standard_normal((3, 4)) * 5e-5
    check_grads(lambda x: np.corrcoef(x), (x,))


def test_the_default_hypothesis_profile_replays_as_ci_does():
    """The README's test command draws CI's examples, with no database of old failures."""
    import os

    from hypothesis import settings
    if os.environ.get("HYPOTHESIS_PROFILE", "ci") == "ci":
        assert settings.default.derandomize and settings.default.database is None


def test_the_default_step_is_a_normal_number_at_tiny_inputs(primitive):
    # At x = 1.18e-38 in float32 the step was 1e-41, a subnormal: the GPU flushed
    # step * v to zero, x + step * v was x, and the differences read 0.
    import re

    wrong = primitive(elementwise, "_wrong_sin", lambda xp, x: xp.sin(x), lambda ans, x: 2.0 * ops.cos(x))
    with pytest.raises(AssertionError, match="finite-difference step") as err:
        check_grads(wrong, (np.array(np.finfo(np.float32).tiny, dtype=np.float32),), order=1, modes=("fwd",))
    step = float(re.search(r"step eps=(\S+)", str(err.value)).group(1))
    assert step >= np.finfo(np.float32).tiny


def test_float32_differences_are_taken_in_float64():
    # A small output computed through large intermediates: float32 differences carry the
    # large ones' rounding, as a GPU's float32 SVD did for Im(U diag(sin s) V^H) beside
    # larger outputs; the JVP itself is checked in float32 all the same.
    x = np.array([0.3, 0.7, 0.9, 0.45], dtype=np.float32)
    check_grads(lambda x: (x * 1e3 + x) - x * 1e3, (x,), order=2, modes=("fwd",))
    t = jvp(lambda x: (x * 1e3 + x) - x * 1e3, (x,), (np.ones(4, np.float32),))[1]
    assert t.dtype == np.float32


def test_tiny_inputs_beside_larger_constants_check():
    # The imaginary parts of a complex SVD's input drawn near 3e-12 beside a real part of
    # 5 and 3: a step on the scale of the inputs (3e-18) is below the resolution of the
    # matrix, and the differences were noise; the dtype's own step checks.
    base = np.diag([5.0, 3.0])

    def f(x, y):
        u, s, vh = np.linalg.svd((x + base) + 1j * y, full_matrices=False)
        rec = (u * np.sin(s)[None, :]) @ vh
        return s, np.real(rec), np.imag(rec)

    check_grads(f, (np.zeros((2, 2)), np.full((2, 2), 3.07132488e-12)), order=1, modes=("fwd",))

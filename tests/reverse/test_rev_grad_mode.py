"""Grad mode as PyTorch's: ``set_grad_enabled`` as a plain call, a context and a
decorator; ``no_grad``/``enable_grad`` as bare decorators; ``inference_mode``."""

import threading

import numpy as np
import pytest
from _support.torch_scenarios import recorded, run_on_reverse

import reverse
from reverse import (
    Tensor,
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from reverse._grad_mode import _current, _restore


@pytest.fixture(autouse=True)
def _mode_restored():
    """A plain set_grad_enabled call lasts: put the thread's mode back whatever a test does."""
    state = _current()
    yield
    _restore(state)


def _records():
    x = Tensor(2.0, requires_grad=True)
    return (x * x).requires_grad


def test_a_plain_call_switches_the_mode_from_then_on():
    set_grad_enabled(False)
    assert not is_grad_enabled() and not _records()
    set_grad_enabled(True)
    assert is_grad_enabled() and _records()


def test_transforms_still_work_after_a_plain_call_turned_grad_off():
    set_grad_enabled(False)
    assert reverse.grad(lambda v: v * v)(3.0) == 6.0


def test_a_plain_call_inside_a_block_lasts_until_the_block_ends():
    with no_grad():
        set_grad_enabled(True)
        assert _records()
    assert _records()
    with set_grad_enabled(True):
        set_grad_enabled(False)
        assert not _records()
    assert _records()  # the mode found when the context was made


def test_the_mode_comes_back_to_what_it_was_when_the_context_was_made():
    switch = set_grad_enabled(False)
    assert not is_grad_enabled()  # made: in effect already
    with switch:
        assert not _records()
    assert is_grad_enabled()


def test_as_a_decorator_it_changes_the_mode_only_while_the_function_runs():
    @set_grad_enabled(False)
    def square(v):
        return v * v, is_grad_enabled()

    assert is_grad_enabled()  # decorating changed nothing
    y, inside = square(Tensor(2.0, requires_grad=True))
    assert not inside and not y.requires_grad and is_grad_enabled()


@pytest.mark.parametrize("mode", [1, "yes", np.True_, None])
def test_the_mode_must_be_a_bool(mode):
    with pytest.raises(TypeError, match=rf"set_grad_enabled: mode must be a bool, got {type(mode).__name__}"):
        set_grad_enabled(mode)
    assert is_grad_enabled()


def test_a_plain_call_in_another_thread_leaves_this_one_alone():
    seen = {}

    def work():
        set_grad_enabled(False)
        seen["there"] = is_grad_enabled()

    t = threading.Thread(target=work)
    t.start()
    t.join(10.0)
    assert seen == {"there": False} and is_grad_enabled()


def test_the_sequence_of_modes_matches_torch():
    # A context puts back the mode it found (no_grad, enable_grad: on entry; set_grad_enabled:
    # when made), and the script turns grad off before each of them.
    expected = [False, True, False, True, False, False, False, True, True, False]
    assert run_on_reverse("grad mode sequence") == expected
    assert recorded("grad mode sequence") == expected  # PyTorch's, by make_torch_behaviour_golden.py


# -- no_grad and enable_grad without parentheses ---------------------------------------------------
def test_no_grad_and_enable_grad_decorate_without_parentheses():
    @no_grad
    def off(v):
        return v * v

    @enable_grad
    def on(v):
        return v * v

    x = Tensor(2.0, requires_grad=True)
    assert not off(x).requires_grad
    with no_grad():
        assert on(x).requires_grad
    with pytest.raises(TypeError, match=r"no_grad\(\) takes no argument.*got float"):
        no_grad(1.0)


# -- inference_mode -----------------------------------------------------------------------------------
def test_inference_mode_records_nothing_and_says_so():
    assert not is_inference_mode_enabled()
    with inference_mode():
        assert is_inference_mode_enabled() and not is_grad_enabled() and not _records()
    assert not is_inference_mode_enabled() and _records()


@pytest.mark.parametrize("decorate", [lambda f: inference_mode(f), lambda f: inference_mode()(f),
                                      lambda f: inference_mode(True)(f)],
                         ids=["bare", "()", "(True)"])
def test_inference_mode_decorates(decorate):
    w = Tensor(np.ones(2), requires_grad=True)
    predict = decorate(lambda x: ((w * x).sum(), is_inference_mode_enabled()))
    y, inside = predict(np.array([1.0, 2.0]))
    assert inside and not y.requires_grad and y.item() == 3.0
    assert not is_inference_mode_enabled()


def test_inference_mode_false_lifts_it_and_enables_grad():
    with inference_mode():
        with no_grad():
            with inference_mode(False):
                assert not is_inference_mode_enabled() and _records()
        assert is_inference_mode_enabled()

    @inference_mode(False)
    def f():
        return _records()

    with no_grad():
        assert f()


def test_enable_grad_inside_inference_mode_records_nothing():
    with inference_mode():
        with enable_grad():
            assert not _records()
        with set_grad_enabled(True):
            assert not _records()


def test_a_tensor_made_in_inference_mode_is_an_ordinary_tensor_after():
    # PyTorch refuses to save an inference tensor for backward; here it is a plain constant.
    w = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    with inference_mode():
        c = w * 3.0
    (c * w).sum().backward()
    np.testing.assert_array_equal(w.grad.value, [3.0, 6.0])


@pytest.mark.parametrize("mode", [1, "no"])
def test_inference_mode_takes_a_bool_or_a_function(mode):
    with pytest.raises(TypeError, match=r"inference_mode: mode must be a bool"):
        inference_mode(mode)


def test_inference_mode_matches_torch():
    assert run_on_reverse("inference mode") == recorded("inference mode") == [False, True, False, True, False]

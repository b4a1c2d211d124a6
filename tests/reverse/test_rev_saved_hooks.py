"""``saved_tensors_hooks``: pack at record time, unpack when backward reads, the
tape keeping only what pack returned; the checks on what unpack gives back."""

import gc
import threading
import weakref

import numpy as np
import pytest
from _support.backends import BACKENDS, dtype_name, to_numpy
from _support.functions import Cube
from _support.torch_scenarios import recorded, run_on_reverse

import mixed
import reverse
from dualad import ops
from reverse import Tensor, checkpoint, no_grad, saved_tensors_hooks


class Log:
    """Hooks that record their calls and keep a copy of each saved array."""

    def __init__(self):
        self.calls = []

    def pack(self, t):
        self.calls.append(("pack", t.shape, t.requires_grad))
        return ("packed", t.value * 1.0)

    def unpack(self, p):
        self.calls.append(("unpack",))
        return p[1]

    def names(self):
        return [c[0] for c in self.calls]


def test_pack_at_record_time_unpack_at_backward():
    log = Log()
    x = Tensor(np.array([0.5, 1.0]), requires_grad=True)
    with saved_tensors_hooks(log.pack, log.unpack):
        y = ops.sin(x)  # saves x
        z = ops.exp(y)  # saves its output
        loss = (z * 2.0).sum()  # keeps the number 2.0 only
    assert log.calls == [("pack", (2,), False), ("pack", (2,), False)]
    loss.backward()
    assert log.names() == ["pack", "pack", "unpack", "unpack"]
    a = np.array([0.5, 1.0])
    np.testing.assert_allclose(x.grad.value, 2.0 * np.exp(np.sin(a)) * np.cos(a), rtol=1e-14)


def test_pack_gets_a_tensor_sharing_the_saved_array():
    seen = []
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    with saved_tensors_hooks(lambda t: seen.append(t) or t, lambda p: p):
        ops.sin(x)
    assert type(seen[0]) is Tensor and seen[0].value is x.value and not seen[0].requires_grad


def test_each_saved_value_is_packed_once_and_a_constant_array_too():
    log = Log()
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    c = Tensor(np.array([3.0, 4.0]))
    with saved_tensors_hooks(log.pack, log.unpack):
        squared = x * x  # x saved for each side
        scaled = c * x  # c saved (x's cotangent reads it); x's own value is not needed
    assert log.calls == [("pack", (2,), False)] * 3
    (squared + scaled).sum().backward()
    np.testing.assert_array_equal(x.grad.value, [2.0 + 3.0, 4.0 + 4.0])


def test_unpack_runs_at_each_backward_that_reads_the_value():
    log = Log()
    x = Tensor(np.array([1.0]), requires_grad=True)
    with saved_tensors_hooks(log.pack, log.unpack):
        y = ops.sin(x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert log.names() == ["pack", "unpack", "unpack"]
    np.testing.assert_allclose(x.grad.value, 2.0 * np.cos([1.0]))


def test_the_innermost_hooks_pack_and_the_packing_hooks_unpack():
    outer, inner = Log(), Log()
    x = Tensor(np.array([1.0]), requires_grad=True)
    with saved_tensors_hooks(outer.pack, outer.unpack):
        with saved_tensors_hooks(inner.pack, inner.unpack):
            y = ops.sin(x).sum()
        z = ops.cos(x).sum()
    (y + z).backward()
    assert inner.names() == ["pack", "unpack"] and outer.names() == ["pack", "unpack"]


def test_nothing_is_packed_when_nothing_is_recorded():
    log = Log()
    x = Tensor(np.array([1.0]), requires_grad=True)
    with saved_tensors_hooks(log.pack, log.unpack):
        with no_grad():
            ops.sin(x)
        ops.sin(Tensor(np.array([1.0])))
    assert log.calls == []


def test_the_tape_keeps_only_what_pack_returned():
    # Offloading: pack keeps a float32 copy, so the float64 array sin saved can be freed
    # (without hooks the tape keeps it until backward: test_rev_tape).
    x = Tensor(np.linspace(0.0, 1.0, 5), requires_grad=True)
    with saved_tensors_hooks(lambda t: t.value.astype(np.float32), lambda p: p.astype(np.float64)):
        h = x * 2.0
        saved = weakref.ref(h.value)
        y = ops.sin(h).sum()
    del h
    gc.collect()
    assert saved() is None
    y.backward()
    np.testing.assert_allclose(x.grad.value, 2.0 * np.cos(2.0 * np.linspace(0.0, 1.0, 5)), rtol=1e-6)


def test_hooks_of_another_thread_do_not_pack_here():
    log = Log()
    inside, done = threading.Event(), threading.Event()

    def other():
        with saved_tensors_hooks(log.pack, log.unpack):
            inside.set()
            done.wait(5.0)

    t = threading.Thread(target=other)
    t.start()
    inside.wait(5.0)
    try:
        x = Tensor(np.array([1.0]), requires_grad=True)
        ops.sin(x).sum().backward()
    finally:
        done.set()
        t.join(10.0)
    assert log.calls == []
    np.testing.assert_allclose(x.grad.value, np.cos([1.0]))


def test_create_graph_through_the_hooks():
    x = Tensor(np.array([0.5, 2.0]), requires_grad=True)
    with saved_tensors_hooks(lambda t: t, lambda p: p):
        y = (x ** 3).sum()
        (g,) = reverse.gradients(y, [x], create_graph=True)
    (h,) = reverse.gradients(g.sum(), [x])
    np.testing.assert_allclose(h, 6.0 * np.array([0.5, 2.0]))


def test_function_and_checkpoint_records_are_packed_too():
    log = Log()
    x = Tensor(np.array([0.5, 2.0]), requires_grad=True)
    with saved_tensors_hooks(log.pack, log.unpack):
        y = Cube.apply(x).sum() + checkpoint(lambda v: ops.sin(v).sum(), x)
    # Cube keeps its input and output; checkpoint its input (its output, a NumPy scalar, as is)
    assert log.names() == ["pack"] * 3
    y.backward()
    assert log.names() == ["pack"] * 3 + ["unpack"] * 3
    np.testing.assert_allclose(x.grad.value, 3.0 * np.array([0.25, 4.0]) + np.cos([0.5, 2.0]))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_on_every_backend_and_dtype(backend, dtype):
    xp_x = backend.asarray(np.array([0.5, 1.0, 1.5]), dtype)
    x = Tensor(xp_x, requires_grad=True)
    with saved_tensors_hooks(lambda t: (t.value * 1.0,), lambda p: p[0]):
        y = (ops.tanh(x) * x).sum()
    y.backward()
    a = np.array([0.5, 1.0, 1.5])
    assert dtype_name(x.grad.value) == dtype
    np.testing.assert_allclose(to_numpy(x.grad.value), np.tanh(a) + a * (1.0 - np.tanh(a) ** 2),
                               rtol=1e-5 if dtype == "float32" else 1e-12)


def test_hvp_through_hooks_that_keep_the_tensor():
    def f(v):
        return ops.sum(ops.sin(v) * v ** 2)

    x, v = np.array([0.3, 0.7]), np.array([1.0, -2.0])
    with saved_tensors_hooks(lambda t: t, lambda p: p):
        hv = mixed.hvp(f, x, v)
    diag = 2.0 * np.sin(x) + 4.0 * x * np.cos(x) - x ** 2 * np.sin(x)  # f is separable
    np.testing.assert_allclose(hv, diag * v, rtol=1e-12)


def test_hooks_that_drop_a_dual_tangent_are_refused():
    with saved_tensors_hooks(lambda t: t.numpy(force=True), lambda p: p):
        with pytest.raises(TypeError, match=r"unpack hook '<lambda>' returned an array.*was a Dual.*drops "
                                            r"its tangent"):
            mixed.hvp(lambda v: ops.sum(ops.sin(v)), np.array([0.3, 0.7]), np.ones(2))


@pytest.mark.parametrize("unpack, error, message", [
    (lambda p: p[:1], ValueError, r"unpack hook '<lambda>' returned an array of shape \(1,\) and dtype "
                                  r"float64 for a value 'sin' saved as a numpy.ndarray of shape \(2,\)"),
    (lambda p: p.astype(np.float32), ValueError, r"dtype float32 .* dtype float64"),
    (lambda p: 3, TypeError, r"returned int 3 for a value 'sin'"),
    (lambda p: None, TypeError, r"returned None for a value 'sin'"),
], ids=["shape", "dtype", "int", "None"])
def test_what_unpack_returns_is_checked(unpack, error, message):
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    with saved_tensors_hooks(lambda t: t.value, unpack):
        y = ops.sin(x).sum()
    with pytest.raises(error, match=message):
        y.backward()


@pytest.mark.parametrize("which", ["pack_hook", "unpack_hook"])
def test_hooks_must_be_callable(which):
    hooks = {"pack_hook": lambda t: t, "unpack_hook": lambda p: p, which: 1}
    with pytest.raises(TypeError, match=rf"saved_tensors_hooks: {which} must be callable, got int"):
        saved_tensors_hooks(**hooks)


def test_calls_and_gradients_match_torch():
    """The pack and unpack calls and the gradient, as PyTorch's (make_torch_behaviour_golden.py)."""
    ours, theirs = run_on_reverse("saved tensors hooks"), recorded("saved tensors hooks")
    assert ours["packed"] == theirs["packed"] == ["pack"] * 4  # sin's input, exp's output, x twice
    assert ours["calls"] == theirs["calls"]
    assert np.shape(ours["x.grad"]) == np.shape(theirs["x.grad"])
    np.testing.assert_allclose(ours["x.grad"], theirs["x.grad"], rtol=1e-14)

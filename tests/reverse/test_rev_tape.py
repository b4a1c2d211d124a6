"""The tape's behaviour: hooks, accumulation, retain_graph, freeing, deep
graphs, grad mode per thread, stopping gradients in every mode, version counters."""

import gc
import sys
import threading
import weakref

import numpy as np
import pytest

import dualad
import reverse
from dualad import ops
from reverse import Tensor, enable_grad, no_grad, set_grad_enabled


# -- hooks ----------------------------------------------------------------------
def test_hook_on_a_leaf_replaces_its_gradient():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.copy()) or g * 10.0)
    (x * x).sum().backward()
    np.testing.assert_array_equal(seen[0], [2.0, 4.0])
    np.testing.assert_array_equal(x.grad, [20.0, 40.0])


def test_hook_on_an_intermediate_changes_what_flows_upstream():
    x = Tensor(3.0, requires_grad=True)
    h = x * 2.0
    h.register_hook(lambda g: g * 0.0 + 5.0)
    (h * h).backward()  # dL/dh = 2h = 12 is replaced by 5; dL/dx = 5 * 2
    assert x.grad == 10.0


def test_hook_returning_none_keeps_the_gradient_and_remove_unregisters():
    x = Tensor(2.0, requires_grad=True)
    calls = []
    handle = x.register_hook(lambda g: calls.append(g))
    (x * x).backward()
    assert calls == [4.0] and x.grad == 4.0
    handle.remove()
    x.grad = None
    (x * x).backward()
    assert calls == [4.0] and x.grad == 4.0


def test_retain_grad_keeps_the_gradient_of_an_intermediate():
    x = Tensor(np.array([1.0, -1.0]), requires_grad=True)
    h = x * 3.0
    h.retain_grad()
    (h ** 2).sum().backward()
    np.testing.assert_array_equal(h.grad, [6.0, -6.0])
    np.testing.assert_array_equal(x.grad, [18.0, -18.0])


# -- accumulation and retain_graph ------------------------------------------------
def test_grad_accumulates_across_backward_calls_until_zeroed():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    for k in range(1, 4):
        (x * x).sum().backward()
        np.testing.assert_array_equal(x.grad, k * np.array([2.0, 4.0]))
    x.grad = None
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad, [2.0, 4.0])


def test_second_backward_without_retain_graph_raises():
    x = Tensor(np.array([0.5, 1.5]), requires_grad=True)
    y = ops.sin(x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match=r"retain_graph=True"):
        y.backward()


def test_retain_graph_allows_a_second_backward():
    x = Tensor(np.array([0.5, 1.5]), requires_grad=True)
    y = ops.sin(x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad, 2.0 * np.cos([0.5, 1.5]))


def test_a_second_backward_raises_even_when_the_graph_saved_nothing():
    # sum, reshape and a product with a constant save only shapes, so a second walk
    # could run (PyTorch lets it); it raises all the same, so that whether code works
    # does not hang on which operations happen to save values.
    x = Tensor(np.ones(3), requires_grad=True)
    y = (x.reshape(3, 1) * 2.0).sum()
    y.backward()
    with pytest.raises(RuntimeError, match=r"second time.*retain_graph=True"):
        y.backward()
    np.testing.assert_array_equal(x.grad, [2.0, 2.0, 2.0])  # the first walk's, once


# -- deep graphs and freeing --------------------------------------------------------
def test_a_chain_of_100000_operations_does_not_recurse():
    x = Tensor(1.5, requires_grad=True)
    y = x
    for _ in range(50_000):  # 100,000 recorded operations
        y = ops.sin(y) + 0.0
    y.backward()
    expected = 1.5
    slope = 1.0
    for _ in range(50_000):
        slope *= np.cos(expected)
        expected = np.sin(expected)
    assert y.item() == pytest.approx(expected)
    assert x.grad == pytest.approx(slope)


class _NoGradientToX(reverse.Function):
    """y = x * w whose backward gives w its cotangent and x none (None: zero)."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x)
        return x * w

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return None, g * x


def test_the_walk_visits_only_the_nodes_a_cotangent_reaches():
    """The walk queues a node when its first cotangent arrives: a branch that is reachable
    but gets none (here through a backward that returns None) is never visited, so
    its nodes keep their saved values; the rest is visited latest first and freed."""
    x = Tensor(np.array([0.3, 0.7]), requires_grad=True)
    w = Tensor(np.array([2.0, -1.0]), requires_grad=True)
    branch = x
    for _ in range(5):
        branch = ops.sin(branch)
    skipped = [branch._node]
    while skipped[-1].parents[0][0] is not x:
        skipped.append(skipped[-1].parents[0][0])
    a = ops.exp(w)  # reached twice: through the product and the sum below
    y = (_NoGradientToX.apply(branch, a) + a).sum()
    y.backward()
    assert len(skipped) == 5 and not any(n.freed for n in skipped)
    assert all(n.res is not None for n in skipped)
    assert x.grad is None
    expected = np.exp([2.0, -1.0]) * (np.sin(np.sin(np.sin(np.sin(np.sin([0.3, 0.7]))))) + 1.0)
    np.testing.assert_allclose(w.grad, expected, rtol=1e-14)
    assert a._node.freed and y._node.freed


def test_a_diamond_visits_each_node_after_every_node_that_reads_it():
    """Each of the chain's values is read by two later operations (a diamond per
    step): a node visited before all its readers would miss part of its cotangent."""
    x = Tensor(0.4, requires_grad=True)
    y, expected, slope = x, 0.4, 1.0
    for _ in range(30):
        y = ops.sin(y) * ops.cos(y)  # d/dy = cos(2y)
        slope *= np.cos(2.0 * expected)
        expected = np.sin(expected) * np.cos(expected)
    y.backward()
    assert y.item() == pytest.approx(expected, rel=1e-14)
    assert x.grad.item() == pytest.approx(slope, rel=1e-12)


@pytest.mark.skipif(sys.implementation.name != "cpython", reason="counts CPython's GC-tracked objects")
def test_a_recorded_operation_leaves_few_objects_for_the_cyclic_gc():
    """Python's full collections scan every tracked object a tape keeps; on a
    long tape that cost more than recording did (see bench_reverse.LongTape)."""
    def tracked_after(n_ops):
        x = Tensor(np.ones(3), requires_grad=True)
        y = x
        gc.collect()
        before = len(gc.get_objects())
        for _ in range(n_ops):
            y = y + 1.0
            y = y * 2.0
        gc.collect()
        return (len(gc.get_objects()) - before) / (2 * n_ops), y

    per_op, y = tracked_after(500)
    # the node, its parents tuple, one (node, index) edge, and for the product
    # the residual pair that holds its constant (8 per operation before sharing)
    assert per_op <= 4.5
    y.sum().backward()


def test_the_graph_is_freed_after_backward():
    x = Tensor(np.linspace(0.0, 1.0, 5), requires_grad=True)
    h = x * 2.0  # h's array is saved by sin below, and referenced only by the tape once h is gone
    saved = weakref.ref(h.value)
    y = ops.sin(h).sum()
    del h
    gc.collect()
    assert saved() is not None, "the tape must keep sin's input until backward"
    y.backward()
    gc.collect()
    assert saved() is None, "backward must free the saved values (y is still alive)"
    np.testing.assert_allclose(x.grad, 2.0 * np.cos(2.0 * np.linspace(0.0, 1.0, 5)))


def test_retain_graph_keeps_the_saved_values():
    x = Tensor(np.linspace(0.0, 1.0, 5), requires_grad=True)
    h = x * 2.0
    saved = weakref.ref(h.value)
    y = ops.sin(h).sum()
    del h
    y.backward(retain_graph=True)
    gc.collect()
    assert saved() is not None
    del y
    gc.collect()
    assert saved() is None, "dropping the output must drop the graph"


def test_the_whole_graph_is_collected_with_its_output():
    x = Tensor(np.ones(4), requires_grad=True)
    y = ops.exp(ops.sin(x) * x).sum()
    node = weakref.ref(y.grad_fn)
    del y
    gc.collect()
    assert node() is None


# -- grad mode -------------------------------------------------------------------------
def test_no_grad_records_nothing_and_enable_grad_reenables():
    x = Tensor(2.0, requires_grad=True)
    with no_grad():
        y = x * x
        with enable_grad():
            z = x * x
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad
    assert reverse.is_grad_enabled()


def test_set_grad_enabled_as_decorator_and_context():
    x = Tensor(2.0, requires_grad=True)

    @set_grad_enabled(False)
    def square(v):
        return v * v

    assert not square(x).requires_grad
    with set_grad_enabled(True):
        assert (x * x).requires_grad


def test_grad_mode_is_isolated_per_thread():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    entered, done = threading.Event(), threading.Event()
    results = {}

    def in_no_grad():
        with no_grad():
            entered.set()
            done.wait(5.0)
            results["no_grad_thread"] = (x * x).requires_grad

    def recording():
        entered.wait(5.0)
        results["other_thread"] = (x * x).requires_grad
        results["other_enabled"] = reverse.is_grad_enabled()
        done.set()

    threads = [threading.Thread(target=in_no_grad), threading.Thread(target=recording)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10.0)
    assert results == {"no_grad_thread": False, "other_thread": True, "other_enabled": True}
    assert (x * x).requires_grad  # and the main thread is unaffected


def test_backward_in_threads_gives_each_its_own_gradient():
    out = {}

    def work(k):
        x = Tensor(float(k), requires_grad=True)
        (x ** 3).backward()
        out[k] = x.grad

    threads = [threading.Thread(target=work, args=(k,)) for k in range(1, 6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10.0)
    assert out == {k: 3.0 * k * k for k in range(1, 6)}


# -- stopping gradients means the same in every mode --------------------------------------
def test_stop_gradient_cuts_the_dual_tangent():
    assert dualad.derivative(lambda x: ops.stop_gradient(x) * x)(3.0) == 3.0
    assert reverse.grad(lambda x: ops.stop_gradient(x) * x)(3.0) == 3.0


def test_no_grad_inside_a_function_under_jvp_gives_a_zero_tangent():
    def f(x):
        with no_grad():
            return ops.sin(x) * x

    out, tangent = dualad.jvp(f, (1.0,), (1.0,))
    assert out == pytest.approx(np.sin(1.0))
    assert tangent == 0.0


def test_no_grad_cuts_only_the_levels_that_exist_when_it_starts():
    # A transform started inside no_grad opens a new level and still works.
    with no_grad():
        assert reverse.grad(lambda v: v * v)(3.0) == 6.0
        assert dualad.derivative(lambda v: v * v)(3.0) == 6.0


def test_detach_cuts_the_tape_edge():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    d = x.detach()
    assert not d.requires_grad and d.is_leaf
    (d * x).sum().backward()
    np.testing.assert_array_equal(x.grad, [1.0, 2.0])
    assert reverse.grad(lambda v: v.detach() * v)(3.0) == 3.0


def test_stop_gradient_inside_grad_cuts_the_outer_dual_tangent():
    # forward-over-reverse: d/dx of grad(y -> sg(y) * y) = d/dx x = ... 0, since sg cuts all levels.
    _, t = dualad.jvp(reverse.grad(lambda y: ops.stop_gradient(y) * y), (3.0,), (1.0,))
    assert t == 0.0


def test_detach_inside_grad_cuts_the_outer_dual_tangent_like_stop_gradient():
    _, t = dualad.jvp(reverse.grad(lambda y: y.detach() * y), (3.0,), (1.0,))
    assert t == 0.0


def test_straight_through_estimator_passes_the_identity_gradient():
    x = Tensor(np.array([0.2, 1.7, -2.6]), requires_grad=True)
    q = x + (ops.round(x) - x).detach()
    np.testing.assert_array_equal(q.value, [0.0, 2.0, -3.0])
    (q * np.array([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_array_equal(x.grad, [1.0, 2.0, 3.0])


# -- in-place updates and version counters ------------------------------------------------
def test_modifying_a_saved_output_in_place_makes_backward_raise():
    x = Tensor(np.array([0.0, 1.0]), requires_grad=True)
    y = ops.exp(x)  # exp saves its output
    with no_grad():
        y += 1.0
    with pytest.raises(RuntimeError, match="modified in place"):
        y.sum().backward()


def test_modifying_a_saved_input_in_place_makes_backward_raise():
    x = Tensor(np.array([0.5, 1.0]), requires_grad=True)
    h = x * 1.0
    y = ops.sin(h).sum()  # sin saves h
    with no_grad():
        h *= 2.0
    with pytest.raises(RuntimeError, match="modified in place"):
        y.backward()


def test_modifying_a_saved_input_that_does_not_require_grad_makes_backward_raise():
    # Was: only inputs that require grad were version-checked, so backward used the new w.
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    w = Tensor(np.array([3.0, 4.0]))
    y = (x * w).sum()  # x's cotangent reads w
    w += 1.0
    with pytest.raises(RuntimeError, match=r"input 1 of 'multiply' was modified in place"):
        y.backward()


@pytest.mark.parametrize("update", ["setitem", "detached view", "under no_grad"])
def test_every_in_place_path_on_a_saved_constant_is_seen(update):
    x = Tensor(np.array([0.5, 1.0]), requires_grad=True)
    w = Tensor(np.array([3.0, 4.0]))
    y = ops.sin(w * x).sum()
    if update == "setitem":
        w[0] = 0.0
    elif update == "detached view":
        w.detach().__imul__(2.0)
    else:
        with no_grad():
            w -= 1.0
    with pytest.raises(RuntimeError, match="modified in place"):
        y.backward()


@pytest.mark.parametrize("viewed", ["before the record", "after the record"])
def test_a_view_shares_the_counter_however_early_it_was_made(viewed):
    # A tensor's counter is made when first needed (a record saving it, a view
    # sharing it); either way, view and record must hold the same one.
    x = Tensor(np.array([0.5, 1.0]), requires_grad=True)
    h = x * 1.0
    view = h.detach() if viewed == "before the record" else None
    y = ops.sin(h).sum()  # sin saves h
    view = h.detach() if view is None else view
    view.__imul__(2.0)
    with pytest.raises(RuntimeError, match="modified in place"):
        y.backward()


def test_only_the_tensors_a_record_saves_get_a_version_counter():
    x = Tensor(np.array([0.5, 1.0]), requires_grad=True)
    h = x * 2.0  # multiply keeps 2.0 for x's cotangent, not x
    y = ops.sin(h)  # sin keeps h
    assert x._version is None and y._version is None and h._version is not None
    with no_grad():
        y += 1.0  # nothing saved y: nothing to tell
    y.sum().backward()
    np.testing.assert_allclose(x.grad, 2.0 * np.cos(h.value))


def test_a_constant_changed_after_backward_or_not_saved_is_fine():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    w = Tensor(np.array([3.0, 4.0]))
    y = (x * w).sum()
    z = (x + w).sum()  # add saves no values
    w += 1.0
    z.backward()
    np.testing.assert_array_equal(x.grad, [1.0, 1.0])
    x.grad = None
    w = Tensor(np.array([3.0, 4.0]))
    y = (x * w).sum()
    y.backward()
    w += 1.0
    np.testing.assert_array_equal(x.grad, [3.0, 4.0])


def test_in_place_on_a_leaf_that_requires_grad_needs_no_grad():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    with pytest.raises(RuntimeError, match="no_grad"):
        x += 1.0
    with no_grad():
        x += 1.0
    np.testing.assert_array_equal(x.value, [2.0, 3.0])


def test_recorded_in_place_update_is_differentiated():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = x * 1.0
    y *= x  # recorded: y = x * x
    y.sum().backward()
    np.testing.assert_array_equal(x.grad, [2.0, 4.0])


# -- what a Tensor shares with the data it was made from -------------------------------------
def test_tensor_copies_the_users_array():
    # Was: Tensor(a) shared a's memory, so a later change to a changed the gradient.
    a = np.array([1.0, 2.0])
    x = Tensor(a, requires_grad=True)
    y = (x * x).sum()
    a[:] = 5.0
    y.backward()
    np.testing.assert_array_equal(x.value, [1.0, 2.0])
    np.testing.assert_array_equal(x.grad, [2.0, 4.0])


def test_in_place_update_of_a_tensor_leaves_the_users_array_alone():
    a = np.array([1.0, 2.0])
    w = Tensor(a)
    w += 1.0
    np.testing.assert_array_equal(a, [1.0, 2.0])
    np.testing.assert_array_equal(w.value, [2.0, 3.0])


def test_tensor_of_a_tensor_copies_and_detaches():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = Tensor(x)
    assert y.is_leaf and not y.requires_grad
    with no_grad():
        x += 1.0
    np.testing.assert_array_equal(y.value, [1.0, 2.0])


def test_from_numpy_shares_the_array():
    a = np.array([1.0, 2.0])
    x = Tensor.from_numpy(a)
    assert x.value is a and x.is_leaf and not x.requires_grad
    a[0] = 7.0
    np.testing.assert_array_equal(x.value, [7.0, 2.0])
    x.requires_grad_()
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad, [14.0, 4.0])


@pytest.mark.parametrize("data", [[1.0, 2.0], 1.0, (1.0,)])
def test_from_numpy_refuses_what_is_not_an_ndarray(data):
    with pytest.raises(TypeError, match=r"from_numpy: array must be a numpy.ndarray, got (list|float|tuple); "
                                        r"use Tensor\(data\) or reverse.as_tensor"):
        Tensor.from_numpy(data)


def test_as_tensor_shares_when_it_can():
    a = np.array([1.0, 2.0])
    assert reverse.as_tensor(a).value is a
    t = Tensor(a)
    assert reverse.as_tensor(t) is t
    assert reverse.as_tensor(t, dtype=np.float64) is t


def test_as_tensor_converts_when_it_must():
    a = np.array([1.0, 2.0])
    f32 = reverse.as_tensor(a, dtype=np.float32)
    assert f32.dtype == np.float32 and not np.shares_memory(f32.value, a)
    listed = reverse.as_tensor([1.0, 2.0])
    assert isinstance(listed.value, np.ndarray) and listed.dtype == np.float64
    assert reverse.as_tensor(2.0).value == 2.0
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    cast = reverse.as_tensor(x, dtype=np.float32)  # recorded, as PyTorch's x.to(dtype)
    cast.sum().backward()
    assert cast.dtype == np.float32 and x.grad.dtype == np.float64
    np.testing.assert_array_equal(x.grad, [1.0, 1.0])


def test_copying_constructor_keeps_the_value_types():
    assert type(Tensor(np.float64(2.0)).value) is np.float64
    assert Tensor(2.0).value == 2.0
    d = dualad.Dual(np.array([1.0, 2.0]), np.array([1.0, 0.0]))
    t = Tensor(d)
    assert isinstance(t.value, dualad.Dual) and t.value.primal is not d.primal
    np.testing.assert_array_equal(t.value.primal, d.primal)

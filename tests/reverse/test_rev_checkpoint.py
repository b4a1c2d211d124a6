"""``checkpoint``: same derivatives as without it, without keeping the block's intermediates."""

import gc
import sys
import types
import weakref

import numpy as np
import pytest
from _support.torch_scenarios import recorded, run_on_reverse
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import dualad
import reverse
from dualad import ops
from dualad.extend import EscapedValueError
from dualad.testing import check_grads
from reverse import Tensor, checkpoint, gradients, nn
from reverse._tape import reachable
from reverse._tensor import NumpyTensor


def block(w, x):
    """A small layer: several intermediates, two outputs."""
    h = ops.tanh(x @ w)
    return ops.sin(h) * h, (h * h).sum()


def loss_plain(w, x):
    a, b = block(w, x)
    return a.sum() + b


def loss_checkpointed(w, x):
    a, b = checkpoint(block, w, x)
    return a.sum() + b


RNG = np.random.default_rng(0)
W = RNG.normal(size=(3, 2))
XS = RNG.normal(size=(4, 3))


def test_same_gradients_at_the_users_level():
    grads = []
    for loss in (loss_plain, loss_checkpointed):
        w, x = Tensor(W, requires_grad=True), Tensor(XS, requires_grad=True)
        loss(w, x).backward()
        grads.append((w.grad, x.grad))
    for got, want in zip(grads[1], grads[0]):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-14)


@given(arrays(np.float64, (3, 2), elements=st.floats(-2, 2)),
       arrays(np.float64, (4, 3), elements=st.floats(-2, 2)))
def test_same_gradients_inside_reverse_grad(w, x):
    want = reverse.grad(loss_plain, argnums=(0, 1))(w, x)
    got = reverse.grad(loss_checkpointed, argnums=(0, 1))(w, x)
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("f_plain, f_ckpt", [
    (lambda w: loss_plain(w, XS), lambda w: loss_checkpointed(w, XS)),
    (lambda w: loss_closing_over(w, XS, False), lambda w: loss_closing_over(w, XS, True)),
], ids=["passed", "closed_over"])
def test_same_second_derivatives_in_every_nesting(f_plain, f_ckpt):
    expected = dualad.hessian(f_plain)(W)
    np.testing.assert_allclose(reverse.jacrev(reverse.grad(f_ckpt))(W), expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dualad.hessian(f_ckpt)(W), expected, rtol=1e-10, atol=1e-12)
    v = RNG.normal(size=W.shape)
    _, hv = dualad.jvp(reverse.grad(f_ckpt), (W,), (v,))
    np.testing.assert_allclose(hv, np.tensordot(expected, v, axes=2), rtol=1e-10, atol=1e-12)
    rev_fwd = reverse.grad(lambda w: dualad.jvp(f_ckpt, (w,), (v,))[1])(W)
    np.testing.assert_allclose(rev_fwd, np.tensordot(expected, v, axes=2), rtol=1e-10, atol=1e-12)


def test_create_graph_through_a_checkpoint():
    w = Tensor(W, requires_grad=True)
    (g,) = gradients(loss_checkpointed(w, XS), [w], create_graph=True)
    assert g.requires_grad
    (g * g).sum().backward()
    w2 = Tensor(W, requires_grad=True)
    (g2,) = gradients(loss_plain(w2, XS), [w2], create_graph=True)
    (g2 * g2).sum().backward()
    np.testing.assert_allclose(w.grad, w2.grad, rtol=1e-10)


def test_check_grads_on_a_checkpointed_function():
    check_grads(loss_checkpointed, (W, XS), order=2, modes=("fwd", "rev"))


def test_the_tape_keeps_one_node_for_the_block():
    w = Tensor(W, requires_grad=True)
    plain = reachable([loss_plain(w, XS).grad_fn])
    ckpt = reachable([loss_checkpointed(w, XS).grad_fn])
    assert [n.prim.name for n in ckpt].count("checkpoint") == 1
    assert not {"tanh", "sin", "matmul"} & {n.prim.name for n in ckpt}
    assert len(ckpt) < len(plain)


def test_intermediates_are_not_kept_until_backward():
    refs = []

    def traced(x):
        h = ops.exp(x)  # exp's output is saved by sin on a tape
        refs.append(weakref.ref(h.value if isinstance(h, Tensor) else h))
        return ops.sin(h)

    for use_checkpoint in (False, True):
        refs.clear()
        x = Tensor(np.linspace(0.0, 1.0, 6), requires_grad=True)
        y = (checkpoint(traced, x) if use_checkpoint else traced(x)).sum()
        gc.collect()
        kept = refs[0]() is not None
        assert kept is not use_checkpoint
        y.backward()
        np.testing.assert_allclose(x.grad, np.cos(np.exp(x.value)) * np.exp(x.value))


def test_pytrees_constants_and_non_float_outputs():
    def fn(params, x, scale, mode):
        assert mode == "sum" and scale == 3
        return {"y": params["a"] * x * scale, "n": np.arange(2)}

    a = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    out = checkpoint(fn, {"a": a}, np.array([3.0, 4.0]), 3, "sum")
    np.testing.assert_array_equal(out["n"], [0, 1])
    out["y"].sum().backward()
    np.testing.assert_allclose(a.grad, [9.0, 12.0])


def test_integer_inputs_get_no_gradient():
    idx = np.array([2, 0])
    g = reverse.grad(lambda v: checkpoint(lambda u, i: u[i].sum() * 2.0, v, idx))(np.arange(3.0))
    np.testing.assert_array_equal(g, [2.0, 0.0, 2.0])


def test_a_closed_over_tensor_it_cannot_find_is_a_clear_error():
    class Layer:  # a class attribute: the search does not look into classes
        w = Tensor(W, requires_grad=True)

        def __call__(self, x):
            return x @ self.w

    with pytest.raises(TypeError, match=r"closes over a Tensor.*did not find.*as an argument"):
        checkpoint(Layer(), XS)


def test_no_array_arguments_just_calls_fn():
    assert checkpoint(lambda: 4.0) == 4.0
    with pytest.raises(TypeError, match="callable"):
        checkpoint(3.0, 1.0)


# -- closed-over weights, as PyTorch's non-reentrant checkpoint allows ------------------
W2 = RNG.normal(size=(2, 3))


def two_layers(x, w1, w2):
    return ops.sin(ops.tanh(x @ w1) @ w2)


class Linear:
    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return x @ self.w


class MLP:
    """A model object holding its Tensors, called as ``checkpoint(model, x)``."""

    def __init__(self, w1, w2):
        self.w1, self.w2 = w1, w2

    def __call__(self, x):
        return two_layers(x, self.w1, self.w2)

    def forward(self, x):
        return self(x)


class Sequential:
    def __init__(self, *layers):
        self.layers = list(layers)

    def __call__(self, x):
        x = ops.tanh(self.layers[0](x))
        return ops.sin(self.layers[1](x))


def _closure(w1, w2):
    return lambda x: two_layers(x, w1, w2)


def _list(w1, w2):
    params = [w1, w2]
    return lambda x: two_layers(x, params[0], params[1])


def _dict(w1, w2):
    params = {"w1": w1, "w2": w2}
    return lambda x: two_layers(x, params["w1"], params["w2"])


def _tuple_in_an_object(w1, w2):
    class Holder:
        pass
    holder = Holder()
    holder.params = ((w1,), w2)  # tuples are rebuilt in the attribute that holds them
    return lambda x: two_layers(x, holder.params[0][0], holder.params[1])


def _default_argument(w1, w2):
    def f(x, w1=w1, w2=w2):
        return two_layers(x, w1, w2)
    return f


def _nested_function(w1, w2):
    def inner(x):
        return two_layers(x, w1, w2)
    return lambda x: inner(x)


HOW_A_BLOCK_REACHES_ITS_WEIGHTS = {
    "closure": _closure,
    "list": _list,
    "dict": _dict,
    "tuple in an object": _tuple_in_an_object,
    "default argument": _default_argument,
    "helper function": _nested_function,
    "model object": MLP,
    "bound method": lambda w1, w2: MLP(w1, w2).forward,
    "objects in a list": lambda w1, w2: Sequential(Linear(w1), Linear(w2)),
}


def _plain_and_checkpointed_grads(make_block):
    grads = []
    for use_checkpoint in (False, True):
        w1, w2 = Tensor(W, requires_grad=True), Tensor(W2, requires_grad=True)
        x = Tensor(XS, requires_grad=True)
        unused = Tensor(W, requires_grad=True)
        block_fn = make_block(w1, w2)
        out = checkpoint(block_fn, x) if use_checkpoint else block_fn(x)
        (out * out).sum().backward()
        grads.append((w1.grad, w2.grad, x.grad, unused.grad))
    return grads


@pytest.mark.parametrize("how", HOW_A_BLOCK_REACHES_ITS_WEIGHTS)
def test_closed_over_weights_get_the_gradients_they_get_without_checkpoint(how):
    plain, ckpt = _plain_and_checkpointed_grads(HOW_A_BLOCK_REACHES_ITS_WEIGHTS[how])
    for got, want in zip(ckpt[:3], plain[:3]):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-14)
    assert ckpt[3] is None


def test_a_model_passed_as_a_constant_argument():
    grads = []
    for use_checkpoint in (False, True):
        model = MLP(Tensor(W, requires_grad=True), Tensor(W2, requires_grad=True))
        apply = lambda m, x: m(x)
        out = checkpoint(apply, model, XS) if use_checkpoint else apply(model, XS)
        out.sum().backward()
        grads.append((model.w1.grad, model.w2.grad))
    for got, want in zip(*grads[::-1]):
        np.testing.assert_allclose(got, want, rtol=1e-13)


def test_a_weight_the_block_does_not_use_keeps_no_gradient():
    model = MLP(Tensor(W, requires_grad=True), Tensor(W2, requires_grad=True))
    model.spare = Tensor(W, requires_grad=True)  # found on the object, never used
    out = checkpoint(model, XS)
    out.sum().backward()
    assert model.spare.grad is None and model.w1.grad is not None
    with pytest.raises(RuntimeError, match="not used"):
        gradients(checkpoint(model, XS).sum(), [model.spare])


def test_a_tensor_that_escaped_a_transform_is_left_to_the_block():
    escaped = []
    reverse.grad(lambda w: (escaped.append(w) or w * 2.0).sum())(W)  # kept past its grad
    model = MLP(Tensor(W, requires_grad=True), Tensor(W2, requires_grad=True))
    model.stale = escaped[0]  # found on the object, not used: no error, as without checkpoint
    checkpoint(model, XS).sum().backward()
    assert model.w1.grad is not None
    with pytest.raises(EscapedValueError):  # used: the error it raises without checkpoint
        checkpoint(lambda v: v @ model.stale, XS)


def test_the_places_hold_the_users_tensors_again():
    model = MLP(Tensor(W, requires_grad=True), Tensor(W2, requires_grad=True))
    w1, w2 = model.w1, model.w2
    seen = []

    def block_fn(x):
        seen.append(type(model.w1))
        if len(seen) == 3:
            raise ValueError("raised inside the block")
        return model(x)

    out = checkpoint(block_fn, Tensor(XS, requires_grad=True))
    assert model.w1 is w1 and model.w2 is w2
    out.sum().backward()
    assert model.w1 is w1 and model.w2 is w2
    assert seen == [Tensor, Tensor]  # a Tensor, as given, in the forward run and the recomputation
    with pytest.raises(ValueError, match="inside the block"):
        checkpoint(block_fn, XS)
    assert model.w1 is w1


def test_a_block_that_assigns_to_a_place_checkpoint_replaced_is_an_error():
    class RecurrentCell:
        def __init__(self):
            self.h = Tensor(np.zeros(3), requires_grad=True)

        def __call__(self, x):
            self.h = ops.tanh(x + self.h)  # state kept on the object: lost, or a leaked stand-in
            return self.h

    cell = RecurrentCell()
    h0 = cell.h
    with pytest.raises(RuntimeError, match=r"assigned to the attribute h of a RecurrentCell.*return"):
        checkpoint(cell, np.ones(3))
    assert cell.h is h0


def test_a_weight_both_passed_and_closed_over():
    def loss(w, use_checkpoint):
        f = lambda v: ops.tanh(XS @ v) @ ops.sin(w).T
        return ((checkpoint(f, w) if use_checkpoint else f(w)) ** 2).sum()

    want = reverse.grad(lambda w: loss(w, False))(W)
    np.testing.assert_allclose(reverse.grad(lambda w: loss(w, True))(W), want, rtol=1e-13)
    w = Tensor(W, requires_grad=True)
    loss(w, True).backward()
    np.testing.assert_allclose(w.grad, want, rtol=1e-13)


def test_closed_over_tensors_that_need_no_gradient():
    data = Tensor(XS)  # requires_grad=False: a constant, used through the closure
    w = Tensor(W, requires_grad=True)
    checkpoint(lambda v: (data @ v).sum(), w).backward()
    np.testing.assert_allclose(w.grad, np.broadcast_to(XS.sum(0)[:, None], W.shape))


def test_a_hook_on_a_closed_over_weight_runs_once():
    w = Tensor(W, requires_grad=True)
    calls = []
    w.register_hook(lambda g: calls.append(g.shape))
    checkpoint(lambda v: ops.tanh(v @ w), XS).sum().backward()
    assert calls == [W.shape]


def test_the_search_runs_no_code_of_the_objects_it_looks_into():
    class Proxy:  # an object whose attribute lookups would have side effects
        def __init__(self):
            object.__setattr__(self, "w", Tensor(W, requires_grad=True))

        def __getattr__(self, name):
            raise AssertionError(f"looked up {name}")

        @property
        def loud(self):
            raise AssertionError("ran a property")

    proxy = Proxy()
    checkpoint(lambda v: (v @ proxy.w).sum(), XS).backward()
    np.testing.assert_allclose(proxy.w.grad, np.broadcast_to(XS.sum(0)[:, None], W.shape))


def test_a_search_cut_short_is_a_warning():
    history = list(range(100_000))  # a long list the block names: not searched to its end
    with pytest.warns(UserWarning, match="stopped looking"):
        checkpoint(lambda v: v * len(history), Tensor(XS, requires_grad=True))


def loss_closing_over(w, x, use_checkpoint):
    """``block`` as a closure over ``w``: inside ``reverse.grad``, ``w`` is the grad's own value."""
    f = lambda v: block(w, v)
    a, b = checkpoint(f, x) if use_checkpoint else f(x)
    return a.sum() + b


@given(arrays(np.float64, (3, 2), elements=st.floats(-2, 2)),
       arrays(np.float64, (4, 3), elements=st.floats(-2, 2)))
def test_closed_over_values_at_the_level_of_reverse_grad(w, x):
    want = reverse.grad(lambda w: loss_closing_over(w, x, False))(w)
    got = reverse.grad(lambda w: loss_closing_over(w, x, True))(w)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_create_graph_through_a_checkpoint_with_a_closed_over_weight():
    results = []
    for use_checkpoint in (False, True):
        w = Tensor(W, requires_grad=True)
        (g,) = gradients(loss_closing_over(w, XS, use_checkpoint), [w], create_graph=True)
        (g * g).sum().backward()
        results.append(w.grad)
    np.testing.assert_allclose(results[1], results[0], rtol=1e-10)


def test_nested_checkpoints_closing_over_the_same_weight():
    def loss(w, use_checkpoint):
        run = checkpoint if use_checkpoint else (lambda f, *a: f(*a))
        inner = lambda v: ops.tanh(v @ w)
        outer = lambda v: run(inner, v) @ w.T
        return (run(outer, XS) ** 2).sum()

    grads = []
    for use_checkpoint in (False, True):
        w = Tensor(W, requires_grad=True)
        loss(w, use_checkpoint).backward()
        grads.append(w.grad)
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)
    np.testing.assert_allclose(reverse.grad(lambda w: loss(w, True))(W), grads[0], rtol=1e-12)


# -- random numbers: a recomputation draws what the forward pass drew -------------------
@pytest.fixture
def numpy_global_state():
    """Tests that seed NumPy's global state leave it as they found it."""
    state = np.random.get_state()
    yield
    np.random.set_state(state)


def dropout(v, uniform):
    """Inverted dropout with p = 0.5; ``uniform(shape)`` draws the mask's numbers."""
    keep = uniform(v.shape) < 0.5
    return ops.tanh(v) * keep.astype(float) * 2.0


def _generator_in_a_closure(seed):
    rng = np.random.default_rng(seed)
    return (lambda v: dropout(v, rng.random)), (), lambda: rng.random(3)


def _random_state_in_a_closure(seed):
    """Gaussian noise: every value drawn counts, the first one too."""
    rs = np.random.RandomState(seed)
    rs.standard_normal()  # leaves a cached Gaussian, which the saved state must hold
    noisy = lambda v: ops.tanh(v) * (1.0 + 0.1 * rs.standard_normal(v.shape))
    return noisy, (), lambda: rs.standard_normal(3)


def _numpy_global_functions(seed):
    np.random.seed(seed)
    return (lambda v: dropout(v, np.random.random_sample)), (), lambda: np.random.standard_normal(3)


def _generator_on_a_model_object(seed):
    class Dropout:
        def __init__(self):
            self.rng = np.random.default_rng(seed)

        def __call__(self, v):
            return dropout(v, self.rng.random)
    layer = Dropout()
    return layer, (), lambda: layer.rng.random(3)


def _generator_method_in_a_closure(seed):
    uniform = np.random.default_rng(seed).random  # only the bound method is held
    return (lambda v: dropout(v, uniform)), (), lambda: uniform(3)


def _generator_as_an_argument(seed):
    rng = np.random.default_rng(seed)
    return (lambda v, g: dropout(v, g.random)), (rng,), lambda: rng.random(3)


HOW_A_BLOCK_DRAWS = {
    "Generator in a closure": _generator_in_a_closure,
    "RandomState in a closure": _random_state_in_a_closure,
    "NumPy's global functions": _numpy_global_functions,
    "Generator on a model object": _generator_on_a_model_object,
    "a Generator's method in a closure": _generator_method_in_a_closure,
    "Generator as an argument": _generator_as_an_argument,
}


def _run_drawing_block(how, use_checkpoint, **kwargs):
    """Output, gradient, and the user's next draws after backward."""
    fn, extra, next_draws = HOW_A_BLOCK_DRAWS[how](seed=7)
    x = Tensor(XS, requires_grad=True)
    out = checkpoint(fn, x, *extra, **kwargs) if use_checkpoint else fn(x, *extra)
    (out * out).sum().backward()
    return out.value, x.grad, next_draws()


@pytest.mark.parametrize("how", HOW_A_BLOCK_DRAWS)
def test_the_recomputation_draws_what_the_forward_pass_drew(how, numpy_global_state):
    out, grad, after = _run_drawing_block(how, use_checkpoint=True)
    want_out, want_grad, want_after = _run_drawing_block(how, use_checkpoint=False)
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-13, atol=1e-14)
    np.testing.assert_array_equal(after, want_after)  # the user's stream, as without checkpoint


@pytest.mark.parametrize("how", HOW_A_BLOCK_DRAWS)
def test_preserve_rng_state_false_draws_again(how, numpy_global_state):
    """The old behaviour: the recomputation draws a new mask (a wrong gradient) and
    moves the user's stream on by one more run of the block."""
    _, grad, after = _run_drawing_block(how, use_checkpoint=True, preserve_rng_state=False)
    _, want_grad, _ = _run_drawing_block(how, use_checkpoint=False)
    assert not np.allclose(grad, want_grad)
    fn, extra, next_draws = HOW_A_BLOCK_DRAWS[how](seed=7)
    fn(XS, *extra)
    fn(XS, *extra)
    np.testing.assert_array_equal(after, next_draws())


def test_training_a_model_with_dropout_in_checkpoints():
    """Both halves together: an optimizer over a model whose checkpointed call uses its
    own weights and its own Generator follows the same path as without checkpoint."""
    def train(use_checkpoint):
        rng = np.random.default_rng(0)

        class Net:
            def __init__(self):
                self.w1 = Tensor(rng.normal(size=(3, 8)), requires_grad=True)
                self.w2 = Tensor(rng.normal(size=(8, 1)), requires_grad=True)
                self.noise = np.random.default_rng(1)

            def __call__(self, x):
                return dropout(x @ self.w1, self.noise.random) @ self.w2

        net = Net()
        opt = reverse.optim.Adam([net.w1, net.w2], lr=1e-2)
        x, y = rng.normal(size=(16, 3)), rng.normal(size=(16, 1))
        for _ in range(5):
            opt.zero_grad()
            out = checkpoint(net, x) if use_checkpoint else net(x)
            ((out - y) ** 2).mean().backward()
            opt.step()
        return net.w1.value, net.w2.value

    for got, want in zip(train(True), train(False)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def dropout_loss(w, use_checkpoint):
    """A closure over a fresh Generator; the draw after the block enters the value."""
    rng = np.random.default_rng(11)
    f = lambda v: dropout(XS @ v, rng.random)
    out = checkpoint(f, w) if use_checkpoint else f(w)
    return (out * out).sum() * rng.random()


def test_random_blocks_under_every_transform():
    f_plain = lambda w: dropout_loss(w, False)
    f_ckpt = lambda w: dropout_loss(w, True)
    for got, want in zip(reverse.value_and_grad(f_ckpt)(W), reverse.value_and_grad(f_plain)(W)):
        np.testing.assert_allclose(got, want, rtol=1e-13)
    v = RNG.normal(size=W.shape)
    for got, want in zip(dualad.jvp(f_ckpt, (W,), (v,)), dualad.jvp(f_plain, (W,), (v,))):
        np.testing.assert_allclose(got, want, rtol=1e-13)  # impl and the JVP rule: one mask
    expected = dualad.hessian(f_plain)(W)
    np.testing.assert_allclose(dualad.hessian(f_ckpt)(W), expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(reverse.jacrev(reverse.grad(f_ckpt))(W), expected, rtol=1e-10, atol=1e-12)


def test_nested_random_blocks(numpy_global_state):
    def loss(w, use_checkpoint):
        np.random.seed(5)
        run = checkpoint if use_checkpoint else (lambda f, *a: f(*a))
        inner = lambda v: dropout(v @ w, np.random.random_sample)
        outer = lambda v: dropout(run(inner, v), np.random.random_sample) @ w.T
        return (run(outer, XS) ** 2).sum()

    grads = []
    for use_checkpoint in (False, True):
        w = Tensor(W, requires_grad=True)
        loss(w, use_checkpoint).backward()
        grads.append((w.grad, np.random.random_sample(3)))
    np.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-12)
    np.testing.assert_array_equal(grads[1][1], grads[0][1])


class _FakeCupyRandom:
    """The part of ``cupy.random`` that checkpoint uses, over NumPy's RandomState:
    a per-device dict of global states, and RandomState(seed, method)."""

    class RandomState:
        def __init__(self, seed=None, method=100):
            self._rs, self.method = np.random.RandomState(None if seed is None else seed % 2 ** 32), method

        def randint(self, low, high):
            return np.asarray(self._rs.randint(low, high, dtype=np.int64))

        def random_sample(self, size):
            return self._rs.random_sample(size)

    def __init__(self, created: bool):
        self._generator = types.SimpleNamespace(_random_states={0: self.RandomState(3)} if created else {})

    def get_random_state(self):
        return self._generator._random_states.setdefault(0, self.RandomState())

    def set_random_state(self, rs):
        self._generator._random_states[0] = rs

    def random_sample(self, size):
        return self.get_random_state().random_sample(size)


def _fake_cupy(monkeypatch, created=True):
    fake = types.SimpleNamespace(random=_FakeCupyRandom(created),
                                 cuda=types.SimpleNamespace(get_device_id=lambda: 0))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    return fake


def test_cupys_global_state_runs_on_a_seeded_stand_in(monkeypatch):
    """The protocol, on a stand-in for CuPy's API (cuRAND's state cannot be read)."""
    cupy = _fake_cupy(monkeypatch)
    user = cupy.random.get_random_state()
    masks = []

    def block_fn(v):
        masks.append(cupy.random.random_sample(v.shape) < 0.5)
        return ops.tanh(v) * masks[-1].astype(float)

    x = Tensor(XS, requires_grad=True)
    checkpoint(block_fn, x).sum().backward()
    np.testing.assert_array_equal(masks[1], masks[0])
    np.testing.assert_allclose(x.grad, (1 - np.tanh(XS) ** 2) * masks[0])
    assert cupy.random.get_random_state() is user  # the user's object, back in place
    reference = _FakeCupyRandom.RandomState(3)
    reference.randint(0, 2 ** 62)  # the one draw that seeds the stand-in
    np.testing.assert_array_equal(user.random_sample(3), reference.random_sample(3))


def test_cupys_global_state_is_not_created_by_checkpoint(monkeypatch):
    cupy = _fake_cupy(monkeypatch, created=False)
    checkpoint(lambda v: ops.tanh(v), Tensor(XS, requires_grad=True)).sum().backward()
    assert cupy.random._generator._random_states == {}


def test_a_cupy_generator_it_cannot_save_is_a_warning():
    Generator = type("Generator", (), {"__module__": "cupy.random._generator_api"})
    rng = Generator()
    with pytest.warns(UserWarning, match="cannot save the state of a cupy.random"):
        checkpoint(lambda v: ops.tanh(v) if rng else v, Tensor(XS, requires_grad=True))


def _gpu_available() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no driver, no device: all mean "skip"
        return False


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu_available(), reason="needs CuPy and an NVIDIA GPU")
def test_cupy_dropout_gets_the_same_mask_in_the_recomputation():
    import cupy
    cupy.random.seed(0)
    masks = []

    def block_fn(v):
        masks.append(cupy.random.random(v.shape) < 0.5)
        return ops.tanh(v) * masks[-1].astype(v.dtype)

    x = Tensor(cupy.asarray(XS), requires_grad=True)
    checkpoint(block_fn, x).sum().backward()
    cupy.testing.assert_array_equal(masks[1], masks[0])
    cupy.testing.assert_allclose(x.grad.value, (1 - cupy.tanh(x.value) ** 2) * masks[0])


@pytest.mark.parametrize("use_reentrant", [False, True, None])
def test_use_reentrant_is_accepted_as_pytorch_2_asks(use_reentrant):
    w = Tensor(np.array([0.5, -1.0]), requires_grad=True)
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    checkpoint(lambda v: np.tanh(v * w), x, use_reentrant=use_reentrant).sum().backward()
    np.testing.assert_allclose(x.grad.value, w.value / np.cosh(x.value * w.value) ** 2)
    np.testing.assert_allclose(w.grad.value, x.value / np.cosh(x.value * w.value) ** 2)


def test_use_reentrant_must_be_a_bool():
    with pytest.raises(TypeError, match=r"use_reentrant must be True, False or None, got 'no'"):
        checkpoint(np.tanh, Tensor(np.ones(2), requires_grad=True), use_reentrant="no")


# -- PyTorch-style blocks: the block sees what it was given, as torch.utils.checkpoint's ---
X3 = np.array([0.3, 1.2, -0.7])


def test_a_block_written_with_tensor_methods():
    """d/dx sum(sin(x) x) = sin(x) + x cos(x); d2/dx2 = 2 cos(x) - x sin(x)."""
    x = Tensor(X3, requires_grad=True)
    y = checkpoint(lambda a: (a.sin() * a).sum(), x, use_reentrant=False)
    np.testing.assert_allclose(y.value, np.sum(np.sin(X3) * X3), rtol=1e-15)
    (g,) = gradients(y, [x], create_graph=True)
    np.testing.assert_allclose(g.value, np.sin(X3) + X3 * np.cos(X3), rtol=1e-14)
    g.sum().backward()
    np.testing.assert_allclose(x.grad, 2.0 * np.cos(X3) - X3 * np.sin(X3), rtol=1e-14)


def test_a_tensor_block_under_forward_mode():
    t = np.array([1.0, 0.5, 2.0])
    _, tangent = dualad.jvp(lambda v: checkpoint(lambda a: a.sin() * a, Tensor(v)).value, (X3,), (t,))
    np.testing.assert_allclose(tangent, (np.sin(X3) + X3 * np.cos(X3)) * t, rtol=1e-14)


def test_the_block_sees_what_it_was_given_in_every_run():
    """A Tensor as a Tensor (PyTorch's std: unbiased) in the forward run and in the
    recomputation, so the value and the gradient agree; an array as an array."""
    seen = []

    def block_fn(a, b):
        seen.append((type(a), type(b)))
        return a.std() * b.sum()

    x, b = Tensor(X3, requires_grad=True), np.array([1.0, 2.0])
    y = checkpoint(block_fn, x, b)
    s = np.std(X3, ddof=1)
    np.testing.assert_allclose(y.value, 3.0 * s, rtol=1e-15)
    y.backward()
    np.testing.assert_allclose(x.grad, 3.0 * (X3 - X3.mean()) / (2 * s), rtol=1e-14)
    assert seen == [(Tensor, np.ndarray)] * 2


def test_inside_the_functional_transforms_the_block_speaks_numpy():
    """reverse.grad passes NumPy-speaking values: the block sees them so in every run
    (NumPy's std, ddof=0: d std / dx = (x - mean) / (n std))."""
    seen = []

    def block_fn(a):
        seen.append(type(a))
        return a.std()

    g = reverse.grad(lambda a: checkpoint(block_fn, a))(X3)
    np.testing.assert_allclose(g, (X3 - X3.mean()) / (3 * np.std(X3)), rtol=1e-14)
    assert seen == [NumpyTensor] * 2


def test_each_tensor_keeps_its_own_methods_in_one_block():
    """Inside reverse.grad, f's value speaks NumPy (std with ddof=0) and a Tensor the
    user made speaks PyTorch (ddof=1), in the block as without checkpoint."""
    w = Tensor(np.array([1.0, 2.0, 3.0, 4.0]))
    g = reverse.grad(lambda a: checkpoint(lambda v: v.std() * w.std(), a))(X3)
    expected = (X3 - X3.mean()) / (3 * np.std(X3)) * np.std([1.0, 2.0, 3.0, 4.0], ddof=1)
    np.testing.assert_allclose(g, expected, rtol=1e-14)


def _linear(rng_seed=0):
    return nn.Linear(2, 3, rng=np.random.default_rng(rng_seed))


XL = np.array([[0.5, -1.0], [2.0, 0.25], [-0.3, 0.8], [1.1, 1.4]])


def test_checkpoint_of_an_nn_linear():
    """out = x W^T + b; for L = sum(out^2): dL/dW = (2 out)^T x, dL/db = sum_rows(2 out),
    dL/dx = 2 out W, as torch.utils.checkpoint.checkpoint(linear, x) gives them."""
    lin = _linear()
    w, bias = lin.weight.value.copy(), lin.bias.value.copy()
    x = Tensor(XL, requires_grad=True)
    out = checkpoint(lin, x, use_reentrant=False)
    expected = XL @ w.T + bias
    np.testing.assert_allclose(out.value, expected, rtol=1e-15)
    (out ** 2).sum().backward()
    np.testing.assert_allclose(lin.weight.grad, 2.0 * expected.T @ XL, rtol=1e-14)
    np.testing.assert_allclose(lin.bias.grad, 2.0 * expected.sum(0), rtol=1e-14)
    np.testing.assert_allclose(x.grad, 2.0 * expected @ w, rtol=1e-14)


class Net(nn.Module):
    """A PyTorch model: layers of reverse.nn, Tensor methods in forward."""

    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(1)
        self.body = nn.Sequential(nn.Linear(2, 4, rng=rng), nn.ReLU(), nn.Linear(4, 3, rng=rng))
        self.scale = nn.Parameter(np.array([0.5, 2.0, -1.0]))

    def forward(self, x):
        h = self.body(x).tanh() * self.scale
        return h.max(1).values + h.std(0, keepdim=True).sum()


def _closing_over_a_linear(lin):
    return lambda a: lin(a.sin()).tanh().sum(1)


@pytest.mark.parametrize("make", [lambda: Net(), lambda: _closing_over_a_linear(_linear()),
                                  lambda: Net().forward],
                         ids=["model", "closure over a Linear", "bound forward"])
def test_parameters_of_the_modules_a_block_uses_get_their_gradients(make):
    """The same numbers as the block without checkpoint, which PyTorch's checkpoint gives."""
    results = []
    for use_checkpoint in (False, True):
        fn = make()
        owner = getattr(fn, "__self__", fn)
        params = list(owner.parameters()) if isinstance(owner, nn.Module) else \
            list(fn.__closure__[0].cell_contents.parameters())
        x = Tensor(XL, requires_grad=True)
        out = checkpoint(fn, x) if use_checkpoint else fn(x)
        (out * np.array([1.0, -2.0, 0.5, 3.0])).sum().backward()
        results.append([out.value, x.grad.value] + [p.grad.value for p in params])
    assert len(results[1]) >= 4
    for got, want in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)


def test_a_module_under_reverse_grad():
    """g = d/dx sum(x W^T + b): the column sums of W, for each of the 4 rows of x; a
    Tensor recorded as a function of W, as without checkpoint, so d sum(g) / dW = 4."""
    lin = _linear()
    g = reverse.grad(lambda a: checkpoint(lin, a).sum())(XL)
    np.testing.assert_allclose(g.value, np.tile(lin.weight.value.sum(0), (4, 1)), rtol=1e-14)
    g.sum().backward()
    np.testing.assert_allclose(lin.weight.grad, np.full((3, 2), 4.0), rtol=1e-15)
    assert lin.bias.grad is None


def test_an_nn_linear_against_torch():
    """checkpoint(sin -> Linear -> tanh -> std(0)): the output and the gradients of x, the
    weight and the bias, as torch.utils.checkpoint gives them (make_torch_behaviour_golden.py)."""
    ours = run_on_reverse("checkpoint of an nn.Linear")
    theirs = recorded("checkpoint of an nn.Linear")
    assert len(ours) == len(theirs) == 4
    for got, want in zip(ours, theirs):
        assert np.shape(got) == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=1e-12)

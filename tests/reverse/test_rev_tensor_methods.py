"""PyTorch's Tensor methods on ``reverse.Tensor``: values and derivatives (against
hand derivations and finite differences), PyTorch's checks and errors, the
methods that change a tensor's state, f-strings, and the spelling hints.

The shapes, errors and states are compared with PyTorch's, recorded in
torch_behaviour_golden.json by make_torch_behaviour_golden.py.
"""

import re

import numpy as np
import pytest
from _support.backends import BACKENDS, dtype_name, to_numpy
from _support.torch_scenarios import ERRORS, METHOD_CALLS, METHODS_X, SHAPES, recorded, run_on_reverse

import dualad
import reverse
from dualad.testing import check_grads
from reverse import Tensor, as_tensor, no_grad
from reverse._torch_methods import IN_PLACE_SPELLINGS, SPELLINGS

X = METHODS_X  # positive, away from 0: log, sqrt, abs, relu


def on_tensor(call):
    """``call`` as a function of arrays for check_grads: it runs on a Tensor and
    returns the array when given one (finite differences), the Tensor under vjp."""
    def f(v):
        out = call(as_tensor(v))
        return out if isinstance(v, Tensor) else out.value
    return f


# -- elementwise methods: values and gradients against hand derivations --------------
def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


ELEMENTWISE = {  # method call, value, derivative
    "exp": (METHOD_CALLS["exp"], np.exp, np.exp),
    "log": (METHOD_CALLS["log"], np.log, lambda x: 1.0 / x),
    "sin": (METHOD_CALLS["sin"], np.sin, np.cos),
    "cos": (METHOD_CALLS["cos"], np.cos, lambda x: -np.sin(x)),
    "tanh": (METHOD_CALLS["tanh"], np.tanh, lambda x: 1.0 - np.tanh(x) ** 2),
    "sigmoid": (METHOD_CALLS["sigmoid"], _sigmoid, lambda x: _sigmoid(x) * (1.0 - _sigmoid(x))),
    "relu": (METHOD_CALLS["relu"], lambda x: np.maximum(x, 0.0), lambda x: (x > 0).astype(x.dtype)),
    "abs": (METHOD_CALLS["abs"], np.abs, np.sign),
    "sqrt": (METHOD_CALLS["sqrt"], np.sqrt, lambda x: 0.5 / np.sqrt(x)),
    "pow": (METHOD_CALLS["pow"], lambda x: x ** 2.5, lambda x: 2.5 * x ** 1.5),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype, rtol", [("float64", 1e-12), ("float32", 1e-5)])
@pytest.mark.parametrize("name", list(ELEMENTWISE))
def test_elementwise_method_value_and_gradient(name, backend, dtype, rtol):
    call, value, derivative = ELEMENTWISE[name]
    x = np.where(np.arange(6).reshape(2, 3) % 2 == 0, X, -X) if name in ("relu", "abs") else X
    t = Tensor(backend.asarray(x, dtype), requires_grad=True)
    out = call(t)
    assert out.requires_grad and not out.is_leaf and dtype_name(out.value) == dtype
    out.sum().backward()
    assert dtype_name(t.grad.value) == dtype
    np.testing.assert_allclose(to_numpy(out.value), value(x), rtol=rtol)
    np.testing.assert_allclose(to_numpy(t.grad.value), derivative(x), rtol=rtol * 10)


def test_methods_match_torch():
    """Gradients of each elementwise method against PyTorch's (make_torch_behaviour_golden.py)."""
    ours, theirs = run_on_reverse("method gradients"), recorded("method gradients")
    assert sorted(ours) == sorted(theirs) == sorted(ELEMENTWISE)
    for name in theirs:
        assert np.shape(ours[name]) == np.shape(theirs[name]), name
        np.testing.assert_allclose(ours[name], theirs[name], rtol=1e-12, err_msg=name)


# -- structural methods ---------------------------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda t: t.view(3, 2), lambda t: t.view((-1,)), lambda t: t.view([3, -1]),
    lambda t: t.unsqueeze(0), lambda t: t.unsqueeze(-1), lambda t: t.unsqueeze(-2),
    lambda t: t.unsqueeze(1).squeeze(), lambda t: t.unsqueeze(2).squeeze(-1), lambda t: t.t(),
    lambda t: t.T, lambda t: t.clone(), lambda t: t.mm(np.ones((3, 2))) * t.sum(),
    lambda t: t.matmul(np.arange(3.0)), lambda t: t.sin().pow(3.0),
], ids=["view", "view-1", "view[3,-1]", "unsqueeze0", "unsqueeze-1", "unsqueeze-2", "squeeze",
        "squeeze-1", "t", "T", "clone", "mm", "matmul", "pow"])
def test_structural_methods_differentiate_to_second_order(call):
    check_grads(on_tensor(call), (X,), modes=("rev",), order=2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_structural_methods_on_every_backend(backend):
    t = Tensor(backend.asarray(X, "float32"), requires_grad=True)
    y = t.view(3, 2).t().unsqueeze(0).squeeze(0).mm(backend.asarray(np.ones((3, 1)), "float32"))
    y.clone().matmul(backend.asarray(np.ones(1), "float32")).sum().backward()
    assert dtype_name(t.grad.value) == "float32"
    np.testing.assert_array_equal(to_numpy(t.grad.value), np.ones((2, 3)))


@pytest.mark.parametrize("shape, call, expected", SHAPES)
def test_shapes_follow_pytorch(shape, call, expected):
    assert call(Tensor(np.zeros(shape))).shape == expected


def test_shapes_match_torch():
    """The expected shapes are PyTorch's (recorded by make_torch_behaviour_golden.py), and ours."""
    assert recorded("method shapes") == [list(expected) for *_, expected in SHAPES]
    assert run_on_reverse("method shapes") == recorded("method shapes")


@pytest.mark.parametrize("shape, call, error, message", ERRORS)
def test_errors_follow_pytorch(shape, call, error, message):
    with pytest.raises(error, match=message):
        call(Tensor(np.zeros(shape)))


def test_errors_match_torch():
    """PyTorch raises the types ERRORS names (recorded; torch's view(dtype) reinterprets bits
    instead, so that entry is not compared)."""
    want = [None if error is TypeError else error.__name__ for *_, error, _ in ERRORS]
    assert recorded("method errors") == want
    assert run_on_reverse("method errors") == want


# -- conversions -------------------------------------------------------------------------------
@pytest.mark.parametrize("value, expected, kind", [
    (np.array([[2.5]]), 2.5, float), (np.array(3), 3, int), (np.array([True]), True, bool),
    (np.array(1.0 + 2.0j), 1.0 + 2.0j, complex), (2.5, 2.5, float), (np.float32(1.5), 1.5, float),
])
def test_item_returns_the_python_number_of_the_dtype(value, expected, kind):
    out = Tensor(value).item()
    assert out == expected and type(out) is kind


@pytest.mark.parametrize("backend", BACKENDS)
def test_item_and_tolist_on_every_backend_detach(backend):
    t = Tensor(backend.asarray(X, "float32"), requires_grad=True)
    assert t[1, 2].item() == pytest.approx(1.1, rel=1e-6) and type(t[1, 2].item()) is float
    listed = (t * 2.0).tolist()
    assert type(listed) is list and type(listed[0][0]) is float
    np.testing.assert_allclose(listed, 2.0 * X, rtol=1e-6)


def test_tolist_of_a_0d_tensor_is_a_number():
    assert Tensor(np.array(2.5), requires_grad=True).tolist() == 2.5


def test_numpy_shares_memory_and_refuses_a_tensor_that_requires_grad():
    a = np.array([1.0, 2.0])
    x = Tensor.from_numpy(a)
    assert x.numpy() is a
    x.requires_grad_()
    with pytest.raises(TypeError, match=r"numpy\(\) of a Tensor that requires grad.*\.detach\(\)\.numpy\(\)"):
        x.numpy()
    assert x.detach().numpy() is a and x.numpy(force=True) is a


def test_numpy_of_a_scalar_tensor_is_a_0d_array():
    out = Tensor(2.0).numpy()
    assert isinstance(out, np.ndarray) and out.shape == () and out == 2.0


def test_numpy_on_array_api_strict_shares_host_memory():
    xp = pytest.importorskip("array_api_strict")
    t = Tensor(xp.asarray([1.0, 2.0]))
    out = t.numpy()
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, [1.0, 2.0])


def test_numpy_refuses_a_tensor_holding_a_dual():
    # Inside a forward-mode transform a Tensor's value is a Dual: its array alone drops the tangent.
    seen = {}

    def f(v):
        t = Tensor(v)
        with pytest.raises(TypeError, match=r"holds a Dual would drop its tangent"):
            t.numpy()
        seen["forced"] = t.numpy(force=True)
        return v * 2.0

    dualad.jvp(f, (np.array([1.0, 2.0]),), (np.ones(2),))
    np.testing.assert_array_equal(seen["forced"], [1.0, 2.0])


def test_numpy_refusal_matches_torch():
    """Both say to write .detach().numpy(), and numpy(force=True) gives an ndarray (PyTorch's
    error is a RuntimeError, ours a TypeError as every refused conversion)."""
    theirs = recorded("numpy of a tensor that requires grad")
    assert theirs == {"says detach().numpy()": True, "forced is an ndarray": True}
    assert run_on_reverse("numpy of a tensor that requires grad") == theirs


def test_f_string_formats_a_0d_tensor_as_its_number():
    loss = (Tensor(np.array([1.0, 2.0]), requires_grad=True) ** 2).sum() / 3.0
    assert f"{loss:.4f}" == "1.6667" and f"{loss:.1e}" == "1.7e+00"
    assert f"{Tensor(3.0):>6.1f}" == "   3.0"


def test_f_string_of_a_larger_tensor():
    x = Tensor(np.array([1.5, 2.0]))
    assert f"{x}" == str(x)
    with pytest.raises(TypeError, match=r"format spec '\.2f' needs a 0-d Tensor, got one of shape \(2,\)"):
        f"{x:.2f}"
    with pytest.raises(TypeError, match=r"shape \(1,\)"):  # as torch: size 1 is not 0-d
        f"{Tensor(np.array([1.5])):.2f}"


def test_f_strings_match_torch():
    assert run_on_reverse("f-strings") == recorded("f-strings") == {"0-d": "1.2346", "size 1": "TypeError"}


# -- state: data, detach_, zero_, requires_grad_ ----------------------------------------------------
def test_data_shares_memory_with_its_own_version_counter():
    w = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    d = w.data
    assert not d.requires_grad and d.is_leaf and d.value is w.value
    y = (w * w).sum()  # saves w
    d *= 0.5  # as PyTorch: not seen by the version checks, and allowed on a leaf's data
    np.testing.assert_array_equal(w.value, [0.5, 1.0])
    y.backward()
    np.testing.assert_array_equal(w.grad.value, [1.0, 2.0])  # the graph read the new values


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_data_shares_memory_on_every_backend(backend, dtype):
    w = Tensor(backend.asarray(np.array([1.0, 2.0]), dtype), requires_grad=True)
    w.data *= 0.5
    assert dtype_name(w.value) == dtype
    np.testing.assert_array_equal(to_numpy(w.value), [0.5, 1.0])
    w.data[...] = 3.0
    np.testing.assert_array_equal(to_numpy(w.value), [3.0, 3.0])


def test_data_of_a_scalar_tensor_shares_too():
    w = Tensor(2.0, requires_grad=True)
    w.data.zero_()
    assert w.item() == 0.0


def test_data_assignment_replaces_the_value_unrecorded():
    w = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    w.data = Tensor(np.array([3.0, 4.0, 5.0]))
    assert w.shape == (3,) and w.requires_grad and w.is_leaf
    w.data = np.array([1.0])
    assert w.shape == (1,)
    with pytest.raises(TypeError, match=r"Tensor.data: data must be an array"):
        w.data = "a"


def test_update_through_data_is_not_recorded():
    w = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    (w * w).sum().backward()
    w.data -= 0.25 * w.grad  # the PyTorch idiom of a hand-written SGD step
    np.testing.assert_array_equal(w.value, [0.5, 1.0])
    assert w.is_leaf and w.requires_grad


def test_data_matches_torch():
    """Changes through .data are not tracked: no error, and the graph reads the new values."""
    assert run_on_reverse("data is not tracked") == recorded("data is not tracked") == [1.0, 2.0]


def test_detach_in_place_makes_a_leaf():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = x * 3.0
    y.retain_grad()
    out = y.detach_()
    assert out is y and y.is_leaf and not y.requires_grad and y.grad_fn is None
    assert not y.retains_grad
    (y * x).sum().backward()
    np.testing.assert_array_equal(x.grad.value, [3.0, 6.0])  # y is a constant now


def test_detach_in_place_cuts_a_dual_tangent():
    def f(v):
        t = Tensor(v)
        t.detach_()
        return t.value * v

    _, tangent = dualad.jvp(f, (np.array([3.0]),), (np.array([1.0]),))
    assert tangent == 3.0  # d/dv (c * v) with c = v held constant


def test_detach_in_place_matches_torch():
    assert run_on_reverse("detach_ in place") == recorded("detach_ in place") == [False, True, True]


def test_zero_bumps_the_version_so_a_saved_use_raises():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    w = Tensor(np.array([3.0, 4.0]))
    y = (x * w).sum()  # saves w
    w.zero_()
    np.testing.assert_array_equal(w.value, [0.0, 0.0])
    with pytest.raises(RuntimeError, match=r"modified in place"):
        y.backward()


def test_zero_on_a_leaf_that_requires_grad_needs_no_grad():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    with pytest.raises(RuntimeError, match=r"leaf tensor that requires grad.*in-place"):
        x.zero_()
    with no_grad():
        x.zero_()
    np.testing.assert_array_equal(x.value, [0.0, 0.0])


def test_zero_on_a_computed_tensor_is_recorded_and_passes_no_gradient():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = x * 2.0
    y.zero_()
    assert y.requires_grad and not y.is_leaf
    (y + x).sum().backward()
    np.testing.assert_array_equal(x.grad.value, [1.0, 1.0])  # only the + x path


def test_grad_zero_clears_in_place_and_backward_adds_on():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    (x * x).sum().backward()
    g = x.grad
    x.grad.zero_()
    (x * 3.0).sum().backward()
    assert x.grad is g
    np.testing.assert_array_equal(g.value, [3.0, 3.0])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_grad_zero_on_every_backend(backend, dtype):
    x = Tensor(backend.asarray(X, dtype), requires_grad=True)
    (x * x).sum().backward()
    x.grad.zero_()
    assert dtype_name(x.grad.value) == dtype
    np.testing.assert_array_equal(to_numpy(x.grad.value), np.zeros((2, 3)))


def test_zero_of_a_numpy_scalar_tensor():
    # In-place updates of a Tensor holding a NumPy scalar rebind it (it has no memory to write).
    t = (Tensor(np.array([1.0, 2.0])) * 2.0).sum()
    assert isinstance(t.value, np.generic)
    t.zero_()
    t += 1.5
    assert t.item() == 1.5


def test_zero_matches_torch():
    want = {"x.grad": [1.0, 1.0], "saved then zeroed": "RuntimeError"}
    assert run_on_reverse("zero_ in place") == recorded("zero_ in place") == want


def test_requires_grad_on_a_computed_tensor_follows_pytorch():
    x = Tensor(np.ones(2), requires_grad=True)
    y = x * 2.0
    assert y.requires_grad_() is y and y.requires_grad_(True) is y
    with pytest.raises(RuntimeError, match=r"requires_grad_\(False\) on a computed tensor \(the output "
                                           r"of 'multiply'\).*detach"):
        y.requires_grad_(False)
    assert Tensor(np.ones(2)).requires_grad_(False).requires_grad is False


def test_requires_grad_on_a_computed_tensor_matches_torch():
    want = {"returns self": True, "False": "RuntimeError"}
    scenario = "requires_grad_ on a computed tensor"
    assert run_on_reverse(scenario) == recorded(scenario) == want


# -- spellings ---------------------------------------------------------------------------------------
def _namespace():
    x = Tensor(np.array([[0.5, 1.2, 0.3], [0.7, 0.9, 0.2]]), requires_grad=True)
    return {"np": np, "dualad": dualad, "x": x, "other": Tensor(np.ones((2, 3))), "shape": (4, 2, 3),
            "axis": 0, "axes": (1, 0), "low": 0.4, "high": 1.0, "mask": x.value > 0.6, "value": 0.0,
            "dtype": np.float32, "reverse": reverse}


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_each_pytorch_name_says_the_spelling_that_works(name):
    namespace = _namespace()
    with pytest.raises(AttributeError, match=rf"has no attribute '{name}' \(a PyTorch name\); write "
                                             rf"{_escape(SPELLINGS[name])}"):
        getattr(namespace["x"], name)
    eval(SPELLINGS[name], namespace)  # the suggested spelling runs


@pytest.mark.parametrize("name", sorted(IN_PLACE_SPELLINGS))
def test_each_in_place_pytorch_name_says_the_statement_that_works(name):
    namespace = _namespace()
    namespace["x"] = Tensor(np.ones((2, 3)))
    with pytest.raises(AttributeError, match=rf"write {_escape(IN_PLACE_SPELLINGS[name])}"):
        getattr(namespace["x"], name)
    exec(IN_PLACE_SPELLINGS[name], namespace)  # the suggested statement runs


def _escape(text):
    return re.escape(text)


def test_spellings_shadow_no_real_attribute():
    # ArrayLike's and Value's names (all of which Dual has) would be hidden by a spelling,
    # and a spelling would never be reached under a name Tensor defines itself.
    spelled = set(SPELLINGS) | set(IN_PLACE_SPELLINGS)
    assert not spelled & (set(dir(dualad.Dual)) | set(vars(Tensor)))
    assert not hasattr(Tensor(1.0), "cpu")  # hasattr sees the AttributeError


def test_spellings_name_pytorch_tensor_methods():
    """Every name with a spelling hint is a method of torch.Tensor (recorded)."""
    assert recorded("spelled names") == sorted((*SPELLINGS, *IN_PLACE_SPELLINGS))


def test_a_tensor_hashes_by_identity_and_compares_elementwise():
    # PyTorch's habit: tensors key dicts and sets (optimizer.state[p]) while == stays elementwise.
    a, b = Tensor(np.array([1.0, 2.0])), Tensor(np.array([1.0, 2.0]))
    seen = {a: "a", b: "b"}
    assert seen[a] == "a" and seen[b] == "b" and len({a, b, a}) == 2
    assert (a == b).shape == (2,) and bool((a == b).all())

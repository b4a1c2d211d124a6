"""Misuse gets an exception that names the argument, what was expected and what was found."""

import re
import warnings

import numpy as np
import pytest

import reverse
from dualad import ops
from reverse import Tensor, gradients


def test_backward_of_a_non_scalar_needs_a_gradient():
    x = Tensor(np.ones(3), requires_grad=True)
    with pytest.raises(RuntimeError, match=r"scalar outputs.*\(3,\)"):
        (x * 2.0).backward()
    (x * 2.0).backward(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(x.grad, [2.0, 4.0, 6.0])


def test_gradients_of_a_non_scalar_needs_grad_outputs():
    x = Tensor(np.ones(3), requires_grad=True)
    with pytest.raises(RuntimeError, match=r"outputs\[0\].*scalar"):
        gradients(x * 2.0, [x])


@pytest.mark.parametrize("shape", [(1,), (1, 1), (1, 1, 1)])
def test_an_output_of_one_element_is_a_scalar_as_in_pytorch(shape):
    # Refused before; PyTorch's backward() and HIPS autograd's grad take any one-element output,
    # differentiating its element. f(x) = x0^2 * x1: grad = (2 x0 x1, x0^2).
    x = np.array([3.0, 2.0])
    want = np.array([2 * 3.0 * 2.0, 3.0 ** 2])
    f = lambda v: np.reshape(v[:1] ** 2 * v[1], shape)  # noqa: E731
    np.testing.assert_array_equal(reverse.grad(f)(x), want)
    value, g = reverse.value_and_grad(f)(x)
    assert np.shape(value) == shape and float(value.item()) == 18.0
    np.testing.assert_array_equal(g, want)
    t = Tensor(x, requires_grad=True)
    f(t).backward()
    np.testing.assert_array_equal(t.grad.value, want)


def test_grad_of_a_non_scalar_function_says_what_to_use():
    with pytest.raises(TypeError, match=r"scalar.*shape \(3,\).*vjp or jacrev"):
        reverse.grad(lambda v: v * 2.0)(np.ones(3))


def test_input_that_does_not_require_grad():
    x = Tensor(np.ones(2), requires_grad=True)
    c = Tensor(np.ones(2))
    with pytest.raises(RuntimeError, match=r"inputs\[1\] does not require grad"):
        gradients((x * c).sum(), [x, c])


def test_output_that_does_not_require_grad():
    c = Tensor(np.ones(2))
    with pytest.raises(RuntimeError, match=r"does not require grad"):
        (c * 2.0).sum().backward()


def test_unused_input_needs_allow_unused():
    x, z = Tensor(1.0, requires_grad=True), Tensor(2.0, requires_grad=True)
    y = x * 3.0
    with pytest.raises(RuntimeError, match=r"inputs\[1\] was not used.*allow_unused=True"):
        gradients(y, [x, z], retain_graph=True)
    assert gradients(y, [x, z], allow_unused=True) == (3.0, None)


def test_grad_outputs_of_the_wrong_shape():
    x = Tensor(np.ones(3), requires_grad=True)
    y = x * 2.0
    with pytest.raises(ValueError, match=r"grad_outputs\[0\].*\(2,\).*\(3,\)"):
        gradients(y, [x], grad_outputs=[np.ones(2)])
    with pytest.raises(ValueError, match=r"\(2,\).*\(3,\)"):
        y.backward(np.ones(2))


def test_grad_outputs_of_the_wrong_length():
    x = Tensor(np.ones(3), requires_grad=True)
    with pytest.raises(ValueError, match=r"grad_outputs has 2 entries for 1 outputs"):
        gradients(x * 2.0, [x], grad_outputs=[np.ones(3), np.ones(3)])


def test_vjp_cotangent_of_the_wrong_shape():
    _, pullback = reverse.vjp(lambda v: v * 2.0, np.ones(3))
    with pytest.raises(ValueError, match=r"cotangent.*\(2,\).*\(3,\)"):
        pullback(np.ones(2))


@pytest.mark.parametrize("value", [np.arange(3), np.array([True, False]), 3])
def test_integer_tensor_cannot_require_grad(value):
    if isinstance(value, int):
        # a Python int becomes a float, whose dtype NumPy reports as float64
        assert Tensor(value, requires_grad=True).dtype == np.dtype("float64")
        return
    with pytest.raises(TypeError, match=r"floating-point.*astype\(float\)"):
        Tensor(value, requires_grad=True)


@pytest.mark.parametrize("make", [Tensor, reverse.as_tensor], ids=["Tensor", "as_tensor"])
@pytest.mark.parametrize("data", ["abc", None, {"a": 1.0}])
def test_tensor_of_what_is_not_data_is_refused(make, data):
    name = make.__name__
    with pytest.raises(TypeError, match=rf"{name}: data must be an array.*got {type(data).__name__}"):
        make(data)


def test_grad_with_respect_to_an_integer_array():
    with pytest.raises(TypeError, match=r"floating point.*int64"):
        reverse.grad(lambda v: (v * 2.0).sum())(np.arange(3))


@pytest.mark.parametrize("who, call", [
    ("grad: x", lambda f: reverse.grad(f)(3)),
    ("value_and_grad: x", lambda f: reverse.value_and_grad(f)(3)),
    ("primals[0]", lambda f: reverse.vjp(f, 3)),
    ("jacrev: x", lambda f: reverse.jacrev(f)(3)),
    ("jacobian: x", lambda f: reverse.jacobian(f)(3)),
    ("grad: x[1]", lambda f: reverse.grad(lambda p: f(p[0]) * p[1])((2.0, 3))),
], ids=["grad", "value_and_grad", "vjp", "jacrev", "jacobian", "pytree-leaf"])
def test_a_python_int_is_refused_naming_the_fix(who, call):
    # grad(lambda x: np.sum(x ** 2))(3) crashed ("'int' object has no attribute 'dtype'") while
    # grad(lambda x: x ** 2)(3) took it as 3.0: one rule now, an int array's, in every transform.
    with pytest.raises(TypeError, match=rf"^{re.escape(who)} must be a float or a floating array, "
                                        r"got int 3; write 3\.0 instead of 3$"):
        call(lambda x: np.sum(x ** 2))


@pytest.mark.parametrize("name", ["grad", "value_and_grad", "jacrev", "jacobian"])
def test_a_transform_of_what_is_not_callable_is_refused_when_made(name):
    # grad(3.0) was accepted and failed only when called, with Python's "'float' object is not callable".
    with pytest.raises(TypeError, match=rf"^{name}: f must be callable, got float 3.0$"):
        getattr(reverse, name)(3.0)
    with pytest.raises(TypeError, match=r"^vjp: f must be callable, got float 3.0$"):
        reverse.vjp(3.0, 1.0)


def test_argnums_out_of_range():
    with pytest.raises(ValueError, match=r"argnums=2.*2 arguments"):
        reverse.grad(lambda a, b: a * b, argnums=2)(1.0, 2.0)
    with pytest.raises(ValueError, match=r"argnums=\(0, -3\) is out of range for 2 arguments: "
                                         r"-3 is not in \[-2, 2\)"):
        reverse.grad(lambda a, b: a * b, argnums=(0, -3))(1.0, 2.0)


@pytest.mark.parametrize("transform", [reverse.grad, reverse.value_and_grad])
@pytest.mark.parametrize("argnums, repeated", [((0, 0), "0"), ((1, 0, 1), "1"), ((0, -2), "0")])
def test_repeated_argnums_are_refused(transform, argnums, repeated):
    # Was: the first slot's gradient came back as zeros (both slots wrapped one value).
    with pytest.raises(ValueError, match=rf"argnums={re.escape(repr(argnums))} repeats argument {repeated}"):
        transform(lambda a, b: a * b, argnums=argnums)(1.0, 2.0)


@pytest.mark.parametrize("argnums", [0.5, "0", (0, 1.0), None, True, (0, False)])
def test_argnums_that_are_not_ints_are_refused_when_the_transform_is_made(argnums):
    with pytest.raises(TypeError, match=r"argnums must be an int or a tuple of ints.*got"):
        reverse.grad(lambda a, b: a * b, argnums=argnums)


def test_argnums_may_be_numpy_ints_and_lists():
    assert reverse.grad(lambda a, b: a * b, argnums=np.int64(1))(2.0, 3.0) == 2.0
    assert reverse.grad(lambda a, b: a * b, argnums=[1, 0])(2.0, 3.0) == (2.0, 3.0)


def test_converting_a_tensor_that_requires_grad_is_refused():
    x = Tensor(np.ones(2), requires_grad=True)
    with pytest.raises(TypeError, match=r"detach"):
        np.asarray(x)
    with pytest.raises(TypeError, match=r"float\(\)"):
        float(x.sum())


def test_unknown_numpy_function_names_itself():
    x = Tensor(np.ones(2), requires_grad=True)
    with pytest.raises(TypeError, match=r"numpy\.einsum_path.*register_numpy"):
        np.einsum_path("i,i", x, x)  # one of the few NumPy functions without a rule


def test_requires_grad_false_on_a_non_leaf():
    x = Tensor(np.ones(2), requires_grad=True)
    with pytest.raises(RuntimeError, match=r"leaf"):
        (x * 2.0).requires_grad_(False)


def test_hook_on_a_tensor_without_grad():
    with pytest.raises(RuntimeError, match=r"does not require grad"):
        Tensor(1.0).register_hook(lambda g: g)


def _leaf_and_intermediate():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    return x, x * 3.0


@pytest.mark.parametrize("on", ["leaf", "intermediate"])
def test_hook_that_changes_the_shape_is_named(on):
    # Was: the leaf's .grad silently took the hook's shape; an intermediate's
    # wrong-shaped cotangent flowed on into the rest of the walk.
    def widen(g):
        return np.concatenate([g, g])

    x, h = _leaf_and_intermediate()
    (x if on == "leaf" else h).register_hook(widen)
    with pytest.raises(ValueError, match=r"hook 'widen'.*shape \(4,\).*expected.*shape \(2,\)"):
        (h * h).sum().backward()


@pytest.mark.parametrize("on", ["leaf", "intermediate"])
def test_hook_that_changes_the_dtype_is_named(on):
    x, h = _leaf_and_intermediate()
    (x if on == "leaf" else h).register_hook(lambda g: g.astype(np.float32))
    with pytest.raises(TypeError, match=r"hook '<lambda>'.*float32.*expected.*float64"):
        (h * h).sum().backward()


def test_hook_object_without_a_name_is_named_by_its_repr():
    class Halve:
        def __call__(self, g):
            return g[:1]

        def __repr__(self):
            return "Halve()"

    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    x.register_hook(Halve())
    with pytest.raises(ValueError, match=r"hook 'Halve\(\)'"):
        (x * x).sum().backward()


def test_hook_returning_a_non_array_is_named():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    x.register_hook(lambda g: "g")
    with pytest.raises(TypeError, match=r"hook '<lambda>' returned a str.*array of shape \(2,\)"):
        (x * x).sum().backward()


def test_hook_on_a_float_leaf_may_return_a_float_or_numpy_scalar():
    x = Tensor(2.0, requires_grad=True)
    x.register_hook(lambda g: np.float64(g * 10.0))
    (x * x).backward()
    assert x.grad == 40.0


def test_ops_error_message_is_intact_through_the_tape():
    x = Tensor(np.ones((2, 3)), requires_grad=True)
    with pytest.raises(ValueError):
        ops.matmul(x, np.ones((2, 3)))


# -- misuse that crashed inside the tape (AttributeError, IndexError) or passed silently ---------------
@pytest.mark.parametrize("call, pattern", [
    (lambda: reverse.grad(lambda x: x)(None), r"grad: x must be a float or a floating array, got None"),
    (lambda: reverse.vjp(lambda x: x * 2.0, np.ones(2))[1](None),
     r"vjp: cotangent must be an array or float of the output's shape \(2,\), got None"),
    (lambda: reverse.vjp(lambda x: (x, x), np.ones(2))[1]((np.ones(2), None)),
     r"vjp: cotangent must have the structure of the output, \(\*, \*\); got \(\*, None\)"),
    (lambda: reverse.jacrev(lambda x: x)(None), r"jacrev: x must be .*got None"),
], ids=["grad-input", "vjp-cotangent", "vjp-cotangent-leaf", "jacrev-input"])
def test_none_as_an_input_or_cotangent(call, pattern):
    with pytest.raises(TypeError, match=pattern):
        call()


@pytest.mark.parametrize("out, got", [(None, "None"), ([1.0], r"a list \(\[1.0\]\)"), ("abc", "a str")],
                         ids=["None", "list", "str"])
@pytest.mark.parametrize("transform", [reverse.grad, reverse.value_and_grad], ids=["grad", "value_and_grad"])
def test_grad_of_a_function_returning_none_a_list_or_a_string(transform, out, got):
    with pytest.raises(TypeError, match=rf"grad: f must return a scalar.*got {got}"):
        transform(lambda x: out)(np.ones(2))


def test_vjp_and_jacrev_of_a_function_returning_a_string():
    with pytest.raises(TypeError, match=r"vjp: f must return arrays or floats"):
        reverse.vjp(lambda x: "abc", np.ones(2))
    with pytest.raises(TypeError, match=r"jacrev: f must return arrays or floats"):
        reverse.jacrev(lambda x: "abc")(np.ones(2))


def test_none_and_lists_are_pytrees_of_outputs_as_in_jax():
    """None is a container of no leaves: its cotangent is None and every input's is zero."""
    out, f_vjp = reverse.vjp(lambda x: None, np.ones(2))
    assert out is None
    np.testing.assert_array_equal(f_vjp(None)[0], np.zeros(2))
    assert reverse.jacrev(lambda x: None)(np.ones(2)) is None
    (j,) = reverse.jacrev(lambda x: [2.0 * x])(np.ones(2))
    np.testing.assert_array_equal(j, 2.0 * np.eye(2))


@pytest.mark.parametrize("gradient, got", [("a", r"a str \('a'\)"), ([1.0, 2.0], "a list")],
                         ids=["str", "list"])
def test_backward_with_a_gradient_that_is_not_an_array(gradient, got):
    x = Tensor(np.ones(2), requires_grad=True)
    with pytest.raises(TypeError, match=rf"backward: gradient must be an array or float of the output's "
                                        rf"shape \(2,\), got {got}"):
        (x * 2.0).backward(gradient=gradient)


@pytest.mark.parametrize("returned, got", [("nope", "a str"), ([1.0, 2.0], "a list"), ({"a": 1}, "a dict")],
                         ids=["str", "list", "dict"])
def test_function_backward_returning_a_non_array(returned, got):
    class Bad(reverse.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            return returned

    x = Tensor(np.ones(2), requires_grad=True)
    with pytest.raises(TypeError, match=rf"Bad.backward returned {got} .* as the gradient of input 0; "
                                        r"expected an array or float of shape \(2,\)"):
        Bad.apply(x).sum().backward()


def test_gradients_with_nothing_to_differentiate():
    # gradients([], [x]) raised IndexError; gradients(y, []) returned ().
    x = Tensor(np.ones(2), requires_grad=True)
    with pytest.raises(ValueError, match=r"gradients: outputs is empty"):
        gradients([], [x])
    with pytest.raises(ValueError, match=r"gradients: inputs is empty"):
        gradients((x * 2.0).sum(), [])


@pytest.mark.parametrize("how", ["backward", "gradients", "vjp"])
@pytest.mark.parametrize("cot", [np.array([1j, 1.0]), 1j], ids=["array", "python complex"])
def test_complex_cotangent_on_a_real_output(how, cot):
    # Its imaginary part was dropped unseen (backward gave [0, 4] for [1j, 2]).
    x = Tensor(np.ones(2), requires_grad=True)
    y = x * 2.0 if isinstance(cot, np.ndarray) else (x * 2.0).sum()
    with pytest.raises(TypeError, match=r"is complex .* but the output is real"):
        if how == "backward":
            y.backward(gradient=cot)
        elif how == "gradients":
            gradients(y, [x], grad_outputs=[cot])
        else:
            reverse.vjp(lambda v: v * 2.0 if isinstance(cot, np.ndarray) else (v * 2.0).sum(),
                        np.ones(2))[1](cot)


@pytest.mark.parametrize("grad", [np.ones(3), np.ones(1), np.ones((2, 2))],
                         ids=["(3,)", "(1,)", "(2, 2)"])
@pytest.mark.parametrize("make", [lambda p: reverse.optim.SGD(p, lr=0.1), lambda p: reverse.optim.Adam(p)],
                         ids=["SGD", "Adam"])
def test_optimizer_step_with_a_grad_of_the_wrong_shape(make, grad):
    # A (1,) gradient was broadcast over the parameter, a (2, 2) one failed in NumPy.
    w, u = Tensor(np.ones(2), requires_grad=True), Tensor(np.ones(2), requires_grad=True)
    opt = make([u, w])
    u.grad, w.grad = np.ones(2), grad
    with pytest.raises(ValueError, match=r"params\[1\].grad must be an array of the parameter's "
                                         r"shape \(2,\)"):
        opt.step()
    np.testing.assert_array_equal(u.value, np.ones(2))  # nothing is updated


def test_reading_grad_of_a_non_leaf_warns():
    x = Tensor(np.ones(2), requires_grad=True)
    y = x * 2.0
    y.sum().backward()
    with pytest.warns(UserWarning, match=r"\.grad of a Tensor that is not a leaf.*retain_grad"):
        assert y.grad is None
    z = x * 3.0
    z.retain_grad()
    z.sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.grad is not None and z.grad is not None  # leaves and retained tensors are quiet


def test_backward_with_create_graph_into_grad_warns_of_the_cycle():
    x = Tensor(np.ones(2), requires_grad=True)
    with pytest.warns(UserWarning, match=r"create_graph=True.*reference cycle.*reverse.gradients"):
        (x ** 3).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (g,) = gradients((x ** 3).sum(), [x], create_graph=True)  # the suggested form is quiet
        x.grad = None
        (x ** 3).sum().backward()

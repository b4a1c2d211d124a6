"""One name, two meanings: a ``reverse.Tensor`` the user makes speaks PyTorch; the
values ``reverse.grad``, ``vjp``, ``value_and_grad`` and ``jacrev`` pass into ``f``
speak NumPy. Both are recorded on the same tape.

Recorded: torch_methods_golden.json, written by make_torch_methods_golden.py
from PyTorch itself (the expressions are in _support/tensor_method_cases.py),
so these checks compare with PyTorch's numbers without PyTorch installed; where
it is installed, the same expressions also run against it live.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
from _support.tensor_method_cases import EXPRESSIONS, X, run

import reverse
from dualad.testing import check_grads
from reverse import Tensor

GOLDEN = json.loads((pathlib.Path(__file__).parent / "torch_methods_golden.json").read_text())


def _compare(ours: dict, theirs: dict, expression: str) -> None:
    if "number" in theirs:
        assert ours == theirs, expression
        return
    assert ours["shape"] == theirs["shape"] and ours["dtype"] == theirs["dtype"], expression
    np.testing.assert_allclose(ours["values"], theirs["values"], rtol=1e-12, atol=1e-14, err_msg=expression)
    assert ours["indices"] == theirs["indices"], expression
    if theirs["grad"] is None:
        assert ours["grad"] is None, expression
    else:
        np.testing.assert_allclose(ours["grad"], theirs["grad"], rtol=1e-12, atol=1e-14,
                                   err_msg=expression)


def test_the_golden_file_covers_every_expression():
    assert sorted(GOLDEN["cases"]) == sorted(EXPRESSIONS)


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_a_tensor_method_gives_pytorchs_numbers(expression):
    """Shape, dtype, values, indices and the gradient, as PyTorch recorded them."""
    _compare(run("reverse", expression), GOLDEN["cases"][expression], expression)




# NumPy code under the functional transforms: NumPy's meaning of the same names.
NUMPY_EXPRESSIONS = ["a.transpose(0, 1)", "a.transpose()", "a.repeat(2)", "a.repeat(2, axis=0)",
                     "a.std()", "a.var(0)", "a.std(1, ddof=1)", "a.max(0)", "a.min()", "a.max(axis=1)",
                     "a.cumsum()", "a.cumprod(1)", "a.flatten()", "a.sum(0)", "a.mean(1, keepdims=True)",
                     "a.prod()", "a.argmax(0)", "a.argsort()", "a.nonzero()", "a.any(1)", "a.size"]


def _inside_grad(expression: str):
    """``expression`` evaluated on the value reverse.vjp passes into f, with f's output."""
    seen = {}

    def f(a):
        seen["out"] = out = eval(expression, {"a": a, "np": np})
        seen["type"] = type(a)
        return a.sum() if not _is_float(out) else out

    reverse.vjp(f, X.copy())
    return seen


def _is_float(out):
    return hasattr(out, "dtype") and np.dtype(str(out.dtype)).kind == "f"


def _plain(x):
    if isinstance(x, tuple):
        return tuple(_plain(e) for e in x)
    return np.asarray(getattr(x, "value", x))


@pytest.mark.parametrize("expression", NUMPY_EXPRESSIONS)
def test_values_inside_the_transforms_speak_numpy(expression):
    seen = _inside_grad(expression)
    assert issubclass(seen["type"], Tensor)  # on the tape, a Tensor all the same
    expected = eval(expression, {"a": X.copy(), "np": np})
    got = _plain(seen["out"])
    if isinstance(expected, tuple):
        for e, g in zip(expected, got, strict=True):
            np.testing.assert_array_equal(g, e)
    else:
        assert got.shape == np.shape(expected)
        np.testing.assert_allclose(got, expected, rtol=1e-14)


@pytest.mark.parametrize("expression", ["a.transpose(1, 0)", "a.repeat(2, axis=1)", "a.std(0)",
                                        "a.var()", "a.max(0)", "a.min(1)", "a.cumsum(0)"])
def test_numpy_meanings_have_numpys_derivatives(expression):
    check_grads(lambda a: eval(expression, {"a": a}), (X.copy(),), order=1, modes=("rev",))


@pytest.mark.parametrize("call", ["a.sum(dim=0)", "a.max(dim=0)", "a.std(unbiased=True)",
                                  "a.var(correction=1)", "a.mean(0, keepdim=True)"])
def test_pytorch_keywords_inside_the_transforms_name_both_spellings(call):
    with pytest.raises(TypeError, match=r"speaks NumPy: write .*(axis=|ddof=|keepdims=).*or call f on a "
                                        r"reverse\.Tensor you made, which speaks PyTorch"):
        reverse.grad(lambda a: eval(call, {"a": a}).sum())(X.copy())


def test_both_meet_on_one_tape():
    """A Tensor the user makes inside f keeps PyTorch's meaning beside f's NumPy value."""
    w = Tensor(np.array([[1.0, 2.0], [3.0, 4.0]]))

    def f(a):
        torch_std = w.std()  # PyTorch's: unbiased
        return (a.std() * torch_std).sum()  # NumPy's: biased

    g = reverse.grad(f)(X.copy())
    n = X.size
    expected = (X - X.mean()) / (n * X.std()) * np.std([1.0, 2.0, 3.0, 4.0], ddof=1)
    np.testing.assert_allclose(g, expected, rtol=1e-13)


def test_computed_tensors_keep_the_meaning_of_who_made_them():
    t = Tensor(X, requires_grad=True) * 2.0
    assert type(t) is Tensor and t.transpose(0, 1).shape == (4, 3)
    seen = _inside_grad("(a * 2.0).transpose(0, 1)")
    assert seen["out"].shape == (3, 4)  # NumPy: axes (0, 1), the same order


def test_size_is_numpys_count_and_pytorchs_call():
    x = Tensor(np.zeros((3, 4)))
    assert x.size == 12 and x.size() == (3, 4) and x.size(-2) == 3 and x.numel() == 12
    with pytest.raises(IndexError, match=r"dim 2 is out of range"):
        x.size(2)


def test_pytorch_methods_check_their_arguments():
    x = Tensor(X)
    with pytest.raises(RuntimeError, match=r"repeat: 1 sizes for a tensor of 2 dimensions"):
        x.repeat(2)
    with pytest.raises(RuntimeError, match=r"permute: dims \(0, 0\)"):
        x.permute(0, 0)
    with pytest.raises(RuntimeError, match=r"clamp: at least one of min and max"):
        x.clamp()
    with pytest.raises(TypeError, match=r"masked_fill: mask must be a boolean array, got dtype float64"):
        x.masked_fill(X, 0.0)
    with pytest.raises(RuntimeError, match=r"gather: index has 1 dimensions, the tensor 2"):
        x.gather(0, np.array([0, 1]))
    with pytest.raises(TypeError, match=r"std: pass unbiased or correction, not both"):
        x.std(unbiased=True, correction=1)
    with pytest.raises(TypeError, match=r"cumsum\(\) missing 1 required positional argument: 'dim'"):
        x.cumsum()


@pytest.mark.parametrize("data", [[1, 2], np.array([1, 2]), 3, np.float64(2.5)])
def test_tensor_takes_pytorchs_dtype_keyword(data):
    t = Tensor(data, dtype=np.float32, requires_grad=True)
    assert t.dtype == np.float32 and t.requires_grad
    np.testing.assert_array_equal(np.asarray(t.value), np.asarray(data, dtype=np.float32))
    (t * t).sum().backward()
    assert t.grad.dtype == np.float32


def test_tensor_with_dtype_copies_as_without():
    a = np.array([1.0, 2.0])
    for dtype in (np.float64, np.float32):
        t = Tensor(a, dtype=dtype)
        a[0] = 9.0
        assert t.value[0] == 1.0
        a[0] = 1.0


# PyTorch takes NumPy's axis= and keepdims= for dim= and keepdim= on every method
# with those parameters (its argument parser's aliases). Each expression is paired
# with the spelling whose numbers PyTorch recorded in the golden file; PyTorch
# gives both the same (checked live below where it is installed).
ALIASES = {
    "x.sum(axis=0)": "x.sum(dim=0)",
    "x.sum(axis=(0, 1), keepdims=True)": "x.sum(dim=(0, 1), keepdim=True)",
    "x.mean(axis=1, keepdims=True)": "x.mean(1, keepdim=True)",
    "x.prod(axis=1)": "x.prod(dim=1)",
    "x.amax(axis=0)": "x.amax(dim=0)",
    "x.amin(axis=1)": "x.amin(1)",
    "x.logsumexp(axis=1)": "x.logsumexp(1)",
    "x.argmax(axis=1)": "x.argmax(dim=1)",
    "x.argmin(axis=0, keepdims=True)": "x.argmin(0, keepdim=True)",
    "x.max(axis=0)": "x.max(0)",
    "x.max(axis=1, keepdims=True)": "x.max(1, keepdim=True)",
    "x.min(axis=1)": "x.min(1)",
    "x.min(axis=0)": "x.min(dim=0)",
    "x.sort(axis=1)": "x.sort(1)",
    "x.sort(axis=0, descending=True)": "x.sort(0, descending=True)",
    "x.argsort(axis=0, descending=True)": "x.argsort(0, descending=True)",
    "x.cumsum(axis=1)": "x.cumsum(1)",
    "x.cumprod(axis=0)": "x.cumprod(0)",
    "x.std(axis=0)": "x.std(0)",
    "x.std(axis=1, unbiased=False)": "x.std(dim=1, unbiased=False)",
    "x.var(axis=1, keepdims=True)": "x.var(1, keepdim=True)",
    "x.repeat_interleave(2, axis=1)": "x.repeat_interleave(2, 1)",
    "x.softmax(axis=1)": "x.softmax(1)",
    "x.log_softmax(axis=0)": "x.log_softmax(0)",
    "x.gather(axis=1, index=idx)": "x.gather(1, idx)",
    "x.scatter_add(axis=0, index=idx0, src=src)": "x.scatter_add(0, idx0, src)",
    "x.size(axis=1)": "x.size(1)",
}


@pytest.mark.parametrize("expression", ALIASES)
def test_numpys_axis_and_keepdims_mean_pytorchs_dim_and_keepdim(expression):
    _compare(run("reverse", expression), GOLDEN["cases"][ALIASES[expression]], expression)


def test_every_tensor_method_and_alias_gives_pytorchs_numbers_live():
    """Beside the recording: every expression, and NumPy's spelling of each (ALIASES),
    against the PyTorch installed now (one test, so CI without PyTorch reports one skip)."""
    pytest.importorskip("torch")
    for expression in EXPRESSIONS + list(ALIASES):
        _compare(run("reverse", expression), run("torch", expression), expression)


def test_squeeze_and_unsqueeze_take_axis_with_pytorchs_meaning():
    """``torch.zeros(1, 3).squeeze(axis=1)`` keeps the axis of size 3 (PyTorch's squeeze)."""
    x = Tensor(np.zeros((1, 3)))
    assert x.squeeze(axis=1).shape == (1, 3) and x.squeeze(axis=0).shape == (3,)
    assert x.unsqueeze(axis=0).shape == (1, 1, 3)
    assert Tensor(np.zeros((1, 3, 1))).squeeze(axis=(0, 2)).shape == (3,)


@pytest.mark.parametrize("call", ["x.sum(0, axis=0)", "x.sum(dim=0, axis=0)", "x.max(0, axis=1)",
                                  "x.mean(0, True, keepdims=True)", "x.var(keepdim=True, keepdims=True)",
                                  "x.cumsum(1, axis=1)", "x.squeeze(0, axis=0)", "x.size(0, axis=0)"])
def test_both_spellings_of_one_argument_is_an_error_naming_both(call):
    x = Tensor(X)
    both = r"(dim=.*axis=|keepdim=.*keepdims=)"
    with pytest.raises(TypeError, match=rf"{call[2:call.index('(')]}: got {both}"):
        eval(call, {"x": x})


def test_numpy_values_inside_the_transforms_keep_numpys_squeeze():
    """NumPy's squeeze(axis=) refuses an axis whose size is not 1; PyTorch's keeps it."""
    def f(a):
        return a.squeeze(axis=1).sum()

    with pytest.raises(ValueError):
        reverse.grad(f)(np.zeros((1, 3)))

"""``reverse.detect_anomaly``: the first NaN or inf of a backward walk names its
primitive and the user's line that recorded the forward operation."""

from __future__ import annotations

import inspect
import sys
import threading

import numpy as np
import pytest

import mixed
import reverse
from reverse import Function, Tensor, detect_anomaly, gradients


def model(w):
    h = np.log(w)
    return (h * h).sum()  # at w = 0: h = -inf, and d(h * h)/dh = 2 h = -inf


MODEL_LINE = inspect.getsourcelines(model)[1] + 2
# The anomalies are made on purpose (log(0), sqrt'(0) = 0.5 / 0, 0 * inf), and NumPy warns of them.
ANOMALIES = pytest.mark.filterwarnings("ignore:(divide by zero|invalid value) encountered:RuntimeWarning")


def _raises_at(prim, kind, line, text):
    return pytest.raises(RuntimeError, match=rf"(?s)^detect_anomaly: the backward step of '{prim}' "
                                             rf"produced {kind} in the cotangent of its input 0\n"
                                             rf".*line {line}, in .*{text}")


@ANOMALIES
def test_backward_names_the_primitive_and_the_line_that_recorded_it():
    x = Tensor(np.array([0.0, 2.0]), requires_grad=True)
    with detect_anomaly():
        y = model(x)
        with _raises_at("multiply", "inf", MODEL_LINE, r"return \(h \* h\)\.sum\(\)"):
            y.backward()


@ANOMALIES
def test_outside_anomaly_mode_nothing_is_recorded_or_checked():
    x = Tensor(np.array([0.0, 2.0]), requires_grad=True)
    y = model(x)
    assert not hasattr(y.grad_fn, "where")  # the slot stays unset: recording did no extra work
    y.backward()
    assert np.isneginf(x.grad[0])


@ANOMALIES
@pytest.mark.parametrize("how", ["grad", "vjp", "gradients", "create_graph"])
def test_every_reverse_entry_point_is_checked(how):
    x = np.array([0.0, 1.0])
    line = inspect.currentframe().f_lineno + 3

    def f(w):
        return np.sqrt(w).sum()  # sqrt'(0) = inf
    with detect_anomaly(), _raises_at("sqrt", "inf", line, r"np\.sqrt\(w\)"):
        if how == "grad":
            reverse.grad(f)(x)
        elif how == "vjp":
            reverse.vjp(f, x)[1](1.0)
        else:
            t = Tensor(x, requires_grad=True)
            if how == "gradients":
                gradients(f(t), [t])
            else:
                f(t).backward(create_graph=True)  # the cotangents are Tensors


@ANOMALIES
def test_nan_in_the_tangent_of_a_dual_cotangent_under_hvp():
    # sqrt(w) ** 3 at w = 0: the gradient is finite, its tangent 0 * inf
    line = inspect.currentframe().f_lineno + 2
    with detect_anomaly(), _raises_at("integer_pow", "NaN", line, r"np\.sqrt\(w\) \*\* 3"):
        mixed.hvp(lambda w: (np.sqrt(w) ** 3).sum(), np.array([0.0, 1.0]), np.ones(2))


@ANOMALIES
def test_check_nan_false_and_a_graph_recorded_outside_the_block():
    x = Tensor(np.array([0.0, 2.0]), requires_grad=True)
    with detect_anomaly(check_nan=False):
        model(x).backward()  # not checked
    y = model(x)
    with detect_anomaly(), pytest.raises(RuntimeError, match=r"'multiply'(.|\n)*recorded outside "):
        y.backward()


@pytest.mark.skipif(sys.version_info < (3, 11), reason="exception notes are Python 3.11's")
def test_an_error_in_a_backward_step_gets_a_note_with_the_forward_line():
    class Boom(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom")

    x = Tensor(np.ones(2), requires_grad=True)
    with detect_anomaly():
        line = inspect.currentframe().f_lineno + 1
        y = Boom.apply(x).sum()
        with pytest.raises(ValueError, match="boom") as info:
            y.backward()
    note = "\n".join(info.value.__notes__)
    assert "backward step of 'Boom'" in note and f"line {line}" in note


def test_a_decorator_that_nests_restores_and_stays_in_its_thread():
    from reverse._anomaly import ANOMALY

    @detect_anomaly()
    def inside():
        seen = []
        other = threading.Thread(target=lambda: seen.append(ANOMALY.on))
        other.start()
        other.join()
        with detect_anomaly(check_nan=False):
            assert ANOMALY.on and not ANOMALY.check_nan
        return ANOMALY.on, ANOMALY.check_nan, seen[0]

    assert inside() == (True, True, False)
    assert not ANOMALY.on
    assert "detect_anomaly" in reverse.__all__

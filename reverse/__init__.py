"""reverse: dynamic-graph reverse-mode AD over the shared primitive table.

A tape records each primitive applied to a ``Tensor`` that requires grad,
as the program runs; ``backward`` walks it back iteratively. PyTorch-style
(``Tensor`` and its methods, ``backward``, ``.grad``, ``no_grad``,
``inference_mode``, ``saved_tensors_hooks``, ``Function``) and JAX-style
(``grad``, ``vjp``, ``value_and_grad``, ``jacrev``, ``jacobian``) APIs.

Examples
--------
>>> import numpy as np
>>> from reverse import grad
>>> grad(lambda w: np.tanh(w).sum())(np.zeros(2))
array([1., 1.])
"""

from dualad.extend import register_vjp
from dualad.ops import stop_gradient
from reverse import nn, optim
from reverse._anomaly import detect_anomaly
from reverse._backward import backward, gradients
from reverse._checkpoint import checkpoint
from reverse._dot import to_dot
from reverse._function import Function, FunctionCtx, once_differentiable
from reverse._functional import grad, jacobian, jacrev, value_and_grad, vjp
from reverse._grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from reverse._saved_hooks import saved_tensors_hooks
from reverse._tensor import Tensor, as_tensor

register_vjp(vjp)  # the reverse mode of check_grads' "rev" and of dualad.linear_transpose

__all__ = ["Function", "FunctionCtx", "Tensor", "as_tensor", "backward", "checkpoint", "detect_anomaly",
           "enable_grad", "grad", "gradients", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "jacobian", "jacrev", "nn", "no_grad", "once_differentiable",
           "optim", "saved_tensors_hooks", "set_grad_enabled", "stop_gradient", "to_dot", "value_and_grad",
           "vjp"]

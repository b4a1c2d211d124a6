"""``clip_grad_norm_`` and ``clip_grad_value_``: PyTorch's gradient clipping (``torch.nn.utils``).

They live in ``reverse.optim`` because they act on the ``.grad`` an optimizer
is about to read, between ``backward()`` and ``step()``; ``reverse`` has no
``nn`` package for them to join. Each ``.grad`` is changed in place, as in
PyTorch: it is a Tensor that owns its array, so a reference to it sees the
clipped values.
"""

from __future__ import annotations

import math
from typing import Iterable

from dualad import ops
from dualad.interpreter import check_number, describe
from reverse._grad_mode import no_grad
from reverse._tensor import Tensor, as_tensor
from reverse.optim._base import as_float
from reverse.optim._options import flag, non_negative

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _with_grads(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    """The parameters that have a ``.grad``, from one Tensor or an iterable of them."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    elif isinstance(parameters, (str, bytes, dict)) or not hasattr(parameters, "__iter__"):
        raise TypeError(f"parameters must be a Tensor or an iterable of Tensors, got "
                        f"{describe(parameters)}")
    params = list(parameters)
    for i, p in enumerate(params):
        if not isinstance(p, Tensor):
            raise TypeError(f"parameters[{i}] must be a reverse.Tensor, got {type(p).__name__}")
    return [p for p in params if p.grad is not None]


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False) -> Tensor:
    """Scale the gradients together so that their joint norm is at most ``max_norm``.

    As ``torch.nn.utils.clip_grad_norm_``: the total norm is the
    ``norm_type``-norm of all gradients as one vector; every gradient is
    multiplied by ``min(1, max_norm / (total + 1e-6))``.

    Parameters
    ----------
    parameters : Tensor or iterable of Tensor
        Whose ``.grad`` to clip (those without one are skipped).
    max_norm : float
        The largest norm, >= 0.
    norm_type : float
        The ``p`` of the p-norm, > 0, or ``math.inf`` (also ``"inf"``) for the largest entry.
    error_if_nonfinite : bool
        Raise ``RuntimeError`` when the total norm is nan or infinite
        (otherwise the gradients are scaled by ``max_norm / inf = 0``, or by
        nan, as in PyTorch).

    Returns
    -------
    Tensor
        The total norm before clipping (0-d, of the gradients' backend and dtype).

    Examples
    --------
    >>> import numpy as np
    >>> from reverse import Tensor
    >>> from reverse.optim import clip_grad_norm_
    >>> w = Tensor(np.array([3.0, 4.0]), requires_grad=True)
    >>> (w * w / 2).sum().backward()        # w.grad = [3, 4], norm 5
    >>> clip_grad_norm_([w], max_norm=1.0).item()
    5.0
    >>> np.round(w.grad.value, 6)
    array([0.6, 0.8])
    """
    max_norm = non_negative("max_norm", max_norm)
    norm_type = check_number("norm_type", math.inf if norm_type == "inf" else norm_type, low_open=True)
    error_if_nonfinite = flag("error_if_nonfinite", error_if_nonfinite)
    params = _with_grads(parameters)
    if not params:
        return Tensor(0.0)
    with no_grad():  # not recorded: a .grad made with create_graph=True comes out without its graph
        norms = [ops.linalg.vector_norm(p.grad, ord=norm_type) for p in params]
        total = ops.linalg.vector_norm(ops.stack(norms), ord=norm_type)
        if error_if_nonfinite and not math.isfinite(as_float(total)):
            raise RuntimeError(f"clip_grad_norm_: the total norm of order {norm_type} of the gradients "
                               f"is {as_float(total)}, so they cannot be clipped; pass "
                               "error_if_nonfinite=False to let them become nan")
        scale = ops.minimum(max_norm / (total + 1e-6), 1.0)
        for p in params:
            grad = p.grad
            grad *= scale  # in place, as torch's grad.mul_
    return total if isinstance(total, Tensor) else as_tensor(total)


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float) -> None:
    """Clip every gradient entry into ``[-clip_value, clip_value]``, as ``torch.nn.utils.clip_grad_value_``.

    Parameters
    ----------
    parameters : Tensor or iterable of Tensor
        Whose ``.grad`` to clip (those without one are skipped).
    clip_value : float
        The largest magnitude, >= 0.

    Examples
    --------
    >>> import numpy as np
    >>> from reverse import Tensor
    >>> from reverse.optim import clip_grad_value_
    >>> w = Tensor(np.array([-3.0, 0.5]), requires_grad=True)
    >>> (w * w / 2).sum().backward()
    >>> clip_grad_value_(w, clip_value=1.0)
    >>> w.grad.value
    array([-1. ,  0.5])
    """
    clip_value = non_negative("clip_value", clip_value)
    with no_grad():
        for p in _with_grads(parameters):
            p.grad[...] = ops.clip(p.grad.value, -clip_value, clip_value)  # torch's grad.clamp_

"""PyTorch's ``Tensor`` methods whose meaning differs from NumPy's, or that NumPy
spells otherwise: one expression each, evaluated on a PyTorch tensor and on a
``reverse.Tensor`` made from the same numbers.

``run(lib, expression)`` evaluates ``expression`` with ``x`` (3x4, float64, with
ties, and values equal to the clamp bounds), ``idx`` and ``idx0`` (int64 index
tensors) and ``src`` in ``lib`` ("torch" or "reverse"), and returns what a test
compares: the result's shape, dtype and values, the indices of a ``(values,
indices)`` pair, and the gradient of ``sum(values * weights)`` with respect to
``x`` (weights ``cos(1 + arange(n))``, the same in both). The JSON file written
by ``tests/reverse/make_torch_methods_golden.py`` holds PyTorch's answers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

X = np.array([[0.5, -1.2, 0.5, 2.0], [1.5, 0.3, -0.7, 1.5], [-2.0, 0.8, 0.8, 0.1]])
IDX = np.array([[0, 0], [3, 1], [2, 2]])
IDX0 = np.array([[0, 1, 2, 0], [0, 0, 1, 1]])
SRC = np.arange(1.0, 9.0).reshape(2, 4)

EXPRESSIONS = [
    "x.transpose(0, 1)", "x.transpose(-1, 0)", "x.permute(1, 0)", "x.repeat(2, 1)",
    "x.repeat(2, 1, 3)", "x.repeat_interleave(2, 1)",
    "x.std()", "x.var()", "x.std(0)", "x.var(1, keepdim=True)", "x.std(dim=1, unbiased=False)",
    "x.var(correction=0)", "x.std(False)",
    "x.max()", "x.max(0)", "x.max(1, keepdim=True)", "x.min(1)", "x.min(dim=0)",
    "x.max(x.flip(0))", "x.sort(1)", "x.sort(0, descending=True)", "x.argsort()",
    "x.argsort(0, descending=True)",
    "x.sum(dim=0)", "x.sum(dim=(0, 1), keepdim=True)", "x.mean(1, keepdim=True)", "x.prod(dim=1)",
    "x.amax(dim=0)", "x.amin(1)", "x.logsumexp(1)", "x.argmax(dim=1)", "x.argmin(0, keepdim=True)",
    "x.cumsum(1)", "x.cumprod(0)", "x.flatten()", "x.expand(2, 3, 4)", "x.expand(2, -1, -1)",
    "x.flip(0)", "x.flip((0, 1))", "x.clamp(-0.7, 0.8)", "x.clamp(min=0.5)", "x.clamp_max(0.5)",
    "x.clip(-1.0, 1.0)", "x.masked_fill(x > 0.6, 0.25)", "x.softmax(1)", "x.log_softmax(0)",
    "x.norm()", "x.norm(1)", "x.norm(dim=1)", "x.norm(p=float('inf'), dim=0)", "x.norm(p='nuc')",
    "x.gather(1, idx)", "x.scatter_add(0, idx0, src)", "(x - 0.5).nonzero()",
    "x.size()", "x.size(1)", "x.numel()", "x.dim()", "x.float()", "x.square()", "x.neg()",
    "x.abs().rsqrt()", "x.add(2.0)", "x.mul(x)", "(x > 0.6).nonzero()", "(x > 0.6).float()", "x[x > 0.6]",
    "(x > 0.6).sum()",
]


def _weights(shape: tuple) -> np.ndarray:
    return np.cos(1.0 + np.arange(int(np.prod(shape)))).reshape(shape)


def run(lib: str, expression: str) -> dict[str, Any]:
    """What ``expression`` gives in ``lib``, as plain Python data (see the module docstring)."""
    if lib == "torch":
        import torch
        x = torch.tensor(X, dtype=torch.float64, requires_grad=True)
        names = {"x": x, "idx": torch.tensor(IDX), "idx0": torch.tensor(IDX0),
                 "src": torch.tensor(SRC)}
    else:
        from reverse import Tensor
        x = Tensor(X, requires_grad=True)
        names = {"x": x, "idx": IDX, "idx0": IDX0, "src": SRC}
    out = eval(expression, names)
    pair = isinstance(out, tuple) and hasattr(out, "indices")  # (values, indices)
    if isinstance(out, int) or isinstance(out, tuple) and not pair:  # size(), numel(), dim()
        return {"number": list(out) if isinstance(out, tuple) else int(out)}
    values, indices = (out[0], out[1]) if pair else (out, None)
    host = _host(values)
    result = {"shape": list(host.shape), "dtype": str(host.dtype), "values": host.tolist(),
              "indices": None if indices is None else _host(indices).tolist(), "grad": None}
    if host.dtype.kind == "f" and values.requires_grad:
        weights = _weights(host.shape)
        if lib == "torch":
            (values * torch.tensor(weights, dtype=values.dtype)).sum().backward()
        else:
            (values * weights).sum().backward()
        result["grad"] = None if x.grad is None else _host(x.grad).tolist()
    return result


def _host(t: Any) -> np.ndarray:
    if hasattr(t, "detach"):  # torch
        return t.detach().numpy()
    return np.asarray(getattr(t, "value", t))

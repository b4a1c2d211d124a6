"""The seed's training loop, written once for ``torch.nn`` and ``reverse.nn``.

A two-layer network with a ReLU, dropout (in eval mode, so both libraries
compute the same function) and a skip connection, trained with AdamW and
``MSELoss`` for a few steps from the same weights. ``run(nn, optim, Tensor)``
returns the losses, the first step's gradients and the final weights;
``tests/reverse/make_torch_nn_golden.py`` records PyTorch's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

STEPS = 5
RNG = np.random.default_rng(7)
INPUTS = RNG.standard_normal((16, 10))
TARGETS = RNG.standard_normal((16, 10))


def model_class(nn: Any) -> type:
    class SimpleNet(nn.Module):
        def __init__(self, input_size, hidden_size, output_size):
            super().__init__()
            self.layer1 = nn.Linear(input_size, hidden_size)
            self.layer2 = nn.Linear(hidden_size, output_size)
            self.activation = nn.ReLU(inplace=True)
            self.dropout = nn.Dropout(0.05)

        def forward(self, x):
            h = self.activation(self.layer1(x))
            h = self.dropout(h)
            return self.layer2(h) + x

    return SimpleNet


def run(nn: Any, optim: Any, tensor: Any, initial: dict | None) -> dict[str, Any]:
    """Train from ``initial`` (a state dict of lists; None: the library's own draw)."""
    model = model_class(nn)(10, 5, 1)
    if initial is not None:
        model.load_state_dict({k: tensor(np.array(v)) for k, v in initial.items()})
    model.eval()
    optimizer = optim.AdamW(model.parameters(), lr=0.001, weight_decay=0.01)
    criterion = nn.MSELoss()
    inputs, targets = tensor(INPUTS), tensor(TARGETS)
    losses, first = [], None
    for _ in range(STEPS):
        loss = criterion(model(inputs), targets)
        optimizer.zero_grad()
        loss.backward()
        if first is None:
            first = {k: _list(p.grad) for k, p in model.named_parameters()}
        optimizer.step()
        losses.append(loss.item())
    final = {k: _list(p) for k, p in model.named_parameters()}
    return {"losses": losses, "first_grads": first, "final": final,
            "names": [k for k, _ in model.named_parameters()]}


def _list(t: Any) -> list:
    if hasattr(t, "detach") and hasattr(t.detach(), "numpy"):
        t = t.detach()
        return (t.numpy(force=True) if "reverse" in type(t).__module__ else t.numpy()).tolist()
    return np.asarray(t).tolist()

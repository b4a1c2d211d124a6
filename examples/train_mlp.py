"""Train a small two-layer network with the reverse-mode tape and AdamW.

The model is written with plain ``reverse.Tensor`` values and functions:

    h = dropout(relu(x @ W1 + b1))      hidden layer, inverted dropout
    y = x + h @ W2 + b2                 output, with a skip connection

and is fitted to synthetic data ``y = x + 0.5 sin(3 x) @ M`` (plus a little
noise) by minimising the mean squared error with ``reverse.optim.AdamW``.
Dropout draws a fresh random mask each step and scales the kept units by
``1 / (1 - p)``, so nothing changes at evaluation time, when it is off.

Run it with ``python examples/train_mlp.py [steps]``; it prints the training
loss as it falls and the evaluation loss before and after training.
"""

from __future__ import annotations

import sys

import numpy as np

from dualad import ops
from reverse import Tensor, no_grad
from reverse.optim import AdamW


def make_data(rng: np.random.Generator, n: int = 256, dim: int = 4):
    """Inputs ``x`` of shape (n, dim) and targets with a non-linear part."""
    x = rng.uniform(-1.0, 1.0, size=(n, dim))
    mix = rng.normal(size=(dim, dim)) / np.sqrt(dim)
    y = x + 0.5 * np.sin(3.0 * x) @ mix + 0.01 * rng.normal(size=(n, dim))
    return x, y


def init_params(rng: np.random.Generator, dim: int, hidden: int) -> dict[str, Tensor]:
    """He-initialised weights and zero biases, as leaf tensors that require grad."""
    def param(value):
        return Tensor(value, requires_grad=True)
    return {
        "W1": param(rng.normal(size=(dim, hidden)) * np.sqrt(2.0 / dim)),
        "b1": param(np.zeros(hidden)),
        "W2": param(rng.normal(size=(hidden, dim)) * np.sqrt(1.0 / hidden)),
        "b2": param(np.zeros(dim)),
    }


def dropout(h, p: float, rng: np.random.Generator | None):
    """Inverted dropout: zero each unit with probability ``p``, scale the rest by 1/(1-p).

    With ``rng=None`` (evaluation) it is the identity.

    Examples
    --------
    >>> h = np.ones((1000, 10))
    >>> out = dropout(h, 0.5, np.random.default_rng(0))
    >>> sorted(set(out.ravel().tolist())), bool(abs(out.mean() - 1.0) < 0.05)
    ([0.0, 2.0], True)
    """
    if rng is None or p == 0.0:
        return h
    keep = rng.random(h.shape) >= p
    return h * (keep / (1.0 - p))


def model(params: dict[str, Tensor], x, p_drop: float = 0.0, rng=None):
    """The two-layer network with a ReLU, dropout and a skip connection."""
    h = ops.relu(x @ params["W1"] + params["b1"])
    h = dropout(h, p_drop, rng)
    return x + h @ params["W2"] + params["b2"]


def mse(pred, target):
    """Mean squared error.

    Examples
    --------
    >>> mse(np.array([1.0, 3.0]), np.array([0.0, 1.0]))
    np.float64(2.5)
    """
    d = pred - target
    return (d * d).mean()


def main(steps: int = 300, seed: int = 0, hidden: int = 64, p_drop: float = 0.1,
         lr: float = 1e-2, verbose: bool = True) -> dict:
    """Train and return the losses: ``{"initial", "final", "train"}``.

    ``initial`` and ``final`` are evaluation losses (no dropout) over the
    training set; ``train`` is the list of per-step training losses.
    """
    rng = np.random.default_rng(seed)
    x, y = make_data(rng)
    params = init_params(rng, x.shape[1], hidden)
    opt = AdamW(params, lr=lr, weight_decay=1e-4)

    def evaluate() -> float:
        with no_grad():
            return mse(model(params, x), y).item()

    initial = evaluate()
    if verbose:
        print(f"initial loss {initial:.5f}")
    train = []
    for step in range(1, steps + 1):
        opt.zero_grad()
        loss = mse(model(params, x, p_drop, rng), y)
        loss.backward()
        opt.step()
        train.append(loss.item())
        if verbose and (step % max(1, steps // 10) == 0 or step == 1):
            print(f"step {step:4d}  train loss {train[-1]:.5f}")
    final = evaluate()
    if verbose:
        print(f"final loss {final:.5f} ({initial / final:.1f}x lower)")
    return {"initial": initial, "final": final, "train": train}


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)

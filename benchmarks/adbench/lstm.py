"""ADBench's LSTM: the loss of a character model over a text, its data, and its gradient
in dualad.

ADBench (arXiv 1807.10129, "Long short-term memory") runs ``l`` LSTM layers of hidden
size ``b`` over ``c`` characters, each character a row of ``b`` bits, and returns the
average cross-entropy of each next character's bits. The gradient is with respect to
``main_params`` (``2 l`` rows of ``4 b``: each layer's gate weights, then its gate
biases) and ``extra_params`` (3 rows of ``b``: input weight, output weight, output
bias); ``state`` (``2 l`` rows of ``b``: each layer's hidden and cell state) and the
sequence are constants.

Written as ADBench's Python reference writes it: a Python loop over the characters,
and in it one over the layers, on vectors of ``b`` numbers. Its gates are
elementwise, not a matrix product (``concatenate((input, hidden, input, hidden)) *
weight + bias``), and its log-softmax adds 2 inside the logarithm: the reference
writes ``log(sum(exp(ypred), 2))``, Python's ``sum`` with a start of 2, and ADBench's
C++ (``logsumexp`` in ``lstm.h``) and the values its tests expect keep that 2. The
reference writes the new state into a copy (``s2[i] = ...``); here each step's state
is a list of the layers' vectors, the same numbers.

Data, as ADBench's ``gen_data.py`` draws it: ``main_params``, ``extra_params`` and
``state`` uniform on [0, 1); the sequence a text's characters, each written as its
code point's ``b`` bits (most significant first), ``b`` the bits of the largest
code point (14 in ADBench's text). Here the text is drawn from a fixed seed: mostly
lower-case letters and spaces, with a few characters above U+2000, so that ``b = 14``
as in ADBench.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

import dualad
import reverse

from ..common import SEED
from . import readonly

HIDDEN = 14  # bits per character, ADBench's (its text's largest code point needs 14)

# (layers, characters): a smaller problem, and ADBench's smallest (lstm_l2_c1024).
SIZES = {"l2-c128": (2, 128), "l2-c1024": (2, 1_024)}


class LSTMInput(NamedTuple):
    main_params: np.ndarray  # (2 l, 4 b)
    extra_params: np.ndarray  # (3, b)
    state: np.ndarray  # (2 l, b)
    sequence: np.ndarray  # (c, b) of 0.0 and 1.0


def text(c: int, rng: np.random.Generator) -> str:
    """``c`` characters: letters and spaces, one in 64 a code point in [U+2000, U+4000)."""
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz    "))
    chars = letters[rng.integers(0, len(letters), c)]
    wide = rng.random(c) < 1.0 / 64.0
    wide[0] = True  # at least one, so that every text needs 14 bits
    chars[wide] = [chr(v) for v in rng.integers(0x2000, 0x4000, int(wide.sum()))]
    return "".join(chars)


def text_to_bits(s: str, bits: int) -> np.ndarray:
    """Each character's code point as ``bits`` binary digits, most significant first."""
    codes = np.array([ord(ch) for ch in s])
    return ((codes[:, None] >> np.arange(bits - 1, -1, -1)) & 1).astype(np.float64)


@functools.lru_cache(maxsize=None)
def data(l: int, c: int) -> LSTMInput:
    """An LSTM input of ``l`` layers and ``c`` characters, from a fixed seed, read-only."""
    rng = np.random.default_rng([SEED, 36, 3, l, c])
    b = HIDDEN
    s = text(c, rng)
    assert max(ord(ch) for ch in s).bit_length() == b
    state = rng.random((2 * l, b))
    main_params = rng.random((2 * l, 4 * b))
    extra_params = rng.random((3, b))
    return LSTMInput(*map(readonly, (main_params, extra_params, state, text_to_bits(s, b))))


def sigmoid(x, xp=np):
    return 1.0 / (1.0 + xp.exp(-x))


def lstm(weight, bias, hidden, cell, _input, xp=np):
    """One layer, one character: ``(hidden, cell)`` after reading ``_input``."""
    gates = xp.concatenate((_input, hidden, _input, hidden)) * weight + bias
    hsize = hidden.shape[0]
    forget = sigmoid(gates[0:hsize], xp)
    ingate = sigmoid(gates[hsize:2 * hsize], xp)
    outgate = sigmoid(gates[2 * hsize:3 * hsize], xp)
    change = xp.tanh(gates[3 * hsize:])
    cell = cell * forget + ingate * change
    hidden = outgate * xp.tanh(cell)
    return hidden, cell


def predict(w, w2, s, x, xp=np):
    """Every layer on one character: the output, and the new state (a list of ``2 l`` rows)."""
    s2 = list(s)
    x = x * w2[0]
    for i in range(0, len(s), 2):
        s2[i], s2[i + 1] = lstm(w[i], w[i + 1], s[i], s[i + 1], x, xp)
        x = s2[i]
    return x * w2[1] + w2[2], s2


def lstm_objective(main_params, extra_params, state, sequence, xp=np):
    """ADBench's LSTM loss (a float): the negative mean of ``ygold * log-softmax(ypred)``."""
    total = 0.0
    count = 0
    _input = sequence[0]
    all_states = [[state[i] for i in range(state.shape[0])]]
    for t in range(sequence.shape[0] - 1):
        ypred, new_state = predict(main_params, extra_params, all_states[t], _input, xp)
        all_states.append(new_state)
        # ADBench's 2: see the module's docstring
        ynorm = ypred - xp.log(xp.sum(xp.exp(ypred)) + 2.0)
        ygold = sequence[t + 1]
        total = total + xp.sum(ygold * ynorm)
        count += ygold.shape[0]
        _input = ygold
    return -total / count


# -- dualad ------------------------------------------------------------------------------
def objective(inp: LSTMInput):
    """The objective at ``inp`` on plain NumPy arrays (the baseline)."""
    return lstm_objective(*inp)


gradient = reverse.grad(lstm_objective, argnums=(0, 1))
"""``(d main_params, d extra_params)`` by one reverse pass: ``gradient(*inp)``."""


def compiled_objective():
    """``lstm_objective`` under ``dualad.jit``."""
    return dualad.jit(lstm_objective)


def compiled_gradient():
    """``gradient`` under ``dualad.jit``: the reverse pass traced once and replayed."""
    return dualad.jit(gradient)

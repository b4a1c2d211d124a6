"""Exponential moving averages kept in an optimizer's state (Adam's moments, RMSprop's)."""

from __future__ import annotations

from typing import Any

__all__ = ["moving_average"]


def moving_average(state: dict, key: str, decay: float, value: Any) -> Any:
    """Set ``state[key] = decay * state[key] + (1 - decay) * value`` and return it.

    The average starts at zero, as PyTorch's do: its first value is
    ``(1 - decay) * value``, a new array (never ``value`` itself).
    """
    old = state.get(key)
    new = (1.0 - decay) * value if old is None else decay * old + (1.0 - decay) * value
    state[key] = new
    return new

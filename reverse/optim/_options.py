"""What each optimizer option may be: one check per kind of option.

A check takes the option's name as the user would spell it (``"lr"``,
``"params[1]['lr']"``, ``"state_dict['param_groups'][0]['betas']"``) and its
value, and returns the value to keep or raises an error that names the option,
what it must be and what came. Each optimizer maps its options to these checks
(``Optimizer._checks``), so defaults, parameter groups and loaded state dicts
are checked alike.
"""

from __future__ import annotations

from typing import Any

from dualad.interpreter import check_count, check_number, describe

__all__ = ["at_least_one", "betas", "flag", "non_negative", "unit_interval"]


def non_negative(name: str, value: Any) -> float:
    return check_number(name, value)


def unit_interval(name: str, value: Any) -> float:
    return check_number(name, value, 0.0, 1.0)


def at_least_one(name: str, value: Any) -> int:
    return check_count(value, name, low=1)


def flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {describe(value)}")
    return value


def betas(name: str, value: Any) -> tuple[float, float]:
    """A pair of decay rates, each in [0, 1)."""
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ValueError(f"{name} must be a pair of floats, got {value!r}")
    return tuple(check_number(f"{name}[{i}]", b, 0.0, 1.0, high_open=True) for i, b in enumerate(value))

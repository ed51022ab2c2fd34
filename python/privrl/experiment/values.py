"""The sweep config's scalar values (numbers, epsilons, delta, seeds): each parsed once, exactly,
with the offending key in the error (privrl.experiment.config assembles the studies from them)."""

from __future__ import annotations

import math
from typing import Any

from privrl.common.errors import ConfigError

__all__ = ["MAX_SEED_COUNT"]


def _number(
    value: Any,
    key: str,
    *,
    integer: bool = False,
    low: float | None = None,
    low_open: bool = False,
    high: float | None = None,
    high_open: bool = False,
    allow_inf: bool = False,
) -> Any:
    if isinstance(value, str) and value.strip().lower() in ("inf", "+inf", "infinity"):
        value = math.inf
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or (integer and not float(value).is_integer())
    ):
        raise ConfigError(key, f"expected {'an integer' if integer else 'a number'}, got {value!r}")
    x = float(value)
    if math.isnan(x) or (math.isinf(x) and not allow_inf):
        raise ConfigError(key, f"expected a finite number, got {value!r}")
    if low is not None and (x < low or (low_open and x == low)):
        raise ConfigError(key, f"must be {'>' if low_open else '>='} {low:g}, got {value!r}")
    if high is not None and (x > high or (high_open and x == high)):
        raise ConfigError(key, f"must be {'<' if high_open else '<='} {high:g}, got {value!r}")
    return int(x) if integer else x


def _delta(value: Any, key: str) -> float:
    """delta in [0, 1): 0 is pure DP; a positive delta at least privrl.common.checks.DELTA_FLOOR."""
    from privrl.common.checks import DELTA_FLOOR

    x = float(_number(value, key, low=0.0, high=1.0, high_open=True))
    if 0.0 < x < DELTA_FLOOR:
        raise ConfigError(key, f"must be 0 (pure DP) or >= {DELTA_FLOOR:g}, got {value!r}")
    return x


def _epsilons(value: Any, key: str) -> tuple[float, ...]:
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, (list, tuple)) or not value:
        raise ConfigError(
            key, f"expected a non-empty list of epsilons (> 0, inf = non-private), got {value!r}"
        )
    from privrl.common.checks import EPSILON_RANGE

    out = tuple(
        _number(e, f"{key}[{i}]", low=0.0, low_open=True, allow_inf=True) for i, e in enumerate(value)
    )
    lo, hi = EPSILON_RANGE
    for i, e in enumerate(out):
        if math.isfinite(e) and not lo <= e <= hi:
            raise ConfigError(f"{key}[{i}]", f"must be inf (non-private) or in [{lo:g}, {hi:g}], got {e!r}")
    if len(set(out)) != len(out):
        raise ConfigError(key, f"repeated epsilon in {list(value)!r}")
    return out


MAX_SEED_COUNT = 100_000  # a larger count is a typo (and would not fit in memory), not a study


def _seed(value: Any, key: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):  # exact: no float round trip
        if not 0 <= value < 2**63:
            raise ConfigError(key, f"a seed must be in [0, 2^63), got {value}")
        return value
    return int(_number(value, key, integer=True, low=0, high=2**53))


def _seeds(value: Any, key: str) -> tuple[int, ...]:
    if isinstance(value, int) and not isinstance(value, bool):
        if not 1 <= value <= MAX_SEED_COUNT:
            raise ConfigError(key, f"a seed count must be in [1, {MAX_SEED_COUNT:,}], got {value}")
        return tuple(range(value))
    if not isinstance(value, (list, tuple)) or not value:
        raise ConfigError(key, f"expected a seed count or a non-empty list of integer seeds, got {value!r}")
    out = tuple(_seed(s, f"{key}[{i}]") for i, s in enumerate(value))
    if len(set(out)) != len(out):
        raise ConfigError(key, f"repeated seed in {list(value)!r}")
    return out

"""What a user's gymnasium environment and reward rescale hand back during an episode of
``privrl.learn`` / ``privrl.evaluate``, checked where it enters: a step's reward must be a real
number (a str "1.0" was converted by float(), None gave float()'s bare TypeError)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from privrl.common.errors import NonFiniteError
from privrl.common.kinds import real_value


def step_reward(r_env: Any, reward: Callable[[float], float] | None, where: str) -> float:
    """The reward of one step: the environment's `r_env` (a real number, a 0-d numeric array or a
    bool) or, with a rescale, ``reward(r_env)`` (a real number, by padding_reward's rule), finite;
    `where` names the user and the step in the messages."""
    if reward is None:
        r = real_value(r_env)
        if r is None and isinstance(r_env, bool):  # a 0 / 1 reward, as float() took it
            r = float(r_env)
        if r is None:
            raise TypeError(
                f"the environment's reward at {where} is {r_env!r} ({type(r_env).__name__}), not a real "
                "number: env.step must return (obs, reward, terminated, truncated, info) with a real reward"
            )
        if not math.isfinite(r):
            raise NonFiniteError(f"the environment's reward at {where} is {r}: rewards must be finite")
        return r
    out = reward(r_env)
    r = real_value(out)
    if r is None:
        raise TypeError(
            f"reward(r) returned {out!r} ({type(out).__name__}) for the environment's reward {r_env!r} at "
            f"{where}, not a real number: the rescale must return the rescaled reward"
        )
    if not math.isfinite(r):
        raise NonFiniteError(f"reward(r) gave {r} for the environment's reward {r_env!r} at {where}")
    return r

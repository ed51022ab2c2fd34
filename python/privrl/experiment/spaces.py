"""What a gymnasium environment's spaces and observations are to privrl.learn's agent and to
privrl.evaluate's policy: the spaces checked against the agent before the first user, and an
observation's state index, checked where it enters."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from privrl.agents.common.base import Agent
from privrl.common.checks import integer_value
from privrl.common.errors import ShapeError
from privrl.envs.features import observation_index, refuse_vector_env

__all__ = [
    "absorbing_state",
    "check_spaces",
    "check_state_map",
    "checked_index",
    "identity",
    "observation_index_of",
    "state_index",
]


def check_state_map(state: Any) -> None:
    """learn's and evaluate's ``state``: a callable observation -> state index (``int``, the
    default, is one); anything else was called on the first observation, a bare "'str' object is
    not callable" naming no argument."""
    if not callable(state):
        raise TypeError(f"state must be a callable mapping an observation to a state index, got {state!r}")


def check_gym_env(env: Any, what: str) -> None:
    """learn's and evaluate's environment that is not a privrl model: one gymnasium environment
    (reset / step; a vector environment refused, privrl.envs.features.refuse_vector_env), else a
    TypeError saying `what` it must be."""
    if not (hasattr(env, "reset") and hasattr(env, "step")):
        raise TypeError(f"env must be {what}, got {type(env).__name__}")
    for name in ("reset", "step"):  # a value there was the bare "'int' object is not callable" at user 1
        if not callable(method := getattr(env, name)):
            got = type(method).__name__
            raise TypeError(f"env.{name} of {type(env).__name__} must be gymnasium's method, got a {got}")
    refuse_vector_env(env)


def check_spaces(agent: Agent, env: Any, state: Callable[[Any], int]) -> Callable[[Any], int] | None:
    """Refuse, before the first user, an environment whose gymnasium spaces do not fit the agent:
    a Discrete action space of another size, or (with the default ``state=int``) observations
    that do not index the agent's S states. Returns the default ``state``'s index of a
    Tuple / MultiDiscrete / MultiBinary / Discrete(start != 0) observation
    (privrl.envs.features.observation_index), None where it is the observation itself."""
    check_state_map(state)
    acts, obs = getattr(env, "action_space", None), getattr(env, "observation_space", None)
    n_act = getattr(acts, "n", None)
    if acts is not None and (n_act is None or np.ndim(n_act) != 0):  # Box, MultiDiscrete, ...
        raise ShapeError(
            f"the environment's action space is {acts}: privrl's agents play one of A = {agent.A} "
            "discrete actions (a gymnasium Discrete space); discretize the environment first"
        )
    start = int(getattr(acts, "start", 0)) if n_act is not None else 0
    if n_act is not None and (int(n_act) != agent.A or start != 0):
        shift = (
            f"; shift the actions: gymnasium.wrappers.TransformAction(env, lambda a: a + {start}, "
            f"Discrete({agent.A}))"
            if int(n_act) == agent.A
            else " (its feature map was built for another environment?)"
        )
        raise ShapeError(
            f"the environment's action space is {acts}, the agent has A = {agent.A} actions "
            f"0..{agent.A - 1}{shift}"
        )
    if state is not int or obs is None:
        return None
    found = observation_index(obs)
    if found is None:
        raise ShapeError(
            f"the environment's observations ({obs}) are not state indices: pass state=... mapping an "
            f"observation to a state index in [0, {agent.S}) of the agent's feature map"
        )
    if found[0] != agent.S and not (found[0] == agent.S - 1 and absorbing_state(agent) == agent.S - 1):
        raise ShapeError(
            f"the environment's observation space is {obs} ({found[0]} states), the agent's feature map "
            f"has S = {agent.S} states: build the agent on this environment's model "
            "(FeatureMap.one_hot_for(env, H)), or pass state=..."
        )
    return None if found[1] is int else checked_index(obs, *found)  # Discrete from 0: the obs itself


def checked_index(space: Any, n: int, index: Callable[[Any], int]) -> Callable[[Any], int]:
    """The default ``state`` of a structured observation space: its observation_index, refusing an
    observation outside the space (index -1) with a message naming the observation and the space
    (a callable policy of evaluate would otherwise be handed state -1)."""

    def state(obs: Any) -> int:
        i = index(obs)
        if not 0 <= i < n:
            raise ShapeError(
                f"the observation {obs!r} is not in the environment's observation space {space}: its "
                "components must be integers in their ranges; pass state=... mapping observations to "
                "state indices"
            )
        return i

    return state


def identity(obs: Any) -> Any:
    return obs


def observation_index_of(env: Any) -> Callable[[Any], int]:
    """The default ``state`` of evaluate with a callable policy: the observation itself, checked
    to be an index of the environment's Discrete observation space."""
    space = getattr(env, "observation_space", None)
    n = getattr(space, "n", None)
    if n is None:
        raise ShapeError(
            f"the environment's observations ({space}) are not state indices: pass state=... mapping "
            "an observation to the state index the policy takes"
        )
    top = int(getattr(space, "start", 0)) + int(n)
    return lambda obs: state_index(obs, top)


def absorbing_state(agent: Agent) -> int:
    """The absorbing state of the agent's FeatureMap (FeatureMap.absorbing), -1 if it has none."""
    z = getattr(agent.env, "absorbing", None)
    return -1 if z is None else int(z)


def state_index(s: Any, S: int, absorbing: int = -1) -> int:
    """state(obs) as a state index of the agent or policy: an integer in [0, S) by
    privrl.common.checks.integer_value's rule (a 0-d integer array, np.array(3), as 3)."""
    i = integer_value(s)
    if i is None or not 0 <= i < S:
        raise ShapeError(
            f"state(obs) must give an integer state index in [0, {S}) (without state=..., the observation "
            f"itself), got {s!r}"
        )
    if i == absorbing:
        raise ShapeError(
            f"state(obs) gave {i}, the feature map's absorbing state, where learn puts an episode "
            "after its end: no observation may map to it"
        )
    return i

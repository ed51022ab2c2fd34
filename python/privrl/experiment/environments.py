"""Gymnasium bridges for sweeps: tabular toy-text envs with rewards outside [0, 1] (CliffWalking, Taxi)
as linear MDPs through an affine reward rescale, and privrl's environments registered with gymnasium.make."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["gymnasium_linear_mdp", "reward_bounds", "register_gymnasium_envs", "GYM_IDS"]


def reward_bounds(table: dict) -> tuple[float, float]:
    """(lo, hi): the smallest and largest reward a transition table lists, widened to include 0, the
    reward of every step after termination in the finite-horizon version (see gymnasium_linear_mdp)."""
    rewards = [float(r) for acts in table.values() for trans in acts.values() for (_, _, r, _) in trans]
    return min([*rewards, 0.0]), max([*rewards, 0.0])


def gymnasium_linear_mdp(
    id: str,
    H: int = 20,
    reward_range: str | Sequence[float] | None = None,
    init_dist: Any = None,
    **make_kwargs: Any,
) -> Any:
    """A gymnasium toy-text env (gymnasium.make(id, **make_kwargs)) with a transition table
    ``env.unwrapped.P`` as a finite-horizon tabular linear MDP (privrl.envs.from_gymnasium).

    Rewards must lie in [0, 1]. reward_range=None keeps them as they are, so FrozenLake works and
    CliffWalking-v1 / Taxi-v4 (negative rewards) raise AssumptionError. reward_range="auto" (or an
    explicit [lo, hi]) maps every reward r to (r - lo) / (hi - lo), with [lo, hi] the range of the
    table's rewards widened to include 0, and gives the absorbing post-termination steps the image
    of 0, (0 - lo) / (hi - lo), instead of 0. Every one of the H steps is then mapped by the same
    increasing affine map, so a policy's value is (V_original - H lo) / (hi - lo): the optimal policy
    is unchanged and regret is the original regret divided by (hi - lo). CliffWalking-v1: lo = -100,
    hi = 0 (a step is worth 0.99, the cliff 0, the goal's absorbing state 1). Taxi-v4: lo = -10,
    hi = 20.
    """
    from privrl.common.errors import AssumptionError
    from privrl.envs import from_gymnasium
    from privrl.envs.gym import _import_gymnasium, model_table

    gymnasium = _import_gymnasium()
    if "is_slippery" in make_kwargs and not isinstance(make_kwargs["is_slippery"], bool):
        # gymnasium reads any truthy value as True: "no" built the slippery lake
        raise AssumptionError(f"is_slippery must be True or False, got {make_kwargs['is_slippery']!r}")
    try:
        env = gymnasium.make(id, **make_kwargs)
    except (gymnasium.error.Error, KeyError, ValueError, TypeError) as exc:  # an unknown id, map, option
        args = "".join(f", {k}={v!r}" for k, v in make_kwargs.items())
        raise AssumptionError(f"gymnasium.make({id!r}{args}) failed: {type(exc).__name__}: {exc}") from exc
    try:
        if reward_range is None:
            try:
                return from_gymnasium(env, H, init_dist=init_dist)
            except AssumptionError as exc:
                if "(rescale it with reward=...)" not in str(exc):
                    raise
                # a sweep's env table has no reward= (a callable): its rescale is reward_range
                msg = str(exc).replace(
                    "(rescale it with reward=...)",
                    "(rescale it with reward_range = 'auto' or [lo, hi])",
                )
                raise AssumptionError(msg) from exc
        table = model_table(env)
        if isinstance(reward_range, str):
            if reward_range != "auto":
                raise AssumptionError(f"reward_range must be None, 'auto' or [lo, hi], got {reward_range!r}")
            lo, hi = reward_bounds(table)
        else:
            lo, hi = (float(x) for x in reward_range)
            t_lo, t_hi = reward_bounds(table)
            if lo > t_lo or hi < t_hi:
                raise AssumptionError(
                    f"reward_range [{lo:g}, {hi:g}] must contain the table's rewards and 0, "
                    f"i.e. [{t_lo:g}, {t_hi:g}]"
                )
        width = hi - lo
        if not (hi > lo and math.isfinite(width)):  # an infinite width would map every reward to 0
            raise AssumptionError(f"reward_range needs finite lo < hi, got [{lo:g}, {hi:g}]")
        return from_gymnasium(
            env,
            H,
            name=f"{id}(H={int(H)}, rewards (r - {lo:g}) / {width:g})",
            init_dist=init_dist,
            reward=lambda r: (float(r) - lo) / width,
        )
    finally:
        env.close()


# privrl's environments under gymnasium ids, with their docs/benchmarks.md default sizes.
GYM_IDS: dict[str, dict[str, Any]] = {
    "privrl/RiverSwimMixture-v0": {"name": "RiverSwimMixture"},
    "privrl/RandomLinearMixtureMDP-v0": {"name": "RandomLinearMixtureMDP"},
    "privrl/HardToLearn-v0": {"name": "HardToLearn", "d": 5, "H": 6, "K": 10000},
    "privrl/RandomLinearMDP-v0": {"name": "RandomLinearMDP"},
    "privrl/SyntheticLinearMDP-v0": {"name": "SyntheticLinearMDP", "H": 15},
    "privrl/RiverSwim-v0": {"name": "RiverSwim"},
}


def _make_gym(**spec: Any) -> Any:
    from privrl.envs import as_gymnasium
    from privrl.experiment.config import make_env

    return as_gymnasium(make_env(spec))


def register_gymnasium_envs() -> list[str]:
    """Register privrl's environments with gymnasium, so gymnasium.make("privrl/RiverSwim-v0", S=8)
    returns the FiniteMDP wrapped by privrl.envs.as_gymnasium (kwargs go to the constructor)."""
    from privrl.envs.gym import _import_gymnasium

    gymnasium = _import_gymnasium()
    for gym_id, spec in GYM_IDS.items():
        if gym_id not in gymnasium.registry:
            gymnasium.register(gym_id, entry_point=_make_gym, kwargs=dict(spec), disable_env_checker=False)
    return list(GYM_IDS)

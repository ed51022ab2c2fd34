"""Gymnasium bridges for sweeps: tabular toy-text envs with rewards outside [0, 1] (CliffWalking, Taxi)
as linear MDPs through an affine reward rescale, and privrl's environments registered with gymnasium.make."""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections.abc import Mapping, Sequence
from numbers import Real
from typing import Any

import numpy as np

__all__ = [
    "GymnasiumTask",
    "gymnasium_linear_mdp",
    "reward_bounds",
    "reward_rescale",
    "register_gymnasium_envs",
    "GYM_IDS",
]


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
    model: bool = True,
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

    model=False: no model is read, the environment is learned from by interaction
    (:class:`GymnasiumTask`, ``privrl.learn``): any gymnasium environment with tabular spaces, with
    or without a table (Blackjack-v1 has none); its runs record realized returns, not regret.
    """
    from privrl.common.errors import AssumptionError
    from privrl.envs import from_gymnasium

    if not isinstance(model, bool):
        raise AssumptionError(f"model must be true or false, got {model!r}")
    if not model:
        if init_dist is not None:
            raise AssumptionError(
                "init_dist is a model's start distribution: with model = false the environment's own "
                "reset draws each episode's start"
            )
        return GymnasiumTask(id, H, reward_range, **make_kwargs)
    env = _make(id, make_kwargs)
    try:
        table = _model_table(env, id)
        if reward_range is None:
            # the default name, f"{spec id}(H={H})", where there are no make keywords (as before)
            given = _keywords(make_kwargs) + _start(init_dist)
            name = f"{_spec_id(env, id)}(H={int(H)}{given})" if given else None
            try:
                return from_gymnasium(env, H, name=name, init_dist=init_dist)
            except AssumptionError as exc:
                if "(rescale it with reward=...)" not in str(exc):
                    raise
                # a sweep's env table has no reward= (a callable): its rescale is reward_range
                msg = str(exc).replace(
                    "(rescale it with reward=...)",
                    "(rescale it with reward_range = 'auto' or [lo, hi])",
                )
                raise AssumptionError(msg) from exc
        lo, hi = _reward_range(table, reward_range)
        width = hi - lo
        return from_gymnasium(
            env,
            H,
            name=f"{id}(H={int(H)}{_keywords(make_kwargs)}{_start(init_dist)}{_REWARDS}{_affine(lo, hi)})",
            init_dist=init_dist,
            reward=lambda r: (float(r) - lo) / width,
        )
    finally:
        env.close()


def _make(id: str, make_kwargs: dict[str, Any]) -> Any:
    """gymnasium.make(id, **make_kwargs), its failures as AssumptionError naming the call."""
    from privrl.common.checks import check_flag, did_you_mean
    from privrl.common.errors import AssumptionError
    from privrl.envs.gym import NAMESPACE, _import_gymnasium

    gymnasium = _import_gymnasium()
    if str(id).startswith(NAMESPACE):  # privrl's own ids register themselves, in whichever process
        register_gymnasium_envs()  # (an id that is not a str: make refuses it below)
    keywords = _make_keywords(gymnasium, id)
    flags = {"is_slippery", *(k for k, v in keywords.items() if isinstance(v, bool))}
    for key in flags.intersection(make_kwargs):
        # gymnasium reads any truthy value as True: "no" built the slippery lake, and "False"
        # (`--env-arg natural=False`: TOML's booleans are lower case) Blackjack's natural bonus; a
        # Python bool only (the run's name reads the value's repr: np.True_ would be another run)
        value = make_kwargs[key]
        toml = str(value).lower() in ("true", "false")
        hint = " (TOML's booleans are true / false, lower case)" if toml else ""
        check_flag(value, key, AssumptionError, hint, numpy=False)
    try:
        return gymnasium.make(id, **make_kwargs)
    except (gymnasium.error.Error, KeyError, ValueError, TypeError) as exc:  # an unknown id, map, option
        args = "".join(f", {k}={v!r}" for k, v in make_kwargs.items())
        hint = ""
        typo = re.search(r"unexpected keyword argument '(\w+)'", str(exc))
        if typo is not None and keywords:  # is_slipery = false: the keywords it takes, the close one first
            hint = f" ({did_you_mean(typo.group(1), keywords)}{id} takes {', '.join(sorted(keywords))})"
        if isinstance(exc, gymnasium.error.UnregisteredEnv) and _in_worker():
            hint = (
                " (a sweep's worker process: an id that gymnasium.register registered in your script's "
                "process only is missing here; register it at the import of a module and give "
                "id = 'module:Name-v0', or run on threads)"
            )
        raise AssumptionError(
            f"gymnasium.make({id!r}{args}) failed: {type(exc).__name__}: {exc}{hint}"
        ) from exc


def _in_worker() -> bool:
    """Whether this is a process multiprocessing started (a worker of backend = "processes")."""
    import multiprocessing

    return multiprocessing.parent_process() is not None


def _make_keywords(gymnasium: Any, id: str) -> dict[str, Any]:
    """The make keywords of `id` with their defaults, the registration's or the constructor's (none
    where the id or its constructor cannot be read: make reports that): a bool default asks for a
    bool, and a mistyped keyword is told the close one."""
    import inspect

    try:
        spec = gymnasium.spec(id)
        creator = spec.entry_point
        if isinstance(creator, str):
            creator = gymnasium.envs.registration.load_env_creator(creator)
        params = inspect.signature(creator).parameters.values()
        defaults = {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}
    except Exception:  # an unknown id, an entry point that does not load or has no signature
        return {}
    return {**defaults, **(spec.kwargs or {})}


def _model_table(env: Any, id: str) -> dict:
    """The environment's transition table (privrl.envs.gym.model_table); without one, its
    ShapeError says what a sweep can do instead (for privrl's own ids: name the privrl environment,
    whose model gives exact regret)."""
    from privrl.common.errors import ShapeError
    from privrl.envs.gym import model_table

    try:
        return model_table(env)
    except ShapeError as exc:
        own = GYM_IDS.get(str(id))
        if own is not None:
            raise ShapeError(
                f"{id} is privrl's {own['name']} behind as_gymnasium, which has no transition table to "
                f'read: for its model and exact regret name it, env = {{name = "{own["name"]}", ...}} with '
                "the same keywords; or model = false learns it by interaction (realized returns, no regret)"
            ) from None
        raise ShapeError(
            f"{exc}; in a sweep, model = false learns it by interaction instead (realized returns, no regret)"
        ) from None


def _reward_range(table: dict | None, reward_range: Any) -> tuple[float, float]:
    """[lo, hi] of a reward_range ("auto": the table's rewards and 0; [lo, hi]: checked to contain
    them, or only 0 without a table), finite with lo < hi; anything else (Any: a config value) refused."""
    from privrl.common.errors import AssumptionError

    listed = isinstance(reward_range, (Sequence, np.ndarray)) and not isinstance(reward_range, str)
    if not (isinstance(reward_range, str) and reward_range == "auto") and not (
        listed
        and len(reward_range) == 2
        and all(isinstance(x, Real) and not isinstance(x, (bool, np.bool_)) for x in reward_range)
    ):  # [-1] was "not enough values to unpack", {"lo": ...} a float() error, [false, true] [0, 1]
        raise AssumptionError(f"reward_range must be 'auto' or [lo, hi], two numbers, got {reward_range!r}")
    if isinstance(reward_range, str):
        if table is None:
            raise AssumptionError(
                "reward_range = 'auto' reads the rewards of the transition table env.unwrapped.P, which "
                "this environment has not: give reward_range = [lo, hi], the range of its rewards"
            )
        lo, hi = reward_bounds(table)
    else:
        lo, hi = (float(x) for x in reward_range)
        t_lo, t_hi = reward_bounds(table) if table is not None else (0.0, 0.0)
        if lo > t_lo or hi < t_hi:
            what = (
                f"the table's rewards and 0, i.e. [{t_lo:g}, {t_hi:g}]"
                if table is not None
                else "0, the reward of the steps after an episode ends"
            )
            raise AssumptionError(f"reward_range [{lo:g}, {hi:g}] must contain {what}")
    if not (hi > lo and math.isfinite(hi - lo)):  # an infinite width would map every reward to 0
        raise AssumptionError(f"reward_range needs finite lo < hi, got [{lo:g}, {hi:g}]")
    return lo, hi


# How an environment's name states its reward rescale and that it is learned by interaction:
# "Blackjack-v1(H=4, rewards (r + 1) / 2, learned by interaction)", "Taxi-v4(H=20, rewards (r + 10) / 30)".
_REWARDS, _LEARNED = ", rewards ", ", learned by interaction)"


def reward_rescale(env_name: str) -> str | None:
    """The reward rescale an environment's name states ("(r + 1) / 2" of the names above: the
    results table's env column, the run records' env), or None: the rewards as the environment pays
    them (any name without the fragment, e.g. a privrl model's)."""
    _, found, tail = env_name.rpartition(_REWARDS)
    if not found:
        return None
    return tail[: -len(_LEARNED)] if tail.endswith(_LEARNED) else tail.removesuffix(")")


def _keywords(make_kwargs: Mapping[str, Any]) -> str:
    """The gymnasium.make keywords as an environment's name states them, sorted:
    ", is_slippery=False, map_name='8x8'" ("" without any). Without them two environments of one id
    (the slippery lake and the other, the 4x4 map and the 8x8) had the same name in the results
    table, the run records, the report and the plots."""
    return "".join(f", {k}={make_kwargs[k]!r}" for k in sorted(make_kwargs))


def _start(init_dist: Any) -> str:
    """A given start distribution as an environment's name states it, ", init_dist #1a2b3c4d" (a
    digest of its values: two tables' distributions, or the model's own, are told apart), or ""."""
    if init_dist is None:
        return ""
    try:
        blob = np.ascontiguousarray(init_dist, dtype=float).tobytes()
    except (TypeError, ValueError):  # refused by the model, in its own words, when it is built
        blob = repr(init_dist).encode()
    return f", init_dist #{hashlib.sha256(blob).hexdigest()[:8]}"


def _spec_id(env: Any, id: str) -> str:
    """The id from_gymnasium names a made environment by (its spec's), else the id it was made from."""
    return str(getattr(getattr(env, "spec", None), "id", None) or id)


def _affine(lo: float, hi: float) -> str:
    """The rescale r -> (r - lo) / (hi - lo) as text: "(r + 100) / 100" for lo = -100, hi = 0."""
    shift = f"r - {lo:g}" if lo >= 0 else f"r + {-lo:g}"
    return f"({shift}) / {hi - lo:g}"


class GymnasiumTask:
    """A gymnasium environment a sweep learns from by interaction, with no model (in a sweep:
    ``env = {name = "gymnasium", id = "Blackjack-v1", H = 4, model = false, reward_range = [-1, 1]}``).

    Each run builds its own ``gymnasium.make(id, **make_kwargs)`` (:meth:`make`) and an LSVI-UCB
    agent on ``features``, the one-hot feature map of the environment's tabular spaces
    (``FeatureMap.one_hot_for``), and runs ``privrl.learn`` on it with :attr:`reward`, the rescale
    into [0, 1] that ``reward_range`` gives (None: the rewards as they are; refused where the
    transition table lists rewards outside [0, 1], and without a table the agent's guard clips
    what is outside, with a warning). An H beyond the environment's time limit
    (``spec.max_episode_steps``) is refused: give ``max_episode_steps`` in make_kwargs to lift it.
    There is no exact regret without a model:
    the runs record realized returns, and their regret is NaN.
    """

    def __init__(
        self, id: str, H: int, reward_range: str | Sequence[float] | None = None, **make_kwargs: Any
    ) -> None:
        from privrl.common.errors import AssumptionError
        from privrl.envs.features import FeatureMap
        from privrl.envs.gym import NAMESPACE, time_limit

        self.id, self.make_kwargs = id, dict(make_kwargs)
        env = self.make()
        try:
            self.features = FeatureMap.one_hot_for(env, H)
            self.H = self.features.H
            limit = time_limit(env)
            if limit is not None and limit < self.H:
                # the TimeLimit would end every long episode at `limit`, and learn pad the rest as if
                # the environment had ended it: another problem than the H-step one (the model has none)
                raise AssumptionError(_time_limit_message(id, self.H, limit, str(id).startswith(NAMESPACE)))
            table = getattr(getattr(env, "unwrapped", None), "P", None)
            table = table if isinstance(table, dict) else None
            self.range: tuple[float, float] | None = None
            if reward_range is not None:
                self.range = _reward_range(table, reward_range)
            elif table is not None and not 0.0 <= (bounds := reward_bounds(table))[0] <= bounds[1] <= 1.0:
                # known outside [0, 1]: the agent's guard would clip every such reward (CliffWalking's
                # -1 per step to 0), as the model path refuses them
                lo, hi = bounds
                raise AssumptionError(
                    f"{id}'s transition table lists rewards in [{lo:g}, {hi:g}], outside [0, 1]: rescale "
                    "them with reward_range = 'auto' or [lo, hi]"
                )
        finally:
            env.close()
        scale = "" if self.range is None else f"{_REWARDS}{_affine(*self.range)}"
        self.name = f"{id}(H={self.H}{_keywords(self.make_kwargs)}{scale}{_LEARNED}"

    def make(self) -> Any:
        """A new instance of the gymnasium environment (each run steps its own)."""
        return _make(self.id, self.make_kwargs)

    @property
    def reward(self) -> Any:
        """learn's ``reward=``: r -> (r - lo) / (hi - lo), or None without a reward_range."""
        if self.range is None:
            return None
        lo, width = self.range[0], self.range[1] - self.range[0]
        return lambda r: (float(r) - lo) / width

    def learn(self, agent: Any, seed: Any, callback: Any) -> Any:
        """``privrl.learn(agent, env, seed=seed, reward=self.reward, callback=callback)`` on a new
        instance of the environment (closed after)."""
        from privrl.experiment.interact import learn

        env = self.make()
        try:
            return learn(agent, env, seed=seed, reward=self.reward, callback=callback, progress=False)
        finally:
            env.close()

    def fingerprint(self) -> dict[str, str]:
        """What a run depends on, as text (a sweep given the object enters its run ids by it):
        the id, H, the make keywords and the reward range, and "padding" where the feature map has an
        absorbing state (learn pads there: a run of the self-loop era is not resumed as its own)."""
        import json

        kwargs = json.dumps(self.make_kwargs, sort_keys=True, default=repr)
        out = {"id": self.id, "H": str(self.H), "make_kwargs": kwargs, "reward_range": repr(self.range)}
        if self.features.absorbing is not None:
            out["padding"] = "absorbing"
        return out

    def __repr__(self) -> str:
        return f"GymnasiumTask({self.name!r})"


def learned_padding(spec: Any) -> str | None:
    """ "absorbing" for an env table that learns a gymnasium environment by interaction
    (``model = false``) whose one-hot map gets an absorbing state (privrl.envs.gym.needs_absorbing:
    learn pads its ended episodes there), else None: a sweep enters it in its run ids, so that a
    results folder of the self-loop era is not resumed as if it were this one."""
    from privrl.envs.gym import needs_absorbing

    if not isinstance(spec, Mapping) or spec.get("name") != "gymnasium" or spec.get("model") is not False:
        return None
    own = ("name", "id", "H", "reward_range", "init_dist", "model")
    try:
        env = _make(str(spec.get("id")), {k: v for k, v in spec.items() if k not in own})
    except Exception:  # a table that cannot build: refused, in its own words, where the env is built
        return None
    try:
        return "absorbing" if needs_absorbing(env) else None
    finally:
        env.close()


def _time_limit_message(id: str, H: int, limit: int, own: bool) -> str:
    """Why GymnasiumTask refuses an H beyond the environment's time limit, and what to give instead."""
    if own:  # as_gymnasium truncates at the model's H, which the table's H (the learner's) does not set
        return (
            f"H = {H} exceeds the horizon of {id}'s model, H = {limit}, after which its episodes are "
            f"truncated: every episode would be cut at step {limit} and padded to H; give H <= {limit} "
            "(the table's H is the learner's horizon; the model keeps its default)"
        )
    return (
        f"H = {H} exceeds {id}'s time limit max_episode_steps = {limit}: every episode "
        f"that lasts would be truncated at step {limit} and padded to H; give H <= {limit}, "
        f"or max_episode_steps = {H} (a gymnasium.make keyword) in the env table"
    )


# privrl's environments under gymnasium ids (privrl.envs.gym.NAMESPACE), with their
# docs/benchmarks.md default sizes.
GYM_IDS: dict[str, dict[str, Any]] = {
    "privrl/RiverSwimMixture-v0": {"name": "RiverSwimMixture"},
    "privrl/RandomLinearMixtureMDP-v0": {"name": "RandomLinearMixtureMDP"},
    "privrl/HardToLearn-v0": {"name": "HardToLearn", "d": 5, "H": 6, "K": 10000},
    "privrl/RandomLinearMDP-v0": {"name": "RandomLinearMDP"},
    "privrl/SyntheticLinearMDP-v0": {"name": "SyntheticLinearMDP", "H": 15},
    "privrl/RiverSwim-v0": {"name": "RiverSwim"},
}


_REGISTERING = threading.Lock()


def _make_gym(**spec: Any) -> Any:
    from privrl.envs import as_gymnasium
    from privrl.experiment.config import make_env

    return as_gymnasium(make_env(spec))


def register_gymnasium_envs() -> list[str]:
    """Register privrl's environments with gymnasium, so gymnasium.make("privrl/RiverSwim-v0", S=8)
    returns the FiniteMDP wrapped by privrl.envs.as_gymnasium (kwargs go to the constructor).
    A sweep's env table or GymnasiumTask naming an id of the privrl/ namespace calls it itself,
    in whichever process builds the environment (a worker of backend = "processes" too)."""
    from privrl.envs.gym import _import_gymnasium

    gymnasium = _import_gymnasium()
    with _REGISTERING:  # the threads of a sweep may resolve an id at once
        for gym_id, spec in GYM_IDS.items():
            if gym_id not in gymnasium.registry:
                gymnasium.register(
                    gym_id, entry_point=_make_gym, kwargs=dict(spec), disable_env_checker=False
                )
    return list(GYM_IDS)

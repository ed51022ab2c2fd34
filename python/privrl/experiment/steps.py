"""What a user's gymnasium environment and reward rescale hand back during an episode of
``privrl.learn`` / ``privrl.evaluate``, checked where it enters: a step's reward must be a real
number (a str "1.0" was converted by float(), None gave float()'s bare TypeError)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from privrl.common.checks import check_episodes, check_finite_real
from privrl.common.errors import (
    AgentInUseError,
    AssumptionWarning,
    CapacityError,
    NonFiniteError,
    PrivacyParameterError,
    ShapeError,
)
from privrl.common.kinds import real_value


def check_reference(reference: Any, H: int) -> float:
    """learn's `reference`: the value of one episode, H steps of rewards in [0, 1], so in [0, H]
    (PrivacyParameterError otherwise). Above H, the regret ``cumsum(reference - returns)`` measured
    nothing and overflowed (1e308 gave inf, numpy's RuntimeWarning, after every user ran)."""
    v = check_finite_real(reference, "reference", positive=False)
    if v > H:
        raise PrivacyParameterError(
            f"reference must be in [0, H] = [0, {H}] (the value of one episode: H steps of rewards in "
            f"[0, 1]), got {reference!r}"
        )
    return v


#: The largest reward magnitude a step may hand back (after the rescale): a return of H such
#: steps, the sums over the users and evaluate's squared deviations stay finite (1e308 per step gave
#: inf returns and numpy's RuntimeWarnings from inside learn / evaluate, an int of 10**400 float()'s
#: bare OverflowError; the agent clips a reward into [0, 1] for its releases either way).
REWARD_RANGE = 1e100


def step_reward(r_env: Any, reward: Callable[[float], float] | None, who: str, k: int, h: int) -> float:
    """The reward of one step: the environment's `r_env` (a real number, a 0-d numeric array or a
    bool) or, with a rescale, ``reward(r_env)`` (a real number, by padding_reward's rule), finite;
    the messages name `who` k + 1 and step h (built only for a message: this runs at every step)."""
    out = r_env if reward is None else reward(r_env)
    # Python's float and int first (FrozenLake pays an int): real_value's general rule costs ~1 us
    try:
        r = out if type(out) is float else float(out) if type(out) is int else real_value(out)
    except OverflowError:  # an integer beyond a double's range (10**400)
        r = 2 * REWARD_RANGE  # refused below, named by its value
    if r is None and reward is None and isinstance(r_env, bool):  # a 0 / 1 reward, as float() took it
        r = float(r_env)
    if r is None:
        where = _where(who, k, h)
        if reward is None:
            raise TypeError(
                f"the environment's reward at {where} is {r_env!r} ({type(r_env).__name__}), not a real "
                "number: env.step must return (obs, reward, terminated, truncated, info) with a real reward"
            )
        raise TypeError(
            f"reward(r) returned {out!r} ({type(out).__name__}) for the environment's reward {r_env!r} at "
            f"{where}, not a real number: the rescale must return the rescaled reward"
        )
    if not math.isfinite(r):
        where = _where(who, k, h)
        if reward is None:
            raise NonFiniteError(f"the environment's reward at {where} is {r}: rewards must be finite")
        raise NonFiniteError(f"reward(r) gave {r} for the environment's reward {r_env!r} at {where}")
    if abs(r) > REWARD_RANGE:
        where, size = _where(who, k, h), _short(out) if isinstance(out, int) else f"{r:.3g}"
        what = "the environment's reward" if reward is None else f"reward(r) for {r_env!r}"
        raise NonFiniteError(
            f"{what} at {where} is {size}, beyond {REWARD_RANGE:g} in size: the returns' sums would "
            "overflow; rescale the rewards (reward=lambda r: (r - lo) / (hi - lo), into [0, 1])"
        )
    return r


def step_parts(out: Any, reward: Callable[[float], float] | None, who: str, k: int, h: int) -> tuple:
    """``(obs, reward, terminated, truncated)`` of ``env.step()``'s return `out`, checked by
    :func:`step_result` and :func:`step_reward`; the common case (a five-tuple, a finite float
    reward and no rescale) inline, as learn's loop ran before the checks (this runs at every step)."""
    if type(out) is tuple and len(out) == 5:
        obs, r_env, terminated, truncated, _ = out
    else:
        obs, r_env, terminated, truncated = step_result(out, who, k, h)
    if type(terminated) is not bool or type(truncated) is not bool:
        terminated, truncated = (
            step_flag(terminated, "terminated", who, k, h),
            step_flag(truncated, "truncated", who, k, h),
        )
    if reward is None and type(r_env) is float and -REWARD_RANGE <= r_env <= REWARD_RANGE:
        return obs, r_env, terminated, truncated
    return obs, step_reward(r_env, reward, who, k, h), terminated, truncated


def step_flag(flag: Any, name: str, who: str, k: int, h: int) -> bool:
    """A step's `terminated` / `truncated`: a bool (numpy's too, a 0-d bool array, or an integer 0
    / 1, as bool() read them before). Its truthiness was taken as is: the str "no" or a NaN ended
    the episode, None continued it, and a bool array raised numpy's bare "truth value of an array
    is ambiguous" from inside learn, naming no step."""
    if isinstance(flag, np.ndarray) and flag.ndim == 0 and flag.dtype.kind in "biu":
        flag = flag[()]
    if isinstance(flag, (bool, np.bool_)) or (isinstance(flag, (int, np.integer)) and flag in (0, 1)):
        return bool(flag)
    raise TypeError(
        f"env.step()'s {name} at {_where(who, k, h)} is {_short(flag)}, not a bool: gymnasium's step "
        "returns (observation, reward, terminated, truncated, info) with bool terminated and truncated"
    )


def reset_observation(out: Any, who: str, k: int) -> Any:
    """The observation of ``env.reset()``'s ``(observation, info)`` (the tuple's unpacking gave a
    bare "too many values to unpack" for an observation returned alone)."""
    if isinstance(out, (tuple, list)) and len(out) == 2:
        return out[0]
    raise ShapeError(
        f"env.reset() returned {_short(out)} at {_where(who, k, -1)}: gymnasium's reset returns "
        "(observation, info)"
    )


def step_result(out: Any, who: str, k: int, h: int) -> tuple[Any, Any, Any, Any]:
    """``(obs, reward, terminated, truncated)`` of ``env.step()``'s five-tuple (its unpacking gave
    a bare "not enough values to unpack (expected 5, got 4)" for the old gym API's four)."""
    if isinstance(out, (tuple, list)) and len(out) == 5:
        return out[0], out[1], out[2], out[3]
    old = (
        " (the four of gym < 0.26, (obs, reward, done, info): port the environment to gymnasium, "
        "or wrap it with shimmy's GymV21CompatibilityV0)"
        if isinstance(out, (tuple, list)) and len(out) == 4
        else ""
    )
    raise ShapeError(
        f"env.step() returned {_short(out)} at {_where(who, k, h)}: gymnasium's step returns (observation, "
        f"reward, terminated, truncated, info){old}"
    )


def _where(who: str, k: int, h: int) -> str:
    """ "user 3, step 2" (k = 2, h = 2); "user 3" at reset (h = -1)."""
    return f"{who} {k + 1}" if h < 0 else f"{who} {k + 1}, step {h}"


def _short(out: Any) -> str:
    """A malformed return named by its kind and length, and its start."""
    text = repr(out)
    text = text if len(text) <= 120 else text[:117] + "..."
    size = f" of {len(out)}" if isinstance(out, (tuple, list)) else ""
    return f"{text} ({type(out).__name__}{size})"


def note_stop(e: BaseException, text: str) -> None:
    """Add `text` to the traceback of `e`, the user's own exception or privrl's (PEP 678 notes;
    Python 3.10 has none and shows the exception alone)."""
    add = getattr(e, "add_note", None)
    if add is not None:
        add(text)


def attach_partial(e: BaseException, partial: Any) -> None:
    """Hand the result of the users a stopped call completed to its caller as ``e.partial`` (a
    LearnResult from privrl.learn, a RunResult from privrl.run): the exception keeps its type, and
    its note names the attribute (every exception takes one: BaseException has a __dict__)."""
    e.partial = partial  # type: ignore[attr-defined]


def users_to_run(agent: Any, episodes: Any, verb: str) -> int:
    """K, the users of a privrl.run / privrl.learn call (`episodes`; None: all the agent has left),
    refused (CapacityError) beyond what it has left, and where it has none left in run's words for
    both (learn said "has 0 of its 20 episodes left, cannot learn 0", of a K nobody asked for)."""
    left = agent.K - agent.k
    K = left if episodes is None else check_episodes(episodes)
    if left < K:
        raise CapacityError(
            f"{agent.label} is calibrated for {agent.K} episodes and has run {agent.k}: {left} remain, "
            f"cannot run {K}"
            if verb == "run"
            else f"{agent.label} has {left} of its {agent.K} episodes left, cannot learn {K}"
        )
    if K == 0:  # "all it has left" of nothing: an empty call would pass unnoticed
        raise CapacityError(
            f"{agent.label} has run all {agent.K} episodes it is calibrated for (its privacy "
            "budget covers no more users): build a new agent, with a larger K if needed"
        )
    return K


def users_now(agent: Any) -> int | None:
    """``agent.k`` for a stop's note, None while another thread's call holds the agent (reading it
    then raises AgentInUseError, which would replace the exception being handled)."""
    try:
        return int(agent.k)
    except AgentInUseError:
        return None


def learn_stop(k: int, K: int, h: int, observed: bool, agent_k: int | None) -> str:
    """Where privrl.learn stopped (user k + 1 of its K, at reset (h = -1) or step h) and what the
    agent kept: a user whose episode failed is not observed at all. The note names the exception's
    ``partial`` (:func:`attach_partial`), the LearnResult of the users the agent kept."""
    if observed:  # the callback or the progress bar, after agent.observe
        return (
            f"privrl.learn stopped after user {k + 1} of {K}, which the agent observed (agent.k = "
            f"{agent_k}); privrl.learn(agent, env, ...) again continues with the next user; the "
            f"exception's .partial is the LearnResult of this call's {k + 1} users"
        )
    where = "at env.reset / state(obs)" if h < 0 else f"at step {h}"
    return (
        f"privrl.learn stopped at user {k + 1} of {K}, {where}: the agent kept the {k} users of this "
        f"call before it (agent.k = {agent_k}) and nothing of this one; privrl.learn(agent, env, ...) "
        f"again continues from there; the exception's .partial is the LearnResult of those {k} users"
    )


def warn_self_truncated(episode: str, h: int, H: int, whose: str) -> bool:
    """The AssumptionWarning of an episode the environment truncated itself before H (learn's and
    evaluate's, once per call; a time limit privrl can read was warned of up front): the padding
    after it, as if it had ended, stands for steps the environment could have gone on with.
    Points at the caller of learn / evaluate (this, their loop, them, the caller); True: said."""
    warnings.warn(
        f"the environment truncated {episode} after {h + 1} steps (truncated=True), "
        f"before {whose} H = {H}, and has no time limit privrl can read (a TimeLimit, "
        "spec.max_episode_steps): such an episode is padded to H as if it had ended although it "
        "could have gone on; use an H no longer than the environment's own episodes, or make it "
        "end them with terminated=True",
        AssumptionWarning,
        stacklevel=4,
    )
    return True


class SelfLoops:
    """learn's watch over its padding without an absorbing state: an episode the environment ends
    before H is padded with self-loops at its last state, which is wrong where users also act from
    that state (its real transitions get mixed with the padded ones; Blackjack-v1's hands). Warns
    once, at the first such state; inactive where the agent's map has an absorbing state."""

    def __init__(self, active: bool) -> None:
        self.active = active
        self.acted: set[int] = set()  # states a user took a real step from
        self.ended: set[int] = set()  # states an episode ended at, then padded
        self.last: tuple = ()  # the previous user's (states, t, ended): the same adds nothing

    def see(self, states: np.ndarray, t: int, ended: bool, H: int, k: int) -> None:
        """User k's `states`: real steps from states[0..t], then (`ended` by the environment before
        step H - 1) self-loops at states[t + 1]. The same episode as the previous user's (a
        deterministic environment under an unchanged policy) is passed over: it found nothing."""
        if not self.active:
            return
        path = states.tolist()
        if (path, t, ended) == self.last:
            return
        self.last = (path, t, ended)
        real = path[: t + 1]
        self.acted.update(real)
        hit = -1
        if ended and t < H - 1:
            end = path[t + 1]
            self.ended.add(end)
            hit = end if end in self.acted else -1
        if hit < 0 and self.ended and not self.ended.isdisjoint(real):
            hit = next(s for s in real if s in self.ended)
        if hit >= 0:
            self.active = False
            warnings.warn(
                f"by user {k + 1}, an episode ended at state {hit}, a state users also act from, and "
                "the agent's feature map has no absorbing state: learn pads an ended episode with "
                "self-loops at its last state, which mixes those padded steps into that state's real "
                "transitions; give the map one (FeatureMap.one_hot_for(env, H) adds it, or "
                "FeatureMap.one_hot(S, A, H, absorbing=True), FeatureMap(features, H, absorbing=i))",
                AssumptionWarning,
                stacklevel=4,
            )

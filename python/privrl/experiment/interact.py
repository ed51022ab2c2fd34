"""Acting without the harness: the value of a policy (exact on a model, Monte Carlo on a
gymnasium environment) and a learn loop for a user's own gymnasium environment whose model the
agent does not know (a FeatureMap: realized returns instead of exact regret)."""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from privrl.agents.common.base import Agent
from privrl.common.checks import (
    check_episodes,
    check_pos_int,
    check_seed,
    int_seed,
    integer_actions,
    integer_value,
)
from privrl.common.errors import (
    AssumptionWarning,
    IndexRangeError,
    ShapeError,
)
from privrl.common.kinds import array_value
from privrl.common.memory import refuse_over_memory
from privrl.envs.bandit import ContextualBandit
from privrl.envs.features import observation_index
from privrl.envs.finite import FiniteMDP
from privrl.envs.gym import padding_reward, time_limit
from privrl.experiment.episodes import learn_episodes
from privrl.experiment.spaces import (
    check_gym_env,
    check_spaces,
    check_state_map,
    checked_index,
    identity,
    observation_index_of,
)
from privrl.experiment.steps import (
    attach_partial,
    check_reference,
    note_stop,
    reset_observation,
    step_parts,
    users_to_run,
    warn_self_truncated,
)

if TYPE_CHECKING:
    from privrl.experiment.runner import RunResult

__all__ = ["Evaluation", "LearnResult", "evaluate", "learn", "partial_result"]


@dataclass(frozen=True)
class Evaluation:
    """The value of a policy from the initial distribution.

    value: exact ``init_dist @ V^pi_1`` (exact=True), else the mean return over `episodes`
    Monte-Carlo episodes with its standard error `stderr`; values: V^pi_h(s) (H+1, S) when exact.
    """

    value: float
    exact: bool
    stderr: float = 0.0
    episodes: int = 0
    values: np.ndarray | None = field(default=None, repr=False)


#: The most steps an episode of evaluate runs on a gymnasium environment with a callable policy
#: and no H (the environment's own end usually comes first).
_MAX_STEPS = 10_000


def _action(a: Any, h: int) -> int:
    """A callable policy's action, checked as an integer index (int() truncated 2.9 and read "2")."""
    i = integer_value(a)  # np.array(2) as 2, as gymnasium's Discrete takes it
    if i is None:
        raise TypeError(f"the policy's action at step {h} must be an integer, got {a!r}")
    return i


def _policy_fn(policy: Any, H: int | None) -> tuple[Callable[[int, int], int], int]:
    """The action function of `policy` and the number of steps an episode runs: H if given, else
    the first dimension of an (H, S) array policy (it has no action beyond it) or _MAX_STEPS for
    a callable."""
    if callable(policy):
        return (lambda s, h: _action(policy(s, h), h)), (_MAX_STEPS if H is None else H)
    table = array_value(policy, "policy")
    if table.ndim != 2 or 0 in table.shape:
        raise ShapeError(
            "policy must be a non-empty (H, S) int array or a callable (state, h), got an array of "
            f"shape {table.shape} and dtype {table.dtype}"
        )
    table = integer_actions(table)  # the rule a model applies (whole-number floats taken)
    if H is not None and table.shape[0] != H:
        raise ShapeError(
            f"policy is an (H, S) array with H = {table.shape[0]} rows, but H = {H} was given "
            "(omit H to run the array's rows)"
        )
    n_states = table.shape[1]

    def act(s: Any, h: int) -> int:
        # a negative index would read the table from its end, a float or a tuple fail in numpy
        i = integer_value(s)  # np.array(3) as 3
        if i is None or not 0 <= i < n_states:
            raise IndexRangeError(
                f"state(obs) gave state {s!r} at step {h}: the policy has states 0..{n_states - 1}"
            )
        return int(table[h, i])

    return act, table.shape[0]


def evaluate(
    policy: Any,
    env: Any,
    episodes: int = 1000,
    seed: Any = None,
    H: int | None = None,
    state: Callable[[Any], int] = int,
    reward: Callable[[float], float] | None = None,
) -> Evaluation:
    """The value of `policy` on `env`.

    On a privrl FiniteMDP (a model): exact, ``init_dist @ V^pi_1`` by backward induction (the
    (H, S) int policy over the model's H steps; `episodes` and `seed` are ignored, a different `H`
    or a `state` is refused); on a ContextualBandit: exact, the mean over the contexts of
    ``means[s, pi[0, s]]`` (a (1, S) policy). An array policy holds integer actions, or floats
    that are whole numbers, on every kind of environment (one rule; ShapeError otherwise).
    On a gymnasium environment (no model):
    the mean return of `episodes` episodes of at most `H` steps (each also ends at the env's own
    end), from ``env.reset(seed=...)`` seeded once by `seed`; `policy` is an (H, S) int array or
    a callable (state, h) -> action, `state(obs)` maps an observation to a state index (by default
    the observation itself, which must then be an index of a Discrete observation space from 0; on
    a Tuple of Discrete spaces, a 1-D MultiDiscrete or MultiBinary, or a Discrete from start != 0,
    its ``privrl.envs.features.observation_index`` as learn takes it: a callable is handed that
    index, ``obs - start`` on a shifted Discrete, not the observation). Without
    `H`, an (H, S) array policy runs its H rows (its first dimension is H; a given `H` must equal
    it, ShapeError otherwise) and a callable runs to the env's own end, at most 10^4 steps; an action
    outside a Discrete action space is refused (IndexRangeError). `H`, when given, is an integer
    >= 1 (PrivacyParameterError otherwise). `reward` rescales the environment's rewards as
    ``privrl.learn`` does, and then an episode that ends before its H steps is padded as learn pads
    it (``reward(0.0)`` per missing step; with an H or an array policy), so the value is on learn's
    scale and comparable to ``from_gymnasium(env, H, reward=...)``'s exact one (gymnasium only).
    An environment whose time limit (``privrl.envs.gym.time_limit``) is below that H gives learn's
    AssumptionWarning: its truncated episodes are padded as if they had ended.
    `policy` may also be a privrl agent: the policy of the user arriving now (``agent.policy()``)
    over the agent's horizon, the policy ``privrl.run`` plays for its next user. Under
    ``exploration="sampling"`` that is one draw around the released estimate (the draw that user
    will play), not the greedy policy of the estimate itself: its value is the arriving user's exact
    expected return and moves from user to user with the draws. It is a look: the same value on
    every call, no random stream consumed, and a later run is bit for bit the run without the
    evaluation. To score the learned estimate itself, evaluate ``agent.greedy_policy()`` (the policy
    greedy for the released estimate: no optimism bonus, no draw, ties to the lowest action; as free
    of side effects), e.g. ``privrl.evaluate(agent.greedy_policy(), env)``.
    """
    if H is not None:
        H = check_pos_int(H, "H")
    if not isinstance(env, (FiniteMDP, ContextualBandit)):
        check_gym_env(env, "a privrl FiniteMDP, a ContextualBandit or a gymnasium environment (reset / step)")
    if isinstance(policy, Agent):
        H = policy.H if H is None else H
        policy = policy.policy()
    n, _ = check_episodes(episodes), check_seed(seed)  # both checked, though a model ignores them
    if isinstance(env, (FiniteMDP, ContextualBandit)):
        if reward is not None:
            raise TypeError("reward= applies to gymnasium environments: a model carries its own rewards")
        return _exact_value(policy, env, H, state)
    refuse_over_memory(
        "evaluate", n, f"the return of each of its episodes = {n}", "Pass fewer episodes= (Monte Carlo)."
    )
    return _monte_carlo(policy, env, n, _reset_seed(seed), H, state, reward)


def _exact_value(policy: Any, env: FiniteMDP | ContextualBandit, H: int | None, state: Any) -> Evaluation:
    """evaluate on a model: exact, over the model's own horizon (a different H, or a state map,
    refused rather than ignored)."""
    if state is not int:
        raise TypeError("state= applies to gymnasium environments: a model's policy is indexed by its states")
    if H is not None and H != env.H:
        raise ShapeError(
            f"H = {H}, but the model's horizon is H = {env.H}: its exact value is over its own H "
            "steps (build the model with the horizon you want)"
        )
    table = None if callable(policy) else array_value(policy, "policy")  # np.ndim: a ragged list's ValueError
    if table is None or table.ndim == 0:  # "must be an int array of shape (H, S), got ()"
        raise TypeError(f"on a model, policy is an (H, S) int array or a privrl agent (a callable (s, h) "
                        f"-> a is for gymnasium environments), got {type(policy).__name__}")  # fmt: skip
    if isinstance(env, FiniteMDP):
        V = env.policy_values(table)
        return Evaluation(value=env.initial_value(V), exact=True, values=V)
    arms = env.check_policy(table)  # a bandit's users are uniform over the contexts
    return Evaluation(value=float(env.means[np.arange(env.S), arms].mean()), exact=True)


def _monte_carlo(
    policy: Any,
    env: Any,
    n: int,
    seed: int | None,
    H: int | None,
    state: Callable[[Any], int],
    reward: Callable[[float], float] | None,
) -> Evaluation:
    """evaluate on a gymnasium environment: the mean return of n episodes (rescaled and padded
    to the horizon as learn does when `reward` is given)."""
    act, horizon = _policy_fn(policy, H)
    if H is not None or not callable(policy):  # a horizon episodes are padded to, as learn's H
        _warn_time_limit(env, horizon, "the policy's", stacklevel=4)
    act = _checked_actions(act, getattr(env, "action_space", None))
    check_state_map(state)
    if state is int:  # the observation itself, checked as an index (int() truncated 3.7), or its
        # index in a Tuple / MultiDiscrete / MultiBinary / Discrete(start != 0) space, as learn takes it
        space = getattr(env, "observation_space", None)
        found = observation_index(space)
        # one more column: an agent's policy on FeatureMap.one_hot_for's map with its absorbing state,
        # the last, which no observation indexes (the padding after the end plays no action)
        columns = None if callable(policy) else np.shape(policy)[-1]
        if found is not None and columns is not None and columns not in (found[0], found[0] + 1):
            raise ShapeError(
                f"the environment's observation space is {space} ({found[0]} states), the policy has "
                f"{np.shape(policy)[-1]} states: pass state=... mapping observations to the policy's states"
            )
        if found is not None and found[1] is not int:
            state = checked_index(space, *found)
        else:
            state = identity if not callable(policy) else observation_index_of(env)
    # learn's padding: only with a rescale (else it is 0) and a horizon (an H or an array's rows)
    padded = H is not None or not callable(policy)  # else an episode runs to the env's own end
    pad = padding_reward(reward) if reward is not None and padded else 0.0
    limit = time_limit(env)  # below the horizon: warned of above
    said = limit is not None and limit < horizon
    returns = np.empty(n)
    k = h = 0
    try:
        for k in range(n):
            h = -1
            obs = reset_observation(env.reset(seed=seed if k == 0 else None), "episode", k)
            total = 0.0
            for h in range(horizon):
                obs, r, terminated, truncated = step_parts(
                    env.step(act(state(obs), h)), reward, "episode", k, h
                )
                total += r
                if terminated or truncated:
                    cut = bool(padded and truncated and not terminated and h < horizon - 1)
                    said = said or (
                        cut and warn_self_truncated(f"episode {k + 1}", h, horizon, "the policy's")
                    )
                    total += pad * (horizon - h - 1)
                    break
            returns[k] = total
    except BaseException as e:  # the user's own error (a policy, state or env raising) or privrl's
        note_stop(
            e,
            f"privrl.evaluate stopped in episode {k + 1} of {n}, "
            + (f"at step {h}" if h >= 0 else "at env.reset"),
        )
        if k > 0:  # the estimate over the whole episodes before it (Ctrl-C in a long evaluation)
            note_stop(e, f"e.partial: the Evaluation of the {k} whole episode{'s' * (k > 1)} before it")
            attach_partial(e, _estimate(returns[:k]))
        raise
    return _estimate(returns)


def _estimate(returns: np.ndarray) -> Evaluation:
    """The Monte-Carlo Evaluation of these episodes' returns: their mean and its standard error."""
    stderr = float(returns.std(ddof=1) / math.sqrt(n)) if (n := len(returns)) > 1 else math.inf
    return Evaluation(value=float(returns.mean()), exact=False, stderr=stderr, episodes=n)


def _checked_actions(act: Callable[[int, int], int], space: Any) -> Callable[[int, int], int]:
    """`act`, refusing an action outside a Discrete action space (gymnasium's own error for one
    is a bare KeyError); other spaces are left to the environment."""
    n = getattr(space, "n", None)
    if n is None:
        return act
    lo = int(getattr(space, "start", 0))
    hi = lo + int(n)

    def checked(s: int, h: int) -> int:
        a = act(s, h)
        if not lo <= a < hi:
            raise IndexRangeError(
                f"the policy gave action {a} at state {s}, step {h}: the actions are {lo}..{hi - 1}"
            )
        return a

    return checked


@dataclass
class LearnResult:
    """Per-episode realized returns of a learn loop; `regret` = cumulative (reference - return)
    when a reference value was given (a realized, not an exact, regret), else None."""

    returns: np.ndarray
    regret: np.ndarray | None
    wall_time: float
    agent: str
    terminated_early: int = 0  # episodes the environment ended before H (padded, see learn)
    #: distinct consecutive policies the users played (the first user's counts): privrl.run's
    #: RunResult.policy_changes, by the same rule (privrl._core.PolicyChanges)
    policy_changes: int = 0

    @property
    def episodes(self) -> int:
        return len(self.returns)

    def __repr__(self) -> str:
        # RunResult's summary, not the per-episode arrays
        last = (
            f", final_regret={float(self.regret[-1]):.6g}"
            if self.regret is not None and len(self.regret)
            else ""
        )
        mean = f", mean_return={float(np.mean(self.returns)):.6g}" if len(self.returns) else ""
        return (
            f"LearnResult(agent={self.agent!r}, episodes={self.episodes}{mean}{last}, "
            f"wall_time={self.wall_time:.3g}s, terminated_early={self.terminated_early}, "
            f"policy_changes={self.policy_changes})"
        )


def partial_result(exc: BaseException) -> RunResult | LearnResult | Evaluation | None:
    """The result of the users a stopped ``privrl.run`` or ``privrl.learn`` completed: the
    ``partial`` attribute of the exception that stopped it (Ctrl-C's KeyboardInterrupt, the user's
    environment or callback raising, privrl's own errors), a RunResult from run and a LearnResult
    from learn (also from learn on a privrl model), over the users of that call the agent kept
    (``agent.k`` moved by its ``episodes``); None for an exception that did not stop either, e.g.
    one raised before the first user; from a stopped Monte-Carlo ``privrl.evaluate``, the Evaluation
    of its whole episodes. ``exc.partial`` itself, typed::

        try:
            res = privrl.learn(agent, env)
        except KeyboardInterrupt as e:
            res = privrl.experiment.partial_result(e)
    """
    from privrl.experiment.runner import RunResult

    got = getattr(exc, "partial", None)
    return got if isinstance(got, (RunResult, LearnResult, Evaluation)) else None


def learn(
    agent: Agent,
    env: Any,
    episodes: int | None = None,
    seed: Any = None,
    state: Callable[[Any], int] = int,
    reward: Callable[[float], float] | None = None,
    reference: float | None = None,
    callback: Callable[[int, float], None] | None = None,
    progress: bool | None = None,
) -> LearnResult:
    """Let `agent` learn from a gymnasium environment `env` for `episodes` users (default: all it
    has left of the K it was calibrated for), one user per episode of the agent's horizon H.

    Each episode: ``env.reset`` (seeded once by `seed`), then for h = 0..H-1 the user's action
    from its policy (computed once per user from the billboard), ``env.step``; the trajectory goes
    to ``agent.observe``. `state(obs)` maps observations to state indices of the agent's feature
    map; `reward(r)` rescales rewards into [0, 1] (the agent's sensitivity guard clips what is
    outside, with a warning). An episode the environment ends before H is padded up to H with
    steps worth the rescaled value of a zero reward, ``reward(0.0)``: after its end the environment
    pays nothing, so ending is never worse for the agent than the environment says (a rescale that
    maps 0 outside [0, 1] is refused). Where the agent's FeatureMap has an absorbing state
    (``FeatureMap.absorbing``; ``FeatureMap.one_hot_for`` adds one where the environment's last
    observation may be a state users act from, Blackjack-v1's), the step that ends the episode goes
    to it and the padded steps stay there; otherwise they are self-loops at the episode's last
    observed state (FrozenLake's holes and goal). `state(obs)` must never give the absorbing state
    (ShapeError). An environment whose time
    limit (``privrl.envs.gym.time_limit``: its TimeLimit, or a privrl model's own H behind
    ``as_gymnasium``) is below H gives an AssumptionWarning, since a truncated episode is padded
    the same way although it could have gone on. `callback(k, return)` runs
    after each episode; `progress` shows a bar (None: in a terminal or a notebook, after 2 s).
    Ctrl-C stops between two users: the agent is left after the last whole user. Whatever stops
    the loop (the environment, `state`, `reward` or `callback` raising, privrl's own checks, Ctrl-C)
    leaves with its own exception, which names the user and step in a note and carries
    ``exc.partial``: the LearnResult of this call's users the agent kept (``agent.k`` moved by
    ``exc.partial.episodes``), as an uninterrupted call would have returned them. A privrl model
    (it has exact values) runs through ``privrl.run``: its returns, and its exact regret as
    ``regret``. `callback`, `reference`, `reward` and `state` are for gymnasium environments: on
    a model they are refused (TypeError) rather than ignored; ``privrl.run(agent, env,
    callback=...)`` calls ``callback(k, cumulative exact regret)`` after each block of users.
    """
    if not isinstance(agent, Agent):
        raise TypeError(f"agent must be a privrl Agent, got {type(agent).__name__}")
    if isinstance(env, (FiniteMDP, ContextualBandit)):
        _refuse_gym_arguments(env, callback, reference, reward, state)
        return _run_model(agent, env, episodes, seed, progress)
    check_gym_env(env, "a gymnasium environment (reset / step)")
    if isinstance(agent.env, ContextualBandit):  # its contexts are the bandit's, not observations
        raise TypeError(
            f"{agent.label} is a contextual-bandit agent: run it on its ContextualBandit with "
            "privrl.run(agent, bandit); learn drives MDP agents on gymnasium environments"
        )
    flat = check_spaces(agent, env, state)
    _warn_time_limit(env, agent.H)
    if reference is not None:
        reference = check_reference(reference, agent.H)
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be a callable (k, return), got {callback!r}")
    seed = _reset_seed(seed)
    if state is int:  # the observation itself, checked as an index (int() truncated 3.7 and "3")
        state = flat if flat is not None else identity
    K = users_to_run(agent, episodes, "learn")  # none left: refused in run's words
    refuse_over_memory(
        "privrl.learn",
        2.0 * K,
        f"the return and the regret of each of its episodes = {K}",
        "Pass fewer episodes= per call: the agent learns on from where a call stopped.",
    )
    pad = padding_reward(reward)
    t0 = time.perf_counter()

    def result(returns: np.ndarray, early: int, changes: int) -> LearnResult:
        """The LearnResult of `returns`, this call's whole users (all K, or those before a stop)."""
        regret = None if reference is None else np.cumsum(reference - returns)
        return LearnResult(returns, regret, time.perf_counter() - t0, agent.label, early, changes)

    return learn_episodes(agent, env, K, seed, state, reward, pad, callback, progress, result)


def _refuse_gym_arguments(env: Any, callback: Any, reference: Any, reward: Any, state: Any) -> None:
    """learn on a privrl model runs privrl.run: the arguments for gymnasium environments are
    refused (TypeError) rather than ignored."""
    unused = {"callback": callback, "reference": reference, "reward": reward}
    given = [k for k, v in unused.items() if v is not None] + (["state"] if state is not int else [])
    if given:
        raise TypeError(
            f"privrl.learn on a privrl model ({type(env).__name__}) runs privrl.run, with exact regret: "
            f"{', '.join(given)} {'applies' if len(given) == 1 else 'apply'} to gymnasium environments "
            "only; use privrl.run(agent, env, "
            "callback=...) for a callback(k, cumulative exact regret)"
        )


def _run_model(
    agent: Agent, env: FiniteMDP | ContextualBandit, episodes: int | None, seed: Any, progress: bool | None
) -> LearnResult:
    """learn on a privrl model: privrl.run's returns and exact regret (a stopped run's partial
    RunResult, ``exc.partial``, as a LearnResult too)."""
    from privrl.experiment.runner import run

    def result(res: Any) -> LearnResult:
        return LearnResult(res.returns, res.regret, res.wall_time, agent.label, 0, res.policy_changes)

    try:
        return result(run(agent, env, episodes, seed, progress=progress))
    except BaseException as e:
        got = getattr(e, "partial", None)
        if got is not None:
            attach_partial(e, result(got))
        raise


def _warn_time_limit(env: Any, H: int, whose: str = "the agent's", stacklevel: int = 3) -> None:
    """An AssumptionWarning when gymnasium truncates `env`'s episodes before H steps (learn's and
    evaluate's rule): truncation is not the environment's end, and the padding (at the absorbing
    state, or self-loops at the last state; evaluate's reward(0.0) a step) after a state the
    episode could go on from teaches the agent dynamics, or gives a value, the environment does not
    have. `stacklevel` points the warning at the caller of learn / evaluate."""
    limit = time_limit(env)
    if limit is not None and limit < H:
        warnings.warn(
            f"the environment truncates its episodes after {limit} steps (its time limit), fewer than "
            f"{whose} H = {H}: every longer episode is cut at step {limit} and padded as if "
            f"it had ended there; use H <= {limit}, or gymnasium.make(..., max_episode_steps=H)",
            AssumptionWarning,
            stacklevel=stacklevel,
        )


def _reset_seed(seed: Any) -> int | None:
    """learn's seed for the first ``env.reset`` (gymnasium takes None or an int >= 0): an int as
    it is, and a SeedSequence or a sequence of ints that numpy reads as an int (``SeedSequence(3)``,
    ``[3]``) as that int, so that equal seeds give equal runs; another SeedSequence (a spawned
    child) or a Generator (as privrl.run takes) gives one int drawn from it."""
    seed = check_seed(seed)
    if seed is None:
        return None
    same = int_seed(seed)
    if same is not None:
        return same
    if isinstance(seed, (np.random.Generator, np.random.BitGenerator)):
        return int(np.random.default_rng(seed).integers(2**63))
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return int(seq.generate_state(1, np.uint64)[0])

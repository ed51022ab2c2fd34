"""Bridges to gymnasium: tabular toy-text envs as finite-horizon linear MDPs, and any FiniteMDP as a
gymnasium Env. Sec. 2 (a tabular MDP is a linear MDP with one-hot features, Asm. 1); optional extra
(pip install privrl[gym]).
"""

from __future__ import annotations

import math
import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from privrl.common.checks import check_flag, check_pos_int, integer_value, is_integer
from privrl.common.errors import (
    AssumptionError,
    AssumptionWarning,
    CapacityError,
    IndexRangeError,
    NonFiniteError,
    ShapeError,
)
from privrl.common.kinds import is_choice, real_value
from privrl.envs.finite import FiniteMDP, _as_array, check_dense_size, outside_unit_interval
from privrl.envs.finite import env_name as check_env_name
from privrl.envs.linear import LinearMDP, tabular_linear_mdp

__all__ = ["from_gymnasium", "frozen_lake", "as_gymnasium"]

_HINT = "gymnasium is required for this function: pip install privrl[gym]"


def _import_gymnasium() -> Any:
    try:
        import gymnasium
    except ImportError as exc:
        raise ImportError(_HINT) from exc
    return gymnasium


def padding_reward(reward: Callable[[float], float] | None) -> float:
    """What a step after the environment's end pays: the rescaled value of a zero reward,
    ``reward(0.0)`` (0 without a rescale), checked to be a real number in [0, 1]. One rule for
    :func:`from_gymnasium`'s absorbing states and ``privrl.learn``'s padding: ending is never
    worse for the agent than the environment says."""
    if reward is not None and not callable(reward):  # was "'float' object is not callable"
        raise TypeError(
            f"reward must be a callable mapping an environment's reward into [0, 1], got {reward!r}"
        )
    out = 0.0 if reward is None else reward(0.0)
    pad = real_value(out)
    if pad is None:
        # a rescale without `return` gave None: float()'s "argument must be ... not 'NoneType'"
        raise TypeError(
            f"reward(0.0) returned {out!r} ({type(out).__name__}), not a real number: the rescale must "
            "return the rescaled reward (a function without `return` gives None)"
        )
    if not 0.0 <= pad <= 1.0:
        raise AssumptionError(
            f"reward(0.0) = {pad:g} is outside [0, 1]: the steps after an episode ends pay the "
            "rescaled value of a zero reward, so the rescale must map 0 into [0, 1]"
        )
    return pad


def time_limit(env: Any) -> int | None:
    """The most steps an episode of `env` lasts before gymnasium truncates it, or None: the smallest
    of its ``spec.max_episode_steps``, the limit of every ``TimeLimit`` wrapper around it (one
    applied by hand to an environment without a spec too) and, for a privrl model wrapped by
    :func:`as_gymnasium` (``privrl/RiverSwim-v0`` ...), the model's own horizon H, after which the
    wrapper truncates its episodes."""
    limits = []
    spec = getattr(env, "spec", None)
    limit = getattr(spec, "max_episode_steps", None)
    if isinstance(limit, int):
        limits.append(limit)
    layer, seen = env, 0
    while layer is not None and seen < 100:  # a wrapper's .env, down to the unwrapped environment
        steps = getattr(layer, "_max_episode_steps", None)
        if type(layer).__name__ == "TimeLimit" and isinstance(steps, int):
            limits.append(steps)
        if _ADAPTER_CLASS is not None and isinstance(layer, _ADAPTER_CLASS):
            limits.append(int(layer.mdp.H))
        layer, seen = getattr(layer, "env", None), seen + 1
    return min(limits) if limits else None


def not_a_model(env: Any, agent: str = "LSVI-UCB") -> str:
    """What to do instead when a gymnasium environment is handed where a privrl model is expected
    (an agent's constructor): "" for anything else. The class name alone named gymnasium's outer
    wrapper ("got TimeLimit"). ``agent``: the agent the hint builds on the feature map (LSVI-UCB,
    or PSRL for PSRL's own constructor)."""
    if isinstance(env, FiniteMDP) or not (hasattr(env, "reset") and hasattr(env, "step")):
        return ""
    spec = getattr(env, "spec", None)
    label = getattr(spec, "id", None) or type(getattr(env, "unwrapped", env)).__name__
    tabular = isinstance(getattr(getattr(env, "unwrapped", None), "P", None), dict)
    model = "; or run on its model privrl.envs.from_gymnasium(env, H), for exact regret" if tabular else ""
    return (
        f": {label} is a gymnasium environment, not a model; build {agent} on its feature map "
        f"(FeatureMap.one_hot_for(env, H) for tabular spaces) and learn with privrl.learn(agent, env){model}"
    )


def needs_absorbing(env: Any) -> bool:
    """Whether ``privrl.learn``'s padding of an episode the environment ends before H needs a state
    of its own (``FeatureMap.absorbing``; ``FeatureMap.one_hot_for`` adds one where this is True):
    the environment has no transition table ``env.unwrapped.P`` (Blackjack-v1: nothing says its
    last observation is not a state users act from; a privrl model behind :func:`as_gymnasium`
    excepted, which never ends an episode), or its table ends an episode in a state an episode
    can also be in before its end (an initial state, or reached from one by transitions that do
    not end it: the rule by which :func:`from_gymnasium` refuses such a table). False for
    FrozenLake, CliffWalking and Taxi: their terminal states are only ever entered by the
    transition that ends the episode, so self-loops there teach nothing false."""
    base = getattr(env, "unwrapped", env)
    if _ADAPTER_CLASS is not None and isinstance(base, _ADAPTER_CLASS):
        return False  # terminated is always False: nothing is ever padded after an end
    table = getattr(base, "P", None)
    if not isinstance(table, dict):
        return True
    n = int(getattr(getattr(base, "observation_space", None), "n", len(table)))
    ended = np.zeros(n, dtype=bool)
    live = np.zeros((n, n), dtype=bool)
    for s_key, acts in table.items():
        s = _table_index(s_key, n, "state", "P")
        for a_key, transitions in acts.items():
            for prob, ns_key, _, term in transitions:
                ns = _table_index(ns_key, n, "next state", f"P[{s}][{a_key}]")
                if float(prob) > 0.0:
                    if term:
                        ended[ns] = True
                    else:
                        live[s, ns] = True
    init = getattr(base, "initial_state_distrib", None)
    # without one, from_gymnasium's default: every state no transition ends in may start
    start = np.asarray(init, dtype=float).reshape(-1)[:n] > 0.0 if init is not None else ~ended
    return bool((ended & _reached(start, live)).any())


def _reached(start: np.ndarray, live: np.ndarray) -> np.ndarray:
    """The states an episode can be in before its end: the ``start`` states and those reached from
    them by the transitions ``live[s, s']`` that do not end it."""
    reached, frontier = start.copy(), start.copy()
    while frontier.any():
        frontier = live[frontier].any(axis=0) & ~reached
        reached |= frontier
    return reached


#: The gymnasium namespace of privrl's own models (``gymnasium.make("privrl/RiverSwim-v0")`` once
#: ``privrl.experiment.environments.register_gymnasium_envs`` has registered them).
NAMESPACE = "privrl/"


def _own_model(label: str, use: str) -> ShapeError:
    """from_gymnasium's refusal of a privrl model behind as_gymnasium (an object, or its id)."""
    return ShapeError(
        f"{label} is a privrl model wrapped for gymnasium (as_gymnasium): from_gymnasium reads the "
        "transition table env.unwrapped.P of a gymnasium toy-text environment, which it has not, and "
        f"a privrl model needs no reading: {use}, and run privrl.run or privrl.evaluate on it"
    )


def model_table(env: Any) -> dict:
    """``env.unwrapped.P`` of a tabular toy-text environment: s -> a -> [(prob, next_state,
    reward, terminated)]; ShapeError for any other object (no model to read; a privrl model behind
    :func:`as_gymnasium` is named as one)."""
    base = getattr(env, "unwrapped", None)
    if _ADAPTER_CLASS is not None and isinstance(base, _ADAPTER_CLASS):
        label = getattr(getattr(env, "spec", None), "id", None) or base.mdp.name
        raise _own_model(label, "use the model itself, env.unwrapped.mdp")
    table = getattr(base, "P", None)
    if not isinstance(table, dict):
        spec = getattr(env, "spec", None)
        raise ShapeError(
            f"{spec.id if spec is not None else type(base if base is not None else env).__name__} has no "
            "model: from_gymnasium needs a tabular toy-text environment whose env.unwrapped.P is a dict "
            "s -> a -> [(prob, next_state, reward, terminated)] (FrozenLake, CliffWalking, Taxi); "
            "for any other environment build a FeatureMap and use privrl.learn(agent, env, state=...)"
        )
    return table


def from_gymnasium(
    env: Any,
    H: int,
    name: str | None = None,
    init_dist: Any = None,
    reward: Callable[[float], float] | None = None,
) -> LinearMDP:
    """A finite-horizon (H steps, time-homogeneous) tabular linear MDP built from a gymnasium
    toy-text env's own transition table ``env.unwrapped.P`` (dict s -> a -> list of
    (prob, next_state, reward, terminated)); `env` may also be an env id string (the env
    ``gymnasium.make`` builds from it is closed before returning; an env passed in is left open).
    A privrl model behind :func:`as_gymnasium`, or its id (``"privrl/RiverSwim-v0"``), is refused
    (ShapeError) naming the model to use instead: it has no table to read and is a model already.

    * r_h(s,a) = sum over the listed transitions of prob * reward(r) (``reward`` rescales the
      environment's rewards, as in ``privrl.learn``; none: as they are); every reward a listed
      transition pays must lie in [0, 1], not only their mean (AssumptionError otherwise, naming
      the transition: ``privrl.learn`` would clip it, so the model would not pay what the agent
      is paid; CliffWalking or Taxi need a rescale, e.g. ``lambda r: (r + 100) / 100`` and
      ``lambda r: (r + 10) / 30``).
    * A terminated transition goes to its listed next state, as in the table; every state that
      is the target of some terminated transition is then made absorbing (p(s|s,a) = 1 for all a)
      paying the rescaled value of a zero reward, ``reward(0.0)`` (0 without a rescale; refused
      outside [0, 1]), which reproduces "the episode has ended" inside a fixed horizon H exactly
      as ``privrl.learn`` pads it. Such a state must not be one an episode can be in before its
      end (an initial state, or reached by transitions that do not terminate): AssumptionError,
      since absorbing it would erase its own actions and rewards.
    * The model is the unwrapped environment's: a reward, observation or action wrapper around
      `env` (TransformReward, ...) is refused with an AssumptionError (pass ``reward`` instead),
      any wrapper but gymnasium's neutral ones (TimeLimit, OrderEnforcing, PassiveEnvChecker,
      RecordEpisodeStatistics, recording and rendering) gives an AssumptionWarning.
    * The model has no time limit: an env whose ``spec.max_episode_steps`` is below H (its
      episodes truncated before H, then padded by ``privrl.learn``) gives an AssumptionWarning.
    * init_dist: the argument if given, else ``env.unwrapped.initial_state_distrib`` if the env
      has it (FrozenLake, Taxi, CliffWalking), else uniform over the non-absorbing states (over
      all states if every state is absorbing), with an AssumptionWarning: ``env.reset`` may start
      elsewhere.
    """
    gymnasium = _import_gymnasium()
    if not isinstance(env, str):
        return _from_env(env, H, name, init_dist, reward)
    if env.startswith(NAMESPACE):  # privrl's own model: refused as model_table refuses it made
        model = env[len(NAMESPACE) :].rpartition("-v")[0] or env[len(NAMESPACE) :]
        raise _own_model(repr(env), f"build the model itself, privrl.envs.{model}(...)")
    made = gymnasium.make(env)  # made here, so closed here (an env the caller passed is theirs)
    try:
        return _from_env(made, H, name, init_dist, reward)
    finally:
        made.close()


# gymnasium's wrappers that leave what an environment observes, takes and pays as its table says
# (a TimeLimit is read by time_limit; the others check, record or render)
_NEUTRAL_WRAPPERS = frozenset(
    {
        "TimeLimit",
        "OrderEnforcing",
        "PassiveEnvChecker",
        "RecordEpisodeStatistics",
        "RecordVideo",
        "RenderCollection",
        "HumanRendering",
    }
)


def _check_wrappers(env: Any) -> None:
    """Refuse (AssumptionError) a reward, observation or action wrapper around the environment:
    the model is read from the unwrapped table ``env.unwrapped.P``, so it would not be the
    environment ``privrl.learn`` and ``privrl.evaluate`` step (TransformReward(env, f) paid f(r)
    while the model paid r); warn (AssumptionWarning) of any other wrapper but gymnasium's neutral
    ones, which may change them too."""
    gymnasium = _import_gymnasium()
    changing = (gymnasium.RewardWrapper, gymnasium.ObservationWrapper, gymnasium.ActionWrapper)
    layer, seen = env, 0
    while isinstance(layer, gymnasium.Wrapper) and seen < 100:
        kind = type(layer).__name__
        if isinstance(layer, changing):
            raise AssumptionError(
                f"the environment is wrapped in {kind}, which changes its rewards, observations or "
                "actions, while from_gymnasium reads the unwrapped environment's transition table "
                "env.unwrapped.P: the model would not be the environment learn and evaluate step; "
                "build the model from the environment without it (a reward rescale: reward=...)"
            )
        if not (kind in _NEUTRAL_WRAPPERS and type(layer).__module__.startswith("gymnasium")):
            warnings.warn(
                f"the environment is wrapped in {kind}: from_gymnasium reads the unwrapped environment's "
                "transition table env.unwrapped.P, so the model is what the wrapper leaves unchanged "
                "only if it changes no reward, observation, action or transition",
                AssumptionWarning,
                stacklevel=4,
            )
        layer, seen = layer.env, seen + 1


def _from_env(
    env: Any, H: int, name: str | None, init_dist: Any, reward: Callable[[float], float] | None
) -> LinearMDP:
    table = model_table(env)
    _check_wrappers(env)
    H = check_pos_int(H, "H")
    base = env.unwrapped
    S = int(getattr(getattr(base, "observation_space", None), "n", len(table)))
    A = int(getattr(getattr(base, "action_space", None), "n", max(len(v) for v in table.values())))
    spec = getattr(env, "spec", None)
    env_name = getattr(spec, "id", None) or type(base).__name__
    check_dense_size(f"from_gymnasium({env_name!r})", H, S, A)  # the model is (H, S, A, S)
    pad = padding_reward(reward)
    P, R, terminal, live, own = _table_arrays(table, S, A, (lambda r: r) if reward is None else reward, pad)
    if init_dist is None:
        init_dist = getattr(base, "initial_state_distrib", None)
    if init_dist is None:
        mask = ~terminal if (~terminal).any() else np.ones(S, dtype=bool)
        init_dist = mask / mask.sum()
        warnings.warn(
            f"{env_name} has no initial_state_distrib: the model starts uniformly over its "
            f"{int(mask.sum())} non-absorbing states, while its episodes start where env.reset puts "
            "them (privrl.learn, privrl.evaluate); pass init_dist=... if they differ, or the model's "
            "values and regret are not the environment's",
            AssumptionWarning,
            stacklevel=3,
        )
    # checked as FiniteMDP checks it: numpy's cast dropped a complex part with a mere warning and
    # read a string as numbers or raised its own "could not convert" ValueError
    init_dist = _as_array(init_dist, "init_dist", 1, "(S,)")
    mdp = tabular_linear_mdp(
        np.broadcast_to(P, (H, S, A, S)),
        np.broadcast_to(R, (H, S, A)),
        init_dist,
        name=check_env_name(name) or f"{env_name}(H={H})",
    )
    _check_absorbing(terminal & ~own, live, mdp.init_dist > 0.0, table)
    limit = time_limit(env)
    if limit is not None and limit < H:
        warnings.warn(
            f"{env_name} truncates its episodes after {limit} steps (its time limit), fewer than "
            f"H = {H}: the model has no time limit, so its values are those of {H}-step episodes, "
            f"while privrl.learn and privrl.evaluate on the environment see {limit} steps padded to "
            f"H; use H <= {limit}, or gymnasium.make(..., max_episode_steps=H)",
            AssumptionWarning,
            stacklevel=3,
        )
    return mdp


def _table_arrays(
    table: dict, S: int, A: int, scale: Callable[[float], float], pad: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """P (S, A, S), expected rescaled rewards R (S, A) (every transition's reward checked to lie
    in [0, 1]), the terminal states of a transition table, each terminal state made absorbing,
    paying `pad`, the (S, S) mask of the table's transitions s -> s' of positive probability that
    do not end the episode (what an episode can still do before its end), and the states whose own
    table entries already are the absorbing convention (every action ends the episode paying
    `pad`: FrozenLake's holes)."""
    P = np.zeros((S, A, S))
    R = np.zeros((S, A))
    terminal = np.zeros(S, dtype=bool)
    live = np.zeros((S, S), dtype=bool)
    for s_key, acts in table.items():
        s = _table_index(s_key, S, "state", "P")
        for a_key, transitions in _action_table(acts, s).items():
            a = _table_index(a_key, A, "action", f"P[{s}]")
            for entry in transitions:
                prob, ns_key, rew, term = _transition(entry, f"P[{s}][{a}]")
                # next state -1 read P's last state, 5 of 2 states was numpy's IndexError
                ns = _table_index(ns_key, S, "next state", f"P[{s}][{a}]")
                r = float(scale(rew))
                if not math.isfinite(r):  # a NaN passed the [0, 1] test and surfaced as "theta"
                    raise NonFiniteError(
                        f"the gymnasium env's transition table P[{s}][{a}] pays {rew!r}, rescaled to {r!r}"
                    )
                if float(prob) > 0.0 and outside_unit_interval(np.array([r])) is not None:
                    # privrl.learn's guard would clip it: the model's expected reward would not be
                    # the one the agent is paid on the environment
                    raise AssumptionError(
                        f"the gymnasium env's transition table P[{s}][{a}] pays {r!r}"
                        f"{'' if r == float(rew) else f' (rescaled from {float(rew)!r})'} on its move "
                        f"to state {ns}, outside [0, 1] (rescale it with reward=...)"
                    )
                P[s, a, ns] += float(prob)
                R[s, a] += float(prob) * r
                if term:
                    terminal[ns] = True
                elif float(prob) > 0.0:
                    live[s, ns] = True
    # the rows an episode plays (terminal states' are replaced below): named by the table's own
    # keys, not as P[h=0, s, a, :] of the model built from it
    sums = P.sum(axis=2)
    off = (np.abs(sums - 1.0) > 1e-9) & ~terminal[:, None]
    if off.any():
        s, a = (int(i) for i in np.argwhere(off)[0])
        listed = s in table and a in table[s]
        raise AssumptionError(
            f"the gymnasium env's transition table P[{s}][{a}] "
            + (f"lists probabilities summing to {sums[s, a]:.12g}" if listed else "is missing")
            + f": every state 0..{S - 1} and action 0..{A - 1} of its spaces needs a list of "
            "transitions whose probabilities sum to 1 (unreachable states included)"
        )
    own = np.asarray(~live.any(axis=1) & (np.abs(R - pad) <= 1e-12).all(axis=1))
    for t in np.nonzero(terminal)[0]:
        P[t] = 0.0
        P[t, :, t] = 1.0
        R[t] = pad
    return P, R, terminal, live, own


def _check_absorbing(terminal: np.ndarray, live: np.ndarray, start: np.ndarray, table: dict) -> None:
    """Refuse (AssumptionError) a table in which a state where some transition ends the episode
    (`terminal`: those whose own entries are not already the absorbing convention) is also a state
    an episode can be in before its end (an initial state, or reached from one by transitions that
    do not end it): making it absorbing, the convention for "the episode has ended", would erase
    its own actions and rewards (a "stop" action listing the current state
    as its terminated next state made every state absorbing, V* = 0 without a word). States only
    ever reached by ending transitions (Taxi's delivered passenger, FrozenLake's holes and goal)
    are absorbed exactly."""
    if not terminal.any():
        return
    clash = np.nonzero(terminal & _reached(start, live))[0]
    if clash.size == 0:
        return
    t = int(clash[0])
    ender = next(
        f"P[{s}][{a}]"
        for s, acts in table.items()
        for a, transitions in acts.items()
        if any(term and int(ns) == t for _, ns, _, term in transitions)
    )
    how = "an initial state" if start[t] else "reached before the episode ends"
    raise AssumptionError(
        f"state {t} of the gymnasium env's transition table is where a terminated transition ends "
        f"({ender}) and also {how}: from_gymnasium makes the states that end an episode absorbing "
        "(paying reward(0.0)), which would replace this state's own actions and rewards; list a "
        "separate terminal state as the next state of the transitions that end the episode"
    )


def _action_table(acts: Any, s: int) -> dict:
    """P[s] of a transition table, a dict a -> transitions (a list per state was "'list' object
    has no attribute 'items'")."""
    if not isinstance(acts, dict):
        raise ShapeError(
            f"the gymnasium env's transition table P[{s}] is a {type(acts).__name__}, not a dict "
            "a -> [(probability, next_state, reward, terminated)]"
        )
    return acts


def _transition(entry: Any, where: str) -> tuple[float, Any, float, bool]:
    """One (prob, next_state, reward, terminated) of a transition table, checked: a short tuple or
    a bare number was Python's "not enough values to unpack", a str reward numpy's "could not
    convert string to float", a NaN probability or reward surfaced as "mu" / "theta", and a
    terminated "no" (truthy) ended the episode."""
    if not isinstance(entry, (tuple, list)) or len(entry) != 4:
        raise ShapeError(
            f"the gymnasium env's transition table {where} lists {entry!r}: each transition is a "
            "(probability, next_state, reward, terminated) tuple"
        )
    prob, ns, rew, term = entry
    values = []
    for name, v in (("probability", prob), ("reward", rew)):
        x = real_value(v)
        if x is None or not math.isfinite(x):
            raise AssumptionError(
                f"the gymnasium env's transition table {where} lists {name} {v!r}: not a finite number"
            )
        values.append(x)
    if not 0.0 <= values[0] <= 1.0:  # -0.5 and 1.5 to one next state summed to a row of 1, accepted
        raise AssumptionError(
            f"the gymnasium env's transition table {where} lists probability {prob!r}: not in [0, 1]"
        )
    if not isinstance(term, (bool, np.bool_)) and not (is_integer(term) and int(term) in (0, 1)):
        raise AssumptionError(
            f"the gymnasium env's transition table {where} lists terminated {term!r}: not True or False"
        )
    return values[0], ns, values[1], bool(term)


def _table_index(value: Any, n: int, what: str, where: str) -> int:
    """An index of a gymnasium transition table: an integer in 0..n-1 (IndexRangeError otherwise;
    a float or a string is a TypeError: int() truncated them)."""
    if not is_integer(value):
        raise TypeError(
            f"the gymnasium env's transition table {where} lists {what} {value!r}: not an integer"
        )
    if not 0 <= int(value) < n:
        raise IndexRangeError(
            f"the gymnasium env's transition table {where} lists {what} {int(value)}: "
            f"the {'actions' if what == 'action' else 'states'} are 0..{n - 1}"
        )
    return int(value)


def frozen_lake(H: int = 20, map_name: str = "4x4", is_slippery: bool = True) -> LinearMDP:
    """FrozenLake-v1 (gymnasium.make("FrozenLake-v1", map_name=..., is_slippery=...)) as a
    finite-horizon tabular linear MDP (see from_gymnasium): reward 1 on entering the goal, holes
    and goal absorbing with zero reward, start state from the env's initial distribution.

    ``map_name`` is one of gymnasium's maps ("4x4", "8x8") and ``is_slippery`` True or False
    (AssumptionError otherwise: a truthy "no" would silently build the slippery lake)."""
    H = check_pos_int(H, "H")  # int(H) below: inf was an OverflowError
    gymnasium = _import_gymnasium()
    from gymnasium.envs.toy_text.frozen_lake import MAPS

    maps = tuple(MAPS)
    if not is_choice(map_name, maps):  # a str first (an array's `in` named no argument)
        raise AssumptionError(
            f"map_name must be one of gymnasium's FrozenLake maps {', '.join(map(repr, maps))}, "
            f"got {map_name!r}"
        )
    is_slippery = check_flag(is_slippery, "is_slippery", AssumptionError)
    env = gymnasium.make("FrozenLake-v1", map_name=map_name, is_slippery=is_slippery)
    try:
        return from_gymnasium(env, H, name=f"FrozenLake-v1(map={map_name}, slippery={is_slippery}, H={H})")
    finally:
        env.close()


_ADAPTER_CLASS: Any = None
# Threads may wrap their first model at once (a thread sweep's runs making privrl's own gymnasium
# ids): without the lock each could build a class of its own, and an adapter of the class not kept
# was neither recognized (its horizon, needs_absorbing) nor picklable as GymnasiumAdapter.
_ADAPTER_LOCK = threading.Lock()


def _adapter_class() -> Any:
    """Create (once) the gymnasium.Env subclass wrapping a FiniteMDP."""
    global _ADAPTER_CLASS
    if _ADAPTER_CLASS is not None:
        return _ADAPTER_CLASS
    with _ADAPTER_LOCK:
        if _ADAPTER_CLASS is None:
            _ADAPTER_CLASS = _new_adapter_class()
        return _ADAPTER_CLASS


def _new_adapter_class() -> Any:
    _import_gymnasium()  # the install hint if it is missing
    from gymnasium import Env, spaces

    class GymnasiumAdapter(Env):
        """A FiniteMDP as a gymnasium Env: obs = state index, episodes truncated after H steps
        (terminated is always False: the finite-horizon MDP has no terminal states), info["h"] =
        number of steps taken so far (0-based index of the next step). Sampling uses the Env's
        ``np_random`` generator, seeded by ``reset(seed=...)``. No render modes (Env's metadata).
        ``step`` takes the actions its ``Discrete(A)`` space contains: an int or a numpy integer
        (scalar or 0-d array) in 0..A-1; any other type, a float such as 1.0 included (gymnasium's
        ``Discrete.contains`` refuses it too), is a ShapeError, an integer out of range an
        IndexRangeError; a step before ``reset`` or past the H steps a CapacityError."""

        def __init__(self, mdp: FiniteMDP) -> None:
            super().__init__()
            self.mdp = mdp
            self.observation_space = spaces.Discrete(mdp.S)
            self.action_space = spaces.Discrete(mdp.A)
            self._h = -1  # not reset yet
            self._s = -1

        def reset(
            self, *, seed: int | None = None, options: dict[str, Any] | None = None
        ) -> tuple[int, dict[str, Any]]:
            super().reset(seed=seed)
            self._h = 0
            self._s = self.mdp.sample_initial_state(self.np_random)
            return self._s, {"h": 0}

        def step(self, action: Any) -> tuple[int, float, bool, bool, dict[str, Any]]:
            if self._h < 0:
                raise CapacityError("call reset() before step(): no episode has started")
            if self._h >= self.mdp.H:
                raise CapacityError(
                    f"the episode is over (its H = {self.mdp.H} steps are taken): call reset()"
                )
            a = _action_index(action, self.mdp.A)
            h, s = self._h, self._s
            reward = float(self.mdp.R[h, s, a])
            self._s = self.mdp.sample_next_state(h, s, a, self.np_random)
            self._h = h + 1
            truncated = self._h >= self.mdp.H
            return self._s, reward, False, truncated, {"h": self._h}

    # pickled by reference as privrl.envs.gym.GymnasiumAdapter (the module's __getattr__ builds the
    # class), so a wrapped model goes to a process pool; as a local class it was not picklable
    GymnasiumAdapter.__qualname__ = "GymnasiumAdapter"
    GymnasiumAdapter.__module__ = __name__
    return GymnasiumAdapter


def _action_index(action: Any, A: int) -> int:
    """`action` as an index in 0..A-1, by gymnasium's rule for a Discrete(A) action (its
    ``contains``): a Python int or a numpy integer scalar / 0-d array; int(0.5) would be action 0."""
    # gymnasium's rule exactly: a Python bool is an int to it (not an np.bool_, not a duration)
    a = int(action) if isinstance(action, bool) else integer_value(action)
    if a is None:
        raise ShapeError(
            f"action must be an integer in 0..{A - 1} (an int or a numpy integer, as gymnasium's "
            f"Discrete({A}) takes), got {action!r} of type {type(action).__name__}"
        )
    if not 0 <= a < A:
        raise IndexRangeError(f"action {a} is not in 0..{A - 1}")
    return a


def as_gymnasium(mdp: FiniteMDP) -> Any:
    """Wrap a FiniteMDP as a gymnasium.Env: reset(seed=None, options=None) -> (obs, info),
    step(action) -> (obs, reward, terminated, truncated, info), truncated at the horizon H."""
    if not isinstance(mdp, FiniteMDP):
        raise TypeError(f"as_gymnasium expects a FiniteMDP, got {type(mdp).__name__}")
    return _adapter_class()(mdp)


def __getattr__(name: str) -> Any:
    if name == "GymnasiumAdapter":
        return _adapter_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

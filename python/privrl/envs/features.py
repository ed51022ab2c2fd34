"""A linear MDP whose model is unknown: only the user's feature map phi(s, a) and the horizon H
(Asm. 1 without mu and theta). LSVI-UCB learns on it from interaction (privrl.learn); with no
model there is no exact regret, only realized returns."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from privrl.common.checks import check_flag, check_pos_int, integer_value, is_integer
from privrl.common.errors import PrivacyParameterError, ShapeError
from privrl.common.memory import refuse_over_memory
from privrl.envs.finite import ReadOnlyCopies, _as_array, _check_finite, _freeze, digest, env_name
from privrl.envs.linear import check_phi_norms

__all__ = ["FeatureMap", "observation_index"]


class FeatureMap(ReadOnlyCopies):
    """The public part of a linear MDP with an unknown model: phi(s, a) for S states and A
    actions, and the horizon H. ||phi(s, a)|| <= 1 is required (it bounds the privacy
    sensitivity; AssumptionError otherwise).

    Parameters
    ----------
    features : array (S, A, d)
    H : int, the horizon of an episode.
    name : str, optional
    absorbing : int, optional
        The index of a state no observation maps to, where ``privrl.learn`` puts an episode the
        environment ends before H: the step that ends it goes there, and the padded steps up to H
        stay there, paying ``reward(0.0)``. Without one (the default) the padding self-loops at
        the episode's last observed state, which is right only where that state is one no episode
        acts from (FrozenLake's holes and goal); where the last observation is also a state users
        act from (Blackjack's hand after "stick"), the padded steps would teach the agent that
        state's value as 0 and the ending step would read the value of a live state. To declare
        one on your own map, give your features one more state (its rows one-hot or any rows with
        ||phi|| <= 1) and its index here, e.g. the last, ``S - 1``; your ``state=`` mapping must
        never give it (learn refuses an observation mapped to it). With the default ``state`` of a
        tabular observation space of n states, the absorbing state is the last, S = n + 1.

    Attributes: S, A, d, H, features, features_flat (S*A, d, row s*A + a), name, absorbing (an
    index or None). There is no transition kernel: ``privrl.run`` (exact regret) refuses it,
    ``privrl.learn`` runs on it.
    """

    #: the absorbing state's index, or None (a class default: a FeatureMap saved before it had one)
    absorbing: int | None = None

    def __init__(self, features: Any, H: Any, name: str | None = None, absorbing: Any = None) -> None:
        phi = _as_array(features, "features", 3, "(S, A, d)")
        _check_finite(phi, "features")
        _check_count(H, "H")
        check_phi_norms(phi)
        S, A, d = phi.shape
        self.S, self.A, self.d, self.H = int(S), int(A), int(d), int(H)
        self.features = _freeze(phi)
        self.features_flat = _freeze(phi.reshape(S * A, d).copy())
        self.name = name if env_name(name) is not None else "FeatureMap"
        if absorbing is not None:
            if not is_integer(absorbing):
                raise ShapeError(f"absorbing must be a state index (an integer) or None, got {absorbing!r}")
            if not 0 <= int(absorbing) < S:
                raise ShapeError(f"absorbing = {int(absorbing)} is not a state: the states are 0..{S - 1}")
            if S < 2:
                raise ShapeError("an absorbing state needs another state besides it (S >= 2)")
            self.absorbing = int(absorbing)

    def fingerprint(self) -> dict[str, str]:
        """A digest of the horizon and the features (see FiniteMDP.fingerprint), and of the
        absorbing state where there is one (a map without one keeps its fingerprint)."""
        out = {"horizon": digest(self.H), "features": digest(self.features)}
        if self.absorbing is not None:
            out["absorbing"] = digest(self.absorbing)
        return out

    def __repr__(self) -> str:
        extra = "" if self.absorbing is None else f", absorbing={self.absorbing}"
        return f"FeatureMap(name={self.name!r}, S={self.S}, A={self.A}, d={self.d}, H={self.H}{extra})"

    @classmethod
    def one_hot(cls, S: int, A: int, H: int, name: str | None = None, absorbing: bool = False) -> FeatureMap:
        """The tabular feature map phi(s, a) = e_{s A + a} in R^(S A); with ``absorbing=True``, over
        S + 1 states, the last (index S) the absorbing state (d = (S + 1) A, see the class)."""
        # Python ints: numpy's S A of np.int64(2**31) and 4 wrapped to 0 when squared, past the guard
        S, A = _check_count(S, "S"), _check_count(A, "A")
        absorbing = check_flag(absorbing, "absorbing", ShapeError)
        last = S if absorbing else None
        S += int(absorbing)
        # np.eye(S A) asked numpy for 7.28 TiB at S = 10^5, A = 10 (the features and their flat copy)
        refuse_over_memory(
            "FeatureMap.one_hot",
            2.0 * (S * A) ** 2,
            f"two dense tables of S A = {S * A} one-hot features of dimension d = S A (S = {S}, A = {A})",
            "Use a feature map smaller than one-hot: FeatureMap(features, H) with features (S, A, d).",
        )
        return cls(np.eye(S * A).reshape(S, A, S * A), H, name, last)

    @classmethod
    def one_hot_for(
        cls, env: Any, H: int, name: str | None = None, absorbing: bool | None = None
    ) -> FeatureMap:
        """:meth:`one_hot` sized for a gymnasium environment with tabular spaces: A from its
        Discrete action space, S from its observation space, a Discrete, a Tuple of Discrete
        spaces (Blackjack-v1: 32 x 11 x 2 = 704 states), a 1-D MultiDiscrete or MultiBinary, whose
        observations ``privrl.learn`` indexes by :func:`observation_index`. The name is the
        environment's id.

        With ``absorbing=None`` (the default) it adds an absorbing state, the last (S + 1 states,
        d = (S + 1) A), exactly where ``privrl.learn``'s padding needs one
        (``privrl.envs.gym.needs_absorbing``): the environment has no transition table
        ``env.unwrapped.P`` (Blackjack-v1), or its table ends an episode in a state an episode can
        also be in before its end. FrozenLake, CliffWalking and Taxi, whose terminal states are
        only terminal, get none (the map, and every run on it, as before). True or False decides.
        `env` may also be an id (``"FrozenLake-v1"``), as for ``from_gymnasium``: the environment
        ``gymnasium.make`` builds from it is closed before returning."""
        if isinstance(env, str):
            from privrl.envs.gym import NAMESPACE, _import_gymnasium

            if env.startswith(NAMESPACE):  # gymnasium said "Namespace privrl not found"
                model = env[len(NAMESPACE) :].rpartition("-v")[0] or env[len(NAMESPACE) :]
                raise ShapeError(
                    f"{env!r} is a privrl model: build it, mdp = privrl.envs.{model}(...), and its map, "
                    "FeatureMap.one_hot(mdp.S, mdp.A, H) (or gymnasium.make the id after "
                    "privrl.experiment.environments.register_gymnasium_envs())"
                )
            made = _import_gymnasium().make(env)
            try:
                return cls.one_hot_for(made, H, name, absorbing)
            finally:
                made.close()
        refuse_vector_env(env)
        obs, acts = getattr(env, "observation_space", None), getattr(env, "action_space", None)
        if obs is None and acts is None:  # "the environment has None and None" said nothing
            raise TypeError(
                "FeatureMap.one_hot_for takes a gymnasium environment (gymnasium.make(id)) or its id, "
                f"got {type(env).__name__}"
            )
        found = observation_index(obs)
        n_act = getattr(acts, "n", None)
        if found is None or n_act is None or np.ndim(n_act) != 0 or int(getattr(acts, "start", 0)) != 0:
            shifted = found is not None and n_act is not None and np.ndim(n_act) == 0
            raise ShapeError(
                f"FeatureMap.one_hot_for needs a Discrete action space (0..A-1) and a Discrete, Tuple of "
                f"Discrete, 1-D MultiDiscrete or MultiBinary observation space; the environment has {acts} "
                f"and {obs}: "
                + (
                    f"shift the actions first, gymnasium.wrappers.TransformAction(env, lambda a: a + "
                    f"{int(getattr(acts, 'start', 0))}, Discrete({n_act}))"
                    if shifted
                    else "build FeatureMap(features, H) and pass learn a state= mapping"
                )
            )
        spec = getattr(env, "spec", None)
        label = name if name is not None else getattr(spec, "id", None) or "FeatureMap.one_hot"
        if absorbing is None:
            from privrl.envs.gym import needs_absorbing

            absorbing = needs_absorbing(env)
        return cls.one_hot(found[0], int(n_act), H, label, absorbing)


def refuse_vector_env(env: Any) -> None:
    """A gymnasium vector environment (``gymnasium.make_vec``: num_envs copies stepped at once,
    batched spaces) is refused with a TypeError saying so: its MultiDiscrete batch of actions was
    refused as "discretize the environment first", and its batch of observations read as states."""
    if hasattr(env, "num_envs") and hasattr(env, "single_action_space"):
        raise TypeError(
            f"{type(env).__name__} is a vector environment ({env.num_envs} copies stepped at once): "
            "privrl plays one user per episode on one environment; pass gymnasium.make(id), not "
            "gymnasium.make_vec(id, num_envs=...)"
        )


def _check_count(value: Any, name: str) -> int:
    """A size of the feature map (S, A, H): an integer >= 1 by privrl.common.checks.check_pos_int's
    rule (bools, floats, 20.0 too, and strings are refused), raised as the ShapeError of a size;
    returned as a Python int (numpy's fixed-width products of sizes wrap around)."""
    try:
        return check_pos_int(value, name)
    except PrivacyParameterError as e:  # its message: ">= 1", or the range [1, 2^63 - 1] past it
        raise ShapeError(str(e)) from None


def observation_index(space: Any) -> tuple[int, Callable[[Any], int]] | None:
    """The number of states S and the state index of an observation for a gymnasium observation
    space with finitely many observations: Discrete(n, start) (``obs - start``), a Tuple of
    Discrete spaces, a 1-D MultiDiscrete or a 1-D MultiBinary (the mixed-radix index of
    ``obs - start``, the last component fastest: ``numpy.ravel_multi_index``'s order; Blackjack-v1's
    (player sum, dealer card, usable ace) is ``22 * p + 2 * c + u``). None for any other space (Box,
    Dict, nested Tuples ...). An observation outside the space gets index -1 (learn refuses it): a
    component out of its range, a sequence of the wrong length or not a sequence, and a component that
    is not an integer (a float such as 1.7 or 1.0, a str: never truncated onto a state), the rule
    learn applies to a plain Discrete observation, which refuses a bool too; a component of a
    Tuple / MultiDiscrete / MultiBinary observation may be a bool (a MultiBinary observation as a
    bool array: gymnasium's ``contains`` takes it, and it is exactly 0 or 1). Discrete from 0 gives
    ``int`` (the observation is its own index, checked by its user). A Discrete observation may be
    a 0-d integer array, ``np.array(3)``, the integer it holds (the rule of its users too:
    :func:`privrl.common.checks.integer_value`), and so may a component of a Tuple / MultiDiscrete
    observation (gymnasium's ``contains`` takes both)."""
    if _is(space, "Discrete"):
        start, n = int(space.start), int(space.n)
        return n, (lambda obs: _shifted(integer_value(obs), start, n)) if start else int
    if _is(space, "Tuple") and space.spaces and all(_is(x, "Discrete") for x in space.spaces):
        sizes = [int(x.n) for x in space.spaces]
        starts = [int(x.start) for x in space.spaces]
    elif _is(space, "MultiDiscrete") and np.ndim(space.nvec) == 1 and len(space.nvec) > 0:
        sizes = [int(x) for x in space.nvec]
        starts = [int(x) for x in np.broadcast_to(getattr(space, "start", 0), len(sizes))]
    elif _is(space, "MultiBinary") and len(space.shape) == 1 and space.shape[0] > 0:
        sizes, starts = [2] * int(space.shape[0]), [0] * int(space.shape[0])
    else:
        return None
    strides = [math.prod(sizes[i + 1 :]) for i in range(len(sizes))]
    parts = list(zip(starts, strides, sizes, strict=True))

    def index(obs: Any) -> int:
        # a tuple / list (its components are checked below) or a 1-D array of the space's length
        if not isinstance(obs, (tuple, list, np.ndarray)) or (isinstance(obs, np.ndarray) and obs.ndim != 1):
            return -1
        if len(obs) != len(parts):
            return -1
        flat = 0
        for x, (start, stride, size) in zip(obs, parts, strict=True):
            i = _component(x, start, size)
            if i < 0:  # outside the space: never the index of another state
                return -1
            flat += i * stride
        return flat

    return math.prod(sizes), index


def _shifted(i: int | None, start: int, size: int) -> int:
    """``i - start`` for an integer i in start..start+size-1, else -1 (a Discrete(size, start))."""
    return i - start if i is not None and 0 <= i - start < size else -1


def _component(x: Any, start: int, size: int) -> int:
    """``x - start`` for an integer x (a Python or numpy integer or a 0-d integer array, as
    gymnasium's Discrete contains: ``integer_value``; a bool too) in start..start+size-1, else -1."""
    return _shifted(int(x) if isinstance(x, (bool, np.bool_)) else integer_value(x), start, size)


def _is(space: Any, kind: str) -> bool:
    """`space` is a gymnasium space of class `kind` (or a subclass), without importing gymnasium."""
    return any(c.__name__ == kind and "gymnasium" in c.__module__ for c in type(space).__mro__)

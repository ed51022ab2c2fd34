"""An environment whose episodes gymnasium truncates before the learner's horizon H: a TimeLimit
(gymnasium.make's max_episode_steps, or one wrapped by hand around an environment without a spec)
or, behind as_gymnasium (privrl/RiverSwim-v0 ...), the privrl model's own H. learn pads a truncated
episode as if the environment had ended it, so it warns; GymnasiumTask refuses such an H."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("gymnasium")

import gymnasium as gym
from gymnasium.envs.toy_text.frozen_lake import FrozenLakeEnv
from gymnasium.wrappers import TimeLimit

import privrl
from privrl.agents import LSVIUCB
from privrl.common.errors import AssumptionError, AssumptionWarning
from privrl.envs import FeatureMap, RiverSwim, as_gymnasium, from_gymnasium
from privrl.experiment.environments import GymnasiumTask
from privrl.privacy import NonPrivate


def _agent(env, H: int, K: int = 5) -> LSVIUCB:
    return LSVIUCB(FeatureMap.one_hot_for(env, H), NonPrivate(), episodes=K, seed=0)


def test_learn_warns_when_a_privrl_model_behind_as_gymnasium_ends_before_h():
    """as_gymnasium(RiverSwim(H=20)) truncates every episode after its 20 steps: an agent with
    H = 25 sees each of its episodes cut there and padded (every one counted as ended early), which
    learn now says; at H = 20 there is nothing to say and no episode ends early."""
    env = as_gymnasium(RiverSwim(S=4))  # the model's default H = 20: RiverSwim never terminates
    with pytest.warns(AssumptionWarning, match="after 20 steps"):
        res = privrl.learn(_agent(env, 25), env, seed=0)
    assert res.terminated_early == res.episodes  # each one truncated at step 20 < 25
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = privrl.learn(_agent(env, 20), env, seed=0)
    assert res.terminated_early == 0


@pytest.mark.parametrize("by_hand", [False, True])
def test_learn_warns_below_a_time_limit(by_hand: bool):
    """gymnasium.make(..., max_episode_steps=3), or TimeLimit(FrozenLakeEnv(), 3) (no spec to read
    the limit from), with H = 8: warned by learn and by from_gymnasium (whose model has no limit)."""
    if by_hand:
        env = TimeLimit(FrozenLakeEnv(is_slippery=False), 3)
        assert env.spec is None
    else:
        env = gym.make("FrozenLake-v1", is_slippery=False, max_episode_steps=3)
    with pytest.warns(AssumptionWarning, match="after 3 steps"):
        privrl.learn(_agent(env, 8), env, seed=0)
    with pytest.warns(AssumptionWarning, match="after 3 steps"):
        from_gymnasium(env, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = privrl.learn(_agent(env, 3), env, seed=0)
    assert np.all(res.returns == 0.0)  # 3 steps never reach the 4x4 lake's goal (6 moves away)


def test_a_task_refuses_h_beyond_an_own_models_horizon():
    """GymnasiumTask (a model = false env table) on privrl/RiverSwim-v0: H = 25 beyond the model's
    H = 20 is refused, as an H beyond a time limit is (it ran every episode cut at 20 and padded)."""
    with pytest.raises(AssumptionError, match=r"H = 25 exceeds .*RiverSwim-v0's model, H = 20"):
        GymnasiumTask("privrl/RiverSwim-v0", 25, S=4)
    assert GymnasiumTask("privrl/RiverSwim-v0", 20, S=4).H == 20


def test_evaluate_warns_below_a_time_limit_as_learn_does():
    """evaluate pads an episode truncated before its H as learn pads one (reward(0.0) a step), so it
    warns by learn's rule (it was silent): an H, an (H, S) array policy's rows or an agent's H above
    the limit; not at H <= the limit, nor for a callable without H (it runs to the env's own end).
    The warning points at the caller's line."""
    env = gym.make("FrozenLake-v1", is_slippery=False, max_episode_steps=3)
    with pytest.warns(AssumptionWarning, match=r"after 3 steps .* H = 8") as seen:
        privrl.evaluate(lambda s, h: 2, env, episodes=2, seed=0, H=8)
    assert {w.filename for w in seen if w.category is AssumptionWarning} == {__file__}
    with pytest.warns(AssumptionWarning, match="after 3 steps"):
        privrl.evaluate(np.zeros((8, 16), dtype=int), env, episodes=2, seed=0)
    with pytest.warns(AssumptionWarning, match="after 3 steps"):
        privrl.evaluate(_agent(env, 8), env, episodes=2, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        privrl.evaluate(np.zeros((3, 16), dtype=int), env, episodes=2, seed=0)
        privrl.evaluate(lambda s, h: 2, env, episodes=2, seed=0)


class _SelfTruncating(gym.Env):
    """A chain that truncates its own episodes after 3 steps (truncated=True, no TimeLimit and no
    spec for privrl to read): moving right (1) from 0 reaches the rewarding end, 5, only in 5 steps."""

    observation_space = gym.spaces.Discrete(6)
    action_space = gym.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.s = self.t = 0
        return 0, {}

    def step(self, a):
        self.t += 1
        self.s = min(self.s + 1, 5) if a == 1 else 0
        return self.s, float(self.s == 5), self.s == 5, self.t >= 3, {}


def test_learn_and_evaluate_warn_when_the_environment_truncates_itself_before_h():
    """An environment that truncates an episode itself before H (no time limit to read up front)
    had every episode padded as if it had ended, silently: 300 users at H = 8 all cut at step 3
    (terminated_early = 300) and no warning. learn and evaluate (padding to an H) now say so once,
    at the first such episode, pointing at the caller's line; at H = 3 nothing is cut."""
    env = _SelfTruncating()
    with pytest.warns(AssumptionWarning, match=r"truncated .* after 3 steps .* H = 8") as seen:
        res = privrl.learn(_agent(env, 8, K=30), env, seed=0)
    assert res.terminated_early == 30
    said = [w for w in seen if w.category is AssumptionWarning]
    assert len(said) == 1 and said[0].filename == __file__
    with pytest.warns(AssumptionWarning, match=r"truncated .* after 3 steps .* H = 8") as seen:
        privrl.evaluate(np.ones((8, 6), dtype=int), env, episodes=4, seed=0)
    assert {w.filename for w in seen if w.category is AssumptionWarning} == {__file__}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert privrl.learn(_agent(env, 3, K=5), env, seed=0).terminated_early == 0
        privrl.evaluate(np.ones((3, 6), dtype=int), env, episodes=4, seed=0)
        privrl.evaluate(lambda s, h: 1, env, episodes=4, seed=0)  # no H: nothing is padded

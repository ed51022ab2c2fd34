"""privrl.learn and privrl.evaluate when the user's code fails mid-episode: a gymnasium
environment or a reward rescale that hands back something privrl cannot use is refused with a
message naming what was given and where (user k, step h), and the agent is left after the last
whole user, as if the failing user had never come."""

from __future__ import annotations

import math

import numpy as np
import pytest

import privrl
from privrl.agents import LSVIUCB
from privrl.envs import FeatureMap
from privrl.exceptions import NonFiniteError
from privrl.privacy import JointDP

gym = pytest.importorskip("gymnasium")

H = 4


class Chain(gym.Env):
    """Four states in a row, two actions (left / right), reward 1 at the right end; `bad` replaces
    the reward of step `step` of user `user` (0-based)."""

    def __init__(self, bad=..., user=0, step=0):
        self.observation_space = gym.spaces.Discrete(4)
        self.action_space = gym.spaces.Discrete(2)
        self.bad, self.user, self.step_at = bad, user, step
        self.k, self.t, self.s = -1, 0, 0

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.k, self.t = self.k + 1, 0
        self.s = int(self.np_random.integers(0, 2))
        return self.s, {}

    def step(self, a):
        self.s = min(3, self.s + 1) if a == 1 else max(0, self.s - 1)
        r = 1.0 if self.s == 3 else 0.0
        if self.bad is not ... and (self.k, self.t) == (self.user, self.step_at):
            r = self.bad
        self.t += 1
        return self.s, r, False, False, {}


def _agent():
    return LSVIUCB(FeatureMap.one_hot(4, 2, H=H), JointDP(10.0, 1e-5), episodes=30, seed=0)


@pytest.mark.parametrize("bad", ["1.0", None, np.array([1.0]), 1j])
def test_a_reward_that_is_not_a_real_number_is_refused_naming_the_user_and_step(bad):
    """A str reward "1.0" was converted by float() and learned from; None gave float()'s bare
    "argument must be a string or a real number" with no user or step."""
    agent = _agent()
    with pytest.raises(TypeError, match=r"user 3, step 2.*not a real number"):
        privrl.learn(agent, Chain(bad, user=2, step=2), episodes=5, seed=1)
    assert agent.k == 2  # the failing user is not observed
    with pytest.raises(TypeError, match=r"episode 2, step 1.*not a real number"):
        privrl.evaluate(lambda s, h: 1, Chain(bad, user=1, step=1), episodes=3, seed=0, H=H)
    rescaled = lambda r: "0.5" if r == 1.0 else r  # noqa: E731  (a rescale wrong for some rewards only)
    with pytest.raises(TypeError, match=r"reward\(r\) returned '0\.5'.*at user \d+, step \d+"):
        privrl.learn(_agent(), Chain(), episodes=5, seed=1, reward=rescaled)


def test_a_real_reward_of_any_kind_is_learned_as_before():
    plain = privrl.learn(_agent(), Chain(), episodes=6, seed=1)
    for value in (np.float32(1.0), np.array(1.0), 1, True):
        res = privrl.learn(_agent(), Chain(), episodes=6, seed=1, reward=lambda r, v=value: v * r)
        np.testing.assert_array_equal(res.returns, plain.returns)
    with pytest.raises(NonFiniteError, match=r"environment's reward at user 2, step 0 is nan"):
        privrl.learn(_agent(), Chain(math.nan, user=1, step=0), episodes=5, seed=1)

"""An agent built on a gymnasium environment (a newcomer's first try) says what to do instead: the
environment is not a model; LSVI-UCB on its feature map learns from it with privrl.learn. The
message named gymnasium's outer wrapper alone ("got TimeLimit")."""

from __future__ import annotations

import pytest

pytest.importorskip("gymnasium")

import gymnasium as gym

import privrl
from privrl.agents import LSVIUCB, UCRLVTR, LinUCB
from privrl.envs import FeatureMap, from_gymnasium
from privrl.privacy import NonPrivate


@pytest.mark.parametrize("cls", [LSVIUCB, UCRLVTR, LinUCB])
def test_an_agent_on_a_gymnasium_env_points_to_learn(cls):
    """The message names the id and the way that works; following it learns on the environment
    (Blackjack: no table, so no from_gymnasium) and runs on FrozenLake's model."""
    for gym_id, tabular in (("FrozenLake-v1", True), ("Blackjack-v1", False)):
        env = gym.make(gym_id)
        with pytest.raises(TypeError, match=f"{gym_id} is a gymnasium environment, not a model") as info:
            cls(env, NonPrivate(), episodes=5)
        assert "FeatureMap.one_hot_for(env, H)" in str(info.value)
        assert ("from_gymnasium(env, H)" in str(info.value)) == tabular
        agent = LSVIUCB(FeatureMap.one_hot_for(env, 4), NonPrivate(), episodes=5, seed=0)
        assert privrl.learn(agent, env, seed=0, reward=lambda r: (r + 1) / 2).episodes == 5
    lake = from_gymnasium(gym.make("FrozenLake-v1"), 4)
    assert privrl.run(LSVIUCB(lake, NonPrivate(), episodes=5, seed=0), lake, seed=0).regret.shape == (5,)

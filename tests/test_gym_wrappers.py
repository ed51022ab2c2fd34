"""from_gymnasium reads the unwrapped environment's table env.unwrapped.P: a wrapper that changes the
rewards, observations or actions (TransformReward ...) is refused, an unknown one warned of, and
gymnasium's neutral ones (gym.make's, RecordEpisodeStatistics) pass without a word."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("gymnasium")

import gymnasium as gym
from gymnasium.wrappers import RecordEpisodeStatistics, TransformObservation, TransformReward

import privrl
from privrl.common.errors import AssumptionError, AssumptionWarning
from privrl.envs import from_gymnasium

H = 8


def _lake() -> gym.Env:
    return gym.make("FrozenLake-v1", is_slippery=True)


def test_a_reward_wrapper_is_refused_not_read_past():
    """TransformReward(env, r / 2) pays half of what the table says: the Monte-Carlo value of the
    optimal policy on it is half the unwrapped model's exact value, so a model read past the wrapper
    was the wrong environment; it is refused, as is an observation wrapper."""
    plain = from_gymnasium(_lake(), H)
    pi = plain.optimal_policy()
    exact = privrl.evaluate(pi, plain).value
    halved = TransformReward(_lake(), lambda r: 0.5 * r)
    mc = privrl.evaluate(pi, halved, episodes=20_000, seed=0, H=H)
    assert abs(mc.value - 0.5 * exact) < 4 * mc.stderr  # the wrapped environment's value
    assert abs(mc.value - exact) > 4 * mc.stderr  # ... not the model's
    with pytest.raises(AssumptionError, match="wrapped in TransformReward"):
        from_gymnasium(halved, H)
    shifted = TransformObservation(_lake(), lambda o: o, _lake().observation_space)
    with pytest.raises(AssumptionError, match="wrapped in TransformObservation"):
        from_gymnasium(shifted, H)


def test_neutral_wrappers_pass_and_unknown_ones_are_warned_of():
    """gym.make's wrappers and RecordEpisodeStatistics leave the model unchanged, silently; a wrapper
    of the user's own gives an AssumptionWarning naming it."""
    plain = from_gymnasium(_lake(), H)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        recorded = from_gymnasium(RecordEpisodeStatistics(_lake()), H)
    np.testing.assert_array_equal(recorded.P, plain.P)
    np.testing.assert_array_equal(recorded.R, plain.R)

    class Logging(gym.Wrapper):
        pass

    with pytest.warns(AssumptionWarning, match="wrapped in Logging"):
        from_gymnasium(Logging(_lake()), H)

"""privrl.learn's loop (privrl.experiment.episodes, issue 20): beside the environment's own reset and
step, its work per step is inline, so that its cost per user does not grow with the horizon through
Python calls of privrl's own (a call per step was ~0.1-0.3 us each, a third of learn's own share)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import privrl
from privrl.agents import LSVIUCB
from privrl.envs import FeatureMap
from privrl.privacy import NonPrivate

gym = pytest.importorskip("gymnasium")


class Ring:
    """Four states in a ring, two actions (one or two states on), never ending; paid `kind`(1)
    on reaching state 0 (an int like FrozenLake's, or a float)."""

    action_space = gym.spaces.Discrete(2)
    observation_space = gym.spaces.Discrete(4)
    spec = None

    def __init__(self, kind: type) -> None:
        self.kind, self.s = kind, 0

    def reset(self, seed=None, options=None):
        self.s = 0
        return 0, {}

    def step(self, a):
        self.s = (self.s + 1 + int(a)) % 4
        return self.s, self.kind(self.s == 0), False, False, {}


def _privrl_calls(H: int, kind: type, users: int = 6) -> Counter:
    """The calls of privrl's own Python functions during a learn of `users` users of H steps."""
    agent = LSVIUCB(FeatureMap.one_hot(4, 2, H=H), NonPrivate(), episodes=users, seed=0)
    root = str(Path(privrl.__file__).parent)
    calls: Counter = Counter()

    def count(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(root):
            calls[frame.f_code.co_name] += 1

    sys.setprofile(count)
    try:
        res = privrl.learn(agent, Ring(kind), seed=0, progress=False)
    finally:
        sys.setprofile(None)
    assert res.episodes == users and np.all(np.isfinite(res.returns))
    return calls


@pytest.mark.parametrize("kind", [int, float])
def test_learn_makes_no_call_of_its_own_per_step(kind):
    # the same users at H = 4 and H = 16: privrl's Python calls do not depend on the steps (before:
    # env_step, step_reward for an int reward, and state(obs) at each of them)
    short, long = _privrl_calls(4, kind), _privrl_calls(16, kind)
    grew = {name: (short[name], n) for name, n in long.items() if n > short[name]}
    assert not grew, f"privrl calls that grow with H (at H = 4, at H = 16): {grew}"

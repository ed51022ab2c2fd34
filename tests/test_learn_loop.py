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
from privrl.exceptions import AssumptionWarning, SensitivityWarning
from privrl.experiment.steps import SelfLoops
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


def test_the_self_loop_watch_passes_over_a_repeated_episode():
    # FrozenLake without slip under an unchanged policy: every user walks the previous user's path,
    # which can add no state to the watch (before, each user's states were sliced and added again)
    loops = SelfLoops(True)
    path = np.array([0, 4, 8, 9, 13, 14, 15, 15, 15])  # ended at the goal after 6 steps, H = 8
    loops.see(path, 5, True, 8, 0)
    assert loops.acted == {0, 4, 8, 9, 13, 14} and loops.ended == {15}
    loops.acted.clear()  # a repeat that was looked at would fill it again
    loops.see(path.copy(), 5, True, 8, 1)
    assert loops.acted == set() and loops.active
    loops.see(path, 5, False, 8, 2)  # another end (or t, or path): looked at
    assert loops.acted == {0, 4, 8, 9, 13, 14} and loops.active


def test_the_self_loop_watch_still_warns_after_repeats():
    loops = SelfLoops(True)
    ended_at_5 = np.array([0, 1, 5, 5, 5])  # a hole at 5, H = 4
    for k in range(3):
        loops.see(ended_at_5, 1, True, 4, k)
    assert loops.active
    with pytest.warns(AssumptionWarning, match="by user 5, an episode ended at state 5"):
        loops.see(np.array([0, 1, 5, 6, 7]), 3, False, 4, 4)  # a user acts from 5
    assert not loops.active


def test_a_clip_during_learn_is_counted_and_said_at_its_user():
    agent = LSVIUCB(FeatureMap.one_hot(4, 2, H=4), NonPrivate(), episodes=12, seed=0)
    seen = []

    def rescale(r):  # 1.5 (outside [0, 1], clipped to 1) once, in user 5's episode
        seen.append(r)
        return 1.5 if len(seen) == 18 else float(r)

    said = []
    with pytest.warns(SensitivityWarning) as rec:
        privrl.learn(
            agent,
            Ring(int),
            seed=0,
            progress=False,
            reward=rescale,
            callback=lambda k, ret: said.append((k, len(rec), agent.guard.clipped)),
        )
    assert len(rec) == 1 and agent.clip_count == agent.guard.clipped == 1
    assert said[3] == (4, 0, 0) and said[4] == (5, 1, 1) and said[-1] == (12, 1, 1)


class _Spy:
    """An agent's Rust core, its observed rewards kept (a copy of each user's)."""

    def __init__(self, core) -> None:
        self.core, self.rewards = core, []

    def __getattr__(self, name):
        return getattr(self.core, name)

    def observe(self, states, actions, rewards):
        self.rewards.append(rewards.copy())
        return self.core.observe(states, actions, rewards)


def test_the_returns_are_each_users_rewards_sum_across_blocks():
    # 2,100 users: two whole blocks of 1,024 and a part; the sums of rescaled rewards round, so a
    # return summed in another order than each user's own rewards.sum() would differ in its bits
    def learnt(callback):
        agent = LSVIUCB(FeatureMap.one_hot(4, 2, H=7), NonPrivate(), episodes=2100, seed=0)
        spy = agent._core = _Spy(agent._core)
        res = privrl.learn(
            agent, Ring(float), seed=0, progress=False, reward=lambda r: 0.1 + 0.7 * r, callback=callback
        )
        return res.returns, np.array([r.sum() for r in spy.rewards])

    blocks, sums = learnt(None)
    one_by_one, _ = learnt(lambda k, ret: None)  # a callback: each user's return as it comes
    assert (
        blocks.view(np.int64).tolist() == sums.view(np.int64).tolist() == one_by_one.view(np.int64).tolist()
    )
    assert len(set(sums.tolist())) > 1  # users with different returns


def test_learn_sums_the_returns_a_block_of_users_at_a_time():
    # one numpy reduction a user cost ~1 us of learn's own ~8: none is made per user now
    def reductions(users: int) -> int:
        agent = LSVIUCB(FeatureMap.one_hot(4, 2, H=4), NonPrivate(), episodes=users, seed=0)
        root = str(Path(privrl.__file__).parent)
        made = Counter()

        def count(frame, event, arg):
            if event == "c_call" and frame.f_code.co_filename.startswith(root):
                made[getattr(arg, "__name__", "")] += 1

        sys.setprofile(count)
        try:
            privrl.learn(agent, Ring(float), seed=0, progress=False)
        finally:
            sys.setprofile(None)
        return made["reduce"] + made["sum"]

    assert reductions(12) == reductions(6)

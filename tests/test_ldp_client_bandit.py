"""LinUCB's LDP client on a device (docs/privacy.md, "LDP clients"): what building one costs, and
that its table policy is the agent's (rust/agents/linucb/user.rs, rust/agents/linucb/policy.rs)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from privrl.agents import LinUCB
from privrl.envs import ContextualBandit
from privrl.envs.finite import Trajectory
from privrl.privacy import LocalDP

SEED = 3


def _bandit(n=12, p=3, arms=4, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, p))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return ContextualBandit(x, rng.uniform(size=(n, arms)))


@pytest.mark.parametrize("exploration", ["optimism", "sampling"])
@pytest.mark.parametrize("ties", ["random", "lowest"])
def test_client_policy_is_the_agents_policy_when_made(exploration, ties):
    """The client computes its table policy on the device, from its copy of the billboard and the
    draws the agent took for the user (a normal per arm; the tie stream's pick per number of tied
    arms, looked at): every context's arm equals agent.policy() just before ldp_client(), on the
    initial billboard (every arm tied under optimism) and after releases."""
    env = _bandit()
    kw = dict(episodes=30, seed=SEED, schedule=5, exploration=exploration, ties=ties)
    agent = LinUCB(env, LocalDP(2.0, 1e-5), **kw)
    rng = np.random.default_rng(1)
    tied = 0
    for _ in range(30):
        expected = agent.policy()
        client = agent.ldp_client()
        np.testing.assert_array_equal(client.policy, expected)
        np.testing.assert_array_equal(client.policy, expected)  # a look: asked again, the same
        tied += int(agent.release().users == 0)
        s = int(rng.integers(env.S))
        a = int(expected[0, s])
        agent.receive(client.privatize(Trajectory(np.array([s, 0]), np.array([a]), np.array([1.0]))))
    assert tied == 5 and agent.releases == 5


def _build_time(n):
    agent = LinUCB(_bandit(n=n), LocalDP(2.0, 1e-5), episodes=100, seed=SEED)
    times = []
    for _ in range(5):
        t = time.perf_counter()
        agent.ldp_client()
        times.append(time.perf_counter() - t)
    return min(times)


def test_building_a_client_does_not_scale_with_the_table():
    """A device needs only its own arm: building a client copies the billboard (O(arms p^2)), and
    no arm of the table is computed on the server. Before: 25 ms per client on digits (1,797
    contexts), linear in n; here 20 vs 40,000 contexts."""
    small, large = _build_time(20), _build_time(40_000)
    assert large < 10 * small + 1e-3, (small, large)

"""One agent used from two threads at once: a ``privrl.run`` releases the GIL while its block of
users runs in Rust, and a call on the same agent from another thread was PyO3's bare RuntimeError
"Already mutably borrowed" / "Already borrowed". It is privrl's AgentInUseError (a PrivrlError and a
RuntimeError) saying the agent is in use by another thread, and the refused call changes nothing."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import privrl
from privrl.agents import LSVIUCB, UCRLVTR, LinUCB
from privrl.envs import ContextualBandit, RandomLinearMDP, RiverSwimMixture
from privrl.envs.finite import Trajectory
from privrl.exceptions import AgentInUseError, PrivrlError
from privrl.experiment import runner
from privrl.privacy import JointDP


def _bandit() -> ContextualBandit:
    rng = np.random.default_rng(0)
    return ContextualBandit.from_classification(rng.normal(size=(200, 5)), np.arange(200) % 3, seed=0)


# (agent class, environment, users in the one long block: ~0.5 s of Rust on 2 cores)
CASES = {
    "UCRL-VTR": (UCRLVTR, lambda: RiverSwimMixture(S=4, H=5), 30_000),
    "LSVI-UCB": (LSVIUCB, lambda: RandomLinearMDP(seed=0), 3_000),
    "LinUCB": (LinUCB, _bandit, 500_000),
}


def _boards(agent):
    r = agent.release()
    return [np.asarray(x) for x in (r.design, r.inverse, r.weights)] + [agent.k, agent.policy_updates]


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_second_thread_gets_agent_in_use_and_the_agent_is_unharmed(name, monkeypatch, tmp_path):
    cls, make_env, users = CASES[name]
    env = make_env()
    agent, twin = (cls(env, JointDP(1.0, 1e-7), episodes=users + 100, seed=0) for _ in range(2))
    # the whole run in one Rust call: the agent is held from its first user to its last
    monkeypatch.setattr(runner, "_FIRST_BLOCK", users)
    started, out = threading.Event(), {}

    def first_thread():
        started.set()
        out["res"] = privrl.run(agent, env, episodes=users, seed=1)

    t = threading.Thread(target=first_thread)
    t.start()
    started.wait()
    deadline, busy = time.monotonic() + 60, None
    while busy is None and t.is_alive() and time.monotonic() < deadline:
        try:
            _ = agent.k  # a read: harmless whenever it succeeds
        except AgentInUseError as e:
            busy = e
    assert busy is not None, "the run ended before the second thread saw it"
    # at once, while the run's one block holds the agent, calls that would change it
    s = np.zeros(env.H + 1, dtype=np.int64)
    user = Trajectory(s, np.zeros(env.H, dtype=np.int64), np.zeros(env.H))
    calls = {
        "policy": agent.policy,
        "act": lambda: agent.act(0),
        "observe": lambda: agent.observe(user),
        "release": agent.release,
        "save": lambda: agent.save(tmp_path / "agent"),
        "run": lambda: privrl.run(agent, env, episodes=1, seed=3),
    }
    refused = {}
    for what, call in calls.items():
        with pytest.raises(AgentInUseError) as e:
            call()
        refused[what] = e.value
    t.join()
    for e in [busy, *refused.values()]:
        assert isinstance(e, PrivrlError) and isinstance(e, RuntimeError)
        assert "in use by another thread" in str(e) and "not thread-safe" in str(e)
    assert not (tmp_path / "agent").exists()

    # the agent is the one that never saw the other thread: same state, same continuation
    ref = privrl.run(twin, env, episodes=users, seed=1)
    np.testing.assert_array_equal(out["res"].gaps, ref.gaps)
    for a, b in zip(_boards(agent), _boards(twin), strict=True):
        np.testing.assert_array_equal(a, b)
    monkeypatch.setattr(runner, "_FIRST_BLOCK", 16)
    more, more_ref = privrl.run(agent, env, episodes=50, seed=2), privrl.run(twin, env, episodes=50, seed=2)
    np.testing.assert_array_equal(more.gaps, more_ref.gaps)
    np.testing.assert_array_equal(agent.policy(), twin.policy())

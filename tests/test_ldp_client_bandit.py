"""LinUCB's LDP client on a device (docs/privacy.md, "LDP clients"): what building one costs, and
that its table policy is the agent's (rust/agents/linucb/user.rs, rust/agents/linucb/policy.rs)."""

from __future__ import annotations

import gc
import pickle
import time

import numpy as np
import pytest

from privrl.agents import UCRLVTR, LinUCB
from privrl.common.errors import (
    AssumptionError,
    NonFiniteError,
    PrivacyParameterError,
    SensitivityWarning,
    ShapeError,
)
from privrl.envs import ContextualBandit, RiverSwimMixture
from privrl.envs.finite import Trajectory
from privrl.privacy import JointDP, LocalDP, NonPrivate

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


def _live_contexts(env, n, rng):
    """Live users' contexts: table rows, vectors outside the table, and ones the guard projects
    (norm 1.5 to 3)."""
    out = []
    for k in range(n):
        kind = k % 3
        if kind == 0:
            out.append(env.contexts[int(rng.integers(env.S))].copy())
        else:
            v = rng.normal(size=env.p)
            out.append(
                v / np.linalg.norm(v) * (rng.uniform(0.2, 1.0) if kind == 1 else rng.uniform(1.5, 3.0))
            )
    return out


@pytest.mark.parametrize("exploration", ["optimism", "sampling"])
@pytest.mark.parametrize("ties", ["random", "lowest"])
def test_live_client_equals_the_agents_choose_and_update(exploration, ties):
    """Two agents of one seed. The first serves 30 live users with agent.choose(x) and
    agent.update(x, arm, r); the second hands each user a client (the first seeded like the agent,
    each next one continuing the previous one's streams) that picks client.choose(x) and sends
    client.privatize_update(x, arm, r) to receive. Every arm, every billboard (released every 5
    users; the first five users tie every arm under optimism), the sums and the clip counts agree
    bit for bit, for table rows, contexts outside the table and ones the guard projects."""
    env = _bandit()
    kw = dict(episodes=30, seed=SEED, schedule=5, exploration=exploration, ties=ties)
    obs, split = (LinUCB(env, LocalDP(2.0, 1e-5), **kw) for _ in range(2))
    rng = np.random.default_rng(4)
    previous = None
    with pytest.warns(SensitivityWarning):  # the agent's clip warning (the client counts on the device)
        for x in _live_contexts(env, 30, rng):
            r = float(rng.uniform() < 0.5)
            a = obs.choose(x)
            assert obs.choose(x) == a  # a look
            obs.update(x, a, r)
            client = split.ldp_client(seed=SEED if previous is None else None)
            if previous is not None:
                client.take_streams(previous)
            assert client.choose(x) == client.choose(x) == a
            split.receive(client.privatize_update(x, a, r))
            previous = client
            for u, v in zip(obs._core.released(), split._core.released(), strict=True):
                np.testing.assert_array_equal(u, v)
            ro, rs = obs.release(), split.release()
            for u, v in ((ro.design, rs.design), (ro.inverse, rs.inverse), (ro.weights, rs.weights)):
                np.testing.assert_array_equal(u, v)
    assert obs.releases == split.releases == 5
    assert previous.clip_count == obs.clip_count == 10


def test_live_client_refuses_like_update_and_draws_nothing_then():
    """Wrong length, NaN, a table index, an arm out of range, a non-finite reward and (under
    sensitivity="reject") a reward outside [0, 1] are refused with the agent's messages; a refused
    user leaves the client's draws and noise as they were (its next message equals a twin's).
    Under "clip" the reward is clipped and counted on the device. UCRL-VTR's client has no live
    context; JointDP / NonPrivate have no client."""
    env = _bandit()
    agent = LinUCB(env, LocalDP(2.0, 1e-5), episodes=10, seed=SEED, sensitivity="reject")
    client, twin = agent.ldp_client(seed=1), agent.ldp_client(seed=1)
    x = np.array([0.6, 0.0, 0.0])
    for bad, err, match in (
        (np.ones(4) / 2, ShapeError, r"must have shape \(3,\), got \(4,\)"),
        (np.array([np.nan, 0.0, 0.0]), NonFiniteError, "context vector must be finite"),
        (2, ShapeError, "got the index 2 .*privatize"),
    ):
        with pytest.raises(err, match=match):
            client.choose(bad)
        with pytest.raises(err, match=match):
            client.privatize_update(bad, 0, 1.0)
    with pytest.raises(ShapeError, match=r"arm must be an integer in \[0, 4\), got 4"):
        client.privatize_update(x, 4, 1.0)
    with pytest.raises(NonFiniteError, match="reward must be finite"):
        client.privatize_update(x, 1, float("nan"))
    with pytest.raises(AssumptionError, match=r"outside the sensitivity bound .*y in \[2, 2\]"):
        client.privatize_update(x, 1, 2.0)
    with pytest.raises(AssumptionError, match=r"max \|\|x\|\| = 1.5"):
        client.privatize_update(np.array([1.5, 0.0, 0.0]), 1, 1.0)
    assert client.clip_count == 0
    assert client.choose(x) == twin.choose(x)
    m, t = client.privatize_update(x, 1, 1.0), twin.privatize_update(x, 1, 1.0)
    np.testing.assert_array_equal(m.grams, t.grams)
    np.testing.assert_array_equal(m.targets, t.targets)
    agent.receive(m)
    clipping = LinUCB(env, LocalDP(2.0, 1e-5), episodes=10, seed=SEED).ldp_client()
    clipping.privatize_update(np.array([1.5, 0.0, 0.0]), 1, 2.0)
    assert clipping.clip_count == 2
    vtr = UCRLVTR(RiverSwimMixture(S=5, H=4), LocalDP(2.0, 1e-5), episodes=5, seed=SEED).ldp_client()
    with pytest.raises(TypeError, match="UCRL-VTR user has no context vector"):
        vtr.choose(x)
    for privacy in (JointDP(1.0, 1e-5), NonPrivate()):
        with pytest.raises(PrivacyParameterError, match="user side of LocalDP"):
            LinUCB(env, privacy, episodes=10, seed=SEED).ldp_client()


def test_a_live_client_takes_a_0d_arm_and_reward_as_the_agent_does():
    """agent.update(x, np.array(1), np.array(0.5)) is taken (a gymnasium Discrete's action);
    client.privatize_update, which mirrors it, refused them ("arm must be an integer in [0, 4),
    got array(1)"; the reward "must be a real number"). The message is the plain values' own."""
    agent = LinUCB(_bandit(), LocalDP(2.0, 1e-5), episodes=10, seed=SEED)
    client, twin = agent.ldp_client(seed=1), agent.ldp_client(seed=1)
    x = np.array([0.6, 0.0, 0.0])
    m, t = client.privatize_update(x, np.array(1), np.array(0.5)), twin.privatize_update(x, 1, 0.5)
    np.testing.assert_array_equal(m.grams, t.grams)
    np.testing.assert_array_equal(m.targets, t.targets)
    for bad in (np.array([1]), np.array(1.0), True):
        with pytest.raises(ShapeError, match="arm must be an integer"):
            client.privatize_update(x, bad, 0.5)


def test_a_shipped_live_client_keys_on_the_device():
    """A pickled unkeyed client carries no key; its first choose keys its streams from OS entropy
    (two devices draw apart under sampling), and its message enters the agent."""
    env = _bandit()
    agent = LinUCB(env, LocalDP(2.0, 1e-5), episodes=10, seed=SEED, exploration="sampling")
    blob = pickle.dumps(agent.ldp_client())
    a, b = pickle.loads(blob), pickle.loads(blob)
    assert not a.keyed
    x = np.array([0.3, -0.2, 0.5])
    arms_a = [a.choose(x)]
    assert a.keyed
    ma, mb = a.privatize_update(x, arms_a[0], 1.0), b.privatize_update(x, 0, 1.0)
    assert not np.array_equal(ma.grams, mb.grams)
    agent.receive(ma)
    assert agent.k == 1


def test_the_table_policy_is_computed_once_on_the_device():
    """client.policy is every table context's arm, computed on the device (O(n A p^2)); it cannot
    change (the client's billboard and draws are fixed), so a second look reuses it and a caller's
    edit of the returned array does not reach the client. Before: 40,000 contexts computed anew at
    every look. Counted, not timed (the timed version, second look under 1/5 of the first, raced a
    loaded machine): the device's policy() runs at the first look only."""
    agent = LinUCB(_bandit(n=40_000), LocalDP(2.0, 1e-5), episodes=10, seed=SEED)
    client = agent.ldp_client()
    core, calls = client._core, []

    class Counting:
        def __getattr__(self, name: str) -> object:
            return getattr(core, name)

        def policy(self) -> np.ndarray:
            calls.append(1)
            return core.policy()

    client._core = Counting()
    first = client.policy
    again = client.policy
    assert len(calls) == 1
    np.testing.assert_array_equal(first, again)
    first[0, 0] = -1
    assert client.policy[0, 0] >= 0


def test_a_pickled_client_names_the_public_table_instead_of_carrying_it():
    """A LinUCB client pickled for a device carried the whole context table (1.2 MB on digits, of
    which 0.92 MB the table; here 5,000 x 8 floats, 320 kB, beside a 3 x 8 x 8 billboard): its
    table users (policy, privatize(trajectory)) index the env's public table, which the device
    holds anyway to sample a user, so the pickle names it by digest and the restored client reads
    it from a live bandit of that digest. Every arm and every message equals the unpickled
    client's; with no such bandit alive the table users are refused (live users need no table)
    until one is built."""
    rng = np.random.default_rng(77)
    x = rng.normal(size=(5000, 8))
    x /= np.linalg.norm(x, axis=1, keepdims=True) / rng.uniform(0.2, 1.0, size=(5000, 1))
    means = rng.uniform(size=(5000, 3))
    env = ContextualBandit(x, means)
    agent = LinUCB(env, LocalDP(2.0, 1e-5), episodes=20, seed=SEED, schedule=5)
    client = agent.ldp_client(seed=1)
    blob = pickle.dumps(client)
    assert len(blob) < env.contexts.nbytes / 10, len(blob)
    restored = pickle.loads(blob)
    np.testing.assert_array_equal(restored.policy, client.policy)
    traj = Trajectory(np.array([4321, 0]), np.array([2]), np.array([1.0]))
    m, t = client.privatize(traj), restored.privatize(traj)
    np.testing.assert_array_equal(m.grams, t.grams)
    np.testing.assert_array_equal(m.targets, t.targets)
    agent.receive(t)
    second = agent.ldp_client(seed=2)
    blob = pickle.dumps(second)
    want = second.policy
    # a device with no bandit of that table: refused in words; a live user is served
    del agent, client, restored, second, env
    gc.collect()
    device = pickle.loads(blob)
    with pytest.raises(AssumptionError, match="no ContextualBandit holds its context table"):
        _ = device.policy
    with pytest.raises(AssumptionError, match="no ContextualBandit holds its context table"):
        device.privatize(traj)
    device.privatize_update(x[0] * 0.5, 1, 0.0)
    same = ContextualBandit(x, means)  # the device builds (or loads) the public bandit
    np.testing.assert_array_equal(device.policy, want)
    assert same.S == 5000

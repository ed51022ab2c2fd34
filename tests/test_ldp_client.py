"""The public LDP client / server split (agent.ldp_client / client.privatize / agent.receive): the
user side runs apart from the server (a device), on the agent's own Rust code, with its own noise;
the server takes messages at a checked edge (privrl.agents.common.ldp)."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import numpy as np
import pytest

from privrl.agents import LSVIUCB, UCRLVTR, LdpClient, LdpMessage, LinUCB, UCRLVTRPlus
from privrl.common.checks import seed_bytes
from privrl.common.errors import AssumptionError, NonFiniteError, PrivacyParameterError, ShapeError
from privrl.envs import ContextualBandit, RiverSwimMixture
from privrl.envs.features import FeatureMap
from privrl.envs.finite import Trajectory
from privrl.envs.mixture import LinearMixtureMDP
from privrl.privacy import JointDP, LocalDP, NonPrivate

SEED = 3
VTRS = [UCRLVTR, UCRLVTRPlus]


def _env():
    return RiverSwimMixture(S=5, H=4)


def _ldp(calibration="adaptive"):
    return LocalDP(2.0, 1e-5, calibration=calibration)


def _releases(agent):
    """Every regression's billboard (design, inverse, weights)."""
    boards = [agent.release()] + ([agent.release2()] if isinstance(agent, UCRLVTRPlus) else [])
    return [(b.design, b.inverse, b.weights) for b in boards]


def _equal(ra, rb):
    """Two lists of billboards, bit for bit."""
    pairs = [(x, y) for a, b in zip(ra, rb, strict=True) for x, y in zip(a, b, strict=True)]
    return all(np.array_equal(x, y) for x, y in pairs)


def _same(a, b):
    return _equal(_releases(a), _releases(b))


@pytest.mark.parametrize("cls", VTRS)
@pytest.mark.parametrize("calibration", ["paper", "practical", "adaptive"])
@pytest.mark.parametrize("exploration", ["optimism", "sampling"])
def test_receive_of_privatize_equals_observe(cls, calibration, exploration):
    """Two agents of one seed: the first observes 25 users; the second hands each user a client
    (the first seeded like its intake, each next one continuing the previous one's streams, as the
    intake serves every user in turn) and receives its message. Every billboard, every policy and
    every message's release index agree bit for bit."""
    env = _env()
    obs = cls(env, _ldp(calibration), episodes=25, seed=SEED, exploration=exploration)
    split = cls(env, _ldp(calibration), episodes=25, seed=SEED, exploration=exploration)
    rng_a, rng_b = np.random.default_rng(7), np.random.default_rng(7)
    previous = None
    for k in range(25):
        pi = obs.policy()
        client = split.ldp_client(seed=SEED if previous is None else None)
        if previous is not None:
            client.take_streams(previous)
        np.testing.assert_array_equal(client.policy, pi)
        np.testing.assert_array_equal(client.values, obs.values())
        obs.observe(env.sample_episode(pi, rng_a))
        message = client.privatize(env.sample_episode(client.policy, rng_b))
        assert message.release == k
        split.receive(message)
        assert _same(obs, split), f"user {k + 1}"
        previous = client
    assert split.k == obs.k == 25


def test_the_first_user_of_a_fresh_agent_needs_only_the_seed():
    """agent.ldp_client(seed=s) on a fresh agent built with seed s: the same message as the
    agent's own intake makes (its randomizer keys: the seed's noise child, 2H per regression,
    the first two of regression i's block, tests/test_ldp_separation.py)."""
    env = _env()
    obs, split = (UCRLVTRPlus(env, _ldp("paper"), episodes=5, seed=SEED) for _ in range(2))
    traj = env.sample_episode(obs.policy(), np.random.default_rng(1))
    obs.observe(traj)
    split.receive(split.ldp_client(seed=SEED).privatize(traj))
    assert _same(obs, split)
    # the key derivation, spelt out
    H = split.H
    noise = [seed_bytes(s) for s in np.random.SeedSequence(SEED).spawn(3)[1].spawn(4 * H)]
    raw = split.ldp_client()
    raw._core.key([noise[0], noise[1], noise[2 * H], noise[2 * H + 1]])
    seeded = split.ldp_client(seed=SEED)
    traj = env.sample_episode(raw.policy, np.random.default_rng(2))
    a, b = raw.privatize(traj), seeded.privatize(traj)
    np.testing.assert_array_equal(a.grams, b.grams)
    np.testing.assert_array_equal(a.targets, b.targets)


@pytest.mark.parametrize("cls", VTRS)
def test_unseeded_clients_draw_their_own_noise(cls):
    """seed=None: each client's noise comes from OS entropy (keyed at its first privatize, on the
    device): two clients of one billboard differ on one trajectory; a client shipped unkeyed
    carries no key."""
    env = _env()
    agent = cls(env, _ldp(), episodes=5, seed=SEED)
    traj = env.sample_episode(agent.policy(), np.random.default_rng(1))
    a, b = agent.ldp_client(), agent.ldp_client()
    assert not a.keyed
    ma, mb = a.privatize(traj), b.privatize(traj)
    assert a.keyed and ma.release == mb.release == 0
    assert not np.array_equal(ma.grams, mb.grams)
    assert not np.array_equal(ma.targets, mb.targets)
    # a second message of one client draws fresh noise too
    assert not np.array_equal(a.privatize(traj).grams, ma.grams)


@pytest.mark.parametrize("cls", VTRS)
def test_client_pickles_and_holds_no_server_state(cls):
    """The client goes to a device: it pickles (and privatizes alike after the trip), and holds
    none of the agent's seeds (the intake's, the other noise streams', ties, exploration) and none
    of the server's sums."""
    env = _env()
    agent = cls(env, _ldp("paper"), episodes=30, seed=SEED, exploration="sampling")
    rng = np.random.default_rng(1)
    for _ in range(10):
        agent.observe(env.sample_episode(agent.policy(), rng))
    root = np.random.SeedSequence(SEED).spawn(3)
    n = 2 if cls is UCRLVTRPlus else 1
    every_seed = [seed_bytes(s) for s in root[1].spawn(2 * agent.H * n)]
    every_seed += [seed_bytes(root[0]), seed_bytes(root[2])]
    sums = []
    for i in range(n):
        gram, target = agent._core.sums(i)
        sums += [gram.tobytes(), target.tobytes()]
        sums += [g.tobytes() for g in gram] + [t.tobytes() for t in target]
    intake = [agent._core.intake_state(i) for i in range(n)]
    client = agent.ldp_client()
    blob = pickle.dumps(client)
    assert not any(s in blob for s in every_seed), "the client holds an agent's seed"
    assert not any(s in blob for s in sums), "the client holds the server's sums"
    assert not any(state in blob for state in intake)
    np.testing.assert_array_equal(client.policy, agent.policy())
    # after the trip, the same messages from the same key
    seeded = agent.ldp_client(seed=11)
    shipped = pickle.loads(pickle.dumps(seeded))
    traj = env.sample_episode(seeded.policy, rng)
    a, b = seeded.privatize(traj), shipped.privatize(traj)
    np.testing.assert_array_equal(a.grams, b.grams)
    assert a == dataclasses.replace(b, grams=a.grams, targets=a.targets)
    agent.receive(b)
    assert agent.k == 11


def test_a_message_on_an_earlier_billboard_enters_the_next_release():
    """Two clients made on billboard 0; the first's message moves the server to billboard 1; the
    second's (built on billboard 0) is accepted and enters release 2, as it would through observe
    in that order (the statistic is unbiased for any V fixed before the user's transitions)."""
    env = _env()
    agent = UCRLVTR(env, _ldp("paper"), episodes=5, seed=SEED)
    first, second = agent.ldp_client(seed=1), agent.ldp_client(seed=2)
    rng = np.random.default_rng(1)
    m1 = first.privatize(env.sample_episode(first.policy, rng))
    m2 = second.privatize(env.sample_episode(second.policy, rng))
    agent.receive(m1)
    gram1, _ = agent._core.sums(0)
    agent.receive(m2)
    gram2, target2 = agent._core.sums(0)
    assert (m2.release, agent.k, agent.release().users) == (0, 2, 2)
    np.testing.assert_array_equal(gram2, gram1 + m2.grams[0])
    np.testing.assert_array_equal(target2, m1.targets[0] + m2.targets[0])
    # a billboard the agent never released is refused
    with pytest.raises(AssumptionError, match="released only billboard 2"):
        agent.receive(dataclasses.replace(m2, release=3))


@pytest.mark.parametrize("privacy", [JointDP(1.0, 1e-5), NonPrivate()])
@pytest.mark.parametrize("cls", VTRS)
def test_no_client_without_local_dp(cls, privacy):
    agent = cls(_env(), privacy, episodes=5, seed=SEED)
    with pytest.raises(PrivacyParameterError, match="user side of LocalDP"):
        agent.ldp_client()
    with pytest.raises(PrivacyParameterError, match="not LocalDP"):
        H, d = agent.H, agent.d
        agent.receive(LdpMessage(agent.name, 0, np.zeros((1, H, d, d)), np.zeros((1, H, d)), "x"))


def test_lsvi_ucb_has_no_local_dp_hence_no_client():
    """LSVI-UCB refuses LocalDP (no LDP algorithm for linear MDPs in the paper): no client."""
    fm = FeatureMap.one_hot(4, 2, 3)
    with pytest.raises(PrivacyParameterError, match="LocalDP"):
        LSVIUCB(fm, _ldp(), episodes=5, seed=SEED)
    agent = LSVIUCB(fm, JointDP(1.0, 1e-5), episodes=5, seed=SEED)
    with pytest.raises(PrivacyParameterError, match="user side of LocalDP"):
        agent.ldp_client()


def test_receive_refuses_what_is_not_a_message_of_this_agent():
    env = _env()
    agent, plus = UCRLVTR(env, _ldp(), episodes=5, seed=SEED), UCRLVTRPlus(env, _ldp(), episodes=5, seed=SEED)
    good = agent.ldp_client(seed=1).privatize(env.sample_episode(agent.policy(), np.random.default_rng(1)))
    other = plus.ldp_client(seed=1).privatize(env.sample_episode(plus.policy(), np.random.default_rng(1)))
    before = _releases(agent)
    with pytest.raises(AssumptionError, match="'UCRL-VTR\\+' client cannot enter a UCRL-VTR agent"):
        agent.receive(other)
    with pytest.raises(ShapeError, match=rf"grams must have shape \(1, 4, {agent.d}, {agent.d}\)"):
        agent.receive(dataclasses.replace(good, grams=good.grams[:, :3]))
    with pytest.raises(ShapeError, match="targets must have shape"):
        agent.receive(dataclasses.replace(good, targets=good.targets[..., :-1]))
    bad = good.grams.copy()
    bad[0, 1, 2, 1] = np.nan
    with pytest.raises(NonFiniteError, match="grams contain NaN"):
        agent.receive(dataclasses.replace(good, grams=bad))
    with pytest.raises(NonFiniteError, match="targets contain NaN"):
        agent.receive(dataclasses.replace(good, targets=np.full_like(good.targets, np.inf)))
    with pytest.raises(TypeError, match="float64"):
        agent.receive(dataclasses.replace(good, targets=good.targets.astype(np.float32)))
    for release in (-1, True, 0.0):
        with pytest.raises(ShapeError, match="release must be an int"):
            agent.receive(dataclasses.replace(good, release=release))
    with pytest.raises(TypeError, match="takes an LdpMessage"):
        agent.receive((good.grams, good.targets))
    assert agent.k == 0 and _equal(before, _releases(agent))
    agent.receive(good)
    assert agent.k == 1


def test_client_checks_the_trajectory_and_guards_like_observe():
    env = _env()
    agent = UCRLVTR(env, _ldp(), episodes=5, seed=SEED, sensitivity="reject")
    client = agent.ldp_client(seed=1)
    assert isinstance(client, LdpClient) and client.values.shape == (agent.H + 1, agent.S)
    traj = env.sample_episode(client.policy, np.random.default_rng(1))
    with pytest.raises(ShapeError, match="states must lie in"):
        client.privatize(dataclasses.replace(traj, states=traj.states + env.S))
    with pytest.raises(TypeError, match=r"privatize\(\) takes a privrl Trajectory"):
        client.privatize((traj.states, traj.actions))
    with pytest.raises(TypeError, match="another UCRL-VTR LdpClient"):
        client.take_streams(object())
    assert client.clip_count == 0


# ---------------------------------------------------------------- LinUCB


def _bandit():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(12, 3))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return ContextualBandit(x, rng.uniform(size=(12, 4)))


@pytest.mark.parametrize("exploration", ["optimism", "sampling"])
def test_linucb_receive_of_privatize_equals_observe(exploration):
    """LinUCB LDP (every arm's block noised by the user): for one sequence of (context, arm,
    reward), the server's sums and every billboard (released every 5 users) agree bit for bit
    between observe and receive(client.privatize), the client chain seeded like the intake.
    (The users' arms are peeked per context on the billboard; the client path takes one user's
    exploration draws when the client is made, since the server never learns the context.)"""
    env = _bandit()
    kw = dict(episodes=30, seed=SEED, schedule=5, exploration=exploration)
    obs, split = (LinUCB(env, _ldp(), **kw) for _ in range(2))
    rng = np.random.default_rng(3)
    previous = None
    for k in range(30):
        s, a = int(rng.integers(env.S)), int(rng.integers(env.A))
        traj = Trajectory(np.array([s, 0]), np.array([a]), np.array([float(rng.uniform() < 0.5)]))
        client = split.ldp_client(seed=SEED if previous is None else None)
        if previous is not None:
            client.take_streams(previous)
        assert client.policy.shape == (1, env.S) and client.release == k
        obs.observe(traj)
        split.receive(client.privatize(traj))
        previous = client
        for x, y in zip(obs._core.released(), split._core.released(), strict=True):
            np.testing.assert_array_equal(x, y)
        ro, rs = obs.release(), split.release()
        assert ro.users == rs.users
        for x, y in ((ro.design, rs.design), (ro.inverse, rs.inverse), (ro.weights, rs.weights)):
            np.testing.assert_array_equal(x, y)
    assert obs.releases == split.releases == 5


def test_linucb_client_is_its_own_and_checked():
    env = _bandit()
    agent = LinUCB(env, _ldp(), episodes=30, seed=SEED, schedule=5)
    traj = Trajectory(np.array([2, 0]), np.array([1]), np.array([1.0]))
    a, b = agent.ldp_client(), agent.ldp_client()
    ma, mb = a.privatize(traj), b.privatize(traj)
    assert ma.grams.shape == (4, 3, 3) and ma.targets.shape == (4, 3) and ma.agent == "LinUCB"
    assert not np.array_equal(ma.grams, mb.grams)
    # no seed of the agent, no server sum in a shipped client
    root = np.random.SeedSequence(SEED).spawn(3)
    seeds = [seed_bytes(s) for s in root[1].spawn(2)] + [seed_bytes(root[0]), seed_bytes(root[2])]
    agent.receive(ma)
    gram, target = agent._core.released()
    blob = pickle.dumps(agent.ldp_client())
    server = [gram.tobytes(), target.tobytes(), *(g.tobytes() for g in gram)]
    assert not any(x in blob for x in seeds + server)
    shipped = pickle.loads(pickle.dumps(agent.ldp_client(seed=5)))
    agent.receive(shipped.privatize(traj))
    assert agent.k == 2
    with pytest.raises(ShapeError, match=r"grams must have shape \(4, 3, 3\)"):
        agent.receive(dataclasses.replace(mb, grams=mb.grams[:2]))
    with pytest.raises(NonFiniteError, match="targets contain NaN"):
        agent.receive(dataclasses.replace(mb, targets=np.full_like(mb.targets, np.nan)))
    vtr = UCRLVTR(_env(), _ldp(), episodes=5, seed=SEED)
    with pytest.raises(AssumptionError, match="'LinUCB' client cannot enter a UCRL-VTR agent"):
        vtr.receive(mb)
    with pytest.raises(ShapeError, match="actions must lie in"):
        a.privatize(Trajectory(np.array([2, 0]), np.array([4]), np.array([1.0])))
    with pytest.raises(AttributeError, match="a LinUCB user plans no values"):
        a.values  # noqa: B018
    agent.receive(mb)  # built on billboard 0, the server at 2: accepted
    assert agent.k == 3
    for privacy in (JointDP(1.0, 1e-5), NonPrivate()):
        with pytest.raises(PrivacyParameterError, match="user side of LocalDP"):
            LinUCB(env, privacy, episodes=10, seed=SEED).ldp_client()


def test_streams_taken_are_never_drawn_twice():
    """take_streams moves the streams: the giver's next privatize keys fresh OS-entropy streams,
    never the taken ones (whose next draws are the taker's)."""
    env = _env()
    agent = UCRLVTR(env, _ldp(), episodes=5, seed=SEED)
    giver, twin, taker = agent.ldp_client(seed=1), agent.ldp_client(seed=1), agent.ldp_client()
    traj = env.sample_episode(giver.policy, np.random.default_rng(0))
    taker.take_streams(giver)
    assert taker.keyed and not giver.keyed
    expected = twin.privatize(traj)
    np.testing.assert_array_equal(taker.privatize(traj).grams, expected.grams)
    assert not np.array_equal(giver.privatize(traj).grams, expected.grams)
    with pytest.raises(ValueError, match="keyed client"):
        agent.ldp_client().take_streams(agent.ldp_client())


@pytest.mark.parametrize("cls", VTRS)
def test_a_server_that_never_planned_releases_alike(cls):
    """A copy of the server made before any user (it never plans: its clients come from the
    original) receives the original's messages: its billboards equal the original's (under the
    adaptive rule its statistical std reads the spread planning sets; UCRL-VTR+'s first
    regression released another design before)."""
    env = _env()
    agent = cls(env, _ldp(), episodes=30, seed=SEED)
    copy_ = copy.copy(agent)
    rng = np.random.default_rng(0)
    for k in range(20):
        client = agent.ldp_client(seed=k)
        message = client.privatize(env.sample_episode(client.policy, rng))
        agent.receive(message)
        copy_.receive(message)
    assert _same(agent, copy_)


def test_receive_refuses_another_agents_message():
    """A message of an agent of the same kind and shapes but another calibration (epsilon) or
    environment is refused by its identity; a copy of the agent (a restored server) accepts it."""
    env = _env()
    agent = UCRLVTR(env, _ldp(), episodes=10, seed=SEED)
    client = agent.ldp_client(seed=1)
    message = client.privatize(env.sample_episode(client.policy, np.random.default_rng(0)))
    other_eps = UCRLVTR(env, LocalDP(4.0, 1e-5), episodes=10, seed=SEED)
    # the same model but for its rewards: same kind and shapes, another environment
    moved = LinearMixtureMDP(env.features, env.weights, env.R * 0.5, env.init_dist, env.C_w)
    other_env = UCRLVTR(moved, _ldp(), episodes=10, seed=SEED)
    for other in (other_eps, other_env):
        with pytest.raises(AssumptionError, match="built by another UCRL-VTR agent"):
            other.receive(message)
        assert other.k == 0
    restored = pickle.loads(pickle.dumps(agent))
    restored.receive(message)
    assert restored.k == 1 and client.identity == message.identity


_RUN = """
import hashlib, numpy as np
from privrl.agents import UCRLVTR
from privrl.envs import RiverSwimMixture
from privrl.privacy import LocalDP
env = RiverSwimMixture(S=5, H=4)
agent = UCRLVTR(env, LocalDP(2.0, 1e-5), episodes=5, seed=3)
client = agent.ldp_client({seed})
m = client.privatize(env.sample_episode(client.policy, np.random.default_rng(0)))
print(hashlib.sha256(m.grams.tobytes() + m.targets.tobytes()).hexdigest())
"""


def test_unseeded_client_differs_run_to_run():
    """Two runs of one script (the agent seeded alike, the same trajectory): an unseeded client's
    messages differ, a seeded one's repeat."""
    import subprocess
    import sys

    def run(seed):
        out = subprocess.run([sys.executable, "-c", _RUN.format(seed=seed)], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout.strip()

    assert run("") != run("")
    assert run("seed=7") == run("seed=7")


@pytest.mark.parametrize("cls", VTRS)
def test_the_same_message_received_twice_is_refused(cls):
    """A message is one user's one contribution (its statistics, its fresh noise, one of the K
    users). The same LdpMessage object handed to receive twice was added twice (k 1 -> 2, the sums
    moved again). Now refused (AssumptionError) and nothing moves; another agent (a copy, a restored
    save) still takes it, as does a new message of equal content (the server cannot tell a copy
    from another user: deduplicating re-sent copies is the transport's job, docs/privacy.md)."""
    env = _env()
    agent = cls(env, _ldp(), episodes=10, seed=SEED)
    client = agent.ldp_client(seed=1)
    message = client.privatize(env.sample_episode(client.policy, np.random.default_rng(0)))
    twin = copy.copy(agent)
    agent.receive(message)
    before = _releases(agent)
    with pytest.raises(AssumptionError, match="already received this message"):
        agent.receive(message)
    assert agent.k == 1 and _equal(before, _releases(agent))
    twin.receive(message)
    assert twin.k == 1 and _same(agent, twin)
    agent.receive(pickle.loads(pickle.dumps(message)))  # another object: taken
    assert agent.k == 2

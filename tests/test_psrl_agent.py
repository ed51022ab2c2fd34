"""The Rust PSRL core (privrl._core.PsrlAgent, work in progress) against its numpy oracle
privrl.agents.psrl.reference, draw for draw: the reference replays the agent's own recorded draws."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

import privrl
from privrl import _core
from privrl.agents.psrl.agent import PSRL
from privrl.agents.psrl.calibration import calibrate_psrl
from privrl.agents.psrl.formulas import psrl_batch_bounds, psrl_prior, psrl_reward_prior
from privrl.agents.psrl.reference import (
    Billboard,
    Replay,
    capped_increment,
    policy_values,
    simplex_project,
    user_policy,
)
from privrl.common.errors import AssumptionError, PrivacyParameterError, SensitivityWarning
from privrl.envs.features import FeatureMap
from privrl.envs.finite import Trajectory
from privrl.privacy import JointDP, LocalDP, NonPrivate
from test_psrl_reference import frozen_lake_4x4_slippery


def _random_mdp(S, A, seed):
    g = np.random.default_rng(seed)
    P = g.dirichlet(np.full(S, 0.3), size=(S, A))
    R = g.random((S, A, S)) * (g.random((S, A, S)) < 0.3)
    return P, R


def _run_agent(P, R, H, K, B, sigma, m, seed, sampler="float"):
    """K users of the Rust agent on (P, R) from state 0, recording its draws; returns the agent,
    the users' policies and trajectories (s, a, r, s')."""
    S, A, _ = P.shape
    agent = _core.PsrlAgent(
        n_states=S,
        n_actions=A,
        horizon=H,
        episodes=K,
        m=m,
        sigma=sigma,
        sampler=sampler,
        bounds=[int(b) for b in psrl_batch_bounds(K, B)],
        reject=True,
        noise_seed=bytes([seed]) * 32,
        exploration_seed=bytes([seed + 1]) * 32,
        alpha0=psrl_prior(S),  # the agent's prior (the reference's default)
    )
    agent.set_record(True)
    env = np.random.default_rng(seed)
    pis, trajs = [], []
    for _ in range(K):
        pi = agent.policy()
        s, states, actions, rewards = 0, [0], [], []
        for h in range(H):
            a = int(pi[h, s])
            s2 = int(env.choice(S, p=P[s, a]))
            states.append(s2)
            actions.append(a)
            rewards.append(R[s, a, s2])
            s = s2
        agent.observe(np.array(states), np.array(actions), np.array(rewards))
        pis.append(pi)
        trajs.append((states[:-1], actions, rewards, states[1:]))
    return agent, np.stack(pis), trajs


def _replay(agent, pis, trajs, S, A, H, K, B, sigma, m):
    """The reference fed the agent's users and recorded draws: every policy equal; the billboard
    (float: two normal draws per release; discrete: one draw of S A S + S A lattice integers)."""
    noise_log, explore_log = agent.draw_record()
    noise, rng = Replay(noise_log), Replay(explore_log)
    board = Billboard(S, A, sigma, agent.grid_bits)
    bounds = psrl_batch_bounds(K, B)
    for j in range(B):
        k0, k1 = int(bounds[j]), int(bounds[j + 1])
        for k in range(k0, k1):
            # policies equal: Q ties (within reference.TIE) go to the same recorded uniform
            np.testing.assert_array_equal(user_policy(board, H, rng), pis[k], err_msg=f"user {k}")
        if j < B - 1:
            batch = np.array([trajs[k] for k in range(k0, k1)], float).transpose(1, 0, 2)
            board.publish(*capped_increment(*batch, S, A, m), noise)
    draws = {"float": 2, "discrete": 1}[agent.sampler]
    assert noise.i == len(noise_log) == draws * (B - 1) and rng.i == len(explore_log)
    return board


@pytest.mark.parametrize("sampler", ["float", "discrete"])
def test_the_reference_replays_the_agent_on_slippery_frozen_lake(sampler):
    """gymnasium's table (H 20, sigma of JDP eps 10), 300 users in 4 batches: 6,000 (h, s) entries
    of policy equal and the billboard bit for bit here (compared to rtol 1e-9), both samplers."""
    P, R = frozen_lake_4x4_slippery()
    H, K, B = 20, 300, 4
    sigma = calibrate_psrl("jdp", 10.0, 1e-5, 16, 4, H, K, sampler=sampler).sigma
    agent, pis, trajs = _run_agent(P, R, H, K, B, sigma, 1, seed=11, sampler=sampler)
    board = _replay(agent, pis, trajs, 16, 4, H, K, B, sigma, 1)
    N, Rr, _ = agent.billboard()
    np.testing.assert_allclose(N, board.N, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(Rr, board.R, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(
    "S, A, H, K, B, sigma, m, sampler",
    [
        (5, 3, 6, 40, 4, 2.0, 1, "float"),
        (5, 3, 6, 40, 5, 0.7, 2, "float"),
        (4, 2, 5, 12, 12, 0.0, 1, "float"),
        (5, 3, 6, 40, 4, 2.0, 1, "discrete"),
        (5, 3, 6, 40, 5, 0.7, 2, "discrete"),
        (4, 2, 5, 12, 12, 0.3, 1, "discrete"),
    ],
)
def test_the_reference_replays_the_agents_draws_to_the_same_release_and_policies(
    S, A, H, K, B, sigma, m, sampler
):
    P, R = _random_mdp(S, A, seed=S + K)
    agent, pis, trajs = _run_agent(P, R, H, K, B, sigma, m, seed=3, sampler=sampler)
    board = _replay(agent, pis, trajs, S, A, H, K, B, sigma, m)
    N, Rr, j = agent.billboard()
    assert j == B - 1 == board.j
    np.testing.assert_allclose(N, board.N, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(Rr, board.R, rtol=1e-9, atol=1e-12)
    assert agent.variance == pytest.approx(board.var, rel=1e-15)


def test_a_changed_count_is_named_by_the_replay():
    """The comparison has teeth: one count more in the reference's release shows as the first
    gamma draw whose shape parameters differ."""
    S, A, H, K, B = 4, 2, 5, 12, 3
    P, R = _random_mdp(S, A, seed=1)
    agent, _, trajs = _run_agent(P, R, H, K, B, 1.0, 1, seed=5)
    noise_log, explore_log = agent.draw_record()
    noise, rng = Replay(noise_log), Replay(explore_log)
    board = Billboard(S, A, 1.0)
    for _ in range(4):
        user_policy(board, H, rng)
    batch = np.array(trajs[:4], float).transpose(1, 0, 2)
    dN, dR = capped_increment(*batch, S, A, 1)
    dN[0, 0, 0] += 1.0
    board.publish(dN, dR, noise)
    # the 5th user's Dirichlet: 4 users x (5 + H) draws, then its two normal draws
    with pytest.raises(AssertionError, match=f"draw {4 * (5 + H) + 2}: the reference asks gamma"):
        user_policy(board, H, rng)


# --------------------------------------------------------------------------------------------
# the Python class: privrl.agents.PSRL (privrl.agents.psrl.agent.PSRL)
# --------------------------------------------------------------------------------------------
def _users(agent, n, seed):
    """n users acting on a random episode through act / observe; returns their policies."""
    g, pis = np.random.default_rng(seed), []
    for _ in range(n):
        pis.append(agent.policy())
        s, states, actions = 0, [0], []
        for h in range(agent.H):
            actions.append(agent.act(s, h))
            s = int(g.integers(agent.S))
            states.append(s)
        agent.observe(Trajectory(np.array(states), np.array(actions), g.random(agent.H)))
    return np.stack(pis)


def test_psrl_class_is_built_from_calibrate_psrl_and_refuses_local_dp():
    fm = FeatureMap.one_hot(6, 3, 5)
    agent = PSRL(fm, JointDP(10.0, 1e-5), episodes=300, seed=0, m=2)
    cal = calibrate_psrl("jdp", 10.0, 1e-5, 6, 3, 5, 300, m=2)  # the default sampler: discrete
    assert agent.calibration == cal and agent.B == cal.B
    assert (agent._core.sampler, agent._core.grid_bits) == ("discrete", cal.grid_bits) == ("discrete", 24)
    flt = PSRL(fm, JointDP(10.0, 1e-5, sampler="float"), episodes=300, seed=0, m=2)
    assert flt.calibration == calibrate_psrl("jdp", 10.0, 1e-5, 6, 3, 5, 300, m=2, sampler="float")
    assert (flt._core.sampler, flt._core.grid_bits) == ("float", None)
    np.testing.assert_array_equal(agent.bounds, psrl_batch_bounds(300, cal.B))
    assert agent._core.num_batches == cal.B
    _users(agent, int(agent.bounds[1]), seed=1)  # the first batch: one release after it
    N, R, j = agent.billboard()
    assert (N.shape, R.shape, j, agent.k) == ((6, 3, 6), (6, 3), 1, int(agent.bounds[1]))
    assert agent._core.variance == pytest.approx(cal.sigma**2, rel=1e-15)
    assert PSRL(fm, NonPrivate(), episodes=10, seed=0).B == 10
    with pytest.raises(PrivacyParameterError, match="LocalDP"):
        PSRL(fm, LocalDP(1.0, 1e-5), episodes=10)


def test_psrl_class_is_reproducible_and_saves_mid_run(tmp_path):
    fm = FeatureMap.one_hot(4, 2, 5)
    a, b = (PSRL(fm, JointDP(5.0, 1e-5), episodes=60, seed=7) for _ in range(2))
    np.testing.assert_array_equal(_users(a, 25, seed=2), _users(b, 25, seed=2))
    a.save(tmp_path / "psrl.agent")
    c = PSRL.load(tmp_path / "psrl.agent")
    np.testing.assert_array_equal(_users(a, 35, seed=3), _users(c, 35, seed=3))
    np.testing.assert_array_equal(a.billboard()[0], c.billboard()[0])
    # greedy_policy reads the billboard only: no stream consumed, the next users' draws unchanged
    g = c.greedy_policy()
    np.testing.assert_array_equal(g, a.greedy_policy())
    assert g.shape == (5, 4) and c.policy_updates == a.policy_updates
    # an agent that served all its users saves and loads too (its batch index is then B)
    a.save(tmp_path / "done.agent")
    assert PSRL.load(tmp_path / "done.agent").k == 60


def test_psrl_class_clips_and_counts_or_refuses_rewards():
    fm = FeatureMap.one_hot(3, 2, 2)
    t = Trajectory(np.array([0, 1, 2]), np.array([0, 1]), np.array([1.5, 0.5]))
    agent = PSRL(fm, JointDP(5.0, 1e-5), episodes=5, seed=0)
    agent.policy()
    with pytest.warns(SensitivityWarning):
        agent.observe(t)
    assert agent.clip_count == 1 and agent.k == 1
    strict = PSRL(fm, JointDP(5.0, 1e-5), episodes=5, seed=0, sensitivity="reject")
    with pytest.raises(AssumptionError):
        strict.observe(t)
    assert strict.k == 0


def test_psrl_learns_slippery_frozen_lake_through_learn():
    """privrl.learn drives it one user at a time on gymnasium's slippery FrozenLake (JointDP(10,
    1e-5), K 5,000: B 4): its last 500 users beat the uniform policy's exact success 0.0124 (H 20)
    by 3 standard errors (measured 0.056 / 0.072 / 0.078 at seeds 0 / 1 / 2; the reference 0.06)."""
    gym = pytest.importorskip("gymnasium")
    env = gym.make("FrozenLake-v1", is_slippery=True)
    agent = PSRL(FeatureMap.one_hot_for(env, 20), JointDP(10.0, 1e-5), episodes=5000, seed=0)
    res = privrl.learn(agent, env, seed=0)
    r = np.asarray(res.returns)
    assert agent.k == 5000 and r.shape == (5000,)
    assert r[-500:].mean() > 0.0124 + 3 * np.sqrt(0.0124 * (1 - 0.0124) / 500)
    # the plug-in model's greedy policy, scored exactly on gymnasium's table (measured 0.100 at
    # seed 0; 0.117 / 0.173 / 0.192 at K 20,000, seeds 0-2; the optimum 0.199)
    P, R = frozen_lake_4x4_slippery()
    greedy = agent.greedy_policy()
    assert greedy.shape == (20, 16) and policy_values(greedy[None], P, R, 0)[0] > 0.0124


def test_the_agents_transition_prior_is_worth_one_observation():
    """formulas.psrl_prior: Dirichlet(1/S + N) (total prior mass 1 whatever S; the uniform
    Dirichlet(1) weighed as S observations): 1/16 = 0.0625 on FrozenLake, 1/48 on CliffWalking. The
    class's core draws its first user's transition rows (no release yet: N = 0) with shapes 1/S."""
    assert psrl_prior(16) == 0.0625 and psrl_prior(48) == 1 / 48 and psrl_prior(1) == 1.0
    with pytest.raises(PrivacyParameterError):
        psrl_prior(0)
    agent = PSRL(FeatureMap.one_hot(5, 3, 6), JointDP(5.0, 1e-5), episodes=40, seed=3)
    agent._core.set_record(True)
    agent._core.policy()
    _, shapes, _ = next(rec for rec in agent._core.draw_record()[1] if rec[0] == "gamma")
    assert shapes.shape == (5, 3, 5) and np.all(shapes == 0.2)


def test_the_core_has_no_default_prior_of_its_own():
    """The prior's default is set once, formulas.psrl_prior (the class passes it): the binding
    requires alpha0 (it defaulted to the uniform 1.0, a second default) and takes any given one."""
    kw = dict(n_states=2, n_actions=2, horizon=2, episodes=3, m=1, sigma=1.0, sampler="float")
    kw.update(bounds=[0, 3], reject=True, noise_seed=bytes(32), exploration_seed=bytes(32))
    with pytest.raises(TypeError, match="alpha0"):
        _core.PsrlAgent(**kw)
    core = _core.PsrlAgent(**kw, alpha0=0.5)
    core.set_record(True)
    core.policy()
    _, shapes, _ = next(rec for rec in core.draw_record()[1] if rec[0] == "gamma")
    assert shapes.shape == (2, 2, 2) and np.all(shapes == 0.5)


def test_the_prior_moves_the_policies_and_not_the_released_noise():
    """The Dirichlet prior is the regret side (post-processing of the billboard): two cores that
    differ only in alpha0 (the uniform 1 and psrl_prior's 1/S), fed the same users, release the
    same billboard bit for bit (the noise stream is the release's own, whatever the prior; the
    calibration, hence the report, has no prior in it); their users' policies differ."""
    S, A, H, K = 4, 2, 3, 40
    kw = dict(n_states=S, n_actions=A, horizon=H, episodes=K, m=1, sigma=2.0, sampler="discrete")
    kw.update(grid_bits=24, bounds=[0, 10, 20, 30, 40], reject=True)
    kw.update(noise_seed=bytes(range(32)), exploration_seed=bytes(range(1, 33)))
    cores = [_core.PsrlAgent(**kw, alpha0=a) for a in (1.0, psrl_prior(S))]
    rng = np.random.default_rng(3)
    policies: list[list[np.ndarray]] = [[], []]
    for _ in range(K):
        s = rng.integers(S, size=H + 1)
        a, r = rng.integers(A, size=H), rng.integers(2, size=H).astype(float)
        for pol, core in zip(policies, cores, strict=True):
            pol.append(np.asarray(core.policy()).copy())
            core.observe(s, a, r)
    (n0, r0, j0), (n1, r1, j1) = (c.billboard() for c in cores)
    assert j0 == j1 == 3 and n0.tobytes() == n1.tobytes() and r0.tobytes() == r1.tobytes()
    assert any(not np.array_equal(p, q) for p, q in zip(*policies, strict=True))


def _sha(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else np.ascontiguousarray(p).tobytes())
    return h.hexdigest()[:16]


def _fixed_users_run(privacy):
    """The class (one-hot S 4, A 2, H 3, K 40 in 4 batches, seed 7) fed 40 users whose episodes do not
    follow its policies (default_rng(3)): the releases j, fingerprints of its billboard, of its
    privacy report (less the regret side's "bonus", which names the priors) and of the users'
    policies, and the agent (its draws recorded)."""
    S, A, H, K = 4, 2, 3, 40
    agent = PSRL(FeatureMap.one_hot(S, A, H), privacy, episodes=K, seed=7, batches=4)
    agent._core.set_record(True)
    g, pis = np.random.default_rng(3), []
    for _ in range(K):
        pis.append(agent.policy())
        s, a = g.integers(S, size=H + 1), g.integers(A, size=H)
        agent.observe(Trajectory(s, a, g.integers(2, size=H).astype(float)))
    N, R, j = agent.billboard()
    report = agent.privacy_report().to_dict()
    report.get("regret_side", {}).pop("bonus", None)
    return (j, _sha(N, R), _sha(repr(report).encode()), _sha(np.stack(pis))), agent


@pytest.mark.parametrize(
    "privacy, release, report, old_policies",
    [
        (JointDP(5.0, 1e-5), "2913b7cddaac68c7", "dd49c4d3d8f58d0e", "0228af97bdb0581a"),
        (JointDP(5.0, 1e-5, sampler="float"), "1e25bf6ecfb3e335", "22e81011b559d6f2", "5a6f7cb417268126"),
        (NonPrivate(), "bc1288430f2d24d3", "6f82ef1de5d3064f", "658d4663b2a6bc76"),
    ],
    ids=["discrete", "float", "none"],
)
def test_the_reward_prior_moves_the_policies_and_not_the_release_or_the_report(
    privacy, release, report, old_policies
):
    """The reward prior is the regret side (post-processing of the billboard), both ways. The
    fingerprints were recorded by this test's _fixed_users_run on the build before the prior became
    Beta(1 + R, n - R) (commit 2752990, the uniform Beta(1 + R, 1 + n - R)): the billboard and the
    privacy report are the same bit for bit now, the users' policies are not. The release is also
    the reference's for the same users and the agent's recorded noise (no prior in it)."""
    (j, got_release, got_report, policies), agent = _fixed_users_run(privacy)
    assert (j, got_release, got_report) == (3, release, report)
    assert policies != old_policies
    S, A, H, K = agent.S, agent.A, agent.H, agent.K
    noise = Replay(agent._core.draw_record()[0])
    board = Billboard(S, A, float(agent.calibration.sigma or 0.0), agent._core.grid_bits)
    g = np.random.default_rng(3)
    users = [(g.integers(S, size=H + 1), g.integers(A, size=H), g.integers(2, size=H)) for _ in range(K)]
    for j in range(agent.B - 1):
        batch = users[int(agent.bounds[j]) : int(agent.bounds[j + 1])]
        rows = np.array([(s[:-1], a, r, s[1:]) for s, a, r in batch], float).transpose(1, 0, 2)
        board.publish(*capped_increment(*rows, S, A, 1), noise)
    N, R, _ = agent.billboard()
    np.testing.assert_allclose(N, board.N, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(R, board.R, rtol=1e-9, atol=1e-12)


def test_an_unvisited_pair_draws_the_mean_reward_one():
    """formulas.psrl_reward_prior in the class's core: before any release every pair is unvisited,
    its reward gammas have shapes 1 + R = 1 and n - R = 0, the second is 0 (Gamma(0), no draw), so
    every mean reward drawn is ga / (ga + 0) = 1 exactly; the reference replaying the same draws
    gives the same policy."""
    agent = PSRL(FeatureMap.one_hot(5, 3, 6), JointDP(5.0, 1e-5), episodes=40, seed=3)
    agent._core.set_record(True)
    pi = agent.policy()
    log = agent._core.draw_record()[1]
    (_, a_shapes, ga), (_, b_shapes, gb) = log[3], log[4]
    assert [rec[0] for rec in log[2:5]] == ["gamma"] * 3
    assert np.all(a_shapes == 1.0) and np.all(b_shapes == 0.0)
    assert np.all(gb == 0.0) and np.all(ga > 0.0) and np.all(ga / (ga + gb) == 1.0)
    np.testing.assert_array_equal(user_policy(Billboard(5, 3, agent.calibration.sigma), 6, Replay(log)), pi)


def test_the_greedy_policy_plans_on_the_posterior_means_at_the_released_counts():
    """greedy_policy against numpy: N = each row of N~ projected on its simplex, R = R~ clipped to
    [0, n], P = (1/S + N) / (1 + n), r = (a0 + R) / (a0 + b0 + n) = (1 + R) / (1 + n) (the
    Beta(1 + R, n - R) mean, formulas.psrl_reward_prior; 1 at an unvisited pair), H-step value
    iteration with lowest-index ties; JointDP(2, 1e-5) float noise, after the 3 releases of 60
    users (some rows' released totals are <= 0: unvisited)."""
    S, A, H = 5, 3, 4
    agent = PSRL(
        FeatureMap.one_hot(S, A, H), JointDP(2.0, 1e-5, sampler="float"), episodes=60, seed=5, batches=4
    )
    _users(agent, 60, seed=4)
    Nt, Rt, j = agent.billboard()
    assert j == 3
    N = simplex_project(Nt)
    n = N.sum(2)
    a0, b0 = psrl_reward_prior()
    r = (a0 + np.clip(Rt, 0.0, n)) / (a0 + b0 + n)
    P = (psrl_prior(S) + N) / (S * psrl_prior(S) + n)[:, :, None]
    assert (n == 0).any() and np.all(r[n == 0] == 1.0)
    V, want = np.zeros(S), np.empty((H, S), np.int64)
    for h in reversed(range(H)):
        Q = r + P @ V
        want[h], V = Q.argmax(1), Q.max(1)
    np.testing.assert_array_equal(agent.greedy_policy(), want)

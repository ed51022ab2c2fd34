"""LSVI-UCB / batched / JDP / pure-JDP LSVI-UCB (Alg. 2): planning against a numpy reference,
learning, the batch schedule, calibrated noise, both planning paths, reproducibility, bad inputs."""

import math
import os
import re
import sys

import numpy as np
import pytest

import privrl
from _helpers import uniform_policy_gap
from privrl import kernels as kn
from privrl.agents import LSVIUCB
from privrl.agents.common.base import SensitivityWarning
from privrl.agents.lsvi_ucb.agent import batch_starts
from privrl.agents.lsvi_ucb.reference import optimistic_values
from privrl.envs import FeatureMap, FiniteMDP, RandomLinearMDP, RiverSwim, RiverSwimMixture, Trajectory
from privrl.exceptions import AssumptionError, PrivacyParameterError, PrivrlError, ShapeError
from privrl.kernels import reference as R
from privrl.privacy import JointDP, LocalDP, NonPrivate


def _tiny_env():
    return RandomLinearMDP(S=4, A=2, d=3, H=3, seed=0)


def _play(agent, env, episodes, seed):
    """Run `episodes` users through `agent`, returning their trajectories."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(episodes):
        t = env.sample_episode(agent.policy(), rng)
        agent.observe(t)
        out.append(t)
    return out


# ------------------------------------------------------------------------------ kernel + pass
def test_state_values_kernel_matches_reference():
    rng = np.random.default_rng(0)
    S, A, d = 37, 3, 6
    table = rng.normal(size=(S * A, d)) / 3
    w = rng.normal(size=d)
    M = rng.normal(size=(d, d))
    inv = np.linalg.inv(M @ M.T + np.eye(d))
    states = rng.integers(0, S, 1000)
    got = kn.state_values(table, w, inv, 0.7, A, upper=2.0, lower=0.0, states=states)
    want = R.state_values_ref(table, w, inv, 0.7, A, upper=2.0, lower=0.0, states=states)
    assert np.abs(got - want).max() < 1e-13
    every = kn.state_values(table, w, inv, 0.7, A, upper=2.0, lower=0.0)
    assert every.shape == (S,) and np.array_equal(every[states], got)  # same bits either way
    with pytest.raises(ShapeError):
        kn.state_values(table, w, inv, 0.7, A, states=[S])
    with pytest.raises(ShapeError):
        kn.state_values(table[:-1], w, inv, 0.7, A)


def test_batch_schedule():
    assert batch_starts(10, 4).tolist() == [1, 4, 7, 10]  # ceil(10/4) = 3
    assert batch_starts(10, 6).tolist() == [1, 3, 5, 7, 9]  # k_5 = 11 > K: 5 batches start
    assert batch_starts(5, 5).tolist() == [1, 2, 3, 4, 5]
    assert batch_starts(7, 1).tolist() == [1]


# ------------------------------------------------------------------------------ learning
def test_nonprivate_learns_riverswim():
    # Tabular RiverSwim, one-hot phi in R^(S A), lam = d. LSVI-UCB is optimistic at an unvisited
    # (h, s, a) only if beta >= (H - h) sqrt(lam), and its bonuses then shrink like
    # beta / sqrt(N): on the default S=6, H=20 no beta in [0.3, 200] learns within 2000 episodes
    # (measured), so a 3-state river is used; beta_scale 2e-4 makes beta ~ 5.3.
    env = RiverSwim(S=3, H=5)
    K = 2000
    agent = LSVIUCB(
        env, privacy=NonPrivate(calibration="paper"), batches="every", episodes=K, seed=1, beta_scale=2e-4
    )
    res = privrl.run(agent, env, seed=2)
    assert agent.batch == K - 1  # one release after every episode but the last
    random_regret = K * uniform_policy_gap(env)
    assert res.final_regret < random_regret / 3
    q = K // 4
    first, last = res.regret[q - 1], res.regret[-1] - res.regret[-q - 1]
    assert last < first / 2


# ------------------------------------------------------------------------------ batching
@pytest.mark.parametrize(
    "privacy", [NonPrivate(calibration="paper"), JointDP(1.0, 1e-5, calibration="paper")]
)
def test_static_batching_changes_policy_exactly_B_times(privacy):
    env = RiverSwim(S=4, H=6)
    K, B = 200, 10

    def make():
        return LSVIUCB(env, privacy=privacy, batches=B, episodes=K, seed=3, beta=3.0)

    agent = make()
    starts = batch_starts(K, B)
    assert starts.tolist() == list(range(1, K, 20))
    # policies[j], boards[j]: what the user of episode j + 2 receives (recorded after k = j + 1):
    # the agent's state after every episode, users driven one at a time
    policies, boards = [], [agent.release()]
    rng = np.random.default_rng(4)
    for _ in range(K):
        agent.observe(env.sample_episode(agent.policy(), rng))
        policies.append(agent.policy())
        boards.append(agent.release())
    # B distinct billboards (the initial one + one per batch end), each used by one batch
    distinct = {(rel.users, rel.design.tobytes(), rel.weights.tobytes()) for rel in boards[:K]}
    assert len(distinct) == B and agent._core.releases == B - 1
    assert agent.release_users == [k - 1 for k in starts]
    assert [boards[k - 1].users for k in starts] == [k - 1 for k in starts]
    # the user of episode k (1-based) runs the policy of its batch: it can only change at k_i
    changed = [j + 3 for j in range(K - 1) if not np.array_equal(policies[j], policies[j + 1])]
    assert set(changed) <= set(starts.tolist())
    res = privrl.run(make(), env, seed=4)  # and privrl.run counts as many
    assert res.policy_changes <= B


def test_every_and_static_batch_counts():
    env = _tiny_env()
    assert (
        len(
            privrl.run(
                agent := LSVIUCB(
                    env, JointDP(1.0, 1e-5, calibration="paper"), batches="every", episodes=30, seed=0
                ),
                env,
                seed=0,
            ).regret
        )
        == 30
    )
    assert agent.calibration.B == 30 and agent.release_users == list(range(30))
    jdp = LSVIUCB(env, JointDP(1.0, 1e-5, calibration="paper"), batches="static", episodes=10_000, seed=0)
    # App. D: B = ceil((K eps)^{2/5} / (d^{3/5} H^{1/5})) = ceil(39.81 / (1.933 * 1.246)) = 17
    assert jdp.calibration.B == 17 and jdp.calibration.B0 == 6
    pure = LSVIUCB(env, JointDP(1.0, 0.0, calibration="paper"), batches="static", episodes=10_000, seed=0)
    # App. "Pure joint DP": B = ceil((K eps)^{1/3} / (d^{2/3} H^{1/3})) = ceil(21.54 / 3.0) = 8
    assert pure.calibration.B == 8 and pure.calibration.noise == "laplace"
    assert LSVIUCB(env, NonPrivate(calibration="paper"), batches="static", episodes=50).calibration.B == 50


# ------------------------------------------------------------------------------ calibrated noise
@pytest.mark.parametrize("delta", [1e-5, 0.0])
def test_released_noise_has_calibrated_variance_and_node_count(delta):
    """Monte Carlo over seeds on a tiny instance: after 7 batch ends, Lambda~ - Lambda - shift I is
    the sum of popcount(7) = 3 <= B0 = 4 tree nodes, and design @ w~ - u (u recomputed from the
    users' raw data and the release itself) is eta ~ N(0, sigma_u^2 I) (Laplace: variance 2 b^2)."""
    env, K = _tiny_env(), 8
    H, d, A = env.H, env.d, env.A
    mats, etas = [], []
    for seed in range(300):
        agent = LSVIUCB(
            env, privacy=JointDP(1.0, delta, calibration="paper"), batches=8, episodes=K, seed=seed
        )
        trajs = _play(agent, env, 7, seed)
        cal = agent.calibration
        assert cal.B == 8 and cal.B0 == 4
        assert agent._core.nodes_history == [1, 1, 2, 1, 2, 2, 3]  # popcount(b) <= B0
        rel = agent.release()
        phi = np.stack([env.features_flat[t.states[:-1] * A + t.actions] for t in trajs])  # (n, H, d)
        r = np.stack([t.rewards for t in trajs])
        s_next = np.stack([t.states[1:] for t in trajs])
        gram = np.einsum("nhi,nhj->hij", phi, phi)
        mats.append(rel.design - gram - (cal.lam + cal.shift) * np.eye(d))
        for h in range(H):
            V = 0.0
            if h < H - 1:
                V = R.state_values_ref(
                    env.features_flat,
                    rel.weights[h + 1],
                    rel.inverse[h + 1],
                    agent.beta,
                    A,
                    upper=H,
                    lower=0.0,
                    states=s_next[:, h],
                )
            u = phi[:, h].T @ (r[:, h] + V)
            etas.append(rel.design[h] @ rel.weights[h] - u)
    mats, etas = np.array(mats), np.array(etas)
    iu = np.triu_indices(d, 1)
    off, diag = mats[:, :, iu[0], iu[1]], mats[:, :, np.arange(d), np.arange(d)]
    s_l, s_u = cal.sigma_Lambda, cal.sigma_u
    if delta > 0:  # Gaussian, Z = (Z' + Z'^T)/2: off-diagonal sigma^2/2, diagonal sigma^2 per node
        off_var, diag_var, eta_var = s_l**2 / 2, s_l**2, s_u**2
        tol = 0.12
    else:  # Laplace b: off-diagonal b^2, diagonal 2 b^2 per node; eta 2 b^2
        off_var, diag_var, eta_var = s_l**2, 2 * s_l**2, 2 * s_u**2
        tol = 0.2
    # 300 seeds x H=3 x 3 entries = 2700 draws each: relative sd of a variance estimate ~3-4%
    assert abs(off.var() / (3 * off_var) - 1) < tol
    assert abs(diag.var() / (3 * diag_var) - 1) < tol
    assert abs(etas.var() / eta_var - 1) < tol
    assert abs(etas.mean()) < 0.1 * np.sqrt(eta_var)
    assert np.array_equal(mats, np.swapaxes(mats, -1, -2))


def test_huge_epsilon_jdp_matches_nonprivate_static_batching():
    # continuous random features: no exact ties for the negligible noise to break differently
    # (on one-hot RiverSwim every unvisited pair ties exactly and 1e-12 noise reorders them)
    env = RandomLinearMDP(S=10, A=3, d=4, H=5, seed=3)
    K, B = 1500, 50
    regrets = {}
    for name, priv in [
        ("np", NonPrivate(calibration="paper")),
        ("jdp", JointDP(1e15, 1e-5, sampler="float", calibration="tight")),
    ]:  # discrete: refused there; so is the paper's noise (its Gaussian formula does not certify 1e15)
        agent = LSVIUCB(env, privacy=priv, batches=B, episodes=K, seed=4, beta=1.0)
        regrets[name] = privrl.run(agent, env, seed=5).final_regret
    assert abs(regrets["jdp"] - regrets["np"]) <= 0.05 * regrets["np"]


# ------------------------------------------------------------------------------ planning paths
@pytest.mark.parametrize(
    "privacy",
    [
        NonPrivate(calibration="paper"),
        JointDP(2.0, 1e-5, calibration="paper"),
        JointDP(2.0, 0.0, calibration="paper"),
    ],
)
def test_aggregated_equals_per_sample_planning(privacy):
    env = RandomLinearMDP(S=5, A=3, d=4, H=4, seed=2)
    K = 60
    agents = {
        p: LSVIUCB(env, privacy=privacy, batches=12, episodes=K, seed=7, beta=2.0, planning=p)
        for p in ("per_sample", "aggregated", "auto")
    }
    boards = {p: [] for p in agents}
    rng = np.random.default_rng(0)
    for _ in range(K - 1):  # the same users for every agent (random policies: no feedback)
        t = env.sample_episode(rng.integers(0, env.A, (env.H, env.S)), rng)
        for p, a in agents.items():
            a.observe(t)
            if not boards[p] or boards[p][-1].users != a.release().users:  # a new release
                boards[p].append(a.release())
    ps, ag, auto = (boards[p] for p in ("per_sample", "aggregated", "auto"))
    assert len(ps) == len(ag) == 12  # the initial billboard and the 11 batch-end releases
    for x, y in zip(ps, ag, strict=True):
        assert np.array_equal(x.design, y.design)  # same data, same noise stream
        assert np.abs(x.weights - y.weights).max() <= 1e-9 * max(1.0, np.abs(x.weights).max())
        assert np.abs(x.inverse - y.inverse).max() <= 1e-9 * np.abs(x.inverse).max()
    # auto switches to counts once S = 5 < stored episodes (releases after 5, 10, ..., 55 users)
    assert agents["auto"]._core.paths == ["per_sample"] + ["aggregated"] * 10
    assert all(
        np.abs(x.weights - y.weights).max() <= 1e-9 * max(1.0, np.abs(x.weights).max())
        for x, y in zip(auto, ps, strict=True)
    )


# ------------------------------------------------------------------------------ billboard
def test_user_policy_is_a_function_of_the_release():
    env = RandomLinearMDP(S=8, A=3, d=4, H=4, seed=1)
    agent = LSVIUCB(
        env,
        JointDP(5.0, 1e-5, calibration="paper"),
        batches=5,
        episodes=50,
        seed=0,
        ties="lowest",
        beta_scale=1e-4,
    )
    _play(agent, env, 30, 0)
    rel = agent.release()
    # the billboard: public post-processing of the release only (bonus, gamma: practical
    # calibration; explore: UCRL-VTR's exploration matrix)
    assert set(vars(rel)) == {"design", "inverse", "weights", "users", "bonus", "gamma", "explore"}
    assert rel.bonus is None and rel.explore is None
    # the user's policy from the billboard alone (the paper-shaped reference's Q, lowest index on ties)
    pi = np.stack(
        [
            optimistic_values(env.features, rel.weights[h], rel.inverse[h], agent.beta, env.H)
            for h in range(env.H)
        ]
    ).argmax(axis=2)
    assert np.array_equal(pi, agent.policy())
    Q = np.stack(
        [
            R.optimistic_q_ref(
                env.features_flat, rel.weights[h], rel.inverse[h], agent.beta, upper=env.H, lower=0.0
            ).reshape(env.S, env.A)
            for h in range(env.H)
        ]
    )
    assert np.array_equal(pi, Q.argmax(axis=2))


# ------------------------------------------------------------------------------ API, seeds, errors
def test_calibration_exposes_paper_quantities():
    env = RandomLinearMDP(S=20, A=4, d=10, H=10, seed=0)
    agent = LSVIUCB(
        env, privacy=JointDP(1.0, 1e-5, calibration="paper"), batches="static", episodes=10_000, seed=0
    )
    cal = agent.calibration
    # App. D with eps = 1, delta = 1e-5, H = 10, K = 1e4, d = 10 (hand values of the issue)
    assert cal.B == 7 and cal.lam == 10.0
    assert cal.sigma_Lambda == pytest.approx(9.1e5, rel=0.01)
    assert cal.sigma_u == pytest.approx(4.55e6, rel=0.01)
    assert cal.shift == pytest.approx(cal.c_K + cal.Upsilon)
    for key in ("B0", "Upsilon", "c_K", "C", "U_K", "chi", "beta", "beta_used"):
        assert key in cal.to_dict() and getattr(cal, key) > 0
    assert cal.beta_used == cal.beta == agent.beta
    scaled = LSVIUCB(
        env, privacy=JointDP(1.0, 1e-5, calibration="paper"), episodes=10_000, seed=0, beta_scale=0.1
    )
    assert scaled.beta == pytest.approx(0.1 * cal.beta)  # exploration only:
    assert scaled.calibration.sigma_Lambda == cal.sigma_Lambda  # the noise is unchanged
    fixed = LSVIUCB(env, privacy=NonPrivate(calibration="paper"), episodes=100, beta=2.5)
    assert fixed.calibration.beta_used == 2.5 and fixed.calibration.shift == 0.0


def test_issue_example_runs():
    env = RandomLinearMDP(S=100, A=10, d=16, H=20, seed=0)
    agent = LSVIUCB(
        env,
        privacy=JointDP(epsilon=1.0, delta=1e-5, calibration="paper"),
        batches="static",
        episodes=100_000,
        seed=1,
    )
    res = privrl.run(agent, env, episodes=300, seed=2)
    assert res.regret.shape == (300,) and np.all(res.gaps >= -1e-12)
    assert agent.calibration.B == 11 and agent.release_users == [0]  # first batch: 9091 users


def test_reproducible_and_entropy_seeded():
    env = _tiny_env()
    runs = [
        privrl.run(
            LSVIUCB(env, JointDP(0.5, 1e-5, calibration="paper"), batches=20, episodes=200, seed=9),
            env,
            seed=3,
        )
        for _ in range(2)
    ]
    assert np.array_equal(runs[0].regret, runs[1].regret)
    assert np.array_equal(runs[0].returns, runs[1].returns)
    # seed=None: privacy noise from OS entropy -> two agents release different noise
    n1, n2 = (
        LSVIUCB(env, JointDP(0.5, 1e-5, calibration="paper"), batches=20, episodes=200, seed=None)
        for _ in range(2)
    )
    for a in (n1, n2):
        privrl.run(a, env, episodes=11, seed=3)
    assert not np.array_equal(n1.release().design, n2.release().design)
    assert not np.array_equal(n1._core.last_eta, n2._core.last_eta)


def test_bad_inputs():
    env = _tiny_env()
    for bad in (0.0, -1.0):
        with pytest.raises(PrivacyParameterError):
            JointDP(bad, 1e-5, calibration="paper")
    for bad in (1.0, -1e-3):
        with pytest.raises(PrivacyParameterError):
            JointDP(1.0, bad, calibration="paper")
    with pytest.raises(PrivacyParameterError):
        LSVIUCB(env, privacy=NonPrivate(calibration="paper"), episodes=0)
    for bad in (0, 11, "weekly", 2.5, True):
        with pytest.raises(PrivacyParameterError):
            LSVIUCB(env, privacy=JointDP(1.0, 1e-5, calibration="paper"), batches=bad, episodes=10)
    with pytest.raises(PrivacyParameterError, match="Local Differential Privacy"):
        LSVIUCB(env, privacy=LocalDP(1.0, 1e-5, calibration="paper"), episodes=10)
    with pytest.raises(TypeError):
        LSVIUCB(RiverSwimMixture(), privacy=NonPrivate(calibration="paper"), episodes=10)
    with pytest.raises(TypeError):
        LSVIUCB(FiniteMDP(env.P, env.R, env.init_dist), privacy=NonPrivate(calibration="paper"), episodes=10)
    with pytest.raises(ValueError):
        LSVIUCB(env, episodes=10, planning="fast")
    with pytest.raises(ValueError):
        LSVIUCB(env, episodes=10, sensitivity="ignore")
    with pytest.raises(PrivacyParameterError):
        LSVIUCB(env, episodes=10, beta_scale=-1.0)
    agent = LSVIUCB(env, privacy=NonPrivate(calibration="paper"), episodes=2, seed=0)
    privrl.run(agent, env, seed=0)
    with pytest.raises(ValueError):
        privrl.run(agent, env, episodes=1, seed=0)  # beyond the K it was calibrated for


def test_sensitivity_guard_on_user_rewards():
    env = _tiny_env()
    forged = Trajectory(
        states=np.zeros(env.H + 1, dtype=np.int64),
        actions=np.zeros(env.H, dtype=np.int64),
        rewards=np.array([2.0, -1.0, 0.5]),
    )
    assert np.abs(env.features[0, 0]).max() > 0  # the rewards enter u through phi(0, 0)
    # a release after every user: the stored rewards enter the next billboard's u
    agent = LSVIUCB(
        env, privacy=JointDP(1.0, 1e-5, calibration="paper"), batches="every", episodes=10, seed=0
    )
    with pytest.warns(SensitivityWarning):
        agent.observe(forged)
    assert agent.clip_count == 2
    # the server holds the clipped rewards: its release is, bit for bit, that of a user who sent them
    clipped = LSVIUCB(
        env, privacy=JointDP(1.0, 1e-5, calibration="paper"), batches="every", episodes=10, seed=0
    )
    clipped.observe(Trajectory(forged.states, forged.actions, np.array([1.0, 0.0, 0.5])))
    assert clipped.clip_count == 0 and agent.batch == clipped.batch == 1
    for name in ("design", "inverse", "weights"):
        np.testing.assert_array_equal(getattr(agent.release(), name), getattr(clipped.release(), name))
    other = LSVIUCB(
        env, privacy=JointDP(1.0, 1e-5, calibration="paper"), batches="every", episodes=10, seed=0
    )
    other.observe(Trajectory(forged.states, forged.actions, np.array([0.9, 0.0, 0.5])))
    assert not np.array_equal(agent.release().weights, other.release().weights)
    strict = LSVIUCB(
        env, privacy=JointDP(1.0, 1e-5, calibration="paper"), episodes=10, seed=0, sensitivity="reject"
    )
    with pytest.raises(AssumptionError):
        strict.observe(forged)


def test_lam_is_a_regret_side_option():
    """lam (App. D: d; Jin et al.: 1) moves the regret side (beta, Lambda_0) and never the noise:
    same scales, same budget in the report, same released noise draw for draw."""
    env = RandomLinearMDP(S=10, A=3, d=4, H=3, seed=0)
    priv = JointDP(2.0, 1e-5, calibration="tight")
    a = LSVIUCB(env, priv, episodes=40, seed=1)
    b = LSVIUCB(env, priv, episodes=40, seed=1, lam=1.0)
    assert a.calibration.lam == env.d and b.calibration.lam == 1.0
    for k in ("sigma_Lambda", "sigma_u", "B"):
        assert getattr(a.calibration, k) == getattr(b.calibration, k)
    assert a.calibration.beta != b.calibration.beta
    assert a.privacy_report()["tight"]["budget"] == b.privacy_report()["tight"]["budget"]
    for k in range(12):
        traj = env.sample_episode(a.policy(), np.random.default_rng(k))
        b.policy()
        a.observe(traj)
        b.observe(traj)
    np.testing.assert_array_equal(a._core.noise(), b._core.noise())
    exact = LSVIUCB(env, NonPrivate(calibration="paper"), batches="every", episodes=10, lam=1.0)
    np.testing.assert_allclose(exact.release().design[0], np.eye(env.d))  # Lambda_0 = lam I
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(PrivacyParameterError, match="lam"):
            LSVIUCB(env, priv, episodes=40, lam=bad)


def test_an_agent_larger_than_the_machine_is_refused_before_allocating(monkeypatch):
    """H dense d x d matrices per step and the private mechanisms' state: an agent whose estimate
    (dense_entries) exceeds physical memory raises ResourceError (also a MemoryError) at
    construction, instead of being killed by the operating system later."""
    from privrl.agents.lsvi_ucb import agent as lsvi_agent
    from privrl.envs import FeatureMap
    from privrl.exceptions import ResourceError

    fmap = FeatureMap.one_hot(16, 4, H=8)  # d = rows = 64, H = 8; d^2 = 4,096
    # non-private: 6 * 64 * 64 + 4 * 4,096 + 4.5 * 8 * 4,096 = 188,416 entries = 1.4375 MiB
    # JDP (BLT), K = 10: App. D's B = 1, no release: 40,960 + 3 * 8 * 4,096 = 139,264 = 1.0625 MiB
    # JDP (tree) with 10 batches, 9 releases: 40,960 + (5 + log2 9 + 2) * 8 * 4,096 = 2.85 MiB
    monkeypatch.setattr(lsvi_agent, "physical_memory", lambda: int(1.5 * 2**20))
    LSVIUCB(fmap, NonPrivate(), episodes=10, seed=0)  # fits
    LSVIUCB(fmap, JointDP(1.0, 1e-5), episodes=10, seed=0)
    with pytest.raises(ResourceError, match=r"H = 8, d = 64, tree over 9 releases need about 0\.0 GiB"):
        LSVIUCB(fmap, JointDP(1.0, 1e-5, mechanism="tree"), episodes=10, batches=10, seed=0)
    monkeypatch.setattr(lsvi_agent, "physical_memory", lambda: int(1.4 * 2**20))
    with pytest.raises(ResourceError, match=r"H = 8, d = 64 need about 0\.0 GiB") as err:
        LSVIUCB(fmap, NonPrivate(), episodes=10, seed=0)
    assert isinstance(err.value, MemoryError)
    LSVIUCB(fmap, JointDP(1.0, 1e-5), episodes=10, seed=0)
    monkeypatch.setattr(lsvi_agent, "physical_memory", lambda: int(2.84 * 2**20))
    with pytest.raises(ResourceError, match="fewer batches"):
        LSVIUCB(fmap, JointDP(1.0, 1e-5, mechanism="tree"), episodes=10, batches=10, seed=0)
    monkeypatch.setattr(lsvi_agent, "physical_memory", lambda: int(2.86 * 2**20))
    LSVIUCB(fmap, JointDP(1.0, 1e-5, mechanism="tree"), episodes=10, batches=10, seed=0)
    monkeypatch.setattr(lsvi_agent, "physical_memory", lambda: None)  # the OS does not say
    LSVIUCB(fmap, NonPrivate(), episodes=10, seed=0)
    # gymnasium's Taxi one-hot (S = 500, A = 6: d = rows = 3,000): at its own time limit H = 200
    # non-private, its diagonal matrices map one page a diagonal entry: (6 + 4) * 9e6 + 4.5 * 200
    # * 512 * 3,001 entries * 8 bytes = 10.97 GiB (dense: 61.0 GiB); at H = 30 JDP (BLT) with 20
    # batches, (10 + (5 + 8 + 4) * 30) * 9e6 * 8 = 34.9 GiB (it was killed).
    monkeypatch.setattr(lsvi_agent, "physical_memory", lambda: 10 * 2**30)
    with pytest.raises(ResourceError, match=r"H = 200, d = 3000 need about 11\.0 GiB, this machine has 10"):
        LSVIUCB(FeatureMap.one_hot(500, 6, H=200), NonPrivate(), episodes=10, seed=0)
    monkeypatch.setattr(lsvi_agent, "physical_memory", lambda: 24 * 2**30)
    taxi = FeatureMap.one_hot(500, 6, H=30)
    with pytest.raises(ResourceError, match=r"blt over 19 releases need about 34\.9 GiB"):
        LSVIUCB(taxi, JointDP(10.0, 1e-5), episodes=20_000, batches=20, seed=0)


def test_a_schedule_that_never_releases_is_flagged():
    """A single batch over K users releases nothing: every user gets the initial policy. The
    agent says so (ScheduleWarning) whether App. D's B came out as 1 or the user asked for it, and
    stays quiet when a release happens."""
    import warnings

    from privrl.envs import FeatureMap
    from privrl.exceptions import ScheduleWarning

    fmap = FeatureMap.one_hot(16, 4, H=8)  # d = 64: App. D's B at K = 10, eps = 1 is 1
    with pytest.warns(ScheduleWarning, match=r"'static' schedule's B is 1 at K = 10, d = 64") as rec:
        agent = LSVIUCB(fmap, JointDP(1.0, 1e-5), episodes=10, seed=0)
    assert agent.B == 1 and "never releases" in str(rec[0].message)
    assert rec[0].filename == __file__  # points at the user's line
    with pytest.warns(ScheduleWarning, match=r"batches=1\b"):
        LSVIUCB(fmap, NonPrivate(), episodes=10, batches=1, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ScheduleWarning)
        LSVIUCB(fmap, JointDP(1.0, 1e-5), episodes=10, batches=2, seed=0)
        LSVIUCB(fmap, NonPrivate(), episodes=10, seed=0)
        LSVIUCB(fmap, JointDP(1.0, 1e-5), episodes=1, seed=0)  # one user: nothing to release for


def test_a_release_after_every_user_under_jdp_is_flagged():
    """batches="every" under JDP composes K releases: the agent says what that costs (the composed
    sigma_u, H Gram releases per user) against the default schedule's B, and stays quiet for the
    non-private agent and for the paper's Rem. 2 variant asked by name."""
    import warnings

    from privrl.envs import FeatureMap
    from privrl.exceptions import ScheduleWarning

    fmap = FeatureMap.one_hot(16, 4, H=8)
    with pytest.warns(ScheduleWarning, match=r"batches='every' under JointDP") as rec:
        agent = LSVIUCB(fmap, JointDP(10.0, 1e-5), batches="every", episodes=20_000, seed=0)
    static = LSVIUCB(fmap, JointDP(10.0, 1e-5), episodes=20_000, seed=0)
    message = str(rec[0].message)
    assert rec[0].filename == __file__
    assert f"sigma_u = {agent.calibration.sigma_u:,.4g}" in message
    assert f"B = {static.B} times" in message and static.B < agent.B == 20_000
    assert agent.calibration.sigma_u > 10 * static.calibration.sigma_u  # what the warning is about
    assert "std sigma_u" in message
    # pure JDP: sigma_u is the Laplace scale b (the noise's std is sqrt(2) b), and the warning says so
    with pytest.warns(ScheduleWarning, match=r"batches='every' under JointDP") as rec:
        pure = LSVIUCB(fmap, JointDP(10.0, 0.0), batches="every", episodes=20_000, seed=0)
    assert pure.calibration.noise == "laplace"
    message = str(rec[0].message)
    assert f"Laplace scale b sigma_u = {pure.calibration.sigma_u:,.4g}" in message and "std" not in message
    with warnings.catch_warnings():
        warnings.simplefilter("error", ScheduleWarning)
        LSVIUCB(fmap, NonPrivate(), batches="every", episodes=20_000, seed=0)
        LSVIUCB(fmap, JointDP(10.0, 1e-5, calibration="paper"), batches="every", episodes=20_000, seed=0)


_PEAK = """
import sys
import math
import os
import re
import sys

import numpy as np
from privrl.agents import LSVIUCB
from privrl.agents.lsvi_ucb.agent import dense_entries
from privrl.envs import FeatureMap
from privrl.privacy import JointDP, NonPrivate
S, A, H, K, B = 80, 5, 8, 64, 16
fm = FeatureMap.one_hot(S, A, H=H)
mech = sys.argv[1]
priv = NonPrivate() if mech == "none" else JointDP(1.0, 1e-5, mechanism=mech, calibration="paper")
def peak():  # this process's own high-water mark (ru_maxrss would start from the parent's)
    with open("/proc/self/status") as f:
        return next(int(x.split()[1]) * 1024 for x in f if x.startswith("VmHWM:"))
base = peak()
agent = LSVIUCB(fm, priv, episodes=K, seed=0, batches=B, exploration="optimism")
rng = np.random.default_rng(0)
for _ in range(K):
    agent._core.policy()
    agent._core.observe(rng.integers(S, size=H + 1), rng.integers(A, size=H), rng.random(H))
print((peak() - base) / (8 * dense_entries(H, S * A, S * A, mech != "none", mech, B - 1)))
"""


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads Linux's VmHWM")
@pytest.mark.parametrize("mechanism", ["none", "tree", "honaker", "factorization", "blt"])
def test_the_memory_estimate_bounds_the_measured_peak(mechanism):
    """dense_entries against the process's peak resident memory over a whole run (d = 400 one-hot,
    H = 8, 16 batches: every mechanism releases 15 times), in a fresh interpreter: an upper bound,
    and not a loose one (a refusal the machine could have run)."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _PEAK, mechanism], capture_output=True, text=True, check=True, timeout=300
    )
    ratio = float(out.stdout.split()[-1])
    assert 0.8 <= ratio <= 1.0, ratio


def test_batch_starts_by_formula_and_a_huge_schedule_is_refused():
    """Audit 6: batch_starts built a Python list of every batch start (50 bytes a batch):
    batches="every" at K = 10^12 hung, growing in memory. The starts (Alg. 2, line 4) are the
    same by formula; a schedule beyond memory is a ResourceError at once."""
    from privrl.agents.lsvi_ucb.agent import batch_starts
    from privrl.exceptions import ResourceError

    for K, B in ((1000, 7), (1000, 1000), (10, 3), (10, 7), (7, 10), (1, 1), (100, 33)):
        L = -(-K // B)
        assert batch_starts(K, B).tolist() == [i * L + 1 for i in range(B) if i * L + 1 <= K]
    lin = RandomLinearMDP(S=10, A=3, d=4, H=5, seed=1)
    with pytest.raises(ResourceError, match="its 1000000000000 batches"):
        LSVIUCB(lin, JointDP(1.0, 1e-20), batches="every", episodes=10**12)


def test_adaptive_private_release_refuses_an_overflowing_lam(monkeypatch):
    """LSVIUCB(env, JointDP(1, 1e-5), lam=1e200) under the default (adaptive) calibration failed
    mid-run with a NonFiniteError at its first release: the release's privacy precision A^2 / kappa^2
    (A >= lam) overflows float64. A lam past the limit derived from that arithmetic is refused at
    construction, naming lam and the limit; a large lam below it runs, and so does an agent that
    never releases (one batch: no precision is computed)."""
    from privrl.agents.lsvi_ucb import agent as lsvi_agent
    from privrl.agents.lsvi_ucb.calibration import adaptive_lam_limit
    from privrl.exceptions import NonFiniteError
    from privrl.privacy.adaptive import centre_direction

    env = RandomLinearMDP(S=30, A=4, d=8, H=5, seed=0)
    for priv in (JointDP(1.0, 1e-5), JointDP(1.0, 0.0)):
        with pytest.raises(PrivacyParameterError, match=r"lam = 1e\+200 .* overflows float64 unless lam <= "):
            LSVIUCB(env, priv, episodes=400, batches=10, lam=1e200, seed=0)
    # the refusal is of a run that would really fail: without it the run stops at a release
    priv = JointDP(1e6, 1e-5)  # a small eta std: the limit is below sqrt(max float)
    safe = LSVIUCB(env, priv, episodes=400, batches=10, seed=0)
    w1, exact = centre_direction(safe.features.reshape(-1, env.d))
    limit = adaptive_lam_limit(safe.calibration.replace(lam=1e150), float(np.linalg.norm(w1)) * exact)
    assert 1e150 < limit < 1.34e154
    with pytest.raises(PrivacyParameterError, match="lam"):
        LSVIUCB(env, priv, episodes=400, batches=10, lam=4 * limit, seed=0)
    with monkeypatch.context() as m:
        m.setattr(lsvi_agent.privacy_of, "check_adaptive_lam", lambda *a: None)
        unchecked = LSVIUCB(env, priv, episodes=400, batches=10, lam=4 * limit, seed=0)
        with pytest.raises(NonFiniteError, match="adaptive release"):
            privrl.run(unchecked, env, seed=0)
    for p, lam in ((priv, limit / 2), (JointDP(1.0, 1e-5), 1e150)):
        agent = LSVIUCB(env, p, episodes=400, batches=10, lam=lam, seed=0)
        res = privrl.run(agent, env, seed=0)
        assert (
            agent.batch == 9 and np.isfinite(res.regret).all() and np.isfinite(agent.release().weights).all()
        )
    one = LSVIUCB(env, JointDP(1.0, 1e-5), episodes=400, batches=1, lam=1e200, seed=0)
    assert np.isfinite(privrl.run(one, env, seed=0).regret).all()


def test_sampling_radius_whose_square_over_lam_overflows_is_refused(monkeypatch):
    """exploration='sampling' with beta=1e308 at lam=1e-10 (or beta_scale=1e308 under the practical
    calibration) built and drew w = -inf at the first user. The draw N(w~, beta^2 Lambda~^{-1})
    (Lambda~ >= lam I) has covariance entries up to beta^2 / lam: where that overflows a double the
    agent is refused at construction (UCRL-VTR's rule for its exploration matrix); just below it the
    run is finite, and optimism (a clipped bonus) and the adaptive rule (a capped radius) are not
    refused."""
    from privrl.exceptions import NonFiniteError

    env = RandomLinearMDP(S=30, A=4, d=8, H=5, seed=0)
    practical = JointDP(1.0, 1e-5, calibration="practical")
    kw = dict(episodes=100, seed=0, exploration="sampling", lam=1e-10)
    for priv, radius in (
        (practical, {"beta": 1e308}),
        (practical, {"beta_scale": 1e308}),
        (JointDP(1.0, 1e-5, calibration="paper"), {"beta": 1e308}),
        (NonPrivate(calibration="practical"), {"beta": 1e308}),
    ):
        with pytest.raises(PrivacyParameterError, match=r"beta\^2 / lam.*overflows a double"):
            LSVIUCB(env, priv, **kw, **radius)
    with monkeypatch.context() as m:  # the refusal is of a run that really fails
        m.setattr(LSVIUCB, "_check_draw", lambda self, cal: None)
        with pytest.raises(NonFiniteError, match="w"):
            privrl.run(LSVIUCB(env, practical, **kw, beta=1e308), env, seed=0)
    edge = 0.99 * math.sqrt(sys.float_info.max * 1e-10)  # beta^2 / lam just finite
    with pytest.raises(PrivacyParameterError, match="beta"):
        LSVIUCB(env, practical, **kw, beta=edge * 1.02)
    agent = LSVIUCB(env, practical, **kw, beta=edge)
    assert np.isfinite(privrl.run(agent, env, seed=0).regret).all()
    for priv, exploration in ((practical, "optimism"), (JointDP(1.0, 1e-5), "sampling")):
        agent = LSVIUCB(env, priv, **{**kw, "exploration": exploration}, beta=1e308)
        assert np.isfinite(privrl.run(agent, env, seed=0).regret).all()


@pytest.mark.parametrize("lam", [5e-324, 1e-310, 1e-308, 1e-306, 1e-305])
@pytest.mark.parametrize(
    "privacy",
    [
        NonPrivate(),
        NonPrivate(calibration="paper"),
        JointDP(1.0, 1e-3),
        JointDP(1.0, 1e-3, calibration="practical"),
        JointDP(1.0, 0.0, calibration="tight"),
        JointDP(1.0, 0.0),
    ],
)
def test_a_tiny_lam_is_refused_as_too_small(lam, privacy):
    """lam near the bottom of the doubles: at 1e-308 the non-private, practical and adaptive
    agents were refused with 'U_K must be finite and > 0, got inf' (App. D's internal U_K), the
    adaptive JDP agent at 1e-305 with 'lam = 1e-305 is too large ...; pass a smaller lam' (the
    wrong way), a subnormal lam by the Rust kernel with '1/lambda finite, got 0.000...' or, under
    the tight calibration, built and then stopped mid-run with a NonFiniteError. Every refusal
    now says lam is too small; an agent that is built runs its users with a finite billboard."""
    env = RandomLinearMDP(S=6, A=2, d=3, H=2, seed=1)
    try:
        agent = LSVIUCB(env, privacy, episodes=30, seed=1, lam=lam, exploration="optimism")
    except PrivacyParameterError as e:
        assert re.search(r"lam = \S+ is too small", str(e)) and "U_K must" not in str(e), str(e)
        return
    try:
        privrl.run(agent, env, seed=1)
    except PrivrlError as e:  # the exact server's first update: 'lam = 1e-306 is too small for features ...'
        assert re.search(r"lam = \S+ is too small", str(e)) and privacy.kind == "none", str(e)
        return
    release = agent.release()
    assert np.isfinite(release.inverse).all() and np.isfinite(release.weights).all()


@pytest.mark.parametrize("scale", [1e-170, 1e-250])
@pytest.mark.parametrize("privacy", [JointDP(1.0, 1e-3), JointDP(1.0, 0.0)])
def test_small_features_do_not_overflow_the_centre_norm(scale, privacy):
    """The adaptive rule's centre direction w1 (phi^T w1 = 1) scales as 1 / ||phi||: at features of
    norm 1e-170 its entries are ~1e170, finite, but np.linalg.norm squared them to inf, and the
    agent was refused with 'lam = 1 is too large for the adaptive private release ... unless lam
    <= 0; pass a smaller lam' (no lam can be). The norm is taken without overflow: the agent is
    built and learns with a finite billboard, as on the same features of norm ~1."""
    gymnasium = pytest.importorskip("gymnasium")
    phi = np.random.default_rng(0).dirichlet(np.ones(3), size=(16, 4))
    for features in (phi, phi * scale):
        agent = LSVIUCB(FeatureMap(features, 5), privacy, episodes=40, seed=1, batches=8)
        privrl.learn(agent, gymnasium.make("FrozenLake-v1"), seed=0)
        release = agent.release()
        assert np.isfinite(release.weights).all() and np.isfinite(release.inverse).all()


def test_a_tiny_p_is_refused_by_the_practical_calibration():
    """The practical calibration's noise bounds at alpha = p / (6 K H): at p = 1e-300, K = 10^7,
    H = 20 alpha is subnormal, 1 / alpha overflows, and the agent was built with Upsilon = c_K =
    C = inf (every other calibration refused it). Now refused, naming p; p = 1e-100 builds with
    finite bounds."""
    env = RandomLinearMDP()
    with pytest.raises(PrivacyParameterError, match=r"p = 1e-300 is too small"):
        LSVIUCB(env, JointDP(1.0, 1e-8, calibration="practical", p=1e-300), episodes=10**7, seed=0)
    cal = LSVIUCB(
        env, JointDP(1.0, 1e-8, calibration="practical", p=1e-100), episodes=10**7, seed=0
    ).calibration
    assert all(math.isfinite(v) and v > 0 for v in (cal.Upsilon, cal.c_K, cal.C))

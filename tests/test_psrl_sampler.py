"""PSRL's release noise by sampler: the agents' exact discrete Gaussian (the default; privrl's one
sampler, NoiseStream::privatize, the increment rounded to the lattice sigma 2^-24) or float N(0,
sigma^2) (unchanged bit for bit). The draw-for-draw replays of both are in test_psrl_agent.py."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

import privrl
from privrl import _core
from privrl.agents.psrl.agent import PSRL
from privrl.agents.psrl.calibration import calibrate_psrl
from privrl.agents.psrl.formulas import psrl_batch_bounds
from privrl.agents.psrl.reference import capped_increment
from privrl.common.errors import PrivacyParameterError
from privrl.envs.features import FeatureMap
from privrl.kernels import NoiseStream
from privrl.privacy import JointDP, NonPrivate


def _core_run(S, A, H, K, B, sigma, sampler, seed=3, record=False):
    """K users of _core.PsrlAgent on uniformly random episodes (numpy default_rng(0)); returns the
    agent, the users' policies and their (s, a, r, s') rows."""
    agent = _core.PsrlAgent(
        n_states=S,
        n_actions=A,
        horizon=H,
        episodes=K,
        m=1,
        sigma=sigma,
        sampler=sampler,
        bounds=[int(b) for b in psrl_batch_bounds(K, B)],
        reject=True,
        noise_seed=bytes([seed]) * 32,
        exploration_seed=bytes([seed + 1]) * 32,
        alpha0=1.0,  # the uniform Dirichlet prior the float pin below was first recorded with
    )
    agent.set_record(record)
    g = np.random.default_rng(0)
    pis, trajs = [], []
    for _ in range(K):
        pi = agent.policy()
        pis.append(pi)
        st = g.integers(S, size=H + 1)
        ac = pi[np.arange(H), st[:-1]].astype(np.int64)
        r = g.random(H)
        agent.observe(st, ac, r)
        trajs.append((st[:-1], ac, r, st[1:]))
    return agent, np.stack(pis), trajs


def _sha(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def test_the_float_sampler_is_unchanged_bit_for_bit():
    """Fingerprints of the billboard and policies from sampler="float". Recorded with the build
    before the discrete sampler existed (commit 86dbb00, whose core drew float noise only):
    (4, 05152a9288fda867, 41bfcf14d2d661a0), reproduced by every build up to 2752990; re-recorded
    when the reward prior became Beta(1 + R, n - R) (formulas.psrl_reward_prior): the users follow
    their policies here, so the billboard moved with them. The float release itself, for users
    who do not follow the policies, is pinned across that change in test_psrl_agent.py
    (test_the_reward_prior_moves_the_policies_and_not_the_release_or_the_report[float])."""
    agent, pis, _ = _core_run(5, 3, 6, 200, 5, 2.0, "float")
    N, R, j = agent.billboard()
    assert (j, _sha(N, R), _sha(pis)) == (4, "d4c21b4bd71d762b", "570ba584fb8277ba")


def test_the_float_sampler_through_learn_is_unchanged_bit_for_bit(monkeypatch):
    """The class on gymnasium's slippery FrozenLake (K 3,000, seed 0), JointDP(10, 1e-5,
    sampler="float"): billboard, returns and greedy policy, with the float-only build's uniform
    Dirichlet(1) prior (the agent's prior is now formulas.psrl_prior, 1/S). As the float-only build
    gave them until 2752990: (2, d963654dc72f6303, 816f5822ccc648e6, 1fe967d29775415b); re-recorded
    when the reward prior became Beta(1 + R, n - R) (formulas.psrl_reward_prior, not monkeypatched:
    the core has no other), which changes the users' policies, hence what they release."""
    gym = pytest.importorskip("gymnasium")
    monkeypatch.setattr("privrl.agents.psrl.agent.psrl_prior", lambda S: 1.0)
    env = gym.make("FrozenLake-v1", is_slippery=True)
    fm = FeatureMap.one_hot_for(env, 20)
    agent = PSRL(fm, JointDP(10.0, 1e-5, sampler="float"), episodes=3000, seed=0)
    res = privrl.learn(agent, env, seed=0)
    N, R, j = agent.billboard()
    got = (j, _sha(N, R), _sha(np.asarray(res.returns)), _sha(agent.greedy_policy()))
    assert got == (2, "aed6614f61c9a8cd", "ab8c6dcc6febd13f", "ff7cc5d127410c13")


def test_the_default_is_the_discrete_sampler_and_the_report_says_so():
    """PSRL's default is every agent's: the calibration without a sampler argument (same sigma),
    the report's sampler, the core's law. Non-private: no sampler, the float path times 0."""
    fm = FeatureMap.one_hot(16, 4, 20)
    agent = PSRL(fm, JointDP(10.0, 1e-5), episodes=20_000, seed=0)
    cal = calibrate_psrl("jdp", 10.0, 1e-5, 16, 4, 20, 20_000)
    assert agent.calibration == cal and agent.calibration.sigma == cal.sigma == 4.471144133729252
    rep = agent.privacy_report()
    assert rep["sampler"]["name"] == "discrete" and rep["within_target"]["tight"]
    assert (agent._core.sampler, agent._core.grid_bits) == ("discrete", 24)
    none = PSRL(fm, NonPrivate(), episodes=10, seed=0)
    assert none.calibration.sampler is None and none._core.sampler == "float"


def test_the_discrete_release_is_privrls_one_sampler_on_the_lattice():
    """Each release is the batch's capped increment x (counts then reward sums, one vector) through
    privrl.kernels.NoiseStream("discrete_gaussian", sigma, grid_bits=24).privatize on the agent's
    noise seed, bit for bit; its recorded noise z is integer and released = (rint(x / u) + z) u."""
    S, A, H, K, B, sigma = 4, 2, 5, 60, 4, 1.3
    agent, _, trajs = _core_run(S, A, H, K, B, sigma, "discrete", record=True)
    noise_log, _ = agent.draw_record()
    stream = NoiseStream("discrete_gaussian", sigma, seed=bytes([3]) * 32, grid_bits=24)
    u = sigma * 2.0**-24
    assert stream.lattice_unit() == u
    bounds, board = psrl_batch_bounds(K, B), np.zeros(S * A * S + S * A)
    for j in range(B - 1):
        batch = np.array(trajs[int(bounds[j]) : int(bounds[j + 1])], float).transpose(1, 0, 2)
        x = np.concatenate([a.ravel() for a in capped_increment(*batch, S, A, 1)])
        released = stream.privatize(x[None])[0]
        kind, shape, z = noise_log[j]
        assert (kind, shape) == ("discrete_gaussian", (x.size,))
        np.testing.assert_array_equal(z, np.rint(z))
        np.testing.assert_array_equal((np.rint(x / u) + z) * u, released)
        board = board + released
    N, R, j = agent.billboard()
    assert j == B - 1
    np.testing.assert_array_equal(np.concatenate([N.ravel(), R.ravel()]), board)


def test_the_discrete_noise_has_variance_sigma2_per_cell():
    """A release after every user (B = K = 2,001: 2,000 releases of n = 18 + 6 cells): each cell's
    2,000 noises z u have mean 0 and variance sigma^2 (the discrete Gaussian's variance parameter;
    its variance differs by ~e^(-2 pi^2 4^24)): n chi-square bands at 5 sd (var sd sqrt(2 / 2000)),
    and the pooled 48,000 within 5 sd (0.032)."""
    S, A, H, K, sigma = 3, 2, 3, 2001, 0.8
    agent, _, _ = _core_run(S, A, H, K, K, sigma, "discrete", record=True)
    noise_log, _ = agent.draw_record()
    z = np.stack([v for _, _, v in noise_log]) * (sigma * 2.0**-24) / sigma  # (2000, 24), unit scale
    T, n = z.shape
    assert (T, n) == (K - 1, S * A * S + S * A)
    assert np.all(np.abs(z.mean(0)) < 5 / np.sqrt(T))
    v = (z**2).mean(0)  # T v ~ chi-square(T) per cell
    assert np.all(np.abs(v - 1.0) < 5 * np.sqrt(2.0 / T)), v
    assert abs((z**2).mean() - 1.0) < 5 * np.sqrt(2.0 / z.size)


def test_a_seeded_discrete_agent_is_reproducible():
    fm = FeatureMap.one_hot(5, 3, 6)

    def run(seed):
        agent = PSRL(fm, JointDP(3.0, 1e-5), episodes=120, seed=seed)
        g, pis = np.random.default_rng(1), []
        for _ in range(120):
            pi = agent.policy()
            pis.append(pi)
            st = g.integers(5, size=7)
            agent._core.observe(st, pi[np.arange(6), st[:-1]].astype(np.int64), g.random(6))
        return agent.billboard(), np.stack(pis)

    (N1, R1, j1), p1 = run(4)
    (N2, R2, j2), p2 = run(4)
    assert j1 == j2 > 0
    np.testing.assert_array_equal(N1, N2)
    np.testing.assert_array_equal(R1, R2)
    np.testing.assert_array_equal(p1, p2)
    assert not np.array_equal(run(5)[0][0], N1)


def test_the_discrete_sampler_refuses_what_it_cannot_draw():
    kw = dict(n_states=2, n_actions=2, horizon=2, episodes=3, m=1, bounds=[0, 3], reject=True)
    seeds = dict(noise_seed=bytes(32), exploration_seed=bytes(32), alpha0=1.0)
    with pytest.raises(PrivacyParameterError, match="sigma > 0"):
        _core.PsrlAgent(**kw, sigma=0.0, sampler="discrete", **seeds)
    with pytest.raises(ValueError, match="sampler must be"):
        _core.PsrlAgent(**kw, sigma=1.0, sampler="discreet", **seeds)
    with pytest.raises(ValueError, match="grid_bits only"):
        _core.PsrlAgent(**kw, sigma=1.0, sampler="float", grid_bits=24, **seeds)
    with pytest.raises(PrivacyParameterError, match="grid_bits"):
        _core.PsrlAgent(**kw, sigma=1.0, sampler="discrete", grid_bits=25, **seeds)
    # a lattice too fine for K users' sums is refused at construction (the agents' check_release)
    fm = FeatureMap.one_hot(16, 4, 20)
    with pytest.raises(PrivacyParameterError, match="too fine"):
        PSRL(fm, JointDP(1e4, 1e-7), episodes=10**6, seed=0)
    flt = PSRL(fm, JointDP(1e4, 1e-7, sampler="float"), episodes=10**6, seed=0)
    assert flt.calibration.sampler == "float"

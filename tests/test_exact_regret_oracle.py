"""Exact values and a run's exact regret against an independent numpy oracle: the best of ALL
deterministic non-stationary policies, and each user's gap recomputed from the policy it played."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import privrl
from privrl.agents import LSVIUCB, UCRLVTR, LinUCB, UCRLVTRPlus
from privrl.envs import (
    ContextualBandit,
    FiniteMDP,
    HardToLearn,
    LinearMDP,
    LinearMixtureMDP,
    RandomLinearMDP,
    RandomLinearMixtureMDP,
    RiverSwim,
    RiverSwimMixture,
    SyntheticLinearMDP,
    tabular_linear_mdp,
)
from privrl.exceptions import AssumptionWarning
from privrl.privacy import JointDP, LocalDP, NonPrivate


# ------------------------------------------------------------------------------------------------
# the oracle: nothing of privrl's values code
# ------------------------------------------------------------------------------------------------
def oracle_values(P, R, pi):
    """V^pi (H+1, S) by a plain loop over states and next states."""
    H, S = P.shape[:2]
    V = np.zeros((H + 1, S))
    for h in range(H - 1, -1, -1):
        for s in range(S):
            a = int(pi[h, s])
            V[h, s] = R[h, s, a] + sum(P[h, s, a, t] * V[h + 1, t] for t in range(S))
    return V


def all_policy_values(P, R):
    """V^pi (N, H+1, S) of every deterministic non-stationary policy pi (N = A^(H S))."""
    H, S, A, _ = P.shape
    pols = np.array(list(itertools.product(range(A), repeat=H * S)), dtype=np.int64).reshape(-1, H, S)
    V = np.zeros((len(pols), H + 1, S))
    for h in range(H - 1, -1, -1):
        Q = R[h][None] + np.einsum("sat,nt->nsa", P[h], V[:, h + 1])
        V[:, h] = np.take_along_axis(Q, pols[:, h][:, :, None], axis=2)[:, :, 0]
    return V


def oracle_v1_star(P, R):
    V = np.zeros(P.shape[1])
    for h in range(P.shape[0] - 1, -1, -1):
        V = (R[h] + P[h] @ V).max(axis=1)
    return V


def _dist(rng, *shape, k):
    x = rng.random((*shape, k)) ** 3  # uneven, some near-zero entries
    return x / x.sum(-1, keepdims=True)


def _own_arrays(kind):
    """Time-inhomogeneous models with a non-trivial initial distribution, from one's own arrays."""
    rng = np.random.default_rng(11)
    H, S, A, d = 3, 4, 2, 3
    init = _dist(rng, k=S)
    if kind == "finite":
        return FiniteMDP(_dist(rng, H, S, A, k=S), rng.random((H, S, A)), init)
    if kind == "tabular":
        return tabular_linear_mdp(_dist(rng, H, S, A, k=S), rng.random((H, S, A)), init)
    if kind == "linear":
        mu = _dist(rng, H, d, k=S).transpose(0, 2, 1)
        return LinearMDP(_dist(rng, S, A, k=d), mu, rng.random((H, d)), init)
    basis, q = _dist(rng, d, S, A, k=S), _dist(rng, H, k=d)
    feats = basis.transpose(1, 2, 3, 0) / np.sqrt(d)
    return LinearMixtureMDP(feats, np.sqrt(d) * q, rng.random((H, S, A)), init)


def _synthetic(H, n_actions, seed):
    with pytest.warns(AssumptionWarning, match="Asm. 1"):  # its published mu bound, as documented
        return SyntheticLinearMDP(H=H, n_actions=n_actions, seed=seed)


TINY = {
    "RiverSwim": lambda: RiverSwim(S=3, H=4),
    "RiverSwimMixture": lambda: RiverSwimMixture(S=4, H=3),
    "RandomLinearMDP": lambda: RandomLinearMDP(S=4, A=3, d=3, H=2, seed=2),
    "SyntheticLinearMDP": lambda: _synthetic(4, 3, 3),
    "RandomLinearMixtureMDP": lambda: RandomLinearMixtureMDP(S=3, A=3, d=3, H=3, seed=4),
    "HardToLearn": lambda: HardToLearn(d=3, H=2, K=100, seed=2),
    "FiniteMDP": lambda: _own_arrays("finite"),
    "tabular_linear_mdp": lambda: _own_arrays("tabular"),
    "LinearMDP": lambda: _own_arrays("linear"),
    "LinearMixtureMDP": lambda: _own_arrays("mixture"),
}


@pytest.mark.parametrize("family", sorted(TINY))
def test_optimal_values_are_the_best_of_all_deterministic_policies(family):
    """V*_h(s) = max over every deterministic non-stationary policy (per state and per step), the
    initial value is init_dist @ V*_1, pi* attains it, and random_regret is the uniformly random
    policy's regret by the oracle's own backward induction."""
    env = TINY[family]()
    P, R, init = np.array(env.P), np.array(env.R), np.array(env.init_dist)
    V = all_policy_values(P, R)
    best = V.max(axis=0)
    np.testing.assert_allclose(env.optimal_values(), best, rtol=0, atol=1e-12)
    assert env.initial_value(env.optimal_values()) == pytest.approx((V[:, 0] @ init).max(), abs=1e-12)
    np.testing.assert_allclose(oracle_values(P, R, env.optimal_policy()), best, rtol=0, atol=1e-12)
    v = np.zeros(env.S)
    for h in range(env.H - 1, -1, -1):
        v = (R[h] + P[h] @ v).mean(axis=1)
    assert env.random_regret() == pytest.approx(init @ best[0] - init @ v, abs=1e-12)


def _played_gaps(make_agent, env, K, seed):
    """Users one at a time on one Generator: the policy each played (agent.policy(), a look) and
    its gap by the oracle, with the run's gaps; and the run of the K users in one call."""
    agent, rng = make_agent(), np.random.default_rng(seed)
    mine, theirs = [], []
    bandit = isinstance(env, ContextualBandit)
    if not bandit:
        P, R = np.array(env.P), np.array(env.R)
        v1 = oracle_v1_star(P, R)
    for _ in range(K):
        pi = np.array(agent.policy())
        res = privrl.run(agent, env, episodes=1, seed=rng)
        s = int(res.initial_states[0])
        if bandit:
            m = np.array(env.means)
            mine.append(m[s].max() - m[s, pi[0, s]])
        else:
            mine.append(v1[s] - oracle_values(P, R, pi)[0, s])
        theirs.append(res.gaps[0])
    whole = privrl.run(make_agent(), env, episodes=K, seed=seed)
    return np.array(mine), np.array(theirs), whole


RUNS = {
    "LSVI-UCB NonPrivate": (lambda e: LSVIUCB(e, NonPrivate(), batches="every", episodes=30, seed=3), "lin"),
    "LSVI-UCB JDP": (lambda e: LSVIUCB(e, JointDP(1.0, 1e-5), episodes=30, seed=3), "lin"),
    "LSVI-UCB factors": (lambda e: LSVIUCB(e, NonPrivate(), batches="every", episodes=30, seed=3), "big"),
    "UCRL-VTR JDP": (lambda e: UCRLVTR(e, JointDP(1.0, 1e-5), episodes=30, seed=3), "mix"),
    "UCRL-VTR+ LDP": (lambda e: UCRLVTRPlus(e, LocalDP(1.0, 1e-5), episodes=30, seed=3), "hard"),
    "LinUCB JDP": (lambda e: LinUCB(e, JointDP(1.0, 1e-5), episodes=60, seed=3), "bandit"),
}


def _run_env(kind):
    rng = np.random.default_rng(5)
    if kind == "lin":  # time-inhomogeneous, non-trivial start, dense rows
        return _own_arrays("linear")
    if kind == "big":  # 2 d < S and a large P: the exact values go through the kernel's factors
        env = RandomLinearMDP(S=300, A=3, d=8, H=3, seed=0)
        assert env.kernel_factors()
        return env
    if kind == "mix":
        return RandomLinearMixtureMDP(S=6, A=3, d=3, H=4, seed=2)
    if kind == "hard":
        return HardToLearn(d=3, H=3, K=200)
    x = rng.normal(size=(12, 3))
    return ContextualBandit(x / (1.01 * np.linalg.norm(x, axis=1).max()), rng.random((12, 3)))


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_runs_gaps_are_the_exact_regret_of_the_policies_played(name):
    make, kind = RUNS[name]
    env = _run_env(kind)
    K = 60 if kind == "bandit" else 30
    mine, theirs, whole = _played_gaps(lambda: make(env), env, K, seed=7)
    np.testing.assert_allclose(theirs, mine, rtol=0, atol=1e-12)
    assert np.array_equal(whole.gaps, theirs)  # one call = the users one at a time, bit for bit
    assert np.array_equal(whole.regret, np.cumsum(whole.gaps))
    assert whole.gaps.min() >= -1e-12 and whole.regret[-1] > 0  # not a run of optimal policies only

"""The Rust PSRL core (privrl._core.PsrlAgent, work in progress) against its numpy oracle
privrl.agents.psrl.reference, draw for draw: the reference replays the agent's own recorded draws."""

from __future__ import annotations

import numpy as np
import pytest

from privrl import _core
from privrl.agents.psrl.formulas import psrl_batch_bounds
from privrl.agents.psrl.reference import Billboard, Replay, capped_increment, user_policy


def _random_mdp(S, A, seed):
    g = np.random.default_rng(seed)
    P = g.dirichlet(np.full(S, 0.3), size=(S, A))
    R = g.random((S, A, S)) * (g.random((S, A, S)) < 0.3)
    return P, R


def _run_agent(P, R, H, K, B, sigma, m, seed):
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
        bounds=[int(b) for b in psrl_batch_bounds(K, B)],
        reject=True,
        noise_seed=bytes([seed]) * 32,
        exploration_seed=bytes([seed + 1]) * 32,
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


@pytest.mark.parametrize(
    "S, A, H, K, B, sigma, m",
    [(5, 3, 6, 40, 4, 2.0, 1), (5, 3, 6, 40, 5, 0.7, 2), (4, 2, 5, 12, 12, 0.0, 1)],
)
def test_the_reference_replays_the_agents_draws_to_the_same_release_and_policies(S, A, H, K, B, sigma, m):
    P, R = _random_mdp(S, A, seed=S + K)
    agent, pis, trajs = _run_agent(P, R, H, K, B, sigma, m, seed=3)
    noise_log, explore_log = agent.draw_record()
    noise, rng = Replay(noise_log), Replay(explore_log)
    board = Billboard(S, A, sigma)
    bounds = psrl_batch_bounds(K, B)
    for j in range(B):
        k0, k1 = int(bounds[j]), int(bounds[j + 1])
        for k in range(k0, k1):
            # policies equal: Q ties (within reference.TIE) go to the same recorded uniform
            np.testing.assert_array_equal(user_policy(board, H, rng), pis[k], err_msg=f"user {k}")
        if j < B - 1:
            batch = np.array([trajs[k] for k in range(k0, k1)], float).transpose(1, 0, 2)
            board.publish(*capped_increment(*batch, S, A, m), noise)
    assert noise.i == len(noise_log) == 2 * (B - 1) and rng.i == len(explore_log)
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

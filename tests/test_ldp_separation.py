"""Issue 14, item 3: under LDP the user-side randomizer, its noise key and its clip count are a
separate part of the agent from the server, which never holds them: everything the server holds
(its whole state, serialized: ``agent._core.server_state(i)``) contains no user key and no raw
statistic of any user, while the user side (``agent._core.intake_state(i)``: the guard and the
randomizer streams) keeps its own key and clip count."""

from __future__ import annotations

import numpy as np
import pytest

from privrl.agents import UCRLVTR, UCRLVTRPlus
from privrl.common.checks import seed_bytes
from privrl.envs import RiverSwimMixture
from privrl.privacy import LocalDP, NonPrivate

SEED = 0


def _phi_v(features, s, a, v):
    """phi_V(s, a) = sum_s' phi(s'|s, a) V(s'), summed in increasing s' from +0.0 as the agents
    do (privrl._core's mixture kernel): the very bits the user computes."""
    out = np.zeros(features.shape[-1])
    for sp in range(features.shape[2]):
        if v[sp] != 0.0:
            out = out + v[sp] * features[s, a, sp]
    return out


def _normalized(features, s, a, v, H):
    """The adaptive rule's normalized target over the next states (rust/agents/vtr.rs): zero off
    the support of (s, a), H (V - lo) / (hi - lo) on it (H where V is flat there)."""
    support = [sp for sp in range(features.shape[2]) if np.any(features[s, a, sp])]
    lo, hi = min(v[sp] for sp in support), max(v[sp] for sp in support)
    f = np.zeros(features.shape[2])
    for sp in support:
        f[sp] = float(H) if hi - lo <= 1e-9 else H * ((v[sp] - lo) / (hi - lo))
    return f


def _user(agent, env, rng):
    """One user through `agent`; returns the raw statistics it computed before anything left it:
    [(X (H, d), y (H,)) per regression] (UCRL-VTR: X_h = phi_{V_{h+1}}(s_h, a_h), y_h =
    V_{h+1}(s_{h+1}); UCRL-VTR+: those divided by sigma-bar, then phi_{V^2}, V^2; under the
    adaptive rule with the normalized target f_h in place of V_{h+1})."""
    pi, V = agent.policy(), agent.values()
    traj = env.sample_episode(pi, rng)
    agent.observe(traj)
    s, a, H = traj.states, traj.actions, agent.H
    if agent.calibration.release_rule == "adaptive":
        # the adaptive rule's normalized target f_h in place of V_{h+1} (row h + 1 of V)
        F = np.stack([_normalized(agent.mixture_features, s[h], a[h], V[h + 1], H) for h in range(H)])
        V = np.vstack([np.zeros((1, F.shape[1])), F])
    X = np.stack([_phi_v(agent.mixture_features, s[h], a[h], V[h + 1]) for h in range(H)])
    y = np.array([V[h + 1, s[h + 1]] for h in range(H)])
    if not isinstance(agent, UCRLVTRPlus):
        return [(X, y)]
    X2 = np.stack([_phi_v(agent.mixture_features, s[h], a[h], V[h + 1] * V[h + 1]) for h in range(H)])
    sig = agent.last_sigma_bar
    return [(X / sig[:, None], y / sig), (X2, y * y)]


def _pieces(X, y):
    """The raw statistics' byte strings: X X^T and X y, whole and per step (all-zero ones carry
    nothing and are skipped: zero bytes occur in any encoding)."""
    gram, target = np.einsum("hi,hj->hij", X, X), X * y[:, None]
    out = []
    for stat in (gram, target):
        out += [stat, *stat]
    return [p.tobytes() for p in out if p.any()]


@pytest.mark.parametrize("cls", [UCRLVTR, UCRLVTRPlus])
def test_raw_statistics_are_reproduced_bit_for_bit(cls):
    """The raw statistics this file looks for are the agent's own bits: a non-private agent's exact
    sums after one user are that user's X X^T (off the diagonal, where lam is not added) and X y."""
    env = RiverSwimMixture(S=4, H=3)
    agent = cls(env, NonPrivate(), episodes=5, seed=SEED)
    stats = _user(agent, env, np.random.default_rng(1))
    iu = np.triu_indices(agent.d, 1)
    for i, (X, y) in enumerate(stats):
        gram, target = agent._core.sums(i)
        assert np.any(X)
        np.testing.assert_array_equal(gram[:, iu[0], iu[1]], np.einsum("hi,hj->hij", X, X)[:, iu[0], iu[1]])
        np.testing.assert_array_equal(target, X * y[:, None])


@pytest.mark.parametrize("cls", [UCRLVTR, UCRLVTRPlus])
@pytest.mark.parametrize("calibration", ["paper", "practical", "adaptive"])
def test_ldp_server_holds_no_user_key_and_no_raw_statistic(cls, calibration):
    env = RiverSwimMixture(S=4, H=3)
    agent = cls(env, LocalDP(2.0, 1e-5, calibration=calibration), episodes=30, seed=SEED)
    n_regs = 2 if cls is UCRLVTRPlus else 1
    H = agent.H
    # the agent's seeds: ties, privacy noise (2H per regression; the randomizer of regression i
    # keys its two streams with the first two of its block), exploration
    root = np.random.SeedSequence(SEED).spawn(3)
    noise = [seed_bytes(s) for s in root[1].spawn(2 * H * n_regs)]
    keys = [noise[2 * H * i : 2 * H * i + 2] for i in range(n_regs)]
    every_seed = [*noise, seed_bytes(root[0]), seed_bytes(root[2])]
    raw: list[bytes] = []  # what each user computed before randomizing it
    rng = np.random.default_rng(1)
    for _ in range(agent.K):
        for X, y in _user(agent, env, rng):
            raw += _pieces(X, y)
    assert agent.k == agent.K and len(raw) > agent.K
    for i in range(n_regs):
        server = agent._core.server_state(i)
        assert not any(s in server for s in every_seed), "the server holds a user-side key"
        # no raw per-user statistic, as is or per step
        assert not any(stat in server for stat in raw)
        # the user side does keep its own key, apart from the server
        intake = agent._core.intake_state(i)
        assert all(k in intake for k in keys[i])
    # ... and its clip count (the user side's guards)
    assert agent.clip_count == sum(agent._core.clips) == sum(g.clipped for g in agent.guards.values())

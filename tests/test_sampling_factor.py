"""LSVI-UCB under exploration="sampling" with the paper / tight / practical calibrations drew each
user's model from N(w~_h, beta^2 Lambda~_h^{-1}) by factorizing Lambda~_h^{-1} (O(d^3)) per user
and step, and evaluated that model's Q by the bonus kernel (O(S A d^2)) with a zero radius: at
Taxi's d = 3,000 one user took about a minute per step. The factor is now computed once per
release and step (kept in the agent's scratch space, not saved: a restored agent computes it
again), a diagonal Lambda~^{-1} (one-hot, non-private) keeps its diagonal only, and one-hot rows
read the sampled Q off the table. These tests hold the kept factor to the one computed afresh,
bit for bit, and the one-hot scale to its time."""

from __future__ import annotations

import pickle
import time

import numpy as np
import pytest

import privrl
from privrl.agents import LSVIUCB
from privrl.envs import FeatureMap, RandomLinearMDP
from privrl.envs.gym import frozen_lake
from privrl.privacy import JointDP, NonPrivate

_CASES = [
    ("lake", NonPrivate(calibration="paper"), "every"),  # a release per user, the lazy billboard
    ("lake", NonPrivate(calibration="tight"), 6),  # copied billboards between releases
    ("lake", JointDP(1.0, 1e-5, calibration="paper"), 4),  # dense noisy Lambda~
    ("lake", JointDP(10.0, 1e-5, calibration="practical"), 6),
    ("random", NonPrivate(calibration="paper"), 6),  # dense features: the dense factor and kernel
    ("random", JointDP(10.0, 1e-5, calibration="tight"), 4),
]


@pytest.mark.parametrize(("env_name", "privacy", "batches"), _CASES)
def test_the_kept_factor_is_the_fresh_one_bit_for_bit(tmp_path, env_name, privacy, batches):
    """One agent keeps its factors across users; its twin is pickled and restored (or saved and
    loaded) before every user, so it factorizes afresh each time: the same regret, returns and
    billboard, bit for bit, through several releases (one-hot FrozenLake: the diagonal factor
    where Lambda~^{-1} is diagonal; a random linear MDP's dense features)."""
    env = frozen_lake(H=6) if env_name == "lake" else RandomLinearMDP(S=12, A=3, d=6, H=5, seed=2)
    kw = dict(episodes=48, seed=4, batches=batches, exploration="sampling", beta=0.3)
    kept, fresh = LSVIUCB(env, privacy, **kw), LSVIUCB(env, privacy, **kw)
    a, b = [], []
    for k in range(kw["episodes"]):
        if k % 2:
            fresh = pickle.loads(pickle.dumps(fresh))
        else:
            fresh.save(tmp_path / "agent.pkl")
            fresh = LSVIUCB.load(tmp_path / "agent.pkl")
        a.append(privrl.run(kept, env, 1, seed=k))
        b.append(privrl.run(fresh, env, 1, seed=k))
    for name in ("regret", "returns"):
        x = np.concatenate([getattr(r, name) for r in a])
        y = np.concatenate([getattr(r, name) for r in b])
        assert x.tobytes() == y.tobytes()
    assert kept._core.releases == fresh._core.releases > 1
    for u, v in zip(kept._core.billboard(), fresh._core.billboard(), strict=True):
        assert np.asarray(u).tobytes() == np.asarray(v).tobytes()


@pytest.mark.slow
def test_sampling_at_taxi_scale_runs_in_seconds():
    """d = S A = 3,000 one-hot, H = 3, non-private with the paper calibration, 16 batches: 48
    users plan and report in well under a minute (before: about a minute per user and step)."""
    S, A, H, K = 600, 5, 3, 48
    agent = LSVIUCB(
        FeatureMap.one_hot(S, A, H=H),
        NonPrivate(calibration="paper"),
        episodes=K,
        seed=0,
        batches=16,
        exploration="sampling",
    )
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for _ in range(K):
        agent._core.policy()
        agent._core.observe(rng.integers(S, size=H + 1), rng.integers(A, size=H), rng.random(H))
    assert time.perf_counter() - start < 60
    assert agent._core.releases == 15

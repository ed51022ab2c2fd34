"""Tabular one-hot features at the size of gymnasium's Taxi (S A = 3,000): non-private LSVI-UCB
kept four dense d x d matrices per step, written in full (9 GB and 14-40 s to build at H = 30),
and the centre direction ran an O(d^3) least squares. The diagonal matrices are now written on
their diagonals only and the centre is read off the table; these tests hold the shortcuts to
the paths they replace, bit for bit, and the memory estimate to the measured peak."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import privrl
from privrl.agents import LSVIUCB
from privrl.agents.lsvi_ucb.agent import dense_entries
from privrl.envs import FeatureMap
from privrl.envs.gym import frozen_lake
from privrl.privacy import NonPrivate
from privrl.privacy.adaptive import centre_direction


def _tables() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    out = [FeatureMap.one_hot(S, A, 4).features.reshape(S * A, -1) for S, A in ((16, 4), (500, 6))]
    # shared columns, unused columns and zero rows: w1 is 1 on the used columns, 0 elsewhere
    cols = rng.integers(0, 40, size=90)
    t = np.zeros((90, 50))
    t[np.arange(90), cols] = 1.0
    t[::7] = 0.0
    out.append(t)
    return out


def test_the_one_hot_centre_is_least_squares():
    for i, t in enumerate(_tables()):
        w1, exact = centre_direction(t)
        ls = np.linalg.lstsq(t, np.ones(t.shape[0]), rcond=None)[0]
        if i < 2:  # FeatureMap.one_hot: every column used once, lstsq's answer bit for bit
            assert np.array_equal(w1, ls)
        # shared columns: the exact solution of the normal equations, which lstsq rounds
        np.testing.assert_allclose(w1, ls, rtol=0, atol=1e-14)
        np.testing.assert_array_equal(t.T @ t @ w1, t.T @ np.ones(t.shape[0]))
        assert exact == bool(np.abs(t @ ls - 1.0).max() <= 1e-9)
    # one nonzero a row but not 1: least squares as before
    t = 0.5 * np.eye(6)
    w1, exact = centre_direction(t)
    assert np.allclose(w1, 2.0) and exact


def test_a_restored_one_hot_agent_continues_bit_for_bit():
    """A pickled copy has neither the kernel's nor the billboard's 'off-diagonal known +0' flags
    (they are not saved), so it scans and copies in full where the running agent reads diagonals
    only: both finish with the same regret, over static batches (the billboard copied at every
    batch start) and past a refactorization (1,024 updates a step)."""
    env = frozen_lake(H=8, is_slippery=True)
    full = LSVIUCB(env, NonPrivate(), episodes=1300, seed=3, batches=13)
    half = LSVIUCB(env, NonPrivate(), episodes=1300, seed=3, batches=13)
    first = privrl.run(full, env, 500, seed=1).regret
    np.testing.assert_array_equal(privrl.run(half, env, 500, seed=1).regret, first)
    restored = pickle.loads(pickle.dumps(half))
    expected = privrl.run(full, env, 800, seed=2).regret
    np.testing.assert_array_equal(privrl.run(restored, env, 800, seed=2).regret, expected)


_PEAK = """
import sys
import numpy as np
from privrl.agents import LSVIUCB
from privrl.agents.lsvi_ucb.agent import dense_entries
from privrl.envs import FeatureMap
from privrl.privacy import NonPrivate
S, A, H, K = 600, 5, 8, 64
def peak():
    with open("/proc/self/status") as f:
        return next(int(x.split()[1]) * 1024 for x in f if x.startswith("VmHWM:"))
base = peak()
agent = LSVIUCB(FeatureMap.one_hot(S, A, H=H), NonPrivate(), episodes=K, seed=0, batches=16)
rng = np.random.default_rng(0)
for _ in range(K):
    agent._core.policy()
    agent._core.observe(rng.integers(S, size=H + 1), rng.integers(A, size=H), rng.random(H))
print(peak() - base)
"""


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads Linux's VmHWM")
def test_the_one_hot_memory_estimate_bounds_the_peak_and_the_dense_one_does_not_apply():
    """d = 3,000 one-hot, H = 8, non-private, 16 batches: the peak stays under the one-hot
    estimate (the refusal of check_memory) and under a quarter of the dense estimate (the
    diagonal matrices' pages are never mapped; before, the dense matrices were written in full:
    Taxi through privrl.learn at H = 30 peaked at 9.0 GB, 2.1 GB now)."""
    out = subprocess.run(
        [sys.executable, "-c", _PEAK], capture_output=True, text=True, check=True, timeout=300
    )
    used = float(out.stdout.split()[-1])
    d = 3000
    assert used <= 8 * dense_entries(8, d, d, False, one_hot=True)
    assert used <= 0.25 * 8 * dense_entries(8, d, d, False)

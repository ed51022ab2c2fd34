"""Issue 14, item 5: a long soak of the continual-release mechanisms the agents use (K = 10^6
leaves, the binary tree and BLT): no NaN, no drift of the released prefix from the exact sum plus
the recorded noise, the exact sum exact (integer leaves), the noise's variance as the mechanism
states it, and memory flat in K (the live node count stays O(log K), peak RSS does not grow)."""

from __future__ import annotations

import resource

import numpy as np
import pytest

from privrl import kernels as kn

K = 1_000_000


@pytest.mark.slow
@pytest.mark.parametrize("noise", ["gaussian", "discrete_gaussian"])
@pytest.mark.parametrize("kind", ["tree", "blt"])
def test_soak_one_million_leaves(kind, noise):
    d = 3
    # the discrete sampler on the agents' lattice, scale 2^-24 (integer leaves are on it)
    grid = {"grid_bits": 24} if noise.startswith("discrete") else {}
    m = kn.make_prefix_mechanism(kind, (d, d), K, noise=noise, scale=1.0, seed=7, **grid)
    # discrete BLT releases decode(round(C x) + z): it differs from exact + decoded noise by the
    # decoded rounding, at most half a lattice step per encoded entry times the decoder's L1 norm
    # (A C^{-1} = C for the square-root factorization: its coefficients' sum, the L1 multiplier)
    rounding = 2.0**-24 * (m.l1_sensitivity_multiplier + 1.0) if kind == "blt" and grid else 0.0
    rng = np.random.default_rng(0)
    # integer symmetric leaves: every partial sum is exact in floating point (|sum| < 2^53)
    base = rng.integers(-3, 4, size=(1024, d, d)).astype(np.float64)
    leaves = base + base.transpose(0, 2, 1)
    truth = np.zeros((d, d))
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    live = []
    for t in range(1, K + 1):
        leaf = leaves[t % 1024]
        m.push(leaf)
        truth += leaf
        if t & (t - 1) == 0 or t % 99_991 == 0 or t == K:  # powers of two and a prime stride
            rel, noise, exact = m.release(), m.noise(), m.exact_sum()
            assert np.all(np.isfinite(rel)) and np.all(np.isfinite(noise))
            np.testing.assert_array_equal(exact, truth)  # the exact sum never drifts
            np.testing.assert_allclose(
                rel, exact + noise, rtol=0, atol=1e-9 * (1 + np.abs(exact).max()) + rounding
            )
            live.append(m.live_nodes)
    assert max(live) <= 64  # O(log K) node buffers (BLT: its fixed buffer count)
    # the released noise after K leaves: an off-diagonal entry has the variance the mechanism
    # states (variance_factor(K) * node variance); one draw, checked loosely (|z| < 6)
    off_var, _ = m.release_variance()
    assert abs(m.noise()[0, 1]) < 6 * np.sqrt(off_var)
    growth_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024
    assert growth_mb < 50, f"peak RSS grew by {growth_mb:.0f} MB over {K} leaves"

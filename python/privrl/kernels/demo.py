"""`privrl kernels`: a short tour of the Rust kernels against their numpy references."""

from __future__ import annotations

import time

import numpy as np

__all__ = ["kernel_demo"]


def kernel_demo() -> None:
    """A short tour of the Rust kernels against their numpy references."""
    from privrl import kernels as kn
    from privrl.kernels import reference as R

    rng = np.random.default_rng(0)
    d, n_states, n_actions = 16, 1000, 10
    phi = rng.uniform(-1, 1, (n_states * n_actions, d)) / np.sqrt(d)
    sm = kn.RankOneInverse(d, lam=1.0)
    t0 = time.perf_counter()
    sm.update_batch(phi[:1000])
    t_sm = time.perf_counter() - t0
    w = sm.solve(rng.standard_normal(d))
    t0 = time.perf_counter()
    q, _, a = kn.optimistic_values(
        phi, w, sm.inverse(), beta=1.0, n_actions=n_actions, upper=10.0, lower=0.0, ties="lowest"
    )
    t_q = time.perf_counter() - t0
    qr, _, ar = R.optimistic_values_ref(phi, w, sm.inverse(), 1.0, n_actions, 10.0, 0.0, ties="lowest")
    print(
        f"Sherman-Morrison: 1000 rank-one updates at d={d} in {t_sm * 1e3:.2f} ms, "
        f"max|Lambda Lambda^-1 - I| = {sm.inverse_error():.1e}"
    )
    print(
        f"Optimistic Q over {n_states} states x {n_actions} actions in {t_q * 1e3:.2f} ms; "
        f"max |Q - Q_numpy| = {np.abs(q - qr).max():.1e}, same greedy actions: {np.array_equal(a, ar)}"
    )
    tree = kn.TreeAggregator((d, d), capacity=1000, scale=1.0, seed=0)
    for _ in range(13):
        tree.push(np.zeros((d, d)))
    off, diag = tree.release_variance()
    print(
        f"Tree mechanism: after 13 leaves the release sums {tree.nodes_used} nodes "
        f"(<= ceil(log2 T + 1) = {tree.max_nodes}); per-entry noise variance {off:.1f} off-diagonal, "
        f"{diag:.1f} diagonal"
    )

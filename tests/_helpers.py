"""Shared test helpers (exact reference quantities used by several test files)."""

import numpy as np


def uniform_policy_gap(env):
    """Exact per-episode regret of the uniformly random (stochastic) policy."""
    V = np.zeros(env.S)
    for h in range(env.H - 1, -1, -1):
        V = (env.R[h] + env.P[h] @ V).mean(axis=1)
    return float(env.init_dist @ (env.optimal_values()[0] - V))

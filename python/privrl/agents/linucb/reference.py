"""LinUCB with disjoint arms, paper-shaped in numpy: a test oracle, never on a hot path.

Per arm a: G_a = lam I + sum_{users of a} x x^T, b_a = sum x r, w_a = G_a^{-1} b_a (exact), or from
the released sums (private): G~_a = released_a + (lam + shift) I, w~_a = G~_a^{-1} b~_a. A user of
context x plays argmax_a x^T w_a + beta s_a(x), s_a(x)^2 = sigma_r^2 x^T G_a^{-1} x +
gamma^2 ||G_a^{-1} x||^2 (optimism; ties to the lowest arm).
"""

from __future__ import annotations

import numpy as np

__all__ = ["exact_weights", "released_weights", "optimistic_arm"]


def exact_weights(contexts: np.ndarray, users: list[tuple[int, int, float]], arms: int, lam: float):
    """(G (A, p, p), G^{-1}, w (A, p)) of the exact server after ``users`` (context, arm, reward)."""
    p = contexts.shape[1]
    G = np.stack([lam * np.eye(p)] * arms)
    b = np.zeros((arms, p))
    for s, a, r in users:
        x = contexts[s]
        G[a] += np.outer(x, x)
        b[a] += r * x
    inv = np.linalg.inv(G)
    return G, inv, np.einsum("aij,aj->ai", inv, b)


def released_weights(gram: np.ndarray, target: np.ndarray, lam: float, shift: float):
    """(G~, G~^{-1}, w~) from the released per-arm sums (``gram`` (A, p, p), ``target`` (A, p))."""
    p = gram.shape[1]
    G = gram + (lam + shift) * np.eye(p)
    inv = np.linalg.inv(0.5 * (G + np.transpose(G, (0, 2, 1))))
    return G, inv, np.einsum("aij,aj->ai", inv, target)


def optimistic_arm(x: np.ndarray, inv: np.ndarray, w: np.ndarray, beta: float, sigma_r: float, gamma2: float):
    """The optimistic arm of context ``x`` (ties to the lowest index)."""
    g = np.einsum("aij,j->ai", inv, x)
    width = np.sqrt(sigma_r**2 * (g @ x) + gamma2 * np.sum(g * g, axis=1))
    return int(np.argmax(w @ x + beta * width))

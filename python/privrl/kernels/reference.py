"""Plain-numpy references of the Rust kernels: the oracle for the tests and the baseline
for `benches/compare.py`. Written for clarity, the way one would without the Rust core."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np


class TreeAggregatorRef:
    """Binary-mechanism prefix sums with an explicit stack of node noises (App. "Tree-based method").

    `noise_source(shape) -> array` draws one node's raw noise Z'; by default i.i.d. N(0, sigma^2)
    from a numpy Generator. Matrix nodes are symmetrized literally as (Z' + Z'^T) / divisor.
    Pass `node_noise` to `push` to inject an already-symmetrized node noise (used to check the
    Rust aggregation against this reference bit for bit)."""

    def __init__(
        self,
        shape,
        capacity: int,
        sigma: float = 1.0,
        rng=None,
        divisor: float = math.sqrt(2.0),
        noise_source: Callable | None = None,
    ):
        self.shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.capacity = capacity
        self.divisor = divisor
        self.rng = rng if rng is not None else np.random.default_rng()
        self.noise_source = noise_source or (lambda shp: sigma * self.rng.standard_normal(shp))
        self.t = 0
        self.exact = np.zeros(self.shape)
        self.levels: list[int] = []
        self.nodes: list[np.ndarray] = []

    def _draw(self) -> np.ndarray:
        z = np.asarray(self.noise_source(self.shape), dtype=float)
        if len(self.shape) == 2:
            z = (z + z.T) / self.divisor
        return z

    def push(self, leaf, node_noise: np.ndarray | None = None) -> None:
        if self.t >= self.capacity:
            raise ValueError("tree is full")
        self.exact = self.exact + leaf
        self.t += 1
        level = 0
        while self.levels and self.levels[-1] == level:
            self.levels.pop()
            self.nodes.pop()
            level += 1
        self.levels.append(level)
        self.nodes.append(self._draw() if node_noise is None else np.asarray(node_noise))

    @property
    def nodes_used(self) -> int:
        return len(self.nodes)

    def noise(self) -> np.ndarray:
        total = np.zeros(self.shape)
        for z in self.nodes:
            total = total + z
        return total

    def release(self) -> np.ndarray:
        return self.exact + self.noise()


class ShermanMorrisonRef:
    """Lambda and Lambda^{-1} with one numpy Sherman-Morrison step per update."""

    def __init__(self, d: int, lam: float):
        self.matrix = lam * np.eye(d)
        self.inverse = np.eye(d) / lam

    def update(self, x) -> None:
        u = self.inverse @ x
        self.inverse = self.inverse - np.outer(u, u) / (1.0 + x @ u)
        self.matrix = self.matrix + np.outer(x, x)

    def update_batch(self, xs) -> None:
        for x in xs:
            self.update(x)


def optimistic_q_ref(phi, w, inv, beta, upper=math.inf, lower=-math.inf, offset=None):
    quad = ((phi @ inv) * phi).sum(axis=1)  # BLAS matmul, then row-wise dot
    q = phi @ w + beta * np.sqrt(np.maximum(quad, 0.0))
    if offset is not None:
        q = q + offset
    return np.clip(q, lower, upper)


def greedy_ref(q, ties: str = "random", rng=None):
    """Row-wise max and argmax; random tie-breaking by a uniform key on the maximizers."""
    vmax = q.max(axis=1)
    if ties == "lowest":
        return vmax, q.argmax(axis=1)
    rng = rng if rng is not None else np.random.default_rng()
    keys = np.where(q == vmax[:, None], rng.random(q.shape), -1.0)
    return vmax, keys.argmax(axis=1)


def optimistic_values_ref(
    phi, w, inv, beta, n_actions, upper=math.inf, lower=-math.inf, offset=None, ties="random", rng=None
):
    q = optimistic_q_ref(phi, w, inv, beta, upper, lower, offset).reshape(-1, n_actions)
    v, a = greedy_ref(q, ties, rng)
    return q, v, a


def state_values_ref(table, w, inv, beta, n_actions, upper=math.inf, lower=-math.inf, states=None):
    """Max over each state's action rows of the clipped optimistic Q (gathers the rows)."""
    table = np.asarray(table, dtype=np.float64)
    groups = table.reshape(-1, n_actions, table.shape[1])
    rows = groups if states is None else groups[np.asarray(states)]
    q = optimistic_q_ref(rows.reshape(-1, table.shape[1]), w, inv, beta, upper, lower)
    return q.reshape(-1, n_actions).max(axis=1)


def phi_v_ref(features, v):
    """features (S, A, S, d), v (S,) -> (S*A, d)."""
    S, A, _, d = features.shape
    return np.einsum("sand,n->sad", features, v).reshape(S * A, d)


# ---------------------------------------------------------------- continual-release references
# Each takes the innovations in the Rust stream's draw order (a NoiseStream with the same seed
# reproduces them) and returns the noise released at every step, computed the textbook way:
# explicit matrices and least squares instead of the Rust recursions.


def dyadic_nodes_in_draw_order(T: int) -> list[tuple[int, int]]:
    """Every dyadic node [a, b] (1-based leaves) completed within T leaves, in the order the
    Rust Honaker mechanism draws them: at step t the leaf [t, t], then each node ending at t,
    bottom-up."""
    nodes = []
    for t in range(1, T + 1):
        size = 1
        while t % size == 0:
            nodes.append((t - size + 1, t))
            size *= 2
    return nodes


def honaker_noise_ref(z: np.ndarray, T: int) -> np.ndarray:
    """Noise of the minimum-variance unbiased estimate of every prefix [1, t] from the noisy
    dyadic nodes completed by t (ordinary least squares on the node-incidence matrix: the node
    noises are i.i.d.), for innovations z (n_nodes, *shape) in draw order."""
    nodes = dyadic_nodes_in_draw_order(T)
    z = np.asarray(z, dtype=float)
    flat = z.reshape(len(nodes), -1)
    out = np.zeros((T, flat.shape[1]))
    for t in range(1, T + 1):
        idx = [k for k, (a, b) in enumerate(nodes) if b <= t]
        X = np.zeros((len(idx), t))
        for r, k in enumerate(idx):
            a, b = nodes[k]
            X[r, a - 1 : b] = 1.0
        # theta_hat = (X^T X)^{-1} X^T y; the prefix estimate's noise is 1^T theta_hat(z).
        coef = np.linalg.solve(X.T @ X, np.ones(t)) @ X.T
        out[t - 1] = coef @ flat[idx]
    return out.reshape((T, *z.shape[1:]))


def honaker_online_ref(z: np.ndarray, T: int) -> np.ndarray:
    """The same releases by Honaker's online recursion, written out: a stack of the complete
    subtrees of [1, t] with their estimates; a new leaf y merges with equal-level subtrees into
    est = w_l y_node + (1 - w_l)(est_left + est_right), w_l = 2^l / (2^(l+1) - 1), and the release
    is the sum of the stack. Node noises z (n_nodes, *shape) in draw order."""
    z = np.asarray(z, dtype=float)
    flat = z.reshape(z.shape[0], -1)
    out = np.zeros((T, flat.shape[1]))
    stack: list[tuple[int, np.ndarray]] = []
    k = 0
    for t in range(T):
        est, level = flat[k], 0
        k += 1
        while stack and stack[-1][0] == level:
            _, left = stack.pop()
            level += 1
            w = 2.0**level / (2.0 ** (level + 1) - 1.0)
            est = w * flat[k] + (1.0 - w) * (left + est)
            k += 1
        stack.append((level, est))
        out[t] = sum(e for _, e in stack)
    return out.reshape((T, *z.shape[1:]))


def honaker_leaf_multipliers_ref(T: int) -> np.ndarray:
    """m(i)^2 for every leaf i of a T-leaf Honaker tree, densely: M maps the node vector to the
    releases (the online recursion run on unit node vectors), Delta_i marks the nodes containing
    leaf i (how one unit of leaf data enters them), and the Gaussian mechanism's squared
    sensitivity in node-noise units is Delta_i^T M^T (M M^T)^+ M Delta_i."""
    nodes = dyadic_nodes_in_draw_order(T)
    M = honaker_online_ref(np.eye(len(nodes)), T)  # (T, n_nodes)
    P = M.T @ np.linalg.pinv(M @ M.T) @ M
    delta = np.array([[1.0 if a <= i <= b else 0.0 for a, b in nodes] for i in range(1, T + 1)])
    return np.einsum("ij,jk,ik->i", delta, P, delta)


def sqrt_factor_ref(T: int) -> np.ndarray:
    """L, the lower-triangular Toeplitz square root of the T x T prefix-sum matrix."""
    c = np.ones(T)
    for j in range(1, T):
        c[j] = c[j - 1] * (2 * j - 1) / (2 * j)
    row, col = np.indices((T, T))
    return np.where(row >= col, c[np.clip(row - col, 0, T - 1)], 0.0)


def factorization_noise_ref(z: np.ndarray) -> np.ndarray:
    """L z for innovations z (T, *shape)."""
    z = np.asarray(z, dtype=float)
    T = z.shape[0]
    return (sqrt_factor_ref(T) @ z.reshape(T, -1)).reshape(z.shape)


def blt_encoder_ref(T: int, theta, omega) -> np.ndarray:
    """The T x T BLT encoder C: c_0 = 1, c_j = sum_i omega_i theta_i^(j-1)."""
    theta, omega = np.asarray(theta, float), np.asarray(omega, float)
    c = np.ones(T)
    j = np.arange(1, T)
    if T > 1:
        c[1:] = (omega[None, :] * theta[None, :] ** (j[:, None] - 1)).sum(axis=1)
    i, k = np.indices((T, T))
    return np.where(i >= k, c[np.clip(i - k, 0, T - 1)], 0.0)


def blt_noise_ref(z: np.ndarray, theta, omega) -> np.ndarray:
    """A C^{-1} z (A the prefix-sum matrix) for innovations z (T, *shape)."""
    z = np.asarray(z, dtype=float)
    T = z.shape[0]
    C = blt_encoder_ref(T, theta, omega)
    x = np.linalg.solve(C, z.reshape(T, -1))
    return np.cumsum(x, axis=0).reshape(z.shape)

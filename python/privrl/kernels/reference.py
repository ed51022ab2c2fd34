"""Plain-numpy references of the Rust kernels: the oracle for the tests and the baseline
for `benches/compare.py`. Written for clarity, the way one would without the Rust core."""
from __future__ import annotations

import math
from typing import Callable

import numpy as np


class TreeAggregatorRef:
    """Binary-mechanism prefix sums with an explicit stack of node noises (App. "Tree-based method").

    `noise_source(shape) -> array` draws one node's raw noise Z'; by default i.i.d. N(0, sigma^2)
    from a numpy Generator. Matrix nodes are symmetrized literally as (Z' + Z'^T) / divisor.
    Pass `node_noise` to `push` to inject an already-symmetrized node noise (used to check the
    Rust aggregation against this reference bit for bit)."""

    def __init__(self, shape, capacity: int, sigma: float = 1.0, rng=None,
                 divisor: float = math.sqrt(2.0), noise_source: Callable | None = None):
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
        z = self.noise_source(self.shape)
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
    """Lambda and Lambda^{-1} with one numpy Sherman–Morrison step per update."""

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


def optimistic_values_ref(phi, w, inv, beta, n_actions, upper=math.inf, lower=-math.inf,
                          offset=None, ties="random", rng=None):
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

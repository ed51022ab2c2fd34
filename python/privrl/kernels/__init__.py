"""Typed Python front of the Rust kernels (tree-based noise, rank-one updates, batched
optimistic Q, mixture phi_V); the numpy references live in `privrl.kernels.reference`.

Every wrapper validates and converts its inputs once (C-contiguous float64, shapes, finite
values) and raises the privrl exception family; the Rust core re-checks lengths.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from privrl import _core
from privrl.exceptions import PrivacyParameterError, ShapeError
from privrl.kernels._validate import as_f64, seed_bytes, tie_seed

__all__ = [
    "TreeAggregator",
    "NoiseStream",
    "RankOneInverse",
    "MixtureFeatures",
    "optimistic_q",
    "optimistic_values",
    "state_values",
    "greedy",
    "spd_inverse",
    "spd_solve",
    "min_eigenvalue",
]

SQRT2 = math.sqrt(2.0)


def _positive_int(x: Any, name: str) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise PrivacyParameterError(f"{name} must be an integer >= 1, got {x!r}")
    if int(x) < 1:
        raise PrivacyParameterError(f"{name} must be >= 1, got {x}")
    return int(x)


class TreeAggregator:
    """Continual release of prefix sums of d-vectors or symmetric d x d matrices through the
    binary tree mechanism (App. "Tree-based method"; Shariff & Sheffet 2018, Sec. 4.2).

    shape: an int n (vectors of length n) or (d, d) (symmetric matrices).
    capacity: number of leaves T (episodes for Alg. 1, batches for Alg. 2); pushing leaf T+1
        raises CapacityError.
    noise: "gaussian" (entries N(0, scale^2)), "laplace" (entries Laplace(scale)) or "none".
    divisor: matrix node noise is (Z' + Z'^T) / divisor; sqrt(2) in App. B (Alg. 1), 2 in Alg. 2
        and for Laplace nodes (App. "Pure DP").
    seed: None draws the noise stream's key from OS entropy (the default for real privacy);
        an int / SeedSequence / 32 bytes gives a bit-reproducible stream.

    The exact data sum is kept on the side; `release()` returns exact sum + the noise of the
    popcount(t) <= ceil(log2 T + 1) nodes covering [1, t]. Memory is O(log T) nodes.
    """

    def __init__(self, shape: int | tuple[int, int], capacity: int, noise: str = "gaussian",
                 scale: float = 1.0, seed: Any = None, divisor: float = SQRT2,
                 keep_last_node: bool = False):
        if isinstance(shape, (tuple, list)):
            if len(shape) != 2 or shape[0] != shape[1]:
                raise ShapeError(f"matrix trees need a square shape (d, d), got {tuple(shape)}")
            self.d = _positive_int(shape[0], "d")
            self.symmetric = True
            self.shape: tuple[int, ...] = (self.d, self.d)
        else:
            self.d = _positive_int(shape, "vector length")
            self.symmetric = False
            self.shape = (self.d,)
        capacity = _positive_int(capacity, "capacity")
        if noise != "none":
            scale = float(scale)
            if not (math.isfinite(scale) and scale > 0):
                raise PrivacyParameterError(f"noise scale must be finite and > 0, got {scale}")
        else:
            scale = 0.0
        self.noise_kind = noise
        self.scale = scale
        self.divisor = float(divisor)
        self._tree = _core.TreeAggregator(self.symmetric, self.d, capacity, noise, scale,
                                          seed_bytes(seed), self.divisor, keep_last_node)

    def push(self, leaf: Any) -> None:
        """Add one leaf (the statistic of one episode or one batch)."""
        a = np.ascontiguousarray(leaf, dtype=np.float64)
        if a.shape != self.shape:
            raise ShapeError(f"leaf must have shape {self.shape}, got {a.shape}")
        self._tree.push(a.reshape(-1))  # Rust checks finiteness and capacity

    def push_zero(self) -> None:
        """Add an all-zero leaf (a step without data)."""
        self._tree.push_zero()

    def _shaped(self, flat: np.ndarray) -> np.ndarray:
        return flat.reshape(self.shape)

    def release(self) -> np.ndarray:
        """The private prefix sum: exact sum of the leaves so far + tree noise."""
        return self._shaped(self._tree.release())

    def noise(self) -> np.ndarray:
        """Only the noise part of the current release."""
        return self._shaped(self._tree.noise())

    def exact_sum(self) -> np.ndarray:
        """The exact prefix sum (server-internal, never released)."""
        return self._shaped(self._tree.exact_sum())

    def last_node_noise(self) -> np.ndarray:
        return self._shaped(self._tree.last_node_noise())

    def release_variance(self) -> tuple[float, float]:
        """Per-entry variance of the current release's noise: (off-diagonal, diagonal)."""
        return self._tree.release_variance()

    @property
    def steps(self) -> int:
        return self._tree.steps

    @property
    def capacity(self) -> int:
        return self._tree.capacity

    @property
    def nodes_used(self) -> int:
        """Nodes summed in the current release (popcount of the step count)."""
        return self._tree.nodes_used

    @property
    def max_nodes(self) -> int:
        """ceil(log2 T + 1): the most nodes any release uses (K0 / B0 of the paper)."""
        return self._tree.max_nodes

    @property
    def live_nodes(self) -> int:
        return self._tree.live_nodes

    @property
    def nodes_drawn(self) -> int:
        return self._tree.nodes_drawn


class NoiseStream:
    """A privacy-noise stream (ChaCha12) of i.i.d. Gaussian N(0, scale^2) or Laplace(scale)
    vectors and symmetric (Z' + Z'^T)/divisor matrices. seed=None keys it from OS entropy."""

    def __init__(self, noise: str = "gaussian", scale: float = 1.0, seed: Any = None):
        scale = float(scale)
        if noise != "none" and not (math.isfinite(scale) and scale > 0):
            raise PrivacyParameterError(f"noise scale must be finite and > 0, got {scale}")
        self.noise_kind, self.scale = noise, scale
        self._s = _core.NoiseStream(noise, scale if noise != "none" else 0.0, seed_bytes(seed))

    def vectors(self, count: int, n: int) -> np.ndarray:
        """(count, n) i.i.d. entries."""
        return self._s.vectors(int(count), int(n))

    def symmetric(self, count: int, d: int, divisor: float = SQRT2) -> np.ndarray:
        """(count, d, d) symmetric noise matrices."""
        return self._s.symmetric(int(count), int(d), float(divisor)).reshape(int(count), int(d), int(d))

    @property
    def draws(self) -> int:
        return self._s.draws


class RankOneInverse:
    """Lambda = lam I + sum x x^T and Lambda^{-1}, maintained by Sherman–Morrison in O(d^2)
    per update and re-factorized by Cholesky every `refactor_every` updates."""

    def __init__(self, d: int, lam: float, refactor_every: int = 1024):
        d = _positive_int(d, "d")
        lam = float(lam)
        if not (math.isfinite(lam) and lam > 0):
            raise PrivacyParameterError(f"lam must be finite and > 0, got {lam}")
        self.d = d
        self._sm = _core.ShermanMorrison(d, lam, _positive_int(refactor_every, "refactor_every"))

    def update(self, x: Any) -> None:
        self._sm.update(as_f64(x, "x", 1, (self.d,)))

    def update_batch(self, xs: Any) -> None:
        """Add the rows of an (n, d) block in one call."""
        self._sm.update_batch(as_f64(xs, "xs", 2, (None, self.d)))

    def matrix(self) -> np.ndarray:
        return self._sm.matrix()

    def inverse(self) -> np.ndarray:
        return self._sm.inverse()

    def solve(self, u: Any) -> np.ndarray:
        """Lambda^{-1} u."""
        return self._sm.solve(as_f64(u, "u", 1, (self.d,)))

    def refactorize(self) -> None:
        self._sm.refactorize()

    def inverse_error(self) -> float:
        """max |Lambda Lambda^{-1} - I|."""
        return self._sm.inverse_error()

    @property
    def updates(self) -> int:
        return self._sm.updates

    @property
    def lam(self) -> float:
        return self._sm.lam


def spd_inverse(a: Any) -> np.ndarray:
    """Inverse of a symmetric positive-definite matrix (Cholesky); NotPositiveDefiniteError otherwise."""
    a = as_f64(a, "matrix", 2)
    return _core.spd_inverse(a)


def spd_solve(a: Any, b: Any) -> np.ndarray:
    a = as_f64(a, "matrix", 2)
    return _core.spd_solve(a, as_f64(b, "b", 1, (a.shape[0],)))


def min_eigenvalue(a: Any) -> float:
    return _core.min_eigenvalue(as_f64(a, "matrix", 2))


def _q_inputs(phi, w, inv, offset):
    phi = as_f64(phi, "phi", 2)
    d = phi.shape[1]
    w = as_f64(w, "w", 1, (d,))
    inv = as_f64(inv, "inv", 2, (d, d))
    if offset is not None:
        offset = as_f64(offset, "offset", 1, (phi.shape[0],))
    return phi, w, inv, offset


def optimistic_q(phi: Any, w: Any, inv: Any, beta: float, upper: float = math.inf,
                 lower: float = -math.inf, offset: Any = None) -> np.ndarray:
    """clip_[lower, upper](offset + Phi w + beta sqrt(max(0, phi^T inv phi))) for every row."""
    phi, w, inv, offset = _q_inputs(phi, w, inv, offset)
    return _core.optimistic_q(phi, w, inv, float(beta), float(lower), float(upper), offset)


def greedy(q: Any, ties: str = "random", rng: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise (max, argmax) of q (n_states, n_actions); ties uniformly at random from rng
    (a Generator or an int seed) or by lowest index (ties="lowest")."""
    q = as_f64(q, "q", 2)
    return _core.group_max(q, tie_seed(ties, rng))


def optimistic_values(phi: Any, w: Any, inv: Any, beta: float, n_actions: int,
                      upper: float = math.inf, lower: float = -math.inf, offset: Any = None,
                      ties: str = "random", rng: Any = None):
    """Fused optimistic_q + greedy for phi of shape (n_states * n_actions, d), rows grouped by
    state. Returns (Q (n_states, n_actions), V (n_states,), greedy actions (n_states,))."""
    phi, w, inv, offset = _q_inputs(phi, w, inv, offset)
    n_actions = _positive_int(n_actions, "n_actions")
    if phi.shape[0] % n_actions:
        raise ShapeError(f"{phi.shape[0]} feature rows do not split into groups of {n_actions} actions")
    return _core.optimistic_values(phi, w, inv, float(beta), n_actions, float(lower), float(upper),
                                   offset, tie_seed(ties, rng))


def state_values(table: Any, w: Any, inv: Any, beta: float, n_actions: int,
                 upper: float = math.inf, lower: float = -math.inf, states: Any = None) -> np.ndarray:
    """V(s) = clip_[lower, upper](max_a phi(s,a) w + beta ||phi(s,a)||_inv) in one Rust call.

    table: (n_states * n_actions, d), rows grouped by state (row s * n_actions + a is phi(s,a)).
    states: int indices into the table's states (repeats allowed: one value per entry), or None
    for every state. The rows are read through the index, never copied into an (n * A, d) block.
    """
    table = as_f64(table, "table", 2)
    d = table.shape[1]
    w = as_f64(w, "w", 1, (d,))
    inv = as_f64(inv, "inv", 2, (d, d))
    n_actions = _positive_int(n_actions, "n_actions")
    if table.shape[0] % n_actions:
        raise ShapeError(f"{table.shape[0]} feature rows do not split into groups of {n_actions} actions")
    if states is not None:
        states = np.ascontiguousarray(states, dtype=np.int64)
        if states.ndim != 1:
            raise ShapeError(f"states must be a 1-d index array, got shape {states.shape}")
    return _core.state_values(table, w, inv, float(beta), n_actions, float(lower), float(upper), states)


class MixtureFeatures:
    """Linear-mixture features phi(s'|s,a) (Asm. 2) stored sparsely; `phi_v(v)` returns
    phi_V(s,a) = sum_s' phi(s'|s,a) V(s') for every (s,a) as an (S*A, d) array."""

    def __init__(self, features: Any):
        f = as_f64(features, "features", 4)
        S, A, S2, d = f.shape
        if S2 != S:
            raise ShapeError(f"features must have shape (S, A, S, d), got {f.shape}")
        self.S, self.A, self.d = S, A, d
        self._f = _core.MixtureFeatures(f.reshape(S * A, S, d))

    def phi_v(self, v: Any) -> np.ndarray:
        return self._f.phi_v(as_f64(v, "v", 1, (self.S,)))

    @property
    def nnz(self) -> int:
        return self._f.nnz

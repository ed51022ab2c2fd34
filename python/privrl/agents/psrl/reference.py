"""Private tabular PSRL on a time-homogeneous release, in numpy, top to bottom as probe 49 writes it
(/work/notes/probes49/probe.py, "psrl --denoise proj"): the test oracle of a future Rust agent. Never
on a hot path.

The release's noise comes from ``noise_rng`` (:meth:`Billboard.publish`) and the users' exploration
from ``rng`` (:func:`user_policy`), each a Stream passed in (a numpy Generator, or :class:`Replay` of
recorded draws), in a fixed documented order of draws (the same number whatever the data, also
without noise), so an agent that records its own draws can be compared with it draw for draw.
"""

# The episode (one user): H steps from `start`; the environment is stationary (P, R the same at
# every step h), so the release is pooled over h. A user's statistic counts only its first m visits
# of each (s, a) (the public cap: whether a visit counts depends on its index only, not on its
# outcome, so the counted transitions are still draws of P(.|s, a) and the estimate stays unbiased).
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from privrl.agents.psrl.formulas import (
    psrl_batch_bounds,
    psrl_num_batches,
    psrl_prior,
    psrl_reward_prior,
    psrl_sigma,
)

__all__ = [
    "Billboard",
    "DrawLog",
    "Replay",
    "Stream",
    "ReferenceRun",
    "capped_increment",
    "greedy_plan",
    "policy_values",
    "posterior_model",
    "run_reference",
    "simplex_project",
    "user_policy",
]

#: Q values within this of the maximum are ties (broken uniformly at random).
TIE = 1e-12


# ============================================================================================
# (0) The streams: a numpy Generator, or a record / replay of one (the agent comparison's hook)
# ============================================================================================
class Stream(Protocol):
    """The three draws the reference makes (numpy Generator's names): standard normals, gammas of
    given shape parameters (scale 1) and uniforms on [0, 1). A release with the discrete sampler
    draws its noise through :class:`DrawLog` or :class:`Replay` (:meth:`Billboard.publish`)."""

    def standard_normal(self, size: Any) -> Any: ...

    def gamma(self, shape: Any) -> Any: ...

    def random(self, size: Any) -> Any: ...


@dataclass
class DrawLog:
    """A Stream that draws from ``rng`` and records every call: ``log`` holds (kind, parameter,
    values), kind "normal" / "uniform" / "discrete_gaussian" (parameter: the shape asked) or
    "gamma" (parameter: the shape parameters asked)."""

    rng: np.random.Generator
    log: list[tuple[str, Any, np.ndarray]] = field(default_factory=list)

    def standard_normal(self, size: Any) -> np.ndarray:
        out = np.asarray(self.rng.standard_normal(size))
        self.log.append(("normal", tuple(np.atleast_1d(size)), out))
        return out

    def gamma(self, shape: Any) -> np.ndarray:
        out = np.asarray(self.rng.gamma(shape))
        self.log.append(("gamma", np.array(shape, float), out))
        return out

    def random(self, size: Any) -> np.ndarray:
        out = np.asarray(self.rng.random(size))
        self.log.append(("uniform", tuple(np.atleast_1d(size)), out))
        return out

    def discrete_gaussian(self, size: Any, sigma: float, grid_bits: int) -> np.ndarray:
        """Exact discrete Gaussian noise of scale ``sigma`` on the lattice ``sigma 2^-grid_bits``,
        in integer lattice units: privrl's one sampler (privrl.kernels.NoiseStream, keyed by 32
        bytes of ``rng``), not a numpy one."""
        from privrl.kernels import NoiseStream as KernelStream

        stream = KernelStream("discrete_gaussian", sigma, seed=self.rng, grid_bits=grid_bits)
        shape = tuple(np.atleast_1d(size))
        unit = stream.lattice_unit()
        assert unit is not None
        out = np.rint(stream.vectors(1, math.prod(shape)).reshape(shape) / unit)
        self.log.append(("discrete_gaussian", shape, out))
        return out


class Replay:
    """A Stream that returns recorded draws in order (a DrawLog's ``log``, or an agent's record of
    its own draws in the same format), refusing a call of another kind or parameter than the one
    recorded: the reference then recomputes the agent's release and policies from the agent's own
    randomness, and a mismatch names the first draw where the two computations part (for gammas,
    the first posterior count that differs, to ``rtol``)."""

    def __init__(self, log: list[tuple[str, Any, np.ndarray]], rtol: float = 1e-9) -> None:
        self.log, self.i, self.rtol = list(log), 0, rtol

    def _next(self, kind: str, param: Any) -> np.ndarray:
        if self.i >= len(self.log):
            raise AssertionError(f"draw {self.i}: a {kind} draw asked beyond the {len(self.log)} recorded")
        rec_kind, rec_param, values = self.log[self.i]
        same = rec_kind == kind and (
            np.allclose(rec_param, param, rtol=self.rtol, atol=0.0)
            if kind == "gamma" and np.shape(rec_param) == np.shape(param)
            else rec_param == param
        )
        if not same:
            raise AssertionError(
                f"draw {self.i}: the reference asks {kind} {np.shape(param)}, the record has {rec_kind} "
                f"{np.shape(rec_param)} (or other gamma shape parameters)"
            )
        self.i += 1
        return values

    def standard_normal(self, size: Any) -> np.ndarray:
        return self._next("normal", tuple(np.atleast_1d(size)))

    def gamma(self, shape: Any) -> np.ndarray:
        return self._next("gamma", np.array(shape, float))

    def random(self, size: Any) -> np.ndarray:
        return self._next("uniform", tuple(np.atleast_1d(size)))

    def discrete_gaussian(self, size: Any, sigma: float, grid_bits: int) -> np.ndarray:
        return self._next("discrete_gaussian", tuple(np.atleast_1d(size)))


# ============================================================================================
# (1) The user's statistic: its capped increment
# ============================================================================================
def capped_increment(s, a, r, s2, S: int, A: int, m: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The pooled sums of a batch of users, (U, H) arrays of states, actions, rewards (in [0, 1]) and
    next states: ``dN[s, a, s']`` counts and ``dR[s, a]`` reward sums over each user's first ``m``
    visits of each (s, a) (the cap; later visits are not counted)."""
    s, a, s2 = (np.asarray(x, np.int64) for x in (s, a, s2))
    r = np.asarray(r, float)
    U, H = s.shape
    dN, dR = np.zeros((S, A, S)), np.zeros((S, A))
    seen = np.zeros((U, S * A), np.int64)
    users = np.arange(U)
    for h in range(H):
        sa = s[:, h] * A + a[:, h]
        counted = seen[users, sa] < m  # the cap: visit number seen + 1 of (s, a) in this episode
        seen[users, sa] += 1
        np.add.at(dN, (s[counted, h], a[counted, h], s2[counted, h]), 1.0)
        np.add.at(dR, (s[counted, h], a[counted, h]), r[counted, h])
    return dN, dR


# ============================================================================================
# (2) The release: the billboard is the running sum of noisy increments
# ============================================================================================
class Billboard:
    """What every user reads: ``N~ = sum_j (dN_j + Z_j)``, ``R~ = sum_j (dR_j + Z'_j)`` over the
    ``j`` releases so far, Z, Z' i.i.d. N(0, sigma^2) per cell (sigma = 0: no noise). A batch's
    increment is released once, at the batch's end: a user enters one release (psrl_sigma).
    ``grid_bits`` given: the discrete sampler instead, the increment rounded to the lattice
    ``u = sigma 2^-grid_bits`` and exact discrete Gaussian noise of scale sigma added on it."""

    def __init__(self, S: int, A: int, sigma: float, grid_bits: int | None = None) -> None:
        self.N = np.zeros((S, A, S))
        self.R = np.zeros((S, A))
        self.j = 0
        self.sigma = float(sigma)
        self.grid_bits = grid_bits

    def publish(self, dN: np.ndarray, dR: np.ndarray, noise_rng: Stream) -> None:
        """Release one increment. Draws: S A S standard normals (counts, C order), then S A (rewards);
        with the discrete sampler one vector of S A S + S A integers (counts then rewards), and the
        released increment is ``(round(x / u) + z) u`` (half to even; one scaling of the integer sum),
        z from ``noise_rng`` a :class:`DrawLog` (privrl's sampler; wrap a numpy Generator in one) or
        a :class:`Replay`."""
        if self.grid_bits is None:
            self.N = self.N + dN + self.sigma * noise_rng.standard_normal(self.N.shape)
            self.R = self.R + dR + self.sigma * noise_rng.standard_normal(self.R.shape)
        else:
            if not isinstance(noise_rng, (DrawLog, Replay)):
                raise TypeError("the discrete sampler's noise comes from a DrawLog or a Replay")
            x = np.concatenate([np.ravel(dN), np.ravel(dR)])
            u = self.sigma * 2.0**-self.grid_bits
            z = noise_rng.discrete_gaussian((x.size,), self.sigma, self.grid_bits)
            released = (np.rint(x / u) + z) * u
            self.N = self.N + released[: self.N.size].reshape(self.N.shape)
            self.R = self.R + released[self.N.size :].reshape(self.R.shape)
        self.j += 1

    @property
    def var(self) -> float:
        """The noise variance per cell of the billboard: ``v_j = j sigma^2``."""
        return self.j * self.sigma**2


# ============================================================================================
# (3) The posterior given the noisy release, one model per user
# ============================================================================================
def simplex_project(Y: np.ndarray) -> np.ndarray:
    """Euclidean projection of each row of Y (..., S) on ``{x >= 0, sum x = max(sum Y, 0)}``: the
    nearest nonnegative count vector with the released (unbiased) total; noise-only cells are
    soft-thresholded to 0 (clipping them would add ~0.4 sd each). No constant. A row whose released
    total is <= 0 projects on {0} (the probe's copy returned max(Y - mean Y, 0) there, whose total
    is > 0: junk counts in about half of the never-released rows; measured without effect on its
    result: slippery FrozenLake, eps 10, K 20,000, seeds 0-2, last 10% 0.120 with it, 0.119 here)."""
    z = np.maximum(Y.sum(-1, keepdims=True), 0.0)
    u = -np.sort(-Y, axis=-1)  # each row sorted in decreasing order
    css = np.cumsum(u, -1) - z
    ind = np.arange(1, Y.shape[-1] + 1)
    cond = u - css / ind > 0
    rho = Y.shape[-1] - 1 - np.argmax(cond[..., ::-1], -1)  # the last index where cond holds
    theta = np.take_along_axis(css, rho[..., None], -1) / (rho[..., None] + 1)
    return np.where(z > 0.0, np.maximum(Y - theta, 0.0), 0.0)


def posterior_model(
    board: Billboard, rng: Stream, alpha0: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """One draw (P, r) of the model given the billboard:

    1. the true sums given the release: with a flat prior the counts are ``N ~ N(N~, v_j)`` per
       cell (``v_j = j sigma^2``, the release's own noise), each (s, a) row projected on the
       nonnegative simplex of its released total (:func:`simplex_project`); reward sums
       ``R ~ N(R~, v_j)`` clipped to ``[0, n(s, a)]`` (rewards in [0, 1]), ``n = sum_s' N``;
    2. ``P(.|s, a) ~ Dirichlet(alpha0 + N(s, a, .))`` (alpha0 None: psrl_prior(S) = 1/S, a prior worth
       one observation; the probe's was the uniform alpha0 = 1) and the mean reward
       ``r(s, a) ~ Beta(1 + R, n - R)`` (psrl_reward_prior: one pseudo-observation paying 1, so an
       unvisited pair draws r = 1, the top of [0, 1]; Agrawal & Goyal's Bernoulli trick for [0, 1]
       rewards; the probe's was the uniform Beta(1 + R, 1 + n - R)).

    Draws from ``rng``, in this order: S A S standard normals (counts), S A (reward sums), S A S
    gammas of shapes alpha0 + N (the Dirichlet, normalised per row), S A gammas of shapes 1 + R, S A
    of shapes n - R (the Beta as ga / (ga + gb); a shape of 0 is the point 0, numpy's gamma(0.0),
    which draws nothing); all in C order."""
    sd = math.sqrt(board.var)
    S, A, _ = board.N.shape
    alpha0 = psrl_prior(S) if alpha0 is None else alpha0
    N = simplex_project(board.N + sd * rng.standard_normal((S, A, S)))
    n = N.sum(2)
    R = np.clip(board.R + sd * rng.standard_normal((S, A)), 0.0, n)
    G = rng.gamma(alpha0 + N)
    P = G / G.sum(2, keepdims=True)
    a0, b0 = psrl_reward_prior()
    ga = rng.gamma(a0 + R)
    gb = rng.gamma(b0 + n - R)
    return P, ga / (ga + gb)


# ============================================================================================
# (4) The user's policy: greedy H-step value iteration on its model
# ============================================================================================
def greedy_plan(P: np.ndarray, r: np.ndarray, H: int, rng: Stream) -> np.ndarray:
    """The greedy H-step policy ``pi[h, s]`` (h = 0..H-1) of the stationary model (P, r):
    ``Q_h = r + P V_{h+1}``, ``V_H = 0``, ``V_h = max_a Q_h``, for h = H-1 down to 0; ties (within
    TIE of the maximum) broken uniformly: one (S, A) array of uniforms from ``rng`` per h, in that
    order, the tied action with the largest uniform chosen."""
    S, A, _ = P.shape
    pi = np.empty((H, S), np.int64)
    V = np.zeros(S)
    for h in reversed(range(H)):
        Q = r + P @ V
        top = Q.max(1, keepdims=True)
        pi[h] = np.where(Q - top >= -TIE, rng.random((S, A)), -1.0).argmax(1)
        V = top[:, 0]
    return pi


def user_policy(board: Billboard, H: int, rng: Stream, alpha0: float | None = None) -> np.ndarray:
    """One user's policy (H, S): a model drawn from the posterior given the billboard
    (:func:`posterior_model`), then its greedy plan (:func:`greedy_plan`), both from ``rng``."""
    P, r = posterior_model(board, rng, alpha0)
    return greedy_plan(P, r, H, rng)


# ============================================================================================
# (5) A whole run on a known tabular environment (the tests' simulator; the agent never sees P)
# ============================================================================================
def policy_values(pi: np.ndarray, P: np.ndarray, R: np.ndarray, start: int) -> np.ndarray:
    """The exact expected return from ``start`` of each policy ``pi`` (U, H, S) on the true model
    (P (S, A, S), rewards R (S, A, S) paid on the transition)."""
    U, H, S = pi.shape
    r = (P * R).sum(2)
    V = np.zeros((U, S))
    idx = np.arange(S)
    for h in reversed(range(H)):
        a = pi[:, h]
        V = r[idx, a] + np.einsum("usz,uz->us", P[idx, a], V)
    return V[:, start]


@dataclass(frozen=True)
class ReferenceRun:
    """A run: each user's realised ``returns`` (K,), the run's ``B`` and ``sigma``, the batches'
    user ``bounds``, the last batch's ``policies`` (U, H, S) and the final ``board``."""

    returns: np.ndarray
    B: int
    sigma: float
    bounds: np.ndarray
    policies: np.ndarray
    board: Billboard


def run_reference(
    P: np.ndarray,
    R: np.ndarray,
    start: int,
    H: int,
    K: int,
    eps: float,
    delta: float,
    seed: int,
    m: int = 1,
    B: int | None = None,
    alpha0: float | None = None,
) -> ReferenceRun:
    """K users of PSRL on the tabular environment (P, R, start) (rewards in [0, 1] paid on the
    transition; absorbing ends padded inside P and R, as learn does). ``eps = inf``: non-private
    (sigma 0, B = K: a release after every user); otherwise sigma = psrl_sigma(eps, delta, H, m) and
    B = psrl_num_batches(eps, H, K, S, A) unless given. Streams: ``default_rng([seed, i])`` for
    i = 0 (the environment), 1 (the release's noise), 2 (the users' exploration), the probe's.

    Batch j's users each draw a policy from the billboard of the j releases before it (user by user,
    in order), then act; at the end of batches 1..B-1 their capped increment is published."""
    P, R = np.asarray(P, float), np.asarray(R, float)
    S, A, _ = P.shape
    private = math.isfinite(eps)
    if B is None:
        B = psrl_num_batches(eps, H, K, S, A) if private else K
    sigma = psrl_sigma(eps, delta, H, m) if private else 0.0
    env_rng, noise_rng, agent_rng = (np.random.default_rng([seed, i]) for i in range(3))
    board = Billboard(S, A, sigma)
    Pc = np.cumsum(P, 2)
    Pc[..., -1] = 1.0  # the inverse CDF's last bin catches rounding
    bounds = psrl_batch_bounds(K, B)
    returns = np.zeros(K)
    pi = np.zeros((0, H, S), np.int64)
    for j in range(B):
        k0, k1 = int(bounds[j]), int(bounds[j + 1])
        U = k1 - k0
        pi = np.stack([user_policy(board, H, agent_rng, alpha0) for _ in range(U)])
        traj = np.zeros((4, U, H))  # s, a, r, s' of every user and step
        s = np.full(U, start)
        for h in range(H):
            a = pi[np.arange(U), h, s]
            s2 = (Pc[s, a] < env_rng.random(U)[:, None]).sum(1)
            traj[:, :, h] = s, a, R[s, a, s2], s2
            returns[k0:k1] += R[s, a, s2]
            s = s2
        if j < B - 1:
            board.publish(*capped_increment(traj[0], traj[1], traj[2], traj[3], S, A, m), noise_rng)
    return ReferenceRun(returns, B, sigma, bounds, pi, board)

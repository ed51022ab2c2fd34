"""UCRL-VTR (Alg. 1) in numpy, top to bottom as the paper writes it: the test oracle of the Rust
agent (rust/agents/vtr.rs). It is never on a hot path and is not bit-identical by construction:
tests feed both the same users and the same noise and compare them to a relative 1e-9.

The privacy model enters through two hooks, so that a test can give the reference the very noise
the agent drew: ``user(gram, target)`` is what leaves the user (LDP: the randomizer's message
X X^T + B^1, X y + g^1; JDP: the statistics on the noise lattice; none: as they are), and
``server(gram_sum, target_sum, t)`` is what the server releases after t users (JDP: the sums plus
the continual-release mechanism's noise B_{k,h}, g_{k,h}; otherwise the sums).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from privrl import kernels
from privrl.agents.common.reference import lattice, noise_seeds
from privrl.privacy import bounds

Hook = Callable[..., tuple[np.ndarray, np.ndarray]]


@dataclass
class Practical:
    """The practical release's constants (privrl.privacy.practical): the ridge's centre w0 and
    the bound D on ||w - w0||, the widths' factors, and the noise bounds (Upsilon_t, C_t)."""

    w0: np.ndarray
    D: float
    beta2: float
    noise_scale: float
    shift_mult: float
    C_w: float
    bounds: Callable[[int], tuple[float, float]]


class UCRLVTRReference:
    """Alg. 1 for phi(s'|s, a) (S, A, S, d), rewards R (H, S, A); the paper's release (regularizer
    lam, shift, radius beta) or the practical one."""

    def __init__(self, phi, R, lam, shift, beta, x_bound, user: Hook, server: Hook, practical=None):
        self.phi, self.R = np.asarray(phi, float), np.asarray(R, float)
        self.H, self.S, self.A = self.R.shape
        self.d = self.phi.shape[-1]
        self.lam, self.shift, self.beta, self.x_bound = lam, shift, beta, x_bound
        self.user, self.server, self.practical = user, server, practical
        H, d = self.H, self.d
        self.gram = np.zeros((H, d, d))  # sum_k X_{k,h} X_{k,h}^T (as it left the users)
        self.target = np.zeros((H, d))  # sum_k X_{k,h} y_{k,h}
        self.users = 0
        self.release()

    # ------------------------------------------------------------------ server side
    def release(self) -> None:
        """Lambda~_{k,h} = lam I + sum X X^T + B_{k,h} (+ shift I), w~ = Lambda~^{-1} u~ (paper);
        the exploration matrix E_h = beta^2 Lambda~^{-1}."""
        G, u = self.server(self.gram, self.target, self.users)
        if self.practical is not None:
            return self._practical_release(G, u)
        eye = np.eye(self.d)
        self.design = G + (self.lam + self.shift) * eye
        self.inverse = np.linalg.inv(self.design)
        self.weights = np.einsum("hij,hj->hi", self.inverse, u)
        self.explore = self.beta**2 * self.inverse

    def _practical_release(self, G, u) -> None:
        """A = G~ + (lam + S_t) I with its eigenvalues floored at lam, S_t = shift_mult Upsilon_t;
        w~ = A^{-1}(u~ + (A - G~) w0); E_h = beta^2 A^{-1} + gamma_t^2 A^{-2},
        gamma_t = scale (C_t + Upsilon_t C_w + (S_t + ||A - G~ - (lam + S_t) I||) D)."""
        p = self.practical
        ups, C = p.bounds(self.users)
        S_t = p.shift_mult * ups
        M = G + (self.lam + S_t) * np.eye(self.d)
        ev, V = np.linalg.eigh(M)
        floored = np.maximum(ev, self.lam)
        self.design = np.einsum("hij,hj,hkj->hik", V, floored, V)
        self.inverse = np.einsum("hij,hj,hkj->hik", V, 1.0 / floored, V)
        inverse2 = np.einsum("hij,hj,hkj->hik", V, 1.0 / floored**2, V)
        lift = (floored - ev).max(axis=1)  # ||E||
        pull = self.design - G  # (lam + S_t) I + E
        self.weights = np.einsum("hij,hj->hi", self.inverse, u + pull @ p.w0)
        self.gamma = p.noise_scale * (C + ups * p.C_w + (S_t + lift) * p.D)
        self.explore = p.beta2 * self.inverse + self.gamma[:, None, None] ** 2 * inverse2

    def receive(self, X: np.ndarray, y: np.ndarray) -> None:
        """One user's statistics, clipped to ||X_h|| <= x_bound, y_h in [0, x_bound], through the
        privacy model into the sums; the next billboard."""
        norms = np.linalg.norm(X, axis=1)
        X = X * np.minimum(1.0, self.x_bound / np.maximum(norms, 1e-300))[:, None]
        y = np.clip(y, 0.0, self.x_bound)
        gram, target = self.user(np.einsum("hi,hj->hij", X, X), X * y[:, None])
        self.gram += gram
        self.target += target
        self.users += 1
        self.release()

    # ------------------------------------------------------------------ user side
    def plan(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For h = H..1: phi_{V_{h+1}}(s, a) = sum_s' phi(s'|s, a) V_{h+1}(s'),
        Q_h = clip_[0, H](r_h + <phi_V, w~_h> + ||phi_V||_{E_h}), V_h = max_a Q_h, a greedy action
        (lowest index on ties). Returns the policy (H, S), V (H + 1, S) and phi_V (H, S, A, d)."""
        H, S = self.H, self.S
        V = np.zeros((H + 1, S))
        pi = np.zeros((H, S), dtype=np.int64)
        phi_v = np.zeros((H, S, self.A, self.d))
        self.Q = np.zeros((H, S, self.A))
        for h in range(H - 1, -1, -1):
            phi_v[h] = np.einsum("sapi,p->sai", self.phi, V[h + 1])
            bonus = np.sqrt(np.maximum(np.einsum("sai,ij,saj->sa", phi_v[h], self.explore[h], phi_v[h]), 0.0))
            Q = self.Q[h] = np.clip(self.R[h] + phi_v[h] @ self.weights[h] + bonus, 0.0, H)
            pi[h] = Q.argmax(axis=1)
            V[h] = Q.max(axis=1)
        return pi, V, phi_v

    def statistics(self, states, actions, V, phi_v) -> tuple[np.ndarray, np.ndarray]:
        """X_h = phi_{V_{h+1}}(s_h, a_h), y_h = V_{h+1}(s_{h+1})."""
        h = np.arange(self.H)
        return phi_v[h, states[:-1], actions], V[h + 1, states[1:]]

    def observe(self, states, actions) -> None:
        _, V, phi_v = self.plan()
        self.receive(*self.statistics(np.asarray(states), np.asarray(actions), V, phi_v))


def regression_of(agent, i, sigma_m, sigma_v, shift, radius, seeds, x_bound):
    """The reference of regression i of `agent`, with hooks that give it the agent's noise: under
    JDP the mechanisms' noise read from the agent after each user (data-independent) on top of the
    reference's own sums, on the noise lattice for a discrete sampler; under LDP the user-side
    randomizer's messages from a NoiseStream keyed like the agent's (the randomizer's kernel)."""
    cal = agent.calibration
    kind = cal.kind
    user = server = lambda g, u, *t: (g, u)
    if kind == "jdp":
        rm = lattice(cal.node_noise, sigma_m, cal.grid_bits, cal.sym_divisor)
        rv = lattice(cal.node_noise, sigma_v, cal.grid_bits)

        def user(g, u):  # the leaves enter the mechanisms on their lattice
            return rm(g), rv(u)

        def server(g, u, t):
            nm, nv = agent._core.noise(i)
            return g + nm, u + nv
    elif kind == "ldp":
        ms = kernels.NoiseStream(cal.node_noise, sigma_m, seed=seeds[0], grid_bits=cal.grid_bits or 24)
        vs = kernels.NoiseStream(cal.node_noise, sigma_v, seed=seeds[1], grid_bits=cal.grid_bits or 24)

        def user(g, u):
            return ms.privatize(g, symmetric=True, divisor=cal.sym_divisor), vs.privatize(u)

    practical = None
    if cal.release_rule == "practical":
        practical = _practical(agent, i, sigma_m, sigma_v, radius)
    return UCRLVTRReference(
        agent.mixture_features, agent.env.R, cal.lam, shift if kind != "none" else 0.0, radius, x_bound,
        user, server, practical,
    )  # fmt: skip


def _practical(agent, i, sigma_m, sigma_v, radius):
    cal, d = agent.calibration, agent.d
    alpha = getattr(cal, "alpha", 1.0)

    def noise_bounds(t):
        if cal.kind == "none":
            return 0.0, 0.0
        v = agent._core.variance_factor(i, t)
        if cal.noise == "laplace":
            n = round(v)
            if n < 1:
                return 0.0, 0.0
            return (
                bounds.laplace_matrix_sum_bound(sigma_m, n, d, alpha),
                bounds.laplace_vector_sum_bound(sigma_v, n, d, alpha),
            )
        s_m = sigma_m * math.sqrt(2 * v) / cal.sym_divisor
        ups = s_m * (2 * math.sqrt(d) + 2 * math.sqrt(math.log(2 / alpha)))
        return ups, sigma_v * math.sqrt(v) * (math.sqrt(d) + math.sqrt(2 * math.log(1 / alpha)))

    if agent.centre == "feasible":
        phi_1 = agent.mixture_features.sum(axis=2).reshape(-1, d)
        w0 = np.linalg.lstsq(phi_1, np.ones(len(phi_1)), rcond=None)[0]
        # Pythagoras where w0 is exactly feasible and within C_w, else the triangle inequality
        exact = np.abs(phi_1 @ w0 - 1.0).max() <= 1e-9 and math.sqrt(w0 @ w0) <= agent.C_w + 1e-9 * max(
            1.0, agent.C_w
        )
        D = math.sqrt(max(agent.C_w**2 - w0 @ w0, 0.0)) if exact else agent.C_w + math.sqrt(w0 @ w0)
    else:
        w0, D = np.zeros(d), agent.C_w
    full = getattr(cal, agent._radius_key)
    return Practical(w0, D, radius**2, agent.beta / full, cal.shift_mult, agent.C_w, noise_bounds)


def of_agent(agent):
    """The reference of a UCRL-VTR agent (built with an int seed), fed its noise."""
    cal = agent.calibration
    H = agent.H
    seed = agent.seed
    return regression_of(
        agent, 0, cal.sigma_B, cal.sigma_g, cal.shift, agent.beta, noise_seeds(seed, 2 * H), float(H)
    )

"""LSVI-UCB with static batching (Alg. 2) in numpy, top to bottom as the paper writes it: the test
oracle of the Rust agent (rust/agents/lsvi.rs). Never on a hot path.

The privacy noise enters through ``noise(b) -> (H^{b}_h (H, d, d), eta^b_h (H, d))``, the Lambda
mechanisms' noise and the fresh u-noise of release b, so a test can feed the reference the very
noise the agent drew (zeros without privacy); ``unit`` is the lattice of the discrete samplers (u~
is then a lattice point, and ``round_leaf`` puts each batch's Gram matrix on it), ``practical`` the
practical release's shift bound ``b -> Upsilon_b``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from privrl import kernels
from privrl.agents.common.reference import lattice


def optimistic_values(phi, w, inverse, beta, H) -> np.ndarray:
    """Q(s, a) = Pi_[0, H](w^T phi(s, a) + beta ||phi(s, a)||_{Lambda^{-1}}) for phi (S, A, d)."""
    bonus = np.sqrt(np.maximum(np.einsum("sai,ij,saj->sa", phi, inverse, phi), 0.0))
    return np.clip(phi @ w + beta * bonus, 0.0, H)


class LSVIUCBReference:
    def __init__(
        self,
        phi,
        K,
        B,
        lam,
        shift,
        beta,
        noise: Callable,
        unit=None,
        practical=None,
        shift_mult=1.0,
        round_leaf=None,
    ):
        self.phi = np.asarray(phi, float)  # (S, A, d)
        self.S, self.A, self.d = self.phi.shape
        self.K, self.L = K, -(-K // B)  # batches start at k_i = i ceil(K/B) + 1
        self.lam, self.shift, self.beta = lam, shift, beta
        self.noise, self.unit, self.practical, self.shift_mult = noise, unit, practical, shift_mult
        self.episodes: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.releases = 0
        self.round_leaf = round_leaf or (lambda g: g)
        self.H = 0

    def setup(self, H: int) -> None:
        """Alg. 2, line 2: Lambda~_{0,h} = lam I, w~_{0,h} = 0."""
        self.H = H
        self.gram = np.zeros((H, self.d, self.d))  # sum of the released batches' Gram matrices
        self.released_users = 0
        self.design = np.broadcast_to(self.lam * np.eye(self.d), (H, self.d, self.d)).copy()
        self.inverse = np.linalg.inv(self.design)
        self.weights = np.zeros((H, self.d))

    def policy(self) -> np.ndarray:
        """Alg. 2, lines 7-11: a_h = argmax_a Q_{k,h}(s_h, a) (lowest index on ties)."""
        self.Q = np.stack(
            [
                optimistic_values(self.phi, self.weights[h], self.inverse[h], self.beta, self.H)
                for h in range(self.H)
            ]
        )
        return self.Q.argmax(axis=2)

    def observe(self, states, actions, rewards) -> None:
        """Store the user's (s, a, r) (rewards clipped to [0, 1]); after the last user of a batch
        (k a multiple of ceil(K/B), k < K) release."""
        self.episodes.append((np.asarray(states), np.asarray(actions), np.clip(rewards, 0.0, 1.0)))
        k = len(self.episodes)
        if k % self.L == 0 and k < self.K:
            self.release()

    def release(self) -> None:
        """Alg. 2, lines 14-23: for h = H..1, Lambda~_h = lam I + sum_i phi_i phi_i^T (+ shift I +
        the mechanism's noise), u~_h = sum_i phi_i [r_i + V_{h+1}(s'_i)] + eta_h, w~_h =
        Lambda~_h^{-1} u~_h, V_{h+1}(s) = max_a Q_{h+1}(s, a) with the bonus of beta."""
        H, d = self.H, self.d
        self.releases += 1
        N, eta = self.noise(self.releases)
        s = np.stack([e[0] for e in self.episodes])  # (n, H + 1)
        a = np.stack([e[1] for e in self.episodes])
        r = np.stack([e[2] for e in self.episodes])
        phis = self.phi[s[:, :-1], a]  # (n, H, d)
        batch = phis[self.released_users :]  # the leaf of this release: the batch's Gram
        self.gram += self.round_leaf(np.einsum("nhi,nhj->hij", batch, batch))
        self.released_users = len(phis)
        gram = self.gram + N
        eye = np.eye(d)
        if self.practical is not None:
            ev, V = np.linalg.eigh(gram + (self.lam + self.shift_mult * self.practical(self.releases)) * eye)
            ev = np.maximum(ev, self.lam)
            self.design = np.einsum("hij,hj,hkj->hik", V, ev, V)
            self.inverse = np.einsum("hij,hj,hkj->hik", V, 1.0 / ev, V)
        else:
            self.design = gram + (self.lam + self.shift) * eye
            self.inverse = np.linalg.inv(self.design)
        for h in range(H - 1, -1, -1):
            v_next = 0.0
            if h < H - 1:
                Q = optimistic_values(self.phi, self.weights[h + 1], self.inverse[h + 1], self.beta, H)
                v_next = Q.max(axis=1)[s[:, h + 1]]
            u = phis[:, h].T @ (r[:, h] + v_next)
            if self.unit is not None:  # discrete noise: u rounded to the noise lattice
                u = (np.round(u / self.unit) + np.round(eta[h] / self.unit)) * self.unit
            else:
                u = u + eta[h]
            self.weights[h] = self.inverse[h] @ u


def of_agent(agent):
    """The reference of an LSVI-UCB agent, fed its noise (the Lambda mechanisms' noise and eta,
    read from the agent at each release: data-independent)."""
    cal = agent.calibration
    H, d = agent.H, agent.d
    private = cal.kind == "jdp"
    unit = None
    if private:
        unit = kernels.NoiseStream(
            cal.node_noise, cal.sigma_u, seed=0, grid_bits=cal.grid_bits or kernels.DEFAULT_GRID_BITS
        ).lattice_unit()

    def noise(b):
        if not private:
            return np.zeros((H, d, d)), np.zeros((H, d))
        return agent._core.noise(), agent._core.last_eta

    practical = None
    if private and cal.release_rule == "practical":

        def practical(b):
            v = agent._core.variance_factor(b)
            s = cal.sigma_Lambda * math.sqrt(2 * v) / cal.sym_divisor
            return s * (2 * math.sqrt(d) + 2 * math.sqrt(math.log(2 / cal.alpha)))

    round_leaf = (
        lattice(cal.node_noise, cal.sigma_Lambda, cal.grid_bits, cal.sym_divisor) if private else None
    )
    ref = LSVIUCBReference(
        agent.features, agent.K, agent.B, cal.lam, cal.shift if private else 0.0, agent.beta, noise, unit,
        practical, cal.shift_mult, round_leaf,
    )  # fmt: skip
    ref.setup(H)
    return ref

"""LSVI-UCB on linear MDPs with a static batch schedule and a privacy plug-in: LSVI-UCB (Jin et al. 2020),
batched LSVI-UCB (Wang et al. 2021), JDP and pure-JDP LSVI-UCB (Sec. 4, Alg. 2, Rem. 2-4; App. D).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from privrl import kernels
from privrl._checks import check_positive_real, trusted
from privrl.agents.base import Agent, SensitivityGuard, check_lattice_range
from privrl.agents.statistics import Release, released_inverse
from privrl.envs.features import FeatureMap
from privrl.envs.finite import FiniteMDP, Trajectory
from privrl.envs.linear import LinearMDP, _check_phi_norms
from privrl.exceptions import PrivacyParameterError
from privrl.privacy import lsvi_ucb as privacy_of
from privrl.privacy import practical
from privrl.privacy.common import Calibration
from privrl.privacy.models import LocalDP, NonPrivate
from privrl.privacy.plans import ReleasePlan

__all__ = [
    "LSVIUCB",
    "LSVIServer",
    "batch_starts",
    "greedy_policy",
    "response_per_sample",
    "response_aggregated",
    "lsvi_release",
]

PLANNING = ("auto", "per_sample", "aggregated")


def batch_starts(K: int, B: int) -> np.ndarray:
    """Alg. 2, line 4: the first episodes k_i = i * ceil(K/B) + 1 (1-based), 0 <= i < B, of the
    batches that start within K episodes. The schedule depends on (K, B) only, never on the data,
    which is what the privacy proof needs (App. D, Rem. "Data-Dependent Batches"). When
    (B - 1) ceil(K/B) >= K the last batches never start, so fewer than B policies are released."""
    L = -(-int(K) // int(B))
    return np.array([i * L + 1 for i in range(int(B)) if i * L + 1 <= K], dtype=np.int64)


# ============================================================================================
# User side: the billboard and the policy a user computes from it
# ============================================================================================
def greedy_policy(
    release: Release, features: np.ndarray, beta: float, *, ties: str = "random", rng: Any = None
) -> np.ndarray:
    """The user's side of Alg. 2 (lines 7-11): a_h = argmax_a Q_{k,h}(s_h, a) with
    Q_{k,h} = Pi_[0,H][w~_{b,h}^T phi + beta ||phi||_{Lambda~^{-1}_{b,h}}], for every state at
    once, as an (H, S) int policy.

    It reads only the billboard `release` (Lambda~_{b,h}, its inverse, w~_{b,h}), the public
    feature map and the public constant beta; the user's own data then selects the rows it visits.
    This is what makes Alg. 2 jointly DP from a DP release (Billboard lemma, App. "Joint DP through
    DP"). Ties (common when Q is clipped at H) are broken uniformly at random from `rng`
    (ties="random") or by lowest index; one Rust call per step.
    """
    S, A, d = features.shape
    flat = features.reshape(S * A, d)
    H = release.weights.shape[0]
    pi = np.empty((H, S), dtype=np.int64)
    for h in range(H):
        _, _, pi[h] = kernels.optimistic_values(
            flat,
            release.weights[h],
            release.inverse[h],
            beta,
            A,
            upper=float(H),
            lower=0.0,
            ties=ties,
            rng=rng,
        )
    return pi


# ============================================================================================
# Server side: the response vector u and least-squares value iteration
# ============================================================================================
def response_per_sample(
    phi: np.ndarray,
    rewards: np.ndarray,
    next_table: np.ndarray,
    next_states: np.ndarray | None,
    w_next: np.ndarray,
    inv_next: np.ndarray,
    beta: float,
    n_actions: int,
    H: int,
) -> np.ndarray:
    """u = sum_i phi_i [r_i + V_{h+1}(s'_i)] (Alg. 2, line 19) with V evaluated at every stored
    next state in one Rust call: V(s') = Pi_[0,H] max_a [w^T phi(s',a) + beta ||phi(s',a)||_{inv}].

    phi (n, d), rewards (n,); next_table holds the next-state features, A rows per state:
    with next_states=None it is the (n * A, d) block of the n next states (continuous-state
    features), otherwise an (S * A, d) table read through the int index next_states (n,).
    """
    V = kernels.state_values(
        next_table, w_next, inv_next, beta, n_actions, upper=float(H), lower=0.0, states=next_states
    )
    return phi.T @ (rewards + V)


def response_aggregated(
    reward_sum: np.ndarray,
    next_sum: np.ndarray,
    table: np.ndarray,
    w_next: np.ndarray,
    inv_next: np.ndarray,
    beta: float,
    n_actions: int,
    H: int,
) -> np.ndarray:
    """The same u for a finite state set, from counts: V is evaluated once per state and
    u = sum_i phi_i r_i + sum_s' (sum_{i: s'_i = s'} phi_i) V(s') = reward_sum + next_sum^T V,
    with reward_sum (d,) and next_sum (S, d) kept as data arrive. Cost O(S A d^2) instead of
    O(n A d^2); equal to response_per_sample up to the order of the floating-point sums."""
    V = kernels.state_values(table, w_next, inv_next, beta, n_actions, upper=float(H), lower=0.0)
    return reward_sum + next_sum.T @ V


def lsvi_release(
    designs: np.ndarray,
    response: Callable[[int, np.ndarray | None, np.ndarray | None], np.ndarray],
    eta: np.ndarray | None = None,
    users: int = 0,
    inverses: np.ndarray | None = None,
    lattice_unit: float | None = None,
) -> Release:
    """Alg. 2, lines 15-22, for h = H..1: w~_{H+1} = 0; Lambda~^{-1}_h (Cholesky, a named error
    if the noise made Lambda~_h indefinite; or given in `inverses` when the caller maintains them);
    u~_h = u_h + eta_h with u_h = response(h, w~_{h+1}, Lambda~^{-1}_{h+1}) (None, None at the
    last step, where V_{H+1} = 0); w~_h = Lambda~^{-1}_h u~_h. Returns the billboard Release.
    ``lattice_unit`` (discrete samplers): u_h is rounded to the lattice of the exact integer noise
    eta_h and the integer sum scaled once, so u~_h is a function of the integer release alone."""
    H, d, _ = designs.shape
    inverse = np.empty_like(designs) if inverses is None else inverses
    weights = np.zeros((H, d))
    for h in range(H - 1, -1, -1):
        if inverses is None:
            inverse[h] = released_inverse(
                designs[h], h, users, "the shift c_K + Upsilon", "App. D's calibration"
            )
        # V_{H+1} = 0: the last step's response has no next-step estimate
        u = response(h, None, None) if h == H - 1 else response(h, weights[h + 1], inverse[h + 1])
        if eta is not None and lattice_unit is not None:
            u = (np.round(u / lattice_unit) + np.round(eta[h] / lattice_unit)) * lattice_unit
        elif eta is not None:
            u = u + eta[h]
        weights[h] = inverse[h] @ u
    return Release(designs, inverse, weights, users)


class LSVIServer:
    """The server of Alg. 2: keeps every user's transitions, and at the end of each batch runs
    the perturbed least-squares value iteration and publishes (Lambda~_{b,h}, w~_{b,h})_h.

    Per step h it holds Lambda_{k+1,h} = lam I + sum_i phi_i phi_i^T: non-private, with its
    inverse, by Sherman-Morrison (RankOneInverse: no O(d^3) factorization per release, 5x faster
    than sums + Cholesky at d = 16, H = 20 when a release follows every episode); private, as a
    plain sum plus the Gram of the running batch (the leaf of tree h), since the released matrix
    gets fresh noise and is factorized anyway. For the aggregated planning path it keeps
    reward_sum_h = sum_i phi_i r_i and next_sum_h[s'] = sum_{i: s'_i = s'} phi_i. The raw
    (s, a, r) of every episode are kept for the per-sample path.

    Privacy (cal["kind"] == "jdp"): H binary trees over the B batches with node noise
    (Z' + Z'^T)/2, Z' i.i.d. N(0, sigma_Lambda^2) (Laplace(sigma_Lambda) for pure JDP), and one
    fresh eta_h ~ N(0, sigma_u^2 I) (Laplace) per release and step; the released design is
    Lambda_{k+1,h} + (c_K + Upsilon) I + H^{b+1}_h. Non-private: no trees, no shift, no eta.
    """

    def __init__(
        self,
        table: np.ndarray,
        n_actions: int,
        H: int,
        K_episodes: int,
        cal: Calibration,
        beta: float,
        planning: str = "auto",
        seeds: list | None = None,
    ):
        if planning not in PLANNING:
            raise ValueError(f"planning must be one of {PLANNING}, got {planning!r}")
        self.table = np.ascontiguousarray(table, dtype=np.float64)  # (S*A, d), row s*A + a
        self.A = int(n_actions)
        self.S = self.table.shape[0] // self.A
        self.d = self.table.shape[1]
        self.H, self.K = int(H), int(K_episodes)
        self.beta = float(beta)
        self.planning = planning
        self.lam = float(cal["lam"])
        self.private = cal["kind"] == "jdp"
        self.shift = float(cal["shift"]) if self.private else 0.0
        H, d, S = self.H, self.d, self.S
        # The raw (s, a, r) of the episodes the per-sample path may read: all of them for
        # "per_sample", the first S + 1 for "auto" (which plans from counts once n > S), none for
        # "aggregated". Memory then stays flat in K (the counts below are O(H S d)).
        self.record_capacity = {"per_sample": self.K, "auto": min(self.K, S + 1), "aggregated": 0}[planning]
        self.states = np.zeros((self.record_capacity, H + 1), dtype=np.int64)
        self.actions = np.zeros((self.record_capacity, H), dtype=np.int64)
        self.rewards = np.zeros((self.record_capacity, H))
        self.n = 0
        self.gram = np.zeros((H, d, d))
        self.batch_gram = np.zeros((H, d, d))
        self.exact = None if self.private else [kernels.RankOneInverse(d, self.lam) for _ in range(H)]
        self.reward_sum = np.zeros((H, d))
        self.next_sum = np.zeros((H, S, d))
        self.releases = 0  # perturbed releases published (the initial one not counted)
        self.nodes_history: list[int] = []  # tree nodes summed in each release (<= B0)
        self.paths: list[str] = []
        self.last_eta: np.ndarray | None = None
        seeds = list(seeds) if seeds is not None else [None] * (H + 1)
        if self.private:
            # one leaf per release: the mechanisms hold R = cal["releases"] leaves (release plan)
            self.trees = [
                kernels.make_prefix_mechanism(
                    cal["mechanism"],
                    (d, d),
                    cal["releases"],
                    noise=cal.node_noise,
                    scale=cal["sigma_Lambda"],
                    seed=seeds[h],
                    divisor=cal["sym_divisor"],
                    grid_bits=cal.grid_bits or kernels.DEFAULT_GRID_BITS,
                )
                for h in range(H)
            ]
            self.shift_at = self._shift_rule(cal)
            self.eta_stream: kernels.NoiseStream | None = kernels.NoiseStream(
                cal.node_noise,
                cal["sigma_u"],
                seed=seeds[H],
                grid_bits=cal.grid_bits or kernels.DEFAULT_GRID_BITS,
            )
        else:
            self.trees, self.eta_stream, self.shift_at = [], None, None

    def _shift_rule(self, cal: Calibration) -> Callable[[int], float] | None:
        """Practical calibration: the shift of release b, shift_mult * Upsilon_b at the noise the
        Lambda mechanisms actually release after b leaves (privrl.privacy.practical); None: the
        calibration's constant shift c_K + Upsilon (App. D)."""
        if cal["release_rule"] != "practical":
            return None
        ups_at, _ = practical.noise_bounds_at(
            cal["noise"],
            cal["sigma_Lambda"],
            cal["sigma_u"],
            cal["sym_divisor"],
            self.d,
            cal["alpha"],
            self.trees[0].variance_factor,
        )
        return practical.ScaledBound(float(cal["shift_mult"]), ups_at)

    def initial_release(self) -> Release:
        """Alg. 2, line 2: Lambda~_{0,h} = lam I, w~_{0,h} = 0 (deterministic, no user data)."""
        H, d = self.H, self.d
        eye = np.broadcast_to(np.eye(d), (H, d, d))
        return Release(self.lam * eye, eye / self.lam, np.zeros((H, d)), 0)

    def receive(self, states: np.ndarray, actions: np.ndarray, rewards: np.ndarray, phi: np.ndarray) -> None:
        """One user's episode: states (H+1,), actions (H,), rewards (H,) and the features
        phi_h = phi(s_h, a_h) (H, d), all already inside the sensitivity bounds."""
        i, H = self.n, self.H
        if i < self.record_capacity:
            self.states[i], self.actions[i], self.rewards[i] = states, actions, rewards
        if self.private:
            self.batch_gram += np.einsum("hi,hj->hij", phi, phi)
        else:  # Lambda_h += phi_h phi_h^T with its inverse, user by user (Sherman-Morrison)
            for h in range(H):
                self.exact[h].update(phi[h])  # type: ignore[index]
        self.reward_sum += phi * rewards[:, None]
        self.next_sum[np.arange(H), states[1:]] += phi  # (h, s'_h) pairs are distinct: no collision
        self.n += 1

    def path(self) -> str:
        """The planning path of the next release under "auto": 'aggregated' once S < n. Both
        evaluate A feature rows per state, the aggregated path for the S states, the per-sample
        one for the n stored next states, so counts are cheaper as soon as n exceeds S (a
        threshold of S A, not S, would pay up to A times more between the two)."""
        if self.planning != "auto":
            return self.planning
        return "aggregated" if self.n > self.S else "per_sample"

    def designs(self) -> tuple[np.ndarray, np.ndarray | None]:
        """Alg. 2, lines 17-18, for every h: Lambda~ = Lambda_{k+1,h} + (c_K + Upsilon) I + H^{b+1}_h,
        pushing the batch's Gram as the next leaf of tree h; returns (designs, inverses), the
        inverses only when maintained exactly (non-private). Consumes the batch."""
        H, d = self.H, self.d
        if self.exact is not None:
            return (
                np.stack([sm.matrix() for sm in self.exact]),
                np.stack([sm.inverse() for sm in self.exact]),
            )
        self.gram += self.batch_gram
        for h in range(H):
            self.trees[h].push(self.batch_gram[h])
        self.nodes_history.append(self.trees[0].nodes_used)
        self.batch_gram[:] = 0.0
        if self.eta_stream is not None and self.eta_stream.lattice_unit() is not None:
            # discrete samplers: the mechanisms' own lattice releases (rounded sums + integer noise)
            noisy = np.stack([t.release() for t in self.trees])
        else:
            noisy = self.gram + np.stack([t.noise() for t in self.trees])
        if self.shift_at is None:
            return noisy + (self.lam + self.shift) * np.eye(d), None
        # practical: the shift of this release, then eigenvalues floored at lam (the inverse of
        # the floored matrix comes with it)
        ev, vecs = np.linalg.eigh(noisy + (self.lam + self.shift_at(self.trees[0].steps)) * np.eye(d))
        ev = np.maximum(ev, self.lam)
        return (
            np.einsum("hij,hj,hkj->hik", vecs, ev, vecs),
            np.einsum("hij,hj,hkj->hik", vecs, 1.0 / ev, vecs),
        )

    def response_function(self, path: str) -> Callable:
        """u_h(w~_{h+1}, Lambda~^{-1}_{h+1}) for lsvi_release, by the chosen path."""
        n, A, H, beta, table = self.n, self.A, self.H, self.beta, self.table

        def aggregated(h: int, w_next: np.ndarray | None, inv_next: np.ndarray | None) -> np.ndarray:
            if w_next is None or inv_next is None:
                return self.reward_sum[h].copy()
            return response_aggregated(
                self.reward_sum[h], self.next_sum[h], table, w_next, inv_next, beta, A, H
            )

        def per_sample(h: int, w_next: np.ndarray | None, inv_next: np.ndarray | None) -> np.ndarray:
            phi = table[self.states[:n, h] * A + self.actions[:n, h]]
            r = self.rewards[:n, h]
            if w_next is None or inv_next is None:
                return phi.T @ r
            return response_per_sample(phi, r, table, self.states[:n, h + 1], w_next, inv_next, beta, A, H)

        return aggregated if path == "aggregated" else per_sample

    def release_batch(self, path: str | None = None) -> Release:
        """The end of a batch (Alg. 2, lines 14-23): the perturbed LSVI over all data so far."""
        path = path or self.path()
        designs, inverses = self.designs()
        eta = self.eta_stream.vectors(self.H, self.d) if self.eta_stream is not None else None
        unit = self.eta_stream.lattice_unit() if self.eta_stream is not None else None
        self.last_eta = eta
        rel = lsvi_release(
            designs, self.response_function(path), eta, users=self.n, inverses=inverses, lattice_unit=unit
        )
        self.releases += 1
        self.paths.append(path)
        return rel


# ============================================================================================
#: Most (episode, step) records the LSVI server keeps (about 6 GiB of states, actions, rewards).
MAX_STORED_STEPS = 1 << 28


class LSVIUCB(Agent):
    """LSVI-UCB with a static batch schedule and a privacy plug-in (Alg. 2).

    Per episode k, user side: take the billboard (Lambda~_{b,h}, w~_{b,h})_h of the current batch
    b and act greedily on Q_{k,h} = Pi_[0,H][w~^T phi + beta ||phi||_{Lambda~^{-1}}]
    (:func:`greedy_policy`, computed once per release); send the trajectory (s, a, r) and the
    features of the visited states. Server side, at the end of a batch (k = k_{b+1} - 1): for
    h = H..1, Lambda~_{b+1,h} = Lambda_{k+1,h} + (c_K + Upsilon) I + H^{b+1}_h,
    u~ = sum_i phi_i [r_i + V_{k+1,h+1}(s'_i)] + eta^{b+1}_h, w~ = Lambda~^{-1} u~ and publish.

    Variants, by (privacy, batches):

    * NonPrivate(), "every": LSVI-UCB of Jin et al. (2020) (update after every episode).
    * NonPrivate(), int B: batched LSVI-UCB (Wang et al. 2021, static schedule). "static" has
      no private B to use and gives B = K (see calibrate_lsvi_ucb).
    * JointDP(eps, delta), "static": Alg. 2 with App. D's B = ceil((K eps)^{2/5} / (d^{3/5} H^{1/5})).
    * JointDP(eps, delta), "every": the non-batched variant of Rem. 2 (B = K, noise calibrated
      for K releases).
    * JointDP(eps, 0.0): pure JDP (App. "Pure joint DP in the linear setting"): Laplace node
      and eta noise, B = ceil((K eps)^{1/3} / (d^{2/3} H^{1/3})); the constants the appendix leaves
      implicit are derived in calibrate_lsvi_ucb / lsvi_ucb_laplace_scales / lsvi_ucb_c_K_pure.

    Parameters
    ----------
    env : LinearMDP (Asm. 1; ||phi|| <= 1 is checked when it is built), or a FeatureMap when the
        model is unknown (learn from interaction with privrl.learn; no exact regret).
    privacy : NonPrivate() | JointDP(eps, delta). LocalDP is refused: the paper has no LDP
        algorithm for linear MDPs (Rem. "Local Differential Privacy"). JointDP's `mechanism`
        replaces the H binary trees of Lambda (privrl.privacy.continual).
    batches : "static" (default), "every" or an int B in [1, K]; batches start at
        k_i = i ceil(K/B) + 1, a schedule fixed in advance.
    episodes : K, the number of users the noise is calibrated for.
    beta_scale : multiplies App. D's beta (exploration only; the noise depends on eps, delta, H,
        K, d, B). `beta` overrides the radius altogether.
    ties : "random" (one uniform tie-break per release, from the agent's seed) or "lowest".
    lam : the ridge regularizer lambda (default None: App. D's d; Jin et al. (2020) use 1). Regret
        side only: the privacy noise does not depend on it.
    sensitivity : "clip" or "reject" user data outside ||phi|| <= 1, r in [0, 1]. V_{h+1} is
        projected on [0, H], so one user moves u by at most 2(H+1) (the sensitivity behind sigma_u).
    planning : "auto" (aggregated once S < number of stored episodes), "per_sample" (V at every
        stored next state; the path continuous-state features need) or "aggregated" (V once per
        state, u from counts). Both give the same release up to floating-point summation order.

    Attributes: calibration (App. D's names: lam, B, B0, sigma_Lambda, sigma_u, Upsilon, c_K, C,
    U_K, chi, beta, plus beta_used), batch_starts (1-based k_i), server (LSVIServer),
    release_users (the user count k of every billboard published so far, initial one included;
    only the current billboard is kept: B = K releases of (H, d, d) matrices would not fit).
    """

    name = "LSVI-UCB"
    env_type: type = LinearMDP  # the environments it runs on (Asm. 1); sweeps check it up front

    @classmethod
    def accepts(cls, env: Any) -> str | None:
        """None if the agent runs on `env`, else why not: a LinearMDP (Asm. 1), a FeatureMap (no
        model: privrl.learn), or any FiniteMDP with linear ``features`` (S, A, d)."""
        if isinstance(env, (LinearMDP, FeatureMap)):
            return None
        name = type(env).__name__
        if not isinstance(env, FiniteMDP):
            return (
                f"LSVI-UCB needs a LinearMDP (Asm. 1), a FeatureMap or a FiniteMDP with features; got {name}"
            )
        f: Any = getattr(env, "features", None)
        shape = getattr(f, "shape", ())
        if len(shape) != 3 or tuple(shape[:2]) != (env.S, env.A) or not np.all(np.isfinite(f)):
            return (
                f"LSVI-UCB needs a LinearMDP (Asm. 1) or a FiniteMDP with linear features phi(s, a): "
                f"{name}.features must be a finite (S, A, d) = ({env.S}, {env.A}, d) array, got shape "
                f"{tuple(shape)}"
            )
        return None

    def __init__(
        self,
        env: LinearMDP | FeatureMap,
        privacy: Any = None,
        batches: str | int = "static",
        episodes: int = 1000,
        seed: Any = None,
        beta_scale: float = 1.0,
        beta: float | None = None,
        ties: str = "random",
        sensitivity: str = "clip",
        planning: str = "auto",
        lam: float | None = None,
    ):
        reason = self.accepts(env)
        if reason is not None:
            raise TypeError(reason)
        privacy = privacy if privacy is not None else NonPrivate()
        if isinstance(privacy, LocalDP):
            raise PrivacyParameterError(
                "LocalDP is not available for linear MDPs: the paper gives no LDP algorithm there "
                "(Rem. 'Local Differential Privacy': LSVI needs the raw features on the server); "
                "use JointDP(eps, delta) or NonPrivate()"
            )
        if planning not in PLANNING:
            raise ValueError(f"planning must be one of {PLANNING}, got {planning!r}")
        lam = None if lam is None else check_positive_real(lam, "lam")
        super().__init__(env, privacy, episodes, seed, beta_scale, beta, ties)
        # phi(s, a) as (S A, d) rows: a LinearMDP's or FeatureMap's, or those of any FiniteMDP that
        # carries ``features`` (S, A, d) (Asm. 1 is then the user's claim; ||phi|| <= 1 is checked)
        phi = np.asarray(env.features, dtype=np.float64)
        _check_phi_norms(phi)
        self.d = phi.shape[-1]
        if self.K * (self.H + 1) > MAX_STORED_STEPS:
            # The server keeps every (s, a, r) for its regressions: refuse up front rather than
            # fail (or crawl through a 10^12-batch schedule) halfway through construction.
            raise PrivacyParameterError(
                f"LSVI-UCB stores every episode: K (H + 1) = {self.K * (self.H + 1):.3g} steps exceed "
                f"the limit of {MAX_STORED_STEPS}"
            )
        kw = self.privacy.as_kwargs()
        self.B = privacy_of.resolve_batches(
            batches,
            kw["kind"],
            self.privacy.pure,
            kw["epsilon"],
            self.H,
            self.K,
            self.d,
            kw["calibration"],
            kw["delta"],
            kw["p"],
            kw["mechanism"],
        )
        with trusted():  # the privacy model, K, the environment and B are validated above
            cal = privacy_of.calibrate_lsvi_ucb(
                **kw, H=self.H, K=self.K, d=self.d, batches=batches, plan=self.release_plan(), lam=lam
            )
        check_lattice_range(self.release_plan(), cal, self.K)
        self.beta = self._beta_override if self._beta_override is not None else self.beta_scale * cal["beta"]
        self.calibration: Calibration = cal.replace(
            beta_used=self.beta, beta_scale=self.beta_scale, planning=planning
        )
        self.batch_starts = batch_starts(self.K, self.B)
        self._update_after = {int(k) - 1 for k in self.batch_starts[1:]}  # k = k_{b+1} - 1
        (stat,) = self.release_plan().statistics
        # phi is guarded against the plan's x bound; the rewards against [0, 1] (the y bound r + V
        # <= H + 1 of the plan then holds since V~ is projected on [0, H])
        self.guard = SensitivityGuard(x_bound=stat.x_bound, y_low=0.0, y_high=1.0, mode=sensitivity)
        self.guards = {stat.name: self.guard}
        # The feature map is public and fixed; clipping it once is clipping every row a user can
        # send (LinearMDP already rejects ||phi|| > 1, so this is a no-op on valid envs).
        table, _ = self.guard.apply(phi.reshape(self.S * self.A, self.d).copy())
        self.features = np.ascontiguousarray(table.reshape(self.S, self.A, self.d))
        self.server = LSVIServer(
            table, self.A, self.H, self.K, cal, self.beta, planning, seeds=self.noise_seeds(self.H + 1)
        )
        self._release = self.server.initial_release()
        self.release_users: list[int] = [0]
        self._current_policy: np.ndarray | None = None

    def release_plan(self) -> ReleasePlan:
        """What this agent releases about one user, as data (privrl.privacy.plans): the statistic
        phi_h, r_h + V_{h+1}(s'_h) with its bounds, the H Lambda mechanisms over the R released
        batches and the H x R fresh u releases (App. D)."""
        return privacy_of.release_plan(
            self.privacy.kind,
            self.privacy.pure,
            self.H,
            self.K,
            self.d,
            self.B,
            self.privacy.mechanism,
            self.privacy.sampler,
        )

    @property
    def clip_count(self) -> int:
        return self.guard.clipped

    @property
    def batch(self) -> int:
        """Index b of the current batch (0-based) = releases published since the start."""
        return len(self.release_users) - 1

    def release(self) -> Release:
        """The current billboard (Lambda~_{b,h}, Lambda~^{-1}_{b,h}, w~_{b,h})_h."""
        return self._release

    def _policy(self) -> np.ndarray:
        """The arriving user's policy: greedy_policy of the current release (computed once per
        release, so every user of a batch runs the same policy and N_K <= B)."""
        if self._current_policy is None:
            self._current_policy = greedy_policy(
                self.release(), self.features, self.beta, ties=self.ties, rng=self._tie_rng
            )
            self.policy_updates += 1
        return self._current_policy

    def _observe(self, trajectory: Trajectory) -> None:
        # _check_trajectory (Agent.observe) has checked the indices are in range
        s = np.asarray(trajectory.states, dtype=np.int64)
        a = np.asarray(trajectory.actions, dtype=np.int64)
        phi = self.server.table[s[:-1] * self.A + a]
        phi, r = self.guard.apply(phi, np.asarray(trajectory.rewards, dtype=np.float64))
        self.server.receive(s, a, r, phi)
        self.k += 1
        self._end_of_batch()

    def _end_of_batch(self) -> None:
        """Alg. 2, line 14: after the last user of a batch, release the next billboard."""
        if self.k in self._update_after:
            self._release = self.server.release_batch()
            self.release_users.append(self._release.users)
            self._current_policy = None

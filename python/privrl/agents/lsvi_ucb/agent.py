"""LSVI-UCB on linear MDPs with a static batch schedule and a privacy plug-in: LSVI-UCB (Jin et al. 2020),
batched LSVI-UCB (Wang et al. 2021), JDP and pure-JDP LSVI-UCB (Sec. 4, Alg. 2, Rem. 2-4; App. D).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from privrl import _core
from privrl.agents.common.base import Agent, Release, SensitivityGuard, check_release
from privrl.agents.common.specs import (
    BoundsSpec,
    LsviAdaptiveSpec,
    LsviPrivateSpec,
    LsviSpec,
    bounds_spec,
    noise_spec,
)
from privrl.agents.lsvi_ucb import calibration as privacy_of
from privrl.agents.lsvi_ucb.calibration import LSVIUCBCalibration
from privrl.common.checks import check_choice, check_positive_real, feature_table_problem
from privrl.common.errors import PrivacyParameterError, ResourceError, ScheduleWarning
from privrl.common.memory import physical_memory, refuse_over_memory
from privrl.common.seeds import spawn_noise_seeds
from privrl.envs.features import FeatureMap
from privrl.envs.finite import FiniteMDP
from privrl.envs.gym import not_a_model
from privrl.envs.linear import LinearMDP, check_phi_norms
from privrl.privacy.adaptive import centre_direction, is_one_hot
from privrl.privacy.common import PRACTICAL_RULES
from privrl.privacy.models import LocalDP
from privrl.privacy.plans import ReleasePlan

__all__ = ["LSVIUCB", "batch_starts", "PLANNING"]

PLANNING = ("auto", "per_sample", "aggregated")
#: Most (episode, step) records the per-sample planning path keeps (about 6 GiB).
MAX_STORED_STEPS = 1 << 28


def dense_entries(
    H: int,
    d: int,
    rows: int,
    private: bool,
    mechanism: str = "tree",
    releases: int = 0,
    one_hot: bool = False,
    kept_factors: bool = False,
) -> float:
    """Entries (8 bytes each) of the large state an LSVI-UCB agent holds at its peak, read off its
    structures (rust/agents/lsvi.rs, rust/continual/): the features table (`rows` = S A rows of d)
    in about 6 copies across the Python agent and its Rust core, 4 d^2 of temporaries (a sampling
    agent's draw factor, the eigendecompositions of a practical release), and per step h

    * non-private: Lambda_h and its inverse, and the billboard's copies of both: 4 d^2 (+ d^2 / 2
      of construction temporaries);
    * private: the billboard's Lambda~_h and inverse and the batch Gram, 3 d^2; once it releases
      (R = `releases` > 0) also the Lambda mechanism's exact sum and the release's temporaries,
      2 d^2, and the mechanism's noise state over R leaves, full nodes d^2, packed ones d^2 / 2:
      the tree log2(R) + 2 full nodes (prefix sums and scratch), Honaker (log2(R) + 4) / 2
      (estimates, total, node), the factorization (R + 2) / 2 (one innovation per release), BLT
      buffers + 4 (encoder and state, 2 x buffers packed, and about eight packed accumulators,
      leaves and draws).

    Non-private with `one_hot` rows (at most one nonzero a row: every Lambda_h stays diagonal),
    the four matrices are written on their diagonals only, in zeroed allocations whose other
    pages the system never maps: each holds at most min(d^2, 512 (d + 1)) entries (a 4 KiB page
    of 512 entries per diagonal entry, one more for the alignment).

    `kept_factors` (exploration="sampling" under the paper / tight / practical calibrations): the
    draw's factor of every Lambda~_h^{-1}, kept for the release, d^2 more per step (d entries
    where Lambda_h is diagonal, non-private `one_hot`).

    An upper bound on the peak resident memory measured for every mechanism, within 20%
    (tests/test_lsvi_ucb.py)."""
    if not private:
        if one_hot:
            return 6.0 * rows * d + 4.0 * d * d + 4.5 * H * min(d * d, 512.0 * (d + 1))
        per_step = 4.5
    elif releases == 0:
        per_step = 3.0
    else:
        logr = math.log2(releases)
        per_step = 5.0 + {
            "tree": logr + 2.0,
            "honaker": (logr + 4.0) / 2.0,
            "factorization": (releases + 2.0) / 2.0,
            "blt": _core.DEFAULT_BLT_BUFFERS + 4.0,
        }.get(mechanism, logr + 2.0)
    return 6.0 * rows * d + 4.0 * d * d + (per_step + kept_factors) * H * d * d


def check_memory(need: float, H: int, d: int, private: bool, mechanism: str, releases: int) -> None:
    """Refuse, before allocating, an agent whose dense d x d state, ``need`` bytes (8
    :func:`dense_entries`), exceeds the machine's physical memory: the process would be killed by
    the operating system, not raise. The rest of the agent comes on top."""
    have = physical_memory()
    if have is not None and need > have:
        what = "its noise mechanism's state" if private else "Lambda_h and its inverse"
        raise ResourceError(
            f"LSVI-UCB keeps dense d x d matrices per step ({what}): H = {H}, d = {d}"
            f"{f', {mechanism} over {releases} releases' if private else ''} need about "
            f"{need / 2**30:.1f} GiB, this machine has {have / 2**30:.1f} GiB. Use a smaller "
            "feature map than one-hot (d = S A), a shorter horizon or fewer batches (docs/harness.md, 'Size')"
        )


def batch_starts(K: int, B: int) -> np.ndarray:
    """Alg. 2, line 4: the first episodes k_i = i * ceil(K/B) + 1 (1-based), 0 <= i < B, of the
    batches that start within K episodes. The schedule depends on (K, B) only, never on the data,
    which is what the privacy proof needs (App. D, Rem. "Data-Dependent Batches"). When
    (B - 1) ceil(K/B) >= K the last batches never start, so fewer than B policies are released."""
    L = -(-int(K) // int(B))
    n = min(int(B), (int(K) - 1) // L + 1)  # the starts i L + 1 <= K
    # a Python list of every start hung at K = 10^12 with batches="every" (50 bytes a batch)
    refuse_over_memory("LSVIUCB", n, f"the first episode of each of its {n} batches", "Use fewer batches.")
    return np.arange(n, dtype=np.int64) * L + 1


class LSVIUCB(Agent):
    """LSVI-UCB with a static batch schedule and a privacy plug-in (Alg. 2).

    Per episode k, user side: take the billboard (Lambda~_{b,h}, w~_{b,h})_h of the current batch
    b and act greedily on Q_{k,h} = Pi_[0,H][w~^T phi + beta ||phi||_{Lambda~^{-1}}] (computed
    once per release; under exploration="sampling" greedily for w_h ~ N(w~_h, beta^2
    Lambda~^{-1}), drawn per user); send the trajectory. Server side, at the end of a batch
    (k = k_{b+1} - 1): for h = H..1, Lambda~_{b+1,h} = Lambda_{k+1,h} + (c_K + Upsilon) I +
    H^{b+1}_h, u~ = sum_i phi_i [r_i + V_{k+1,h+1}(s'_i)] + eta^{b+1}_h, w~ = Lambda~^{-1} u~ and
    publish. The episode and the release run in Rust (privrl._core.LsviAgent,
    rust/agents/lsvi.rs); the numpy oracle is privrl.agents.lsvi_ucb.reference.

    Variants, by (privacy, batches):

    * NonPrivate(), "every": LSVI-UCB of Jin et al. (2020) (update after every episode).
    * NonPrivate(), int B: batched LSVI-UCB (Wang et al. 2021, static schedule). "static" has
      no private B to use: B = K under the paper / tight / practical calibrations, ceil(sqrt(d H K))
      under the default (adaptive) one (see calibrate_lsvi_ucb). "scaled": App. D's balance at
      the noise the calibration actually adds (Gaussian JDP; otherwise as "static").
    * JointDP(eps, delta), "static": Alg. 2 with App. D's B = ceil((K eps)^{2/5} / (d^{3/5} H^{1/5})).
    * JointDP(eps, delta), "every": the non-batched variant of Rem. 2 (B = K, noise calibrated
      for K releases).
    * JointDP(eps, 0.0): pure JDP (App. "Pure joint DP in the linear setting"): Laplace node
      and eta noise, B = ceil((K eps)^{1/3} / (d^{2/3} H^{1/3})).

    Parameters
    ----------
    env : LinearMDP (Asm. 1; ||phi|| <= 1 is checked when it is built), or a FeatureMap when the
        model is unknown (learn from interaction with privrl.learn; no exact regret).
    privacy : NonPrivate() | JointDP(eps, delta). LocalDP is refused: the paper has no LDP
        algorithm for linear MDPs (Rem. "Local Differential Privacy").
    batches : "static" (default), "scaled", "every" or an int B in [1, K] (see above); batches
        start at k_i = i ceil(K/B) + 1, a schedule fixed in advance.
    episodes : K, the number of users the noise is calibrated for.
    seed : reproducible ties, exploration and privacy noise (None: OS entropy).
    beta_scale : multiplies the exploration radius (exploration only); `beta` overrides it. Under
        the paper / tight / practical calibrations the radius is App. D's beta; under the default
        (adaptive) one it is in posterior standard deviations (1: one std; the bonus and the
        sampling draw's scale). calibration.beta_used records the radius in use.
    ties : "random" (from the agent's seed) or "lowest".
    lam : the ridge regularizer lambda (default None: 1 under the default (adaptive) calibration,
        App. D's d under the others). Regret side only.
    sensitivity : "clip" or "reject" user data outside ||phi|| <= 1, r in [0, 1]. V_{h+1} is
        projected on [0, H], so one user moves u by at most 2(H+1) (the sensitivity behind sigma_u).
    planning : "auto" (from counts once more users than states are stored), "per_sample" or
        "aggregated": the same release up to floating-point summation order.
    exploration : "optimism" or "sampling" (see above; post-processing, the noise unchanged); None
        (default): "sampling" under the default (adaptive) calibration, "optimism" under the others.

    Attributes: calibration (App. D's names), batch_starts (1-based k_i), B, release_users.
    """

    name = "LSVI-UCB"
    #: The calibration the agent was built with (App. D's names: ``sigma_Lambda``, ``sigma_u``, ...).
    calibration: LSVIUCBCalibration
    _SAVED = Agent._SAVED | {"B", "batch_starts", "batches", "features", "planning"}
    _SAVED_CORE = "LsviAgent"

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
                + not_a_model(env)
            )
        problem = feature_table_problem(getattr(env, "features", None), (env.S, env.A), 3)
        if problem is not None:
            return (
                f"LSVI-UCB needs a LinearMDP (Asm. 1) or a FiniteMDP with linear features phi(s, a): "
                f"{name}.features must be a finite (S, A, d) = ({env.S}, {env.A}, d) array: "
                f"{problem}"
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
        exploration: str | None = None,
    ):
        reason = self.accepts(env)
        if reason is not None:
            raise TypeError(reason)
        if isinstance(privacy, LocalDP):
            raise PrivacyParameterError(
                "LocalDP is not available for linear MDPs: the paper gives no LDP algorithm there "
                "(Rem. 'Local Differential Privacy': LSVI needs the raw features on the server); "
                "use JointDP(eps, delta) or NonPrivate()"
            )
        self.planning = check_choice(planning, PLANNING, "planning")
        self.sensitivity = check_choice(sensitivity, ("clip", "reject"), "sensitivity")
        lam = None if lam is None else check_positive_real(lam, "lam")
        super().__init__(env, privacy, episodes, seed, beta_scale, beta, ties, exploration)
        phi = np.asarray(env.features, dtype=np.float64)
        check_phi_norms(phi)
        self.d = phi.shape[-1]
        kw = self.privacy.as_kwargs()
        self.batches = batches
        self.B = privacy_of.resolve_batches(
            batches, kw["kind"], self.privacy.pure, kw["epsilon"], self.H, self.K, self.d,
            kw["calibration"], kw["delta"], kw["p"], kw["mechanism"],
        )  # fmt: skip
        self.batch_starts = batch_starts(self.K, self.B)
        releases = len(self.batch_starts) - 1
        private = kw["kind"] != "none"
        one_hot = is_one_hot(phi.reshape(-1, self.d))
        kept = self.exploration == "sampling" and kw["calibration"] != "adaptive"  # Rust: factor.rs
        entries = dense_entries(
            self.H, self.d, self.S * self.A, private, kw["mechanism"], releases, one_hot, kept
        )
        check_memory(8 * entries, self.H, self.d, private, kw["mechanism"], releases)
        if releases == 0 and self.K > 1:
            why = (
                f"the {batches!r} schedule's B is 1 at K = {self.K}, d = {self.d}: App. D's B grows "
                "with K eps and shrinks with d"
                if isinstance(batches, str)
                else f"batches={batches!r}"
            )
            warnings.warn(
                f"a single batch ({why}): the agent never releases, so every one of its {self.K} users "
                "plans from the initial billboard (one policy under optimism, a draw around the prior "
                "under sampling); pass batches=<int> (more releases, more noise in each), a "
                "smaller feature map or more users",
                ScheduleWarning,
                stacklevel=2,
            )
        plan = self.release_plan()
        cal = privacy_of.calibrate_lsvi_ucb(
            **kw, H=self.H, K=self.K, d=self.d, batches=batches, plan=plan, lam=lam
        )
        self._settle_exploration(cal)
        check_release(plan, cal, self.K)
        if batches == "every" and kw["kind"] == "jdp" and kw["calibration"] != "paper":
            self._warn_every(cal, kw)
        self.beta = self._radius(cal, cal.beta)
        self._check_draw(cal)
        self.calibration = cal.replace(beta_used=self.beta, beta_scale=self.beta_scale, planning=planning)
        (stat,) = plan.statistics
        # phi against the plan's x bound, rewards against [0, 1] (then r + V <= H + 1 holds since
        # V~ is projected on [0, H])
        self.guards = {
            stat.name: SensitivityGuard(x_bound=stat.x_bound, y_low=0.0, y_high=1.0, mode=sensitivity)
        }
        # The feature map is public and fixed: clipping it once clips every row a user can send.
        table, _ = SensitivityGuard(stat.x_bound).apply(phi.reshape(self.S * self.A, self.d))
        self.features = table.reshape(self.S, self.A, self.d)
        capacity = {"per_sample": self.K, "auto": min(self.K, self.S + 1), "aggregated": 0}[planning]
        if capacity * (self.H + 1) > MAX_STORED_STEPS:
            raise PrivacyParameterError(
                f"LSVI-UCB stores every episode under planning='per_sample': K (H + 1) = "
                f"{capacity * (self.H + 1):.3g} steps exceed the limit of {MAX_STORED_STEPS}"
            )
        self._core = _core.LsviAgent(
            LsviSpec(
                table=np.ascontiguousarray(table),
                n_actions=self.A,
                horizon=self.H,
                guard=self.guard.spec,
                beta=float(self.beta),
                lam=float(cal.lam),
                batch_len=int(cal.batch_length),
                private=self._private(cal),
                planning=planning,
                record_capacity=int(capacity),
                tie_seed=self._tie_seed,
                exploration_seed=self._exploration_seed,
                episodes=self.K,
                adaptive=self._adaptive(cal, table),
            )
        )

    def _warn_every(self, cal: LSVIUCBCalibration, kw: dict[str, Any]) -> None:
        """Say what a release after every user costs under JDP (Rem. 2) when the default schedule
        releases fewer times: the composed eta noise and H d x d Lambda releases per user."""
        static = privacy_of.resolve_batches(
            "static", kw["kind"], self.privacy.pure, kw["epsilon"], self.H, self.K, self.d,
            kw["calibration"], kw["delta"], kw["p"], kw["mechanism"],
        )  # fmt: skip
        if static >= self.B:
            return
        law = "Laplace scale b" if cal.noise == "laplace" else "std"  # pure JDP: b, std sqrt(2) b
        warnings.warn(
            f"batches='every' under JointDP releases after each of the K = {self.K:,} users (Rem. 2): "
            f"the releases compose, so each one's eta noise has {law} sigma_u = {cal.sigma_u:,.4g}, and "
            f"every user costs H = {self.H} releases of a d x d Gram (d = {self.d}); the default "
            f"batches='static' releases B = {static} times. Keep 'every' to run Rem. 2's variant; "
            "pass batches='static' (or an int) for an agent that learns within its noise",
            ScheduleWarning,
            stacklevel=3,
        )

    def _check_draw(self, cal: LSVIUCBCalibration) -> None:
        """Refuse a sampling radius whose square over lam overflows a double, UCRL-VTR's rule for its
        exploration matrix: the draw w ~ N(w~, beta^2 Lambda~^{-1}) (Lambda~ >= lam I) has
        covariance entries up to beta^2 / lam, and beta = 1e308 at lam = 1e-10 drew w = -inf at the
        first user (a NonFiniteError about 'w'). Below it the deviation beta (Lambda~^{-1})^{1/2} g is
        at most beta / sqrt(lam) < 1.4e154 times ||g||, finite. Optimism (beta ||phi||_{Lambda~^{-1}},
        clipped to [0, H]) and the adaptive rule (its radius capped, its draw's scale the posterior's,
        not 1 / lam) need no such bound."""
        if self.exploration != "sampling" or cal.release_rule == "adaptive":
            return
        if not math.isfinite(self.beta * self.beta / cal.lam):
            raise PrivacyParameterError(
                f"the radius beta = {self.beta:.6g} is too large for exploration='sampling' at lam = "
                f"{cal.lam:g}: beta^2 / lam, the largest covariance entry of the draw N(w~, beta^2 "
                "Lambda~^{-1}), overflows a double; pass a smaller beta_scale or beta (or a larger lam)"
            )

    def _private(self, cal: LSVIUCBCalibration) -> LsviPrivateSpec | None:
        """H Lambda mechanisms over the R releases (one leaf per release), the eta stream, and
        the shift: App. D's constant c_K + Upsilon, or the practical rule's per release."""
        if cal.kind != "jdp":
            return None
        seeds = spawn_noise_seeds(self._streams, self.H + 1)
        practical = cal.release_rule in PRACTICAL_RULES
        return LsviPrivateSpec(
            noise=noise_spec(cal, cal.sigma_Lambda, cal.sigma_u, cal.releases, seeds),
            shift=float(cal.lam + cal.shift),
            practical_mult=float(cal.shift_mult) if practical else None,
            bounds=bounds_spec(cal, cal.sigma_Lambda, cal.sigma_u, self.d) if practical else None,
        )

    def _adaptive(self, cal: LSVIUCBCalibration, table: np.ndarray) -> LsviAdaptiveSpec | None:
        """The adaptive rule's public constants (privrl.privacy.adaptive), None for other rules."""
        if cal.release_rule != "adaptive":
            return None
        w1, exact = centre_direction(table)
        top = float(np.abs(w1).max()) if exact else 0.0  # scaled: ||w1||^2 overflowed at tiny features
        norm = top * float(np.linalg.norm(w1 / top)) if top > 0.0 else 0.0
        privacy_of.check_adaptive_lam(cal, norm, len(self.batch_starts) - 1)
        private = cal.kind == "jdp"
        return LsviAdaptiveSpec(
            w1=w1,
            value_shift=exact,
            diagonal=is_one_hot(table),
            shift_mult=float(cal.shift_mult),
            bounds=bounds_spec(cal, cal.sigma_Lambda, cal.sigma_u, self.d) if private else BoundsSpec("zero"),
            alpha=float(cal.alpha) if private else 0.05,
            radius=self.beta,
        )

    def release_plan(self) -> ReleasePlan:
        """What this agent releases about one user, as data (privrl.privacy.plans): the statistic
        phi_h, r_h + V_{h+1}(s'_h) with its bounds, the H Lambda mechanisms over the R released
        batches and the H x R fresh u releases (App. D)."""
        p = self.privacy
        return privacy_of.release_plan(p.kind, p.pure, self.H, self.K, self.d, self.B, p.mechanism, p.sampler)

    @property
    def batch(self) -> int:
        """Index b of the current batch (0-based) = releases published since the start."""
        return int(self._core.releases)

    @property
    def release_users(self) -> list[int]:
        """The user count k of every billboard published so far, the initial one included."""
        return list(self._core.release_users)

    def greedy_policy(self) -> np.ndarray:
        """The greedy policy of the released weights (Agent.greedy_policy): for every step h the
        billboard's w~_h (the perturbed ridge regression of the targets r + V_{h+1}(s') of the last
        release; the initial billboard's before any release), acted on with the users' planner at
        radius 0: ``Q_h(s, a) = clip(phi(s, a)^T w~_h, 0, H)`` (paper / practical rules) or
        ``min(phi^T w~_h, H - h)`` (adaptive rule, its posterior mean without the width); the
        argmax over actions, ties to the lowest. The weights already hold the release's backup from
        V_{H+1} = 0, so no step reads another. Post-processing of the billboard only."""
        return self._core.greedy_policy()

    def release(self) -> Release:
        """The current billboard (Lambda~_{b,h}, Lambda~^{-1}_{b,h}, w~_{b,h})_h."""
        design, inverse, weights, users = self._core.billboard()
        return Release(design, inverse, weights, int(users))

"""Privacy-Preserving UCRL-VTR (Alg. 1, Sec. 3): value-targeted regression on a linear-mixture
MDP with optimistic (or sampled) planning on the user's side; non-private, JDP (Cor. 1), LDP
(Cor. 2) and pure DP (Rem. "Pure DP", App. "Pure DP in the UCRL-VTR Framework").
"""

from __future__ import annotations

import math
import sys
import warnings
from typing import Any

import numpy as np

from privrl import _core
from privrl.agents.common.base import Agent, Release, SensitivityGuard, check_release
from privrl.agents.common.specs import (
    AdaptiveSpec,
    PracticalSpec,
    RegressionSpec,
    VtrSpec,
    bounds_spec,
    noise_spec,
)
from privrl.agents.ucrl_vtr import calibration as privacy_of
from privrl.agents.ucrl_vtr.calibration import UCRLVTRCalibration
from privrl.common.checks import as_f64, check_choice, feature_table_problem
from privrl.common.errors import AssumptionError, AssumptionWarning, PrivacyParameterError
from privrl.common.memory import refuse_over_memory
from privrl.common.seeds import spawn_noise_seeds
from privrl.envs.finite import FiniteMDP
from privrl.envs.gym import not_a_model
from privrl.envs.mixture import LinearMixtureMDP, check_phi_v_bound
from privrl.privacy import practical
from privrl.privacy.adaptive import DISTANCE_FLOOR, adaptive_constants
from privrl.privacy.common import PRACTICAL_RULES
from privrl.privacy.plans import ReleasePlan

CENTRES = ("feasible", "zero")  # the practical and adaptive ridge's centre (UCRLVTR's ``centre``)
PAPER_SHIFT = "the shift 2*Upsilon, an event of probability <= p/3 under the paper's calibration"
#: A lower bound on the dense d x d matrices a UCRL-VTR regression keeps per step: the billboard's
#: design, inverse and exploration matrices and the server's Gram and inverse (or its mechanisms'
#: state); measured 8-22 per step at d = 900 (the noise mechanisms' state on top), so an agent
#: refused by it (common.memory) could never have run.
DENSE_PER_STEP = 5


class UCRLVTR(Agent):
    """Alg. 1. Per episode k:

    user side  — receive (Lambda~_{k,h}, w~_{k,h})_h; for h = H..1 compute
                 Q~_{k,h}(s,a) = min{H, r_h(s,a) + <phi_{V~_{k,h+1}}(s,a), w~_{k,h}>
                                      + beta_k ||phi_{V~_{k,h+1}}(s,a)||_{Lambda~^{-1}_{k,h}}}
                 and V~_{k,h} = max_a Q~_{k,h} for every state, act greedily; then send
                 X_{k,h} = phi_{V~_{k,h+1}}(s_h, a_h), y_{k,h} = V~_{k,h+1}(s_{h+1}) — raw under
                 JDP, randomized (B^1, g^1) under LDP;
    server     — add the statistics and publish Lambda~_{k+1,h}, w~_{k+1,h}.

    The episode runs in Rust (privrl._core.VtrAgent, rust/agents/vtr.rs); the paper-shaped numpy
    version is privrl.agents.ucrl_vtr.reference (a test oracle).

    Parameters
    ----------
    env : LinearMixtureMDP (Asm. 2 is checked when it is built).
    privacy : NonPrivate() | JointDP(eps, delta) | LocalDP(eps, delta); delta = 0 selects pure DP.
        JointDP(..., mechanism="honaker" | "factorization" | "blt") replaces the 2H binary trees
        by that continual-release mechanism at the same (eps, delta) (privrl.privacy.continual).
    episodes : K, the number of users the privacy noise is calibrated for.
    seed : reproducible ties, exploration and privacy noise (None: OS entropy).
    beta_scale : multiplies the exploration radius (exploration only: the privacy noise depends
        only on (eps, delta, H, K, d)); `beta` overrides the radius altogether. Under the paper /
        tight / practical calibrations the radius is the theoretical beta_k; under the default
        (adaptive) one it is in standard deviations of the estimate (1: one std) and scales only
        the random part of the width (the bias bound is never scaled). calibration.beta_used
        records the radius in use.
    sensitivity : "clip" or "reject" user statistics outside ||X|| <= H, y in [0, H].
    centre : the point the ridge of the practical and the default (adaptive) calibrations pulls
        towards (no effect on "paper" / "tight"): "feasible" (default; the min-norm model w0 with
        phi_1^T w0 = 1, a data-independent prior that spends no privacy) or "zero" (the paper's
        ridge).
    exploration : "optimism" (the bonus ||phi||_{E_h}) or "sampling" (each user plans greedily for
        w_h ~ N(w~_h, E_h), drawn from the agent's exploration stream: post-processing of the
        billboard, the privacy noise and its accounting unchanged; under the default calibration
        the user draws SAMPLING_DRAWS = 4 models of the random part, keeps the bias bound as a
        bonus and plans on the largest Q per pair, never below the estimate's,
        privrl.privacy.adaptive).
    ties : "random" (from the agent's seed) or "lowest": how exact ties between greedy actions are
        broken; under the default calibration only among the tied actions of largest pessimistic
        value (privrl.privacy.adaptive).

    V~ is projected on [0, H] (not only min{H, .}): with noisy w~ the paper's Q~ can go negative,
    which would break the sensitivity bound ||X_{k,h}|| <= H that the calibration assumes; optimism
    is unaffected because Q* >= 0.
    """

    name = "UCRL-VTR"
    #: The calibration the agent was built with (Alg. 1's names: ``sigma_B``, ``beta``, ...).
    calibration: UCRLVTRCalibration
    _SAVED = Agent._SAVED | {"C_w", "centre", "mixture_features"}
    _SAVED_CORE = "VtrAgent"
    env: LinearMixtureMDP
    _radius_key = "beta"
    #: The ridge regressions the agent keeps (UCRL-VTR+: two).
    _n_regressions = 1
    _privacy_module: Any = privacy_of

    def __init__(
        self,
        env: LinearMixtureMDP,
        privacy: Any = None,
        episodes: int = 1000,
        seed: Any = None,
        beta_scale: float = 1.0,
        beta: float | None = None,
        ties: str = "random",
        sensitivity: str = "clip",
        centre: str = "feasible",
        exploration: str | None = None,
    ):
        reason = self.accepts(env)
        if reason is not None:
            raise TypeError(reason)
        self.centre = check_choice(centre, CENTRES, "centre")
        self.sensitivity = check_choice(sensitivity, ("clip", "reject"), "sensitivity")
        super().__init__(env, privacy, episodes, seed, beta_scale, beta, ties, exploration)
        # phi(s'|s, a) (S, A, S, d) and C_w >= ||w_h||: a LinearMixtureMDP's, or those of any
        # FiniteMDP that carries them (``features``, ``C_w``: Asm. 2 is then the user's claim;
        # ||phi_v|| <= 1 is checked as a LinearMixtureMDP checks it, a warning here: the guard
        # enforces the bound on every X a user sends)
        if not isinstance(env, LinearMixtureMDP):
            self._check_own_features(env)
        self.mixture_features = np.ascontiguousarray(env.features, dtype=np.float64)
        self.C_w = float(env.C_w)
        self.d = self.mixture_features.shape[-1]
        refuse_over_memory(
            self.name,
            DENSE_PER_STEP * self._n_regressions * self.H * self.d**2,
            f"dense d x d matrices per step (H = {self.H}, d = {self.d})",
            "Use fewer mixture features or a shorter horizon.",
        )
        plan = self.release_plan()
        cal = self._calibrate(plan)
        self._settle_exploration(cal)
        check_release(plan, cal, self.K)
        radius = getattr(cal, self._radius_key)
        self.beta = self._radius(cal, radius)
        self.calibration = cal.replace(beta_used=self.beta, beta_scale=self.beta_scale)
        if cal.release_rule in PRACTICAL_RULES:
            self.calibration = self.calibration.replace(centre=centre)
        self.guards = {
            s.name: SensitivityGuard(x_bound=s.x_bound, y_low=s.y_low, y_high=s.y_high, mode=sensitivity)
            for s in plan.statistics
        }
        seeds = spawn_noise_seeds(self._streams, 2 * self.H * len(plan.statistics))
        self._core = _core.VtrAgent(
            VtrSpec(
                features=self.mixture_features,
                rewards=np.ascontiguousarray(env.R, dtype=np.float64),
                regressions=self._regressions(cal, seeds),
                plus=self._plus(),
                tie_seed=self._tie_seed,
                exploration_seed=self._exploration_seed,
                episodes=self.K,
            )
        )
        self._check_radii(cal)

    def _intake_streams(self) -> tuple[int, list[int]]:
        """2H noise seeds per regression; regression i's intake keys its (matrix, vector) streams
        with the first two of its block (``_regression``)."""
        n, H = self._n_regressions, self.H
        return 2 * H * n, [2 * H * i + j for i in range(n) for j in (0, 1)]

    def _message_shape(self) -> tuple[int, ...]:
        """Per regression and step: grams (n, H, d, d), targets (n, H, d)."""
        return (self._n_regressions, self.H, self.d)

    def _check_radii(self, cal: Any) -> None:
        """Refuse a radius whose square over lam overflows a double: the exploration matrix
        beta^2 Lambda~^{-1} would be inf at the first release (beta_scale = 1e160 under the paper's
        calibration failed there with a NonFiniteError about the inverse)."""
        plus = self._plus()
        radii = [("beta", self.beta)]
        if plus is not None:
            radii += [("beta_check", plus[0]), ("beta_tilde", plus[1])]
        for name, r in radii:
            if not math.isfinite(r * r / cal.lam):
                raise PrivacyParameterError(
                    f"the radius {name} = {r:.6g} is too large: {name}^2 / lam overflows a double (the "
                    "exploration matrix); pass a smaller beta_scale or beta"
                )
        if cal.release_rule != "practical":
            return
        # the practical exploration matrix E = r^2 A^{-1} + gamma_t^2 A^{-2} (A floored at lam I, so
        # its entries reach r^2 / lam + gamma_t^2 / lam^2), gamma_t >= scale (C + Upsilon (C_w +
        # shift_mult D)) at the worst release (D: the centre's distance, the shift shift_mult Upsilon
        # and the floor's lift >= 0 both pull towards the centre): refused where that bound overflows
        # a double (LDP, beta_scale = 1e150: a
        # NonFiniteError about an "inverse" mid-run). UCRL-VTR+'s second-moment regression has one
        # too (radius beta_tilde, its own C2, Upsilon2): pure JDP practical at beta_scale = 1e148 on
        # RiverSwimMixture(S=4, H=5) released E2 = inf from the first user and failed at user 511
        full = getattr(cal, self._radius_key)
        scale = self.beta / full if full else self.beta_scale
        # (without the shift's D term, JDP practical with the tree at beta_scale = 1e150 on
        # RiverSwimMixture(S=4, H=3) passed and failed at user 7: E_h = inf)
        distance = self._centre()[1]
        regs = (
            [("", self.beta, cal.Upsilon, cal.C)]
            if plus is None
            else [("", self.beta, cal.Upsilon1, cal.C1), (" (second moments)", plus[1], cal.Upsilon2, cal.C2)]
        )
        over = []  # every regression whose width overflows (UCRL-VTR+: both may)
        for which, r, ups, c in regs:
            bound = c + ups * (self.C_w + cal.shift_mult * distance)
            gamma = scale * bound
            # the kernel squares r and gamma first, then sums r^2 A^{-1} + gamma^2 A^{-2}
            if not math.isfinite(gamma * gamma + r * r / cal.lam + gamma * gamma / cal.lam**2):
                over.append(
                    f"the practical width{which} overflows a double: radius {r:.6g} and privacy part "
                    f"gamma >= {gamma:.6g} (radius scale {scale:.6g} times the noise bounds C + Upsilon "
                    f"(C_w + shift_mult D) = {bound:.6g}, D = {distance:.6g} the centre's distance)"
                )
        if over:
            raise PrivacyParameterError(
                f"{'; '.join(over)}: gamma^2 or the exploration matrix's bound r^2 / lam + gamma^2 / lam^2 "
                f"(lam = {cal.lam:g}) exceeds {sys.float_info.max:.4g}; pass a smaller beta_scale or beta"
            )

    def _check_own_features(self, env: Any) -> None:
        """Asm. 2's ||phi_v|| <= 1 on a user's own FiniteMDP: an AssumptionWarning where it fails."""
        try:
            check_phi_v_bound(np.asarray(env.features, dtype=np.float64), env.name, {}, stacklevel=4)
        except AssumptionError as e:
            what = "refuses such a user" if self.sensitivity == "reject" else "clips X to norm 1"
            warnings.warn(
                f"{env.name}: {e}; the agent's guard {what} at run time (the privacy bound holds, the "
                "regression sees clipped features)",
                AssumptionWarning,
                stacklevel=3,
            )

    @classmethod
    def accepts(cls, env: Any) -> str | None:
        """None if the agent runs on `env`, else why not: a LinearMixtureMDP (Asm. 2), or any
        FiniteMDP with linear-mixture ``features`` (S, A, S, d) and a bound ``C_w`` on ||w_h||."""
        if isinstance(env, LinearMixtureMDP):
            return None
        name = type(env).__name__
        if not isinstance(env, FiniteMDP):
            return (
                f"{cls.name} needs a LinearMixtureMDP (Asm. 2) or a FiniteMDP with mixture features; "
                f"got {name}{not_a_model(env)}"
            )
        problem = feature_table_problem(getattr(env, "features", None), (env.S, env.A, env.S), 4)
        if problem is not None:
            return (
                f"{cls.name} needs a LinearMixtureMDP (Asm. 2) or a FiniteMDP with mixture features "
                f"phi(s'|s, a): {name}.features must be a finite (S, A, S, d) = ({env.S}, {env.A}, "
                f"{env.S}, d) array: {problem}"
            )
        C_w = getattr(env, "C_w", None)
        if (
            isinstance(C_w, bool)
            or not isinstance(C_w, (int, float, np.floating))
            or not 0 < float(C_w) < np.inf
        ):
            return f"{cls.name} needs {name}.C_w, a finite bound > 0 on ||w_h|| (Asm. 2), got {C_w!r}"
        return None

    def release_plan(self) -> ReleasePlan:
        """What this agent releases about one user, as data (privrl.privacy.plans): the statistic
        X_{k,h}, y_{k,h} with the bounds its SensitivityGuard enforces and the 2H released families
        (App. B). The calibration, the privacy report, the summary and the audit all read it."""
        p = self.privacy
        return self._privacy_module.release_plan(
            p.kind, p.pure, self.H, self.K, self.d, p.mechanism, p.sampler
        )

    def _calibrate(self, plan: ReleasePlan) -> Any:
        return privacy_of.calibrate_ucrl_vtr(
            **self.privacy.as_kwargs(), H=self.H, K=self.K, d=self.d, C_w=self.C_w, plan=plan
        )

    @property
    def mechanism(self) -> str:
        """The continual-release mechanism of the JDP server ("tree" unless JointDP chose one)."""
        return self.privacy.mechanism

    def _plus(self) -> tuple[float, float] | None:
        return None

    def _regressions(self, cal: Any, seeds: list[bytes]) -> list[RegressionSpec]:
        """UCRL-VTR's one regression (statistic X_{k,h}, y_{k,h}; noise sigma_B, sigma_g)."""
        (guard,) = self.guards.values()
        sigmas = getattr(cal, "sigma_B", None), getattr(cal, "sigma_g", None)
        return [self._regression(cal, guard, *sigmas, cal.shift, self.beta, seeds, "vtr")]

    def _regression(self, cal, guard, sigma_m, sigma_v, shift, radius, seeds, which) -> RegressionSpec:
        """One regression per the privacy model: exact for NonPrivate, 2H continual-release
        mechanisms for JDP (Cor. 1), user-side noise + shift for LDP (Cor. 2); under the practical
        calibration its billboard is the practical release (privrl.privacy.practical)."""
        kind = cal.kind
        noise = None
        if kind == "jdp":
            noise = noise_spec(cal, sigma_m, sigma_v, self.K, seeds)
        elif kind == "ldp":
            noise = noise_spec(cal, sigma_m, sigma_v, self.K, seeds[:2])
        return RegressionSpec(
            mode={"none": "exact", "jdp": "jdp", "ldp": "ldp"}[kind],
            lam=float(cal.lam),
            base=float(cal.lam + (shift if kind != "none" else 0.0)),
            radius=float(radius),
            shift_name=PAPER_SHIFT,
            guard=None if kind == "none" else guard.spec,
            noise=noise,
            practical=self._practical(cal, sigma_m, sigma_v, radius, which)
            if cal.release_rule in PRACTICAL_RULES
            else None,
        )

    def _practical(self, cal: Any, sigma_m: Any, sigma_v: Any, radius: float, which: str) -> PracticalSpec:
        """The practical release's constants: the ridge's centre (a data-independent prior, no
        privacy spent) and its distance bound, the widths' scales and the noise bounds; under the
        adaptive calibration the adaptive rule's constants for regression `which`
        (privrl.privacy.adaptive)."""
        adaptive = None
        if cal.release_rule == "adaptive":
            c = adaptive_constants(which, self.H, self.d)
            adaptive = AdaptiveSpec(c.sigma_max, c.spread_scale, c.sigma_min, radius=self.beta)
        w0, distance = self._centre()
        if adaptive is not None:  # the adaptive ridge divides by D (DISTANCE_FLOOR)
            distance = max(distance, DISTANCE_FLOOR * self.C_w)
        full = getattr(cal, self._radius_key)
        return PracticalSpec(
            lam=float(cal.lam),
            shift_mult=float(cal.shift_mult),
            beta2=float(radius) * float(radius),  # ** 2 raised OverflowError at 1e300
            c_w=self.C_w,
            centre_distance=float(distance),
            noise_scale=self.beta / full if full else self.beta_scale,
            w0=np.ascontiguousarray(w0, dtype=np.float64),
            bounds=bounds_spec(cal, sigma_m, sigma_v, self.d),
            adaptive=adaptive,
        )

    def _centre(self) -> tuple[np.ndarray, float]:
        """The practical ridge's centre w0 and its distance bound D >= ||w_h - w0||."""
        if self.centre == "feasible":
            w0 = practical.feasible_centre(self.mixture_features)
            return w0, practical.centre_distance(self.C_w, self.mixture_features, w0)
        return np.zeros(self.d), self.C_w

    def _board(self, i: int) -> Release:
        design, inverse, weights, explore, gamma, users = self._core.billboard(i)
        practical_rule = self.calibration.release_rule in PRACTICAL_RULES
        return Release(
            design, inverse, weights, int(users), explore if practical_rule else None, gamma, explore
        )

    def greedy_policy(self) -> np.ndarray:
        """The greedy policy of the released estimate (Agent.greedy_policy): value iteration from
        V_{H+1} = 0 on the billboard's mixture weights w~_h with the users' planner, zero bonus and
        no draw: ``Q_h(s, a) = clip(r_h(s, a) + <phi_{V_{h+1}}(s, a), w~_h>, 0, H)``; under the
        adaptive rule its normalized target, ``Q_h = r + lo + (hi - lo) / H clip(<phi_f, w~_h>, 0,
        H)`` capped at ``r + hi`` (``[lo, hi]`` the range of V_{h+1} over the pair's support, the
        rule's projection of the estimate); ``V_h = max_a Q_h``, ties to the lowest action (no
        pessimistic tie rule: that one ranks the widths). Post-processing of the billboard only."""
        return self._core.greedy_policy()

    def release(self) -> Release:
        """The current billboard (Lambda~_{k,h}, Lambda~^{-1}_{k,h}, w~_{k,h})_h: the planning
        regression's (for UCRL-VTR+ the first, weighted one of Alg. 3, Lambda^ and w^; the second
        is ``release2``)."""
        return self._board(0)

    def values(self) -> np.ndarray:
        """The arriving user's planned values V~_{k,h}(s), (H + 1, S) (V~_{k,H+1} = 0)."""
        return self._core.values()

    def observe_statistics(self, X: Any, y: Any) -> None:
        """Send chosen statistics X (H, d), y (H,) as one user's (the audits' adversarial user):
        they pass the guard and the privacy model like any user's."""
        X = as_f64(X, "X", 2, (self.H, self.d))
        y = as_f64(y, "y", 1, (self.H,))
        self._core.observe_statistics(X, y)
        self._sync_guards()

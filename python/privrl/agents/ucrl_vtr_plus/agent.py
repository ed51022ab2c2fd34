"""Privacy-Preserving UCRL-VTR+ (Alg. 3, App. C): variance-aware value-targeted regression with
two private regressions (weighted first moments, second moments); non-private (Zhou et al. 2021),
JDP (Cor. "JDP-UCRL-VTR+"), LDP (Cor. "LDP-UCRL-VTR+") and pure DP through the privacy plug-in.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privrl.agents.common.base import Release, SensitivityGuard
from privrl.agents.common.specs import RegressionSpec
from privrl.agents.ucrl_vtr.agent import UCRLVTR
from privrl.agents.ucrl_vtr_plus import calibration as privacy_of
from privrl.agents.ucrl_vtr_plus.calibration import UCRLVTRPlusCalibration
from privrl.privacy.plans import ReleasePlan


class UCRLVTRPlus(UCRLVTR):
    """Alg. 3. Planning is Alg. 1's with the hat quantities (w^, Lambda^, beta^); after the episode
    the user computes, for each visited (s_h, a_h),

        V-bar = [<phi_{V^2}, w~>]_[0, H^2] - [<phi_V, w^>]^2_[0, H]            (variance estimate)
        E     = min{H^2, 2H beta-check ||phi_V||_{Lambda^^-1}}
                + min{H^2, beta~ ||phi_{V^2}||_{Lambda~^-1}}                      (its correction)
        sigma-bar = sqrt(max{H^2/d, V-bar + E})

    and sends (phi_V / sigma-bar, V(s') / sigma-bar) to the weighted regression ("hat", Lambda^, w^)
    and (phi_{V^2}, V^2(s')) to the second-moment regression ("tilde", Lambda~, w~) — raw under JDP
    (4H trees: sigma_B,1 for the first family, sigma_B,2 for the second), randomized under LDP.
    lambda = 1. Alg. 3 writes phi_{V~_{k,h+1}} in the second term of E; V~ is never defined there,
    and the second-moment regression is over phi_{V^2}, so phi_{V^2} is used (as in Zhou et al.).

    Sensitivities enforced at the mechanisms' entry: ||phi_V / sigma-bar|| <= sqrt(d) and
    V / sigma-bar in [0, sqrt(d)] (since sigma-bar^2 >= H^2/d), ||phi_{V^2}|| <= H^2, V^2 in [0, H^2].
    The episode runs in Rust (rust/agents/vtr.rs); the numpy oracle is
    privrl.agents.ucrl_vtr_plus.reference.

    Parameters
    ----------
    env : LinearMixtureMDP (Asm. 2 is checked when it is built).
    privacy : NonPrivate() | JointDP(eps, delta) | LocalDP(eps, delta); delta = 0 selects pure DP
        (JointDP's ``mechanism=`` as for UCRLVTR).
    episodes : K, the number of users the privacy noise is calibrated for.
    seed : reproducible ties, exploration and privacy noise (None: OS entropy).
    beta_scale : multiplies the three radii (beta^, beta-check, beta~) together (exploration only);
        `beta` overrides beta^ and scales the other two by the same factor. calibration.beta_used,
        beta_check_used and beta_tilde_used record the radii in use.
    ties : "random" (from the agent's seed) or "lowest", as for UCRLVTR.
    sensitivity : "clip" or "reject" user statistics outside the bounds above.
    centre : as for UCRLVTR ("feasible", the default, or "zero"; practical and adaptive
        calibrations only).
    exploration : "optimism" or "sampling", as for UCRLVTR (post-processing, the noise unchanged).
    """

    name = "UCRL-VTR+"
    #: The calibration the agent was built with (Alg. 3's names: ``sigma_B1``, ``beta_hat``, ...); not
    #: a UCRLVTRCalibration (no ``sigma_B``), hence the narrowed override.
    calibration: UCRLVTRPlusCalibration  # type: ignore[assignment]
    _SAVED = UCRLVTR._SAVED | {"beta_check", "beta_tilde"}
    _radius_key = "beta_hat"
    _n_regressions = 2
    _privacy_module: Any = privacy_of

    def _calibrate(self, plan: ReleasePlan) -> Any:
        return privacy_of.calibrate_ucrl_vtr_plus(
            **self.privacy.as_kwargs(), H=self.H, K=self.K, d=self.d, C_w=self.C_w, plan=plan
        )

    def _scale(self, cal: Any) -> float:
        if cal.release_rule == "adaptive":  # the radius in standard deviations (_radius)
            return self.beta
        return self.beta_scale if self._beta_override is None else self._beta_override / cal.beta_hat

    def _plus(self) -> tuple[float, float]:
        return (self.beta_check, self.beta_tilde)

    def _regressions(self, cal: Any, seeds: list[bytes]) -> list[RegressionSpec]:
        # The three radii move together under beta_scale (exploration only).
        scale = self._scale(cal)
        # adaptive: sigma-bar's check width at one std of the weighted regression (variance <= 1),
        # and the second moments' width in stds (its AdaptiveSpec reads the radius beta)
        adaptive = cal.release_rule == "adaptive"
        self.beta_check = scale * (1.0 if adaptive else cal.beta_check)
        self.beta_tilde = scale * (1.0 if adaptive else cal.beta_tilde)
        self.calibration = self.calibration.replace(
            beta_check_used=self.beta_check, beta_tilde_used=self.beta_tilde
        )
        first, second = self.guards.values()
        H = self.H
        return [
            self._regression(
                cal, guard, getattr(cal, m, None), getattr(cal, v, None), shift, radius, sd, which
            )
            for guard, m, v, shift, radius, sd, which in (
                (first, "sigma_B1", "sigma_f", cal.shift1, self.beta, seeds[: 2 * H], "hat"),
                (second, "sigma_B2", "sigma_g", cal.shift2, self.beta_tilde, seeds[2 * H :], "tilde"),
            )
        ]

    def observe_statistics(self, X: Any, y: Any) -> None:
        """UCRL-VTR's audit entry point (one (X, y) per step) has no UCRL-VTR+ form: its users
        send two statistics per step; audit UCRL-VTR+ through :meth:`observe`."""
        raise TypeError(
            "observe_statistics sends UCRL-VTR's single (X, y) per step; UCRL-VTR+ users send two "
            "(the weighted and the second-moment statistics): feed it trajectories with observe()"
        )

    @property
    def guard2(self) -> SensitivityGuard:
        return list(self.guards.values())[1]

    def greedy_policy(self) -> np.ndarray:
        """UCRL-VTR's greedy policy (:meth:`UCRLVTR.greedy_policy`) on the first regression's
        billboard (the variance-weighted first moments, the one its users plan on); the second
        moments' regression only enters the users' variance weights, so it plays no part here."""
        return self._core.greedy_policy()

    def release2(self) -> Release:
        """The second-moment regression's billboard (Lambda~, w~ of Alg. 3)."""
        return self._board(1)

    @property
    def last_sigma_bar(self) -> np.ndarray:
        """sigma-bar (H,) of the last user."""
        return self._core.last_sigma_bar

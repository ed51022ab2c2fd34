"""Privacy-Preserving UCRL-VTR+ (Alg. 3, App. C): variance-aware value-targeted regression with
two private regressions (weighted first moments, second moments); non-private (Zhou et al. 2021),
JDP (Cor. "JDP-UCRL-VTR+"), LDP (Cor. "LDP-UCRL-VTR+") and pure DP through the privacy plug-in.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privrl import kernels
from privrl._checks import trusted
from privrl.agents.statistics import RawStatistics
from privrl.agents.ucrl_vtr import UCRLVTR
from privrl.envs.finite import Trajectory
from privrl.privacy import ucrl_vtr_plus as privacy_of
from privrl.privacy.common import Calibration


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
    """

    name = "UCRL-VTR+"
    _radius_key = "beta_hat"
    _privacy_module: Any = privacy_of

    def _calibrate(self) -> Calibration:
        with trusted():  # the privacy model, K and the environment were validated at construction
            return privacy_of.calibrate_ucrl_vtr_plus(
                **self.privacy.as_kwargs(),
                H=self.H,
                K=self.K,
                d=self.d,
                C_w=self.C_w,
                plan=self.release_plan(),
            )

    def _build_statistics(self, cal: Calibration) -> None:
        H = self.H
        scale = self.beta_scale if self._beta_override is None else self._beta_override / cal["beta_hat"]
        # The three radii move together under beta_scale (exploration only).
        self.beta_check = scale * cal["beta_check"]
        self.beta_tilde = scale * cal["beta_tilde"]
        self.calibration = self.calibration.replace(
            beta_check_used=self.beta_check, beta_tilde_used=self.beta_tilde
        )
        # the weighted first moments and the second moments (release plan's two statistics)
        self.guard, self.guard2 = self.guards.values()
        seeds = self.noise_seeds(4 * H)
        self.server, self.randomizer = self._build_privacy(
            cal, cal.get("sigma_B1"), cal.get("sigma_f"), cal["shift1"], self.guard, seeds[: 2 * H]
        )
        self.server2, self.randomizer2 = self._build_privacy(
            cal,
            cal.get("sigma_B2"),
            cal.get("sigma_g"),
            cal["shift2"],
            self.guard2,
            seeds[2 * H :],
            beta=self.beta_tilde,
        )
        self._release2 = self.server2.release()

    @property
    def clip_count(self) -> int:
        return self.guard.clipped + self.guard2.clipped

    def sigma_bar(self, trajectory: Trajectory) -> tuple[np.ndarray, RawStatistics, RawStatistics]:
        """(sigma-bar (H,), weighted first-moment statistics, second-moment statistics) of the user."""
        if self._plan is None:
            raise RuntimeError("policy() must be called before observe()")
        V, phis = self._plan
        H, A = self.H, self.A
        s, a = trajectory.states, trajectory.actions
        rows = np.ascontiguousarray(s[:H] * A + a, dtype=np.int64)
        X = np.stack([phis[h][rows[h]] for h in range(H)])  # phi_V
        # phi_{V^2}(s_h, a_h) only at the visited pairs, then sigma-bar: Rust kernels shared with
        # the episode engine (privrl.engine), so both paths agree bit for bit
        X2 = self.features.phi_v_rows(V[1:] ** 2, rows)
        y = V[np.arange(1, H + 1), s[1:]]
        hat, tilde = self._release, self._release2
        sig = kernels.sigma_bar(
            X,
            X2,
            hat.weights,
            hat.inverse,
            hat.gamma,  # practical: the privacy part of the width, as in the bonus
            tilde.weights,
            tilde.inverse if tilde.bonus is None else tilde.bonus,
            self.beta_tilde if tilde.bonus is None else 1.0,
            self.beta_check,
        )
        return sig, RawStatistics(X / sig[:, None], y / sig), RawStatistics(X2, y**2)

    def _observe(self, trajectory: Trajectory) -> None:
        sig, first, second = self.sigma_bar(trajectory)
        self.last_sigma_bar = sig
        for server, randomizer, raw in (
            (self.server, self.randomizer, first),
            (self.server2, self.randomizer2, second),
        ):
            message = raw if randomizer is None else randomizer.privatize(raw.X, raw.y)
            server.receive(message)
        self._release = self.server.release()
        self._release2 = self.server2.release()
        self._plan = None
        self.k += 1

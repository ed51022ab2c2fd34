"""Privacy-Preserving UCRL-VTR (Alg. 1, Sec. 3): value-targeted regression on a linear-mixture
MDP with optimistic planning on the user's side; non-private, JDP (Cor. 1), LDP (Cor. 2) and
pure DP (Rem. "Pure DP", App. "Pure DP in the UCRL-VTR Framework") through the privacy plug-in.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privrl import kernels
from privrl._checks import trusted
from privrl.agents.base import Agent, SensitivityGuard, check_lattice_range
from privrl.agents.statistics import LocalRandomizer, PracticalRelease, RawStatistics, RegressionServer
from privrl.envs.finite import FiniteMDP, Trajectory
from privrl.envs.mixture import LinearMixtureMDP
from privrl.privacy import practical
from privrl.privacy import ucrl_vtr as privacy_of
from privrl.privacy.common import Calibration
from privrl.privacy.models import NonPrivate
from privrl.privacy.plans import ReleasePlan

CENTRES = ("feasible", "zero")  # the practical ridge's centre (UCRLVTR's ``centre``)


class UCRLVTR(Agent):
    """Alg. 1. Per episode k:

    user side  — receive (Lambda~_{k,h}, w~_{k,h})_h; for h = H..1 compute
                 Q~_{k,h}(s,a) = min{H, r_h(s,a) + <phi_{V~_{k,h+1}}(s,a), w~_{k,h}>
                                      + beta_k ||phi_{V~_{k,h+1}}(s,a)||_{Lambda~^{-1}_{k,h}}}
                 and V~_{k,h} = max_a Q~_{k,h} for every state (one Rust call per h), act greedily;
                 then send X_{k,h} = phi_{V~_{k,h+1}}(s_h, a_h), y_{k,h} = V~_{k,h+1}(s_{h+1}) —
                 raw under JDP, randomized (B^1, g^1) under LDP;
    server     — add the statistics and publish Lambda~_{k+1,h}, w~_{k+1,h} (see RegressionServer).

    Parameters
    ----------
    env : LinearMixtureMDP (Asm. 2 is checked when it is built).
    privacy : NonPrivate() | JointDP(eps, delta) | LocalDP(eps, delta); delta = 0 selects pure DP.
        JointDP(..., mechanism="honaker" | "factorization" | "blt") replaces the 2H binary trees
        by that continual-release mechanism at the same (eps, delta) (privrl.privacy.continual).
    episodes : K, the number of users the privacy noise is calibrated for.
    beta_scale : multiplies the theoretical beta_k (exploration only: the privacy noise depends only
        on (eps, delta, H, K, d)). `beta` overrides the radius altogether.
    sensitivity : "clip" or "reject" user statistics outside ||X|| <= H, y in [0, H].
    centre : the point the practical calibration's ridge pulls towards (no effect on "paper" /
        "tight"): "feasible" (default; the min-norm model w0 with phi_1^T w0 = 1, a data-independent
        prior that spends no privacy) or "zero" (the paper's ridge). docs/privacy-cost.md measures
        both: the prior's sign depends on the environment.

    V~ is projected on [0, H] (not only min{H, .}): with noisy w~ the paper's Q~ can go negative,
    which would break the sensitivity bound ||X_{k,h}|| <= H that the calibration assumes; optimism
    is unaffected because Q* >= 0.
    """

    name = "UCRL-VTR"
    env: LinearMixtureMDP
    env_type: type = LinearMixtureMDP  # the environments it runs on (Asm. 2); sweeps check it up front

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
    ):
        reason = self.accepts(env)
        if reason is not None:
            raise TypeError(reason)
        if centre not in CENTRES:
            raise ValueError(f"centre must be one of {', '.join(CENTRES)}, got {centre!r}")
        self.centre = centre
        super().__init__(
            env, privacy if privacy is not None else NonPrivate(), episodes, seed, beta_scale, beta, ties
        )
        # phi(s'|s, a) (S, A, S, d) and C_w >= ||w_h||: a LinearMixtureMDP's, or those of any
        # FiniteMDP that carries them (``features``, ``C_w``; Asm. 2 is then the user's claim)
        self.mixture_features = np.asarray(env.features, dtype=np.float64)
        self.C_w = float(env.C_w)
        self.d = self.mixture_features.shape[-1]
        self.sensitivity = sensitivity
        cal = self._calibrate()
        check_lattice_range(self.release_plan(), cal, self.K)
        self.beta = (
            self._beta_override
            if self._beta_override is not None
            else self.beta_scale * cal[self._radius_key]
        )
        self.calibration: Calibration = cal.replace(beta_used=self.beta, beta_scale=self.beta_scale)
        if cal.release_rule == "practical":
            self.calibration = self.calibration.replace(centre=centre)
        self.features = kernels.MixtureFeatures(self.mixture_features)
        self._rewards = [np.ascontiguousarray(env.R[h].reshape(-1)) for h in range(self.H)]
        self.guards = {
            s.name: SensitivityGuard(x_bound=s.x_bound, y_low=s.y_low, y_high=s.y_high, mode=sensitivity)
            for s in self.release_plan().statistics
        }
        self._build_statistics(cal)
        self._release = self.server.release()
        self._plan: tuple | None = None

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
                f"got {name}"
            )
        f: Any = getattr(env, "features", None)
        shape = getattr(f, "shape", ())
        if len(shape) != 4 or tuple(shape[:3]) != (env.S, env.A, env.S) or not np.all(np.isfinite(f)):
            return (
                f"{cls.name} needs a LinearMixtureMDP (Asm. 2) or a FiniteMDP with mixture features "
                f"phi(s'|s, a): {name}.features must be a finite (S, A, S, d) = ({env.S}, {env.A}, "
                f"{env.S}, d) array, got shape {tuple(shape)}"
            )
        C_w = getattr(env, "C_w", None)
        if (
            isinstance(C_w, bool)
            or not isinstance(C_w, (int, float, np.floating))
            or not 0 < float(C_w) < np.inf
        ):
            return f"{cls.name} needs {name}.C_w, a finite bound > 0 on ||w_h|| (Asm. 2), got {C_w!r}"
        return None

    _radius_key = "beta"
    _privacy_module: Any = privacy_of

    def release_plan(self) -> ReleasePlan:
        """What this agent releases about one user, as data (privrl.privacy.plans): the statistic
        X_{k,h}, y_{k,h} with the bounds its SensitivityGuard enforces and the 2H released families
        (App. B). The calibration, the privacy report, the summary and the audit all read it."""
        return self._privacy_module.release_plan(
            self.privacy.kind, self.privacy.pure, self.H, self.K, self.d, self.mechanism, self.privacy.sampler
        )

    def _calibrate(self) -> Calibration:
        with trusted():  # the privacy model, K and the environment were validated at construction
            return privacy_of.calibrate_ucrl_vtr(
                **self.privacy.as_kwargs(),
                H=self.H,
                K=self.K,
                d=self.d,
                C_w=self.C_w,
                plan=self.release_plan(),
            )

    @property
    def mechanism(self) -> str:
        """The continual-release mechanism of the JDP server ("tree" unless JointDP chose one)."""
        return self.privacy.mechanism

    def _build_statistics(self, cal: Calibration) -> None:
        (self.guard,) = self.guards.values()
        self.server, self.randomizer = self._build_privacy(
            cal,
            cal.get("sigma_B"),
            cal.get("sigma_g"),
            cal["shift"],
            self.guard,
            self.noise_seeds(2 * self.H),
        )

    def _build_privacy(self, cal: Calibration, sigma_matrix, sigma_vector, shift, guard, seeds, beta=None):
        """One RegressionServer (and, under LDP, the user's LocalRandomizer) per the privacy model:
        exact for NonPrivate, 2H trees for JDP (Cor. 1), user-side noise + shift for LDP (Cor. 2).
        Under the practical calibration the server post-processes every release with a
        PracticalRelease (per-release shift and bonus, privrl.privacy.practical), radius ``beta``."""
        server, randomizer = self._build_server(cal, sigma_matrix, sigma_vector, shift, guard, seeds)
        if cal.get("release_rule") == "practical":
            ups_at, c_at = (
                (practical.no_noise, practical.no_noise)
                if cal["kind"] == "none"
                else (
                    practical.noise_bounds_at(
                        cal["noise"],
                        sigma_matrix,
                        sigma_vector,
                        cal["sym_divisor"],
                        self.d,
                        cal["alpha"],
                        server.variance_factor,
                    )
                )
            )
            scale = self.beta / cal[self._radius_key] if cal[self._radius_key] else self.beta_scale
            # the ridge's centre (a data-independent prior, no privacy spent): the min-norm feasible
            # model, or 0 as in the paper (its distance to w is then C_w)
            if self.centre == "feasible":
                w0 = practical.feasible_centre(self.mixture_features)
                distance = practical.centre_distance(self.C_w, self.mixture_features, w0)
            else:
                w0, distance = np.zeros(self.d), self.C_w
            server.post = PracticalRelease(
                lam=cal["lam"],
                d=self.d,
                C_w=self.C_w,
                beta=self.beta if beta is None else beta,
                noise_scale=scale,
                matrix_bound=ups_at,
                vector_bound=c_at,
                w0=w0,
                centre_distance=distance,
                shift_mult=cal["shift_mult"],
            )
        return server, randomizer

    def _build_server(self, cal: Calibration, sigma_matrix, sigma_vector, shift, guard, seeds):
        H, d, kind = self.H, self.d, cal["kind"]
        if kind == "none":
            return RegressionServer(H, d, cal["lam"], "exact", self.K), None
        if kind == "jdp":
            server = RegressionServer(
                H,
                d,
                cal["lam"],
                "tree",
                self.K,
                noise=cal.node_noise,
                sigma_matrix=sigma_matrix,
                sigma_vector=sigma_vector,
                sym_divisor=cal["sym_divisor"],
                shift=shift,
                guard=guard,
                seeds=seeds,
                mechanism=self.mechanism,
                grid_bits=cal.grid_bits or kernels.DEFAULT_GRID_BITS,
            )
            return server, None
        server = RegressionServer(H, d, cal["lam"], "local", self.K, shift=shift)
        randomizer = LocalRandomizer(
            H,
            d,
            cal.node_noise,
            sigma_matrix,
            sigma_vector,
            cal["sym_divisor"],
            guard,
            seeds=seeds[:2],
            grid_bits=cal.grid_bits or kernels.DEFAULT_GRID_BITS,
        )
        return server, randomizer

    @property
    def clip_count(self) -> int:
        return self.guard.clipped

    def release(self):
        """The current billboard (Lambda~_{k,h}, Lambda~^{-1}_{k,h}, w~_{k,h})_h."""
        return self._release

    def _policy(self) -> np.ndarray:
        rel = self._release
        H, S, A = self.H, self.S, self.A
        V = np.zeros((H + 1, S))
        phis: list[np.ndarray] = [np.empty(0)] * H
        pi = np.empty((H, S), dtype=np.int64)
        # the bonus: beta ||phi||_{Lambda~^-1}, or ||phi||_{M_h} under the practical calibration
        bonus, radius = (rel.inverse, self.beta) if rel.bonus is None else (rel.bonus, 1.0)
        for h in range(H - 1, -1, -1):
            phi_v = self.features.phi_v(V[h + 1])  # phi_{V~_{k,h+1}}(s, a), (S*A, d)
            _, V[h], pi[h] = kernels.optimistic_values(
                phi_v,
                rel.weights[h],
                bonus[h],
                radius,
                A,
                upper=float(H),
                lower=0.0,
                offset=self._rewards[h],
                ties=self.ties,
                rng=self._tie_rng,
            )
            phis[h] = phi_v
        self._plan = (V, phis)
        self.policy_updates += 1
        return pi

    def user_statistics(self, trajectory: Trajectory) -> RawStatistics:
        """X_{k,h} = phi_{V~_{k,h+1}}(s_h, a_h), y_{k,h} = V~_{k,h+1}(s_{h+1}) (user side)."""
        if self._plan is None:
            raise RuntimeError("policy() must be called before observe()")
        V, phis = self._plan
        s, a = trajectory.states, trajectory.actions
        X = np.stack([phis[h][s[h] * self.A + a[h]] for h in range(self.H)])
        y = V[np.arange(1, self.H + 1), s[1:]]
        return RawStatistics(X, y)

    def _observe(self, trajectory: Trajectory) -> None:
        self._observe_statistics(self.user_statistics(trajectory))

    def _observe_statistics(self, raw: RawStatistics) -> None:
        """A user's statistics through the privacy model to the server, and the next billboard
        (the end-to-end audit also sends chosen statistics here: an adversarial user)."""
        message = raw if self.randomizer is None else self.randomizer.privatize(raw.X, raw.y)
        self.server.receive(message)
        self._release = self.server.release()
        self._plan = None
        self.k += 1

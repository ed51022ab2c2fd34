"""Private tabular PSRL on a time-homogeneous release (not in the paper; docs/algorithms.md "PSRL"):
posterior sampling on the released counts and reward sums, pooled over the H steps, under NonPrivate
and JointDP. The Python face of the Rust agent privrl._core.PsrlAgent (rust/agents/psrl.rs); the
numpy oracle is privrl.agents.psrl.reference.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from privrl import _core
from privrl.agents.common.base import Agent, Release, SensitivityGuard, check_release
from privrl.agents.psrl import calibration as privacy_of
from privrl.agents.psrl.calibration import PSRLCalibration
from privrl.agents.psrl.formulas import psrl_batch_bounds, psrl_prior
from privrl.common.checks import check_choice
from privrl.common.errors import AssumptionWarning, CapacityError, PrivacyParameterError, ScheduleWarning
from privrl.common.memory import refuse_over_memory
from privrl.common.seeds import spawn_noise_seeds
from privrl.envs.features import FeatureMap
from privrl.envs.finite import FiniteMDP
from privrl.envs.gym import not_a_model
from privrl.privacy.continual import resolve_mechanism
from privrl.privacy.models import JointDP, LocalDP
from privrl.privacy.plans import ReleasePlan

__all__ = ["PSRL"]


class PSRL(Agent):
    """PSRL (posterior sampling) on a released, noisy tabular model, for tabular environments: a
    FiniteMDP (``privrl.run``, exact regret) or a FeatureMap such as the one-hot map of gymnasium's
    FrozenLake (``privrl.learn``, FeatureMap.one_hot_for). The release is time-homogeneous: counts
    and reward sums are pooled over the H steps, so a model whose kernel depends on h is learned as
    one kernel pooled over the steps (misspecified: run, with an AssumptionWarning).
    privrl.agents.psrl.reference reads top to bottom.

    Users come in B static batches (``calibration.B``; bounds ``round(linspace(0, K, B + 1))``).
    Each user draws a model (P, r) from the posterior given the billboard (noisy cumulative counts
    N~ (S, A, S) and reward sums R~ (S, A), noise variance j sigma^2 per cell after j releases) from
    its own exploration stream (P(.|s, a) ~ Dirichlet(1/S + N), formulas.psrl_prior: a prior worth
    one observation; mean rewards ~ Beta(1 + R, n - R), formulas.psrl_reward_prior: one
    pseudo-observation paying 1, so an unvisited pair draws 1), plays its greedy H-step policy, and its
    first ``m`` visits of each (s, a) (rewards in [0, 1]) join the batch's increment, released with
    noise of scale sigma per cell at the end of batches 1..B-1: a user enters one Gaussian release
    (calibrate_psrl). The noise is the privacy model's sampler (``JointDP(..., sampler=)``): by
    default the agents' exact discrete Gaussian, the increment rounded to the lattice sigma 2^-24
    (one vector of S A S + S A entries per release); ``"float"`` draws N(0, sigma^2) (the numpy
    reference's).

    Parameters
    ----------
    env : a FeatureMap (privrl.learn on a gymnasium environment; FeatureMap.one_hot_for) or a
        FiniteMDP: only its S, A and H are read (the agent is tabular).
    privacy : NonPrivate() (sigma 0, a release after every user) | JointDP(eps, delta > 0) (its
        ``sampler``: "discrete" by default, or "float"). LocalDP is refused (PrivacyParameterError:
        not designed). JointDP's calibration does not apply (the noise is the tight Gaussian of one
        release per user, the paper-style argument's too), nor its mechanism: one chosen other than
        JointDP's default is refused.
    episodes : K, the users the noise is calibrated for.
    seed : reproducible privacy noise and exploration (None: OS entropy).
    m : the per-user cap (visits of each (s, a) counted per user).
    batches : "static" (default), "every" or an int B in [1, K] (calibration.resolve_batches).
    sensitivity : "clip" (counted) or "reject" rewards outside [0, 1].
    """

    name = "PSRL"
    calibration: PSRLCalibration
    _SAVED = Agent._SAVED | {"B", "bounds", "m", "batches", "sensitivity"}
    _SAVED_CORE = "PsrlAgent"

    @classmethod
    def accepts(cls, env: Any) -> str | None:
        """None if the agent runs on `env` (a FeatureMap or a FiniteMDP), else why not."""
        if isinstance(env, (FeatureMap, FiniteMDP)):
            return None
        hint = not_a_model(env, "PSRL")  # a gymnasium environment: what to build instead
        return f"PSRL needs a FeatureMap (privrl.learn) or a FiniteMDP; got {type(env).__name__}{hint}"

    def __init__(
        self,
        env: FeatureMap | FiniteMDP,
        privacy: Any = None,
        episodes: int = 1000,
        seed: Any = None,
        m: int = 1,
        batches: str | int = "static",
        sensitivity: str = "clip",
    ):
        reason = self.accepts(env)
        if reason is not None:
            raise TypeError(reason)
        _warn_time_dependent(env)
        if isinstance(privacy, LocalDP):
            raise PrivacyParameterError(
                "LocalDP is not available for PSRL (not designed): use JointDP(eps, delta) or NonPrivate()"
            )
        chosen = getattr(privacy, "mechanism", None)  # a chosen one (not the default) is refused:
        if isinstance(privacy, JointDP) and chosen != resolve_mechanism(
            "jdp", privacy.calibration, privacy.pure
        ):
            raise PrivacyParameterError(  # a sweep would record it for a run that never used it
                f"mechanism {chosen!r} does not apply to PSRL: each batch's increment is noised once, with "
                "no continual-release mechanism; leave JointDP's mechanism unset"
            )
        self.sensitivity = check_choice(sensitivity, ("clip", "reject"), "sensitivity")
        super().__init__(env, privacy, episodes, seed, exploration="sampling")
        kw = self.privacy.as_kwargs()
        cal = privacy_of.calibrate_psrl(
            kw["kind"],
            kw["epsilon"],
            kw["delta"],
            self.S,
            self.A,
            self.H,
            self.K,
            m=m,
            batches=batches,
            p=kw["p"],
            sampler=kw["sampler"],  # the privacy model's (JointDP: "discrete" unless asked "float")
        )
        self.calibration, self.m, self.batches, self.B = cal, cal.m, batches, cal.B
        self._refuse_over_memory()
        self.d = self.S * self.A
        self.beta_scale, self.beta = 1.0, 0.0  # no confidence radius
        self.bounds = psrl_batch_bounds(self.K, self.B)
        self._warn_single_batch(batches)
        plan = self.release_plan()
        check_release(plan, cal, self.K)
        (stat,) = plan.statistics
        self.guards = {
            stat.name: SensitivityGuard(x_bound=stat.x_bound, y_low=0.0, y_high=1.0, mode=sensitivity)
        }
        self._core = _core.PsrlAgent(
            n_states=self.S,
            n_actions=self.A,
            horizon=self.H,
            episodes=self.K,
            m=self.m,
            sigma=self._noise_sigma(cal),
            sampler=cal.sampler or "float",  # non-private: no sampler, unit normals times 0
            grid_bits=cal.grid_bits,
            bounds=[int(b) for b in self.bounds],
            reject=sensitivity == "reject",
            noise_seed=spawn_noise_seeds(self._streams, 1)[0],
            exploration_seed=self._stream_seed(2),
            alpha0=psrl_prior(self.S),  # Dirichlet(1/S + N): a prior worth one observation
        )

    def _refuse_over_memory(self) -> None:
        """ResourceError before anything is allocated for a state beyond physical memory (the
        allocation would abort): the (H, S) policy twice (the core's and policy()'s array; a
        FeatureMap bounds no H), the (S, A, S) tables (billboard, increment, one user's posterior
        draw: about 8 of S A S + S A) and the B + 1 batch bounds (numpy's, the Python list handed
        to the core, the core's: about 7 doubles each; B = K without noise or under "every")."""
        S, A, H, B = self.S, self.A, self.H, self.B
        refuse_over_memory(
            self.name,
            2.0 * H * S + 8.0 * (S * A * S + S * A) + 7.0 * (B + 1),
            f"its (H, S) policy twice, (S, A, S) tables and B + 1 batch bounds (H = {H}, S = {S}, "
            f"A = {A}, B = {B})",
            "Use a shorter horizon (FeatureMap.one_hot_for(env, H)), fewer states, or fewer batches "
            "(batches=<int>; without noise B is K: fewer users per agent).",
        )

    def _warn_single_batch(self, batches: str | int) -> None:
        """ScheduleWarning when B = 1 and K > 1 (as LSVI-UCB's): the agent never releases, and
        every user samples from the prior (FrozenLake, H 20: up to K = 228 at eps 10, 2,289 at eps 1)."""
        if self.B > 1 or self.K == 1:
            return
        why = (
            f"the {batches!r} schedule's B is 1 at K = {self.K}, S A = {self.S * self.A}: App. D's B "
            "grows with K eps and shrinks with S A"
            if isinstance(batches, str)
            else f"batches={batches!r}"
        )
        warnings.warn(
            f"a single batch ({why}): the agent never releases, so every one of its {self.K} users "
            "draws its model from the prior; pass batches=<int> (more releases: the noise per cell "
            "stays, the billboard's adds up) or more users",
            ScheduleWarning,
            stacklevel=3,
        )

    def _noise_sigma(self, cal: PSRLCalibration) -> float:
        """The std of the noise per released cell the core draws: the calibration's sigma (0
        non-private). privrl.audit.audit_psrl_agent scales it to audit a broken agent."""
        return float(cal.sigma or 0.0)

    @property
    def _model_label(self) -> str:
        """``JDP(eps=.., delta=..)`` (", float" when the noise is the continuous Gaussian) or
        ``NonPrivate``: JointDP's mechanism and calibration, which PSRL does not use, are not named
        (in the label ``PSRL[JDP(eps=.., delta=..), sampling]``, the repr and the messages)."""
        p, tag = self.privacy, ", float" if self.calibration.sampler == "float" else ""
        return "NonPrivate" if p.kind == "none" else f"JDP(eps={p.epsilon:g}, delta={p.delta:g}{tag})"

    def release_plan(self) -> ReleasePlan:
        """One statistic per user (its capped counts and reward sums), released once."""
        cal = self.calibration
        return privacy_of.release_plan(cal.kind, self.H, self.K, self.S, self.A, self.B, self.m, cal.sampler)

    def billboard(self) -> tuple[np.ndarray, np.ndarray, int]:
        """The released N~ (S, A, S), R~ (S, A) and the number of releases j."""
        N, R, j = self._core.billboard()
        return N, R, int(j)

    def release(self) -> Release:
        """The billboard in the shared Release record: ``design`` holds N~
        (S, A, S), ``weights`` R~ (S, A), ``inverse`` is empty (no matrix to invert), ``users`` the
        users whose data it holds (``bounds[j]`` after j releases; the running batch is not in it)."""
        N, R, j = self.billboard()
        return Release(design=N, inverse=np.empty(0), weights=R, users=int(self.bounds[j]))

    def policy(self) -> np.ndarray:
        """The (H, S) policy of the user arriving now: that user's posterior draw, planned once
        per user. Past K there is no such user (CapacityError, saying how to score the agent)."""
        self._refuse_past_k()
        return super().policy()

    def act(self, state: Any, h: int = 0) -> int:
        """The action of the user arriving now (Agent.act); past K, CapacityError as policy()."""
        self._refuse_past_k()
        return super().act(state, h)

    def _refuse_past_k(self) -> None:
        """Each user draws its own model, so the policy past K is no one's (the core refuses it);
        "all have been served" did not say how to read what the agent learned."""
        if self.k >= self.K:
            raise CapacityError(
                f"{self.label} has served all K = {self.K} users it is calibrated for: there is no "
                "next user to draw a model for (policy(), act(), privrl.evaluate(agent, env)); score "
                "what it learned with privrl.evaluate(agent.greedy_policy(), env), or build an agent "
                "with a larger K"
            )

    def greedy_policy(self) -> np.ndarray:
        """The (H, S) policy greedy for the billboard's plug-in model, no draw, lowest-index ties:
        each (s, a) row of N~ projected on the nonnegative simplex of its released total (N),
        R = R~ clipped to [0, n], P = (1/S + N) / (1 + n), r = (1 + R) / (1 + n) (the Dirichlet and
        Beta(1 + R, n - R) means at those counts, 1 at an unvisited pair; formulas.psrl_prior,
        formulas.psrl_reward_prior). Post-processing of the billboard; consumes no stream."""
        return self._core.greedy_policy()


def _warn_time_dependent(env: Any) -> None:
    """AssumptionWarning for a FiniteMDP whose kernel or rewards depend on the step h: PSRL pools
    its release over the H steps (one stationary model), so it learns their average, a
    misspecified model (run, not refused; gymnasium environments are stationary)."""
    if not isinstance(env, FiniteMDP) or env.H < 2:
        return
    P, R = np.asarray(env.P), np.asarray(env.R)
    if not (
        np.array_equal(P, np.broadcast_to(P[:1], P.shape))
        and np.array_equal(R, np.broadcast_to(R[:1], R.shape))
    ):
        warnings.warn(
            f"{type(env).__name__}'s transitions or rewards depend on the step h; PSRL pools its "
            "release over the H steps and learns one stationary model (their average): "
            "misspecified here. LSVIUCB / UCRLVTR learn a model per step",
            AssumptionWarning,
            stacklevel=3,
        )

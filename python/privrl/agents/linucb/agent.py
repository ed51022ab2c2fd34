"""LinUCB with disjoint arms on a linear contextual bandit (H = 1) under NonPrivate, JointDP and
LocalDP: LinUCB (Li et al. 2010; Abbasi-Yadkori et al. 2011), JDP LinUCB with the continual
release of the Gram matrix and the reward vector (Shariff & Sheffet 2018), LDP LinUCB (Zheng et
al. 2020). The episode runs in Rust (privrl._core.LinUcbAgent, rust/agents/linucb.rs); the numpy
oracle is privrl.agents.linucb.reference.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from privrl import _core
from privrl.agents.common.base import Agent, Release, SensitivityGuard, check_release
from privrl.agents.common.ldp import check_context
from privrl.agents.common.specs import LinUcbSpec, NoiseSpec, bounds_spec, noise_spec
from privrl.agents.linucb import calibration as privacy_of
from privrl.agents.linucb.calibration import LinUCBCalibration
from privrl.common.checks import check_choice, check_invertible, check_real, integer_value
from privrl.common.errors import NonFiniteError, ScheduleWarning, ShapeError
from privrl.common.memory import refuse_over_memory
from privrl.common.seeds import spawn_noise_seeds
from privrl.envs.bandit import ContextualBandit
from privrl.envs.finite import Trajectory
from privrl.envs.gym import not_a_model
from privrl.privacy.common import PRACTICAL_RULES
from privrl.privacy.plans import ReleasePlan

__all__ = ["LinUCB"]
#: A lower bound on the dense p x p matrices LinUCB keeps per arm: the billboard's design and
#: inverse (measured 2.0-3.9 at construction, 10-22 while it runs, p = 600).
DENSE_PER_ARM = 2


class LinUCB(Agent):
    """LinUCB with disjoint arms and a privacy plug-in.

    User side (the user of context x): on the billboard ``(G~_a^{-1}, w~_a)_a`` its index of arm a
    is ``x^T w~_a + beta s_a(x)``, ``s_a(x)^2 = sigma_r^2 ||x||^2_{G~_a^{-1}} + gamma_t^2
    ||G~_a^{-1} x||^2`` (the reward noise, sigma_r = 1/2 for rewards in [0, 1], and the released
    reward noise of std gamma_t, both seen through the estimate); under
    ``exploration="sampling"`` (Thompson sampling) ``x^T w~_a + beta s_a(x) z_a`` with ``z_a ~
    N(0, 1)`` from the agent's exploration stream. It plays the argmax. Server side: per arm the
    Gram block ``sum x x^T`` and reward block ``sum x r`` (phi = e_a (x) x); non-private: exact,
    updated after every user; JDP: a continual-release mechanism per arm and family over the
    leaves of ``schedule``, released at every leaf end with ``G~ = released + (lam + shift)
    I``; LDP: the user's randomizer noises every arm's block (the server must not learn the arm),
    the server sums the messages and releases at every batch end.

    Parameters
    ----------
    env : ContextualBandit (its contexts are public; ``||x|| <= 1`` is checked when it is built).
    privacy : NonPrivate() | JointDP(eps, delta) | LocalDP(eps, delta); ``delta = 0``: pure DP.
    episodes : K, the number of users the noise is calibrated for.
    seed : reproducible ties, exploration and privacy noise (None: OS entropy).
    schedule : when the private agents' leaves end and the billboard is released: "auto"
        (default: every p users), "geometric" (after p, 2p, 4p, ... users), "every" user, or an
        int L (every L users); fixed in advance (:func:`privrl.agents.linucb.calibration.linucb_leaf_ends`).
    beta_scale / beta : multiply / override the radius (adaptive: 1, one std of the estimate's
        error; other calibrations: the self-normalized radius ``linucb_radius``).
    ties : "random" (from the agent's seed) or "lowest": how exact ties between arms are broken.
    lam : the ridge regularizer (default 1). Regret side only.
    sensitivity : "clip" or "reject" contexts outside ||x|| <= 1 and rewards outside [0, 1].
    exploration : "optimism" | "sampling" (default: sampling; post-processing, the noise unchanged).
    """

    name = "LinUCB"
    #: The calibration the agent was built with (``sigma_B``, ``sigma_g``, ``beta``, ...).
    calibration: LinUCBCalibration
    _SAVED = Agent._SAVED | {"_plan", "p", "schedule"}
    _SAVED_CORE = "LinUcbAgent"

    @classmethod
    def accepts(cls, env: Any) -> str | None:
        if isinstance(env, ContextualBandit):
            return None
        return f"LinUCB runs on a ContextualBandit (H = 1), got {type(env).__name__}{not_a_model(env)}"

    def __init__(
        self,
        env: ContextualBandit,
        privacy: Any = None,
        episodes: int = 1000,
        seed: Any = None,
        schedule: str | int = "auto",
        beta_scale: float = 1.0,
        beta: float | None = None,
        ties: str = "random",
        sensitivity: str = "clip",
        lam: float | None = None,
        exploration: str | None = None,
    ):
        reason = self.accepts(env)
        if reason is not None:
            raise TypeError(reason)
        self.sensitivity = check_choice(sensitivity, ("clip", "reject"), "sensitivity")
        super().__init__(env, privacy, episodes, seed, beta_scale, beta, ties, exploration)
        self.p, self.d = env.p, env.d
        refuse_over_memory(
            self.name,
            DENSE_PER_ARM * env.A * env.p**2,
            f"two p x p matrices per arm (A = {env.A} arms, p = {env.p} context features)",
            "Use fewer context features (a projection of the contexts) or fewer arms.",
        )
        kw = self.privacy.as_kwargs()
        kind = kw["kind"]
        schedule = privacy_of.check_schedule(schedule)
        self.schedule = schedule
        plan = privacy_of.release_plan(
            kind, self.privacy.pure, self.K, env.p, schedule, kw["mechanism"], kw["sampler"]
        )
        self._plan = plan
        cal = privacy_of.calibrate_linucb(
            kind, kw["epsilon"], kw["delta"], self.K, env.A, env.p, schedule, kw["p"], kw["calibration"],
            kw["mechanism"], plan, kw["sampler"], lam,
        )  # fmt: skip
        what = "the initial billboard's inverse I / lam, which every user reads until the first release,"
        check_invertible(cal.lam, "lam", what, default=1)  # a subnormal lam: the billboard held inf
        self._settle_exploration(cal)
        check_release(plan, cal, self.K)
        self.beta = self._radius(cal, cal.beta)
        self.calibration = cal.replace(beta_used=self.beta, beta_scale=self.beta_scale)
        (stat,) = plan.statistics
        self.guards = {
            stat.name: SensitivityGuard(x_bound=stat.x_bound, y_low=0.0, y_high=1.0, mode=sensitivity)
        }
        practical = cal.release_rule in PRACTICAL_RULES
        private = kind != "none"
        # the exact (non-private) server refreshes after every user and never reads the ends: one
        # end at K, not the K-long list of every user (1 GB and a 160 MB save file at K = 2e7)
        ends = privacy_of.linucb_leaf_ends(kind, self.K, env.p, schedule) if private else [self.K]
        # the first release comes after the last user (K = 1: no later user to read one)
        if private and self.K > 1 and ends[0] >= self.K:
            warnings.warn(
                f"the schedule {schedule!r} releases the billboard first after {ends[0]} users, but the "
                f"agent has K = {self.K}: none of its users ever sees a release (every arm is played "
                "from the initial billboard); pass schedule=<int> < K, or more users",
                ScheduleWarning,
                stacklevel=2,
            )
        noise = self._noise(cal)
        self._core = _core.LinUcbAgent(
            LinUcbSpec(
                contexts=np.ascontiguousarray(env.contexts),
                n_arms=env.A,
                mode={"none": "exact"}.get(kind, kind),
                guard=self.guard.spec,
                lam=float(cal.lam),
                beta=float(self.beta),
                sigma_r=float(cal.sigma_r),
                ends=ends,
                const_shift=0.0 if practical or not private else float(cal.shift),
                shift_mult=float(cal.shift_mult) if practical and private else 0.0,
                bounds=bounds_spec(cal, cal.sigma_B, cal.sigma_g, env.p),
                noise=noise,
                tie_seed=self._tie_seed,
                exploration_seed=self._exploration_seed,
                episodes=self.K,
            )
        )
        self._sync_guards()

    def _noise(self, cal: LinUCBCalibration) -> NoiseSpec | None:
        """JDP: one mechanism per arm and family over ``cal.leaves`` leaves; LDP: the user's two
        randomizer streams; None non-private."""
        if cal.kind == "jdp":
            return noise_spec(
                cal, cal.sigma_B, cal.sigma_g, cal.leaves, spawn_noise_seeds(self._streams, 2 * self.A)
            )
        if cal.kind == "ldp":
            return noise_spec(cal, cal.sigma_B, cal.sigma_g, 1, spawn_noise_seeds(self._streams, 2))
        return None

    def _intake_streams(self) -> tuple[int, list[int]]:
        """The LDP randomizer's two streams are the agent's two noise seeds (``_noise``)."""
        return 2, [0, 1]

    def _message_shape(self) -> tuple[int, ...]:
        """Every arm's block: grams (A, p, p), targets (A, p)."""
        return (self.A, self.p)

    def release_plan(self) -> ReleasePlan:
        """What LinUCB releases about one user (privrl.agents.linucb.calibration.release_plan)."""
        return self._plan

    def release(self) -> Release:
        """The billboard: per arm the design G~_a (A, p, p), its inverse and w~_a (A, p)."""
        design, inverse, weights, users = self._core.billboard()
        return Release(design, inverse, weights, int(users))

    @property
    def policy_updates(self) -> int:
        """How often the billboard the users' arms come from changed: the releases (under
        sampling each user also draws its own model from it)."""
        return self.releases

    @property
    def releases(self) -> int:
        """Billboards published so far (the initial one excluded)."""
        return int(self._core.releases)

    # ------------------------------------------------------------------ acting
    def policy(self) -> np.ndarray:
        """The (1, n) policy of the arriving user: its arm for every context (under sampling the
        user's draws, one model per context). A look: no later user's draw moves with it."""
        return np.array([[self._core.action(s, peek=True) for s in range(self.S)]], dtype=np.int64)

    def greedy_policy(self) -> np.ndarray:
        """The (1, n) greedy arm of every context of the table (Agent.greedy_policy): ``argmax_a
        x^T w~_a`` with ``w~_a = G~_a^{-1} b~_a`` the billboard's per-arm estimate (no width, no
        draw), ties to the lowest arm. Post-processing of the billboard only; no stream moves."""
        return self._core.greedy_policy()

    def act(self, state: Any, h: Any = 0) -> int:
        """The arm of the arriving user, whose context index is ``state`` (the same arm however
        often it is asked; the user's draws are taken when :meth:`update` reports it)."""
        a = self._core.act(state, h)  # ints and numpy integers in range, h 0 (None: checked below)
        if a is not None:
            return a
        s = integer_value(state)  # a 0-d integer array too, as learn and gymnasium take it
        if s is None or not 0 <= s < self.S:
            raise ShapeError(f"state must be a context index in [0, {self.S}), got {state!r}")
        if integer_value(h) != 0:  # 0.0, an array of another shape or dtype
            raise ShapeError(f"a bandit has one step (h = 0), got h = {h!r}")
        return int(self._core.action(s, peek=True))

    def observe(self, trajectory: Trajectory) -> None:
        """The user's (context, arm, reward) as a one-step Trajectory (states (2,), actions (1,),
        rewards (1,))."""
        s, a, r = self._check_trajectory(trajectory)
        self.update(int(s[0]), int(a[0]), float(r[0]))

    def choose(self, x: Any) -> int:
        """The arm for a context vector ``x`` of length p that need not be in the table (a live
        user): projected on ``||x|| <= 1`` as the intake would, scored on the current billboard
        (under sampling with fresh draws)."""
        return int(self._core.action_x(self._context_vector(x), peek=True))

    def update(self, context: Any, arm: Any, reward: float) -> None:
        """The user of ``context`` (an index into the table, or a context vector of length p)
        played ``arm`` and got ``reward``; the context and reward go through the sensitivity
        guard (``||x|| <= 1``, ``r`` in [0, 1]: clipped and counted, or refused)."""
        self._check_budget()
        a = integer_value(arm)  # a 0-d integer array too (an action gymnasium's Discrete holds)
        if a is None or not 0 <= a < self.A:
            raise ShapeError(f"arm must be an integer in [0, {self.A}), got {arm!r}")
        if isinstance(reward, np.ndarray) and reward.ndim == 0:  # np.array(0.5), as learn's reward=
            reward = reward[()]
        reward = check_real(reward, "reward")  # a string or None was a raw TypeError
        if not math.isfinite(reward):
            raise NonFiniteError("reward must be finite")
        c = integer_value(context)  # an index (a 0-d integer array too); else a context vector
        if c is not None:
            if not 0 <= c < self.S:
                raise ShapeError(f"context must be an index in [0, {self.S}) or a vector, got {context!r}")
            self._core.observe(c, a, float(reward), user=True)
        else:
            self._core.observe_x(self._context_vector(context), a, float(reward), user=True)
        self._sync_guards()

    def _context_vector(self, x: Any) -> np.ndarray:
        return check_context(x, self.p, self._raw_width())

    def _raw_width(self) -> int | None:
        raw = getattr(self.env, "_featurizer", None)  # a classification bandit's raw transform
        return None if raw is None else int(raw.width)

    def _client_context(self) -> tuple[int, int | None, str]:
        """A LinUCB client takes live contexts: ``client.choose(x)``, ``client.privatize_update``;
        its table users (``privatize(trajectory)``, ``policy``) index the env's public table, which
        a pickled client names by digest instead of carrying it."""
        return self.p, self._raw_width(), self.env.fingerprint()["contexts"]

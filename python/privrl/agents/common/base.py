"""The agent protocol shared by every algorithm: a Python facade that builds its Rust agent from the
release plan and the calibration, and delegates every episode to it (Sec. 2.1, App. B, App. D).

An agent plays the paper's two roles. The *server* keeps the statistics and publishes a release
(the billboard: the only thing users, and any observer, ever see). The *user* of episode k computes
its policy from that release and its own data only (Billboard lemma, App. "Joint DP through DP"),
runs it, and sends back its statistics (raw under JDP, randomized on the user side under LDP). Both
run in Rust (privrl._core.VtrAgent / LsviAgent): this class holds construction, acting, observing,
saving and the privacy report, and nothing of the episode's arithmetic.
"""

from __future__ import annotations

import abc
import copy
import hashlib
import math
import os
import warnings
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from privrl import _core
from privrl.agents.common.ldp import RECEIVED, LdpClient, LdpMessage, check_message, check_trajectory
from privrl.agents.common.specs import GuardSpec
from privrl.common.checks import (
    check_choice,
    check_episodes,
    check_positive_real,
    check_real,
    check_seed,
    integer_value,
    numeric_array,
    seed_bytes,
)
from privrl.common.errors import (
    AssumptionError,
    CapacityError,
    NonFiniteError,
    PrivacyParameterError,
    PrivacyWarning,
    SensitivityWarning,
    ShapeError,
    stacklevel_outside,
    user_taken,
)
from privrl.common.seeds import noise_seeds
from privrl.envs.bandit import ContextualBandit
from privrl.envs.features import FeatureMap
from privrl.envs.finite import FiniteMDP, Trajectory
from privrl.privacy.adaptive import MAX_RADIUS
from privrl.privacy.common import Calibration
from privrl.privacy.models import JointDP, LocalDP, NonPrivate
from privrl.privacy.regret_side import check_radius

if TYPE_CHECKING:
    from privrl.audit.report import PrivacyReport

PRIVACY_MODELS = (NonPrivate, JointDP, LocalDP)
#: How a user turns the billboard into a policy (``exploration=``): the optimistic Q of the
#: released estimate, or a model drawn around it (post-processing with its own stream).
EXPLORATIONS = ("optimism", "sampling")


def default_exploration(algorithm: str, release_rule: str) -> str:
    """The exploration of ``exploration=None``: under the adaptive rule LSVI-UCB's users draw
    their own model (its optimistic users ignore rarely visited pairs on FrozenLake and never
    find the goal; sampling does, docs/privacy-cost.md); LinUCB's users sample under every rule
    (digits, JDP eps 1, K = 10^5, 3 seeds: accuracy 0.821 sampling vs 0.773 optimism, docs/privacy-cost.md);
    every other agent is optimistic."""
    if algorithm == "linucb":
        return "sampling"
    return "sampling" if algorithm == "lsvi_ucb" and release_rule == "adaptive" else "optimism"


@dataclass
class SensitivityGuard:
    """Enforces ``||x|| <= x_bound`` and ``y in [y_low, y_high]`` where user data enters a mechanism.

    mode="clip": project onto the bound, count it, and warn once per guard; mode="reject": raise
    AssumptionError. The calibrated noise is only private for data inside these bounds, so nothing
    reaches a mechanism unchecked. Excesses within a relative 1e-9 (round-off of an in-bound
    computation) are projected silently in both modes; NaN / inf always raise NonFiniteError. The
    agents apply it in Rust; ``apply`` runs the same kernel on arrays of your own.
    """

    x_bound: float
    y_low: float = -math.inf
    y_high: float = math.inf
    mode: str = "clip"
    clipped: int = 0
    _warned: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        check_choice(self.mode, ("clip", "reject"), "sensitivity mode")
        # real numbers only: an array y_low = np.array([0.]) was accepted (and compared elementwise)
        self.x_bound = check_positive_real(self.x_bound, "x_bound")
        self.y_low, self.y_high = check_real(self.y_low, "y_low"), check_real(self.y_high, "y_high")
        if not (self.y_low <= self.y_high):
            raise PrivacyParameterError(f"need y_low <= y_high, got [{self.y_low!r}, {self.y_high!r}]")

    @property
    def spec(self) -> GuardSpec:
        return GuardSpec(float(self.x_bound), float(self.y_low), float(self.y_high), self.mode == "reject")

    def count(self, clipped: int, stacklevel: int = 3) -> None:
        """Set the clip count (warning the first time it is positive)."""
        self.clipped = int(clipped)
        if self.clipped and not self._warned:
            warnings.warn(
                f"clipping user statistics to the sensitivity bound ||x|| <= {self.x_bound:g}"
                f", y in [{self.y_low:g}, {self.y_high:g}] (counted in agent.clip_count): the noise is "
                "calibrated for data inside it. Rewards outside [0, 1] (a gymnasium environment's own) "
                "need a rescale: privrl.learn(..., reward=lambda r: (r - lo) / (hi - lo)), a sweep's "
                "reward_range; sensitivity='reject' refuses such users instead",
                SensitivityWarning,
                stacklevel=stacklevel,
            )
            self._warned = True

    def apply(self, X: Any, y: Any = None) -> tuple[np.ndarray, np.ndarray | None]:
        """Rows of X (n, d) and entries of y (n,), clipped (or rejected) to the bounds."""
        # copies (the kernel clips in place), of real numbers only (complex lost its imaginary part)
        X = np.array(numeric_array(X, "X"), ndmin=2, order="C")
        yy = None if y is None else np.array(numeric_array(y, "y"), ndmin=1, order="C")
        if X.ndim != 2 or (yy is not None and yy.shape != (X.shape[0],)):
            raise ShapeError(
                f"X must be (n, d) and y (n,), got shapes {X.shape} and {None if yy is None else yy.shape}"
            )
        if not np.isfinite(X).all() or (yy is not None and not np.isfinite(yy).all()):
            raise NonFiniteError(
                "user statistic contains NaN or inf: it cannot be brought inside "
                "the sensitivity bound the noise is calibrated for"
            )
        bad = _core.apply_guard(self.spec, X, yy)
        self.count(self.clipped + bad)
        return X, yy


@dataclass(frozen=True)
class Release:
    """The server's billboard after ``users`` users: per step h the design matrix Lambda~_h, its
    inverse (post-processing of the design matrix), w~_h and the exploration matrix E_h (the bonus
    is ``||phi||_{E_h}``, the sampled model's covariance E_h). ``bonus`` (practical rule) is the
    same E_h, None under the paper's rule (where E_h = beta^2 Lambda~^{-1}); ``gamma`` the privacy
    part of its width (practical)."""

    design: np.ndarray
    inverse: np.ndarray
    weights: np.ndarray
    users: int
    bonus: np.ndarray | None = None
    gamma: np.ndarray | None = None
    explore: np.ndarray | None = None

    def __repr__(self) -> str:
        # the arrays by shape: a release holds H (or A) d x d matrices, far too many numbers to read
        parts = [f"users={self.users}"]
        for name in ("design", "inverse", "weights", "bonus", "gamma", "explore"):
            value = getattr(self, name)
            if value is not None:
                parts.append(f"{name}=<{np.asarray(value).dtype} array {np.shape(value)}>")
        return f"Release({', '.join(parts)})"


def check_privacy_model(privacy: Any, allowed: tuple = PRIVACY_MODELS) -> Any:
    if not isinstance(privacy, allowed):
        names = ", ".join(c.__name__ for c in allowed)
        raise TypeError(f"privacy must be one of {names}; got {type(privacy).__name__}")
    return privacy


def _seed_copy(seed: Any) -> np.random.SeedSequence:
    """A SeedSequence in the state `seed` describes (a copy of a SeedSequence, never itself)."""
    if not isinstance(seed, np.random.SeedSequence):
        return np.random.SeedSequence(seed)
    return np.random.SeedSequence(
        seed.entropy,
        spawn_key=seed.spawn_key,
        pool_size=seed.pool_size,
        n_children_spawned=seed.n_children_spawned,
    )


def _client_seeds(seed: Any, children: int, positions: list[int], draws: bool = False) -> list[bytes]:
    """The 32-byte keys of a seeded LDP client: as an agent built with ``seed`` keys its intake
    (its seed's noise child spawns ``children`` streams; the intake's are at ``positions``);
    ``draws``: then a live user's exploration and tie streams, as that agent keys its own."""
    root = _seed_copy(seed).spawn(3)
    streams = root[1].spawn(children)
    keys = [seed_bytes(streams[i]) for i in positions]
    return keys + ([seed_bytes(root[2]), seed_bytes(root[0])] if draws else [])


#: Each agent's LDP identity (Agent._ldp_identity), computed on first use.
_LDP_IDENTITY: weakref.WeakKeyDictionary[Agent, str] = weakref.WeakKeyDictionary()


class Agent(abc.ABC):
    """An online agent for K users, one per episode, on a finite-horizon MDP.

    ``policy()`` is the deterministic (H, S) policy of the arriving user, computed from the current
    release only; ``observe(trajectory)`` sends that user's data through the privacy model to the
    server. ``seed`` makes the tie-breaking, exploration and privacy-noise streams reproducible;
    ``seed=None`` draws each from OS entropy.
    """

    name = "agent"
    _core: Any  # the Rust agent
    #: The attributes a saved agent of this class holds (its __dict__), and the Rust class of its
    #: ``_core``: Agent.load refuses a file whose agent has others (privrl.agents.common.saved_shape).
    #: A change of them is a change of the save format (bump saving.FORMAT).
    _SAVED: frozenset[str] = frozenset(
        {"env", "privacy", "K", "H", "S", "A", "d", "beta_scale", "_beta_override", "ties", "exploration"}
        | {"seed", "_streams", "_core", "calibration", "guards", "sensitivity", "beta"}
    )
    _SAVED_CORE = ""
    #: The calibration the agent was built with (privrl.privacy.common.Calibration subclass).
    calibration: Calibration
    #: One SensitivityGuard per statistic of the release plan (statistic name -> guard).
    guards: dict[str, SensitivityGuard]

    def __init__(
        self,
        env: FiniteMDP | FeatureMap | ContextualBandit,
        privacy: Any,
        episodes: int,
        seed: Any = None,
        beta_scale: float = 1.0,
        beta: float | None = None,
        ties: str = "random",
        exploration: str | None = None,
    ):
        if not isinstance(env, (FiniteMDP, FeatureMap, ContextualBandit)):
            raise TypeError(
                f"env must be a privrl FiniteMDP, FeatureMap or ContextualBandit, got {type(env).__name__}"
            )
        self.env = env
        self.privacy = check_privacy_model(privacy if privacy is not None else NonPrivate())
        self.K = check_episodes(episodes)
        delta = getattr(self.privacy, "delta", None)
        if delta and delta > 1.0 / self.K:
            warnings.warn(
                f"delta = {delta:g} > 1/K = {1.0 / self.K:.3g}: with K users, a guarantee whose delta "
                "exceeds 1/K allows publishing some user's data outright; choose delta <= 1/K",
                PrivacyWarning,
                stacklevel=3,
            )
        self.H, self.S, self.A = env.H, env.S, env.A
        self.beta_scale, self._beta_override = check_radius(beta_scale, beta)
        self.ties = check_choice(ties, ("random", "lowest"), "ties")
        # None: default_exploration once the calibration is known (_settle_exploration)
        self.exploration: str = (
            "" if exploration is None else check_choice(exploration, EXPLORATIONS, "exploration")
        )
        self.seed = check_seed(seed, generator=False)
        # fixed children: 0 ties, 1 privacy noise, 2 exploration (the noise never moves with them),
        # spawned from a copy: the caller's SeedSequence is left as it was (reusable, reproducible)
        self._streams = None if seed is None else _seed_copy(seed).spawn(3)

    # ------------------------------------------------------------------ streams
    def noise_seeds(self, n: int) -> list[bytes]:
        """n independent 32-byte seeds for privacy-noise streams (OS entropy without a seed)."""
        return noise_seeds(self._streams, n)

    def _stream_seed(self, i: int) -> bytes:
        return os.urandom(32) if self._streams is None else seed_bytes(self._streams[i])

    @property
    def _tie_seed(self) -> bytes | None:
        return None if self.ties == "lowest" else self._stream_seed(0)

    def _radius(self, cal: Calibration, theoretical: float) -> float:
        """The exploration radius in use (``calibration.beta_used``): ``beta`` if given, else
        ``beta_scale`` times the calibration's radius. Under the adaptive rule the radius is in
        standard deviations of the estimate (the rule's own radius is 1: one std; its bias bound is
        never scaled; at most ``privrl.privacy.adaptive.MAX_RADIUS``), under the others it is the paper's
        / the practical rule's beta."""
        if cal.release_rule == "adaptive":  # a wider radius acts as MAX_RADIUS (saturated widths)
            rho = self.beta_scale if self._beta_override is None else self._beta_override
            return min(rho, MAX_RADIUS)
        if self._beta_override is not None:
            return self._beta_override
        if not math.isfinite(theoretical):  # UCRL-VTR+'s non-private radii at p = 1e-300, K = 10^7
            raise PrivacyParameterError(
                f"the calibration's radius is {theoretical:g} at p = {cal.p:g}, K = {cal.K}, H = {cal.H}: "
                "its log(1 / p) terms overflow a double; pass a larger p, or the radius itself as beta="
            )
        radius = self.beta_scale * theoretical
        if not math.isfinite(radius):  # beta_scale = 1e308 gave beta_used = inf
            raise PrivacyParameterError(
                f"beta_scale = {self.beta_scale:g} times the calibration's radius {theoretical:.6g} is not a "
                "finite radius: pass a smaller beta_scale, or the radius itself as beta="
            )
        return radius

    def _settle_exploration(self, cal: Calibration) -> None:
        """``exploration=None`` becomes the default of the algorithm under its release rule."""
        if not self.exploration:
            self.exploration = default_exploration(cal.algorithm, cal.release_rule)

    @property
    def _exploration_seed(self) -> bytes | None:
        return None if self.exploration == "optimism" else self._stream_seed(2)

    # ------------------------------------------------------------------ state (in Rust)
    @property
    def k(self) -> int:
        """Users observed so far."""
        return int(self._core.k)

    @property
    def policy_updates(self) -> int:
        """Policies computed so far."""
        return int(self._core.policy_updates)

    @property
    def clip_count(self) -> int:
        """User values clipped to the sensitivity bounds so far."""
        return int(sum(self._core.clips))

    @property
    def guard(self) -> SensitivityGuard:
        """The sensitivity guard of the (first) user statistic."""
        return next(iter(self.guards.values()))

    def _sync_guards(self) -> None:
        for guard, clipped in zip(self.guards.values(), self._core.clips, strict=False):
            if clipped != guard.clipped:  # warned at the user's line, through learn / run / observe
                with user_taken(lambda: self.k):  # (a fixed 4 named learn's own line)
                    guard.count(clipped, stacklevel=stacklevel_outside("privrl") + 1)

    def __copy__(self) -> Agent:
        """``copy.copy(agent)``: an independent agent (its own Rust state, guards and streams) on the
        same environment object. A shallow copy would share the Rust state, and two runs would step
        one agent."""
        return copy.deepcopy(self, {id(self.env): self.env})

    def __repr__(self) -> str:
        env = getattr(self.env, "name", type(self.env).__name__)
        return (
            f"{type(self).__name__}({self._model_label}, exploration={self.exploration!r}, K={self.K}, "
            f"episodes_done={self.k}, env={env!r})"
        )

    @property
    def _model_label(self) -> str:
        """The privacy model as the label, the repr and the messages name it: the model's own label
        (an agent that runs only part of it, PSRL, names that part)."""
        return str(self.privacy.label)

    @property
    def label(self) -> str:
        tag = "" if self.exploration == "optimism" else ", sampling"
        return f"{self.name}[{self._model_label}{tag}]"

    @abc.abstractmethod
    def release_plan(self) -> Any:
        """What the agent releases about one user, as data (a privrl.privacy.plans.ReleasePlan)."""

    @abc.abstractmethod
    def release(self) -> Release:
        """The current billboard."""

    # ------------------------------------------------------------------ acting
    def policy(self) -> np.ndarray:
        """The (H, S) int policy of the user arriving now (episode self.k + 1)."""
        return self._core.policy()

    def greedy_policy(self) -> np.ndarray:
        """What the agent has learned: the (H, S) int policy greedy for the released estimate, with
        no exploration (no optimism bonus, no posterior draw), ties to the lowest action. Score it
        with ``privrl.evaluate(agent.greedy_policy(), env)``; :meth:`policy` is the next user's
        (optimistic, or under ``exploration="sampling"`` that user's own draw).

        Privacy: post-processing of the current billboard (:meth:`release`) only, never of the
        users' data. Deterministic and side-effect free: it consumes no random stream and leaves
        the cached policy, ``policy_updates`` and every later user's draw as they were. Each agent
        class documents which estimate it plans on."""
        return self._core.greedy_policy()

    def act(self, state: Any, h: int = 0) -> int:
        """The action of the user arriving now in `state` at step `h` (0-based): its policy is
        computed once per user from the current release, so the calls of one episode agree."""
        # ints and numpy integers in range, read in one Rust call (None: checked below, as before)
        a = _core.agent_act(self._core, state, h)
        if a is not None:
            return a
        # a 0-d integer array (np.array(2)) too: learn takes it from state(obs), as gymnasium does
        s, t = integer_value(state), integer_value(h)
        for name, v, i, hi in (("state", state, s, self.S), ("h", h, t, self.H)):
            if i is None or not 0 <= i < hi:
                raise ShapeError(f"{name} must be an integer in [0, {hi}), got {v!r}")
        return int(self._core.policy()[t, s])

    def observe(self, trajectory: Trajectory) -> None:
        """Feed the arriving user's trajectory through the privacy model to the server (checked
        here, where user data enters). UCRL-VTR and UCRL-VTR+ read its states and actions only:
        a linear mixture MDP's reward function is known (the model's r), so the trajectory's
        rewards are checked for finiteness and not used. Each call is one user: a trajectory
        observed twice is two users with equal trajectories (docs/privacy.md, "One call, one user")."""
        s, a, r = self._check_trajectory(trajectory)
        self._core.observe(s, a, r)
        self._sync_guards()

    def _check_budget(self) -> None:
        """Refuse a user beyond the K the noise was calibrated for."""
        if self.k >= self.K:  # CapacityError, as privrl.run past K (two classes before)
            raise CapacityError(
                f"{self.label} was calibrated for K = {self.K} episodes; episode {self.k + 1} would "
                "exceed its privacy accounting"
            )

    def _check_trajectory(self, t: Trajectory) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A user's trajectory must index this MDP: integer states in [0, S), actions in [0, A) (a
        negative index would silently select another state's features), finite rewards."""
        if not isinstance(t, Trajectory):
            raise TypeError(f"observe() takes a privrl Trajectory, got {type(t).__name__}")
        self._check_budget()
        return check_trajectory(t, self.H, self.S, self.A)

    # ------------------------------------------------------------------ LDP: the user side apart
    def _intake_streams(self) -> tuple[int, list[int]] | None:
        """The LDP intake's noise streams among the agent's privacy-noise children: how many its
        seed's noise child spawns, and the positions of the intake's (matrix, vector) pairs in
        order; a seeded client keys its own alike. None: the agent has no LDP client."""
        return None

    def _message_shape(self) -> tuple[int, ...]:
        """An LDP message's grams are ``(*lead, d, d)`` and its targets ``(*lead, d)``: (*lead, d)."""
        raise NotImplementedError

    def ldp_client(self, seed: Any = None) -> LdpClient:
        """The user side of the arriving user under LocalDP, apart from the server, for a device:
        the public values it needs (the policy and values planned on the current billboard, the
        features, the guards' bounds, the calibrated noise) and its own noise streams (``seed=None``:
        keyed from OS entropy at its first ``privatize``; a seed keys them as an agent built with
        that seed keys its intake, and a LinUCB client's exploration and tie streams as that agent
        keys its own). ``client.privatize(trajectory)`` (LinUCB, a live context:
        ``client.choose(x)``, ``client.privatize_update(x, arm, reward)``) makes the message,
        :meth:`receive` takes it (privrl.agents.common.ldp). Plans the arriving user as
        :meth:`policy` does. Refused (PrivacyParameterError) unless the agent is LocalDP."""
        streams = self._intake_streams()
        if self.calibration.kind != "ldp" or streams is None:
            raise PrivacyParameterError(
                f"ldp_client() is the user side of LocalDP; {self.label} has none (under "
                f"{self._model_label} the users' statistics reach the server raw or exactly; use observe)"
            )
        self._check_budget()
        seed = check_seed(seed, generator=False)
        context = self._client_context()
        draws = context is not None  # a live user's own exploration and tie streams
        seeds = None if seed is None else _client_seeds(seed, *streams, draws=draws)
        core = self._core.ldp_client()
        n_keys = len(streams[1]) + 2 * draws
        shape = (self.H, self.S, self.A)
        return LdpClient(core, self.name, self._ldp_identity(), shape, seeds, n_keys, context)

    def _client_context(self) -> tuple[int, int | None, str] | None:
        """A client's live contexts (LinUCB): their length p, a raw-feature width for the
        error's hint and the digest of the context table (a restored client reads the table
        from a live bandit of that digest); None: the client privatizes trajectories only."""
        return None

    def _ldp_identity(self) -> str:
        """The public digest an LDP message carries: the agent kind, its calibration, its guards
        and its environment's fingerprint (a copy or a restored save of the agent has the same).
        Computed once per agent object (all fixed at construction): the digest took 15 us of a
        23 us receive. Kept beside the agent, not in it (its __dict__ is the save format)."""
        known = _LDP_IDENTITY.get(self)
        if known is None:
            guards = [g.spec for g in self.guards.values()]
            text = repr((self.name, self.calibration, guards, sorted(self.env.fingerprint().items())))
            known = _LDP_IDENTITY[self] = hashlib.sha256(text.encode()).hexdigest()[:16]
        return known

    def receive(self, message: LdpMessage) -> None:
        """The server side under LocalDP: one user's message (``client.privatize``), checked at the
        edge (an LdpMessage of this agent kind, shapes, finite values, a billboard this agent has
        released), added to the sums; then the next billboard, as :meth:`observe` does. A message
        built on an earlier billboard than the current one is accepted: the user's statistic
        ``X_h = phi_V(s_h, a_h), y_h = V(s_{h+1})`` is unbiased for any V fixed before its
        transitions (value-targeted regression), within the guard's bounds, and its noise is the
        user's own; it enters the next release like any message (docs/privacy.md, "LDP clients").
        Each message is one user: the same message object again is refused (AssumptionError)."""
        if self.calibration.kind != "ldp" or self._intake_streams() is None:
            raise PrivacyParameterError(f"receive() takes LocalDP messages; {self.label} is not LocalDP")
        m = check_message(message, self.name, self._ldp_identity(), self._message_shape(), self.k, self.K)
        RECEIVED.refuse_again(m, self, self.label)
        self._check_budget()
        self._core.receive(int(m.release), np.ascontiguousarray(m.grams), np.ascontiguousarray(m.targets))
        RECEIVED.add(m, self)

    def check_env(self, env: Any) -> None:
        """Refuse (AssumptionError) an environment that is not the MDP the agent was built for: ``env``
        must be ``agent.env`` or agree with every part of its fingerprint (the same model rebuilt
        from its constructor, e.g. after loading a saved agent in another process; for an agent
        built on a FeatureMap, which states only H and the features, any model with those: an
        agent trained through ``privrl.learn`` is scored on the environment's exact model)."""
        if env is self.env:
            return
        if not hasattr(env, "fingerprint"):
            raise TypeError(f"env must be a privrl environment, got {type(env).__name__}")
        mine, theirs = self.env.fingerprint(), env.fingerprint()
        differ = sorted(k for k in mine if mine[k] != theirs.get(k))
        if differ:
            raise AssumptionError(
                f"{self.label} was built for {self.env!r}; {env!r} differs in its {', '.join(differ)}: "
                "run it on agent.env or on an equal environment"
            )

    # ------------------------------------------------------------------ saving, reports
    def save(self, path: Any) -> None:
        """Save the agent mid-run (its whole state, the Rust agent's included) to `path`;
        ``type(agent).load(path)`` continues it bit-identically (privrl.agents.common.saving)."""
        from privrl.agents.common.saving import save_agent

        save_agent(self, path)

    @classmethod
    def load(cls, path: Any) -> Agent:
        """The agent saved at `path` by :meth:`save` (an instance of this class), with its own
        copy of the environment in ``agent.env``. Refuses (SaveFormatError) a file from another
        privrl version, a modified file, and anything that is not a saved agent; never runs code
        from the file."""
        from privrl.agents.common.saving import load_agent

        return load_agent(path, cls)

    def privacy_report(self) -> PrivacyReport:
        """Every released mechanism and the (eps, delta) it yields under the paper's argument and
        the tight accountant (privrl.audit.report)."""
        from privrl.audit.report import privacy_report

        return privacy_report(self)


def check_release(plan: Any, cal: Calibration, users: int) -> None:
    """The checks of a calibrated release plan at construction: the lattice fits the sums
    (:func:`check_lattice_range`) and the noise certifies the target (:func:`check_certified`)."""
    check_lattice_range(plan, cal, users)
    check_certified(plan, cal)


def check_certified(plan: Any, cal: Calibration) -> None:
    """Refuse a paper calibration whose noise does not make the release plan (eps, delta)-DP by
    the tight accountant. The paper's sigmas come from the Gaussian mechanism's formula
    (``Delta sqrt(2 ln(2 / delta)) / eps``, App. "Gaussian Mechanism", composed over the releases),
    stated for eps < 1: at a large epsilon it gives less noise than the target needs (LDP, delta =
    1e-5: LinUCB on 3 features above eps = 121, UCRL-VTR / UCRL-VTR+ on RiverSwimMixture(S=4, H=5)
    above 956 / 2,136), and the agent would not be what its privacy model says. The other
    calibrations take their noise from the accountant, so they certify by construction. Cost: one
    privacy report (about 20 ms)."""
    if cal.kind == "none" or cal.calibration != "paper":
        return
    from privrl.audit.report import privacy_report_from_calibration

    rep = privacy_report_from_calibration(plan.algorithm, cal, plan=plan)
    if rep["within_target"]["tight"]:
        return
    (eps_t, dlt_t), (eps, dlt) = cal.target(), rep["tight"]["budget"]
    raise PrivacyParameterError(
        f"calibration='paper' at epsilon = {eps_t:g}: the paper's noise (the Gaussian mechanism's formula, "
        f"stated for eps < 1) makes the releases only ({eps:.6g}, {dlt:.3g})-DP by the tight accountant, "
        f"above the target ({eps_t:g}, {dlt_t:g}); use calibration='tight' (the same releases with the "
        "noise that certifies the target) or a smaller epsilon"
    )


#: Lattice sums stay below 2^51 grid steps (the kernels refuse 2^52): headroom for the noise.
_LATTICE_HEADROOM = 2.0**51


def check_lattice_range(plan: Any, cal: Any, users: int) -> None:
    """With the discrete samplers every released sum lives on the lattice scale * 2^-grid_bits,
    exact below 2^52 steps. A sum of ``users`` statistics at their bounds must fit, or the
    kernels would refuse a leaf mid-run: refuse the agent at construction instead (a huge epsilon
    gives a noise scale, hence a lattice, too fine for the data). No-op for the float samplers."""
    if plan.sampler != "discrete":
        return
    for f in plan.families:
        stat = plan.statistic(f.statistic)
        y = max(abs(stat.y_low), abs(stat.y_high))
        entry = stat.x_bound**2 if f.is_matrix else stat.x_bound * y
        unit = float(getattr(cal, f.scale_key)) * 2.0**-plan.grid_bits / 2.0  # /2: Laplace matrices' g / c
        if users * entry > _LATTICE_HEADROOM * unit:
            # the cause is the pair (epsilon, K): at eps = 1 a K of 1e9 users overflows it too, so
            # the message says how many users this scale holds rather than blaming epsilon alone
            fit = math.floor(_LATTICE_HEADROOM * unit / entry)
            raise PrivacyParameterError(
                f"the discrete sampler's lattice ({f.scale_key} * 2^-{plan.grid_bits} = {2 * unit:.3g}) is "
                f"too fine for sums of {users} users' {f.name} (entries up to {entry:.3g}): at this noise "
                f"scale exact lattice sums hold at most {fit:,} users, fewer than episodes = {users} "
                "(epsilon too large for this K, or K too large for this epsilon); use sampler='float', a "
                "smaller epsilon or fewer episodes"
            )

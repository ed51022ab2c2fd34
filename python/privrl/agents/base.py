"""The agent protocol shared by every algorithm, its seeded random streams, and the
enforcement of the sensitivity bounds the privacy proofs assume (Sec. 2.1, App. B, App. D).

An agent plays the paper's two roles. The *server* keeps the statistics and publishes a
release (the billboard: the only thing users, and any observer, ever see). The *user* of
episode k computes its policy from that release and its own data only (Billboard lemma,
App. "Joint DP through DP"), runs it, and sends back its statistics (raw under JDP,
randomized on the user side under LDP).
"""

from __future__ import annotations

import abc
import math
import numbers
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privrl._checks import trusted
from privrl.envs.features import FeatureMap
from privrl.envs.finite import FiniteMDP, Trajectory
from privrl.exceptions import AssumptionError, NonFiniteError, PrivacyParameterError, ShapeError
from privrl.privacy.models import JointDP, LocalDP, NonPrivate

PRIVACY_MODELS = (NonPrivate, JointDP, LocalDP)


class SensitivityWarning(UserWarning):
    """User data exceeded a bound the privacy calibration assumes and was clipped."""


@dataclass
class SensitivityGuard:
    """Enforces `||x|| <= x_bound` and `y in [y_low, y_high]` where user data enters a mechanism.

    mode="clip": project onto the bound, count it, and warn once per guard;
    mode="reject": raise AssumptionError. The calibrated noise is only private for data inside
    these bounds, so nothing reaches a mechanism unchecked. Excesses within a relative `tol`
    (floating-point round-off of an in-bound computation) are projected silently in both modes;
    NaN / inf cannot be projected and always raise NonFiniteError.
    """

    x_bound: float
    y_low: float = -math.inf
    y_high: float = math.inf
    mode: str = "clip"
    clipped: int = 0
    _warned: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        if self.mode not in ("clip", "reject"):
            raise ValueError(f"sensitivity mode must be 'clip' or 'reject', got {self.mode!r}")
        if not (math.isfinite(self.x_bound) and self.x_bound > 0):
            raise PrivacyParameterError(f"x_bound must be finite and > 0, got {self.x_bound!r}")
        if not (self.y_low <= self.y_high):
            raise PrivacyParameterError(f"need y_low <= y_high, got [{self.y_low!r}, {self.y_high!r}]")

    def count(self, n_bad: int, stacklevel: int = 2) -> None:
        """Record `n_bad` clipped values (warning the first time); the episode engine calls it
        for the values it clipped."""
        self.clipped += n_bad
        if n_bad and not self._warned:
            warnings.warn(
                f"clipping user statistics to the sensitivity bound ||x|| <= {self.x_bound:g}"
                f", y in [{self.y_low:g}, {self.y_high:g}] (counted in agent.clip_count)",
                SensitivityWarning,
                stacklevel=stacklevel,
            )
            self._warned = True

    def apply(self, X: np.ndarray, y: np.ndarray | None = None, tol: float = 1e-9):
        """Rows of X (n, d) and entries of y (n,), clipped (or rejected) to the bounds."""
        X = np.asarray(X, dtype=np.float64)
        if not np.isfinite(X).all() or (y is not None and not np.isfinite(y).all()):
            raise NonFiniteError(
                "user statistic contains NaN or inf: it cannot be brought inside "
                "the sensitivity bound the noise is calibrated for"
            )
        norms = np.linalg.norm(X, axis=-1)
        over_x = norms > self.x_bound
        bad_x = norms > self.x_bound * (1 + tol)
        if y is None:
            over_y = bad_y = np.zeros_like(bad_x)
        else:
            y = np.asarray(y, dtype=np.float64)
            over_y = (y < self.y_low) | (y > self.y_high)
            bad_y = (y < self.y_low - tol * max(1.0, abs(self.y_low))) | (
                y > self.y_high + tol * max(1.0, abs(self.y_high))
            )
        n_bad = int(bad_x.sum() + bad_y.sum())
        if n_bad and self.mode == "reject":
            raise AssumptionError(
                f"user statistic outside the sensitivity bound (||x|| <= {self.x_bound:g}, "
                f"y in [{self.y_low:g}, {self.y_high:g}]): max ||x|| = {norms.max():.6g}"
            )
        if n_bad:
            self.count(n_bad, stacklevel=4)
        if over_x.any():
            X = np.where(over_x[..., None], X * (self.x_bound / np.maximum(norms, 1e-300))[..., None], X)
        if y is not None and over_y.any():
            y = np.clip(y, self.y_low, self.y_high)
        return X, y


def check_privacy_model(privacy: Any, allowed: tuple = PRIVACY_MODELS) -> Any:
    if not isinstance(privacy, allowed):
        names = ", ".join(c.__name__ for c in allowed)
        raise TypeError(f"privacy must be one of {names}; got {type(privacy).__name__}")
    return privacy


#: Largest K: the trees count leaves in 64 bits.
MAX_EPISODES = 2**63 - 1


def check_episodes(episodes: Any) -> int:
    if isinstance(episodes, bool) or not isinstance(episodes, (int, np.integer)):
        raise PrivacyParameterError(f"episodes (K) must be an integer >= 1, got {episodes!r}")
    if not (1 <= int(episodes) <= MAX_EPISODES):
        raise PrivacyParameterError(f"episodes (K) must be in [1, 2^63 - 1], got {episodes}")
    return int(episodes)


def check_nonneg(x: Any, name: str) -> float:
    """A finite real >= 0; strings, bools and complex numbers are refused (float() takes "1")."""
    if isinstance(x, bool) or not isinstance(x, (numbers.Real, np.floating, np.integer)):
        raise PrivacyParameterError(f"{name} must be a real number, got {x!r}")
    try:
        b = float(x)
    except OverflowError:
        b = math.inf
    if not (math.isfinite(b) and b >= 0):
        raise PrivacyParameterError(f"{name} must be finite and >= 0, got {x!r}")
    return b


def check_beta_scale(beta_scale: Any) -> float:
    return check_nonneg(beta_scale, "beta_scale")


class Agent(abc.ABC):
    """An online agent for K users, one per episode, on a finite-horizon MDP.

    The runner calls `policy()` (the deterministic (H, S) policy the arriving user will execute,
    computed from the current release only) then `observe(trajectory)` (the user's data enters
    the server through the privacy model). `seed` makes the tie-breaking stream and the privacy
    noise reproducible; `seed=None` draws both from OS entropy.
    """

    name = "agent"

    def __init__(
        self,
        env: FiniteMDP | FeatureMap,
        privacy: Any,
        episodes: int,
        seed: Any = None,
        beta_scale: float = 1.0,
        beta: float | None = None,
        ties: str = "random",
    ):
        if not isinstance(env, (FiniteMDP, FeatureMap)):
            raise TypeError(f"env must be a privrl FiniteMDP or FeatureMap, got {type(env).__name__}")
        self.env = env
        self.privacy = check_privacy_model(privacy)
        self.K = check_episodes(episodes)
        self.H, self.S, self.A = env.H, env.S, env.A
        self.beta_scale = check_beta_scale(beta_scale)
        if beta is not None:
            beta = check_nonneg(beta, "beta")
        self._beta_override = beta
        if ties not in ("random", "lowest"):
            raise ValueError(f"ties must be 'random' or 'lowest', got {ties!r}")
        self.ties = ties
        root = (
            seed
            if isinstance(seed, np.random.SeedSequence)
            else (None if seed is None else np.random.SeedSequence(seed))
        )
        self.seed = seed
        if root is None:
            self._tie_rng = np.random.default_rng()
            self._noise_seq = None
        else:
            tie_seq, self._noise_seq = root.spawn(2)
            self._tie_rng = np.random.default_rng(tie_seq)
        self.k = 0  # episodes observed so far
        self.policy_updates = 0

    def noise_seeds(self, n: int) -> list:
        """n independent seeds for privacy-noise streams (None -> each from OS entropy)."""
        if self._noise_seq is None:
            return [None] * n
        return self._noise_seq.spawn(n)

    @property
    def label(self) -> str:
        return f"{self.name}[{self.privacy.label}]"

    #: One SensitivityGuard per statistic of the release plan (statistic name -> guard).
    guards: dict[str, SensitivityGuard]

    @abc.abstractmethod
    def release_plan(self) -> Any:
        """What the agent releases about one user, as data (a privrl.privacy.plans.ReleasePlan)."""

    def save(self, path: Any) -> None:
        """Save the agent mid-run (its whole state, the Rust kernels' included) to `path`;
        ``type(agent).load(path)`` continues it bit-identically (privrl.agents.saving)."""
        from privrl.agents.saving import save_agent

        save_agent(self, path)

    @classmethod
    def load(cls, path: Any) -> Agent:
        """The agent saved at `path` by :meth:`save` (an instance of this class), with its own
        copy of the environment in ``agent.env``. Refuses (SaveFormatError) a file from another
        privrl version, a modified file, and anything that is not a saved agent; never runs code
        from the file."""
        from privrl.agents.saving import load_agent

        return load_agent(path, cls)

    def privacy_report(self) -> dict:
        """Every released mechanism and the (eps, delta) it yields under the paper's argument and
        the tight accountant (privrl.privacy.report.privacy_report; text: format_privacy_report)."""
        from privrl.privacy.report import privacy_report

        return privacy_report(self)

    def policy(self) -> np.ndarray:
        """The (H, S) int policy of the user arriving now (episode self.k + 1)."""
        with trusted():  # every array the planning touches is the agent's own
            return self._policy()

    def act(self, state: Any, h: int = 0) -> int:
        """The action of the user arriving now (episode self.k + 1) in `state` at step `h`
        (0-based): its policy is computed once per user from the current release, so the calls
        of one episode are consistent (policy() recomputes it: call one or the other)."""
        for name, v, hi in (("state", state, self.S), ("h", h, self.H)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= int(v) < hi:
                raise ShapeError(f"{name} must be an integer in [0, {hi}), got {v!r}")
        acting = getattr(self, "_acting", None)
        if acting is None or acting[0] != self.k:
            acting = self._acting = (self.k, self.policy())
        return int(acting[1][int(h), int(state)])

    def observe(self, trajectory: Trajectory) -> None:
        """Feed the arriving user's trajectory through the privacy model to the server. The
        trajectory is checked here, where user data enters; the rest runs trusted."""
        self._check_trajectory(trajectory)
        with trusted():
            self._observe(trajectory)

    @abc.abstractmethod
    def _policy(self) -> np.ndarray:
        """The algorithm's planning step (see policy)."""

    @abc.abstractmethod
    def _observe(self, trajectory: Trajectory) -> None:
        """The algorithm's update with a checked trajectory (see observe)."""

    def _check_trajectory(self, t: Trajectory) -> None:
        """A user's trajectory must index this MDP: integer states in [0, S), actions in [0, A)
        (a negative index would silently select another state's features), finite rewards."""
        if not isinstance(t, Trajectory):
            raise TypeError(f"observe() takes a privrl Trajectory, got {type(t).__name__}")
        if self.k >= self.K:
            raise PrivacyParameterError(
                f"{self.label} was calibrated for K = {self.K} episodes; episode {self.k + 1} would "
                "exceed its privacy accounting"
            )
        for name, arr, n, hi in (
            ("states", t.states, self.H + 1, self.S),
            ("actions", t.actions, self.H, self.A),
        ):
            a = np.asarray(arr)
            if a.shape != (n,):
                raise ShapeError(f"trajectory {name} must have shape ({n},) for H = {self.H}, got {a.shape}")
            if a.dtype.kind not in "iu":
                raise TypeError(f"trajectory {name} must be integers, got dtype {a.dtype}")
            if n and (a.min() < 0 or a.max() >= hi):
                raise ShapeError(
                    f"trajectory {name} must lie in [0, {hi}), got values in [{a.min()}, {a.max()}]"
                )
        r = np.asarray(t.rewards)
        if r.shape != (self.H,) or r.dtype.kind not in "biuf":
            raise ShapeError(
                f"trajectory rewards must be {self.H} real numbers, got shape {r.shape}, dtype {r.dtype}"
            )
        if not np.isfinite(r).all():
            raise NonFiniteError("trajectory rewards contain NaN or inf")


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
        unit = float(cal[f.scale_key]) * 2.0**-plan.grid_bits / 2.0  # /2: Laplace matrices' g / c
        if users * entry > _LATTICE_HEADROOM * unit:
            raise PrivacyParameterError(
                f"the discrete sampler's lattice ({f.scale_key} * 2^-{plan.grid_bits} = {2 * unit:.3g}) is "
                f"too fine for sums of {users} users' {f.name} (entries up to {entry:.3g}): the noise "
                "scale is too small (epsilon too large) for exact lattice sums; use sampler='float'"
            )

"""Exact finite-horizon, time-inhomogeneous finite MDPs: sampling, backward induction, exact values.
Sec. 2 (Preliminaries) of the paper: M = (S, A, H, {r_h}, {p_h}), deterministic rewards in [0, 1].
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from privrl import _core
from privrl.common.checks import check_all_finite, check_int, integer_actions, numeric_array
from privrl.common.errors import (
    AssumptionError,
    IndexRangeError,
    NonFiniteError,
    PrivacyParameterError,
    SeedError,
    ShapeError,
)
from privrl.common.kinds import array_value, integer_value, refuse_masked

__all__ = ["FiniteMDP", "Trajectory"]

#: Tolerance on sums of probabilities (rows of P, init_dist) and on the [0, 1] range of rewards.
PROB_TOL = 1e-9
#: Negative probabilities above -NEG_TOL are treated as round-off (e.g. from phi^T w) and
#: clipped to 0; anything more negative is an error.
NEG_TOL = 1e-12


# --------------------------------------------------------------------------------------------
# small validation helpers (shared by the subclasses)
# --------------------------------------------------------------------------------------------
def _freeze(x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x)
    x.flags.writeable = False
    return x


class ReadOnlyCopies:
    """Copies of an environment (``copy.deepcopy``, ``pickle``: an agent's copies and the sweep's
    worker processes) keep its read-only arrays read-only. numpy's copy of a read-only array is
    writeable, and a copied model changed in place would run under its cached optimal values,
    sampling tables and fingerprint (``check_env`` took it for the original)."""

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_read_only"] = tuple(
            k for k, v in state.items() if isinstance(v, np.ndarray) and not v.flags.writeable
        )
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        names = state.pop("_read_only", ())
        self.__dict__.update(state)
        for name in names:
            arr = self.__dict__.get(name)
            if isinstance(arr, np.ndarray):
                arr.flags.writeable = False


def _remedy(name: str, what: str, arr: np.ndarray) -> str:
    """What to give instead of an array one axis short: a step-indexed array without its step axis
    (one step's kernel, rewards, ...), or a start state index for the initial distribution."""
    if what.startswith("(H, ") and arr.ndim == what.count(",") and arr.ndim > 0:
        return f"; for a time-homogeneous model pass np.broadcast_to({name}, (H,) + {name}.shape)"
    if name == "init_dist" and arr.ndim == 0:
        return "; a start state s0 is np.eye(S)[s0]"
    return ""


def _as_array(x: Any, name: str, ndim: int, what: str) -> np.ndarray:
    """Copy `x` to a fresh C-contiguous float64 array with `ndim` dimensions."""
    refuse_masked(x, name)  # copied, the values under the mask were used
    kind = x.dtype.kind if isinstance(x, np.ndarray) else None
    try:
        if kind is None:
            kind = np.asarray(x).dtype.kind
        arr = np.array(x, dtype=np.float64, order="C", copy=True) if kind in "biuf" else None
    except (TypeError, ValueError, OverflowError) as exc:
        raise ShapeError(f"{name} must be a numeric array of shape {what}: {exc}") from exc
    if arr is None:
        # numpy would parse strings and drop imaginary parts with a mere warning.
        raise TypeError(f"{name} must be a real numeric array of shape {what}, got dtype kind {kind!r}")
    if arr.ndim != ndim:
        raise ShapeError(
            f"{name} must have shape {what} ({ndim} dims), got shape {arr.shape}{_remedy(name, what, arr)}"
        )
    if arr.size == 0:
        raise ShapeError(f"{name} must be non-empty, got shape {arr.shape}")
    return arr


def _check_rng(rng: Any) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise SeedError(
            f"rng must be a numpy Generator (np.random.default_rng(seed)), got {type(rng).__name__}"
        )
    return rng


#: Largest dense transition tensor (H S A S entries, 2 GiB of float64) an environment builds;
#: beyond it construction fails with ShapeError instead of MemoryError or the OOM killer.
MAX_DENSE_ENTRIES = 1 << 28


def env_name(name: Any) -> Any:
    """An environment's ``name=`` (a label for results), returned as given: a str or None (each
    constructor keeps its own default). A number, a list or an object was kept as the label, and
    name=0 or [] fell silently to the default."""
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a str (a label for results) or None, got {name!r}")
    return name


def env_int(env: str, key: str, value: Any, low: int = 1, what: str | None = None) -> int:
    """An environment's size argument by check_int's rule: an integer (not 20.0, nan, True or
    "6") in [low, 2^63 - 1], else AssumptionError naming the environment (one rule for every
    constructor: int() let inf, None and 1e30 through as Python's own errors)."""
    try:
        return check_int(value, key, low)
    except PrivacyParameterError:
        raise AssumptionError(
            f"{env} needs {what or f'{key} >= {low}'} (an integer), got {key}={value!r}"
        ) from None


def check_dense_size(
    name: str, H: int, S: int, A: int, d: int | None = None, mixture_d: int | None = None
) -> None:
    """Refuse (ShapeError) sizes whose dense (H, S, A, S) tensor is too large; with `d`, also
    counting a linear MDP's phi (S, A, d), mu (H, S, d) and theta (H, d); with `mixture_d`, the
    larger of P and a linear mixture's features (S, A, S, d) (named as d: as H it named a horizon
    the user did not give)."""
    n = max(H, mixture_d or 0) * S * A * S + (0 if d is None else d * (S * A + H * S + H))
    if n > MAX_DENSE_ENTRIES:
        extra = d if mixture_d is None else mixture_d
        dims = f"H={H}, S={S}, A={A}" + ("" if extra is None else f", d={extra}")
        raise ShapeError(
            f"{name}: a dense model with {dims} needs {n:.3g} entries, "
            f"above the limit of {MAX_DENSE_ENTRIES} (2 GiB)"
        )


def _check_finite(arr: np.ndarray, name: str) -> None:
    bad = ~np.isfinite(arr)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise NonFiniteError(f"{name} contains a non-finite value {float(arr[idx])} at index {idx}")


def _check_shape(arr: np.ndarray, name: str, shape: tuple[int, ...], what: str) -> None:
    if arr.shape != shape:
        raise ShapeError(f"{name} must have shape {what} = {shape}, got {arr.shape}")


def _check_kernel(P: np.ndarray) -> np.ndarray:
    """Check that the last axis of P holds probability distributions; clip round-off negatives."""
    neg = P < -NEG_TOL
    if neg.any():
        idx = tuple(int(i) for i in np.argwhere(neg)[0])
        raise AssumptionError(
            f"P[h={idx[0]}, s={idx[1]}, a={idx[2]}, s'={idx[3]}] = {P[idx]:.6g} is negative: "
            "transition probabilities must be >= 0"
        )
    sums = P.sum(axis=-1)
    bad = np.abs(sums - 1.0) > PROB_TOL
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AssumptionError(
            f"P[h={idx[0]}, s={idx[1]}, a={idx[2]}, :] sums to {sums[idx]:.12g}, not 1 "
            f"(tolerance {PROB_TOL:g}): rows of the transition kernel must be distributions"
        )
    return np.maximum(P, 0.0, out=P)


def outside_unit_interval(x: np.ndarray) -> tuple[int, ...] | None:
    """The index of the first entry of `x` outside [0, 1] by more than the round-off PROB_TOL, or
    None: the one rule for rewards and mean rewards (FiniteMDP's R, ContextualBandit's means), whose
    round-off the caller then clips into [0, 1]."""
    bad = (x < -PROB_TOL) | (x > 1.0 + PROB_TOL)
    return tuple(int(i) for i in np.argwhere(bad)[0]) if bad.any() else None


def _check_rewards(R: np.ndarray) -> np.ndarray:
    idx = outside_unit_interval(R)
    if idx is not None:
        # repr: the shortest digits that tell the value from the bound (".6g" printed 1 + 1e-8 as 1)
        raise AssumptionError(
            f"R[h={idx[0]}, s={idx[1]}, a={idx[2]}] = {float(R[idx])!r} is outside [0, 1]: "
            "rewards must lie in [0, 1]"
        )
    return np.clip(R, 0.0, 1.0, out=R)


def _check_distribution(p: np.ndarray, name: str) -> np.ndarray:
    neg = p < -NEG_TOL
    if neg.any():
        i = int(np.argmax(neg))
        raise AssumptionError(f"{name}[{i}] = {p[i]:.6g} is negative: {name} must be a distribution")
    total = float(p.sum())
    if abs(total - 1.0) > PROB_TOL:
        raise AssumptionError(f"{name} sums to {total:.12g}, not 1: {name} must be a distribution")
    return np.maximum(p, 0.0, out=p)


def digest(x: Any) -> str:
    """A short SHA-256 of a number or an array (its shape and float64 bytes)."""
    a = np.ascontiguousarray(x, dtype=np.float64)
    return hashlib.sha256(repr(a.shape).encode() + a.tobytes()).hexdigest()[:16]


def _cdf(p: np.ndarray) -> np.ndarray:
    """Cumulative sums along the last axis, with every entry from the last positive-probability
    index on set to exactly 1.0 (so u in [0, 1) never selects a zero-probability trailing state,
    whatever the round-off of the cumulative sum)."""
    c = np.cumsum(p, axis=-1)
    n = p.shape[-1]
    last = n - 1 - np.argmax(p[..., ::-1] > 0.0, axis=-1)  # index of the last positive entry
    c[np.arange(n) >= last[..., None]] = 1.0
    return c


# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Trajectory:
    """One episode: states s_0..s_H (H+1,), actions a_0..a_{H-1} (H,), rewards r_0..r_{H-1} (H,).

    rewards[h] = r_h(states[h], actions[h]); states[H] is the state reached after the last step.
    """

    states: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray

    @property
    def step_rewards(self) -> np.ndarray:
        """Alias of `rewards`: the per-step rewards r_h(s_h, a_h), shape (H,)."""
        return self.rewards

    @property
    def total_reward(self) -> float:
        """The return sum_h r_h(s_h, a_h) of the episode."""
        return float(self.rewards.sum())

    @property
    def H(self) -> int:
        return int(self.actions.shape[0])


class FiniteMDP(ReadOnlyCopies):
    """A finite-horizon, time-inhomogeneous MDP with S states, A actions and horizon H.

    Parameters
    ----------
    P : array (H, S, A, S)
        P[h, s, a, s'] = p_h(s'|s,a), steps h = 0..H-1 (0-based). Rows must be distributions
        (entries >= 0, sum 1 within 1e-9); negative round-off above -1e-12 is clipped to 0.
    R : array (H, S, A)
        Deterministic rewards r_h(s,a) in [0, 1] (round-off within 1e-9 is clipped).
    init_dist : array (S,)
        Distribution of the initial state s_0.
    name : str, optional

    All stored arrays are float64, C-contiguous copies with ``writeable = False``.
    """

    def __init__(self, P: Any, R: Any, init_dist: Any, name: str | None = None) -> None:
        P = _as_array(P, "P", 4, "(H, S, A, S)")
        H, S, A, S2 = P.shape
        if S2 != S:
            raise ShapeError(f"P must have shape (H, S, A, S) with matching S axes, got {P.shape}")
        R = _as_array(R, "R", 3, "(H, S, A)")
        _check_shape(R, "R", (H, S, A), "(H, S, A)")
        init_dist = _as_array(init_dist, "init_dist", 1, "(S,)")
        _check_shape(init_dist, "init_dist", (S,), "(S,)")
        _check_finite(P, "P")
        _check_finite(R, "R")
        _check_finite(init_dist, "init_dist")
        P = _check_kernel(P)
        R = _check_rewards(R)
        init_dist = _check_distribution(init_dist, "init_dist")

        self.H: int = int(H)
        self.S: int = int(S)
        self.A: int = int(A)
        self.P: np.ndarray = _freeze(P)
        self.R: np.ndarray = _freeze(R)
        self.init_dist: np.ndarray = _freeze(init_dist)
        label = env_name(name)
        self.name: str = label if label is not None else type(self).__name__
        # Sampling tables: cumulative rows, last positive entry forced to 1.
        self._cdf = _freeze(_cdf(self.P))
        self._init_cdf = _freeze(_cdf(self.init_dist))
        self._Qstar: np.ndarray | None = None
        self._Vstar: np.ndarray | None = None
        self._pistar: np.ndarray | None = None
        self._fingerprint: dict[str, str] | None = None

    def fingerprint(self) -> dict[str, str]:
        """A digest of each part of the model an agent reads (horizon, transitions, rewards, initial
        distribution and, where the environment has them, its features and C_w): two environments
        with equal fingerprints are the same MDP to every agent (a saved agent runs on either)."""
        if self._fingerprint is None:
            parts = {"horizon": self.H, "transitions": self.P, "rewards": self.R, "initial": self.init_dist}
            for extra in ("features", "C_w"):
                if getattr(self, extra, None) is not None:
                    parts[extra] = getattr(self, extra)
            self._fingerprint = {k: digest(v) for k, v in parts.items()}
        return self._fingerprint

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, S={self.S}, A={self.A}, H={self.H})"

    # ---------------------------------------------------------------- sampling
    def sample_initial_state(self, rng: np.random.Generator) -> int:
        """Draw s_0 ~ init_dist with one uniform."""
        return int(np.searchsorted(self._init_cdf, _check_rng(rng).random(), side="right"))

    def sample_next_state(self, h: int, s: int, a: int, rng: np.random.Generator) -> int:
        """Draw s' ~ p_h(.|s,a) with one uniform (inverse-cdf on the precomputed row)."""
        # True was index 1; 1.5, "1" and None raised operator.index's TypeError, naming no argument
        t, i, j = (integer_value(v) for v in (h, s, a))  # ints, numpy ints, 0-d integer arrays
        if t is None or i is None or j is None:
            raise TypeError(f"(h, s, a) must be integers, got ({h!r}, {s!r}, {a!r})")
        if not (0 <= t < self.H and 0 <= i < self.S and 0 <= j < self.A):
            raise IndexRangeError(
                f"(h, s, a) = ({t}, {i}, {j}) out of range for H={self.H}, S={self.S}, A={self.A}"
            )
        return int(np.searchsorted(self._cdf[t, i, j], _check_rng(rng).random(), side="right"))

    def sample_episode(self, policy: Any, rng: np.random.Generator) -> Trajectory:
        """Roll out the deterministic time-dependent policy `policy` (int array (H, S)).

        All H+1 uniforms of the episode are drawn with a single ``rng.random(H + 1)`` call:
        u[0] for s_0 and u[h+1] for the transition at step h.
        """
        pol = self._check_policy(policy)
        H = self.H
        u = _check_rng(rng).random(H + 1)
        states = np.empty(H + 1, dtype=np.int64)
        actions = np.empty(H, dtype=np.int64)
        rewards = np.empty(H, dtype=np.float64)
        cdf, R = self._cdf, self.R
        s = int(np.searchsorted(self._init_cdf, u[0], side="right"))
        states[0] = s
        for h in range(H):
            a = int(pol[h, s])
            actions[h] = a
            rewards[h] = R[h, s, a]
            s = int(np.searchsorted(cdf[h, s, a], u[h + 1], side="right"))
            states[h + 1] = s
        return Trajectory(states=states, actions=actions, rewards=rewards)

    # ---------------------------------------------------------------- exact values
    def _check_policy(self, policy: Any) -> np.ndarray:
        pol = array_value(policy, "policy")
        if pol.shape != (self.H, self.S):
            raise ShapeError(
                f"policy must be an int array of shape (H, S) = {(self.H, self.S)}, got {pol.shape}"
            )
        pol = integer_actions(pol)  # the rule evaluate applies on a gymnasium env too
        if pol.size and (pol.min() < 0 or pol.max() >= self.A):
            bad = tuple(int(i) for i in np.argwhere((pol < 0) | (pol >= self.A))[0])
            raise AssumptionError(
                f"policy[h={bad[0]}, s={bad[1]}] = {pol[bad]} is not an action in 0..{self.A - 1}"
            )
        return pol

    def policy_q(self, policy: Any) -> np.ndarray:
        """Q^pi_h(s,a), shape (H, S, A), by backward induction (vectorized over S and A)."""
        pol = self._check_policy(policy)
        Q = np.empty((self.H, self.S, self.A))
        v = np.zeros(self.S)
        idx = np.arange(self.S)
        for h in range(self.H - 1, -1, -1):
            Q[h] = self.R[h] + self.P[h] @ v
            v = Q[h][idx, pol[h]]
        return _freeze(Q)

    def policy_values(self, policy: Any) -> np.ndarray:
        """V^pi_h(s), shape (H+1, S), with V[H] = 0, by backward induction on P[h, s, pi_h(s), :]."""
        pol = np.ascontiguousarray(self._check_policy(policy), dtype=np.int64)
        # The Rust kernel the runs' exact regret uses (sums over s' left to right; a linear MDP's
        # phi^T (mu_h^T V) where its factors make that cheaper: kernel_factors)
        return _freeze(_core.policy_values(self.P, self.R, pol, **self.kernel_factors()))

    def kernel_factors(self) -> dict[str, np.ndarray]:
        """Factors of the kernel for the exact values (``phi`` (S A, d), ``mu`` (H, S, d) of
        ``P_h(s'|s, a) = phi(s, a)^T mu_h(s')``) when a subclass has them: none here."""
        return {}

    def _solve_optimal(self) -> None:
        """Q* and pi* by backward induction; V* is pi*'s value by the runs' kernel (policy_values):
        the same summation as every policy's value, so an optimal policy's regret is exactly 0 (numpy's
        V* differed from it in the last bit: regrets of -1e-14 where every policy is optimal)."""
        Q = np.empty((self.H, self.S, self.A))
        V = np.zeros((self.H + 1, self.S))
        for h in range(self.H - 1, -1, -1):
            Q[h] = self.R[h] + self.P[h] @ V[h + 1]
            V[h] = Q[h].max(axis=1)
        self._Qstar = _freeze(Q)
        self._pistar = _freeze(Q.argmax(axis=2).astype(np.int64))
        self._Vstar = self.policy_values(self._pistar)

    def random_regret(self) -> float:
        """Expected regret per episode of the uniformly random policy (every action with
        probability 1/A at every step): ``init_dist @ (V*_1 - V^unif_1)``, by backward induction
        (as ContextualBandit.random_regret; the scale the harness's verdict reads a regret rate
        against; cached)."""
        cached = self.__dict__.get("_random_regret")
        if cached is None:
            V = np.zeros(self.S)
            for h in range(self.H - 1, -1, -1):
                V = (self.R[h] + self.P[h] @ V).mean(axis=1)
            cached = max(0.0, self.initial_value(self.optimal_values()) - float(self.init_dist @ V))
            self.__dict__["_random_regret"] = cached
        return cached

    def optimal_q(self) -> np.ndarray:
        """Q*_h(s,a), shape (H, S, A) (cached)."""
        if self._Qstar is None:
            self._solve_optimal()
        return self._Qstar  # type: ignore[return-value]

    def optimal_values(self) -> np.ndarray:
        """V*_h(s), shape (H+1, S), V*[H] = 0 (cached)."""
        if self._Vstar is None:
            self._solve_optimal()
        return self._Vstar  # type: ignore[return-value]

    def optimal_policy(self) -> np.ndarray:
        """A greedy optimal policy, int array (H, S) (ties broken towards the smallest action; cached)."""
        if self._pistar is None:
            self._solve_optimal()
        return self._pistar  # type: ignore[return-value]

    def initial_value(self, V: Any) -> float:
        """Expected value at the start, init_dist @ V[0]; V is (H+1, S) (or a single (S,) vector)."""
        # real and finite (NaN gave NaN, complex lost its imaginary part), one row at least
        V = numeric_array(V, "V")
        if V.shape[-1:] != (self.S,) or V.ndim not in (1, 2) or V.size == 0:
            raise ShapeError(f"V must have shape (H+1, S) or (S,) with S={self.S}, got {V.shape}")
        v0 = check_all_finite(V if V.ndim == 1 else V[0], "V")
        return float(self.init_dist @ v0)

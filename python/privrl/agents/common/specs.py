"""What crosses into the Rust agents (privrl._core.VtrAgent / LsviAgent): typed, frozen specs read
attribute by attribute, built once from an agent's release plan and calibration (Sec. 3-4, App. B-D).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from privrl.common.checks import seed_bytes
from privrl.kernels import DEFAULT_GRID_BITS
from privrl.privacy.adaptive import SAMPLING_DRAWS
from privrl.privacy.practical import BoundsSpec

__all__ = [
    "GuardSpec",
    "BoundsSpec",
    "PracticalSpec",
    "AdaptiveSpec",
    "NoiseSpec",
    "RegressionSpec",
    "VtrSpec",
    "LsviPrivateSpec",
    "LsviSpec",
    "LsviAdaptiveSpec",
    "LinUcbSpec",
    "noise_spec",
    "bounds_spec",
]


@dataclass(frozen=True)
class GuardSpec:
    """The sensitivity bound enforced where user data enters a mechanism."""

    x_bound: float
    y_low: float
    y_high: float
    reject: bool


@dataclass(frozen=True)
class PracticalSpec:
    """The practical release rule's public constants (privrl.privacy.practical)."""

    lam: float
    shift_mult: float
    beta2: float
    c_w: float
    centre_distance: float
    noise_scale: float
    w0: np.ndarray
    bounds: BoundsSpec
    adaptive: AdaptiveSpec | None = None


@dataclass(frozen=True)
class AdaptiveSpec:
    """The adaptive rule's constants (privrl.privacy.adaptive.adaptive_constants)."""

    sigma_max: float
    spread_scale: float
    sigma_min: float
    radius: float = 1.0  # the random part's radius in standard deviations (beta_scale)
    draws: int = SAMPLING_DRAWS  # the models a sampling user draws (the largest Q per pair)


@dataclass(frozen=True)
class NoiseSpec:
    """The noise of a regression's mechanisms (JDP: one per seed) or its user-side randomizer
    (LDP: two streams): kernel noise name, scales, lattice, capacity and 32-byte seeds."""

    mechanism: str
    noise: str
    sigma_matrix: float
    sigma_vector: float
    divisor: float
    grid_bits: int
    capacity: int
    seeds: list[bytes]


@dataclass(frozen=True)
class RegressionSpec:
    """One ridge regression of UCRL-VTR / UCRL-VTR+: ``mode`` "exact" | "jdp" | "ldp"."""

    mode: str
    lam: float
    base: float
    radius: float
    shift_name: str
    guard: GuardSpec | None
    noise: NoiseSpec | None
    practical: PracticalSpec | None


@dataclass(frozen=True)
class VtrSpec:
    features: np.ndarray  # (S, A, S, d)
    rewards: np.ndarray  # (H, S, A)
    regressions: list[RegressionSpec]
    plus: tuple[float, float] | None  # UCRL-VTR+: (beta_check, beta_tilde)
    tie_seed: bytes | None
    exploration_seed: bytes | None
    episodes: int


@dataclass(frozen=True)
class LsviPrivateSpec:
    noise: NoiseSpec
    shift: float  # lam + c_K + Upsilon (App. D)
    practical_mult: float | None
    bounds: BoundsSpec | None


@dataclass(frozen=True)
class LsviAdaptiveSpec:
    """The adaptive LSVI rule's public constants (privrl.privacy.adaptive): the centre direction
    w1 (min-norm, phi^T w1 = 1 where ``value_shift``), the diagonal projection of one-hot rows,
    the shift multiplier, the noise bounds (eta's std read from them) and their alpha."""

    w1: np.ndarray
    value_shift: bool
    diagonal: bool
    shift_mult: float
    bounds: BoundsSpec
    alpha: float
    radius: float = 1.0  # the width's radius in posterior standard deviations (beta_scale)


@dataclass(frozen=True)
class LsviSpec:
    table: np.ndarray  # (S A, d)
    n_actions: int
    horizon: int
    guard: GuardSpec
    beta: float
    lam: float
    batch_len: int
    private: LsviPrivateSpec | None
    planning: str
    record_capacity: int
    tie_seed: bytes | None
    exploration_seed: bytes | None
    episodes: int
    adaptive: LsviAdaptiveSpec | None = None


@dataclass(frozen=True)
class LinUcbSpec:
    """LinUCB (privrl._core.LinUcbAgent): the context table, the server's mode ("exact" | "jdp" |
    "ldp") and noise, the regret side (lam, radius, reward std, shift) and the streams."""

    contexts: np.ndarray  # (n, p)
    n_arms: int
    mode: str
    guard: GuardSpec
    lam: float
    beta: float
    sigma_r: float
    ends: list[int]
    const_shift: float
    shift_mult: float
    bounds: BoundsSpec
    noise: NoiseSpec | None
    tie_seed: bytes | None
    exploration_seed: bytes | None
    episodes: int


def noise_spec(
    cal: Any, sigma_m: float | None, sigma_v: float | None, capacity: int, seeds: list
) -> NoiseSpec:
    """The mechanisms' / randomizer's noise under calibration ``cal``."""
    return NoiseSpec(
        mechanism=cal.mechanism,
        noise=cal.node_noise,
        sigma_matrix=float(sigma_m or 0.0),
        sigma_vector=float(sigma_v or 0.0),
        divisor=float(cal.sym_divisor),
        grid_bits=int(cal.grid_bits or DEFAULT_GRID_BITS),
        capacity=int(capacity),
        seeds=[seed_bytes(s) for s in seeds],
    )


def bounds_spec(cal: Any, sigma_m: float | None, sigma_v: float | None, d: int) -> BoundsSpec:
    """The noise bounds of the practical rule for a release with node scales ``sigma_*``."""
    if cal.kind == "none":
        return BoundsSpec("zero")
    return BoundsSpec(
        cal.noise, float(sigma_m or 0.0), float(sigma_v or 0.0), float(cal.sym_divisor), d, cal.alpha
    )

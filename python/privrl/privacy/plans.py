"""Release plans: what an algorithm releases about one user, as data, and its exact worst case.

Paper: Luyo et al., App. B-D (the privacy proofs list the released statistics and their sensitivities);
the plan is what `agent.release_plan()` returns and what calibration, report, summary and audit read.
"""

# A plan lists, per step h of an episode, the user's statistic (a vector x with ||x|| <= x_bound
# and a scalar y in [y_low, y_high], inside the bounds a SensitivityGuard enforces) and the
# released families computed from it: the "outer" family x x^T (a symmetric matrix with noise
# (Z' + Z'^T)/divisor) and the "scaled" family x y (a vector). Each family says how one user enters
# it: a continual-release mechanism (tree nodes, or the mechanism's exact L2 multiplier), a
# user-side randomizer (one release), or fresh noise at every server release (count releases).
#
# Gaussian accounting of one step (Dong, Roth & Su 2019): the release of a family is a Gaussian
# mechanism; for the symmetric matrix law (Z' + Z'^T)/c with Z' i.i.d. N(0, s^2) the upper
# triangle is independent with variance 2 s^2/c^2 off and 4 s^2/c^2 on the diagonal, so a change
# D of the matrix has Mahalanobis norm (c/2) ||D||_F / s. Two neighbouring users (x, y) and
# (x', y') change the step's families JOINTLY (the same x feeds the matrix and the vector), so
#     mu_step^2 = max_{x, x', y, y'} sum_f m_f^2 l_f^2 ||T_f(x, y) - T_f(x', y')||^2 / s_f^2
# with m_f the user's multiplier in f (sqrt(nodes) of a tree), l_f the law factor (c/2 for
# matrices, 1 for vectors), s_f the family's noise scale. The max depends only on the norms
# a = ||x||, b = ||x'||, the cosine c of their angle and y, y' (the terms are rotation invariant):
#     ||x x^T - x' x'^T||_F^2 = a^4 + b^4 - 2 a^2 b^2 c^2,
#     ||x y - x' y'||^2 = a^2 y^2 + b^2 y'^2 - 2 a b c y y',
# and the second is convex in (y, y'), so y, y' sit at the ends of their interval. The whole
# release is mu-GDP with mu^2 = sum over steps and statistics (adaptive composition).
# Pure DP (Laplace) keeps simple composition of the per-family L1 sensitivities (an upper bound
# on the joint worst case, since |a| + |b| bounds any joint change family by family).
#
# Secure samplers (sampler="discrete"): every draw is an exact discrete Gaussian / Laplace on the
# lattice gamma Z, gamma = scale 2^-grid_bits, added to data rounded to that lattice. Rounding
# moves each entry of the two neighbours' data by less than one lattice step apart, so each draw's
# whitened change grows by at most the whitened norm of a lattice step in every entry
# (rounding_per_draw); by Minkowski's inequality over all of a user's draws,
#     mu_discrete <= mu + mu_rounding,   mu_rounding^2 = sum_f instances r_f^2 rho_f^2,
# with r_f the number of rounded draws a user's data enters, as a root (sqrt(nodes) of a tree,
# where one rounded leaf enters every node; sqrt(T) for BLT's encoder, where every encoded entry
# is rounded). Canonne, Kamath & Steinke (2020) prove that the discrete Gaussian with integer
# data is (Delta^2 / 2 sigma^2)-zCDP (per coordinate sigma, jointly over coordinates), the
# continuous law's zCDP; nothing stronger is proven for it, so its accounting is zCDP. The
# discrete Laplace is (Delta_1 / b)-DP on integer data, the continuous law's epsilon.
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from privrl.common.checks import (
    check_choice,
    check_flag,
    check_int,
    check_pos_int,
    check_positive_real,
    check_real,
)
from privrl.common.errors import PrivacyParameterError
from privrl.kernels.continual import DEFAULT_GRID_BITS, DISCRETE_MECHANISMS
from privrl.privacy.quartic import maximise

__all__ = [
    "Form",
    "ReleasePlan",
    "ReleasedFamily",
    "Site",
    "UserStatistic",
    "WorstCase",
    "DEFAULT_SAMPLER",
    "KINDS",
    "SAMPLERS",
    "check_is_plan",
    "check_plan",
    "check_plan_shape",
    "refuse_unfit",
    "default_sampler",
    "has_discrete_sampler",
    "law_factor",
    "plan_mu",
    "plan_rounded_draws",
    "plan_rounding_epsilon",
    "plan_rounding_mu",
    "rounding_per_draw",
    "plan_pure_epsilon",
    "statistic_worst_case",
]

Form = Literal["outer", "scaled"]
Site = Literal["tree", "user", "release"]


@dataclass(frozen=True)
class UserStatistic:
    """What one user contributes at one step: a vector ``x`` in R^dim with ``||x||_2 <= x_bound``
    and a scalar ``y`` in ``[y_low, y_high]``; ``enforced_by`` says where the bounds are enforced
    (the agents' SensitivityGuards are built from these numbers). ``nonnegative`` (opt-in): every
    entry of every user's x is >= 0 (counts, sums of nonnegative rewards), so two users' x make an
    angle of cosine c in [0, 1] and the worst pair is no longer x' = -x (:func:`statistic_worst_case`);
    a SensitivityGuard does not enforce it: the statistic must be nonnegative by construction."""

    name: str
    x: str
    y: str
    dim: int
    x_bound: float
    y_low: float
    y_high: float
    source: str
    nonnegative: bool = False

    def __post_init__(self) -> None:
        """The bounds every worst case reads, checked (built by hand, dim=0 or x_bound=nan gave no
        error until a worst case failed, y_low > y_high one of an empty range)."""
        object.__setattr__(self, "dim", check_pos_int(self.dim, "dim"))  # dim=0 was IndexError
        object.__setattr__(self, "x_bound", check_positive_real(self.x_bound, "x_bound"))
        y_low, y_high = check_real(self.y_low, "y_low"), check_real(self.y_high, "y_high")
        if not y_low <= y_high:
            raise PrivacyParameterError(f"need y_low <= y_high, got [{y_low!r}, {y_high!r}]")
        object.__setattr__(
            self, "nonnegative", check_flag(self.nonnegative, "nonnegative", PrivacyParameterError)
        )

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickling (agent.save files): a statistic saved before ``nonnegative`` existed had
        none, i.e. the default False (the same worst case, the same noise)."""
        for key, value in {"nonnegative": False, **state}.items():
            object.__setattr__(self, key, value)


@dataclass(frozen=True)
class ReleasedFamily:
    """One released family, per step: its name and the paper's, the statistic it is computed from
    (``form``: ``outer`` = x x^T, ``scaled`` = x y), how one user enters it (``site``: ``tree`` =
    the server's continual-release mechanism, ``user`` = the user-side randomizer, ``release`` =
    fresh noise at each server release; ``draws`` noise draws per user and instance, None for a
    continual mechanism with a general encoder; ``multiplier`` the user's L2 multiplier, sqrt(draws)
    for trees and fresh releases; ``draws_paper`` the count the paper's argument uses), the noise
    scale's calibration key and its ratio to the common multiplier (the paper's ratios are kept),
    the separate worst-case L2 / L1 sensitivities (what the paper's argument uses) and the matrix
    noise law ``(Z' + Z'^T)/sym_divisor``."""

    name: str
    paper: str
    statistic: str
    form: Form
    site: Site
    scale_key: str
    scale_ratio: float
    draws: int | None
    draws_paper: int
    multiplier: float
    l2_sensitivity: float
    l2_source: str
    l1_sensitivity: float
    l1_source: str
    sym_divisor: float | None
    mechanism: str
    instances: int

    def __post_init__(self) -> None:
        """The numbers a certificate reads, checked: built by hand, instances=0 made plan_mu 0 (no
        privacy loss) and draws=0, a multiplier or a sensitivity of nan went into the worst case."""
        check_choice(self.form, ("outer", "scaled"), "form")
        check_choice(self.site, ("tree", "user", "release"), "site")
        for name in ("instances", "draws_paper") + (() if self.draws is None else ("draws",)):
            object.__setattr__(self, name, check_pos_int(getattr(self, name), name))
        for name in ("scale_ratio", "multiplier", "l2_sensitivity", "l1_sensitivity") + (
            () if self.sym_divisor is None else ("sym_divisor",)
        ):
            object.__setattr__(self, name, check_positive_real(getattr(self, name), name))

    @property
    def is_matrix(self) -> bool:
        return self.form == "outer"

    @property
    def l1_multiplier(self) -> float:
        """The user's L1 multiplier (pure DP): the number of draws it enters."""
        return float(self.draws if self.draws is not None else self.multiplier**2)


#: The noise samplers: "discrete" (exact discrete Gaussian / Laplace on a lattice, Canonne,
#: Kamath & Steinke 2020: no floating-point side channel) or "float" (the continuous laws).
SAMPLERS = ("discrete", "float")
#: The privacy models: without noise, joint DP (the server's mechanisms), local DP (the users').
KINDS = ("none", "jdp", "ldp")

#: The noise sampler of every agent and public function that takes one (None there resolves to it
#: wherever the mechanism has it: the binary tree, BLT and the LDP randomizer; privacy.common).
DEFAULT_SAMPLER = "discrete"


def has_discrete_sampler(kind: str, mechanism: str) -> bool:
    """Whether a release of ``kind`` whose JDP server runs ``mechanism`` can draw with the discrete
    sampler: all but a JDP server on a mechanism outside DISCRETE_MECHANISMS (Honaker, the
    factorization). The one rule behind :func:`default_sampler`, privacy.common.check_sampler_for
    and the sweep configs' check (privrl.experiment.parsing)."""
    return kind != "jdp" or mechanism in DISCRETE_MECHANISMS


def default_sampler(kind: str, mechanism: str) -> str:
    """The sampler of ``sampler=None`` (the one rule, privacy.common.resolve_sampler): DEFAULT_SAMPLER
    wherever the release has it (:func:`has_discrete_sampler`: the tree, BLT, the LDP randomizer),
    "float" on Honaker / the factorization (no discrete sampler) and without noise (``kind`` "none")."""
    if kind != "none" and has_discrete_sampler(kind, mechanism):
        return DEFAULT_SAMPLER
    return "float"


@dataclass(frozen=True)
class ReleasePlan:
    """Everything an algorithm releases about one user (see the module comment)."""

    algorithm: str
    title: str
    model: str
    noise: str | None
    H: int
    capacity: int
    mechanism: str
    statistics: tuple[UserStatistic, ...]
    families: tuple[ReleasedFamily, ...] = field(default=())
    #: the noise samplers: "discrete" (exact discrete laws on the lattice scale * 2^-grid_bits,
    #: accounted as such, see the module comment) or "float" (the continuous laws); the lattice is
    #: the finest the exact samplers allow (privrl.kernels.DEFAULT_GRID_BITS = 24: the rounding
    #: costs ~ 2^-24 of the scale, and sums up to 2^28 scales stay exact). None: the agents' rule,
    #: :func:`default_sampler` of (model, mechanism).
    sampler: str = None  # type: ignore[assignment]  # resolved to a str in __post_init__
    grid_bits: int = DEFAULT_GRID_BITS

    def __post_init__(self) -> None:
        """The numbers every certificate reads are checked (unchecked, grid_bits=nan made
        plan_rounding_mu NaN, capacity=0 on BLT left the rounding out, sampler='Discrete' was
        accounted as the float sampler's release): H and capacity integers >= 1, the model one of
        KINDS and its noise law (None without noise), the sampler one of SAMPLERS, grid_bits the
        calibrations' range (accounting.discrete_gaussian_draws)."""
        for name in ("H", "capacity"):
            object.__setattr__(self, name, check_pos_int(getattr(self, name), name))
        check_choice(self.model, KINDS, "model")
        if self.model != "none":
            check_choice(self.noise, ("gaussian", "laplace"), "noise")
        elif self.noise is not None:
            raise PrivacyParameterError(f"noise must be None for model 'none', got {self.noise!r}")
        object.__setattr__(self, "grid_bits", check_int(self.grid_bits, "grid_bits", 0, 64))
        if self.sampler is None:
            object.__setattr__(self, "sampler", default_sampler(self.model, self.mechanism))
        check_choice(self.sampler, SAMPLERS, "sampler")
        if self.sampler != "discrete" and self.grid_bits != DEFAULT_GRID_BITS:  # it was ignored
            raise PrivacyParameterError(
                f"grid_bits applies to the discrete sampler only; sampler={self.sampler!r} has no "
                f"lattice, got grid_bits={self.grid_bits!r} (leave it at its default {DEFAULT_GRID_BITS})"
            )

    def statistic(self, name: str) -> UserStatistic:
        for s in self.statistics:
            if s.name == name:
                return s
        raise PrivacyParameterError(  # a bare KeyError before
            f"the plan has no statistic {name!r}; its statistics: {[s.name for s in self.statistics]}"
        )

    def family(self, name: str) -> ReleasedFamily:
        for f in self.families:
            if f.name == name:
                return f
        raise PrivacyParameterError(
            f"the plan has no released family {name!r}; its families: {[f.name for f in self.families]}"
        )

    @property
    def scale_keys(self) -> tuple[str, ...]:
        """The calibration keys of the noise scales, in release order (no duplicates)."""
        return tuple(dict.fromkeys(f.scale_key for f in self.families))

    def ratios(self) -> dict[str, float]:
        """The noise scales at a common multiplier of 1 (the paper's ratios between families)."""
        return {f.scale_key: f.scale_ratio for f in self.families}

    def with_statistic(self, name: str, **changes: Any) -> ReleasePlan:
        """A copy with one statistic's bounds changed (tests and what-if reports)."""
        old = self.statistic(name)
        new = replace(old, **changes)  # its bounds checked by UserStatistic
        return replace(self, statistics=tuple(new if s is old else s for s in self.statistics))


def check_is_plan(plan: Any, alternative: str = "") -> None:
    """TypeError unless ``plan`` is a ReleasePlan (another object failed deep inside with a bare
    AttributeError: tight_scales('x'), plan_mu('x', ...): 'str' object has no attribute ...)."""
    if not isinstance(plan, ReleasePlan):
        raise TypeError(f"plan must be a ReleasePlan{alternative}, got {plan!r}")


def _check_is_family(f: Any, name: str = "f") -> None:
    """TypeError unless ``f`` is a ReleasedFamily (law_factor('x') was a bare AttributeError)."""
    if not isinstance(f, ReleasedFamily):
        raise TypeError(f"{name} must be a ReleasedFamily, got {f!r}")


def check_plan(plan: Any, algorithms: tuple[str, ...], kind: str, pure: bool, H: int) -> None:
    """A release ``plan`` given to a calibration must be one of its algorithm, privacy model, noise
    law and H (None: the calibration builds its own). Another one was calibrated as if it were the
    algorithm's: an LDP plan under a JDP calibration certified the tree's ``log K`` releases per
    user as one, another H's statistics set the noise of these, and another algorithm's plan failed
    with a bare KeyError or AttributeError. The calibrations' side of the report's check
    (``privrl.audit.report``: a plan given with a calibration must fit it)."""
    if plan is None:
        return
    check_is_plan(plan, " or None")
    noise = None if kind == "none" else ("laplace" if pure else "gaussian")
    pairs = {
        "algorithm": (plan.algorithm, algorithms),
        "model": (plan.model, (kind,)),
        "noise": (plan.noise, (noise,)),
        "H": (plan.H, (H,)),
    }
    refuse_unfit(pairs)


def check_plan_shape(plan: ReleasePlan, own: ReleasePlan) -> None:
    """A given ``plan`` must release what ``own`` (the plan the calibration builds from its own
    K, d, batches) releases: the mechanisms' capacity, the statistics' dimensions, each family's
    site, instances and draws per user. One of another K (d) was taken: a JDP UCRL-VTR calibration
    at K = 1000 given the K = 8 plan counted 4 tree nodes per user, not 10, and was certified as
    (4, 1e-5)-JDP with sigma_B 24.46 for the 38.68 that needs. The statistics' bounds may differ
    (:meth:`ReleasePlan.with_statistic`: a what-if is the user's stated claim), and so may the
    capacity of a plan without continual-release mechanisms (LDP, PSRL: a user's draws do not
    depend on it; an audit of the LDP randomizer at K = 1 takes the agent's K = 1000 plan)."""
    check_is_plan(plan)
    if not isinstance(own, ReleasePlan):
        raise TypeError(f"own must be a ReleasePlan, got {own!r}")
    trees = any(f.site == "tree" for f in own.families)
    (dims, fams), (own_dims, own_fams) = (
        (tuple(s.dim for s in p.statistics), tuple((f.site, f.instances, f.draws) for f in p.families))
        for p in (plan, own)
    )
    refuse_unfit(
        {
            "capacity": (plan.capacity, (own.capacity if trees else plan.capacity,)),
            "statistic dims": (dims, (own_dims,)),
            "families (site, instances, draws)": (fams, (own_fams,)),
        }
    )


def refuse_unfit(pairs: Mapping[str, tuple[Any, tuple]]) -> None:
    """The plan checks' one refusal: each ``name: (plan's value, the values the calibration
    allows)`` whose value is not allowed named in one PrivacyParameterError."""
    wrong = [
        f"{k} {p!r} (calibration: {' or '.join(map(repr, ok))})"
        for k, (p, ok) in pairs.items()
        if p not in ok
    ]
    if wrong:
        raise PrivacyParameterError(f"the release plan does not fit the calibration: plan {', '.join(wrong)}")


def law_factor(f: ReleasedFamily) -> float:
    """Mahalanobis factor of the noise law: ``c/2`` for the symmetric matrix law
    ``(Z' + Z'^T)/c`` (``||D||_F`` in units of the entry scale becomes ``(c/2) ||D||_F``), 1 for
    vectors (i.i.d. entries)."""
    _check_is_family(f)
    return _law_factor(f)


def _law_factor(f: ReleasedFamily) -> float:
    if f.is_matrix and f.sym_divisor is not None:
        return f.sym_divisor / 2.0
    return 1.0


@dataclass(frozen=True)
class WorstCase:
    """The worst pair of neighbouring users for one statistic: ``value`` is mu^2 of one step
    (``sum_f m_f^2 l_f^2 ||Delta_f||^2 / s_f^2``); ``x, y`` and ``x_prime, y_prime`` realise it."""

    value: float
    x: np.ndarray
    y: float
    x_prime: np.ndarray
    y_prime: float


def _weights(plan: ReleasePlan, stat: UserStatistic, scales: Mapping[str, float]) -> tuple[float, float]:
    """(W_outer, W_scaled): the summed m^2 l^2 / s^2 of the statistic's outer and scaled families."""
    wo = ws = 0.0
    for f in plan.families:
        if f.statistic != stat.name:
            continue
        w = _sq(f.multiplier * _law_factor(f) / scales[f.scale_key])  # 1e-200 ** 2 underflowed to 0
        if f.is_matrix:
            wo += w
        else:
            ws += w
    return wo, ws


def statistic_worst_case(plan: ReleasePlan, name: str, scales: Mapping[str, float]) -> WorstCase:
    """Exact worst case over neighbouring users of one step's joint release for statistic ``name``
    (see the module comment), with the noise scales ``scales`` (calibration key -> scale).

    A ``nonnegative`` statistic restricts the cosine to c in [0, 1]: for x, x' >= 0 entrywise
    ``<x, x'> >= 0``, and every c in [0, 1] is reached by x = a R e_1, x' = b R (c e_1 +
    sqrt(1 - c^2) e_2), both >= 0 (R = x_bound; in one dimension only c = 1), so the maximum over
    the restricted box is still exact. g is concave quadratic in c, so c* = -S y y' / (2 A a b)
    clipped to [0, 1]; with y y' >= 0 it is c* = 0: orthogonal users, ``||x - x'||^2 <= ||x||^2 +
    ||x'||^2 <= 2 R^2`` instead of ``4 R^2`` at x' = -x (a scaled family's mu falls by sqrt 2; an
    outer family's ``a^4 + b^4 - 2 a^2 b^2 c^2`` is worst at c = 0 either way). PSRL's counts and
    reward sums (R^2 = 2 m H, y = 1): ``||x - x'||^2 <= 4 m H``, mu = 2 sqrt(m H) / sigma."""
    checked = _checked_scales(plan, scales)
    stat = plan.statistic(name)
    wo, ws = _weights(plan, stat, checked)
    R = stat.x_bound
    A, S = wo * _sq(_sq(R)), ws * _sq(R)  # products: x_bound = 1e308 raised OverflowError in R**4
    if not all(math.isfinite(v) for v in (A, S * _sq(stat.y_low), S * _sq(stat.y_high))):
        raise PrivacyParameterError(
            f"the worst case of statistic {name!r} overflows a double (x_bound = {R:g}, y in "
            f"[{stat.y_low:g}, {stat.y_high:g}]): bounds this large protect nothing"
        )
    c_low = 0.0 if stat.nonnegative else -1.0
    value, (a, b, c, y, yp) = maximise(A, S, stat.y_low, stat.y_high, stat.dim >= 2, c_low)
    x = np.zeros(stat.dim)
    xp = np.zeros(stat.dim)
    x[0] = a * R
    xp[0] = b * R * c
    if stat.dim >= 2:
        xp[1] = b * R * math.sqrt(max(0.0, 1.0 - c * c))
    return WorstCase(value, x, y, xp, yp)


def _sq(x: float) -> float:
    return float(x) * float(x)


def _checked_scales(plan: ReleasePlan, scales: Mapping[str, float], law: str = "") -> dict[str, float]:
    """The plan's noise scales from ``scales`` (key -> scale; other keys ignored), each a real > 0 (a
    missing key was a bare KeyError, a zero scale a ZeroDivisionError), of a plan of noise ``law``."""
    check_is_plan(plan)
    if law and plan.noise not in (law, None):  # plan_mu of a Laplace plan: a release it never makes
        raise PrivacyParameterError(f"plan noise {plan.noise!r}: this function measures {law} noise")
    if not isinstance(scales, Mapping):
        raise TypeError(
            f"scales must be a mapping of calibration key -> noise scale, got {type(scales).__name__}"
        )
    missing = [k for k in plan.scale_keys if k not in scales]
    if missing:
        raise PrivacyParameterError(
            f"scales has no noise scale for {missing} (the plan's keys: {list(plan.scale_keys)})"
        )
    return {k: check_positive_real(scales[k], f"scales[{k!r}]") for k in plan.scale_keys}


def plan_mu(plan: ReleasePlan, scales: Mapping[str, float]) -> float:
    """The GDP parameter of the whole Gaussian release of one user: every step, every statistic."""
    scales = _checked_scales(plan, scales, "gaussian")
    total = 0.0
    for stat in plan.statistics:
        fams = [f for f in plan.families if f.statistic == stat.name]
        if fams:
            total += fams[0].instances * statistic_worst_case(plan, stat.name, scales).value
    if not math.isfinite(total):
        raise PrivacyParameterError(
            "the release's mu^2 overflows a double: noise scales this small protect nothing"
        )
    return math.sqrt(total)


def _rounded_draws(plan: ReleasePlan, f: ReleasedFamily) -> float:
    """How many rounded draws one user's data enters in family ``f``: a tree's nodes (one rounded
    leaf in every node), one user-side or per-release draw each, every one of the T encoded entries
    of a general encoder (BLT)."""
    if f.draws is not None:
        return float(f.multiplier**2) if f.site != "user" else 1.0
    return float(plan.capacity)


def rounding_per_draw(plan: ReleasePlan, f: ReleasedFamily) -> float:
    """One draw's rounding term for the discrete samplers (0 for "float"), in the units of the
    accounting: for the discrete Gaussian the whitened norm of a lattice step in every entry,
    ``2^-k sqrt(n)`` for an n-vector and ``2^-k (c/2) d`` for the symmetric d x d law
    ``(Z' + Z'^T)/c`` (entries of variance 2 s^2/c^2 off and 4 s^2/c^2 on the diagonal); for the
    discrete Laplace the L1 epsilon of a lattice step in every entry, ``n 2^-k`` and, for a
    matrix, ``2^-k (c/2) d^2`` (a symmetric release of the full-matrix law with the diagonal on
    twice the lattice unit, privrl's rounding)."""
    check_is_plan(plan)
    _check_is_family(f)
    return _rounding_per_draw(plan, f)


def _rounding_per_draw(plan: ReleasePlan, f: ReleasedFamily) -> float:
    if plan.sampler != "discrete":
        return 0.0
    step = 2.0**-plan.grid_bits
    d = plan.statistic(f.statistic).dim
    c = f.sym_divisor if f.is_matrix and f.sym_divisor is not None else 2.0
    if plan.noise == "laplace":
        return step * (c / 2.0) * d * d if f.is_matrix else step * d
    return step * (c / 2.0) * d if f.is_matrix else step * math.sqrt(d)


def plan_rounded_draws(plan: ReleasePlan) -> float:
    """How many rounded draws one user's data enters over the whole release (every family's
    instances): what the discrete samplers' rounding grows with (H, K through the mechanism)."""
    check_is_plan(plan)
    return sum((f.instances * _rounded_draws(plan, f) for f in plan.families), 0.0)  # no family: 0.0


def plan_rounding_mu(plan: ReleasePlan) -> float:
    """mu_rounding of the discrete Gaussian release (module comment): the whole release is
    (plan_mu + plan_rounding_mu)-sensitive in whitened norm; 0 for the float samplers."""
    check_is_plan(plan)
    return math.sqrt(
        sum(f.instances * _rounded_draws(plan, f) * _rounding_per_draw(plan, f) ** 2 for f in plan.families)
    )


def plan_rounding_epsilon(plan: ReleasePlan) -> float:
    """The discrete Laplace release's epsilon added by the rounding (simple composition of every
    rounded draw's lattice step); 0 for the float samplers."""
    check_is_plan(plan)
    return sum((f.instances * f.l1_multiplier * _rounding_per_draw(plan, f) for f in plan.families), 0.0)


def plan_pure_epsilon(plan: ReleasePlan, scales: Mapping[str, float]) -> float:
    """Simple composition of the Laplace releases of one user: ``sum_f instances * draws * L1_f / b_f``."""
    scales = _checked_scales(plan, scales, "laplace")
    return sum(
        (f.instances * f.l1_multiplier * f.l1_sensitivity / scales[f.scale_key] for f in plan.families), 0.0
    )

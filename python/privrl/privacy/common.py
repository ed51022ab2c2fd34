"""What every calibration shares: the typed result base class, the privacy-argument checks and the
generic tight calibration of a release plan.

Paper: Luyo et al., Cor. 1-2, App. C-D (the parameters each calibration returns); the tight calibration
searches the one free noise multiplier of a plan until the accountant meets (eps, delta), as
dp-accounting's `calibrate_dp_mechanism` does for a `DpEvent`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from privrl.common.checks import (
    check_choice,
    check_delta_open,
    check_delta_pure_ok,
    check_epsilon,
    check_user_epsilon,
    did_you_mean,
    is_integer,
)
from privrl.common.errors import PrivacyParameterError
from privrl.kernels.continual import DISCRETE_MECHANISMS
from privrl.privacy.accounting import discrete_gaussian_draws, discrete_gaussian_mu, gaussian_mu, zcdp_mu
from privrl.privacy.plans import (
    DEFAULT_SAMPLER,
    KINDS,
    SAMPLERS,
    ReleasePlan,
    check_is_plan,
    default_sampler,
    has_discrete_sampler,
    plan_mu,
    plan_pure_epsilon,
    plan_rounded_draws,
    plan_rounding_epsilon,
    plan_rounding_mu,
)

__all__ = [
    "CALIBRATIONS",
    "KINDS",
    "SAMPLERS",
    "check_sampler",
    "check_sampler_for",
    "resolve_sampler",
    "DEFAULT_SAMPLER",
    "sampler_fields",
    "node_noise",
    "plan_target",
    "paper_lattice_factor",
    "Calibration",
    "check_calibration",
    "check_kind",
    "in_theorem_regime",
    "privacy_args",
    "tight_scales",
]

#: "paper": the noise scales of the corollaries; "tight": the smallest noise of the same release
#: plan for (eps, delta) under the tight accountant; "practical": the tight noise with sharp
#: regret-side constants (privrl.privacy.practical); "adaptive": the same tight noise as
#: "practical" with the adaptive regret side (privrl.privacy.adaptive: honest widths, the support
#: clip; UCRL-VTR / UCRL-VTR+).
CALIBRATIONS = ("paper", "tight", "practical", "adaptive")
#: The calibration of every public entry that takes one (privacy models, agents, calibrate_*).
DEFAULT_CALIBRATION = "adaptive"
#: The calibrations whose noise is the tight one and whose release is post-processed per release
#: (privrl.privacy.practical's bounds): the practical rule and the adaptive one.
PRACTICAL_RULES = ("practical", "adaptive")
# SAMPLERS (the noise samplers) and KINDS (the privacy models): privrl.privacy.plans' (a plan checks its own).

T = TypeVar("T", bound="Calibration")


@dataclass(frozen=True, kw_only=True)
class Calibration:
    """The parameters an algorithm runs with, under the paper's names (typed fields, read as
    attributes: ``cal.sigma_B``); ``replace(**changes)`` returns a modified copy, ``to_dict()``
    the fields as a dict (manifests, reports).

    Shared fields: ``algorithm``, ``kind`` (none / jdp / ldp), ``pure`` (delta = 0: Laplace),
    ``calibration`` (paper / tight), ``epsilon``, ``delta``, ``p`` (regret failure probability),
    ``H``, ``K``, ``d``, ``noise`` (gaussian / laplace / None), ``sym_divisor`` (matrix noise
    ``(Z' + Z'^T)/sym_divisor``), ``mechanism`` (continual release of the JDP server),
    ``in_theorem_regime`` (eps, delta in the corollaries' range), the profile of a non-tree
    mechanism (``mechanism_capacity``, ``mechanism_l2_multiplier``,
    ``mechanism_max_variance_factor``), once an agent uses it ``beta_used`` / ``beta_scale``, and
    the regret side's ``release_rule`` ("paper": the theorem's constant shift and radius;
    "practical": the per-release rule of privrl.privacy.practical with shift ``shift_mult *
    Upsilon_t``, and for UCRL-VTR / UCRL-VTR+ the ridge's ``centre``: "feasible" or "zero").
    """

    algorithm: str
    kind: str
    pure: bool
    calibration: str
    epsilon: float | None
    delta: float | None
    p: float
    H: int
    K: int
    d: int
    noise: str | None = None
    sym_divisor: float | None = None
    mechanism: str = "tree"
    in_theorem_regime: bool = True
    mechanism_capacity: int | None = None
    mechanism_l2_multiplier: float | None = None
    mechanism_max_variance_factor: float | None = None
    beta_used: float | None = None
    beta_scale: float | None = None
    release_rule: str = "paper"
    shift_mult: float = 0.0
    centre: str | None = None
    sampler: str | None = None
    grid_bits: int | None = None

    @property
    def node_noise(self) -> str:
        """The noise law the mechanisms draw with (privrl.kernels names): the family ("gaussian"
        / "laplace") or its exact discrete sampler ("discrete_gaussian" / ...), "none"."""
        return node_noise(self.noise, self.sampler)

    @classmethod
    def _names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    def replace(self: T, **changes: Any) -> T:
        """A copy with ``changes`` applied (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self._names()}

    def target(self) -> tuple[float, float]:
        """The (epsilon, delta) this private calibration was made for (refused when non-private)."""
        if self.epsilon is None or self.delta is None:
            raise PrivacyParameterError(
                f"a non-private {self.algorithm} calibration has no target (eps, delta)"
            )
        return self.epsilon, self.delta

    def scale(self, key: str) -> float:
        """The noise scale ``key`` (``sigma_B``, ``sigma_u``, ...) of a private calibration."""
        value = getattr(self, key)
        if value is None:
            raise PrivacyParameterError(f"this {self.algorithm} calibration has no noise scale {key}")
        return float(value)


def check_kind(kind: Any, allowed: tuple[str, ...] = KINDS) -> str:
    return check_choice(kind, allowed, "kind")


def check_sampler(sampler: Any) -> str:
    return check_choice(sampler, SAMPLERS, "sampler")


def check_sampler_for(kind: str, mechanism: str, sampler: Any) -> str:
    """``sampler`` checked against the server's mechanism (a clear error for a discrete sampler on
    a mechanism that has none)."""
    sampler = check_sampler(sampler)
    if sampler == "discrete" and not has_discrete_sampler(kind, mechanism):
        raise PrivacyParameterError(
            f"mechanism {mechanism!r} has no discrete (secure) sampler (only {DISCRETE_MECHANISMS} do); "
            "pass sampler='float' to run it with the continuous laws"
        )
    return sampler


def resolve_sampler(kind: str, mechanism: str, sampler: Any = None) -> str:
    """The sampler a release draws with: ``sampler`` checked against the mechanism, or for None
    the default, DEFAULT_SAMPLER ("discrete") wherever the mechanism has it (tree, BLT, the LDP
    randomizer) and "float" otherwise (Honaker, the factorization) or without noise. The one
    rule behind every public ``sampler=None``: the privacy models, the calibrations, the release
    plans, the reports and the audits."""
    if sampler is None:
        sampler = default_sampler(kind, mechanism)
    return check_sampler_for(kind, mechanism, sampler)


def sampler_fields(plan: ReleasePlan, kind: str) -> dict[str, Any]:
    """The calibration's ``sampler`` / ``grid_bits``, read from its release plan (None: no noise)."""
    check_is_plan(plan)
    if kind == "none":
        return {"sampler": None, "grid_bits": None}
    return {"sampler": plan.sampler, "grid_bits": plan.grid_bits if plan.sampler == "discrete" else None}


def node_noise(noise: str | None, sampler: str | None) -> str:
    """The kernels' noise name for a family ``noise`` drawn by ``sampler``."""
    if noise is None:
        return "none"
    return f"discrete_{noise}" if sampler == "discrete" else noise


def _plan_budget(plan: Any, epsilon: Any, delta: Any) -> tuple[float, float]:
    """(epsilon, delta) given with a ``plan`` to the tight tools: epsilon > 0, delta in (0, 1) for a
    Gaussian plan, in [0, 1) for a Laplace one (pure DP reads none). Unchecked, tight_scales(plan,
    None, 0.0) raised a bare TypeError from inside, an array epsilon or delta "unhashable type"
    (its cache), epsilon=True was read as 1, and plan_target('x', ...) a bare AttributeError."""
    check_is_plan(plan)
    dlt = check_delta_pure_ok(delta) if plan.noise == "laplace" else check_delta_open(delta)
    return check_epsilon(epsilon), dlt


def plan_target(plan: ReleasePlan, epsilon: float, delta: float) -> float:
    """What the plan's own sensitivity may reach at (eps, delta): for Gaussian noise the GDP
    ``mu`` (float samplers: the exact curve, Balle & Wang 2018; discrete: the better of the same
    curve through :func:`~privrl.privacy.accounting.discrete_gaussian_mu` and zCDP, Canonne,
    Kamath & Steinke 2020, less the rounding's ``plan_rounding_mu``); for Laplace the epsilon
    (less the rounding's ``plan_rounding_epsilon``). A PrivacyParameterError when the rounding
    alone uses the budget (fewer grid bits cannot help; a larger epsilon does). The discrete
    Gaussian's draw summary is :func:`~privrl.privacy.accounting.discrete_gaussian_draws`."""
    epsilon, delta = _plan_budget(plan, epsilon, delta)
    if plan.noise == "laplace":
        target, rounding = epsilon, plan_rounding_epsilon(plan)
    elif plan.sampler == "discrete":
        rounding = plan_rounding_mu(plan)
        direct = discrete_gaussian_mu(epsilon, delta, *discrete_gaussian_draws(rounding, plan.grid_bits))
        target = max(direct, zcdp_mu(epsilon, delta))
    else:
        return gaussian_mu(epsilon, delta)
    if target - rounding <= 0.0:
        raise PrivacyParameterError(
            f"the lattice rounding of the discrete samplers alone ({rounding:.3g}) exceeds the budget "
            f"({target:.3g}) at epsilon={epsilon}: the rounding grows with the rounded draws one user's "
            f"data enters ({plan_rounded_draws(plan):,.0f} here, set by H, K and the mechanism); use "
            f"sampler='float', a larger epsilon or fewer episodes"
        )
    return target - rounding


def paper_lattice_factor(plan: ReleasePlan, epsilon: float) -> float:
    """The paper's pure-DP Laplace scales under the discrete sampler: their simple composition
    reaches epsilon exactly, and the lattice rounding adds ``plan_rounding_epsilon``; scaling every
    b by ``eps / (eps - eps_rounding)`` gives it back (1 for Gaussian noise or the float sampler:
    the paper's Gaussian scales are checked by the report's accountant, not adjusted)."""
    check_is_plan(plan)
    if plan.sampler != "discrete" or plan.noise != "laplace":
        return 1.0
    return epsilon / plan_target(plan, epsilon, 0.0)


def check_batch_count(batches: Any, K: int, names: tuple[str, ...]) -> int:
    """An agent's explicit batch count B, an int in [1, K]; `names` are the schedules it also takes
    by name (named in the message, with a did-you-mean hint for a misspelt one)."""
    if not is_integer(batches):
        hint = did_you_mean(batches, names) if isinstance(batches, str) else ""
        raise PrivacyParameterError(
            f"batches must be {', '.join(map(repr, names))} or an int in [1, K], got {batches!r}"
            + (f"; {hint.strip()}" if hint else "")
        )
    B = int(batches)
    if not (1 <= B <= K):
        raise PrivacyParameterError(f"batches must be an int in [1, K={K}], got {batches!r}")
    return B


def check_calibration(calibration: Any, allowed: tuple[str, ...] = CALIBRATIONS) -> str:
    return check_choice(calibration, allowed, "calibration")


def privacy_args(kind: str, epsilon: Any, delta: Any) -> tuple[float | None, float | None, bool]:
    """Validate (epsilon, delta) for ``kind``; returns (epsilon, delta, pure)."""
    if kind == "none":
        eps = None if epsilon is None else check_user_epsilon(epsilon)
        dlt = None if delta is None else check_delta_pure_ok(delta)
        return eps, dlt, False
    if epsilon is None:
        raise PrivacyParameterError(f"epsilon is required for kind={kind!r}, got None")
    eps = check_user_epsilon(epsilon)
    if delta is None:
        raise PrivacyParameterError(f"delta is required for kind={kind!r} (0 for pure DP), got None")
    dlt = check_delta_pure_ok(delta)
    return eps, dlt, dlt == 0.0


def in_theorem_regime(kind: str, eps: float | None, dlt: float | None, pure: bool) -> bool:
    """The corollaries / theorems are stated for ``eps, delta in (0, 1)``; the pure-DP variants
    (delta = 0) are remarks built on the same corollaries, flagged on ``eps < 1`` only."""
    if kind == "none" or eps is None:
        return True
    if pure:
        return eps < 1.0
    return eps < 1.0 and dlt is not None and 0.0 < dlt < 1.0


def tight_scales(plan: ReleasePlan, epsilon: float, delta: float) -> dict[str, float]:
    """The smallest noise scales of ``plan`` that make the whole release (eps, delta)-DP.

    Gaussian (delta > 0): the release is mu-GDP with mu proportional to 1/t when every scale is
    ``ratio * t`` (plans.plan_mu, the exact joint worst case of every step; the plan's ratios are
    the paper's), so t is the value at which mu equals ``gaussian_mu(eps, delta)`` (Balle & Wang
    2018, Thm. 8: the exact (eps, delta) curve; for the discrete samplers the zCDP level of
    Canonne, Kamath & Steinke 2020 less the lattice rounding, :func:`plan_target`). Then, family
    by family in release order, a scale is lowered for as long as mu does not move
    (:func:`_pareto_tighten`): at the worst pair of users some families may not change at all
    (Alg. 2: phi' = -phi leaves phi phi^T unchanged), and their noise buys no privacy there.
    Laplace (delta = 0): simple composition, epsilon proportional to 1/t (every family counts,
    nothing to lower; discrete: less the rounding)."""
    return dict(_tight_scales(plan, *_plan_budget(plan, epsilon, delta)))


@functools.lru_cache(maxsize=256)
def _tight_scales(plan: ReleasePlan, epsilon: float, delta: float) -> tuple[tuple[str, float], ...]:
    ratios = plan.ratios()
    target = plan_target(plan, epsilon, delta)
    if plan.noise == "laplace":
        t = plan_pure_epsilon(plan, ratios) / target
        scales = _at_most(lambda s: plan_pure_epsilon(plan, s), {k: r * t for k, r in ratios.items()}, target)
        return tuple(scales.items())
    t = plan_mu(plan, ratios) / target
    return tuple(_pareto_tighten(plan, {k: r * t for k, r in ratios.items()}, target).items())


def _at_most(measure: Callable[[dict[str, float]], float], scales: dict[str, float], target: float) -> dict:
    """`scales` raised by 2^-50 (relative) steps until their composed loss (epsilon or mu, which
    falls as they grow) is at most `target`: the division reaches the target only up to rounding,
    and a composition one ulp above it certified delta = 1 at the target epsilon."""
    for _ in range(64):
        if measure(scales) <= target:
            break
        scales = {k: v * (1.0 + 2.0**-50) for k, v in scales.items()}
    return scales


def _pareto_tighten(plan: ReleasePlan, scales: dict[str, float], target: float) -> dict[str, float]:
    """Lower each scale to the smallest factor (bisection in log scale, 40 steps) that keeps
    ``plan_mu <= target`` exactly (the scales given reach it up to rounding: raised to meet it
    before a scale is lowered); a scale whose family moves at the worst case stays."""
    tol = target

    def mu_at(key: str, f: float) -> float:
        return plan_mu(plan, {**scales, key: scales[key] * f})

    for key in plan.scale_keys:
        if mu_at(key, 0.999) > target * (1.0 + 1e-12):
            continue  # the family moves at the worst case: its noise is needed
        scales = _at_most(lambda s: plan_mu(plan, s), scales, target)
        lo, hi = math.log(1e-6), math.log(0.999)
        for _ in range(40):
            mid = 0.5 * (lo + hi)
            if mu_at(key, math.exp(mid)) <= tol:
                hi = mid
            else:
                lo = mid
        scales = {**scales, key: scales[key] * math.exp(hi)}
    return scales

"""What a calibration sets on the regret side of the privacy report (never the privacy), what the
guarantee does not cover (the simulation-only outputs), and the warning a report gives when the
tight accountant finds the release above its target."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from privrl.common.checks import check_nonneg_real
from privrl.common.errors import PrivacyParameterError, PrivacyWarning
from privrl.common.kinds import is_choice
from privrl.privacy.common import PRACTICAL_RULES, Calibration

#: Outputs of a simulated run that the (eps, delta) guarantee does not cover: the privacy report
#: and every results manifest carry this label.
SIMULATION_ONLY = {
    "outputs": ["regret", "return", "cum_return", "final_regret", "clip_count"],
    "note": "simulation-only outputs, computed from the users' raw data and the exact model: NOT "
    "private (the (eps, delta) guarantee covers only what the agents release: the noisy statistics "
    "and the policies built from them). Do not publish them as private results.",
}

#: Relative excess of the tight (eps, delta) over the target that is round-off of the accountant's
#: inversion (about 2e-8 at eps <= 1e-3, delta >= 0.1), not an overrun.
OVERRUN_TOL = 1e-6


#: The algorithms a privacy report reads (privrl.audit.report.ALGORITHMS).
ALGORITHMS = ("ucrl_vtr", "ucrl_vtr_plus", "lsvi_ucb", "linucb", "psrl")


def check_calibration_of(algorithm: Any, cal: Any) -> None:
    """``cal`` must be a privrl Calibration of ``algorithm`` (one of :data:`ALGORITHMS`): the one
    check of the report's public entries (privacy_report_from_calibration, plan_of, regret_side).
    regret_side read any object by getattr with defaults: regret_side("x", cal) and
    regret_side("ucrl_vtr", None) returned the paper rule's fields (None radius, constant shift),
    plan_of("x", cal) raised a bare KeyError, plan_of("psrl", a UCRL-VTR calibration) a bare
    AttributeError; another algorithm's calibration failed inside plan_of the same way."""
    if not is_choice(algorithm, ALGORITHMS):
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    if not isinstance(cal, Calibration):
        raise TypeError(f"cal must be a privrl Calibration, got {type(cal).__name__}")
    if cal.algorithm != algorithm:
        raise ValueError(
            f"cal is a calibration of {cal.algorithm!r}, not of {algorithm!r}: "
            f"pass algorithm={cal.algorithm!r}"
        )


#: The keys of every privacy report (privrl.audit.report.privacy_report_from_calibration).
REPORT_KEYS: tuple[str, ...] = ("algorithm", "title", "agent", "model", "pure", "calibration", "target")
REPORT_KEYS += ("neighbouring", "mechanisms", "statistics", "paper", "tight", "within_target")


def check_report(
    value: Any, name: str = "report", keys: tuple[str, ...] = REPORT_KEYS, made_by: str = ""
) -> None:
    """``value`` must be a mapping with ``keys``, as ``made_by`` (default: the privacy reports)
    returns it: the formatters and the digest read it by key, and another dict (a report's "tight"
    section, {}) or object raised a bare KeyError / TypeError naming one key."""
    if not (isinstance(value, Mapping) and all(k in value for k in keys)):
        made_by = made_by or "privacy_report_from_calibration / agent.privacy_report()"
        missing = [k for k in keys if k not in value] if isinstance(value, Mapping) else "all"
        raise TypeError(
            f"{name} must be what {made_by} returns; got {type(value).__name__} (missing: {missing})"
        )


def regret_side(algorithm: str, cal: Calibration) -> dict[str, Any]:
    """What the calibration sets on the regret side (never the privacy): the rule the released
    statistics are post-processed with, the regularization, the radius and the noise bounds."""
    check_calibration_of(algorithm, cal)
    if algorithm == "psrl":
        return _psrl_side(cal)
    out: dict[str, Any] = {
        "rule": getattr(cal, "release_rule", "paper"),
        "mechanism": getattr(cal, "mechanism", "tree"),
        "radius": getattr(cal, "beta", getattr(cal, "beta_hat", None)),
        "radius_used": getattr(cal, "beta_used", None),
        "noise_bound_matrix": getattr(cal, "Upsilon", getattr(cal, "Upsilon1", None)),
        "noise_bound_vector": getattr(cal, "C", getattr(cal, "C1", None)),
    }
    if algorithm == "linucb" and out["rule"] in PRACTICAL_RULES:
        out["regularization"], out["bonus"] = _linucb_sides(cal)
    elif out["rule"] == "adaptive":
        out["regularization"], out["bonus"] = _adaptive_sides(algorithm, cal)
    elif out["rule"] == "practical":
        centre = "0 (the paper's)" if getattr(cal, "centre", None) == "zero" else "the feasible model w0"
        out["regularization"] = (
            f"per release: shift {cal.shift_mult:g} x Upsilon_t (the bound at the noise released at t), "
            "eigenvalues floored at lam" + ("" if algorithm == "lsvi_ucb" else f", ridge centred at {centre}")
        )
        out["bonus"] = (
            "beta ||phi||_{Lambda~^-1} (non-private radius)"
            if algorithm == "lsvi_ucb"
            else "sqrt(beta^2 ||phi||^2_{A^-1} + gamma_t^2 ||A^-1 phi||^2), gamma_t the privacy part"
        )
    else:
        out["regularization"] = (
            f"constant shift {getattr(cal, 'shift', getattr(cal, 'shift1', None))!r} (the theorem's)"
        )
        out["bonus"] = "beta ||phi||_{Lambda~^-1} (the theorem's radius)"
    if algorithm == "lsvi_ucb":
        out["batches"] = getattr(cal, "B", None)
    return out


def _psrl_side(cal: Calibration) -> dict[str, Any]:
    """Private tabular PSRL (privrl.agents.psrl.reference.posterior_model): no radius, no bonus; the
    billboard's noise variance per cell after the last release is ``releases sigma^2``."""
    last = cal.noise_variance(cal.releases) if cal.kind != "none" else 0.0  # type: ignore[attr-defined]
    return {
        "rule": "posterior sampling",
        "mechanism": cal.mechanism,
        "radius": None,
        "radius_used": None,
        "noise_bound_matrix": None,
        "noise_bound_vector": None,
        "regularization": "counts ~ N(released, j sigma^2) projected on the nonnegative simplex of the "
        f"released total, reward sums clipped to [0, n]; noise variance per cell {last:.4g} after the "
        "last release",
        # the priors of privrl.agents.psrl.formulas: psrl_prior (1/S) and psrl_reward_prior ((1, 0))
        "bonus": "none: one model per user, Dirichlet(1/S + N), Beta(1 + R, n - R), greedy H-step VI",
        "batches": cal.B,  # type: ignore[attr-defined]
    }


def _shift(cal: Calibration) -> str:
    if cal.kind == "none":
        return "no shift (exact statistics)"
    return f"shift {cal.shift_mult:g} x Upsilon_t (the bound at the noise released at t)"


def _linucb_sides(cal: Calibration) -> tuple[str, str]:
    """LinUCB's practical and adaptive rules (privrl.agents.linucb.agent)."""
    unit = " (beta in standard deviations)" if cal.release_rule == "adaptive" else ""
    return (
        f"per release: {_shift(cal)}, ridge lam = {getattr(cal, 'lam', 1.0):g}",
        "beta s_a(x), s_a(x)^2 = sigma_r^2 ||x||^2_{G~_a^-1} + gamma_t^2 ||G~_a^-1 x||^2" + unit,
    )


def _adaptive_sides(algorithm: str, cal: Calibration) -> tuple[str, str]:
    """The adaptive rule's regret side (privrl.privacy.adaptive)."""
    if algorithm == "lsvi_ucb":
        return (
            f"per release: {_shift(cal)}, eigenvalues floored at lam; a Gaussian posterior per step "
            "(prior N(c w1, tau^2 I)), every release of the step combined with its staleness",
            "beta ||phi||_Sigma, Sigma the posterior covariance (beta in standard deviations)",
        )
    centre = "0 (the paper's)" if getattr(cal, "centre", None) == "zero" else "the feasible model w0"
    return (
        f"per release: {_shift(cal)}, ridge lam = (max(sigma, 1/2) / D)^2 centred at {centre}, "
        "eigenvalues floored at lam",
        "per eigen-direction of the design: beta x the random error's std (statistical and released "
        "noise) + the bias bound (lam + S_t + lift) D / a, never scaled (beta in standard deviations)",
    )


# ============================================================================================
# Text form and digest
# ============================================================================================


def warn_if_over_target(report: Mapping[str, Any]) -> None:
    """PrivacyWarning when the tight accountant's (eps, delta) for the release plan exceeds the
    target (eps, delta) by more than OVERRUN_TOL: the noise released is below what the target
    needs (a hand-set sigma, a plan that does not match the calibration)."""
    target, tight = report.get("target") or {}, report.get("tight") or {}
    eps_t, dlt_t = target.get("epsilon"), target.get("delta")
    budget = tight.get("budget")
    if eps_t is None or dlt_t is None or budget is None:
        return
    eps, dlt = budget
    if eps > eps_t * (1 + OVERRUN_TOL) or dlt > dlt_t * (1 + OVERRUN_TOL) + 1e-300:
        warnings.warn(
            f"{report.get('agent') or 'this release'}: the tight accountant gives (eps, delta) = "
            f"({eps:.6g}, {dlt:.3g}) for the release plan, above the target ({eps_t:g}, {dlt_t:g})",
            PrivacyWarning,
            stacklevel=3,
        )


def check_radius(beta_scale: Any, beta: Any) -> tuple[float, float | None]:
    """An agent's ``beta_scale`` (>= 0, a multiple of the calibration's exploration radius) and
    ``beta`` (None, or the radius itself, >= 0): one of them, since beta replaces the radius that
    beta_scale multiplies (given both, beta_scale was dropped while the calibration recorded it);
    beta with the default beta_scale = 1 is taken."""
    scale = check_nonneg_real(beta_scale, "beta_scale")
    radius = None if beta is None else check_nonneg_real(beta, "beta")
    if radius is not None and scale != 1.0:
        raise PrivacyParameterError(
            f"beta replaces the exploration radius (beta = {beta!r}) and beta_scale multiplies the "
            f"calibration's (beta_scale = {beta_scale!r}): give one of them"
        )
    return scale, radius

"""The noise samplers in the privacy report: which laws are drawn, and the accounting that covers them.

"discrete" (the agents' default): exact discrete Gaussian / Laplace on the lattice
``scale * 2^-grid_bits`` (Canonne, Kamath & Steinke 2020), data rounded to it; the whole release has
whitened sensitivity ``mu + mu_rounding`` and is accounted on the continuous Gaussian's exact curve
through privrl.privacy.accounting.discrete_gaussian_mu (or zCDP, whichever is tighter), or is
``eps + eps_rounding``-DP (Laplace), see privrl.privacy.plans. "float": the continuous laws, with
the exact Gaussian (PLD) accounting, and the floating-point side channel of Mironov (2012).
"""

from __future__ import annotations

from typing import Any

from privrl.privacy.accounting import (
    discrete_gaussian_delta,
    discrete_gaussian_draws,
    discrete_gaussian_epsilon,
    zcdp_delta,
    zcdp_epsilon,
)
from privrl.privacy.plans import ReleasePlan, plan_rounding_epsilon, plan_rounding_mu

__all__ = ["discrete_tight", "format_sampler", "sampler_section", "tight_section"]


def tight_section(
    epsilon: float, delta: float, delta_at_target: float, mu: float | None, rho: float | None, method: str
) -> dict[str, Any]:
    """The report's ``tight`` entry: the budget ``(epsilon, delta)`` (``epsilon`` at the target delta),
    the delta at the target epsilon, the composed ``mu`` (also ``composed_sensitivity_over_sigma``;
    None for Laplace), the zCDP ``rho`` and how it was accounted."""
    return {
        "budget": (epsilon, delta),
        "epsilon_at_target_delta": epsilon,
        "delta_at_target_epsilon": delta_at_target,
        "mu": mu,
        "rho": rho,
        "composed_sensitivity_over_sigma": mu,
        "method": method,
    }


def sampler_section(plan: ReleasePlan) -> dict[str, Any]:
    """The report's ``sampler`` entry: name, law, lattice, accounting and the rounding's cost."""
    if plan.noise is None:
        return {"name": None, "law": "no noise", "grid_bits": None, "accounting": None, "rounding": None}
    if plan.sampler != "discrete":
        law = (
            "continuous Gaussian (Ziggurat)" if plan.noise == "gaussian" else "continuous Laplace (inversion)"
        )
        return {
            "name": "float",
            "law": law + "; exposed to the floating-point side channel (Mironov 2012)",
            "grid_bits": None,
            "accounting": "the continuous law's" + (" exact (PLD) curve" if plan.noise == "gaussian" else ""),
            "rounding": None,
        }
    gaussian = plan.noise == "gaussian"
    return {
        "name": "discrete",
        "law": (
            f"exact discrete {'Gaussian' if gaussian else 'Laplace'} (Canonne, Kamath & Steinke 2020) on the "
            f"lattice scale * 2^-{plan.grid_bits}, data rounded to it; integer arithmetic only"
        ),
        "grid_bits": plan.grid_bits,
        "accounting": (
            "the continuous Gaussian's exact curve by domination (rounded continuous Gaussian; "
            "privrl.privacy.accounting.discrete_gaussian_mu), or zCDP (CKS 2020) when tighter"
            if gaussian
            else "pure DP of the discrete Laplace (the geometric mechanism)"
        ),
        "rounding": plan_rounding_mu(plan) if gaussian else plan_rounding_epsilon(plan),
    }


def discrete_tight(plan: ReleasePlan, mu: float | None, pure_eps: float, eps_t: float, dlt_t: float) -> dict:
    """The tight accountant's entries for the discrete samplers: from the plan's ``mu`` (Gaussian)
    or simple-composition epsilon (Laplace) of the continuous accounting, add the rounding and
    account as the discrete laws are proven to compose (zCDP / pure DP)."""
    if plan.noise == "laplace":
        e = pure_eps + plan_rounding_epsilon(plan)
        method = "simple composition of the discrete Laplace draws, plus the lattice rounding"
        return tight_section(e, 0.0, 0.0 if e <= eps_t else 1.0, None, 0.5 * e * e, method)
    rounding = plan_rounding_mu(plan)
    m = float(mu or 0.0) + rounding
    rho = 0.5 * m * m
    draws = discrete_gaussian_draws(rounding, plan.grid_bits)
    e = min(zcdp_epsilon(rho, dlt_t), discrete_gaussian_epsilon(m, dlt_t, *draws))
    return tight_section(
        e,
        dlt_t,
        min(zcdp_delta(rho, eps_t), discrete_gaussian_delta(m, eps_t, *draws)),
        m,
        rho,
        "discrete Gaussian: whitened sensitivity mu + mu_rounding on the continuous Gaussian's exact "
        "curve by domination (discrete_gaussian_mu), or zCDP with rho = (mu + mu_rounding)^2 / 2 "
        "(Canonne, Kamath & Steinke 2020) when tighter; mu the joint worst case of each step "
        "(privrl.privacy.plans)",
    )


def format_sampler(s: dict[str, Any] | None) -> str:
    """The report's sampler line."""
    if not s or s.get("name") is None:
        return "  sampler: none (no noise)"
    extra = ""
    if s["rounding"] is not None:
        what = "mu" if "zCDP" in (s["accounting"] or "") else "epsilon"
        extra = f"; lattice rounding adds {what} {s['rounding']:.3g}"
    acc = f"; accounting: {s['accounting']}" if s["accounting"] else ""
    return f"  sampler: {s['name']} - {s['law']}{acc}{extra}"

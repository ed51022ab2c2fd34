"""UCRL-VTR+'s privacy (Alg. 3): what it releases, the paper's noise and radius formulas, its calibration.

Paper: Luyo et al., App. C (Alg. 3, Cor. "JDP-UCRL-VTR+" / "LDP-UCRL-VTR+", Thm. "Regret bound of Alg. 3");
pure DP as for UCRL-VTR (remark after Cor. "LDP-UCRL-VTR+", constants derived in the docstrings).
"""

# Conventions as in privrl.agents.ucrl_vtr.formulas; the failure probability per event is p/(24KH).
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from privrl.agents.ucrl_vtr.calibration import _profile_fields, _Row, mixture_entry, mixture_plan, ucrl_vtr_K0
from privrl.agents.ucrl_vtr_plus.formulas import (
    ucrl_vtr_plus_bernstein_terms,
    ucrl_vtr_plus_betas,
    ucrl_vtr_plus_betas_condition,
    ucrl_vtr_plus_C,
    ucrl_vtr_plus_C_pure,
    ucrl_vtr_plus_lambda,
    ucrl_vtr_plus_laplace_scales_jdp,
    ucrl_vtr_plus_laplace_scales_ldp,
    ucrl_vtr_plus_sigmas_jdp,
    ucrl_vtr_plus_sigmas_jdp_composed,
    ucrl_vtr_plus_sigmas_ldp,
    ucrl_vtr_plus_sigmas_ldp_composed,
    ucrl_vtr_plus_upsilon,
    ucrl_vtr_plus_upsilon_pure,
)
from privrl.common.checks import check_flag, check_pos_int
from privrl.common.errors import PrivacyParameterError
from privrl.kernels.continual import default_divisor
from privrl.privacy import practical
from privrl.privacy.bounds import check_bound_alpha
from privrl.privacy.common import (
    DEFAULT_CALIBRATION,
    Calibration,
    check_kind,
    in_theorem_regime,
    paper_lattice_factor,
    resolve_sampler,
    sampler_fields,
    tight_scales,
)
from privrl.privacy.continual import resolve_mechanism, user_entry
from privrl.privacy.plans import ReleasePlan, UserStatistic

__all__ = [
    "UCRLVTRPlusCalibration",
    "calibrate_ucrl_vtr_plus",
    "release_plan",
    "ucrl_vtr_plus_C",
    "ucrl_vtr_plus_C_pure",
    "ucrl_vtr_plus_bernstein_terms",
    "ucrl_vtr_plus_betas",
    "ucrl_vtr_plus_betas_condition",
    "ucrl_vtr_plus_lambda",
    "ucrl_vtr_plus_laplace_scales_jdp",
    "ucrl_vtr_plus_laplace_scales_ldp",
    "ucrl_vtr_plus_sigmas_jdp",
    "ucrl_vtr_plus_sigmas_jdp_composed",
    "ucrl_vtr_plus_sigmas_ldp",
    "ucrl_vtr_plus_sigmas_ldp_composed",
    "ucrl_vtr_plus_upsilon",
    "ucrl_vtr_plus_upsilon_pure",
]

TITLE = "UCRL-VTR+ (Alg. 3)"


# ============================================================================================
# The release plan and the calibration entry point
# ============================================================================================
def release_plan(
    kind: str, pure: bool, H: int, K: int, d: int, mechanism: str | None = None, sampler: str | None = None
) -> ReleasePlan:
    """What Alg. 3 releases about one user (App. C, proofs of its corollaries). Per step h two
    statistics: the weighted ``(phi_V / sigma_bar, V / sigma_bar)`` (norms <= sqrt(d) since
    ``sigma_bar^2 >= H^2/d``) feeds ``Lambda^`` (x x^T) and ``u^`` (x y); the second moments
    ``(phi_{V^2}, V^2)`` (norms <= H^2) feed ``Lambda~`` and ``u~``: 4H continual-release
    mechanisms (JDP) or 4H local releases (LDP). Separate L2 worst cases (the paper's): ``2d``
    and ``2 H^4``; L1: ``2 d^2``, ``2 d^{3/2}``, ``2 d H^4``, ``2 sqrt(d) H^4``."""
    kind, pure = check_kind(kind), check_flag(pure, "pure", PrivacyParameterError)  # "no" was Laplace
    H, K, d = check_pos_int(H, "H"), check_pos_int(K, "K"), check_pos_int(d, "d")
    mechanism = resolve_mechanism(kind, DEFAULT_CALIBRATION, pure, mechanism)  # the models' default
    sampler = resolve_sampler(kind, mechanism, sampler)
    rd = math.sqrt(d)
    first = UserStatistic(
        name="phi_V / sigma_bar, V / sigma_bar",
        x="phi_f(s_h, a_h) / sigma_bar_{k,h}, f = V_{k,h+1} (calibration 'adaptive' only: normalized "
        "over the support of (s_h, a_h) to fill [0, H])",
        y="f(s_{h+1}) / sigma_bar_{k,h}",
        dim=d,
        x_bound=rd,
        y_low=0.0,
        y_high=rd,
        source="||phi_f|| <= H, f in [0, H] and sigma_bar^2 >= H^2/d",
    )
    second = UserStatistic(
        name="phi_{V^2}, V^2",
        x="phi_{f^2}(s_h, a_h)",
        y="f^2(s_{h+1})",
        dim=d,
        x_bound=float(H) ** 2,
        y_low=0.0,
        y_high=float(H) ** 2,
        source="||phi_{f^2}|| <= ||f^2||_inf <= H^2, f^2 in [0, H^2]",
    )
    h4 = float(H) ** 4
    l2_first, l2_second = 2.0 * d, 2.0 * h4  # also the Gaussian scale ratios (the paper's)
    rows: tuple[_Row, ...] = (
        (
            "Lambda^",
            "B^1 (weighted phi_V phi_V^T)",
            first,
            "outer",
            "sigma_B1",
            l2_first,
            l2_first,
            "App. C: ||sigma_bar^-2 phi phi^T||_F <= d: 2d",
            2.0 * d * d,
            "2 ||x||_1^2 <= 2 d^2",
        ),
        (
            "u^",
            "f (weighted phi_V V)",
            first,
            "scaled",
            "sigma_f",
            l2_first,
            l2_first,
            "||sigma_bar^-2 phi V||_2 <= d: 2d",
            2.0 * d**1.5,
            "2 ||x||_1 |y| <= 2 d^{3/2}",
        ),
        (
            "Lambda~",
            "B^2 (phi_{V^2} phi_{V^2}^T)",
            second,
            "outer",
            "sigma_B2",
            l2_second,
            l2_second,
            "||phi_{V^2} phi_{V^2}^T||_F <= H^4: 2 H^4",
            2.0 * d * h4,
            "2 ||x||_1^2 <= 2 d H^4",
        ),
        (
            "u~",
            "g (phi_{V^2} V^2)",
            second,
            "scaled",
            "sigma_g",
            l2_second,
            l2_second,
            "||phi_{V^2} V^2||_2 <= H^4: 2 H^4",
            2.0 * math.sqrt(d) * h4,
            "2 ||x||_1 |y| <= 2 sqrt(d) H^4",
        ),
    )
    return mixture_plan("ucrl_vtr_plus", TITLE, kind, pure, H, K, mechanism, sampler, (first, second), rows)


@dataclass(frozen=True, kw_only=True)
class UCRLVTRPlusCalibration(Calibration):
    """Parameters of Alg. 3 under the paper's names: ``C_w``, ``lam`` (1), ``K0``, ``alpha``
    (p/24KH), ``noise_terms`` (as UCRL-VTR), ``noise_site``, ``sigma_B1`` / ``sigma_B2`` (matrix
    noise of D^1, D^2), ``sigma_f`` / ``sigma_g`` (vector noise of f, g; equal to sigma_B1, sigma_B2
    for Gaussian), ``Upsilon1``, ``Upsilon2``, ``C1``, ``C2``, ``shift1``, ``shift2`` (2 Upsilon_i),
    the radii ``beta_hat``, ``beta_check``, ``beta_tilde`` and the Thm. right-hand sides
    ``*_condition``; ``beta_check_used`` / ``beta_tilde_used`` once an agent scales them."""

    C_w: float
    lam: float
    K0: int
    alpha: float
    noise_terms: float = 0
    noise_site: str | None = None
    sigma_B1: float | None = None
    sigma_B2: float | None = None
    sigma_f: float | None = None
    sigma_g: float | None = None
    Upsilon1: float = 0.0
    Upsilon2: float = 0.0
    C1: float = 0.0
    C2: float = 0.0
    shift1: float = 0.0
    shift2: float = 0.0
    beta_hat: float = 0.0
    beta_check: float = 0.0
    beta_tilde: float = 0.0
    beta_hat_condition: float = 0.0
    beta_check_condition: float = 0.0
    beta_tilde_condition: float = 0.0
    beta_check_used: float | None = None
    beta_tilde_used: float | None = None


def calibrate_ucrl_vtr_plus(
    kind: str,
    epsilon: float | None,
    delta: float | None,
    H: int,
    K: int,
    d: int,
    C_w: float,
    p: float = 0.05,
    calibration: str = DEFAULT_CALIBRATION,
    mechanism: str | None = None,
    plan: ReleasePlan | None = None,
    sampler: str | None = None,
) -> UCRLVTRPlusCalibration:
    """All parameters of Alg. 3 for ``kind`` in ``{"none", "jdp", "ldp"}``; ``delta == 0`` selects
    pure DP. Radii are the constant values at ``k = K`` (the paper's sequences are non-decreasing).
    Non-private: Zhou et al. (2021)'s radii (the Thm. condition with ``Upsilon = C = 0``).
    ``"tight"``: the smallest noise of ``plan`` (default :func:`release_plan`) for (eps, delta),
    the paper's ratios between the four families kept; the same Upsilon, C and radii formulas."""
    args = (kind, epsilon, delta, H, K, d, C_w, p, calibration, mechanism, plan, sampler)
    return mixture_entry(_calibrate, release_plan, *args, ("ucrl_vtr_plus",))


def _calibrate(
    kind: str,
    eps: Any,
    dlt: Any,
    pure: bool,
    H: int,
    K: int,
    d: int,
    C_w: float,
    p: float,
    calibration: str,
    mechanism: str,
    plan: ReleasePlan,
) -> UCRLVTRPlusCalibration:
    lam = ucrl_vtr_plus_lambda()
    base: dict[str, Any] = dict(
        algorithm="ucrl_vtr_plus",
        kind=kind,
        pure=pure,
        calibration=calibration,
        epsilon=eps,
        delta=dlt,
        p=p,
        H=H,
        K=K,
        d=d,
        C_w=C_w,
        lam=lam,
        K0=ucrl_vtr_K0(K),
        alpha=p / (24.0 * K * H),
        mechanism=mechanism,
        in_theorem_regime=in_theorem_regime(kind, eps, dlt, pure),
        **sampler_fields(plan, kind),
    )
    if kind == "none":
        rule = practical.nonprivate_rule(calibration)
        nonprivate = ucrl_vtr_plus_betas_condition(lam, 0, 0, 0, 0, 0, 0, C_w, H, K, d, p)
        return UCRLVTRPlusCalibration(**base, **rule, **_radii(nonprivate))
    check_bound_alpha(p, 24.0 * K * H, "24 K H", K, H)
    entry = user_entry(mechanism, K) if kind == "jdp" else None
    n = K if entry is None else entry.noise_terms
    if calibration in ("tight", "practical"):  # practical: the tight noise
        sc = tight_scales(plan, eps, 0.0 if pure else dlt)
        s1, sf, s2, sg = sc["sigma_B1"], sc["sigma_f"], sc["sigma_B2"], sc["sigma_g"]
    elif pure:
        s1, sf, s2, sg = (
            ucrl_vtr_plus_laplace_scales_jdp(eps, H, K, d)
            if kind == "jdp"
            else ucrl_vtr_plus_laplace_scales_ldp(eps, H, d)
        )
        f = paper_lattice_factor(plan, eps)
        s1, sf, s2, sg = s1 * f, sf * f, s2 * f, sg * f
    else:
        s1, s2 = (
            ucrl_vtr_plus_sigmas_jdp(eps, dlt, H, K, d)
            if kind == "jdp"
            else ucrl_vtr_plus_sigmas_ldp(eps, dlt, H, d)
        )
        if entry is not None:
            s1, s2 = s1 * entry.paper_sigma_factor, s2 * entry.paper_sigma_factor
        sf, sg = s1, s2
    if not pure:
        # the bounds of a general mechanism: one draw of std sigma sqrt(max_t v(t))
        r, n_eff = (1.0, int(n)) if entry is None or entry.mechanism == "tree" else (math.sqrt(n), 1)
        u1 = ucrl_vtr_plus_upsilon(s1 * r, n_eff, d, K, H, p)
        u2 = ucrl_vtr_plus_upsilon(s2 * r, n_eff, d, K, H, p)
        c1 = ucrl_vtr_plus_C(sf * r, n_eff, d, K, H, p)
        c2 = ucrl_vtr_plus_C(sg * r, n_eff, d, K, H, p)
        noise = "gaussian"
    else:
        u1 = ucrl_vtr_plus_upsilon_pure(s1, int(n), d, K, H, p)
        u2 = ucrl_vtr_plus_upsilon_pure(s2, int(n), d, K, H, p)
        c1 = ucrl_vtr_plus_C_pure(sf, int(n), d, K, H, p)
        c2 = ucrl_vtr_plus_C_pure(sg, int(n), d, K, H, p)
        noise = "laplace"
    sym = default_divisor(noise)  # (Z' + Z'^T)/sym: App. B's sqrt(2), App. "Pure DP"'s 2
    cor = ucrl_vtr_plus_betas(lam, u1, u2, C_w, H, K, d, p)
    cond = ucrl_vtr_plus_betas_condition(lam, u1, 3.0 * u1, c1, u2, 3.0 * u2, c2, C_w, H, K, d, p)
    # Gaussian: the corollary radii (Upsilon >= C makes them satisfy the condition). Pure: the
    # corollary form when valid, else the condition (see ucrl_vtr_beta_pure).
    radii = cor if not pure else tuple(max(a, b) for a, b in zip(cor, cond, strict=True))
    if calibration == "practical":
        # the regret side (privrl.privacy.practical), for both regressions: no constant shift (the
        # per-release shift and the privacy part of the bonus are computed at every release), the
        # radii are the non-private ones (Zhou et al. 2021: the Thm.'s condition with no noise), the
        # Upsilon_i / C_i recorded are the sharp bounds at the worst release of the horizon
        # (noise_terms: the largest variance factor).
        n = float(K) if entry is None else entry.max_variance_factor
        alpha = p / (24.0 * K * H)
        (u1, c1), (u2, c2) = (
            practical.noise_bounds(practical.BoundsSpec(noise, m, v, sym, d, alpha), n)
            for m, v in ((s1, sf), (s2, sg))
        )
        shift1 = shift2 = 0.0
        radii_fields = _radii(ucrl_vtr_plus_betas_condition(lam, 0, 0, 0, 0, 0, 0, C_w, H, K, d, p))
        rule = dict(release_rule="practical", shift_mult=practical.PRACTICAL_SHIFT_MULT)
    else:
        shift1, shift2, radii_fields, rule = 2.0 * u1, 2.0 * u2, _radii(radii, cond), {}
    return UCRLVTRPlusCalibration(
        **base,
        **_profile_fields(entry),
        noise=noise,
        noise_site="tree" if kind == "jdp" else "user",
        sigma_B1=s1,
        sigma_B2=s2,
        sigma_f=sf,
        sigma_g=sg,
        sym_divisor=sym,
        noise_terms=n,
        Upsilon1=u1,
        Upsilon2=u2,
        C1=c1,
        C2=c2,
        shift1=shift1,
        shift2=shift2,
        **radii_fields,
        **rule,
    )


def _radii(radii: Any, cond: Any = None) -> dict[str, Any]:
    """The three radii (beta_hat, beta_check, beta_tilde) and their conditions (default: the radii)."""
    cond = radii if cond is None else cond
    return dict(
        beta_hat=radii[0],
        beta_check=radii[1],
        beta_tilde=radii[2],
        beta_hat_condition=cond[0],
        beta_check_condition=cond[1],
        beta_tilde_condition=cond[2],
    )

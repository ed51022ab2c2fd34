"""UCRL-VTR's privacy (Alg. 1): what it releases, the paper's noise and radius formulas, its calibration.

Paper: Luyo et al., Sec. 3, Cor. 1 (JDP), Cor. 2 (LDP), Thm. 1, App. B; pure DP: Rem. "Pure DP" and
App. "Pure DP in the UCRL-VTR Framework" (constants derived in the docstrings).
"""

# Conventions as in privrl.agents.ucrl_vtr.formulas; the failure probability per event is p/(6KH).
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from privrl.agents.ucrl_vtr.formulas import (
    ucrl_vtr_beta,
    ucrl_vtr_beta_condition,
    ucrl_vtr_beta_nonprivate,
    ucrl_vtr_beta_pure,
    ucrl_vtr_C,
    ucrl_vtr_C_jdp,
    ucrl_vtr_C_ldp,
    ucrl_vtr_C_pure,
    ucrl_vtr_K0,
    ucrl_vtr_l1_sensitivities,
    ucrl_vtr_l2_sensitivity,
    ucrl_vtr_lambda,
    ucrl_vtr_laplace_scales_jdp,
    ucrl_vtr_laplace_scales_ldp,
    ucrl_vtr_self_normalized_width,
    ucrl_vtr_shift,
    ucrl_vtr_sigma_jdp,
    ucrl_vtr_sigma_jdp_composed,
    ucrl_vtr_sigma_ldp,
    ucrl_vtr_sigma_ldp_composed,
    ucrl_vtr_upsilon,
    ucrl_vtr_upsilon_jdp,
    ucrl_vtr_upsilon_ldp,
    ucrl_vtr_upsilon_pure,
)
from privrl.common.checks import (
    check_flag,
    check_pos_int,
    check_positive_real,
    check_probability,
)
from privrl.common.errors import PrivacyParameterError
from privrl.kernels.continual import default_divisor
from privrl.privacy import practical
from privrl.privacy.accounting import gaussian_epsilon
from privrl.privacy.bounds import check_bound_alpha
from privrl.privacy.common import (
    DEFAULT_CALIBRATION,
    Calibration,
    check_calibration,
    check_kind,
    in_theorem_regime,
    paper_lattice_factor,
    privacy_args,
    resolve_sampler,
    sampler_fields,
    tight_scales,
)
from privrl.privacy.continual import resolve_mechanism, resolve_release_choices, user_entry
from privrl.privacy.mechanisms import (
    advanced_composition_budget,
    simple_composition_budget,
    tree_node_budget,
)
from privrl.privacy.plans import (
    Form,
    ReleasedFamily,
    ReleasePlan,
    Site,
    UserStatistic,
    check_plan,
    check_plan_shape,
    statistic_worst_case,
)

__all__ = [
    "UCRLVTRCalibration",
    "calibrate_ucrl_vtr",
    "release_plan",
    "ucrl_vtr_C",
    "ucrl_vtr_C_jdp",
    "ucrl_vtr_C_ldp",
    "ucrl_vtr_C_pure",
    "ucrl_vtr_K0",
    "ucrl_vtr_beta",
    "ucrl_vtr_beta_condition",
    "ucrl_vtr_beta_nonprivate",
    "ucrl_vtr_beta_pure",
    "ucrl_vtr_l1_sensitivities",
    "ucrl_vtr_l2_sensitivity",
    "ucrl_vtr_lambda",
    "ucrl_vtr_laplace_scales_jdp",
    "ucrl_vtr_laplace_scales_ldp",
    "ucrl_vtr_self_normalized_width",
    "ucrl_vtr_shift",
    "ucrl_vtr_sigma_jdp",
    "ucrl_vtr_sigma_jdp_composed",
    "ucrl_vtr_sigma_ldp",
    "ucrl_vtr_sigma_ldp_composed",
    "ucrl_vtr_upsilon",
    "ucrl_vtr_upsilon_jdp",
    "ucrl_vtr_upsilon_ldp",
    "ucrl_vtr_upsilon_pure",
]

TITLE = "UCRL-VTR (Alg. 1)"


# ============================================================================================
# (c) The release plan and the calibration entry point
# ============================================================================================
def release_plan(
    kind: str, pure: bool, H: int, K: int, d: int, mechanism: str | None = None, sampler: str | None = None
) -> ReleasePlan:
    """What Alg. 1 releases about one user (App. B, proofs of Cor. 1-2). Per step h the user's
    ``X_{k,h} = phi_{V~_{k,h+1}}(s_h, a_h)`` (``||X|| <= H``) and ``y_{k,h} = V~_{k,h+1}(s_{h+1})``
    (in ``[0, H]``; under the adaptive rule ``V~_{k,h+1}`` normalized over the pair's support to
    fill ``[0, H]``, privrl.privacy.adaptive: the same bounds) feed two families: ``X X^T`` into
    ``Lambda~_{k,h}`` and ``X y`` into ``u~_{k,h}``,
    through 2H continual-release mechanisms of capacity K (JDP: a user is one leaf) or the user's
    randomizer (LDP: one release each). Separate worst cases (the paper's): ``2 H^2`` (L2, both),
    ``2 d H^2`` / ``2 sqrt(d) H^2`` (L1, :func:`ucrl_vtr_l1_sensitivities`)."""
    kind, pure = check_kind(kind), check_flag(pure, "pure", PrivacyParameterError)  # "no" was Laplace
    H, K, d = check_pos_int(H, "H"), check_pos_int(K, "K"), check_pos_int(d, "d")
    mechanism = resolve_mechanism(kind, DEFAULT_CALIBRATION, pure, mechanism)  # the models' default
    sampler = resolve_sampler(kind, mechanism, sampler)
    stat = UserStatistic(
        name="X_{k,h}, y_{k,h}",
        x="X_{k,h} = phi_f(s_h, a_h), f = V~_{k,h+1} (calibration 'adaptive' only: "
        "H (V~_{k,h+1} - lo) / (hi - lo) over the support of (s_h, a_h))",
        y="y_{k,h} = f(s_{h+1})",
        dim=d,
        x_bound=float(H),
        y_low=0.0,
        y_high=float(H),
        source="||phi_f|| <= ||f||_inf (Asm. 2) with f in [0, H] (V~ projected on [0, H]; the adaptive "
        "rule's normalized target by construction): ||X|| <= H, y in [0, H]",
    )
    l2 = ucrl_vtr_l2_sensitivity(H)
    l1m, l1v = ucrl_vtr_l1_sensitivities(H, d)
    rows: tuple[_Row, ...] = (
        (
            "Lambda",
            "B_{k,h} (X X^T)",
            stat,
            "outer",
            "sigma_B",
            1.0,
            l2,
            "App. B: ||X X^T||_F <= H^2, neighbours differ by both terms: 2 H^2",
            l1m,
            "2 ||X||_1^2 <= 2 d H^2",
        ),
        (
            "u",
            "g_{k,h} (X y)",
            stat,
            "scaled",
            "sigma_g",
            1.0,
            l2,
            "App. B: ||X y||_2 <= H^2: 2 H^2",
            l1v,
            "2 ||X||_1 |y| <= 2 sqrt(d) H^2",
        ),
    )
    return mixture_plan("ucrl_vtr", TITLE, kind, pure, H, K, mechanism, sampler, (stat,), rows)


#: One released family of a linear-mixture plan: name, paper, statistic, form, scale key, the
#: Gaussian scale ratio (pure: the L1 sensitivity), L2 sensitivity and its source, L1 and its source.
_Row = tuple[str, str, UserStatistic, Form, str, float, float, str, float, str]


def mixture_plan(
    algorithm: str,
    title: str,
    kind: str,
    pure: bool,
    H: int,
    K: int,
    mechanism: str,
    sampler: str,
    stats: tuple[UserStatistic, ...],
    rows: tuple[_Row, ...],
) -> ReleasePlan:
    """The release plan of Alg. 1 or Alg. 3 from its ``rows``, each family released as
    :func:`release_plan` says (the matrix families symmetrized, App. B / "Pure DP")."""
    if kind == "none":
        return ReleasePlan(algorithm, title, "none", None, H, K, "tree", stats)
    site: Site
    if kind == "jdp":
        e = user_entry(mechanism, K)
        site, draws, draws_paper, mult, label = "tree", e.draws, e.draws_paper, e.multiplier, mechanism
    else:
        site, draws, draws_paper, mult, label = "user", 1, 1, 1.0, "local randomizer"
    families = tuple(
        ReleasedFamily(
            name=name,
            paper=paper,
            statistic=stat.name,
            form=form,
            site=site,
            scale_key=key,
            scale_ratio=l1 if pure else ratio,
            draws=draws,
            draws_paper=draws_paper,
            multiplier=mult,
            l2_sensitivity=l2,
            l2_source=l2s,
            l1_sensitivity=l1,
            l1_source=l1s,
            sym_divisor=default_divisor("laplace" if pure else "gaussian") if form == "outer" else None,
            mechanism=label,
            instances=H,
        )
        for name, paper, stat, form, key, ratio, l2, l2s, l1, l1s in rows
    )
    noise = "laplace" if pure else "gaussian"
    plan_mechanism = mechanism if kind == "jdp" else "tree"
    return ReleasePlan(algorithm, title, kind, noise, H, K, plan_mechanism, stats, families, sampler=sampler)


@dataclass(frozen=True, kw_only=True)
class UCRLVTRCalibration(Calibration):
    """Parameters of Alg. 1 under the paper's names: ``C_w``, ``lam`` (H^2), ``K0``, ``alpha``
    (p/6KH), ``width`` (self-normalized term of Thm. 1), ``noise_terms`` (noise draws summed in
    B_{k,h}: K0 JDP tree, the mechanism's max variance factor otherwise, K LDP, 0 non-private),
    ``noise_site`` ("tree" server prefixes / "user" local noises / None), ``node_budget`` ((eps0,
    delta0) of one draw; None for a general mechanism), ``sigma_B`` / ``sigma_g`` (matrix / vector
    noise scale; Laplace b when pure, also as ``laplace_b`` / ``laplace_b_vector``), ``Upsilon``,
    ``C`` (noise bounds), ``shift`` (2 Upsilon, added to B_{k,h}), ``ups_low`` / ``ups_high`` (the
    eigenvalue range of B_{k,h} on the good event), ``beta`` (the radius) and ``beta_condition``
    (Thm. 1's right-hand side)."""

    C_w: float
    lam: float
    K0: int
    alpha: float
    width: float
    noise_terms: float = 0
    noise_site: str | None = None
    node_budget: tuple[float, float] | None = None
    sigma_B: float | None = None
    sigma_g: float | None = None
    laplace_b: float | None = None
    laplace_b_vector: float | None = None
    Upsilon: float = 0.0
    C: float = 0.0
    shift: float = 0.0
    ups_low: float = 0.0
    ups_high: float = 0.0
    beta: float = 0.0
    beta_condition: float = 0.0


def calibrate_ucrl_vtr(
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
) -> UCRLVTRCalibration:
    """All parameters of Alg. 1 for ``kind`` in ``{"none", "jdp", "ldp"}``; ``delta == 0`` selects
    pure DP (Laplace). ``calibration="paper"`` reproduces Cor. 1 / Cor. 2 (a non-tree JDP
    ``mechanism`` gets the tree's sigma times m_M / sqrt(K0), privrl.privacy.continual);
    ``"tight"`` takes the smallest noise of the release ``plan`` (default :func:`release_plan`)
    for (eps, delta) under the tight accountant (:func:`privrl.privacy.common.tight_scales`). Both
    feed the same Upsilon, C, shift and beta formulas.
    A paper calibration is returned as the paper computes it, also outside the regime its
    formulas are stated for (eps < 1): whether its noise certifies the target is
    ``privacy_report_from_calibration(...)["within_target"]["tight"]`` (LDP at eps = 1000 does
    not); an agent built with it refuses one that does not (PrivacyParameterError)."""
    # LinUCB's release is this regression at H = 1: its calibration passes its own plan here
    args = (kind, epsilon, delta, H, K, d, C_w, p, calibration, mechanism, plan, sampler)
    return mixture_entry(_calibrate, release_plan, *args, ("ucrl_vtr", "linucb"))


_Cal = TypeVar("_Cal", bound=Calibration)


def mixture_entry(
    calibrate: Callable[..., _Cal],
    plan_of: Callable[..., ReleasePlan],
    kind: str,
    epsilon: Any,
    delta: Any,
    H: Any,
    K: Any,
    d: Any,
    C_w: Any,
    p: Any,
    calibration: Any,
    mechanism: Any,
    plan: ReleasePlan | None,
    sampler: Any,
    algorithms: tuple[str, ...],
) -> _Cal:
    """The public edge of the linear-mixture calibrations (Alg. 1 and Alg. 3): the arguments
    checked once, the mechanism, sampler and release plan resolved, then ``calibrate`` (the
    adaptive rule takes the practical noise with the adaptive regret side). ``algorithms``: the
    plans a given ``plan`` may be of (:func:`privrl.privacy.plans.check_plan`)."""
    kind = check_kind(kind)
    eps, dlt, pure = privacy_args(kind, epsilon, delta)
    H, K, d = check_pos_int(H, "H"), check_pos_int(K, "K"), check_pos_int(d, "d")
    check_plan(plan, algorithms, kind, pure, H)
    C_w = check_positive_real(C_w, "C_w")
    p = check_probability(p, "p")
    calibration = check_calibration(calibration)
    mechanism, sampler = resolve_release_choices(kind, calibration, pure, mechanism, sampler, plan)
    own = plan_of(kind, pure, H, K, d, mechanism, sampler)
    plan = own if plan is None else plan
    check_plan_shape(plan, own)
    if calibration == "adaptive":  # the practical noise, the adaptive regret side
        cal = calibrate(kind, eps, dlt, pure, H, K, d, C_w, p, "practical", mechanism, plan)
        return cal.replace(calibration="adaptive", release_rule="adaptive")
    return calibrate(kind, eps, dlt, pure, H, K, d, C_w, p, calibration, mechanism, plan)


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
) -> UCRLVTRCalibration:
    lam = ucrl_vtr_lambda(H)
    K0 = ucrl_vtr_K0(K)
    base: dict[str, Any] = dict(
        algorithm="ucrl_vtr",
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
        K0=K0,
        alpha=p / (6.0 * K * H),
        width=ucrl_vtr_self_normalized_width(H, K, d, p),
        mechanism=mechanism,
        in_theorem_regime=in_theorem_regime(kind, eps, dlt, pure),
        **sampler_fields(plan, kind),
    )
    if kind == "none":
        beta = ucrl_vtr_beta_nonprivate(C_w, H, K, d, p)
        rule = practical.nonprivate_rule(calibration)
        return UCRLVTRCalibration(**base, beta=beta, beta_condition=beta, **rule)
    check_bound_alpha(p, 6.0 * K * H, "6 K H", K, H)
    tight = calibration in ("tight", "practical")  # practical: the tight noise
    fam = plan.family("Lambda")
    entry = user_entry(mechanism, K) if kind == "jdp" else None
    n = K if entry is None else entry.noise_terms
    if tight:
        scales = tight_scales(plan, eps, 0.0 if pure else dlt)
        sigma, sigma_g = scales["sigma_B"], scales["sigma_g"]
    elif pure:
        sigma, sigma_g = (
            ucrl_vtr_laplace_scales_jdp(eps, H, K, d)
            if kind == "jdp"
            else ucrl_vtr_laplace_scales_ldp(eps, H, d)
        )
        f = paper_lattice_factor(plan, eps)
        sigma, sigma_g = sigma * f, sigma_g * f
    else:
        sigma = (
            ucrl_vtr_sigma_jdp(eps, dlt, H, K) * entry.paper_sigma_factor
            if entry is not None
            else ucrl_vtr_sigma_ldp(eps, dlt, H)
        )
        sigma_g = sigma
    if not pure:
        node_budget = _gaussian_node_budget(
            plan, fam, {"sigma_B": sigma, "sigma_g": sigma_g}, eps, dlt, tight, H, K
        )
        # the bounds of a general mechanism: one draw of std sigma sqrt(max_t v(t))
        s_eff, n_eff = (
            (sigma, int(n)) if entry is None or entry.mechanism == "tree" else (sigma * math.sqrt(n), 1)
        )
        ups = ucrl_vtr_upsilon(s_eff, n_eff, d, K, H, p)
        C = ucrl_vtr_C(s_eff * sigma_g / sigma, n_eff, d, K, H, p)
        beta = ucrl_vtr_beta(lam, ups, C_w, H, K, d, p)
        noise = "gaussian"
    else:
        draws = fam.draws if tight else fam.draws_paper
        node_budget = simple_composition_budget(eps, 0.0, 2 * H * int(draws or 1))
        ups = ucrl_vtr_upsilon_pure(sigma, int(n), d, K, H, p)
        C = ucrl_vtr_C_pure(sigma_g, int(n), d, K, H, p)
        beta = ucrl_vtr_beta_pure(lam, ups, C, C_w, H, K, d, p)
        noise = "laplace"
    sym = default_divisor(noise)  # (Z' + Z'^T)/sym: App. B's sqrt(2), App. "Pure DP"'s 2
    if calibration == "practical":
        # regret side (privrl.privacy.practical): no constant shift, the per-release shift and
        # the noise part of the bonus are computed at every release; beta is the statistical
        # width (the non-private radius), the Upsilon / C recorded are the sharp bounds at the
        # worst release of the horizon (noise_terms: the largest variance factor).
        n = float(K) if entry is None else entry.max_variance_factor
        ups, C = practical.noise_bounds(
            practical.BoundsSpec(noise, sigma, sigma_g, sym, d, p / (6.0 * K * H)), n
        )
        beta = condition = ucrl_vtr_beta_nonprivate(C_w, H, K, d, p)
        shift, low, high = 0.0, 0.0, 0.0
        rule = dict(release_rule="practical", shift_mult=practical.PRACTICAL_SHIFT_MULT)
    else:
        shift, low, high, rule = ucrl_vtr_shift(ups), ups, 3.0 * ups, {}
        condition = ucrl_vtr_beta_condition(lam, ups, 3.0 * ups, C, C_w, H, K, d, p)
    return UCRLVTRCalibration(
        **base,
        **_profile_fields(entry),
        noise=noise,
        noise_site="tree" if kind == "jdp" else "user",
        node_budget=node_budget,
        sigma_B=sigma,
        sigma_g=sigma_g,
        laplace_b=sigma if pure else None,
        laplace_b_vector=sigma_g if pure else None,
        sym_divisor=sym,
        noise_terms=n,
        Upsilon=ups,
        C=C,
        shift=shift,
        ups_low=low,
        ups_high=high,
        beta=beta,
        beta_condition=condition,
        **rule,
    )


def _profile_fields(entry: Any) -> dict[str, Any]:
    """The continual-release profile of a non-tree JDP mechanism (empty for the tree / LDP)."""
    if entry is None or entry.mechanism == "tree":
        return {}
    return dict(
        mechanism_capacity=entry.capacity,
        mechanism_l2_multiplier=entry.multiplier,
        mechanism_max_variance_factor=entry.max_variance_factor,
    )


def _gaussian_node_budget(
    plan: ReleasePlan,
    fam: ReleasedFamily,
    scales: dict[str, float],
    eps: float,
    dlt: float,
    tight: bool,
    H: int,
    K: int,
) -> tuple[float, float] | None:
    """(eps0, delta0) of one noise draw: the paper's per-node budget (Cor. 1: advanced composition
    over H and over the tree; Cor. 2: simple composition over the 2H releases) or, under "tight",
    the analytic-Gaussian epsilon of one draw of the joint (matrix, vector) pair at the target delta
    (informative only: the tight accountant composes the whole release, not these budgets). None
    for a continual-release mechanism other than the tree (no per-node budget exists)."""
    if fam.draws is None:
        return None
    if tight:
        worst = statistic_worst_case(plan, fam.statistic, scales).value
        return gaussian_epsilon(math.sqrt(worst / fam.draws), dlt), dlt
    if fam.site == "tree":
        return tree_node_budget(*advanced_composition_budget(eps / 2, dlt / 2, H), K)
    return simple_composition_budget(eps, dlt, 2 * H)

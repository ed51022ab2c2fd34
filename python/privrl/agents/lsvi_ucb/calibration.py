"""Batched LSVI-UCB's privacy (Alg. 2): what it releases, App. D's parameters, its calibration.

Paper: Luyo et al., Sec. 4, Alg. 2, App. D "Initialization of the parameters" (JDP), Rem. "Non-Batched
Algorithm", App. "Pure joint DP in the linear setting" (constants derived in the docstrings).
"""

# Conventions as in privrl.agents.ucrl_vtr.formulas; the failure probability per event is p/(6KH).
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from privrl.agents.lsvi_ucb.formulas import (
    lsvi_ucb_B0,
    lsvi_ucb_beta,
    lsvi_ucb_C,
    lsvi_ucb_c_K,
    lsvi_ucb_c_K_pure,
    lsvi_ucb_C_pure,
    lsvi_ucb_chi,
    lsvi_ucb_lambda,
    lsvi_ucb_laplace_scales,
    lsvi_ucb_log_chi,
    lsvi_ucb_num_batches,
    lsvi_ucb_num_batches_pure,
    lsvi_ucb_releases,
    lsvi_ucb_sigma_lambda,
    lsvi_ucb_sigma_lambda_composed,
    lsvi_ucb_sigma_u,
    lsvi_ucb_sigma_u_composed,
    lsvi_ucb_U_K,
    lsvi_ucb_u_sensitivity,
    lsvi_ucb_upsilon,
    lsvi_ucb_upsilon_pure,
)
from privrl.agents.ucrl_vtr.calibration import _profile_fields
from privrl.common.checks import (
    check_flag,
    check_invertible,
    check_pos_int,
    check_positive_real,
    check_probability,
)
from privrl.common.errors import PrivacyParameterError
from privrl.privacy import practical
from privrl.privacy.adaptive import ADAPTIVE_LSVI_LAM
from privrl.privacy.bounds import check_bound_alpha
from privrl.privacy.common import (
    DEFAULT_CALIBRATION,
    Calibration,
    check_batch_count,
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
from privrl.privacy.plans import ReleasedFamily, ReleasePlan, UserStatistic, check_plan, check_plan_shape

__all__ = [
    "LSVIUCBCalibration",
    "adaptive_lam_limit",
    "calibrate_lsvi_ucb",
    "check_adaptive_lam",
    "lsvi_ucb_B0",
    "lsvi_ucb_C",
    "lsvi_ucb_C_pure",
    "lsvi_ucb_U_K",
    "lsvi_ucb_beta",
    "lsvi_ucb_c_K",
    "lsvi_ucb_c_K_pure",
    "lsvi_ucb_chi",
    "lsvi_ucb_lambda",
    "lsvi_ucb_laplace_scales",
    "lsvi_ucb_log_chi",
    "lsvi_ucb_num_batches",
    "lsvi_ucb_num_batches_pure",
    "lsvi_ucb_practical_batches",
    "lsvi_ucb_releases",
    "lsvi_ucb_sigma_lambda",
    "lsvi_ucb_sigma_lambda_composed",
    "lsvi_ucb_sigma_u",
    "lsvi_ucb_sigma_u_composed",
    "lsvi_ucb_u_sensitivity",
    "lsvi_ucb_upsilon",
    "lsvi_ucb_upsilon_pure",
    "release_plan",
    "resolve_batches",
]

TITLE = "batched LSVI-UCB (Alg. 2)"


# ============================================================================================
# (c) The release plan and the calibration entry point
# ============================================================================================
def resolve_batches(
    batches: str | int,
    kind: str,
    pure: bool,
    eps: float | None,
    H: int,
    K: int,
    d: int,
    calibration: str = DEFAULT_CALIBRATION,
    delta: float | None = None,
    p: float = 0.05,
    mechanism: str | None = None,
) -> int:
    """The number of static batches B: ``"static"`` (App. D's formula; pure: the ``(K eps)^{1/3}``
    one; non-private: K, or ceil(sqrt(d H K)) under the adaptive calibration), ``"scaled"``
    (App. D's balance at the noise the calibration actually adds,
    :func:`lsvi_ucb_practical_batches`; Gaussian JDP only, otherwise as "static"), ``"every"``
    (B = K, Rem. "Non-Batched Algorithm") or an int in [1, K]."""
    if isinstance(batches, str) and batches == "every":
        return K
    if isinstance(batches, str) and batches in ("static", "scaled"):
        if kind == "none" or eps is None:
            # non-private: a release after every user; under the adaptive rule (whose
            # release costs O(S A d^2) per step) the static schedule of Wang et al. (2021)
            # that keeps the sqrt(K) rate, B = ceil(sqrt(d H K))
            return min(K, math.ceil(math.sqrt(d * H * K))) if calibration == "adaptive" else K
        if pure:
            return lsvi_ucb_num_batches_pure(eps, H, K, d)
        if batches == "scaled" and delta is not None and calibration != "paper":
            mechanism = resolve_mechanism(kind, calibration, pure, mechanism)
            return lsvi_ucb_practical_batches(eps, delta, H, K, d, p, mechanism)
        return lsvi_ucb_num_batches(eps, H, K, d)
    return check_batch_count(batches, K, ("static", "scaled", "every"))


def release_plan(
    kind: str,
    pure: bool,
    H: int,
    K: int,
    d: int,
    B: int,
    mechanism: str | None = None,
    sampler: str | None = None,
) -> ReleasePlan:
    """What Alg. 2 releases about one user (App. D, privacy part). Per step h the user's
    ``phi_h = phi(s_h, a_h)`` (``||phi|| <= 1``, Asm. 1) enters the Gram matrix of its batch, a leaf
    of the step's continual-release mechanism; the mechanism receives one leaf per release, i.e.
    ``R = lsvi_ucb_releases(K, B)`` leaves (the last batch is never released). Its response term
    ``phi_h (r_h + V_{h+1}(s'_h))`` (``r + V`` in ``[0, H + 1]``) enters every later release of
    ``u~_{b,h}``, each with fresh noise: R releases per user and step. Separate worst cases (the
    paper's): 2 (L2, Lambda; the paper's "L1" used as L2) and ``2(H + 1)`` (u); L1: ``2d`` and
    ``2 sqrt(d)(H + 1)``. The paper's ratio ``sigma_u / sigma_Lambda = H / sqrt(B0)`` is kept
    (pure: equal budgets per family)."""
    # checked as calibrate_lsvi_ucb checks them: kind=nan, d=nan or d=0 built a plan of model nan,
    # of dimension nan or 0, and pure="no" a Laplace plan
    kind, pure = check_kind(kind, ("none", "jdp")), check_flag(pure, "pure", PrivacyParameterError)
    H, K, d, B = (check_pos_int(v, n) for v, n in ((H, "H"), (K, "K"), (d, "d"), (B, "B")))
    mechanism = resolve_mechanism(kind, DEFAULT_CALIBRATION, pure, mechanism)  # the models' default
    sampler = resolve_sampler(kind, mechanism, sampler)
    stat = UserStatistic(
        name="phi_h, r_h + V_{h+1}(s'_h)",
        x="phi(s_h, a_h)",
        y="r_h(s_h, a_h) + V_{b,h+1}(s_{h+1})",
        dim=d,
        x_bound=1.0,
        y_low=0.0,
        y_high=float(H + 1),
        source="Asm. 1: ||phi|| <= 1 (checked when the LinearMDP is built), r in [0, 1], "
        "V~ projected on [0, H]",
    )
    R = lsvi_ucb_releases(K, B)
    if kind == "none":
        return ReleasePlan("lsvi_ucb", TITLE, "none", None, H, R, "tree", (stat,))
    e = user_entry(mechanism, R)
    B0 = lsvi_ucb_B0(B)
    lam_l1, u_l1 = 2.0 * d, 2.0 * math.sqrt(d) * (H + 1)
    lam_draws = e.draws if e.draws is not None else e.multiplier**2
    families = (
        ReleasedFamily(
            name="Lambda",
            paper="H^b_h (tree prefix in Lambda~_{b,h})",
            statistic=stat.name,
            form="outer",
            site="tree",
            scale_key="sigma_Lambda",
            scale_ratio=lam_draws * lam_l1 if pure else 1.0,
            draws=e.draws,
            draws_paper=B0,
            multiplier=e.multiplier,
            l2_sensitivity=2.0,
            l2_source="App. D: ||phi phi^T||_F <= 1: 2 (the paper's 'L1' used as L2)",
            l1_sensitivity=lam_l1,
            l1_source="2 ||phi||_1^2 <= 2d",
            sym_divisor=2.0,  # Alg. 2's (Z' + Z'^T)/2 for both laws, not kernels' default_divisor
            mechanism=mechanism,
            instances=H,
        ),
        ReleasedFamily(
            name="u",
            paper="eta^b_h (fresh per batch release of u~_{b,h})",
            statistic=stat.name,
            form="scaled",
            site="release",
            scale_key="sigma_u",
            scale_ratio=R * u_l1 if pure else H / math.sqrt(B0),
            draws=R,
            draws_paper=B,
            multiplier=math.sqrt(R),
            l2_sensitivity=lsvi_ucb_u_sensitivity(H),
            l2_source="App. D: ||phi (r + V)||_2 <= H + 1, only the changed user's term differs: 2(H + 1)",
            l1_sensitivity=u_l1,
            l1_source="2 ||phi||_1 (r + V) <= 2 sqrt(d) (H + 1)",
            sym_divisor=None,
            mechanism="fresh noise per release",
            instances=H,
        ),
    )
    return ReleasePlan(
        "lsvi_ucb",
        TITLE,
        kind,
        "laplace" if pure else "gaussian",
        H,
        R,
        mechanism,
        (stat,),
        families,
        sampler=sampler,
    )


@dataclass(frozen=True, kw_only=True)
class LSVIUCBCalibration(Calibration):
    """Parameters of Alg. 2 under App. D's names: ``batches`` (as given), ``lam`` (d unless
    given; 1 under "adaptive"), ``B``, ``B0``, ``batch_length`` (ceil(K/B)), ``releases`` (R, the
    releases a user enters), ``alpha`` (p/6KH), ``sigma_Lambda``, ``sigma_u`` (Gaussian std, or
    Laplace b when pure; None non-private), ``Upsilon``, ``c_K``, ``C``, ``shift`` (c_K + Upsilon,
    added to Lambda~), ``U_K``, ``chi``, ``log_chi``, ``beta``; ``planning`` once an agent runs it."""

    batches: str | int
    lam: float
    B: int
    B0: int
    batch_length: int
    releases: int
    alpha: float
    sigma_Lambda: float | None = None
    sigma_u: float | None = None
    Upsilon: float = 0.0
    c_K: float = 0.0
    C: float = 0.0
    shift: float = 0.0
    U_K: float = 1.0
    chi: float = 0.0
    log_chi: float = 0.0
    beta: float = 0.0
    planning: str | None = None


def calibrate_lsvi_ucb(
    kind: str,
    epsilon: float | None,
    delta: float | None,
    H: int,
    K: int,
    d: int,
    p: float = 0.05,
    batches: str | int = "static",
    calibration: str = DEFAULT_CALIBRATION,
    mechanism: str | None = None,
    plan: ReleasePlan | None = None,
    sampler: str | None = None,
    lam: float | None = None,
) -> LSVIUCBCalibration:
    """All parameters of Alg. 2 for ``kind`` in ``{"none", "jdp"}`` (the paper has no LDP algorithm
    for linear MDPs, Rem. "Local Differential Privacy"); ``delta == 0`` selects pure JDP.
    ``batches``: see :func:`resolve_batches`. ``"paper"``: App. D's closed forms (a non-tree
    ``mechanism`` gets sigma_Lambda times m_M / sqrt(B0)); ``"tight"``: the smallest noise of the
    release ``plan`` (default :func:`release_plan`) for (eps, delta), App. D's ratio kept; B is the
    paper's (it depends on eps only). Both feed the same Upsilon, c_K, C, U_K, chi, beta.
    ``lam``: the ridge regularizer (default App. D's ``d``, and ``ADAPTIVE_LSVI_LAM`` = 1 under
    ``"adaptive"``; Jin et al. use 1). It moves the regret
    side only (U_K, chi, beta, the exact server's Lambda_0): no noise scale depends on it.
    A paper calibration outside its formulas' regime (eps < 1): as
    :func:`privrl.agents.ucrl_vtr.calibration.calibrate_ucrl_vtr` says."""
    kind = check_kind(kind, ("none", "jdp"))
    eps, dlt, pure = privacy_args(kind, epsilon, delta)
    H, K, d = check_pos_int(H, "H"), check_pos_int(K, "K"), check_pos_int(d, "d")
    check_plan(plan, ("lsvi_ucb",), kind, pure, H)
    p = check_probability(p, "p")
    calibration = check_calibration(calibration)
    mechanism, sampler = resolve_release_choices(kind, calibration, pure, mechanism, sampler, plan)
    if lam is not None:
        lam = check_invertible(check_positive_real(lam, "lam"), "lam", "its inverse 1 / lam")
    B = resolve_batches(batches, kind, pure, eps, H, K, d, calibration, dlt, p, mechanism)
    own = release_plan(kind, pure, H, K, d, B, mechanism, sampler)
    plan = own if plan is None else plan
    check_plan_shape(plan, own)
    if calibration == "adaptive":  # the practical noise, the adaptive regret side (lam 1 unless given)
        lam = ADAPTIVE_LSVI_LAM if lam is None else lam
        cal = _calibrate(kind, eps, dlt, pure, H, K, d, p, batches, B, "practical", mechanism, plan, lam)
        return cal.replace(calibration="adaptive", release_rule="adaptive")
    return _calibrate(kind, eps, dlt, pure, H, K, d, p, batches, B, calibration, mechanism, plan, lam)


def _calibrate(
    kind: str,
    eps: Any,
    dlt: Any,
    pure: bool,
    H: int,
    K: int,
    d: int,
    p: float,
    batches: str | int,
    B: int,
    calibration: str,
    mechanism: str,
    plan: ReleasePlan,
    lam: float | None = None,
) -> LSVIUCBCalibration:
    B0 = lsvi_ucb_B0(B)
    lam = lsvi_ucb_lambda(d) if lam is None else float(lam)
    R = lsvi_ucb_releases(K, B)
    base: dict[str, Any] = dict(
        algorithm="lsvi_ucb",
        kind=kind,
        pure=pure,
        calibration=calibration,
        epsilon=eps,
        delta=dlt,
        p=p,
        H=H,
        K=K,
        d=d,
        batches=batches,
        lam=lam,
        B=B,
        B0=B0,
        batch_length=-(-K // B),
        releases=R,
        alpha=p / (6.0 * K * H),
        mechanism=mechanism,
        in_theorem_regime=in_theorem_regime(kind, eps, dlt, pure),
        **sampler_fields(plan, kind),
    )
    if kind == "none":
        rule = practical.nonprivate_rule(calibration, PRACTICAL_LSVI_SHIFT_MULT)
        return LSVIUCBCalibration(**base, **rule, **_radius(lam, 0.0, 0.0, H, K, d, p))
    check_bound_alpha(p, 6.0 * K * H, "6 K H", K, H)
    entry = user_entry(mechanism, R)
    tree = mechanism == "tree"
    noise = "laplace" if pure else "gaussian"
    if calibration in ("tight", "practical"):  # practical: the tight noise
        sc = tight_scales(plan, eps, 0.0 if pure else dlt)
        sl, su = sc["sigma_Lambda"], sc["sigma_u"]
    elif pure:
        sl, su = lsvi_ucb_laplace_scales(eps, H, B, d)
        f = paper_lattice_factor(plan, eps)
        sl, su = sl * f, su * f
    else:
        sl = lsvi_ucb_sigma_lambda(eps, dlt, H, B)
        su = lsvi_ucb_sigma_u(eps, dlt, H, B)
        if not tree:
            sl = sl * entry.multiplier / math.sqrt(B0)
    if calibration == "practical":
        ups, C = _practical_bounds(noise, sl, su, entry, eps, H, K, d, p)
        cK, shift, radius = ups, 0.0, _radius(lam, 0.0, 0.0, H, K, d, p)
        rule = dict(release_rule="practical", shift_mult=PRACTICAL_LSVI_SHIFT_MULT)
    else:
        if pure:
            ups = lsvi_ucb_upsilon_pure(sl, B0, d, K, H, p)
            C = lsvi_ucb_C_pure(su, d, K, H, p)
        else:
            # App. D's printed Upsilon (a factor B0) for the tree; a general mechanism: one draw of
            # std sigma sqrt(max_t v(t)).
            ups = (
                lsvi_ucb_upsilon(sl, B0, d, K, H, p)
                if tree
                else lsvi_ucb_upsilon(sl * math.sqrt(entry.noise_terms), 1, d, K, H, p)
            )
            C = lsvi_ucb_C(su, d, K, H, p)
        # App. D needs c_K >= d Upsilon and C <= H (lam + c_K) (Lem. "Lem.B.4"); the paper's sigma ratio
        # gives the latter for its own tree calibration; otherwise both are taken explicitly.
        paper_ratio = tree and not pure and calibration == "paper"
        cK = lsvi_ucb_c_K(ups, d) if paper_ratio else lsvi_ucb_c_K_pure(ups, C, lam, d, H)
        shift, radius, rule = cK + ups, _radius(lam, cK, C, H, K, d, p), {}
    return LSVIUCBCalibration(
        **base,
        **_profile_fields(entry),
        noise=noise,
        sym_divisor=2.0,
        sigma_Lambda=sl,
        sigma_u=su,
        Upsilon=ups,
        c_K=cK,
        C=C,
        shift=shift,
        **radius,
        **rule,
    )


def _radius(lam: float, c_K: float, C: float, H: int, K: int, d: int, p: float) -> dict[str, Any]:
    """App. D's U_K, chi, log_chi and radius beta for the shift c_K and the noise bound C."""
    U_K = lsvi_ucb_U_K(lam, c_K, C, H, K, d)
    if not math.isfinite(U_K):  # was "U_K must be finite and > 0, got inf", a name the user never gave
        raise PrivacyParameterError(
            f"lam = {lam:g} is too small for App. D's radius: U_K = 2H sqrt(dK / (lam + c_K)) + C / "
            f"(lam + c_K) overflows a double at c_K = {c_K:g}, C = {C:g}; pass a larger lam"
        )
    return dict(
        U_K=U_K,
        chi=lsvi_ucb_chi(U_K, H, K, d, p),
        log_chi=lsvi_ucb_log_chi(U_K, H, K, d, p),
        beta=lsvi_ucb_beta(lam, c_K, U_K, H, K, d, p),
    )


#: Practical Alg. 2: the released Lambda~ is shifted by PRACTICAL_LSVI_SHIFT_MULT * Upsilon_b at
#: release b (c_K = Upsilon_b instead of App. D's d Upsilon of the whole horizon).
PRACTICAL_LSVI_SHIFT_MULT = 2.0


def _practical_bounds(
    noise: str, sl: float, su: float, entry: Any, eps: float, H: int, K: int, d: int, p: float
) -> tuple[float, float]:
    """The practical calibration's regret side for Alg. 2 (privrl.privacy.practical): the tight
    noise of the plan; the per-release shift ``PRACTICAL_LSVI_SHIFT_MULT * Upsilon_b`` (applied by
    the server, with the noise actually released at b); the radius is the non-private one (App.
    D's beta with c_K = C = 0): a privacy part in the radius was measured to cost regret here
    (docs/algorithms.md). Upsilon, C, c_K record the sharp bounds at the worst release: this
    returns (Upsilon, C)."""
    spec = practical.BoundsSpec(noise, sl, su, 2.0, d, p / (6.0 * K * H))
    ups = practical.noise_bounds(spec, entry.max_variance_factor)[0]
    C = practical.noise_bounds(spec, 1.0)[1]  # fresh eta per release
    if not (math.isfinite(ups) and math.isfinite(C)):  # a tiny p is refused before (check_bound_alpha)
        raise PrivacyParameterError(
            f"the practical noise bounds overflow a double (Upsilon = {ups:g}, C = {C:g}) at "
            f"epsilon = {eps:g}, K = {K}, H = {H}: pass a larger epsilon or a smaller K"
        )
    return ups, C


def adaptive_lam_limit(
    cal: LSVIUCBCalibration, centre_norm: float = 0.0, releases: int | None = None
) -> float:
    """The largest ridge ``lam`` whose private adaptive release (rust/agents/lsvi_adaptive.rs)
    stays finite in float64 (inf when it never releases); ``centre_norm`` = ||w1|| when the value
    shift is on, else 0; ``releases`` the releases the agent makes (default ``cal.releases``,
    which is at least 1: one batch makes none). Each release of step h computes the privacy
    precision P = A^2 / kappa^2: A the design (eigenvalues floored at lam, at most lam + K, the
    Gram of K users with ||phi|| <= 1, + (1 + shift_mult) Upsilon, its noise and the shift),
    squared before the division, and kappa^2 = (s_u / a)^2 + s_N^2 ||m - c w1||^2 >= (s_u / (H +
    1))^2 (a <= H + 1, s_u eta's std), met where the backup is flat (step H's V_{H+1} = 0 always),
    whose releases never go stale, so R of them add up undiscounted: the total R P and the
    combination's R P m, ||m|| = ||A^{-1} u~ + c w1|| <= (K (H + 1) + C) / lam + H ||w1|| (a >= 1,
    c <= H), must be finite, and A^2 too."""
    R = int(cal.releases if releases is None else releases)
    if cal.kind != "jdp" or cal.release_rule != "adaptive" or R == 0:
        return math.inf
    std_u = float(cal.sigma_u or 0.0) * (math.sqrt(2.0) if cal.noise == "laplace" else 1.0)
    m = (cal.K * (cal.H + 1) + cal.C) / cal.lam + cal.H * centre_norm
    rest = cal.K + (1.0 + cal.shift_mult) * cal.Upsilon
    top = math.sqrt(_F64_MAX) * min(1.0, std_u / ((cal.H + 1) * math.sqrt(R * max(1.0, m))))
    return top - rest


_F64_MAX = 1.7976931348623157e308


def check_adaptive_lam(
    cal: LSVIUCBCalibration, centre_norm: float = 0.0, releases: int | None = None
) -> None:
    """Refuse (PrivacyParameterError) a ``lam`` above :func:`adaptive_lam_limit`: its release would
    overflow to inf mid-run (a NonFiniteError at a release) instead of at construction."""
    limit = adaptive_lam_limit(cal, centre_norm, releases)
    if cal.lam > limit and cal.lam < ADAPTIVE_LSVI_LAM:
        default = cal.replace(lam=ADAPTIVE_LSVI_LAM)
        if adaptive_lam_limit(default, centre_norm, releases) >= ADAPTIVE_LSVI_LAM:
            # the estimate's bound (K (H + 1) + C) / lam is what overflows: "too large" pointed the wrong way
            raise PrivacyParameterError(
                f"lam = {cal.lam:.6g} is too small for the adaptive private release: its estimate, up to "
                f"(K (H + 1) + C) / lam, times the precision summed over its releases overflows float64; "
                f"pass a larger lam (the default {ADAPTIVE_LSVI_LAM:g} is taken)"
            )
    if cal.lam > limit:
        raise PrivacyParameterError(
            f"lam = {cal.lam:.6g} is too large for the adaptive private release: its precision "
            f"A^2 / kappa^2 (A >= lam, kappa >= eta's std / (H + 1) = {cal.sigma_u:.4g}"
            f"{' sqrt 2' if cal.noise == 'laplace' else ''} / {cal.H + 1}), summed over its "
            f"R = {cal.releases if releases is None else releases} releases, overflows float64 unless "
            f"lam <= {max(limit, 0.0):.6g}; pass a smaller lam"
        )


def lsvi_ucb_practical_batches(
    epsilon: float, delta: float, H: int, K: int, d: int, p: float, mechanism: str | None = None
) -> int:
    """The number of static batches of practical Alg. 2: App. D's choice ``B = ceil((K eps)^{2/5}
    / (d^{3/5} H^{1/5}))`` balances the batching term of its regret bound (``~ K / B``) against the
    privacy term (``~ sigma(B) ~ sqrt(B) / eps``, the paper's noise). Under the tight noise the
    privacy term is ``rho = sigma_paper / sigma_tight`` times smaller (measured at App. D's own B,
    on sigma_u), which is the paper's term at ``eps' = rho eps``; so ``B = ceil((K rho eps)^{2/5} /
    (d^{3/5} H^{1/5}))``, clipped to [1, K]: more batches when the noise is smaller. A function of
    (eps, delta, H, K, d, mechanism) only: the schedule stays data-independent (App. D, Rem.
    "Data-Dependent Batches"). ``p`` (the regret failure probability) is not used: neither B
    depends on it (the parameter stays for the callers that pass it). ``mechanism=None`` is the
    default agent's (resolve_mechanism under DEFAULT_CALIBRATION: BLT, Gaussian JDP)."""
    mechanism = resolve_mechanism("jdp", DEFAULT_CALIBRATION, False, mechanism)
    B_paper = lsvi_ucb_num_batches(epsilon, H, K, d)
    rho = lsvi_ucb_sigma_u(epsilon, delta, H, B_paper) / _tight_sigma_u(
        epsilon, delta, H, K, d, B_paper, mechanism
    )
    B = math.ceil(min((K * epsilon * rho) ** 0.4 / (d**0.6 * H**0.2), K))
    return int(min(max(B, 1), K))


def _tight_sigma_u(epsilon: float, delta: float, H: int, K: int, d: int, B: int, mechanism: str) -> float:
    plan = release_plan("jdp", False, H, K, d, B, mechanism)
    return tight_scales(plan, epsilon, delta)["sigma_u"]

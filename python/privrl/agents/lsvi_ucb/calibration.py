"""Batched LSVI-UCB's privacy (Alg. 2): what it releases, App. D's parameters, its calibration.

Paper: Luyo et al., Sec. 4, Alg. 2, App. D "Initialization of the parameters" (JDP), Rem. "Non-Batched
Algorithm", App. "Pure joint DP in the linear setting" (constants derived in the docstrings).
"""

# Conventions as in privrl.agents.ucrl_vtr.calibration; the failure probability per event is p/(6KH).
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

from privrl.agents.ucrl_vtr.calibration import _profile_fields
from privrl.common.checks import check_pos_int, check_positive_real, check_probability, checked
from privrl.common.errors import PrivacyParameterError
from privrl.privacy import practical
from privrl.privacy.bounds import (
    gaussian_matrix_bound,
    gaussian_vector_bound,
    laplace_matrix_bound,
    laplace_vector_bound,
)
from privrl.privacy.common import (
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
from privrl.privacy.continual import resolve_mechanism, user_entry
from privrl.privacy.mechanisms import (
    advanced_composition_budget,
    gaussian_sigma,
    laplace_scale,
    simple_composition_budget,
    tree_depth,
    tree_node_budget,
)
from privrl.privacy.plans import ReleasedFamily, ReleasePlan, UserStatistic

__all__ = [
    "LSVIUCBCalibration",
    "calibrate_lsvi_ucb",
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
# (a) Gaussian JDP (App. D "Initialization of the parameters")
# ============================================================================================
@checked()
def lsvi_ucb_lambda(d: int) -> float:
    """App. D "Initialization of the parameters": ``lambda = d``."""
    return float(d)


@checked()
def lsvi_ucb_num_batches(epsilon: float, H: int, K: int, d: int) -> int:
    """App. D: ``B = ceil((K eps)^{2/5} / (d^{3/5} H^{1/5}))`` static batches.

    Clipped to ``K`` (only ``min(B, K)`` batches can start within ``K`` episodes, so the number
    of releases ``N_K <= min(B, K)`` and the composition stays valid); the clip is only active
    for very large ``eps``."""
    B = math.ceil((K * epsilon) ** 0.4 / (d**0.6 * H**0.2))
    return int(min(max(B, 1), K))


@checked()
def lsvi_ucb_B0(B: int) -> int:
    """App. D: ``B0 = ceil(log2 B + 1)`` (= ``tree_depth(B)``)."""
    return tree_depth(B)


@checked()
def lsvi_ucb_sigma_lambda(epsilon: float, delta: float, H: int, B: int) -> float:
    """App. D, printed closed form: ``sigma_Lambda = 128/eps sqrt(B H B0) log^2(32 H B0 B / delta)``.

    Derivation (App. D, privacy part, eqs. *.privacy.jdp.lsvi.ucb), rebuilt by
    :func:`lsvi_ucb_sigma_lambda_composed`: per-h budget
    ``(eps', delta') = (eps/(2 sqrt(8H log(4/delta))), delta/(4H))``
    (= ``advanced_composition_budget(eps/2, delta/2, H)``); each of the ``B`` released prefix
    sums is ``(eps'_1, delta'_1) = advanced_composition_budget(eps', delta', B)``; each tree node
    ``tree_node_budget(eps'_1, delta'_1, B)`` (``B0`` nodes per prefix); Gaussian mechanism with
    sensitivity 2 (``||phi phi^T||_F <= 1``; the paper writes "L1" but uses it as the L2
    sensitivity). This gives
    ``128/eps sqrt(H B B0 log(4/delta) log(8H/delta) log(16HB/delta) log(32 H B B0/delta))``;
    the printed form bounds each of the four logs by the largest, ``log(32 H B0 B/delta)``, so the
    closed form is >= the composed value (more noise, still private). The closed form is used.
    """
    B0 = lsvi_ucb_B0(B)
    return (128.0 / epsilon) * math.sqrt(B * H * B0) * math.log(32.0 * H * B0 * B / delta) ** 2


@checked()
def lsvi_ucb_sigma_lambda_composed(epsilon: float, delta: float, H: int, B: int) -> float:
    """``sigma_Lambda`` rebuilt from the tools, following App. D's privacy proof step by step
    (see :func:`lsvi_ucb_sigma_lambda`); it is <= the printed closed form."""
    eps_h, dlt_h = advanced_composition_budget(epsilon / 2.0, delta / 2.0, H)
    eps_1, dlt_1 = advanced_composition_budget(eps_h, dlt_h, B)
    eps_0, dlt_0 = tree_node_budget(eps_1, dlt_1, B)
    return gaussian_sigma(2.0, eps_0, dlt_0)


@checked()
def lsvi_ucb_sigma_u(epsilon: float, delta: float, H: int, B: int) -> float:
    """App. D, printed closed form: ``sigma_u = 128/eps H sqrt(H B) log^2(32 H B0 B / delta)``.

    Derivation (App. D, "M^u_h is (eps', delta')-DP"): each ``u~_{b,h}`` gets fresh noise and must
    be ``(eps'_1, delta'_1) = advanced_composition_budget(eps', delta', B)``-DP (same ``eps'``,
    ``delta'`` as :func:`lsvi_ucb_sigma_lambda`); the protected sum changes only in the term of
    the changed user, sensitivity ``2(H+1) <= 4H``; Gaussian mechanism:
    ``4H sqrt(2 log(2/delta'_1)) / eps'_1
    = 32 H sqrt(8 H B log(16HB/delta) log(8H/delta) log(4/delta)) / eps`` (the paper's
    intermediate expression, reproduced by :func:`lsvi_ucb_sigma_u_composed`). The printed
    ``128 H sqrt(HB) log^2(32 H B0 B/delta)/eps`` is a larger upper bound; it is the one used."""
    B0 = lsvi_ucb_B0(B)
    return (128.0 / epsilon) * H * math.sqrt(H * B) * math.log(32.0 * H * B0 * B / delta) ** 2


@checked()
def lsvi_ucb_sigma_u_composed(epsilon: float, delta: float, H: int, B: int) -> float:
    """``sigma_u`` rebuilt from the tools (see :func:`lsvi_ucb_sigma_u`); <= the closed form."""
    eps_h, dlt_h = advanced_composition_budget(epsilon / 2.0, delta / 2.0, H)
    eps_1, dlt_1 = advanced_composition_budget(eps_h, dlt_h, B)
    return gaussian_sigma(4.0 * H, eps_1, dlt_1)


@checked()
def lsvi_ucb_upsilon(sigma_lambda: float, B0: int, d: int, K: int, H: int, p: float) -> float:
    """App. D: ``Upsilon^J_{p/6KH} = sigma_Lambda B0 (4 sqrt(d) + 2 log(6KH/p))`` (as printed: a
    factor ``B0`` where Clm. "bounded.eigen" for a sum of ``B0`` nodes would give ``sqrt(B0)``,
    i.e. conservative)."""
    return gaussian_matrix_bound(sigma_lambda, 1, d, p / (6.0 * K * H)) * B0


@checked()
def lsvi_ucb_c_K(Upsilon: float, d: int) -> float:
    """App. D: ``c_K = d Upsilon^J_{p/6KH}``."""
    return d * Upsilon


@checked()
def lsvi_ucb_C(sigma_u: float, d: int, K: int, H: int, p: float) -> float:
    """App. D: ``C^J_{p/6KH} = sigma_u (sqrt(d) + 2 sqrt(log(6KHd/p)))`` (printed with ``6KHd``
    inside the log although the subscript reads ``p/6KH``; the printed form is used and is the
    more conservative one)."""
    return gaussian_vector_bound(sigma_u, 1, d, p / (6.0 * K * H * d))


@checked()
def lsvi_ucb_U_K(lam: float, c_K: float, C: float, H: int, K: int, d: int) -> float:
    """App. D / Lem. "Lem.B.2": ``U_K = max{1, 2H sqrt(dK/(lam + c_K)) + C/(lam + c_K)}``."""
    denom = lam + c_K
    if denom <= 0.0:
        raise PrivacyParameterError(f"lam + c_K must be > 0, got lam={lam!r}, c_K={c_K!r}")
    return max(1.0, 2.0 * H * math.sqrt(d * K / denom) + C / denom)


@checked()
def lsvi_ucb_log_chi(U_K: float, H: int, K: int, d: int, p: float) -> float:
    """``log chi`` for App. D's ``chi = 24^2 * 18 * K^2 d U_K H / p``, computed as a sum of logs."""
    return (
        math.log(24.0**2 * 18.0) + 2.0 * math.log(K) + math.log(d) + math.log(U_K) + math.log(H) - math.log(p)
    )


@checked()
def lsvi_ucb_chi(U_K: float, H: int, K: int, d: int, p: float) -> float:
    """App. D / Lem. "Lem.B.3": ``chi = 24^2 * 18 * K^2 d U_K H / p`` (``inf`` on overflow)."""
    lc = lsvi_ucb_log_chi(U_K, H, K, d, p)
    return math.exp(lc) if lc < 709.0 else math.inf


@checked()
def lsvi_ucb_beta(lam: float, c_K: float, U_K: float, H: int, K: int, d: int, p: float) -> float:
    """App. D / Lem. "Lem.B.3": ``beta = 24 H sqrt(d (lam + c_K)) log chi``.

    Non-private LSVI-UCB: ``c_K = 0`` and ``U_K`` with ``C = 0`` (Alg. 2 without noise); this is
    the choice made here instead of Jin et al. (2020)'s ``c d H sqrt(log(2dKH/p))`` whose constant
    ``c`` is unspecified."""
    return 24.0 * H * math.sqrt(d * (lam + c_K)) * lsvi_ucb_log_chi(U_K, H, K, d, p)


# ============================================================================================
# (b) Pure JDP (App. "Pure joint DP in the linear setting")
# ============================================================================================
@checked()
def lsvi_ucb_num_batches_pure(epsilon: float, H: int, K: int, d: int) -> int:
    """App. "Pure joint DP in the linear setting": ``B = ceil((K eps)^{1/3} / (d^{2/3} H^{1/3}))``
    (clipped to ``K`` like :func:`lsvi_ucb_num_batches`)."""
    B = math.ceil((K * epsilon) ** (1.0 / 3.0) / (d ** (2.0 / 3.0) * H ** (1.0 / 3.0)))
    return int(min(max(B, 1), K))


@checked()
def lsvi_ucb_laplace_scales(epsilon: float, H: int, B: int, d: int) -> tuple[float, float]:
    """Pure (eps, 0)-JDP LSVI-UCB Laplace scales ``(sigma_Lambda, sigma_u)`` (the paper only gives
    ``O~(BH/eps)`` and ``O~(H^2 B/eps)``); derived by simple composition:

    * ``2H`` mechanism families (``H`` Lambda trees, ``H`` u-sequences), ``eps/(2H)`` each.
    * Lambda tree of step ``h``: leaves are the ``B`` batches; a user lies in one batch, hence in
      ``B0 = tree_depth(B)`` nodes. Releasing all node values costs ``B0`` node budgets, so each
      node gets ``eps/(2 H B0)`` and all ``B`` prefix sums are post-processing. A node is released
      as ``M + (Z' + Z'^T)/2`` = post-processing of the full-matrix release ``M + Z'``, whose L1
      sensitivity is ``2 ||phi||_1^2 <= 2d`` (``||phi||_2 <= 1``). ``sigma_Lambda = 4 d H B0/eps``.
    * u of step ``h``: the user's term ``phi (r + V)`` appears in every later release (up to
      ``B`` of them, each with fresh noise and a re-evaluated ``V``), so ``eps/(2 H B)`` per
      release (simple composition holds for adaptive mechanisms); L1 sensitivity
      ``2 ||phi||_1 (H + 1) <= 2 sqrt(d) (H + 1)``. ``sigma_u = 4 sqrt(d) H (H+1) B / eps``.

    The tree makes ``sigma_Lambda`` scale with ``B0 ~ log B`` rather than the paper's ``B``; the
    ``d`` and ``sqrt(d)`` factors come from L1 (not L2) sensitivities, absent from the paper's
    orders. Because ``sigma_Lambda`` is smaller than the paper's, ``c_K`` is taken from
    :func:`lsvi_ucb_c_K_pure`.
    """
    B0 = lsvi_ucb_B0(B)
    eps_node, _ = simple_composition_budget(epsilon, 0.0, 2 * H * B0)
    eps_rel, _ = simple_composition_budget(epsilon, 0.0, 2 * H * B)
    return (laplace_scale(2.0 * d, eps_node), laplace_scale(2.0 * math.sqrt(d) * (H + 1), eps_rel))


@checked()
def lsvi_ucb_upsilon_pure(sigma_lambda: float, B0: int, d: int, K: int, H: int, p: float) -> float:
    """App. "Pure joint DP in the linear setting", as printed:
    ``Upsilon^J_{p/6KHd} = sigma_Lambda B0 (2d + 2 sqrt(d log(6KHd/p)) + log(6KHd/p))``, i.e.
    ``B0 * laplace_matrix_bound(sigma_Lambda, d, p/(6KH))`` with ``sigma_Lambda`` used as the
    LAPLACE SCALE ``b`` (the claims are for unit-scale Laplace entries, whose standard deviation is
    ``sqrt 2``; reading sigma as a standard deviation would under-estimate the norm by ``sqrt 2``).
    Valid: it dominates :func:`laplace_matrix_sum_bound` ``(b, B0, d, p/(6KH))`` because
    ``2 B0 d + 2 sqrt(B0 d L) + L <= B0 (2d + 2 sqrt(d L) + L)``."""
    return B0 * laplace_matrix_bound(sigma_lambda, d, p / (6.0 * K * H))


@checked()
def lsvi_ucb_c_K_pure(Upsilon: float, C: float, lam: float, d: int, H: int) -> float:
    """Pure-JDP regularizer (derived): ``c_K = max(d Upsilon, C/H - lam)``.

    App. D's regret proof needs only ``c_K >= d Upsilon`` (Lem. "Adapted from Lem.4.4") and,
    in Lem. "Lem.B.4", ``C / (lam + c_K) <= H`` (third term of the condition on ``beta``). For the
    Gaussian closed forms the latter follows from ``sigma_u / sigma_Lambda <= H / sqrt(B0)``, so
    ``c_K = d Upsilon`` suffices (:func:`lsvi_ucb_c_K`). With the Laplace scales of
    :func:`lsvi_ucb_laplace_scales` (tree: ``sigma_Lambda ~ B0``, not ``~ B``) the ratio
    ``C / (lam + d Upsilon)`` grows like ``(H+1) B / B0^2`` and can exceed ``H`` (e.g. the
    non-batched ``B = K`` with small ``d``), so ``c_K`` is raised to keep ``C <= H (lam + c_K)``;
    otherwise it equals the paper's ``d Upsilon``."""
    return max(d * Upsilon, C / H - lam)


@checked()
def lsvi_ucb_C_pure(sigma_u: float, d: int, K: int, H: int, p: float) -> float:
    """App. "Pure joint DP in the linear setting", as printed:
    ``C^J_{p/6KHd} = sigma_u sqrt(d) log(6KHd/p)`` = Clm. "bound.laplace.vector" for the single
    Laplace vector ``eta^b_h`` (scale ``sigma_u``, again a Laplace scale) at ``alpha = p/(6KH)``."""
    return laplace_vector_bound(sigma_u, d, p / (6.0 * K * H))


@checked()
def lsvi_ucb_u_sensitivity(H: int) -> float:
    """App. D ("M^u_h is (eps', delta')-DP"): L2 sensitivity ``2(H + 1)`` of the protected sum
    ``sum_j phi_j (r_j + V(s'_j))`` (``||phi|| <= 1``, ``r + V in [0, H + 1]``); the paper then
    bounds it by ``4H`` for its closed form."""
    return 2.0 * (H + 1)


@checked()
def lsvi_ucb_releases(K: int, B: int) -> int:
    """Number of perturbed releases of Alg. 2 with ``B`` static batches over ``K`` episodes: one
    at the end of every batch that is followed by another (line 14, ``k = k_{b+1} - 1``), i.e.
    ``len(k_i <= K) - 1`` with ``k_i = i ceil(K/B) + 1`` (Alg. 2, line 4); at least 1 (so a
    degenerate ``B = 1`` still gets a positive noise scale). Every release sums all earlier
    users, so a user enters at most this many u releases and the Lambda trees receive at most
    this many leaves. Equals ``B - 1`` unless late batches never start."""
    L = -(-K // B)
    starts = min(B, (K - 1) // L + 1)
    return max(1, starts - 1)


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
    calibration: str = "paper",
    delta: float | None = None,
    p: float = 0.05,
    mechanism: str = "tree",
) -> int:
    """The number of static batches B: ``"static"`` (App. D's formula; pure: the ``(K eps)^{1/3}``
    one; non-private: K), ``"scaled"`` (App. D's balance at the noise the calibration actually adds,
    :func:`lsvi_ucb_practical_batches`; Gaussian JDP only, otherwise as "static"), ``"every"``
    (B = K, Rem. "Non-Batched Algorithm") or an int in [1, K]."""
    if isinstance(batches, str):
        if batches == "every":
            return K
        if batches in ("static", "scaled"):
            if kind == "none" or eps is None:
                return K
            if pure:
                return lsvi_ucb_num_batches_pure(eps, H, K, d)
            if batches == "scaled" and delta is not None and calibration != "paper":
                return lsvi_ucb_practical_batches(eps, delta, H, K, d, p, mechanism)
            return lsvi_ucb_num_batches(eps, H, K, d)
        raise PrivacyParameterError(
            f"batches must be 'static', 'scaled', 'every' or an int in [1, K], got {batches!r}"
        )
    if isinstance(batches, bool) or not isinstance(batches, numbers.Integral):
        raise PrivacyParameterError(
            f"batches must be 'static', 'scaled', 'every' or an int in [1, K], got {batches!r}"
        )
    B = int(batches)
    if not (1 <= B <= K):
        raise PrivacyParameterError(f"batches must be an int in [1, K={K}], got {batches!r}")
    return B


def release_plan(
    kind: str, pure: bool, H: int, K: int, d: int, B: int, mechanism: str = "tree", sampler: str | None = None
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
            sym_divisor=2.0,
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
    """Parameters of Alg. 2 under App. D's names: ``batches`` (as given), ``lam`` (= d), ``B``,
    ``B0``, ``batch_length`` (ceil(K/B)), ``releases`` (R, the releases a user enters), ``alpha``
    (p/6KH), ``sigma_Lambda``, ``sigma_u`` (Gaussian std, or Laplace b when pure; None non-private),
    ``Upsilon``, ``c_K``, ``C``, ``shift`` (c_K + Upsilon, added to Lambda~), ``U_K``, ``chi``,
    ``log_chi``, ``beta``; ``planning`` once an agent runs it."""

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
    calibration: str = "paper",
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
    ``lam``: the ridge regularizer (default App. D's ``d``; Jin et al. use 1). It moves the regret
    side only (U_K, chi, beta, the exact server's Lambda_0): no noise scale depends on it."""
    kind = check_kind(kind, ("none", "jdp"))
    eps, dlt, pure = privacy_args(kind, epsilon, delta)
    H, K, d = check_pos_int(H, "H"), check_pos_int(K, "K"), check_pos_int(d, "d")
    p = check_probability(p, "p")
    calibration = check_calibration(calibration)
    mechanism = resolve_mechanism(kind, calibration, pure, mechanism)
    sampler = resolve_sampler(kind, mechanism, sampler)
    lam = None if lam is None else check_positive_real(lam, "lam")
    B = resolve_batches(batches, kind, pure, eps, H, K, d, calibration, dlt, p, mechanism)
    if plan is None:
        plan = release_plan(kind, pure, H, K, d, B, mechanism, sampler)
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
        U_K = lsvi_ucb_U_K(lam, 0.0, 0.0, H, K, d)
        rule: dict[str, Any] = (
            {"release_rule": "practical", "shift_mult": PRACTICAL_LSVI_SHIFT_MULT}
            if calibration == "practical"
            else {}
        )
        return LSVIUCBCalibration(
            **base,
            **rule,
            U_K=U_K,
            chi=lsvi_ucb_chi(U_K, H, K, d, p),
            log_chi=lsvi_ucb_log_chi(U_K, H, K, d, p),
            beta=lsvi_ucb_beta(lam, 0.0, U_K, H, K, d, p),
        )
    entry = user_entry(mechanism, R)
    tree = mechanism == "tree"
    if calibration == "practical":
        return _practical(base, entry, plan, eps, dlt, pure, lam, H, K, d, p)
    if calibration == "tight":
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
    U_K = lsvi_ucb_U_K(lam, cK, C, H, K, d)
    return LSVIUCBCalibration(
        **base,
        **_profile_fields(entry),
        noise="laplace" if pure else "gaussian",
        sym_divisor=2.0,
        sigma_Lambda=sl,
        sigma_u=su,
        Upsilon=ups,
        c_K=cK,
        C=C,
        shift=cK + ups,
        U_K=U_K,
        chi=lsvi_ucb_chi(U_K, H, K, d, p),
        log_chi=lsvi_ucb_log_chi(U_K, H, K, d, p),
        beta=lsvi_ucb_beta(lam, cK, U_K, H, K, d, p),
    )


#: Practical Alg. 2: the released Lambda~ is shifted by PRACTICAL_LSVI_SHIFT_MULT * Upsilon_b at
#: release b (c_K = Upsilon_b instead of App. D's d Upsilon of the whole horizon).
PRACTICAL_LSVI_SHIFT_MULT = 2.0


def _practical(
    base: dict[str, Any],
    entry: Any,
    plan: ReleasePlan,
    eps: float,
    dlt: float,
    pure: bool,
    lam: float,
    H: int,
    K: int,
    d: int,
    p: float,
) -> LSVIUCBCalibration:
    """The practical calibration's regret side for Alg. 2 (privrl.privacy.practical): the tight
    noise of ``plan``; the per-release shift ``PRACTICAL_LSVI_SHIFT_MULT * Upsilon_b`` (applied by
    the server, with the noise actually released at b); the radius is the non-private one (App.
    D's beta with c_K = C = 0): a privacy part in the radius was measured to cost regret here
    (docs/algorithms.md). Upsilon, C, c_K record the sharp bounds at the worst release."""
    sc = tight_scales(plan, eps, 0.0 if pure else dlt)
    sl, su = sc["sigma_Lambda"], sc["sigma_u"]
    alpha = p / (6.0 * K * H)
    noise = "laplace" if pure else "gaussian"
    spec = practical.BoundsSpec(noise, sl, su, 2.0, d, alpha)
    ups = practical.noise_bounds(spec, entry.max_variance_factor)[0]
    C = practical.noise_bounds(spec, 1.0)[1]  # fresh eta per release
    U_K = lsvi_ucb_U_K(lam, 0.0, 0.0, H, K, d)
    return LSVIUCBCalibration(
        **base,
        **_profile_fields(entry),
        noise=noise,
        sym_divisor=2.0,
        sigma_Lambda=sl,
        sigma_u=su,
        Upsilon=ups,
        c_K=ups,
        C=C,
        shift=0.0,
        U_K=U_K,
        chi=lsvi_ucb_chi(U_K, H, K, d, p),
        log_chi=lsvi_ucb_log_chi(U_K, H, K, d, p),
        beta=lsvi_ucb_beta(lam, 0.0, U_K, H, K, d, p),
        release_rule="practical",
        shift_mult=PRACTICAL_LSVI_SHIFT_MULT,
    )


def lsvi_ucb_practical_batches(
    epsilon: float, delta: float, H: int, K: int, d: int, p: float, mechanism: str = "tree"
) -> int:
    """The number of static batches of practical Alg. 2: App. D's choice ``B = ceil((K eps)^{2/5}
    / (d^{3/5} H^{1/5}))`` balances the batching term of its regret bound (``~ K / B``) against the
    privacy term (``~ sigma(B) ~ sqrt(B) / eps``, the paper's noise). Under the tight noise the
    privacy term is ``rho = sigma_paper / sigma_tight`` times smaller (measured at App. D's own B,
    on sigma_u), which is the paper's term at ``eps' = rho eps``; so ``B = ceil((K rho eps)^{2/5} /
    (d^{3/5} H^{1/5}))``, clipped to [1, K]: more batches when the noise is smaller. A function of
    (eps, delta, H, K, d, p, mechanism) only: the schedule stays data-independent (App. D, Rem.
    "Data-Dependent Batches")."""
    B_paper = lsvi_ucb_num_batches(epsilon, H, K, d)
    rho = lsvi_ucb_sigma_u(epsilon, delta, H, B_paper) / _tight_sigma_u(
        epsilon, delta, H, K, d, B_paper, mechanism
    )
    B = math.ceil((K * epsilon * rho) ** 0.4 / (d**0.6 * H**0.2))
    return int(min(max(B, 1), K))


def _tight_sigma_u(epsilon: float, delta: float, H: int, K: int, d: int, B: int, mechanism: str) -> float:
    plan = release_plan("jdp", False, H, K, d, B, mechanism)
    return tight_scales(plan, epsilon, delta)["sigma_u"]

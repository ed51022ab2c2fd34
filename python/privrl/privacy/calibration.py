"""Every formula that sets privacy noise or a confidence width, one small public function each.

Paper: Luyo et al., Cor. 1-2 / Thm. 1 (UCRL-VTR), App. B-D (UCRL-VTR+, LSVI-UCB, pure DP), App. "Auxiliary Results".
"""
# Conventions
# -----------
# * Natural logarithms everywhere.
# * Where the paper derives a noise scale by composing the tools of App. "Differential Privacy
#   Tools", the function is built from privrl.privacy.mechanisms; when the paper prints a closed
#   form, a ``*_composed`` twin rebuilds it from the tools so that tests can compare the two (equal
#   for UCRL-VTR and UCRL-VTR+; for LSVI-UCB the printed closed form is a looser upper bound, see
#   lsvi_ucb_sigma_lambda).
# * "Scale" of a noise means its standard deviation for Gaussian noise and its Laplace parameter b
#   (density exp(-|x|/b) / 2b) for Laplace noise. The paper reuses the letter sigma for both.
# * alpha is a per-event failure probability of a concentration claim; the corollaries take
#   alpha = p/(6KH) (UCRL-VTR, LSVI-UCB) or p/(24KH) (UCRL-VTR+) and union-bound over all (k, h).
from __future__ import annotations

import math
import numbers
from typing import Any, Dict, Optional, Tuple, Union

from privrl.exceptions import PrivacyParameterError
from privrl.privacy.accounting import (
    analytic_gaussian_epsilon,
    analytic_gaussian_sigma,
    composed_l2_sensitivity,
    gaussian_mu,
    tree_nodes_per_leaf,
)
from privrl.privacy.mechanisms import (
    _check_delta_open,
    _check_delta_pure_ok,
    _check_epsilon,
    _check_nonneg_real,
    _check_pos_int,
    _check_positive_real,
    _check_probability,
    advanced_composition_budget,
    gaussian_sigma,
    laplace_scale,
    simple_composition_budget,
    tree_depth,
    tree_node_budget,
)

__all__ = [
    # concentration claims (App. "Auxiliary Results")
    "gaussian_matrix_bound",
    "gaussian_vector_bound",
    "laplace_matrix_bound",
    "laplace_vector_bound",
    "laplace_matrix_sum_bound",
    "laplace_vector_sum_bound",
    # (a) UCRL-VTR, Gaussian
    "ucrl_vtr_lambda",
    "ucrl_vtr_K0",
    "ucrl_vtr_l2_sensitivity",
    "ucrl_vtr_sigma_jdp",
    "ucrl_vtr_sigma_jdp_composed",
    "ucrl_vtr_sigma_ldp",
    "ucrl_vtr_sigma_ldp_composed",
    "ucrl_vtr_upsilon",
    "ucrl_vtr_upsilon_jdp",
    "ucrl_vtr_upsilon_ldp",
    "ucrl_vtr_C",
    "ucrl_vtr_C_jdp",
    "ucrl_vtr_C_ldp",
    "ucrl_vtr_shift",
    "ucrl_vtr_self_normalized_width",
    "ucrl_vtr_beta",
    "ucrl_vtr_beta_condition",
    "ucrl_vtr_beta_nonprivate",
    # (b) UCRL-VTR, pure DP
    "ucrl_vtr_l1_sensitivities",
    "ucrl_vtr_laplace_scales_jdp",
    "ucrl_vtr_laplace_scales_ldp",
    "ucrl_vtr_upsilon_pure",
    "ucrl_vtr_C_pure",
    "ucrl_vtr_beta_pure",
    # (c) LSVI-UCB, Gaussian JDP
    "lsvi_ucb_lambda",
    "lsvi_ucb_num_batches",
    "lsvi_ucb_B0",
    "lsvi_ucb_sigma_lambda",
    "lsvi_ucb_sigma_lambda_composed",
    "lsvi_ucb_sigma_u",
    "lsvi_ucb_sigma_u_composed",
    "lsvi_ucb_upsilon",
    "lsvi_ucb_c_K",
    "lsvi_ucb_C",
    "lsvi_ucb_U_K",
    "lsvi_ucb_log_chi",
    "lsvi_ucb_chi",
    "lsvi_ucb_beta",
    # (d) LSVI-UCB, pure JDP
    "lsvi_ucb_num_batches_pure",
    "lsvi_ucb_laplace_scales",
    "lsvi_ucb_upsilon_pure",
    "lsvi_ucb_c_K_pure",
    "lsvi_ucb_C_pure",
    # (e) UCRL-VTR+
    "ucrl_vtr_plus_lambda",
    "ucrl_vtr_plus_sigmas_jdp",
    "ucrl_vtr_plus_sigmas_jdp_composed",
    "ucrl_vtr_plus_sigmas_ldp",
    "ucrl_vtr_plus_sigmas_ldp_composed",
    "ucrl_vtr_plus_upsilon",
    "ucrl_vtr_plus_C",
    "ucrl_vtr_plus_bernstein_terms",
    "ucrl_vtr_plus_betas",
    "ucrl_vtr_plus_betas_condition",
    "ucrl_vtr_plus_laplace_scales_jdp",
    "ucrl_vtr_plus_laplace_scales_ldp",
    "ucrl_vtr_plus_upsilon_pure",
    "ucrl_vtr_plus_C_pure",
    # (g) tight calibration
    "CALIBRATIONS",
    "ucrl_vtr_sigma_jdp_tight",
    "ucrl_vtr_sigma_ldp_tight",
    "ucrl_vtr_laplace_scales_jdp_tight",
    "lsvi_ucb_u_sensitivity",
    "lsvi_ucb_releases",
    "lsvi_ucb_sigmas_tight",
    "lsvi_ucb_laplace_scales_tight",
    "ucrl_vtr_plus_sigmas_jdp_tight",
    "ucrl_vtr_plus_sigmas_ldp_tight",
    "ucrl_vtr_plus_laplace_scales_jdp_tight",
    # (f) entry points
    "calibrate_ucrl_vtr",
    "calibrate_lsvi_ucb",
    "calibrate_ucrl_vtr_plus",
]

_SQRT2 = math.sqrt(2.0)


# ============================================================================================
# Concentration claims, App. "Auxiliary Results"
# ============================================================================================
def gaussian_matrix_bound(sigma: float, n: int, d: int, alpha: float) -> float:
    """Clm. "bounded.eigen" (Tao 2011) applied to a sum of ``n`` i.i.d. symmetric Gaussian node
    matrices with entry scale ``sigma``: the sum is Gaussian with entry scale ``sigma sqrt(n)``, so
    w.p. ``>= 1 - alpha`` its operator norm is ``<= sigma sqrt(n) (4 sqrt(d) + 2 log(1/alpha))``.
    """
    s = _check_nonneg_real(sigma, "sigma")
    n = _check_pos_int(n, "n")
    d = _check_pos_int(d, "d")
    a = _check_probability(alpha, "alpha")
    return s * math.sqrt(n) * (4.0 * math.sqrt(d) + 2.0 * math.log(1.0 / a))


def gaussian_vector_bound(sigma: float, n: int, d: int, alpha: float) -> float:
    """Clm. "bound.gauss.vector" (Laurent & Massart 2000) for a sum of ``n`` i.i.d.
    ``N(0, sigma^2 I_d)`` vectors: w.p. ``>= 1 - alpha`` the norm is
    ``<= sigma sqrt(n) (sqrt(d) + 2 sqrt(log(1/alpha)))``.
    """
    s = _check_nonneg_real(sigma, "sigma")
    n = _check_pos_int(n, "n")
    d = _check_pos_int(d, "d")
    a = _check_probability(alpha, "alpha")
    return s * math.sqrt(n) * (math.sqrt(d) + 2.0 * math.sqrt(math.log(1.0 / a)))


def laplace_matrix_bound(b: float, d: int, alpha: float) -> float:
    """Clm. "bound.laplace.eigen" for ONE matrix ``M = (Z' + Z'^T)/2`` with i.i.d. ``Lap(b)``
    entries in ``Z'`` (the claim is for ``b = 1``; the norm scales linearly in ``b``): w.p.
    ``>= 1 - alpha``, ``||M|| <= b (2d + 2 sqrt(d log(d/alpha)) + log(d/alpha))``.
    """
    b = _check_nonneg_real(b, "b")
    d = _check_pos_int(d, "d")
    a = _check_probability(alpha, "alpha")
    L = math.log(d / a)
    return b * (2.0 * d + 2.0 * math.sqrt(d * L) + L)


def laplace_vector_bound(b: float, d: int, alpha: float) -> float:
    """Clm. "bound.laplace.vector" for ONE vector with i.i.d. ``Lap(b)`` coordinates (claim
    stated for ``b = 1``): w.p. ``>= 1 - alpha``, ``||v||_2 <= b sqrt(d) log(d/alpha)``.
    """
    b = _check_nonneg_real(b, "b")
    d = _check_pos_int(d, "d")
    a = _check_probability(alpha, "alpha")
    return b * math.sqrt(d) * math.log(d / a)


def _laplace_sum_subexp_tail(b: float, n: int, L: float) -> float:
    """``t`` with ``P(|S_n| >= t) <= 2 e^{-L}`` for ``S_n`` a sum of ``n`` i.i.d. ``Lap(b)``."""
    return 4.0 * b * max(math.sqrt(n * L / 3.0), L)


def laplace_matrix_sum_bound(b: float, n: int, d: int, alpha: float) -> float:
    """High-probability operator-norm bound for a SUM of ``n`` independent symmetric Laplace node
    matrices ``S = sum_i (Z'_i + Z'_i^T)/2``, each ``Z'_i`` with i.i.d. ``Lap(b)`` entries. This
    extends Clm. "bound.laplace.eigen" (one matrix, ``b = 1``), which it recovers at ``n = 1``.
    Returns the minimum of two bounds, each valid w.p. ``>= 1 - alpha`` (the minimum of two
    deterministic numbers is one of them, so it is valid at the same ``alpha``):

    1. Row-sum / chi-square bound (the claim's own argument). For symmetric ``S``,
       ``||S|| <= max_r sum_j |S_rj|`` and, by the triangle inequality,
       ``sum_j |S_rj| <= sum_i (|z^i_rr| + sum_{j != r} (|z^i_rj| + |z^i_jr|))``, a sum of
       ``m = n(2d - 1)`` i.i.d. ``|Lap(b)| ~ b Exp(1) = (b/2) chi^2(2)`` variables, i.e.
       ``(b/2) chi^2(2m)``. Laurent-Massart (Clm. "bound.gauss.vector") with ``L = log(d/alpha)``
       and a union bound over the ``d`` rows give
       ``||S|| <= (b/2)(2m + 2 sqrt(2m L) + 2L) <= b (2nd + 2 sqrt(n d L) + L)``.
       This is ``<= n * laplace_matrix_bound(b, d, alpha)``, hence also below the triangle + union
       bound ``n * laplace_matrix_bound(b, d, alpha/n)``.
    2. Sub-exponential bound (grows like ``sqrt(n)``, the rate the paper's Rem./App. on pure DP
       assume for LDP). ``Lap(b)`` has MGF ``1/(1 - b^2 t^2)``; for ``|t| <= 1/(2b)``,
       ``-log(1 - x) <= 4x/3`` gives ``log E e^{tX} <= (4/3) b^2 t^2``. For a sum of ``n``,
       Chernoff yields ``P(|S_n| >= s) <= 2 exp(-min(3 s^2/(16 n b^2), s/(4b)))``, so
       ``|S_n| <= 4b max(sqrt(n L'/3), L')`` w.p. ``>= 1 - 2e^{-L'}``. Every entry of ``S`` is
       bounded by the largest ``|sum_i z^i_jl|``; a union over the ``d^2`` entries
       (``L' = log(2 d^2 / alpha)``) and ``||S|| <= max row sum <= d max |entry|`` give
       ``||S|| <= 4 b d max(sqrt(n L'/3), L')``.
    """
    b = _check_nonneg_real(b, "b")
    n = _check_pos_int(n, "n")
    d = _check_pos_int(d, "d")
    a = _check_probability(alpha, "alpha")
    L = math.log(d / a)
    rowsum = b * (2.0 * n * d + 2.0 * math.sqrt(n * d * L) + L)
    subexp = d * _laplace_sum_subexp_tail(b, n, math.log(2.0 * d * d / a))
    return min(rowsum, subexp)


def laplace_vector_sum_bound(b: float, n: int, d: int, alpha: float) -> float:
    """High-probability 2-norm bound for a SUM of ``n`` independent vectors with i.i.d.
    ``Lap(b)`` coordinates; extends Clm. "bound.laplace.vector" (recovered exactly at ``n = 1``).
    ``||v||_2 <= sqrt(d) max_j |v_j|`` and each coordinate is bounded, with a union over the ``d``
    coordinates, by the smallest of the valid per-coordinate bounds (each at failure ``alpha/d``):

    * triangle + union: ``|sum_i z_i| <= n max_i |z_i|`` and the exact Laplace tail
      ``P(|z| > t) = e^{-t/b}`` over the ``n d`` variables: ``t = n b log(n d/alpha)`` (at ``n = 1``
      this is the claim's ``b log(d/alpha)``);
    * chi-square: ``|sum_i z_i| <= sum_i |z_i| ~ (b/2) chi^2(2n)``, Laurent-Massart:
      ``t = b (n + sqrt(2 n L) + L)``, ``L = log(d/alpha)``;
    * sub-exponential (see :func:`laplace_matrix_sum_bound`):
      ``t = 4b max(sqrt(n L'/3), L')``, ``L' = log(2d/alpha)``.
    """
    b = _check_nonneg_real(b, "b")
    n = _check_pos_int(n, "n")
    d = _check_pos_int(d, "d")
    a = _check_probability(alpha, "alpha")
    L = math.log(d / a)
    cands = (
        n * b * math.log(n * d / a),
        b * (n + math.sqrt(2.0 * n * L) + L),
        _laplace_sum_subexp_tail(b, n, math.log(2.0 * d / a)),
    )
    return math.sqrt(d) * min(cands)


# ============================================================================================
# (a) UCRL-VTR (Alg. 1, Sec. 3, App. B), Gaussian noise
# ============================================================================================
def ucrl_vtr_lambda(H: int) -> float:
    """Alg. 1, line 1: ridge regularizer ``lambda = H^2``."""
    H = _check_pos_int(H, "H")
    return float(H * H)


def ucrl_vtr_K0(K: int) -> int:
    """Cor. 1: ``K0 = ceil(log2(K) + 1)``, the depth of the K-leaf tree (= ``tree_depth(K)``)."""
    return tree_depth(_check_pos_int(K, "K"))


def ucrl_vtr_l2_sensitivity(H: int) -> float:
    """App. B (proofs of Cor. 1-2): ``||X X^T||_F <= H^2`` and ``||X y||_2 <= H^2`` (since
    ``||X_{k,h}|| <= H``, ``y in [0, H]``), so both L2 sensitivities are ``2 H^2``."""
    H = _check_pos_int(H, "H")
    return 2.0 * H * H


def ucrl_vtr_sigma_jdp(epsilon: float, delta: float, H: int, K: int) -> float:
    """Cor. 1 (JDP-UCRL-VTR), printed closed form:
    ``sigma_B = 32 H^2 / eps * sqrt(2 H K0 log(8H/delta) log(4/delta) log(16 H K0/delta))``.
    Equal to :func:`ucrl_vtr_sigma_jdp_composed` (proof of Cor. 1, App. B)."""
    eps = _check_epsilon(epsilon)
    dlt = _check_delta_open(delta)
    H = _check_pos_int(H, "H")
    K0 = ucrl_vtr_K0(K)
    return (32.0 * H * H / eps) * math.sqrt(
        2.0 * H * K0 * math.log(8.0 * H / dlt) * math.log(4.0 / dlt) * math.log(16.0 * H * K0 / dlt)
    )


def ucrl_vtr_sigma_jdp_composed(epsilon: float, delta: float, H: int, K: int) -> float:
    """Cor. 1's ``sigma_B`` rebuilt from the tools (privacy part of the proof of Cor. 1):

    1. simple composition of the Lambda-family and the u-family, each ``(eps/2, delta/2)``;
    2. advanced composition over the ``H`` steps: per-h budget
       ``advanced_composition_budget(eps/2, delta/2, H) = (eps/(2 sqrt(8H log(4/delta))), delta/(4H))``;
    3. tree method over ``K`` leaves: per-node budget ``tree_node_budget(., ., K)``
       ``= (eps / (16 sqrt(H K0 log(8H/delta) log(4/delta))), delta / (8 H K0))``;
    4. Gaussian mechanism with L2 sensitivity ``2 H^2``.
    """
    eps = _check_epsilon(epsilon)
    dlt = _check_delta_open(delta)
    H = _check_pos_int(H, "H")
    K = _check_pos_int(K, "K")
    eps_h, dlt_h = advanced_composition_budget(eps / 2.0, dlt / 2.0, H)
    eps0, dlt0 = tree_node_budget(eps_h, dlt_h, K)
    return gaussian_sigma(ucrl_vtr_l2_sensitivity(H), eps0, dlt0)


def ucrl_vtr_sigma_ldp(epsilon: float, delta: float, H: int) -> float:
    """Cor. 2 (LDP-UCRL-VTR), printed closed form: ``sigma_B = 4 H^3/eps sqrt(2 log(4H/delta))``."""
    eps = _check_epsilon(epsilon)
    dlt = _check_delta_open(delta)
    H = _check_pos_int(H, "H")
    return (4.0 * H ** 3 / eps) * math.sqrt(2.0 * math.log(4.0 * H / dlt))


def ucrl_vtr_sigma_ldp_composed(epsilon: float, delta: float, H: int) -> float:
    """Cor. 2's ``sigma_B`` from the tools (proof of Cor. 2): each user sends ``2H`` Gaussian
    releases (``H`` matrices, ``H`` vectors); simple composition gives each
    ``simple_composition_budget(eps, delta, 2H) = (eps/(2H), delta/(2H))``; Gaussian mechanism
    with L2 sensitivity ``2 H^2``."""
    eps = _check_epsilon(epsilon)
    dlt = _check_delta_open(delta)
    H = _check_pos_int(H, "H")
    e1, d1 = simple_composition_budget(eps, dlt, 2 * H)
    return gaussian_sigma(ucrl_vtr_l2_sensitivity(H), e1, d1)


def ucrl_vtr_upsilon(sigma_B: float, n_terms: int, d: int, K: int, H: int, p: float) -> float:
    """Cor. 1/2 ``Upsilon_{p/6KH} = sigma_B sqrt(n) (4 sqrt(d) + 2 log(6KH/p))``: Clm.
    "bounded.eigen" for the sum of ``n_terms`` Gaussian matrices at ``alpha = p/(6KH)``
    (``n_terms = K0`` for JDP, ``K`` for LDP)."""
    K = _check_pos_int(K, "K")
    H = _check_pos_int(H, "H")
    pp = _check_probability(p, "p")
    return gaussian_matrix_bound(sigma_B, n_terms, d, pp / (6.0 * K * H))


def ucrl_vtr_upsilon_jdp(sigma_B: float, d: int, K: int, H: int, p: float) -> float:
    """Cor. 1: ``Upsilon^J_{p/6KH} = sigma_B sqrt(K0) (4 sqrt(d) + 2 log(6KH/p))``."""
    return ucrl_vtr_upsilon(sigma_B, ucrl_vtr_K0(K), d, K, H, p)


def ucrl_vtr_upsilon_ldp(sigma_B: float, d: int, K: int, H: int, p: float) -> float:
    """Cor. 2: ``Upsilon^L_{p/6KH} = sigma_B sqrt(K) (4 sqrt(d) + 2 log(6KH/p))``."""
    return ucrl_vtr_upsilon(sigma_B, _check_pos_int(K, "K"), d, K, H, p)


def ucrl_vtr_C(sigma_B: float, n_terms: int, d: int, K: int, H: int, p: float) -> float:
    """App. B (proofs of Cor. 1/2): ``C_{p/6KH} = sigma_B sqrt(n) (sqrt(d) + 2 sqrt(log(6KH/p)))``,
    Clm. "bound.gauss.vector" for a sum of ``n_terms`` Gaussian vectors at ``alpha = p/(6KH)``."""
    K = _check_pos_int(K, "K")
    H = _check_pos_int(H, "H")
    pp = _check_probability(p, "p")
    return gaussian_vector_bound(sigma_B, n_terms, d, pp / (6.0 * K * H))


def ucrl_vtr_C_jdp(sigma_B: float, d: int, K: int, H: int, p: float) -> float:
    """App. B, proof of Cor. 1: ``C^J_{p/6KH} = sigma_B sqrt(K0) (sqrt(d) + 2 sqrt(log(6KH/p)))``."""
    return ucrl_vtr_C(sigma_B, ucrl_vtr_K0(K), d, K, H, p)


def ucrl_vtr_C_ldp(sigma_B: float, d: int, K: int, H: int, p: float) -> float:
    """App. B, proof of Cor. 2: ``C^L_{p/6KH} = sigma_B sqrt(K) (sqrt(d) + 2 sqrt(log(6KH/p)))``."""
    return ucrl_vtr_C(sigma_B, _check_pos_int(K, "K"), d, K, H, p)


def ucrl_vtr_shift(Upsilon: float) -> float:
    """Cor. 1/2: the deterministic shift ``2 Upsilon I`` added to ``B_{k,h}`` (JDP: to the tree
    prefix ``B^2_{k,h}``; LDP: ``B^2_{k,h} = 2 Upsilon^L I``), so that the eigenvalues of
    ``B_{k,h}`` lie in ``[Upsilon, 3 Upsilon]`` on the good event."""
    return 2.0 * _check_nonneg_real(Upsilon, "Upsilon")


def ucrl_vtr_self_normalized_width(H: int, K: int, d: int, p: float) -> float:
    """Thm. 1 / Cor. 1-2: ``sqrt(2 H^2 log(3H (1+KH)^{d/2} / p))`` (self-normalized bound,
    App. B.1), with the log expanded as ``log(3H/p) + (d/2) log(1 + KH)`` so it never overflows."""
    H = _check_pos_int(H, "H")
    K = _check_pos_int(K, "K")
    d = _check_pos_int(d, "d")
    pp = _check_probability(p, "p")
    log_term = math.log(3.0 * H / pp) + 0.5 * d * math.log1p(float(K) * H)
    return H * math.sqrt(2.0 * log_term)


def ucrl_vtr_beta(lam: float, Upsilon: float, C_w: float, H: int, K: int, d: int,
                  p: float) -> float:
    """Cor. 1/2 (eq. beta_JDP-UCRL-VTR / beta_LDP-UCRL-VTR):
    ``beta_k = 3 (C_w + 1) sqrt(lam + Upsilon) + sqrt(2 H^2 log(3H (1+KH)^{d/2} / p))``
    (constant in ``k``). It satisfies Thm. 1's condition with ``Upsilon_low = Upsilon``,
    ``Upsilon_high = 3 Upsilon`` whenever ``C <= lam + Upsilon`` (true for the Gaussian corollaries,
    where ``Upsilon >= C``)."""
    lam = _check_nonneg_real(lam, "lam")
    ups = _check_nonneg_real(Upsilon, "Upsilon")
    cw = _check_positive_real(C_w, "C_w")
    return 3.0 * (cw + 1.0) * math.sqrt(lam + ups) + ucrl_vtr_self_normalized_width(H, K, d, p)


def ucrl_vtr_beta_condition(lam: float, ups_low: float, ups_high: float, C: float, C_w: float,
                            H: int, K: int, d: int, p: float) -> float:
    """Thm. 1 ("regret_Private_UCRL-VTR"), eq. beta_ineq_UCRL-VTR, right-hand side (the smallest
    admissible ``beta_k``): ``((lam + ups_high) C_w + C) / sqrt(lam + ups_low)
    + sqrt(2 H^2 log(3H (1+KH)^{d/2} / p))``."""
    lam = _check_nonneg_real(lam, "lam")
    lo = _check_nonneg_real(ups_low, "ups_low")
    hi = _check_nonneg_real(ups_high, "ups_high")
    c = _check_nonneg_real(C, "C")
    cw = _check_positive_real(C_w, "C_w")
    if hi < lo:
        raise PrivacyParameterError(f"ups_high must be >= ups_low, got {ups_high!r} < {ups_low!r}")
    if lam + lo <= 0.0:
        raise PrivacyParameterError(f"lam + ups_low must be > 0, got lam={lam!r}, ups_low={ups_low!r}")
    return ((lam + hi) * cw + c) / math.sqrt(lam + lo) + ucrl_vtr_self_normalized_width(H, K, d, p)


def ucrl_vtr_beta_nonprivate(C_w: float, H: int, K: int, d: int, p: float) -> float:
    """Non-private UCRL-VTR radius: Thm. 1 ("regret_Private_UCRL-VTR") with
    ``Upsilon_low = Upsilon_high = C = 0`` (``B = g = 0``) and ``lam = H^2``:
    ``beta = C_w sqrt(lam) + sqrt(2 H^2 log(3H (1+KH)^{d/2} / p)) = C_w H + ...``."""
    return ucrl_vtr_beta_condition(ucrl_vtr_lambda(H), 0.0, 0.0, 0.0, C_w, H, K, d, p)


# ============================================================================================
# (b) UCRL-VTR with pure DP (App. "Pure DP in the UCRL-VTR Framework", Rem. "Pure DP")
# ============================================================================================
def ucrl_vtr_l1_sensitivities(H: int, d: int) -> Tuple[float, float]:
    """L1 sensitivities for the Laplace variants of Alg. 1 (derived; the appendix leaves them
    implicit): ``(2 d H^2, 2 sqrt(d) H^2)`` for the FULL matrix ``X X^T`` and the vector ``X y``.

    ``||X X^T||_1 = sum_ij |X_i X_j| = ||X||_1^2 <= d ||X||_2^2 <= d H^2`` and
    ``||X y||_1 <= sqrt(d) ||X||_2 |y| <= sqrt(d) H^2`` (``||X|| <= H``, ``y in [0, H]``); a
    neighbouring user changes one such term, hence the factor 2.
    """
    H = _check_pos_int(H, "H")
    d = _check_pos_int(d, "d")
    return 2.0 * d * H * H, 2.0 * math.sqrt(d) * H * H


def ucrl_vtr_laplace_scales_jdp(epsilon: float, H: int, K: int, d: int) -> Tuple[float, float]:
    """Pure (eps, 0)-JDP UCRL-VTR Laplace scales ``(b_matrix, b_vector)``, derived (App. "Pure DP
    in the UCRL-VTR Framework": Laplace noise, simple composition everywhere):

    * ``2H`` trees (``H`` of matrices, ``H`` of vectors), ``K`` leaves each; a user is one leaf
      and belongs to ``K0 = tree_depth(K)`` nodes of every tree, so releasing ALL node values of
      all trees is a simple composition of ``2 H K0`` Laplace releases: per node
      ``simple_composition_budget(eps, 0, 2 H K0) = eps / (2 H K0)``. Every prefix sum, hence
      every ``(Lambda~_{k,h}, u~_{k,h})``, is post-processing (Billboard lemma gives JDP).
    * a matrix node holds ``M + (Z' + Z'^T)/2`` with ``Z'`` i.i.d. ``Lap(b_matrix)``; for the
      symmetric ``M`` this is post-processing of the full-matrix Laplace release ``M + Z'`` whose
      L1 sensitivity is ``2 d H^2`` (:func:`ucrl_vtr_l1_sensitivities`); vectors ``2 sqrt(d) H^2``.

    So ``b_matrix = 4 d H^3 K0 / eps`` and ``b_vector = 4 sqrt(d) H^3 K0 / eps``.
    """
    eps = _check_epsilon(epsilon)
    H = _check_pos_int(H, "H")
    K0 = ucrl_vtr_K0(K)
    eps_node, _ = simple_composition_budget(eps, 0.0, 2 * H * K0)
    s_mat, s_vec = ucrl_vtr_l1_sensitivities(H, d)
    return laplace_scale(s_mat, eps_node), laplace_scale(s_vec, eps_node)


def ucrl_vtr_laplace_scales_ldp(epsilon: float, H: int, d: int) -> Tuple[float, float]:
    """Pure (eps, 0)-LDP UCRL-VTR Laplace scales ``(b_matrix, b_vector)``, derived: each user
    sends ``2H`` Laplace releases (``X X^T + B^1``, ``X y + g^1`` for every ``h``), simple
    composition gives ``eps/(2H)`` each; L1 sensitivities as in :func:`ucrl_vtr_l1_sensitivities`
    (the matrix is sent as ``X X^T + (Z' + Z'^T)/2``, post-processing of ``X X^T + Z'``).
    So ``b_matrix = 4 d H^3 / eps``, ``b_vector = 4 sqrt(d) H^3 / eps``."""
    eps = _check_epsilon(epsilon)
    H = _check_pos_int(H, "H")
    e1, _ = simple_composition_budget(eps, 0.0, 2 * H)
    s_mat, s_vec = ucrl_vtr_l1_sensitivities(H, d)
    return laplace_scale(s_mat, e1), laplace_scale(s_vec, e1)


def ucrl_vtr_upsilon_pure(b_matrix: float, n_terms: int, d: int, K: int, H: int,
                          p: float) -> float:
    """Pure-DP replacement of ``Upsilon_{p/6KH}`` (App. "Pure DP in the UCRL-VTR Framework",
    which uses Clm. "bound.laplace.eigen" instead of Clm. "bounded.eigen"): the norm of the sum
    of ``n_terms`` symmetric Laplace matrices (``K0`` tree nodes for JDP, ``K`` user noises for
    LDP) is bounded by :func:`laplace_matrix_sum_bound` at ``alpha = p/(6KH)``; the union over
    the ``KH`` pairs ``(k,h)`` keeps the ``p/6`` budget of the Gaussian case. For LDP a prefix
    of ``k <= K`` terms is covered because the bound increases with ``n``."""
    K = _check_pos_int(K, "K")
    H = _check_pos_int(H, "H")
    pp = _check_probability(p, "p")
    return laplace_matrix_sum_bound(b_matrix, n_terms, d, pp / (6.0 * K * H))


def ucrl_vtr_C_pure(b_vector: float, n_terms: int, d: int, K: int, H: int, p: float) -> float:
    """Pure-DP replacement of ``C_{p/6KH}``: Clm. "bound.laplace.vector" extended to a sum of
    ``n_terms`` Laplace vectors (:func:`laplace_vector_sum_bound`) at ``alpha = p/(6KH)``."""
    K = _check_pos_int(K, "K")
    H = _check_pos_int(H, "H")
    pp = _check_probability(p, "p")
    return laplace_vector_sum_bound(b_vector, n_terms, d, pp / (6.0 * K * H))


def ucrl_vtr_beta_pure(lam: float, Upsilon: float, C: float, C_w: float, H: int, K: int,
                       d: int, p: float) -> float:
    """Pure-DP radius: the corollary form ``3 (C_w + 1) sqrt(lam + Upsilon) + width`` when it
    satisfies Thm. 1's condition, else the condition itself; i.e. the max of
    :func:`ucrl_vtr_beta` and :func:`ucrl_vtr_beta_condition` with ``ups_low = Upsilon``,
    ``ups_high = 3 Upsilon`` (shift ``2 Upsilon``). The corollary form relies on
    ``C <= lam + Upsilon``, which the Gaussian proof gets from ``Upsilon >= C`` but which is not
    automatic for the Laplace bounds, hence the max."""
    ups = _check_nonneg_real(Upsilon, "Upsilon")
    return max(
        ucrl_vtr_beta(lam, ups, C_w, H, K, d, p),
        ucrl_vtr_beta_condition(lam, ups, 3.0 * ups, C, C_w, H, K, d, p),
    )


# ============================================================================================
# (c) Batched JDP LSVI-UCB (Alg. 2, App. D "Initialization of the parameters"), Gaussian
# ============================================================================================
def lsvi_ucb_lambda(d: int) -> float:
    """App. D "Initialization of the parameters": ``lambda = d``."""
    return float(_check_pos_int(d, "d"))


def lsvi_ucb_num_batches(epsilon: float, H: int, K: int, d: int) -> int:
    """App. D: ``B = ceil((K eps)^{2/5} / (d^{3/5} H^{1/5}))`` static batches.

    Clipped to ``K`` (only ``min(B, K)`` batches can start within ``K`` episodes, so the number
    of releases ``N_K <= min(B, K)`` and the composition stays valid); the clip is only active
    for very large ``eps``."""
    eps = _check_epsilon(epsilon)
    H = _check_pos_int(H, "H")
    K = _check_pos_int(K, "K")
    d = _check_pos_int(d, "d")
    B = math.ceil((K * eps) ** 0.4 / (d ** 0.6 * H ** 0.2))
    return int(min(max(B, 1), K))


def lsvi_ucb_B0(B: int) -> int:
    """App. D: ``B0 = ceil(log2 B + 1)`` (= ``tree_depth(B)``)."""
    return tree_depth(_check_pos_int(B, "B"))


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
    eps = _check_epsilon(epsilon)
    dlt = _check_delta_open(delta)
    H = _check_pos_int(H, "H")
    B = _check_pos_int(B, "B")
    B0 = lsvi_ucb_B0(B)
    return (128.0 / eps) * math.sqrt(B * H * B0) * math.log(32.0 * H * B0 * B / dlt) ** 2


def lsvi_ucb_sigma_lambda_composed(epsilon: float, delta: float, H: int, B: int) -> float:
    """``sigma_Lambda`` rebuilt from the tools, following App. D's privacy proof step by step
    (see :func:`lsvi_ucb_sigma_lambda`); it is <= the printed closed form."""
    eps = _check_epsilon(epsilon)
    dlt = _check_delta_open(delta)
    H = _check_pos_int(H, "H")
    B = _check_pos_int(B, "B")
    eps_h, dlt_h = advanced_composition_budget(eps / 2.0, dlt / 2.0, H)
    eps_1, dlt_1 = advanced_composition_budget(eps_h, dlt_h, B)
    eps_0, dlt_0 = tree_node_budget(eps_1, dlt_1, B)
    return gaussian_sigma(2.0, eps_0, dlt_0)


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
    eps = _check_epsilon(epsilon)
    dlt = _check_delta_open(delta)
    H = _check_pos_int(H, "H")
    B = _check_pos_int(B, "B")
    B0 = lsvi_ucb_B0(B)
    return (128.0 / eps) * H * math.sqrt(H * B) * math.log(32.0 * H * B0 * B / dlt) ** 2


def lsvi_ucb_sigma_u_composed(epsilon: float, delta: float, H: int, B: int) -> float:
    """``sigma_u`` rebuilt from the tools (see :func:`lsvi_ucb_sigma_u`); <= the closed form."""
    eps = _check_epsilon(epsilon)
    dlt = _check_delta_open(delta)
    H = _check_pos_int(H, "H")
    B = _check_pos_int(B, "B")
    eps_h, dlt_h = advanced_composition_budget(eps / 2.0, dlt / 2.0, H)
    eps_1, dlt_1 = advanced_composition_budget(eps_h, dlt_h, B)
    return gaussian_sigma(4.0 * H, eps_1, dlt_1)


def lsvi_ucb_upsilon(sigma_lambda: float, B0: int, d: int, K: int, H: int, p: float) -> float:
    """App. D: ``Upsilon^J_{p/6KH} = sigma_Lambda B0 (4 sqrt(d) + 2 log(6KH/p))`` (as printed: a
    factor ``B0`` where Clm. "bounded.eigen" for a sum of ``B0`` nodes would give ``sqrt(B0)``,
    i.e. conservative)."""
    s = _check_nonneg_real(sigma_lambda, "sigma_lambda")
    B0 = _check_pos_int(B0, "B0")
    K = _check_pos_int(K, "K")
    H = _check_pos_int(H, "H")
    pp = _check_probability(p, "p")
    return gaussian_matrix_bound(s, 1, d, pp / (6.0 * K * H)) * B0


def lsvi_ucb_c_K(Upsilon: float, d: int) -> float:
    """App. D: ``c_K = d Upsilon^J_{p/6KH}``."""
    return _check_pos_int(d, "d") * _check_nonneg_real(Upsilon, "Upsilon")


def lsvi_ucb_C(sigma_u: float, d: int, K: int, H: int, p: float) -> float:
    """App. D: ``C^J_{p/6KH} = sigma_u (sqrt(d) + 2 sqrt(log(6KHd/p)))`` (printed with ``6KHd``
    inside the log although the subscript reads ``p/6KH``; the printed form is used and is the
    more conservative one)."""
    s = _check_nonneg_real(sigma_u, "sigma_u")
    d = _check_pos_int(d, "d")
    K = _check_pos_int(K, "K")
    H = _check_pos_int(H, "H")
    pp = _check_probability(p, "p")
    return gaussian_vector_bound(s, 1, d, pp / (6.0 * K * H * d))


def lsvi_ucb_U_K(lam: float, c_K: float, C: float, H: int, K: int, d: int) -> float:
    """App. D / Lem. "Lem.B.2": ``U_K = max{1, 2H sqrt(dK/(lam + c_K)) + C/(lam + c_K)}``."""
    lam = _check_nonneg_real(lam, "lam")
    cK = _check_nonneg_real(c_K, "c_K")
    c = _check_nonneg_real(C, "C")
    H = _check_pos_int(H, "H")
    K = _check_pos_int(K, "K")
    d = _check_pos_int(d, "d")
    denom = lam + cK
    if denom <= 0.0:
        raise PrivacyParameterError(f"lam + c_K must be > 0, got lam={lam!r}, c_K={c_K!r}")
    return max(1.0, 2.0 * H * math.sqrt(d * K / denom) + c / denom)


def lsvi_ucb_log_chi(U_K: float, H: int, K: int, d: int, p: float) -> float:
    """``log chi`` for App. D's ``chi = 24^2 * 18 * K^2 d U_K H / p``, computed as a sum of logs."""
    u = _check_positive_real(U_K, "U_K")
    H = _check_pos_int(H, "H")
    K = _check_pos_int(K, "K")
    d = _check_pos_int(d, "d")
    pp = _check_probability(p, "p")
    return (math.log(24.0 ** 2 * 18.0) + 2.0 * math.log(K) + math.log(d) + math.log(u)
            + math.log(H) - math.log(pp))


def lsvi_ucb_chi(U_K: float, H: int, K: int, d: int, p: float) -> float:
    """App. D / Lem. "Lem.B.3": ``chi = 24^2 * 18 * K^2 d U_K H / p`` (``inf`` on overflow)."""
    lc = lsvi_ucb_log_chi(U_K, H, K, d, p)
    return math.exp(lc) if lc < 709.0 else math.inf


def lsvi_ucb_beta(lam: float, c_K: float, U_K: float, H: int, K: int, d: int, p: float) -> float:
    """App. D / Lem. "Lem.B.3": ``beta = 24 H sqrt(d (lam + c_K)) log chi``.

    Non-private LSVI-UCB: ``c_K = 0`` and ``U_K`` with ``C = 0`` (Alg. 2 without noise); this is
    the choice made here instead of Jin et al. (2020)'s ``c d H sqrt(log(2dKH/p))`` whose constant
    ``c`` is unspecified."""
    lam = _check_nonneg_real(lam, "lam")
    cK = _check_nonneg_real(c_K, "c_K")
    d_ = _check_pos_int(d, "d")
    H_ = _check_pos_int(H, "H")
    return 24.0 * H_ * math.sqrt(d_ * (lam + cK)) * lsvi_ucb_log_chi(U_K, H, K, d, p)


# ============================================================================================
# (d) Pure JDP LSVI-UCB (App. "Pure joint DP in the linear setting")
# ============================================================================================
def lsvi_ucb_num_batches_pure(epsilon: float, H: int, K: int, d: int) -> int:
    """App. "Pure joint DP in the linear setting": ``B = ceil((K eps)^{1/3} / (d^{2/3} H^{1/3}))``
    (clipped to ``K`` like :func:`lsvi_ucb_num_batches`)."""
    eps = _check_epsilon(epsilon)
    H = _check_pos_int(H, "H")
    K = _check_pos_int(K, "K")
    d = _check_pos_int(d, "d")
    B = math.ceil((K * eps) ** (1.0 / 3.0) / (d ** (2.0 / 3.0) * H ** (1.0 / 3.0)))
    return int(min(max(B, 1), K))


def lsvi_ucb_laplace_scales(epsilon: float, H: int, B: int, d: int) -> Tuple[float, float]:
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
    eps = _check_epsilon(epsilon)
    H = _check_pos_int(H, "H")
    B = _check_pos_int(B, "B")
    d = _check_pos_int(d, "d")
    B0 = lsvi_ucb_B0(B)
    eps_node, _ = simple_composition_budget(eps, 0.0, 2 * H * B0)
    eps_rel, _ = simple_composition_budget(eps, 0.0, 2 * H * B)
    return (laplace_scale(2.0 * d, eps_node),
            laplace_scale(2.0 * math.sqrt(d) * (H + 1), eps_rel))


def lsvi_ucb_upsilon_pure(sigma_lambda: float, B0: int, d: int, K: int, H: int,
                          p: float) -> float:
    """App. "Pure joint DP in the linear setting", as printed:
    ``Upsilon^J_{p/6KHd} = sigma_Lambda B0 (2d + 2 sqrt(d log(6KHd/p)) + log(6KHd/p))``, i.e.
    ``B0 * laplace_matrix_bound(sigma_Lambda, d, p/(6KH))`` with ``sigma_Lambda`` used as the
    LAPLACE SCALE ``b`` (the claims are for unit-scale Laplace entries, whose standard deviation is
    ``sqrt 2``; reading sigma as a standard deviation would under-estimate the norm by ``sqrt 2``).
    Valid: it dominates :func:`laplace_matrix_sum_bound` ``(b, B0, d, p/(6KH))`` because
    ``2 B0 d + 2 sqrt(B0 d L) + L <= B0 (2d + 2 sqrt(d L) + L)``."""
    B0 = _check_pos_int(B0, "B0")
    K = _check_pos_int(K, "K")
    H = _check_pos_int(H, "H")
    pp = _check_probability(p, "p")
    return B0 * laplace_matrix_bound(sigma_lambda, d, pp / (6.0 * K * H))


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
    ups = _check_nonneg_real(Upsilon, "Upsilon")
    c = _check_nonneg_real(C, "C")
    lam = _check_nonneg_real(lam, "lam")
    d = _check_pos_int(d, "d")
    H = _check_pos_int(H, "H")
    return max(d * ups, c / H - lam)


def lsvi_ucb_C_pure(sigma_u: float, d: int, K: int, H: int, p: float) -> float:
    """App. "Pure joint DP in the linear setting", as printed:
    ``C^J_{p/6KHd} = sigma_u sqrt(d) log(6KHd/p)`` = Clm. "bound.laplace.vector" for the single
    Laplace vector ``eta^b_h`` (scale ``sigma_u``, again a Laplace scale) at ``alpha = p/(6KH)``."""
    K = _check_pos_int(K, "K")
    H = _check_pos_int(H, "H")
    pp = _check_probability(p, "p")
    return laplace_vector_bound(sigma_u, d, pp / (6.0 * K * H))


# ============================================================================================
# (e) UCRL-VTR+ (App. C, Alg. 3, Cor. "JDP-UCRL-VTR+" / "LDP-UCRL-VTR+")
# ============================================================================================
def ucrl_vtr_plus_lambda() -> float:
    """Alg. 3, line 1: ``lambda = 1``."""
    return 1.0


def ucrl_vtr_plus_sigmas_jdp(epsilon: float, delta: float, H: int, K: int,
                             d: int) -> Tuple[float, float]:
    """Cor. "JDP-UCRL-VTR+", printed: with ``S = sqrt(2 H K0 log(16H/delta) log(8/delta)
    log(32 H K0/delta))``, ``sigma_B1 = 64 d S / eps`` and ``sigma_B2 = 64 H^4 S / eps``.
    Equal to :func:`ucrl_vtr_plus_sigmas_jdp_composed`."""
    eps = _check_epsilon(epsilon)
    dlt = _check_delta_open(delta)
    H = _check_pos_int(H, "H")
    d = _check_pos_int(d, "d")
    K0 = ucrl_vtr_K0(K)
    S = math.sqrt(2.0 * H * K0 * math.log(16.0 * H / dlt) * math.log(8.0 / dlt)
                  * math.log(32.0 * H * K0 / dlt))
    return 64.0 * d * S / eps, 64.0 * H ** 4 * S / eps


def ucrl_vtr_plus_sigmas_jdp_composed(epsilon: float, delta: float, H: int, K: int,
                                      d: int) -> Tuple[float, float]:
    """Cor. "JDP-UCRL-VTR+" sigmas from the tools (App. C, privacy part of its proof): four
    families (``Lambda^``, ``u^``, ``Lambda~``, ``u~``) at ``(eps/4, delta/4)`` each (simple
    composition); advanced composition over ``H``:
    ``advanced_composition_budget(eps/4, delta/4, H) = (eps/(4 sqrt(8H log(8/delta))), delta/(8H))``;
    tree node budget over ``K`` leaves; Gaussian mechanism with L2 sensitivity ``2d``
    (``||sigma_bar^{-2} phi phi^T||_F <= d``, ``sigma_bar^2 >= H^2/d``) for ``B1``/``f`` and
    ``2 H^4`` (``||phi_{V^2} phi_{V^2}^T||_F <= H^4``) for ``B2``/``g``."""
    eps = _check_epsilon(epsilon)
    dlt = _check_delta_open(delta)
    H = _check_pos_int(H, "H")
    K = _check_pos_int(K, "K")
    d = _check_pos_int(d, "d")
    eps_h, dlt_h = advanced_composition_budget(eps / 4.0, dlt / 4.0, H)
    eps0, dlt0 = tree_node_budget(eps_h, dlt_h, K)
    return gaussian_sigma(2.0 * d, eps0, dlt0), gaussian_sigma(2.0 * H ** 4, eps0, dlt0)


def ucrl_vtr_plus_sigmas_ldp(epsilon: float, delta: float, H: int,
                             d: int) -> Tuple[float, float]:
    """Cor. "LDP-UCRL-VTR+", printed: ``sigma_B1 = 8 d H / eps sqrt(2 log(8H/delta))``,
    ``sigma_B2 = 8 H^5 / eps sqrt(2 log(8H/delta))``."""
    eps = _check_epsilon(epsilon)
    dlt = _check_delta_open(delta)
    H = _check_pos_int(H, "H")
    d = _check_pos_int(d, "d")
    r = math.sqrt(2.0 * math.log(8.0 * H / dlt))
    return 8.0 * d * H / eps * r, 8.0 * H ** 5 / eps * r


def ucrl_vtr_plus_sigmas_ldp_composed(epsilon: float, delta: float, H: int,
                                      d: int) -> Tuple[float, float]:
    """Cor. "LDP-UCRL-VTR+" sigmas from the tools: ``4H`` local releases per user, simple
    composition ``(eps/(4H), delta/(4H))`` each, Gaussian mechanism with L2 sensitivity ``2d``
    (``B1``, ``f``) and ``2 H^4`` (``B2``, ``g``)."""
    eps = _check_epsilon(epsilon)
    dlt = _check_delta_open(delta)
    H = _check_pos_int(H, "H")
    d = _check_pos_int(d, "d")
    e1, d1 = simple_composition_budget(eps, dlt, 4 * H)
    return gaussian_sigma(2.0 * d, e1, d1), gaussian_sigma(2.0 * H ** 4, e1, d1)


def ucrl_vtr_plus_upsilon(sigma: float, n_terms: int, d: int, K: int, H: int, p: float) -> float:
    """Cor. "JDP/LDP-UCRL-VTR+": ``Upsilon^{.,i}_{p/24KH} = sigma_Bi sqrt(n) (4 sqrt(d)
    + 2 log(24KH/p))`` with ``n = K0`` (JDP) or ``K`` (LDP)."""
    K = _check_pos_int(K, "K")
    H = _check_pos_int(H, "H")
    pp = _check_probability(p, "p")
    return gaussian_matrix_bound(sigma, n_terms, d, pp / (24.0 * K * H))


def ucrl_vtr_plus_C(sigma: float, n_terms: int, d: int, K: int, H: int, p: float) -> float:
    """App. C, proofs of the UCRL-VTR+ corollaries: ``C^{.,i}_{p/24KH} = sigma_Bi sqrt(n)
    (sqrt(d) + 2 sqrt(log(24KH/p)))`` with ``n = K0`` (JDP) or ``K`` (LDP)."""
    K = _check_pos_int(K, "K")
    H = _check_pos_int(H, "H")
    pp = _check_probability(p, "p")
    return gaussian_vector_bound(sigma, n_terms, d, pp / (24.0 * K * H))


def ucrl_vtr_plus_bernstein_terms(lam: float, H: int, K: int, d: int, p: float,
                                  k: Optional[int] = None) -> Tuple[float, float, float]:
    """Thm. "Regret bound of Alg. 3" (eq. beta_ineq_UCRL-VTRPlus), noise-free parts of
    ``(beta_check, beta_hat, beta_tilde)`` at episode ``k`` (default ``K``), with
    ``l = log(24 k^2 H / p)``:
    ``8 d sqrt(log(1 + K/lam) l) + 4 sqrt(d) l``,
    ``8 sqrt(d log(1 + K/lam) l) + 4 sqrt(d) l``,
    ``8 sqrt(d H^4 log(1 + K H^4/(d lam)) l) + 4 H^2 l``."""
    lam = _check_positive_real(lam, "lam")
    H = _check_pos_int(H, "H")
    K = _check_pos_int(K, "K")
    d = _check_pos_int(d, "d")
    pp = _check_probability(p, "p")
    k = K if k is None else _check_pos_int(k, "k")
    ell = math.log(24.0 * k * k * H / pp)
    lK = math.log1p(K / lam)
    check = 8.0 * d * math.sqrt(lK * ell) + 4.0 * math.sqrt(d) * ell
    hat = 8.0 * math.sqrt(d * lK * ell) + 4.0 * math.sqrt(d) * ell
    tilde = (8.0 * math.sqrt(d * H ** 4 * math.log1p(K * H ** 4 / (d * lam)) * ell)
             + 4.0 * H * H * ell)
    return check, hat, tilde


def ucrl_vtr_plus_betas(lam: float, Upsilon1: float, Upsilon2: float, C_w: float, H: int,
                        K: int, d: int, p: float,
                        k: Optional[int] = None) -> Tuple[float, float, float]:
    """Cor. "JDP/LDP-UCRL-VTR+" (eqs. beta_JDP-UCRL-VTRPlus / beta_LDP-UCRL-VTRPlus):
    ``(beta_hat, beta_check, beta_tilde)`` at episode ``k`` (default ``K``; the sequences are
    non-decreasing so the value at ``K`` is a valid constant choice):
    ``beta_check = 3(C_w+1) sqrt(lam + Upsilon1) + 8d sqrt(log(1+K/lam) l) + 4 sqrt(d) l``,
    ``beta_hat = 3(C_w+1) sqrt(lam + Upsilon1) + 8 sqrt(d log(1+K/lam) l) + 4 sqrt(d) l``,
    ``beta_tilde = 3(C_w+1) sqrt(lam + Upsilon2) + 8 sqrt(d H^4 log(1+K H^4/(d lam)) l) + 4 H^2 l``,
    ``l = log(24 k^2 H / p)``."""
    lam_ = _check_positive_real(lam, "lam")
    u1 = _check_nonneg_real(Upsilon1, "Upsilon1")
    u2 = _check_nonneg_real(Upsilon2, "Upsilon2")
    cw = _check_positive_real(C_w, "C_w")
    check_t, hat_t, tilde_t = ucrl_vtr_plus_bernstein_terms(lam_, H, K, d, p, k)
    n1 = 3.0 * (cw + 1.0) * math.sqrt(lam_ + u1)
    n2 = 3.0 * (cw + 1.0) * math.sqrt(lam_ + u2)
    return n1 + hat_t, n1 + check_t, n2 + tilde_t


def ucrl_vtr_plus_betas_condition(lam: float, ups1_low: float, ups1_high: float, C1: float,
                                  ups2_low: float, ups2_high: float, C2: float, C_w: float,
                                  H: int, K: int, d: int, p: float,
                                  k: Optional[int] = None) -> Tuple[float, float, float]:
    """Thm. "Regret bound of Alg. 3", eq. beta_ineq_UCRL-VTRPlus, right-hand sides (the smallest
    admissible radii) ``(beta_hat, beta_check, beta_tilde)``; the noise part is
    ``(C_w (lam + ups_high) + C) / sqrt(lam + ups_low)``. With all ``Upsilon, C = 0`` these are the
    non-private radii of Zhou et al. (2021) (``C_w sqrt(lam)`` + Bernstein terms)."""
    lam_ = _check_positive_real(lam, "lam")
    cw = _check_positive_real(C_w, "C_w")
    vals = {}
    for name, v in (("ups1_low", ups1_low), ("ups1_high", ups1_high), ("C1", C1),
                    ("ups2_low", ups2_low), ("ups2_high", ups2_high), ("C2", C2)):
        vals[name] = _check_nonneg_real(v, name)
    for i in ("1", "2"):
        if vals[f"ups{i}_high"] < vals[f"ups{i}_low"]:
            raise PrivacyParameterError(
                f"ups{i}_high must be >= ups{i}_low, got {vals[f'ups{i}_high']!r} < {vals[f'ups{i}_low']!r}"
            )
    check_t, hat_t, tilde_t = ucrl_vtr_plus_bernstein_terms(lam_, H, K, d, p, k)
    n1 = (cw * (lam_ + vals["ups1_high"]) + vals["C1"]) / math.sqrt(lam_ + vals["ups1_low"])
    n2 = (cw * (lam_ + vals["ups2_high"]) + vals["C2"]) / math.sqrt(lam_ + vals["ups2_low"])
    return n1 + hat_t, n1 + check_t, n2 + tilde_t


def ucrl_vtr_plus_laplace_scales_jdp(epsilon: float, H: int, K: int,
                                     d: int) -> Tuple[float, float, float, float]:
    """Pure (eps, 0)-JDP UCRL-VTR+ Laplace scales ``(b_B1, b_f, b_B2, b_g)``, derived as for
    UCRL-VTR (remark after Cor. "LDP-UCRL-VTR+"): ``4H`` trees, a user in ``K0`` nodes of each,
    simple composition: ``eps/(4 H K0)`` per node. L1 sensitivities (``||phi_V|| <= H``,
    ``||phi_{V^2}|| <= H^2``, ``sigma_bar^{-2} <= d/H^2``, ``||x||_1 <= sqrt(d) ||x||_2``):
    ``B1``: ``2 ||sigma_bar^{-2} phi phi^T||_1 <= 2 d^2``; ``f``: ``2 d^{3/2}``;
    ``B2``: ``2 d H^4``; ``g``: ``2 sqrt(d) H^4``. Matrices released as ``M + (Z' + Z'^T)/2``."""
    eps = _check_epsilon(epsilon)
    H = _check_pos_int(H, "H")
    d = _check_pos_int(d, "d")
    K0 = ucrl_vtr_K0(K)
    e0, _ = simple_composition_budget(eps, 0.0, 4 * H * K0)
    return _vtr_plus_l1_scales(e0, H, d)


def ucrl_vtr_plus_laplace_scales_ldp(epsilon: float, H: int,
                                     d: int) -> Tuple[float, float, float, float]:
    """Pure (eps, 0)-LDP UCRL-VTR+ Laplace scales ``(b_B1, b_f, b_B2, b_g)``: ``4H`` local
    releases per user, ``eps/(4H)`` each (simple composition); L1 sensitivities as in
    :func:`ucrl_vtr_plus_laplace_scales_jdp`."""
    eps = _check_epsilon(epsilon)
    H = _check_pos_int(H, "H")
    d = _check_pos_int(d, "d")
    e1, _ = simple_composition_budget(eps, 0.0, 4 * H)
    return _vtr_plus_l1_scales(e1, H, d)


def _vtr_plus_l1_scales(eps_each: float, H: int, d: int) -> Tuple[float, float, float, float]:
    return (laplace_scale(2.0 * d * d, eps_each),
            laplace_scale(2.0 * d ** 1.5, eps_each),
            laplace_scale(2.0 * d * H ** 4, eps_each),
            laplace_scale(2.0 * math.sqrt(d) * H ** 4, eps_each))


def ucrl_vtr_plus_upsilon_pure(b: float, n_terms: int, d: int, K: int, H: int,
                               p: float) -> float:
    """Pure-DP ``Upsilon^{.,i}_{p/24KH}``: :func:`laplace_matrix_sum_bound` at ``alpha = p/(24KH)``."""
    K = _check_pos_int(K, "K")
    H = _check_pos_int(H, "H")
    pp = _check_probability(p, "p")
    return laplace_matrix_sum_bound(b, n_terms, d, pp / (24.0 * K * H))


def ucrl_vtr_plus_C_pure(b: float, n_terms: int, d: int, K: int, H: int, p: float) -> float:
    """Pure-DP ``C^{.,i}_{p/24KH}``: :func:`laplace_vector_sum_bound` at ``alpha = p/(24KH)``."""
    K = _check_pos_int(K, "K")
    H = _check_pos_int(H, "H")
    pp = _check_probability(p, "p")
    return laplace_vector_sum_bound(b, n_terms, d, pp / (24.0 * K * H))


# ============================================================================================
# (g) Tight calibration (issue 6, item 2): the same releases, sigmas from the tight accountant
# ============================================================================================
# Every function below returns the smallest noise scale(s) for which the release the agents
# actually make is (eps, delta)-DP under privrl.privacy.accounting, counting exactly the noise
# draws one user's data enters:
#   * a binary tree over n leaves: tree_nodes_per_leaf(n) = floor(log2 n) + 1 (<= the paper's
#     K0 / B0 = ceil(log2 n) + 1) released nodes per user and tree;
#   * Gaussian releases with a common noise level compose into ONE Gaussian with sensitivity
#     sqrt(sum_i Delta_i^2) (Dong, Roth & Su 2019, Cor. 3.3), whose exact (eps, delta) curve is
#     the analytic Gaussian mechanism (Balle & Wang 2018, Thm. 8);
#   * with several noise levels the paper's ratio between them is kept (so every property the
#     regret proofs draw from that ratio still holds) and one common multiplier is minimised;
#   * pure DP (delta = 0): Laplace + simple composition as in the paper (a Gaussian accountant
#     cannot improve a pure-DP guarantee); only the node count is made exact.
# The sensitivities are the paper's (2 H^2 for both X X^T and X y in Alg. 1, 2 and 2(H+1) in
# Alg. 2, 2d and 2 H^4 in Alg. 3), so "tight" changes the accountant, not the proof's bounds.
CALIBRATIONS = ("paper", "tight")


def _check_calibration(calibration) -> str:
    if not isinstance(calibration, str) or calibration not in CALIBRATIONS:
        raise PrivacyParameterError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}")
    return calibration


def ucrl_vtr_sigma_jdp_tight(epsilon: float, delta: float, H: int, K: int) -> float:
    """Tight ``sigma_B`` of JDP UCRL-VTR (Alg. 1 / Cor. 1's release, tight accountant): ``2H``
    trees (``H`` of ``X X^T``, ``H`` of ``X y``), one common ``sigma``, every node L2 sensitivity
    ``2 H^2`` (App. B), ``n = tree_nodes_per_leaf(K)`` released nodes per user and tree. The whole
    release is one Gaussian with sensitivity ``2 H^2 sqrt(2 H n)``:
    ``sigma = analytic_gaussian_sigma(2 H^2 sqrt(2 H n), eps, delta)``."""
    eps = _check_epsilon(epsilon)
    dlt = _check_delta_open(delta)
    H = _check_pos_int(H, "H")
    n = tree_nodes_per_leaf(_check_pos_int(K, "K"))
    sens = composed_l2_sensitivity([ucrl_vtr_l2_sensitivity(H)], [2 * H * n])
    return analytic_gaussian_sigma(sens, eps, dlt)


def ucrl_vtr_sigma_ldp_tight(epsilon: float, delta: float, H: int) -> float:
    """Tight ``sigma_B`` of LDP UCRL-VTR (Cor. 2's randomizer): each user sends ``2H`` Gaussian
    releases of L2 sensitivity ``2 H^2`` with one ``sigma``: one Gaussian with sensitivity
    ``2 H^2 sqrt(2H)``, ``sigma = analytic_gaussian_sigma(2 H^2 sqrt(2H), eps, delta)``."""
    eps = _check_epsilon(epsilon)
    dlt = _check_delta_open(delta)
    H = _check_pos_int(H, "H")
    sens = composed_l2_sensitivity([ucrl_vtr_l2_sensitivity(H)], [2 * H])
    return analytic_gaussian_sigma(sens, eps, dlt)


def ucrl_vtr_laplace_scales_jdp_tight(epsilon: float, H: int, K: int, d: int) -> Tuple[float, float]:
    """Pure JDP UCRL-VTR with exact node count: as :func:`ucrl_vtr_laplace_scales_jdp` (simple
    composition, ``eps / (2 H n)`` per node) with ``n = tree_nodes_per_leaf(K)`` instead of
    ``K0``; equal to it when ``K`` is a power of two."""
    eps = _check_epsilon(epsilon)
    H = _check_pos_int(H, "H")
    n = tree_nodes_per_leaf(_check_pos_int(K, "K"))
    eps_node, _ = simple_composition_budget(eps, 0.0, 2 * H * n)
    s_mat, s_vec = ucrl_vtr_l1_sensitivities(H, d)
    return laplace_scale(s_mat, eps_node), laplace_scale(s_vec, eps_node)


def lsvi_ucb_u_sensitivity(H: int) -> float:
    """App. D ("M^u_h is (eps', delta')-DP"): L2 sensitivity ``2(H + 1)`` of the protected sum
    ``sum_j phi_j (r_j + V(s'_j))`` (``||phi|| <= 1``, ``r + V in [0, H + 1]``); the paper then
    bounds it by ``4H`` for its closed form."""
    H = _check_pos_int(H, "H")
    return 2.0 * (H + 1)


def lsvi_ucb_releases(K: int, B: int) -> int:
    """Number of perturbed releases of Alg. 2 with ``B`` static batches over ``K`` episodes: one
    at the end of every batch that is followed by another (line 14, ``k = k_{b+1} - 1``), i.e.
    ``len(k_i <= K) - 1`` with ``k_i = i ceil(K/B) + 1`` (Alg. 2, line 4); at least 1 (so a
    degenerate ``B = 1`` still gets a positive noise scale). Every release sums all earlier
    users, so a user enters at most this many u releases and the Lambda trees receive at most
    this many leaves. Equals ``B - 1`` unless late batches never start."""
    K = _check_pos_int(K, "K")
    B = _check_pos_int(B, "B")
    L = -(-K // B)
    starts = min(B, (K - 1) // L + 1)
    return max(1, starts - 1)


def lsvi_ucb_sigmas_tight(epsilon: float, delta: float, H: int, B: int,
                          K: Optional[int] = None) -> Tuple[float, float]:
    """Tight ``(sigma_Lambda, sigma_u)`` of Alg. 2 (App. D's release, tight accountant).

    ``R = lsvi_ucb_releases(K, B)`` releases (``R = B`` when ``K`` is not given: the paper's
    count, conservative). Per user: ``H`` Lambda trees of capacity ``B``,
    ``n = tree_nodes_per_leaf(B)`` released nodes each (at most ``tree_nodes_per_leaf(R)`` are
    ever released; the capacity count is kept because privrl.privacy.continual rescales this
    sigma for the other continual-release mechanisms relative to the capacity-``B`` tree),
    L2 sensitivity 2 (as the paper uses);
    ``H R`` releases of ``u`` (fresh ``eta`` each: every later release re-sums the user's term),
    L2 sensitivity ``2(H + 1)`` (:func:`lsvi_ucb_u_sensitivity`). The paper's ratio
    ``sigma_u / sigma_Lambda = H / sqrt(B0)`` (the two closed forms of App. D) is kept, so
    Lem. "Lem.B.4"'s ``C / (lam + c_K) <= H`` holds as in the paper; with ``sigma_Lambda = t``:
    ``mu^2 = (4 H n + 4 (H+1)^2 H R B0 / H^2) / t^2``, and ``t`` is the smallest value with
    ``mu <= gaussian_mu(eps, delta)``."""
    eps = _check_epsilon(epsilon)
    dlt = _check_delta_open(delta)
    H = _check_pos_int(H, "H")
    B = _check_pos_int(B, "B")
    nu = B if K is None else lsvi_ucb_releases(K, B)
    n = tree_nodes_per_leaf(B)
    ratio = H / math.sqrt(lsvi_ucb_B0(B))
    # sensitivity of the whole release measured in units of sigma_Lambda
    sens = composed_l2_sensitivity([2.0, lsvi_ucb_u_sensitivity(H) / ratio], [H * n, H * nu])
    t = analytic_gaussian_sigma(sens, eps, dlt)
    return t, ratio * t


def lsvi_ucb_laplace_scales_tight(epsilon: float, H: int, B: int, d: int,
                                  K: Optional[int] = None) -> Tuple[float, float]:
    """Pure JDP Alg. 2 with exact counts: as :func:`lsvi_ucb_laplace_scales` (simple
    composition, ``eps/(2H)`` per family) with ``R = lsvi_ucb_releases(K, B)`` (``B`` without
    ``K``) u releases per user and step and ``tree_nodes_per_leaf(R)`` Lambda nodes per user and
    tree instead of ``B`` and ``B0``."""
    eps = _check_epsilon(epsilon)
    H = _check_pos_int(H, "H")
    B = _check_pos_int(B, "B")
    d = _check_pos_int(d, "d")
    R = B if K is None else lsvi_ucb_releases(K, B)
    eps_node, _ = simple_composition_budget(eps, 0.0, 2 * H * tree_nodes_per_leaf(R))
    eps_rel, _ = simple_composition_budget(eps, 0.0, 2 * H * R)
    return (laplace_scale(2.0 * d, eps_node),
            laplace_scale(2.0 * math.sqrt(d) * (H + 1), eps_rel))


def ucrl_vtr_plus_sigmas_jdp_tight(epsilon: float, delta: float, H: int, K: int,
                                   d: int) -> Tuple[float, float]:
    """Tight ``(sigma_B1, sigma_B2)`` of JDP UCRL-VTR+ (Alg. 3): ``4H`` trees, ``n =
    tree_nodes_per_leaf(K)`` nodes per user each; ``Lambda^``/``u^`` nodes sensitivity ``2d``
    with ``sigma_B1`` (= ``sigma_f``), ``Lambda~``/``u~`` nodes ``2 H^4`` with ``sigma_B2``
    (= ``sigma_g``). The paper's ratio ``sigma_B1 / sigma_B2 = d / H^4`` (equal per-node
    ``Delta / sigma``) is kept, so the release is one Gaussian with ``mu = 2d sqrt(4 H n) /
    sigma_B1``: ``sigma_B1 = analytic_gaussian_sigma(2d sqrt(4Hn), eps, delta)``,
    ``sigma_B2 = analytic_gaussian_sigma(2 H^4 sqrt(4Hn), eps, delta)``."""
    eps = _check_epsilon(epsilon)
    dlt = _check_delta_open(delta)
    H = _check_pos_int(H, "H")
    d = _check_pos_int(d, "d")
    n = tree_nodes_per_leaf(_check_pos_int(K, "K"))
    mu = gaussian_mu(eps, dlt)
    root = math.sqrt(4.0 * H * n)
    return 2.0 * d * root / mu, 2.0 * H ** 4 * root / mu


def ucrl_vtr_plus_sigmas_ldp_tight(epsilon: float, delta: float, H: int,
                                   d: int) -> Tuple[float, float]:
    """Tight ``(sigma_B1, sigma_B2)`` of LDP UCRL-VTR+: ``4H`` local releases per user (``2H``
    of sensitivity ``2d``, ``2H`` of ``2 H^4``), ratio kept as in
    :func:`ucrl_vtr_plus_sigmas_jdp_tight`: ``sigma_B1 = 2d sqrt(4H) / mu``,
    ``sigma_B2 = 2 H^4 sqrt(4H) / mu`` with ``mu = gaussian_mu(eps, delta)``."""
    eps = _check_epsilon(epsilon)
    dlt = _check_delta_open(delta)
    H = _check_pos_int(H, "H")
    d = _check_pos_int(d, "d")
    mu = gaussian_mu(eps, dlt)
    root = math.sqrt(4.0 * H)
    return 2.0 * d * root / mu, 2.0 * H ** 4 * root / mu


def ucrl_vtr_plus_laplace_scales_jdp_tight(epsilon: float, H: int, K: int,
                                           d: int) -> Tuple[float, float, float, float]:
    """Pure JDP UCRL-VTR+ with exact node count: :func:`ucrl_vtr_plus_laplace_scales_jdp` with
    ``tree_nodes_per_leaf(K)`` nodes per user instead of ``K0``."""
    eps = _check_epsilon(epsilon)
    H = _check_pos_int(H, "H")
    d = _check_pos_int(d, "d")
    n = tree_nodes_per_leaf(_check_pos_int(K, "K"))
    e0, _ = simple_composition_budget(eps, 0.0, 4 * H * n)
    return _vtr_plus_l1_scales(e0, H, d)


def _tight_node_budget(l2_sensitivity: float, sigma: float, delta: float) -> Tuple[float, float]:
    """Budget of ONE node under the analytic Gaussian at the target delta (informative only:
    under the tight accountant per-node budgets are not added up)."""
    return analytic_gaussian_epsilon(sigma, l2_sensitivity, delta), delta


# ============================================================================================
# (f) Entry points
# ============================================================================================
_KINDS = ("none", "jdp", "ldp")


def _check_kind(kind, allowed=_KINDS) -> str:
    if not isinstance(kind, str) or kind not in allowed:
        raise PrivacyParameterError(f"kind must be one of {allowed}, got {kind!r}")
    return kind


def _privacy_args(kind: str, epsilon, delta) -> Tuple[Optional[float], Optional[float], bool]:
    """Validate (epsilon, delta) for ``kind``; returns (epsilon, delta, pure)."""
    if kind == "none":
        eps = None if epsilon is None else _check_epsilon(epsilon)
        dlt = None if delta is None else _check_delta_pure_ok(delta)
        return eps, dlt, False
    if epsilon is None:
        raise PrivacyParameterError(f"epsilon is required for kind={kind!r}, got None")
    eps = _check_epsilon(epsilon)
    if delta is None:
        raise PrivacyParameterError(
            f"delta is required for kind={kind!r} (0 for pure DP), got None")
    dlt = _check_delta_pure_ok(delta)
    return eps, dlt, dlt == 0.0


def _in_theorem_regime(kind: str, eps: Optional[float], dlt: Optional[float], pure: bool) -> bool:
    """The corollaries / theorems are stated for ``eps, delta in (0, 1)``; the pure-DP variants
    (delta = 0) are remarks built on the same corollaries, flagged on ``eps < 1`` only."""
    if kind == "none":
        return True
    if pure:
        return eps < 1.0
    return eps < 1.0 and 0.0 < dlt < 1.0


def calibrate_ucrl_vtr(kind: str, epsilon: Optional[float], delta: Optional[float], H: int,
                       K: int, d: int, C_w: float, p: float = 0.05,
                       calibration: str = "paper") -> Dict[str, Any]:
    """All parameters of Alg. 1 (Privacy-Preserving UCRL-VTR) for ``kind`` in
    ``{"none", "jdp", "ldp"}``; ``delta == 0`` selects pure DP (Laplace, App. "Pure DP in the
    UCRL-VTR Framework"). For ``"none"``, ``epsilon``/``delta`` are ignored (may be None).

    Keys (paper names): ``kind, pure, noise ('gaussian' | 'laplace' | None), epsilon, delta, p,
    H, K, d, C_w, lam (H^2), K0, alpha (p/6KH), noise_terms (number of noise matrices summed in
    B_{k,h}: K0 for JDP, K for LDP, 0 non-private), noise_site ('tree' = server-side tree prefixes
    B^2/g^2, 'user' = local noises B^1/g^1, None), node_budget ((eps0, delta0) of one noise
    draw), sigma_B (scale of the matrix-noise entries of Z': std for Gaussian, Laplace b for
    pure), sigma_g (scale of the vector-noise entries; = sigma_B for Gaussian), laplace_b /
    laplace_b_vector (= sigma_B / sigma_g when pure, else None), sym_divisor (matrix nodes are
    (Z' + Z'^T)/sym_divisor: sqrt 2 Gaussian (App. B), 2 Laplace), Upsilon, C, shift (the
    deterministic multiple of I added to B_{k,h}: 2 Upsilon, 0 non-private), ups_low, ups_high,
    width (self-normalized term), beta (the radius to use), beta_condition (Thm. 1 right-hand
    side, beta >= beta_condition), in_theorem_regime, calibration``.

    ``calibration="paper"`` (default) reproduces Cor. 1 / Cor. 2; ``"tight"`` takes the noise
    scales of section (g) (:func:`ucrl_vtr_sigma_jdp_tight`, :func:`ucrl_vtr_sigma_ldp_tight`,
    pure: :func:`ucrl_vtr_laplace_scales_jdp_tight`) and feeds them through the same Upsilon, C,
    shift and beta formulas; ``node_budget`` is then the analytic-Gaussian ``(eps, delta)`` of one
    node at the target delta (pure: ``eps / (2H n)``, exact node count ``n``).
    """
    kind = _check_kind(kind)
    eps, dlt, pure = _privacy_args(kind, epsilon, delta)
    H = _check_pos_int(H, "H")
    K = _check_pos_int(K, "K")
    d = _check_pos_int(d, "d")
    cw = _check_positive_real(C_w, "C_w")
    pp = _check_probability(p, "p")
    cal = _check_calibration(calibration)
    tight = cal == "tight"
    lam = ucrl_vtr_lambda(H)
    K0 = ucrl_vtr_K0(K)
    out: Dict[str, Any] = {
        "kind": kind, "pure": pure, "calibration": cal, "epsilon": eps, "delta": dlt, "p": pp,
        "H": H, "K": K, "d": d, "C_w": cw, "lam": lam, "K0": K0,
        "alpha": pp / (6.0 * K * H),
        "width": ucrl_vtr_self_normalized_width(H, K, d, pp),
        "in_theorem_regime": _in_theorem_regime(kind, eps, dlt, pure),
    }
    if kind == "none":
        beta = ucrl_vtr_beta_nonprivate(cw, H, K, d, pp)
        out.update(noise=None, noise_terms=0, noise_site=None, node_budget=None,
                   sigma_B=None, sigma_g=None, laplace_b=None, laplace_b_vector=None,
                   sym_divisor=None, Upsilon=0.0, C=0.0, shift=0.0, ups_low=0.0, ups_high=0.0,
                   beta=beta, beta_condition=beta)
        return out

    n = K0 if kind == "jdp" else K
    if not pure:
        if tight:
            sigma = (ucrl_vtr_sigma_jdp_tight(eps, dlt, H, K) if kind == "jdp"
                     else ucrl_vtr_sigma_ldp_tight(eps, dlt, H))
            node_budget = _tight_node_budget(ucrl_vtr_l2_sensitivity(H), sigma, dlt)
        elif kind == "jdp":
            sigma = ucrl_vtr_sigma_jdp(eps, dlt, H, K)
            node_budget = tree_node_budget(*advanced_composition_budget(eps / 2, dlt / 2, H), K)
        else:
            sigma = ucrl_vtr_sigma_ldp(eps, dlt, H)
            node_budget = simple_composition_budget(eps, dlt, 2 * H)
        sigma_g = sigma
        ups = ucrl_vtr_upsilon(sigma, n, d, K, H, pp)
        C = ucrl_vtr_C(sigma, n, d, K, H, pp)
        beta = ucrl_vtr_beta(lam, ups, cw, H, K, d, pp)
        noise, sym = "gaussian", _SQRT2
    else:
        if kind == "jdp":
            n_nodes = tree_nodes_per_leaf(K) if tight else K0
            sigma, sigma_g = (ucrl_vtr_laplace_scales_jdp_tight(eps, H, K, d) if tight
                              else ucrl_vtr_laplace_scales_jdp(eps, H, K, d))
            node_budget = simple_composition_budget(eps, 0.0, 2 * H * n_nodes)
        else:
            sigma, sigma_g = ucrl_vtr_laplace_scales_ldp(eps, H, d)
            node_budget = simple_composition_budget(eps, 0.0, 2 * H)
        ups = ucrl_vtr_upsilon_pure(sigma, n, d, K, H, pp)
        C = ucrl_vtr_C_pure(sigma_g, n, d, K, H, pp)
        beta = ucrl_vtr_beta_pure(lam, ups, C, cw, H, K, d, pp)
        noise, sym = "laplace", 2.0
    out.update(
        noise=noise, noise_terms=n, noise_site="tree" if kind == "jdp" else "user",
        node_budget=node_budget, sigma_B=sigma, sigma_g=sigma_g,
        laplace_b=sigma if pure else None, laplace_b_vector=sigma_g if pure else None,
        sym_divisor=sym, Upsilon=ups, C=C, shift=ucrl_vtr_shift(ups),
        ups_low=ups, ups_high=3.0 * ups, beta=beta,
        beta_condition=ucrl_vtr_beta_condition(lam, ups, 3.0 * ups, C, cw, H, K, d, pp),
    )
    return out


def _resolve_batches(batches: Union[str, int], kind: str, pure: bool, eps: Optional[float],
                     H: int, K: int, d: int) -> int:
    if isinstance(batches, str):
        if batches == "every":
            return K
        if batches == "static":
            if kind == "none":
                return K
            return (lsvi_ucb_num_batches_pure(eps, H, K, d) if pure
                    else lsvi_ucb_num_batches(eps, H, K, d))
        raise PrivacyParameterError(
            f"batches must be 'static', 'every' or an int in [1, K], got {batches!r}")
    if isinstance(batches, bool) or not isinstance(batches, numbers.Integral):
        raise PrivacyParameterError(
            f"batches must be 'static', 'every' or an int in [1, K], got {batches!r}")
    B = int(batches)
    if not (1 <= B <= K):
        raise PrivacyParameterError(f"batches must be an int in [1, K={K}], got {batches!r}")
    return B


def calibrate_lsvi_ucb(kind: str, epsilon: Optional[float], delta: Optional[float], H: int,
                       K: int, d: int, p: float = 0.05,
                       batches: Union[str, int] = "static",
                       calibration: str = "paper") -> Dict[str, Any]:
    """All parameters of Alg. 2 (batched JDP LSVI-UCB, App. D "Initialization of the
    parameters") for ``kind`` in ``{"none", "jdp"}`` (the paper has no LDP algorithm for linear
    MDPs, Rem. "Local Differential Privacy"); ``delta == 0`` selects pure JDP (App. "Pure joint DP
    in the linear setting").

    ``batches``: ``"static"`` (App. D's ``B``; pure: the ``(K eps)^{1/3}`` formula; non-private:
    ``B = K``), ``"every"`` (``B = K``, the non-batched variant of Rem. "Non-Batched Algorithm" /
    "Non-batching algorithm regret bound", same formulas), or an explicit int in ``[1, K]``.

    Keys: ``kind, pure, noise, epsilon, delta, p, H, K, d, batches, lam (= d), B, B0,
    batch_length (ceil(K/B)), alpha (p/6KH), sigma_Lambda, sigma_u (noise scales: Gaussian std,
    or Laplace b when pure; None non-private), Upsilon, c_K, C, shift (the multiple of I added to
    Lambda~: c_K + Upsilon; c_K = d Upsilon, pure: lsvi_ucb_c_K_pure), U_K, chi, log_chi, beta, sym_divisor (2: Alg. 2 uses
    Z = (Z' + Z'^T)/2; None non-private), in_theorem_regime, calibration``.

    ``calibration="tight"``: ``(sigma_Lambda, sigma_u)`` from :func:`lsvi_ucb_sigmas_tight`
    (``lsvi_ucb_releases(K, B)`` u releases per user and step, paper's ratio kept; pure:
    :func:`lsvi_ucb_laplace_scales_tight`), then the same Upsilon, c_K, C, U_K, chi, beta; ``B``
    is the paper's (it depends on eps only).
    """
    kind = _check_kind(kind, ("none", "jdp"))
    eps, dlt, pure = _privacy_args(kind, epsilon, delta)
    H = _check_pos_int(H, "H")
    K = _check_pos_int(K, "K")
    d = _check_pos_int(d, "d")
    pp = _check_probability(p, "p")
    cal = _check_calibration(calibration)
    tight = cal == "tight"
    B = _resolve_batches(batches, kind, pure, eps, H, K, d)
    B0 = lsvi_ucb_B0(B)
    lam = lsvi_ucb_lambda(d)
    if kind == "none":
        sl = su = None
        ups = cK = C = 0.0
        noise = sym = None
    elif not pure:
        if tight:
            sl, su = lsvi_ucb_sigmas_tight(eps, dlt, H, B, K)
        else:
            sl = lsvi_ucb_sigma_lambda(eps, dlt, H, B)
            su = lsvi_ucb_sigma_u(eps, dlt, H, B)
        ups = lsvi_ucb_upsilon(sl, B0, d, K, H, pp)
        C = lsvi_ucb_C(su, d, K, H, pp)
        noise, sym = "gaussian", 2.0
    else:
        sl, su = (lsvi_ucb_laplace_scales_tight(eps, H, B, d, K) if tight
                  else lsvi_ucb_laplace_scales(eps, H, B, d))
        ups = lsvi_ucb_upsilon_pure(sl, B0, d, K, H, pp)
        C = lsvi_ucb_C_pure(su, d, K, H, pp)
        noise, sym = "laplace", 2.0
    if kind != "none":
        cK = lsvi_ucb_c_K_pure(ups, C, lam, d, H) if pure else lsvi_ucb_c_K(ups, d)
    U_K = lsvi_ucb_U_K(lam, cK, C, H, K, d)
    log_chi = lsvi_ucb_log_chi(U_K, H, K, d, pp)
    return {
        "kind": kind, "pure": pure, "calibration": cal, "noise": noise, "epsilon": eps,
        "delta": dlt, "p": pp, "H": H, "K": K, "d": d, "batches": batches, "lam": lam, "B": B, "B0": B0,
        "batch_length": -(-K // B), "alpha": pp / (6.0 * K * H),
        "sigma_Lambda": sl, "sigma_u": su, "Upsilon": ups, "c_K": cK, "C": C,
        "shift": cK + ups, "U_K": U_K, "chi": lsvi_ucb_chi(U_K, H, K, d, pp),
        "log_chi": log_chi, "beta": lsvi_ucb_beta(lam, cK, U_K, H, K, d, pp),
        "sym_divisor": sym, "in_theorem_regime": _in_theorem_regime(kind, eps, dlt, pure),
    }


def calibrate_ucrl_vtr_plus(kind: str, epsilon: Optional[float], delta: Optional[float], H: int,
                            K: int, d: int, C_w: float, p: float = 0.05,
                            calibration: str = "paper") -> Dict[str, Any]:
    """All parameters of Alg. 3 (Privacy-Preserving UCRL-VTR+, App. C) for ``kind`` in
    ``{"none", "jdp", "ldp"}``; ``delta == 0`` selects pure DP (remark after Cor.
    "LDP-UCRL-VTR+", derived as for UCRL-VTR). Radii are the constant values at ``k = K``
    (valid since the paper's sequences are non-decreasing in ``k``).

    Keys: ``kind, pure, noise, epsilon, delta, p, H, K, d, C_w, lam (= 1), K0, alpha (p/24KH),
    noise_terms (K0 JDP, K LDP, 0), noise_site, sigma_B1, sigma_B2 (matrix-noise scales of D^1,
    D^2), sigma_f, sigma_g (vector-noise scales of f, g; equal to sigma_B1, sigma_B2 for
    Gaussian), sym_divisor (sqrt 2 Gaussian, 2 Laplace), Upsilon1, Upsilon2, C1, C2, shift1,
    shift2 (2 Upsilon1, 2 Upsilon2), beta_hat, beta_check, beta_tilde, beta_hat_condition,
    beta_check_condition, beta_tilde_condition (Thm. right-hand sides), in_theorem_regime``.
    Non-private: all noise zero and the radii are Zhou et al. (2021)'s, i.e. the Thm. condition
    with ``Upsilon = C = 0``. ``calibration="tight"`` takes the sigmas of
    :func:`ucrl_vtr_plus_sigmas_jdp_tight` / :func:`ucrl_vtr_plus_sigmas_ldp_tight` (pure JDP:
    :func:`ucrl_vtr_plus_laplace_scales_jdp_tight`) and the same Upsilon, C and radii formulas.
    """
    kind = _check_kind(kind)
    eps, dlt, pure = _privacy_args(kind, epsilon, delta)
    H = _check_pos_int(H, "H")
    K = _check_pos_int(K, "K")
    d = _check_pos_int(d, "d")
    cw = _check_positive_real(C_w, "C_w")
    pp = _check_probability(p, "p")
    cal = _check_calibration(calibration)
    tight = cal == "tight"
    lam = ucrl_vtr_plus_lambda()
    K0 = ucrl_vtr_K0(K)
    out: Dict[str, Any] = {
        "kind": kind, "pure": pure, "calibration": cal, "epsilon": eps, "delta": dlt, "p": pp,
        "H": H, "K": K, "d": d, "C_w": cw, "lam": lam, "K0": K0,
        "alpha": pp / (24.0 * K * H),
        "in_theorem_regime": _in_theorem_regime(kind, eps, dlt, pure),
    }
    if kind == "none":
        bh, bc, bt = ucrl_vtr_plus_betas_condition(lam, 0, 0, 0, 0, 0, 0, cw, H, K, d, pp)
        out.update(noise=None, noise_terms=0, noise_site=None, sigma_B1=None, sigma_B2=None,
                   sigma_f=None, sigma_g=None, sym_divisor=None, Upsilon1=0.0, Upsilon2=0.0,
                   C1=0.0, C2=0.0, shift1=0.0, shift2=0.0,
                   beta_hat=bh, beta_check=bc, beta_tilde=bt, beta_hat_condition=bh,
                   beta_check_condition=bc, beta_tilde_condition=bt)
        return out
    n = K0 if kind == "jdp" else K
    if not pure:
        if kind == "jdp":
            s1, s2 = (ucrl_vtr_plus_sigmas_jdp_tight(eps, dlt, H, K, d) if tight
                      else ucrl_vtr_plus_sigmas_jdp(eps, dlt, H, K, d))
        else:
            s1, s2 = (ucrl_vtr_plus_sigmas_ldp_tight(eps, dlt, H, d) if tight
                      else ucrl_vtr_plus_sigmas_ldp(eps, dlt, H, d))
        sf, sg = s1, s2
        u1 = ucrl_vtr_plus_upsilon(s1, n, d, K, H, pp)
        u2 = ucrl_vtr_plus_upsilon(s2, n, d, K, H, pp)
        c1 = ucrl_vtr_plus_C(sf, n, d, K, H, pp)
        c2 = ucrl_vtr_plus_C(sg, n, d, K, H, pp)
        noise, sym = "gaussian", _SQRT2
    else:
        if kind == "jdp":
            s1, sf, s2, sg = (ucrl_vtr_plus_laplace_scales_jdp_tight(eps, H, K, d) if tight
                              else ucrl_vtr_plus_laplace_scales_jdp(eps, H, K, d))
        else:
            s1, sf, s2, sg = ucrl_vtr_plus_laplace_scales_ldp(eps, H, d)
        u1 = ucrl_vtr_plus_upsilon_pure(s1, n, d, K, H, pp)
        u2 = ucrl_vtr_plus_upsilon_pure(s2, n, d, K, H, pp)
        c1 = ucrl_vtr_plus_C_pure(sf, n, d, K, H, pp)
        c2 = ucrl_vtr_plus_C_pure(sg, n, d, K, H, pp)
        noise, sym = "laplace", 2.0
    cor = ucrl_vtr_plus_betas(lam, u1, u2, cw, H, K, d, pp)
    cond = ucrl_vtr_plus_betas_condition(lam, u1, 3.0 * u1, c1, u2, 3.0 * u2, c2, cw, H, K, d, pp)
    # Gaussian: the corollary radii (Upsilon >= C makes them satisfy the condition). Pure: the
    # corollary form when valid, else the condition (see ucrl_vtr_beta_pure).
    radii = cor if not pure else tuple(max(a, b) for a, b in zip(cor, cond))
    out.update(
        noise=noise, noise_terms=n, noise_site="tree" if kind == "jdp" else "user",
        sigma_B1=s1, sigma_B2=s2, sigma_f=sf, sigma_g=sg, sym_divisor=sym,
        Upsilon1=u1, Upsilon2=u2, C1=c1, C2=c2, shift1=2.0 * u1, shift2=2.0 * u2,
        beta_hat=radii[0], beta_check=radii[1], beta_tilde=radii[2],
        beta_hat_condition=cond[0], beta_check_condition=cond[1], beta_tilde_condition=cond[2],
    )
    return out

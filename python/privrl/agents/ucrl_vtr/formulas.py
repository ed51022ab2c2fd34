"""The paper's formulas of UCRL-VTR (Alg. 1, Cor. 1, Cor. 2, App. B).

Every noise scale, bound and radius, one function per equation (its docstring names it);
privrl.agents.ucrl_vtr.calibration assembles them and re-exports them."""

# Conventions: natural logarithms; the "scale" of a noise is its standard deviation (Gaussian) or
# its Laplace parameter b (density exp(-|x|/b)/2b), the paper reuses sigma for both; alpha is a
# per-event failure probability, the corollaries take alpha = p/(6KH) and union-bound over (k, h).
# Where the paper derives a scale by composing the tools of App. "Differential Privacy Tools", a
# `*_composed` twin rebuilds it from privrl.privacy.mechanisms (equal to the printed form here).
from __future__ import annotations

import math

from privrl.common.checks import (
    checked,
)
from privrl.common.errors import PrivacyParameterError
from privrl.privacy.bounds import (
    gaussian_matrix_bound,
    gaussian_vector_bound,
    laplace_matrix_sum_bound,
    laplace_vector_sum_bound,
)
from privrl.privacy.mechanisms import (
    advanced_composition_budget,
    gaussian_sigma,
    laplace_scale,
    simple_composition_budget,
    tree_depth,
    tree_node_budget,
)


# ============================================================================================
# (a) Gaussian noise (Cor. 1, Cor. 2, Thm. 1)
# ============================================================================================
@checked()
def ucrl_vtr_lambda(H: int) -> float:
    """Alg. 1, line 1: ridge regularizer ``lambda = H^2``."""
    return float(H * H)


@checked()
def ucrl_vtr_K0(K: int) -> int:
    """Cor. 1: ``K0 = ceil(log2(K) + 1)``, the depth of the K-leaf tree (= ``tree_depth(K)``)."""
    return tree_depth(K)


@checked()
def ucrl_vtr_l2_sensitivity(H: int) -> float:
    """App. B (proofs of Cor. 1-2): ``||X X^T||_F <= H^2`` and ``||X y||_2 <= H^2`` (since
    ``||X_{k,h}|| <= H``, ``y in [0, H]``), so both L2 sensitivities are ``2 H^2``."""
    return 2.0 * H * H


@checked()
def ucrl_vtr_sigma_jdp(epsilon: float, delta: float, H: int, K: int) -> float:
    """Cor. 1 (JDP-UCRL-VTR), printed closed form:
    ``sigma_B = 32 H^2 / eps * sqrt(2 H K0 log(8H/delta) log(4/delta) log(16 H K0/delta))``.
    Equal to :func:`ucrl_vtr_sigma_jdp_composed` (proof of Cor. 1, App. B)."""
    K0 = ucrl_vtr_K0(K)
    return (32.0 * H * H / epsilon) * math.sqrt(
        2.0 * H * K0 * math.log(8.0 * H / delta) * math.log(4.0 / delta) * math.log(16.0 * H * K0 / delta)
    )


@checked()
def ucrl_vtr_sigma_jdp_composed(epsilon: float, delta: float, H: int, K: int) -> float:
    """Cor. 1's ``sigma_B`` rebuilt from the tools (privacy part of the proof of Cor. 1):

    1. simple composition of the Lambda-family and the u-family, each ``(eps/2, delta/2)``;
    2. advanced composition over the ``H`` steps: per-h budget
       ``advanced_composition_budget(eps/2, delta/2, H) = (eps/(2 sqrt(8H log(4/delta))), delta/(4H))``;
    3. tree method over ``K`` leaves: per-node budget ``tree_node_budget(., ., K)``
       ``= (eps / (16 sqrt(H K0 log(8H/delta) log(4/delta))), delta / (8 H K0))``;
    4. Gaussian mechanism with L2 sensitivity ``2 H^2``.
    """
    eps_h, dlt_h = advanced_composition_budget(epsilon / 2.0, delta / 2.0, H)
    eps0, dlt0 = tree_node_budget(eps_h, dlt_h, K)
    return gaussian_sigma(ucrl_vtr_l2_sensitivity(H), eps0, dlt0)


@checked()
def ucrl_vtr_sigma_ldp(epsilon: float, delta: float, H: int) -> float:
    """Cor. 2 (LDP-UCRL-VTR), printed closed form: ``sigma_B = 4 H^3/eps sqrt(2 log(4H/delta))``."""
    return (4.0 * H**3 / epsilon) * math.sqrt(2.0 * math.log(4.0 * H / delta))


@checked()
def ucrl_vtr_sigma_ldp_composed(epsilon: float, delta: float, H: int) -> float:
    """Cor. 2's ``sigma_B`` from the tools (proof of Cor. 2): each user sends ``2H`` Gaussian
    releases (``H`` matrices, ``H`` vectors); simple composition gives each
    ``simple_composition_budget(eps, delta, 2H) = (eps/(2H), delta/(2H))``; Gaussian mechanism
    with L2 sensitivity ``2 H^2``."""
    e1, d1 = simple_composition_budget(epsilon, delta, 2 * H)
    return gaussian_sigma(ucrl_vtr_l2_sensitivity(H), e1, d1)


@checked()
def ucrl_vtr_upsilon(sigma_B: float, n_terms: int, d: int, K: int, H: int, p: float) -> float:
    """Cor. 1/2 ``Upsilon_{p/6KH} = sigma_B sqrt(n) (4 sqrt(d) + 2 log(6KH/p))``: Clm.
    "bounded.eigen" for the sum of ``n_terms`` Gaussian matrices at ``alpha = p/(6KH)``
    (``n_terms = K0`` for JDP, ``K`` for LDP)."""
    return gaussian_matrix_bound(sigma_B, n_terms, d, p / (6.0 * K * H))


@checked()
def ucrl_vtr_upsilon_jdp(sigma_B: float, d: int, K: int, H: int, p: float) -> float:
    """Cor. 1: ``Upsilon^J_{p/6KH} = sigma_B sqrt(K0) (4 sqrt(d) + 2 log(6KH/p))``."""
    return ucrl_vtr_upsilon(sigma_B, ucrl_vtr_K0(K), d, K, H, p)


@checked()
def ucrl_vtr_upsilon_ldp(sigma_B: float, d: int, K: int, H: int, p: float) -> float:
    """Cor. 2: ``Upsilon^L_{p/6KH} = sigma_B sqrt(K) (4 sqrt(d) + 2 log(6KH/p))``."""
    return ucrl_vtr_upsilon(sigma_B, K, d, K, H, p)


@checked()
def ucrl_vtr_C(sigma_B: float, n_terms: int, d: int, K: int, H: int, p: float) -> float:
    """App. B (proofs of Cor. 1/2): ``C_{p/6KH} = sigma_B sqrt(n) (sqrt(d) + 2 sqrt(log(6KH/p)))``,
    Clm. "bound.gauss.vector" for a sum of ``n_terms`` Gaussian vectors at ``alpha = p/(6KH)``."""
    return gaussian_vector_bound(sigma_B, n_terms, d, p / (6.0 * K * H))


@checked()
def ucrl_vtr_C_jdp(sigma_B: float, d: int, K: int, H: int, p: float) -> float:
    """App. B, proof of Cor. 1: ``C^J_{p/6KH} = sigma_B sqrt(K0) (sqrt(d) + 2 sqrt(log(6KH/p)))``."""
    return ucrl_vtr_C(sigma_B, ucrl_vtr_K0(K), d, K, H, p)


@checked()
def ucrl_vtr_C_ldp(sigma_B: float, d: int, K: int, H: int, p: float) -> float:
    """App. B, proof of Cor. 2: ``C^L_{p/6KH} = sigma_B sqrt(K) (sqrt(d) + 2 sqrt(log(6KH/p)))``."""
    return ucrl_vtr_C(sigma_B, K, d, K, H, p)


@checked()
def ucrl_vtr_shift(Upsilon: float) -> float:
    """Cor. 1/2: the deterministic shift ``2 Upsilon I`` added to ``B_{k,h}`` (JDP: to the tree
    prefix ``B^2_{k,h}``; LDP: ``B^2_{k,h} = 2 Upsilon^L I``), so that the eigenvalues of
    ``B_{k,h}`` lie in ``[Upsilon, 3 Upsilon]`` on the good event."""
    return 2.0 * Upsilon


@checked()
def ucrl_vtr_self_normalized_width(H: int, K: int, d: int, p: float) -> float:
    """Thm. 1 / Cor. 1-2: ``sqrt(2 H^2 log(3H (1+KH)^{d/2} / p))`` (self-normalized bound,
    App. B.1), with the log expanded as ``log(3H/p) + (d/2) log(1 + KH)`` so it never overflows."""
    log_term = math.log(3.0 * H / p) + 0.5 * d * math.log1p(float(K) * H)
    return H * math.sqrt(2.0 * log_term)


@checked()
def ucrl_vtr_beta(lam: float, Upsilon: float, C_w: float, H: int, K: int, d: int, p: float) -> float:
    """Cor. 1/2 (eq. beta_JDP-UCRL-VTR / beta_LDP-UCRL-VTR):
    ``beta_k = 3 (C_w + 1) sqrt(lam + Upsilon) + sqrt(2 H^2 log(3H (1+KH)^{d/2} / p))``
    (constant in ``k``). It satisfies Thm. 1's condition with ``Upsilon_low = Upsilon``,
    ``Upsilon_high = 3 Upsilon`` whenever ``C <= lam + Upsilon`` (true for the Gaussian corollaries,
    where ``Upsilon >= C``)."""
    return 3.0 * (C_w + 1.0) * math.sqrt(lam + Upsilon) + ucrl_vtr_self_normalized_width(H, K, d, p)


@checked()
def ucrl_vtr_beta_condition(
    lam: float, ups_low: float, ups_high: float, C: float, C_w: float, H: int, K: int, d: int, p: float
) -> float:
    """Thm. 1 ("regret_Private_UCRL-VTR"), eq. beta_ineq_UCRL-VTR, right-hand side (the smallest
    admissible ``beta_k``): ``((lam + ups_high) C_w + C) / sqrt(lam + ups_low)
    + sqrt(2 H^2 log(3H (1+KH)^{d/2} / p))``."""
    if ups_high < ups_low:
        raise PrivacyParameterError(f"ups_high must be >= ups_low, got {ups_high!r} < {ups_low!r}")
    if lam + ups_low <= 0.0:
        raise PrivacyParameterError(f"lam + ups_low must be > 0, got lam={lam!r}, ups_low={ups_low!r}")
    return ((lam + ups_high) * C_w + C) / math.sqrt(lam + ups_low) + ucrl_vtr_self_normalized_width(
        H, K, d, p
    )


@checked()
def ucrl_vtr_beta_nonprivate(C_w: float, H: int, K: int, d: int, p: float) -> float:
    """Non-private UCRL-VTR radius: Thm. 1 ("regret_Private_UCRL-VTR") with
    ``Upsilon_low = Upsilon_high = C = 0`` (``B = g = 0``) and ``lam = H^2``:
    ``beta = C_w sqrt(lam) + sqrt(2 H^2 log(3H (1+KH)^{d/2} / p)) = C_w H + ...``."""
    return ucrl_vtr_beta_condition(ucrl_vtr_lambda(H), 0.0, 0.0, 0.0, C_w, H, K, d, p)


# ============================================================================================
# (b) Pure DP (App. "Pure DP in the UCRL-VTR Framework", Rem. "Pure DP")
# ============================================================================================
@checked()
def ucrl_vtr_l1_sensitivities(H: int, d: int) -> tuple[float, float]:
    """L1 sensitivities for the Laplace variants of Alg. 1 (derived; the appendix leaves them
    implicit): ``(2 d H^2, 2 sqrt(d) H^2)`` for the FULL matrix ``X X^T`` and the vector ``X y``.

    ``||X X^T||_1 = sum_ij |X_i X_j| = ||X||_1^2 <= d ||X||_2^2 <= d H^2`` and
    ``||X y||_1 <= sqrt(d) ||X||_2 |y| <= sqrt(d) H^2`` (``||X|| <= H``, ``y in [0, H]``); a
    neighbouring user changes one such term, hence the factor 2.
    """
    return 2.0 * d * H * H, 2.0 * math.sqrt(d) * H * H


@checked()
def ucrl_vtr_laplace_scales_jdp(epsilon: float, H: int, K: int, d: int) -> tuple[float, float]:
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
    K0 = ucrl_vtr_K0(K)
    eps_node, _ = simple_composition_budget(epsilon, 0.0, 2 * H * K0)
    s_mat, s_vec = ucrl_vtr_l1_sensitivities(H, d)
    return laplace_scale(s_mat, eps_node), laplace_scale(s_vec, eps_node)


@checked()
def ucrl_vtr_laplace_scales_ldp(epsilon: float, H: int, d: int) -> tuple[float, float]:
    """Pure (eps, 0)-LDP UCRL-VTR Laplace scales ``(b_matrix, b_vector)``, derived: each user
    sends ``2H`` Laplace releases (``X X^T + B^1``, ``X y + g^1`` for every ``h``), simple
    composition gives ``eps/(2H)`` each; L1 sensitivities as in :func:`ucrl_vtr_l1_sensitivities`
    (the matrix is sent as ``X X^T + (Z' + Z'^T)/2``, post-processing of ``X X^T + Z'``).
    So ``b_matrix = 4 d H^3 / eps``, ``b_vector = 4 sqrt(d) H^3 / eps``."""
    e1, _ = simple_composition_budget(epsilon, 0.0, 2 * H)
    s_mat, s_vec = ucrl_vtr_l1_sensitivities(H, d)
    return laplace_scale(s_mat, e1), laplace_scale(s_vec, e1)


@checked()
def ucrl_vtr_upsilon_pure(b_matrix: float, n_terms: int, d: int, K: int, H: int, p: float) -> float:
    """Pure-DP replacement of ``Upsilon_{p/6KH}`` (App. "Pure DP in the UCRL-VTR Framework",
    which uses Clm. "bound.laplace.eigen" instead of Clm. "bounded.eigen"): the norm of the sum
    of ``n_terms`` symmetric Laplace matrices (``K0`` tree nodes for JDP, ``K`` user noises for
    LDP) is bounded by :func:`laplace_matrix_sum_bound` at ``alpha = p/(6KH)``; the union over
    the ``KH`` pairs ``(k,h)`` keeps the ``p/6`` budget of the Gaussian case. For LDP a prefix
    of ``k <= K`` terms is covered because the bound increases with ``n``."""
    return laplace_matrix_sum_bound(b_matrix, n_terms, d, p / (6.0 * K * H))


@checked()
def ucrl_vtr_C_pure(b_vector: float, n_terms: int, d: int, K: int, H: int, p: float) -> float:
    """Pure-DP replacement of ``C_{p/6KH}``: Clm. "bound.laplace.vector" extended to a sum of
    ``n_terms`` Laplace vectors (:func:`laplace_vector_sum_bound`) at ``alpha = p/(6KH)``."""
    return laplace_vector_sum_bound(b_vector, n_terms, d, p / (6.0 * K * H))


@checked()
def ucrl_vtr_beta_pure(
    lam: float, Upsilon: float, C: float, C_w: float, H: int, K: int, d: int, p: float
) -> float:
    """Pure-DP radius: the corollary form ``3 (C_w + 1) sqrt(lam + Upsilon) + width`` when it
    satisfies Thm. 1's condition, else the condition itself; i.e. the max of
    :func:`ucrl_vtr_beta` and :func:`ucrl_vtr_beta_condition` with ``ups_low = Upsilon``,
    ``ups_high = 3 Upsilon`` (shift ``2 Upsilon``). The corollary form relies on
    ``C <= lam + Upsilon``, which the Gaussian proof gets from ``Upsilon >= C`` but which is not
    automatic for the Laplace bounds, hence the max."""
    return max(
        ucrl_vtr_beta(lam, Upsilon, C_w, H, K, d, p),
        ucrl_vtr_beta_condition(lam, Upsilon, 3.0 * Upsilon, C, C_w, H, K, d, p),
    )

"""The paper's formulas of UCRL-VTR+ (Alg. 3, App. C).

Every noise scale, bound and radius, one function per equation (its docstring names it);
privrl.agents.ucrl_vtr_plus.calibration assembles them and re-exports them."""

# Conventions as in privrl.agents.ucrl_vtr.formulas; the failure probability per event is p/(24KH).
from __future__ import annotations

import math

from privrl.agents.ucrl_vtr.formulas import ucrl_vtr_K0
from privrl.common.checks import (
    check_positive_real,
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
    tree_node_budget,
)


@checked()
def ucrl_vtr_plus_lambda() -> float:
    """Alg. 3, line 1: ``lambda = 1``."""
    return 1.0


@checked()
def ucrl_vtr_plus_sigmas_jdp(epsilon: float, delta: float, H: int, K: int, d: int) -> tuple[float, float]:
    """Cor. "JDP-UCRL-VTR+", printed: with ``S = sqrt(2 H K0 log(16H/delta) log(8/delta)
    log(32 H K0/delta))``, ``sigma_B1 = 64 d S / eps`` and ``sigma_B2 = 64 H^4 S / eps``.
    Equal to :func:`ucrl_vtr_plus_sigmas_jdp_composed`."""
    K0 = ucrl_vtr_K0(K)
    S = math.sqrt(
        2.0 * H * K0 * math.log(16.0 * H / delta) * math.log(8.0 / delta) * math.log(32.0 * H * K0 / delta)
    )
    return 64.0 * d * S / epsilon, 64.0 * H**4 * S / epsilon


@checked()
def ucrl_vtr_plus_sigmas_jdp_composed(
    epsilon: float, delta: float, H: int, K: int, d: int
) -> tuple[float, float]:
    """Cor. "JDP-UCRL-VTR+" sigmas from the tools (App. C, privacy part of its proof): four
    families (``Lambda^``, ``u^``, ``Lambda~``, ``u~``) at ``(eps/4, delta/4)`` each (simple
    composition); advanced composition over ``H``:
    ``advanced_composition_budget(eps/4, delta/4, H) = (eps/(4 sqrt(8H log(8/delta))), delta/(8H))``;
    tree node budget over ``K`` leaves; Gaussian mechanism with L2 sensitivity ``2d``
    (``||sigma_bar^{-2} phi phi^T||_F <= d``, ``sigma_bar^2 >= H^2/d``) for ``B1``/``f`` and
    ``2 H^4`` (``||phi_{V^2} phi_{V^2}^T||_F <= H^4``) for ``B2``/``g``."""
    eps_h, dlt_h = advanced_composition_budget(epsilon / 4.0, delta / 4.0, H)
    eps0, dlt0 = tree_node_budget(eps_h, dlt_h, K)
    return gaussian_sigma(2.0 * d, eps0, dlt0), gaussian_sigma(2.0 * H**4, eps0, dlt0)


@checked()
def ucrl_vtr_plus_sigmas_ldp(epsilon: float, delta: float, H: int, d: int) -> tuple[float, float]:
    """Cor. "LDP-UCRL-VTR+", printed: ``sigma_B1 = 8 d H / eps sqrt(2 log(8H/delta))``,
    ``sigma_B2 = 8 H^5 / eps sqrt(2 log(8H/delta))``."""
    r = math.sqrt(2.0 * math.log(8.0 * H / delta))
    return 8.0 * d * H / epsilon * r, 8.0 * H**5 / epsilon * r


@checked()
def ucrl_vtr_plus_sigmas_ldp_composed(epsilon: float, delta: float, H: int, d: int) -> tuple[float, float]:
    """Cor. "LDP-UCRL-VTR+" sigmas from the tools: ``4H`` local releases per user, simple
    composition ``(eps/(4H), delta/(4H))`` each, Gaussian mechanism with L2 sensitivity ``2d``
    (``B1``, ``f``) and ``2 H^4`` (``B2``, ``g``)."""
    e1, d1 = simple_composition_budget(epsilon, delta, 4 * H)
    return gaussian_sigma(2.0 * d, e1, d1), gaussian_sigma(2.0 * H**4, e1, d1)


@checked()
def ucrl_vtr_plus_upsilon(sigma: float, n_terms: int, d: int, K: int, H: int, p: float) -> float:
    """Cor. "JDP/LDP-UCRL-VTR+": ``Upsilon^{.,i}_{p/24KH} = sigma_Bi sqrt(n) (4 sqrt(d)
    + 2 log(24KH/p))`` with ``n = K0`` (JDP) or ``K`` (LDP)."""
    return gaussian_matrix_bound(sigma, n_terms, d, p / (24.0 * K * H))


@checked()
def ucrl_vtr_plus_C(sigma: float, n_terms: int, d: int, K: int, H: int, p: float) -> float:
    """App. C, proofs of the UCRL-VTR+ corollaries: ``C^{.,i}_{p/24KH} = sigma_Bi sqrt(n)
    (sqrt(d) + 2 sqrt(log(24KH/p)))`` with ``n = K0`` (JDP) or ``K`` (LDP)."""
    return gaussian_vector_bound(sigma, n_terms, d, p / (24.0 * K * H))


@checked(lam=check_positive_real)
def ucrl_vtr_plus_bernstein_terms(
    lam: float, H: int, K: int, d: int, p: float, k: int | None = None
) -> tuple[float, float, float]:
    """Thm. "Regret bound of Alg. 3" (eq. beta_ineq_UCRL-VTRPlus), noise-free parts of
    ``(beta_check, beta_hat, beta_tilde)`` at episode ``k`` (default ``K``), with
    ``l = log(24 k^2 H / p)``:
    ``8 d sqrt(log(1 + K/lam) l) + 4 sqrt(d) l``,
    ``8 sqrt(d log(1 + K/lam) l) + 4 sqrt(d) l``,
    ``8 sqrt(d H^4 log(1 + K H^4/(d lam)) l) + 4 H^2 l``."""
    k = K if k is None else k
    ell = math.log(24.0 * k * k * H / p)
    lK = math.log1p(K / lam)
    check = 8.0 * d * math.sqrt(lK * ell) + 4.0 * math.sqrt(d) * ell
    hat = 8.0 * math.sqrt(d * lK * ell) + 4.0 * math.sqrt(d) * ell
    tilde = 8.0 * math.sqrt(d * H**4 * math.log1p(K * H**4 / (d * lam)) * ell) + 4.0 * H * H * ell
    return check, hat, tilde


@checked(lam=check_positive_real)
def ucrl_vtr_plus_betas(
    lam: float,
    Upsilon1: float,
    Upsilon2: float,
    C_w: float,
    H: int,
    K: int,
    d: int,
    p: float,
    k: int | None = None,
) -> tuple[float, float, float]:
    """Cor. "JDP/LDP-UCRL-VTR+" (eqs. beta_JDP-UCRL-VTRPlus / beta_LDP-UCRL-VTRPlus):
    ``(beta_hat, beta_check, beta_tilde)`` at episode ``k`` (default ``K``; the sequences are
    non-decreasing so the value at ``K`` is a valid constant choice):
    ``beta_check = 3(C_w+1) sqrt(lam + Upsilon1) + 8d sqrt(log(1+K/lam) l) + 4 sqrt(d) l``,
    ``beta_hat = 3(C_w+1) sqrt(lam + Upsilon1) + 8 sqrt(d log(1+K/lam) l) + 4 sqrt(d) l``,
    ``beta_tilde = 3(C_w+1) sqrt(lam + Upsilon2) + 8 sqrt(d H^4 log(1+K H^4/(d lam)) l) + 4 H^2 l``,
    ``l = log(24 k^2 H / p)``."""
    check_t, hat_t, tilde_t = ucrl_vtr_plus_bernstein_terms(lam, H, K, d, p, k)
    n1 = 3.0 * (C_w + 1.0) * math.sqrt(lam + Upsilon1)
    n2 = 3.0 * (C_w + 1.0) * math.sqrt(lam + Upsilon2)
    return n1 + hat_t, n1 + check_t, n2 + tilde_t


@checked(lam=check_positive_real)
def ucrl_vtr_plus_betas_condition(
    lam: float,
    ups1_low: float,
    ups1_high: float,
    C1: float,
    ups2_low: float,
    ups2_high: float,
    C2: float,
    C_w: float,
    H: int,
    K: int,
    d: int,
    p: float,
    k: int | None = None,
) -> tuple[float, float, float]:
    """Thm. "Regret bound of Alg. 3", eq. beta_ineq_UCRL-VTRPlus, right-hand sides (the smallest
    admissible radii) ``(beta_hat, beta_check, beta_tilde)``; the noise part is
    ``(C_w (lam + ups_high) + C) / sqrt(lam + ups_low)``. With all ``Upsilon, C = 0`` these are the
    non-private radii of Zhou et al. (2021) (``C_w sqrt(lam)`` + Bernstein terms)."""
    for i, (lo, hi) in (("1", (ups1_low, ups1_high)), ("2", (ups2_low, ups2_high))):
        if hi < lo:
            raise PrivacyParameterError(f"ups{i}_high must be >= ups{i}_low, got {hi!r} < {lo!r}")
    check_t, hat_t, tilde_t = ucrl_vtr_plus_bernstein_terms(lam, H, K, d, p, k)
    n1 = (C_w * (lam + ups1_high) + C1) / math.sqrt(lam + ups1_low)
    n2 = (C_w * (lam + ups2_high) + C2) / math.sqrt(lam + ups2_low)
    return n1 + hat_t, n1 + check_t, n2 + tilde_t


@checked()
def ucrl_vtr_plus_laplace_scales_jdp(
    epsilon: float, H: int, K: int, d: int
) -> tuple[float, float, float, float]:
    """Pure (eps, 0)-JDP UCRL-VTR+ Laplace scales ``(b_B1, b_f, b_B2, b_g)``, derived as for
    UCRL-VTR (remark after Cor. "LDP-UCRL-VTR+"): ``4H`` trees, a user in ``K0`` nodes of each,
    simple composition: ``eps/(4 H K0)`` per node. L1 sensitivities (``||phi_V|| <= H``,
    ``||phi_{V^2}|| <= H^2``, ``sigma_bar^{-2} <= d/H^2``, ``||x||_1 <= sqrt(d) ||x||_2``):
    ``B1``: ``2 ||sigma_bar^{-2} phi phi^T||_1 <= 2 d^2``; ``f``: ``2 d^{3/2}``;
    ``B2``: ``2 d H^4``; ``g``: ``2 sqrt(d) H^4``. Matrices released as ``M + (Z' + Z'^T)/2``."""
    K0 = ucrl_vtr_K0(K)
    e0, _ = simple_composition_budget(epsilon, 0.0, 4 * H * K0)
    return _vtr_plus_l1_scales(e0, H, d)


@checked()
def ucrl_vtr_plus_laplace_scales_ldp(epsilon: float, H: int, d: int) -> tuple[float, float, float, float]:
    """Pure (eps, 0)-LDP UCRL-VTR+ Laplace scales ``(b_B1, b_f, b_B2, b_g)``: ``4H`` local
    releases per user, ``eps/(4H)`` each (simple composition); L1 sensitivities as in
    :func:`ucrl_vtr_plus_laplace_scales_jdp`."""
    e1, _ = simple_composition_budget(epsilon, 0.0, 4 * H)
    return _vtr_plus_l1_scales(e1, H, d)


def _vtr_plus_l1_scales(eps_each: float, H: int, d: int) -> tuple[float, float, float, float]:
    return (
        laplace_scale(2.0 * d * d, eps_each),
        laplace_scale(2.0 * d**1.5, eps_each),
        laplace_scale(2.0 * d * H**4, eps_each),
        laplace_scale(2.0 * math.sqrt(d) * H**4, eps_each),
    )


@checked()
def ucrl_vtr_plus_upsilon_pure(b: float, n_terms: int, d: int, K: int, H: int, p: float) -> float:
    """Pure-DP ``Upsilon^{.,i}_{p/24KH}``: :func:`laplace_matrix_sum_bound` at ``alpha = p/(24KH)``."""
    return laplace_matrix_sum_bound(b, n_terms, d, p / (24.0 * K * H))


@checked()
def ucrl_vtr_plus_C_pure(b: float, n_terms: int, d: int, K: int, H: int, p: float) -> float:
    """Pure-DP ``C^{.,i}_{p/24KH}``: :func:`laplace_vector_sum_bound` at ``alpha = p/(24KH)``."""
    return laplace_vector_sum_bound(b, n_terms, d, p / (24.0 * K * H))

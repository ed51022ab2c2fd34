"""Tests of privrl.privacy.calibration: every noise scale and confidence width of Luyo et al.

Expected numbers are derived by hand from the printed formulas (arithmetic in the comments);
closed forms are also compared with the same quantity rebuilt from the DP tools.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from _helpers import calibration as c
from privrl.exceptions import PrivacyParameterError
from privrl.privacy import mechanisms as m

# Reference instance used throughout: H = 10, K = 1e4, d = 10, p = 0.05.
H, K, D, P = 10, 10_000, 10, 0.05
# K0 = ceil(log2(1e4) + 1) = ceil(13.2877 + 1) = 15
K0 = 15
# alpha = p / (6KH) = 0.05 / 6e5 ; log(6KH/p) = log(1.2e7) = 16.300417
L6 = 16.300417207752275


def sig3(x: float) -> float:
    return float(f"{x:.3g}")


# ============================================================================================
# Concentration claims
# ============================================================================================
def test_gaussian_bounds_hand_values():
    # Clm. bounded.eigen, sigma = 1, n = K0 = 15, d = 10, alpha = p/6KH:
    #   sqrt(15) (4 sqrt(10) + 2 * 16.300417) = 3.872983 * (12.649111 + 32.600834) = 3.872983 * 45.249945
    #   = 175.252284
    assert c.gaussian_matrix_bound(1.0, 15, 10, P / (6 * K * H)) == pytest.approx(175.252284, rel=1e-6)
    # Clm. bound.gauss.vector: sqrt(15) (sqrt(10) + 2 sqrt(16.300417)) = 3.872983 * (3.162278 + 8.074755)
    #   = 3.872983 * 11.237033 = 43.520840
    assert c.gaussian_vector_bound(1.0, 15, 10, P / (6 * K * H)) == pytest.approx(43.520840, rel=1e-6)


def test_laplace_single_bounds_hand_values():
    # Clm. bound.laplace.eigen, b = 1, d = 10, alpha = 0.01: L = log(1000) = 6.907755
    #   2*10 + 2 sqrt(10 * 6.907755) + 6.907755 = 20 + 2 * 8.311291 + 6.907755 = 43.530337
    assert c.laplace_matrix_bound(1.0, 10, 0.01) == pytest.approx(43.530337, rel=1e-6)
    # Clm. bound.laplace.vector, b = 2: 2 sqrt(10) log(1000) = 2 * 3.162278 * 6.907755 = 43.688480
    assert c.laplace_vector_bound(2.0, 10, 0.01) == pytest.approx(43.688480, rel=1e-6)


def test_laplace_sum_bounds_hand_values():
    # n = 1 recovers the claims exactly (row-sum form = claim; sub-exp form is 10 * 4 * log(2e4)
    # = 10 * 4 * 9.903488 = 396.14, larger)
    assert c.laplace_matrix_sum_bound(1.0, 1, 10, 0.01) == pytest.approx(43.530337, rel=1e-6)
    assert c.laplace_vector_sum_bound(2.0, 1, 10, 0.01) == pytest.approx(43.688480, rel=1e-6)
    # n = 1e4, b = 1, d = 10, alpha = 0.01:
    #   row-sum: 2*1e4*10 + 2 sqrt(1e4*10*6.907755) + 6.907755 = 200000 + 1662.26 + 6.91 = 201669.17
    #   sub-exp: L' = log(2*100/0.01) = 9.903488 ; 4 * max(sqrt(1e4*9.903488/3), 9.903488)
    #            = 4 * 181.691016 = 726.764 ; times d = 10 -> 7267.64 (the min)
    assert c.laplace_matrix_sum_bound(1.0, 10_000, 10, 0.01) == pytest.approx(7267.6406, rel=1e-6)
    # vector, n = 100, b = 2, d = 10, alpha = 0.01, per coordinate:
    #   chi-square: 2 * (100 + sqrt(200 * 6.907755) + 6.907755) = 2 * 144.076977 = 288.15
    #   sub-exp: L' = log(2000) = 7.600902 ; 4*2*max(sqrt(100*7.600902/3), 7.600902) = 8 * 15.917393
    #            = 127.339 (the min) ; times sqrt(10) -> 402.6817
    assert c.laplace_vector_sum_bound(2.0, 100, 10, 0.01) == pytest.approx(402.68174, rel=1e-6)


def test_laplace_sum_bound_dominated_by_triangle_bounds():
    for n, d, alpha in itertools.product([1, 2, 15, 100, 10_000], [1, 3, 10, 50], [0.3, 1e-3, 1e-9]):
        # matrices: below n x (one-matrix claim at alpha), the form the paper prints for pure LSVI-UCB
        assert c.laplace_matrix_sum_bound(1.0, n, d, alpha) <= n * c.laplace_matrix_bound(1.0, d, alpha) * (
            1 + 1e-12
        )
        # vectors: below the triangle + union bound n b sqrt(d) log(n d / alpha) (each of the n d
        # coordinates at failure alpha/(n d)) = n x (one-vector claim at alpha/n)
        assert c.laplace_vector_sum_bound(1.0, n, d, alpha) <= n * c.laplace_vector_bound(
            1.0, d, alpha / n
        ) * (1 + 1e-12)


def test_laplace_sum_bound_grows_like_sqrt_n():
    # the sub-exponential branch: quadrupling n (large n) doubles the bound
    a = c.laplace_matrix_sum_bound(1.0, 40_000, 10, 0.01)
    b = c.laplace_matrix_sum_bound(1.0, 160_000, 10, 0.01)
    assert b / a == pytest.approx(2.0, rel=1e-9)


def _sym_laplace_sum(rng, n, d, b, size):
    Z = rng.laplace(0.0, b, size=(size, n, d, d)).sum(axis=1)
    return (Z + np.swapaxes(Z, 1, 2)) / 2.0


@pytest.mark.parametrize("n", [1, 5, 400])
def test_laplace_matrix_sum_bound_monte_carlo(n):
    rng = np.random.default_rng(2024 + n)
    d, b, alpha, trials = 4, 1.5, 0.05, 2000
    S = _sym_laplace_sum(rng, n, d, b, trials)
    norms = np.abs(np.linalg.eigvalsh(S)).max(axis=1)
    bound = c.laplace_matrix_sum_bound(b, n, d, alpha)
    assert np.mean(norms > bound) <= alpha


@pytest.mark.parametrize("n", [1, 5, 400])
def test_laplace_vector_sum_bound_monte_carlo(n):
    rng = np.random.default_rng(7 + n)
    d, b, alpha, trials = 5, 0.7, 0.05, 4000
    v = rng.laplace(0.0, b, size=(trials, n, d)).sum(axis=1)
    bound = c.laplace_vector_sum_bound(b, n, d, alpha)
    assert np.mean(np.linalg.norm(v, axis=1) > bound) <= alpha


def test_gaussian_matrix_bound_monte_carlo():
    # sum of n symmetric nodes (Z' + Z'^T)/sqrt 2 with N(0, sigma^2) entries
    rng = np.random.default_rng(99)
    n, d, sigma, alpha, trials = 15, 6, 2.0, 0.05, 2000
    Z = rng.normal(0.0, sigma, size=(trials, n, d, d)).sum(axis=1)
    S = (Z + np.swapaxes(Z, 1, 2)) / math.sqrt(2.0)
    norms = np.abs(np.linalg.eigvalsh(S)).max(axis=1)
    assert np.mean(norms > c.gaussian_matrix_bound(sigma, n, d, alpha)) <= alpha


# ============================================================================================
# (a) UCRL-VTR, Gaussian
# ============================================================================================
def test_ucrl_vtr_basic_params():
    assert c.ucrl_vtr_lambda(10) == 100.0  # lam = H^2
    assert c.ucrl_vtr_K0(10_000) == K0  # ceil(13.2877 + 1) = 15
    assert c.ucrl_vtr_K0(1) == 1 and c.ucrl_vtr_K0(1024) == 11  # ceil(10 + 1) = 11
    assert c.ucrl_vtr_l2_sensitivity(10) == 200.0  # 2 H^2


def test_ucrl_vtr_sigma_jdp_reference():
    # Cor. 1, eps = 1, delta = 1e-5, H = 10, K = 1e4 (K0 = 15):
    #   log(8H/delta) = log(8e6) = 15.894952 ; log(4/delta) = log(4e5) = 12.899220 ;
    #   log(16 H K0/delta) = log(2.4e8) = 19.296149
    #   2 H K0 = 300 ; 300 * 15.894952 * 12.899220 * 19.296149 = 1186901.2 ; sqrt = 1089.4500
    #   sigma_B = 32 * 100 / 1 * 1089.4500 = 3.486240e6  (~ 3.49e6)
    s = c.ucrl_vtr_sigma_jdp(1.0, 1e-5, H, K)
    assert sig3(s) == 3.49e6
    assert s == pytest.approx(3.486240e6, rel=1e-6)


def test_ucrl_vtr_sigma_ldp_reference():
    # Cor. 2: 4 H^3 / eps sqrt(2 log(4H/delta)) = 4000 * sqrt(2 * log(4e6)) = 4000 * sqrt(2 * 15.201805)
    #   = 4000 * 5.513947 = 22055.787
    assert c.ucrl_vtr_sigma_ldp(1.0, 1e-5, H) == pytest.approx(22055.787, rel=1e-6)


GRID = list(
    itertools.product([0.01, 0.3, 0.9, 2.5], [1e-9, 1e-5, 0.1], [1, 3, 10, 50], [1, 2, 37, 10_000, 10**7])
)


@pytest.mark.parametrize("eps,delta,h,k", GRID)
def test_ucrl_vtr_closed_forms_equal_tool_composition(eps, delta, h, k):
    assert c.ucrl_vtr_sigma_jdp(eps, delta, h, k) == pytest.approx(
        c.ucrl_vtr_sigma_jdp_composed(eps, delta, h, k), rel=1e-12
    )
    assert c.ucrl_vtr_sigma_ldp(eps, delta, h) == pytest.approx(
        c.ucrl_vtr_sigma_ldp_composed(eps, delta, h), rel=1e-12
    )


def test_ucrl_vtr_composition_steps_match_paper_budgets():
    # proof of Cor. 1: per-h budget (eps/(2 sqrt(8H log(4/delta))), delta/(4H)) and per-node budget
    # (eps/(16 sqrt(H K0 log(8H/delta) log(4/delta))), delta/(8 H K0))
    eps, delta = 0.5, 1e-5
    eh, dh = m.advanced_composition_budget(eps / 2, delta / 2, H)
    assert eh == pytest.approx(eps / (2 * math.sqrt(8 * H * math.log(4 / delta))), rel=1e-14)
    assert dh == pytest.approx(delta / (4 * H), rel=1e-14)
    e0, d0 = m.tree_node_budget(eh, dh, K)
    assert e0 == pytest.approx(
        eps / (16 * math.sqrt(H * K0 * math.log(8 * H / delta) * math.log(4 / delta))), rel=1e-12
    )
    assert d0 == pytest.approx(delta / (8 * H * K0), rel=1e-12)


def test_ucrl_vtr_sigma_monotone():
    eps_vals = [0.05, 0.2, 0.5, 0.99, 3.0]
    for f in (lambda e: c.ucrl_vtr_sigma_jdp(e, 1e-5, H, K), lambda e: c.ucrl_vtr_sigma_ldp(e, 1e-5, H)):
        vals = [f(e) for e in eps_vals]
        assert all(a > b for a, b in itertools.pairwise(vals))
    for f in (lambda h: c.ucrl_vtr_sigma_jdp(0.5, 1e-5, h, K), lambda h: c.ucrl_vtr_sigma_ldp(0.5, 1e-5, h)):
        vals = [f(h) for h in (1, 2, 5, 10, 30)]
        assert all(a < b for a, b in itertools.pairwise(vals))
    # more episodes -> deeper tree -> more JDP noise; smaller delta -> more noise
    assert c.ucrl_vtr_sigma_jdp(0.5, 1e-5, H, 100) < c.ucrl_vtr_sigma_jdp(0.5, 1e-5, H, K)
    assert c.ucrl_vtr_sigma_jdp(0.5, 1e-3, H, K) < c.ucrl_vtr_sigma_jdp(0.5, 1e-8, H, K)


def test_ucrl_vtr_upsilon_and_C_hand_values():
    # sigma = 1: Upsilon^J = sqrt(15)(4 sqrt 10 + 2 log(1.2e7)) = 175.252284 (see above)
    assert c.ucrl_vtr_upsilon_jdp(1.0, D, K, H, P) == pytest.approx(175.252284, rel=1e-6)
    # Upsilon^L = sqrt(1e4) * 45.249945 = 4524.9945
    assert c.ucrl_vtr_upsilon_ldp(1.0, D, K, H, P) == pytest.approx(4524.9945, rel=1e-6)
    # C^J = sqrt(15) * 11.237033 = 43.520840 ; C^L = 100 * 11.237033 = 1123.7033
    assert c.ucrl_vtr_C_jdp(1.0, D, K, H, P) == pytest.approx(43.520840, rel=1e-6)
    assert c.ucrl_vtr_C_ldp(1.0, D, K, H, P) == pytest.approx(1123.7033, rel=1e-6)
    # linear in sigma
    assert c.ucrl_vtr_upsilon_jdp(7.0, D, K, H, P) == pytest.approx(7 * 175.252284, rel=1e-6)
    # shift = 2 Upsilon
    assert c.ucrl_vtr_shift(175.25) == 350.5


def test_ucrl_vtr_width_and_nonprivate_beta():
    # sqrt(2 H^2 log(3H (1+KH)^{d/2}/p)): log(3*10/0.05) = log 600 = 6.396930 ;
    #   (d/2) log(1 + 1e5) = 5 * 11.512935 = 57.564677 ; sum = 63.961607 ;
    #   10 * sqrt(2 * 63.961607) = 10 * 11.310314 = 113.10314
    w = c.ucrl_vtr_self_normalized_width(H, K, D, P)
    assert w == pytest.approx(113.10314, rel=1e-6)
    # direct evaluation agrees where it does not overflow
    assert w == pytest.approx(math.sqrt(2 * H**2 * math.log(3 * H * (1 + K * H) ** (D / 2) / P)), rel=1e-12)
    # non-private (Thm. 1 with Upsilon = C = 0): C_w sqrt(H^2) + width = 1 * 10 + 113.10314 = 123.10314
    assert c.ucrl_vtr_beta_nonprivate(1.0, H, K, D, P) == pytest.approx(123.10314, rel=1e-6)
    assert c.ucrl_vtr_beta_nonprivate(2.5, H, K, D, P) == pytest.approx(25 + 113.10314, rel=1e-6)


def test_ucrl_vtr_width_never_overflows():
    # (1 + KH)^{d/2} = (1e13)^{5e5} overflows a float; its log does not
    w = c.ucrl_vtr_self_normalized_width(1000, 10**10, 10**6, 1e-3)
    assert math.isfinite(w) and w > 0


def test_ucrl_vtr_beta_hand_value_and_condition():
    # Cor. 1 at eps = 1, delta = 1e-5: Upsilon = 3.486240e6 * 175.252284 = 6.109718e8
    #   beta = 3 (C_w + 1) sqrt(100 + 6.109718e8) + 113.10314 = 6 * 24718.04 + 113.10 = 148421.4
    ups = 3.4862398818721925e6 * 175.25228361937832
    b = c.ucrl_vtr_beta(100.0, ups, 1.0, H, K, D, P)
    assert b == pytest.approx(6 * math.sqrt(100 + ups) + 113.10314494285055, rel=1e-12)
    assert b == pytest.approx(148421.4, rel=1e-5)
    # Thm. 1 condition with ups_low = Upsilon, ups_high = 3 Upsilon, C = C^J
    C = 3.4862398818721925e6 * 43.52084047856362
    cond = c.ucrl_vtr_beta_condition(100.0, ups, 3 * ups, C, 1.0, H, K, D, P)
    assert cond == pytest.approx(
        ((100 + 3 * ups) * 1.0 + C) / math.sqrt(100 + ups) + 113.10314494285055, rel=1e-12
    )
    assert b >= cond


@pytest.mark.parametrize("kind", ["jdp", "ldp"])
@pytest.mark.parametrize(
    "eps,delta,h,k,d,cw",
    list(
        itertools.product([0.1, 0.9], [1e-6, 0.05], [1, 5, 20], [1, 50, 10**5], [1, 4, 30], [0.1, 1.0, 10.0])
    ),
)
def test_ucrl_vtr_gaussian_beta_satisfies_theorem_1(kind, eps, delta, h, k, d, cw):
    out = c.calibrate_ucrl_vtr(kind, eps, delta, h, k, d, cw, sampler="float", calibration="paper")
    assert out.Upsilon >= out.C  # the fact the corollaries' proofs rely on
    assert out.beta >= out.beta_condition


def test_ucrl_vtr_beta_monotone():
    base = c.calibrate_ucrl_vtr("jdp", 0.5, 1e-5, H, K, D, 1.0, sampler="float", calibration="paper").beta
    assert (
        c.calibrate_ucrl_vtr("jdp", 0.5, 1e-5, H, K, D, 2.0, sampler="float", calibration="paper").beta > base
    )  # in C_w
    assert (
        c.calibrate_ucrl_vtr("jdp", 0.9, 1e-5, H, K, D, 1.0, sampler="float", calibration="paper").beta < base
    )  # in eps
    assert (
        c.calibrate_ucrl_vtr("jdp", 0.5, 1e-5, H, K, 20, 1.0, sampler="float", calibration="paper").beta
        > base
    )  # in d
    assert (
        c.calibrate_ucrl_vtr("ldp", 0.5, 1e-5, H, K, D, 1.0, sampler="float", calibration="paper").beta
        < c.calibrate_ucrl_vtr("ldp", 0.5, 1e-5, H, 10 * K, D, 1.0, sampler="float", calibration="paper").beta
    )  # LDP grows with K


# ============================================================================================
# (b) UCRL-VTR, pure DP
# ============================================================================================
def test_ucrl_vtr_pure_scales_hand_values():
    # L1 sensitivities: 2 d H^2 = 2000 (matrix), 2 sqrt(d) H^2 = 632.455532 (vector)
    sm, sv = c.ucrl_vtr_l1_sensitivities(H, D)
    assert sm == 2000.0 and sv == pytest.approx(632.455532, rel=1e-9)
    # JDP, eps = 0.5: node budget 0.5 / (2 H K0) = 0.5 / 300 = 1/600 ;
    #   b_matrix = 2000 * 600 = 1.2e6 ; b_vector = 632.455532 * 600 = 379473.32
    bm, bv = c.ucrl_vtr_laplace_scales_jdp(0.5, H, K, D)
    assert bm == pytest.approx(1.2e6, rel=1e-12) and bv == pytest.approx(379473.32, rel=1e-8)
    # LDP, eps = 0.5: 0.5 / (2H) = 0.025 ; b_matrix = 2000 / 0.025 = 80000 ; b_vector = 25298.22
    bm, bv = c.ucrl_vtr_laplace_scales_ldp(0.5, H, D)
    assert bm == pytest.approx(80000.0, rel=1e-12) and bv == pytest.approx(25298.221, rel=1e-7)


def test_ucrl_vtr_pure_scales_closed_forms():
    # b_matrix = 4 d H^3 K0 / eps (JDP), 4 d H^3 / eps (LDP); vectors with sqrt(d)
    for eps, h, k, d in itertools.product([0.1, 1.0, 5.0], [1, 7], [1, 33, 10**6], [1, 9]):
        k0 = m.tree_depth(k)
        bm, bv = c.ucrl_vtr_laplace_scales_jdp(eps, h, k, d)
        assert bm == pytest.approx(4 * d * h**3 * k0 / eps, rel=1e-12)
        assert bv == pytest.approx(4 * math.sqrt(d) * h**3 * k0 / eps, rel=1e-12)
        bm, bv = c.ucrl_vtr_laplace_scales_ldp(eps, h, d)
        assert bm == pytest.approx(4 * d * h**3 / eps, rel=1e-12)


def test_ucrl_vtr_pure_budget_composes_to_epsilon():
    # 2 H K0 node releases at eps/(2 H K0) compose (simple composition) to exactly (eps, 0)
    out = c.calibrate_ucrl_vtr("jdp", 0.5, 0.0, H, K, D, 1.0, sampler="float", calibration="paper")
    eps_total, delta_total = m.simple_composition([out.node_budget] * (2 * H * K0))
    assert eps_total == pytest.approx(0.5, rel=1e-12) and delta_total == 0.0
    # b * eps_node = sensitivity
    assert out.laplace_b * out.node_budget[0] == pytest.approx(2 * D * H**2, rel=1e-12)
    out = c.calibrate_ucrl_vtr("ldp", 0.5, 0.0, H, K, D, 1.0, sampler="float", calibration="paper")
    assert m.simple_composition([out.node_budget] * (2 * H))[0] == pytest.approx(0.5, rel=1e-12)


def test_ucrl_vtr_pure_upsilon_C_beta():
    out = c.calibrate_ucrl_vtr("jdp", 0.5, 0.0, H, K, D, 1.0, sampler="float", calibration="paper")
    alpha = P / (6 * K * H)
    assert out.Upsilon == pytest.approx(c.laplace_matrix_sum_bound(1.2e6, K0, D, alpha), rel=1e-12)
    assert pytest.approx(c.laplace_vector_sum_bound(out.laplace_b_vector, K0, D, alpha), rel=1e-12) == out.C
    # row-sum branch for n = 15, d = 10: L = log(d/alpha) = log(1.2e8) = 18.603002
    #   2*15*10 + 2 sqrt(150 * 18.603002) + 18.603002 = 300 + 2 * 52.824713 + 18.603002 = 424.252428
    #   (x b = 1.2e6)
    assert out.Upsilon == pytest.approx(1.2e6 * 424.252428, rel=1e-6)
    assert out.shift == 2 * out.Upsilon and out.ups_high == 3 * out.Upsilon
    assert out.beta >= out.beta_condition
    assert out.beta >= c.ucrl_vtr_beta(out.lam, out.Upsilon, 1.0, H, K, D, P)


@pytest.mark.parametrize("kind", ["jdp", "ldp"])
@pytest.mark.parametrize(
    "eps,h,k,d,cw",
    list(itertools.product([0.01, 0.5, 5.0], [1, 4, 20], [1, 60, 10**5], [1, 3, 40], [0.1, 3.0])),
)
def test_ucrl_vtr_pure_beta_satisfies_theorem_1(kind, eps, h, k, d, cw):
    out = c.calibrate_ucrl_vtr(kind, eps, 0.0, h, k, d, cw, sampler="float", calibration="paper")
    assert out.noise == "laplace" and out.sym_divisor == 2.0
    assert out.beta >= out.beta_condition


def test_ucrl_vtr_pure_monotone():
    def f(e):
        return c.calibrate_ucrl_vtr("jdp", e, 0.0, H, K, D, 1.0, sampler="float", calibration="paper")

    assert f(0.1).laplace_b > f(0.5).laplace_b > f(2.0).laplace_b

    def g(h):
        return c.ucrl_vtr_laplace_scales_ldp(0.5, h, D)[0]

    assert g(1) < g(2) < g(10)


# ============================================================================================
# (c) LSVI-UCB, Gaussian JDP
# ============================================================================================
def test_lsvi_ucb_reference_values():
    # B = ceil((K eps)^{2/5} / (d^{3/5} H^{1/5})) = ceil(1e4^0.4 / 10^0.8) = ceil(39.810717 / 6.309573)
    #   = ceil(6.309573) = 7 ; B0 = ceil(log2 7 + 1) = ceil(3.807) = 4
    assert c.lsvi_ucb_num_batches(1.0, H, K, D) == 7
    assert c.lsvi_ucb_B0(7) == 4
    # log(32 H B0 B / delta) = log(32*10*4*7 / 1e-5) = log(8.96e8) = 20.613451 ; squared = 424.914361
    # sigma_Lambda = 128 sqrt(7*10*4) * 424.914361 = 128 * 16.733201 * 424.914361 = 9.101027e5
    # sigma_u = 128 * 10 * sqrt(70) * 424.914361 = 1280 * 8.366600 * 424.914361 = 4.550513e6
    sl = c.lsvi_ucb_sigma_lambda(1.0, 1e-5, H, 7)
    su = c.lsvi_ucb_sigma_u(1.0, 1e-5, H, 7)
    assert sig3(sl) == 9.10e5 and sl == pytest.approx(9.101027e5, rel=1e-6)
    assert sig3(su) == 4.55e6 and su == pytest.approx(4.550513e6, rel=1e-6)
    out = c.calibrate_lsvi_ucb("jdp", 1.0, 1e-5, H, K, D, sampler="float", calibration="paper")
    assert out.B == 7 and out.B0 == 4 and out.lam == 10.0
    assert out.sigma_Lambda == sl and out.sigma_u == su
    assert out.batch_length == 1429  # ceil(1e4 / 7)


LSVI_GRID = list(
    itertools.product([0.05, 0.5, 0.99, 4.0], [1e-9, 1e-5, 0.1], [1, 3, 20], [1, 2, 7, 500, 10**5])
)


@pytest.mark.parametrize("eps,delta,h,b", LSVI_GRID)
def test_lsvi_closed_forms_dominate_tool_composition(eps, delta, h, b):
    # the printed closed forms upper-bound the values the privacy proof needs
    assert c.lsvi_ucb_sigma_lambda(eps, delta, h, b) >= c.lsvi_ucb_sigma_lambda_composed(eps, delta, h, b)
    assert c.lsvi_ucb_sigma_u(eps, delta, h, b) >= c.lsvi_ucb_sigma_u_composed(eps, delta, h, b)


@pytest.mark.parametrize("eps,delta,h,b", LSVI_GRID)
def test_lsvi_composed_equals_paper_intermediate_expressions(eps, delta, h, b):
    b0 = m.tree_depth(b)
    lg = math.log
    # App. D: 128/eps sqrt(H B B0 log(4/delta) log(8H/delta) log(16HB/delta) log(32HBB0/delta))
    expected_l = (
        128
        / eps
        * math.sqrt(
            h
            * b
            * b0
            * lg(4 / delta)
            * lg(8 * h / delta)
            * lg(16 * h * b / delta)
            * lg(32 * h * b * b0 / delta)
        )
    )
    assert c.lsvi_ucb_sigma_lambda_composed(eps, delta, h, b) == pytest.approx(expected_l, rel=1e-12)
    # App. D: 32 H sqrt(8 H B log(16HB/delta) log(8H/delta) log(4/delta)) / eps
    expected_u = (
        32 * h * math.sqrt(8 * h * b * lg(16 * h * b / delta) * lg(8 * h / delta) * lg(4 / delta)) / eps
    )
    assert c.lsvi_ucb_sigma_u_composed(eps, delta, h, b) == pytest.approx(expected_u, rel=1e-12)


def test_lsvi_sigma_monotone():
    for f in (c.lsvi_ucb_sigma_lambda, c.lsvi_ucb_sigma_u):
        vals = [f(e, 1e-5, H, 7) for e in (0.1, 0.3, 0.9, 2.0)]
        assert all(a > b for a, b in itertools.pairwise(vals))
        vals = [f(0.5, 1e-5, h, 7) for h in (1, 2, 10, 40)]
        assert all(a < b for a, b in itertools.pairwise(vals))
        assert f(0.5, 1e-5, H, 7) < f(0.5, 1e-5, H, 70)  # more batches, more noise


def test_lsvi_ucb_widths_hand_values():
    # Upsilon = sigma B0 (4 sqrt d + 2 log(6KH/p)): sigma = 1, B0 = 4: 4 * 45.249945 = 180.99978
    assert c.lsvi_ucb_upsilon(1.0, 4, D, K, H, P) == pytest.approx(180.99978, rel=1e-6)
    # c_K = d Upsilon
    assert c.lsvi_ucb_c_K(180.0, D) == 1800.0
    # C = sigma (sqrt d + 2 sqrt(log(6KHd/p))): log(1.2e8) = 18.603002 ; sqrt = 4.313120
    #   3.162278 + 8.626241 = 11.788519
    assert c.lsvi_ucb_C(1.0, D, K, H, P) == pytest.approx(11.788519, rel=1e-6)
    # U_K = max(1, 2H sqrt(dK/(lam + c_K)) + C/(lam + c_K)); lam = 10, c_K = 0, C = 0:
    #   20 * sqrt(1e5 / 10) = 20 * 100 = 2000
    assert c.lsvi_ucb_U_K(10.0, 0.0, 0.0, H, K, D) == pytest.approx(2000.0, rel=1e-12)
    # huge regularizer -> U_K = 1
    assert c.lsvi_ucb_U_K(10.0, 1e12, 0.0, H, K, D) == 1.0
    # chi = 24^2 * 18 * K^2 d U_K H / p = 10368 * 1e8 * 10 * 2000 * 10 / 0.05 = 4.1472e18
    assert c.lsvi_ucb_chi(2000.0, H, K, D, P) == pytest.approx(4.1472e18, rel=1e-12)
    # beta = 24 H sqrt(d (lam + c_K)) log chi = 240 * sqrt(100) * log(4.1472e18) = 2400 * 42.868965
    #   = 102885.516
    assert c.lsvi_ucb_beta(10.0, 0.0, 2000.0, H, K, D, P) == pytest.approx(102885.516, rel=1e-6)


def test_lsvi_ucb_nonprivate():
    out = c.calibrate_lsvi_ucb("none", None, None, H, K, D, sampler="float", calibration="paper")
    assert out.B == K and out.Upsilon == 0.0 and out.c_K == 0.0 and out.C == 0.0
    assert pytest.approx(2000.0) == out.U_K and out.beta == pytest.approx(102885.516, rel=1e-6)
    assert out.noise is None and out.sigma_Lambda is None and out.sym_divisor is None
    # a batched non-private baseline
    assert (
        c.calibrate_lsvi_ucb("none", None, None, H, K, D, batches=7, sampler="float", calibration="paper").B
        == 7
    )


def test_lsvi_ucb_non_batched_variant():
    # Rem. 2 / Rem. "Non-batching algorithm regret bound": same formulas with B = K
    out = c.calibrate_lsvi_ucb(
        "jdp", 0.5, 1e-5, H, K, D, batches="every", sampler="float", calibration="paper"
    )
    assert out.B == K and out.B0 == K0 and out.batch_length == 1
    assert out.sigma_Lambda == c.lsvi_ucb_sigma_lambda(0.5, 1e-5, H, K)
    assert out.sigma_u == c.lsvi_ucb_sigma_u(0.5, 1e-5, H, K)
    batched = c.calibrate_lsvi_ucb("jdp", 0.5, 1e-5, H, K, D, sampler="float", calibration="paper")
    assert out.sigma_u > batched.sigma_u and out.beta > batched.beta
    # explicit int
    out3 = c.calibrate_lsvi_ucb("jdp", 0.5, 1e-5, H, K, D, batches=3, sampler="float", calibration="paper")
    assert out3.B == 3 and out3.B0 == 3  # ceil(log2 3 + 1) = 3


def test_lsvi_ucb_calibration_composition():
    out = c.calibrate_lsvi_ucb("jdp", 0.7, 1e-6, H, K, D, sampler="float", calibration="paper")
    assert out.Upsilon == pytest.approx(c.lsvi_ucb_upsilon(out.sigma_Lambda, out.B0, D, K, H, P), rel=1e-12)
    assert out.c_K == pytest.approx(D * out.Upsilon, rel=1e-12)
    assert out.shift == pytest.approx(out.c_K + out.Upsilon, rel=1e-12)
    assert pytest.approx(c.lsvi_ucb_C(out.sigma_u, D, K, H, P), rel=1e-12) == out.C
    assert c.lsvi_ucb_U_K(out.lam, out.c_K, out.C, H, K, D) == out.U_K
    assert out.beta == pytest.approx(
        24 * H * math.sqrt(D * (out.lam + out.c_K)) * math.log(out.chi), rel=1e-12
    )
    assert out.sym_divisor == 2.0 and out.noise == "gaussian"


def _lemma_b4_rhs(out):
    # Lem. "Lem.B.4": beta must exceed 4H sqrt(d)(lam + c_K + 3 Ups)/sqrt(lam + c_K)
    #   + 6 d H sqrt(log chi) + C / sqrt(lam + c_K)
    h, d = out.H, out.d
    r = out.lam + out.c_K
    return (
        4 * h * math.sqrt(d) * (r + 3 * out.Upsilon) / math.sqrt(r)
        + 6 * d * h * math.sqrt(out.log_chi)
        + out.C / math.sqrt(r)
    )


@pytest.mark.parametrize("kind,delta", [("none", None), ("jdp", 1e-5), ("jdp", 0.0)])
@pytest.mark.parametrize(
    "eps,h,k,d,batches",
    list(itertools.product([0.05, 0.9, 3.0], [1, 5, 20], [10, 5000, 10**6], [1, 5, 30], ["static", "every"])),
)
def test_lsvi_beta_satisfies_lemma_b4(kind, delta, eps, h, k, d, batches):
    out = c.calibrate_lsvi_ucb(
        kind,
        eps if kind != "none" else None,
        delta,
        h,
        k,
        d,
        batches=batches,
        sampler="float",
        calibration="paper",
    )
    assert out.beta >= _lemma_b4_rhs(out)
    assert out.lam + out.c_K >= out.Upsilon


def test_lsvi_num_batches_clipped_to_K():
    # (K eps)^{2/5} / (d^{3/5} H^{1/5}) = (10 * 1e6)^0.4 = 631 > K = 10 -> B = K
    assert c.lsvi_ucb_num_batches(1e6, 1, 10, 1) == 10
    assert c.lsvi_ucb_num_batches_pure(1e6, 1, 10, 1) == 10
    # tiny eps -> at least one batch
    assert c.lsvi_ucb_num_batches(1e-9, 10, 10, 10) == 1


def test_lsvi_num_batches_clip_survives_an_overflowing_K_eps():
    """K eps = 1e310 is inf in floating point: ceil(inf) raised OverflowError; the clip gives K."""
    from privrl.agents.lsvi_ucb.calibration import lsvi_ucb_practical_batches

    assert c.lsvi_ucb_num_batches(1e308, 5, 100, 3) == 100
    assert c.lsvi_ucb_num_batches_pure(1e308, 5, 100, 3) == 100
    assert lsvi_ucb_practical_batches(1e15, 1e-5, 5, 100, 3, 0.05) == 100
    # p is documented as unused: the same B for any p
    assert lsvi_ucb_practical_batches(10.0, 1e-5, 3, 2000, 3, 0.05) == lsvi_ucb_practical_batches(
        10.0, 1e-5, 3, 2000, 3, 0.5
    )
    assert "not used" in (lsvi_ucb_practical_batches.__doc__ or "")


# ============================================================================================
# (d) LSVI-UCB, pure JDP
# ============================================================================================
def test_lsvi_pure_reference():
    # B = ceil((K eps)^{1/3} / (d^{2/3} H^{1/3})) = ceil(1e4^{1/3} / 10) = ceil(21.544 / 10) = 3 ; B0 = 3
    assert c.lsvi_ucb_num_batches_pure(1.0, H, K, D) == 3
    # sigma_Lambda = 2d / (eps / (2 H B0)) = 20 * 60 = 1200 ; sigma_u = 2 sqrt(d)(H+1) * 2HB / eps
    #   = 2 * 3.162278 * 11 * 60 = 4174.2065
    sl, su = c.lsvi_ucb_laplace_scales(1.0, H, 3, D)
    assert sl == pytest.approx(1200.0, rel=1e-12)
    assert su == pytest.approx(4174.2065, rel=1e-8)
    out = c.calibrate_lsvi_ucb("jdp", 1.0, 0.0, H, K, D, sampler="float", calibration="paper")
    assert out.pure and out.noise == "laplace" and out.B == 3 and out.B0 == 3
    assert out.sigma_Lambda == sl and out.sigma_u == su
    # Upsilon (printed) = sigma B0 (2d + 2 sqrt(d log(6KHd/p)) + log(6KHd/p)), log(1.2e8) = 18.603002:
    #   20 + 2 sqrt(186.03002) + 18.603002 = 20 + 27.278 + 18.603 = 65.8814 ; x 1200 x 3 = 237173.6
    assert out.Upsilon == pytest.approx(237173.64, rel=1e-6)
    # C (printed) = sigma_u sqrt(d) log(6KHd/p) = 4174.2065 * 3.162278 * 18.603002 = 245559.6
    assert pytest.approx(245559.63, rel=1e-6) == out.C


def test_lsvi_pure_scales_closed_forms_and_budget():
    for eps, h, b, d in itertools.product([0.1, 1.0, 7.0], [1, 4, 15], [1, 3, 100], [1, 6]):
        b0 = m.tree_depth(b)
        sl, su = c.lsvi_ucb_laplace_scales(eps, h, b, d)
        assert sl == pytest.approx(4 * d * h * b0 / eps, rel=1e-12)
        assert su == pytest.approx(4 * math.sqrt(d) * h * (h + 1) * b / eps, rel=1e-12)
        # H trees x B0 nodes at eps_node plus H x B releases at eps_rel compose to eps
        eps_node = 2 * d / sl
        eps_rel = 2 * math.sqrt(d) * (h + 1) / su
        total = m.simple_composition([(eps_node, 0.0)] * (h * b0) + [(eps_rel, 0.0)] * (h * b))
        assert total[0] == pytest.approx(eps, rel=1e-12) and total[1] == 0.0


def test_lsvi_pure_c_K():
    # c_K = max(d Upsilon, C/H - lam)
    assert c.lsvi_ucb_c_K_pure(100.0, 50.0, 10.0, 10, 10) == 1000.0  # d Upsilon dominates
    assert c.lsvi_ucb_c_K_pure(1.0, 5000.0, 1.0, 1, 10) == 499.0  # 5000/10 - 1
    # in the reference instance the paper's d Upsilon is kept
    out = c.calibrate_lsvi_ucb("jdp", 1.0, 0.0, H, K, D, sampler="float", calibration="paper")
    assert out.c_K == pytest.approx(D * out.Upsilon, rel=1e-12)
    # non-batched, d = 1: C / (lam + d Upsilon) > H, c_K is raised so that C = H (lam + c_K)
    out = c.calibrate_lsvi_ucb(
        "jdp", 0.5, 0.0, 5, 10**6, 1, batches="every", sampler="float", calibration="paper"
    )
    assert 5 * (out.lam + out.Upsilon) < out.C
    assert out.c_K == pytest.approx(out.C / 5 - out.lam, rel=1e-12)


def test_lsvi_pure_printed_upsilon_dominates_sum_bound():
    for b, b0, d, p in itertools.product([1.0, 3.5], [1, 3, 15], [1, 10, 100], [1e-3, 0.05]):
        k, h = 1000, 5
        printed = c.lsvi_ucb_upsilon_pure(b, b0, d, k, h, p)
        assert printed >= c.laplace_matrix_sum_bound(b, b0, d, p / (6 * k * h))


def test_lsvi_pure_monotone():
    def f(e):
        return c.calibrate_lsvi_ucb("jdp", e, 0.0, H, K, D, batches=5, sampler="float", calibration="paper")

    assert f(0.1).sigma_u > f(1.0).sigma_u > f(10.0).sigma_u

    def g(h):
        return c.lsvi_ucb_laplace_scales(0.5, h, 5, D)

    assert g(1)[0] < g(3)[0] and g(1)[1] < g(3)[1]


# ============================================================================================
# (e) UCRL-VTR+
# ============================================================================================
def test_vtr_plus_sigma_reference():
    # JDP: S = sqrt(2 H K0 log(16H/delta) log(8/delta) log(32 H K0/delta)), eps = 1, delta = 1e-5:
    #   log(1.6e7) = 16.588099, log(8e5) = 13.592367, log(4.8e8) = 19.989297
    #   300 * 16.588099 * 13.592367 * 19.989297 = 1352105.2 ; sqrt = 1162.80059
    #   sigma_B1 = 64 * 10 * 1162.80059 = 744192.38 ; sigma_B2 = 64 * 1e4 * 1162.80059 = 7.4419238e8
    s1, s2 = c.ucrl_vtr_plus_sigmas_jdp(1.0, 1e-5, H, K, D)
    assert s1 == pytest.approx(744192.38, rel=1e-6) and s2 == pytest.approx(7.4419238e8, rel=1e-6)
    # LDP: sqrt(2 log(8H/delta)) = sqrt(2 * 15.894952) = 5.638254 ; sigma_B1 = 8*10*10 * 5.638254
    #   = 4510.603 ; sigma_B2 = 8 * 1e5 * 5.638254 = 4.510603e6
    s1, s2 = c.ucrl_vtr_plus_sigmas_ldp(1.0, 1e-5, H, D)
    assert s1 == pytest.approx(4510.603, rel=1e-6) and s2 == pytest.approx(4.510603e6, rel=1e-6)


@pytest.mark.parametrize("eps,delta,h,k", GRID)
def test_vtr_plus_closed_forms_equal_tool_composition(eps, delta, h, k):
    for d in (1, 7):
        a = c.ucrl_vtr_plus_sigmas_jdp(eps, delta, h, k, d)
        b = c.ucrl_vtr_plus_sigmas_jdp_composed(eps, delta, h, k, d)
        assert a == (pytest.approx(b[0], rel=1e-12), pytest.approx(b[1], rel=1e-12))
        a = c.ucrl_vtr_plus_sigmas_ldp(eps, delta, h, d)
        b = c.ucrl_vtr_plus_sigmas_ldp_composed(eps, delta, h, d)
        assert a == (pytest.approx(b[0], rel=1e-12), pytest.approx(b[1], rel=1e-12))


def test_vtr_plus_sigma_monotone():
    vals = [c.ucrl_vtr_plus_sigmas_jdp(e, 1e-5, H, K, D)[0] for e in (0.1, 0.5, 0.9)]
    assert vals[0] > vals[1] > vals[2]
    vals = [c.ucrl_vtr_plus_sigmas_ldp(0.5, 1e-5, h, D)[1] for h in (1, 2, 5)]
    assert vals[0] < vals[1] < vals[2]


def test_vtr_plus_upsilon_C_hand_values():
    # alpha = p / (24KH): log(24KH/p) = log(4.8e7) = 17.686730
    #   JDP, sigma = 1: sqrt(15) (4 sqrt 10 + 2 * 17.686730) = 3.872983 * 48.022571 = 185.99060
    assert c.ucrl_vtr_plus_upsilon(1.0, K0, D, K, H, P) == pytest.approx(185.99060, rel=1e-6)
    #   C: sqrt(15) (sqrt 10 + 2 sqrt(17.686730)) = 3.872983 * (3.162278 + 8.411124) = 3.872983 * 11.573402
    #      = 44.823555
    assert c.ucrl_vtr_plus_C(1.0, K0, D, K, H, P) == pytest.approx(44.823555, rel=1e-6)
    #   LDP uses sqrt(K) = 100
    assert c.ucrl_vtr_plus_upsilon(1.0, K, D, K, H, P) == pytest.approx(4802.2571, rel=1e-6)


def test_vtr_plus_nonprivate_radii_hand_values():
    # lam = 1, k = K: l = log(24 K^2 H / p) = log(4.8e11) = 26.897052 ; log(1 + K) = 9.210440
    #   beta_check = 1 (C_w sqrt(lam)) + 8*10*sqrt(9.210440 * 26.897052) + 4 sqrt(10) * 26.897052
    #              = 1 + 1259.1676 + 340.2208 = 1600.3884
    #   beta_hat = 1 + 8 sqrt(10 * 9.210440 * 26.897052) + 340.2208 = 1 + 398.1858 + 340.2208 = 739.4066
    #   beta_tilde = 1 + 8 sqrt(10 * 1e4 * log(1 + 1e7) * 26.897052) + 4 * 100 * 26.897052
    #              = 1 + 8 sqrt(1e5 * 16.118096 * 26.897052) + 10758.82 = 1 + 52674.35 + 10758.82 = 63434.17
    out = c.calibrate_ucrl_vtr_plus("none", None, None, H, K, D, 1.0, sampler="float", calibration="paper")
    assert out.beta_check == pytest.approx(1600.3884, rel=1e-6)
    assert out.beta_hat == pytest.approx(739.4066, rel=1e-6)
    assert out.beta_tilde == pytest.approx(63434.17, rel=1e-6)
    assert out.lam == 1.0 and out.Upsilon1 == 0.0 and out.noise is None


def test_vtr_plus_betas_formula_and_k_dependence():
    u1, u2 = 1234.5, 98765.4
    bh, bc, bt = c.ucrl_vtr_plus_betas(1.0, u1, u2, 2.0, H, K, D, P)
    ell = math.log(24 * K**2 * H / P)
    n1 = 3 * 3.0 * math.sqrt(1 + u1)
    assert bh == pytest.approx(
        n1 + 8 * math.sqrt(D * math.log(1 + K) * ell) + 4 * math.sqrt(D) * ell, rel=1e-12
    )
    assert bc == pytest.approx(
        n1 + 8 * D * math.sqrt(math.log(1 + K) * ell) + 4 * math.sqrt(D) * ell, rel=1e-12
    )
    assert bt == pytest.approx(
        3 * 3.0 * math.sqrt(1 + u2)
        + 8 * math.sqrt(D * H**4 * math.log(1 + K * H**4 / D) * ell)
        + 4 * H**2 * ell,
        rel=1e-12,
    )
    # non-decreasing in k; k = K is the default
    vals = [c.ucrl_vtr_plus_betas(1.0, u1, u2, 2.0, H, K, D, P, k=k)[0] for k in (1, 10, 1000, K)]
    assert all(a <= b for a, b in itertools.pairwise(vals)) and vals[-1] == bh


@pytest.mark.parametrize("kind,delta", [("jdp", 1e-5), ("ldp", 1e-5), ("jdp", 0.0), ("ldp", 0.0)])
@pytest.mark.parametrize(
    "eps,h,k,d,cw", list(itertools.product([0.05, 0.9, 4.0], [1, 5], [1, 300, 10**5], [1, 8], [0.2, 5.0]))
)
def test_vtr_plus_radii_satisfy_theorem(kind, delta, eps, h, k, d, cw):
    out = c.calibrate_ucrl_vtr_plus(kind, eps, delta, h, k, d, cw, sampler="float", calibration="paper")
    for name in ("beta_hat", "beta_check", "beta_tilde"):
        assert getattr(out, name) >= getattr(out, name + "_condition")
    if delta > 0:
        assert out.Upsilon1 >= out.C1 and out.Upsilon2 >= out.C2


def test_vtr_plus_pure_scales():
    # JDP eps = 1: node budget 1 / (4 H K0) = 1/600 ; L1 sens 2d^2 = 200, 2 d^{3/2} = 63.245553,
    #   2 d H^4 = 2e5, 2 sqrt(d) H^4 = 63245.553 -> scales x 600
    b1, bf, b2, bg = c.ucrl_vtr_plus_laplace_scales_jdp(1.0, H, K, D)
    assert b1 == pytest.approx(120000.0, rel=1e-12) and bf == pytest.approx(37947.332, rel=1e-8)
    assert b2 == pytest.approx(1.2e8, rel=1e-12) and bg == pytest.approx(3.7947332e7, rel=1e-8)
    # LDP: eps / 4H = 1/40
    b1, bf, b2, bg = c.ucrl_vtr_plus_laplace_scales_ldp(1.0, H, D)
    assert b1 == pytest.approx(8000.0, rel=1e-12) and b2 == pytest.approx(8e6, rel=1e-12)
    out = c.calibrate_ucrl_vtr_plus("ldp", 1.0, 0.0, H, K, D, 1.0, sampler="float", calibration="paper")
    assert out.sigma_B1 == 8000.0 and out.noise == "laplace" and out.sym_divisor == 2.0
    assert out.Upsilon1 == pytest.approx(
        c.laplace_matrix_sum_bound(8000.0, K, D, P / (24 * K * H)), rel=1e-12
    )


# ============================================================================================
# (f) Entry points
# ============================================================================================
UCRL_KEYS = {
    "kind",
    "pure",
    "lam",
    "K0",
    "sigma_B",
    "laplace_b",
    "Upsilon",
    "C",
    "shift",
    "beta",
    "sym_divisor",
    "noise",
    "in_theorem_regime",
}
LSVI_KEYS = {
    "lam",
    "B",
    "B0",
    "sigma_Lambda",
    "sigma_u",
    "Upsilon",
    "c_K",
    "C",
    "U_K",
    "chi",
    "beta",
    "sym_divisor",
    "noise",
    "pure",
}
PLUS_KEYS = {
    "lam",
    "K0",
    "sigma_B1",
    "sigma_B2",
    "Upsilon1",
    "Upsilon2",
    "C1",
    "C2",
    "beta_hat",
    "beta_check",
    "beta_tilde",
}


def test_calibrate_ucrl_vtr_jdp_reference_dict():
    out = c.calibrate_ucrl_vtr("jdp", 1.0, 1e-5, H, K, D, 1.0, sampler="float", calibration="paper")
    assert set(out.to_dict()) >= UCRL_KEYS
    assert out.lam == 100.0 and out.K0 == 15
    assert sig3(out.sigma_B) == 3.49e6
    assert out.laplace_b is None and out.noise == "gaussian"
    assert out.sym_divisor == pytest.approx(math.sqrt(2))
    assert out.Upsilon == pytest.approx(out.sigma_B * 175.25228361937832, rel=1e-12)
    assert pytest.approx(out.sigma_B * 43.52084047856362, rel=1e-12) == out.C
    assert out.shift == 2 * out.Upsilon
    assert out.beta == pytest.approx(148421.4, rel=1e-5)  # see test_ucrl_vtr_beta_hand_value...
    assert out.in_theorem_regime is False  # eps = 1 is not in (0, 1)
    assert (
        c.calibrate_ucrl_vtr(
            "jdp", 0.5, 1e-5, H, K, D, 1.0, sampler="float", calibration="paper"
        ).in_theorem_regime
        is True
    )
    # per-node budget of the tree
    assert out.node_budget == m.tree_node_budget(*m.advanced_composition_budget(0.5, 0.5e-5, H), K)


def test_calibrate_ucrl_vtr_ldp_and_none():
    out = c.calibrate_ucrl_vtr("ldp", 0.5, 1e-5, H, K, D, 1.0, sampler="float", calibration="paper")
    assert out.sigma_B == c.ucrl_vtr_sigma_ldp(0.5, 1e-5, H)
    assert out.Upsilon == pytest.approx(out.sigma_B * 4524.9945, rel=1e-6)  # sqrt(K) version
    assert out.noise_terms == K and out.noise_site == "user"
    none = c.calibrate_ucrl_vtr("none", None, None, H, K, D, 1.0, sampler="float", calibration="paper")
    assert set(none.to_dict()) >= UCRL_KEYS
    assert none.Upsilon == 0.0 and none.C == 0.0 and none.shift == 0.0
    assert none.noise is None and none.sigma_B is None and none.sym_divisor is None
    assert none.beta == pytest.approx(123.10314, rel=1e-6) and none.in_theorem_regime is True
    # none ignores the (valid) privacy parameters it is given
    assert (
        c.calibrate_ucrl_vtr("none", 0.5, 1e-5, H, K, D, 1.0, sampler="float", calibration="paper").beta
        == none.beta
    )


def test_calibrate_ucrl_vtr_pure_dict():
    out = c.calibrate_ucrl_vtr("jdp", 0.5, 0.0, H, K, D, 1.0, sampler="float", calibration="paper")
    assert set(out.to_dict()) >= UCRL_KEYS
    assert out.pure is True and out.noise == "laplace" and out.sym_divisor == 2.0
    assert out.laplace_b == pytest.approx(1.2e6) and out.sigma_B == out.laplace_b
    assert out.in_theorem_regime is True


def test_calibrate_lsvi_and_plus_keys():
    assert (
        set(c.calibrate_lsvi_ucb("jdp", 0.5, 1e-5, H, K, D, sampler="float", calibration="paper").to_dict())
        >= LSVI_KEYS
    )
    assert (
        set(c.calibrate_lsvi_ucb("jdp", 0.5, 0.0, H, K, D, sampler="float", calibration="paper").to_dict())
        >= LSVI_KEYS
    )
    assert (
        set(c.calibrate_lsvi_ucb("none", None, None, H, K, D, sampler="float", calibration="paper").to_dict())
        >= LSVI_KEYS
    )
    for kind, delta in [("none", None), ("jdp", 1e-5), ("ldp", 1e-5), ("jdp", 0.0), ("ldp", 0.0)]:
        out = c.calibrate_ucrl_vtr_plus(
            kind, 0.5 if kind != "none" else None, delta, H, K, D, 1.0, sampler="float", calibration="paper"
        )
        assert set(out.to_dict()) >= PLUS_KEYS
        if kind != "none":
            assert out.shift1 == 2 * out.Upsilon1 and out.shift2 == 2 * out.Upsilon2
    out = c.calibrate_ucrl_vtr_plus("jdp", 1.0, 1e-5, H, K, D, 1.0, sampler="float", calibration="paper")
    assert out.sigma_B1 == pytest.approx(744192.38, rel=1e-6)
    assert out.sigma_f == out.sigma_B1 and out.sigma_g == out.sigma_B2
    assert out.Upsilon1 == pytest.approx(out.sigma_B1 * 185.99060, rel=1e-6)
    assert out.sym_divisor == pytest.approx(math.sqrt(2))


def test_calibrate_lsvi_regime_flag():
    assert (
        c.calibrate_lsvi_ucb(
            "jdp", 0.5, 1e-5, H, K, D, sampler="float", calibration="paper"
        ).in_theorem_regime
        is True
    )
    assert (
        c.calibrate_lsvi_ucb(
            "jdp", 1.5, 1e-5, H, K, D, sampler="float", calibration="paper"
        ).in_theorem_regime
        is False
    )


# ------------------------------------------------------------------------------ bad inputs
@pytest.mark.parametrize("fn", ["ucrl", "plus"])
def test_entry_point_bad_inputs(fn):
    f = c.calibrate_ucrl_vtr if fn == "ucrl" else c.calibrate_ucrl_vtr_plus
    good = dict(kind="jdp", epsilon=0.5, delta=1e-5, H=H, K=K, d=D, C_w=1.0, p=P)
    cases = [
        ("kind", "gdp"),
        ("kind", None),
        ("epsilon", 0.0),
        ("epsilon", -1.0),
        ("epsilon", math.inf),
        ("epsilon", math.nan),
        ("epsilon", None),
        ("delta", 1.0),
        ("delta", -0.1),
        ("delta", None),
        ("H", 0),
        ("H", 2.5),
        ("K", 0),
        ("K", "10"),
        ("d", -1),
        ("d", True),
        ("C_w", 0.0),
        ("C_w", -2.0),
        ("C_w", math.inf),
        ("p", 0.0),
        ("p", 1.0),
    ]
    for name, value in cases:
        kw = dict(good, **{name: value})
        with pytest.raises(PrivacyParameterError, match=rf"\b{name}\b"):
            f(**kw)


def test_lsvi_bad_inputs():
    good = dict(kind="jdp", epsilon=0.5, delta=1e-5, H=H, K=K, d=D, p=P)
    cases = [
        ("kind", "ldp"),
        ("kind", "x"),
        ("epsilon", 0),
        ("delta", 1.0),
        ("H", 0),
        ("K", 1.5),
        ("d", 0),
        ("p", 2.0),
        ("batches", "sometimes"),
        ("batches", 0),
        ("batches", K + 1),
        ("batches", 2.0),
        ("batches", True),
    ]
    for name, value in cases:
        with pytest.raises(PrivacyParameterError, match=rf"\b{name}\b"):
            c.calibrate_lsvi_ucb(**dict(good, **{name: value}), calibration="paper")


def test_helper_bad_inputs():
    with pytest.raises(PrivacyParameterError, match="alpha"):
        c.gaussian_matrix_bound(1.0, 1, 3, 0.0)
    with pytest.raises(PrivacyParameterError, match="sigma"):
        c.gaussian_vector_bound(-1.0, 1, 3, 0.1)
    with pytest.raises(PrivacyParameterError, match=r"\bn\b"):
        c.laplace_matrix_sum_bound(1.0, 0, 3, 0.1)
    with pytest.raises(PrivacyParameterError, match="ups_high"):
        c.ucrl_vtr_beta_condition(1.0, 5.0, 1.0, 0.0, 1.0, H, K, D, P)
    with pytest.raises(PrivacyParameterError, match="epsilon"):
        c.ucrl_vtr_sigma_jdp(0.0, 1e-5, H, K)
    with pytest.raises(PrivacyParameterError, match="delta"):
        c.lsvi_ucb_sigma_u(0.5, 0.0, H, 7)
    with pytest.raises(PrivacyParameterError, match=r"\bk\b"):
        c.ucrl_vtr_plus_betas(1.0, 1.0, 1.0, 1.0, H, K, D, P, k=0)


# ------------------------------------------------------------------ distinct H, K, d (no aliasing)
def test_upsilon_argument_order_with_distinct_values():
    # d = 4, K = 100, H = 3, p = 0.05: K0 = ceil(log2 100 + 1) = ceil(7.644) = 8 ;
    #   log(6 * 100 * 3 / 0.05) = log(36000) = 10.491274 ; sqrt(8) (4*2 + 2*10.491274) = 2.828427 * 28.982548
    #   = 81.975026
    assert c.ucrl_vtr_upsilon_jdp(1.0, 4, 100, 3, 0.05) == pytest.approx(81.975026, rel=1e-7)


def test_entry_points_against_inline_formulas_distinct_values():
    h, k, d, eps, dl, cw, p = 4, 300, 7, 0.3, 1e-4, 2.0, 0.1
    lg, sq = math.log, math.sqrt
    k0 = math.ceil(math.log2(k) + 1)  # ceil(8.2288 + 1) = 10
    assert k0 == 10
    width = sq(2 * h**2 * lg(3 * h * (1 + k * h) ** (d / 2) / p))
    # Cor. 1
    s = 32 * h**2 / eps * sq(2 * h * k0 * lg(8 * h / dl) * lg(4 / dl) * lg(16 * h * k0 / dl))
    ups = s * sq(k0) * (4 * sq(d) + 2 * lg(6 * k * h / p))
    C = s * sq(k0) * (sq(d) + 2 * sq(lg(6 * k * h / p)))
    out = c.calibrate_ucrl_vtr("jdp", eps, dl, h, k, d, cw, p, sampler="float", calibration="paper")
    assert out.sigma_B == pytest.approx(s, rel=1e-12)
    assert out.Upsilon == pytest.approx(ups, rel=1e-12) and pytest.approx(C, rel=1e-12) == out.C
    assert out.beta == pytest.approx(3 * (cw + 1) * sq(h**2 + ups) + width, rel=1e-12)
    # Cor. 2
    s = 4 * h**3 / eps * sq(2 * lg(4 * h / dl))
    ups = s * sq(k) * (4 * sq(d) + 2 * lg(6 * k * h / p))
    out = c.calibrate_ucrl_vtr("ldp", eps, dl, h, k, d, cw, p, sampler="float", calibration="paper")
    assert out.sigma_B == pytest.approx(s, rel=1e-12) and out.Upsilon == pytest.approx(ups, rel=1e-12)
    assert pytest.approx(s * sq(k) * (sq(d) + 2 * sq(lg(6 * k * h / p))), rel=1e-12) == out.C
    # App. D (batches given explicitly: B = 5, B0 = ceil(log2 5 + 1) = 4)
    B, B0 = 5, 4
    sl = 128 / eps * sq(B * h * B0) * lg(32 * h * B0 * B / dl) ** 2
    su = 128 / eps * h * sq(h * B) * lg(32 * h * B0 * B / dl) ** 2
    ups = sl * B0 * (4 * sq(d) + 2 * lg(6 * k * h / p))
    cK = d * ups
    C = su * (sq(d) + 2 * sq(lg(6 * k * h * d / p)))
    UK = max(1.0, 2 * h * sq(d * k / (d + cK)) + C / (d + cK))
    chi = 24**2 * 18 * k**2 * d * UK * h / p
    out = c.calibrate_lsvi_ucb("jdp", eps, dl, h, k, d, p, batches=B, sampler="float", calibration="paper")
    assert (out.B, out.B0) == (B, B0)
    for key, val in [
        ("sigma_Lambda", sl),
        ("sigma_u", su),
        ("Upsilon", ups),
        ("c_K", cK),
        ("C", C),
        ("U_K", UK),
        ("chi", chi),
        ("beta", 24 * h * sq(d * (d + cK)) * lg(chi)),
    ]:
        assert getattr(out, key) == pytest.approx(val, rel=1e-12), key
    # static B: ceil((300 * 0.3)^{0.4} / (7^{0.6} 4^{0.2})) = ceil(6.0492 / (3.2141 * 1.3195))
    #   = ceil(1.4264) = 2
    assert c.calibrate_lsvi_ucb("jdp", eps, dl, h, k, d, p, sampler="float", calibration="paper").B == 2
    # Cor. JDP-UCRL-VTR+
    S = sq(2 * h * k0 * lg(16 * h / dl) * lg(8 / dl) * lg(32 * h * k0 / dl))
    s1, s2 = 64 * d * S / eps, 64 * h**4 * S / eps
    u1 = s1 * sq(k0) * (4 * sq(d) + 2 * lg(24 * k * h / p))
    u2 = s2 * sq(k0) * (4 * sq(d) + 2 * lg(24 * k * h / p))
    ell = lg(24 * k**2 * h / p)
    out = c.calibrate_ucrl_vtr_plus("jdp", eps, dl, h, k, d, cw, p, sampler="float", calibration="paper")
    assert out.sigma_B1 == pytest.approx(s1, rel=1e-12) and out.sigma_B2 == pytest.approx(s2, rel=1e-12)
    assert out.Upsilon1 == pytest.approx(u1, rel=1e-12) and out.Upsilon2 == pytest.approx(u2, rel=1e-12)
    assert pytest.approx(s2 * sq(k0) * (sq(d) + 2 * sq(lg(24 * k * h / p))), rel=1e-12) == out.C2
    assert out.beta_check == pytest.approx(
        3 * (cw + 1) * sq(1 + u1) + 8 * d * sq(lg(1 + k) * ell) + 4 * sq(d) * ell, rel=1e-12
    )
    assert out.beta_tilde == pytest.approx(
        3 * (cw + 1) * sq(1 + u2) + 8 * sq(d * h**4 * lg(1 + k * h**4 / d) * ell) + 4 * h**2 * ell, rel=1e-12
    )
    # Cor. LDP-UCRL-VTR+
    out = c.calibrate_ucrl_vtr_plus("ldp", eps, dl, h, k, d, cw, p, sampler="float", calibration="paper")
    assert out.sigma_B1 == pytest.approx(8 * d * h / eps * sq(2 * lg(8 * h / dl)), rel=1e-12)
    assert out.sigma_B2 == pytest.approx(8 * h**5 / eps * sq(2 * lg(8 * h / dl)), rel=1e-12)
    assert out.Upsilon1 == pytest.approx(
        out.sigma_B1 * sq(k) * (4 * sq(d) + 2 * lg(24 * k * h / p)), rel=1e-12
    )
    # pure: Laplace scales with distinct values, JDP UCRL-VTR: 4 d H^3 K0 / eps
    out = c.calibrate_ucrl_vtr("jdp", eps, 0.0, h, k, d, cw, p, sampler="float", calibration="paper")
    assert out.laplace_b == pytest.approx(4 * d * h**3 * k0 / eps, rel=1e-12)
    assert out.laplace_b_vector == pytest.approx(4 * sq(d) * h**3 * k0 / eps, rel=1e-12)


@pytest.mark.parametrize("sampler", ["discrete", "float"])
def test_pure_dp_certifies_at_most_the_requested_epsilon(sampler):
    # The Laplace scales reached the target only up to rounding: for about 1 epsilon in 6 the
    # composed epsilon was one ulp above it and the report gave delta = 1 at the target epsilon.
    import warnings

    from privrl.agents import UCRLVTR
    from privrl.envs import RiverSwimMixture
    from privrl.privacy import JointDP

    env = RiverSwimMixture(S=6, H=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for eps in np.round(np.geomspace(1e-2, 1e6, 40), 6):
            tight = UCRLVTR(env, JointDP(float(eps), 0.0, sampler=sampler), episodes=50, seed=0)
            tight = tight.privacy_report()["tight"]
            assert tight["epsilon_at_target_delta"] <= eps and tight["delta_at_target_epsilon"] == 0.0


def test_the_tightened_gaussian_scales_meet_the_target_exactly():
    # LSVI-UCB's Pareto tightening accepted mu up to target * (1 + 1e-12): at eps = 1e15 the
    # report's own accountant gave delta 1.0002e-5 for 1e-5.
    import warnings

    from privrl.agents import LSVIUCB
    from privrl.envs import RandomLinearMDP
    from privrl.privacy import JointDP
    from privrl.privacy.common import plan_target
    from privrl.privacy.plans import plan_mu

    env = RandomLinearMDP(S=10, A=3, d=4, H=5, seed=0)
    for eps, delta in ((1.0, 1e-5), (10.0, 1e-5), (1e6, 1e-5), (1e15, 1e-5), (1e15, 0.5)):
        privacy = JointDP(eps, delta, sampler="float", allow_large_delta=delta > 0.1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # delta = 0.5 > 1/K, asked for
            agent = LSVIUCB(env, privacy, episodes=200, seed=0)
        plan, cal = agent.release_plan(), agent.calibration
        scales = {k: float(getattr(cal, k)) for k in plan.scale_keys}
        assert plan_mu(plan, scales) <= plan_target(plan, eps, delta)

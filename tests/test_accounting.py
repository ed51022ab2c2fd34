"""Tests of privrl.privacy.accounting (tight accountant) and of the tight calibration built on it.

Hand values are derived in the comments; the Gaussian results are cross-checked against Google's
dp-accounting PLD accountant when it is installed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from _helpers import calibration as c
from privrl.exceptions import PrivacyParameterError
from privrl.privacy import JointDP, LocalDP, NonPrivate
from privrl.privacy import accounting as a
from privrl.privacy import mechanisms as m


# ============================================================================================
# Normal CDF
# ============================================================================================
def test_normal_cdf_hand_values():
    assert a.normal_cdf(0.0) == 0.5
    # Phi(1.959964) = 0.975 (the 97.5% quantile of N(0, 1))
    assert a.normal_cdf(1.959963985) == pytest.approx(0.975, abs=1e-9)
    assert a.log_normal_cdf(0.0) == pytest.approx(math.log(0.5), rel=1e-15)


def test_normal_cdf_takes_real_numbers_only():
    """Fuzzing: normal_cdf("1") was 0.841 (float() parsed it) and normal_cdf(nan) NaN; +-inf are
    its limits."""
    for f in (a.normal_cdf, a.log_normal_cdf):
        for bad in ("1", float("nan"), None, 1j, True):
            with pytest.raises(PrivacyParameterError, match="x must be a real number"):
                f(bad)
    assert (a.normal_cdf(math.inf), a.normal_cdf(-math.inf), a.log_normal_cdf(math.inf)) == (1.0, 0.0, 0.0)


def test_log_normal_cdf_deep_tail():
    # asymptotic series at x = -40: log phi(-40) = -800 - 0.5 log(2 pi) = -800.918939;
    # - log 40 = -3.688879; log(1 - 1/1600 + 3/1600^2 - ...) = log(0.99937617) = -0.00062402
    # sum: -804.608442
    assert a.log_normal_cdf(-40.0) == pytest.approx(-804.608442, abs=1e-6)
    # both branches agree at the switch point -30 (erfc is still accurate there)
    below = a.log_normal_cdf(-30.0 - 1e-9)
    above = a.log_normal_cdf(-30.0)
    assert below == pytest.approx(above, abs=1e-7)


def test_log_normal_cdf_against_scipy():
    special = pytest.importorskip("scipy.special")
    for x in (-200.0, -45.0, -31.0, -29.0, -5.0, -0.3, 0.7, 4.9, 5.1, 9.0, 40.0):
        assert a.log_normal_cdf(x) == pytest.approx(float(special.log_ndtr(x)), rel=1e-12, abs=1e-15)


# ============================================================================================
# Analytic Gaussian mechanism
# ============================================================================================
def test_gaussian_delta_hand_values():
    # eps = 0, mu = 1: Phi(1/2) - Phi(-1/2) = 2 Phi(0.5) - 1 = 2 * 0.6914625 - 1 = 0.3829249
    assert a.gaussian_delta(0.0, 1.0) == pytest.approx(0.38292492, rel=1e-7)
    # eps = 1, mu = 1: Phi(-1/2) - e Phi(-3/2) = 0.30853754 - 2.71828183 * 0.06680720
    #   = 0.30853754 - 0.18160081 = 0.12693674
    assert a.gaussian_delta(1.0, 1.0) == pytest.approx(0.12693674, rel=1e-7)
    assert a.gaussian_delta(1.0, 0.0) == 0.0
    assert a.gaussian_delta(5.0, math.inf) == 1.0


def test_analytic_gaussian_sigma_eps1_delta1e5():
    # Balle & Wang: smallest sigma with Phi(1/(2 s) - s) - e Phi(-1/(2 s) - s) <= 1e-5 (Delta = 1).
    # At s = 3.7306: 1/(2s) = 0.134027, Phi(-3.596573) = 1.6123e-4, Phi(-3.864627) = 5.5637e-5,
    # 1.6123e-4 - 2.718282 * 5.5637e-5 = 1.6123e-4 - 1.5124e-4 = 1.00e-5. So sigma ~ 3.7306.
    s = a.analytic_gaussian_sigma(1.0, 1.0, 1e-5)
    assert 3.7300 < s < 3.7312
    # it is the threshold: private at s, not at s (1 - 1e-6)
    assert a.analytic_gaussian_delta(s, 1.0, 1.0) <= 1e-5
    assert a.analytic_gaussian_delta(s * (1 - 1e-6), 1.0, 1.0) > 1e-5
    # independent check of the formula with scipy
    stats = pytest.importorskip("scipy.stats")
    mu = 1.0 / s
    d = stats.norm.cdf(mu / 2 - 1 / mu) - math.e * stats.norm.cdf(-mu / 2 - 1 / mu)
    assert d == pytest.approx(1e-5, rel=1e-6)


def test_analytic_beats_classical_gaussian():
    # the paper's sigma = Delta sqrt(2 log(2/delta)) / eps is valid (eps < 1) but loose
    for eps in (0.1, 0.5, 0.9):
        for dlt in (1e-3, 1e-5, 1e-9):
            tight = a.analytic_gaussian_sigma(1.0, eps, dlt)
            assert tight < m.gaussian_sigma(1.0, eps, dlt)
            # and the paper's sigma does satisfy the exact condition
            assert a.analytic_gaussian_delta(m.gaussian_sigma(1.0, eps, dlt), 1.0, eps) <= dlt


def test_analytic_gaussian_monotonicity():
    mus = [0.05, 0.3, 1.0, 3.0]
    for e in (0.0, 0.5, 2.0):
        ds = [a.gaussian_delta(e, mu) for mu in mus]
        assert ds == sorted(ds) and len(set(ds)) == len(ds)
    es = [0.0, 0.3, 1.0, 4.0]
    ds = [a.gaussian_delta(e, 1.2) for e in es]
    assert ds == sorted(ds, reverse=True)
    # sigma: decreasing in eps and delta, linear in the sensitivity
    assert a.analytic_gaussian_sigma(1, 0.5, 1e-5) > a.analytic_gaussian_sigma(1, 2.0, 1e-5)
    assert a.analytic_gaussian_sigma(1, 1.0, 1e-8) > a.analytic_gaussian_sigma(1, 1.0, 1e-3)
    assert a.analytic_gaussian_sigma(7.0, 1.0, 1e-5) == pytest.approx(
        7.0 * a.analytic_gaussian_sigma(1.0, 1.0, 1e-5), rel=1e-14
    )


def test_gaussian_epsilon_inverts_mu():
    for eps in (0.05, 1.0, 6.0, 30.0):
        for dlt in (1e-2, 1e-6, 1e-12):
            mu = a.gaussian_mu(eps, dlt)
            assert a.gaussian_delta(eps, mu) <= dlt
            assert a.gaussian_epsilon(mu, dlt) == pytest.approx(eps, rel=1e-9)
    assert a.gaussian_epsilon(0.0, 1e-5) == 0.0
    # delta(0) = 2 Phi(mu/2) - 1 <= delta  =>  eps = 0
    assert a.gaussian_epsilon(1e-6, 1e-3) == 0.0


def test_analytic_gaussian_bad_inputs():
    for bad in (
        dict(l2_sensitivity=-1, epsilon=1, delta=1e-5),
        dict(l2_sensitivity=1, epsilon=0, delta=1e-5),
        dict(l2_sensitivity=1, epsilon=1, delta=0.0),
        dict(l2_sensitivity=1, epsilon=1, delta=1.0),
        dict(l2_sensitivity=math.nan, epsilon=1, delta=1e-5),
    ):
        with pytest.raises(PrivacyParameterError):
            a.analytic_gaussian_sigma(**bad)
    with pytest.raises(PrivacyParameterError):
        a.gaussian_delta(-0.1, 1.0)
    with pytest.raises(PrivacyParameterError):
        a.analytic_gaussian_delta(0.0, 1.0, 1.0)


# ============================================================================================
# Composition
# ============================================================================================
def test_composed_sensitivity_and_mu_hand_values():
    assert a.composed_l2_sensitivity([3.0, 4.0]) == 5.0
    # 2 releases of sensitivity 1 and 7 of sensitivity 2: sqrt(2 + 28) = sqrt(30)
    assert a.composed_l2_sensitivity([1.0, 2.0], [2, 7]) == pytest.approx(math.sqrt(30.0), rel=1e-15)
    # 4 releases Delta = 1 sigma = 2: mu = sqrt(4 / 4) = 1
    assert a.gaussian_composition_mu([(1.0, 2.0, 4)]) == 1.0
    # mixed noise levels: sqrt(1 * (3/1)^2 + 2 * (2/4)^2) = sqrt(9.5)
    assert a.gaussian_composition_mu([(3.0, 1.0, 1), (2.0, 4.0, 2)]) == pytest.approx(math.sqrt(9.5))
    with pytest.raises(PrivacyParameterError):
        a.composed_l2_sensitivity([1.0], [1, 2])
    with pytest.raises(PrivacyParameterError):
        a.gaussian_composition_mu([(1.0, 0.0, 1)])
    with pytest.raises(PrivacyParameterError):
        a.gaussian_composition_mu([(1.0, 1.0)])


def test_k_gaussians_compose_like_one():
    # k releases with common sigma = one release with sensitivity sqrt(k) Delta
    k, delta_, sigma = 50, 2.0, 40.0
    acc = a.PrivacyAccountant().add_gaussian(delta_, sigma, k)
    assert acc.mu == pytest.approx(math.sqrt(k) * delta_ / sigma, rel=1e-15)
    assert acc.epsilon(1e-6) == pytest.approx(
        a.analytic_gaussian_epsilon(sigma, math.sqrt(k) * delta_, 1e-6), rel=1e-12
    )


def test_laplace_composition_hand_value():
    # 3 releases Delta_1 = 2, b = 4 (0.5 each) + 1 release Delta_1 = 1, b = 10 (0.1): 1.6
    assert a.laplace_composition_epsilon([(2.0, 4.0, 3), (1.0, 10.0, 1)]) == pytest.approx(1.6)
    acc = a.PrivacyAccountant().add_laplace(2.0, 4.0, 3).add_laplace(1.0, 10.0)
    assert acc.epsilon(0.0) == pytest.approx(1.6) and acc.pure_epsilon == pytest.approx(1.6)
    assert acc.delta(1.6) == 0.0 and acc.delta(2.0) == 0.0
    assert 0.0 < acc.delta(1.0) < 1.0  # zCDP bound below the pure epsilon


def test_tree_nodes_per_leaf():
    # floor(log2 n) + 1
    for n, want in ((1, 1), (2, 2), (3, 2), (4, 3), (7, 3), (8, 4), (10_000, 14), (16_384, 15)):
        assert a.tree_nodes_per_leaf(n) == want
        assert want <= m.tree_depth(n)  # the paper's K0 = ceil(log2 n) + 1
    assert a.tree_nodes_per_leaf(16_384) == m.tree_depth(16_384)  # equal at powers of two


# ============================================================================================
# zCDP
# ============================================================================================
def test_zcdp_hand_values():
    # Gaussian Delta = 2, sigma = 4: rho = 4 / 32 = 0.125; pure eps = 0.5: rho = 0.125
    assert a.zcdp_rho_gaussian(2.0, 4.0) == 0.125
    assert a.zcdp_rho_pure(0.5) == 0.125
    assert a.zcdp_compose([0.125, 0.125, 0.25]) == 0.5
    # Bun-Steinke: 0.125 + 2 sqrt(0.125 log(1e5)) = 0.125 + 2 sqrt(1.439118) = 0.125 + 2.399265
    assert a.zcdp_epsilon_simple(0.125, 1e-5) == pytest.approx(2.524265, rel=1e-6)


def test_zcdp_cks_is_the_minimum_over_alpha():
    # brute force over a fine alpha grid: delta = min exp((a-1)(a rho - eps)) / (a-1) (1-1/a)^a
    for rho, eps in ((0.5, 2.0), (0.05, 0.8), (2.0, 6.0)):
        grid = [1.0 + 10 ** (x / 2000.0) for x in range(-8000, 6000)]  # alpha - 1 in [1e-4, 1e3]
        brute = math.exp(
            min((al - 1) * (al * rho - eps) + al * math.log1p(-1 / al) - math.log(al - 1) for al in grid)
        )
        assert a.zcdp_delta(rho, eps) == pytest.approx(brute, rel=1e-4)
        assert a.zcdp_delta(rho, eps) <= brute * (1 + 1e-9)


def test_zcdp_delta_at_a_subnormal_rho():
    # the bracket's end (eps + 1) / (2 rho) overflowed below rho ~ 2e-308 and the bisection ran on
    # [1, inf]: zcdp_delta(1e-310, 0.5) was 0.99999999997 (a vacuous delta for almost no privacy
    # loss), and so the accountant's delta of a Laplace release of L1 / b = 1e-160 below its pure eps.
    # Any alpha > 1 gives a valid delta (CKS Cor. 13), so the value at alpha = 1 / sqrt(2 rho) bounds it
    def cks(rho, eps, al):
        return math.exp((al - 1) * (al * rho - eps) + al * math.log1p(-1 / al) - math.log(al - 1))

    for rho in (1e-309, 1e-315, 5e-324):
        for eps in (0.0, 1e-3, 0.5):
            assert a.zcdp_delta(rho, eps) <= cks(rho, eps, 1.0 / math.sqrt(2.0 * rho)) < 1e-150
            assert a.zcdp_delta(rho, eps) <= a.zcdp_delta(1e-300, eps)  # delta grows with rho
    acc = a.PrivacyAccountant().add_laplace(1e-160, 1.0)
    assert acc.delta(1e-170) <= cks(acc.rho, 1e-170, 1.0 / math.sqrt(2.0 * acc.rho)) < 1e-150


def test_huge_privacy_losses_are_inf_not_an_error_about_another_argument():
    # mu >= 1.35e154 (or l2_sensitivity / sigma), rho ~1e308: the epsilon is past the doubles; these
    # raised "epsilon must be finite and >= 0, got inf" (an argument the caller never passed) from
    # the bisection's bracket, and zcdp_mu(1e308, delta) "rho must be finite and >= 0, got inf"
    assert a.gaussian_epsilon(math.inf, 1e-5) == math.inf  # the rule these now follow
    assert a.gaussian_epsilon(1.4e154, 1e-5) == a.gaussian_epsilon(1e200, 1e-5) == math.inf
    assert a.analytic_gaussian_epsilon(2.0, 1e308, 1e-5) == math.inf
    assert a.zcdp_epsilon_simple(1e308, 1e-5) == a.zcdp_epsilon(1e308, 1e-5) == math.inf
    assert 1.3e154 < a.gaussian_epsilon(1.3e154, 1e-5) < math.inf  # below, still computed
    mu = a.zcdp_mu(1e308, 1e-5)
    # rho + 2 sqrt(rho log(1 / delta)) = eps gives rho = eps (1 - 7e-154): mu = sqrt(2 eps)
    assert math.isfinite(0.5 * mu * mu) and a.zcdp_delta(0.5 * mu * mu, 1e308) <= 1e-5
    assert mu == pytest.approx(math.sqrt(2.0) * 1e154, rel=1e-12)


def test_accountant_checks_the_entries_it_is_built_with():
    # PrivacyAccountant(entries=...) took anything: a mistyped kind was left out of every sum
    # (epsilon 0 for a release of mu = 1), a sigma of 0 a ZeroDivisionError at epsilon(), and
    # summary()'s own dicts an AttributeError; now each entry is checked as add_* checks it
    from privrl.privacy.accounting import PrivacyAccountant, _Entry

    with pytest.raises(PrivacyParameterError, match=r"entries\[0\].kind"):
        PrivacyAccountant(entries=[_Entry("gausian", 1.0, 1.0, 1, "")])
    with pytest.raises(PrivacyParameterError, match=r"entries\[0\]: sigma"):
        PrivacyAccountant(entries=[_Entry("gaussian", 1.0, 0.0, 1, "")])
    with pytest.raises(PrivacyParameterError, match=r"entries\[1\]"):
        PrivacyAccountant(entries=[_Entry("gaussian", 1.0, 1.0, 1, ""), 3])
    with pytest.raises(PrivacyParameterError, match="entries must be"):
        PrivacyAccountant(entries="abc")
    acc = PrivacyAccountant().add_gaussian(1.0, 2.0, 3, "x").add_laplace(1.0, 10.0, 2)
    for rebuilt in (PrivacyAccountant(entries=acc.entries), PrivacyAccountant(entries=acc.summary())):
        assert rebuilt == acc and rebuilt.epsilon(1e-5) == acc.epsilon(1e-5)
    assert PrivacyAccountant(entries=acc.entries).entries is not acc.entries  # a copy, not an alias


def test_zcdp_conversions_ordering():
    for mu in (0.1, 0.5, 1.0, 3.0):
        rho = mu * mu / 2
        for dlt in (1e-3, 1e-6):
            exact = a.gaussian_epsilon(mu, dlt)
            cks = a.zcdp_epsilon(rho, dlt)
            simple = a.zcdp_epsilon_simple(rho, dlt)
            # the exact Gaussian curve <= CKS <= Bun-Steinke
            assert exact <= cks * (1 + 1e-9) and cks <= simple * (1 + 1e-12)
            assert a.zcdp_delta(rho, cks) <= dlt * (1 + 1e-9)


def test_mixed_accountant_takes_the_better_bound():
    acc = a.PrivacyAccountant().add_gaussian(1.0, 2.0, 8).add_laplace(1.0, 20.0, 2)
    # mu = sqrt(8/4) = sqrt 2; pure part 0.1; rho = 1 + 2 * 0.05^2 / 2 = 1.0025
    assert acc.mu == pytest.approx(math.sqrt(2.0)) and acc.pure_epsilon == pytest.approx(0.1)
    assert acc.rho == pytest.approx(1.0025)
    e = acc.epsilon(1e-5)
    assert e == pytest.approx(
        min(0.1 + a.gaussian_epsilon(math.sqrt(2.0), 1e-5), a.zcdp_epsilon(1.0025, 1e-5)), rel=1e-12
    )
    assert acc.delta(e) <= 1e-5 * (1 + 1e-6)
    assert "zCDP" in acc.method()


# ============================================================================================
# Cross-check with Google's dp-accounting (PLD accountant)
# ============================================================================================
def _pld():
    return pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")


def test_single_gaussian_against_pld():
    pld = _pld()
    s = a.analytic_gaussian_sigma(1.0, 1.0, 1e-5)
    p = pld.from_gaussian_mechanism(standard_deviation=s, sensitivity=1.0, value_discretization_interval=1e-4)
    assert p.get_delta_for_epsilon(1.0) == pytest.approx(1e-5, rel=1e-3)


def test_accountant_against_pld_heterogeneous():
    pld = _pld()
    acc = a.PrivacyAccountant().add_gaussian(2.0, 30.0, 12).add_gaussian(5.0, 90.0, 5)
    comp = (
        pld.from_gaussian_mechanism(
            standard_deviation=30.0, sensitivity=2.0, value_discretization_interval=1e-4
        )
        .self_compose(12)
        .compose(
            pld.from_gaussian_mechanism(
                standard_deviation=90.0, sensitivity=5.0, value_discretization_interval=1e-4
            ).self_compose(5)
        )
    )
    for dlt in (1e-3, 1e-6):
        assert acc.epsilon(dlt) == pytest.approx(comp.get_epsilon_for_delta(dlt), rel=2e-3)


# ============================================================================================
# Tight calibration (hand values; the PLD cross-checks of every plan are in test_plans.py)
# ============================================================================================
H, K, D = 10, 10_000, 10
MU = 0.2680511  # gaussian_mu(1, 1e-5) (test above: 1 / 3.730632)


def _tight(fn, kind, **kw):
    # the hand values below are the continuous laws' (the calibrations' default was "float")
    kw.setdefault("sampler", "float")
    return getattr(c, fn)(kind, kw.pop("epsilon", 1.0), kw.pop("delta", 1e-5), calibration="tight", **kw)


def test_tight_sigma_ucrl_vtr_jdp_hand_value():
    # n = floor(log2 1e4) + 1 = 14 nodes per user and tree, H = 10 steps. Per node the worst pair
    # of users is X' = -X (||X|| = H, y = y' = H): the matrix X X^T does not move, the vector moves
    # by 2 H^2 (privrl.privacy.plans), so per step mu^2 = n (2 H^2)^2 / sigma^2; composed
    # sensitivity 2 H^2 sqrt(H n) = 200 sqrt(140) = 2366.432 -> sigma = 2366.432 / 0.2680511 = 8828.29
    # (the PLD figure: 8,828). Separate worst cases (2 H^2 for both families) gave 12485.08.
    sigma = _tight("calibrate_ucrl_vtr", "jdp", H=H, K=K, d=5, C_w=1.0).sigma_B
    assert sigma == pytest.approx(8828.29, rel=1e-5)
    assert sigma == pytest.approx(12485.08 / math.sqrt(2), rel=1e-6)
    # the paper's 3.486e6 (Cor. 1) is ~395x larger
    assert c.ucrl_vtr_sigma_jdp(1.0, 1e-5, H, K) / sigma == pytest.approx(394.894, rel=1e-4)


def test_tight_sigma_ucrl_vtr_ldp_hand_value():
    # 2H releases: per step the joint worst case 2 H^2: sensitivity 200 sqrt(10) = 632.456 / mu
    s = _tight("calibrate_ucrl_vtr", "ldp", H=H, K=K, d=D, C_w=1.0).sigma_B
    assert s == pytest.approx(632.4555 / MU, rel=1e-5) and s == pytest.approx(2359.46, rel=1e-5)


def test_tight_lsvi_hand_value():
    # B = 7 (App. D), releases R = 6 (batches start at 1, 1430, ..., 8575): the Lambda mechanisms
    # hold R = 6 leaves, n = bit_length(6) = 3 nodes per user; B0 = 4; ratio sigma_u / sigma_Lambda
    # = H / sqrt(B0) = 5. In units of sigma_Lambda = t, per step (phi' = -phi, r + V = 11 on both):
    # Lambda (law (Z'+Z'^T)/2: factor 1) moves by 0, u by 2 * 11 in each of the R releases:
    # mu^2 t^2 = H * R * 22^2 / 25 = 10 * 6 * 19.36 = 1161.6 (the alternative phi' orthogonal to phi
    # gives 10 * (3 * 2 + 6 * 2 * 121 / 25) = 640.8) -> t = 34.08225 / 0.2680511 = 127.1483, and
    # sigma_u = 5 t = 635.7417.
    assert c.lsvi_ucb_releases(K, 7) == 6
    cal = _tight("calibrate_lsvi_ucb", "jdp", H=H, K=K, d=D, batches=7)
    assert cal.sigma_u == pytest.approx(5 * 127.1483, rel=1e-5)
    # Lambda does not move at that worst pair: its noise can drop until it does. With
    # g = Wo (a^4 + b^4 - 2 a^2 b^2 c^2) + Ws y^2 (a^2 + b^2 - 2 a b c), Wo = n / sigma_L^2,
    # Ws = R / sigma_u^2, the maximiser stays at c = -1 while Ws y^2 >= 2 Wo, i.e. down to
    # sigma_L = sigma_u sqrt(2 n / (R y^2)) = 635.7417 / 11 = 57.7947 (mu unchanged)
    assert cal.sigma_Lambda == pytest.approx(cal.sigma_u / 11, rel=1e-5)
    assert cal.sigma_Lambda <= cal.sigma_u / 11 * (1 + 1e-12)


def test_tight_vtr_plus_hand_value():
    # two statistics per step, each with the UCRL-VTR structure: (phi_V / sigma_bar, V / sigma_bar)
    # with bounds sqrt(d) -> 2 d per node; (phi_{V^2}, V^2) -> 2 H^4; with sigma_B1 = 2d t and
    # sigma_B2 = 2 H^4 t (the paper's ratio) each is n / t^2 per step: mu^2 t^2 = 2 H n = 280,
    # t = sqrt(280) / mu = 62.42547, sigma_B1 = 20 t = 1248.51 (separate worst cases: 1765.66)
    cal = _tight("calibrate_ucrl_vtr_plus", "jdp", H=H, K=K, d=D, C_w=1.0)
    assert cal.sigma_B1 == pytest.approx(1248.51, rel=1e-5)
    assert cal.sigma_B2 / cal.sigma_B1 == pytest.approx(H**4 / D, rel=1e-14)
    assert cal.sigma_f == cal.sigma_B1 and cal.sigma_g == cal.sigma_B2


def test_tight_vtr_plus_ldp_hand_value():
    # n = 1: t = sqrt(20) / mu = 16.68376, sigma_B1 = 20 t = 333.675
    cal = _tight("calibrate_ucrl_vtr_plus", "ldp", H=H, K=K, d=D, C_w=1.0)
    assert cal.sigma_B1 == pytest.approx(333.675, rel=1e-5)
    assert cal.sigma_B2 / cal.sigma_B1 == pytest.approx(H**4 / D)


def test_tight_laplace_scales_hand_values():
    # Alg. 2, B = 7, K = 1e4: R = 6 releases, n = 3 nodes; per node eps/(2 H n) = 1/60,
    # per release eps/(2 H R) = 1/120: b_Lambda = 2d * 60 = 1200,
    # b_u = 2 sqrt(10) * 11 * 120 = 69.570109 * 120 = 8348.413
    cal = _tight("calibrate_lsvi_ucb", "jdp", delta=0.0, H=H, K=K, d=D, batches=7)
    assert cal.sigma_Lambda == pytest.approx(1200.0, rel=1e-12)
    assert cal.sigma_u == pytest.approx(8348.413, rel=1e-6)
    # UCRL-VTR+: 4 H n = 560 nodes per user, b_B1 = 2 d^2 * 560 = 112000
    assert _tight(
        "calibrate_ucrl_vtr_plus", "jdp", delta=0.0, H=H, K=K, d=D, C_w=1.0
    ).sigma_B1 == pytest.approx(112_000.0)
    # UCRL-VTR: 2 H n = 280 nodes, b_matrix = 2 d H^2 * 280 = 560000 (paper: 300 nodes, 600000)
    assert _tight("calibrate_ucrl_vtr", "jdp", delta=0.0, H=H, K=K, d=D, C_w=1.0).laplace_b == pytest.approx(
        560_000.0
    )
    assert c.ucrl_vtr_laplace_scales_jdp(1.0, H, K, D)[0] == pytest.approx(600_000.0)


def test_lsvi_releases_matches_the_schedule():
    from privrl.agents.lsvi_ucb.agent import batch_starts

    for K_ in (1, 2, 9, 10, 11, 40, 1000, 10_000):
        for B_ in range(1, min(K_, 12) + 1):
            assert c.lsvi_ucb_releases(K_, B_) == max(1, len(batch_starts(K_, B_)) - 1)


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 4.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-9])
@pytest.mark.parametrize("HK", [(1, 1), (2, 8), (5, 100), (10, 10_000), (20, 1000)])
def test_tight_never_exceeds_paper(eps, delta, HK):
    H_, K_ = HK
    for fn, kind, extra in (
        ("calibrate_ucrl_vtr", "jdp", {"C_w": 1.0}),
        ("calibrate_ucrl_vtr", "ldp", {"C_w": 1.0}),
        ("calibrate_ucrl_vtr_plus", "jdp", {"C_w": 1.0}),
        ("calibrate_ucrl_vtr_plus", "ldp", {"C_w": 1.0}),
        ("calibrate_lsvi_ucb", "jdp", {"batches": max(1, min(K_, 7))}),
    ):
        f = getattr(c, fn)
        paper = f(kind, eps, delta, H=H_, K=K_, d=3, sampler="float", calibration="paper", **extra)
        tight = f(kind, eps, delta, H=H_, K=K_, d=3, calibration="tight", sampler="float", **extra)
        for k in ("sigma_B", "sigma_g", "sigma_B1", "sigma_B2", "sigma_f", "sigma_Lambda", "sigma_u"):
            if k in paper._names():
                assert 0 < getattr(tight, k) <= getattr(paper, k), (fn, kind, k)


@pytest.mark.parametrize(
    "fn,args",
    [
        ("calibrate_ucrl_vtr", dict(kind="jdp", epsilon=1.0, delta=1e-5, H=H, K=K, d=D, C_w=1.0)),
        ("calibrate_ucrl_vtr", dict(kind="ldp", epsilon=1.0, delta=1e-5, H=H, K=K, d=D, C_w=1.0)),
        ("calibrate_ucrl_vtr", dict(kind="jdp", epsilon=1.0, delta=0.0, H=H, K=K, d=D, C_w=1.0)),
        ("calibrate_ucrl_vtr", dict(kind="none", epsilon=None, delta=None, H=H, K=K, d=D, C_w=1.0)),
        ("calibrate_ucrl_vtr_plus", dict(kind="jdp", epsilon=1.0, delta=1e-5, H=H, K=K, d=D, C_w=1.0)),
        ("calibrate_ucrl_vtr_plus", dict(kind="ldp", epsilon=1.0, delta=0.0, H=H, K=K, d=D, C_w=1.0)),
        ("calibrate_lsvi_ucb", dict(kind="jdp", epsilon=1.0, delta=1e-5, H=H, K=K, d=D)),
        ("calibrate_lsvi_ucb", dict(kind="jdp", epsilon=1.0, delta=0.0, H=H, K=K, d=D)),
    ],
)
def test_tight_dict_same_keys_smaller_noise(fn, args):
    f = getattr(c, fn)
    args = {**args, "sampler": "float"}  # the calibrations' former default
    paper, tight = f(**args, calibration="paper"), f(**args, calibration="tight")
    assert set(paper.to_dict()) == set(tight.to_dict())
    assert paper.calibration == "paper" and tight.calibration == "tight"
    # the default is the privacy models' and the agents' (issue 20: one default everywhere)
    assert f(**args) == f(**args, calibration="adaptive")
    for k in (
        "sigma_B",
        "sigma_g",
        "sigma_B1",
        "sigma_B2",
        "sigma_f",
        "sigma_Lambda",
        "sigma_u",
        "Upsilon",
        "Upsilon1",
        "Upsilon2",
        "C",
        "shift",
        "beta",
        "beta_hat",
        "c_K",
    ):
        if k in paper._names() and getattr(paper, k) is not None:
            assert getattr(tight, k) <= getattr(paper, k) * (1 + 1e-12), k
    # everything that does not depend on the noise is unchanged
    for k in ("lam", "K0", "B", "B0", "alpha", "width", "noise", "sym_divisor", "kind", "pure"):
        if k in paper._names():
            assert getattr(tight, k) == getattr(paper, k), k


def test_tight_calibration_feeds_the_same_formulas():
    t = c.calibrate_ucrl_vtr("jdp", 1.0, 1e-5, H, K, D, 1.0, calibration="tight", sampler="float")
    s = t.sigma_B
    assert t.Upsilon == c.ucrl_vtr_upsilon_jdp(s, D, K, H, 0.05)
    assert c.ucrl_vtr_C_jdp(s, D, K, H, 0.05) == t.C
    assert t.shift == 2 * t.Upsilon
    assert t.beta == c.ucrl_vtr_beta(t.lam, t.Upsilon, 1.0, H, K, D, 0.05)
    # node budget: one node (the joint matrix-vector worst case, 2 H^2) under the analytic Gaussian
    assert t.node_budget[0] == pytest.approx(a.analytic_gaussian_epsilon(s, 200.0, 1e-5), rel=1e-9)
    lt = c.calibrate_lsvi_ucb("jdp", 1.0, 1e-5, H, K, D, calibration="tight", sampler="float")
    assert lt.Upsilon == c.lsvi_ucb_upsilon(lt.sigma_Lambda, lt.B0, D, K, H, 0.05)
    assert c.lsvi_ucb_C(lt.sigma_u, D, K, H, 0.05) == lt.C


def test_tight_pure_counts_nodes_exactly():
    # Laplace: simple composition, eps / (2 H n) per node with n = 14 instead of K0 = 15
    p = c.calibrate_ucrl_vtr("jdp", 1.0, 0.0, H, K, D, 1.0, sampler="float", calibration="paper")
    t = c.calibrate_ucrl_vtr("jdp", 1.0, 0.0, H, K, D, 1.0, calibration="tight", sampler="float")
    assert p.laplace_b / t.laplace_b == pytest.approx(15 / 14, rel=1e-14)
    assert t.node_budget == (1.0 / (2 * H * 14), 0.0)
    # powers of two: identical
    assert (
        c.calibrate_ucrl_vtr("jdp", 1.0, 0.0, H, 1024, D, 1.0, calibration="tight", sampler="float").laplace_b
        == c.calibrate_ucrl_vtr(
            "jdp", 1.0, 0.0, H, 1024, D, 1.0, sampler="float", calibration="paper"
        ).laplace_b
    )
    # LDP: nothing to count, identical
    assert (
        c.calibrate_ucrl_vtr("ldp", 1.0, 0.0, H, K, D, 1.0, calibration="tight", sampler="float").laplace_b
        == c.calibrate_ucrl_vtr("ldp", 1.0, 0.0, H, K, D, 1.0, sampler="float", calibration="paper").laplace_b
    )


@pytest.mark.parametrize("bad", ["Paper", "exact", None, 1, ""])
def test_bad_calibration(bad):
    with pytest.raises(PrivacyParameterError, match="calibration"):
        c.calibrate_ucrl_vtr("jdp", 1.0, 1e-5, H, K, D, 1.0, calibration=bad, sampler="float")
    with pytest.raises(PrivacyParameterError, match="calibration"):
        c.calibrate_lsvi_ucb("jdp", 1.0, 1e-5, H, K, D, calibration=bad, sampler="float")
    with pytest.raises(PrivacyParameterError, match="calibration"):
        c.calibrate_ucrl_vtr_plus("jdp", 1.0, 1e-5, H, K, D, 1.0, calibration=bad, sampler="float")
    with pytest.raises(PrivacyParameterError, match="calibration"):
        JointDP(1.0, 1e-5, calibration=bad)
    with pytest.raises(PrivacyParameterError, match="calibration"):
        LocalDP(1.0, 1e-5, calibration=bad)


def test_models_carry_the_calibration():
    j = JointDP(1.0, 1e-5, calibration="tight")
    assert j.calibration == "tight" and j.as_kwargs()["calibration"] == "tight"
    assert j.label == "JDP(eps=1, delta=1e-05, tight)"
    # the default is the adaptive calibration (BLT, the tight noise); the label names the rest
    default = JointDP(1.0, 1e-5)
    assert default.calibration == "adaptive" and default.label == "JDP(eps=1, delta=1e-05, blt)"
    assert JointDP(1.0, 1e-5, calibration="paper").label == "JDP(eps=1, delta=1e-05, paper)"
    assert LocalDP(2.0, 1e-3, calibration="tight").as_kwargs()["calibration"] == "tight"
    assert NonPrivate().as_kwargs()["calibration"] == "adaptive"
    assert j != JointDP(1.0, 1e-5)
    out = c.calibrate_ucrl_vtr(H=3, K=50, d=2, C_w=1.0, **j.as_kwargs())
    assert out.calibration == "tight" and out.sampler == "discrete" and out.grid_bits == 24
    # the discrete Gaussian (the default): the continuous curve through domination
    # (a.discrete_gaussian_mu: the replaced draws have sum 1/s^2 = rounding^2, at most
    # rounding^2 4^25 of them, s^2 >= 4^24 / 32), and the lattice rounding of a user's leaf in its
    # 6 nodes of each of the 2H trees: whitened 2^-24 (sqrt(2)/2) d per matrix, 2^-24 sqrt(d) per vector
    rounding = math.sqrt(3 * 6 * ((2.0**-24 * math.sqrt(2) / 2 * 2) ** 2 + (2.0**-24 * math.sqrt(2)) ** 2))
    direct = a.discrete_gaussian_mu(1.0, 1e-5, rounding**2, rounding**2 * 4.0**25, 4.0**24 / 32)
    assert a.zcdp_mu(1.0, 1e-5) < direct < a.gaussian_mu(1.0, 1e-5)
    want = 2 * 9 * math.sqrt(3 * 6) / (direct - rounding)
    assert out.sigma_B == pytest.approx(want, rel=1e-9)
    jf = JointDP(1.0, 1e-5, calibration="tight", sampler="float")
    assert jf.label == "JDP(eps=1, delta=1e-05, tight, float)"
    out = c.calibrate_ucrl_vtr(H=3, K=50, d=2, C_w=1.0, **jf.as_kwargs())
    assert out.sigma_B == pytest.approx(2 * 9 * math.sqrt(3 * 6) / a.gaussian_mu(1.0, 1e-5), rel=1e-9)


# ============================================================================================
# Discrete Gaussian releases: the continuous curve through domination (issue 23, item 2)
# ============================================================================================
def test_discrete_gaussian_mu_by_hand():
    # no replaced draws: exactly the continuous Gaussian's curve
    assert a.discrete_gaussian_mu(1.0, 1e-5, 0.0, 0.0, 1.0) == a.gaussian_mu(1.0, 1e-5)
    # sum 1/s^2 = 8e-6 over 10 draws with s^2 >= 1e6: eta_1 = 8e-6 / 8 = 1e-6, eta_2 = 20^2 8e-6 / 8
    # = 4e-4 (the Poisson term exp(-2 pi^2 1e6) vanishes), beta = 10 erfc((20 - 0.0005) / sqrt 2)
    # < 1e-86: eps_0 = 1 - 1e-6 - 4e-4 = 0.999599, delta_0 = 1e-5 exp(-1e-6) - e beta
    eps0, delta0 = 0.999599, 1e-5 * math.exp(-1e-6)
    got = a.discrete_gaussian_mu(1.0, 1e-5, 8e-6, 10, 1e6)
    assert got == pytest.approx(a.gaussian_mu(eps0, delta0), rel=1e-12)
    assert got < a.gaussian_mu(1.0, 1e-5) and got > a.zcdp_mu(1.0, 1e-5)
    # corrections beyond the budget: nothing certified
    assert a.discrete_gaussian_mu(1.0, 1e-5, 1.0, 10, 1.0) == 0.0
    # a tiny variance: the Poisson term log(1 + 2 e^-a / (1 - e^-3a)), a = 2 pi^2 s^2, counts
    small = a.discrete_gaussian_mu(1.0, 1e-5, 1e-9, 1, 0.05)
    poisson = math.log1p(2 * math.exp(-2 * math.pi**2 * 0.05) / -math.expm1(-6 * math.pi**2 * 0.05))
    assert small == 0.0 if poisson >= 1.0 else small < a.gaussian_mu(1.0 - poisson, 1e-5)


def test_discrete_gaussian_mu_against_dp_accounting():
    # N_Z(0, 1000^2) with integer sensitivity 300, composed 4 times (whitened mu = 0.6): the epsilon
    # certified here is never below dp-accounting's exact PLD of the discrete law, and within 0.1%
    pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    exact = pld.from_discrete_gaussian_mechanism(1000.0, sensitivity=300).self_compose(4)
    eps_exact = exact.get_epsilon_for_delta(1e-5)
    lo, hi = 0.0, 10.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if a.discrete_gaussian_mu(mid, 1e-5, 4 / 1000.0**2, 4, 1000.0**2) >= 0.6:
            hi = mid
        else:
            lo = mid
    assert eps_exact <= hi <= eps_exact * 1.001
    # zCDP (the previous accounting) is 8% looser here
    assert a.zcdp_epsilon(0.5 * 0.6**2, 1e-5) > 1.08 * hi


def test_discrete_tight_sigma_matches_the_float_one():
    # JDP UCRL-VTR, H = 10, K = 10^4, d = 5, delta = 1e-5: the discrete sampler's tight noise is
    # within 2% of the float sampler's at eps = 1 (zCDP: +8.4%) and at eps = 10 (zCDP: +5.9%)
    for eps in (1.0, 10.0):
        args = dict(kind="jdp", epsilon=eps, delta=1e-5, H=10, K=10_000, d=5, C_w=1.0, calibration="tight")
        f = c.calibrate_ucrl_vtr(**args, sampler="float")
        d = c.calibrate_ucrl_vtr(**args, sampler="discrete")
        assert f.sigma_B <= d.sigma_B <= 1.0001 * f.sigma_B


def test_edge_inputs_of_the_public_tools_are_refused_or_exact():
    """Audit 4: zcdp_rho_gaussian(1, 1e-300) divided by an underflowed zero; discrete_gaussian_draws
    took a negative or NaN rounding term and any grid; a count of 2^64 reached Rust as an
    OverflowError; a string array reached numpy; squared sensitivities of 1e300 overflowed to inf."""
    import numpy as np

    from privrl.privacy import accounting as acc
    from privrl.privacy import bounds
    from privrl.privacy import mechanisms as mech

    assert acc.zcdp_rho_gaussian(1.0, 1e-300) == math.inf  # Delta / sigma overflows: no privacy
    assert acc.zcdp_rho_gaussian(3.0, 2.0) == 9.0 / 8.0
    bad = [
        lambda: acc.zcdp_rho_gaussian(1.0, 0.0),
        lambda: acc.discrete_gaussian_draws(-1.0, 24),
        lambda: acc.discrete_gaussian_draws(math.nan, 24),
        lambda: acc.discrete_gaussian_draws(1e-6, -5),
        lambda: acc.discrete_gaussian_draws(1e-6, 1e300),
        lambda: bounds.laplace_matrix_sum_bound(1.0, 2**64, 4, 0.05),
        lambda: bounds.laplace_vector_sum_bound(1.0, 2**63, 4, 0.05),
    ]
    for call in bad:
        with pytest.raises(PrivacyParameterError):
            call()
    with pytest.raises(TypeError, match="real numeric array"):
        mech.gaussian_mechanism(["a"], 1.0, 1.0, 1e-5, np.random.default_rng(0))
    # the sum of 4^k-scaled draws: s = mu^2, draws s 4^(k+1), min variance 4^k / 32 (by hand at k = 3)
    assert acc.discrete_gaussian_draws(0.5, 3) == (0.25, 0.25 * 4 * 64, 64 / 32)
    assert acc.composed_l2_sensitivity([3.0, 4.0]) == 5.0
    assert acc.composed_l2_sensitivity([3e300, 4e300]) == pytest.approx(5e300, rel=1e-15)


def test_public_entries_default_to_the_agents_calibration_and_mechanism():
    """Issue 20: every public calibration / plan entry, called with no calibration, mechanism or
    sampler, gives the agent's sigma and plan (calibrate_* defaulted to "paper" and release_plan to
    the tree: 122,158 against the agent's 177.9)."""
    import numpy as np

    from privrl.agents import LSVIUCB, UCRLVTR, LinUCB, UCRLVTRPlus
    from privrl.agents.linucb import calibration as lin
    from privrl.agents.lsvi_ucb import calibration as lsvi
    from privrl.agents.ucrl_vtr import calibration as vtr
    from privrl.agents.ucrl_vtr_plus import calibration as plus
    from privrl.envs import ContextualBandit, RandomLinearMDP, RiverSwimMixture
    from privrl.privacy import JointDP, LocalDP

    env = RiverSwimMixture(S=4, H=3)
    for model in (JointDP(1.0, 1e-5), LocalDP(1.0, 1e-5), JointDP(1.0, 0.0)):
        kind, pure = ("jdp" if isinstance(model, JointDP) else "ldp"), model.delta == 0.0
        for cls, mod, key in (
            (UCRLVTR, vtr, "calibrate_ucrl_vtr"),
            (UCRLVTRPlus, plus, "calibrate_ucrl_vtr_plus"),
        ):
            agent = cls(env, model, episodes=200, seed=0)
            cal = getattr(mod, key)(kind, 1.0, model.delta, H=3, K=200, d=agent.d, C_w=float(env.C_w))
            assert _set_at_construction(cal) == _set_at_construction(agent.calibration)
            assert mod.release_plan(kind, pure, 3, 200, agent.d) == agent.release_plan()
    lin_env = RandomLinearMDP(S=20, A=3, d=4, H=3, seed=0)
    agent = LSVIUCB(lin_env, JointDP(1.0, 1e-5), episodes=1000, seed=0)
    assert (
        lsvi.calibrate_lsvi_ucb("jdp", 1.0, 1e-5, H=3, K=1000, d=4).sigma_Lambda
        == agent.calibration.sigma_Lambda
    )
    assert lsvi.release_plan("jdp", False, 3, 1000, 4, agent.B) == agent.release_plan()
    bandit = ContextualBandit(np.eye(3)[:2] * 0.5, np.array([[0.1, 0.9], [0.8, 0.2]]))
    agent = LinUCB(bandit, JointDP(1.0, 1e-5), episodes=50, seed=0)
    assert lin.release_plan("jdp", False, 50, 3) == agent.release_plan()


def _set_at_construction(cal):
    """A calibration without what only an agent records (the radii it uses, its centre)."""
    return {
        k: v
        for k, v in cal.to_dict().items()
        if not k.endswith("_used") and k not in ("beta_scale", "centre")
    }


def test_accountant_refuses_losses_beyond_the_doubles():
    """Fuzzing: add_gaussian(1.0, 1e-300) and add_gaussian(1e308, 1.0) then epsilon() raised
    OverflowError ((Delta / sigma) ** 2); a Laplace entry of loss 1e300 next to a Gaussian one
    overflowed rho the same way. A release whose loss is not a double is refused when added; a
    composition that leaves the doubles when converted; a finite pure epsilon is still reported."""
    P = a.PrivacyAccountant
    for sens, sigma in ((1.0, 1e-300), (1e308, 1.0)):
        with pytest.raises(PrivacyParameterError, match="overflows a double"):
            P().add_gaussian(sens, sigma)
    with pytest.raises(PrivacyParameterError, match="overflows a double"):
        P().add_laplace(1e308, 1e-10)
    two = P().add_gaussian(1e154, 1.0).add_gaussian(1e154, 1.0)
    for convert in (lambda: two.epsilon(1e-5), lambda: two.delta(1.0)):
        with pytest.raises(PrivacyParameterError, match="composition's mu overflows"):
            convert()
    assert P().add_laplace(1.0, 1e-300).epsilon(1e-5) == pytest.approx(1e300)
    mixed = P().add_laplace(1.0, 1e-300).add_gaussian(1.0, 1.0)
    assert mixed.epsilon(1e-5) == pytest.approx(1e300) and mixed.delta(1.0) == 1.0


def test_analytic_gaussian_sigma_refuses_an_overflowing_scale():
    """analytic_gaussian_sigma(1e308, 1, 1e-5) returned sigma = inf (gaussian_mu(1, 1e-5) = 0.268 < 1,
    so Delta / mu = 3.7e308 passes the doubles) where the appendix's gaussian_sigma refuses the same
    overflow: a mechanism built on it releases inf or NaN."""
    mu = a.gaussian_mu(1.0, 1e-5)
    assert mu < 1.0 and math.isinf(1e308 / mu)
    for call in (
        lambda: a.analytic_gaussian_sigma(1e308, 1.0, 1e-5),
        lambda: m.gaussian_sigma(1e308, 1.0, 1e-5),
    ):
        with pytest.raises(PrivacyParameterError, match="overflows"):
            call()
    # the largest finite one is returned as before: Delta / mu, at most raised by a few ulps
    s = a.analytic_gaussian_sigma(1e307, 1.0, 1e-5)
    assert math.isfinite(s) and s == pytest.approx(1e307 / mu, rel=1e-12)


def test_accountant_epsilon_refuses_a_bool_delta():
    """PrivacyAccountant.epsilon(False) of a Laplace ledger returned the pure-DP epsilon (False == 0.0)
    while epsilon(True) was refused as 'delta must be a real number': a bool is no delta either way."""
    acc = a.PrivacyAccountant().add_laplace(1.0, 2.0, count=3)  # pure: 3 * 1 / 2 = 1.5
    assert acc.epsilon(0.0) == 1.5 and acc.epsilon(np.float64(0.0)) == 1.5
    for bad in (False, True, np.bool_(False)):
        with pytest.raises(PrivacyParameterError, match="delta must be a real number"):
            acc.epsilon(bad)
    with pytest.raises(PrivacyParameterError, match="delta must be a real number"):
        a.PrivacyAccountant().add_gaussian(1.0, 1.0).epsilon(False)


def test_empty_compositions_return_the_float_zero():
    """The documented return type is float: an empty accountant's epsilon / pure_epsilon and
    zcdp_compose([]) returned the int 0 (sum() of nothing), as did the plan sums of a plan with no
    released family (a non-private plan)."""
    from privrl.privacy import plans

    acc = a.PrivacyAccountant()
    got = {
        "epsilon(1e-5)": acc.epsilon(1e-5),
        "epsilon(0)": acc.epsilon(0.0),
        "delta(1)": acc.delta(1.0),
        "pure_epsilon": acc.pure_epsilon,
        "mu": acc.mu,
        "rho": acc.rho,
        "zcdp_compose": a.zcdp_compose([]),
        "composed_l2_sensitivity": a.composed_l2_sensitivity([]),
        "gaussian_composition_mu": a.gaussian_composition_mu([]),
        "laplace_composition_epsilon": a.laplace_composition_epsilon([]),
    }
    plan = plans.ReleasePlan("psrl", "t", "none", None, 2, 4, "tree", ())
    got["plan_rounded_draws"] = plans.plan_rounded_draws(plan)
    got["plan_rounding_epsilon"] = plans.plan_rounding_epsilon(plan)
    got["plan_pure_epsilon"] = plans.plan_pure_epsilon(plan, {})
    for name, value in got.items():
        assert type(value) is float and value == 0.0, (name, value)

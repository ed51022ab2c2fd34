"""Tests of privrl.privacy.mechanisms: the App. "Differential Privacy Tools" of Luyo et al.

Expected values are computed by hand from the printed formulas (arithmetic in the comments).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from privrl.exceptions import NonFiniteError, PrivacyParameterError, SeedError
from privrl.privacy import mechanisms as m
from privrl.privacy.gdp import gaussian_delta


# --------------------------------------------------------------------------------------------
# Gaussian / Laplace scales
# --------------------------------------------------------------------------------------------
def test_gaussian_sigma_hand_values():
    # Delta=1, eps=1, delta=0.5: sqrt(2 log(2/0.5)) = sqrt(2 * 1.386294) = sqrt(2.772589) = 1.665109
    assert m.gaussian_sigma(1.0, 1.0, 0.5) == pytest.approx(1.665109, rel=1e-6)
    # Delta=2, eps=0.5, delta=1e-5: 2 * sqrt(2 log(2e5)) / 0.5 = 4 * sqrt(2 * 12.206073)
    #   = 4 * sqrt(24.412145) = 4 * 4.940865 = 19.763460
    assert m.gaussian_sigma(2.0, 0.5, 1e-5) == pytest.approx(19.763460, rel=1e-6)
    # zero sensitivity -> no noise
    assert m.gaussian_sigma(0.0, 1.0, 0.1) == 0.0


def test_gaussian_sigma_uses_two_over_delta():
    # the paper's 2/delta, not Dwork-Roth's 1.25/delta
    for delta in (1e-2, 1e-5, 0.3):
        assert m.gaussian_sigma(1.0, 1.0, delta) == pytest.approx(
            math.sqrt(2.0 * math.log(2.0 / delta)), rel=1e-14
        )


def test_gaussian_sigma_monotone():
    # decreasing in epsilon and delta, linear in the sensitivity
    assert m.gaussian_sigma(1, 0.1, 1e-5) > m.gaussian_sigma(1, 0.5, 1e-5) > m.gaussian_sigma(1, 0.9, 1e-5)
    assert m.gaussian_sigma(1, 0.5, 1e-8) > m.gaussian_sigma(1, 0.5, 1e-3)
    assert m.gaussian_sigma(3, 0.5, 1e-5) == pytest.approx(3 * m.gaussian_sigma(1, 0.5, 1e-5), rel=1e-14)


def test_laplace_scale_hand_values():
    # b = Delta_1 / eps: 3 / 0.5 = 6, 2 / 4 = 0.5
    assert m.laplace_scale(3.0, 0.5) == 6.0
    assert m.laplace_scale(2, 4) == 0.5
    assert m.laplace_scale(0.0, 1.0) == 0.0


# --------------------------------------------------------------------------------------------
# Mechanisms
# --------------------------------------------------------------------------------------------
def test_gaussian_mechanism_is_value_plus_exact_noise():
    # sampler="float": numpy's own normal draws (the default, "discrete", is tested below)
    value = np.arange(12.0).reshape(3, 4)
    out = m.gaussian_mechanism(value, 1.0, 1.0, 0.5, np.random.default_rng(7), sampler="float")
    sigma = math.sqrt(2.0 * math.log(4.0))  # 1.665109, see test above
    expected = value + np.random.default_rng(7).normal(0.0, sigma, size=(3, 4))
    assert out.shape == (3, 4)
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-12)


def test_laplace_mechanism_is_value_plus_exact_noise():
    value = np.linspace(-1.0, 1.0, 5)
    out = m.laplace_mechanism(value, 3.0, 0.5, np.random.default_rng(3), sampler="float")
    expected = value + np.random.default_rng(3).laplace(0.0, 6.0, size=5)  # b = 3/0.5 = 6
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("sampler", [None, "discrete", "float"])
def test_mechanisms_scalar_in_scalar_out(sampler):
    g = m.gaussian_mechanism(1.5, 1.0, 1.0, 0.5, np.random.default_rng(0), sampler=sampler)
    lap = m.laplace_mechanism(1.5, 1.0, 1.0, np.random.default_rng(0), sampler=sampler)
    assert isinstance(g, float) and isinstance(lap, float)


@pytest.mark.parametrize("sampler", [None, "float"])
def test_mechanism_noise_statistics(sampler):
    rng = np.random.default_rng(12345)
    n = 200_000
    g = m.gaussian_mechanism(np.zeros(n), 1.0, 1.0, 0.5, rng, sampler=sampler)
    # std must be sigma = 1.665109 (standard error of the sample std ~ sigma / sqrt(2n) ~ 0.3%)
    assert np.std(g) == pytest.approx(1.665109, rel=0.01)
    assert abs(np.mean(g)) < 0.02
    lap = m.laplace_mechanism(np.zeros(n), 3.0, 0.5, rng, sampler=sampler)
    # Lap(b): E|x| = b, std = b sqrt 2; b = 3 / 0.5 = 6 (float), and with the rounding of the
    # n = 200,000 entries b = 3 / (0.5 - n 2^-24) = 6.1465 (discrete)
    b = 6.0 if sampler == "float" else 3.0 / (0.5 - n * 2.0**-24)
    assert np.mean(np.abs(lap)) == pytest.approx(b, rel=0.01)
    assert np.std(lap) == pytest.approx(b * math.sqrt(2.0), rel=0.01)


@pytest.mark.parametrize("sampler", [None, "float"])
def test_zero_sensitivity_adds_no_noise(sampler):
    v, rng = np.array([1.0, 2.0]), np.random.default_rng(0)
    np.testing.assert_array_equal(m.laplace_mechanism(v, 0.0, 1.0, rng, sampler=sampler), v)
    np.testing.assert_array_equal(m.gaussian_mechanism(v, 0.0, 1.0, 0.1, rng, sampler=sampler), v)


def test_mechanisms_reject_bad_rng_and_nonfinite_values():
    # a bad rng is SeedError (it was PrivacyParameterError, a class for the privacy parameters)
    with pytest.raises(SeedError, match="rng"):
        m.gaussian_mechanism(1.0, 1.0, 1.0, 0.5, rng=np.random.RandomState(0))
    with pytest.raises(SeedError, match="rng"):
        m.laplace_mechanism(1.0, 1.0, 1.0, rng=0)
    with pytest.raises(NonFiniteError):
        m.laplace_mechanism(np.array([1.0, np.nan]), 1.0, 1.0, np.random.default_rng(0))
    with pytest.raises(NonFiniteError):
        m.gaussian_mechanism(np.inf, 1.0, 1.0, 0.5, np.random.default_rng(0))


# --------------------------------------------------------------------------------------------
# Composition
# --------------------------------------------------------------------------------------------
def test_simple_composition_sums():
    # (0.1 + 0.2 + 0.3, 1e-6 + 0 + 2e-6) = (0.6, 3e-6)
    eps, delta = m.simple_composition([(0.1, 1e-6), (0.2, 0.0), (0.3, 2e-6)])
    assert eps == pytest.approx(0.6, rel=1e-14)
    assert delta == pytest.approx(3e-6, rel=1e-14)
    assert m.simple_composition([]) == (0.0, 0.0)
    # generators are accepted; (0, 0)-DP mechanisms are allowed
    assert m.simple_composition((0.25, 0.0) for _ in range(4)) == (1.0, 0.0)


def test_simple_composition_budget_inverts_simple_composition():
    # (1, 1e-5) split over 20 mechanisms: (0.05, 5e-7)
    e, d = m.simple_composition_budget(1.0, 1e-5, 20)
    assert (e, d) == (pytest.approx(0.05), pytest.approx(5e-7))
    total = m.simple_composition([(e, d)] * 20)
    assert total[0] == pytest.approx(1.0, rel=1e-12) and total[1] == pytest.approx(1e-5, rel=1e-12)
    assert m.simple_composition_budget(0.6, 0.0, 3) == (pytest.approx(0.2), 0.0)


def test_advanced_composition_hand_value():
    # eps0 = 0.1, delta0 = 1e-6, k = 10, delta' = 1e-5:
    #   sqrt(2 * 10 * log(1e5)) * 0.1 = sqrt(20 * 11.512925) * 0.1 = sqrt(230.258509) * 0.1
    #                                  = 15.174271 * 0.1 = 1.517427
    #   k eps0 (e^eps0 - 1) = 10 * 0.1 * 0.105171 = 0.105171          -> eps' = 1.622598
    #   delta = 10 * 1e-6 + 1e-5 = 2e-5
    eps, delta = m.advanced_composition(0.1, 1e-6, 10, 1e-5)
    assert eps == pytest.approx(1.622598, rel=1e-6)
    assert delta == pytest.approx(2e-5, rel=1e-12)


def test_advanced_composition_budget_hand_value():
    # eps = 1, delta = 1e-5, k = 15: 1 / sqrt(8 * 15 * log(2e5)) = 1 / sqrt(120 * 12.206073)
    #   = 1 / sqrt(1464.7287) = 1 / 38.271775 = 0.0261288 ; delta / 2k = 1e-5 / 30 = 3.333333e-7
    e0, d0 = m.advanced_composition_budget(1.0, 1e-5, 15)
    assert e0 == pytest.approx(0.0261288, rel=1e-5)
    assert d0 == pytest.approx(3.333333e-7, rel=1e-6)


@pytest.mark.parametrize("eps", [0.05, 0.3, 0.7, 0.99])
@pytest.mark.parametrize("delta", [1e-8, 1e-5, 0.01])
@pytest.mark.parametrize("k", [1, 2, 7, 15, 100, 10_000])
def test_advanced_budget_composes_back_within_target(eps, delta, k):
    # second form -> first form with delta' = delta/2 must give at most (eps, delta)
    e0, d0 = m.advanced_composition_budget(eps, delta, k)
    e_tot, d_tot = m.advanced_composition(e0, d0, k, delta / 2.0)
    assert e_tot <= eps * (1 + 1e-12)
    assert d_tot == pytest.approx(delta, rel=1e-12)


def test_advanced_composition_budget_monotone():
    # per-mechanism budget shrinks with k and grows with the target epsilon
    assert m.advanced_composition_budget(1, 1e-5, 10)[0] > m.advanced_composition_budget(1, 1e-5, 100)[0]
    assert m.advanced_composition_budget(0.5, 1e-5, 10)[0] < m.advanced_composition_budget(0.9, 1e-5, 10)[0]


# --------------------------------------------------------------------------------------------
# Tree method
# --------------------------------------------------------------------------------------------
def test_tree_depth_hand_values():
    # ceil(log2 n + 1): n=1 -> ceil(0+1)=1; n=2 -> 2; n=3 -> ceil(2.585)=3; n=4 -> 3; n=5 -> ceil(3.32)=4
    # n=8 -> 4; n=7 -> ceil(3.807)=4; n=1e4 -> ceil(13.2877+1)=15; n=2^20 -> 21; n=2^20+1 -> 22
    expected = {1: 1, 2: 2, 3: 3, 4: 3, 5: 4, 7: 4, 8: 4, 10_000: 15, 2**20: 21, 2**20 + 1: 22}
    for n, depth in expected.items():
        assert m.tree_depth(n) == depth, n


def test_tree_depth_matches_float_formula():
    for n in range(1, 5000):
        assert m.tree_depth(n) == math.ceil(math.log2(n) + 1)
    assert m.tree_depth(np.int64(10_000)) == 15


def test_tree_node_budget_is_advanced_budget_over_depth():
    # K = 1e4 leaves -> m = 15, per node (1/sqrt(8*15*log(2e5)), 1e-5/30) as computed above
    assert m.tree_node_budget(1.0, 1e-5, 10_000) == m.advanced_composition_budget(1.0, 1e-5, 15)
    e0, d0 = m.tree_node_budget(1.0, 1e-5, 10_000)
    assert e0 == pytest.approx(0.0261288, rel=1e-5) and d0 == pytest.approx(1e-5 / 30)


# --------------------------------------------------------------------------------------------
# Bad inputs
# --------------------------------------------------------------------------------------------
BAD_EPS = [0, -1.0, math.nan, math.inf, "1", None, True, 1j]


@pytest.mark.parametrize("eps", BAD_EPS)
def test_bad_epsilon(eps):
    with pytest.raises(PrivacyParameterError, match="epsilon"):
        m.gaussian_sigma(1.0, eps, 1e-5)
    with pytest.raises(PrivacyParameterError, match="epsilon"):
        m.laplace_scale(1.0, eps)
    with pytest.raises(PrivacyParameterError, match="epsilon"):
        m.advanced_composition_budget(eps, 1e-5, 3)


@pytest.mark.parametrize("delta", [0, 0.0, 1, 1.5, -1e-9, math.nan, None, "x"])
def test_bad_delta(delta):
    with pytest.raises(PrivacyParameterError, match="delta"):
        m.gaussian_sigma(1.0, 1.0, delta)
    with pytest.raises(PrivacyParameterError, match="delta"):
        m.advanced_composition_budget(1.0, delta, 3)
    with pytest.raises(PrivacyParameterError, match="delta_prime"):
        m.advanced_composition(0.1, 0.0, 3, delta)


@pytest.mark.parametrize("s", [-1.0, math.inf, math.nan, "2"])
def test_bad_sensitivity(s):
    with pytest.raises(PrivacyParameterError, match="l2_sensitivity"):
        m.gaussian_sigma(s, 1.0, 0.1)
    with pytest.raises(PrivacyParameterError, match="l1_sensitivity"):
        m.laplace_scale(s, 1.0)


@pytest.mark.parametrize("k", [0, -3, 1.5, 2.0, True, "3", None])
def test_bad_counts(k):
    with pytest.raises(PrivacyParameterError, match="k"):
        m.advanced_composition_budget(1.0, 1e-5, k)
    with pytest.raises(PrivacyParameterError, match="k"):
        m.advanced_composition(0.1, 1e-6, k, 1e-5)
    with pytest.raises(PrivacyParameterError, match=r"\bn\b"):
        m.tree_depth(k)
    with pytest.raises(PrivacyParameterError, match="n_leaves"):
        m.tree_node_budget(1.0, 1e-5, k)


def test_error_message_names_argument_and_value():
    with pytest.raises(PrivacyParameterError) as info:
        m.gaussian_sigma(1.0, -0.5, 1e-5)
    assert "epsilon" in str(info.value) and "-0.5" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_bad_composition_budgets():
    with pytest.raises(PrivacyParameterError, match=r"budgets\[1\]"):
        m.simple_composition([(0.1, 0.0), (-0.1, 0.0)])
    with pytest.raises(PrivacyParameterError, match=r"budgets\[0\]"):
        m.simple_composition([(0.1, 1.5)])
    with pytest.raises(PrivacyParameterError, match=r"budgets\[0\]"):
        m.simple_composition([0.1])
    with pytest.raises(PrivacyParameterError, match="budgets"):
        m.simple_composition("ab")
    with pytest.raises(PrivacyParameterError, match="delta0"):
        m.advanced_composition(0.1, 1.0, 3, 1e-5)
    with pytest.raises(PrivacyParameterError, match="delta"):
        m.simple_composition_budget(1.0, 1.0, 3)
    for not_iterable in (5, None, 0.5):
        with pytest.raises(PrivacyParameterError, match=r"budgets must be an iterable of \(epsilon, delta\)"):
            m.simple_composition(not_iterable)


def test_composition_delta_is_capped_at_one():
    # delta bounds a probability: a sum above 1 is the (equivalent, tighter) delta = 1
    eps, delta = m.simple_composition([(0.1, 0.6)] * 3)
    assert eps == pytest.approx(0.3) and delta == 1.0
    eps, delta = m.advanced_composition(0.1, 0.6, 10, 1e-5)
    assert eps == pytest.approx(1.622598, rel=1e-6) and delta == 1.0  # the epsilon formula unchanged
    assert m.tree_composition(0.1, 0.6, 8, 1e-5)[1] == 1.0
    # below 1 the sums are exact, as before
    assert m.simple_composition([(0.1, 0.25)] * 4) == (pytest.approx(0.4), 1.0)
    assert m.advanced_composition(0.1, 0.05, 10, 1e-5)[1] == pytest.approx(0.50001, rel=1e-12)


def test_advanced_composition_vacuous_for_huge_eps0_instead_of_overflow():
    # e^{800} overflows a float: the composed epsilon is +inf, not an OverflowError
    eps, dlt = m.advanced_composition(800.0, 0.0, 3, 1e-5)
    assert eps == float("inf") and dlt == pytest.approx(1e-5)


def test_post_processing_keeps_a_vacuous_infinite_epsilon():
    assert m.post_processing((float("inf"), 1e-5)) == (float("inf"), 1e-5)
    assert m.billboard_jdp((float("inf"), 0.0))[0] == float("inf")
    with pytest.raises(PrivacyParameterError):
        m.post_processing((float("nan"), 1e-5))
    with pytest.raises(PrivacyParameterError):
        m.post_processing((-1.0, 1e-5))


def test_dp_tool_edges_audit_9():
    """A scale that overflows was returned as inf (a release of inf); a subnormal delta gave an
    error about an epsilon nobody passed; the kernels' unknown names raised a bare ValueError."""
    import math

    from privrl import kernels as kn
    from privrl.exceptions import PrivacyParameterError, PrivrlError
    from privrl.privacy import accounting, mechanisms

    rng = np.random.default_rng(0)
    for call in (
        lambda: mechanisms.gaussian_sigma(1.0, 1e-320, 1e-5),
        lambda: mechanisms.gaussian_mechanism(1.0, 1.0, 1e-320, 1e-5, rng),
        lambda: mechanisms.laplace_mechanism(1.0, 1e308, 1e-10, rng),
    ):
        with pytest.raises(PrivacyParameterError, match="overflows"):
            call()
    # log(1 / 5e-324) overflowed; -log(5e-324) = 744.44: the bound and the exact inverse are finite
    # (CKS's conversion, below Bun & Steinke's rho + 2 sqrt(rho log(1 / delta)))
    assert math.isfinite(accounting.zcdp_epsilon(1.0, 5e-324))
    assert accounting.zcdp_epsilon(1.0, 5e-324) <= 1.0 + 2.0 * math.sqrt(-math.log(5e-324))
    eps = accounting.gaussian_epsilon(1.0, 5e-324)
    assert math.isfinite(eps) and accounting.gaussian_delta(eps, 1.0) <= 5e-324
    for bad in (
        lambda: kn.TreeAggregator(2, 10, noise="gauss"),
        lambda: kn.NoiseStream("foo", 1.0, seed=0),
        lambda: kn.make_prefix_mechanism("foo", 2, 10),
        lambda: kn.PrefixMechanism("tree", 2, 10, buffers=3),
    ):
        with pytest.raises(PrivrlError):
            bad()


def test_subnormal_delta_keeps_the_appendix_tools_finite():
    """Below 2 / DBL_MAX ~ 1.1e-308 the quotient 2 / delta overflows: gaussian_sigma refused a
    finite sigma as an overflow, gaussian_mechanism_epsilon returned inf, and the composition
    budgets returned eps0 = 0. log(2 / delta) = log 2 - log delta is finite there."""
    for delta in (1e-309, 5e-324):
        log_two_over = math.log(2.0) - math.log(delta)  # 710.2 at 1e-309, 745.1 at 5e-324
        assert 700.0 < log_two_over < 746.0
        sigma = math.sqrt(2.0 * log_two_over)
        assert m.gaussian_sigma(1.0, 1.0, delta) == pytest.approx(sigma, rel=1e-14)
        assert m.gaussian_mechanism_epsilon(1.0, 3.0, delta) == pytest.approx(sigma / 3.0, rel=1e-14)
        eps0, delta0 = m.advanced_composition_budget(1.0, delta, 10)
        assert eps0 == pytest.approx(1.0 / math.sqrt(80.0 * log_two_over), rel=1e-14) and eps0 > 0.0
        assert delta0 == delta / 20.0
        # tree_depth(10) = 5 nodes: the advanced budget over 5
        assert m.tree_node_budget(1.0, delta, 10)[0] == pytest.approx(
            1.0 / math.sqrt(40.0 * log_two_over), rel=1e-14
        )
    # continuity with the normal range, where the bits are log(2 / delta)'s
    assert m.gaussian_sigma(1.0, 1.0, 1e-300) == math.sqrt(2.0 * math.log(2.0 / 1e-300))


def _numpy_laplace_noise(k: np.ndarray, b: float) -> np.ndarray:
    """numpy's Generator.laplace(0, b) for the uniform U = k 2^-53 it draws (random_laplace in
    numpy's distributions.c: -b log(2 - 2U) at U >= 1/2, b log(2U) below)."""
    u = k * (1.0 / 9007199254740992.0)
    with np.errstate(divide="ignore"):
        return np.where(u >= 0.5, 0.0 - b * np.log(2.0 - u - u), 0.0 + b * np.log(u + u))


def _reachable(out: np.ndarray, x: float, b: float, width: int) -> np.ndarray:
    """Which outputs fl(x + Y) numpy's Laplace sampler can produce from input x (the uniforms k
    near the inverse of out - x)."""
    y = out - x
    with np.errstate(over="ignore"):
        u = np.where(y <= 0, np.exp(np.minimum(y, 0.0) / b) / 2, 1 - np.exp(-np.maximum(y, 0.0) / b) / 2)
    k0 = np.floor(u * 9007199254740992.0)
    ok = np.zeros(out.shape, bool)
    for dk in range(-width, width + 1):
        k = np.clip(k0 + dk, 1.0, 9007199254740991.0)
        ok |= (x + _numpy_laplace_noise(k, b)) == out
    return ok


def test_the_float_mechanisms_warn_of_the_floating_point_side_channel():
    # Mironov (2012) on privrl.privacy.mechanisms.laplace_mechanism itself: most outputs for the
    # input 0 (Delta_1 = 1, eps = 1) cannot come from the neighbour 1 (~81% of 20,000 measured), so a
    # single release tells the two apart (eps = inf for that pair). The docstrings said nothing of it.
    rng = np.random.default_rng(0)
    out = np.array([m.laplace_mechanism(0.0, 1.0, 1.0, rng, sampler="float") for _ in range(2000)])
    b = m.laplace_scale(1.0, 1.0)
    own = _reachable(out, 0.0, b, 3)
    assert own.mean() > 0.98  # the model of numpy's sampler reproduces its own outputs
    assert (own & ~_reachable(out, 1.0, b, 3)).mean() > 0.5
    for f in (m.laplace_mechanism, m.gaussian_mechanism):
        doc = f.__doc__ or ""
        assert "Mironov" in doc and "NoiseStream" in doc and "discrete" in doc, f.__name__


def test_discrete_laplace_scale_spends_exactly_epsilon_with_the_rounding():
    # Delta_1 / b + n 2^-24 = eps, by hand: b = Delta_1 / (eps - n 2^-24)
    assert m.discrete_laplace_scale(1.0, 1.0, 1) == 1.0 / (1.0 - 2.0**-24) == 1.0000000596046483
    b = m.discrete_laplace_scale(3.0, 0.5, 5)
    assert b == 3.0 / (0.5 - 5 * 2.0**-24)
    assert 3.0 / b + 5 * 2.0**-24 == pytest.approx(0.5, rel=1e-15)
    with pytest.raises(PrivacyParameterError, match="rounding"):
        m.discrete_laplace_scale(1.0, 1.0, 2**24)  # the rounding alone would spend eps
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(PrivacyParameterError, match="entries"):
            m.discrete_laplace_scale(1.0, 1.0, bad)
        with pytest.raises(PrivacyParameterError, match="entries"):
            m.discrete_gaussian_mechanism_delta(1.0, 1.0, 1.0, bad)


def test_discrete_gaussian_delta_adds_only_the_rounding():
    sigma = m.gaussian_sigma(1.0, 0.5, 1e-5)
    # no entries, no rounding: the continuous Gaussian's exact delta (Balle & Wang 2018)
    assert m.discrete_gaussian_mechanism_delta(1.0, sigma, 0.5, 0) == gaussian_delta(0.5, 1.0 / sigma)
    d1, d3 = (m.discrete_gaussian_mechanism_delta(1.0, sigma, 0.5, n) for n in (1, 3))
    assert gaussian_delta(0.5, 1.0 / sigma) < d1 < d3 < 1.001 * gaussian_delta(0.5, 1.0 / sigma)


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_the_default_mechanisms_draw_on_the_lattice(noise):
    # sampler=None is "discrete": value rounded to the lattice scale 2^-24, integer noise added, so
    # every output is a lattice point, reachable from any input (the float sampler's sparse,
    # input-dependent set of doubles is what Mironov's attack reads); seeded calls reproduce
    def release(value, rng):
        if noise == "laplace":
            return m.laplace_mechanism(value, 1.0, 1.0, rng)
        return m.gaussian_mechanism(value, 1.0, 0.5, 1e-5, rng)

    scale = m.discrete_laplace_scale(1.0, 1.0, 3) if noise == "laplace" else m.gaussian_sigma(1.0, 0.5, 1e-5)
    unit = scale * 2.0**-24
    for value in (np.zeros(3), np.array([1.0, -0.3, 1e-9])):
        out = release(value, np.random.default_rng(5))
        k = out / unit  # integers up to the rounding of k unit / unit (~1e-9 at k ~ 1e7)
        assert np.abs(k - np.rint(k)).max() < 1e-6 and not np.array_equal(out, value)
        np.testing.assert_array_equal(out, release(value, np.random.default_rng(5)))
        assert not np.array_equal(out, release(value, np.random.default_rng(6)))
    with pytest.raises(PrivacyParameterError, match="sampler"):
        m.laplace_mechanism(0.0, 1.0, 1.0, np.random.default_rng(0), sampler="exact")

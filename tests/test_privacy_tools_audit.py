"""A privacy researcher's checks of the public DP tools (privrl.privacy.accounting / gdp): every
inverse lands on the private side of its own forward curve, and an accountant's two conversions
(epsilon at delta, delta at epsilon) certify the same pairs."""

from __future__ import annotations

import numpy as np
import pytest

from privrl.exceptions import PrivacyParameterError
from privrl.privacy import accounting as a
from privrl.privacy import mechanisms as m


def test_analytic_gaussian_sigma_is_private_by_its_own_delta():
    """analytic_gaussian_sigma returned Delta / mu with mu on the private side, but the quotient
    could round below the threshold: at (eps, delta, Delta) = (0.1196, 1.58e-7, 1.013) its sigma
    certified delta (1 + 1.3e-12), above the target, in ~3% of random triples."""
    rng = np.random.default_rng(0)
    for _ in range(600):
        eps = 10 ** rng.uniform(-4, 3)
        dlt = 10 ** rng.uniform(-30, -0.01)
        sens = 10 ** rng.uniform(-3, 3)
        s = a.analytic_gaussian_sigma(sens, eps, dlt)
        assert a.analytic_gaussian_delta(s, sens, eps) <= dlt
        # and still the threshold: 1e-9 (relative) less noise misses the target
        assert a.analytic_gaussian_delta(s * (1 - 1e-9), sens, eps) > dlt
    assert a.analytic_gaussian_sigma(0.0, 1.0, 1e-5) == 0.0


def _pld():
    return pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")


def test_laplace_accountant_epsilon_and_delta_certify_the_same_pairs():
    """Laplace only: delta(eps) used zCDP below the simple-composition epsilon, epsilon(delta) did
    not, so 4 releases of Delta_1 / b = 0.187 gave delta(0.11) = 0.17 but epsilon(0.17) = 0.75
    (conservative, and inconsistent with the method the class states)."""
    acc = a.PrivacyAccountant().add_laplace(4.357660965193764, 23.258077429066887, 4)
    pure = 4 * 4.357660965193764 / 23.258077429066887
    d = acc.delta(0.10974627565094529)
    assert 0.0 < d < 1.0
    assert acc.epsilon(d) <= 0.10974627565094529 * (1 + 1e-9)
    assert acc.epsilon(0.0) == pytest.approx(pure, rel=1e-15)
    # rho = 4 (Delta_1 / b)^2 / 2; at delta = 1e-5 zCDP is looser than the simple composition
    rho = 2.0 * (4.357660965193764 / 23.258077429066887) ** 2
    assert acc.rho == pytest.approx(rho, rel=1e-14)
    assert acc.epsilon(1e-5) == min(pure, a.zcdp_epsilon(rho, 1e-5)) == pytest.approx(pure, rel=1e-15)
    # a long Laplace composition: zCDP wins, and the exact composition (PLD) confirms the pair
    many = a.PrivacyAccountant().add_laplace(1.0, 50.0, 400)  # simple composition: eps = 8
    e = many.epsilon(1e-5)
    assert e == pytest.approx(a.zcdp_epsilon(400 * 0.02**2 / 2, 1e-5), rel=1e-15) and e < 8.0
    assert many.delta(e) <= 1e-5 * (1 + 1e-9)
    pld = _pld()
    exact = pld.from_laplace_mechanism(50.0, value_discretization_interval=1e-4).self_compose(400)
    assert exact.get_delta_for_epsilon(e) <= 1e-5


def test_accountant_conversions_agree_on_random_ledgers():
    rng = np.random.default_rng(1)
    for _ in range(150):
        acc = a.PrivacyAccountant()
        if rng.uniform() < 0.6:
            acc.add_gaussian(10 ** rng.uniform(-1, 1), 10 ** rng.uniform(-1, 1), int(rng.integers(1, 50)))
        if not acc.entries or rng.uniform() < 0.5:
            acc.add_laplace(10 ** rng.uniform(-1, 1), 10 ** rng.uniform(0, 2), int(rng.integers(1, 30)))
        eps, dlt = 10 ** rng.uniform(-2, 1.5), 10 ** rng.uniform(-12, -1)
        assert acc.delta(acc.epsilon(dlt)) <= dlt * (1 + 1e-9)
        d = acc.delta(eps)
        if 0.0 < d < 0.5:  # near 1, zCDP's delta saturates in floating point
            assert acc.epsilon(d) <= eps * (1 + 1e-9) + 1e-12


def test_gaussian_mechanism_never_releases_below_its_claim():
    """gaussian_mechanism added the appendix's sigma = Delta sqrt(2 log(2/delta)) / eps whatever
    eps: at (10, 1e-5) that is 0.494 Delta, which the exact Gaussian curve (Balle & Wang 2018)
    puts at delta = 1.36e-5 > 1e-5. Where the appendix's sigma is private it is still used; where
    it is not, the release is refused."""
    rng = np.random.default_rng(0)
    for eps in (0.1, 0.9, 1.0, 3.0, 7.0, 8.0, 10.0, 15.0, 50.0):
        for dlt in (1e-1, 1e-3, 1e-5, 1e-12):
            for sens in (0.5, 3.0):
                sigma = m.gaussian_sigma(sens, eps, dlt)
                private = a.analytic_gaussian_delta(sigma, sens, eps) <= dlt
                assert private or eps >= 1.0  # the appendix's regime is always private
                if private:
                    rng1 = np.random.default_rng(1)
                    out = m.gaussian_mechanism(np.zeros(3), sens, eps, dlt, rng1, sampler="float")
                    ref = np.random.default_rng(1).normal(0.0, sigma, 3)
                    np.testing.assert_array_equal(out, ref)
                    # the default (discrete) sampler: the same sigma where the rounding keeps it private
                    if m.discrete_gaussian_mechanism_delta(sens, sigma, eps, 3) <= dlt:
                        m.gaussian_mechanism(np.zeros(3), sens, eps, dlt, np.random.default_rng(1))
                    else:
                        with pytest.raises(PrivacyParameterError, match="lattice rounding"):
                            m.gaussian_mechanism(np.zeros(3), sens, eps, dlt, np.random.default_rng(1))
                else:
                    for sampler in ("float", "discrete"):
                        with pytest.raises(PrivacyParameterError, match="analytic_gaussian_sigma"):
                            m.gaussian_mechanism(np.zeros(3), sens, eps, dlt, rng, sampler=sampler)
    assert a.analytic_gaussian_delta(m.gaussian_sigma(1.0, 10.0, 1e-5), 1.0, 10.0) > 1e-5
    with pytest.raises(PrivacyParameterError):
        m.gaussian_mechanism(1.0, 1.0, 10.0, 1e-5, rng)
    assert m.gaussian_mechanism(1.0, 0.0, 10.0, 1e-5, rng) == 1.0  # no sensitivity, no noise

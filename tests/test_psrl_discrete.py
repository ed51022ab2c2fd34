"""PSRL's default sampler: the exact discrete Gaussian on the lattice sigma 2^-24, one draw of
dimension n = S A S + S A per user, accounted as every agent's (privrl.privacy.common.plan_target)."""

import math

import pytest

from privrl.agents.psrl.calibration import calibrate_psrl, psrl_accountant, release_plan
from privrl.agents.psrl.formulas import psrl_sensitivity
from privrl.audit.report import privacy_report_from_calibration
from privrl.common.errors import PrivacyParameterError
from privrl.privacy.gdp import gaussian_mu
from privrl.privacy.mechanisms import discrete_gaussian_mechanism_delta
from privrl.privacy.plans import plan_rounding_mu


def test_the_default_sampler_is_the_discrete_gaussian():
    assert release_plan("jdp", 20, 20_000, 16, 4, 6).sampler == "discrete"
    assert release_plan("none", 20, 20_000, 16, 4, 6).sampler == "float"
    cal = calibrate_psrl("jdp", 10.0, 1e-5, 16, 4, 20, 20_000)
    assert (cal.sampler, cal.grid_bits, cal.node_noise) == ("discrete", 24, "discrete_gaussian")
    assert calibrate_psrl("none", None, None, 16, 4, 20, 1000).sampler is None


@pytest.mark.parametrize(
    "S, A, root", [(16, 4, math.sqrt(17.0) * 2.0**-21), (64, 4, math.sqrt(65.0) * 2.0**-20)]
)
def test_the_lattice_rounding_of_one_draw(S, A, root):
    """One draw of n = S A S + S A entries, each moved by < one lattice step sigma 2^-24: whitened
    mu_rounding = sqrt(n) 2^-24. By hand: n = 1088 = 64 * 17, sqrt(n) 2^-24 = sqrt(17) 2^-21 =
    1.966e-6; n = 16640 = 256 * 65, sqrt(65) 2^-20 = 7.689e-6."""
    n = S * A * S + S * A
    assert n == {16: 1088, 64: 16640}[S]
    plan = release_plan("jdp", 20, 20_000, S, A, 6)
    assert plan_rounding_mu(plan) == pytest.approx(root, rel=1e-14)


@pytest.mark.parametrize("eps", [10.0, 1.0])
def test_the_discrete_sigma_is_the_float_sigma_plus_the_rounding(eps):
    """sigma_discrete = Delta / (mu_D - r), r = sqrt(17) 2^-21 (S 16, A 4), mu_D the domination
    bound, within 1e-9 of the float curve's gaussian_mu(eps, delta) (its corrections are ~r^2):
    sigma_discrete / sigma_float - 1 = r / mu to first order (9.83e-7 at eps 10, 7.33e-6 at eps 1).
    The formula's delta: discrete_gaussian_mechanism_delta(Delta, sigma, eps, n = 1088) <= 1e-5,
    and 1e-6 less noise misses it."""
    r = math.sqrt(17.0) * 2.0**-21
    disc = calibrate_psrl("jdp", eps, 1e-5, 16, 4, 20, 20_000)
    flt = calibrate_psrl("jdp", eps, 1e-5, 16, 4, 20, 20_000, sampler="float")
    assert disc.sigma / flt.sigma - 1.0 == pytest.approx(r / gaussian_mu(eps, 1e-5), rel=1e-4)
    Delta = psrl_sensitivity(20, 1)
    assert discrete_gaussian_mechanism_delta(Delta, disc.sigma, eps, 1088) <= 1e-5
    assert discrete_gaussian_mechanism_delta(Delta, disc.sigma * (1 - 1e-6), eps, 1088) > 1e-5
    assert discrete_gaussian_mechanism_delta(Delta, flt.sigma, eps, 1088) > 1e-5  # float's sigma falls short


def test_the_discrete_report_and_ledger():
    cal = calibrate_psrl("jdp", 10.0, 1e-5, 16, 4, 20, 20_000)
    rep = privacy_report_from_calibration("psrl", cal)
    assert rep["sampler"]["name"] == "discrete"
    assert rep["tight"]["epsilon_at_target_delta"] <= 10.0 * (1 + 1e-9)
    # the one-mechanism chain is made for the continuous law, as the other agents' chains are
    assert rep["within_target"] == {"paper": False, "tight": True}
    with pytest.raises(PrivacyParameterError, match="continuous Gaussian's ledger"):
        psrl_accountant(cal)

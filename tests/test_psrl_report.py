"""The privacy report of private tabular PSRL (privrl.audit.report, the fifth algorithm): one Gaussian
mechanism per user, its own argument as the report's "paper" part, the posterior's regret side."""

import dataclasses
import math

import pytest

from privrl.agents.psrl.calibration import calibrate_psrl
from privrl.agents.psrl.formulas import psrl_prior, psrl_reward_prior, psrl_sensitivity
from privrl.audit.comparison import calibration_comparison
from privrl.audit.report import (
    ALGORITHMS,
    format_privacy_report,
    plan_of,
    privacy_report_from_calibration,
    summarize_privacy_report,
)
from privrl.privacy.gdp import analytic_gaussian_epsilon


def test_psrl_is_a_reported_algorithm_after_the_four():
    assert ALGORITHMS == ("ucrl_vtr", "ucrl_vtr_plus", "lsvi_ucb", "linucb", "psrl")


@pytest.mark.parametrize("eps, m", [(10.0, 1), (1.0, 2)])
def test_the_report_is_one_gaussian_mechanism_per_user(eps, m):
    """Hand values: Delta = 2 sqrt(m H) (8.944 at m 1, 12.65 at m 2), mu = Delta / sigma, the worst
    pair orthogonal users of norm sqrt(2 m H); the paper part is the one mechanism's analytic
    epsilon, whatever the B - 1 releases."""
    cal = calibrate_psrl("jdp", eps, 1e-5, 16, 4, 20, 20_000, m=m, sampler="float")
    rep = privacy_report_from_calibration("psrl", cal, label="PSRL")
    Delta = psrl_sensitivity(20, m)
    assert Delta == pytest.approx(2.0 * math.sqrt(20.0 * m), rel=1e-15)
    (mech,) = rep["mechanisms"]
    assert (mech["name"], mech["sensitivity"], mech["sigma"], mech["total_draws_per_user"]) == (
        "increment",
        Delta,
        cal.sigma,
        1,
    )
    (stat,) = rep["statistics"]
    assert stat["mu_squared_per_user"] == pytest.approx((Delta / cal.sigma) ** 2, rel=1e-12)
    assert math.hypot(*stat["worst_x"]) == pytest.approx(math.sqrt(40.0 * m), rel=1e-12)
    assert math.hypot(*stat["worst_x_prime"]) == pytest.approx(math.sqrt(40.0 * m), rel=1e-12)
    assert sum(u * v for u, v in zip(stat["worst_x"], stat["worst_x_prime"], strict=True)) == 0.0
    assert rep["tight"]["mu"] == pytest.approx(cal.mu, rel=1e-12)
    assert rep["tight"]["epsilon_at_target_delta"] <= eps * (1 + 1e-9)
    assert rep["paper"]["budget"] == (analytic_gaussian_epsilon(cal.sigma, Delta, 1e-5), 1e-5)
    assert rep["paper"]["in_tool_regime"] and rep["within_target"] == {"paper": True, "tight": True}
    side = rep["regret_side"]
    assert (side["rule"], side["batches"], side["radius"]) == ("posterior sampling", cal.B, None)
    text = format_privacy_report(rep)
    assert "PSRL" in text and "cos(x, x') = 0" in text and "the increment of the user's batch" in text
    assert summarize_privacy_report(rep)["tight"]["mu"] == rep["tight"]["mu"]


def test_too_little_noise_is_reported_over_the_target():
    """sigma 10% below the calibration: mu = Delta / (0.9 sigma) = 2.2227 at eps 10, over the target."""
    cal = calibrate_psrl("jdp", 10.0, 1e-5, 16, 4, 20, 20_000, sampler="float")
    low = dataclasses.replace(cal, sigma=0.9 * cal.sigma)
    rep = privacy_report_from_calibration("psrl", low)
    assert rep["tight"]["mu"] == pytest.approx(psrl_sensitivity(20, 1) / (0.9 * cal.sigma), rel=1e-12)
    assert rep["within_target"] == {"paper": False, "tight": False}
    assert "NOT within the target" in format_privacy_report(rep)


def test_non_private_report_and_the_plan():
    cal = calibrate_psrl("none", None, None, 16, 4, 20, 1000)
    rep = privacy_report_from_calibration("psrl", cal)
    assert rep["mechanisms"] == [] and rep["tight"]["epsilon_at_target_delta"] == math.inf
    jdp = calibrate_psrl("jdp", 10.0, 1e-5, 5, 3, 7, 500, m=2, batches=4, sampler="float")
    plan = plan_of("psrl", jdp)
    assert (plan.H, plan.capacity, plan.statistics[0].dim, plan.statistics[0].nonnegative) == (7, 3, 90, True)


def test_calibration_comparison_refuses_psrl_it_has_no_paper_calibration():
    with pytest.raises(ValueError, match="must be one of"):
        calibration_comparison("psrl", "jdp", 10.0, 1e-5, H=20, K=1000, d=64)


def test_the_regret_side_names_the_priors_the_agent_draws_from():
    """The report's regret side said Dirichlet(1 + N), Beta(1 + R, 1 + n - R) after the agent's
    priors became 1/S per next state (613e793) and Beta(1 + R, n - R) (formulas.psrl_reward_prior)."""
    assert psrl_prior(7) == 1 / 7 and psrl_reward_prior() == (1.0, 0.0)
    cal = calibrate_psrl("jdp", 10.0, 1e-5, 16, 4, 20, 20_000, sampler="float")
    bonus = privacy_report_from_calibration("psrl", cal, label="PSRL")["regret_side"]["bonus"]
    assert "Dirichlet(1/S + N)" in bonus and "Beta(1 + R, n - R)" in bonus, bonus

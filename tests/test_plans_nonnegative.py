"""UserStatistic.nonnegative: the worst pair of a statistic whose entries are >= 0 (plans.py's
statistic_worst_case docstring), checked against hand-derived values."""

import math

import numpy as np
import pytest

from privrl.common.errors import PrivacyParameterError
from privrl.privacy.common import tight_scales
from privrl.privacy.gdp import analytic_gaussian_sigma
from privrl.privacy.plans import ReleasedFamily, ReleasePlan, UserStatistic, plan_mu, statistic_worst_case


def _plan(dim: int, x_bound: float, y_low: float, y_high: float, nonnegative: bool, form: str = "scaled"):
    stat = UserStatistic("s", "x", "y", dim, x_bound, y_low, y_high, "test", nonnegative=nonnegative)
    divisor = 2.0 if form == "outer" else None
    fam = ReleasedFamily(
        "f", "f", "s", form, "release", "sigma", 1.0, 1, 1, 1.0, 1.0, "", 1.0, "", divisor, "m", 1
    )
    return ReleasePlan("t", "t", "jdp", "gaussian", 1, 1, "m", (stat,), (fam,), sampler="float")


def test_the_default_is_the_free_angle():
    stat = UserStatistic("s", "x", "y", 3, 1.0, 0.0, 1.0, "test")
    assert stat.nonnegative is False


@pytest.mark.parametrize("R, s", [(1.0, 1.0), (math.sqrt(40.0), 4.0), (3.0, 0.5)])
def test_a_nonnegative_vector_family_is_worst_at_orthogonal_users(R, s):
    """y = 1, g = (a^2 + b^2 - 2 a b c) R^2 / s^2: c = -1 (free) gives 4 R^2 / s^2; c in [0, 1]
    gives its maximum at c = 0, a = b = 1: 2 R^2 / s^2, mu sqrt(2) smaller."""
    free = statistic_worst_case(_plan(5, R, 1.0, 1.0, False), "s", {"sigma": s})
    nonneg = statistic_worst_case(_plan(5, R, 1.0, 1.0, True), "s", {"sigma": s})
    assert free.value == pytest.approx(4.0 * R * R / (s * s), rel=1e-12)
    assert nonneg.value == pytest.approx(2.0 * R * R / (s * s), rel=1e-12)
    assert (nonneg.x >= 0).all() and (nonneg.x_prime >= 0).all()
    assert float(nonneg.x @ nonneg.x_prime) == pytest.approx(0.0, abs=1e-12)
    assert np.linalg.norm(nonneg.x - nonneg.x_prime) ** 2 / s**2 == pytest.approx(nonneg.value, rel=1e-12)
    mu = plan_mu(_plan(5, R, 1.0, 1.0, True), {"sigma": s})
    assert mu == pytest.approx(math.sqrt(2.0) * R / s, rel=1e-12)


def test_one_nonnegative_dimension_has_only_c_equal_1():
    """dim 1: x, x' in [0, R], |x - x'| <= R (one user at 0), not 2 R."""
    w = statistic_worst_case(_plan(1, 2.0, 1.0, 1.0, True), "s", {"sigma": 1.0})
    assert w.value == pytest.approx(4.0, rel=1e-12)
    assert sorted([float(w.x[0]), float(w.x_prime[0])]) == [0.0, 2.0]
    free = statistic_worst_case(_plan(1, 2.0, 1.0, 1.0, False), "s", {"sigma": 1.0})
    assert free.value == pytest.approx(16.0, rel=1e-12)  # x' = -x


def test_nonnegativity_of_x_does_not_help_when_y_changes_sign():
    """y in [-1, 1]: x y and x' y' with y y' = -1 point apart (c = 1): (a + b)^2 R^2 = 4 R^2, the free
    angle's value."""
    for nonneg in (False, True):
        w = statistic_worst_case(_plan(4, 1.5, -1.0, 1.0, nonneg), "s", {"sigma": 1.0})
        assert w.value == pytest.approx(4.0 * 1.5**2, rel=1e-12)


def test_an_outer_family_is_worst_at_c_0_either_way():
    """x x^T with the law (Z' + Z'^T)/2 (factor 1): a^4 + b^4 - 2 a^2 b^2 c^2 is worst at c = 0, a = b
    = 1: 2 R^4 / s^2, with or without the sign constraint."""
    for nonneg in (False, True):
        w = statistic_worst_case(_plan(3, 2.0, 1.0, 1.0, nonneg, "outer"), "s", {"sigma": 1.0})
        assert w.value == pytest.approx(2.0 * 2.0**4, rel=1e-12)


def test_tight_scales_of_a_nonnegative_vector_plan_is_the_analytic_gaussian():
    """One vector family, one draw: the release is one Gaussian mechanism of L2 sensitivity sqrt(2) R
    (orthogonal users), so tight_scales gives analytic_gaussian_sigma(sqrt(2) R, eps, delta)."""
    R = math.sqrt(40.0)  # PSRL's x_bound at m = 1, H = 20: Delta = sqrt(80) = 2 sqrt(m H)
    got = tight_scales(_plan(5, R, 1.0, 1.0, True), 10.0, 1e-5)["sigma"]
    assert got == pytest.approx(analytic_gaussian_sigma(math.sqrt(80.0), 10.0, 1e-5), rel=1e-12)
    free = tight_scales(_plan(5, R, 1.0, 1.0, False), 10.0, 1e-5)["sigma"]
    assert free == pytest.approx(analytic_gaussian_sigma(2.0 * R, 10.0, 1e-5), rel=1e-12)


def test_with_statistic_takes_the_flag_as_a_bool_only():
    """A truthy non-bool (the string "no") turned the sign constraint on: sqrt(2) less noise."""
    plan = _plan(5, 1.0, 1.0, 1.0, False)
    for bad in ("no", 1, None):
        with pytest.raises(PrivacyParameterError, match="nonnegative must be True or False"):
            plan.with_statistic("s", nonnegative=bad)
    assert plan.with_statistic("s", nonnegative=np.bool_(True)).statistic("s").nonnegative is True

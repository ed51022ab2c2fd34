"""A privacy researcher's checks of the public DP tools (privrl.privacy.accounting / gdp): every
inverse lands on the private side of its own forward curve, and an accountant's two conversions
(epsilon at delta, delta at epsilon) certify the same pairs."""

from __future__ import annotations

import numpy as np

from privrl.privacy import accounting as a


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

"""The shipped UCRL-VTR audits test ``delta == 0.0`` to pick the pure or the Gaussian release plan
before the calibration checks delta: an empty array made that numpy's ValueError 'The truth value of
an empty array is ambiguous', naming no argument (found by hB's bad-input fuzz). delta is checked
first now, as every other non-number delta already was refused."""

import numpy as np
import pytest

from privrl.audit import audit_ldp_randomizer, audit_ucrl_vtr_tree
from privrl.exceptions import PrivacyParameterError


@pytest.mark.parametrize("audit", [audit_ldp_randomizer, audit_ucrl_vtr_tree])
@pytest.mark.parametrize("delta", [np.array([]), np.array([1e-5, 1e-6])])
def test_a_delta_array_is_refused_naming_delta(audit, delta):
    with pytest.raises(PrivacyParameterError, match=r"delta must be a real number"):
        audit(delta=delta, n_trials=200)


def test_a_valid_delta_audits_as_before():
    # the same seeded audit whether delta is a float or a numpy float (both real numbers)
    a = audit_ldp_randomizer(delta=1e-5, n_trials=300, seed=1).epsilon_lower_bound
    b = audit_ldp_randomizer(delta=np.float64(1e-5), n_trials=300, seed=1).epsilon_lower_bound
    assert a == b

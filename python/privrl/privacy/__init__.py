"""Privacy layer of privrl, generic to every algorithm: the privacy models, the DP tools of the
appendix, release plans, the tight accountant, continual-release mechanisms, the secure samplers and
the practical calibration's regret side. Each algorithm's own formulas live in its folder
(privrl.agents.<algorithm>.calibration); the privacy report in privrl.audit.report.

Paper: Luyo et al., App. "Differential Privacy Tools" (mechanisms), Cor. 1-2 / App. B-D (calibration).
"""

from __future__ import annotations

from privrl.privacy import accounting, bounds, mechanisms, plans
from privrl.privacy.accounting import PrivacyAccountant
from privrl.privacy.common import Calibration
from privrl.privacy.models import JointDP, LocalDP, NonPrivate
from privrl.privacy.plans import ReleasedFamily, ReleasePlan, UserStatistic

__all__ = [
    "Calibration",
    "JointDP",
    "LocalDP",
    "NonPrivate",
    "PrivacyAccountant",
    "ReleasePlan",
    "ReleasedFamily",
    "UserStatistic",
    "accounting",
    "bounds",
    "mechanisms",
    "plans",
]

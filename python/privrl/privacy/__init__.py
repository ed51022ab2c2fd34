"""Privacy layer of privrl: privacy models, DP tools, release plans, tight accounting, the calibration of
every noise scale and width, privacy reports.

Paper: Luyo et al., App. "Differential Privacy Tools" (mechanisms), Cor. 1-2 / App. B-D (calibration, privacy
proofs).
"""

# Layout: mechanisms (the appendix's DP tools), accounting (tight accountant), bounds (noise
# norm bounds), plans (what an algorithm releases, and its exact worst case), common (typed
# calibration results, the generic tight calibration), ucrl_vtr / ucrl_vtr_plus / lsvi_ucb (each
# algorithm's paper formulas, plan and calibration), continual (continual-release mechanisms),
# report, models (the NonPrivate / JointDP / LocalDP plug-ins); calibration re-exports the formulas.
from __future__ import annotations

from privrl.privacy import accounting, bounds, calibration, mechanisms, plans, report
from privrl.privacy.accounting import PrivacyAccountant
from privrl.privacy.common import Calibration
from privrl.privacy.models import JointDP, LocalDP, NonPrivate
from privrl.privacy.plans import ReleasedFamily, ReleasePlan, UserStatistic
from privrl.privacy.report import format_privacy_report, privacy_report

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
    "calibration",
    "format_privacy_report",
    "mechanisms",
    "plans",
    "privacy_report",
    "report",
]

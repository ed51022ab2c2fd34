"""Privacy layer of privrl: privacy models, DP tools, tight accounting, calibration of every noise scale and width, privacy reports.

Paper: Luyo et al., App. "Differential Privacy Tools" (mechanisms), Cor. 1-2 / App. B-D (calibration, privacy proofs).
"""
from __future__ import annotations

from privrl.privacy import accounting, calibration, mechanisms, report
from privrl.privacy.accounting import PrivacyAccountant
from privrl.privacy.models import JointDP, LocalDP, NonPrivate
from privrl.privacy.report import format_privacy_report, privacy_report

__all__ = [
    "NonPrivate", "JointDP", "LocalDP", "calibration", "mechanisms", "accounting", "report",
    "PrivacyAccountant", "privacy_report", "format_privacy_report",
]

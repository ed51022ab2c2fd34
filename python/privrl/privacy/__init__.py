"""Privacy layer of privrl: privacy models, DP tools and the calibration of every noise scale and width.

Paper: Luyo et al., App. "Differential Privacy Tools" (mechanisms), Cor. 1-2 / App. B-D (calibration).
"""
from __future__ import annotations

from privrl.privacy import calibration, mechanisms
from privrl.privacy.models import JointDP, LocalDP, NonPrivate

__all__ = ["NonPrivate", "JointDP", "LocalDP", "calibration", "mechanisms"]

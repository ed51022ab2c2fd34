"""Every formula that sets privacy noise or a confidence width, gathered under one name.

Paper: Luyo et al., Cor. 1-2 / Thm. 1 (UCRL-VTR), App. B-D (UCRL-VTR+, LSVI-UCB, pure DP), App. "Auxiliary
Results". The formulas live one module per algorithm (privrl.privacy.ucrl_vtr, .ucrl_vtr_plus, .lsvi_ucb),
the noise bounds in privrl.privacy.bounds and the generic tight calibration of a release plan in
privrl.privacy.common; this module re-exports them so that ``calibration.<name>`` finds any of them.
"""

from __future__ import annotations

from privrl.privacy import bounds, lsvi_ucb, ucrl_vtr, ucrl_vtr_plus
from privrl.privacy.common import CALIBRATIONS, Calibration, tight_scales

__all__ = [
    "CALIBRATIONS",
    "Calibration",
    "tight_scales",
    *bounds.__all__,
    *[n for n in ucrl_vtr.__all__ if n != "release_plan"],
    *[n for n in ucrl_vtr_plus.__all__ if n != "release_plan"],
    *[n for n in lsvi_ucb.__all__ if n != "release_plan"],
]

for _mod in (bounds, ucrl_vtr, ucrl_vtr_plus, lsvi_ucb):
    globals().update({n: getattr(_mod, n) for n in _mod.__all__ if n != "release_plan"})
del _mod

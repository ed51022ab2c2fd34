"""The paper's algorithms: UCRL-VTR (Alg. 1) for linear-mixture MDPs and LSVI-UCB with static
batching (Alg. 2) for linear MDPs, each with a privacy model plugged in (see docs/algorithms.md).
"""

from privrl.agents.base import Agent, SensitivityGuard, SensitivityWarning
from privrl.agents.lsvi_ucb import LSVIUCB
from privrl.agents.ucrl_vtr import UCRLVTR
from privrl.agents.ucrl_vtr_plus import UCRLVTRPlus

__all__ = ["Agent", "SensitivityGuard", "SensitivityWarning", "LSVIUCB", "UCRLVTR", "UCRLVTRPlus"]

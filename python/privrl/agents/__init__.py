"""The paper's algorithms, one folder each (agent, release plan and calibration, numpy reference):
UCRL-VTR (Alg. 1) and UCRL-VTR+ (Alg. 3) for linear-mixture MDPs, LSVI-UCB with static batching
(Alg. 2) for linear MDPs,
LinUCB (H = 1) for linear contextual bandits, each with a privacy model plugged in (docs/algorithms.md);
and PSRL, posterior sampling on a released tabular model (not in the paper), for tabular environments.
"""

from privrl.agents.common.base import Agent, Release, SensitivityGuard, SensitivityWarning
from privrl.agents.common.ldp import LdpClient, LdpMessage
from privrl.agents.linucb import LinUCB
from privrl.agents.lsvi_ucb import LSVIUCB
from privrl.agents.psrl import PSRL
from privrl.agents.ucrl_vtr import UCRLVTR
from privrl.agents.ucrl_vtr_plus import UCRLVTRPlus

__all__ = [
    "Agent",
    "Release",
    "SensitivityGuard",
    "SensitivityWarning",
    "LdpClient",
    "LdpMessage",
    "LinUCB",
    "LSVIUCB",
    "PSRL",
    "UCRLVTR",
    "UCRLVTRPlus",
]

"""UCRL-VTR+ (Alg. 3): the agent, its release plan and calibration (App. C), its numpy reference."""

from privrl.agents.ucrl_vtr_plus.agent import UCRLVTRPlus

__all__ = ["UCRLVTRPlus"]

"""UCRL-VTR (Alg. 1): the agent, its release plan and calibration (Cor. 1-2), its numpy reference."""

from privrl.agents.ucrl_vtr.agent import UCRLVTR

__all__ = ["UCRLVTR"]

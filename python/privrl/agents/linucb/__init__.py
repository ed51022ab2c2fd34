"""LinUCB with disjoint arms (H = 1): the agent, its release plan and calibration, its numpy
reference."""

from privrl.agents.linucb.agent import LinUCB

__all__ = ["LinUCB"]

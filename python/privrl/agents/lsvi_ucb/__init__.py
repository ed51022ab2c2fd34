"""LSVI-UCB with static batching (Alg. 2): the agent, its release plan and calibration (App. D), its
numpy reference."""

from privrl.agents.lsvi_ucb.agent import LSVIUCB, batch_starts

__all__ = ["LSVIUCB", "batch_starts"]

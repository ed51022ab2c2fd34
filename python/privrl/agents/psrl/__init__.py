"""Private tabular PSRL on a time-homogeneous release (counts and reward sums pooled over the H
steps, docs/algorithms.md "PSRL"): the agent, its formulas, release plan and calibration, its numpy
reference."""

from privrl.agents.psrl.agent import PSRL

__all__ = ["PSRL"]

"""Benchmark environments (docs/benchmarks.md): exact finite-horizon MDPs, linear MDPs and linear-mixture
MDPs. Sec. 2 of the paper (Asm. 1 "Linear MDP", Asm. 2 "Linear-Mixture MDP"); exact values for exact regret.
"""

from __future__ import annotations

from privrl.envs.bandit import ContextualBandit
from privrl.envs.features import FeatureMap
from privrl.envs.finite import FiniteMDP, Trajectory
from privrl.envs.gym import as_gymnasium, from_gymnasium, frozen_lake
from privrl.envs.linear import (
    LinearMDP,
    RandomLinearMDP,
    RiverSwim,
    SyntheticLinearMDP,
    tabular_linear_mdp,
)
from privrl.envs.mixture import (
    HardToLearn,
    LinearMixtureMDP,
    RandomLinearMixtureMDP,
    RiverSwimMixture,
)

__all__ = [
    "ContextualBandit",
    "FiniteMDP",
    "FeatureMap",
    "Trajectory",
    "LinearMixtureMDP",
    "LinearMDP",
    "HardToLearn",
    "RandomLinearMixtureMDP",
    "RiverSwimMixture",
    "RandomLinearMDP",
    "SyntheticLinearMDP",
    "RiverSwim",
    "tabular_linear_mdp",
    "from_gymnasium",
    "frozen_lake",
    "as_gymnasium",
]

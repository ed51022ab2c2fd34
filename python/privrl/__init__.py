"""privrl: privacy-preserving exploration in RL with linear representations.

Implements Luyo, Garcelon, Lazaric & Pirotta, "Differentially Private Exploration in
RL with Linear Representation": (JDP / LDP / pure-DP) UCRL-VTR and UCRL-VTR+ for
linear-mixture MDPs, JDP LSVI-UCB with static batching for linear MDPs, the DP tools
of the appendix, and an exact-regret experiment harness. The numeric core is Rust.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"

__all__ = ["__version__", "run", "learn", "evaluate", "plot"]

if TYPE_CHECKING:  # the lazy exports, typed for mypy and IDEs
    from privrl.experiment.interact import evaluate, learn
    from privrl.experiment.plots import plot_runs as plot
    from privrl.experiment.runner import run


#: The subpackages ``privrl.<name>`` gives after a bare ``import privrl`` (imported on first use):
#: ``except privrl.exceptions.PrivrlError`` raised AttributeError, hiding the error it meant to catch.
_SUBMODULES = frozenset(
    {"agents", "audit", "common", "envs", "exceptions", "experiment", "kernels", "privacy"}
)


def __getattr__(name: str):
    # Lazy so that importing a light submodule (privrl.envs, privrl.privacy) never pays
    # for the agents or the harness.
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    if name == "run":
        from privrl.experiment.runner import run

        return run
    if name == "plot":
        from privrl.experiment.plots import plot_runs

        return plot_runs
    if name in ("learn", "evaluate"):
        from privrl.experiment import interact

        return getattr(interact, name)
    raise AttributeError(f"module 'privrl' has no attribute {name!r}")

"""The experiment harness: regret sweeps over algorithms, privacy models, epsilons and seeds, their
results folders, plots and report tables (the regret comparisons of Sec. 5 of the paper)."""

from __future__ import annotations

from privrl.experiment.config import (
    ALGORITHMS,
    ENVIRONMENTS,
    ConfigError,
    SweepConfig,
    SweepError,
)
from privrl.experiment.parsing import build_config, load_config
from privrl.experiment.results import COLUMNS, load_manifest, load_results
from privrl.experiment.sweep import execute_run, run_seed_sequence, run_sweep, sweep

__all__ = [
    "sweep",
    "run_sweep",
    "execute_run",
    "run_seed_sequence",
    "build_config",
    "load_config",
    "SweepConfig",
    "ConfigError",
    "SweepError",
    "ALGORITHMS",
    "ENVIRONMENTS",
    "COLUMNS",
    "load_results",
    "load_manifest",
    "partial_result",
    "plot",
    "report",
    "summarize",
]


def __getattr__(name: str):
    # matplotlib is imported only by whoever plots.
    if name == "plot":
        from privrl.experiment.plots import plot

        return plot
    if name == "partial_result":  # privrl.learn's module, imported on first use
        from privrl.experiment.interact import partial_result

        return partial_result
    if name in ("report", "summarize"):
        from privrl.experiment import summary as _summary

        return getattr(_summary, name)
    raise AttributeError(f"module 'privrl.experiment' has no attribute {name!r}")

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


# Imported on first use: matplotlib only by whoever plots, privrl.learn's module when asked for.
_LAZY = {"plot": "plots", "partial_result": "interact", "report": "summary", "summarize": "summary"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"privrl.experiment.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'privrl.experiment' has no attribute {name!r}")

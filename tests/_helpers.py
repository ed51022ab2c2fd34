"""Shared test helpers (exact reference quantities used by several test files)."""

import importlib.util
import sys
from pathlib import Path

import numpy as np


def load_bench(filename, module_name):
    """A script of benches/ (not a package) imported as a fresh module named `module_name`,
    registered in sys.modules before it runs (importlib's recipe: a @dataclass, pickle and
    typing.get_type_hints look the module up there) and unregistered if it fails to load."""
    path = Path(__file__).resolve().parents[1] / "benches" / filename
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module


def uniform_policy_gap(env):
    """Exact per-episode regret of the uniformly random (stochastic) policy."""
    V = np.zeros(env.S)
    for h in range(env.H - 1, -1, -1):
        V = (env.R[h] + env.P[h] @ V).mean(axis=1)
    return float(env.init_dist @ (env.optimal_values()[0] - V))


def _formulas():
    """Every noise / width formula of the three algorithms (and the noise bounds, the generic
    tight calibration) under one name, as the tests read them: each lives in its algorithm's
    folder (privrl.agents.<algorithm>.calibration)."""
    import types

    from privrl.agents.lsvi_ucb import calibration as lsvi_ucb
    from privrl.agents.ucrl_vtr import calibration as ucrl_vtr
    from privrl.agents.ucrl_vtr_plus import calibration as ucrl_vtr_plus
    from privrl.privacy import bounds
    from privrl.privacy.common import CALIBRATIONS, Calibration, tight_scales

    ns = types.SimpleNamespace(CALIBRATIONS=CALIBRATIONS, Calibration=Calibration, tight_scales=tight_scales)
    for mod in (bounds, ucrl_vtr, ucrl_vtr_plus, lsvi_ucb):
        for name in mod.__all__:
            if name != "release_plan":
                setattr(ns, name, getattr(mod, name))
    return ns


calibration = _formulas()

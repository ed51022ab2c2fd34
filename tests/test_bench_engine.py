"""benches/engine.py's frozen-psrl workload: PSRL's numpy reference timed in lockstep with the agent,
fed the agent's own recorded draws (tests/test_psrl_agent.py's replay), user by user and through
its releases; a reference that parts from the agent is refused, not timed."""

import importlib.util
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from privrl.agents import PSRL
from privrl.privacy import JointDP


@pytest.fixture(scope="module")
def engine():
    """benches/engine.py imported as a module, registered while loading (its @dataclass looks
    its module up in sys.modules; _helpers.load_bench does not register)."""
    path = Path(__file__).resolve().parents[1] / "benches" / "engine.py"
    spec = importlib.util.spec_from_file_location("engine_bench", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["engine_bench"] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules["engine_bench"]
    return module


def _agent(engine, K=40, batches=4):
    env = engine._frozen_lake(slippery=True, H=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return env, PSRL(env, JointDP(10.0, 1e-5), episodes=K, seed=1, batches=batches)


def test_the_psrl_workload_is_the_slippery_lake_with_its_reference(engine):
    (w,) = [w for w in engine.WORKLOADS if w.name == "frozen-psrl"]
    env, make = w.make()
    agent = make()
    assert (w.K, w.reference, agent.K, env.S, env.A, env.H) == (20_000, True, 20_000, 16, 4, 20)
    assert agent.calibration.sampler == "discrete" and agent.B == 6


def test_the_lockstep_reference_follows_the_agent_through_its_releases(engine):
    env, agent = _agent(engine)
    assert list(agent.bounds) == [0, 10, 20, 30, 40]
    assert engine._psrl_reference_cost(agent, env, 40) > 0.0  # every policy and draw the agent's
    assert agent.billboard()[2] == 3


def test_a_reference_that_releases_late_is_refused(engine):
    env, agent = _agent(engine)
    # the reference's view only: the core releases after user 10 (k 9), the reference after 11
    agent.bounds = np.array([0, 11, 20, 30, 40])
    with pytest.raises(AssertionError, match="user 9: the reference's policy or draws are not"):
        engine._psrl_reference_cost(agent, env, 12)

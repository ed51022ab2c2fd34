"""benches/engine.py's frozen-psrl workload: PSRL's numpy reference timed in lockstep with the agent,
fed the agent's own recorded draws (tests/test_psrl_agent.py's replay), user by user and through
its releases; a reference that parts from the agent is refused, not timed. And the plain-Python
FrozenLake its frozen-learn figure times privrl.learn's own share on."""

import dataclasses
import sys
import typing
import warnings

import numpy as np
import pytest

from _helpers import load_bench
from privrl.agents import PSRL
from privrl.privacy import JointDP


@pytest.fixture(scope="module")
def engine():
    """benches/engine.py imported as a module (its @dataclass looks its module up in sys.modules:
    load_bench registers it before running it, importlib's recipe)."""
    return load_bench("engine.py", "engine_bench")


def test_load_bench_registers_the_module_so_a_dataclass_script_loads(engine):
    """load_bench ran the script unregistered: engine.py's @dataclass Workload failed with
    "'NoneType' object has no attribute '__dict__'" (dataclasses reads sys.modules[cls.__module__])."""
    assert sys.modules["engine_bench"] is engine
    assert [f.name for f in dataclasses.fields(engine.Workload)][:3] == ["name", "what", "K"]
    assert typing.get_type_hints(engine.Workload)["K"] is int  # resolved in the registered module


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


def test_the_plain_lake_is_gymnasiums_frozen_lake(engine):
    # learn's own share is timed on it: every (state, action) must give gymnasium's observation,
    # reward (an int, as FrozenLake pays) and end, from gymnasium's start
    gym = pytest.importorskip("gymnasium")
    real = gym.make("FrozenLake-v1", is_slippery=False)
    plain = engine.PlainLake(real)
    assert (plain.action_space, plain.observation_space, plain.spec) == (
        real.action_space,
        real.observation_space,
        None,
    )
    assert plain.reset(seed=0)[0] == real.reset(seed=0)[0] == 0
    for s in range(16):
        for a in range(4):
            real.unwrapped.s, plain.s = s, s
            theirs, mine = real.unwrapped.step(a), plain.step(a)
            assert mine[:4] == theirs[:4] and type(mine[1]) is type(theirs[1]), (s, a)
    with pytest.raises(AssertionError, match="deterministic transitions only"):
        engine.PlainLake(gym.make("FrozenLake-v1", is_slippery=True))

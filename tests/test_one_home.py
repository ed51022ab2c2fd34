"""Issue 20's rules that users feel: every public calibration / plan / report entry point, called
without a sampler, gives the noise the agent with the same epsilon draws (one default, defined
once); and a saved agent runs on the environment a user rebuilds from its constructor in another
process, continuing bit-identically, while a different environment is refused with what differs."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import privrl
from privrl.agents import LSVIUCB, UCRLVTR, UCRLVTRPlus
from privrl.agents.lsvi_ucb import calibration as lsvi_cal
from privrl.agents.ucrl_vtr import calibration as vtr_cal
from privrl.agents.ucrl_vtr_plus import calibration as plus_cal
from privrl.audit import audit_ucrl_vtr_tree
from privrl.audit.comparison import calibration_comparison
from privrl.audit.report import privacy_report_from_calibration
from privrl.envs import RandomLinearMDP, RiverSwimMixture
from privrl.privacy import JointDP, LocalDP
from privrl.privacy.common import DEFAULT_SAMPLER, tight_scales

RIVER = RiverSwimMixture(S=4, H=3)
LINEAR = RandomLinearMDP(S=8, A=3, d=4, H=3, seed=0)
CASES = [
    (UCRLVTR, RIVER, "ucrl_vtr", vtr_cal, ("sigma_B", "sigma_g")),
    (UCRLVTRPlus, RIVER, "ucrl_vtr_plus", plus_cal, ("sigma_B1", "sigma_B2")),
    (LSVIUCB, LINEAR, "lsvi_ucb", lsvi_cal, ("sigma_Lambda", "sigma_u")),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[2])
@pytest.mark.parametrize("model", [JointDP, LocalDP])
@pytest.mark.parametrize("calibration", ["paper", "tight", "practical"])
@pytest.mark.parametrize("delta", [1e-5, 0.0])
def test_public_entry_points_default_to_the_agents_noise(case, model, calibration, delta):
    cls, env, name, module, keys = case
    calibrate = getattr(module, f"calibrate_{name}")
    release_plan = module.release_plan
    if cls is LSVIUCB and model is LocalDP:
        pytest.skip("no LDP algorithm for linear MDPs")
    privacy = model(1.0, delta, calibration=calibration)
    agent = cls(env, privacy, episodes=200, seed=0)
    cal = agent.calibration
    assert cal.sampler == DEFAULT_SAMPLER == "discrete"
    extra = {"batches": "static"} if cls is LSVIUCB else {"C_w": float(env.C_w)}
    direct = calibrate(privacy.kind, 1.0, delta, H=env.H, K=200, d=agent.d, calibration=calibration, **extra)
    plan_args = (privacy.kind, delta == 0.0, env.H, 200, agent.d) + ((agent.B,) if cls is LSVIUCB else ())
    plan = release_plan(*plan_args, privacy.mechanism)
    assert plan == agent.release_plan()
    for key in keys:
        assert getattr(direct, key) == getattr(cal, key), key
    if calibration != "paper":
        assert tight_scales(plan, 1.0, delta) == tight_scales(agent.release_plan(), 1.0, delta)
    report = privacy_report_from_calibration(name, direct)
    assert report["sampler"] == agent.privacy_report()["sampler"]
    if delta > 0 and model is JointDP and calibration == "paper":
        comparison = calibration_comparison(name, "jdp", 1.0, delta, H=env.H, K=200, d=agent.d, **extra)
        assert comparison["sampler"] == DEFAULT_SAMPLER


def test_the_audits_default_to_the_agents_sampler():
    res = audit_ucrl_vtr_tree(4.0, n_trials=20, H=1, d=1, K=2)
    assert "discrete" in res.name


_CONTINUE = """
import sys, numpy as np, privrl
from privrl.agents import Agent
from privrl.envs import RiverSwimMixture, RandomLinearMDP
agent = Agent.load(sys.argv[1])
env = RiverSwimMixture(S=4, H=3) if sys.argv[3] == "river" else RandomLinearMDP(S=8, A=3, d=4, H=3, seed=0)
assert env is not agent.env
np.save(sys.argv[2], privrl.run(agent, env, seed=2).regret)
"""


@pytest.mark.parametrize("which", ["river", "linear"])
def test_a_loaded_agent_runs_on_the_environment_rebuilt_from_its_constructor(tmp_path, which):
    env, cls = (RIVER, UCRLVTR) if which == "river" else (LINEAR, LSVIUCB)
    full = cls(env, JointDP(1.0, 1e-5), episodes=60, seed=0)
    privrl.run(full, env, 25, seed=1)
    expected = privrl.run(full, env, seed=2).regret  # the remaining 35 episodes
    half = cls(env, JointDP(1.0, 1e-5), episodes=60, seed=0)
    privrl.run(half, env, 25, seed=1)
    half.save(tmp_path / "agent.privrl")
    out = subprocess.run(
        [sys.executable, "-c", _CONTINUE, str(tmp_path / "agent.privrl"), str(tmp_path / "r.npy"), which],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    np.testing.assert_array_equal(np.load(tmp_path / "r.npy"), expected)


def test_a_different_environment_is_refused_with_what_differs():
    agent = UCRLVTR(RIVER, JointDP(1.0, 1e-5), episodes=10, seed=0)
    privrl.run(agent, RiverSwimMixture(S=4, H=3), 2, seed=0)  # equal: accepted
    with pytest.raises(ValueError, match=r"differs in its horizon.*agent\.env"):
        privrl.run(agent, RiverSwimMixture(S=4, H=4), seed=0)
    other = RiverSwimMixture(S=5, H=3)
    with pytest.raises(ValueError, match="features"):
        privrl.run(agent, other, seed=0)


def test_an_agent_built_on_a_feature_map_runs_on_any_model_with_its_features_and_horizon():
    """A FeatureMap states only H and the features: an agent trained through privrl.learn is
    scored with exact regret on the environment's model (from_gymnasium), the same users as on an
    agent built on the model itself; a model with another horizon or other features is refused."""
    gym = pytest.importorskip("gymnasium")
    from privrl.agents import LSVIUCB
    from privrl.envs import FeatureMap, from_gymnasium
    from privrl.privacy import NonPrivate

    model = from_gymnasium(gym.make("FrozenLake-v1", is_slippery=False), H=8)
    on_map = LSVIUCB(FeatureMap.one_hot(16, 4, 8), NonPrivate(), episodes=300, seed=0)
    on_model = LSVIUCB(model, NonPrivate(), episodes=300, seed=0)
    a, b = (privrl.run(x, model, 300, seed=1) for x in (on_map, on_model))
    np.testing.assert_array_equal(a.regret, b.regret)
    with pytest.raises(ValueError, match=r"differs in its horizon.*agent\.env"):
        privrl.run(on_map, from_gymnasium(gym.make("FrozenLake-v1", is_slippery=False), H=7), seed=0)
    other = FeatureMap(np.asarray(model.features)[:, ::-1].copy(), 8)  # the actions' rows swapped
    with pytest.raises(ValueError, match=r"differs in its features"):
        privrl.run(LSVIUCB(other, NonPrivate(), episodes=3, seed=0), model, seed=0)

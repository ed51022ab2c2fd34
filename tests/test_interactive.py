"""What a researcher meets in a notebook or a type-checked script: the declared types of what the
agents hand back, and short, informative reprs."""

import inspect
import json
import re
import typing
import warnings

import numpy as np
import pytest

import privrl
import privrl.audit
import privrl.experiment
from privrl import kernels as kn
from privrl.agents import LSVIUCB, UCRLVTR, Agent, LinUCB, UCRLVTRPlus
from privrl.agents.linucb.calibration import LinUCBCalibration
from privrl.agents.lsvi_ucb.calibration import LSVIUCBCalibration
from privrl.agents.ucrl_vtr.calibration import UCRLVTRCalibration
from privrl.agents.ucrl_vtr_plus.calibration import UCRLVTRPlusCalibration
from privrl.audit.report import PrivacyReport
from privrl.common.errors import AssumptionWarning
from privrl.envs import RiverSwimMixture, SyntheticLinearMDP
from privrl.experiment import build_config, run_sweep, sweep
from privrl.experiment.interact import LearnResult
from privrl.privacy import JointDP
from privrl.privacy.common import CALIBRATIONS


def test_each_agent_declares_the_calibration_class_it_holds():
    # README: print(res.regret[-1], agent.calibration.sigma_B) must type-check (mypy --strict)
    # and a typo such as calibration.sigma_Bx must not (it did not while the declared type was
    # the base Calibration, which has neither).
    for cls, cal in [
        (UCRLVTR, UCRLVTRCalibration),
        (UCRLVTRPlus, UCRLVTRPlusCalibration),
        (LSVIUCB, LSVIUCBCalibration),
        (LinUCB, LinUCBCalibration),
    ]:
        assert typing.get_type_hints(cls)["calibration"] is cal, cls.__name__
    hints = typing.get_type_hints(Agent.privacy_report, localns={"PrivacyReport": PrivacyReport})
    assert hints["return"] is PrivacyReport


def test_a_release_shows_its_arrays_by_shape_not_their_numbers():
    # Before: the dataclass repr printed every matrix: 16,000 characters for UCRL-VTR on
    # RiverSwimMixture(S=6, H=20), 24,000 for LinUCB on wine, in a notebook cell or a log line.
    env = RiverSwimMixture(S=6, H=20)
    agent = UCRLVTR(env, JointDP(1.0, 1e-5), episodes=10, seed=0)
    privrl.run(agent, env, seed=1)
    text = repr(agent.release())
    assert len(text) < 300, text
    assert text.startswith("Release(users=10, ")
    assert "design=<float64 array (20, 3, 3)>" in text and "weights=<float64 array (20, 3)>" in text
    assert str(agent.release()) == text


def test_a_learn_result_repr_is_a_summary_like_run_results():
    # Before: LearnResult's repr printed its per-episode returns (and regret) arrays in full up to
    # numpy's 1,000-element threshold: over 10,000 characters, where RunResult shows one line.
    res = LearnResult(
        returns=np.linspace(0.0, 1.0, 1000), regret=np.arange(1000.0), wall_time=0.5, agent="LSVI-UCB[x]"
    )
    text = repr(res)
    assert len(text) < 250, text
    assert text == (
        "LearnResult(agent='LSVI-UCB[x]', episodes=1000, mean_return=0.5, final_regret=999, "
        "wall_time=0.5s, terminated_early=0, policy_changes=0)"
    )
    empty = LearnResult(returns=np.zeros(0), regret=None, wall_time=0.0, agent="a")
    assert (
        repr(empty)
        == "LearnResult(agent='a', episodes=0, wall_time=0s, terminated_early=0, policy_changes=0)"
    )


def _public_functions():
    for module in (privrl, privrl.agents, privrl.envs, privrl.privacy, privrl.experiment, privrl.audit, kn):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj):
                yield f"{module.__name__}.{name}", obj
            elif inspect.isclass(obj):
                for attr, value in vars(obj).items():
                    func = value.__func__ if isinstance(value, (classmethod, staticmethod)) else value
                    if inspect.isfunction(func) and (not attr.startswith("_") or attr == "__init__"):
                        yield f"{module.__name__}.{name}.{attr}", func


def test_every_public_function_is_annotated():
    # Before: privrl.kernels.optimistic_values (README's kernels example) had no return annotation,
    # so `Q, V, greedy = kn.optimistic_values(...)` left all three Any under mypy --strict.
    unannotated = []
    for qualname, func in _public_functions():
        sig = inspect.signature(func)
        params = [p for n, p in sig.parameters.items() if n not in ("self", "cls")]
        if any(p.annotation is inspect.Parameter.empty for p in params) or (
            sig.return_annotation is inspect.Signature.empty and func.__name__ != "__init__"
        ):
            unannotated.append(qualname)
    assert not unannotated
    ret = typing.get_type_hints(kn.optimistic_values)["return"]
    assert ret == tuple[np.ndarray, np.ndarray, np.ndarray]


def _named(name: str, text: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", text) is not None


@pytest.mark.parametrize("cls", [UCRLVTR, UCRLVTRPlus, LSVIUCB, LinUCB])
def test_help_of_each_agent_documents_every_constructor_argument(cls):
    # Before: help(UCRLVTRPlus) had no Parameters section at all, LinUCB's left out `ties` and
    # UCRLVTR's and LSVIUCB's `seed`.
    doc = inspect.getdoc(cls)
    assert "Parameters\n----------\n" in doc, cls.__name__
    section = doc.split("Parameters\n----------\n", 1)[1]
    missing = [p for p in inspect.signature(cls).parameters if not _named(p, section)]
    assert not missing, f"{cls.__name__}: {missing}"


def test_help_of_sweep_documents_every_argument_and_every_calibration():
    # Before: sweep's docstring never named log_every, root_seed, format or resume, and listed the
    # calibrations as ("paper" | "tight"), without the default "adaptive" or "practical".
    doc = inspect.getdoc(privrl.experiment.sweep)
    missing = [p for p in inspect.signature(privrl.experiment.sweep).parameters if not _named(p, doc)]
    assert not missing
    assert all(f'"{c}"' in doc for c in CALIBRATIONS)


def test_a_sweep_warning_points_at_the_users_call_of_sweep_or_run_sweep(tmp_path):
    # Before: the two warnings run_sweep gives about its output folder used fixed stacklevels that
    # fit a direct run_sweep call only: through sweep() they pointed at sweep.py, not the notebook
    # cell or script line.
    out = tmp_path / "w"
    small = {"env": {"name": "RiverSwimMixture", "S": 4, "H": 5}, "seeds": 1, "episodes": 20, "epsilons": [1]}
    sweep(**small, agents={"A": {"algorithm": "UCRL-VTR", "privacy": "jdp"}}, outdir=out)
    meta_path = next((out / "runs").glob("*.json"))
    meta = json.loads(meta_path.read_text())
    meta["producer"]["git_commit"] = "0" * 40  # a run resumed from another commit
    meta_path.write_text(json.dumps(meta))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sweep(**small, agents={"A": {"algorithm": "UCRL-VTR", "privacy": "jdp"}}, outdir=out)
        sweep(**small, agents={"B": {"algorithm": "UCRL-VTR", "privacy": "ldp"}}, outdir=out)
        config = build_config({**small, "agents": {"C": {"algorithm": "UCRL-VTR", "privacy": "none"}}})
        run_sweep(config, out)
    messages = [(str(w.message), w.filename) for w in caught]
    assert [m for m, _ in messages if "another privrl version" in m]
    assert len([m for m, _ in messages if "runs of another config" in m]) == 2
    assert {f for _, f in messages} == {__file__}, messages


def test_a_linear_mdps_assumption_warning_points_at_the_users_line_through_a_subclass():
    # Before: LinearMDP.__init__ warned with stacklevel=2, the user's line only for a direct
    # LinearMDP(...): SyntheticLinearMDP(H=5) (whose mu breaks Asm. 1's sqrt(d) bound) pointed at
    # its own super().__init__ call in privrl/envs/linear.py.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        SyntheticLinearMDP(H=5)
    assert [str(w.message) for w in caught if w.category is AssumptionWarning]
    assert {w.filename for w in caught} == {__file__}

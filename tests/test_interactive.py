"""What a researcher meets in a notebook or a type-checked script: the declared types of what the
agents hand back, and short, informative reprs."""

import typing

from privrl.agents import LSVIUCB, UCRLVTR, Agent, LinUCB, UCRLVTRPlus
from privrl.agents.linucb.calibration import LinUCBCalibration
from privrl.agents.lsvi_ucb.calibration import LSVIUCBCalibration
from privrl.agents.ucrl_vtr.calibration import UCRLVTRCalibration
from privrl.agents.ucrl_vtr_plus.calibration import UCRLVTRPlusCalibration
from privrl.audit.report import PrivacyReport


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

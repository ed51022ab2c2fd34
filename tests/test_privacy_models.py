"""Tests of privrl.privacy.models: NonPrivate / JointDP / LocalDP plug-ins (Luyo et al., Sec. 2.1)."""

from __future__ import annotations

import dataclasses
import math

import pytest

import privrl.privacy as privacy
from _helpers import calibration
from privrl.exceptions import PrivacyParameterError
from privrl.privacy import JointDP, LocalDP, NonPrivate


def test_package_reexports():
    assert privacy.NonPrivate is NonPrivate
    assert privacy.JointDP is JointDP and privacy.LocalDP is LocalDP
    # the per-algorithm formulas live in their algorithm's folder, the report in privrl.audit
    from privrl.agents.ucrl_vtr import calibration as ucrl_vtr_calibration
    from privrl.audit import report

    assert ucrl_vtr_calibration.calibrate_ucrl_vtr is calibration.calibrate_ucrl_vtr
    assert callable(report.privacy_report) and callable(report.format_privacy_report)
    assert callable(privacy.mechanisms.gaussian_sigma)
    assert set(privacy.__all__) == {
        "NonPrivate",
        "JointDP",
        "LocalDP",
        "mechanisms",
        "accounting",
        "PrivacyAccountant",
        "bounds",
        "plans",
        "Calibration",
        "ReleasePlan",
        "ReleasedFamily",
        "UserStatistic",
    }
    for moved in ("calibration", "report", "privacy_report", "format_privacy_report"):
        assert not hasattr(privacy, moved), moved


def test_joint_dp_properties():
    m = JointDP(1, 1e-5)
    assert m.epsilon == 1.0 and isinstance(m.epsilon, float)
    assert m.delta == 1e-5 and m.p == 0.05
    assert m.kind == "jdp" and m.pure is False
    assert m.label == "JDP(eps=1, delta=1e-05, blt)"  # adaptive (the default), BLT


def test_pure_defaults():
    j = JointDP(0.5)
    assert j.delta == 0.0 and j.pure is True
    assert j.label == "JDP(eps=0.5, delta=0)"
    ldp = LocalDP(2.0)
    assert ldp.kind == "ldp" and ldp.pure is True


def test_local_dp_properties():
    m = LocalDP(2, 1e-3, p=0.1)
    assert m.kind == "ldp" and not m.pure and m.p == 0.1
    assert m.label == "LDP(eps=2, delta=0.001)"


def test_non_private():
    m = NonPrivate()
    assert m.kind == "none" and m.pure is False
    assert m.epsilon is None and m.delta is None and m.p == 0.05
    assert m.label == "NonPrivate"


def test_frozen_and_hashable():
    m = JointDP(1, 1e-5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.epsilon = 2.0
    assert m == JointDP(1.0, 1e-5)
    assert hash(m) == hash(JointDP(1.0, 1e-5))
    assert m != LocalDP(1, 1e-5)  # same numbers, different model
    assert len({JointDP(1, 0), JointDP(1, 0.0), LocalDP(1, 0)}) == 2


@pytest.mark.parametrize("cls", [JointDP, LocalDP])
@pytest.mark.parametrize("eps", [0, -1, math.inf, math.nan, None, "1", True])
def test_bad_epsilon(cls, eps):
    with pytest.raises(PrivacyParameterError, match="epsilon"):
        cls(eps, 1e-5)


@pytest.mark.parametrize("cls", [JointDP, LocalDP])
@pytest.mark.parametrize("delta", [1, 1.0, -1e-9, 1.5, math.nan, None, "0", 5e-324, 1e-200])
def test_bad_delta(cls, delta):
    with pytest.raises(PrivacyParameterError, match="delta"):
        cls(1.0, delta)


@pytest.mark.parametrize("p", [0, 1, -0.1, 2.0, math.nan])
def test_bad_p(p):
    with pytest.raises(PrivacyParameterError, match=r"\bp\b"):
        JointDP(1.0, 1e-5, p=p)
    with pytest.raises(PrivacyParameterError, match=r"\bp\b"):
        NonPrivate(p=p)


def test_error_is_value_error():
    with pytest.raises(ValueError):
        LocalDP(-1.0)


def test_as_kwargs_feeds_calibration():
    for model in (NonPrivate(), JointDP(0.5, 1e-5), JointDP(0.5), LocalDP(0.5, 1e-5), LocalDP(0.5)):
        kw = model.as_kwargs()
        assert kw["kind"] == model.kind and kw["p"] == model.p
        out = calibration.calibrate_ucrl_vtr(H=5, K=100, d=3, C_w=1.0, **kw)
        assert out.kind == model.kind
        assert out.pure == model.pure
        if model.kind != "none":
            assert out.noise == ("laplace" if model.pure else "gaussian")


@pytest.mark.parametrize("cls", [JointDP, LocalDP])
@pytest.mark.parametrize("flag", ["no", 1, 0, None, 1.0])
def test_allow_large_delta_must_be_a_bool(cls, flag):
    """A truthy "no" unlocked the large-delta guard (delta = 0.5 accepted): only True / False."""
    with pytest.raises(PrivacyParameterError, match="allow_large_delta must be True or False"):
        cls(1.0, 0.5, allow_large_delta=flag)
    assert cls(1.0, 0.5, allow_large_delta=True).delta == 0.5


@pytest.mark.parametrize("cls", [JointDP, LocalDP])
def test_negative_zero_delta_is_zero(cls):
    """delta = -0.0 is pure DP, stored as 0.0 (it showed as delta=-0.0 in the repr)."""
    model = cls(1.0, -0.0)
    assert model.delta == 0.0 and math.copysign(1.0, model.delta) == 1.0 and model.pure
    assert "-0" not in repr(model) and "-0" not in model.label


@pytest.mark.parametrize("value", [1.0, 10, 0])
def test_an_epsilon_given_to_nonprivate_is_named_as_not_one(value):
    """NonPrivate(1.0), an epsilon by habit, said only "p must be in (0, 1), got 1.0", leaving the
    user to guess what p is; now the message says p is the regret failure probability, not an
    epsilon, and names the private models."""
    with pytest.raises(PrivacyParameterError, match=r"p must be in \(0, 1\), got .*not an epsilon.*JointDP"):
        NonPrivate(value)

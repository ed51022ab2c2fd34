"""The shipped UCRL-VTR audits test ``delta == 0.0`` to pick the pure or the Gaussian release plan
before the calibration checks delta: an empty array made that numpy's ValueError 'The truth value of
an empty array is ambiguous', naming no argument (found by hB's bad-input fuzz). delta is checked
first now, as every other non-number delta already was refused."""

import numpy as np
import pytest

from privrl.audit import audit_ldp_randomizer, audit_ucrl_vtr_tree
from privrl.exceptions import PrivacyParameterError


@pytest.mark.parametrize("audit", [audit_ldp_randomizer, audit_ucrl_vtr_tree])
@pytest.mark.parametrize("delta", [np.array([]), np.array([1e-5, 1e-6])])
def test_a_delta_array_is_refused_naming_delta(audit, delta):
    with pytest.raises(PrivacyParameterError, match=r"delta must be a real number"):
        audit(delta=delta, n_trials=200)


def test_a_valid_delta_audits_as_before():
    # the same seeded audit whether delta is a float or a numpy float (both real numbers)
    a = audit_ldp_randomizer(delta=1e-5, n_trials=300, seed=1).epsilon_lower_bound
    b = audit_ldp_randomizer(delta=np.float64(1e-5), n_trials=300, seed=1).epsilon_lower_bound
    assert a == b


def test_an_array_of_algorithm_names_is_refused_naming_algorithm():
    """privacy_report_from_calibration and calibration_comparison tested ``algorithm not in
    ALGORITHMS``: a numpy array of names raised numpy's 'The truth value of an array ... is
    ambiguous', naming no argument (two sites e695d13's common.kinds.is_choice had not reached).
    Both refuse it as any other unknown algorithm now."""
    from privrl.agents import UCRLVTR
    from privrl.audit.comparison import calibration_comparison
    from privrl.audit.report import privacy_report_from_calibration
    from privrl.envs import RiverSwimMixture
    from privrl.privacy import JointDP

    names = np.array(["ucrl_vtr", "lsvi_ucb"])
    cal = UCRLVTR(RiverSwimMixture(S=3, H=3), JointDP(1.0, 1e-5), episodes=10, seed=0).calibration
    with pytest.raises(ValueError, match=r"algorithm must be one of .*, got array"):
        privacy_report_from_calibration(names, cal)
    with pytest.raises(ValueError, match=r"algorithm must be one of .*, got array"):
        calibration_comparison(names, "jdp", 1.0, 1e-5, 3, 10, 3)
    assert privacy_report_from_calibration("ucrl_vtr", cal)["target"] == {"epsilon": 1.0, "delta": 1e-5}


def test_plan_of_and_regret_side_refuse_what_the_report_refuses():
    """plan_of and regret_side (privrl.audit.report's public helpers) took any algorithm and any
    object: regret_side("x", cal) and regret_side("ucrl_vtr", None) returned the paper rule's
    fields (radius None, a constant shift) as the regret side of nothing, plan_of("x", cal) raised
    a bare KeyError and plan_of("psrl", a UCRL-VTR calibration) a bare AttributeError (hA's
    adversarial-input pass). Both refuse them as privacy_report_from_calibration does."""
    from privrl.agents.ucrl_vtr.calibration import calibrate_ucrl_vtr
    from privrl.audit.report import plan_of, privacy_report_from_calibration, regret_side

    cal = calibrate_ucrl_vtr("jdp", 4.0, 1e-5, 2, 8, 2, 1.0)
    for fn in (plan_of, regret_side, privacy_report_from_calibration):
        for alg in ("x", None, 3):
            with pytest.raises(ValueError, match=r"^algorithm must be one of .*, got "):
                fn(alg, cal)
        for other in (None, "x", {}, cal.to_dict()):
            with pytest.raises(TypeError, match=r"^cal must be a privrl Calibration, got "):
                fn("ucrl_vtr", other)
        with pytest.raises(ValueError, match=r"^cal is a calibration of 'ucrl_vtr', not of 'psrl'"):
            fn("psrl", cal)
    report = privacy_report_from_calibration("ucrl_vtr", cal)
    assert report["regret_side"] == regret_side("ucrl_vtr", cal)
    assert plan_of("ucrl_vtr", cal).algorithm == "ucrl_vtr" and report["regret_side"]["rule"] == "adaptive"


@pytest.mark.parametrize("guards", ["clip", [1], np.array([1.0])])
def test_report_guards_that_are_not_a_mapping_are_refused_by_name(guards):
    """privacy_report_from_calibration(guards=...) iterated guards.items(): a string or a list of
    guards raised a bare AttributeError ('str' object has no attribute 'items') and an array numpy's
    'truth value of an array is ambiguous' (hA's adversarial-input pass). None (the default) and a
    mapping of the agent's guards still describe the enforcement."""
    from privrl.agents import UCRLVTR
    from privrl.audit.report import privacy_report_from_calibration
    from privrl.envs import RiverSwimMixture
    from privrl.privacy import JointDP

    ag = UCRLVTR(RiverSwimMixture(S=3, H=3), JointDP(1.0, 1e-5), episodes=10, seed=0)
    with pytest.raises(
        TypeError, match=r"^guards must be a mapping of statistic name -> SensitivityGuard, got "
    ):
        privacy_report_from_calibration("ucrl_vtr", ag.calibration, guards=guards)
    for ok in (None, {}, ag.guards):
        rep = privacy_report_from_calibration("ucrl_vtr", ag.calibration, guards=ok)
        assert rep["within_target"]["tight"]
    assert (
        "SensitivityGuard(mode='clip')"
        in privacy_report_from_calibration("ucrl_vtr", ag.calibration, guards=ag.guards)["mechanisms"][0][
            "enforced_by"
        ]
    )


def test_the_report_formatters_refuse_what_is_not_their_report():
    """format_privacy_report, summarize_privacy_report and format_calibration_comparison read their
    argument by key: {} or a report's "tight" section raised a bare KeyError ('target', 'algorithm',
    'paper'), a string a TypeError about string indices (hA's adversarial-input pass). Each names
    what it takes now; the reports they are given still print and digest as before."""
    from privrl.agents.ucrl_vtr.calibration import calibrate_ucrl_vtr
    from privrl.audit.comparison import calibration_comparison, format_calibration_comparison
    from privrl.audit.report import (
        format_privacy_report,
        privacy_report_from_calibration,
        summarize_privacy_report,
    )

    rep = privacy_report_from_calibration("ucrl_vtr", calibrate_ucrl_vtr("jdp", 4.0, 1e-5, 2, 8, 2, 1.0))
    for fn in (format_privacy_report, summarize_privacy_report):
        for bad in ({}, rep["tight"], "report", None):
            with pytest.raises(TypeError, match=r"^report must be what privacy_report_from_calibration"):
                fn(bad)
    cmp = calibration_comparison("ucrl_vtr", "jdp", 1.0, 1e-5, 2, 8, 2)
    for bad in ({}, rep, cmp["rows"]):
        with pytest.raises(TypeError, match=r"^cmp must be what calibration_comparison returns"):
            format_calibration_comparison(bad)
    assert format_privacy_report(rep).startswith("Privacy report: UCRL-VTR (Alg. 1)")
    assert summarize_privacy_report(rep)["target"] == {"epsilon": 4.0, "delta": 1e-5}
    assert "paper/tight" in format_calibration_comparison(cmp)


def test_calibration_comparison_does_not_offer_linucb():
    """calibration_comparison listed 'linucb' among its algorithms, but calls every calibration with
    H and d: calibration_comparison("linucb", ...) always failed with a bare TypeError
    ('calibrate_linucb() got an unexpected keyword argument H'; hA's adversarial-input pass). LinUCB
    (arms, context dimension) is refused by name now, as PSRL is; the others compare as before."""
    from privrl.audit.comparison import calibration_comparison

    for alg in ("linucb", "psrl"):
        with pytest.raises(
            ValueError, match=r"^algorithm must be one of \('ucrl_vtr', 'ucrl_vtr_plus', 'lsvi_ucb'\), got"
        ):
            calibration_comparison(alg, "jdp", 1.0, 1e-5, 1, 8, 2)
    rows = calibration_comparison("ucrl_vtr", "jdp", 1.0, 1e-5, 2, 8, 2)["rows"]
    assert rows[0]["quantity"] == "sigma_B" and rows[0]["ratio"] > 1.0


@pytest.mark.parametrize("K", [None, "4", float("nan"), 2.5])
def test_the_agent_audits_refuse_a_bad_K_by_name(K):
    """audit_ucrl_vtr_agent / audit_linucb_agent / audit_psrl_agent built their fixed users with
    range(K - 1) before the agent checked K: K=None or "4" raised a bare 'unsupported operand
    type(s) for -', nan or 2.5 "'float' object cannot be interpreted as an integer", naming no
    argument (hA's adversarial-input pass). K is checked first now."""
    from privrl.audit import audit_linucb_agent, audit_psrl_agent, audit_ucrl_vtr_agent

    for audit in (audit_ucrl_vtr_agent, audit_linucb_agent, audit_psrl_agent):
        with pytest.raises(PrivacyParameterError, match=r"^K must be an integer >= 1, got "):
            audit(K=K, n_trials=60, n_fit=30)


def test_an_agent_audit_with_a_numpy_K_runs_as_with_an_int():
    from privrl.audit import audit_psrl_agent

    a = audit_psrl_agent(K=np.int64(3), n_trials=60, n_fit=30)
    b = audit_psrl_agent(K=3, n_trials=60, n_fit=30)
    assert (a.epsilon_lower_bound, a.effective_epsilon) == (b.epsilon_lower_bound, b.effective_epsilon)


@pytest.mark.parametrize("change", [{"sigma_B": 0.0}, {"sigma_B": -0.0}, {"sigma_g": 1e-300}])
def test_the_report_of_a_calibration_with_a_degenerate_scale_names_it(change):
    """A calibration's noise scale replaced by 0 (cal.replace(sigma_B=0.0), a what-if) made
    privacy_report_from_calibration divide by it in the family inventory (a bare
    ZeroDivisionError), and 1e-300 square past the doubles there (a bare OverflowError: 'Numerical
    result out of range'), before the plan's worst case refused either (hA's adversarial-input
    pass). The scales are checked, and the worst case computed, before the inventory."""
    from privrl.agents.ucrl_vtr.calibration import calibrate_ucrl_vtr
    from privrl.audit.report import privacy_report_from_calibration

    cal = calibrate_ucrl_vtr("jdp", 4.0, 1e-5, 2, 8, 2, 1.0, calibration="tight")
    with pytest.raises(PrivacyParameterError, match=r"^(cal\.sigma_B must be finite and > 0|the worst case)"):
        privacy_report_from_calibration("ucrl_vtr", cal.replace(**change))
    rep = privacy_report_from_calibration("ucrl_vtr", cal)
    assert rep["tight"]["budget"][0] == pytest.approx(4.0) and rep["mechanisms"][0]["sigma"] == cal.sigma_B

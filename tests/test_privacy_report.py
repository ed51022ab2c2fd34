"""Tests of privrl.audit.report: the privacy report of every agent family (paper argument vs
tight accountant), its text form, and the paper-vs-tight comparison used by the demo."""

from __future__ import annotations

import contextlib
import math

import pytest

from _helpers import calibration as c
from privrl.agents import UCRLVTR, UCRLVTRPlus
from privrl.audit.comparison import calibration_comparison, format_calibration_comparison
from privrl.audit.report import (
    format_privacy_report,
    plan_of,
    privacy_report,
    privacy_report_from_calibration,
    summarize_privacy_report,
)
from privrl.envs import RandomLinearMDP, RandomLinearMixtureMDP
from privrl.experiment.runner import run
from privrl.privacy import JointDP, LocalDP, NonPrivate
from privrl.privacy import accounting as a
from privrl.privacy import mechanisms as m

REPORT_KEYS = {
    "algorithm",
    "title",
    "agent",
    "model",
    "pure",
    "calibration",
    "target",
    "neighbouring",
    "mechanisms",
    "paper",
    "tight",
    "within_target",
    "sampler",
}
MECH_KEYS = {
    "name",
    "paper",
    "site",
    "statistic",
    "instances",
    "draws_per_user",
    "draws_per_user_paper",
    "total_draws_per_user",
    "norm",
    "sensitivity",
    "sensitivity_source",
    "enforced_by",
    "noise",
    "scale",
    "sym_divisor",
    "counted_as",
}


@pytest.fixture(scope="module")
def mix():
    return RandomLinearMixtureMDP(S=6, A=3, d=3, H=4, seed=0)


@pytest.fixture(scope="module")
def lin():
    return RandomLinearMDP(S=6, A=3, d=3, H=4, seed=0)


def _lsvi():
    mod = pytest.importorskip("privrl.agents.lsvi_ucb.agent")
    return mod.LSVIUCB


def _check_report(rep, target_eps, target_delta, calibration):
    assert set(rep) >= REPORT_KEYS
    assert rep["calibration"] == calibration
    assert rep["target"] == {"epsilon": target_eps, "delta": target_delta}
    assert rep["mechanisms"]
    for mech in rep["mechanisms"]:
        assert set(mech) >= MECH_KEYS
        assert mech["draws_per_user"] <= mech["draws_per_user_paper"]
        assert mech["total_draws_per_user"] == mech["instances"] * mech["draws_per_user"]
        assert mech["scale"] > 0 and mech["sensitivity"] > 0
    te, td = rep["tight"]["budget"]
    assert te <= target_eps * (1 + 1e-9) and td <= target_delta
    assert rep["within_target"]["tight"] is True
    if calibration == "paper":
        pe, pd = rep["paper"]["budget"]
        assert pe <= target_eps * (1 + 1e-9) and pd <= target_delta * (1 + 1e-9)
        # the paper's Gaussian argument is for the continuous law: with the (default) discrete
        # Gaussian only the tight (zCDP) accountant certifies the release
        discrete_gaussian = rep["sampler"]["name"] == "discrete" and target_delta > 0
        assert rep["within_target"]["paper"] is (not discrete_gaussian)
    text = format_privacy_report(rep)
    assert "(a) paper's composition argument" in text and "(b) tight accountant" in text
    for mech in rep["mechanisms"]:
        assert mech["name"] in text


# ============================================================================================
# Every agent family
# ============================================================================================
@pytest.mark.parametrize(
    "model",
    [
        JointDP(1.0, 1e-5, calibration="paper"),
        JointDP(1.0, 1e-5, calibration="tight"),
        LocalDP(1.0, 1e-5, calibration="paper"),
        LocalDP(1.0, 1e-5, calibration="tight"),
        JointDP(0.5, calibration="paper"),
        JointDP(0.5, calibration="tight"),
        LocalDP(0.5, calibration="paper"),
        JointDP(4.0, 1e-6, calibration="paper"),
    ],
)
@pytest.mark.parametrize("agent_cls", [UCRLVTR, UCRLVTRPlus])
def test_ucrl_reports(mix, agent_cls, model):
    agent = agent_cls(mix, model, episodes=200, seed=1)
    rep = agent.privacy_report()
    _check_report(rep, model.epsilon, model.delta, model.calibration)
    assert rep == privacy_report(agent)
    n_fam = 2 if agent_cls is UCRLVTR else 4
    assert len(rep["mechanisms"]) == n_fam
    for mech in rep["mechanisms"]:
        assert mech["instances"] == mix.H
        if model.kind == "jdp":
            # K = 200: a user is in floor(log2 200) + 1 = 8 released nodes (K0 = 9)
            assert mech["draws_per_user"] == 8 and mech["draws_per_user_paper"] == 9
            assert "tree" in mech["site"]
        else:
            assert mech["draws_per_user"] == 1 and "LocalRandomizer" in mech["site"]
        assert "SensitivityGuard(mode='clip')" in mech["enforced_by"]
        assert mech["noise"] == ("laplace" if model.pure else "gaussian")
    if model.calibration == "tight" and not (model.pure and model.kind == "ldp"):
        # the paper's tools cannot certify the smaller noise
        assert rep["within_target"]["paper"] is False


def test_ucrl_vtr_paper_chain_hand_values():
    # Cor. 1 at H = 10, K = 1e4, eps = 1, delta = 1e-5, paper sigma: the node budget recovered
    # from sigma is the paper's eps0 = 1 / (16 sqrt(H K0 log(8H/delta) log(4/delta)))
    #   = 1 / (16 sqrt(10 * 15 * 15.894952 * 12.899220)) = 1 / (16 * 175.40...) = 3.56388e-4
    cal = c.calibrate_ucrl_vtr("jdp", 1.0, 1e-5, 10, 10_000, 10, 1.0, sampler="float", calibration="paper")
    rep = privacy_report_from_calibration("ucrl_vtr", cal)
    node = rep["paper"]["steps"][0]
    assert node["epsilon"] == pytest.approx(3.56388e-4, rel=1e-5)
    assert node["delta"] == pytest.approx(1e-5 / (8 * 10 * 15), rel=1e-12)
    # the step's label names the formula it printed: delta / (4 F H K0) with F = 2 families
    assert "delta/(4F H K0)" in node["tool"]
    assert node["epsilon"] == pytest.approx(cal.node_budget[0], rel=1e-12)
    # tree (first form of advanced composition over K0 = 15 nodes, delta' = delta/(8H)):
    #   sqrt(2 * 15 * log(8e6)) e0 + 15 e0 (e^e0 - 1) = 21.8376 * 3.56388e-4 + 1.9e-6 = 7.7845e-3
    assert rep["paper"]["steps"][1]["epsilon"] == pytest.approx(7.7845e-3, rel=1e-4)
    # the argument closes well below the target (the second form of advanced composition halves
    # eps at each of its two uses): total = 0.2513
    assert rep["paper"]["budget"][0] == pytest.approx(0.25128, rel=1e-4)
    assert rep["paper"]["budget"][1] == pytest.approx(1e-5, rel=1e-9)
    # tight accountant on the same release: per node the joint worst case of the (matrix, vector)
    # pair is 2 H^2 = 200 (X' = -X), 14 nodes x H = 10 steps: mu = sqrt(140) * 200 / sigma
    mu = math.sqrt(140) * 200 / cal.sigma_B
    assert rep["tight"]["mu"] == pytest.approx(mu, rel=1e-12)
    assert rep["tight"]["epsilon_at_target_delta"] == pytest.approx(a.gaussian_epsilon(mu, 1e-5))


def test_ldp_paper_chain_is_exactly_the_target():
    # Cor. 2: 2H releases at (eps/(2H), delta/(2H)) compose to exactly (eps, delta)
    cal = c.calibrate_ucrl_vtr("ldp", 1.0, 1e-5, 10, 1000, 5, 1.0, sampler="float", calibration="paper")
    rep = privacy_report_from_calibration("ucrl_vtr", cal)
    assert rep["paper"]["budget"][0] == pytest.approx(1.0, rel=1e-12)
    assert rep["paper"]["budget"][1] == pytest.approx(1e-5, rel=1e-12)
    # tight accountant: the same noise spends only eps = 0.0871 (per step the joint worst case
    # 2 H^2 = 200 over H = 10 steps: mu = 200 sqrt(10) / sigma_B = 0.02868)
    mu = 200 * math.sqrt(10) / cal.sigma_B
    assert rep["tight"]["mu"] == pytest.approx(mu, rel=1e-12)
    assert rep["tight"]["budget"][0] == pytest.approx(a.gaussian_epsilon(mu, 1e-5), rel=1e-12)
    assert rep["tight"]["budget"][0] == pytest.approx(0.08712, rel=1e-3)


def test_pure_report_counts():
    # pure JDP: paper counts 2 H K0 nodes at eps/(2 H K0) each -> exactly eps; exact count
    # 2 H n with n = 14 < K0 = 15 -> 14/15 eps
    cal = c.calibrate_ucrl_vtr("jdp", 1.0, 0.0, 10, 10_000, 10, 1.0, sampler="float", calibration="paper")
    rep = privacy_report_from_calibration("ucrl_vtr", cal)
    assert rep["paper"]["budget"] == (pytest.approx(1.0, rel=1e-12), 0.0)
    assert rep["tight"]["budget"] == (pytest.approx(14 / 15, rel=1e-12), 0.0)
    assert rep["mechanisms"][0]["norm"].startswith("L1")


@pytest.mark.parametrize(
    "model",
    [
        JointDP(1.0, 1e-5, calibration="paper"),
        JointDP(1.0, 1e-5, calibration="tight"),
        JointDP(1.0, calibration="paper"),
        JointDP(1.0, calibration="tight"),
    ],
)
def test_lsvi_reports(lin, model):
    LSVIUCB = _lsvi()
    agent = LSVIUCB(lin, model, episodes=300, seed=1)
    rep = agent.privacy_report()
    _check_report(rep, model.epsilon, model.delta, model.calibration)
    lam, u = rep["mechanisms"]
    B = agent.calibration.B
    R = c.lsvi_ucb_releases(300, B)
    assert u["draws_per_user"] == R and u["draws_per_user_paper"] == B
    assert lam["draws_per_user"] == a.tree_nodes_per_leaf(R)
    assert lam["draws_per_user_paper"] == agent.calibration.B0
    if not model.pure:
        assert u["sensitivity"] == 2 * (lin.H + 1) and lam["sensitivity"] == 2.0


@pytest.mark.parametrize("sampler", ["discrete", "float"])
def test_verdict_names_why_a_paper_chain_within_the_target_does_not_certify(lin, sampler):
    """The paper calibration at eps 10: the appendix's chain gives an eps well below the target; under
    the discrete sampler it still does not certify (made for the continuous Gaussian), and the verdict
    says so rather than that the chain would need more than the target."""
    LSVIUCB = _lsvi()
    model = JointDP(10.0, 1e-6, calibration="paper", mechanism="tree", sampler=sampler)
    rep = LSVIUCB(lin, model, batches=9, episodes=500, seed=0).privacy_report()
    eps_p, dlt_p = rep["paper"]["budget"]
    assert eps_p < 10.0 and dlt_p <= 1e-6 * (1 + 1e-9) and rep["paper"]["in_tool_regime"]
    verdict = str(rep).split("verdict: ")[1].splitlines()[0]
    assert rep["within_target"]["paper"] is (sampler == "float")
    if sampler == "float":
        assert "the paper's argument certifies it too" in verdict
    else:
        assert "would need" not in verdict and "not the discrete sampler in use" in verdict


def test_lsvi_agent_releases_match_the_count(lin):
    LSVIUCB = _lsvi()
    agent = LSVIUCB(lin, JointDP(1.0, 1e-5, calibration="tight"), episodes=100, seed=3)
    run(agent, lin, seed=4)
    R = c.lsvi_ucb_releases(100, agent.calibration.B)
    assert agent._core.releases == R
    assert max(agent._core.nodes_history) <= a.tree_nodes_per_leaf(R)


def test_non_private_report(mix):
    rep = UCRLVTR(mix, NonPrivate(calibration="paper"), episodes=10).privacy_report()
    assert rep["mechanisms"] == [] and rep["tight"]["budget"][0] == math.inf
    assert "nothing is private" in format_privacy_report(rep)
    assert summarize_privacy_report(rep)["tight"]["epsilon"] == "inf"


def test_summary_is_json_ready(mix):
    import json

    rep = UCRLVTRPlus(mix, JointDP(1.0, 1e-5, calibration="tight"), episodes=50).privacy_report()
    summ = json.loads(json.dumps(summarize_privacy_report(rep)))
    assert summ["calibration"] == "tight" and summ["within_target"]["tight"] is True
    assert summ["tight"]["epsilon"] == pytest.approx(1.0, rel=1e-9)
    assert [x["name"] for x in summ["mechanisms"]] == ["Lambda^", "u^", "Lambda~", "u~"]
    assert summ["mechanisms"][0]["draws_per_user"] == 6  # K = 50: floor(log2 50) + 1


def test_report_of_unknown_agent():
    class Dummy:
        name = "other"
        calibration = None

    with pytest.raises(TypeError):
        privacy_report(Dummy())
    with pytest.raises(TypeError):
        privacy_report(object())
    with pytest.raises(ValueError):
        privacy_report_from_calibration("dqn", {})


@pytest.mark.parametrize("sampler", ["float", "discrete"])
def test_tight_agent_runs_and_reports(mix, sampler):
    agent = UCRLVTR(mix, JointDP(1.0, 1e-5, calibration="tight", sampler=sampler), episodes=64, seed=2)
    res = run(agent, mix, seed=3)
    assert agent.k == 64
    # 64 leaves: 7 nodes per user and tree; joint worst case 2 H^2 per node, H = 4 steps
    if sampler == "float":  # the exact Gaussian curve
        target = a.gaussian_mu(1.0, 1e-5)
    else:  # the continuous curve by domination (a.discrete_gaussian_mu), less the rounding of a
        # leaf in its 7 nodes of the 2H trees (d = 3, grid 2^-24); the replaced draws have
        # sum 1/s^2 = rounding^2 (a.discrete_gaussian_draws)
        r_matrix, r_vector = 2.0**-24 * (math.sqrt(2) / 2) * 3, 2.0**-24 * math.sqrt(3)
        rounding = math.sqrt(4 * 7 * (r_matrix**2 + r_vector**2))
        direct = a.discrete_gaussian_mu(1.0, 1e-5, rounding**2, rounding**2 * 4.0**25, 4.0**24 / 32)
        target = direct - rounding
    assert agent.calibration.sigma_B == pytest.approx(2 * 16 * math.sqrt(4 * 7) / target, rel=1e-9)
    rep = agent.privacy_report()
    assert rep["tight"]["budget"][0] == pytest.approx(1.0, rel=1e-9)
    assert rep["sampler"]["name"] == sampler
    assert res is not None


# ============================================================================================
# Paper vs tight side by side
# ============================================================================================
def test_calibration_comparison_rows():
    cmp = calibration_comparison("ucrl_vtr", "jdp", 1.0, 1e-5, 10, 10_000, 10, sampler="float")
    rows = {r["quantity"]: r for r in cmp["rows"]}
    assert rows["sigma_B"]["ratio"] == pytest.approx(394.894, rel=1e-4)
    # the default (discrete) tight noise: the plan's mu target is the continuous curve by
    # domination (a.discrete_gaussian_mu) less the rounding
    from privrl.privacy.plans import plan_rounding_mu

    disc = calibration_comparison("ucrl_vtr", "jdp", 1.0, 1e-5, 10, 10_000, 10)
    plan = plan_of("ucrl_vtr", disc["tight"])
    assert plan.sampler == "discrete" and "sampler=discrete" in format_calibration_comparison(disc)
    r = plan_rounding_mu(plan)
    shrink = (a.discrete_gaussian_mu(1.0, 1e-5, *a.discrete_gaussian_draws(r, 24)) - r) / a.gaussian_mu(
        1.0, 1e-5
    )
    assert 0.9999 < shrink < 1.0  # zCDP's shrink was 0.922
    assert disc["rows"][0]["ratio"] == pytest.approx(rows["sigma_B"]["ratio"] * shrink, rel=1e-9)
    assert rows["beta"]["tight"] < rows["beta"]["paper"]
    spent = rows["eps spent (tight accountant)"]
    assert spent["tight"] == pytest.approx(1.0, rel=1e-9) and spent["paper"] < 0.01
    text = format_calibration_comparison(cmp)
    assert "sigma_B" in text and "394.9" in text
    for alg, kind in (("ucrl_vtr", "ldp"), ("ucrl_vtr_plus", "jdp"), ("lsvi_ucb", "jdp")):
        cmp = calibration_comparison(alg, kind, 1.0, 1e-5, 10, 10_000, 10)
        for r in cmp["rows"]:
            if r["ratio"] is not None:
                assert r["ratio"] >= 1.0


def test_dp_tools_completed():
    # App. "Tree-based method", forward form: m e0^2 + e0 sqrt(2 m log(1/delta')), m d0 + delta'
    # n = 8 leaves -> m = 4; e0 = 0.1, d0 = 1e-6, delta' = 1e-5:
    #   4 * 0.01 + 0.1 sqrt(8 * 11.512925) = 0.04 + 0.1 sqrt(92.103404) = 0.04 + 0.9597052
    #   = 0.9997052 ; delta = 4e-6 + 1e-5 = 1.4e-5
    e, d = m.tree_composition(0.1, 1e-6, 8, 1e-5)
    assert e == pytest.approx(0.9997052, rel=1e-6) and d == pytest.approx(1.4e-5)
    # it is below the Dwork-Roth form (m e0 (e^e0 - 1) > m e0^2)
    assert e < m.advanced_composition(0.1, 1e-6, 4, 1e-5)[0]
    # inverses of the mechanisms' calibration
    s = m.gaussian_sigma(3.0, 0.4, 1e-6)
    assert m.gaussian_mechanism_epsilon(3.0, s, 1e-6) == pytest.approx(0.4, rel=1e-14)
    assert m.laplace_mechanism_epsilon(3.0, m.laplace_scale(3.0, 0.25)) == pytest.approx(0.25)
    assert m.post_processing((0.3, 1e-6)) == (0.3, 1e-6)
    assert m.billboard_jdp((0.3, 1e-6)) == (0.3, 1e-6)
    with pytest.raises(ValueError):
        m.post_processing((0.3, 2.0))
    with pytest.raises(ValueError):
        m.billboard_jdp("eps")


@pytest.mark.parametrize("mechanism", ["honaker", "factorization", "blt"])
@pytest.mark.parametrize("calibration", ["paper", "tight"])
def test_reports_of_other_continual_mechanisms(mix, lin, mechanism, calibration):
    # the server's prefix sums through another mechanism at the same (eps, delta): the tight
    # accountant uses its L2 multiplier m (mu = Delta m / sigma per user and mechanism), the
    # paper's argument the binary tree with the same mu
    model = JointDP(1.0, 1e-5, calibration=calibration, mechanism=mechanism)
    agents = [UCRLVTR(mix, model, episodes=300, seed=0)]
    with contextlib.suppress(pytest.skip.Exception):
        agents.append(_lsvi()(lin, model, episodes=300, seed=0))
    for agent in agents:
        rep = agent.privacy_report()
        tree_mech = rep["mechanisms"][0]
        assert tree_mech["mechanism"] == mechanism and tree_mech["draws_per_user"] is None
        assert tree_mech["l2_multiplier"] == agent.calibration.mechanism_l2_multiplier
        assert rep["within_target"]["tight"] is True
        assert rep["tight"]["budget"][0] <= 1.0 * (1 + 1e-9)
        if calibration == "paper":  # the paper's Gaussian argument: for the continuous law only
            assert rep["within_target"]["paper"] is (rep["sampler"]["name"] == "float")
        assert mechanism in format_privacy_report(rep)


@pytest.mark.parametrize("eps", [90.0, 1000.0])
def test_report_at_large_epsilon(eps):
    """At a large target the tight noise is too small for the paper's argument to certify anything:
    the report says so (paper epsilon inf) instead of raising, and the tight accountant still gives
    the target."""
    from privrl.agents import LSVIUCB
    from privrl.envs import RiverSwimMixture

    river, linear = RiverSwimMixture(S=6, H=20), RandomLinearMDP(S=20, A=3, d=4, H=5, seed=0)
    for cls, env in ((UCRLVTR, river), (UCRLVTRPlus, river), (LSVIUCB, linear)):
        rep = cls(env, JointDP(eps, 1e-5, calibration="tight"), episodes=1000).privacy_report()
        assert math.isinf(rep["paper"]["budget"][0]) and not rep["within_target"]["paper"]
        assert rep["tight"]["budget"][0] == pytest.approx(eps, rel=1e-6) and rep["within_target"]["tight"]


@pytest.mark.slow
@pytest.mark.parametrize("eps", [1e-3, 1.0, 90.0, 1000.0, 1e6])
def test_report_at_any_epsilon_on_every_agent_and_calibration(eps):
    """Issue 13: the report works at every epsilon for every agent x calibration. The tight and
    practical noise meet their target exactly (no PrivacyWarning: warnings are errors here). The
    paper's LDP noise comes from the classical Gaussian mechanism, sigma = Delta sqrt(2 log(1.25 /
    delta)) / eps, proven for eps < 1 only: at eps = 1e6 the tight accountant finds it far above
    the target, and the agent is refused at construction (it warned at its report before)."""
    from privrl.agents import LSVIUCB
    from privrl.envs import RiverSwimMixture
    from privrl.exceptions import PrivacyParameterError

    river, linear = RiverSwimMixture(S=6, H=20), RandomLinearMDP(S=20, A=3, d=4, H=5, seed=0)
    for calibration in ("paper", "tight", "practical"):
        for cls, env, models in (
            (UCRLVTR, river, (JointDP, LocalDP)),
            (UCRLVTRPlus, river, (JointDP, LocalDP)),
            (LSVIUCB, linear, (JointDP,)),
        ):
            for model in models:
                privacy = model(eps, 1e-5, calibration=calibration)
                if calibration == "paper" and model is LocalDP and eps == 1e6:
                    with pytest.raises(PrivacyParameterError, match=r"only .* by the tight accountant"):
                        cls(env, privacy, episodes=1000)
                    continue
                rep = cls(env, privacy, episodes=1000).privacy_report()
                assert rep["target"]["epsilon"] == eps and rep["within_target"]["tight"]
                assert format_privacy_report(rep)


def test_paper_noise_that_does_not_certify_the_target_is_refused():
    """The paper's LDP sigma (classical Gaussian mechanism, eps < 1 only) at a large epsilon makes
    LinUCB's releases (5264, 1e-5)-DP for a target of (1000, 1e-5): the agent was built and ran, and
    only its privacy report warned. It is refused at construction now; below the point where the
    formula stops covering the target (eps 121 here) it is built and certified, and the JDP paper
    noise (far above the target's need) is built at any epsilon."""
    import numpy as np

    from privrl.agents import LinUCB
    from privrl.envs import ContextualBandit
    from privrl.exceptions import PrivacyParameterError

    rng = np.random.default_rng(0)
    ctx = rng.normal(size=(10, 3))
    bandit = ContextualBandit(ctx / np.linalg.norm(ctx, axis=1, keepdims=True), rng.uniform(size=(10, 4)))
    with pytest.raises(
        PrivacyParameterError, match=r"\(5264\.11, 1e-05\)-DP .* above the target \(1000, 1e-05\)"
    ):
        LinUCB(bandit, LocalDP(1000.0, 1e-5, calibration="paper"), episodes=1000, seed=0)
    assert LinUCB(bandit, LocalDP(100.0, 1e-5, calibration="paper"), episodes=1000).privacy_report()[
        "within_target"
    ]["tight"]
    assert LinUCB(bandit, JointDP(1e4, 1e-5, calibration="paper"), episodes=1000).privacy_report()[
        "within_target"
    ]["tight"]
    # the other calibrations take their noise from the accountant: built at the same target
    assert LinUCB(bandit, LocalDP(1000.0, 1e-5, calibration="tight"), episodes=1000).privacy_report()[
        "within_target"
    ]["tight"]


def test_report_warns_when_the_noise_is_below_the_target():
    """A calibration whose sigma was lowered by hand: the tight accountant finds the release above
    its target and the report says so (the noise moves the report). The paper's JDP noise here
    gives eps = 0.0011 for a target of 1, so it takes a 1e4 cut to overrun it."""
    from privrl.envs import RiverSwimMixture
    from privrl.exceptions import PrivacyWarning

    agent = UCRLVTR(RiverSwimMixture(S=6, H=20), JointDP(1.0, 1e-5, calibration="paper"), episodes=1000)
    agent.calibration = agent.calibration.replace(sigma_B=agent.calibration.sigma_B / 1e4)
    with pytest.warns(PrivacyWarning, match="above the target"):
        rep = agent.privacy_report()
    assert not rep["within_target"]["tight"]


def test_report_labels_what_the_guarantee_does_not_cover():
    """Issue 14, item 4: the report (as the manifest) names the simulation-only outputs."""
    from privrl.envs import RiverSwimMixture
    from privrl.experiment.results import SIMULATION_ONLY

    rep = UCRLVTR(
        RiverSwimMixture(S=4, H=3), JointDP(1.0, 1e-5, calibration="paper"), episodes=10
    ).privacy_report()
    assert rep["outside_guarantee"] is SIMULATION_ONLY and "clip_count" in SIMULATION_ONLY["outputs"]
    assert "not covered: regret" in format_privacy_report(rep) and "NOT private" in format_privacy_report(rep)


@pytest.mark.parametrize("agent_cls", [UCRLVTR, UCRLVTRPlus])
def test_verdict_names_why_the_paper_chain_does_not_certify(agent_cls):
    """calibration="paper" on the default discrete sampler: the chain's own figure is below the
    target, and it is refused only because it is made for the continuous Gaussian. The verdict
    said "it would need eps = 0.25: the noise is calibrated for the exact accountant", which is
    neither (the noise is the paper's, 0.25 < 1); sampler="float" lets the chain certify it."""
    from privrl.audit.report import verdict_words
    from privrl.envs import RiverSwimMixture

    env = RiverSwimMixture(S=4, H=3)
    rep = agent_cls(env, JointDP(1.0, 1e-5, calibration="paper"), episodes=100).privacy_report()
    assert rep["paper"]["budget"][0] < 1.0 and rep["paper"]["in_tool_regime"]
    assert not rep["within_target"]["paper"]
    words = verdict_words(rep)
    assert "not the discrete sampler in use" in words and "calibrated for the exact accountant" not in words
    float_rep = agent_cls(
        env, JointDP(1.0, 1e-5, calibration="paper", sampler="float"), episodes=100
    ).privacy_report()
    assert float_rep["within_target"]["paper"] and "certifies it too" in verdict_words(float_rep)
    # noise from the accountant: the chain's figure is far above the target, the old words stand
    tight = agent_cls(env, JointDP(1.0, 1e-5, calibration="tight"), episodes=100).privacy_report()
    assert tight["paper"]["budget"][0] > 1.0 and "calibrated for the exact accountant" in verdict_words(tight)


@pytest.mark.parametrize("mechanism", ["blt", "tree"])
def test_paper_chain_past_overflow_certifies_nothing(mechanism):
    """The paper's chain read on noise calibrated for the tight accountant (JDP LSVI-UCB, eps = 1):
    its nested advanced compositions blow up (k eps (e^eps - 1) at every level), and the report
    printed that figure, eps = 6e+32 on BLT (1.5e+91 at other sizes), as the paper argument's
    (eps, delta). Past log(DBL_MAX) = 709.8 the bound constrains no event of representable
    probability: the report gives eps = inf and says the chain certifies nothing; the tight
    accountant certifies the target. A finite figure is never above that limit."""
    from privrl.agents import LSVIUCB
    from privrl.audit.paper_argument import VACUOUS_EPSILON
    from privrl.audit.report import verdict_words

    env = RandomLinearMDP(S=20, A=3, d=10, H=20, seed=0)
    rep = LSVIUCB(env, JointDP(1.0, 1e-5, mechanism=mechanism), episodes=10_000).privacy_report()
    assert math.isinf(rep["paper"]["budget"][0]) and not rep["within_target"]["paper"]
    finite = [s["epsilon"] for s in rep["paper"]["steps"] if not math.isinf(s["epsilon"])]
    assert finite and max(finite) <= VACUOUS_EPSILON
    assert rep["tight"]["budget"][0] == pytest.approx(1.0, rel=1e-6) and rep["within_target"]["tight"]
    text = format_privacy_report(rep)
    assert "e+" not in text.split("(a) paper's")[1].split("(b) tight")[0]  # no astronomical figure
    assert "[vacuous:" in text and "certifies nothing for this noise" in verdict_words(rep)
    # the paper's own noise is still certified by its own chain, with a finite figure
    paper = LSVIUCB(
        env, JointDP(1.0, 1e-5, calibration="paper", mechanism=mechanism, sampler="float"), episodes=10_000
    ).privacy_report()
    assert paper["paper"]["budget"][0] < 1.0 and paper["within_target"]["paper"]
    assert "[vacuous:" not in format_privacy_report(paper)


def test_report_names_the_angle_of_the_worst_pair():
    # The joint worst case's line printed the two neighbours' norms and values only, "||x|| = 20,
    # y = 20 vs ||x'|| = 20, y' = 20": two users that look equal. What separates them is the angle
    # (docs/privacy.md: for Alg. 1 the worst pair is x' = -x, the matrix unmoved, the vector by 2 H^2)
    from privrl.envs import RiverSwimMixture

    agent = UCRLVTR(RiverSwimMixture(S=4, H=3), JointDP(1.0, 1e-5, calibration="tight"), episodes=10)
    rep = agent.privacy_report()
    s = rep["statistics"][0]
    x, xp = s["worst_x"], s["worst_x_prime"]
    cos = sum(u * v for u, v in zip(x, xp, strict=True)) / (math.hypot(*x) * math.hypot(*xp))
    assert cos == pytest.approx(-1.0)  # x' = -x, as the doc derives
    assert "||x'|| = 3, y' = 3, cos(x, x') = -1" in format_privacy_report(rep)


def test_the_report_refuses_guards_looser_than_its_plan_or_not_guards():
    """privacy_report_from_calibration(guards=...) printed any guard as the enforcement: a guard of
    ||x|| <= 50, y in [0, 50] (another H's agent) beside the x_bound 5 the accounting used was
    reported within target (1.0, 1e-5); a non-guard failed with a bare AttributeError ('str' object
    has no attribute 'mode'); a name of no statistic was dropped. Each is refused; the agent's own
    guards and a tighter one are still described."""
    from privrl.agents import SensitivityGuard
    from privrl.envs import RiverSwimMixture
    from privrl.exceptions import PrivacyParameterError

    ag = UCRLVTR(RiverSwimMixture(S=4, H=5), JointDP(1.0, 1e-5), episodes=100, seed=0)
    (name,) = ag.guards

    def report(guards):
        return privacy_report_from_calibration("ucrl_vtr", ag.calibration, guards=guards)

    with pytest.raises(PrivacyParameterError, match=r"enforces \|\|x\|\| <= 50, y in \[0, 50\], looser than"):
        report({name: SensitivityGuard(x_bound=50.0, y_low=0.0, y_high=50.0)})
    with pytest.raises(PrivacyParameterError, match=r"y in \[-1, 5\], looser than"):
        report({name: SensitivityGuard(x_bound=5.0, y_low=-1.0, y_high=5.0)})
    with pytest.raises(TypeError, match=r"must be a SensitivityGuard, got str"):
        report({name: "clip"})
    with pytest.raises(PrivacyParameterError, match=r"the plan has no statistic 'x'"):
        report({"x": ag.guards[name]})
    assert report(ag.guards)["within_target"]["tight"]
    tight = report({name: SensitivityGuard(x_bound=1.0, y_low=0.0, y_high=5.0)})
    assert "<= 1," in tight["mechanisms"][0]["enforced_by"]


def test_the_report_of_a_calibration_on_another_lattice_reads_that_lattice():
    """A calibration made from a plan on a coarser lattice (grid_bits=6: its tight sigma_B covers
    the rounding to sigma 2^-6) was reported on the default 2^-24 lattice (plan_of built the
    default plan): eps 3.09 reported for a calibration that spends its whole 4.0, and a plan of
    another lattice passed with it was accepted. plan_of now reads the calibration's grid_bits and
    a given plan must have them."""
    from dataclasses import replace

    from privrl.agents.ucrl_vtr import calibration as u
    from privrl.audit.report import privacy_report_from_calibration
    from privrl.exceptions import PrivacyParameterError

    own = u.release_plan("jdp", False, 2, 8, 2, None, "discrete")
    coarse = replace(own, grid_bits=6)
    cal = u.calibrate_ucrl_vtr("jdp", 4.0, 1e-5, 2, 8, 2, 1.0, calibration="tight", plan=coarse)
    assert cal.grid_bits == 6
    spent = privacy_report_from_calibration("ucrl_vtr", cal, plan=coarse)["tight"]["epsilon_at_target_delta"]
    assert spent == pytest.approx(4.0, rel=1e-9)  # the tight calibration spends its target
    assert privacy_report_from_calibration("ucrl_vtr", cal)["tight"]["epsilon_at_target_delta"] == spent
    with pytest.raises(PrivacyParameterError, match=r"plan grid_bits 24 \(calibration: 6\)"):
        privacy_report_from_calibration("ucrl_vtr", cal, plan=own)

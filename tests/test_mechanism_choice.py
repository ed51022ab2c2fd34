"""JointDP(mechanism=...): the rescaled noise keeps the (eps, delta) guarantee, the noise bounds
follow the mechanism's exact variance, and every JDP agent runs on every mechanism."""
import math

import numpy as np
import pytest

from privrl import kernels as K
from privrl.agents import LSVIUCB, UCRLVTR, UCRLVTRPlus
from privrl.envs.linear import RandomLinearMDP
from privrl.envs.mixture import RandomLinearMixtureMDP
from privrl.exceptions import PrivacyParameterError
from privrl.privacy import calibration as C
from privrl.privacy.accounting import PrivacyAccountant, tree_nodes_per_leaf
from privrl.privacy.continual import (MECHANISMS, adapt_calibration, mechanism_sigma_factor,
                                      reference_tree_nodes)
from privrl.privacy.models import JointDP, LocalDP

OTHERS = ["honaker", "factorization", "blt"]


def test_jointdp_mechanism_field():
    assert JointDP(1.0, 1e-5).mechanism == "tree"
    p = JointDP(1.0, 1e-5, mechanism="factorization")
    assert p.label == "JDP(eps=1, delta=1e-05, factorization)"
    assert "mechanism" not in p.as_kwargs()  # calibrate_* stay mechanism-agnostic
    with pytest.raises(PrivacyParameterError):
        JointDP(1.0, 1e-5, mechanism="cauchy")
    with pytest.raises(PrivacyParameterError):
        JointDP(1.0, 1e-5, mechanism=None)
    with pytest.raises(PrivacyParameterError):
        JointDP(1.0, 0.0, mechanism="honaker")  # pure JDP keeps the tree
    with pytest.raises(TypeError):
        LocalDP(1.0, 1e-5, mechanism="honaker")
    assert set(MECHANISMS) == set(K.MECHANISMS)


@pytest.mark.parametrize("calibration", ["paper", "tight"])
@pytest.mark.parametrize("K_", [1, 7, 64, 1000])
def test_sigma_factor_is_multiplier_ratio(calibration, K_):
    n_ref = reference_tree_nodes(K_, calibration)
    assert n_ref == (tree_nodes_per_leaf(K_) if calibration == "tight" else math.ceil(math.log2(K_)) + 1)
    assert mechanism_sigma_factor("tree", K_, calibration) == 1.0
    for m in OTHERS:
        prof = K.mechanism_profile(m, K_)
        assert mechanism_sigma_factor(m, K_, calibration) == pytest.approx(prof.l2_multiplier / math.sqrt(n_ref))


@pytest.mark.parametrize("calibration", ["paper", "tight"])
@pytest.mark.parametrize("mech", OTHERS)
def test_same_privacy_curve_as_the_tree(calibration, mech):
    """Per user, the 2H mechanisms of JDP UCRL-VTR compose to one Gaussian; with the rescaled
    sigma its mu equals the tree's (for the node count the calibration used): same (eps, delta)."""
    H, K_, d, eps, dlt = 3, 500, 4, 1.0, 1e-5
    cal = C.calibrate_ucrl_vtr("jdp", eps, dlt, H, K_, d, 1.0, calibration=calibration)
    new = adapt_calibration(cal, mech, "ucrl_vtr")
    sens = C.ucrl_vtr_l2_sensitivity(H)
    n_ref = reference_tree_nodes(K_, calibration)
    tree = PrivacyAccountant().add_gaussian(sens, cal["sigma_B"], 2 * H * n_ref)
    m = K.make_prefix_mechanism(mech, 1, K_, noise="none", seed=0)
    other = PrivacyAccountant().add_gaussian(sens * m.sensitivity_multiplier, new["sigma_B"], 2 * H)
    assert other.mu == pytest.approx(tree.mu, rel=1e-12)
    assert other.epsilon(dlt) == pytest.approx(tree.epsilon(dlt), rel=1e-9)
    if calibration == "tight":
        assert other.epsilon(dlt) <= eps * (1 + 1e-9)


@pytest.mark.parametrize("mech", OTHERS)
def test_noise_bounds_follow_the_variance(mech):
    H, K_, d = 3, 500, 4
    cal = C.calibrate_ucrl_vtr("jdp", 1.0, 1e-5, H, K_, d, 1.0)
    new = adapt_calibration(cal, mech, "ucrl_vtr")
    prof = K.mechanism_profile(mech, K_)
    # Upsilon is linear in (entry std of the released noise): sigma sqrt(K0) -> sigma_M sqrt(max v).
    want = cal["Upsilon"] * new["sigma_B"] * math.sqrt(prof.max_variance_factor) / (cal["sigma_B"] * math.sqrt(cal["K0"]))
    assert new["Upsilon"] == pytest.approx(want)
    assert new["Upsilon"] == pytest.approx(C.ucrl_vtr_upsilon(new["sigma_B"], 1, d, K_, H, cal["p"])
                                           * math.sqrt(prof.max_variance_factor))
    assert new["shift"] == pytest.approx(2 * new["Upsilon"])
    assert new["beta"] == pytest.approx(C.ucrl_vtr_beta(cal["lam"], new["Upsilon"], 1.0, H, K_, d, cal["p"]))
    assert new["beta"] >= new["beta_condition"]
    assert new["Upsilon"] < cal["Upsilon"]  # every alternative releases less noise than the tree


def test_alg3_and_alg2_adaptation():
    H, K_, d = 3, 400, 4
    cal = C.calibrate_ucrl_vtr_plus("jdp", 1.0, 1e-5, H, K_, d, 1.0)
    new = adapt_calibration(cal, "factorization", "ucrl_vtr_plus")
    f = new["sigma_factor"]
    for k in ("sigma_B1", "sigma_B2", "sigma_f", "sigma_g"):
        assert new[k] == pytest.approx(cal[k] * f)
    assert new["beta_hat"] >= new["beta_hat_condition"] and new["beta_tilde"] >= new["beta_tilde_condition"]
    lcal = C.calibrate_lsvi_ucb("jdp", 1.0, 1e-5, H, 4000, d)
    lnew = adapt_calibration(lcal, "factorization", "lsvi_ucb")
    assert lnew["sigma_u"] == lcal["sigma_u"] and lnew["C"] == lcal["C"]  # u~ is not a tree
    assert lnew["sigma_Lambda"] == pytest.approx(lcal["sigma_Lambda"] * lnew["sigma_factor"])
    assert lnew["mechanism_capacity"] == lcal["B"]
    # App. D's two requirements on c_K.
    assert lnew["c_K"] >= d * lnew["Upsilon"] - 1e-9
    assert lnew["C"] <= H * (lnew["lam"] + lnew["c_K"]) * (1 + 1e-12)
    # Non-JDP and tree calibrations come back unchanged.
    assert adapt_calibration(lcal, "tree", "lsvi_ucb")["sigma_Lambda"] == lcal["sigma_Lambda"]
    ldp = C.calibrate_ucrl_vtr("ldp", 1.0, 1e-5, H, K_, d, 1.0)
    assert adapt_calibration(ldp, "factorization", "ucrl_vtr")["sigma_B"] == ldp["sigma_B"]
    pure = C.calibrate_ucrl_vtr("jdp", 1.0, 0.0, H, K_, d, 1.0)
    with pytest.raises(PrivacyParameterError):
        adapt_calibration(pure, "honaker", "ucrl_vtr")
    with pytest.raises(ValueError):
        adapt_calibration(cal, "honaker", "lsvi")


@pytest.mark.parametrize("mech", MECHANISMS)
def test_agents_run_on_every_mechanism(mech):
    env = RandomLinearMixtureMDP(S=6, A=2, d=3, H=3, seed=1)
    lenv = RandomLinearMDP(S=6, A=2, d=3, H=3, seed=1)
    p = JointDP(1.0, 1e-5, mechanism=mech, calibration="tight")
    agents = [UCRLVTR(env, p, episodes=40, seed=0), UCRLVTRPlus(env, p, episodes=40, seed=0),
              LSVIUCB(lenv, p, episodes=40, seed=0)]
    for a in agents:
        e = lenv if isinstance(a, LSVIUCB) else env
        for k in range(25):
            a.observe(e.sample_episode(a.policy(), np.random.default_rng(k)))
        assert a.calibration["mechanism"] == mech
    vtr = agents[0]
    tree = vtr.server._gram_trees[0]
    assert tree.kind == mech and tree.steps == 25
    # Released noise variance per entry = sigma_M^2 v_M(t) (off-diagonal of (Z' + Z'^T)/sqrt 2).
    assert tree.release_variance()[0] == pytest.approx(vtr.calibration["sigma_B"] ** 2 * tree.variance_factor(25))
    lsvi = agents[2]
    assert lsvi.server.trees[0].kind == mech


def test_same_seed_same_release_per_mechanism():
    env = RandomLinearMixtureMDP(S=5, A=2, d=3, H=2, seed=2)
    p = JointDP(1.0, 1e-5, mechanism="blt")
    runs = []
    for _ in range(2):
        a = UCRLVTR(env, p, episodes=20, seed=9)
        for k in range(10):
            a.observe(env.sample_episode(a.policy(), np.random.default_rng(k)))
        runs.append(a.release().design)
    np.testing.assert_array_equal(runs[0], runs[1])

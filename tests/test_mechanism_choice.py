"""JointDP(mechanism=...): the rescaled noise keeps the (eps, delta) guarantee, the noise bounds
follow the mechanism's exact variance, and every JDP agent runs on every mechanism."""

import math

import numpy as np
import pytest

from _helpers import calibration as C
from privrl import kernels as kn
from privrl.agents import LSVIUCB, UCRLVTR, UCRLVTRPlus
from privrl.envs.linear import RandomLinearMDP
from privrl.envs.mixture import RandomLinearMixtureMDP
from privrl.exceptions import PrivacyParameterError
from privrl.privacy.accounting import PrivacyAccountant, tree_nodes_per_leaf
from privrl.privacy.continual import MECHANISMS, user_entry
from privrl.privacy.models import JointDP, LocalDP
from privrl.privacy.plans import plan_mu

OTHERS = ["honaker", "factorization", "blt"]


def test_jointdp_mechanism_field():
    assert JointDP(1.0, 1e-5, calibration="paper").mechanism == "tree"
    assert JointDP(1.0, 1e-5).mechanism == "blt"  # the default (adaptive) calibration's
    p = JointDP(1.0, 1e-5, mechanism="factorization")
    assert p.label == "JDP(eps=1, delta=1e-05, factorization)"
    assert p.as_kwargs()["mechanism"] == "factorization"  # the choice travels with the model
    assert LocalDP(1.0, 1e-5).as_kwargs()["mechanism"] == "tree"
    with pytest.raises(PrivacyParameterError):
        JointDP(1.0, 1e-5, mechanism="cauchy")
    # None (the default) is the calibration's choice: the paper's tree, the lowest-variance BLT
    # for "practical" and "adaptive" (pure DP keeps the tree)
    assert JointDP(1.0, 1e-5, mechanism=None, calibration="paper").mechanism == "tree"
    assert JointDP(1.0, 1e-5, mechanism=None).mechanism == "blt"
    assert JointDP(1.0, 1e-5, calibration="practical").mechanism == "blt"
    assert JointDP(1.0, 0.0, calibration="practical").mechanism == "tree"
    with pytest.raises(PrivacyParameterError):
        JointDP(1.0, 1e-5, mechanism=3)
    with pytest.raises(PrivacyParameterError):
        JointDP(1.0, 0.0, mechanism="honaker")  # pure JDP keeps the tree
    with pytest.raises(TypeError):
        LocalDP(1.0, 1e-5, mechanism="honaker")
    assert set(MECHANISMS) == set(kn.MECHANISMS)


@pytest.mark.parametrize("K_", [1, 7, 64, 1000])
def test_user_entry_counts(K_):
    K0 = math.ceil(math.log2(K_)) + 1
    t = user_entry("tree", K_)
    assert (t.draws, t.draws_paper, t.paper_sigma_factor) == (tree_nodes_per_leaf(K_), K0, 1.0)
    assert t.multiplier == pytest.approx(math.sqrt(tree_nodes_per_leaf(K_)))
    for m in OTHERS:
        prof = kn.mechanism_profile(m, K_)
        e = user_entry(m, K_)
        assert e.draws is None and e.multiplier == prof.l2_multiplier
        assert e.paper_sigma_factor == pytest.approx(prof.l2_multiplier / math.sqrt(K0))
        assert e.noise_terms == prof.max_variance_factor


@pytest.mark.parametrize("mech", OTHERS)
def test_paper_sigma_keeps_the_trees_privacy_curve(mech):
    """Paper calibration: per user, each of the 2H mechanisms of JDP UCRL-VTR is one Gaussian; with
    the rescaled sigma its mu equals the K0-node tree's that the paper's argument certifies."""
    H, K_, d, eps, dlt = 3, 500, 4, 1.0, 1e-5
    tree_cal = C.calibrate_ucrl_vtr("jdp", eps, dlt, H, K_, d, 1.0, sampler="float", calibration="paper")
    new = C.calibrate_ucrl_vtr(
        "jdp", eps, dlt, H, K_, d, 1.0, mechanism=mech, sampler="float", calibration="paper"
    )
    sens = C.ucrl_vtr_l2_sensitivity(H)
    tree = PrivacyAccountant().add_gaussian(sens, tree_cal.sigma_B, 2 * H * tree_cal.K0)
    m = kn.make_prefix_mechanism(mech, 1, K_, noise="none", seed=0)
    other = PrivacyAccountant().add_gaussian(sens * m.sensitivity_multiplier, new.sigma_B, 2 * H)
    assert other.mu == pytest.approx(tree.mu, rel=1e-12)


@pytest.mark.parametrize("mech", MECHANISMS)
def test_tight_sigma_meets_the_target_on_every_mechanism(mech):
    """Tight calibration: the plan's mu (with the mechanism's exact multiplier) is the target's."""
    H, K_, d, eps, dlt = 3, 500, 4, 1.0, 1e-5
    for calibrate, extra in (
        (C.calibrate_ucrl_vtr, {"C_w": 1.0}),
        (C.calibrate_ucrl_vtr_plus, {"C_w": 1.0}),
        (C.calibrate_lsvi_ucb, {}),
    ):
        # the target below is the continuous Gaussian's (the calibrations' former default sampler)
        cal = calibrate(
            "jdp", eps, dlt, H=H, K=K_, d=d, calibration="tight", mechanism=mech, sampler="float", **extra
        )
        from privrl.audit.report import plan_of

        plan = plan_of(cal.algorithm, cal)
        scales = {k: getattr(cal, k) for k in plan.scale_keys}
        from privrl.privacy.accounting import gaussian_mu

        assert plan_mu(plan, scales) == pytest.approx(gaussian_mu(eps, dlt), rel=1e-9)


@pytest.mark.parametrize("mech", OTHERS)
def test_noise_bounds_follow_the_variance(mech):
    H, K_, d = 3, 500, 4
    cal = C.calibrate_ucrl_vtr("jdp", 1.0, 1e-5, H, K_, d, 1.0, sampler="float", calibration="paper")
    new = C.calibrate_ucrl_vtr(
        "jdp", 1.0, 1e-5, H, K_, d, 1.0, mechanism=mech, sampler="float", calibration="paper"
    )
    prof = kn.mechanism_profile(mech, K_)
    # Upsilon is linear in (entry std of the released noise): sigma sqrt(K0) -> sigma_M sqrt(max v).
    want = cal.Upsilon * new.sigma_B * math.sqrt(prof.max_variance_factor) / (cal.sigma_B * math.sqrt(cal.K0))
    assert new.Upsilon == pytest.approx(want)
    assert new.Upsilon == pytest.approx(
        C.ucrl_vtr_upsilon(new.sigma_B, 1, d, K_, H, cal.p) * math.sqrt(prof.max_variance_factor)
    )
    assert new.shift == pytest.approx(2 * new.Upsilon)
    assert new.beta == pytest.approx(C.ucrl_vtr_beta(cal.lam, new.Upsilon, 1.0, H, K_, d, cal.p))
    assert new.beta >= new.beta_condition
    assert new.Upsilon < cal.Upsilon  # every alternative releases less noise than the tree
    assert new.mechanism_l2_multiplier == prof.l2_multiplier and new.node_budget is None


def test_alg3_and_alg2_mechanisms():
    H, K_, d = 3, 400, 4
    cal = C.calibrate_ucrl_vtr_plus("jdp", 1.0, 1e-5, H, K_, d, 1.0, sampler="float", calibration="paper")
    new = C.calibrate_ucrl_vtr_plus(
        "jdp", 1.0, 1e-5, H, K_, d, 1.0, mechanism="factorization", sampler="float", calibration="paper"
    )
    f = user_entry("factorization", K_).paper_sigma_factor
    for k in ("sigma_B1", "sigma_B2", "sigma_f", "sigma_g"):
        assert getattr(new, k) == pytest.approx(getattr(cal, k) * f)
    assert new.beta_hat >= new.beta_hat_condition and new.beta_tilde >= new.beta_tilde_condition
    lcal = C.calibrate_lsvi_ucb("jdp", 1.0, 1e-5, H, 4000, d, sampler="float", calibration="paper")
    lnew = C.calibrate_lsvi_ucb(
        "jdp", 1.0, 1e-5, H, 4000, d, mechanism="factorization", sampler="float", calibration="paper"
    )
    assert lnew.sigma_u == lcal.sigma_u and lnew.C == lcal.C  # u~ is not a tree
    R = C.lsvi_ucb_releases(4000, lcal.B)
    prof = kn.mechanism_profile("factorization", R)
    assert lnew.sigma_Lambda == pytest.approx(lcal.sigma_Lambda * prof.l2_multiplier / math.sqrt(lcal.B0))
    assert lnew.mechanism_capacity == R == lnew.releases
    # App. D's two requirements on c_K.
    assert lnew.c_K >= d * lnew.Upsilon - 1e-9
    assert H * (lnew.lam + lnew.c_K) * (1 + 1e-12) >= lnew.C
    with pytest.raises(PrivacyParameterError):
        C.calibrate_ucrl_vtr(
            "jdp", 1.0, 0.0, H, K_, d, 1.0, mechanism="honaker", sampler="float", calibration="paper"
        )
    with pytest.raises(PrivacyParameterError):
        C.calibrate_ucrl_vtr(
            "ldp", 1.0, 1e-5, H, K_, d, 1.0, mechanism="honaker", sampler="float", calibration="paper"
        )


@pytest.mark.parametrize("mech", MECHANISMS)
def test_agents_run_on_every_mechanism(mech):
    env = RandomLinearMixtureMDP(S=6, A=2, d=3, H=3, seed=1)
    lenv = RandomLinearMDP(S=6, A=2, d=3, H=3, seed=1)
    p = JointDP(1.0, 1e-5, mechanism=mech, calibration="tight")
    agents = [
        UCRLVTR(env, p, episodes=40, seed=0),
        UCRLVTRPlus(env, p, episodes=40, seed=0),
        LSVIUCB(lenv, p, episodes=40, seed=0),
        # 7 releases (the static schedule above releases once, where every mechanism agrees)
        LSVIUCB(lenv, p, batches=8, episodes=40, seed=0),
    ]
    for a in agents:
        e = lenv if isinstance(a, LSVIUCB) else env
        for k in range(25):
            a.observe(e.sample_episode(a.policy(), np.random.default_rng(k)))
        assert a.calibration.mechanism == mech
    # The servers' mechanisms are of kind `mech`: the noise each one releases is, draw for draw,
    # that of a `mech` mechanism with the agent's capacity, law, scale and seed (the agent's
    # privacy-noise seeds, SeedSequence(seed).spawn(3)[1]) after as many leaves.
    vtr = agents[0]
    cal = vtr.calibration
    grid = {"grid_bits": cal.grid_bits} if cal.sampler == "discrete" else {}
    seeds = np.random.SeedSequence(0).spawn(3)[1].spawn(2 * vtr.H)
    assert vtr.k == 25
    gram_noise, _ = vtr._core.noise(0)
    for h in range(vtr.H):
        tree = kn.make_prefix_mechanism(
            mech, (vtr.d, vtr.d), vtr.K, noise=cal.node_noise, scale=cal.sigma_B, seed=seeds[h],
            divisor=cal.sym_divisor, **grid,
        )  # fmt: skip
        for _ in range(25):
            tree.push_zero()
        assert tree.kind == mech and tree.steps == 25
        np.testing.assert_array_equal(gram_noise[h], tree.noise())
    assert vtr._core.variance_factor(0, 25) == tree.variance_factor(25)
    # Released noise variance per entry = sigma_M^2 v_M(t) (off-diagonal of (Z' + Z'^T)/sqrt 2).
    assert tree.release_variance()[0] == pytest.approx(
        vtr.calibration.sigma_B**2 * vtr._core.variance_factor(0, 25)
    )
    lsvi = agents[3]
    cal = lsvi.calibration
    seeds = np.random.SeedSequence(0).spawn(3)[1].spawn(lsvi.H + 1)
    R = cal.releases
    assert R == 7 and lsvi.batch == 5
    for h in range(lsvi.H):
        tree = kn.make_prefix_mechanism(
            mech, (lsvi.d, lsvi.d), R, noise=cal.node_noise, scale=cal.sigma_Lambda, seed=seeds[h],
            divisor=cal.sym_divisor, **grid,
        )  # fmt: skip
        for _ in range(lsvi.batch):
            tree.push_zero()
        assert tree.kind == mech
        np.testing.assert_array_equal(lsvi._core.noise()[h], tree.noise())
    assert [lsvi._core.variance_factor(t) for t in range(1, R + 1)] == [
        tree.variance_factor(t) for t in range(1, R + 1)
    ]


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


def test_blt_beyond_its_precise_capacity_is_refused_with_the_way_out():
    """Audit 4: K >= 1e16 with the default (BLT) mechanism gave "BLT parameters need 1..=64 pairs
    with theta in (0, 1)" (its decay rates round to 1); between 2^45 and that, its variance
    recursion went erratic (negative at 2^61). BLT stops at 2^44 releases with a message naming
    K and the tree, which takes any K."""
    from privrl.agents import UCRLVTR
    from privrl.envs import RiverSwimMixture
    from privrl.exceptions import PrivacyParameterError

    env = RiverSwimMixture(S=4, H=5)
    UCRLVTR(env, JointDP(1.0, 1e-20, sampler="float"), episodes=2**44)
    with pytest.raises(
        PrivacyParameterError, match=r"at most 2\^44 = 17592186044416 releases \(K\), got 17592186044417"
    ):
        UCRLVTR(env, JointDP(1.0, 1e-20, sampler="float"), episodes=2**44 + 1)
    UCRLVTR(env, JointDP(1.0, 1e-20, sampler="float", mechanism="tree"), episodes=2**63 - 1)

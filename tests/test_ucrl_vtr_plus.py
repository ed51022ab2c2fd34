"""Privacy-Preserving UCRL-VTR+ (Alg. 3): learning, sigma-bar bounds, calibrated noise of both
regressions, JDP ~ non-private at huge epsilon, reproducibility, bad inputs."""

import copy
import math

import numpy as np
import pytest

import privrl
from _helpers import uniform_policy_gap
from privrl.agents import UCRLVTRPlus
from privrl.envs import RandomLinearMDP, RandomLinearMixtureMDP, RiverSwimMixture
from privrl.exceptions import PrivacyParameterError
from privrl.privacy import JointDP, LocalDP, NonPrivate


def test_nonprivate_learns_riverswim_mixture():
    env, K = RiverSwimMixture(), 2000
    # the theory radii (beta^ ~ 360, beta~ ~ 1.6e5 here) make every bonus saturate at H; a small
    # beta_scale (exploration only) lets the agent learn within K = 2000
    agent = UCRLVTRPlus(env, privacy=NonPrivate(calibration="paper"), episodes=K, seed=1, beta_scale=0.003)
    res = privrl.run(agent, env, seed=2)
    assert res.final_regret < K * uniform_policy_gap(env) / 3
    q = K // 4
    assert res.regret[-1] - res.regret[-q - 1] < res.regret[q - 1] / 2


def test_sigma_bar_in_bounds():
    env = RandomLinearMixtureMDP(S=8, A=3, d=4, H=5, seed=1)
    H, d = env.H, env.d
    for priv in (NonPrivate(calibration="paper"), JointDP(1.0, 1e-5, calibration="paper")):
        agent = UCRLVTRPlus(env, privacy=priv, episodes=300, seed=3, beta_scale=0.01)
        rng = np.random.default_rng(0)
        for _ in range(300):
            traj = env.sample_episode(agent.policy(), rng)
            agent.observe(traj)
            sig = agent.last_sigma_bar
            # sigma-bar^2 = max{H^2/d, V-bar + E}, V-bar <= H^2 and E <= 2 H^2
            assert np.all(sig >= H / math.sqrt(d) - 1e-12)
            assert np.all(sig <= math.sqrt(3) * H + 1e-12)


def test_jdp_both_regressions_have_calibrated_noise():
    env, K, k = RiverSwimMixture(S=3, H=3), 64, 6  # popcount(6) = 2
    first, second = [], []
    for seed in range(250):
        agent = UCRLVTRPlus(env, privacy=JointDP(1.0, 1e-5, calibration="paper"), episodes=K, seed=seed)
        privrl.run(agent, env, episodes=k, seed=seed)
        first.append(agent._core.noise(0))
        second.append(agent._core.noise(1))
    cal = agent.calibration
    d = env.d
    iu = np.triu_indices(d, 1)
    for noise, sigma in ((first, cal.sigma_B1), (second, cal.sigma_B2)):
        mats = np.array([m for m, _ in noise])
        vecs = np.array([v for _, v in noise])
        assert abs(mats[:, :, iu[0], iu[1]].var() / (2 * sigma**2) - 1) < 0.12
        assert abs(mats[:, :, np.arange(d), np.arange(d)].var() / (2 * 2 * sigma**2) - 1) < 0.12
        assert abs(vecs.var() / (2 * sigma**2) - 1) < 0.12


def _phi_v(features, s, a, v):
    """phi_V(s, a) = sum_s' phi(s'|s, a) V(s'), summed in increasing s' from +0.0 as the agents do
    (the user's own bits; tests/test_ldp_separation.py checks them against a non-private agent)."""
    out = np.zeros(features.shape[-1])
    for sp in range(features.shape[2]):
        if v[sp] != 0.0:
            out = out + v[sp] * features[s, a, sp]
    return out


def test_ldp_sends_only_randomized_statistics():
    """Each server holds exactly the sum of the users' randomized messages: the message the user's
    randomizer makes of its raw statistics (phi_V / sigma-bar, V / sigma-bar; phi_{V^2}, V^2),
    replayed on a copy of the agent taken before the user, never the raw statistics."""
    env = RiverSwimMixture(S=3, H=3)
    agent = UCRLVTRPlus(env, privacy=LocalDP(1.0, 1e-5, calibration="paper"), episodes=50, seed=0)
    H, d = agent.H, agent.d
    rng = np.random.default_rng(0)
    sums = [[np.zeros(H * d * d), np.zeros(H * d)] for _ in range(2)]
    raw = [[np.zeros((H, d, d)), np.zeros((H, d))] for _ in range(2)]
    for _ in range(20):
        before = copy.deepcopy(agent)
        pi, V = agent.policy(), agent.values()
        traj = env.sample_episode(pi, rng)
        agent.observe(traj)
        s, a = traj.states, traj.actions
        X = np.stack([_phi_v(agent.mixture_features, s[h], a[h], V[h + 1]) for h in range(H)])
        X2 = np.stack([_phi_v(agent.mixture_features, s[h], a[h], V[h + 1] ** 2) for h in range(H)])
        y = V[np.arange(1, H + 1), s[1:]]
        sig = agent.last_sigma_bar
        for i, (Xi, yi) in enumerate(((X / sig[:, None], y / sig), (X2, y * y))):
            gram, target = before._core.user_message(i, Xi, yi)
            sums[i][0] = sums[i][0] + gram
            sums[i][1] = sums[i][1] + target
            raw[i][0] = raw[i][0] + np.einsum("hi,hj->hij", Xi, Xi)
            raw[i][1] = raw[i][1] + Xi * yi[:, None]
    for i in range(2):
        gram, target = agent._core.sums(i)
        np.testing.assert_array_equal(gram, sums[i][0].reshape(H, d, d))
        np.testing.assert_array_equal(target, sums[i][1].reshape(H, d))
        assert not np.allclose(gram, raw[i][0]) and not np.allclose(target, raw[i][1])
    cal = agent.calibration
    # Cor. LDP-UCRL-VTR+: sigma_B,1 = 8dH/eps sqrt(2 log(8H/delta)), sigma_B,2 = 8H^5/eps sqrt(...)
    root = math.sqrt(2 * math.log(8 * 3 / 1e-5))
    assert cal.sigma_B1 == pytest.approx(8 * env.d * 3 * root)
    assert cal.sigma_B2 == pytest.approx(8 * 3**5 * root)


def test_huge_epsilon_jdp_matches_nonprivate():
    env = RandomLinearMixtureMDP(S=10, A=3, d=4, H=5, seed=3)
    K = 1200
    regs = [
        privrl.run(UCRLVTRPlus(env, privacy=p, episodes=K, seed=4, beta=2.0), env, seed=5).final_regret
        for p in (
            NonPrivate(calibration="paper"),
            JointDP(1e13, 1e-5, sampler="float", calibration="tight"),
        )  # the discrete lattice is too fine there; the paper's noise is refused (certifies eps ~ 1e19)
    ]
    assert abs(regs[1] - regs[0]) <= 0.05 * regs[0]


def test_reproducible():
    env = RiverSwimMixture(S=4, H=4)
    runs = [
        privrl.run(
            UCRLVTRPlus(env, privacy=LocalDP(2.0, 1e-5, calibration="paper"), episodes=100, seed=7),
            env,
            seed=1,
        )
        for _ in range(2)
    ]
    assert np.array_equal(runs[0].regret, runs[1].regret)


def test_bad_inputs():
    env = RiverSwimMixture(S=3, H=3)
    with pytest.raises(PrivacyParameterError):
        UCRLVTRPlus(env, privacy=NonPrivate(calibration="paper"), episodes=0)
    with pytest.raises(PrivacyParameterError):
        JointDP(float("nan"), 1e-5, calibration="paper")
    with pytest.raises(TypeError):
        UCRLVTRPlus(RandomLinearMDP(S=4, A=2, d=3, H=2), privacy=NonPrivate(calibration="paper"), episodes=10)
    with pytest.raises(PrivacyParameterError):
        UCRLVTRPlus(env, privacy=NonPrivate(calibration="paper"), episodes=10, beta_scale=float("inf"))


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"H": -1}, "H must be an integer >= 1, got -1"),
        ({"H": 0}, "H must be an integer >= 1, got 0"),
        ({"H": 2.5}, "H must be an integer >= 1, got 2.5"),
        ({"kind": "foo"}, "kind must be one of"),
        ({"kind": "none", "H": 0}, "H must be an integer >= 1"),
    ],
)
def test_release_plan_refuses_a_bad_horizon_or_kind(kw, needle):
    """release_plan("jdp", False, H=-1, ...) and kind="foo" built a plan without complaint."""
    from privrl.agents.ucrl_vtr_plus.calibration import release_plan

    args = {"kind": "jdp", "pure": False, "H": 3, "K": 100, "d": 3, **kw}
    with pytest.raises(PrivacyParameterError, match=needle):
        release_plan(**args)
    assert release_plan("jdp", False, H=3, K=100, d=3).H == 3


def test_a_radius_whose_square_overflows_is_refused_at_construction():
    # beta_scale = 1e160 under the paper / tight / practical rules built, then the first release
    # failed with a NonFiniteError about the inverse (beta^2 Lambda~^{-1} = inf); the adaptive
    # rule saturates its radius (MAX_RADIUS) and runs
    import warnings

    from privrl.agents import UCRLVTR, UCRLVTRPlus
    from privrl.envs import RiverSwimMixture
    from privrl.exceptions import PrivacyParameterError
    from privrl.privacy import JointDP, NonPrivate

    mix = RiverSwimMixture(S=4, H=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for cls in (UCRLVTR, UCRLVTRPlus):
            for privacy in (JointDP(1, 1e-5, calibration="paper"), NonPrivate(calibration="practical")):
                for kw in ({"beta_scale": 1e160}, {"beta": 1e300}):
                    with pytest.raises(PrivacyParameterError, match=r"too large: .*\^2 / lam overflows"):
                        cls(mix, privacy, episodes=5, seed=0, **kw)
                agent = cls(mix, privacy, episodes=5, seed=0, beta_scale=1e50)
                assert np.isfinite(privrl.run(agent, mix, seed=0).final_regret)
            agent = cls(mix, JointDP(1, 1e-5), episodes=5, seed=0, beta_scale=1e160)
            assert np.isfinite(privrl.run(agent, mix, seed=0).final_regret)


def test_adaptive_reports_the_second_moments_radius_in_use():
    """Under the adaptive rule both regressions' widths are in standard deviations (the
    AdaptiveSpec of each reads the radius beta); calibration.beta_tilde_used said beta times the
    theorem's beta_tilde (3 x 1,846 = 5,538 here), a radius the agent never uses. The practical
    rule's beta_tilde (beta_scale x the theorem's) is unchanged."""
    env = RiverSwimMixture(S=4, H=3)
    plans = []
    for beta in (1.0, 3.0):
        agent = UCRLVTRPlus(env, JointDP(1.0, 1e-5), episodes=50, seed=0, beta=beta)
        cal = agent.calibration
        assert cal.release_rule == "adaptive" and cal.beta_tilde > 100.0
        assert cal.beta_used == cal.beta_check_used == cal.beta_tilde_used == beta
        privrl.run(agent, env, seed=1)
        plans.append(agent.release2().explore)
    assert not np.allclose(plans[0], plans[1])  # the radius reaches the second regression's width
    practical = UCRLVTRPlus(env, JointDP(1.0, 1e-5, calibration="practical"), episodes=50, beta_scale=0.5)
    assert practical.calibration.beta_tilde_used == 0.5 * practical.calibration.beta_tilde


def test_a_second_moment_width_that_overflows_is_refused_at_construction():
    """Pure JDP, practical, beta_scale = 1e148 on RiverSwimMixture(S=4, H=5): the planning
    regression's width fits a double, but the second-moment regression's exploration matrix
    E2 = beta_tilde^2 A^{-1} + gamma2^2 A^{-2} (gamma2 >= scale (C2 + Upsilon2 C_w) = 1.9e156) was
    inf from the first release, and the run failed at user 511 with a NonFiniteError about an
    "inverse design matrix". Refused at construction, naming the second moments; 1e140 runs."""
    import warnings

    from privrl.exceptions import PrivacyParameterError
    from privrl.privacy import JointDP

    env = RiverSwimMixture(S=4, H=5)
    privacy = JointDP(1.0, 0.0, calibration="practical")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # delta = 0 < 1/K is fine; the practical rule's notes
        with pytest.raises(PrivacyParameterError, match=r"practical width \(second moments\) overflows"):
            UCRLVTRPlus(env, privacy, episodes=600, seed=0, beta_scale=1e148)
        agent = UCRLVTRPlus(env, privacy, episodes=600, seed=0, beta_scale=1e140)
        assert np.isfinite(privrl.run(agent, env, seed=1).regret).all()
        assert np.isfinite(agent.release2().explore).all()

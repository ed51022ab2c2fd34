"""The adaptive calibration (privrl.privacy.adaptive): same noise and privacy report as the
practical one, honest widths (numpy oracle), the support clip, learning without tuned constants."""

from __future__ import annotations

import math

import numpy as np
import pytest

import privrl
from privrl.agents import UCRLVTR, UCRLVTRPlus
from privrl.envs import RandomLinearMixtureMDP, RiverSwimMixture
from privrl.privacy import JointDP, LocalDP, NonPrivate, practical
from privrl.privacy.adaptive import SAMPLING_DRAWS, SIGMA_MIN, adaptive_constants


def test_constants_by_hand():
    c = adaptive_constants("vtr", 20, 3)
    assert (c.sigma_max, c.spread_scale, c.sigma_min) == (10.0, 1.0, 0.5)
    c = adaptive_constants("hat", 20, 4)
    assert (c.sigma_max, c.spread_scale) == (1.0, 2.0 / 20.0)
    c = adaptive_constants("tilde", 5, 4)
    # f^2 in [0, H^2 = 25]: half range 12.5, reached by the spread H = 5 of a planned target
    assert (c.sigma_max, c.spread_scale) == (12.5, 5.0)
    assert c.spread_scale * 5 / 2 == c.sigma_max
    with pytest.raises(ValueError):
        adaptive_constants("other", 5, 4)


def _oracle(G, u, lam, w0, D):
    """Numpy form of the adaptive release without noise (S = 0, nu = 0)."""
    d = len(u)
    ev, V = np.linalg.eigh(G + lam * np.eye(d))
    a = np.maximum(ev, lam)
    lift = a - ev
    m = (V.T @ u + (lam + lift) * (V.T @ w0)) / a
    return V @ np.diag(a) @ V.T, V @ m, a, V, lift


def test_release_matches_numpy_oracle():
    env = RiverSwimMixture(S=6, H=5)
    agent = UCRLVTR(env, NonPrivate(calibration="adaptive"), episodes=20, seed=0)
    rng = np.random.default_rng(1)
    H, d = agent.H, agent.d
    X = rng.uniform(0, 1, size=(7, H, d))
    y = rng.uniform(0, H, size=(7, H))
    for k in range(7):
        agent.observe_statistics(X[k], y[k])
    rel = agent.release()
    w0 = practical.feasible_centre(agent.mixture_features)
    D = practical.centre_distance(agent.C_w, agent.mixture_features, w0)
    sigma = H / 2.0  # no plan yet: sigma_max
    lam = (max(sigma, SIGMA_MIN) / D) ** 2
    for h in range(H):
        G = X[:, h].T @ X[:, h]
        u = X[:, h].T @ y[:, h]
        design, w, a, V, lift = _oracle(G, u, lam, w0, D)
        np.testing.assert_allclose(rel.design[h], design, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(rel.weights[h], w, rtol=1e-9, atol=1e-9)
        r = np.sqrt(sigma**2 / a)
        b = (lam + lift) * D / a
        np.testing.assert_allclose(rel.explore[h], V @ np.diag((r + b) ** 2) @ V.T, rtol=1e-9, atol=1e-9)
        assert np.all(np.linalg.eigvalsh(rel.explore[h]) > 0)  # PSD width


@pytest.mark.parametrize("model", ["jdp", "ldp"])
def test_noise_and_report_do_not_move_with_the_rule(model):
    env = RiverSwimMixture(S=6, H=5)
    make = (
        (lambda c: JointDP(5, 1e-5, calibration=c))
        if model == "jdp"
        else (lambda c: LocalDP(5, 1e-5, calibration=c))
    )
    agents = {
        (c, e): UCRLVTR(env, make(c), episodes=200, seed=3, exploration=e)
        for c in ("practical", "adaptive")
        for e in ("optimism", "sampling")
    }
    for a in agents.values():
        privrl.run(a, env, 60, seed=7)
    reports = {k: a.privacy_report() for k, a in agents.items()}
    base = reports[("practical", "optimism")]
    for k, rep in reports.items():
        for key in ("tight", "paper", "mechanisms", "statistics", "target"):
            assert rep[key] == base[key], (k, key)
    if model == "jdp":
        ref = agents[("practical", "optimism")]._core.noise(0)
        for k, a in agents.items():
            n = a._core.noise(0)
            np.testing.assert_array_equal(n[0], ref[0], err_msg=str(k))
            np.testing.assert_array_equal(n[1], ref[1], err_msg=str(k))
    # the policies do move with the rule and the exploration
    pols = {k: np.asarray(a.policy()) for k, a in agents.items()}
    assert any(not np.array_equal(pols[k], pols[("practical", "optimism")]) for k in pols)
    # and the sampled plans are not the optimistic ones (a random mixture, where the draw matters;
    # without noise, where the widths shrink within a few hundred users)
    mix = RandomLinearMixtureMDP(seed=0)
    np_model = NonPrivate(calibration="adaptive")
    runs = [
        privrl.run(UCRLVTR(mix, np_model, episodes=300, seed=3, exploration=e), mix, 300, seed=1)
        for e in ("optimism", "sampling")
    ]
    assert not np.array_equal(runs[0].regret, runs[1].regret)


@pytest.mark.parametrize("cls", [UCRLVTR, UCRLVTRPlus])
@pytest.mark.parametrize("privacy", [JointDP(5, 1e-5), JointDP(5, 0)], ids=["approx", "pure"])
def test_noise_and_report_do_not_move_with_the_plan(cls, privacy):
    # the plan's post-processing (optimistic sampling's draws, pessimistic ties, the tie-break)
    # moves the policies, never the released noise (every regression's, draw for draw) or the report
    env = RiverSwimMixture(S=6, H=5)
    agents = {
        (e, t): cls(env, privacy, episodes=200, seed=3, exploration=e, ties=t)
        for e in ("optimism", "sampling")
        for t in ("random", "lowest")
    }
    for a in agents.values():
        privrl.run(a, env, 60, seed=7)
    base = agents[("optimism", "random")]
    ref = base.privacy_report()
    for k, a in agents.items():
        rep = a.privacy_report()
        for key in ("tight", "paper", "mechanisms", "statistics", "target"):
            assert rep[key] == ref[key], (k, key)
        for i in range(2 if cls is UCRLVTRPlus else 1):
            for n, m in zip(a._core.noise(i), base._core.noise(i), strict=True):
                np.testing.assert_array_equal(n, m, err_msg=str((k, i)))
    assert any(not np.array_equal(np.asarray(a.policy()), np.asarray(base.policy())) for a in agents.values())


def test_noise_moves_the_report():
    env = RiverSwimMixture(S=6, H=5)
    r1 = UCRLVTR(env, JointDP(5, 1e-5, calibration="adaptive"), episodes=50, seed=0).privacy_report()
    r2 = UCRLVTR(env, JointDP(2, 1e-5, calibration="adaptive"), episodes=50, seed=0).privacy_report()
    assert r1["tight"] != r2["tight"]


def test_sampling_draws_reach_one_standard_deviation():
    # E max of m standard normals = int x m phi(x) Phi(x)^(m - 1) dx: the smallest m with E max >= 1
    # (the optimistic width's radius, one std) is the number of models a sampling user draws
    x, dx = np.linspace(-12.0, 12.0, 24_001, retstep=True)
    pdf = np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    cdf = 0.5 * (1 + np.array([math.erf(v / math.sqrt(2)) for v in x]))
    expected_max = {m: float((x * m * pdf * cdf ** (m - 1)).sum() * dx) for m in range(1, 7)}
    assert abs(expected_max[1]) < 1e-6 and abs(expected_max[2] - 1 / math.sqrt(math.pi)) < 1e-4
    assert SAMPLING_DRAWS == min(m for m, e in expected_max.items() if e >= 1.0) == 4
    assert abs(expected_max[4] - 1.0294) < 1e-3


def test_sampling_regret_does_not_follow_the_centre():
    # RiverSwimMixture(S=20), K = 10^4: with one draw a user is optimistic only half the time and
    # the data-independent centre decided the regret (JDP eps 10: 70.4 feasible against 14.1 zero;
    # 68.4 against 10.2 with pessimistic ties); the largest of SAMPLING_DRAWS draws per pair
    # explores like the optimistic width (eps 10: 8.4 / 7.2 with random ties, 0.07 / 0.0 with
    # pessimistic ties). What was left were users whose four draws all fell below the estimate and
    # went left at (h = 1, s = 0), a gap of 0.0746 each (eps 1: 0.60 / 0.30, eps 10: 0.07 / 0.0);
    # the draws are now floored at the mean (optimistic Bayesian sampling) and none is left
    env = RiverSwimMixture(S=20, H=20)
    K = 10_000
    for eps in (10, 1):
        regret = {}
        for centre in ("feasible", "zero"):
            agent = UCRLVTR(
                env, JointDP(eps, 1e-5), episodes=K, seed=0, centre=centre, exploration="sampling"
            )
            regret[centre] = privrl.run(agent, env, K, seed=0).final_regret
        assert max(regret.values()) < 0.07, (eps, regret)  # whichever the centre: not one such user


def test_ties_at_the_support_ceiling_go_to_the_known_value():
    # RiverSwimMixture(S=12, H=20): at (h=10, s=1) the reward at the right end is out of reach; left
    # (deterministic, its value known: 0.045) and right (the optimistic ceiling r + max V_{h+1} over
    # its support = the same 0.045, true value 0.0357) tied, and the random tie-break sent every
    # other user right: 0.05 regret over 10^5 users, half the users paying ~1e-6 to the end. Ties
    # now go to the largest pessimistic value (left); the first optimistic plan is then optimal
    env = RiverSwimMixture(S=12, H=20)
    agent = UCRLVTR(env, JointDP(10, 1e-5), episodes=4000, seed=0)
    res = privrl.run(agent, env, 3000, seed=0)
    assert res.final_regret < 1e-9  # was 0.0089 (seed 0)
    actions = []
    for k in range(40):
        privrl.run(agent, env, 1, seed=100 + k)
        actions.append(int(np.asarray(agent.policy())[10, 1]))
    assert actions == [0] * 40  # was left for 18 of 40 users


@pytest.mark.parametrize("cls", [UCRLVTR, UCRLVTRPlus])
@pytest.mark.parametrize("exploration", ["optimism", "sampling"])
def test_the_support_clip_is_exact_at_the_ceiling(cls, exploration):
    # Q_h(s, a) = r + lo + (hi - lo) / H x stays in r + [lo, hi] of V_{h+1} over the support, to the
    # last bit: at the ceiling x = H the rounded lo + (hi - lo) (1 / H) H was one ulp above hi
    # (H = 13, (h, s) = (10, 1)), so the uncertain right beat the deterministic left, whose value
    # is that hi, instead of tying with it, and pessimistic tie-breaking never ran there
    for H in range(2, 26):
        env = RiverSwimMixture(S=6, H=H)
        agent = cls(env, JointDP(10, 1e-5), episodes=100, seed=0, exploration=exploration)
        privrl.run(agent, env, 10, seed=0)
        V, support, R = agent.values(), np.abs(agent.mixture_features).sum(axis=-1) > 0, np.asarray(env.R)
        for h in range(H):
            lo = np.where(support, V[h + 1][None, None, :], np.inf).min(axis=-1)
            hi = np.where(support, V[h + 1][None, None, :], -np.inf).max(axis=-1)
            assert np.all(V[h] <= (R[h] + hi).max(axis=1)), (H, h)
            assert np.all(V[h] >= (R[h] + lo).max(axis=1)), (H, h)
    # and the tie now goes to the known value: RiverSwimMixture(S=6, H=13) learns as H = 12, 14 do
    env = RiverSwimMixture(S=6, H=13)
    agent = cls(env, JointDP(10, 1e-5), episodes=2000, seed=0, exploration=exploration)
    assert privrl.run(agent, env, 2000, seed=1).final_regret < 1e-9  # UCRL-VTR: was 0.0043


@pytest.mark.parametrize("cls", [UCRLVTR, UCRLVTRPlus])
@pytest.mark.parametrize("privacy", [NonPrivate(), JointDP(5, 1e-5)], ids=["none", "jdp"])
def test_a_sampling_user_never_plans_on_a_non_finite_release(cls, privacy):
    # features scaled by 1e-100 (weights by 1e100, the same MDP): the adaptive release's widths
    # overflow. Optimism refuses the user (a non-finite width); sampling refused it too until the
    # largest of the draws' Q dropped a NaN draw (f64::max) and planned on the others, silently
    from privrl.common.errors import NonFiniteError
    from privrl.envs import LinearMixtureMDP

    base = RandomLinearMixtureMDP(S=5, A=2, d=2, H=3, seed=0)
    f, w = np.asarray(base.features), np.asarray(base.weights)
    env = LinearMixtureMDP(f * 1e-100, w * 1e100, base.R, base.init_dist)
    for exploration in ("optimism", "sampling"):
        agent = cls(env, privacy, episodes=50, seed=0, exploration=exploration)
        for k in range(50):
            rel = agent.release()
            if not (np.isfinite(rel.weights).all() and np.isfinite(rel.explore).all()):
                with pytest.raises(NonFiniteError):
                    agent.policy()
                break
            privrl.run(agent, env, 1, seed=k)
        else:
            raise AssertionError(f"{exploration}: the release stayed finite; the test needs one that is not")


def test_support_clip_bounds_the_planned_values():
    env = RiverSwimMixture(S=6, H=10)
    agent = UCRLVTR(env, JointDP(1, 1e-5, calibration="adaptive"), episodes=100, seed=0)
    privrl.run(agent, env, 30, seed=0)
    V = agent.values()
    f = agent.mixture_features
    support = np.abs(f).sum(axis=-1) > 0  # (S, A, S)
    R = np.asarray(env.R)
    for h in range(agent.H):
        nxt = V[h + 1]
        lo = np.where(support, nxt[None, None, :], np.inf).min(axis=-1)
        hi = np.where(support, nxt[None, None, :], -np.inf).max(axis=-1)
        assert np.all(V[h] <= (R[h] + hi).max(axis=1) + 1e-9)
        assert np.all(V[h] >= (R[h] + lo).max(axis=1) - 1e-9)


@pytest.mark.parametrize("exploration", ["optimism", "sampling"])
def test_learns_with_defaults_and_either_centre(exploration):
    # no beta_scale, no tuning: RiverSwimMixture(6), JDP eps 10, both centres learn (the
    # practical rule with beta_scale 1 does not: its regret grows linearly here)
    env = RiverSwimMixture(S=6, H=20)
    K = 3000
    regrets = {}
    for centre in ("feasible", "zero"):
        agent = UCRLVTR(
            env,
            JointDP(10, 1e-5, calibration="adaptive"),
            episodes=K,
            seed=0,
            centre=centre,
            exploration=exploration,
        )
        res = privrl.run(agent, env, K, seed=1)
        regrets[centre] = float(res.regret[-1])
        assert res.gaps[-K // 10 :].mean() < 0.01 * env.H  # the last 10% play near-optimally
    practical_agent = UCRLVTR(env, JointDP(10, 1e-5, calibration="practical"), episodes=K, seed=0)
    slow = float(privrl.run(practical_agent, env, K, seed=1).regret[-1])
    assert max(regrets.values()) < slow


def test_normalized_target_learns_a_flat_value_river():
    # RiverSwimMixture(S=20, H=20): V* = 0.175 on a scale of H = 20, so V varies by little over a
    # pair's support. With y = V(s') the JDP eps 10 agent's data stayed below its noise (every
    # private agent settled at 0.0147 regret per episode); the normalized target fills [0, H]
    # with that variation and stays within the plan's bounds (nothing clipped).
    env = RiverSwimMixture(S=20, H=20)
    K = 20_000
    agent = UCRLVTR(env, JointDP(10, 1e-5), episodes=K, seed=0)
    res = privrl.run(agent, env, K, seed=0)
    assert agent.clip_count == 0
    assert res.gaps[-K // 10 :].mean() < 1e-3  # measured 2.1e-4 (seeds 0-2: 2.1-3.2e-4)


def test_normalized_target_stays_in_the_plans_bounds():
    # dense supports (every next state), optimism and sampling, JDP and LDP: no user is clipped
    env = RandomLinearMixtureMDP(seed=1)
    for privacy in (JointDP(1, 1e-5), LocalDP(10, 1e-5)):
        for exploration in ("optimism", "sampling"):
            agent = UCRLVTR(env, privacy, episodes=300, seed=0, exploration=exploration)
            privrl.run(agent, env, 300, seed=0)
            assert agent.clip_count == 0


def test_plus_runs_adaptive():
    env = RiverSwimMixture(S=6, H=10)
    agent = UCRLVTRPlus(env, JointDP(10, 1e-5, calibration="adaptive"), episodes=500, seed=0)
    res = privrl.run(agent, env, 500, seed=0)
    assert math.isfinite(float(res.regret[-1]))
    assert agent.beta_check == 1.0  # one std of the weighted regression


# ------------------------------------------------------------------ LSVI-UCB


def test_lsvi_noise_and_report_do_not_move_with_the_rule():
    from privrl.agents import LSVIUCB
    from privrl.envs import RandomLinearMDP

    env = RandomLinearMDP(S=8, A=3, d=4, H=4, seed=0)
    agents = {
        (c, e): LSVIUCB(env, JointDP(5, 1e-5, calibration=c), episodes=400, seed=3, exploration=e)
        for c in ("practical", "adaptive")
        for e in ("optimism", "sampling")
    }
    for a in agents.values():
        assert a.B == agents[("practical", "optimism")].B  # the schedule is the privacy side's
        privrl.run(a, env, 200, seed=7)
    base = agents[("practical", "optimism")]
    for k, a in agents.items():
        np.testing.assert_array_equal(a._core.noise(), base._core.noise(), err_msg=str(k))
        rep, ref = a.privacy_report(), base.privacy_report()
        for key in ("tight", "paper", "mechanisms", "statistics", "target"):
            assert rep[key] == ref[key], (k, key)
    weights = {k: a.release().weights for k, a in agents.items()}
    assert not np.allclose(weights[("adaptive", "optimism")], weights[("practical", "optimism")])


def test_lsvi_default_exploration_is_per_rule():
    from privrl.agents import LSVIUCB
    from privrl.envs import RandomLinearMDP

    env = RandomLinearMDP(S=8, A=3, d=4, H=4, seed=0)
    assert LSVIUCB(env, JointDP(5, 1e-5), episodes=50, seed=0).exploration == "sampling"
    assert LSVIUCB(env, JointDP(5, 1e-5, calibration="paper"), episodes=50, seed=0).exploration == "optimism"
    assert UCRLVTR(RiverSwimMixture(S=4, H=4), JointDP(5, 1e-5), episodes=50).exploration == "optimism"
    # non-private under the adaptive rule: the rate-preserving static schedule, B = ceil(sqrt(d H K))
    assert math.ceil(math.sqrt(4 * 4 * 400)) == LSVIUCB(env, NonPrivate(), episodes=400, seed=0).B


def test_lsvi_learns_frozenlake_by_default():
    gym = pytest.importorskip("gymnasium")
    from privrl.agents import LSVIUCB
    from privrl.envs import FeatureMap

    K = 20_000  # App. D's B = 8 releases: the first after 2,500 users
    agent = LSVIUCB(FeatureMap.one_hot(16, 4, 8), JointDP(10, 1e-5), episodes=K, seed=0)
    res = privrl.learn(agent, gym.make("FrozenLake-v1", is_slippery=False), seed=1, progress=False)
    returns = np.asarray(res.returns)
    assert returns[: K // 10].mean() < 0.05 < 0.9 <= returns[-K // 10 :].mean()


# ------------------------------------------------------------------ beta_scale / beta


def test_beta_scale_scales_only_the_random_part_of_the_width():
    """Under the adaptive rule beta_scale is the random part's radius in standard deviations:
    explore = V diag((rho r + b)^2) V^T (the numpy oracle above with rho = 0.3); beta overrides it
    the same way, and calibration.beta_used records it."""
    env = RiverSwimMixture(S=6, H=5)
    rng = np.random.default_rng(1)
    X = rng.uniform(0, 1, size=(7, 5, 3))
    y = rng.uniform(0, 5, size=(7, 5))
    rels = {}
    for kw in ({"beta_scale": 0.3}, {"beta": 0.3}, {}):
        agent = UCRLVTR(env, NonPrivate(calibration="adaptive"), episodes=20, seed=0, **kw)
        assert agent.calibration.beta_used == (0.3 if kw else 1.0)
        for k in range(7):
            agent.observe_statistics(X[k], y[k])
        rels[tuple(kw)] = agent.release()
    w0 = practical.feasible_centre(agent.mixture_features)
    D = practical.centre_distance(agent.C_w, agent.mixture_features, w0)
    lam = (max(2.5, SIGMA_MIN) / D) ** 2
    for h in range(5):
        _, w, a, V, lift = _oracle(X[:, h].T @ X[:, h], X[:, h].T @ y[:, h], lam, w0, D)
        r, b = np.sqrt(2.5**2 / a), (lam + lift) * D / a
        for key in (("beta_scale",), ("beta",)):
            np.testing.assert_allclose(rels[key].weights[h], w, rtol=1e-9, atol=1e-9)
            want = V @ np.diag((0.3 * r + b) ** 2) @ V.T
            np.testing.assert_allclose(rels[key].explore[h], want, rtol=1e-9, atol=1e-9)
        np.testing.assert_array_equal(rels[()].weights[h], rels[("beta",)].weights[h])


@pytest.mark.parametrize("algorithm", ["UCRL-VTR", "UCRL-VTR+", "LSVI-UCB"])
def test_beta_scale_moves_the_policy_not_the_noise(algorithm):
    """The radius is the regret side: the released noise and the privacy report stay, the run
    moves; a radius past MAX_RADIUS acts as MAX_RADIUS and the run stays finite."""
    from privrl.agents import LSVIUCB
    from privrl.envs import RandomLinearMDP
    from privrl.privacy.adaptive import MAX_RADIUS

    if algorithm == "LSVI-UCB":
        env, cls = RandomLinearMDP(S=8, A=3, d=4, H=4, seed=0), LSVIUCB
    else:
        env, cls = RandomLinearMixtureMDP(seed=0), (UCRLVTR if algorithm == "UCRL-VTR" else UCRLVTRPlus)
    agents = {s: cls(env, JointDP(5, 1e-5), episodes=400, seed=3, beta_scale=s) for s in (1.0, 0.1, 1e300)}
    runs = {s: privrl.run(a, env, seed=7) for s, a in agents.items()}
    assert agents[1e300].calibration.beta_used == MAX_RADIUS
    assert np.isfinite(runs[1e300].regret).all()
    # the run moves (without noise: at K = 400 the JDP widths still saturate the value clip)
    moved = [
        privrl.run(cls(env, NonPrivate(), episodes=400, seed=3, beta_scale=s), env, seed=7) for s in (1, 0.1)
    ]
    assert not np.array_equal(moved[0].regret, moved[1].regret)
    ref = agents[1.0]
    for s, a in agents.items():
        args = () if cls is LSVIUCB else (0,)
        noise, base = a._core.noise(*args), ref._core.noise(*args)
        for n, m in zip(noise, base, strict=True):
            np.testing.assert_array_equal(n, m, err_msg=str(s))
        rep, want = a.privacy_report(), ref.privacy_report()
        for key in ("tight", "paper", "mechanisms", "statistics", "target"):
            assert rep[key] == want[key], (s, key)


def test_report_describes_the_adaptive_regret_side():
    """privacy_report()["regret_side"] describes the rule in use, not the theorem's (it did)."""
    from privrl.agents import LSVIUCB, LinUCB
    from privrl.envs import ContextualBandit, RandomLinearMDP

    vtr = UCRLVTR(RiverSwimMixture(S=4, H=3), JointDP(1, 1e-5), episodes=50).privacy_report()["regret_side"]
    assert vtr["rule"] == "adaptive" and "lam = (max(sigma, 1/2) / D)^2" in vtr["regularization"]
    assert "bias bound" in vtr["bonus"] and "theorem" not in vtr["bonus"] + vtr["regularization"]
    lin = RandomLinearMDP(S=8, A=3, d=4, H=4, seed=0)
    lsvi = LSVIUCB(lin, JointDP(5, 1e-5), episodes=400).privacy_report()["regret_side"]
    assert "posterior" in lsvi["regularization"] and "||phi||_Sigma" in lsvi["bonus"]
    bandit = ContextualBandit(np.eye(3)[:2] * 0.5, np.array([[0.1, 0.9], [0.8, 0.2]]))
    for calibration in ("adaptive", "practical"):
        rs = LinUCB(bandit, JointDP(1, 1e-5, calibration=calibration), episodes=20).privacy_report()
        assert "shift 1 x Upsilon_t" in rs["regret_side"]["regularization"]
        assert "s_a(x)" in rs["regret_side"]["bonus"] and "w0" not in rs["regret_side"]["regularization"]


@pytest.mark.parametrize("cls", [UCRLVTR, UCRLVTRPlus])
def test_a_model_at_the_centre_plans_with_it(cls):
    """D = ||w - w0|| bound 0 (C_w = ||w0||: equal mixture weights, d = 1) made the adaptive ridge
    lam = (sigma / D)^2 infinite and the first policy NaN; the floored D plans with w0 = w: no
    regret at all, exactly (V* and V^pi by the same kernel)."""
    from privrl.envs import LinearMixtureMDP

    rng = np.random.default_rng(0)
    phi = np.stack([rng.dirichlet(np.ones(4), size=(4, 2)) for _ in range(2)], -1) / np.sqrt(2)
    w = np.full((3, 2), np.sqrt(2) / 2)  # the min-norm feasible model itself
    env = LinearMixtureMDP(phi, w, rng.uniform(size=(3, 4, 2)), np.ones(4) / 4)
    one = LinearMixtureMDP(np.ones((1, 1, 1, 1)), np.ones((1, 1)), np.full((1, 1, 1), 0.5), np.ones(1))
    for e in (env, one):
        for privacy in (NonPrivate(), JointDP(1, 1e-5), LocalDP(1, 1e-5)):
            res = privrl.run(cls(e, privacy, episodes=100, seed=0), e, seed=1)
            assert res.final_regret == 0.0 and (np.asarray(res.regret) == 0.0).all()


def _tabular_mixture(seed: int, S: int = 4, A: int = 2, H: int = 4):
    """A random tabular MDP as a linear mixture: phi(s'|s, a) = e_(s, a, s') / 2, w_h = 2 vec(P)."""
    from privrl.envs import LinearMixtureMDP

    rng = np.random.default_rng(seed)
    phi = np.zeros((S, A, S, S * A * S))
    for s in range(S):
        for a in range(A):
            for t in range(S):
                phi[s, a, t, (s * A + a) * S + t] = 0.5
    P = rng.dirichlet(np.ones(S), size=(S, A))
    R = np.tile(rng.random((S, A)), (H, 1, 1))
    return LinearMixtureMDP(phi, np.tile(2 * P.reshape(-1), (H, 1)), R, np.ones(S) / S)


@pytest.mark.parametrize(
    "env", [RiverSwimMixture(S=6, H=10), RandomLinearMixtureMDP(seed=1), _tabular_mixture(9)]
)
def test_planned_values_match_numpy_oracle_of_the_normalized_plan(env):
    # Q_h(s, a) = r + lo + (hi - lo) / H clip(<phi_f, w~> + ||phi_f||_E, 0, H), f = H (V_{h+1} - lo)
    # / (hi - lo) over the pair's support (the level <phi_1, w> = 1 is known): recomputed from the
    # billboard the agent released and its own planned V_{h+1}
    agent = UCRLVTR(env, JointDP(10, 1e-5), episodes=200, seed=0, exploration="optimism")
    privrl.run(agent, env, 60, seed=1)
    V, board, feats = agent.values(), agent.release(), agent.mixture_features
    H, S, A = env.H, env.S, env.A
    support = np.abs(feats).sum(axis=-1) > 0
    R = np.asarray(env.R)
    for h in range(H):
        w, E = np.asarray(board.weights)[h], np.asarray(board.explore)[h]
        Q = np.empty((S, A))
        for s in range(S):
            for a in range(A):
                sup = support[s, a]
                lo, hi = V[h + 1][sup].min(), V[h + 1][sup].max()
                f = np.where(sup, H * (V[h + 1] - lo) / (hi - lo) if hi - lo > 1e-9 else H, 0.0)
                pf = f @ feats[s, a]
                x = np.clip(pf @ w + math.sqrt(max(pf @ E @ pf, 0.0)), 0.0, H)
                Q[s, a] = R[h, s, a] + lo + (hi - lo) / H * x
        np.testing.assert_allclose(V[h], Q.max(axis=1), rtol=1e-9, atol=1e-12)


def test_nonprivate_default_learns_a_random_tabular_mixture():
    # Planning on phi_V left the level direction phi_1 (never measured by the normalized targets)
    # in every width: every Q stayed at its support ceiling and this instance paid 0.125 per
    # episode forever (2,469 over 20,000 users; 250.5 over 2,000, 0.138 per episode at the end)
    env, K = _tabular_mixture(9), 2000
    res = privrl.run(UCRLVTR(env, NonPrivate(), episodes=K, seed=0), env, seed=1)
    gaps = np.diff(np.concatenate([[0.0], np.asarray(res.regret)]))
    assert gaps[-K // 10 :].mean() < 0.01

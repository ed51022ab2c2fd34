"""The practical calibration: the same noise and the same (eps, delta) as "tight" (privacy side
untouched), its regret-side formulas against hand values and simulation, and its post-processing."""

import math

import numpy as np
import pytest

from privrl import kernels, run
from privrl.agents import LSVIUCB, UCRLVTR, UCRLVTRPlus
from privrl.agents.lsvi_ucb import calibration as lsvi_cal
from privrl.envs import RandomLinearMDP, RandomLinearMixtureMDP, RiverSwimMixture
from privrl.envs.finite import FiniteMDP
from privrl.exceptions import AssumptionError
from privrl.privacy import JointDP, LocalDP, NonPrivate, practical


# ------------------------------------------------------------------------------------------
# Formulas
# ------------------------------------------------------------------------------------------
def test_noise_bound_hand_values():
    # d = 3, alpha = 1e-4: 2 sqrt 3 + 2 sqrt(log 2e4) = 3.464102 + 2 * 3.146981 = 9.758064
    assert practical.matrix_noise_bound(2.0, 3, 1e-4) == pytest.approx(2 * 9.758064, rel=1e-6)
    # sqrt 3 + sqrt(2 log 1e4) = 1.732051 + 4.291932 = 6.023983
    assert practical.vector_noise_bound(2.0, 3, 1e-4) == pytest.approx(2 * 6.023983, rel=1e-6)
    # (Z' + Z'^T)/sqrt 2 with Z' ~ N(0, 3^2), v = 4 nodes: off-diagonal std 3 * 2 = 6; divisor 2: 3 sqrt 2
    assert practical.released_matrix_std(3.0, math.sqrt(2), 4.0) == pytest.approx(6.0)
    assert practical.released_matrix_std(3.0, 2.0, 4.0) == pytest.approx(3 * math.sqrt(2))
    # gamma = scale (C + Ups C_w + reg D) = 0.5 (1 + 2 * 3 + 4 * 4) = 11.5
    assert practical.confidence_noise_width(1.0, 2.0, 3.0, 4.0, 4.0, 0.5) == pytest.approx(11.5)


@pytest.mark.parametrize("d", [2, 5, 16])
def test_noise_bounds_hold_in_simulation(d):
    rng = np.random.default_rng(d)
    alpha, sigma, n = 1e-2, 1.7, 20_000
    z = rng.normal(0.0, sigma, size=(n, d, d))
    sym = (z + np.transpose(z, (0, 2, 1))) / math.sqrt(2)
    norms = np.abs(np.linalg.eigvalsh(sym)).max(axis=1)
    bound = practical.matrix_noise_bound(practical.released_matrix_std(sigma, math.sqrt(2), 1.0), d, alpha)
    assert np.mean(norms > bound) <= alpha  # and far below it: the bound is conservative
    assert np.quantile(norms, 0.99) > 0.4 * bound  # ... but not vacuous
    g = rng.normal(0.0, sigma, size=(n, d))
    assert np.mean(np.linalg.norm(g, axis=1) > practical.vector_noise_bound(sigma, d, alpha)) <= alpha


def test_feasible_centre():
    env = RiverSwimMixture(S=6, H=20)
    w0 = practical.feasible_centre(env.features)
    phi_1 = env.features.sum(axis=2).reshape(-1, env.d)
    np.testing.assert_allclose(phi_1 @ w0, 1.0, atol=1e-12)  # every row of the model sums to one
    # RiverSwimMixture: phi_1 = (1, 1, 1)/sqrt 3 everywhere, so w0 = (1, 1, 1)/sqrt 3 (min norm)
    np.testing.assert_allclose(w0, np.ones(3) / math.sqrt(3), atol=1e-12)
    mix = RandomLinearMixtureMDP(S=6, A=2, d=3, H=3, seed=0)
    for h in range(mix.H):  # the true weights satisfy the same constraints
        np.testing.assert_allclose(mix.features.sum(axis=2).reshape(-1, 3) @ mix.weights[h], 1.0, atol=1e-9)


def test_centre_distance():
    """||w - w0|| <= sqrt(C_w^2 - ||w0||^2) when w0 is exactly feasible (Pythagoras)."""
    env = RiverSwimMixture(S=6, H=20)
    w0 = practical.feasible_centre(env.features)
    # by hand: C_w^2 = 3 (0.81 + 0.0025 + 0.0025) = 2.445, ||w0|| = 1
    dist = practical.centre_distance(env.C_w, env.features, w0)
    assert dist == pytest.approx(math.sqrt(1.445), rel=1e-12)
    # the true w has ||w|| = C_w here, so the bound is attained
    assert np.linalg.norm(env.weights[0] - w0) == pytest.approx(dist, rel=1e-12)
    mix = RandomLinearMixtureMDP(S=6, A=2, d=3, H=3, seed=0)
    w0 = practical.feasible_centre(mix.features)
    dist = practical.centre_distance(mix.C_w, mix.features, w0)
    for h in range(mix.H):
        assert np.linalg.norm(mix.weights[h] - w0) <= dist + 1e-12
    # a centre that violates the constraints falls back to the triangle inequality
    far = w0 + 0.1
    assert practical.centre_distance(2.0, mix.features, far) == pytest.approx(2.0 + np.linalg.norm(far))


def test_practical_release_is_the_formula():
    """One step by hand: A = floor_lam(G~ + (lam + S) I), w~ = A^-1 (u~ + (A - G~) w0), bonus
    (the agents' kernel, privrl.kernels.floored_release, and the width of privrl.privacy.practical)."""
    rng = np.random.default_rng(0)
    d, lam, cw, beta = 3, 4.0, 1.5, 2.0
    w0 = np.array([0.3, 0.2, 0.1])
    gram = rng.normal(size=(1, d, d))
    gram = gram + np.transpose(gram, (0, 2, 1))  # indefinite: the floor is active
    target = rng.normal(size=(1, d))
    shift = 1.0 * 3.0  # shift_mult * Upsilon_t, Upsilon_t = 3, C_t = 1
    design, inverse, inverse2, weights, correction = kernels.floored_release(gram, target, lam, shift, w0)
    m = gram[0] + (lam + 3.0) * np.eye(d)
    ev, v = np.linalg.eigh(m)
    a = v @ np.diag(np.maximum(ev, lam)) @ v.T
    np.testing.assert_allclose(design[0], a, atol=1e-12)
    np.testing.assert_allclose(inverse[0], np.linalg.inv(a), atol=1e-12)
    np.testing.assert_allclose(weights[0], np.linalg.solve(a, target[0] + (a - gram[0]) @ w0), atol=1e-10)
    corr = np.max(np.maximum(ev, lam) - ev)
    assert correction[0] == pytest.approx(corr)
    gamma = 0.5 * (1.0 + 3.0 * cw + (3.0 + corr) * 0.7)
    got = practical.confidence_noise_width(1.0, 3.0, cw, shift + correction, 0.7, 0.5)
    ainv = np.linalg.inv(a)
    bonus = beta**2 * inverse + (got**2)[:, None, None] * inverse2
    np.testing.assert_allclose(bonus[0], beta**2 * ainv + gamma**2 * ainv @ ainv, atol=1e-12)
    assert got[0] == pytest.approx(gamma)


def _close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9 * max(1.0, float(np.abs(b).max())))


@pytest.mark.parametrize("centre", ["feasible", "zero"])
def test_agent_practical_release_is_the_formula(centre):
    """The agent's practical billboard is that formula on its released sums (LDP: the sums of the
    users' messages) after t users: Upsilon_t, C_t the noise bounds at the released variance
    (t draws), S_t = shift_mult Upsilon_t, the ridge's centre w0 (feasible or 0) and its distance
    bound D (Pythagoras, or C_w for 0), gamma_t = beta_scale (C_t + Upsilon_t C_w + (S_t + ||E||) D),
    E_h = beta^2 A^-1 + gamma_t^2 A^-2."""
    env = RiverSwimMixture(S=6, H=5)
    agent = UCRLVTR(
        env, LocalDP(10.0, 1e-5, calibration="practical"), episodes=50, seed=3, centre=centre, beta_scale=0.5
    )
    rng = np.random.default_rng(0)
    for _ in range(7):
        agent.observe(env.sample_episode(agent.policy(), rng))
    cal, d, t = agent.calibration, agent.d, agent.k
    v = agent._core.variance_factor(0, t)
    assert v == t  # t users' noises
    ups = practical.matrix_noise_bound(
        practical.released_matrix_std(cal.sigma_B, cal.sym_divisor, v), d, cal.alpha
    )
    c_t = practical.vector_noise_bound(cal.sigma_g * math.sqrt(v), d, cal.alpha)
    shift = cal.shift_mult * ups
    if centre == "feasible":
        w0 = practical.feasible_centre(env.features)
        dist = practical.centre_distance(env.C_w, env.features, w0)
    else:
        w0, dist = np.zeros(d), env.C_w
    rel = agent.release()
    gram, target = agent._core.sums(0)
    for h in range(agent.H):
        ev, V = np.linalg.eigh(gram[h] + (cal.lam + shift) * np.eye(d))
        floored = np.maximum(ev, cal.lam)
        a = V @ np.diag(floored) @ V.T
        ainv = np.linalg.inv(a)
        gamma = 0.5 * (c_t + ups * env.C_w + (shift + np.max(floored - ev)) * dist)
        _close(rel.design[h], a)
        _close(rel.inverse[h], ainv)
        _close(rel.weights[h], np.linalg.solve(a, target[h] + (a - gram[h]) @ w0))
        assert rel.gamma[h] == pytest.approx(gamma, rel=1e-9)
        _close(rel.bonus[h], agent.beta**2 * ainv + gamma**2 * ainv @ ainv)
        np.testing.assert_array_equal(rel.explore[h], rel.bonus[h])


# ------------------------------------------------------------------------------------------
# Privacy side untouched: same noise, same report
# ------------------------------------------------------------------------------------------
def _agents(model, seed=3):
    mix = RandomLinearMixtureMDP(S=5, A=2, d=3, H=3, seed=1)
    lin = RandomLinearMDP(S=6, A=2, d=3, H=3, seed=1)
    return [
        (UCRLVTR(mix, model, episodes=40, seed=seed), mix),
        (UCRLVTRPlus(mix, model, episodes=40, seed=seed), mix),
    ] + (
        [(LSVIUCB(lin, model, batches=5, episodes=40, seed=seed), lin)] if isinstance(model, JointDP) else []
    )


def _same_users(a, b, env, n):
    """Feed both agents the same n users (trajectories drawn under a's policy, b plans too)."""
    for k in range(n):
        traj = env.sample_episode(a.policy(), np.random.default_rng(k))
        b.policy()
        a.observe(traj)
        b.observe(traj)


@pytest.mark.parametrize("family,mechanism", [(JointDP, "tree"), (JointDP, "blt"), (LocalDP, None)])
def test_practical_adds_the_tight_noise(family, mechanism):
    kw = {"mechanism": mechanism} if family is JointDP else {}
    tight = _agents(family(2.0, 1e-5, calibration="tight", **kw))
    prac = _agents(family(2.0, 1e-5, calibration="practical", **kw))
    for (a, env), (b, _) in zip(tight, prac, strict=True):
        plan = a.release_plan()
        assert plan == b.release_plan()
        for k in plan.scale_keys:
            assert getattr(a.calibration, k) == getattr(b.calibration, k)  # the same noise scales ...
        ra, rb = a.privacy_report(), b.privacy_report()
        assert ra["tight"]["budget"] == rb["tight"]["budget"]  # ... hence the same (eps, delta)
        assert rb["calibration"] == "practical" and rb["within_target"]["tight"]
        _same_users(a, b, env, 12)  # ... and the same released noise, draw for draw
        if isinstance(a, LSVIUCB):
            np.testing.assert_array_equal(a._core.noise(), b._core.noise())
            np.testing.assert_array_equal(a._core.last_eta, b._core.last_eta)
        elif a.calibration.kind == "jdp":
            for i in range(len(a.guards)):  # every regression's mechanisms
                for x, y in zip(a._core.noise(i), b._core.noise(i), strict=True):
                    np.testing.assert_array_equal(x, y)
        else:  # LDP: the users' randomizers, keys and stream positions (draws) alike
            for i in range(len(a.guards)):
                assert a._core.intake_state(i) == b._core.intake_state(i)


def test_regret_side_moves_without_touching_the_noise():
    """Changing beta_scale (regret side) never changes the released noise."""
    env = RandomLinearMixtureMDP(S=5, A=2, d=3, H=3, seed=1)
    m = JointDP(1.0, 1e-5, calibration="practical")
    a, b = (
        UCRLVTR(env, m, episodes=30, seed=5, beta_scale=1.0),
        UCRLVTR(env, m, episodes=30, seed=5, beta_scale=0.01),
    )
    assert a.calibration.sigma_B == b.calibration.sigma_B
    _same_users(a, b, env, 10)
    for x, y in zip(a._core.noise(0), b._core.noise(0), strict=True):
        np.testing.assert_array_equal(x, y)
    assert a.release().bonus is not None and not np.allclose(a.release().bonus, b.release().bonus)


def test_practical_defaults():
    assert JointDP(1.0, 1e-5, calibration="practical").mechanism == "blt"
    cal = UCRLVTR(
        RiverSwimMixture(S=6, H=20), JointDP(10.0, 1e-5, calibration="practical"), episodes=100
    ).calibration
    assert cal.release_rule == "practical" and cal.shift == 0.0 and cal.shift_mult == 1.0
    # the statistical width is the non-private radius
    np_cal = UCRLVTR(RiverSwimMixture(S=6, H=20), NonPrivate(), episodes=100).calibration
    assert cal.beta == np_cal.beta
    lin = RandomLinearMDP(S=6, A=2, d=3, H=3, seed=1)
    lcal = LSVIUCB(lin, JointDP(10.0, 1e-5, calibration="practical"), episodes=200).calibration
    assert lcal.shift_mult == lsvi_cal.PRACTICAL_LSVI_SHIFT_MULT
    assert lsvi_cal.lsvi_ucb_num_batches(10.0, 3, 200, 3) == lcal.B


def test_scaled_batches_grow_when_the_noise_shrinks():
    B_paper = lsvi_cal.lsvi_ucb_num_batches(10.0, 20, 100_000, 16)
    B_scaled = lsvi_cal.lsvi_ucb_practical_batches(10.0, 1e-5, 20, 100_000, 16, 0.05, "blt")
    # rho = sigma_u(paper) / sigma_u(tight) at App. D's B: B = ceil((K rho eps)^{2/5} / (d^{3/5} H^{1/5}))
    tight_u = lsvi_cal._tight_sigma_u(10.0, 1e-5, 20, 100_000, 16, B_paper, "blt")
    rho = lsvi_cal.lsvi_ucb_sigma_u(10.0, 1e-5, 20, B_paper) / tight_u
    assert B_scaled == math.ceil((1e5 * 10 * rho) ** 0.4 / (16**0.6 * 20**0.2)) > B_paper
    lin = RandomLinearMDP(S=6, A=2, d=3, H=3, seed=1)
    a = LSVIUCB(lin, JointDP(10.0, 1e-5, calibration="practical"), batches="scaled", episodes=2000)
    expected = lsvi_cal.lsvi_ucb_practical_batches(10.0, 1e-5, 3, 2000, 3, 0.05, "blt")
    assert expected == a.B


@pytest.mark.slow
def test_practical_jdp_ucrl_vtr_learns_riverswim():
    """RiverSwimMixture: the tight calibration's shift makes every value pessimistic ("always
    left", 7.114 per episode); the practical release learns at eps = 10 (beta_scale 0.1)."""
    env = RiverSwimMixture(S=6, H=20)
    K = 6000
    out = {}
    for cal in ("tight", "practical"):
        agent = UCRLVTR(env, JointDP(10.0, 1e-5, calibration=cal), episodes=K, seed=0, beta_scale=0.1)
        out[cal] = run(agent, env, seed=1).regret
    assert out["tight"][-1] == pytest.approx(7.114 * K, rel=1e-3)
    assert out["practical"][-1] < 0.2 * out["tight"][-1]
    # and it has stopped paying: the last third costs little
    assert out["practical"][-1] - out["practical"][2 * K // 3] < 0.05 * out["tight"][-1]


def test_centre_option():
    """centre="zero" is the paper's ridge (pull towards 0, distance C_w); it changes the regret side
    only: same released noise, same privacy report, different estimate; bad values are refused."""
    env = RiverSwimMixture(S=6, H=5)
    priv = JointDP(10.0, 1e-5, calibration="practical")
    feasible = UCRLVTR(env, priv, episodes=50, seed=3)
    zero = UCRLVTR(env, priv, episodes=50, seed=3, centre="zero")
    assert feasible.calibration.centre == "feasible" and zero.calibration.centre == "zero"
    assert UCRLVTR(env, JointDP(10.0, 1e-5, calibration="tight"), episodes=50).calibration.centre is None
    # the ridge's centre is the billboard before any user (w~ = A^-1 (lam + S_0) w0 = w0); its
    # distance bound (C_w for 0) enters the width (test_agent_practical_release_is_the_formula)
    assert not zero.release().weights.any()
    w0 = np.broadcast_to(practical.feasible_centre(env.features), (env.H, env.d))
    np.testing.assert_allclose(feasible.release().weights, w0, rtol=1e-12)
    assert "centred at 0" in zero.privacy_report()["regret_side"]["regularization"]
    assert "feasible model" in feasible.privacy_report()["regret_side"]["regularization"]
    rep_f, rep_z = feasible.privacy_report(), zero.privacy_report()
    assert rep_f["tight"]["budget"] == rep_z["tight"]["budget"]
    _same_users(feasible, zero, env, 20)
    # same users, same noise stream: the released noise agrees draw for draw, the estimates do not
    for x, y in zip(feasible._core.noise(0), zero._core.noise(0), strict=True):
        np.testing.assert_array_equal(x, y)
    assert not np.allclose(feasible.release().weights, zero.release().weights)
    with pytest.raises(ValueError, match="centre"):
        UCRLVTR(env, priv, episodes=50, centre="origin")


class _OwnMixture(FiniteMDP):
    """A user's own FiniteMDP with mixture features and a claimed C_w (Asm. 2 is the user's claim):
    P and R random, the features d = 3 random distributions over s' per (s, a), divided by sqrt(3)."""

    def __init__(self, scale, C_w):
        rng = np.random.default_rng(0)
        S, A, H, d = 4, 2, 3, 3
        P = rng.dirichlet(np.ones(S), size=(H, S, A))
        super().__init__(P, rng.uniform(size=(H, S, A)), np.full(S, 1 / S), name="own")
        features = rng.dirichlet(np.ones(S), size=(S, A, d)).transpose(0, 1, 3, 2) / math.sqrt(d)
        self.features, self.C_w = features * scale, C_w


def test_centre_distance_when_the_centre_lies_outside_the_C_w_ball():
    """Features scaled by 1/2 make the exact centre's ||w0|| = 2 ||w0 of the base||: above C_w no w of
    norm <= C_w satisfies the constraints, so Pythagoras's sqrt(C_w^2 - ||w0||^2) (clamped to 0) was a
    bound of 0 that pinned the adaptive estimate to w0 whatever the users sent; the triangle
    inequality bounds ||w - w0|| for every ||w|| <= C_w. Features so small that ||w0||^2 overflows
    are refused, naming the features (was NaN weights at the first policy)."""
    base = RiverSwimMixture(S=4, H=3)
    f = base.features * 0.5
    w0 = practical.feasible_centre(f)
    assert np.linalg.norm(w0) > 1.0  # exact, and outside C_w = 1
    assert practical.centre_distance(1.0, f, w0) == pytest.approx(1.0 + np.linalg.norm(w0), rel=1e-12)
    # unchanged where the centre is inside the ball: the same bits as the closed form
    w0 = practical.feasible_centre(base.features)
    assert practical.centre_distance(base.C_w, base.features, w0) == math.sqrt(base.C_w**2 - float(w0 @ w0))
    env = _OwnMixture(0.5, 1.0)  # ||w0|| = 2 sqrt(3) / sqrt(3) = 2 > C_w
    centre = practical.feasible_centre(env.features)
    assert np.linalg.norm(centre) == pytest.approx(2.0, rel=1e-12)
    agent = UCRLVTR(env, NonPrivate(), episodes=300, seed=0)
    run(agent, env, seed=1)
    assert np.abs(agent.release().weights - centre).max() > 1.0  # the users moved it (was 4e-16)
    tiny = _OwnMixture(1e-300, 1.0)
    with pytest.raises(AssumptionError, match=r"features.*too small.*centre='zero'"):
        UCRLVTR(tiny, NonPrivate(), episodes=5, seed=0)
    UCRLVTR(tiny, NonPrivate(), episodes=5, seed=0, centre="zero")  # no centre, no overflow

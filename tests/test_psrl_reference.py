"""Private tabular PSRL (branch psrl, work in progress): its formulas against hand-computed values, its
release plan and calibration, and the numpy reference (privrl.agents.psrl)."""

import dataclasses
import math

import numpy as np
import pytest

from privrl.agents.psrl.calibration import (
    PSRLCalibration,
    calibrate_psrl,
    psrl_accountant,
    release_plan,
)
from privrl.agents.psrl.formulas import (
    psrl_batch_bounds,
    psrl_num_batches,
    psrl_releases,
    psrl_reward_prior,
    psrl_sensitivity,
    psrl_sigma,
    psrl_x_bound,
)
from privrl.agents.psrl.reference import (
    Billboard,
    DrawLog,
    Replay,
    capped_increment,
    greedy_plan,
    policy_values,
    posterior_model,
    run_reference,
    simplex_project,
    user_policy,
)
from privrl.common.errors import PrivacyParameterError
from privrl.privacy.common import tight_scales
from privrl.privacy.gdp import analytic_gaussian_delta, gaussian_delta
from privrl.privacy.plans import plan_mu


# --------------------------------------------------------------------------------------------
# formulas
# --------------------------------------------------------------------------------------------
def test_sensitivity_is_two_sqrt_m_h_by_hand():
    # 2 sqrt(20) = sqrt(80) = 8.944271909999159
    assert psrl_sensitivity(20, 1) == 8.944271909999159
    assert psrl_sensitivity(20) == psrl_sensitivity(20, 1)
    assert psrl_sensitivity(8, 2) == 8.0  # 2 sqrt(16)
    assert psrl_sensitivity(1, 1) == 2.0


def _user_statistic(visits, S, A, m):
    """x = (counts n(s, a, s'), reward sums R(s, a)) of one episode's first m visits of each (s, a)."""
    c, r, seen = np.zeros((S, A, S)), np.zeros((S, A)), np.zeros((S, A), int)
    for s, a, rew, s2 in visits:
        if seen[s, a] < m:
            c[s, a, s2] += 1
            r[s, a] += rew
        seen[s, a] += 1
    return np.concatenate([c.ravel(), r.ravel()])


def test_sensitivity_is_reached_by_two_users_on_disjoint_pairs_and_never_exceeded():
    S, A, H, m = 16, 4, 20, 1
    # the tight pair: each user visits H distinct (s, a) once, paid 1; the two sets are disjoint
    u1 = [(h % S, h // S, 1.0, 0) for h in range(H)]
    u2 = [((h + H) % S, (h + H) // S, 1.0, 0) for h in range(H)]
    x1, x2 = _user_statistic(u1, S, A, m), _user_statistic(u2, S, A, m)
    assert np.linalg.norm(x1 - x2) == pytest.approx(psrl_sensitivity(H, m), rel=1e-15)
    # cap m = 2, 4: H / m pairs each visited m times into one s', paid 1 every time
    for mm in (2, 4):
        pairs = [(i % S, i // S) for i in range(2 * H // mm)]
        v1 = [(*pairs[h // mm], 1.0, 0) for h in range(H)]
        v2 = [(*pairs[H // mm + h // mm], 1.0, 0) for h in range(H)]
        y1, y2 = _user_statistic(v1, S, A, mm), _user_statistic(v2, S, A, mm)
        assert y1 @ y1 == 2 * mm * H
        assert np.linalg.norm(y1 - y2) == pytest.approx(psrl_sensitivity(H, mm), rel=1e-15)
    rng = np.random.default_rng(0)
    for mm in (1, 2, 3):
        worst = 0.0
        for _ in range(300):
            users = [
                [(rng.integers(2), rng.integers(2), rng.random(), rng.integers(S)) for _ in range(H)]
                for _ in range(2)
            ]
            xa, xb = (_user_statistic(u, S, A, mm) for u in users)
            assert xa @ xa <= 2 * mm * H + 1e-12  # ||x||^2 <= 2 m H
            worst = max(worst, float(np.linalg.norm(xa - xb)))
        assert worst <= psrl_sensitivity(H, mm) + 1e-12


def test_a_cap_above_the_horizon_is_the_cap_at_the_horizon():
    """m >= H counts every visit (a user makes H steps): ||x||^2 <= 2 min(m, H) H. By hand at H = 4:
    2 sqrt(4 * 4) = 8 for m = 4, 100 (it was 2 sqrt(400) = 40 at m = 100: 5x the noise for nothing),
    2 sqrt(8) for m = 2. Reached by two users each visiting one (s, a) H times into one s', paid 1
    (||x||^2 = H^2 + H^2), on disjoint pairs; never exceeded by random users."""
    H, S, A = 4, 3, 2
    assert psrl_sensitivity(H, 4) == psrl_sensitivity(H, 100) == psrl_sensitivity(H, 2**31) == 8.0
    assert psrl_sensitivity(H, 2) == 2.0 * math.sqrt(8.0)
    assert psrl_sigma(1.0, 1e-5, H, 100) == psrl_sigma(1.0, 1e-5, H, H)
    assert psrl_x_bound(H, 100) == psrl_x_bound(H, H) == math.sqrt(32.0)
    assert psrl_x_bound(20, 1) == math.sqrt(40.0)
    u1, u2 = [(0, 0, 1.0, 1)] * H, [(1, 1, 1.0, 2)] * H
    for m in (H, 100):
        x1, x2 = _user_statistic(u1, S, A, m), _user_statistic(u2, S, A, m)
        assert x1 @ x1 == 2 * H * H
        assert np.linalg.norm(x1 - x2) == psrl_sensitivity(H, m)
    rng = np.random.default_rng(1)
    for _ in range(300):
        v = [(rng.integers(2), rng.integers(2), rng.random(), rng.integers(S)) for _ in range(H)]
        x = _user_statistic(v, S, A, 100)
        assert x @ x <= psrl_sensitivity(H, 100) ** 2 / 2 + 1e-12


def test_sigma_matches_the_probes_digits_and_the_analytic_gaussian_delta():
    D = psrl_sensitivity(20, 1)
    for eps, printed in ((10.0, 4.47), (1.0, 33.37)):
        sigma = psrl_sigma(eps, 1e-5, 20, 1)
        assert round(sigma, 2) == printed
        assert analytic_gaussian_delta(sigma, D, eps) <= 1e-5
        # the smallest such sigma: 1e-6 less noise misses the target
        assert analytic_gaussian_delta(sigma * (1 - 1e-6), D, eps) > 1e-5
    # one Gaussian mechanism per user: delta(eps) of mu = Delta / sigma (Dong-Roth-Su), no B anywhere
    sigma = psrl_sigma(10.0, 1e-5, 20)
    assert gaussian_delta(10.0, D / sigma) <= 1e-5
    # the other horizons the probe printed: 2.83 (H = 8), 5.48 (H = 30)
    assert round(psrl_sigma(10.0, 1e-5, 8), 2) == 2.83
    assert round(psrl_sigma(10.0, 1e-5, 30), 2) == 5.48


def test_num_batches_is_app_d_with_d_equal_s_a_by_hand():
    # (K eps)^(2/5) / ((S A)^(3/5) H^(1/5)): 200000^0.4 / (64^0.6 20^0.2) = 131.95 / (12.13 * 1.82) = 5.97
    assert psrl_num_batches(10.0, 20, 20_000, 16, 4) == 6
    # eps 1: 20000^0.4 = 52.53, / 22.09 = 2.38 -> 3
    assert psrl_num_batches(1.0, 20, 20_000, 16, 4) == 3
    # H = 8 (the probe's non-slippery map): 131.95 / (12.13 * 1.516) = 7.17 -> 8
    assert psrl_num_batches(10.0, 8, 20_000, 16, 4) == 8
    assert psrl_num_batches(1e300, 20, 50, 16, 4) == 50  # clipped to K


def test_batch_bounds_and_releases():
    b = psrl_batch_bounds(20_000, 6)
    assert b.tolist() == [0, 3333, 6667, 10000, 13333, 16667, 20000]
    assert psrl_batch_bounds(5, 5).tolist() == [0, 1, 2, 3, 4, 5]
    assert psrl_releases(6) == 5 and psrl_releases(1) == 0
    with pytest.raises(PrivacyParameterError):
        psrl_batch_bounds(3, 4)
    with pytest.raises(PrivacyParameterError):
        psrl_sensitivity(20, 0)
    with pytest.raises(PrivacyParameterError):
        psrl_sigma(0.0, 1e-5, 20)


# --------------------------------------------------------------------------------------------
# the release plan and the calibration
# --------------------------------------------------------------------------------------------
def test_release_plan_is_one_statistic_released_once():
    plan = release_plan("jdp", 20, 20_000, 16, 4, 6, sampler="float")
    (stat,) = plan.statistics
    (fam,) = plan.families
    assert stat.dim == 16 * 4 * 16 + 16 * 4
    assert stat.x_bound**2 == pytest.approx(2 * 1 * 20)  # ||x||^2 <= 2 m H
    assert (fam.site, fam.draws, fam.multiplier, fam.instances) == ("release", 1, 1.0, 1)
    assert fam.l2_sensitivity == psrl_sensitivity(20, 1)
    assert (plan.mechanism, plan.noise, plan.sampler, plan.capacity) == ("increments", "gaussian", "float", 5)
    assert release_plan("none", 20, 20_000, 16, 4, 6).families == ()


def test_generic_plan_accountant_sees_the_sign_constraint():
    """The plan's statistic is nonnegative (UserStatistic.nonnegative): plan_mu's worst pair is
    orthogonal, mu = Delta / sigma = 2 sqrt(m H) / sigma; the same statistic with a free angle takes
    x' = -x, sqrt(2) above (2.829 vs 2.000 at eps 10; its sigma 6.32 vs 4.47)."""
    cal = calibrate_psrl("jdp", 10.0, 1e-5, 16, 4, 20, 20_000, sampler="float")
    plan = release_plan("jdp", 20, 20_000, 16, 4, cal.B, sampler="float")
    (stat,) = plan.statistics
    assert stat.nonnegative
    assert plan_mu(plan, {"sigma": cal.sigma}) == pytest.approx(cal.mu, rel=1e-12)
    free = plan.with_statistic(stat.name, nonnegative=False)
    assert plan_mu(free, {"sigma": cal.sigma}) == pytest.approx(math.sqrt(2.0) * cal.mu, rel=1e-9)
    assert round(plan_mu(free, {"sigma": cal.sigma}), 3) == 2.829 and round(cal.mu, 3) == 2.000
    assert tight_scales(free, 10.0, 1e-5)["sigma"] == pytest.approx(math.sqrt(2.0) * cal.sigma, rel=1e-9)


@pytest.mark.parametrize("eps, H, m", [(10.0, 20, 1), (1.0, 20, 1), (10.0, 8, 1), (1.0, 20, 2), (0.1, 30, 4)])
def test_calibrated_sigma_is_the_plans_and_psrl_sigma(eps, H, m):
    """Both ways: calibrate_psrl's sigma is tight_scales of its plan, and equals psrl_sigma (the
    analytic Gaussian of Delta = 2 sqrt(m H)); it meets delta and 1e-6 less noise misses it."""
    cal = calibrate_psrl("jdp", eps, 1e-5, 16, 4, H, 20_000, m=m, sampler="float")
    plan = release_plan("jdp", H, 20_000, 16, 4, cal.B, m, "float")
    assert cal.sigma == tight_scales(plan, eps, 1e-5)["sigma"]
    assert cal.sigma == pytest.approx(psrl_sigma(eps, 1e-5, H, m), rel=1e-12)
    assert analytic_gaussian_delta(cal.sigma, psrl_sensitivity(H, m), eps) <= 1e-5
    assert analytic_gaussian_delta(cal.sigma * (1 - 1e-6), psrl_sensitivity(H, m), eps) > 1e-5


def test_calibration_fields_and_ledger():
    cal = calibrate_psrl("jdp", 10.0, 1e-5, 16, 4, 20, 20_000, sampler="float")
    assert isinstance(cal, PSRLCalibration) and dataclasses.is_dataclass(cal)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cal.sigma = 1.0  # type: ignore[misc]
    assert (cal.algorithm, cal.kind, cal.d, cal.B, cal.releases, cal.m) == ("psrl", "jdp", 64, 6, 5, 1)
    assert cal.sigma == psrl_sigma(10.0, 1e-5, 20, 1)
    assert cal.mu == cal.sensitivity / cal.sigma
    assert cal.noise_variance(5) == 5 * cal.sigma**2  # 5 sigma^2 ~ 100 at the last release
    assert round(cal.noise_variance(5)) == 100
    with pytest.raises(PrivacyParameterError):
        cal.noise_variance(6)
    # one Gaussian release per user, whatever B: the same ledger at B = 2 and B = 50
    for B in (2, 50):
        other = calibrate_psrl("jdp", 10.0, 1e-5, 16, 4, 20, 20_000, batches=B, sampler="float")
        assert other.sigma == cal.sigma and other.B == B
    led = psrl_accountant(cal)
    assert led.mu == pytest.approx(cal.mu, rel=1e-15)
    assert led.delta(10.0) <= 1e-5
    assert led.epsilon(1e-5) <= 10.0 * (1 + 1e-9)  # the inversion's bracket (the report's tolerance)
    cal1 = calibrate_psrl("jdp", 1.0, 1e-5, 16, 4, 20, 20_000, m=2, sampler="float")
    assert cal1.sensitivity == psrl_sensitivity(20, 2) and cal1.B == 3
    none = calibrate_psrl("none", None, None, 16, 4, 20, 1000)
    assert none.sigma is None and none.B == 1000 and none.noise_variance(999) == 0.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(kind="ldp"), "kind"),
        (dict(delta=0.0), "delta must be > 0"),
        (dict(epsilon=None), "epsilon is required"),
        (dict(S=0), "S"),
        (dict(m=0), "m"),
        (dict(batches="statc"), "did you mean 'static'"),
        (dict(batches=0), "batches"),
        (dict(sampler="discreet"), "sampler"),
    ],
)
def test_calibration_refuses_bad_inputs_at_the_edge(kwargs, match):
    args = dict(kind="jdp", epsilon=10.0, delta=1e-5, S=16, A=4, H=20, K=100) | kwargs
    with pytest.raises(PrivacyParameterError, match=match):
        calibrate_psrl(**args)
    with pytest.raises(TypeError):
        psrl_accountant(object())  # type: ignore[arg-type]
    with pytest.raises(PrivacyParameterError):
        psrl_accountant(calibrate_psrl("none", None, None, 16, 4, 20, 10))


# --------------------------------------------------------------------------------------------
# the numpy reference
# --------------------------------------------------------------------------------------------
def frozen_lake_4x4_slippery():
    """gymnasium's FrozenLake-v1 4x4 (is_slippery=True) by hand: the intended move or either
    perpendicular one, 1/3 each (LEFT, DOWN, RIGHT, UP = 0..3), reward 1 on entering G; holes and
    G absorbing with reward 0 (learn's padding: reward(0) = 0)."""
    desc = ["SFFF", "FHFH", "FFFH", "HFFG"]
    P, R = np.zeros((16, 4, 16)), np.zeros((16, 4, 16))
    moves = {0: (0, -1), 1: (1, 0), 2: (0, 1), 3: (-1, 0)}
    for s in range(16):
        row, col = divmod(s, 4)
        if desc[row][col] in "HG":
            P[s, :, s] = 1.0
            continue
        for a in range(4):
            for b in ((a - 1) % 4, a, (a + 1) % 4):
                dr, dc = moves[b]
                s2 = min(max(row + dr, 0), 3) * 4 + min(max(col + dc, 0), 3)
                P[s, a, s2] += 1.0 / 3.0
                R[s, a, s2] = float(desc[s2 // 4][s2 % 4] == "G")
    return P, R


def _exact_values(P, R, H, start, rule):
    r, V = (P * R).sum(2), np.zeros(P.shape[0])
    for _ in range(H):
        V = rule(r + P @ V, axis=1)
    return float(V[start])


def test_frozen_lake_table_is_gymnasiums():
    gym = pytest.importorskip("gymnasium")
    P, R = frozen_lake_4x4_slippery()
    env = gym.make("FrozenLake-v1", is_slippery=True).unwrapped
    Pg, Rg = np.zeros_like(P), np.zeros_like(R)
    for s in range(16):
        for a in range(4):
            for prob, s2, rew, done in env.P[s][a]:
                if done and s2 == s:  # gymnasium's terminal states loop with reward 0: absorbing
                    Pg[s, :, s], Rg[s] = 1.0, 0.0
                    continue
                Pg[s, a, s2] += prob
                Rg[s, a, s2] = rew
    assert np.abs(P - Pg).max() < 1e-15 and np.array_equal(R, Rg)


def test_capped_increment_counts_the_first_m_visits_by_hand():
    # one user: (0, 1) -> 2 paid 0.5, (0, 1) -> 3 paid 1, (3, 0) -> 3 paid 0.25
    s, a, r, s2 = [[0, 0, 3]], [[1, 1, 0]], [[0.5, 1.0, 0.25]], [[2, 3, 3]]
    dN, dR = capped_increment(s, a, r, s2, 4, 2, m=1)
    assert dN.sum() == 2 and dN[0, 1, 2] == 1 and dN[3, 0, 3] == 1 and dN[0, 1, 3] == 0
    assert dR[0, 1] == 0.5 and dR[3, 0] == 0.25
    dN2, dR2 = capped_increment(s, a, r, s2, 4, 2, m=2)
    assert dN2[0, 1, 3] == 1 and dR2[0, 1] == 1.5
    # two users are capped separately
    dN3, _ = capped_increment(s * 2, a * 2, r * 2, s2 * 2, 4, 2, m=1)
    assert np.array_equal(dN3, 2 * dN)


def test_simplex_projection_keeps_the_released_total_and_is_the_nearest_point():
    rng = np.random.default_rng(1)
    Y = rng.normal(0.5, 2.0, (200, 6))
    X = simplex_project(Y)
    assert (X >= 0).all()
    assert np.allclose(X.sum(1), np.maximum(Y.sum(1), 0.0))
    # by hand: [2, -1, 0.5] (total 1.5): theta = 0.5 gives [1.5, 0, 0]
    assert np.allclose(simplex_project(np.array([2.0, -1.0, 0.5])), [1.5, 0.0, 0.0])
    # a released total <= 0: the only point of the simplex is 0 (the probe's copy gave [1.5, 0, 0])
    assert np.array_equal(simplex_project(np.array([2.0, -3.0, 0.5])), [0.0, 0.0, 0.0])
    # the nearest point: no feasible perturbation (moving mass between two cells) gets closer
    for y, x in zip(Y[:20], X[:20], strict=True):
        for i in range(6):
            for k in range(6):
                t = min(x[k], 1e-3)
                if i != k and t > 0:
                    z = x.copy()
                    z[i] += t
                    z[k] -= t
                    assert np.linalg.norm(z - y) >= np.linalg.norm(x - y) - 1e-12


def test_billboard_draws_the_same_count_with_and_without_noise():
    S, A = 3, 2
    dN, dR = np.ones((S, A, S)), np.ones((S, A))
    quiet, noisy = Billboard(S, A, 0.0), Billboard(S, A, 2.0)
    g0, g1 = np.random.default_rng(5), np.random.default_rng(5)
    quiet.publish(dN, dR, g0)
    noisy.publish(dN, dR, g1)
    assert g0.random() == g1.random()  # S A S + S A draws either way
    assert np.array_equal(quiet.N, dN) and quiet.var == 0.0
    z = np.random.default_rng(5).standard_normal(S * A * S + S * A)
    assert np.allclose(noisy.N.ravel(), 1.0 + 2.0 * z[: S * A * S])
    assert np.allclose(noisy.R.ravel(), 1.0 + 2.0 * z[S * A * S :])
    noisy.publish(dN, dR, g1)
    assert noisy.var == 2 * 4.0  # v_j = j sigma^2


def test_user_policy_follows_the_documented_order_of_draws():
    """The interface a Rust agent must reproduce: replay the draws in the documented order from a
    copy of the stream and rebuild the model and the plan."""
    S, A, H = 4, 3, 5
    rng0 = np.random.default_rng(11)
    board = Billboard(S, A, 1.5)
    board.publish(rng0.integers(0, 9, (S, A, S)).astype(float), rng0.random((S, A)) * 3, rng0)
    g = np.random.default_rng(7)
    pi = user_policy(board, H, g)
    replay = np.random.default_rng(7)
    sd = math.sqrt(board.var)
    N = simplex_project(board.N + sd * replay.standard_normal((S, A, S)))
    n = N.sum(2)
    Rs = np.clip(board.R + sd * replay.standard_normal((S, A)), 0.0, n)
    G = replay.gamma(1.0 / S + N)  # the default prior: Dirichlet(1/S + N) (formulas.psrl_prior)
    ga, gb = replay.gamma(1.0 + Rs), replay.gamma(n - Rs)  # Beta(1 + R, n - R): psrl_reward_prior
    P, r = G / G.sum(2, keepdims=True), ga / (ga + gb)
    P0, r0 = posterior_model(board, np.random.default_rng(7))
    assert np.array_equal(P0, P) and np.array_equal(r0, r)
    V, expect = np.zeros(S), np.empty((H, S), np.int64)
    for h in reversed(range(H)):
        Q = r + P @ V
        u = replay.random((S, A))
        expect[h] = np.where(Q.max(1, keepdims=True) - 1e-12 <= Q, u, -1.0).argmax(1)
        V = Q.max(1)
    assert np.array_equal(pi, expect)
    assert g.random() == replay.random()  # the same number of draws consumed


def test_the_reward_prior_is_one_pseudo_observation_paying_one():
    """formulas.psrl_reward_prior: r(s, a) ~ Beta(1 + R, n - R). An unvisited pair (n = R = 0) draws
    Beta(1, 0), the point 1, exactly (gb = Gamma(0) = 0, numpy's gamma(0.0), which draws nothing);
    a pair with n = 3 counted visits paying R = 1.2 draws Beta(2.2, 1.8), mean (1 + R) / (1 + n) =
    0.55 (sd 0.2225: 4,000 draws put the mean within 0.018 at 5 standard errors; the uniform prior
    Beta(2.2, 2.8) had 0.44)."""
    assert psrl_reward_prior() == (1.0, 0.0)
    S, A = 3, 2
    P, r = posterior_model(Billboard(S, A, 2.0), np.random.default_rng(0))  # nothing released
    assert np.array_equal(r, np.ones((S, A))) and np.allclose(P.sum(2), 1.0)
    board = Billboard(S, A, 0.0)
    board.N[:, :, 0], board.R[:] = 3.0, 1.2
    g = np.random.default_rng(1)
    draws = np.concatenate([posterior_model(board, g)[1].ravel() for _ in range(4000 // (S * A) + 1)])
    assert abs(draws.mean() - 2.2 / 4.0) < 5 * math.sqrt(2.2 * 1.8 / (16.0 * 5.0) / draws.size)


def test_greedy_plan_is_optimal_on_its_model_and_breaks_ties_at_random():
    P, R = frozen_lake_4x4_slippery()
    r = (P * R).sum(2)
    pi = greedy_plan(P, r, 20, np.random.default_rng(0))
    best = _exact_values(P, R, 20, 0, np.max)
    assert policy_values(pi[None], P, R, 0)[0] == pytest.approx(best, rel=1e-12)
    # all actions tied (zero reward): every action is chosen, each about 1/A of the time
    flat = greedy_plan(P, np.zeros((16, 4)), 50, np.random.default_rng(0))
    share = np.bincount(flat.ravel(), minlength=4) / flat.size
    assert np.abs(share - 0.25).max() < 0.05  # 800 draws: 0.05 is 3.3 standard deviations


def test_run_reference_beats_the_uniform_policy_on_slippery_frozen_lake():
    """The probe's setting (slippery 4x4, H = 20, JDP eps 10, delta 1e-5) at K = 5,000, seed 0. The
    last batch's users draw their policies i.i.d. given the billboard, so the mean of their exact
    values is within a few standard errors of its expectation: that expectation beats the uniform
    policy's exact success (0.0124) if the mean exceeds it by 3 standard errors. The realised
    successes of the last 10% are binomial: 3 of their standard deviations at the uniform rate."""
    P, R = frozen_lake_4x4_slippery()
    H, K = 20, 5_000
    uniform = _exact_values(P, R, H, 0, np.mean)
    best = _exact_values(P, R, H, 0, np.max)
    assert round(uniform, 4) == 0.0124 and round(best, 3) == 0.199
    run = run_reference(P, R, 0, H, K, 10.0, 1e-5, seed=0)
    assert psrl_num_batches(10.0, H, K, 16, 4) == run.B and run.sigma == psrl_sigma(10.0, 1e-5, H)
    assert run.board.j == run.B - 1
    values = policy_values(run.policies, P, R, 0)
    assert values.max() <= best + 1e-12
    se = values.std(ddof=1) / math.sqrt(len(values))
    assert values.mean() > uniform + 3 * se
    tail = run.returns[K - K // 10 :]
    assert tail.mean() > uniform + 3 * math.sqrt(uniform * (1 - uniform) / len(tail))


def test_run_reference_without_noise_publishes_the_exact_capped_sums():
    """eps = inf: sigma 0, B = K (a release after every user but the last), so the billboard holds
    the true capped sums of users 0..K-2: integer counts, 1 to H counted visits per user (the first
    step always counts), each (s, a) at most m = 1 per user, reward sums in [0, n]."""
    P, R = frozen_lake_4x4_slippery()
    K, H = 60, 20
    run = run_reference(P, R, 0, H, K, math.inf, 1e-5, seed=3)
    assert (run.B, run.sigma, run.board.j, run.board.var) == (K, 0.0, K - 1, 0.0)
    N, n = run.board.N, run.board.N.sum(2)
    assert np.array_equal(N, np.round(N)) and K - 1 <= N.sum() <= (K - 1) * H
    assert n.max() <= K - 1  # at most one counted visit of each (s, a) per user
    assert (run.board.R >= 0).all() and (n - run.board.R >= 0).all()
    assert run.returns.shape == (K,) and set(np.unique(run.returns)) <= {0.0, 1.0}


def test_a_recorded_stream_replays_the_release_and_the_policy_and_names_a_divergence():
    """The comparison hook for an agent: its draws, recorded as (kind, parameter, values), replayed
    into the reference give back its release and policy; a different posterior count shows up as
    the first gamma draw whose shape parameters differ."""
    S, A, H = 4, 3, 6
    rec_noise, rec_user = DrawLog(np.random.default_rng(2)), DrawLog(np.random.default_rng(3))
    dN = np.random.default_rng(4).integers(0, 5, (S, A, S)).astype(float)
    dR = np.minimum(dN.sum(2), 2.0)
    board = Billboard(S, A, 1.0)
    board.publish(dN, dR, rec_noise)
    pi = user_policy(board, H, rec_user)
    kinds = [k for k, _, _ in rec_user.log]
    assert kinds == ["normal", "normal", "gamma", "gamma", "gamma"] + ["uniform"] * H
    again = Billboard(S, A, 1.0)
    again.publish(dN, dR, Replay(rec_noise.log))
    assert np.array_equal(again.N, board.N) and np.array_equal(again.R, board.R)
    assert np.array_equal(user_policy(again, H, Replay(rec_user.log)), pi)
    bump = np.zeros((S, A, S))
    bump[0, 0, 0] = 1.0  # another release (one count more): the row's projection and its Dirichlet move
    other = Billboard(S, A, 1.0)
    other.publish(dN + bump, dR, Replay(rec_noise.log))
    with pytest.raises(AssertionError, match="draw 2: the reference asks gamma"):
        user_policy(other, H, Replay(rec_user.log))
    with pytest.raises(AssertionError, match="beyond"):
        user_policy(board, H, Replay(rec_user.log[:-1]))

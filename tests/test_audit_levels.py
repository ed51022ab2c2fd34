"""The stated confidence of privrl.audit's bounds: each lower bound exceeds the true value with
probability at most 1 - confidence, at small sample sizes too."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from privrl import audit as A
from privrl.exceptions import PrivacyParameterError


def test_noncentral_t_lower_is_the_exact_quantile():
    from privrl.audit.intervals import noncentral_t_lower

    stats = pytest.importorskip("scipy.stats")
    for t, df in ((3.0, 6), (10.0, 38), (130.8, 39_998), (5.0, 2)):
        ncp = noncentral_t_lower(t, df, 0.95)
        assert ncp > 0.0 and float(stats.nct.sf(t, df, ncp)) == pytest.approx(0.05, abs=1e-6)
    assert noncentral_t_lower(1.0, 6, 0.95) == 0.0 == noncentral_t_lower(-4.0, 6, 0.95)
    for bad in ((float("nan"), 6, 0.95), (1.0, 1, 0.95), (1.0, 6, 1.0), (float("inf"), 6, 0.95)):
        with pytest.raises(PrivacyParameterError):
            noncentral_t_lower(*bad)


def _old_noncentral_t_cdf(t, df, ncp):
    """_noncentral_t_cdf as it was: math.erfc at every grid point, the grid built at every call."""
    import math

    sd = 1.0 / math.sqrt(2.0 * df)
    lo, hi = max(0.0, 1.0 - 12.0 * sd), 1.0 + 12.0 * sd
    if df < 8:
        hi = math.sqrt(1.0 + 100.0 / df)
    m = int(min(400_000, max(2_000, math.ceil((hi - lo) / (min(sd, 1.0 / max(abs(t), 1e-300)) / 16.0)))))
    m += m % 2
    w = np.linspace(lo, hi, m + 1)
    with np.errstate(divide="ignore"):
        log_f = (
            math.log(2.0) + 0.5 * df * math.log(0.5 * df) - math.lgamma(0.5 * df)
            + (df - 1) * np.log(w) - 0.5 * df * w * w
        )  # fmt: skip
    phi = 0.5 * np.asarray(np.frompyfunc(math.erfc, 1, 1)((ncp - t * w) / math.sqrt(2.0)), dtype=float)
    g = np.exp(log_f) * phi
    simpson = g[0] + g[-1] + 4.0 * g[1:-1:2].sum() + 2.0 * g[2:-1:2].sum()
    return float(min(1.0, simpson * (hi - lo) / (3.0 * m)))


def test_noncentral_t_cdf_is_bit_identical_to_the_erfc_at_every_point():
    """The cdf evaluates math.erfc only off its flat tails (exactly 2 and 0) and reuses the grid across
    the bisection: the same numbers as before, to the bit (t = 1e6 took 1.4 s, now 0.3 s)."""
    from privrl.audit.intervals import _noncentral_t_cdf

    for t, df in ((-4.0, 6), (1.7, 2), (3.0, 7), (50.0, 98), (1e4, 30), (1e6, 98), (1e100, 8)):
        for ncp in (0.0, 1.0, abs(t), 2.0 * abs(t)):
            assert _noncentral_t_cdf(t, df, ncp) == _old_noncentral_t_cdf(t, df, ncp), (t, df, ncp)


@pytest.mark.slow  # about 12 s: 1,000 audits of 4 runs
def test_gdp_bound_keeps_its_level_at_small_n():
    """mu_lower was mu_hat - z sqrt(2/n + mu_hat^2/(4n)), a normal approximation: on N(5, 1) vs
    N(0, 1) scores of 4 runs each it exceeded the true mu = 5 in 8.6% of audits at a stated 5%
    (flagging a correctly calibrated Gaussian mechanism that often). Now the exact t inversion."""
    rng = np.random.default_rng(3)
    R, misses = 1000, 0
    for _ in range(R):
        res = A.audit_samples(
            rng.normal(5.0, 1.0, (4, 1)), rng.normal(0.0, 1.0, (4, 1)), delta=1e-5, direction=[1.0],
            gaussian=True,
        )  # fmt: skip
        misses += res.mu_lower > 5.0
    # binomial(1000, 0.05): mean 50, sd 6.9; the normal approximation gives ~86 (sd 8.9)
    assert misses <= 65


def test_audit_agent_refuses_too_few_runs_before_running():
    """n_fit = 1 gave NaN variances (ddof = 1), hence a zero direction: a LinUCB agent with 100x too
    little noise came out eps >= 0, unflagged (n_fit = 50 flags it). n_trials = 3 and a confidence
    of 2 were refused only after the 2 n_fit fit runs."""
    for kw in ({"n_fit": 1}, {"n_trials": 3}, {"confidence": 2.0}):
        with pytest.raises(PrivacyParameterError):
            A.audit_linucb_agent(**{"n_trials": 200, "n_fit": 100, "noise_multiplier": 0.01, **kw})
    assert A.audit_linucb_agent(n_trials=200, n_fit=2, noise_multiplier=0.01).flagged


def test_inverse_variance_needs_a_direction():
    """inverse_variance without a direction was silently ignored (the audit ran unwhitened)."""
    x = np.random.default_rng(0).normal(size=(10, 3))
    with pytest.raises(PrivacyParameterError, match="inverse_variance"):
        A.audit_samples(x, x + 1.0, inverse_variance=[1.0, 1.0, 1.0])


def test_flag_reads_two_bounds_at_half_the_level_each():
    """``flagged`` compares the larger of the Clopper-Pearson and the Gaussian-DP bounds with the
    claim; both were taken at ``confidence``, so a correct mechanism could be flagged at up to twice
    the stated rate (union bound). Now each is at ``1 - (1 - confidence) / 2`` (Bonferroni)."""
    from privrl.audit.intervals import noncentral_t_lower

    rng = np.random.default_rng(2)
    n = 2000
    a, b = rng.normal(2.0, 1.0, (n, 1)), rng.normal(0.0, 1.0, (n, 1))
    both = A.audit_samples(a, b, delta=1e-5, direction=[1.0], gaussian=True, confidence=0.95)
    alone = A.audit_samples(a, b, delta=1e-5, direction=[1.0], confidence=0.975)
    assert both.confidence == 0.95
    assert (both.epsilon_lower_bound, both.tpr_lower, both.fpr_upper) == (
        alone.epsilon_lower_bound, alone.tpr_lower, alone.fpr_upper,
    )  # fmt: skip
    root = np.sqrt(n / 2)
    assert both.mu_lower == pytest.approx(noncentral_t_lower(both.mu_hat * root, 2 * n - 2, 0.975) / root)


def test_audits_check_their_parameters_before_running():
    """audit_mechanism ran its 2 n_trials runs before audit_samples refused confidence = 1.5 or
    delta = 2; the shipped audits ran theirs before refusing confidence = 1.5 or n_trials = 3."""
    calls = []

    def mech(x, seed):
        calls.append(x)
        return np.array([x])

    for kw in ({"confidence": 1.5}, {"delta": 2.0}):
        with pytest.raises(PrivacyParameterError):
            A.audit_mechanism(mech, 0.0, 1.0, 50, **kw)
    assert calls == []
    for audit in (A.audit_ucrl_vtr_tree, A.audit_ldp_randomizer, A.audit_lsvi_u_release, A.audit_lsvi_server):
        for kw in ({"confidence": 1.5}, {"n_trials": 3}):
            with pytest.raises(PrivacyParameterError, match=r"confidence|n_trials"):
                audit(**kw)


def test_audit_agent_takes_copies_of_the_shared_users():
    """Users 2..K were compared by identity: a copy of a shared trajectory counted as a second
    differing user and the neighbouring sequences were refused."""
    import copy

    from privrl.agents import LinUCB
    from privrl.audit.agent_audit import audit_agent
    from privrl.envs.bandit import ContextualBandit
    from privrl.envs.finite import Trajectory
    from privrl.privacy import JointDP

    x = np.array([0.6, 0.8])
    env = ContextualBandit(np.stack([x, -x, [1.0, 0.0]]), [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])

    def user(s: int, a: int, r: float) -> Trajectory:
        return Trajectory(np.array([s, s]), np.array([a]), np.array([r]))

    others = [user(2, 1, 1.0), user(0, 1, 0.0)]
    res = audit_agent(
        lambda seed: LinUCB(env, JointDP(4.0, 1e-5), episodes=3, seed=seed, schedule="every"),
        [user(0, 0, 1.0), *others], [user(1, 0, 1.0), *copy.deepcopy(others)],
        delta=1e-5, n_trials=50, n_fit=20,
    )  # fmt: skip
    assert res.n_trials == 50
    with pytest.raises(PrivacyParameterError, match="differ in one user"):
        audit_agent(
            lambda seed: LinUCB(env, JointDP(4.0, 1e-5), episodes=3, seed=seed, schedule="every"),
            [user(0, 0, 1.0), *others], [user(1, 0, 1.0), user(2, 1, 0.0), others[1]],
            delta=1e-5, n_trials=50, n_fit=20,
        )  # fmt: skip


def test_outputs_without_entries_are_refused():
    """Samples of shape (n, 0) (a mechanism returning an empty array) scored 0 everywhere and the
    audit reported eps >= 0, not flagged, for a release it never saw."""
    with pytest.raises(PrivacyParameterError, match="no entries"):
        A.audit_samples(np.zeros((10, 0)), np.zeros((10, 0)), claimed_epsilon=1.0)
    with pytest.raises(PrivacyParameterError, match="no entries"):
        A.audit_mechanism(lambda x, seed: np.zeros(0), 0.0, 1.0, 10)


def test_report_of_another_algorithms_calibration_is_refused():
    """privacy_report_from_calibration('lsvi_ucb', a UCRL-VTR calibration) failed inside plan_of
    with "'UCRLVTRCalibration' object has no attribute 'B'", and a dict with "no attribute 'kind'"."""
    from privrl.agents.ucrl_vtr import calibration as U
    from privrl.audit.report import privacy_report_from_calibration

    cal = U.calibrate_ucrl_vtr("jdp", 1.0, 1e-5, 2, 8, 2, 1.0, calibration="tight", sampler="float")
    for other in ("lsvi_ucb", "linucb", "ucrl_vtr_plus"):
        with pytest.raises(ValueError, match="algorithm='ucrl_vtr'"):
            privacy_report_from_calibration(other, cal)
    with pytest.raises(TypeError, match="Calibration"):
        privacy_report_from_calibration("ucrl_vtr", {"kind": "jdp"})
    tight = privacy_report_from_calibration("ucrl_vtr", cal)["tight"]
    assert tight["epsilon_at_target_delta"] == pytest.approx(1.0)


def test_report_refuses_a_plan_that_does_not_fit_its_calibration():
    """A JDP calibration with an LDP plan was reported as eps = 0.47, within its target of 1 (the 4
    tree nodes per user counted as one release); an H = 3 plan with an H = 2 calibration as 4.26."""
    from privrl.agents.ucrl_vtr import calibration as U
    from privrl.audit.report import plan_of, privacy_report_from_calibration

    def cal(kind: str, H: int) -> object:
        return U.calibrate_ucrl_vtr(kind, 1.0, 1e-5, H, 8, 2, 1.0, calibration="tight", sampler="float")

    jdp = cal("jdp", 2)
    for other, what in ((cal("ldp", 2), "model"), (cal("jdp", 3), "H")):
        with pytest.raises(PrivacyParameterError, match=what):
            privacy_report_from_calibration("ucrl_vtr", jdp, plan=plan_of("ucrl_vtr", other))
    same = privacy_report_from_calibration("ucrl_vtr", jdp, plan=plan_of("ucrl_vtr", jdp))
    assert same["tight"]["epsilon_at_target_delta"] == pytest.approx(1.0)


def test_report_refuses_a_plan_of_another_mechanism():
    """The plan's fit ignored the mechanism: the default UCRL-VTR calibration (BLT, sigma_B 14.48
    at eps 4, H = 2, K = 8, d = 2) read through the tree's plan was reported as eps 7.41 with
    mechanism "tree", a report of a release the calibration does not make (its own: eps 4 on BLT)."""
    from privrl.agents.ucrl_vtr import calibration as U
    from privrl.audit.report import plan_of, privacy_report_from_calibration

    blt = U.calibrate_ucrl_vtr("jdp", 4.0, 1e-5, 2, 8, 2, 1.0)
    tree = U.calibrate_ucrl_vtr("jdp", 4.0, 1e-5, 2, 8, 2, 1.0, calibration="tight")
    assert (blt.mechanism, tree.mechanism) == ("blt", "tree")
    with pytest.raises(PrivacyParameterError, match=r"mechanism 'tree' \(calibration: 'blt'\)"):
        privacy_report_from_calibration("ucrl_vtr", blt, plan=plan_of("ucrl_vtr", tree))
    own = privacy_report_from_calibration("ucrl_vtr", blt, plan=plan_of("ucrl_vtr", blt))
    assert own["tight"]["epsilon_at_target_delta"] == pytest.approx(4.0)


def test_gdp_bound_of_a_separation_near_the_largest_double():
    """A finite mu_hat of 1.4e307 over 1,000 runs made the t statistic sqrt(n/2) mu_hat overflow:
    noncentral_t_lower refused it (t must be finite); before that, gaussian_epsilon refused the bound
    mu_lower ~ 1.4e307 (its epsilon overflows past mu = 1.9e154)."""
    n = 1000
    a = np.full((n, 1), 1e150)
    b = np.where(np.arange(n) % 2 == 0, 1e-157, -1e-157).reshape(n, 1)
    res = A.audit_samples(a, b, direction=[1.0], gaussian=True, delta=1e-5, claimed_epsilon=1.0)
    assert 0.0 < res.mu_lower < res.mu_hat and res.flagged


def test_agent_audit_direction_whitens_with_the_outputs_covariance():
    """audit_agent projected on (m_a - m_b) / var, each output whitened alone: outputs sharing noise
    (a continual mechanism's prefixes reuse its nodes) lost the pair's information. Two Gaussian
    laws with covariance [[1, 0.9], [0.9, 1]] and mean difference (1, 0): the likelihood-ratio
    direction Sigma^-1 (1, 0) separates them by mu = sqrt(1 / 0.19) = 2.29, the per-output one by
    1.0. With fewer than FULL_WHITENING_RUNS fit runs per output the per-output one is kept."""
    from privrl.audit.agent_audit import FULL_WHITENING_RUNS, _direction

    rng = np.random.default_rng(0)
    cov = np.array([[1.0, 0.9], [0.9, 1.0]])

    def draw(n, mean):
        return rng.multivariate_normal(mean, cov, size=n)

    def separation(direction):
        a, b = draw(20_000, [1.0, 0.0]) @ direction, draw(20_000, [0.0, 0.0]) @ direction
        return (a.mean() - b.mean()) / np.sqrt(0.5 * (a.var() + b.var()))

    full = _direction(draw(1000, [1.0, 0.0]), draw(1000, [0.0, 0.0]))
    assert separation(full) == pytest.approx(np.sqrt(1 / 0.19), rel=0.03)
    few = FULL_WHITENING_RUNS  # 2 few - 2 < FULL_WHITENING_RUNS * 2 outputs
    alone = _direction(draw(few, [1.0, 0.0]), draw(few, [0.0, 0.0]))
    assert separation(alone) < 1.3
    # outputs that never vary are dropped either way (a deterministic shift, a repeated entry)
    fa, fb = draw(1000, [1.0, 0.0]), draw(1000, [0.0, 0.0])
    constant = np.full((1000, 1), 7.0)
    padded = _direction(np.hstack([fa, constant]), np.hstack([fb, constant]))
    assert padded[2] == 0.0 and np.allclose(padded[:2], _direction(fa, fb))


def test_linucb_agent_audit_reaches_near_its_pairs_exact_mu():
    """audit_linucb_agent's pair (x against -x on one arm) moved only a reward block, 64% of the
    plan's worst whitened sensitivity, and its direction ignored the releases' shared noise: at the
    calibrated noise its bound was 1.54 and 0.7x the noise (true eps 6.06) was not flagged (2.62).
    The pair now switches the arm (96% of the worst case), whitened by the outputs' covariance. The
    outputs (releases 1..K-1; the last user's billboard is never published) reveal mu = 0.74 of
    the pair, eps 3.09 at delta 1e-5: the bound is 2.68 at x1 (not flagged), 4.22 at x0.7 and
    6.43 at x0.5 (flagged)."""
    from privrl.privacy.gdp import gaussian_epsilon

    ceiling = gaussian_epsilon(0.74, 1e-5)
    x1 = A.audit_linucb_agent(noise_multiplier=1.0, calibration="tight", schedule="every")
    assert not x1.flagged and 2.3 < x1.gdp_epsilon_lower_bound < ceiling
    x07 = A.audit_linucb_agent(noise_multiplier=0.7, calibration="tight", schedule="every")
    assert x07.flagged and x07.gdp_epsilon_lower_bound < gaussian_epsilon(0.74 / 0.7, 1e-5)


def test_audit_does_not_depend_on_a_tiny_output_unit():
    """The scores' variances (~ (outputs x direction)^2) underflowed for outputs of 2^-500 with an
    estimated direction (scores ~ 1e-301) or 1e-300 with a given one: s = 0, so the Gaussian-DP
    bound was inf (a false flag of any claim) and, below, the Clopper-Pearson bound 0. The audit is
    now the same in every unit (the samples and direction are scaled by powers of two, exactly)."""
    rng = np.random.default_rng(0)
    a, b = rng.normal(0.0, 1.0, (400, 3)), rng.normal(1.0, 1.0, (400, 3))
    for direction, scale in ((None, 2.0**-500), (None, 1e-200), (-np.ones(3), 1e-300)):
        ref = A.audit_samples(a, b, direction=direction, gaussian=True, delta=1e-5, claimed_epsilon=10.0)
        got = A.audit_samples(
            a * scale, b * scale, direction=direction, gaussian=True, delta=1e-5, claimed_epsilon=10.0
        )
        assert 0.0 < ref.gdp_epsilon_lower_bound < 10.0 and not ref.flagged
        assert got.gdp_epsilon_lower_bound == pytest.approx(ref.gdp_epsilon_lower_bound, rel=1e-12)
        assert got.epsilon_lower_bound == pytest.approx(ref.epsilon_lower_bound, rel=1e-12)
        assert not got.flagged


def _default_linucb_pair_mu(**schedule: Any) -> float:
    """The exact mu of audit_linucb_agent's pair over its outputs under JointDP(4, 1e-5)'s defaults
    (BLT over L leaves: L = 2 under LinUCB's default schedule 'auto' at K = 4, p = 2, users 1-2 in
    leaf 1; L = 4 under 'every'): the pair's whitened change per leaf, sqrt(1 / sigma_B^2 +
    2 / sigma_g^2) (the agent's tight scales), times ||C_{L-1} e_1||, the first L - 1 entries of the
    BLT encoder's first column (c_0 = 1, c_j = sum_i omega_i theta_i^(j - 1)): the releases
    1..L-1 (the last one is never published) are the leading blocks A_{L-1} (x + C_{L-1}^-1 z), an
    invertible map of C_{L-1} x + z (the module comment of privrl.audit.agent_audit)."""
    from privrl.agents import LinUCB
    from privrl.envs.bandit import ContextualBandit
    from privrl.kernels.continual import blt_parameters
    from privrl.privacy import JointDP

    x = np.array([0.6, 0.8])
    env = ContextualBandit(np.stack([x, -x, [1.0, 0.0]]), [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    cal = LinUCB(env, JointDP(4.0, 1e-5), episodes=4, seed=0, **schedule).calibration
    L = cal.leaves
    assert cal.mechanism == "blt" and (4 if schedule else 2) == L
    theta, omega = blt_parameters(L)
    column = [1.0] + [float(np.sum(omega * theta ** (j - 1))) for j in range(1, L - 1)]
    return float(np.hypot(1.0 / cal.sigma_B, np.sqrt(2.0) / cal.sigma_g) * np.linalg.norm(column))


def test_agent_audits_default_to_the_agent_jointdp_runs():
    """audit_ucrl_vtr_agent / audit_linucb_agent defaulted to calibration="tight" (the paper's tree)
    while JointDP(eps, delta), the agent a user runs, is adaptive with the BLT mechanism: an audit
    called without arguments audited an agent nobody runs, and audit_linucb_agent ran LinUCB with
    schedule 'every' where LinUCB's default is 'auto'. Now None takes JointDP's and LinUCB's own
    defaults, and the effective epsilon is that agent's own report (4.000 at x1, the whole claim)."""
    from privrl.agents import UCRLVTR, LinUCB
    from privrl.envs import RandomLinearMixtureMDP
    from privrl.envs.bandit import ContextualBandit
    from privrl.privacy import JointDP

    model = JointDP(4.0, 1e-5)
    x = np.array([0.6, 0.8])
    bandit = ContextualBandit(np.stack([x, -x, [1.0, 0.0]]), [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    agents = {
        A.audit_ucrl_vtr_agent: UCRLVTR(RandomLinearMixtureMDP(S=3, A=2, d=2, H=2, seed=0), model, 4),
        A.audit_linucb_agent: LinUCB(bandit, model, episodes=4),  # LinUCB's default schedule too
    }
    for audit, agent in agents.items():
        res = audit(n_trials=20, n_fit=10)
        assert f"({model.calibration}, {model.mechanism}, {model.sampler}, x1 noise)" in res.name
        assert res.effective_epsilon == agent.privacy_report()["tight"]["budget"][0]
        tree = audit(n_trials=20, n_fit=10, calibration="tight")
        assert "(tight, tree, discrete, x1 noise)" in tree.name
    assert "schedule 'auto' (" in A.audit_linucb_agent(n_trials=20, n_fit=10).name


@pytest.mark.parametrize("schedule", [{}, {"schedule": "every"}])
def test_default_linucb_agent_audit_flags_half_the_noise(schedule):
    """The default agent's audit (JointDP(4, 1e-5): adaptive, BLT, discrete; LinUCB's default
    schedule 'auto' and 'every') meets the standard of the tree's: x1 not flagged and below the
    exact epsilon of its outputs (mu 0.863, eps 3.69 under 'auto'; 0.893, 3.84 under 'every':
    _default_linucb_pair_mu), x0.5 flagged and below that of half the noise (8.35; 8.70)."""
    from privrl.privacy.gdp import gaussian_epsilon

    mu = _default_linucb_pair_mu(**schedule)
    x1 = A.audit_linucb_agent(noise_multiplier=1.0, **schedule)
    assert not x1.flagged and x1.gdp_epsilon_lower_bound < gaussian_epsilon(mu, 1e-5)
    half = A.audit_linucb_agent(noise_multiplier=0.5, **schedule)
    assert "blt" in half.name and half.flagged
    assert 4.0 < half.gdp_epsilon_lower_bound < gaussian_epsilon(2.0 * mu, 1e-5)


def test_default_ucrl_vtr_agent_audit_flags_half_the_noise():
    """The default UCRL-VTR agent (adaptive, BLT, discrete) end to end: x0.5 flagged, between the
    claim and the effective epsilon of half the noise (9.085); x1 not flagged and below the claim
    (its later users follow the billboard: the Gaussian-DP bound is an approximation there, so the
    claim, the plan's worst case, is the ceiling, as for the tree)."""
    half = A.audit_ucrl_vtr_agent(noise_multiplier=0.5)
    assert "blt" in half.name and half.flagged and 4.0 < half.gdp_epsilon_lower_bound < half.effective_epsilon
    x1 = A.audit_ucrl_vtr_agent(noise_multiplier=1.0)
    assert not x1.flagged and x1.gdp_epsilon_lower_bound < 4.0
    assert x1.effective_epsilon == pytest.approx(4.0, rel=1e-12)


@pytest.mark.parametrize("audit", ["audit_ucrl_vtr_tree", "audit_ldp_randomizer"])
def test_vtr_audits_draw_the_agents_vector_noise_at_d_1(audit):
    """The UCRL-VTR tree and randomizer audits drew the vector's noise with sigma_B, the matrix's:
    at d = 1 the worst pair (+-H e_1) leaves X X^T unchanged, so the tight calibration lowers
    sigma_B to 0.42 sigma_g (H = 1, K = 2) and the audits ran 0.42x the agent's vector noise:
    effective eps 11.11 against the claimed 4, a correct agent flagged (bound 10.5-10.9). Each
    family now has the agent's own sigma (sigma_B = sigma_g at d >= 2: same bits there)."""
    f = getattr(A, audit)
    kw = {"H": 1, "d": 1, "n_trials": 2000, **({"K": 2} if audit == "audit_ucrl_vtr_tree" else {})}
    x1 = f(4.0, **kw)
    assert x1.effective_epsilon == pytest.approx(4.0, abs=1e-5) and not x1.flagged
    half = f(4.0, noise_multiplier=0.5, **kw)
    assert half.flagged and 4.0 < half.gdp_epsilon_lower_bound < half.effective_epsilon


@pytest.mark.parametrize("audit", ["audit_ucrl_vtr_tree", "audit_lsvi_server"])
def test_server_audits_refuse_the_practical_rules_by_name(audit):
    """The two audits build the paper's release of the tree by hand: calibration='adaptive' (the
    default agents') or 'practical' ran it with their shift 0 and failed after building the
    mechanisms with NotPositiveDefiniteError ("the noise exceeded the shift"), and resolved the
    mechanism to BLT on the tree's release plan. Refused by name now, pointing at 'tight' (the
    same noise)."""
    f = getattr(A, audit)
    for calibration in ("adaptive", "practical"):
        with pytest.raises(PrivacyParameterError, match=r"calibration='tight' audits that noise"):
            f(calibration=calibration, n_trials=10)
    with pytest.raises(PrivacyParameterError, match="calibration"):
        f(calibration="loose", n_trials=10)


def test_agent_audit_of_an_agent_that_publishes_nothing_about_user_1():
    """LinUCB with its default schedule at K = 2 releases first after the last user: every output
    is the initial billboard in both sequences, no output varies, and _direction reached numpy's
    "zero-size array to reduction operation maximum" (a ValueError naming nothing). With no noise
    anywhere the direction is the raw difference: zero here, so the bound is 0 (the outputs carry
    nothing about user 1) and nothing is flagged."""
    import warnings

    from privrl.agents import LinUCB
    from privrl.envs.bandit import ContextualBandit
    from privrl.envs.finite import Trajectory
    from privrl.privacy import JointDP

    x = np.array([0.6, 0.8])
    env = ContextualBandit(np.stack([x, -x, [1.0, 0.0]]), [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])

    def user(a: int) -> Trajectory:
        return Trajectory(np.array([0, 0]), np.array([a]), np.array([1.0]))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the agent's own ScheduleWarning: no user sees a release

        def make(s):
            return LinUCB(env, JointDP(4.0, 1e-5), episodes=2, seed=s)

        res = A.audit_agent(
            make,
            [user(0), user(1)],
            [user(1), user(1)],
            delta=1e-5,
            claimed_epsilon=4.0,
            n_trials=50,
            n_fit=20,
        )
    assert res.epsilon_lower_bound == 0.0 and res.gdp_epsilon_lower_bound == 0.0 and not res.flagged


def test_agent_audit_flags_a_raw_statistic_released_beside_noised_ones(monkeypatch):
    """An agent whose billboards carry one statistic of the users without noise, beside its noised
    releases, is not private at any epsilon; _direction dropped every output that never varies
    (as the deterministic shift must be), so the raw one was dropped too and the audit of a JDP
    LinUCB with the leak appended saw only the noised outputs: not flagged (bound below the claim).
    Now a noiseless output whose fit runs differ between the sequences is the direction alone, and
    the audit separates the sequences outright (infinite bound, flagged); without the leak the same
    audit is still not flagged."""
    import warnings

    from privrl.agents import LinUCB
    from privrl.audit import agent_audit
    from privrl.envs.bandit import ContextualBandit
    from privrl.envs.finite import Trajectory
    from privrl.privacy import JointDP

    x = np.array([0.6, 0.8])
    env = ContextualBandit(np.stack([x, -x, [1.0, 0.0]]), [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])

    def user(a: int) -> Trajectory:
        return Trajectory(np.array([0, 0]), np.array([a]), np.array([1.0]))

    def make(s):
        return LinUCB(env, JointDP(4.0, 1e-5), episodes=3, seed=s, schedule="every")

    def audit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return A.audit_agent(
                make,
                [user(0), user(1)],
                [user(1), user(1)],
                delta=1e-5,
                claimed_epsilon=4.0,
                n_trials=200,
                n_fit=50,
            )

    clean = audit()
    assert not clean.flagged and clean.gdp_epsilon_lower_bound < 4.0
    honest = agent_audit.billboards

    def leaky(agent, users):  # the users' actions, raw
        return np.concatenate([honest(agent, users), [float(sum(int(u.actions[0]) for u in users))]])

    monkeypatch.setattr(agent_audit, "billboards", leaky)
    leak = audit()
    assert leak.flagged and leak.gdp_epsilon_lower_bound > 4.0


def test_every_audit_takes_its_fewest_runs_from_one_rule(monkeypatch):
    """audit_samples, audit_mechanism, the shipped audits (_counts) and audit_agent each wrote
    "n >= 4" out; now privrl.audit.mechanism_audit.MIN_RUNS (check_trials) is the one rule: raised
    to 8, every one refuses 6 runs, by name and before any run."""
    import privrl.audit.mechanism_audit as M

    monkeypatch.setattr(M, "MIN_RUNS", 8)
    rng = np.random.default_rng(0)
    with pytest.raises(PrivacyParameterError, match="at least 8 runs"):
        A.audit_samples(rng.normal(size=(6, 1)), rng.normal(size=(6, 1)), direction=[1.0])
    with pytest.raises(PrivacyParameterError, match=r"n_trials must be an int >= 8, got 6"):
        A.audit_mechanism(lambda x, s: np.asarray(x, dtype=float), np.zeros(1), np.ones(1), 6)
    for audit in (A.audit_ucrl_vtr_tree, A.audit_lsvi_server, A.audit_linucb_agent):
        with pytest.raises(PrivacyParameterError, match=r"n_trials must be an int >= 8, got 6"):
            audit(n_trials=6)

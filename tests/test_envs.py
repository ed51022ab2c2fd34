"""Tests of privrl.envs: exact models against their defining probabilities, Asm. 1 / Asm. 2 checks,
backward induction against brute force, sampling against P, seeding, and the gymnasium bridge."""

from __future__ import annotations

import itertools
import re
import warnings

import numpy as np
import pytest

from privrl.envs import (
    FiniteMDP,
    HardToLearn,
    LinearMDP,
    LinearMixtureMDP,
    RandomLinearMDP,
    RandomLinearMixtureMDP,
    RiverSwim,
    RiverSwimMixture,
    SyntheticLinearMDP,
    Trajectory,
    tabular_linear_mdp,
)
from privrl.exceptions import AssumptionError, AssumptionWarning, NonFiniteError, ShapeError


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------
def random_tabular(S, A, H, seed=0, sparse=False):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(S), size=(H, S, A))
    if sparse:  # zero out some next states (keep at least one)
        mask = rng.random((H, S, A, S)) < 0.4
        mask[..., 0] = False
        P = np.where(mask, 0.0, P)
        P /= P.sum(-1, keepdims=True)
    R = rng.random((H, S, A))
    init = rng.dirichlet(np.ones(S))
    return P, R, init


def chi2_threshold(df, z=3.72):
    """Wilson-Hilferty upper quantile of chi^2(df) at about 1e-4."""
    return df * (1.0 - 2.0 / (9 * df) + z * np.sqrt(2.0 / (9 * df))) ** 3


def chi2_stat(counts, probs):
    n = counts.sum()
    keep = probs > 0
    assert counts[~keep].sum() == 0, "a zero-probability outcome was sampled"
    exp = n * probs[keep]
    return float(((counts[keep] - exp) ** 2 / exp).sum()), int(keep.sum()) - 1


def brute_value(P, R, pi, h, s):
    H = P.shape[0]
    if h == H:
        return 0.0
    a = pi[h][s]
    return R[h, s, a] + sum(P[h, s, a, t] * brute_value(P, R, pi, h + 1, t) for t in range(P.shape[1]))


def brute_qstar(P, R, h, s, a):
    H, S, A, _ = P.shape
    if h == H:
        return 0.0
    nxt = 0.0
    for t in range(S):
        nxt += P[h, s, a, t] * (max(brute_qstar(P, R, h + 1, t, b) for b in range(A)) if h + 1 < H else 0.0)
    return R[h, s, a] + nxt


# ------------------------------------------------------------------------------------------------
# FiniteMDP
# ------------------------------------------------------------------------------------------------
def test_finite_arrays_are_float64_contiguous_readonly_copies():
    P, R, init = random_tabular(3, 2, 4)
    m = FiniteMDP(P, R, init, name="t")
    for arr in (m.P, m.R, m.init_dist):
        assert arr.dtype == np.float64 and arr.flags.c_contiguous and not arr.flags.writeable
    assert (m.S, m.A, m.H, m.name) == (3, 2, 4, "t")
    P[0, 0, 0, 0] = 7.0  # the model holds a copy
    assert m.P[0, 0, 0, 0] != 7.0
    with pytest.raises(ValueError):
        m.P[0, 0, 0, 0] = 0.0
    for arr in (m.optimal_q(), m.optimal_values(), m.optimal_policy()):
        assert not arr.flags.writeable


def test_finite_validation_errors_name_array_and_index():
    P, R, init = random_tabular(3, 2, 4)
    with pytest.raises(ShapeError, match="P"):
        FiniteMDP(P[..., :2], R, init)
    with pytest.raises(ShapeError, match="R"):
        FiniteMDP(P, R[:, :, :1], init)
    with pytest.raises(ShapeError, match="init_dist"):
        FiniteMDP(P, R, init[:2])
    bad = P.copy()
    bad[1, 2, 0, 1] = np.nan
    with pytest.raises(NonFiniteError, match=r"P.*\(1, 2, 0, 1\)"):
        FiniteMDP(bad, R, init)
    badR = R.copy()
    badR[0, 1, 1] = np.inf
    with pytest.raises(NonFiniteError, match="R"):
        FiniteMDP(P, badR, init)
    bad = P.copy()
    bad[2, 1, 1, 0] += 0.01
    with pytest.raises(AssumptionError, match=r"P\[h=2, s=1, a=1"):
        FiniteMDP(bad, R, init)
    bad = P.copy()
    bad[0, 0, 0] = [1.5, -0.25, -0.25]
    with pytest.raises(AssumptionError, match="negative"):
        FiniteMDP(bad, R, init)
    badR = R.copy()
    badR[3, 0, 1] = 1.2
    with pytest.raises(AssumptionError, match=r"R\[h=3, s=0, a=1\]"):
        FiniteMDP(P, badR, init)
    badR[3, 0, 1] = -0.1
    with pytest.raises(AssumptionError, match="outside"):
        FiniteMDP(P, badR, init)
    with pytest.raises(AssumptionError, match="init_dist"):
        FiniteMDP(P, R, init * 0.5)


def test_backward_induction_matches_brute_force_over_all_policies():
    S, A, H = 2, 2, 3
    P, R, init = random_tabular(S, A, H, seed=3)
    m = FiniteMDP(P, R, init)
    best = np.full(S, -np.inf)
    for flat in itertools.product(range(A), repeat=H * S):
        pi = np.array(flat, dtype=np.int64).reshape(H, S)
        V = m.policy_values(pi)
        assert V.shape == (H + 1, S) and np.all(V[H] == 0)
        for h in range(H + 1):
            for s in range(S):
                assert V[h, s] == pytest.approx(brute_value(P, R, pi, h, s), abs=1e-12)
        Q = m.policy_q(pi)
        assert Q.shape == (H, S, A)
        np.testing.assert_allclose(Q[np.arange(H)[:, None], np.arange(S)[None], pi], V[:H], atol=1e-12)
        best = np.maximum(best, V[0])
    Vstar = m.optimal_values()
    np.testing.assert_allclose(Vstar[0], best, atol=1e-12)
    Qstar = m.optimal_q()
    for h, s, a in itertools.product(range(H), range(S), range(A)):
        assert Qstar[h, s, a] == pytest.approx(brute_qstar(P, R, h, s, a), abs=1e-12)
    np.testing.assert_allclose(m.policy_values(m.optimal_policy()), Vstar, atol=1e-12)
    assert m.initial_value(Vstar) == pytest.approx(float(init @ best))
    assert m.initial_value(Vstar[0]) == m.initial_value(Vstar)


@pytest.mark.parametrize(
    "make",
    [
        lambda: FiniteMDP(*random_tabular(5, 3, 6, seed=1)),
        lambda: RandomLinearMixtureMDP(S=8, A=3, d=4, H=5, seed=2),
        lambda: RandomLinearMDP(S=10, A=4, d=5, H=6, seed=3),
        lambda: HardToLearn(4, 5, 1000),
        lambda: RiverSwimMixture(),
        lambda: RiverSwim(),
    ],
)
def test_optimal_value_dominates_random_policies(make):
    m = make()
    rng = np.random.default_rng(0)
    Vstar = m.optimal_values()
    for _ in range(30):
        pi = rng.integers(0, m.A, size=(m.H, m.S))
        assert np.all(Vstar >= m.policy_values(pi) - 1e-12)
    assert np.all(Vstar[:-1] <= np.arange(m.H, 0, -1)[:, None] + 1e-12)  # V*_h <= H - h


def test_policy_validation():
    m = FiniteMDP(*random_tabular(3, 2, 4))
    with pytest.raises(ShapeError):
        m.policy_values(np.zeros((4, 2), dtype=int))
    with pytest.raises(ShapeError):
        m.policy_values(np.full((4, 3), 0.5))
    with pytest.raises(AssumptionError, match="policy"):
        m.policy_values(np.full((4, 3), 2))
    np.testing.assert_allclose(
        m.policy_values(np.zeros((4, 3))), m.policy_values(np.zeros((4, 3), dtype=int))
    )


def test_sample_next_state_frequencies_match_P():
    P, R, init = random_tabular(6, 2, 3, seed=5, sparse=True)
    m = FiniteMDP(P, R, init)
    rng = np.random.default_rng(123)
    n = 20000
    for h, s, a in [(0, 0, 0), (1, 3, 1), (2, 5, 0)]:
        counts = np.bincount([m.sample_next_state(h, s, a, rng) for _ in range(n)], minlength=m.S)
        stat, df = chi2_stat(counts, m.P[h, s, a])
        assert stat < chi2_threshold(df)
    counts = np.bincount([m.sample_initial_state(rng) for _ in range(n)], minlength=m.S)
    stat, df = chi2_stat(counts, m.init_dist)
    assert stat < chi2_threshold(df)
    with pytest.raises(IndexError):
        m.sample_next_state(3, 0, 0, rng)


def test_zero_probability_states_are_never_sampled():
    # Leading, middle and trailing zeros, and a row whose float cumsum falls short of 1.
    P = np.zeros((1, 1, 1, 6))
    P[0, 0, 0, 1] = 0.1
    P[0, 0, 0, 3] = 0.9
    init = np.array([0, 0, 0.3, 0, 0.7, 0.0])
    m = FiniteMDP(np.broadcast_to(P, (1, 6, 1, 6)), np.zeros((1, 6, 1)), init)
    rng = np.random.default_rng(0)
    ns = {m.sample_next_state(0, 0, 0, rng) for _ in range(2000)}
    s0 = {m.sample_initial_state(rng) for _ in range(2000)}
    assert ns == {1, 3} and s0 == {2, 4}
    assert m._cdf[0, 0, 0, -1] == 1.0 and m._cdf[0, 0, 0, 3] == 1.0


def test_sample_episode_state_distribution_matches_exact_occupancy():
    S, A, H = 4, 3, 4
    P, R, init = random_tabular(S, A, H, seed=9)
    m = FiniteMDP(P, R, init)
    rng = np.random.default_rng(7)
    pi = rng.integers(0, A, size=(H, S))
    n = 10000
    counts = np.zeros((H + 1, S))
    returns = np.empty(n)
    for k in range(n):
        tr = m.sample_episode(pi, rng)
        counts[np.arange(H + 1), tr.states] += 1
        returns[k] = tr.total_reward
    # exact occupancy d_h by forward propagation
    d = init.copy()
    for h in range(H + 1):
        stat, df = chi2_stat(counts[h], d)
        assert stat < chi2_threshold(df)
        if h < H:
            d = d @ m.P[h][np.arange(S), pi[h]]
    V = m.policy_values(pi)
    assert abs(returns.mean() - m.initial_value(V)) < 4 * returns.std() / np.sqrt(n)


def test_trajectory_fields_and_consistency():
    m = RiverSwim(S=5, H=7)
    pi = np.ones((7, 5), dtype=np.int64)
    tr = m.sample_episode(pi, np.random.default_rng(0))
    assert isinstance(tr, Trajectory)
    assert tr.states.shape == (8,) and tr.actions.shape == (7,) and tr.rewards.shape == (7,)
    assert tr.states.dtype.kind == "i" and tr.actions.dtype.kind == "i" and tr.rewards.dtype == np.float64
    assert tr.H == 7 and tr.step_rewards is tr.rewards
    np.testing.assert_array_equal(tr.rewards, m.R[np.arange(7), tr.states[:-1], tr.actions])
    assert tr.states[0] == 0 and np.all(tr.actions == 1)
    assert tr.total_reward == pytest.approx(tr.rewards.sum())


def test_sample_episode_draws_one_uniform_block():
    # An episode consumes exactly rng.random(H + 1): the generator state after it is the same.
    m = FiniteMDP(*random_tabular(4, 2, 5, seed=1))
    pi = np.zeros((5, 4), dtype=int)
    r1, r2 = np.random.default_rng(11), np.random.default_rng(11)
    m.sample_episode(pi, r1)
    r2.random(6)
    assert r1.random() == r2.random()


# the environments whose model is drawn from their seed, at small sizes
SEEDED_ENVS = [
    (RandomLinearMixtureMDP, dict(S=8, A=3, d=4, H=5)),
    (RandomLinearMDP, dict(S=10, A=4, d=5, H=6)),
    (HardToLearn, dict(d=5, H=6, K=10000)),
    (SyntheticLinearMDP, dict(H=12, n_actions=8)),
]


def test_seeding_reproducibility():
    for cls, kw in SEEDED_ENVS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AssumptionWarning)
            a, b, c = cls(seed=4, **kw), cls(seed=4, **kw), cls(seed=5, **kw)
        np.testing.assert_array_equal(a.P, b.P)
        np.testing.assert_array_equal(a.R, b.R)
        assert not (np.array_equal(a.P, c.P) and np.array_equal(a.R, c.R)), cls.__name__
    m = RandomLinearMixtureMDP(S=8, A=3, d=4, H=5, seed=1)
    pi = np.zeros((5, 8), dtype=int)
    t1 = [m.sample_episode(pi, np.random.default_rng(3)).states for _ in range(2)]
    t2 = m.sample_episode(pi, np.random.default_rng(3)).states
    np.testing.assert_array_equal(t1[0], t2)
    np.testing.assert_array_equal(t1[0], t1[1])


def test_a_model_drawn_without_a_seed_is_named_by_the_seed_it_drew():
    """RandomLinearMDP(seed=None) drew a new model each time under one name ("seed=None"): two
    results files could not tell them apart, nor could either model be rebuilt. The seed is now
    drawn at construction (OS entropy) and recorded in env.seed and the name, which rebuilds the
    model; an int seed keeps its name, and a SeedSequence numpy reads as that int takes it too."""
    for cls, kw in SEEDED_ENVS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AssumptionWarning)
            a, b = cls(seed=None, **kw), cls(seed=None, **kw)
            again = cls(seed=a.seed, **kw)
            four, four_seq = cls(seed=4, **kw), cls(seed=np.random.SeedSequence(4), **kw)
        assert isinstance(a.seed, int) and a.seed != b.seed and a.name != b.name, cls.__name__
        assert a.name.endswith(f"seed={a.seed})") and again.name == a.name, cls.__name__
        np.testing.assert_array_equal(again.P, a.P)
        np.testing.assert_array_equal(again.R, a.R)
        if cls in (RandomLinearMixtureMDP, RandomLinearMDP):  # continuous draws: never equal
            assert not np.array_equal(a.P, b.P), cls.__name__
        assert four.seed == 4 and four.name.endswith(", seed=4)"), cls.__name__
        assert four_seq.seed == 4 and four_seq.name == four.name, cls.__name__
        np.testing.assert_array_equal(four_seq.P, four.P)
        np.testing.assert_array_equal(four_seq.R, four.R)


def test_a_model_drawn_from_a_generator_is_named_by_an_int_seed():
    """RandomLinearMDP(seed=np.random.default_rng(5)) was named "...seed=Generator(PCG64) at
    0x7F...)": a memory address, different in every process, that rebuilt nothing. The int seed is
    now drawn from the generator (128 bits; the generator advances) and recorded in env.seed and the
    name, which rebuild the model; equal generators give equal names and models; an int seed keeps
    its name and its model (the documented draws from default_rng(seed))."""
    for cls, kw in SEEDED_ENVS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AssumptionWarning)
            gen = np.random.default_rng(5)
            a, b = cls(seed=gen, **kw), cls(seed=gen, **kw)
            same = cls(seed=np.random.default_rng(5), **kw)
            bits = cls(seed=np.random.PCG64(5), **kw)
            again = cls(seed=a.seed, **kw)
        assert isinstance(a.seed, int) and a.name.endswith(f"seed={a.seed})"), (cls.__name__, a.name)
        assert "0x" not in a.name and " at " not in a.name and "Generator" not in a.name, a.name
        assert again.name == same.name == bits.name == a.name != b.name, cls.__name__
        for m in (again, same, bits):
            np.testing.assert_array_equal(m.P, a.P)
            np.testing.assert_array_equal(m.R, a.R)
    rng = np.random.default_rng(4)  # RandomLinearMDP's documented draw order: phi first
    four = RandomLinearMDP(S=10, A=4, d=5, H=6, seed=4)
    np.testing.assert_array_equal(four.features, rng.dirichlet(np.full(5, 0.3), size=(10, 4)))
    assert four.name == "RandomLinearMDP(S=10, A=4, d=5, H=6, seed=4)"


# ------------------------------------------------------------------------------------------------
# one-hot linear view
# ------------------------------------------------------------------------------------------------
def test_one_hot_linear_view_reproduces_P_and_R():
    P, R, init = random_tabular(4, 3, 5, seed=2)
    m = FiniteMDP(P, R, init, name="tab")
    lin = tabular_linear_mdp(m.P, m.R, m.init_dist, name=m.name)
    assert isinstance(lin, LinearMDP) and lin.d == 12 and lin.name == "tab"
    np.testing.assert_array_equal(lin.P, m.P)
    np.testing.assert_array_equal(lin.R, m.R)
    np.testing.assert_array_equal(lin.init_dist, m.init_dist)
    for s, a in itertools.product(range(4), range(3)):
        e = np.zeros(12)
        e[s * 3 + a] = 1.0
        np.testing.assert_array_equal(lin.features[s, a], e)
        np.testing.assert_array_equal(lin.features_flat[s * 3 + a], e)
        for h in range(5):
            assert lin.features[s, a] @ lin.theta[h] == R[h, s, a]
            np.testing.assert_array_equal(lin.mu[h] @ lin.features[s, a], P[h, s, a])
    assert lin.features_flat.shape == (12, 12) and lin.features_flat.flags.c_contiguous
    assert lin.assumption_report["mu_ok"] and lin.assumption_report["theta_ok"]
    np.testing.assert_allclose(lin.optimal_values(), m.optimal_values(), atol=1e-12)
    lin2 = tabular_linear_mdp(P, R, init)
    np.testing.assert_array_equal(lin2.P, lin.P)


# ------------------------------------------------------------------------------------------------
# Linear MDPs (Asm. 1)
# ------------------------------------------------------------------------------------------------
def test_linear_mdp_asm1_phi_norm_is_an_error():
    S, A, d, H = 3, 2, 2, 2
    phi = np.zeros((S, A, d))
    phi[..., 0] = 1.0
    mu = np.zeros((H, S, d))
    mu[:, :, 0] = 1.0 / S
    theta = np.zeros((H, d))
    m = LinearMDP(phi, mu, theta, np.full(S, 1 / S))
    assert m.assumption_report["phi_norm_max"] == 1.0
    bad = phi.copy()
    bad[2, 1, 1] = 0.1
    with pytest.raises(AssumptionError, match=r"phi\(s=2, a=1\)"):
        LinearMDP(bad, mu, theta, np.full(S, 1 / S))


def test_linear_mdp_asm1_rewards_and_rows():
    S, A, d, H = 3, 2, 2, 2
    phi = np.zeros((S, A, d))
    phi[..., 0] = 1.0
    mu = np.zeros((H, S, d))
    mu[:, :, 0] = 1.0 / S
    theta = np.zeros((H, d))
    theta[1, 0] = 1.5  # r > 1
    with pytest.raises(AssumptionError, match="outside"):
        LinearMDP(phi, mu, theta, np.full(S, 1 / S))
    mu_bad = mu.copy()
    mu_bad[0, 0, 0] = 0.5  # rows sum to 1.1667
    with pytest.raises(AssumptionError, match="sums to"):
        LinearMDP(phi, mu_bad, np.zeros((H, d)), np.full(S, 1 / S))
    with pytest.raises(ShapeError):
        LinearMDP(phi, mu[:, :2], np.zeros((H, d)), np.full(S, 1 / S))
    with pytest.raises(ShapeError):
        LinearMDP(phi, mu, None, np.full(S, 1 / S))


def test_linear_mdp_asm1_theta_and_mu_bounds_only_warn():
    # d = 1, phi = 1: theta_h = 1 <= sqrt(1) fine; r = theta.
    S, A, H = 2, 1, 1
    phi = np.ones((S, A, 1))
    mu = np.full((H, S, 1), 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ok = LinearMDP(phi, mu, np.ones((H, 1)), [1.0, 0.0])
    assert ok.assumption_report["theta_ok"] and ok.assumption_report["mu_ok"]
    # ||theta|| > sqrt(d) with rewards still in [0, 1]: phi = (0.1, 0), theta = (5, 0), d = 2.
    phi2 = np.zeros((S, A, 2))
    phi2[..., 0] = 0.1
    mu2 = np.zeros((H, S, 2))
    mu2[:, :, 0] = 5.0  # p = 0.5 each; sum_s' |mu| = 10 > sqrt(2): mu bound also fails
    with pytest.warns(AssumptionWarning) as rec:
        m = LinearMDP(phi2, mu2, np.array([[5.0, 0.0]]), [0.5, 0.5])
    msgs = " ".join(str(w.message) for w in rec)
    assert "theta" in msgs and "mu" in msgs
    rep = m.assumption_report
    assert rep["theta_ok"] is False and rep["mu_ok"] is False
    assert rep["mu_bound_exact"] == pytest.approx(10.0)  # v = (1, 1)
    np.testing.assert_allclose(m.R, 0.5)


def test_linear_mdp_mu_exact_vertex_check_can_pass_when_sufficient_bound_fails():
    # d = 2: mu_h(s')_0 = 1/2 (p uniform), mu_h(s')_1 = +-c alternating.
    # sufficient bound sqrt(1 + (2c)^2) > sqrt 2 for c > 1/2; exact max over signs is
    # sqrt(1 + 0) or sqrt(0 + (2c)^2) -> <= sqrt 2 iff 2c <= sqrt 2.
    S, H, c = 2, 1, 0.6
    phi = np.zeros((S, 1, 2))
    phi[..., 0] = 1.0
    mu = np.zeros((H, S, 2))
    mu[:, :, 0] = 0.5
    mu[0, :, 1] = [c, -c]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = LinearMDP(phi, mu, np.zeros((H, 2)), [1.0, 0.0])
    rep = m.assumption_report
    assert rep["mu_bound_sufficient"] > np.sqrt(2)
    assert rep["mu_bound_exact"] == pytest.approx(2 * c)  # v = (1, -1); v = (1, 1) gives 1
    assert rep["mu_ok"] is True


def test_linear_mdp_reward_given_directly():
    P, R, init = random_tabular(3, 2, 2, seed=4)
    lin = tabular_linear_mdp(P, R, init)
    m = LinearMDP(lin.features, lin.mu, None, init, R=R)
    np.testing.assert_allclose(m.theta, lin.theta, atol=1e-12)
    assert m.assumption_report["reward_linear"]
    with pytest.raises(AssumptionError, match="inconsistent"):
        LinearMDP(lin.features, lin.mu, lin.theta, init, R=np.clip(R + 0.01, 0, 1))
    # R not linear in phi: warns, R used as given.
    phi = np.ones((3, 2, 1))
    mu = np.full((2, 3, 1), 1 / 3)
    with pytest.warns(AssumptionWarning, match="not linear"):
        m2 = LinearMDP(phi, mu, None, init, R=R)
    np.testing.assert_array_equal(m2.R, R)
    assert m2.assumption_report["reward_linear"] is False


def test_random_linear_mdp_structure():
    S, A, d, H = 12, 3, 4, 5
    m = RandomLinearMDP(S=S, A=A, d=d, H=H, seed=1)
    assert m.features.shape == (S, A, d) and m.mu.shape == (H, S, d) and m.theta.shape == (H, d)
    np.testing.assert_allclose(m.features.sum(-1), 1.0)  # phi in the simplex
    assert np.all(m.features >= 0)
    np.testing.assert_allclose(m.mu.sum(axis=1), 1.0)  # each mu_h,i a distribution over S
    assert np.all((m.theta >= 0) & (m.theta <= 1))
    np.testing.assert_allclose(m.P, np.einsum("sad,htd->hsat", m.features, m.mu), atol=1e-15)
    np.testing.assert_allclose(m.R, np.einsum("sad,hd->hsa", m.features, m.theta), atol=1e-15)
    np.testing.assert_allclose(m.init_dist, 1 / S)
    np.testing.assert_array_equal(m.features_flat, m.features.reshape(S * A, d))
    assert m.features_flat.flags.c_contiguous and not m.features_flat.flags.writeable
    rep = m.assumption_report
    assert rep["theta_ok"] and rep["mu_ok"] and rep["phi_norm_max"] <= 1


def test_random_linear_mdp_default_size_builds():
    m = RandomLinearMDP()
    assert (m.S, m.A, m.d, m.H) == (100, 10, 16, 20)


def test_synthetic_linear_mdp():
    H, A = 15, 100
    with pytest.warns(AssumptionWarning, match="mu"):
        m = SyntheticLinearMDP(H, n_actions=A, seed=0)
    assert (m.S, m.A, m.d, m.H) == (2, A, 10, H)
    np.testing.assert_allclose(np.linalg.norm(m.features, axis=-1), 1.0)
    # u_a: 8-bit code, most significant first, bit 1 -> +1
    np.testing.assert_array_equal(m.features[0, 5, :8] * 3, [-1, -1, -1, -1, -1, 1, -1, 1])
    np.testing.assert_array_equal(m.features[1, 0, 8:] * 3, [0, 1])
    np.testing.assert_array_equal(m.features[0, 0, 8:] * 3, [1, 0])
    for h in range(H):
        al = int(m.alpha[h])
        # (s=0, a=0) moves to state alpha_h; every other pair to 1 - alpha_h
        assert m.P[h, 0, 0, al] == pytest.approx(1.0)
        for s, a in [(0, 1), (0, 99), (1, 0), (1, 57)]:
            assert m.P[h, s, a, 1 - al] == pytest.approx(1.0)
        assert m.R[h, 0, 0] == pytest.approx(0.99) and m.R[h, 1, 0] == pytest.approx(0.01)
    assert not np.allclose(m.P[:, 0, 0], m.P[:, 0, 1])  # transitions depend on the action
    assert set(np.unique(m.alpha)) <= {0, 1}
    np.testing.assert_allclose(m.init_dist, 0.5)
    rep = m.assumption_report
    assert rep["mu_ok"] is False and rep["mu_bound_exact"] == pytest.approx(3 * np.sqrt(2))
    assert rep["theta_ok"]
    with pytest.raises(AssumptionError, match="d = 10"):
        SyntheticLinearMDP(H, d=12)
    for d in (10.0, np.float64(10.0), "10"):  # the sizes' integer rule, as for H and n_actions
        with pytest.raises(AssumptionError, match=r"SyntheticLinearMDP needs d >= 1 \(an integer\)"):
            SyntheticLinearMDP(3, d=d)
    with pytest.warns(AssumptionWarning, match="Asm. 1 not satisfied"):  # its mu bound, as above
        assert SyntheticLinearMDP(3, d=np.int64(10)).d == 10
    with pytest.raises(AssumptionError, match="n_actions"):
        SyntheticLinearMDP(H, n_actions=300)


def test_river_swim_tabular_probabilities():
    S, H = 6, 20
    m = RiverSwim(S=S, H=H)
    assert (m.S, m.A, m.H, m.d) == (S, 2, H, 2 * S)
    for h in (0, H - 1):
        P = m.P[h]
        for s in range(S):
            assert P[s, 0, max(s - 1, 0)] == 1.0  # left: deterministic
        for s in range(1, S - 1):
            assert (P[s, 1, s], P[s, 1, s + 1], P[s, 1, s - 1]) == (0.6, 0.3, 0.1)
        assert (P[0, 1, 0], P[0, 1, 1]) == (0.3, 0.7)
        assert (P[S - 1, 1, S - 1], P[S - 1, 1, S - 2]) == (0.9, 0.1)
        np.testing.assert_allclose(P.sum(-1), 1.0)
    expected_R = np.zeros((S, 2))
    expected_R[0, 0] = 0.005
    expected_R[S - 1, 1] = 1.0
    np.testing.assert_array_equal(m.R, np.broadcast_to(expected_R, (H, S, 2)))
    assert m.init_dist[0] == 1.0
    np.testing.assert_array_equal(m.features_flat, np.eye(2 * S))


# ------------------------------------------------------------------------------------------------
# Linear-mixture MDPs (Asm. 2)
# ------------------------------------------------------------------------------------------------
def test_phi_v_matches_explicit_loop_and_matrix():
    m = RandomLinearMixtureMDP(S=7, A=3, d=4, H=2, seed=3)
    rng = np.random.default_rng(0)
    v = rng.random(7)
    ref = np.zeros((7, 3, 4))
    for s in range(7):
        for a in range(3):
            for t in range(7):
                ref[s, a] += m.features[s, a, t] * v[t]
    np.testing.assert_allclose(m.phi_v(v), ref, atol=1e-14)
    assert m.phi_v_matrix.shape == (7 * 3 * 4, 7) and m.phi_v_matrix.flags.c_contiguous
    np.testing.assert_allclose((m.phi_v_matrix @ v).reshape(7, 3, 4), ref, atol=1e-14)
    vs = rng.random((5, 7))
    batch = m.phi_v(vs)
    assert batch.shape == (5, 7, 3, 4)
    for i in range(5):
        np.testing.assert_allclose(batch[i], m.phi_v(vs[i]), atol=1e-14)
    # phi_v(V)^T w_h = P_h V
    for h in range(2):
        np.testing.assert_allclose(m.phi_v(v) @ m.weights[h], m.P[h] @ v, atol=1e-14)
    with pytest.raises(ShapeError):
        m.phi_v(np.ones(6))


def test_mixture_asm2_w_norm_above_C_w_raises():
    m = RiverSwimMixture(S=4, H=3)
    with pytest.raises(AssumptionError, match="C_w"):
        LinearMixtureMDP(m.features, m.weights, m.R, m.init_dist, C_w=1.0)
    LinearMixtureMDP(m.features, m.weights, m.R, m.init_dist, C_w=m.C_w)


def test_mixture_asm2_rows_and_rewards_raise():
    m = RiverSwimMixture(S=4, H=3)
    with pytest.raises(AssumptionError, match="sums to"):
        LinearMixtureMDP(m.features, 1.1 * m.weights, m.R, m.init_dist)
    R = np.array(m.R)
    R[1, 2, 0] = 1.01
    with pytest.raises(AssumptionError, match=r"R\[h=1, s=2, a=0\]"):
        LinearMixtureMDP(m.features, m.weights, R, m.init_dist)


def _alternating_mixture(S, c):
    """phi(s'|0,0) = (1/S, +-c) alternating; w = (1, 0): p uniform. Sufficient bound always fails;
    max ||phi_v|| over vertices = max(1, sqrt((k/S)^2 + (k c)^2)) with k = #plus states."""
    f = np.zeros((S, 1, S, 2))
    f[:, :, :, 0] = 1.0 / S
    f[:, :, :, 1] = c * np.where(np.arange(S) % 2 == 0, 1.0, -1.0)
    return f, np.array([[1.0, 0.0]]), np.zeros((1, S, 1)), np.full(S, 1.0 / S)


def test_mixture_asm2_phi_v_exact_vertex_check():
    # S = 10 <= 16: exact enumeration. k = 5 plus states: 0.25 + 25 c^2.
    f, w, R, init = _alternating_mixture(10, 0.1)  # 0.25 + 0.25 -> fine (max is 1 at v = 1)
    m = LinearMixtureMDP(f, w, R, init)
    assert m.assumption_report["phi_v_sufficient_max"] > 1
    assert m.assumption_report["phi_v_exact_max"] == pytest.approx(1.0)
    f, w, R, init = _alternating_mixture(10, 0.2)  # 0.25 + 1 > 1
    with pytest.raises(AssumptionError, match=r"phi_v\(s=0, a=0\)"):
        LinearMixtureMDP(f, w, R, init)


def test_mixture_asm2_phi_v_randomized_check_for_large_supports():
    f, w, R, init = _alternating_mixture(20, 0.1)  # k = 10: 0.25 + 1 > 1 -> found by the search
    with pytest.raises(AssumptionError, match="phi_v"):
        LinearMixtureMDP(f, w, R, init)
    f, w, R, init = _alternating_mixture(20, 0.04)  # max is 1 (v = 1): cannot be proven -> warning
    with pytest.warns(AssumptionWarning, match="randomized"):
        m = LinearMixtureMDP(f, w, R, init)
    assert len(m.assumption_report["phi_v_unverified"]) == 20


def _hard_value(p, H):
    """Value from x_1 when the jump to x_{H+2} at step h has probability p[h] (reward 1 per step there)."""
    v, surv = 0.0, 1.0
    for h in range(H):
        v += surv * p[h] * (H - 1 - h)
        surv *= 1.0 - p[h]
    return v


def test_hard_to_learn_structure():
    d, H, K = 5, 6, 10000
    m = HardToLearn(d, H, K, seed=0)
    assert (m.S, m.A, m.H, m.d) == (H + 2, 2 ** (d - 1), H, d)
    delta = 1 / H
    Delta = np.sqrt(delta / K) / (4 * np.sqrt(2))
    assert m.delta == delta and m.Delta == pytest.approx(Delta)
    assert m.alpha == pytest.approx(np.sqrt(1 / (1 + Delta * (d - 1))))
    assert m.beta == pytest.approx(np.sqrt(Delta / (1 + Delta * (d - 1))))
    np.testing.assert_array_equal(m.action_vectors[0], [-1, -1, -1, -1])
    np.testing.assert_array_equal(m.action_vectors[1], [-1, -1, -1, 1])
    np.testing.assert_array_equal(m.action_vectors[8], [1, -1, -1, -1])
    np.testing.assert_array_equal(m.action_vectors[15], [1, 1, 1, 1])
    assert m.mu.shape == (H, d - 1)
    np.testing.assert_allclose(np.abs(m.mu), Delta)
    np.testing.assert_allclose(m.weights[:, 0], 1 / m.alpha)
    np.testing.assert_allclose(m.weights[:, 1:], m.mu / m.beta)
    # C_w = ||w_h|| = 1 + (d-1) Delta for every h
    np.testing.assert_allclose(np.linalg.norm(m.weights, axis=1), 1 + (d - 1) * Delta, rtol=1e-12)
    assert m.C_w == pytest.approx(1 + (d - 1) * Delta, rel=1e-12)
    good = H + 1
    for h in range(H):
        for a in range(m.A):
            inner = m.mu[h] @ m.action_vectors[a]
            for s in range(H):
                assert m.P[h, s, a, s + 1] == pytest.approx(1 - delta - inner, abs=1e-14)
                assert m.P[h, s, a, good] == pytest.approx(delta + inner, abs=1e-14)
            assert m.P[h, H, a, H] == pytest.approx(1.0) and m.P[h, good, a, good] == pytest.approx(1.0)
    np.testing.assert_array_equal(m.R[:, good, :], 1.0)
    assert m.R.sum() == H * m.A
    assert m.init_dist[0] == 1.0
    # features as given
    np.testing.assert_allclose(
        m.features[2, 3, 3], np.r_[m.alpha * (1 - delta), -m.beta * m.action_vectors[3]]
    )
    np.testing.assert_allclose(m.features[2, 3, good], np.r_[m.alpha * delta, m.beta * m.action_vectors[3]])
    np.testing.assert_allclose(m.features[H, 3, H], [m.alpha, 0, 0, 0, 0])
    # the sufficient phi_v bound fails here; the exact vertex check passes
    assert m.assumption_report["phi_v_sufficient_max"] > 1 >= m.assumption_report["phi_v_exact_max"]


def test_hard_to_learn_values_analytic():
    d, H, K = 5, 6, 10000
    m = HardToLearn(d, H, K, seed=0)
    delta, Delta = m.delta, m.Delta
    p_star = delta + (d - 1) * Delta
    v_star = _hard_value([p_star] * H, H)
    Vs = m.initial_value(m.optimal_values())
    assert Vs == pytest.approx(v_star, abs=1e-12)
    assert Vs == pytest.approx(2.04, abs=0.01)  # docs/benchmarks.md reference
    # optimal action at step h = sign(mu_h) (at the last step every action is optimal)
    pi = m.optimal_policy()
    for h in range(H - 1):
        np.testing.assert_array_equal(m.action_vectors[pi[h, h]], np.sign(m.mu[h]))
    # constant actions: value from the time-varying jump probabilities
    gaps = []
    for a in range(m.A):
        V = m.policy_values(np.full((H, m.S), a))
        p = delta + m.mu @ m.action_vectors[a]
        assert m.initial_value(V) == pytest.approx(_hard_value(p, H), abs=1e-12)
        gaps.append(Vs - m.initial_value(V))
    gaps = np.array(gaps)
    max_gap = v_star - _hard_value([delta - (d - 1) * Delta] * H, H)
    assert np.all(gaps >= -1e-12) and np.all(gaps <= max_gap + 1e-12)
    # the mean over constant actions is V(p*) - V(delta) to first order (~0.027); the reference
    # "gap of a constant action ~0.035" lies in [0, max_gap ~ 0.055].
    assert gaps.mean() == pytest.approx(v_star - _hard_value([delta] * H, H), abs=1e-3)
    assert 0.01 < gaps.mean() < 0.06 and 0.0 < 0.035 < max_gap


def test_hard_to_learn_rejects_invalid():
    with pytest.raises(AssumptionError, match="Delta"):
        HardToLearn(d=30, H=50, K=1)
    with pytest.raises(AssumptionError):
        HardToLearn(d=1, H=5, K=100)


def test_hard_to_learn_refuses_one_step_by_its_own_rule():
    """At H = 1, delta = 1/H = 1 and P(s+1|s,a) = 1 - delta - <mu_h, a> < 0 for half the actions,
    whatever d and K: refused by HardToLearn naming H, not by the kernel check's bare
    "P[...] is negative" (it passed the (d-1) Delta <= delta check)."""
    for d, K in ((2, 1000), (3, 10**6)):
        with pytest.raises(AssumptionError, match="H >= 2"):
            HardToLearn(d=d, H=1, K=K)
    m = HardToLearn(d=3, H=2, K=1, seed=0)  # delta = 1 - delta: the smallest horizon, every row valid
    assert m.P.min() >= 0.0 and np.allclose(m.P.sum(axis=-1), 1.0)


def test_random_linear_mixture_structure():
    S, A, d, H = 20, 4, 5, 10
    m = RandomLinearMixtureMDP(S=S, A=A, d=d, H=H, seed=0)
    assert m.features.shape == (S, A, S, d) and m.weights.shape == (H, d)
    assert m.C_w == pytest.approx(np.sqrt(d))
    assert np.all(np.linalg.norm(m.weights, axis=1) <= m.C_w + 1e-12)
    q = m.weights / np.sqrt(d)
    np.testing.assert_allclose(q.sum(1), 1.0)
    np.testing.assert_allclose(m.basis.sum(-1), 1.0)
    assert np.all((m.basis > 0).sum(-1) <= 5)
    np.testing.assert_allclose(m.features * np.sqrt(d), m.basis.transpose(1, 2, 3, 0))
    np.testing.assert_allclose(m.P, np.einsum("hi,isat->hsat", q, m.basis), atol=1e-14)
    assert np.all((m.R >= 0) & (m.R <= 1)) and m.R.std() > 0.2
    np.testing.assert_allclose(m.init_dist, 1 / S)
    assert m.assumption_report["phi_v_sufficient_max"] <= 1 + 1e-9
    small = RandomLinearMixtureMDP(S=3, A=2, d=2, H=2, seed=0)  # support min(S, 5) = 3
    np.testing.assert_allclose(small.basis.sum(-1), 1.0)


def test_river_swim_mixture_probabilities():
    S, H = 6, 20
    m = RiverSwimMixture(S=S, H=H)
    assert (m.S, m.A, m.d, m.H) == (S, 2, 3, H)
    np.testing.assert_allclose(m.weights, np.tile(np.sqrt(3) * np.array([0.9, 0.05, 0.05]), (H, 1)))
    assert m.C_w == pytest.approx(np.sqrt(3) * np.linalg.norm([0.9, 0.05, 0.05]))
    for h in (0, 7, H - 1):
        P = m.P[h]
        for s in range(1, S - 1):  # right in the middle
            assert P[s, 1, s + 1] == pytest.approx(0.9)
            assert P[s, 1, s] == pytest.approx(0.05)
            assert P[s, 1, s - 1] == pytest.approx(0.05)
        assert P[0, 1, 1] == pytest.approx(0.9) and P[0, 1, 0] == pytest.approx(0.1)
        assert P[S - 1, 1, S - 2] == pytest.approx(0.9) and P[S - 1, 1, S - 1] == pytest.approx(0.1)
        for s in range(S):  # left moves left surely
            assert P[s, 0, max(0, s - 1)] == pytest.approx(1.0)
    # unscaled features
    np.testing.assert_allclose(m.features[2, 1, 3] * np.sqrt(3), [1, 0, 0])
    np.testing.assert_allclose(m.features[2, 1, 2] * np.sqrt(3), [0, 1, 0])
    np.testing.assert_allclose(m.features[2, 1, 1] * np.sqrt(3), [0, 0, 1])
    np.testing.assert_allclose(m.features[0, 1, 0] * np.sqrt(3), [0, 1, 1])
    np.testing.assert_allclose(m.features[S - 1, 1, S - 1] * np.sqrt(3), [0, 1, 1])
    np.testing.assert_allclose(m.features[S - 1, 1, S - 2] * np.sqrt(3), [1, 0, 0])
    np.testing.assert_allclose(m.features[3, 0, 2] * np.sqrt(3), [1, 1, 1])
    np.testing.assert_allclose(m.features[0, 0, 0] * np.sqrt(3), [1, 1, 1])
    assert m.R[0, 0, 0] == 0.005 and m.R[0, S - 1, 1] == 1.0 and m.R.sum() == pytest.approx(H * 1.005)
    assert m.init_dist[0] == 1.0
    # ||phi_v|| <= 1 on the box: max at v = 1 is exactly 1
    assert np.linalg.norm(m.phi_v(np.ones(S)), axis=-1).max() == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"S": 2.5}, "S >= 2 states (an integer), got S=2.5"),
        ({"S": "6"}, "S >= 2 states (an integer), got S='6'"),
        ({"S": 1}, "S >= 2 states (an integer), got S=1"),
        ({"H": float("nan")}, "H >= 1 (an integer), got H=nan"),
        ({"H": 20.0}, "H >= 1 (an integer), got H=20.0"),
        ({"H": 0}, "H >= 1 (an integer), got H=0"),
    ],
)
def test_river_swim_mixture_takes_integers_only(kw, needle):
    """H = nan was a raw ValueError from int(); S = 2.5 and '6' were reported as "S=2.5" / "S=6";
    H = 20.0 was accepted where FeatureMap refuses it: integers only, the value shown as given."""
    with pytest.raises(AssumptionError, match=re.escape(needle)):
        RiverSwimMixture(**kw)
    assert RiverSwimMixture(S=np.int64(4), H=np.int64(3)).H == 3


@pytest.mark.parametrize("args", [(-2, 2, 2), (2.5, 2, 2), (2, 0, 2), (2, "2", 2), (2, 2, 2.0), (True, 2, 2)])
def test_feature_map_one_hot_refuses_bad_sizes(args):
    """one_hot(-2, 2, 2) was numpy's "negative dimensions", one_hot(2.5, 2, 2) a raw TypeError;
    H = 2.0 is refused as RiverSwimMixture refuses H = 20.0."""
    from privrl.envs import FeatureMap

    with pytest.raises(ShapeError, match=r"(S|A|H) must be an integer >= 1, got"):
        FeatureMap.one_hot(*args)
    assert FeatureMap.one_hot(2, 2, 2).d == 4


# ------------------------------------------------------------------------------------------------
# gymnasium (optional)
# ------------------------------------------------------------------------------------------------
def test_from_gymnasium_frozen_lake():
    gymnasium = pytest.importorskip("gymnasium")
    from privrl.envs import from_gymnasium, frozen_lake

    m = frozen_lake(H=20)
    assert isinstance(m, LinearMDP) and (m.S, m.A, m.H, m.d) == (16, 4, 20, 64)
    env = gymnasium.make("FrozenLake-v1", map_name="4x4", is_slippery=True)
    table = env.unwrapped.P
    desc = env.unwrapped.desc.astype(str).ravel()
    terminal = {s for s in range(16) if desc[s] in "HG"}
    for s in range(16):
        for a in range(4):
            if s in terminal:
                assert m.P[0, s, a, s] == 1.0 and m.R[0, s, a] == 0.0
                continue
            p = np.zeros(16)
            r = 0.0
            for prob, ns, rew, _ in table[s][a]:
                p[ns] += prob
                r += prob * rew
            np.testing.assert_allclose(m.P[0, s, a], p)
            np.testing.assert_allclose(m.P[19, s, a], p)
            assert m.R[0, s, a] == pytest.approx(r)
    # reward 1 on entering the goal (state 15) from 14 moving right (slippery: w.p. 1/3)
    assert m.R[0, 14, 2] == pytest.approx(1 / 3)
    np.testing.assert_allclose(m.init_dist, env.unwrapped.initial_state_distrib)
    assert m.init_dist[0] == 1.0
    assert 0.0 < m.initial_value(m.optimal_values()) < 1.0
    m2 = from_gymnasium(env, H=5, name="fl")
    assert m2.name == "fl" and m2.H == 5
    with pytest.raises(AssumptionError, match="outside"):
        from_gymnasium(
            gymnasium.make(
                "CliffWalking-v1" if "CliffWalking-v1" in gymnasium.registry else "CliffWalking-v0"
            ),
            H=5,
        )
    with pytest.raises(ShapeError, match=r"CartPole-v1 has no model: .*privrl\.learn"):
        from_gymnasium(gymnasium.make("CartPole-v1"), H=5)
    env.close()


@pytest.mark.parametrize("flag", ["no", "False", 1.5, 1, 0, None])
def test_frozen_lake_is_slippery_must_be_a_bool(flag):
    """is_slippery="no" built the slippery lake, labelled "slippery=no": only True / False."""
    pytest.importorskip("gymnasium")
    from privrl.envs import frozen_lake

    with pytest.raises(AssumptionError, match="is_slippery must be True or False, got"):
        frozen_lake(H=5, is_slippery=flag)
    assert not np.array_equal(frozen_lake(H=5, is_slippery=False).P, frozen_lake(H=5, is_slippery=True).P)


@pytest.mark.parametrize("name", ["foo", "9x9", None, ["4x4"]])
def test_frozen_lake_bad_map_names_the_maps(name):
    """map_name="foo" was a bare KeyError from gymnasium."""
    pytest.importorskip("gymnasium")
    from privrl.envs import frozen_lake

    with pytest.raises(AssumptionError, match=r"map_name must be one of .*'4x4', '8x8', got"):
        frozen_lake(H=5, map_name=name)
    assert frozen_lake(H=5, map_name="8x8").S == 64


def test_as_gymnasium_adapter():
    gymnasium = pytest.importorskip("gymnasium")
    from privrl.envs import as_gymnasium

    m = RiverSwim(S=4, H=5)
    env = as_gymnasium(m)
    assert isinstance(env, gymnasium.Env)
    assert env.observation_space.n == 4 and env.action_space.n == 2
    from privrl.exceptions import CapacityError

    with pytest.raises(CapacityError, match=r"call reset\(\) before step\(\)"):  # a RuntimeError before
        env.step(0)
    obs, info = env.reset(seed=3)
    assert obs == 0 and info == {"h": 0}
    states, total = [obs], 0.0
    for h in range(5):
        obs, r, term, trunc, info = env.step(1)
        states.append(obs)
        total += r
        assert term is False and trunc == (h == 4) and info["h"] == h + 1
        assert env.observation_space.contains(obs)
    with pytest.raises(CapacityError, match="the episode is over"):
        env.step(1)
    # seeded resets reproduce the episode
    obs, _ = env.reset(seed=3)
    again = [obs] + [env.step(1)[0] for _ in range(5)]
    assert again == states
    from privrl.envs import gym as gym_mod

    assert isinstance(env, gym_mod.GymnasiumAdapter)


def test_threads_wrapping_their_first_model_at_once_get_one_adapter_class(monkeypatch):
    """_adapter_class checked for a class and then built one: two threads wrapping their first model
    at once (a thread sweep's runs making privrl's own gymnasium ids) each built a GymnasiumAdapter
    of its own, and the adapter of the class not kept was neither recognized (isinstance against the
    kept class: its horizon, needs_absorbing) nor picklable as privrl.envs.gym.GymnasiumAdapter.
    Forced here: the first thread to build waits (up to 2 s, a bound on the fixed code's path) for the
    second to reach the build too."""
    import pickle
    import threading
    from concurrent.futures import ThreadPoolExecutor

    pytest.importorskip("gymnasium")
    from privrl.envs import gym as gym_mod

    monkeypatch.setattr(gym_mod, "_ADAPTER_CLASS", None)
    arrived, both, real = [], threading.Event(), gym_mod._import_gymnasium

    def building():  # called once per class built
        arrived.append(threading.get_ident())
        if len(arrived) == 2:
            both.set()
        both.wait(timeout=2.0)  # the other thread's arrival (before the fix, it came at once)
        return real()

    monkeypatch.setattr(gym_mod, "_import_gymnasium", building)
    with ThreadPoolExecutor(2) as pool:
        a, b = pool.map(lambda _: gym_mod.as_gymnasium(RiverSwim(S=4, H=5)), range(2))
    assert type(a) is type(b) is gym_mod.GymnasiumAdapter
    for env in (a, b):
        assert type(pickle.loads(pickle.dumps(env))) is gym_mod.GymnasiumAdapter


def test_gym_helpers_raise_a_hint_without_gymnasium(monkeypatch):
    import sys

    from privrl.envs import gym as gym_mod

    monkeypatch.setitem(sys.modules, "gymnasium", None)  # makes `import gymnasium` fail
    monkeypatch.setattr(gym_mod, "_ADAPTER_CLASS", None)
    with pytest.raises(ImportError, match=r"pip install privrl\[gym\]"):
        gym_mod.frozen_lake()
    with pytest.raises(ImportError, match=r"privrl\[gym\]"):
        gym_mod.as_gymnasium(RiverSwim())


def test_from_gymnasium_rescales_rewards_as_learn_does():
    """CliffWalking's rewards (-1 a step, -100 the cliff) rescaled by reward=: the model is exact
    for the episodes privrl.learn sees (rescaled rewards, the absorbing goal paying reward(0.0)):
    the optimal policy's exact value equals its rolled-out return on the deterministic env."""
    gymnasium = pytest.importorskip("gymnasium")
    from privrl.envs import from_gymnasium

    cid = "CliffWalking-v1" if "CliffWalking-v1" in gymnasium.registry else "CliffWalking-v0"
    scale = lambda r: (r + 100) / 100  # noqa: E731
    H = 30
    with pytest.raises(AssumptionError, match="rescale it with reward="):
        from_gymnasium(gymnasium.make(cid), H=H)
    m = from_gymnasium(gymnasium.make(cid), H=H, reward=scale)
    assert m.R.min() >= 0.0 and m.R.max() <= 1.0
    pi = m.optimal_policy()
    env = gymnasium.make(cid)
    s, _ = env.reset(seed=0)
    total, done = 0.0, False
    for h in range(H):
        if done:
            total += scale(0.0)  # learn's padding
            continue
        s, r, terminated, truncated, _ = env.step(int(pi[h, s]))
        total += scale(r)
        done = terminated or truncated
    assert done  # it reached the goal within H
    assert m.initial_value(m.optimal_values()) == pytest.approx(total, abs=1e-12)
    with pytest.raises(ValueError, match=r"reward\(0\.0\) = -1"):
        from_gymnasium(gymnasium.make(cid), H=H, reward=lambda r: r - 1)
    taxi = "Taxi-v4" if "Taxi-v4" in gymnasium.registry else "Taxi-v3"
    t = from_gymnasium(gymnasium.make(taxi), H=5, reward=lambda r: (r + 10) / 30)
    assert (t.S, t.A) == (500, 6) and t.R.min() >= 0.0 and t.R.max() <= 1.0


def test_environment_sizes_follow_one_integer_rule():
    """Audit 5: int(v) != v let inf, nan and None through as OverflowError / ValueError /
    TypeError, took True as 1, and a size of 1e30 reached numpy ("Maximum allowed dimension
    exceeded"); RiverSwim, SyntheticLinearMDP and HardToLearn had no dense-size check."""
    from privrl.envs import HardToLearn, RiverSwim, SyntheticLinearMDP

    for call in (
        lambda: RiverSwim(S=float("inf")),
        lambda: RiverSwim(H=float("nan")),
        lambda: RandomLinearMDP(d=None),
        lambda: RandomLinearMDP(S=True, A=True),
        lambda: RiverSwim(S=10**30),
        lambda: SyntheticLinearMDP(H=10**30),
        lambda: HardToLearn(d=4, H=5, K=10**20),
        lambda: RandomLinearMixtureMDP(H=2.5),
    ):
        with pytest.raises(AssumptionError, match=r"needs .* \(an integer\), got"):
            call()
    for call in (
        lambda: SyntheticLinearMDP(H=2**40),
        lambda: RiverSwim(S=10**6),
        lambda: RiverSwimMixture(S=10**8),
    ):
        with pytest.raises(ShapeError, match="above the limit of 268435456"):
            call()


def test_bandit_regret_and_feature_refuse_indices_outside_the_table():
    """Audit 5: regret([-1], [0]) was silently context S-1's, regret([2], [0]) an IndexError,
    regret([0.5], [0]) numpy's, feature(0, A) a broadcast ValueError."""
    from privrl.envs import ContextualBandit
    from privrl.exceptions import IndexRangeError

    env = ContextualBandit(np.eye(3)[:2] * 0.5, np.array([[0.1, 0.9], [0.8, 0.2]]))
    assert np.allclose(env.regret([0, 1, 1], [0, 0, 1]), [0.8, 0.0, 0.6])
    for call in (
        lambda: env.regret([-1], [0]),
        lambda: env.regret([0], [-1]),
        lambda: env.regret([2], [0]),
        lambda: env.regret([0.5], [0]),
        lambda: env.feature(0, 2),
        lambda: env.feature(-1, 0),
    ):
        with pytest.raises(IndexRangeError):
            call()
    assert np.array_equal(env.feature(1, 1), np.r_[np.zeros(3), 0.0, 0.5, 0.0])


def test_an_optimal_policys_regret_is_exactly_zero():
    """V* came from numpy's matrix products and V^pi from the runs' Rust kernel: where every policy
    is optimal the regret was -1e-14, every episode. V* is now pi*'s value by the same kernel."""
    import privrl
    from privrl.agents import LSVIUCB
    from privrl.envs import LinearMDP
    from privrl.privacy import NonPrivate

    rng = np.random.default_rng(0)
    mu = rng.dirichlet(np.ones(3), size=3)[:, :, None]  # (H, S', d = 1): one kernel for every action
    env = LinearMDP(np.ones((3, 2, 1)), mu, rng.uniform(size=(3, 1)), np.ones(3) / 3)
    assert (env.optimal_values()[0] - env.policy_values(np.zeros((3, 3), int))[0] == 0.0).all()
    res = privrl.run(LSVIUCB(env, NonPrivate(), episodes=50, seed=0), env, seed=1)
    assert (np.asarray(res.regret) == 0.0).all()


def test_sizes_that_cannot_fit_are_refused_before_numpy_allocates():
    """Fuzzing: FeatureMap.one_hot(10**5, 10, 3) asked numpy for 7.28 TiB (np.eye(S A)),
    RandomLinearMDP(S=2, A=2, d=2**40) for 8 TiB (its dense-size check ignored d; a sweep's env
    spec too), LinearMDP of (10^5, 10, 1) features for a 745 GiB P (no dense-size check)."""
    from privrl.envs import FeatureMap, LinearMDP
    from privrl.exceptions import ResourceError

    with pytest.raises(ResourceError, match=r"FeatureMap.one_hot keeps .*S A = 1000000.*GiB"):
        FeatureMap.one_hot(10**5, 10, 3)
    for call in (
        lambda: RandomLinearMDP(S=2, A=2, d=2**40, H=2),
        lambda: RandomLinearMDP(S=2, A=2, d=2**26, H=2),  # phi and mu alone: 2^29 entries
        lambda: LinearMDP(
            np.full((10**5, 10, 1), 0.1),
            np.full((1, 10**5, 1), 1e-5),
            np.zeros((1, 1)),
            np.ones(10**5) / 10**5,
        ),
    ):
        with pytest.raises(ShapeError, match="above the limit of 268435456"):
            call()
    assert RandomLinearMDP(S=2, A=2, d=2**10, H=2).d == 2**10


def test_values_and_indices_are_real_finite_and_integers():
    """Fuzzing: initial_value / phi_v of NaN gave NaN, complex values were truncated, an empty
    (0, S) V and None were IndexError / numpy errors, sample_next_state(True, True, True) was 2."""
    from privrl.exceptions import NonFiniteError

    m = RiverSwimMixture(S=4, H=3)
    for f in (m.initial_value, m.phi_v):
        with pytest.raises(NonFiniteError, match="non-finite value nan"):
            f(np.full(4, np.nan))
        for bad in (np.full(4, 1 + 5j), None):
            with pytest.raises(TypeError, match="real numeric array"):
                f(bad)
    with pytest.raises(ShapeError, match=r"got \(0, 4\)"):
        m.initial_value(np.zeros((0, 4)))
    with pytest.raises(TypeError, match="must be integers"):
        m.sample_next_state(True, True, True, np.random.default_rng(0))
    assert m.initial_value(np.ones((4, 4))) == 1.0 and m.initial_value([1, 1, 1, 1]) == 1.0


def test_from_gymnasium_refuses_a_table_outside_its_spaces_and_frozen_lake_a_bad_h():
    """Fuzzing: a next state -1 silently became the last state, 5 of S = 2 was numpy's IndexError,
    frozen_lake(H=inf) an OverflowError (int(H) before the check)."""
    pytest.importorskip("gymnasium")
    from privrl.envs import from_gymnasium, frozen_lake
    from privrl.exceptions import IndexRangeError, PrivacyParameterError

    class Table:
        P = None
        initial_state_distrib = np.eye(2)[0]  # (a table without one: tests/test_own_envs.py)

        class observation_space:
            n = 2

        class action_space:
            n = 1

    class Env:
        unwrapped = Table()

    for bad, match in [(-1, "next state -1"), (5, "next state 5")]:
        Table.P = {0: {0: [(1.0, bad, 0.0, False)]}, 1: {0: [(1.0, 0, 0.0, False)]}}
        with pytest.raises(IndexRangeError, match=rf"P\[0\]\[0\] lists {match}: the states are 0..1"):
            from_gymnasium(Env(), 2)
    Table.P = {0: {0: [(1.0, 1.0, 0.0, False)]}, 1: {0: [(1.0, 0, 0.0, False)]}}
    with pytest.raises(TypeError, match="not an integer"):
        from_gymnasium(Env(), 2)
    Table.P = {0: {3: [(1.0, 1, 0.0, False)]}, 1: {0: [(1.0, 0, 0.0, False)]}}
    with pytest.raises(IndexRangeError, match=r"lists action 3: the actions are 0\.\.0"):
        from_gymnasium(Env(), 2)
    Table.P = {0: {0: [(1.0, 1, 0.0, False)]}, 1: {0: [(1.0, 0, 0.0, False)]}}
    assert from_gymnasium(Env(), 2).P[0, 0, 0].tolist() == [0.0, 1.0]
    for H in (float("inf"), float("nan"), 2.5, None):
        with pytest.raises(PrivacyParameterError, match="H must be an integer >= 1"):
            frozen_lake(H=H)


def test_from_gymnasium_names_a_malformed_transition_of_the_table():
    """A transition that is not (probability, next_state, reward, terminated) numbers: a short
    tuple or a bare number was Python's "not enough values to unpack" / "cannot unpack
    non-iterable float object", a str reward "could not convert string to float", a NaN
    probability or reward "mu / theta contains a non-finite value" (arrays the user never
    passed), and a terminated "no" (truthy) ended the episode. Each names the table entry; a
    well-formed table (and FrozenLake, CliffWalking, Taxi) builds the same model as before."""
    gym = pytest.importorskip("gymnasium")
    from privrl.envs import from_gymnasium
    from privrl.exceptions import AssumptionError, NonFiniteError

    class Table:
        P = None
        initial_state_distrib = np.eye(2)[0]

        class observation_space:
            n = 2

        class action_space:
            n = 1

    class Env:
        unwrapped = Table()

    back = {0: [(1.0, 1, 0.5, False)]}
    for transitions, error, match in [
        ([(1.0, 1, 0.5)], ShapeError, r"lists \(1\.0, 1, 0\.5\): each transition is a \(probability"),
        (
            (1.0, 1, 0.5, False),
            ShapeError,
            r"lists 1\.0: each transition is a",
        ),  # a tuple, not a list of them
        ([(np.nan, 1, 0.5, False)], AssumptionError, "lists probability nan: not a finite number"),
        ([(True, 1, 0.5, False)], AssumptionError, "lists probability True: not a finite number"),
        ([(1.0, 1, np.nan, False)], AssumptionError, "lists reward nan: not a finite number"),
        ([(1.0, 1, "0.5", False)], AssumptionError, "lists reward '0.5': not a finite number"),
        ([(1.0, 1, 0.5, "no")], AssumptionError, "lists terminated 'no': not True or False"),
        # summed to one next state, the row was 1 and R 0.75 - 0.45 = 0.3 (hB's input pass)
        ([(1.5, 1, 0.5, False), (-0.5, 1, 0.9, False)], AssumptionError, r"lists probability 1\.5: not in"),
        ([(-0.5, 1, 0.9, False), (1.5, 1, 0.5, False)], AssumptionError, r"lists probability -0\.5: not in"),
    ]:
        Table.P = {0: {0: transitions}, 1: back}
        with pytest.raises(error, match=rf"^the gymnasium env's transition table P\[0\]\[0\] {match}"):
            from_gymnasium(Env(), 2)
    Table.P = {0: [[(1.0, 1, 0.5, False)]], 1: back}  # a list per state: 'list' has no attribute 'items'
    with pytest.raises(
        ShapeError, match=r"^the gymnasium env's transition table P\[0\] is a list, not a dict"
    ):
        from_gymnasium(Env(), 2)
    Table.P = {0: {0: [(1.0, 1, 0.5, False)]}, 1: back}
    with pytest.raises(NonFiniteError, match=r"P\[0\]\[0\] pays 0\.5, rescaled to nan"):
        from_gymnasium(Env(), 2, reward=lambda r: r if r == 0.0 else float("nan"))
    Table.P = {0: {0: [(np.float32(1.0), np.int64(1), np.array(0.5), np.True_)]}, 1: {0: [(1, 1, 0, 1)]}}
    model = from_gymnasium(Env(), 2)  # numpy numbers, a 0-d reward and 0 / 1 flags, as before
    assert model.P[0, 0, 0].tolist() == [0.0, 1.0] and model.R[0, 0, 0] == 0.5
    for env_id, rescale in (
        ("FrozenLake-v1", None),
        ("CliffWalking-v1", lambda r: (r + 100) / 100),
        ("Taxi-v4", lambda r: (r + 10) / 30),
    ):
        model = from_gymnasium(gym.make(env_id), 3, reward=rescale)
        assert np.isfinite(model.P).all() and model.H == 3


def test_bandit_regret_refuses_contexts_and_arms_of_other_lengths():
    """Fuzzing: regret([0, 1, 2], [0, 1]) was numpy's IndexError ("shape mismatch")."""
    from privrl.envs import ContextualBandit

    env = ContextualBandit(np.eye(3)[:2] * 0.5, np.array([[0.1, 0.9], [0.8, 0.2]]))
    with pytest.raises(ShapeError, match=r"contexts and arms must have one shape .* \(3,\) and \(2,\)"):
        env.regret([0, 1, 1], [0, 1])
    assert np.allclose(env.regret([0, 1, 1], 1), [0.0, 0.6, 0.6])  # one arm for every context


def test_a_large_linear_mdp_values_its_policies_through_its_factors():
    """Exact values of a linear MDP whose P is large (beyond LOW_RANK_MIN_ENTRIES) and whose d is
    small (2 d < S) take phi^T (mu_h^T V): equal to the dense sums over P up to rounding, the
    optimal policy's regret exactly 0 (V* by the same kernel); small or one-hot models keep P's
    sums."""
    from privrl import _core
    from privrl.envs.linear import LOW_RANK_MIN_ENTRIES

    env = RandomLinearMDP(S=200, A=4, d=8, H=8, seed=3)
    assert env.P.size >= LOW_RANK_MIN_ENTRIES and set(env.kernel_factors()) == {"phi", "mu"}
    rng = np.random.default_rng(0)
    for pi in (env.optimal_policy(), rng.integers(0, env.A, size=(env.H, env.S))):
        pol = np.ascontiguousarray(pi, dtype=np.int64)
        dense = _core.policy_values(env.P, env.R, pol)
        np.testing.assert_allclose(env.policy_values(pi), dense, rtol=1e-13, atol=1e-13)
    optimal = env.policy_values(env.optimal_policy())
    assert env.initial_value(env.optimal_values()) - env.initial_value(optimal) == 0
    assert RandomLinearMDP(S=10, A=3, d=4, H=3, seed=0).kernel_factors() == {}  # small: P's sums
    sub = env.P[:, :20, :, :20]
    tabular = tabular_linear_mdp(sub / sub.sum(-1, keepdims=True), env.R[:, :20], np.full(20, 0.05))
    assert tabular.kernel_factors() == {}  # one-hot: d = S A


def test_tabular_linear_mdp_refuses_mismatched_state_axes_as_finite_mdp_does():
    """P (H, S, A, S') with S' != S is no kernel: a ShapeError naming the axes, as FiniteMDP gives
    (tabular_linear_mdp raised numpy's "cannot reshape array" ValueError)."""
    P = np.full((1, 2, 1, 3), 1.0 / 3.0)  # rows are distributions, over 3 next states of 2
    R = np.zeros((1, 2, 1))
    for build in (FiniteMDP, tabular_linear_mdp):
        with pytest.raises(ShapeError, match="matching S axes"):
            build(P, R, [1.0, 0.0])


def test_mixture_C_w_is_a_real_bound():
    """C_w bounds ||w_h|| (Asm. 2) and enters the agents' calibration: a real number, not a string
    float() reads ("2" was taken as 2.0), a bool (True as 1.0) or a list (float()'s bare TypeError)."""
    m = RiverSwimMixture(S=3, H=2)
    parts = (m.features, m.weights, m.R, m.init_dist)
    for bad in ("2", True, [2.0], 1 + 1j, float("nan"), -1.0, float("inf")):
        with pytest.raises(AssumptionError, match="C_w"):
            LinearMixtureMDP(*parts, C_w=bad)
    for good in (2, np.float64(2.0), np.int64(2)):
        assert LinearMixtureMDP(*parts, C_w=good).C_w == 2.0


def test_from_gymnasium_checks_init_dist_as_finite_mdp_does():
    """A complex init_dist lost its imaginary part with numpy's mere ComplexWarning (the model
    built), a string was numpy's "could not convert" ValueError: both refused like FiniteMDP's."""
    gymnasium = pytest.importorskip("gymnasium")
    from privrl.envs import from_gymnasium

    env = gymnasium.make("FrozenLake-v1")
    start = np.r_[1.0, np.zeros(15)]
    for bad in (start + 0.5j, ["a"] * 16):
        with pytest.raises(TypeError, match="init_dist must be a real numeric array"):
            from_gymnasium(env, 4, init_dist=bad)
    for good in (start, start.tolist(), start.astype(np.float32)):
        np.testing.assert_array_equal(from_gymnasium(env, 4, init_dist=good).init_dist, start)


def test_one_hot_sizes_given_as_numpy_ints_meet_the_memory_guard():
    """FeatureMap.one_hot(np.int64(2**31), np.int64(4), 3): numpy's (S A)^2 wrapped to 0 in int64,
    so the memory guard passed and numpy raised its own "array is too big" ValueError (S = A =
    np.int64(2**32): "cannot reshape array of size 0"); the sizes count as the Python ints do."""
    from privrl.envs import FeatureMap
    from privrl.exceptions import ResourceError

    for S, A in ((2**31, 4), (2**32, 2**32)):
        with pytest.raises(ResourceError, match=f"S A = {S * A} "):
            FeatureMap.one_hot(np.int64(S), np.int64(A), 3)
    small = FeatureMap.one_hot(np.int64(3), np.int32(2), np.int64(4))
    assert (small.S, small.A, small.d, small.H) == (3, 2, 6, 4)
    np.testing.assert_array_equal(small.features, FeatureMap.one_hot(3, 2, 4).features)


def test_linear_mixture_refuses_a_dense_kernel_too_large_before_numpy_allocates():
    """Features (100, 10, 100, 1) and weights (10^6, 1) asked numpy for a 745 GiB P (MemoryError
    "Unable to allocate"): refused as LinearMDP refuses it, by the dense-size limit, naming H."""
    S, A = 100, 10
    feats = np.full((S, A, S, 1), 1.0 / S)
    with pytest.raises(ShapeError, match="LinearMixtureMDP: a dense model with H=1000000, S=100, A=10"):
        LinearMixtureMDP(feats, np.ones((10**6, 1)), np.zeros((1, S, A)), np.full(S, 1 / S))
    small = LinearMixtureMDP(feats, np.ones((2, 1)), np.zeros((2, S, A)), np.full(S, 1 / S))
    np.testing.assert_allclose(small.P, 1.0 / S)


def test_tabular_linear_mdp_refuses_one_hot_features_beyond_memory_before_numpy_allocates():
    """P (1, 10, 10^5, 10) is 80 MB, its one-hot features (S A)^2 = 10^12 entries (7.28 TiB):
    numpy's MemoryError "Unable to allocate"; a ResourceError naming S A, as FeatureMap.one_hot."""
    from privrl.exceptions import ResourceError

    S, A = 10, 10**5
    P = np.broadcast_to(np.full(S, 1.0 / S), (1, S, A, S))
    with pytest.raises(ResourceError, match=r"tabular_linear_mdp keeps .*S A = 1000000 .*GiB"):
        tabular_linear_mdp(P, np.zeros((1, S, A)), np.full(S, 1.0 / S))


def test_an_environment_name_is_a_str_or_none_on_every_constructor():
    """name= is the label results and plots carry; every constructor kept whatever it was given
    (name=object(), nan or ["a"] became the env's name, and privrl.run's RunResult.env), and the
    named ones let a falsy name=0 or [] fall silently to their default. A non-str name is a
    TypeError naming name; a str (or None, or "") labels the env as before."""
    import gymnasium as gym

    from privrl.envs import (
        ContextualBandit,
        FeatureMap,
        FiniteMDP,
        HardToLearn,
        LinearMDP,
        RandomLinearMDP,
        RandomLinearMixtureMDP,
        RiverSwim,
        RiverSwimMixture,
        SyntheticLinearMDP,
        from_gymnasium,
        tabular_linear_mdp,
    )

    def _quiet(make):  # SyntheticLinearMDP's Asm. 1 warning at every d (its own test pins it)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AssumptionWarning)
            return make()

    swim = RiverSwimMixture(S=3, H=2)
    X, y = np.eye(4), [0, 1, 0, 1]
    makers = {
        "FiniteMDP": lambda n: FiniteMDP(swim.P, swim.R, swim.init_dist, name=n),
        "tabular_linear_mdp": lambda n: tabular_linear_mdp(swim.P, swim.R, swim.init_dist, name=n),
        "LinearMDP": lambda n: LinearMDP(
            np.eye(2)[:, None], np.full((1, 2, 2), 0.5), np.zeros((1, 2)), [1, 0], name=n
        ),
        "RiverSwim": lambda n: RiverSwim(S=3, H=2, name=n),
        "RiverSwimMixture": lambda n: RiverSwimMixture(S=3, H=2, name=n),
        "RandomLinearMDP": lambda n: RandomLinearMDP(4, 2, 2, 2, name=n),
        "RandomLinearMixtureMDP": lambda n: RandomLinearMixtureMDP(S=3, A=2, d=2, H=2, name=n),
        "SyntheticLinearMDP": lambda n: _quiet(lambda: SyntheticLinearMDP(H=2, n_actions=3, name=n)),
        "HardToLearn": lambda n: HardToLearn(d=3, H=2, K=10, name=n),
        "FeatureMap": lambda n: FeatureMap(np.eye(2)[:, None], 2, name=n),
        "FeatureMap.one_hot": lambda n: FeatureMap.one_hot(2, 2, 2, name=n),
        "ContextualBandit": lambda n: ContextualBandit(np.eye(2) * 0.5, np.eye(2), name=n),
        "from_classification": lambda n: ContextualBandit.from_classification(X, y, name=n),
        "from_gymnasium": lambda n: from_gymnasium(gym.make("FrozenLake-v1"), 3, name=n),
    }
    for what, make in makers.items():
        for bad in (object(), float("nan"), 0, ["a"], b"x"):
            with pytest.raises(TypeError, match=r"^name must be a str \(a label for results\) or None"):
                make(bad)
                pytest.fail(f"{what} took name={bad!r}")
        assert make("mine").name == "mine"
        assert isinstance(make(None).name, str) and make(None).name  # each its own default

"""LinUCB (H = 1, disjoint arms) on contextual bandits (issue 24): the environment, agreement with
the numpy reference, the privacy plan and report, the noise's independence of exploration, the
end-to-end audit, save/load and bad input."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import privrl
from privrl.agents import LinUCB
from privrl.agents.linucb import reference as ref
from privrl.agents.linucb.calibration import VECTOR_TO_GRAM, calibrate_linucb, linucb_radius, release_plan
from privrl.agents.ucrl_vtr.calibration import calibrate_ucrl_vtr
from privrl.audit.report import privacy_report_from_calibration
from privrl.common.errors import AssumptionError, NonFiniteError, PrivrlError, ShapeError
from privrl.envs import ContextualBandit, Trajectory
from privrl.privacy import JointDP, LocalDP, NonPrivate


def blobs(n=120, p=4, A=3, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(A, p)) * 3
    y = rng.integers(A, size=n)
    X = centres[y] + rng.normal(size=(n, p))
    return ContextualBandit.from_classification(X, y, seed=1, name="blobs")


def drive(agent, env, users, rng):
    """users (context, arm, reward) played by the agent on random contexts."""
    out = []
    for _ in range(users):
        s = int(rng.integers(env.S))
        a = agent.act(s)
        r = float(rng.random() < env.means[s, a])
        agent.update(s, a, r)
        out.append((s, a, r))
    return out


def test_from_classification_reduction():
    env = blobs()
    assert env.H == 1 and env.A == 3 and env.d == 3 * env.p
    np.testing.assert_allclose(np.linalg.norm(env.contexts, axis=1), 1.0, rtol=1e-12)
    assert np.all(env.means.sum(axis=1) == 1.0) and np.all(env.means[np.arange(env.S), env.labels] == 1)
    np.testing.assert_allclose(env.contexts[:, -1], 1 / math.sqrt(2))  # the intercept
    assert env.random_regret() == pytest.approx(1 - 1 / 3)
    # phi = e_a (x) x
    np.testing.assert_array_equal(env.feature(2, 1)[env.p : 2 * env.p], env.contexts[2])
    m = ContextualBandit.from_classification(np.eye(3), [0, 1, 1], scale="max")
    assert np.linalg.norm(m.contexts, axis=1).max() == pytest.approx(1.0)


def test_featurize_maps_raw_rows_as_the_table_was_built(tmp_path):
    rng = np.random.default_rng(4)
    # five raw features on different scales, the last one constant
    X = rng.normal(size=(90, 5)) * [1.0, 10.0, 0.1, 3.0, 0.0] + [0.0, 5.0, -2.0, 1.0, 7.0]
    y = np.array(["cat", "dog", "eel"])[rng.integers(3, size=90)]
    order = np.random.default_rng(2).permutation(90)  # the seed's shuffle
    for kw in ({}, {"scale": "max"}, {"bias": False}, {"standardize": False}):
        env = ContextualBandit.from_classification(X, y, seed=2, **kw)
        np.testing.assert_array_equal(env.featurize(X[order]), env.contexts)  # one code path
        np.testing.assert_allclose(env.featurize(X[order[7]]), env.contexts[7], rtol=0, atol=1e-15)
        np.testing.assert_array_equal(env.classes[env.labels], y[order])  # arm a is class classes[a]
    env = ContextualBandit.from_classification(X, y, seed=2)
    assert list(env.classes) == ["cat", "dog", "eel"] and env.p == 5  # 4 varying columns + intercept
    # by hand: standardize with the table's mean / sd (constant column dropped), unit norm, intercept
    x = rng.normal(size=5)
    keep = X.std(axis=0) > 0
    z = (x[keep] - X[:, keep].mean(axis=0)) / X[:, keep].std(axis=0)
    by_hand = np.append(z / np.linalg.norm(z), 1.0) / math.sqrt(2)
    np.testing.assert_allclose(env.featurize(x), by_hand, rtol=1e-12)
    agent = LinUCB(env, NonPrivate(), episodes=10, seed=0)
    assert 0 <= agent.choose(env.featurize(x)) < env.A  # a live user with raw features
    agent.save(tmp_path / "a.privrl")
    np.testing.assert_array_equal(LinUCB.load(tmp_path / "a.privrl").env.featurize(X[order]), env.contexts)
    with pytest.raises(ShapeError, match=r"\(5,\)"):
        env.featurize(np.zeros(4))
    with pytest.raises(NonFiniteError):
        env.featurize([np.nan] * 5)
    plain = ContextualBandit([[0.6, 0.0]], [[0.0, 1.0]])  # no transform: contexts as they are
    np.testing.assert_array_equal(plain.featurize([0.5, 0.5]), [0.5, 0.5])
    assert plain.classes is None


def test_bandit_refuses_bad_tables():
    """Values outside the assumptions (||x|| > 1, a mean outside [0, 1]) are AssumptionError, the
    class LinearMDP / FiniteMDP raise for theirs (they were ShapeError: the shapes were right);
    still ValueError. Wrong shapes stay ShapeError."""
    from privrl.envs import RandomLinearMDP
    from privrl.envs.linear import LinearMDP

    for contexts, means, match in (
        ([[2.0, 0.0]], [[0.0, 1.0]], r"\|\|x\|\| <= 1"),
        ([[0.5, 0.0]], [[0.0, 2.0]], r"\[0, 1\].*means\[0, 1\] = 2"),
        ([[0.5, 0.0]], [[-0.5, 1.0]], r"\[0, 1\].*means\[0, 0\] = -0.5"),
    ):
        with pytest.raises(AssumptionError, match=match) as err:
            ContextualBandit(contexts, means)
        assert isinstance(err.value, ValueError) and not isinstance(err.value, ShapeError)
    env = RandomLinearMDP(S=5, A=2, d=3, H=2, seed=0)
    with pytest.raises(AssumptionError):  # the same kind of violation on a linear MDP
        LinearMDP(2 * env.features, env.mu, env.theta, env.init_dist)
    with pytest.raises(NonFiniteError):
        ContextualBandit([[np.nan, 0.0]], [[0.0, 1.0]])
    with pytest.raises(ShapeError):
        ContextualBandit([[0.5, 0.0]], [[0.0, 1.0], [1.0, 0.0]])
    with pytest.raises(ShapeError, match="2 classes"):
        ContextualBandit.from_classification(np.ones((3, 2)), [1, 1, 1])


def test_from_classification_refuses_missing_or_unsortable_labels():
    X = np.random.default_rng(0).normal(size=(20, 3))
    y = np.array([0, 1] * 10, dtype=float)
    y[[3, 5]] = np.nan  # missing labels are refused, not made a third class
    with pytest.raises(NonFiniteError, match="y contains NaN"):
        ContextualBandit.from_classification(X, y, seed=0)
    y_obj = np.array([0, 1] * 10, dtype=object)
    y_obj[2] = None
    with pytest.raises(ShapeError, match="y contains None"):
        ContextualBandit.from_classification(X, y_obj, seed=0)
    y_obj[2] = float("nan")
    with pytest.raises(NonFiniteError, match="y contains NaN"):
        ContextualBandit.from_classification(X, y_obj, seed=0)
    with pytest.raises(ShapeError, match="cannot be sorted"):
        ContextualBandit.from_classification(X, np.array([0, "a"] * 10, dtype=object), seed=0)
    # labels of one type still work, as objects too
    env = ContextualBandit.from_classification(X, np.array(["a", "b"] * 10, dtype=object), seed=0)
    assert list(env.classes) == ["a", "b"] and env.A == 2


def test_from_classification_refuses_non_numeric_or_overflowing_features():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20, 3)), np.array([0, 1] * 10)
    with pytest.raises(ShapeError, match="X must be a real numeric array"):
        ContextualBandit.from_classification([["a", "b"]] * 20, y, seed=0)
    with pytest.raises(ShapeError, match="X must be a real numeric array"):
        ContextualBandit.from_classification(X + 1j, y, seed=0)
    with pytest.raises(ShapeError, match="contexts must be a real numeric array"):
        ContextualBandit([["a"]], [[0.0, 1.0]])
    env = ContextualBandit.from_classification(X, y, seed=0)
    with pytest.raises(ShapeError, match="raw features must be a real numeric array"):
        env.featurize(["a", "b", "c"])
    # huge features overflow the standardization / the row norm: refused (no numpy warning, no
    # silently zeroed feature columns)
    for kw in ({}, {"scale": "max"}, {"standardize": False}, {"standardize": False, "scale": "max"}):
        with pytest.raises(NonFiniteError, match="overflowed float64"):
            ContextualBandit.from_classification(X * 1e300, y, seed=0, **kw)
    with pytest.raises(NonFiniteError, match="overflowed float64"):
        env.featurize(X[0] * 1e300)
    big = ContextualBandit.from_classification(X * 1e150, y, seed=0)  # large but representable
    np.testing.assert_allclose(big.contexts, env.contexts, rtol=1e-9, atol=1e-12)


def test_nonprivate_agrees_with_the_reference():
    env = blobs()
    ag = LinUCB(env, NonPrivate(), episodes=200, seed=3, ties="lowest", exploration="optimism")
    users = drive(ag, env, 150, np.random.default_rng(0))
    G, inv, w = ref.exact_weights(env.contexts, users, env.A, ag.calibration.lam)
    rel = ag.release()
    np.testing.assert_allclose(rel.design, G, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(rel.inverse, inv, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(rel.weights, w, rtol=1e-9, atol=1e-12)
    for s in range(env.S):
        want = ref.optimistic_arm(env.contexts[s], inv, w, ag.beta, 0.5, 0.0)
        assert ag.act(s) == want


@pytest.mark.parametrize("privacy", [JointDP(1.0, 1e-5), LocalDP(1.0, 1e-5), JointDP(1.0, 0.0)])
def test_private_billboard_is_the_reference_on_the_released_sums(privacy):
    env = blobs()
    ag = LinUCB(env, privacy, episodes=200, seed=4, ties="lowest", exploration="optimism", schedule=7)
    drive(ag, env, 140, np.random.default_rng(1))
    gram, target = ag._core.released()
    G, _, w = ref.released_weights(gram, target, ag.calibration.lam, ag._core.shift)
    rel = ag.release()
    assert rel.users == 140 and ag.releases == 20
    np.testing.assert_allclose(rel.design, G, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(rel.weights, w, rtol=1e-7, atol=1e-9)


def test_jdp_noise_variance_matches_the_calibration():
    """The released reward blocks minus the exact sums: per-entry variance sigma_g^2 times the
    mechanism's variance factor (tree, float sampler, 600 noise seeds)."""
    env = blobs(n=30, p=2, A=2)
    users = [(s, s % 2, 1.0) for s in range(8)]
    exact = np.zeros((2, env.p))
    for s, a, r in users:
        exact[a] += r * env.contexts[s]
    noise = []
    for seed in range(600):
        ag = LinUCB(env, JointDP(1.0, 1e-5, mechanism="tree", sampler="float"), episodes=8, seed=seed,
                    schedule="every")  # fmt: skip
        for s, a, r in users[:7]:
            ag.update(s, a, r)
        noise.append(ag._core.released()[1] - (exact - np.outer([0, 1], env.contexts[7])))
    var = np.var(np.array(noise), axis=0).mean()
    want = ag.calibration.sigma_g**2 * ag._core.variance_factor()
    assert ag._core.variance_factor() == 3.0  # popcount(7) tree nodes
    assert var == pytest.approx(want, rel=0.1)


def test_exploration_moves_policies_not_noise():
    env = blobs()
    rng = np.random.default_rng(2)
    users = [(int(rng.integers(env.S)), int(rng.integers(env.A)), float(rng.integers(2))) for _ in range(60)]
    agents = {
        e: LinUCB(env, JointDP(1.0, 1e-5), episodes=100, seed=5, exploration=e)
        for e in ("optimism", "sampling")
    }
    for ag in agents.values():
        for u in users:
            ag.update(*u)
    (g1, t1), (g2, t2) = (a._core.released() for a in agents.values())
    np.testing.assert_array_equal(g1, g2)
    np.testing.assert_array_equal(t1, t2)
    r1, r2 = (a.privacy_report().to_dict() for a in agents.values())
    assert r1["tight"] == r2["tight"] and r1["mechanisms"] == r2["mechanisms"]
    acts = [[a.act(s) for s in range(env.S)] for a in agents.values()]
    assert acts[0] != acts[1]


def test_a_noise_change_moves_the_report():
    env = blobs()
    ag = LinUCB(env, JointDP(1.0, 1e-5), episodes=1000, seed=0)
    cal = ag.calibration
    half = cal.replace(sigma_B=cal.sigma_B / 2, sigma_g=cal.sigma_g / 2)
    e1 = privacy_report_from_calibration("linucb", cal, plan=ag.release_plan())["tight"]["budget"][0]
    e2 = privacy_report_from_calibration("linucb", half, plan=ag.release_plan())["tight"]["budget"][0]
    assert e1 == pytest.approx(1.0, rel=1e-6) and e2 > 2.0
    # and a regret-side change (lam, radius, batch-independent) leaves the noise alone
    other = LinUCB(env, JointDP(1.0, 1e-5), episodes=1000, seed=0, lam=5.0, beta_scale=3.0)
    assert other.calibration.sigma_g == cal.sigma_g and other.calibration.sigma_B == cal.sigma_B


@pytest.mark.parametrize("kind", ["jdp", "ldp"])
def test_plan_is_alg1_at_h1_and_its_worst_case_covers_cross_arm_neighbours(kind):
    """The noise is Alg. 1's at H = 1 with the context dimension and ceil(K / L) leaves; a user
    may move to another arm's block: random neighbours (same or different block) never exceed
    the plan's per-step mu^2 (the same-block pair x, -x attains it)."""
    K, p, L = 5000, 3, 7
    cal = calibrate_linucb(kind, 1.0, 1e-5, K, 4, p, L, calibration="tight", sampler="float")
    leaves = -(-K // L) if kind == "jdp" else K
    plan = release_plan(kind, False, K, p, L, cal.mechanism, "float")
    assert cal.leaves == leaves
    # the scales are Alg. 1's tight ones (H = 1, leaves, p) for this plan, vector to Gram 2 S
    vtr = calibrate_ucrl_vtr(kind, 1.0, 1e-5, 1, leaves, p, 1.0, calibration="tight", sampler="float",
                             mechanism=cal.mechanism, plan=plan)  # fmt: skip
    assert (cal.sigma_B, cal.sigma_g) == (vtr.sigma_B, vtr.sigma_g)
    assert cal.sigma_g == pytest.approx(VECTOR_TO_GRAM * cal.sigma_B, rel=1e-9)
    rep = privacy_report_from_calibration("linucb", cal, plan=plan)
    mu2 = rep["statistics"][0]["mu_squared_per_step"]
    m = {f["name"]: f for f in rep["mechanisms"]}
    mult = plan.families[0].multiplier
    rng = np.random.default_rng(0)
    c = plan.families[0].sym_divisor / 2.0  # the symmetric law's factor

    def unit(v):
        return v / np.linalg.norm(v)

    worst = 0.0
    for _ in range(20_000):
        x, xp = unit(rng.normal(size=p)), unit(rng.normal(size=p))
        r, rp = rng.random(), rng.random()
        same = rng.random() < 0.5
        if same:
            dg = np.linalg.norm(np.outer(x, x) - np.outer(xp, xp)) ** 2
            dv = np.linalg.norm(x * r - xp * rp) ** 2
        else:
            dg, dv = 2.0, r**2 + rp**2  # ||x x^T||_F^2 + ||x' x'^T||_F^2, two blocks
        val = mult**2 * (c**2 * dg / cal.sigma_B**2 + dv / cal.sigma_g**2)
        worst = max(worst, val)
    assert worst <= mu2 * (1 + 1e-9)
    # derived: x.x' = -1/rho, r = r' = 1 in one block attains (rho + 2 + 1/rho) / sigma_g^2
    rho = (cal.sigma_g / cal.sigma_B) ** 2
    assert mu2 == pytest.approx(mult**2 * (rho + 2 + 1 / rho) / cal.sigma_g**2, rel=1e-6)
    assert rep["within_target"]["tight"] and m


def test_tight_sigma_against_dp_accounting():
    pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    env = blobs()
    ag = LinUCB(env, JointDP(1.0, 1e-5, sampler="float", mechanism="tree"), episodes=3000, seed=0)
    mu2 = ag.privacy_report()["statistics"][0]["mu_squared_per_step"]

    def eps(f):
        return pld.from_gaussian_mechanism(
            standard_deviation=1.0, sensitivity=math.sqrt(mu2) / f, value_discretization_interval=1e-4
        ).get_epsilon_for_delta(1e-5)

    assert eps(1.0) <= 1.0 * (1 + 2e-3) and eps(0.98) > 1.005


def test_end_to_end_audit_flags_half_the_noise():
    from privrl.audit import audit_linucb_agent

    half = audit_linucb_agent(epsilon=4.0, noise_multiplier=0.5, calibration="tight", schedule="every")
    assert half.flagged and half.gdp_epsilon_lower_bound > 4.0
    full = audit_linucb_agent(epsilon=4.0, noise_multiplier=1.0, calibration="tight", schedule="every")
    assert not full.flagged and full.gdp_epsilon_lower_bound < 4.0


def test_save_load_continues_bit_identically(tmp_path):
    env = blobs()
    a = LinUCB(env, JointDP(1.0, 1e-5), episodes=400, seed=9)
    privrl.run(a, env, episodes=150, seed=1)
    a.save(tmp_path / "a.privrl")
    b = LinUCB.load(tmp_path / "a.privrl")
    rebuilt = blobs()
    ra = privrl.run(a, env, episodes=250, seed=2)
    rb = privrl.run(b, rebuilt, episodes=250, seed=2)
    np.testing.assert_array_equal(ra.gaps, rb.gaps)
    np.testing.assert_array_equal(a.release().weights, b.release().weights)
    with pytest.raises(ValueError, match="differs"):
        privrl.run(b, blobs(seed=3), episodes=1)


def test_learns_and_orders_by_epsilon():
    env = blobs(n=300, p=4, A=3)
    acc = {}
    for name, priv in (
        ("none", NonPrivate()),
        ("jdp10", JointDP(10.0, 1e-5)),
        ("jdp0.1", JointDP(0.1, 1e-5)),
    ):
        res = privrl.run(LinUCB(env, priv, episodes=6000, seed=0), env, seed=1)
        acc[name] = 1 - res.gaps[-600:].mean()
    assert acc["none"] > 0.9 and acc["none"] >= acc["jdp10"] - 0.02 and acc["jdp10"] > acc["jdp0.1"]


def test_bad_input_is_a_clear_error():
    env = blobs()
    ag = LinUCB(env, JointDP(1.0, 1e-5), episodes=3, seed=0)
    with pytest.raises(ShapeError):
        ag.act(env.S)
    with pytest.raises(ShapeError):
        ag.update(0, env.A, 1.0)
    with pytest.raises(NonFiniteError):
        ag.update(0, 0, float("nan"))
    with pytest.raises(TypeError, match="ContextualBandit"):
        LinUCB(privrl.envs.RiverSwimMixture(S=6, H=5), NonPrivate())
    with pytest.raises(PrivrlError):
        LinUCB(env, JointDP(1.0, 1e-5), episodes=3, schedule=0)
    from privrl.agents import SensitivityWarning

    with pytest.warns(SensitivityWarning):
        ag.update(0, 0, 5.0)  # clipped to [0, 1] and counted
    assert ag.clip_count == 1
    t = Trajectory(np.array([1, 1]), np.array([0]), np.array([0.5]))
    ag.observe(t)
    ag.observe(t)
    with pytest.raises(PrivrlError, match="calibrated for K = 3"):
        ag.observe(t)


def test_radius_by_hand():
    # sqrt(2 log(1/alpha) + p log(1 + K / (lam p))) + sqrt(lam) S / sigma_r
    assert linucb_radius(1.0, 100, 2, 0.01) == pytest.approx(
        math.sqrt(2 * math.log(100) + 2 * math.log(51)) + 2.0, rel=1e-12
    )


def test_the_radius_is_finite_where_its_ratios_overflow():
    """K / (lam p) overflowed at lam = 1e-308 and 1 / alpha at alpha = 1e-310, so the radius was
    inf for finite inputs and the paper-calibrated agent was refused with 'beta_scale = 1 times
    the calibration's radius inf is not a finite radius'. The logs are finite: log(1 + q) = log q
    to double precision at q = 5e309."""
    tiny_lam = math.sqrt(2 * math.log(100) + 2 * (math.log(5) + 309 * math.log(10))) + 2 * math.sqrt(1e-308)
    assert linucb_radius(1e-308, 100, 2, 0.01) == pytest.approx(tiny_lam, rel=1e-12)
    tiny_alpha = math.sqrt(2 * 310 * math.log(10) + 2 * math.log(51)) + 2.0
    assert linucb_radius(1.0, 100, 2, 1e-310) == pytest.approx(tiny_alpha, rel=1e-12)
    env = blobs(n=20, p=2, A=2)
    for privacy, K, lam in [
        (NonPrivate(calibration="paper"), 50, 1e-308),
        (NonPrivate(p=1e-300, calibration="paper"), 10**9, 1.0),
    ]:
        agent = LinUCB(env, privacy, episodes=K, seed=0, lam=lam, exploration="optimism")
        assert math.isfinite(agent.beta) and agent.beta == agent.calibration.radius


def test_classification_datasets_load():
    pytest.importorskip("sklearn")
    from privrl.envs.datasets import load_bandit

    env = load_bandit("wine", seed=0)
    assert env.A == 3 and env.S == 178 and env.name == "wine"
    with pytest.raises(ValueError):
        load_bandit("mnist")


def test_load_bandit_takes_the_users_name():
    """load_bandit's dataset was a parameter called ``name``: a user's ``name=`` (the bandit's label,
    a keyword of from_classification) was Python's TypeError "multiple values for argument 'name'"."""
    pytest.importorskip("sklearn")
    from privrl.envs.datasets import load_bandit

    env = load_bandit("wine", seed=0, name="my wine")
    assert env.name == "my wine"
    default = load_bandit("wine", seed=0)
    assert default.name == "wine"
    np.testing.assert_array_equal(env.contexts, default.contexts)  # only the label differs
    np.testing.assert_array_equal(env.means, default.means)
    legacy = load_bandit(name="wine", seed=0)  # the dataset by its former keyword, as before
    assert legacy.name == "wine"
    np.testing.assert_array_equal(legacy.contexts, default.contexts)
    with pytest.raises(TypeError, match="needs a dataset"):
        load_bandit(seed=0)


@pytest.mark.parametrize(
    "privacy",
    [
        JointDP(1.0, 1e-5, mechanism="tree"),
        JointDP(1.0, 1e-5, mechanism="honaker", sampler="float"),
        JointDP(1.0, 1e-5, mechanism="factorization", sampler="float"),
        JointDP(1.0, 1e-5, mechanism="blt", sampler="float"),
        JointDP(1.0, 1e-5, calibration="paper", sampler="float"),
        JointDP(1.0, 1e-5, calibration="tight"),
        JointDP(1.0, 1e-5, calibration="practical"),
        LocalDP(1.0, 0.0),
    ],
    ids=["tree", "honaker", "factorization", "blt-float", "paper", "tight", "practical", "ldp-pure"],
)
def test_every_mechanism_sampler_and_calibration_runs_within_its_target(privacy):
    env = blobs()
    ag = LinUCB(env, privacy, episodes=300, seed=0)
    assert ag.exploration == "sampling"  # default_exploration("linucb", ...)
    res = privrl.run(ag, env, seed=1)
    assert res.episodes == 300 and np.isfinite(res.regret).all()
    rep = ag.privacy_report()
    assert rep["within_target"]["tight"] and rep["mechanism"] == ag.calibration.mechanism
    if privacy.calibration == "paper":  # Cor. 1's argument at H = 1 certifies its own noise
        assert rep["within_target"]["paper"]


def test_live_context_vectors_match_the_table():
    """choose(x) / update(x, a, r) with a context vector (a live user) act and learn exactly as the
    table's index does; a vector outside the ball is clipped and counted at the intake."""
    env = blobs()
    a = LinUCB(
        env, JointDP(1.0, 1e-5), episodes=100, seed=2, ties="lowest", exploration="optimism", schedule=5
    )
    b = LinUCB(
        env, JointDP(1.0, 1e-5), episodes=100, seed=2, ties="lowest", exploration="optimism", schedule=5
    )
    rng = np.random.default_rng(3)
    for _ in range(40):
        s = int(rng.integers(env.S))
        x = env.contexts[s].copy()
        assert a.act(s) == b.choose(x)
        arm, r = int(rng.integers(env.A)), float(rng.integers(2))
        a.update(s, arm, r)
        b.update(x, arm, r)
    np.testing.assert_array_equal(a.release().weights, b.release().weights)
    from privrl.agents import SensitivityWarning

    with pytest.warns(SensitivityWarning):
        b.update(3.0 * env.contexts[0], 0, 1.0)
    assert b.clip_count == 1
    with pytest.raises(ShapeError):
        b.choose(np.ones(env.p + 1))
    with pytest.raises(NonFiniteError):
        b.update(np.full(env.p, np.nan), 0, 1.0)


def test_noise_split_by_hand():
    """rho = (sigma_g / sigma_B)^2 = 4: one user's worst change (rho + 2 + 1/rho) / sigma_g^2 must
    equal the equal-scale worst case 4 / sigma^2, so sigma_g = sqrt(6.25 / 4) sigma = 1.25 sigma
    and sigma_B = sigma_g / 2 = 0.625 sigma, sigma the equal-scale (Alg. 1 at H = 1) tight sigma."""
    K, p = 5000, 3
    cal = calibrate_linucb(
        "jdp", 1.0, 1e-5, K, 4, p, "every", calibration="tight", mechanism="tree", sampler="float"
    )
    equal = calibrate_ucrl_vtr(
        "jdp", 1.0, 1e-5, 1, K, p, 1.0, calibration="tight", mechanism="tree", sampler="float"
    )
    assert equal.sigma_B == equal.sigma_g
    assert cal.sigma_g == pytest.approx(1.25 * equal.sigma_B, rel=1e-3)
    assert cal.sigma_B == pytest.approx(0.625 * equal.sigma_B, rel=1e-3)


def test_leaf_ends_by_hand():
    from privrl.agents.linucb.calibration import linucb_leaf_ends, linucb_leaves

    assert linucb_leaf_ends("jdp", 10, 3) == [3, 6, 9, 10]  # auto: every p users
    assert linucb_leaf_ends("jdp", 20, 3, "geometric") == [3, 6, 12, 20]
    assert linucb_leaf_ends("jdp", 4, 3, "every") == [1, 2, 3, 4]
    assert linucb_leaf_ends("jdp", 10, 3, 4) == [4, 8, 10]
    assert linucb_leaf_ends("none", 3, 5, 2) == [1, 2, 3]  # non-private: every user
    assert linucb_leaves("ldp", 10, 3) == 10 and linucb_leaves("jdp", 10, 3) == 4


def test_a_schedule_that_cannot_fit_in_memory_is_refused():
    """Fuzzing: LinUCB(..., episodes=2**40) non-private and at 2^62 (JDP, "auto" every p users)
    built a list of every leaf end and died with a bare MemoryError; the count is now taken
    without the list (same leaves) and a list that cannot fit is refused up front."""
    from privrl.agents.linucb.calibration import linucb_leaf_ends, linucb_leaves
    from privrl.exceptions import PrivrlError, ResourceError

    cb = blobs(n=20, p=2, A=2)
    with pytest.raises(ResourceError, match=r"1099511627776 leaves ends.*GiB"):
        linucb_leaf_ends("none", 2**40, 2)
    with pytest.raises(PrivrlError):  # the BLT mechanism's K limit, then the ends' memory
        LinUCB(cb, JointDP(1.0, 1e-20), episodes=2**62, seed=0)
    with pytest.raises(ResourceError, match="leaves ends"):
        linucb_leaf_ends("jdp", 2**62, 2)
    assert linucb_leaves("jdp", 2**62, 2) == 2**61
    assert linucb_leaves("jdp", 2**62, 2, "geometric") == 62
    for K, p, schedule in [(10, 3, "auto"), (20, 3, "geometric"), (4, 3, "every"), (10, 3, 4), (9, 3, 3)]:
        assert linucb_leaves("jdp", K, p, schedule) == len(linucb_leaf_ends("jdp", K, p, schedule))


@pytest.mark.parametrize("schedule", ["auto", "every", 3])
def test_a_nonprivate_agent_keeps_no_schedule_of_every_user(tmp_path, schedule):
    """The non-private server refreshes its exact inverse after every user and never reads the
    leaf ends, but the agent was handed the K-long list of every user: at K = 2e7 about 1 GB and
    a 160 MB save file, and refused (ResourceError, 'Use fewer episodes') from K ~ 5e8 on a 24 GB
    machine, where non-private LSVI-UCB runs at K = 10^12. Now its memory and its file do not
    grow with K, and it plays as the agent of a small K does."""
    cb = blobs(n=20, p=2, A=2)
    big = LinUCB(cb, NonPrivate(), episodes=2**40, seed=0, schedule=schedule)
    small = LinUCB(cb, NonPrivate(), episodes=50, seed=0, schedule=schedule)
    first, second = privrl.run(big, cb, episodes=50, seed=1), privrl.run(small, cb, episodes=50, seed=1)
    np.testing.assert_array_equal(first.gaps, second.gaps)
    assert big.releases == small.releases == 50  # a refresh after every user
    big.save(tmp_path / "big.privrl")
    assert (tmp_path / "big.privrl").stat().st_size < 1e5
    again = LinUCB.load(tmp_path / "big.privrl")
    later = [privrl.run(agent, cb, episodes=5, seed=2).gaps for agent in (again, big)]
    np.testing.assert_array_equal(*later)


def test_a_beta_scale_whose_radius_overflows_is_refused():
    """Fuzzing: beta_scale = 1e308 under the paper's calibration was accepted with beta_used =
    inf (UCRL-VTR then failed in its first release); the adaptive rule caps it at MAX_RADIUS."""
    from privrl.agents import UCRLVTR
    from privrl.envs import RiverSwimMixture
    from privrl.exceptions import PrivacyParameterError
    from privrl.privacy.adaptive import MAX_RADIUS

    cb, mix = blobs(n=20, p=2, A=2), RiverSwimMixture(S=4, H=3)
    for privacy in (JointDP(1.0, 1e-5, calibration="paper"), NonPrivate(calibration="practical")):
        for cls, env in ((LinUCB, cb), (UCRLVTR, mix)):
            with pytest.raises(
                PrivacyParameterError, match=r"beta_scale = 1e\+308 times .* not a finite radius"
            ):
                cls(env, privacy, episodes=30, seed=0, beta_scale=1e308)
            assert cls(env, privacy, episodes=30, seed=0, beta=1e100).calibration.beta_used == 1e100
    assert LinUCB(cb, JointDP(1.0, 1e-5), episodes=30, seed=0, beta_scale=1e308).beta == MAX_RADIUS


def test_calibration_functions_name_the_bad_argument():
    """lam = 0 divided by zero in the radius; a fractional context dimension p was blamed on the
    schedule (p = 0.05 became p = 0, then the "auto" schedule of p users)."""
    from privrl.agents.linucb.calibration import linucb_leaf_ends, linucb_leaves
    from privrl.exceptions import PrivacyParameterError

    with pytest.raises(PrivacyParameterError, match=r"lam must be finite and > 0, got 0\.0"):
        linucb_radius(lam=0.0, K=100, p=3, alpha=0.05)
    with pytest.raises(PrivacyParameterError, match=r"p must be an integer >= 1, got 0\.05"):
        linucb_leaves("jdp", 100, 0.05)
    with pytest.raises(PrivacyParameterError, match="p must be an integer >= 1, got 0"):
        linucb_leaf_ends("jdp", 100, 0)
    with pytest.raises(PrivacyParameterError, match="kind must be one of"):
        linucb_leaves("foo", 100, 3)


def test_audit_5_inputs_of_the_bandit_api():
    """LinUCB.update("x" / "1" / None) were raw TypeError / ValueError; from_classification made
    one arm per distinct float of a continuous target (30 rows: 30 arms) and read "no" as True;
    an inf policy was reported as action -9223372036854775808."""
    from privrl.envs import RiverSwimMixture
    from privrl.exceptions import PrivacyParameterError, ShapeError

    env = ContextualBandit(np.eye(3)[:2] * 0.5, np.array([[0.1, 0.9], [0.8, 0.2]]))
    agent = LinUCB(env, NonPrivate(), episodes=10, seed=0)
    for reward in ("1", None):
        with pytest.raises(PrivacyParameterError, match="reward must be a real number"):
            agent.update(0, 1, reward)
    with pytest.raises(TypeError, match="context must be a real numeric array"):
        agent.update("x", 1, 0.5)
    assert agent.k == 0
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    with pytest.raises(ShapeError, match=r"non-integer labels .* a regression target"):
        ContextualBandit.from_classification(X, rng.normal(size=30), seed=0)
    with pytest.raises(ShapeError, match="standardize must be True or False, got 'no'"):
        ContextualBandit.from_classification(X, np.arange(30) % 3, seed=0, standardize="no")
    assert ContextualBandit.from_classification(X, (np.arange(30) % 3).astype(float), seed=0).A == 3
    with pytest.raises(ShapeError, match="integer action indices"):
        RiverSwimMixture(S=4, H=3).policy_values(np.full((3, 4), np.inf))


def test_audit_6_runtime_api():
    """LinUCB.policy_updates leaked an AttributeError naming the Rust class; act(0, h=0.0 / an
    array) passed or leaked numpy's error; a non-callable callback was found after a whole block
    of users (256 of the budget spent); progress="no" showed the bar; a user past K raised
    PrivacyParameterError from observe and CapacityError from run; UCRL-VTR+'s inherited
    observe_statistics always failed with a misleading message; beta = 1e300 raised
    OverflowError."""
    from privrl.agents import UCRLVTR, UCRLVTRPlus
    from privrl.envs import RiverSwimMixture, Trajectory
    from privrl.exceptions import CapacityError, ShapeError

    env = ContextualBandit(np.eye(3)[:2] * 0.5, np.array([[0.1, 0.9], [0.8, 0.2]]))
    agent = LinUCB(env, JointDP(1.0, 1e-5), episodes=20, seed=0)
    assert agent.policy_updates == agent.releases == 0
    for h in (0.0, False, np.array([0, 0]), 1):
        with pytest.raises(ShapeError, match="a bandit has one step"):
            agent.act(0, h)
    for bad in ({"callback": 5}, {"progress": "no"}):
        with pytest.raises(TypeError):
            privrl.run(agent, env, seed=0, **bad)
    assert agent.k == 0  # refused before any user
    privrl.run(agent, env, seed=0)
    assert agent.policy_updates == agent.releases > 0
    with pytest.raises(CapacityError, match="calibrated for K = 20"):
        agent.update(0, 1, 0.5)
    mix = RiverSwimMixture(S=4, H=3)
    plus = UCRLVTRPlus(mix, JointDP(1.0, 1e-5), episodes=5, seed=0)
    with pytest.raises(TypeError, match="feed it trajectories with observe"):
        plus.observe_statistics(np.zeros((3, 3)), np.zeros(3))
    for cls in (UCRLVTR, UCRLVTRPlus):
        big = cls(mix, JointDP(1.0, 1e-5), episodes=5, seed=0, beta=1e300)
        assert np.isfinite(privrl.run(big, mix, seed=0).final_regret)
    vtr = UCRLVTR(mix, NonPrivate(), episodes=1, seed=0)
    t = Trajectory(np.array([0, 1, 2, 3]), np.array([1, 1, 1]), np.zeros(3))
    vtr.observe(t)
    with pytest.raises(CapacityError, match="calibrated for K = 1"):
        vtr.observe(t)


@pytest.mark.parametrize("exploration", ["optimism", "sampling"])
def test_looking_at_the_arriving_user_changes_nothing_later(exploration):
    """Audit 6: LinUCB.policy() / act() took the user's exploration and tie draws, so asking
    twice gave other arms and a seeded run after a look differed (regret 24.18 vs 23.12). A look
    is a peek now; the user's draws are taken when update() reports it (the same draws, in the
    same order, as before for a loop of one act and one update per user: checked against the
    previous build's arms, and run() is unchanged)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    env = ContextualBandit.from_classification(X, (X[:, 0] > 0).astype(int) + (X[:, 1] > 0), seed=0)
    plain = LinUCB(env, JointDP(1.0, 1e-5), episodes=300, seed=0, exploration=exploration)
    looked = LinUCB(env, JointDP(1.0, 1e-5), episodes=300, seed=0, exploration=exploration)
    first = looked.policy()
    assert np.array_equal(looked.policy(), first)
    assert all(looked.act(s) == first[0, s] for s in range(env.S))
    privrl.evaluate(looked, env)
    a, b = privrl.run(plain, env, seed=1), privrl.run(looked, env, seed=1)
    assert np.array_equal(a.regret, b.regret)
    # a refused user leaves the draws as they were
    strict = LinUCB(env, NonPrivate(), episodes=10, seed=0, exploration=exploration, sensitivity="reject")
    twin = LinUCB(env, NonPrivate(), episodes=10, seed=0, exploration=exploration, sensitivity="reject")
    with pytest.raises(PrivrlError):
        strict.update(0, 0, 2.0)  # a reward outside [0, 1]
    strict.update(1, strict.act(1), 1.0)
    twin.update(1, twin.act(1), 1.0)
    assert np.array_equal(strict.policy(), twin.policy())


def test_bandit_tables_must_be_two_dimensional_as_given():
    """contexts (2,) and means (2,) built a bandit of ONE context with p = 2 and A = 2 (numpy's
    ndmin made each a row); a 1-d table is refused naming the shapes as given, not as padded."""
    from privrl.envs import ContextualBandit

    for contexts, means in (
        (np.zeros(2), np.zeros(2)),
        (np.zeros(2), np.zeros((2, 2))),
        (np.zeros((2, 1)), np.zeros(2)),
    ):
        with pytest.raises(
            ShapeError,
            match=rf"got {re.escape(str(np.shape(contexts)))} and {re.escape(str(np.shape(means)))}",
        ):
            ContextualBandit(contexts, means)
    env = ContextualBandit(np.zeros((2, 1)), [[0.0, 1.0], [1.0, 0.0]])
    assert (env.S, env.p, env.A) == (2, 1, 2)

"""Sensitivity enforcement: out-of-bound user data is clipped (counted) or rejected where it enters a
mechanism, so neighbouring user sequences move every released statistic by at most the sensitivity."""

import math
import struct
import warnings

import numpy as np
import pytest

from privrl.agents import LSVIUCB, UCRLVTR, SensitivityGuard, SensitivityWarning, UCRLVTRPlus
from privrl.envs.finite import Trajectory
from privrl.envs.linear import RandomLinearMDP
from privrl.envs.mixture import RandomLinearMixtureMDP
from privrl.exceptions import AssumptionError, NonFiniteError, ShapeError
from privrl.privacy.models import JointDP, LocalDP

H, D, USERS = 3, 4, 12
REL = 1e-9  # round-off allowance, relative to the sensitivity
MIX = RandomLinearMixtureMDP(S=6, A=2, d=D, H=H, seed=0)  # UCRL-VTR's bounds: ||X|| <= H, y in [0, H]


def in_bound_user(rng, x_bound, y_high):
    X = rng.standard_normal((H, D))
    X *= rng.uniform(0, x_bound, (H, 1)) / np.linalg.norm(X, axis=1, keepdims=True)
    return X, rng.uniform(0, y_high, H)


def violating_user(rng, x_bound, y_high):
    X = rng.standard_normal((H, D)) * 1e6 * x_bound
    return X, rng.choice([-1e6, 1e6], H) * y_high


def jdp_agent(mechanism, sensitivity="clip", seed=5):
    """A UCRL-VTR agent whose JDP server runs 2H `mechanism`s (continuous Gaussian noise)."""
    privacy = JointDP(1.0, 1e-5, mechanism=mechanism, sampler="float", calibration="paper")
    return UCRLVTR(MIX, privacy, episodes=USERS, seed=seed, sensitivity=sensitivity)


def releases(agent, probe, users):
    """(gram release, target release) after every user, sent to `agent` as its chosen statistics.
    The gram: the billboard's Lambda~ (the released sums plus a constant (lam + shift) I). The
    target u~ = (the sum of what entered the mechanisms: the statistics through the agent's intake,
    read from an identical `probe`) + the mechanisms' noise; the billboard's Lambda~ w~ is it."""
    out, target = [], np.zeros((H, D))
    for X, y in users:
        gx, gy = probe._core.user_message(0, X, y)
        target = target + gx.reshape(H, D) * gy[:, None]
        agent.observe_statistics(X, y)
        rel = agent.release()
        released = target + agent._core.noise(0)[1]
        np.testing.assert_allclose(np.einsum("hij,hj->hi", rel.design, rel.weights), released, rtol=1e-9)
        out.append((rel.design, released, agent._core.noise(0)))
    return out


@pytest.mark.parametrize("mechanism", ["tree", "honaker", "factorization", "blt"])
def test_jdp_server_neighbours_move_releases_by_at_most_the_sensitivity(mechanism):
    """UCRL-VTR's JDP server (||X|| <= H, y in [0, H]): swapping one user's data for a huge
    violating one moves every release by <= ||X X^T - X' X'^T||_F <= 2 H^2 (and 2 H^2 for X y)."""
    rng = np.random.default_rng(0)
    bound = float(H)
    users = [in_bound_user(rng, bound, bound) for _ in range(USERS)]
    for j in (0, 5, USERS - 1):
        neigh = list(users)
        neigh[j] = violating_user(rng, bound, bound)
        a = releases(jdp_agent(mechanism), jdp_agent(mechanism), users)
        agent = jdp_agent(mechanism)
        with pytest.warns(SensitivityWarning):
            b = releases(agent, jdp_agent(mechanism), neigh)
        assert agent.clip_count == agent.guard.clipped == 2 * H  # every X row and y of the violating user
        sens = 2 * H**2
        for t, ((ga, ta, na), (gb, tb, nb)) in enumerate(zip(a, b, strict=True)):
            for x, y in zip(na, nb, strict=True):  # the same noise: data-independent, same seeds
                np.testing.assert_array_equal(x, y)
            dg = np.sqrt(((ga - gb) ** 2).sum(axis=(1, 2)))  # per step h, Frobenius
            dt = np.linalg.norm(ta - tb, axis=1)
            assert np.all(dg <= sens * (1 + REL)) and np.all(dt <= sens * (1 + REL)), (t, dg, dt)
            if t < j:
                assert np.all(dg == 0) and np.all(dt == 0)
        # The bound is attained up to the data: the clipped user sits on the boundary.
        assert (
            max(
                np.sqrt(((ga - gb) ** 2).sum(axis=(1, 2))).max()
                for (ga, _, _), (gb, _, _) in zip(a, b, strict=True)
            )
            > H**2 / 2
        )


def test_jdp_server_reject_mode_refuses_and_keeps_state():
    rng = np.random.default_rng(1)
    agent = jdp_agent("tree", sensitivity="reject")
    agent.observe_statistics(*in_bound_user(rng, H, H))
    server = agent._core.server_state(0)  # everything the server holds (its 2H mechanisms)
    with pytest.raises(AssumptionError):
        agent.observe_statistics(*violating_user(rng, H, H))
    assert agent.k == 1 and agent.release().users == 1 and agent._core.server_state(0) == server
    X, y = in_bound_user(rng, H, H)
    with pytest.raises(AssumptionError):
        agent.observe_statistics(X, y + 2 * H)
    with pytest.raises(NonFiniteError):
        agent.observe_statistics(np.full((H, D), np.nan), np.zeros(H))
    with pytest.raises(ShapeError):  # the agent's own entry point (the public one reshapes)
        agent._core.observe_statistics(np.zeros((H, D + 1)), np.zeros(H))
    assert agent.k == 1 and agent._core.server_state(0) == server


def _cases():
    for model in (
        JointDP(1.0, 1e-5, calibration="paper"),
        LocalDP(1.0, 1e-5, calibration="paper"),
        JointDP(1.0, 1e-5, mechanism="honaker", calibration="paper"),
    ):
        yield UCRLVTR, model
        yield UCRLVTRPlus, model


@pytest.mark.parametrize(("cls", "model"), list(_cases()), ids=lambda x: getattr(x, "label", None))
def test_private_regressions_carry_their_guard(cls, model):
    """Raw user statistics only enter a mechanism (JDP) or a randomizer (LDP) through a guard at
    the bounds the noise is calibrated for: every private regression's user side holds its
    SensitivityGuard's bounds (the release plan's), and its server does not."""
    agent = cls(MIX, model, episodes=5, seed=0)
    plan = agent.release_plan()
    assert len(agent.guards) == len(plan.statistics) == (2 if cls is UCRLVTRPlus else 1)
    for i, (stat, guard) in enumerate(zip(plan.statistics, agent.guards.values(), strict=True)):
        assert (guard.x_bound, guard.y_low, guard.y_high) == (stat.x_bound, stat.y_low, stat.y_high)
        bounds = struct.pack("<ddd", guard.x_bound, guard.y_low, guard.y_high)
        assert bounds in agent._core.intake_state(i)
        assert bounds not in agent._core.server_state(i)


def test_round_off_is_projected_but_not_counted():
    g = SensitivityGuard(1.0, 0.0, 1.0)
    X = np.array([[1.0 + 1e-12, 0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Xc, yc = g.apply(X, np.array([1.0 + 1e-12]))
    assert np.linalg.norm(Xc) <= 1.0 and yc[0] <= 1.0 and g.clipped == 0


def test_ldp_randomizer_neighbours():
    """UCRL-VTR's LDP randomizer: the user's own message moves by <= 2 H^2 per step."""
    rng = np.random.default_rng(2)
    bound = float(H)

    def message(user, mode="clip"):
        # a fresh agent (the same randomizer key each time): after one user the server's sums are
        # that user's message, exactly
        agent = UCRLVTR(
            MIX,
            LocalDP(1.0, 1e-5, sampler="float", calibration="paper"),
            episodes=USERS,
            seed=11,
            sensitivity=mode,
        )
        agent.observe_statistics(*user)
        return agent._core.sums(0)

    for _ in range(20):
        a_gram, a_target = message(in_bound_user(rng, bound, bound))
        with pytest.warns(SensitivityWarning):
            b_gram, b_target = message(violating_user(rng, bound, bound))
        assert np.all(np.sqrt(((a_gram - b_gram) ** 2).sum(axis=(1, 2))) <= 2 * H**2 * (1 + REL))
        assert np.all(np.linalg.norm(a_target - b_target, axis=1) <= 2 * H**2 * (1 + REL))
    with pytest.raises(AssumptionError):
        message(violating_user(rng, bound, bound), mode="reject")
    with pytest.raises(NonFiniteError):
        message((np.zeros((H, D)), np.full(H, np.inf)))


def test_ldp_server_receives_only_checked_messages():
    """Nothing malformed reaches the LDP server's sums: a wrongly shaped statistic (a (d, d) block
    would broadcast over all H steps) or a non-finite one is refused where it enters, and the
    server is left as it was."""
    agent = UCRLVTR(MIX, LocalDP(1.0, 1e-5, calibration="paper"), episodes=4, seed=0)
    server = agent._core.server_state(0)
    with pytest.raises(ShapeError):
        agent._core.observe_statistics(np.eye(D), np.zeros(H))
    with pytest.raises(NonFiniteError):
        agent.observe_statistics(np.full((H, D), np.nan), np.zeros(H))
    assert agent.k == 0 and agent._core.server_state(0) == server
    gram, target = agent._core.sums(0)
    assert not gram.any() and not target.any()


def test_ucrl_vtr_plus_both_families():
    """UCRL-VTR+: first family ||phi_V / sigma_bar|| <= sqrt(d) (sensitivity 2d), second
    ||phi_{V^2}|| <= H^2 (sensitivity 2 H^4); each regression's intake clips at its own bound.
    The released sums are these inputs' prefix sums plus data-independent noise (the same for both
    agents), so they move by what the inputs move."""
    env = RandomLinearMixtureMDP(S=6, A=2, d=D, H=H, seed=0)
    rng = np.random.default_rng(3)
    for mech in ["tree", "factorization"]:
        agents = [
            UCRLVTRPlus(env, JointDP(1.0, 1e-5, mechanism=mech, calibration="paper"), episodes=8, seed=1)
            for _ in range(2)
        ]
        for i, bound, sens in ((0, math.sqrt(D), 2 * D), (1, H**2, 2 * H**4)):
            users = [in_bound_user(rng, bound, bound) for _ in range(4)]
            neigh = list(users)
            neigh[2] = violating_user(rng, bound, bound)
            ra = _prefix_sums(agents[0], i, users)
            rb = _prefix_sums(agents[1], i, neigh)
            for (ga, ta), (gb, tb) in zip(ra, rb, strict=True):
                assert np.all(np.sqrt(((ga - gb) ** 2).sum(axis=(1, 2))) <= sens * (1 + REL))
                assert np.all(np.linalg.norm(ta - tb, axis=1) <= sens * (1 + REL))
        assert agents[1].clip_count == 4 * H


def _prefix_sums(agent, i, users):
    """(sum X X^T, sum X y) after every user of what regression i's intake lets into its
    mechanisms (chosen statistics go to UCRL-VTR+'s intakes only: nothing is sent)."""
    out, gram, target = [], np.zeros((H, D, D)), np.zeros((H, D))
    for X, y in users:
        gx, gy = agent._core.user_message(i, X, y)
        gx = gx.reshape(H, D)
        gram = gram + np.einsum("hi,hj->hij", gx, gx)
        target = target + gx * gy[:, None]
        out.append((gram, target))
    return out


def test_ucrl_vtr_agent_counts_clips_and_rejects():
    """The agent's own entry point (JDP server / LDP randomizer) carries its guard."""
    env = MIX
    for privacy in (JointDP(1.0, 1e-5, calibration="paper"), LocalDP(1.0, 1e-5, calibration="paper")):
        a = UCRLVTR(env, privacy, episodes=5, seed=0)
        with pytest.warns(SensitivityWarning):
            a.observe_statistics(*violating_user(np.random.default_rng(0), H, H))
        assert a.clip_count == 2 * H
        r = UCRLVTR(env, privacy, episodes=5, seed=0, sensitivity="reject")
        with pytest.raises(AssumptionError):
            r.observe_statistics(*violating_user(np.random.default_rng(0), H, H))
    with pytest.raises(ValueError):
        UCRLVTR(env, JointDP(1.0, 1e-5, calibration="paper"), episodes=5, sensitivity="ignore")


def lsvi_pair(sensitivity="clip", mechanism="tree", n=2):
    env = RandomLinearMDP(S=6, A=2, d=D, H=H, seed=0)
    p = JointDP(1.0, 1e-5, mechanism=mechanism, calibration="paper")
    return env, [
        LSVIUCB(env, p, episodes=USERS, batches=3, seed=4, sensitivity=sensitivity) for _ in range(n)
    ]


@pytest.mark.parametrize("mechanism", ["tree", "blt"])
def test_lsvi_ucb_neighbours(mechanism):
    """LSVI-UCB (||phi|| <= 1, r in [0, 1]): a user claiming reward 10^6 is clipped to 1 (the
    server then holds exactly what a user sending 1 leaves); every Lambda release moves by <= 2
    (||phi phi^T||_F <= 1), and the last step's response u_H = sum_i phi_i r_i (no next-step
    value) by <= 2 (H + 1)."""
    env, (a, b, c) = lsvi_pair(mechanism=mechanism, n=3)
    rng = np.random.default_rng(5)
    for k in range(USERS - 1):
        traj = env.sample_episode(a.policy(), rng)
        if k == 1:
            other = env.sample_episode(b.policy(), np.random.default_rng(99))
            with pytest.warns(SensitivityWarning):
                b.observe(Trajectory(other.states, other.actions, np.full(H, 1e6)))
            c.observe(Trajectory(other.states, other.actions, np.full(H, 1.0)))
        else:
            b.observe(traj)
            c.observe(traj)
        a.observe(traj)
        ra, rb, rc = a.release(), b.release(), c.release()
        for name in ("design", "inverse", "weights"):  # clipped to 1 is sending 1
            np.testing.assert_array_equal(getattr(rb, name), getattr(rc, name))
        ga, gb = ra.design, rb.design  # Lambda releases + the same shift and noise
        assert np.all(np.sqrt(((ga - gb) ** 2).sum(axis=(1, 2))) <= 2 * (1 + REL))
        if a.batch:  # released u~_H = Lambda~_H w~_H, the same eta for both
            np.testing.assert_array_equal(a._core.last_eta, b._core.last_eta)
            ua, ub = (r.design[H - 1] @ r.weights[H - 1] for r in (ra, rb))
            assert np.linalg.norm(ua - ub) <= 2 * (H + 1) * (1 + REL)
    assert a.batch == 3 - 1
    assert b.clip_count == H and c.clip_count == 0
    env, (r, _) = lsvi_pair("reject")
    t = env.sample_episode(r.policy(), rng)
    with pytest.raises(AssumptionError):
        r.observe(Trajectory(t.states, t.actions, t.rewards + 2.0))
    assert r.k == 0


def test_observe_validates_trajectory_indices():
    env = RandomLinearMixtureMDP(S=6, A=2, d=D, H=H, seed=0)
    a = UCRLVTR(env, JointDP(1.0, 1e-5, calibration="paper"), episodes=5, seed=0)
    a.policy()
    good = env.sample_episode(a.policy(), np.random.default_rng(0))
    bad = [
        Trajectory(good.states - 100, good.actions, good.rewards),  # negative: would wrap
        Trajectory(good.states, good.actions + 5, good.rewards),  # beyond A
        Trajectory(good.states.astype(float), good.actions, good.rewards),
        Trajectory(good.states[:-1], good.actions, good.rewards),
        Trajectory(good.states, good.actions, np.full(H, np.nan)),
    ]
    for t in bad:
        with pytest.raises((ShapeError, TypeError, NonFiniteError)):
            a.observe(t)
    with pytest.raises(TypeError):
        a.observe("not a trajectory")
    assert a.k == 0 and a.release().users == 0


def test_reject_names_what_broke_the_bound():
    """The refusal names the value outside its bound: an in-bound ||x|| with a reward of 2 in
    [0, 1] reports y, not only ||x|| (audit: it printed max ||x|| = 0.5)."""
    g = SensitivityGuard(x_bound=1.0, y_low=0.0, y_high=1.0, mode="reject")
    with pytest.raises(AssumptionError, match=r"\): y in \[2(\.0)?, 2(\.0)?\]$") as e:
        g.apply(np.array([[0.5, 0.0]]), np.array([2.0]))
    assert "||x|| =" not in str(e.value).split(":")[-1]
    with pytest.raises(AssumptionError, match=r"max \|\|x\|\| = 2\.000000$"):
        g.apply(np.array([[2.0, 0.0]]), np.array([0.5]))
    with pytest.raises(AssumptionError, match=r"max \|\|x\|\| = 2\.000000, y in \[-1(\.0)?, -1(\.0)?\]"):
        g.apply(np.array([[2.0, 0.0]]), np.array([-1.0]))


def test_reject_writes_extreme_values_in_scientific_notation():
    """A reward of 1e300 was named as 'y in [1000...000, 1000...000]' (301 digits each) and a
    context of norm 1e200 as 'max ||x|| = 99999999999999996973...' (Rust's fixed notation); the
    values outside 1e-4 .. 1e6 read in scientific notation, the others as before."""
    g = SensitivityGuard(x_bound=1.0, y_low=0.0, y_high=1.0, mode="reject")
    with pytest.raises(AssumptionError, match=r"\): y in \[1\.000000e300, 1\.000000e300\]$"):
        g.apply(np.array([[0.5, 0.0]]), np.array([1e300]))
    with pytest.raises(AssumptionError, match=r"max \|\|x\|\| = 1\.000000e200$") as e:
        g.apply(np.array([[1e200, 0.0]]), np.array([0.5]))
    assert len(str(e.value)) < 120
    with pytest.raises(AssumptionError, match=r"y in \[-2\.500000e-7, 2(\.0)?\]$"):
        g.apply(np.array([[0.5, 0.0], [0.5, 0.0]]), np.array([-2.5e-7, 2.0]))


def test_rows_beyond_1e154_are_projected_not_zeroed():
    # ||x||^2 overflows for entries above ~1.3e154: the projection is still x / ||x|| (the row
    # kept its direction; it was zeroed by a division by inf)
    import warnings

    from privrl.agents.common.base import SensitivityGuard

    x = np.array([[0.0, 1e200], [0.0, 2.0], [3e300, -4e300]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clipped, _ = SensitivityGuard(1.0).apply(x)
    np.testing.assert_allclose(clipped, [[0.0, 1.0], [0.0, 1.0], [0.6, -0.8]], rtol=1e-15)


def test_guard_takes_real_bounds_and_matching_lengths():
    """Fuzzing: SensitivityGuard(1.0, np.array([0.]), 1.0) was accepted, apply(ones((2, 3)), ones(3))
    clipped three rewards for two rows, complex X lost its imaginary part."""
    from privrl.exceptions import PrivacyParameterError

    for bounds in ((1.0, np.array([0.0]), 1.0), ("1", 0.0, 1.0), (1.0, 0.0, None)):
        with pytest.raises(PrivacyParameterError, match="must be"):
            SensitivityGuard(*bounds)
    g = SensitivityGuard(1.0, 0, 1)
    assert (g.y_low, g.y_high) == (0.0, 1.0)
    with pytest.raises(ShapeError, match=r"X must be \(n, d\) and y \(n,\)"):
        g.apply(np.ones((2, 3)) / 2, np.ones(3))
    with pytest.raises(TypeError, match="real numeric array"):
        g.apply(np.ones((2, 3)) * 1j)
    X = np.ones((2, 3))
    with pytest.warns(SensitivityWarning):
        Xc, yc = g.apply(X, [0.5, 2.0])
    assert (X == 1.0).all() and np.linalg.norm(Xc, axis=1).max() <= 1.0  # a copy is clipped
    assert yc.tolist() == [0.5, 1.0]


def test_a_clip_warning_points_at_the_users_line_and_says_what_to_do():
    """privrl.learn on CliffWalking without reward= (rewards -1 / -100) warned "clipping user
    statistics to the sensitivity bound ... (counted in agent.clip_count)" at privrl's own line
    (interact.py's `return _episodes(...)`) and left the user to guess why and what to do. Now it
    names the rescale (learn's reward=, a sweep's reward_range) and points at the caller's line,
    from learn, from observe and from LinUCB's update alike."""
    gym = pytest.importorskip("gymnasium")
    import privrl
    from privrl.agents import LinUCB
    from privrl.envs import ContextualBandit, FeatureMap
    from privrl.privacy import NonPrivate

    def warned(call):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            call()
        (w,) = [w for w in seen if issubclass(w.category, SensitivityWarning)]
        assert w.filename == __file__, w.filename
        assert "privrl.learn(..., reward=lambda r: (r - lo) / (hi - lo))" in str(w.message)
        assert "reward_range" in str(w.message) and "sensitivity='reject'" in str(w.message)

    env = gym.make("CliffWalking-v1")
    agent = LSVIUCB(FeatureMap.one_hot_for(env, 5), NonPrivate(), episodes=2, seed=0)
    warned(lambda: privrl.learn(agent, env, seed=0, progress=False))
    lin = LSVIUCB(RandomLinearMDP(S=5, A=2, d=D, H=H, seed=0), NonPrivate(), episodes=2, seed=0)
    warned(lambda: lin.observe(Trajectory(np.zeros(H + 1, int), np.zeros(H, int), np.full(H, 2.0))))
    rng = np.random.default_rng(0)
    bandit = ContextualBandit.from_classification(rng.normal(size=(20, 3)), np.arange(20) % 2, seed=1)
    arm = LinUCB(bandit, NonPrivate(), episodes=5, seed=0)
    warned(lambda: arm.update(bandit.contexts[0], 0, 5.0))


@pytest.mark.skipif(not hasattr(BaseException, "add_note"), reason="exception notes: Python 3.11+")
def test_a_clip_warning_made_an_error_says_the_user_was_taken():
    """Under a filter that makes warnings errors (``-W error``, pytest's filterwarnings = error),
    observe / update raised the SensitivityWarning after the agent had taken the user, with nothing
    saying so: observing the user again, as after a refused one, counted it twice."""
    from privrl.agents import LinUCB
    from privrl.envs import ContextualBandit

    env = RandomLinearMDP(S=6, A=2, d=D, H=H, seed=0)
    lsvi = LSVIUCB(env, JointDP(1.0, 1e-5), episodes=USERS, seed=0)
    bandit = ContextualBandit(np.eye(2) * 0.5, np.full((2, 2), 0.5))
    linucb = LinUCB(bandit, JointDP(1.0, 1e-5), episodes=USERS, seed=0)
    calls = [
        (lsvi, lambda: lsvi.observe(Trajectory(np.zeros(H + 1, int), np.zeros(H, int), np.full(H, 5.0)))),
        (linucb, lambda: linucb.update(0, 0, 5.0)),
    ]
    for agent, call in calls:
        with warnings.catch_warnings():
            warnings.simplefilter("error", SensitivityWarning)
            with pytest.raises(SensitivityWarning) as got:
                call()
        assert agent.k == 1 and agent.clip_count > 0
        notes = "\n".join(getattr(got.value, "__notes__", []))
        assert "the agent took this user before" in notes and "agent.k = 1" in notes
        assert "count it twice" in notes

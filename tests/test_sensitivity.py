"""Sensitivity enforcement: out-of-bound user data is clipped (counted) or rejected where it enters a
mechanism, so neighbouring user sequences move every released statistic by at most the sensitivity."""

import math
import warnings

import numpy as np
import pytest

from privrl.agents import LSVIUCB, UCRLVTR, SensitivityGuard, SensitivityWarning, UCRLVTRPlus
from privrl.agents.common.statistics import LocalRandomizer, PrivatizedStatistics, RawStatistics, RegressionServer
from privrl.envs.finite import Trajectory
from privrl.envs.linear import RandomLinearMDP
from privrl.envs.mixture import RandomLinearMixtureMDP
from privrl.exceptions import AssumptionError, NonFiniteError, ShapeError
from privrl.privacy.models import JointDP, LocalDP

H, D, USERS = 3, 4, 12
REL = 1e-9  # round-off allowance, relative to the sensitivity


def in_bound_user(rng, x_bound, y_high):
    X = rng.standard_normal((H, D))
    X *= rng.uniform(0, x_bound, (H, 1)) / np.linalg.norm(X, axis=1, keepdims=True)
    return RawStatistics(X, rng.uniform(0, y_high, H))


def violating_user(rng, x_bound, y_high):
    X = rng.standard_normal((H, D)) * 1e6 * x_bound
    return RawStatistics(X, rng.choice([-1e6, 1e6], H) * y_high)


def tree_server(mechanism, guard, seed=5):
    return RegressionServer(
        H,
        D,
        1.0,
        "tree",
        USERS,
        noise="gaussian",
        sigma_matrix=3.0,
        sigma_vector=3.0,
        guard=guard,
        seeds=[seed + i for i in range(2 * H)],
        mechanism=mechanism,
    )


def releases(server, users):
    """(gram release, target release) after every user; same seeds -> same noise."""
    out = []
    for u in users:
        server.receive(u)
        out.append(
            (
                np.stack([t.release() for t in server._gram_trees]),
                np.stack([t.release() for t in server._target_trees]),
            )
        )
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
        a = releases(tree_server(mechanism, SensitivityGuard(bound, 0.0, bound)), users)
        g = SensitivityGuard(bound, 0.0, bound)
        with pytest.warns(SensitivityWarning):
            b = releases(tree_server(mechanism, g), neigh)
        assert g.clipped == 2 * H  # every X row and every y of the violating user
        sens = 2 * H**2
        for t, ((ga, ta), (gb, tb)) in enumerate(zip(a, b, strict=True)):
            dg = np.sqrt(((ga - gb) ** 2).sum(axis=(1, 2)))  # per step h, Frobenius
            dt = np.linalg.norm(ta - tb, axis=1)
            assert np.all(dg <= sens * (1 + REL)) and np.all(dt <= sens * (1 + REL)), (t, dg, dt)
            if t < j:
                assert np.all(dg == 0) and np.all(dt == 0)
        # The bound is attained up to the data: the clipped user sits on the boundary.
        assert (
            max(
                np.sqrt(((ga - gb) ** 2).sum(axis=(1, 2))).max()
                for (ga, _), (gb, _) in zip(a, b, strict=True)
            )
            > H**2 / 2
        )


def test_jdp_server_reject_mode_refuses_and_keeps_state():
    rng = np.random.default_rng(1)
    server = tree_server("tree", SensitivityGuard(float(H), 0.0, float(H), mode="reject"))
    server.receive(in_bound_user(rng, H, H))
    with pytest.raises(AssumptionError):
        server.receive(violating_user(rng, H, H))
    assert server.users == 1 and server._gram_trees[0].steps == 1
    bad_y = in_bound_user(rng, H, H)
    with pytest.raises(AssumptionError):
        server.receive(RawStatistics(bad_y.X, bad_y.y + 2 * H))
    with pytest.raises(NonFiniteError):
        server.receive(RawStatistics(np.full((H, D), np.nan), np.zeros(H)))
    with pytest.raises(ShapeError):
        server.receive(RawStatistics(np.zeros((H, D + 1)), np.zeros(H)))
    assert server.users == 1


def test_tree_server_requires_a_guard():
    with pytest.raises(TypeError):
        RegressionServer(H, D, 1.0, "tree", 4, noise="none")


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
        r = LocalRandomizer(
            H,
            D,
            "gaussian",
            2.0,
            2.0,
            math.sqrt(2),
            SensitivityGuard(bound, 0.0, bound, mode),
            seeds=(11, 12),
        )
        return r.privatize(user.X, user.y)

    for _ in range(20):
        a = message(in_bound_user(rng, bound, bound))
        with pytest.warns(SensitivityWarning):
            b = message(violating_user(rng, bound, bound))
        assert np.all(np.sqrt(((a.gram - b.gram) ** 2).sum(axis=(1, 2))) <= 2 * H**2 * (1 + REL))
        assert np.all(np.linalg.norm(a.target - b.target, axis=1) <= 2 * H**2 * (1 + REL))
    with pytest.raises(AssumptionError):
        message(violating_user(rng, bound, bound), mode="reject")
    with pytest.raises(NonFiniteError):
        message(RawStatistics(np.zeros((H, D)), np.full(H, np.inf)))


def test_ldp_server_checks_messages():
    server = RegressionServer(H, D, 1.0, "local", 4, shift=1.0)
    with pytest.raises(ShapeError):  # a (d, d) gram would broadcast over all H steps
        server.receive(PrivatizedStatistics(np.eye(D), np.zeros((H, D))))
    with pytest.raises(NonFiniteError):
        server.receive(PrivatizedStatistics(np.full((H, D, D), np.nan), np.zeros((H, D))))
    assert server.users == 0


def test_ucrl_vtr_plus_both_families():
    """UCRL-VTR+: first family ||phi_V / sigma_bar|| <= sqrt(d) (sensitivity 2d), second
    ||phi_{V^2}|| <= H^2 (sensitivity 2 H^4); both servers clip at their own bound."""
    env = RandomLinearMixtureMDP(S=6, A=2, d=D, H=H, seed=0)
    rng = np.random.default_rng(3)
    for mech in ["tree", "factorization"]:
        agents = [UCRLVTRPlus(env, JointDP(1.0, 1e-5, mechanism=mech), episodes=8, seed=1) for _ in range(2)]
        for server_name, bound, sens in (("server", math.sqrt(D), 2 * D), ("server2", H**2, 2 * H**4)):
            users = [in_bound_user(rng, bound, bound) for _ in range(4)]
            neigh = list(users)
            neigh[2] = violating_user(rng, bound, bound)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SensitivityWarning)
                ra = releases(getattr(agents[0], server_name), users)
                rb = releases(getattr(agents[1], server_name), neigh)
            for (ga, ta), (gb, tb) in zip(ra, rb, strict=True):
                assert np.all(np.sqrt(((ga - gb) ** 2).sum(axis=(1, 2))) <= sens * (1 + REL))
                assert np.all(np.linalg.norm(ta - tb, axis=1) <= sens * (1 + REL))
        assert agents[1].clip_count == 4 * H


def test_ucrl_vtr_agent_counts_clips_and_rejects():
    """The agent's own entry point (JDP server / LDP randomizer) carries its guard."""
    env = RandomLinearMixtureMDP(S=6, A=2, d=D, H=H, seed=0)

    def send(agent, user):
        if agent.randomizer is None:
            agent.server.receive(user)
        else:
            agent.randomizer.privatize(user.X, user.y)

    for privacy in (JointDP(1.0, 1e-5), LocalDP(1.0, 1e-5)):
        a = UCRLVTR(env, privacy, episodes=5, seed=0)
        with pytest.warns(SensitivityWarning):
            send(a, violating_user(np.random.default_rng(0), H, H))
        assert a.clip_count == 2 * H
        r = UCRLVTR(env, privacy, episodes=5, seed=0, sensitivity="reject")
        with pytest.raises(AssumptionError):
            send(r, violating_user(np.random.default_rng(0), H, H))
    with pytest.raises(ValueError):
        UCRLVTR(env, JointDP(1.0, 1e-5), episodes=5, sensitivity="ignore")


def lsvi_pair(sensitivity="clip", mechanism="tree"):
    env = RandomLinearMDP(S=6, A=2, d=D, H=H, seed=0)
    p = JointDP(1.0, 1e-5, mechanism=mechanism)
    return env, [
        LSVIUCB(env, p, episodes=USERS, batches=3, seed=4, sensitivity=sensitivity) for _ in range(2)
    ]


@pytest.mark.parametrize("mechanism", ["tree", "blt"])
def test_lsvi_ucb_neighbours(mechanism):
    """LSVI-UCB (||phi|| <= 1, r in [0, 1]): a user claiming reward 10^6 is clipped to 1; at
    equal (w~_{h+1}, Lambda~^-1_{h+1}) the response u moves by <= 2(H + 1) and every Lambda
    release by <= 2 (||phi phi^T||_F <= 1)."""
    env, (a, b) = lsvi_pair(mechanism=mechanism)
    rng = np.random.default_rng(5)
    for k in range(USERS - 1):
        traj = env.sample_episode(a.policy(), rng)
        if k == 1:
            other = env.sample_episode(b.policy(), np.random.default_rng(99))
            with pytest.warns(SensitivityWarning):
                b.observe(Trajectory(other.states, other.actions, np.full(H, 1e6)))
        else:
            b.observe(traj)
        a.observe(traj)
        ga = np.stack([t.release() for t in a.server.trees])
        gb = np.stack([t.release() for t in b.server.trees])
        assert np.all(np.sqrt(((ga - gb) ** 2).sum(axis=(1, 2))) <= 2 * (1 + REL))
    assert b.clip_count == H and np.all(b.server.rewards <= 1.0)
    w = np.random.default_rng(0).standard_normal(D)
    inv = np.eye(D) * 0.5
    for path in ("per_sample", "aggregated"):
        for h in range(H - 1):
            ua = a.server.response_function(path)(h, w, inv)
            ub = b.server.response_function(path)(h, w, inv)
            assert np.linalg.norm(ua - ub) <= 2 * (H + 1) * (1 + REL)
    env, (r, _) = lsvi_pair("reject")
    t = env.sample_episode(r.policy(), rng)
    with pytest.raises(AssumptionError):
        r.observe(Trajectory(t.states, t.actions, t.rewards + 2.0))
    assert r.k == 0


def test_observe_validates_trajectory_indices():
    env = RandomLinearMixtureMDP(S=6, A=2, d=D, H=H, seed=0)
    a = UCRLVTR(env, JointDP(1.0, 1e-5), episodes=5, seed=0)
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
    assert a.k == 0 and a.server.users == 0

"""Each Rust agent against its paper-shaped numpy reference (privrl.agents.<algorithm>.reference): fed the
same users and the same noise draws, the released statistics agree to a relative 1e-9 and the policies
are equal (with ties="random" the agent's action is one of the reference's maximizers). Then what the
episode loop adds: runs that span blocks, resuming, clipping and refusing like the guard, callbacks,
the deprecated ``engine=`` keyword, and environments of one's own.

Noise the reference is given (the very draws of the agent): under JDP the continual-release
mechanisms' noise (data-independent, read from the agent after each user) on top of the reference's
own sums, rounded to the noise lattice for the discrete samplers; under LDP the user-side
randomizer's messages, from a NoiseStream keyed like the agent's (privrl.kernels, the randomizer's
kernel). BLT's discrete sampler rounds in its encoded space, so the BLT cases draw float noise
(its discrete encoder is checked against its own reference in tests/test_continual.py).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import privrl
from privrl.agents import LSVIUCB, UCRLVTR, UCRLVTRPlus
from privrl.agents.common.base import SensitivityWarning
from privrl.agents.lsvi_ucb.reference import of_agent as lsvi_reference
from privrl.agents.ucrl_vtr.reference import of_agent as vtr_reference
from privrl.agents.ucrl_vtr_plus.reference import of_agent as plus_reference
from privrl.envs.finite import FiniteMDP
from privrl.envs.linear import RandomLinearMDP, RiverSwim
from privrl.envs.mixture import HardToLearn, RiverSwimMixture
from privrl.exceptions import AssumptionError, AssumptionWarning
from privrl.privacy.models import JointDP, LocalDP, NonPrivate

VTR_PRIVACY = [
    NonPrivate(calibration="paper"),
    JointDP(1.0, 1e-5, calibration="paper"),
    JointDP(1.0, 0.0, calibration="paper"),
    JointDP(2.0, 1e-5, mechanism="honaker", calibration="paper"),
    JointDP(2.0, 1e-5, mechanism="factorization", calibration="paper"),
    JointDP(2.0, 1e-5, mechanism="blt", sampler="float", calibration="paper"),
    JointDP(1.0, 1e-5, calibration="tight"),
    LocalDP(1.0, 1e-5, calibration="paper"),
    LocalDP(1.0, 0.0, calibration="paper"),
    LocalDP(5.0, 1e-5, calibration="tight"),
    NonPrivate(calibration="practical"),
    JointDP(1.0, 1e-5, calibration="practical", sampler="float"),
    JointDP(3.0, 1e-5, calibration="practical", mechanism="tree"),
    JointDP(3.0, 1e-5, calibration="practical", mechanism="honaker"),
    JointDP(1.0, 0.0, calibration="practical"),
    LocalDP(10.0, 1e-5, calibration="practical"),
    LocalDP(10.0, 0.0, calibration="practical"),
]
LSVI_PRIVACY = [
    NonPrivate(calibration="paper"),
    JointDP(1.0, 1e-5, calibration="paper"),
    JointDP(1.0, 0.0, calibration="paper"),
    JointDP(1.0, 1e-5, mechanism="blt", sampler="float", calibration="paper"),
    JointDP(1.0, 1e-5, calibration="practical", sampler="float"),
    NonPrivate(calibration="practical"),
]
RTOL = 1e-9


def _close(a, b, what):
    scale = max(1.0, float(np.max(np.abs(b))))
    np.testing.assert_allclose(a, b, rtol=RTOL, atol=RTOL * scale, err_msg=what)


def _same_policy(pi, Q, ties):
    """Every action of the agent's policy is one of the reference's maximizers; where the
    reference's maximum is unique beyond round-off (1e-9 relative) the two policies are equal.
    Ties: with ties="random" the agent picks any maximizer (its own stream); with "lowest", two
    actions whose Q differ by round-off only (HardToLearn's symmetric action vectors) may too."""
    best = Q.max(axis=-1, keepdims=True)
    near = best - 1e-9 * np.maximum(1.0, np.abs(best)) <= Q
    assert np.take_along_axis(near, pi[..., None], axis=-1).all()
    unique = near.sum(axis=-1) == 1
    np.testing.assert_array_equal(pi[unique], Q.argmax(axis=-1)[unique])


def _compare_vtr(agent, env, K, ties, seed):
    """Run the agent and its reference on the same users; compare every billboard and policy."""
    ref = (plus_reference if isinstance(agent, UCRLVTRPlus) else vtr_reference)(agent)
    rng = np.random.default_rng(11)
    plus = isinstance(agent, UCRLVTRPlus)
    regs = [ref.hat, ref.tilde] if plus else [ref]
    for k in range(K):
        pi = agent.policy()
        _, V, _ = ref.plan()
        _same_policy(pi, (ref.hat if plus else ref).Q, ties)
        _close(agent.values(), V, f"V of user {k + 1}")
        traj = env.sample_episode(pi, rng)
        agent.observe(traj)
        ref.observe(traj.states, traj.actions)
        for i, reg in enumerate(regs):
            rel = agent._board(i)
            for name in ("design", "inverse", "weights", "explore"):
                _close(getattr(rel, name), getattr(reg, name), f"{name} of regression {i} after user {k + 1}")
        if plus:
            _close(agent.last_sigma_bar, ref.last_sigma_bar, "sigma-bar")
    return ref


@pytest.mark.parametrize("privacy", VTR_PRIVACY, ids=lambda p: p.label)
@pytest.mark.parametrize("ties", ["random", "lowest"])
def test_ucrl_vtr_matches_its_reference(privacy, ties):
    env = RiverSwimMixture(S=4, H=5)
    agent = UCRLVTR(env, privacy, episodes=60, seed=3, ties=ties, beta_scale=0.05)
    _compare_vtr(agent, env, 60, ties, 3)


@pytest.mark.parametrize("privacy", VTR_PRIVACY, ids=lambda p: p.label)
def test_ucrl_vtr_plus_matches_its_reference(privacy):
    env = RiverSwimMixture(S=4, H=5)
    agent = UCRLVTRPlus(env, privacy, episodes=40, seed=3, beta_scale=0.01, ties="lowest")
    _compare_vtr(agent, env, 40, "lowest", 3)


def test_ucrl_vtr_on_hard_to_learn_matches_and_learns():
    env = HardToLearn(d=4, H=4, K=200, seed=1)
    agent = UCRLVTR(env, NonPrivate(calibration="paper"), episodes=200, seed=0, ties="lowest")
    _compare_vtr(agent, env, 200, "lowest", 0)
    assert agent.policy_updates == 200


@pytest.mark.parametrize("privacy", LSVI_PRIVACY, ids=lambda p: p.label)
@pytest.mark.parametrize("batches", ["static", "every", 7])
@pytest.mark.parametrize("planning", ["auto", "per_sample", "aggregated"])
def test_lsvi_matches_its_reference(privacy, batches, planning):
    _compare_lsvi(RandomLinearMDP(S=12, A=3, d=5, H=4, seed=2), privacy, batches, planning)


@pytest.mark.parametrize("privacy", LSVI_PRIVACY, ids=lambda p: p.label)
@pytest.mark.parametrize("batches", ["every", 7])
def test_lsvi_on_one_hot_features_matches_its_reference(privacy, batches):
    """Tabular one-hot features take the agent's sparse paths (the JDP batch Gram over phi's
    nonzeros, the O(1) update and entry-by-entry solve of a diagonal Lambda, the bonus rows over
    each row's nonzeros); the dense numpy reference must still agree."""
    _compare_lsvi(RiverSwim(S=5, H=4), privacy, batches, "auto")


def _compare_lsvi(env, privacy, batches, planning):
    K = 60
    agent = LSVIUCB(
        env, privacy, batches=batches, episodes=K, seed=4, planning=planning, beta_scale=0.1, ties="lowest"
    )
    ref = lsvi_reference(agent)
    rng = np.random.default_rng(11)
    for k in range(K):
        pi = agent.policy()
        ref.policy()
        _same_policy(pi, ref.Q, "lowest")
        traj = env.sample_episode(pi, rng)
        agent.observe(traj)
        ref.observe(traj.states, traj.actions, traj.rewards)
        rel = agent.release()
        for name in ("design", "inverse", "weights"):
            _close(getattr(rel, name), getattr(ref, name), f"{name} after user {k + 1}")
    assert agent.batch == ref.releases


@pytest.mark.parametrize("agent_kind", ["vtr", "lsvi"])
def test_a_run_in_pieces_is_the_run(agent_kind):
    """Runs cut anywhere (blocks of users, several calls to privrl.run) give the run in one piece:
    the agent's state, not the call, carries the episode."""
    K = 5000
    if agent_kind == "vtr":
        env = RiverSwimMixture(S=3, H=2)

        def make():
            return UCRLVTR(env, JointDP(1.0, 1e-5, calibration="paper"), episodes=K, seed=1)
    else:
        env = RiverSwim(S=3, H=2)

        def make():
            return LSVIUCB(env, JointDP(1.0, 1e-5, calibration="paper"), batches="every", episodes=K, seed=1)

    whole = privrl.run(make(), env, seed=7)
    agent = make()
    seeds = np.random.SeedSequence(7).spawn(2)
    first, second = privrl.run(agent, env, 1234, seed=seeds[0]), privrl.run(agent, env, seed=seeds[1])
    assert first.episodes + second.episodes == K and agent.k == K
    again = make()
    a = privrl.run(again, env, 1234, seed=seeds[0]).gaps
    np.testing.assert_array_equal(a, first.gaps)
    assert whole.episodes == K


def test_resuming_continues_the_noise_streams():
    env = RiverSwimMixture(S=4, H=4)
    seeds = np.random.SeedSequence(9).spawn(2)
    one = UCRLVTR(env, JointDP(1.0, 1e-5, calibration="paper"), episodes=100, seed=5)
    two = UCRLVTR(env, JointDP(1.0, 1e-5, calibration="paper"), episodes=100, seed=5)
    a = [privrl.run(one, env, 50, seed=s).gaps for s in seeds]
    b = [privrl.run(two, env, 50, seed=s).gaps for s in seeds]
    np.testing.assert_array_equal(np.concatenate(a), np.concatenate(b))
    np.testing.assert_array_equal(one._core.noise(0)[0], two._core.noise(0)[0])


class _Scaled(FiniteMDP):
    """A user's own mixture model whose features break Asm. 2 (||phi_V|| beyond H): clipping."""

    def __init__(self, base, factor):
        super().__init__(base.P, base.R, base.init_dist, name="scaled")
        self.features, self.C_w = base.features * factor, base.C_w


@pytest.mark.parametrize("agent_kind", ["vtr", "lsvi"])
def test_the_guard_clips_and_warns_once(agent_kind):
    if agent_kind == "vtr":
        env = _Scaled(RiverSwimMixture(S=4, H=4), 40.0)
        with pytest.warns(AssumptionWarning, match=r"scaled: \|\|phi_v.* > 1 .*guard clips X to norm 1"):
            agent = UCRLVTR(env, JointDP(1.0, 1e-5, calibration="paper"), episodes=30, seed=2)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            privrl.run(agent, env, seed=1)
    else:
        env = RandomLinearMDP(S=10, A=3, d=6, H=3, seed=0)
        agent = LSVIUCB(env, JointDP(1.0, 1e-5, calibration="paper"), episodes=30, seed=2)
        traj = env.sample_episode(agent.policy(), np.random.default_rng(0))
        traj.rewards[:] = 3.0  # beyond [0, 1]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            agent.observe(traj)
            agent.observe(traj)
    assert agent.clip_count > 0 and agent.clip_count == agent.guard.clipped
    assert sum(issubclass(w.category, SensitivityWarning) for w in caught) == 1


class _NoRows(FiniteMDP):
    """A user's own mixture model with phi(.|s=1, a) = 0: sum_s' phi^T w = 1 has no solution there,
    so the practical ridge's centre distance is the triangle inequality's (practical.centre_distance)."""

    def __init__(self, base):
        super().__init__(base.P, base.R, base.init_dist, name="no rows")
        features = base.features.copy()
        features[1] = 0.0
        self.features, self.C_w = features, base.C_w


@pytest.mark.parametrize(
    "privacy",
    [
        JointDP(1.0, 1e-5, calibration="practical", sampler="float"),
        LocalDP(10.0, 1e-5, calibration="practical"),
    ],
)
def test_practical_reference_on_features_with_zero_rows(privacy):
    env = _NoRows(RiverSwimMixture(S=4, H=4))
    agent = UCRLVTR(env, privacy, episodes=20, seed=3, ties="lowest", beta_scale=0.05)
    _compare_vtr(agent, env, 20, "lowest", 3)


def test_reject_refuses_and_leaves_the_agent_as_it_was():
    env = _Scaled(RiverSwimMixture(S=4, H=4), 40.0)
    with pytest.warns(AssumptionWarning, match="guard refuses such a user at run time"):
        agent = UCRLVTR(
            env, JointDP(1.0, 1e-5, calibration="paper"), episodes=20, seed=2, sensitivity="reject"
        )
    before = agent.release().design.copy()
    with pytest.raises(AssumptionError, match="outside the sensitivity bound"):
        privrl.run(agent, env, seed=1)
    assert agent.k == 0
    np.testing.assert_array_equal(agent.release().design, before)


def test_callback_sees_the_cumulative_regret():
    env = RiverSwimMixture(S=4, H=4)
    seen: list[tuple[int, float]] = []
    res = privrl.run(
        UCRLVTR(env, NonPrivate(calibration="paper"), episodes=30, seed=0),
        env,
        seed=0,
        callback=lambda k, c: seen.append((k, c)),
    )
    assert seen[-1][0] == 30 and [k for k, _ in seen] == sorted(k for k, _ in seen)
    for k, c in seen:
        assert math.isclose(c, res.regret[k - 1], rel_tol=1e-12, abs_tol=1e-12)


def test_callback_fires_per_block_and_a_split_run_is_the_whole_run():
    """What docs/harness.md says of run's callback: it fires after blocks of users (16 first, at
    most runner.BLOCK later), not per user; its return value does not stop the run; an exception
    it raises leaves the agent at the end of that block. Stopping after exactly k users is
    episodes=k and a second run on the same Generator: the two results are the whole run's."""
    from privrl.envs import RandomLinearMixtureMDP
    from privrl.experiment import runner

    env = RandomLinearMixtureMDP(S=6, A=2, d=3, H=5, seed=0)

    def make():
        return UCRLVTR(env, JointDP(1.0, 1e-5), episodes=6000, seed=0)

    seen: list[int] = []
    whole = privrl.run(
        make(), env, seed=np.random.default_rng(1), callback=lambda k, c: seen.append(k) or True
    )
    steps = np.diff([0, *seen])
    assert seen[0] == 16 and seen[-1] == 6000 and steps.max() <= runner.BLOCK and len(seen) < 6000 // 16
    agent = make()

    def stop_at_1000(k, c):
        if k >= 1000:
            raise RuntimeError("stop")  # any exception: the run ends after this block

    with pytest.raises(RuntimeError, match="stop"):
        privrl.run(agent, env, seed=1, callback=stop_at_1000)
    assert 1000 <= agent.k <= 16 + runner.BLOCK
    split, g = make(), np.random.default_rng(1)
    first, rest = privrl.run(split, env, episodes=1000, seed=g), privrl.run(split, env, seed=g)
    assert split.k == 6000 and first.gaps.size == 1000
    for key in ("gaps", "returns", "initial_states"):
        np.testing.assert_array_equal(
            np.concatenate([getattr(first, key), getattr(rest, key)]), getattr(whole, key)
        )


def test_the_engine_keyword_is_deprecated_and_ignored():
    env = RiverSwimMixture(S=4, H=3)
    a = privrl.run(UCRLVTR(env, NonPrivate(calibration="paper"), episodes=10, seed=0), env, seed=0)
    with pytest.warns(DeprecationWarning, match="engine"):
        b = privrl.run(
            UCRLVTR(env, NonPrivate(calibration="paper"), episodes=10, seed=0), env, seed=0, engine="python"
        )
    np.testing.assert_array_equal(a.regret, b.regret)


class _OwnMixture(FiniteMDP):
    """A user's own FiniteMDP that carries linear-mixture features and C_w (not a LinearMixtureMDP)."""

    def __init__(self, base):
        super().__init__(base.P, base.R, base.init_dist, name="own mixture")
        self.features, self.C_w = base.features, base.C_w


class _OwnLinear(FiniteMDP):
    def __init__(self, base):
        super().__init__(base.P, base.R, base.init_dist, name="own linear")
        self.features = base.features


def test_agents_accept_any_finite_mdp_with_features():
    """An own FiniteMDP subclass with features runs like the built-in environment it copies (same
    regret); one without the right features is refused with the reason."""
    river = RiverSwimMixture(S=4, H=4)
    own = _OwnMixture(river)
    a = privrl.run(
        UCRLVTR(river, JointDP(1.0, 1e-5, calibration="paper"), episodes=50, seed=2), river, seed=3
    )
    b = privrl.run(UCRLVTR(own, JointDP(1.0, 1e-5, calibration="paper"), episodes=50, seed=2), own, seed=3)
    np.testing.assert_array_equal(a.regret, b.regret)
    lin = RandomLinearMDP(S=10, A=3, d=4, H=3, seed=0)
    own_lin = _OwnLinear(lin)
    c = privrl.run(LSVIUCB(lin, JointDP(1.0, 1e-5, calibration="paper"), episodes=60, seed=2), lin, seed=3)
    e = privrl.run(
        LSVIUCB(own_lin, JointDP(1.0, 1e-5, calibration="paper"), episodes=60, seed=2), own_lin, seed=3
    )
    np.testing.assert_array_equal(c.regret, e.regret)
    assert UCRLVTRPlus.accepts(own) is None and LSVIUCB.accepts(own_lin) is None
    assert "mixture features" in UCRLVTR.accepts(own_lin) and "linear features" in LSVIUCB.accepts(own)
    with pytest.raises(TypeError, match="C_w"):
        bad = _OwnMixture(river)
        bad.C_w = -1.0
        UCRLVTR(bad, NonPrivate(calibration="paper"), episodes=5)


def test_an_own_mixture_whose_features_break_asm_2_is_flagged_when_the_agent_is_built():
    """||phi_v(s, a)|| <= 1 for every v: S -> [0, 1] (Asm. 2, the bound behind the sensitivity of
    X = phi_V) is checked on a user's own FiniteMDP as LinearMixtureMDP checks it (one function);
    there it is the user's claim, so the agent warns (its guard then clips X at run time) rather
    than refuse: RiverSwimMixture's features pass, the same scaled by 1.5 do not."""
    from privrl.envs.mixture import check_phi_v_bound

    river = RiverSwimMixture(S=4, H=4)
    report: dict = {}
    check_phi_v_bound(river.features, "river", report)
    assert max(report["phi_v_sufficient_max"], report["phi_v_exact_max"] or 0.0) <= 1.0 + 1e-9
    with pytest.raises(AssumptionError, match=r"\|\|phi_v\(s=\d+, a=\d+\)\|\|_2 = [\d.]+ > 1"):
        check_phi_v_bound(1.5 * river.features, "scaled", {})
    bad = _OwnMixture(river)
    bad.features = 1.5 * river.features
    for cls in (UCRLVTR, UCRLVTRPlus):
        with pytest.warns(AssumptionWarning, match=r"own mixture: \|\|phi_v.*Asm\. 2.*guard clips X") as rec:
            cls(bad, NonPrivate(), episodes=5)
        assert rec[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error", AssumptionWarning)
        UCRLVTR(_OwnMixture(river), NonPrivate(), episodes=5)

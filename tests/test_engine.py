"""The episode engine (privrl.experiment.engine) against the Python path it replaces: for the same seeds both
give the same regret, returns, initial states, policy changes and final billboard, bit for bit,
on every agent x privacy model x mechanism x tie rule; the agent is left in the state the Python
path leaves it in; faults raise the Python path's exceptions; anything the engine does not cover
falls back to Python."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import privrl
from privrl.agents.common.base import SensitivityWarning
from privrl.agents.lsvi_ucb.agent import LSVIUCB
from privrl.agents.ucrl_vtr.agent import UCRLVTR
from privrl.agents.ucrl_vtr_plus.agent import UCRLVTRPlus
from privrl.experiment.engine import BLOCK, engine_gap
from privrl.envs.finite import FiniteMDP
from privrl.envs.linear import RandomLinearMDP, RiverSwim
from privrl.envs.mixture import HardToLearn, RiverSwimMixture
from privrl.exceptions import AssumptionError
from privrl.privacy.models import JointDP, LocalDP, NonPrivate

VTR_PRIVACY = [
    NonPrivate(),
    JointDP(1.0, 1e-5),
    JointDP(1.0, 0.0),
    JointDP(2.0, 1e-5, mechanism="honaker"),
    JointDP(2.0, 1e-5, mechanism="factorization"),
    JointDP(2.0, 1e-5, mechanism="blt"),
    JointDP(1.0, 1e-5, calibration="tight"),
    LocalDP(1.0, 1e-5),
    LocalDP(1.0, 0.0),
    LocalDP(5.0, 1e-5, calibration="tight"),
    NonPrivate(calibration="practical"),
    JointDP(1.0, 1e-5, calibration="practical"),
    JointDP(3.0, 1e-5, calibration="practical", mechanism="tree"),
    JointDP(3.0, 1e-5, calibration="practical", mechanism="honaker"),
    JointDP(1.0, 0.0, calibration="practical"),
    LocalDP(10.0, 1e-5, calibration="practical"),
    LocalDP(10.0, 0.0, calibration="practical"),
]
LSVI_PRIVACY = [
    NonPrivate(),
    JointDP(1.0, 1e-5),
    JointDP(1.0, 0.0),
    JointDP(1.0, 1e-5, mechanism="blt"),
    JointDP(1.0, 1e-5, calibration="practical"),
    NonPrivate(calibration="practical"),
]


def _same(make, env, K, seed=11):
    """Run two fresh agents from `make` on `env`, one per path; assert every output agrees."""
    runs = []
    for engine in ("python", "rust"):
        agent = make()
        runs.append((privrl.run(agent, env, K, seed=seed, engine=engine), agent))
    (rp, ap), (rr, ar) = runs
    np.testing.assert_array_equal(rp.regret, rr.regret)
    np.testing.assert_array_equal(rp.gaps, rr.gaps)
    np.testing.assert_array_equal(rp.returns, rr.returns)
    np.testing.assert_array_equal(rp.initial_states, rr.initial_states)
    assert rp.policy_changes == rr.policy_changes
    for name in ("design", "inverse", "weights", "bonus", "gamma"):
        np.testing.assert_array_equal(getattr(ap.release(), name), getattr(ar.release(), name))
    assert (ap.k, ap.policy_updates, ap.clip_count) == (ar.k, ar.policy_updates, ar.clip_count)
    return rp, ap, ar


@pytest.mark.parametrize("privacy", VTR_PRIVACY, ids=lambda p: p.label)
@pytest.mark.parametrize("ties", ["random", "lowest"])
def test_ucrl_vtr_engine_is_bit_identical(privacy, ties):
    env = RiverSwimMixture(S=4, H=5)
    _, ap, ar = _same(
        lambda: UCRLVTR(env, privacy, episodes=150, seed=3, ties=ties, beta_scale=0.05), env, 150
    )
    assert engine_gap(ar, env) is None
    if ap.server.mode == "local":
        np.testing.assert_array_equal(ap.server._gram, ar.server._gram)
        assert ar.server.received_types == ap.server.received_types
    if ap.server.mode == "exact":
        np.testing.assert_array_equal(ap.server._target, ar.server._target)


def test_ucrl_vtr_engine_on_hard_to_learn_learns_the_same():
    env = HardToLearn(d=4, H=4, K=400, seed=1)
    rp, _, _ = _same(lambda: UCRLVTR(env, NonPrivate(), episodes=400, seed=0), env, 400)
    assert rp.policy_changes > 1  # the non-private agent actually learns here


@pytest.mark.parametrize("privacy", LSVI_PRIVACY, ids=lambda p: p.label)
@pytest.mark.parametrize("batches", ["static", "every", 7])
@pytest.mark.parametrize("planning", ["auto", "per_sample", "aggregated"])
def test_lsvi_engine_is_bit_identical(privacy, batches, planning):
    env = RandomLinearMDP(S=12, A=3, d=5, H=4, seed=2)
    _same(
        lambda: LSVIUCB(
            env, privacy, batches=batches, episodes=120, seed=4, planning=planning, beta_scale=0.1
        ),
        env,
        120,
    )


@pytest.mark.parametrize("agent_kind", ["vtr", "lsvi"])
def test_engine_is_bit_identical_across_blocks(agent_kind):
    """More episodes than one engine block (the uniforms and tie seeds are drawn per block)."""
    K = BLOCK + 300
    if agent_kind == "vtr":
        env = RiverSwimMixture(S=3, H=2)
        _same(lambda: UCRLVTR(env, JointDP(1.0, 1e-5), episodes=K, seed=1), env, K)
    else:
        env = RiverSwim(S=3, H=2)
        _same(lambda: LSVIUCB(env, JointDP(1.0, 1e-5), episodes=K, seed=1), env, K)


def test_engine_leaves_the_agent_where_python_would():
    """Half the run on the engine, half in Python, against all of it in Python."""
    env = RiverSwimMixture(S=4, H=4)
    seeds = np.random.SeedSequence(9).spawn(2)
    ref = UCRLVTR(env, JointDP(1.0, 1e-5), episodes=100, seed=5)
    mixed = UCRLVTR(env, JointDP(1.0, 1e-5), episodes=100, seed=5)
    a = [privrl.run(ref, env, 50, seed=s, engine="python").gaps for s in seeds]
    b = [
        privrl.run(mixed, env, 50, seed=s, engine=e).gaps
        for s, e in zip(seeds, ("rust", "python"), strict=True)
    ]
    np.testing.assert_array_equal(np.concatenate(a), np.concatenate(b))
    np.testing.assert_array_equal(ref.server.tree_noise()[0], mixed.server.tree_noise()[0])


@pytest.mark.parametrize("agent_kind", ["vtr", "lsvi"])
def test_engine_clips_like_the_guard(agent_kind):
    """A guard tighter than the data: both paths clip the same values the same way and warn."""
    if agent_kind == "vtr":
        env = RiverSwimMixture(S=4, H=4)

        def make():
            a = UCRLVTR(env, JointDP(1.0, 1e-5), episodes=60, seed=2)
            a.guard.x_bound = 0.3  # below most ||phi_V||: every step is clipped
            a.guard.y_high = 1.5
            return a
    else:
        env = RandomLinearMDP(S=10, A=3, d=6, H=3, seed=0)

        def make():
            a = LSVIUCB(env, JointDP(1.0, 1e-5), episodes=60, seed=2)
            a.guard.x_bound = 0.35
            a.guard.y_high = 0.4
            return a

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, ap, ar = _same(make, env, 60)
    assert ar.clip_count > 0 and ar.clip_count == ap.clip_count
    assert sum(issubclass(w.category, SensitivityWarning) for w in caught) == 2  # once per agent


def test_engine_rejects_like_the_guard():
    env = RiverSwimMixture(S=4, H=4)
    for engine in ("python", "rust"):
        agent = UCRLVTR(env, JointDP(1.0, 1e-5), episodes=20, seed=2, sensitivity="reject")
        agent.guard.x_bound = 0.3
        with pytest.raises(AssumptionError, match="outside the sensitivity bound"):
            privrl.run(agent, env, seed=1, engine=engine)


def test_callback_runs_once_per_episode_with_the_cumulative_regret():
    env = RiverSwimMixture(S=4, H=4)
    seen: list[tuple[int, float]] = []
    res = privrl.run(
        UCRLVTR(env, NonPrivate(), episodes=30, seed=0),
        env,
        seed=0,
        callback=lambda k, c: seen.append((k, c)),
        engine="rust",
    )
    assert [k for k, _ in seen] == list(range(1, 31))
    np.testing.assert_allclose([c for _, c in seen], res.regret, rtol=1e-12)


class _OwnSampling(FiniteMDP):
    def sample_episode(self, policy, rng):
        return super().sample_episode(policy, rng)


@pytest.mark.parametrize("privacy", VTR_PRIVACY, ids=lambda p: p.label)
def test_ucrl_vtr_plus_engine_is_bit_identical(privacy):
    env = RiverSwimMixture(S=4, H=5)
    _, ap, ar = _same(lambda: UCRLVTRPlus(env, privacy, episodes=120, seed=3, beta_scale=0.01), env, 120)
    assert engine_gap(ar, env) is None
    for name in ("design", "inverse", "weights", "bonus", "gamma"):
        np.testing.assert_array_equal(getattr(ap._release2, name), getattr(ar._release2, name))
    np.testing.assert_array_equal(ap.last_sigma_bar, ar.last_sigma_bar)
    assert ap.server2.users == ar.server2.users == 120


def test_what_the_engine_does_not_cover_runs_in_python():
    env = RiverSwimMixture(S=4, H=3)
    spied = UCRLVTR(env, NonPrivate(), episodes=10, seed=0)
    spied.server.receive = spied.server.receive  # a spy on the instance
    assert "server.receive" in engine_gap(spied, env)
    with pytest.raises(ValueError, match="does not apply"):
        privrl.run(spied, env, seed=0, engine="rust")
    assert privrl.run(spied, env, seed=0).episodes == 10  # "auto" falls back
    own = _OwnSampling(env.P, env.R, env.init_dist)
    assert "overrides FiniteMDP.sample_episode" in engine_gap(UCRLVTR.__new__(UCRLVTR), own)
    with pytest.raises(ValueError, match="engine must be one of"):
        privrl.run(spied, env, seed=0, engine="fast")


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
    """Issue 13: an own FiniteMDP subclass with features runs like the built-in environment it
    copies: same regret (engine included), and the sweep preflight accepts it; one without the
    right features is refused with the reason."""
    river = RiverSwimMixture(S=4, H=4)
    own = _OwnMixture(river)
    a = privrl.run(UCRLVTR(river, JointDP(1.0, 1e-5), episodes=50, seed=2), river, seed=3)
    b = privrl.run(UCRLVTR(own, JointDP(1.0, 1e-5), episodes=50, seed=2), own, seed=3, engine="rust")
    np.testing.assert_array_equal(a.regret, b.regret)
    lin = RandomLinearMDP(S=10, A=3, d=4, H=3, seed=0)
    own_lin = _OwnLinear(lin)
    c = privrl.run(LSVIUCB(lin, JointDP(1.0, 1e-5), episodes=60, seed=2), lin, seed=3)
    e = privrl.run(LSVIUCB(own_lin, JointDP(1.0, 1e-5), episodes=60, seed=2), own_lin, seed=3)
    np.testing.assert_array_equal(c.regret, e.regret)
    assert UCRLVTRPlus.accepts(own) is None and LSVIUCB.accepts(own_lin) is None
    assert "mixture features" in UCRLVTR.accepts(own_lin) and "linear features" in LSVIUCB.accepts(own)
    with pytest.raises(TypeError, match="C_w"):
        bad = _OwnMixture(river)
        bad.C_w = -1.0
        UCRLVTR(bad, NonPrivate(), episodes=5)

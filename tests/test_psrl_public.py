"""PSRL as a public privrl agent: exported as privrl.agents.PSRL, named PSRL in sweep configs and on
the command line (tests/test_cli.py has its command-line cases), labelled without the options it
does not use, and refusing a continual-release mechanism it would not run."""

from __future__ import annotations

import pytest

import privrl
from privrl.common.errors import PrivacyParameterError
from privrl.envs.features import FeatureMap
from privrl.privacy import JointDP, LocalDP, NonPrivate


def test_psrl_is_exported_and_registered():
    from privrl.agents import PSRL
    from privrl.agents.psrl import PSRL as Same
    from privrl.agents.psrl.agent import PSRL as Defined
    from privrl.experiment import ALGORITHMS
    from privrl.experiment.config import resolve_algorithm

    assert PSRL is Same is Defined and "PSRL" in privrl.agents.__all__
    assert "PSRL" in ALGORITHMS and resolve_algorithm("psrl") is PSRL


def test_the_label_names_what_the_agent_runs():
    """JointDP's default mechanism (BLT under the adaptive calibration) and its calibration are
    not PSRL's: the label said 'PSRL[JDP(eps=10, delta=1e-05, blt), sampling]'; it names the
    noise's sampler where it is the continuous Gaussian, as the other agents' labels do."""
    from privrl.agents import PSRL

    fm = FeatureMap.one_hot(3, 2, 4)
    agent = PSRL(fm, JointDP(10.0, 1e-5, calibration="paper"), episodes=50, seed=0)
    tag = ", float" if agent.calibration.sampler == "float" else ""
    assert agent.label == f"PSRL[JDP(eps=10, delta=1e-05{tag}), sampling]"
    assert PSRL(fm, NonPrivate(), episodes=50, seed=0).label == "PSRL[NonPrivate, sampling]"


@pytest.mark.parametrize("mechanism", ["tree", "honaker", "factorization"])
def test_a_chosen_continual_release_mechanism_is_refused(mechanism):
    """PSRL noises each batch's increment once: JointDP(mechanism='honaker') was accepted and
    recorded (a sweep's manifest said honaker) for a run that never used it. JointDP's default
    (BLT, or the tree under 'paper' / 'tight') is what every JointDP resolves to, and is accepted."""
    from privrl.agents import PSRL

    fm = FeatureMap.one_hot(3, 2, 4)
    with pytest.raises(PrivacyParameterError, match=f"mechanism '{mechanism}' does not apply to PSRL"):
        PSRL(fm, JointDP(10.0, 1e-5, mechanism=mechanism), episodes=50)
    for privacy in (JointDP(10.0, 1e-5, mechanism="blt"), JointDP(10.0, 1e-5, calibration="paper")):
        assert PSRL(fm, privacy, episodes=50, seed=0).calibration.mechanism == "increments"
    with pytest.raises(PrivacyParameterError, match="LocalDP is not available for PSRL"):
        PSRL(fm, LocalDP(10.0, 1e-5), episodes=50)


def test_end_to_end_audit_flags_half_the_noise():
    """audit_psrl_agent runs the shipped PSRL (JointDP(4, 1e-5), a release after every user) on two
    user sequences differing in user 1 (the release plan's worst pair: disjoint (s, a) pairs,
    ||x - x'|| = 2 sqrt(m H)). With half the noise it is flagged (measured bound 8.73, effective
    eps 9.08), with its own noise not (3.63 < 4; seeds 1-5: 3.15-3.75, mu estimate 0.82-0.94
    against the exact 0.925); the effective epsilon at x1 is the agent's own report."""
    from privrl.agents import PSRL
    from privrl.audit import audit_psrl_agent

    half = audit_psrl_agent(epsilon=4.0, noise_multiplier=0.5)
    assert half.flagged and 4.0 < half.gdp_epsilon_lower_bound < half.effective_epsilon
    full = audit_psrl_agent(epsilon=4.0, noise_multiplier=1.0)
    assert not full.flagged and 2.5 < full.gdp_epsilon_lower_bound < 4.0
    agent = PSRL(FeatureMap.one_hot(2, 2, 2), JointDP(4.0, 1e-5), episodes=4, batches="every")
    assert full.effective_epsilon == agent.privacy_report()["tight"]["budget"][0]
    assert full.name.startswith("PSRL JDP agent end to end (") and full.name.endswith("x1 noise)")


def test_a_saved_state_whose_horizon_overflows_is_refused_not_a_panic():
    """A saved PSRL state whose H is 4 + 2^62 (H S wraps to 16 = len(pi) at S = 4) restored and
    panicked in policy(); it is refused at restore (PrivrlError), as the other agents are."""
    import struct

    from privrl.agents import PSRL
    from privrl.envs import RiverSwimMixture
    from privrl.exceptions import PrivrlError

    env = RiverSwimMixture(S=4, H=4)
    agent = PSRL(env, JointDP(1.0, 1e-5), episodes=10, seed=0, batches=5)
    privrl.run(agent, env, episodes=3, seed=1, progress=False)
    restore, (state,) = agent._core.__reduce__()[:2]
    assert struct.unpack("<4Q", state[:32]) == (4, 2, 4, 10)  # S, A, H, K
    bad = state[:16] + struct.pack("<Q", 4 + 2**62) + state[24:]
    with pytest.raises(PrivrlError, match="not a consistent saved PSRL state: its policy holds 16 entries"):
        restore(bad)


def test_a_sweep_learns_a_gymnasium_environment_with_psrl_as_privrl_learn_does():
    """A sweep naming PSRL on a gymnasium environment without a model (model = false: the one-hot
    FeatureMap, privrl.learn) runs each run as privrl.learn with the run's streams, bit for bit."""
    import math

    import numpy as np

    gym = pytest.importorskip("gymnasium")
    from privrl.agents import PSRL
    from privrl.experiment import build_config, sweep
    from privrl.experiment.sweep import run_seed_sequence

    lake = {"name": "gymnasium", "id": "FrozenLake-v1", "H": 8, "is_slippery": True, "model": False}
    agents = {"P": {"algorithm": "PSRL", "privacy": "jdp", "batches": 4, "m": 2}}
    args = {"env": lake, "agents": agents, "epsilons": [math.inf, 10.0], "seeds": 2, "episodes": 200}
    df, manifest = sweep(**args, progress=False)
    config = build_config(args)
    specs = list(config.studies[0].runs(config.root_seed))
    assert len(specs) == 4 and set(df["run_id"]) == {s.run_id for s in specs}
    for spec in specs:
        agent_seq, env_seq = run_seed_sequence(spec).spawn(2)
        env = gym.make("FrozenLake-v1", is_slippery=True)
        privacy = NonPrivate() if math.isinf(spec.epsilon) else JointDP(10.0, 1e-5)
        agent = PSRL(FeatureMap.one_hot_for(env, 8), privacy, episodes=200, seed=agent_seq, batches=4, m=2)
        returns = privrl.learn(agent, env, seed=env_seq, progress=False).returns
        rows = df[df["run_id"] == spec.run_id].sort_values("episode")
        assert np.array_equal(rows["return"].to_numpy(), returns[rows["episode"].to_numpy() - 1])
        assert manifest["runs"][spec.run_id]["label"] == agent.label


def test_a_single_batch_warns_that_the_agent_never_releases():
    """At K = 228 (FrozenLake, H 20, JDP eps 10; 2,289 at eps 1) the 'static' schedule's B is 1:
    the agent never released and every user sampled from the prior, silently (LSVI-UCB warns).
    Now a ScheduleWarning, also for batches=1; not at B >= 2, K = 1 or without noise (B = K)."""
    import warnings

    from privrl.agents import PSRL
    from privrl.common.errors import ScheduleWarning
    from privrl.envs.gym import frozen_lake

    env = frozen_lake()
    with pytest.warns(ScheduleWarning, match="'static' schedule's B is 1 at K = 228, S A = 64"):
        assert PSRL(env, JointDP(10.0, 1e-5), episodes=228).B == 1
    with pytest.warns(ScheduleWarning, match=r"a single batch \(batches=1\): the agent never releases"):
        PSRL(env, JointDP(10.0, 1e-5), episodes=50, batches=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert PSRL(env, JointDP(10.0, 1e-5), episodes=229).B == 2
        PSRL(env, JointDP(1.0, 1e-5), episodes=1)
        PSRL(env, NonPrivate(), episodes=5)


def test_psrl_on_a_gymnasium_env_points_to_its_feature_map():
    """PSRL(gym.make(...)) said only 'got TimeLimit' (the other agents name the id and what to
    build): now the id, 'build PSRL on its feature map' and, for a tabular table, its model;
    following it learns (Blackjack: no table) and runs on FrozenLake's model."""
    gym = pytest.importorskip("gymnasium")
    from privrl.agents import PSRL
    from privrl.envs import from_gymnasium

    for gym_id, tabular in (("FrozenLake-v1", True), ("Blackjack-v1", False)):
        env = gym.make(gym_id)
        with pytest.raises(TypeError, match=f"{gym_id} is a gymnasium environment, not a model") as info:
            PSRL(env, NonPrivate(), episodes=5)
        assert "build PSRL on its feature map (FeatureMap.one_hot_for(env, H)" in str(info.value)
        assert ("from_gymnasium(env, H)" in str(info.value)) == tabular
        agent = PSRL(FeatureMap.one_hot_for(env, 4), NonPrivate(), episodes=5, seed=0)
        assert privrl.learn(agent, env, seed=0, reward=lambda r: (r + 1) / 2).episodes == 5
    lake = from_gymnasium(gym.make("FrozenLake-v1"), 4)
    assert privrl.run(PSRL(lake, NonPrivate(), episodes=5, seed=0), lake, seed=0).regret.shape == (5,)


@pytest.mark.parametrize("privacy", [JointDP(1.0, 1e-5), NonPrivate()])
def test_a_cap_beyond_32_bits_is_refused_by_name(privacy):
    """The Rust core counts m in 32 bits: m = 2^32 passed calibrate_psrl's [1, 2^63 - 1] and the
    core's constructor raised OverflowError 'out of range integral type conversion attempted'
    (not a privrl exception, naming nothing). Refused where m is checked, by name; 2^32 - 1 builds."""
    from privrl.agents import PSRL
    from privrl.agents.psrl.calibration import calibrate_psrl
    from privrl.envs import RiverSwimMixture

    env = RiverSwimMixture(S=4, H=4)
    for m in (2**32, 2**40):
        with pytest.raises(PrivacyParameterError, match=r"m must be an integer in \[1, 2\^32 - 1\]"):
            PSRL(env, privacy, episodes=10, seed=0, m=m)
        with pytest.raises(PrivacyParameterError, match=r"m must be an integer in \[1, 2\^32 - 1\]"):
            calibrate_psrl(privacy.kind, privacy.epsilon, privacy.delta, 4, 2, 4, 10, m=m)
    assert PSRL(env, privacy, episodes=10, seed=0, m=2**32 - 1).m == 2**32 - 1


def test_a_horizon_too_long_for_memory_is_refused_before_allocating():
    """PSRL on FeatureMap.one_hot(4, 2, 2^30) (a feature map holds no H-sized table) allocated its
    (H, S) policy in Rust (32 GiB): 'memory allocation of 34359738368 bytes failed' and the process
    aborted. Refused with a ResourceError before anything is allocated, as LSVI-UCB's dense state is
    (privrl.common.memory.refuse_over_memory); run in a child process, where an abort is a failed test."""
    import subprocess
    import sys

    code = (
        "from privrl.agents import PSRL\n"
        "from privrl.envs.features import FeatureMap\n"
        "from privrl.exceptions import ResourceError\n"
        "from privrl.privacy import JointDP\n"
        "for H in (2**30, 2**40, 2**62 + 4):\n"
        "    try:\n"
        "        PSRL(FeatureMap.one_hot(4, 2, H), JointDP(1.0, 1e-5), episodes=10, seed=0)\n"
        "    except ResourceError as e:\n"
        "        assert 'PSRL keeps its (H, S) policy twice' in str(e), e\n"
        "    else:\n"
        "        raise SystemExit(f'H = {H} built')\n"
        "print('refused')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "refused", (proc.returncode, proc.stderr[-2000:])


@pytest.mark.parametrize("privacy, batches", [(NonPrivate(), "static"), (JointDP(1.0, 1e-20), "every")])
def test_batch_bounds_too_many_for_memory_are_refused(privacy, batches):
    """Without noise (or under 'every') B = K: the agent builds K + 1 batch bounds in numpy, a Python
    list and the core (about 56 bytes a user: K = 10^8 took 26 s and 5.5 GB; 10^9 would be killed by
    the OS). K = 2^40 raised numpy's MemoryError 'Unable to allocate 8.00 TiB' (not a privrl
    exception), 2^62 ValueError 'array is too big'. Now a ResourceError naming B, before allocating."""
    from privrl.agents import PSRL
    from privrl.envs import RiverSwimMixture
    from privrl.exceptions import ResourceError

    env = RiverSwimMixture(S=4, H=4)
    for K in (2**40, 2**62):
        with pytest.raises(ResourceError, match=f"B \\+ 1 batch bounds .*B = {K}\\)"):
            PSRL(env, privacy, episodes=K, seed=0, batches=batches)


def test_the_repr_names_the_privacy_model_as_the_label_does():
    """repr(agent) said 'PSRL(JDP(eps=1, delta=1e-05, blt), ...)' (JointDP's own label, naming a
    mechanism PSRL never runs) while agent.label says 'PSRL[JDP(eps=1, delta=1e-05), sampling]'."""
    from privrl.agents import PSRL
    from privrl.envs import RiverSwimMixture

    env = RiverSwimMixture(S=4, H=4)
    cases = [
        (JointDP(1.0, 1e-5), "JDP(eps=1, delta=1e-05)"),
        (JointDP(1.0, 1e-5, sampler="float", calibration="paper"), "JDP(eps=1, delta=1e-05, float)"),
        (NonPrivate(), "NonPrivate"),
    ]
    for privacy, model in cases:
        agent = PSRL(env, privacy, episodes=10, seed=0, batches=2)
        privrl.run(agent, env, episodes=3, seed=1, progress=False)
        assert repr(agent) == (
            f"PSRL({model}, exploration='sampling', K=10, episodes_done=3, env='RiverSwimMixture(S=4, H=4)')"
        )
        assert agent.label == f"PSRL[{model}, sampling]"
        if privacy.kind == "jdp":  # ldp_client's refusal names the model as the label does
            with pytest.raises(PrivacyParameterError, match=r"under JDP\(eps=1, delta=1e-05(, float)?\) the"):
                agent.ldp_client()


def test_batch_bounds_are_exact_for_every_k_the_agent_accepts():
    """psrl_batch_bounds rounded a float64 linspace: beyond K = 2^53 its bounds missed K (K = 2^53 + 1,
    B = 3 ended at 2^53, and the core refused the constructor's own schedule: 'batch bounds must rise
    strictly from 0 to K = 9007199254740993'), and at K = 2^63 - 1 (check_episodes' largest) the
    float K cast to int64 wrapped: OverflowError "can't convert negative int to unsigned". Up to
    2^53 the bounds are the float ones, bit for bit (the schedule every run so far used)."""
    import numpy as np

    from privrl.agents import PSRL
    from privrl.agents.psrl.formulas import psrl_batch_bounds
    from privrl.envs import RiverSwimMixture

    env = RiverSwimMixture(S=4, H=4)
    for K, B in [(2**53 + 1, 3), (10**17 + 3, 7), (2**62 + 1, 1000), (2**63 - 1, 2)]:
        agent = PSRL(env, JointDP(1.0, 1e-20, sampler="float"), episodes=K, seed=0, batches=B)
        bounds = [int(b) for b in agent.bounds]
        assert bounds[0] == 0 and bounds[-1] == K and len(bounds) == B + 1
        sizes = np.diff(np.array(bounds, dtype=object))  # differ by at most 1
        assert all(s in (K // B, K // B + 1) for s in sizes)
        j = B // 2  # round(j K / B), half to even, in exact integers
        q, r = divmod(j * K, B)
        assert bounds[j] == q + (2 * r > B or (2 * r == B and q % 2 == 1))
    rng = np.random.default_rng(0)
    cases = [(5, 2), (10, 4), (7, 6), (20_000, 3), (2**53, 7), (2**53 - 1, 1000)]
    cases += [(int(k), int(rng.integers(1, min(k, 5000) + 1))) for k in rng.integers(1, 2**53, 200)]
    for K, B in cases:
        assert np.array_equal(psrl_batch_bounds(K, B), np.linspace(0, K, B + 1).round().astype(np.int64))


def test_the_release_counts_the_users_its_billboard_holds():
    """Release.users is the users whose data the billboard holds (LSVI-UCB's, LinUCB's: 140 users
    after 20 releases; test_lsvi_ucb detects a new release by it). PSRL's said agent.k: after 7
    users in batches [0, 2, 4, 6, 8, 10] its billboard holds 6 (three releases), and a finished
    agent's last batch is never released. Now bounds[j] after j releases."""
    from privrl.agents import PSRL
    from privrl.envs import RiverSwimMixture

    env = RiverSwimMixture(S=4, H=4)
    agent = PSRL(env, JointDP(1.0, 1e-5), episodes=10, seed=0, batches=5)
    assert list(agent.bounds) == [0, 2, 4, 6, 8, 10] and agent.release().users == 0
    for users, (held, j) in zip((1, 6, 3), ((0, 0), (6, 3), (8, 4)), strict=True):
        privrl.run(agent, env, episodes=users, seed=1, progress=False)
        assert (agent.release().users, agent.billboard()[2]) == (held, j)
    exact = PSRL(env, NonPrivate(), episodes=10, seed=0)  # a release after every user but the last
    privrl.run(exact, env, seed=1, progress=False)
    assert (exact.k, exact.release().users, exact.billboard()[2]) == (10, 9, 9)


def test_a_step_dependent_model_warns_that_psrl_pools_over_the_steps():
    """PSRL learns one stationary model (its release is pooled over h): on a FiniteMDP whose kernel
    depends on h it is misspecified, and says so (AssumptionWarning); a stationary model (RiverSwim,
    RiverSwimMixture) and a FeatureMap (no model) say nothing."""
    import warnings

    import numpy as np

    from privrl.agents import PSRL
    from privrl.envs import RandomLinearMDP, RiverSwim, RiverSwimMixture
    from privrl.exceptions import AssumptionWarning

    moving = RandomLinearMDP(S=10, A=3, d=4, H=3, seed=0)
    assert not np.array_equal(np.asarray(moving.P)[0], np.asarray(moving.P)[1])
    with pytest.warns(AssumptionWarning, match="depend on the step h"):
        PSRL(moving, NonPrivate(), episodes=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for env in (RiverSwim(S=4, H=3), RiverSwimMixture(S=4, H=3), FeatureMap.one_hot(4, 2, 3)):
            PSRL(env, NonPrivate(), episodes=5)


def test_past_k_the_next_users_policy_is_refused_saying_how_to_score_the_agent():
    """After its K users PSRL's policy(), act() and privrl.evaluate(agent, env) raised the core's
    "this PSRL agent was calibrated for 5 users: all have been served" (LSVI-UCB and UCRL-VTR
    answer them), without saying how to read what it learned. Now the CapacityError names
    greedy_policy, which still scores it; nothing changes before K."""
    from privrl.agents import PSRL
    from privrl.common.errors import CapacityError
    from privrl.envs import RiverSwim

    env = RiverSwim(S=4, H=5)
    agent = PSRL(env, NonPrivate(), episodes=5, seed=0)
    before = (agent.policy().copy(), agent.act(0, 0))
    privrl.run(agent, env, seed=0)
    for call in (agent.policy, lambda: agent.act(0, 0), lambda: privrl.evaluate(agent, env)):
        with pytest.raises(
            CapacityError, match=r"all K = 5 users .* privrl.evaluate\(agent.greedy_policy\(\), env\)"
        ):
            call()
    assert privrl.evaluate(agent.greedy_policy(), env).exact
    fresh = PSRL(env, NonPrivate(), episodes=5, seed=0)
    assert (fresh.policy() == before[0]).all() and fresh.act(0, 0) == before[1]

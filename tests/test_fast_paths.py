"""The per-call fast paths of the public edge, against the checks they bypass: agent.act's
one Rust call for ints and numpy integers in range (_core.agent_act, LinUcbAgent.act), and the
symmetry check of a stack of matrices in one Rust call (check_symmetric_stack: privatize,
floored_release)."""

from __future__ import annotations

import enum

import numpy as np
import pytest

from privrl import kernels as kn
from privrl.agents import LSVIUCB, UCRLVTR, LinUCB
from privrl.common.checks import check_symmetric, check_symmetric_stack
from privrl.envs import ContextualBandit, FeatureMap, RiverSwimMixture
from privrl.exceptions import AssumptionError, PrivrlError, ShapeError
from privrl.privacy import NonPrivate


def test_act_reads_numpy_integers_in_one_call_and_refuses_as_before():
    """act's Rust fast path (_core.agent_act / LinUcbAgent.act) takes ints and numpy integers in
    range; anything else goes through the Python checks, with their messages."""
    mdp = RiverSwimMixture(S=4, H=3)
    fmap = FeatureMap.one_hot(4, mdp.A, H=3)
    for agent in (UCRLVTR(mdp, NonPrivate(), episodes=5, seed=0), LSVIUCB(fmap, NonPrivate(), episodes=5)):
        pi = agent.policy()
        for s, h in ((2, 1), (np.int64(2), np.int64(1)), (np.uint8(3), np.int32(2)), (np.int16(0), 0)):
            assert agent.act(s, h) == pi[int(h), int(s)] and type(agent.act(s, h)) is int
        Two = enum.IntEnum("Two", {"TWO": 2})  # an int subclass: the Python path, accepted as before
        assert agent.act(Two.TWO, 1) == pi[1, 2]
        for bad, msg in (
            ((np.int64(4), 0), r"state must be an integer in \[0, 4\), got np.int64\(4\)"),
            ((np.int64(-1), 0), r"state must be an integer in \[0, 4\), got np.int64\(-1\)"),
            ((np.uint64(2**64 - 1), 0), r"state must be an integer in \[0, 4\)"),
            ((0, np.int64(3)), r"h must be an integer in \[0, 3\), got np.int64\(3\)"),
            ((np.bool_(True), 0), r"state must be an integer in \[0, 4\), got np.True_"),
            ((np.float64(1.0), 0), r"state must be an integer"),
            ((0, True), r"h must be an integer in \[0, 3\), got True"),
        ):
            with pytest.raises(ShapeError, match=msg):
                agent.act(*bad)
    env = ContextualBandit(np.eye(3), np.array([[0.2, 0.8], [0.9, 0.1], [0.5, 0.6]]))
    bandit = LinUCB(env, NonPrivate(), episodes=5, seed=0)
    arms = [bandit.act(s) for s in range(3)]
    assert [bandit.act(np.int64(s), np.int8(0)) for s in range(3)] == arms
    for bad, msg in (((np.int64(3),), "state must be a context index"), ((0, np.int64(1)), "one step")):
        with pytest.raises(ShapeError, match=msg):
            bandit.act(*bad)


def test_act_and_update_refuse_a_timedelta64_index():
    """numpy files np.timedelta64 under np.integer, so the Python checks behind act's fast path took
    np.timedelta64(2) as state 2 (and h, and LinUCB's context and arm): a duration is no index,
    refused as a float is (common.checks.is_index)."""
    mdp = RiverSwimMixture(S=4, H=3)
    fmap = FeatureMap.one_hot(4, mdp.A, H=3)
    for agent in (UCRLVTR(mdp, NonPrivate(), episodes=5, seed=0), LSVIUCB(fmap, NonPrivate(), episodes=5)):
        with pytest.raises(ShapeError, match=r"state must be an integer in \[0, 4\), got np.timedelta64"):
            agent.act(np.timedelta64(2), 1)
        with pytest.raises(ShapeError, match=r"h must be an integer in \[0, 3\), got np.timedelta64\(1\)"):
            agent.act(2, np.timedelta64(1))
    env = ContextualBandit(np.eye(3), np.array([[0.2, 0.8], [0.9, 0.1], [0.5, 0.6]]))
    bandit = LinUCB(env, NonPrivate(), episodes=5, seed=0)
    with pytest.raises(ShapeError, match="state must be a context index"):
        bandit.act(np.timedelta64(1))
    with pytest.raises(ShapeError, match="one step"):
        bandit.act(0, np.timedelta64(0))
    with pytest.raises(ShapeError, match="arm must be an integer"):
        bandit.update(1, np.timedelta64(0), 0.5)
    with pytest.raises(TypeError, match="context must be a real numeric array"):
        bandit.update(np.timedelta64(1), 0, 0.5)  # not an index: read as a vector, and refused
    assert bandit.k == 0


def test_a_stack_is_checked_for_symmetry_as_matrix_by_matrix():
    """check_symmetric_stack (privatize, floored_release: one Rust call) refuses the first
    asymmetric matrix of a stack with check_symmetric's message, and passes what it passes."""
    rng = np.random.default_rng(5)
    sym = rng.normal(size=(6, 4, 4))
    sym = sym + sym.transpose(0, 2, 1)
    check_symmetric_stack(sym, "x")
    sym[2, 0, 1] += 1e-14  # within 1e-10 of its largest entry: rounding passes
    check_symmetric_stack(sym, "x")
    bad = sym.copy()
    bad[3, 1, 2] += 1e-6
    bad[5, 0, 3] += 1.0
    bad[1, 0, 0] = np.nan  # left to the finiteness checks, as by check_symmetric
    with pytest.raises(AssumptionError) as want:
        for k in range(len(bad)):
            check_symmetric(bad[k], f"x[{k}]")
    with pytest.raises(AssumptionError) as got:
        check_symmetric_stack(bad, "x")
    assert str(got.value) == str(want.value) and "x[3]" in str(got.value)
    stream = kn.NoiseStream("gaussian", 1.0, seed=0)
    with pytest.raises(AssumptionError, match=r"x\[3\] must be symmetric"):
        stream.privatize(np.nan_to_num(bad), symmetric=True)
    assert stream.draws == 0  # refused before any noise is drawn
    check_symmetric_stack(np.zeros((0, 3, 3)), "x")
    check_symmetric_stack(np.zeros((2, 0, 0)), "x")


def test_the_manifest_records_versions_without_importing_them():
    """environment_info reads the optional dependencies' versions from their installed metadata
    (importlib.metadata), equal to what each module says, without importing any of them."""
    import importlib.metadata
    import subprocess
    import sys

    code = (
        "import sys, json\n"
        "from privrl.experiment.results import environment_info\n"
        "before = set(sys.modules)\n"
        "info = environment_info()['versions']\n"
        "new = [m for m in ('dask', 'distributed', 'gymnasium', 'matplotlib', 'pyarrow')\n"
        "       if m in sys.modules and m not in before]\n"
        "print(json.dumps([info, new]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    import json

    info, imported = json.loads(out.strip().splitlines()[-1])
    assert imported == []
    for dist in ("pyarrow", "matplotlib", "dask", "distributed", "gymnasium"):
        try:
            module = __import__(dist)
        except ImportError:
            assert dist not in info
            continue
        assert info[dist] == module.__version__ == importlib.metadata.version(dist)


def test_privrl_run_does_not_import_pandas():
    """privrl.run imports the harness package, whose results tables are pandas': pandas (and pyarrow)
    is imported only by what builds or reads a table (a sweep, load_results, report), not by a run
    (it was 0.3-0.6 s of the first privrl.run of every script)."""
    import subprocess
    import sys

    code = (
        "import sys, privrl\n"
        "from privrl.agents import UCRLVTR\n"
        "from privrl.envs import RiverSwimMixture\n"
        "from privrl.privacy import JointDP\n"
        "env = RiverSwimMixture(S=4, H=5)\n"
        "privrl.run(UCRLVTR(env, JointDP(1.0, 1e-5), episodes=20, seed=0), env, seed=1)\n"
        "import privrl.experiment\n"
        "print(sorted(m for m in ('pandas', 'pyarrow') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_one_integer_rule_refuses_a_duration_at_every_public_edge():
    """numpy files np.timedelta64 under np.integer and numbers.Integral, so the integer and real
    checks other than act's took np.timedelta64(5) as 5: K, H, d, batches, a LinUCB schedule, the
    privacy epsilon, a kernel's beta, a callable policy's action in evaluate and an action given to
    a privrl model behind gymnasium (there by gymnasium's own rule, Discrete.contains). One rule
    (common.kinds.is_integer / is_real / integer_value) refuses it everywhere; a 0-d integer array
    stays the integer it holds where gymnasium takes one."""
    gym = pytest.importorskip("gymnasium")
    from privrl import evaluate
    from privrl.common.checks import check_episodes, check_int, check_pos_int, check_real, check_seeds
    from privrl.common.errors import PrivacyParameterError
    from privrl.envs import RandomLinearMDP, RiverSwim, as_gymnasium
    from privrl.exceptions import SeedError
    from privrl.kernels import RankOneInverse, optimistic_values
    from privrl.privacy import JointDP

    td = np.timedelta64(5)
    for check in (check_episodes, lambda v: check_pos_int(v, "H"), lambda v: check_int(v, "n")):
        with pytest.raises(PrivacyParameterError, match="integer"):
            check(td)
    with pytest.raises(PrivacyParameterError, match="real number"):
        check_real(td, "epsilon")
    with pytest.raises(SeedError):
        check_seeds([0, td], "seeds")
    with pytest.raises(PrivacyParameterError):
        JointDP(td, 1e-5)
    env = RandomLinearMDP(S=5, A=2, d=3, H=2, seed=0)
    with pytest.raises(PrivacyParameterError, match="episodes"):
        LSVIUCB(env, NonPrivate(), episodes=td)
    with pytest.raises(PrivacyParameterError, match="batches"):
        LSVIUCB(env, JointDP(1.0, 1e-5), episodes=10, batches=np.timedelta64(2))
    bandit = ContextualBandit(np.eye(3) / 2, np.full((3, 2), 0.5))
    with pytest.raises(PrivacyParameterError, match="schedule"):
        LinUCB(bandit, JointDP(1.0, 1e-5), episodes=10, schedule=np.timedelta64(2))
    with pytest.raises(PrivacyParameterError, match="d must be an integer"):
        RankOneInverse(td, 1.0)
    with pytest.raises(TypeError, match="beta must be a real number"):
        optimistic_values(np.zeros((2, 3)), np.zeros(3), np.eye(3), np.timedelta64(1), n_actions=2)
    river = RiverSwim(S=3, H=4)
    frozen = gym.make("FrozenLake-v1", is_slippery=False)
    with pytest.raises(TypeError, match="action at step 0 must be an integer"):
        evaluate(lambda s, h: np.timedelta64(1), frozen, episodes=1, seed=0, H=3)
    two = evaluate(lambda s, h: np.array(2), frozen, episodes=2, seed=0, H=3)
    assert two == evaluate(lambda s, h: 2, frozen, episodes=2, seed=0, H=3)
    lake = as_gymnasium(river)
    lake.reset(seed=0)
    for bad in (np.timedelta64(1), np.bool_(True)):  # as gymnasium's Discrete.contains (True is in)
        assert not lake.action_space.contains(bad)
        with pytest.raises(ShapeError, match="action must be an integer"):
            lake.step(bad)


def test_act_and_update_take_a_0d_integer_array_as_learn_does():
    """learn takes np.array(2) from state(obs), evaluate from a callable policy and the gymnasium
    adapter as an action (privrl.common.kinds.integer_value), but agent.act refused it ("state
    must be an integer in [0, 4), got array(2)"), as LinUCB's act and update did for a context
    index, an arm and a reward np.array(0.5). Each is read as the number it holds, with the same
    arm / action and the same billboard as the Python int; a 0-d float or bool array, or a 1-d
    one, is refused as before."""
    mdp = RiverSwimMixture(S=4, H=3)
    fmap = FeatureMap.one_hot(4, mdp.A, H=3)
    for agent in (UCRLVTR(mdp, NonPrivate(), episodes=5, seed=0), LSVIUCB(fmap, NonPrivate(), episodes=5)):
        pi = agent.policy()
        for s, h in ((2, 1), (3, 2), (0, 0)):
            assert agent.act(np.array(s), np.array(h, dtype=np.uint8)) == agent.act(s, h) == pi[h, s]
        for bad in ((np.array(2.0), 0), (np.array(True), 0), (np.array([2]), 0), (0, np.array(1.0))):
            with pytest.raises(ShapeError, match="must be an integer in"):
                agent.act(*bad)
    env = ContextualBandit(np.eye(3) * 0.5, np.array([[0.2, 0.8], [0.9, 0.1], [0.5, 0.6]]))
    plain, arrays = (LinUCB(env, NonPrivate(), episodes=5, seed=0) for _ in range(2))
    for s, arm, r in ((0, 1, 0.8), (2, 0, 0.5), (1, 0, 1)):
        assert arrays.act(np.array(s), np.array(0)) == plain.act(s, 0)
        plain.update(s, arm, r)
        arrays.update(np.array(s), np.array(arm), np.array(r))
    one, other = plain.release(), arrays.release()
    for part in ("design", "inverse", "weights", "users"):
        np.testing.assert_array_equal(getattr(one, part), getattr(other, part))
    assert arrays.k == 3
    with pytest.raises(ShapeError, match="arm must be an integer"):
        arrays.update(0, np.array(1.0), 0.5)
    with pytest.raises(ShapeError, match="one step"):
        arrays.act(0, np.array(0.0))
    with pytest.raises(PrivrlError, match="reward must be a real number"):
        arrays.update(0, 1, np.array("0.5"))

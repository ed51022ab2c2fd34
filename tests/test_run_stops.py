"""privrl.run stopped partway (Ctrl-C inside a block of users, its callback raising, a Rust error
at a user of a block): the exception carries exc.partial, the RunResult of the users the agent
observed, and the numpy Generator given as seed is left after their uniforms, so that running on
(after a save and a load too) gives the uninterrupted run bit for bit."""

from __future__ import annotations

import _thread
import threading

import numpy as np
import pytest

import privrl
import privrl.experiment
from privrl.agents import LSVIUCB, UCRLVTR, Agent
from privrl.envs import RandomLinearMDP, RiverSwimMixture
from privrl.exceptions import AgentInUseError, CapacityError
from privrl.experiment import runner
from privrl.experiment.interact import LearnResult
from privrl.experiment.runner import RunResult
from privrl.privacy import JointDP

FIELDS = ("gaps", "returns", "initial_states")


def _joined(*results):
    return {f: np.concatenate([getattr(r, f) for r in results]) for f in FIELDS}


def _same(a: dict, b: dict) -> None:
    for f in FIELDS:
        np.testing.assert_array_equal(a[f], b[f], err_msg=f)


def _river(K=60):
    env = RiverSwimMixture(S=4, H=3)
    return env, UCRLVTR(env, JointDP(10.0, 1e-5), episodes=K, seed=0)


def test_a_raising_callback_hands_back_the_users_run_and_the_run_goes_on_bit_for_bit():
    """The RunResult was lost when the callback raised (the agent had run the block's users)."""
    env, agent = _river()
    _, twin = _river()
    whole = privrl.run(twin, env, seed=np.random.default_rng(5))

    def callback(k, regret):
        if k >= 16:
            raise RuntimeError("stop")

    rng = np.random.default_rng(5)
    with pytest.raises(RuntimeError) as info:
        privrl.run(agent, env, seed=rng, callback=callback)
    partial = privrl.experiment.partial_result(info.value)  # info.value.partial, typed
    assert isinstance(partial, RunResult) and partial.episodes == agent.k == 16
    assert partial is info.value.partial and privrl.experiment.partial_result(RuntimeError("stop")) is None
    np.testing.assert_array_equal(partial.regret, np.cumsum(partial.gaps))
    assert any(
        "the exception's .partial is the RunResult of those 16 users" in n for n in info.value.__notes__
    )
    rest = privrl.run(agent, env, seed=rng)
    _same(_joined(partial, rest), _joined(whole))


def test_a_rust_error_at_a_user_of_a_block_keeps_the_block_users_before_it():
    """A block that failed at its j-th user lost its first j - 1 users' results though the agent had
    observed them; the generator had drawn the whole block's uniforms."""
    env, agent = _river(K=20)
    _, twin = _river(K=20)
    whole = privrl.run(twin, env, seed=np.random.default_rng(5))
    after = np.random.default_rng(5)
    after.random((20, env.H + 1))  # the stream after the 20 users' uniforms
    agent.K = 25  # the Rust agent holds K = 20: user 21, the 5th of the second block, fails there
    rng = np.random.default_rng(5)
    with pytest.raises(CapacityError) as info:
        privrl.run(agent, env, seed=rng)
    partial = info.value.partial
    assert partial.episodes == agent.k == 20 and not hasattr(info.value, "_block")
    _same(_joined(partial), _joined(whole))
    np.testing.assert_array_equal(rng.random(8), after.random(8))


def _interrupted(agent, env, rng, after):
    """privrl.run with Ctrl-C `after` seconds in (wherever it lands)."""
    timer = threading.Timer(after, _thread.interrupt_main)
    timer.start()
    try:
        privrl.run(agent, env, seed=rng)
    except KeyboardInterrupt as e:
        return e
    finally:
        timer.cancel()
    pytest.skip("the run ended before the interrupt")


@pytest.mark.filterwarnings("ignore::privrl.exceptions.ScheduleWarning")
@pytest.mark.parametrize("after", [0.05, 0.3])
def test_ctrl_c_inside_a_block_keeps_every_user_the_agent_ran_and_a_saved_agent_runs_on(tmp_path, after):
    """Ctrl-C lands while Rust runs a block (the GIL released) and is raised as the block returns:
    the block's users were in the agent (agent.k) but their results were lost with the RunResult."""
    env = RandomLinearMDP(S=60, A=6, d=12, H=5, seed=0)
    make = lambda: LSVIUCB(env, JointDP(10.0, 1e-5), batches="every", episodes=600, seed=1)  # noqa: E731
    agent, twin = make(), make()
    rng = np.random.default_rng(2)
    e = _interrupted(agent, env, rng, after)
    partial = e.partial  # raised as the block in flight returns: possibly the last one
    assert isinstance(partial, RunResult) and 0 < partial.episodes == agent.k <= 600
    assert any(f".partial is the RunResult of those {agent.k} users" in n for n in e.__notes__)
    agent.save(tmp_path / "agent.npz")
    rest = [privrl.run(Agent.load(tmp_path / "agent.npz"), env, seed=rng)] if agent.k < 600 else []
    whole = privrl.run(twin, env, seed=np.random.default_rng(2))
    _same(_joined(partial, *rest), _joined(whole))


def test_learn_on_a_model_hands_back_the_stopped_run_as_a_learn_result():
    env, agent = _river(K=20)
    agent.K = 25  # the Rust agent holds K = 20: the run stops at user 21
    with pytest.raises(CapacityError) as info:
        privrl.learn(agent, env, seed=5)
    partial = info.value.partial
    assert isinstance(partial, LearnResult) and partial.episodes == agent.k == 20
    _, twin = _river(K=20)
    whole = privrl.learn(twin, env, seed=5)
    np.testing.assert_array_equal(partial.returns, whole.returns)
    np.testing.assert_array_equal(partial.regret, whole.regret)


def _hold(agent, env, users):
    """Another thread's privrl.run of `users` users on `agent` in one Rust call, started and waited
    for until it holds the agent (agent.k raises AgentInUseError)."""
    thread = threading.Thread(target=lambda: privrl.run(agent, env, episodes=users, seed=9))
    thread.start()
    while thread.is_alive():
        try:
            _ = agent.k
        except AgentInUseError:
            return thread
    pytest.skip("the other thread's run ended before it was seen holding the agent")


def test_a_block_refused_because_another_thread_holds_the_agent_ran_none_of_its_users(monkeypatch):
    """The stop's bookkeeping reads the blocks, not agent.k: while another thread holds the agent
    agent.k raises too, and the other thread's users are not this run's."""
    env, agent = _river(K=40_000)
    rng, other = np.random.default_rng(5), {}

    def callback(k, regret):  # after the first block: another thread takes the agent
        monkeypatch.setattr(runner, "_FIRST_BLOCK", 30_000)
        other["thread"] = _hold(agent, env, 30_000)

    with pytest.raises(AgentInUseError) as info:
        privrl.run(agent, env, episodes=100, seed=rng, callback=callback)
    other["thread"].join()
    partial = info.value.partial
    assert partial.episodes == 16 and agent.k == 16 + 30_000
    _, twin = _river(K=40_000)
    twin_rng = np.random.default_rng(5)
    _same(_joined(partial), _joined(privrl.run(twin, env, episodes=16, seed=twin_rng)))
    np.testing.assert_array_equal(rng.random(8), twin_rng.random(8))  # after the 16 users' uniforms


def test_learn_refused_because_another_thread_holds_the_agent_keeps_the_users_before(monkeypatch):
    """privrl.learn's stop read agent.k, which raises while another thread holds the agent: the
    AgentInUseError of the refused observe came back replaced, without its partial result. The
    other thread's run is one Rust call (one block of 30,000 users): with the runner's first block
    of 16 users, _hold could see the agent held by that small block and learn's observe land
    between two blocks, taken (the CI of 4d61612 failed so: DID NOT RAISE)."""
    pytest.importorskip("gymnasium")
    from privrl.envs.gym import as_gymnasium

    monkeypatch.setattr(runner, "_FIRST_BLOCK", 30_000)
    model, agent = _river(K=40_000)
    env = as_gymnasium(model)
    real_reset, real_step, resets, other = env.reset, env.step, [], {}

    def reset(**kwargs):
        resets.append(1)
        return real_reset(**kwargs)

    def step(a):  # user 3, step 0: another thread takes the agent (learn's observe is refused)
        if len(resets) == 3 and "thread" not in other:
            other["thread"] = _hold(agent, model, 30_000)
        return real_step(a)

    env.reset, env.step = reset, step
    with pytest.raises(AgentInUseError) as info:
        privrl.learn(agent, env, episodes=5, seed=1)
    other["thread"].join()
    assert info.value.partial.episodes == 2 and agent.k == 2 + 30_000

"""privrl.learn and privrl.evaluate when the user's code fails mid-episode: a gymnasium
environment or a reward rescale that hands back something privrl cannot use is refused with a
message naming what was given and where (user k, step h), and the agent is left after the last
whole user, as if the failing user had never come."""

from __future__ import annotations

import math

import numpy as np
import pytest

import privrl
import privrl.experiment
from privrl.agents import LSVIUCB
from privrl.envs import FeatureMap
from privrl.exceptions import NonFiniteError
from privrl.experiment.interact import LearnResult
from privrl.privacy import JointDP

gym = pytest.importorskip("gymnasium")

H = 4


class Chain(gym.Env):
    """Four states in a row, two actions (left / right), reward 1 at the right end; `bad` replaces
    the reward of step `step` of user `user` (0-based)."""

    def __init__(self, bad=..., user=0, step=0):
        self.observation_space = gym.spaces.Discrete(4)
        self.action_space = gym.spaces.Discrete(2)
        self.bad, self.user, self.step_at = bad, user, step
        self.k, self.t, self.s = -1, 0, 0

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.k, self.t = self.k + 1, 0
        self.s = int(self.np_random.integers(0, 2))
        return self.s, {}

    def step(self, a):
        self.s = min(3, self.s + 1) if a == 1 else max(0, self.s - 1)
        r = 1.0 if self.s == 3 else 0.0
        if self.bad is not ... and (self.k, self.t) == (self.user, self.step_at):
            r = self.bad
        self.t += 1
        return self.s, r, False, False, {}


# Ending's episodes end at state 0, where they start: learn warns of its self-loop padding there
# (tests/test_absorbing.py); these tests are about where a stopped learn leaves the agent
SELF_LOOPS = "ignore:by user .* a state users also act from:privrl.exceptions.AssumptionWarning"


def _agent():
    return LSVIUCB(FeatureMap.one_hot(4, 2, H=H), JointDP(10.0, 1e-5), episodes=30, seed=0)


def _refused_in_learn_and_evaluate(bad, exc, at_user, at_episode):
    """`bad` as user 3's step-2 reward in learn (the user not observed) and as episode 2's step-1
    reward in evaluate: refused with `exc`, naming where."""
    agent = _agent()
    with pytest.raises(exc, match=at_user):
        privrl.learn(agent, Chain(bad, user=2, step=2), episodes=5, seed=1)
    assert agent.k == 2  # the failing user is not observed
    with pytest.raises(exc, match=at_episode):
        privrl.evaluate(lambda s, h: 1, Chain(bad, user=1, step=1), episodes=3, seed=0, H=H)


@pytest.mark.parametrize("bad", ["1.0", None, np.array([1.0]), 1j])
def test_a_reward_that_is_not_a_real_number_is_refused_naming_the_user_and_step(bad):
    """A str reward "1.0" was converted by float() and learned from; None gave float()'s bare
    "argument must be a string or a real number" with no user or step."""
    _refused_in_learn_and_evaluate(
        bad, TypeError, r"user 3, step 2.*not a real number", r"episode 2, step 1.*not a real number"
    )
    rescaled = lambda r: "0.5" if r == 1.0 else r  # noqa: E731  (a rescale wrong for some rewards only)
    with pytest.raises(TypeError, match=r"reward\(r\) returned '0\.5'.*at user \d+, step \d+"):
        privrl.learn(_agent(), Chain(), episodes=5, seed=1, reward=rescaled)


@pytest.mark.filterwarnings("ignore::privrl.exceptions.SensitivityWarning")
@pytest.mark.parametrize(
    "bad", [1e308, -1e200, np.float64(1e300), 10**400, -(10**400)], ids=["1e308", "-1e200", "np", "i", "-i"]
)
def test_a_reward_too_large_to_sum_is_refused_naming_the_user_and_step(bad):
    """A finite reward of 1e308 made inf returns (numpy's RuntimeWarning "overflow encountered in
    reduce" from inside learn; evaluate's "invalid value encountered in subtract" and an inf value),
    an int of 10**400 float()'s bare OverflowError "int too large to convert to float"."""
    _refused_in_learn_and_evaluate(
        bad,
        NonFiniteError,
        r"reward at user 3, step 2 is .*beyond 1e\+100 in size",
        r"reward at episode 2, step 1 is .*beyond 1e\+100",
    )
    rescaled = lambda r: bad if r == 1.0 else r  # noqa: E731
    with pytest.raises(NonFiniteError, match=r"reward\(r\) for 1\.0 at user \d+, step \d+ is .*beyond"):
        privrl.learn(_agent(), Chain(), episodes=5, seed=1, reward=rescaled)
    huge = privrl.learn(_agent(), Chain(1e100, user=2, step=2), episodes=5, seed=1)  # the bound itself
    assert np.isfinite(huge.returns).all() and huge.returns[2] >= 1e100


def test_a_real_reward_of_any_kind_is_learned_as_before():
    plain = privrl.learn(_agent(), Chain(), episodes=6, seed=1)
    for value in (np.float32(1.0), np.array(1.0), 1, True):
        res = privrl.learn(_agent(), Chain(), episodes=6, seed=1, reward=lambda r, v=value: v * r)
        np.testing.assert_array_equal(res.returns, plain.returns)
    with pytest.raises(NonFiniteError, match=r"environment's reward at user 2, step 0 is nan"):
        privrl.learn(_agent(), Chain(math.nan, user=1, step=0), episodes=5, seed=1)


class Malformed(Chain):
    """Chain whose reset or step returns `out` at user `user`, step `step` (step None: reset)."""

    def __init__(self, out, user, step):
        super().__init__()
        self.out, self.at = out, (user, step)

    def reset(self, seed=None, options=None):
        got = super().reset(seed=seed)
        return self.out(self) if self.at == (self.k, None) else got

    def step(self, a):
        t = self.t
        got = super().step(a)
        return self.out(self) if self.at == (self.k, t) else got


@pytest.mark.parametrize(
    ("out", "step", "match"),
    [
        (lambda env: env.s, None, r"env\.reset\(\) returned \d \(int\) at user 2: gymnasium's reset returns"),
        (lambda env: (env.s, 0.0, False, {}), 1, r"\(tuple of 4\) at user 2, step 1.*gym < 0\.26"),
        (lambda env: None, 3, r"env\.step\(\) returned None \(NoneType\) at user 2, step 3"),
    ],
)
def test_a_malformed_reset_or_step_is_refused_naming_what_it_returned(out, step, match):
    """The unpacking gave a bare 'too many / not enough values to unpack' (or 'cannot unpack
    non-iterable NoneType') naming neither the call nor the user."""
    agent = _agent()
    with pytest.raises(ValueError, match=match):
        privrl.learn(agent, Malformed(out, 1, step), episodes=4, seed=1)
    assert agent.k == 1
    with pytest.raises(ValueError, match=match.replace("user", "episode")):
        privrl.evaluate(lambda s, h: 1, Malformed(out, 1, step), episodes=3, seed=0, H=H)


@pytest.mark.parametrize("flag", ["no", math.nan, None, np.array([True, False]), 2])
@pytest.mark.parametrize("which", [2, 3])
def test_a_step_flag_that_is_not_a_bool_is_refused_naming_the_user_and_step(flag, which):
    """terminated / truncated were read by their truthiness: the str "no" or a NaN ended the
    episode (padded as ended), None went on, a bool array raised numpy's bare "truth value of an
    array is ambiguous" from inside learn."""
    name = ("terminated", "truncated")[which - 2]

    def out(env):
        got = [env.s, 0.0, False, False, {}]
        got[which] = flag
        return tuple(got)

    agent = _agent()
    with pytest.raises(TypeError, match=rf"env\.step\(\)'s {name} at user 2, step 1 is .*, not a bool"):
        privrl.learn(agent, Malformed(out, 1, 1), episodes=4, seed=1)
    assert agent.k == 1
    with pytest.raises(TypeError, match=rf"{name} at episode 2, step 1 is .*, not a bool"):
        privrl.evaluate(lambda s, h: 1, Malformed(out, 1, 1), episodes=3, seed=0, H=H)


@pytest.mark.filterwarnings(SELF_LOOPS)
def test_a_numpy_or_integer_step_flag_ends_the_episode_as_a_bool_does():
    """np.bool_, a 0-d bool array and 0 / 1 are what bool() read them as, as before."""

    def ends(flag):
        return lambda env: (env.s, 1.0, flag, False, {})

    want = privrl.learn(_agent(), Malformed(ends(True), 1, 1), episodes=4, seed=1).returns
    for flag in (np.True_, np.array(True), 1, np.int64(1)):
        got = privrl.learn(_agent(), Malformed(ends(flag), 1, 1), episodes=4, seed=1).returns
        np.testing.assert_array_equal(got, want)


class Raising(Chain):
    """Chain whose reset (step None) or step `step` of user `user` raises `error`."""

    def __init__(self, error, user, step):
        super().__init__()
        self.error, self.at = error, (user, step)

    def reset(self, seed=None, options=None):
        got = super().reset(seed=seed)
        if self.at == (self.k, None):
            raise self.error
        return got

    def step(self, a):
        if self.at == (self.k, self.t):
            raise self.error
        return super().step(a)


@pytest.mark.skipif(not hasattr(BaseException, "add_note"), reason="exception notes: Python 3.11+")
@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt()])
@pytest.mark.parametrize(
    ("step", "where"), [(None, "at env.reset / state(obs)"), (0, "at step 0"), (H - 1, f"at step {H - 1}")]
)
def test_a_failing_user_is_named_and_left_out_and_learn_continues_as_without_it(error, step, where):
    """The user's own exception came through with nothing saying which user or step failed or what
    the agent kept; now it carries a note (its type unchanged) and the run continued afterwards is
    the run without the failing user, bit for bit."""
    agent, twin = _agent(), _agent()
    privrl.learn(agent, Chain(), episodes=5, seed=1)
    privrl.learn(twin, Chain(), episodes=5, seed=1)
    with pytest.raises(type(error)) as info:
        privrl.learn(agent, Raising(error, 2, step), episodes=6, seed=3)
    assert agent.k == 7 and agent.clip_count == 0
    note = (
        f"privrl.learn stopped at user 3 of 6, {where}: the agent kept the 2 users of this call "
        "before it (agent.k = 7)"
    )
    assert any(n.startswith(note) for n in info.value.__notes__)
    privrl.learn(twin, Chain(), episodes=2, seed=3)  # the two users before the failing one
    after, without = (
        privrl.learn(agent, Chain(), episodes=8, seed=4),
        privrl.learn(twin, Chain(), episodes=8, seed=4),
    )
    np.testing.assert_array_equal(after.returns, without.returns)
    assert agent.k == twin.k and agent.policy_updates == twin.policy_updates
    np.testing.assert_array_equal(agent.policy(), twin.policy())
    with pytest.raises(type(error)) as info:
        privrl.evaluate(lambda s, h: 1, Raising(error, 1, step), episodes=3, seed=0, H=H)
    assert (
        f"privrl.evaluate stopped in episode 2 of 3, {'at env.reset' if step is None else where}"
        in info.value.__notes__
    )


class Ending(Raising):
    """Raising whose episodes end at either end (state 0 or 3): some users end before H."""

    def step(self, a):
        obs, r, _, truncated, info = super().step(a)
        return obs, r, obs in (0, 3), truncated, info


def _stop_callback(at, error):
    def callback(k, ret):
        if k == at:
            raise error

    return callback


@pytest.mark.skipif(not hasattr(BaseException, "add_note"), reason="exception notes: Python 3.11+")
@pytest.mark.filterwarnings(SELF_LOOPS)
@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt()])
@pytest.mark.parametrize(
    ("user", "step", "by_callback"), [(3, None, False), (3, 0, False), (0, 0, False), (4, None, True)]
)
def test_a_stopped_learn_hands_back_the_result_of_the_users_the_agent_kept(error, user, step, by_callback):
    """The returns of the users before the failing one went to callback only: the exception now
    carries exc.partial, the LearnResult of the users the agent observed, equal to what a call of
    that many users returns (returns, regret, early ends, policy changes), bit for bit."""
    agent, twin = _agent(), _agent()
    if by_callback:  # the callback raises after user `user` was observed (it is kept)
        env, callback, kept = Ending(None, -1, -1), _stop_callback(user, error), user
    else:
        env, callback, kept = Ending(error, user, step), None, user
    with pytest.raises(type(error)) as info:
        privrl.learn(agent, env, episodes=6, seed=3, reference=2.0, callback=callback)
    partial = info.value.partial
    assert isinstance(partial, LearnResult) and privrl.experiment.partial_result(info.value) is partial
    assert partial.episodes == agent.k == kept
    which = f"this call's {kept} users" if by_callback else f"those {kept} users"
    assert any(
        n.endswith(f"the exception's .partial is the LearnResult of {which}") for n in info.value.__notes__
    )
    if kept == 0:
        assert partial.returns.shape == (0,) and partial.regret.shape == (0,)
        assert (partial.terminated_early, partial.policy_changes) == (0, 0)
        return
    whole = privrl.learn(twin, Ending(None, -1, -1), episodes=kept, seed=3, reference=2.0)
    np.testing.assert_array_equal(partial.returns, whole.returns)
    np.testing.assert_array_equal(partial.regret, whole.regret)
    assert (partial.terminated_early, partial.policy_changes, partial.agent) == (
        whole.terminated_early,
        whole.policy_changes,
        whole.agent,
    )
    assert whole.terminated_early > 0  # the early ends counted are those of the kept users only


@pytest.mark.filterwarnings(SELF_LOOPS)
@pytest.mark.parametrize("after", [0.02, 0.1])
def test_ctrl_c_wherever_it_lands_hands_back_every_user_the_agent_kept(after):
    """A real Ctrl-C (interrupt_main from a timer) lands in the environment, in the agent's observe
    (raised as it returns, after the agent took the user) or in between: the partial result is
    always the users in the agent, equal to a call of that many users."""
    import _thread
    import threading

    make = lambda: LSVIUCB(FeatureMap.one_hot(4, 2, H=H), JointDP(10.0, 1e-5), episodes=20_000, seed=0)  # noqa: E731
    agent, twin = make(), make()
    timer = threading.Timer(after, _thread.interrupt_main)
    timer.start()
    try:
        privrl.learn(agent, Ending(None, -1, -1), seed=3, reference=2.0)
    except KeyboardInterrupt as e:
        partial = e.partial
    else:
        pytest.skip("learn ended before the interrupt")
    finally:
        timer.cancel()
    assert partial.episodes == agent.k
    if agent.k == 0:
        return
    whole = privrl.learn(twin, Ending(None, -1, -1), episodes=agent.k, seed=3, reference=2.0)
    np.testing.assert_array_equal(partial.returns, whole.returns)
    np.testing.assert_array_equal(partial.regret, whole.regret)
    assert (partial.terminated_early, partial.policy_changes) == (
        whole.terminated_early,
        whole.policy_changes,
    )
    np.testing.assert_array_equal(agent.policy(), twin.policy())


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt()])
@pytest.mark.parametrize("step", [None, 2])
def test_a_stopped_evaluation_keeps_the_estimate_of_its_whole_episodes(error, step):
    """A Monte-Carlo privrl.evaluate stopped partway (Ctrl-C in a long evaluation, the environment
    raising) lost every episode it had run: the exception carried no partial result. Now it
    carries ``partial``, the Evaluation of the whole episodes before the stop, equal to evaluate's
    over that many episodes with the same seed; a stop in the first episode carries none."""
    policy = np.ones((H, 4), dtype=np.int64)
    with pytest.raises(type(error)) as info:
        privrl.evaluate(policy, Raising(type(error)(), 5, step), episodes=9, seed=2)
    got = privrl.experiment.partial_result(info.value)
    assert got == privrl.evaluate(policy, Chain(), episodes=5, seed=2)
    assert got.episodes == 5 and not got.exact and math.isfinite(got.stderr)
    with pytest.raises(type(error)) as info:
        privrl.evaluate(policy, Raising(type(error)(), 0, step), episodes=9, seed=2)
    assert privrl.experiment.partial_result(info.value) is None


class Starts(Chain):
    """Chain that records each episode's start state (drawn from the environment's stream)."""

    def __init__(self):
        super().__init__()
        self.starts = []

    def reset(self, seed=None, options=None):
        got = super().reset(seed=seed)
        self.starts.append(self.s)
        return got


def test_learn_in_chunks_seeds_as_the_harness_doc_says():
    """docs/harness.md (A run that stops halfway): a seed given again reseeds env.reset at the call's
    first user and seed=None continues the environment's stream, so a seeded first call and
    seed=None after it meet one call's users (their start states) bit for bit; a numpy Generator
    gives one draw per call, so chunks sharing it neither replay each other nor meet one call's."""

    def starts(*seeds):
        agent, env = _agent(), Starts()
        for s in seeds:
            privrl.learn(agent, env, 30 // len(seeds), seed=s, progress=False)
        return env.starts

    assert starts(3, None) == starts(3)
    assert starts(3, 3)[:15] == starts(3, 3)[15:]  # an int given again replays
    g = np.random.default_rng(5)
    chunked = starts(g, g)
    assert chunked[:15] != chunked[15:]  # one draw per call: no replay
    assert chunked != starts(np.random.default_rng(5))  # reseeded at the second call

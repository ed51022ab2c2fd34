"""Gymnasium environments with tabular but structured observations (a Tuple of Discrete spaces as
Blackjack-v1's, a MultiDiscrete, a MultiBinary, a Discrete that starts elsewhere than 0):
privrl.envs.features.observation_index against numpy's ravel_multi_index, FeatureMap.one_hot_for,
and privrl.learn / privrl.evaluate indexing them by default exactly as an explicit state= does."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import privrl
from privrl.agents import LSVIUCB
from privrl.envs import FeatureMap
from privrl.envs.features import observation_index
from privrl.exceptions import ShapeError
from privrl.privacy import JointDP, NonPrivate

gym = pytest.importorskip("gymnasium")
spaces = gym.spaces
D = spaces.Discrete


@pytest.mark.parametrize(
    ("space", "sizes", "starts"),
    [
        (
            spaces.Tuple((spaces.Discrete(32), spaces.Discrete(11), spaces.Discrete(2))),
            (32, 11, 2),
            (0, 0, 0),
        ),
        (spaces.Tuple((D(3, start=-1), D(4, start=2))), (3, 4), (-1, 2)),
        (spaces.MultiDiscrete([3, 5, 2]), (3, 5, 2), (0, 0, 0)),
        (spaces.MultiDiscrete([4, 3], start=[1, -2]), (4, 3), (1, -2)),
        (spaces.MultiBinary(4), (2, 2, 2, 2), (0, 0, 0, 0)),
        (spaces.Discrete(7, start=3), (7,), (3,)),
    ],
)
def test_observation_index_is_numpys_row_major_index(space, sizes, starts):
    n, index = observation_index(space)
    assert n == int(np.prod(sizes))
    seen = []
    for combo in itertools.product(*(range(s, s + k) for s, k in zip(starts, sizes, strict=True))):
        obs = combo[0] if isinstance(space, spaces.Discrete) else np.array(combo)
        i = index(obs)
        assert i == np.ravel_multi_index(tuple(c - s for c, s in zip(combo, starts, strict=True)), sizes)
        seen.append(i)
    assert sorted(seen) == list(range(n))  # every state index once
    if not isinstance(space, spaces.Discrete):  # outside the space (or the wrong length): -1, never a state
        below = np.array(starts) - 1
        assert index(below) == -1 and index(np.array(starts)[:-1]) == -1


def test_other_spaces_have_no_index():
    assert observation_index(spaces.Box(0, 1, (2,))) is None
    assert observation_index(spaces.Tuple((spaces.Discrete(2), spaces.Box(0, 1)))) is None
    assert observation_index(spaces.Dict({"a": spaces.Discrete(2)})) is None
    assert observation_index(spaces.MultiDiscrete([[2, 2], [2, 2]])) is None  # 2-D
    assert observation_index(None) is None

    class LooksDiscrete:  # not a gymnasium space: not guessed at
        n, start = 4, 0

    assert observation_index(LooksDiscrete()) is None


def test_one_hot_for_sizes_the_map_from_the_spaces():
    fm = FeatureMap.one_hot_for(gym.make("Blackjack-v1"), H=4)
    # 704 hands and the absorbing state after the end (no transition table: tests/test_absorbing.py)
    assert (fm.S, fm.A, fm.d, fm.H, fm.name, fm.absorbing) == (705, 2, 1410, 4, "Blackjack-v1", 704)
    np.testing.assert_array_equal(fm.features, FeatureMap.one_hot(705, 2, 4).features)
    lake = FeatureMap.one_hot_for(gym.make("FrozenLake-v1"), H=8, name="lake")
    assert (lake.S, lake.A, lake.name) == (16, 4, "lake")
    with pytest.raises(ShapeError, match=r"one_hot_for needs a Discrete action space.*Box"):
        FeatureMap.one_hot_for(gym.make("CartPole-v1"), H=8)


class _RowCol(gym.ObservationWrapper):
    """FrozenLake with (row, col) observations in a Tuple space (row from 1: a shifted start)."""

    def __init__(self, env):
        super().__init__(env)
        self.observation_space = spaces.Tuple((spaces.Discrete(4, start=1), spaces.Discrete(4)))

    def observation(self, obs):
        return (int(obs) // 4 + 1, int(obs) % 4)


@pytest.mark.parametrize("privacy", [NonPrivate(), JointDP(10.0, 1e-5)])
def test_learn_indexes_a_tuple_observation_as_the_flat_one(privacy):
    """The same FrozenLake seen through (row, col) observations learns bit for bit as the plain
    one: the default index of the Tuple space is the environment's own state s = 4 row + col."""
    fm = FeatureMap.one_hot(16, 4, H=20)
    plain = LSVIUCB(fm, privacy, batches=10, episodes=300, seed=3)
    tupled = LSVIUCB(fm, privacy, batches=10, episodes=300, seed=3)
    a = privrl.learn(plain, gym.make("FrozenLake-v1", is_slippery=True), seed=5, progress=False)
    b = privrl.learn(tupled, _RowCol(gym.make("FrozenLake-v1", is_slippery=True)), seed=5, progress=False)
    np.testing.assert_array_equal(a.returns, b.returns)
    assert a.returns.sum() > 0  # the episodes reached the goal at times: the states mattered
    np.testing.assert_array_equal(plain.policy(), tupled.policy())
    pi = plain.policy()
    ev = privrl.evaluate(pi, _RowCol(gym.make("FrozenLake-v1")), episodes=50, seed=1)
    assert ev.value == privrl.evaluate(pi, gym.make("FrozenLake-v1"), episodes=50, seed=1).value


def test_learn_runs_blackjack_by_default_and_refuses_a_mismatched_map():
    env = gym.make("Blackjack-v1")
    agent = LSVIUCB(FeatureMap.one_hot_for(env, H=4), NonPrivate(), episodes=200, seed=0)
    explicit = LSVIUCB(FeatureMap.one_hot_for(env, H=4), NonPrivate(), episodes=200, seed=0)
    rescale = lambda r: (r + 1) / 2  # noqa: E731
    a = privrl.learn(agent, env, seed=1, reward=rescale, progress=False)
    flat = lambda o: int(np.ravel_multi_index(o, (32, 11, 2)))  # noqa: E731
    b = privrl.learn(explicit, gym.make("Blackjack-v1"), seed=1, reward=rescale, state=flat, progress=False)
    np.testing.assert_array_equal(a.returns, b.returns)
    pi = agent.policy()
    ev = privrl.evaluate(pi, gym.make("Blackjack-v1"), episodes=300, seed=2, reward=rescale)
    again = privrl.evaluate(pi, gym.make("Blackjack-v1"), episodes=300, seed=2, reward=rescale, state=flat)
    assert ev == again
    small = LSVIUCB(FeatureMap.one_hot(16, 2, H=4), NonPrivate(), episodes=5, seed=0)
    with pytest.raises(ShapeError, match=r"\(704 states\).*S = 16.*one_hot_for"):
        privrl.learn(small, env, seed=0)
    assert small.k == 0


def test_the_blackjack_block_of_the_docs_runs():
    """docs/harness.md's Blackjack block, as written (20,000 users of JDP LSVI-UCB, ~8 s)."""
    import re
    import subprocess
    import sys
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "harness.md").read_text()
    (code,) = [b for b in re.findall(r"^```python\n(.*?)^```", text, re.S | re.M) if "Blackjack-v1" in b]
    code += "\nassert agent.k == 20_000 and res.returns.shape == (20_000,)\n"
    code += "assert 2 * res.returns[-2000:].mean() - 4 > 2 * res.returns[:2000].mean() - 4 + 0.1\n"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]


class _Shaped(gym.ObservationWrapper):
    """FrozenLake whose (row, col) observations are rewritten by `f` (to fall outside the space)."""

    def __init__(self, env, f):
        super().__init__(env)
        self.f = f
        self.observation_space = spaces.Tuple((spaces.Discrete(4), spaces.Discrete(4)))

    def observation(self, obs):
        return self.f(int(obs) // 4, int(obs) % 4)


@pytest.mark.parametrize(
    "space",
    [
        spaces.Tuple((D(4), D(3, start=2))),
        spaces.MultiDiscrete([4, 3], start=[0, 2]),
        spaces.Discrete(4, start=2),
    ],
)
def test_an_observation_that_is_not_in_the_space_is_never_a_state(space):
    """A float, a str or a non-sequence is not in the space: index -1, as documented, and never
    truncated onto the state of another observation (1.7 is not (1, ...)); a bool is refused as a
    Discrete observation (as learn refuses it on Discrete(n)), taken as 0 / 1 in a component; a
    0-d integer array is the integer it holds, as an observation and as a component."""
    _, index = observation_index(space)
    bad = [1.7, 1.0, np.float64(2.0), "1", None, np.array(2)]
    if isinstance(space, spaces.Discrete):
        # a 0-d integer array is in a Discrete space (gymnasium's contains): the integer it holds
        assert space.contains(np.array(2)) and index(np.array(3)) == 1 and index(np.array(2)) == 0
        bad = [x for x in bad if not isinstance(x, np.ndarray)] + [np.array(2.0), np.array([3]), np.array(6)]
        assert [index(x) for x in [*bad, True, np.True_, np.array(True)]] == [-1] * (len(bad) + 3)
        assert index(np.int8(3)) == 1 and index(3) == 1
        return
    bad = [x for x in bad if not isinstance(x, np.ndarray)] + [np.array(2.0), np.array([1]), np.array(True)]
    for x in bad:
        for obs in [(x, 2), (1, x), [x, 3], x]:
            assert index(obs) == -1, obs
    assert index((1, np.int64(3))) == 4 and index([np.int8(1), 3]) == 4
    # a 0-d integer array is a component gymnasium's contains takes (as a Discrete observation):
    # the integer it holds (it was refused: learn said the observation was not in the space)
    for obs in [(np.array(1), 3), (1, np.array(3, dtype=np.int8)), [np.array(1), np.array(3)]]:
        assert space.contains(obs if isinstance(space, spaces.Tuple) else np.asarray(obs)), obs
        assert index(obs) == 4, obs
    assert index((np.array(9), 3)) == -1  # out of its range
    assert index("13") == -1  # a str of the right length is not a sequence of integers
    assert index(((1, 2), 3)) == -1 and index(np.array([[1, 3]])) == -1  # nested, 2-D


def test_a_1d_multibinary_given_by_its_shape_is_indexed():
    n, index = observation_index(spaces.MultiBinary([3]))
    assert n == 8 and index(np.array([1, 0, 1], dtype=np.int8)) == 5
    # a bool array is in the space (gymnasium's contains) and indexes as its 0 / 1 values
    assert spaces.MultiBinary(3).contains(np.array([True, False, True]))
    assert index(np.array([True, False, True])) == 5 and index((True, 0, 1)) == 5
    assert observation_index(spaces.Tuple((D(2), D(3))))[1]((True, 2)) == 5
    assert observation_index(spaces.MultiBinary([2, 2])) is None  # 2-D


@pytest.mark.parametrize(
    "f", [lambda r, c: (r + 0.5, c), lambda r, c: (r, c, 0), lambda r, c: 4 * r + c, lambda r, c: (r + 4, c)]
)
def test_learn_and_evaluate_refuse_an_observation_outside_the_space_by_name(f):
    """An observation outside the Tuple space is refused naming it, by learn and by evaluate with
    an array and with a callable policy (a callable was handed state -1 and ran on)."""
    env = _Shaped(gym.make("FrozenLake-v1"), f)
    agent = LSVIUCB(FeatureMap.one_hot(16, 4, H=5), NonPrivate(), episodes=5, seed=0)
    with pytest.raises(ShapeError, match=r"is not in the environment's observation space Tuple"):
        privrl.learn(agent, env, progress=False)
    assert agent.k == 0
    seen = []
    calls = [agent.policy(), lambda s, h: seen.append(s) or 0]
    for policy in calls:
        with pytest.raises(ShapeError, match=r"is not in the environment's observation space Tuple"):
            privrl.evaluate(policy, env, episodes=2, H=5)
    assert seen == []


def test_evaluate_hands_a_callable_the_index_on_a_shifted_discrete():
    """evaluate's docstring said a callable gets "the observation itself"; on a Discrete(n, start)
    it is handed obs - start, the index learn uses (the docstring now says so)."""

    class Shifted(gym.ObservationWrapper):
        def __init__(self, env):
            super().__init__(env)
            self.observation_space = spaces.Discrete(16, start=10)

        def observation(self, obs):
            return int(obs) + 10

    seen = []
    privrl.evaluate(lambda s, h: seen.append(s) or 0, Shifted(gym.make("FrozenLake-v1")), episodes=3, H=4)
    assert seen and all(0 <= s < 16 for s in seen) and seen[0] == 0  # FrozenLake starts in state 0
    doc = privrl.evaluate.__doc__
    assert "a callable is handed that" in doc and "obs - start" in doc


class _ZeroD(gym.Env):
    """Observations that are 0-d numpy arrays, np.array(start + t % 4), of a Discrete(4, start)."""

    action_space = spaces.Discrete(2)

    def __init__(self, start: int):
        self.start = start
        self.observation_space = spaces.Discrete(4, start=start)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.array(self.start), {}

    def step(self, action):
        self.t += 1
        return np.array(self.start + self.t % 4), float(action), self.t >= 3, False, {}


@pytest.mark.parametrize("start", [0, 1])
def test_a_discrete_observation_that_is_a_0d_array_is_the_integer_it_holds(start):
    """gymnasium's Discrete space contains np.array(3): learn and evaluate (an array, a callable, an
    agent) refused it ("must give an integer state index ..., got array(0)", or on a shifted
    Discrete "the observation array(1) is not in the environment's observation space"); they take it
    as the integer it holds, and a callable policy is handed that int. A 0-d float array is still
    refused."""
    env = _ZeroD(start)
    assert env.observation_space.contains(np.array(start))
    agent = LSVIUCB(FeatureMap.one_hot_for(env, 3), NonPrivate(), episodes=5, seed=0)
    assert agent.S == 5  # no transition table: one_hot_for adds the absorbing state
    res = privrl.learn(agent, env, episodes=2, seed=0, progress=False)
    assert res.episodes == 2 and agent.k == 2
    seen = []
    value = privrl.evaluate(lambda s, h: seen.append(s) or 1, env, episodes=2, seed=0, H=3).value
    assert value == 3.0 and seen == [0, 1, 2] * 2 and all(type(s) is int for s in seen)
    assert privrl.evaluate(np.ones((3, 4), dtype=int), env, episodes=2, seed=0).value == 3.0
    privrl.evaluate(agent, env, episodes=2, seed=0)
    with pytest.raises(ShapeError, match=r"state index in \[0, 5\).*got array\(0\.5\)"):
        privrl.learn(agent, env, episodes=1, state=lambda obs: np.array(0.5), progress=False)


def test_one_hot_for_a_space_past_64_bits_names_the_limit():
    """MultiBinary(64) has 2^64 states: the refusal said "S must be an integer >= 1, got
    18446744073709551616" (a false reason); it now gives the range the count is outside of."""

    class Env(gym.Env):
        observation_space = spaces.MultiBinary(64)
        action_space = spaces.Discrete(2)

    with pytest.raises(
        ShapeError, match=r"S must be an integer in \[1, 2\^63 - 1\], got 18446744073709551616"
    ):
        FeatureMap.one_hot_for(Env(), H=3)
    with pytest.raises(ShapeError, match=r"S must be an integer >= 1, got 0"):
        FeatureMap.one_hot(0, 2, H=3)


def test_an_action_space_starting_elsewhere_than_0_is_refused_with_the_wrapper_to_use():
    """A Discrete(2, start=1) action space with an agent of A = 2 was refused as if the feature map
    were another environment's; its remedy is to shift the actions, which the message now names
    (gymnasium's TransformAction), and the wrapped environment learns."""
    from gymnasium.wrappers import TransformAction

    class Shifted(gym.Env):
        observation_space = spaces.Discrete(3)
        action_space = spaces.Discrete(2, start=1)

        def reset(self, seed=None, options=None):
            super().reset(seed=seed)
            return 0, {}

        def step(self, a):
            assert a in (1, 2)
            return 2, float(a == 2), True, False, {}  # 2: only ever an end

    with pytest.raises(
        ShapeError, match=r"one_hot_for .*TransformAction\(env, lambda a: a \+ 1, Discrete\(2\)\)"
    ):
        FeatureMap.one_hot_for(Shifted(), 2)
    assert FeatureMap.one_hot_for(TransformAction(Shifted(), lambda a: a + 1, spaces.Discrete(2)), 2).A == 2
    agent = LSVIUCB(FeatureMap.one_hot(3, 2, 2), NonPrivate(), episodes=20, seed=0)
    with pytest.raises(
        ShapeError, match=r"start=1.*wrappers\.TransformAction\(env, lambda a: a \+ 1, Discrete\(2\)\)"
    ):
        privrl.learn(agent, Shifted(), seed=0)
    res = privrl.learn(agent, TransformAction(Shifted(), lambda a: a + 1, spaces.Discrete(2)), seed=0)
    assert res.episodes == 20


def test_a_vector_environment_is_refused_as_one():
    """gymnasium.make_vec("FrozenLake-v1", num_envs=2) (batched spaces: MultiDiscrete([4 4])
    actions, MultiDiscrete([16 16]) observations) was refused by learn as "discretize the
    environment first", by evaluate as a policy of the wrong number of states, and by
    FeatureMap.one_hot_for as the wrong spaces: none said that it is a vector environment."""
    if not hasattr(gym, "make_vec"):
        pytest.skip("gymnasium < 1.0 has no make_vec")
    vec = gym.make_vec("FrozenLake-v1", num_envs=2)
    agent = LSVIUCB(FeatureMap.one_hot(16, 4, 8), NonPrivate(), episodes=2, seed=0)
    calls = [
        lambda: privrl.learn(agent, vec, seed=0),
        lambda: privrl.evaluate(np.zeros((8, 16), int), vec, episodes=2, seed=0),
        lambda: FeatureMap.one_hot_for(vec, 8),
    ]
    for call in calls:
        with pytest.raises(TypeError, match=r"vector environment \(2 copies .* pass gymnasium.make\(id\)"):
            call()
    assert agent.k == 0
    vec.close()

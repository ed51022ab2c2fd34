"""learn's padding of an episode the environment ends before H, at an absorbing state of the feature
map (FeatureMap.absorbing) where the environment's last observation may be a state users act from
(Blackjack-v1: the hand after "stick"). Before, the padding self-looped at the last observation: the
padded rows (s_last, a, pad, s_last) mixed with the real transitions at that state, and the ending
transition's target read V_{h+1}(s_last), the value of a live state, where the episode is over."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

pytest.importorskip("gymnasium")

import gymnasium as gym
from gymnasium import spaces

import privrl
from privrl.agents import LSVIUCB
from privrl.common.errors import AssumptionError, AssumptionWarning, ShapeError
from privrl.envs import FeatureMap, as_gymnasium, from_gymnasium
from privrl.envs.gym import needs_absorbing
from privrl.experiment.environments import GymnasiumTask
from privrl.privacy import JointDP, NonPrivate

H = 4
STICK, BACK = 0.5, 0.25


class Stick(gym.Env):
    """A hand (state 0): "stick" (action 0) ends the episode paying STICK and observes the hand
    again, as Blackjack does; "hit" (1) pays 0 and goes to state 1, from which any action pays BACK
    and returns to the hand. No transition table: nothing tells learn that the last observation is
    over. Optimal over H = 4 steps: hit, (any), stick = 0 + BACK + STICK = 0.75 > STICK."""

    observation_space = spaces.Discrete(2)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.s = 0
        return 0, {}

    def step(self, a):
        if self.s == 1:
            self.s = 0
            return 0, BACK, False, False, {}
        if int(a) == 0:
            return 0, STICK, True, False, {}
        self.s = 1
        return 1, 0.0, False, False, {}


def exact_q(pad: float = 0.0, scale=lambda r: r) -> np.ndarray:
    """Q*_h(s, a) (H, 3, 2) of Stick by backward induction, with the episode's end as state 2
    paying `pad` per remaining step (the model learn's padding reproduces)."""
    Q = np.zeros((H, 3, 2))
    V = np.zeros(3)
    for h in reversed(range(H)):
        Q[h, 0, 0] = scale(STICK) + V[2]
        Q[h, 0, 1] = scale(0.0) + V[1]
        Q[h, 1, :] = scale(BACK) + V[0]
        Q[h, 2, :] = pad + V[2]
        V = Q[h].max(axis=1)
    return Q


class _Recorder:
    """The agent's Rust core, recording the trajectories learn hands to it."""

    def __init__(self, core):
        self._inner, self.seen = core, []

    def observe(self, states, actions, rewards):
        self.seen.append((states.copy(), actions.copy(), rewards.copy()))
        return self._inner.observe(states, actions, rewards)

    def __getattr__(self, name):
        return getattr(self._inner, name)


def _recorded(agent: LSVIUCB, env, **kw) -> list:
    rec = _Recorder(agent._core)
    agent._core = rec
    try:
        privrl.learn(agent, env, progress=False, **kw)
    finally:
        agent._core = rec._inner
    return rec.seen


def test_one_hot_for_adds_the_absorbing_state_exactly_where_it_is_needed():
    stick = FeatureMap.one_hot_for(Stick(), H)
    assert (stick.S, stick.A, stick.d, stick.absorbing) == (3, 2, 6, 2)
    np.testing.assert_array_equal(stick.features, np.eye(6).reshape(3, 2, 6))
    jack = FeatureMap.one_hot_for(gym.make("Blackjack-v1"), H)
    assert (jack.S, jack.d, jack.absorbing) == (32 * 11 * 2 + 1, 2 * (32 * 11 * 2 + 1), 32 * 11 * 2)
    # tables whose terminal states are only entered by the transition that ends the episode: as before
    for gid, kw, S, A in [
        ("FrozenLake-v1", {"is_slippery": False}, 16, 4),
        ("FrozenLake-v1", {"is_slippery": True}, 16, 4),
        ("FrozenLake-v1", {"map_name": "8x8"}, 64, 4),
        ("CliffWalking-v1", {}, 48, 4),
        ("Taxi-v4", {}, 500, 6),
    ]:
        env = gym.make(gid, **kw)
        fm = FeatureMap.one_hot_for(env, H)
        assert not needs_absorbing(env) and fm.absorbing is None, gid
        assert (fm.S, fm.A, fm.d) == (S, A, S * A), gid
        assert fm.fingerprint() == FeatureMap.one_hot(S, A, H).fingerprint()
    # a privrl model behind as_gymnasium never ends an episode (it truncates at its H)
    from privrl.envs import RiverSwim

    assert FeatureMap.one_hot_for(as_gymnasium(RiverSwim(S=4, H=5)), H).absorbing is None
    # the choice can be forced either way
    assert FeatureMap.one_hot_for(Stick(), H, absorbing=False).S == 2
    assert FeatureMap.one_hot_for(gym.make("FrozenLake-v1"), H, absorbing=True).absorbing == 16


def test_one_hot_for_takes_an_id_as_from_gymnasium_does():
    """from_gymnasium("FrozenLake-v1", H) works, but FeatureMap.one_hot_for("FrozenLake-v1", H)
    raised ShapeError "the environment has None and None"; any other object without gymnasium
    spaces is a TypeError naming what to pass."""
    by_id = FeatureMap.one_hot_for("FrozenLake-v1", H)
    made = FeatureMap.one_hot_for(gym.make("FrozenLake-v1"), H)
    assert by_id.fingerprint() == made.fingerprint() and by_id.name == made.name == "FrozenLake-v1"
    assert FeatureMap.one_hot_for("Blackjack-v1", H).absorbing == 32 * 11 * 2
    # a privrl id (gymnasium: "Namespace privrl not found") names the model and its one-hot map
    with pytest.raises(ShapeError, match=r"privrl.envs.RiverSwim\(...\), .* FeatureMap.one_hot\(mdp.S"):
        FeatureMap.one_hot_for("privrl/RiverSwim-v0", H)
    for bad in (None, 3, {"id": "FrozenLake-v1"}):
        with pytest.raises(TypeError, match=r"a gymnasium environment \(gymnasium.make\(id\)\) or its id"):
            FeatureMap.one_hot_for(bad, H)


def _with_table(P: dict, init: list) -> gym.Env:
    env = Stick()
    env.P, env.initial_state_distrib = P, np.asarray(init, dtype=float)
    return env


def test_a_table_ending_in_a_live_state_gets_one_where_from_gymnasium_refuses_it():
    """Stick with its own table: "stick" ends in the hand, a state episodes act from (from_gymnasium
    refuses it); the same game ending in a separate state 2 is absorbed by the model exactly."""
    live = {
        0: {0: [(1.0, 0, STICK, True)], 1: [(1.0, 1, 0.0, False)]},
        1: {0: [(1.0, 0, BACK, False)], 1: [(1.0, 0, BACK, False)]},
    }
    env = _with_table(live, [1.0, 0.0])
    assert needs_absorbing(env) and FeatureMap.one_hot_for(env, H).absorbing == 2
    with pytest.raises(AssumptionError, match=r"state 0 .* an initial state"):
        from_gymnasium(env, H)
    apart = copy.deepcopy(live)
    apart[0][0] = [(1.0, 2, STICK, True)]
    apart[2] = {0: [(1.0, 2, 0.0, True)], 1: [(1.0, 2, 0.0, True)]}
    env = _with_table(apart, [1.0, 0.0, 0.0])
    env.observation_space = spaces.Discrete(3)
    assert not needs_absorbing(env) and FeatureMap.one_hot_for(env, H).absorbing is None
    model = from_gymnasium(env, H)  # accepted: its terminal state is only terminal
    np.testing.assert_allclose(model.optimal_values()[0, 0], exact_q()[0, 0].max())


@pytest.mark.parametrize("rescale", [None, lambda r: (r + 1) / 2])
def test_the_padded_steps_go_to_the_absorbing_state(rescale):
    """Every trajectory learn hands the agent: the step that ends the episode goes to the absorbing
    state, the padded steps stay there paying reward(0.0), no other step is there; so every row
    (s_h, a_h, r_h, s_{h+1}) is a transition of the ended model: r_h + V*_{h+1}(s_{h+1}) = Q*_h(s_h,
    a_h), exactly (the game is deterministic). With self-loops at the hand, the ending row read
    V*_{h+1}(hand) > 0 and a padded row Q*_h(hand, a) != r + V*_{h+1}(hand)."""
    fm = FeatureMap.one_hot_for(Stick(), H)
    agent = LSVIUCB(fm, NonPrivate(), batches="every", episodes=200, seed=0)
    pad = 0.0 if rescale is None else rescale(0.0)
    seen = _recorded(agent, Stick(), seed=1, reward=rescale)
    scale = (lambda r: r) if rescale is None else rescale
    Q = exact_q(pad, scale)
    V = np.vstack([Q.max(axis=2), np.zeros(3)])
    z, ended = fm.absorbing, 0
    for states, actions, rewards in seen:
        ends = [h for h in range(H) if states[h] == 0 and actions[h] == 0]  # "stick"
        end = ends[0] if ends else H
        ended += end < H - 1
        assert (states[: end + 1] != z).all() and (states[end + 1 :] == z).all()
        np.testing.assert_array_equal(rewards[end + 1 :], pad)
        for h in range(H):
            s, a, s2 = states[h], actions[h], states[h + 1]
            assert rewards[h] + V[h + 1, s2] == pytest.approx(Q[h, s, a], abs=1e-12)
    assert ended > 20  # the padding was exercised, at several steps


def test_the_values_learned_at_the_hand_are_the_exact_ones():
    """Non-private LSVI-UCB's released weights on the optimal path (hit at the hand at h = 0, the
    other state at h = 1, stick at the hand at h = 2) agree with the exact Q*, and its greedy
    policy is optimal: its value is V*_1 = BACK + STICK. With the self-loops (absorbing=False, the
    old padding) the hand's values are dragged towards the padding's 0 at h >= 1 (Q(hand, stick) at
    h = 2 about 0.01 for 0.5) and the ending row's target read the hand's value, so the agent
    learned to stick at once (value STICK)."""
    Q = exact_q()
    values = {}
    for absorbing in (True, False):
        fm = FeatureMap.one_hot_for(Stick(), H, absorbing=absorbing)
        agent = LSVIUCB(fm, NonPrivate(), batches="every", episodes=500, seed=0)
        if absorbing:
            privrl.learn(agent, Stick(), seed=1, progress=False)
        else:  # the self-loops at the hand, warned of
            with pytest.warns(AssumptionWarning, match="ended at state 0, a state users also act from"):
                privrl.learn(agent, Stick(), seed=1, progress=False)
        w = agent.release().weights.reshape(H, fm.S, fm.A)
        path = np.array([w[0, 0, 1], w[1, 1, 0], w[1, 1, 1], w[2, 0, 0]])
        greedy = privrl.evaluate(agent.greedy_policy(), Stick(), episodes=5, seed=0, H=H).value
        values[absorbing] = path, greedy
    exact = np.array([Q[0, 0, 1], Q[1, 1, 0], Q[1, 1, 1], Q[2, 0, 0]])
    np.testing.assert_allclose(values[True][0], exact, atol=0.02)
    assert values[True][1] == pytest.approx(Q[0, 0].max()) == pytest.approx(BACK + STICK)
    assert abs(values[False][0][3] - Q[2, 0, 0]) > 0.25 and values[False][1] == pytest.approx(STICK)


def test_evaluate_pads_as_learn_does():
    """The next user's return through learn (padding at the absorbing state, reward(0.0) a step) is
    evaluate's value of that user's policy, an (H, S + 1) table evaluate takes on the environment's
    S observations; the game is deterministic, so one episode each."""
    rescale = lambda r: (r + 1) / 2  # noqa: E731  pad 0.5
    fm = FeatureMap.one_hot_for(Stick(), H)
    agent = LSVIUCB(fm, NonPrivate(), batches="every", episodes=400, seed=0)
    privrl.learn(agent, Stick(), episodes=399, seed=1, reward=rescale, progress=False)
    pi = agent.policy()
    assert pi.shape == (H, 3)
    ev = privrl.evaluate(agent, Stick(), episodes=1, seed=0, reward=rescale)
    assert privrl.evaluate(pi, Stick(), episodes=1, seed=0, reward=rescale) == ev
    (states, _, rewards), *_ = _recorded(agent, Stick(), seed=2, reward=rescale)
    assert (states == fm.absorbing).any()  # it ended early: padded
    assert rewards.sum() == ev.value
    assert ev.value == pytest.approx(exact_q(0.5, rescale)[0, 0].max())  # the optimal policy, 2.375


def test_frozen_lake_learns_as_on_the_plain_one_hot_map():
    """FrozenLake (its holes and goal only terminal): one_hot_for gives the plain map, and learn on it
    is bit for bit learn on FeatureMap.one_hot(16, 4, H), self-loops at the holes and goal as before,
    slippery or not, private or not; the forced absorbing map learns otherwise on the same seeds."""
    for slippery in (False, True):
        for privacy in (NonPrivate(), JointDP(10.0, 1e-5)):
            env = gym.make("FrozenLake-v1", is_slippery=slippery)
            runs = []
            for fm in (FeatureMap.one_hot_for(env, 8), FeatureMap.one_hot(16, 4, 8)):
                agent = LSVIUCB(fm, privacy, batches=10, episodes=300, seed=0)
                lake = gym.make("FrozenLake-v1", is_slippery=slippery)
                res = privrl.learn(agent, lake, seed=1, progress=False)
                runs.append((res.returns, res.terminated_early, agent.greedy_policy()))
            np.testing.assert_array_equal(runs[0][0], runs[1][0])
            np.testing.assert_array_equal(runs[0][2], runs[1][2])
            assert runs[0][1] == runs[1][1] > 100  # the padding ran


def test_an_observation_mapped_to_the_absorbing_state_is_refused():
    fm = FeatureMap.one_hot_for(Stick(), H)
    agent = LSVIUCB(fm, NonPrivate(), episodes=5, seed=0)
    with pytest.raises(ShapeError, match="gave 2, the feature map's absorbing state"):
        privrl.learn(agent, Stick(), seed=0, state=lambda o: 2, progress=False)
    with pytest.raises(ShapeError, match="absorbing state"):  # after the first step too
        privrl.learn(agent, Stick(), seed=0, state=lambda o: 2 if o == 1 else 0, progress=False)
    assert agent.k == 0
    # the environment's 2 observations fit the map's 3 states only through the last, absorbing one
    other = LSVIUCB(FeatureMap(np.eye(6).reshape(3, 2, 6), H, absorbing=0), NonPrivate(), episodes=5)
    with pytest.raises(ShapeError, match=r"\(2 states\), the agent's feature map has S = 3"):
        privrl.learn(other, Stick(), seed=0)


def test_a_users_own_map_declares_its_absorbing_state(tmp_path):
    """FeatureMap(features, H, absorbing=i): checked, in the fingerprint and repr, kept by copies
    and by a saved agent; learn pads there with the user's own state= mapping."""
    phi = np.zeros((3, 2, 2))
    phi[0, :, 0] = phi[1, :, 1] = 1.0  # the absorbing state 2 with zero features: ||phi|| <= 1
    fm = FeatureMap(phi, H, absorbing=2)
    assert fm.absorbing == 2 and "absorbing=2" in repr(fm)
    assert fm.fingerprint() != FeatureMap(phi, H).fingerprint()
    assert set(FeatureMap(phi, H).fingerprint()) == {"horizon", "features"}  # as before
    assert copy.deepcopy(fm).absorbing == 2
    for bad in (3, -1, 1.0, True, "2"):
        with pytest.raises(ShapeError, match="absorbing"):
            FeatureMap(phi, H, absorbing=bad)
    agent = LSVIUCB(fm, NonPrivate(), episodes=50, seed=0)
    seen = _recorded(agent, Stick(), episodes=20, seed=1, state=lambda o: 1 - int(o))
    assert any((states == 2).any() for states, _, _ in seen)
    path = tmp_path / "agent.pkl"
    agent.save(path)
    again = LSVIUCB.load(path)
    assert again.env.absorbing == 2
    privrl.learn(again, Stick(), episodes=5, seed=2, state=lambda o: 1 - int(o), progress=False)


def test_blackjack_pads_at_its_absorbing_state_and_the_sweep_task_too():
    env = gym.make("Blackjack-v1")
    agent = LSVIUCB(FeatureMap.one_hot_for(env, H), NonPrivate(), episodes=300, seed=0)
    seen = _recorded(agent, env, seed=1, reward=lambda r: (r + 1) / 2)
    z = 32 * 11 * 2
    ended = 0
    for states, _, rewards in seen:
        after = np.nonzero(states == z)[0]  # from the step after the one that ended the hand
        if after.size:
            ended += 1
            assert (states[after[0] :] == z).all() and (rewards[after[0] :] == 0.5).all()
    assert ended > 250  # nearly every hand ends within H = 4 steps
    jack, lake = GymnasiumTask("Blackjack-v1", H, [-1, 1]), GymnasiumTask("FrozenLake-v1", H)
    assert jack.features.absorbing == z and jack.fingerprint()["padding"] == "absorbing"
    assert lake.features.absorbing is None and "padding" not in lake.fingerprint()


def test_a_sweep_learning_blackjack_gets_new_run_ids(monkeypatch):
    """The run ids of a table learning Blackjack by interaction carry the padding (a results folder
    of the self-loop era is not resumed as this one's); FrozenLake's, whose runs are as before, and
    a model's stay as they were. The run streams are keyed without it: the same numbers."""
    from privrl.experiment import environments
    from privrl.experiment.parsing import build_config

    def ids(env):
        config = build_config({"env": env, "agents": {"a": {"algorithm": "LSVI-UCB", "privacy": "jdp"}}})
        return [(s.run_id, s.key) for s in config.studies[0].runs(config.root_seed)]

    jack = {"name": "gymnasium", "id": "Blackjack-v1", "H": 4, "model": False, "reward_range": [-1, 1]}
    lake = {"name": "gymnasium", "id": "FrozenLake-v1", "H": 8, "is_slippery": False, "model": False}
    model = {"name": "gymnasium", "id": "FrozenLake-v1", "H": 8, "is_slippery": False}
    assert environments.learned_padding(jack) == "absorbing"
    assert environments.learned_padding(lake) is None and environments.learned_padding(model) is None
    now = {k: ids(v) for k, v in (("jack", jack), ("lake", lake), ("model", model))}
    monkeypatch.setattr(environments, "learned_padding", lambda spec: None)  # the ids without it
    before = {k: ids(v) for k, v in (("jack", jack), ("lake", lake), ("model", model))}
    assert now["lake"] == before["lake"] and now["model"] == before["model"]
    assert all(a[0] != b[0] and a[1] == b[1] for a, b in zip(now["jack"], before["jack"], strict=True))


def test_learn_warns_when_an_own_map_without_an_absorbing_state_self_loops_where_users_act():
    """Blackjack-v1 on a map of one's own without an absorbing state (FeatureMap.one_hot(704, 2, 4)):
    a hand that ends is padded with self-loops at the player's hand, a state other users act from,
    which mixes the padded steps into that hand's real transitions (docs/harness.md). It ran
    silently; learn now warns once, naming the state and the maps that have an absorbing state.
    one_hot_for's map (absorbing state added) and FrozenLake (holes and goal only terminal) are quiet."""
    env = gym.make("Blackjack-v1")
    agent = LSVIUCB(FeatureMap.one_hot(704, 2, 4), NonPrivate(), episodes=50, seed=0)
    with pytest.warns(AssumptionWarning, match=r"ended at state \d+, a state users also act from") as seen:
        privrl.learn(agent, env, seed=0, reward=lambda r: (r + 1) / 2)
    assert len([w for w in seen if w.category is AssumptionWarning]) == 1
    assert {w.filename for w in seen if w.category is AssumptionWarning} == {__file__}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        own = LSVIUCB(FeatureMap.one_hot_for(env, 4), NonPrivate(), episodes=50, seed=0)
        privrl.learn(own, env, seed=0, reward=lambda r: (r + 1) / 2)
        lake = gym.make("FrozenLake-v1")
        privrl.learn(LSVIUCB(FeatureMap.one_hot(16, 4, 8), NonPrivate(), episodes=200, seed=0), lake, seed=0)

"""A researcher's own environments through privrl's extension points (from_gymnasium on a
hand-written toy-text table, FeatureMap, LinearMixtureMDP, ContextualBandit): each checked against
an independent numpy computation on the model the test builds."""

from __future__ import annotations

import numpy as np
import pytest

from privrl.exceptions import AssumptionError

gymnasium = pytest.importorskip("gymnasium")


class Corridor(gymnasium.Env):
    """States 0..N-1 (and, with `end_state`, a separate terminal state N). Action 0 walks right
    (reward 0, staying at the last state); action 1 cashes out: the episode ends with reward
    s / (N - 1). Without `end_state` the terminated transition lists the current state as its
    next state (as many hand-written tables do)."""

    def __init__(self, N: int = 4, end_state: bool = False) -> None:
        self.N = N
        n = N + 1 if end_state else N
        self.observation_space = gymnasium.spaces.Discrete(n)
        self.action_space = gymnasium.spaces.Discrete(2)
        self.P = {
            s: {
                0: [(1.0, min(s + 1, N - 1), 0.0, False)],
                1: [(1.0, N if end_state else s, s / (N - 1), True)],
            }
            for s in range(N)
        }
        if end_state:
            self.P[N] = {a: [(1.0, N, 0.0, True)] for a in range(2)}
        self.initial_state_distrib = np.eye(n)[0]
        self.s = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.s = 0
        return self.s, {}

    def step(self, action):
        _, self.s, r, term = self.P[self.s][int(action)][0]
        return self.s, r, term, False, {}


def _episode_value(table: dict, init: np.ndarray, H: int, A: int, pad: float = 0.0) -> float:
    """Optimal expected return of H steps of the table's episodes: a terminated transition ends
    the episode, whose remaining steps pay `pad` (the absorbing convention, stated independently)."""
    S = len(init)
    V = np.zeros(S)  # value with h steps left, the episode still running
    for left in range(1, H + 1):
        V = np.array(
            [
                max(
                    sum(p * (r + (pad * (left - 1) if term else V[ns])) for p, ns, r, term in table[s][a])
                    for a in range(A)
                )
                if s in table
                else 0.0
                for s in range(S)
            ]
        )
    return float(init @ V)


def test_from_gymnasium_refuses_a_terminal_state_an_episode_can_be_in():
    """A "cash out" action whose terminated transition lists the current state made every state
    absorbing: the model's V* was 0 for an environment worth 1 (a silent wrong answer)."""
    from privrl.envs import from_gymnasium

    env = Corridor(4)
    with pytest.raises(AssumptionError, match=r"state 0 .* terminated transition ends \(P\[0\]\[1\]\)"):
        from_gymnasium(env, H=5)


def test_from_gymnasium_checks_every_transition_reward_and_says_when_it_assumes_the_start():
    """A transition paying outside [0, 1] is refused even when the mean over the listed
    transitions is inside (privrl.learn would clip it: the model would not pay what the agent is
    paid); a table without initial_state_distrib gets the uniform start with an AssumptionWarning
    (env.reset may start elsewhere), and none once init_dist is given."""
    from privrl.envs import from_gymnasium
    from privrl.exceptions import AssumptionWarning

    env = Corridor(3, end_state=True)
    env.P[1][0] = [(0.5, 2, 1.5, False), (0.5, 0, -0.5, False)]  # mean 0.5, each outside [0, 1]
    with pytest.raises(AssumptionError, match=r"P\[1\]\[0\] pays 1\.5 on its move to state 2"):
        from_gymnasium(env, H=3)
    with pytest.raises(AssumptionError, match=r"pays -0\.25 \(rescaled from -0\.5\) on its move to state 0"):
        from_gymnasium(env, H=3, reward=lambda r: r / 2)  # 1.5 / 2 is inside, -0.5 / 2 is not
    env = Corridor(3, end_state=True)
    del env.initial_state_distrib
    uniform = "no initial_state_distrib: the model starts uniformly over its 3 non-absorbing"
    with pytest.warns(AssumptionWarning, match=uniform):
        mdp = from_gymnasium(env, H=3)
    np.testing.assert_array_equal(mdp.init_dist, [1 / 3, 1 / 3, 1 / 3, 0.0])  # not the terminal state
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", AssumptionWarning)
        mdp = from_gymnasium(env, H=3, init_dist=np.eye(4)[0])
    assert mdp.initial_value(mdp.optimal_values()) == pytest.approx(_episode_value(env.P, np.eye(4)[0], 3, 2))


def test_from_gymnasium_own_table_with_a_separate_terminal_state_is_exact():
    from privrl.envs import from_gymnasium

    env = Corridor(4, end_state=True)
    for H in (1, 3, 4, 6):
        mdp = from_gymnasium(env, H=H)
        want = _episode_value(env.P, env.initial_state_distrib, H, 2)
        assert mdp.initial_value(mdp.optimal_values()) == pytest.approx(want, abs=1e-12)
    assert want == 1.0  # walk to the end in 3 steps, cash out there


def test_from_gymnasium_starting_in_a_state_that_already_ends_every_episode_is_exact():
    """A hole of FrozenLake ends the episode whatever the action, paying 0: absorbing it is
    exact, so an initial distribution on it is no clash (values from the table's own episodes)."""
    from privrl.envs import from_gymnasium

    env = gymnasium.make("FrozenLake-v1", is_slippery=True)
    table = env.unwrapped.P
    for start in (0, 5, 14):  # the start, a hole, next to the goal
        init = np.eye(16)[start]
        mdp = from_gymnasium(env, H=6, init_dist=init)
        want = _episode_value(table, init, 6, 4)
        assert mdp.initial_value(mdp.optimal_values()) == pytest.approx(want, abs=1e-12)


def test_from_gymnasium_names_the_table_entry_that_is_missing_or_not_a_distribution():
    """A hand-written table listing only some states was refused as "P[h=0, s=1, a=0, :] sums
    to 0" (the model's row, a step the table does not have), not as the table's own entry."""
    from privrl.envs import from_gymnasium

    env = Corridor(4, end_state=True)
    del env.P[2]  # a state the author thought unreachable
    with pytest.raises(AssumptionError, match=r"table P\[2\]\[0\] is missing"):
        from_gymnasium(env, H=3)
    env = Corridor(4, end_state=True)
    env.P[1][0] = [(0.5, 2, 0.0, False), (0.4, 1, 0.0, False)]
    with pytest.raises(AssumptionError, match=r"table P\[1\]\[0\] lists probabilities summing to 0\.9\b"):
        from_gymnasium(env, H=3)


def test_classification_bandit_of_constant_features_says_why_none_is_left():
    from privrl.envs import ContextualBandit
    from privrl.exceptions import ShapeError

    X, y = np.full((20, 3), 2.5), np.arange(20) % 2
    with pytest.raises(ShapeError, match=r"every one of X's 3 columns is constant"):
        ContextualBandit.from_classification(X, y, bias=False)
    # the intercept alone is a context: every row the same x = [1/sqrt(2)]
    env = ContextualBandit.from_classification(X, y)
    assert env.p == 1 and np.allclose(env.contexts, 2**-0.5)
    env = ContextualBandit.from_classification(X, y, standardize=False, bias=False)
    assert env.p == 3 and np.allclose(np.linalg.norm(env.contexts, axis=1), 1.0)


def test_from_gymnasium_warns_when_the_env_truncates_before_h():
    """The model has no time limit: with a TimeLimit of 4 steps and H = 8 its optimal value was
    1.0 while every episode of the environment (learn's, evaluate's) returned 0, without a word."""
    import privrl
    from privrl.envs import from_gymnasium
    from privrl.exceptions import AssumptionWarning

    env = gymnasium.make("FrozenLake-v1", is_slippery=False, max_episode_steps=4)
    with pytest.warns(AssumptionWarning, match=r"truncates its episodes after 4 steps .* H = 8"):
        mdp = from_gymnasium(env, H=8)
    pi = mdp.optimal_policy()
    assert privrl.evaluate(pi, mdp).value == 1.0
    with pytest.warns(AssumptionWarning, match=r"truncates its episodes after 4 steps .* H = 8"):
        assert privrl.evaluate(pi, env, episodes=5, seed=0).value == 0.0  # what the warning says
    mdp = from_gymnasium(gymnasium.make("FrozenLake-v1", is_slippery=False, max_episode_steps=8), H=8)
    assert privrl.evaluate(mdp.optimal_policy(), mdp).value == 1.0  # H <= the limit: no warning


class _ClosedCorridor(Corridor):
    """A Corridor that counts its close() calls (class-wide: from_gymnasium makes its own)."""

    closed = 0

    def close(self):
        type(self).closed += 1
        super().close()


def test_from_gymnasium_closes_the_env_it_made_from_an_id_but_not_one_passed_in():
    """from_gymnasium("SomeId", H) made the environment and never closed it (a leaked window or
    file of a rendering env); an environment the caller passes in stays theirs, open."""
    from privrl.envs import from_gymnasium
    from privrl.exceptions import AssumptionError

    env_id = "privrl-test/ClosedCorridor-v0"
    gymnasium.register(env_id, entry_point=_ClosedCorridor, kwargs={"end_state": True})
    try:
        _ClosedCorridor.closed = 0
        mdp = from_gymnasium(env_id, H=3, reward=lambda r: r)
        assert mdp.S == 5 and _ClosedCorridor.closed == 1
        with pytest.raises(AssumptionError, match="reward"):  # closed on an error too
            from_gymnasium(env_id, H=3, reward=lambda r: r + 5.0)
        assert _ClosedCorridor.closed == 2
        mine = _ClosedCorridor(end_state=True)
        from_gymnasium(mine, H=3)
        assert _ClosedCorridor.closed == 2  # the caller's env is not closed
        mine.step(0)  # and still usable
    finally:
        gymnasium.registry.pop(env_id, None)


def test_rewards_just_outside_the_unit_interval_are_shown_as_such_and_means_take_the_rewards_rule():
    """A reward or a bandit mean a hair above 1 is named with digits that show it (".6g" printed
    1 + 1e-8 as "= 1 is outside [0, 1]"), and a bandit's means follow FiniteMDP's rule for
    rewards: round-off within 1e-9 is clipped (it was refused, with "means[0, 1] = 1"), beyond it
    refused; the clipped bandit's exact regret agrees with numpy's on the clipped means."""
    from privrl.envs import ContextualBandit, FiniteMDP, from_gymnasium

    P = np.full((1, 2, 2, 2), 0.5)
    R = np.zeros((1, 2, 2))
    R[0, 1, 0] = 1 + 1e-8
    with pytest.raises(AssumptionError, match=r"R\[h=0, s=1, a=0\] = 1\.00000001 is outside \[0, 1\]"):
        FiniteMDP(P, R, [0.5, 0.5])
    with pytest.raises(AssumptionError, match=r"means\[0, 1\] = 1\.00000001$"):
        ContextualBandit([[0.5]], [[0.2, 1 + 1e-8]])
    means = np.array([[0.2, 0.1 * 3 / 0.3], [1.0, -1e-17]])  # 1.0000000000000002 and a negative zero-ish
    env = ContextualBandit([[0.5], [0.25]], means)
    np.testing.assert_array_equal(env.means, [[0.2, 1.0], [1.0, 0.0]])
    assert float(np.max(np.abs(env.means - means))) <= 1e-9  # round-off only
    np.testing.assert_array_equal(env.regret(np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])), [0.8, 0, 0, 1])
    table = Corridor(3, end_state=True)
    table.P[1][0] = [(1.0, 2, 1.0, False)]
    shown = r"pays 1\.0000001 \(rescaled from 1\.0\) on its move to state 2"
    with pytest.raises(AssumptionError, match=shown):
        from_gymnasium(table, H=3, reward=lambda r: r * (1 + 1e-7))


def test_a_reward_rescale_that_is_not_a_function_of_numbers_is_named_before_any_user():
    """learn, evaluate and from_gymnasium call the rescale on 0 (the padding's reward) before any
    user: a rescale that is not callable, or returns None (a function without `return`), a str or
    an array, is refused there naming the rescale (it was "'float' object is not callable" and
    "float() argument must be a string or a real number, not 'NoneType'"; a str "0.5" was read as
    0.5). A rescale returning a numpy scalar or a 0-d array still learns the same returns."""
    import privrl
    from privrl.agents import LSVIUCB
    from privrl.envs import FeatureMap, from_gymnasium
    from privrl.privacy import NonPrivate

    env = Corridor(3, end_state=True)
    agent = LSVIUCB(FeatureMap.one_hot(4, 2, 3), NonPrivate(), episodes=5, seed=0)

    def forgot_return(r):
        (r + 1) / 2

    with pytest.raises(TypeError, match=r"reward must be a callable .* got 2\.0"):
        privrl.learn(agent, env, seed=1, reward=2.0)
    for bad, shown in ((forgot_return, r"None \(NoneType\)"), (lambda r: "0.5", r"'0\.5' \(str\)")):
        with pytest.raises(TypeError, match=rf"reward\(0\.0\) returned {shown}, not a real number"):
            privrl.learn(agent, env, seed=1, reward=bad)
        with pytest.raises(TypeError, match=r"reward\(0\.0\) returned"):
            privrl.evaluate(np.zeros((3, 4), dtype=int), env, episodes=2, seed=0, reward=bad)
        with pytest.raises(TypeError, match=r"reward\(0\.0\) returned"):
            from_gymnasium(env, H=3, reward=bad)
    assert agent.k == 0  # refused before any user
    returns = {}
    for kind, rescale in (
        ("float", lambda r: r / 2),
        ("numpy", lambda r: np.float32(r) / 2),
        ("0-d", lambda r: np.asarray(r / 2)),
    ):
        fresh = LSVIUCB(FeatureMap.one_hot(4, 2, 3), NonPrivate(), episodes=5, seed=0)
        returns[kind] = privrl.learn(fresh, env, seed=1, reward=rescale).returns
    np.testing.assert_array_equal(returns["float"], returns["numpy"])
    np.testing.assert_array_equal(returns["float"], returns["0-d"])


def test_a_state_map_that_is_not_callable_is_named_before_any_user():
    """learn's and evaluate's state= was called on the first observation whatever it was: a str,
    None or an int raised Python's bare "'str' object is not callable", naming no argument. It is
    refused first, naming state; a callable map learns as before."""
    import privrl
    from privrl.agents import LSVIUCB
    from privrl.envs import FeatureMap
    from privrl.privacy import NonPrivate

    env = Corridor(3, end_state=True)
    agent = LSVIUCB(FeatureMap.one_hot(4, 2, 3), NonPrivate(), episodes=5, seed=0)
    for bad in ("obs", None, 3):
        with pytest.raises(TypeError, match=r"state must be a callable mapping an observation"):
            privrl.learn(agent, env, seed=1, state=bad)
        with pytest.raises(TypeError, match=r"state must be a callable mapping an observation"):
            privrl.evaluate(np.zeros((3, 4), dtype=int), env, episodes=2, seed=0, state=bad)
    assert agent.k == 0  # refused before any user
    fresh = LSVIUCB(FeatureMap.one_hot(4, 2, 3), NonPrivate(), episodes=5, seed=0)
    default = privrl.learn(fresh, env, seed=1).returns
    mapped = LSVIUCB(FeatureMap.one_hot(4, 2, 3), NonPrivate(), episodes=5, seed=0)
    np.testing.assert_array_equal(privrl.learn(mapped, env, seed=1, state=lambda o: int(o)).returns, default)


def test_rewards_and_theta_that_disagree_are_shown_with_the_digits_that_differ():
    """LinearMDP given both R and theta that disagree by more than 1e-9 names both values with
    the digits that tell them apart (".6g" printed "R[...] = 0.5 but phi^T theta_h = 0.5")."""
    from privrl.envs import LinearMDP

    phi, mu, theta = np.ones((2, 1, 1)), np.full((1, 2, 1), 0.5), np.array([[0.5]])
    shown = r"R\[h=0, s=0, a=0\] = 0\.50000001 but phi\^T theta_h = 0\.5: R and theta are inconsistent"
    with pytest.raises(AssumptionError, match=shown):
        LinearMDP(phi, mu, theta, [0.5, 0.5], R=np.full((1, 2, 1), 0.5 + 1e-8))
    env = LinearMDP(phi, mu, theta, [0.5, 0.5], R=np.full((1, 2, 1), 0.5 + 1e-10))  # round-off: taken
    np.testing.assert_allclose(env.R, 0.5 + 1e-10, rtol=0, atol=0)

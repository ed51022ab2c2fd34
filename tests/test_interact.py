"""Acting and evaluating (privrl.experiment.interact): agent.act, privrl.evaluate against an independent
backward induction and a Monte-Carlo estimate, and privrl.learn on a gymnasium environment whose
model the agent does not know (a FeatureMap)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import privrl
from privrl.agents import LSVIUCB, UCRLVTR
from privrl.envs import FeatureMap, RiverSwimMixture, as_gymnasium
from privrl.exceptions import AssumptionError, SeedError, ShapeError
from privrl.privacy import JointDP, NonPrivate

gym = pytest.importorskip("gymnasium")


def _backward_induction(P, R, init, pi):
    """V^pi_1 from the initial distribution, with plain loops (no privrl code)."""
    H, S = P.shape[:2]
    v = [0.0] * S
    for h in reversed(range(H)):
        v = [R[h, s, pi[h, s]] + sum(P[h, s, pi[h, s], t] * v[t] for t in range(S)) for s in range(S)]
    return sum(init[s] * v[s] for s in range(S))


def test_evaluate_is_exact_on_a_model_and_unbiased_without_one():
    env = RiverSwimMixture(S=4, H=6)
    rng = np.random.default_rng(0)
    for pi in (env.optimal_policy(), rng.integers(0, env.A, size=(env.H, env.S))):
        ev = privrl.evaluate(pi, env)
        assert ev.exact and ev.value == pytest.approx(
            _backward_induction(env.P, env.R, env.init_dist, pi), abs=1e-12
        )
        mc = privrl.evaluate(pi, as_gymnasium(env), episodes=4000, seed=1, H=env.H)
        assert not mc.exact and abs(mc.value - ev.value) < 4 * mc.stderr + 1e-9
    callable_policy = privrl.evaluate(lambda s, h: 1, as_gymnasium(env), episodes=10, seed=0, H=env.H)
    assert callable_policy.episodes == 10
    with pytest.raises(ShapeError):
        privrl.evaluate(np.zeros((2, 2)), as_gymnasium(env), episodes=2, H=env.H)


def test_act_follows_the_users_policy_and_checks_its_arguments():
    env = RiverSwimMixture(S=4, H=3)
    agent = UCRLVTR(env, NonPrivate(calibration="paper"), episodes=5, seed=0)
    twin = UCRLVTR(env, NonPrivate(calibration="paper"), episodes=5, seed=0)
    pi = twin.policy()
    assert [agent.act(s, h) for h in range(3) for s in range(4)] == [
        pi[h, s] for h in range(3) for s in range(4)
    ]
    assert agent.policy_updates == 1  # one plan per user, however many act() calls
    for bad in ((4, 0), (0, 3), (-1, 0), (0.5, 0), (True, 0)):
        with pytest.raises(ShapeError):
            agent.act(*bad)


def test_learn_on_a_gymnasium_env_without_a_model():
    """LSVI-UCB with the user's one-hot feature map learns FrozenLake (deterministic, H = 8). At
    K = 500 it found the goal on about half of the seeds (50% / 40% over 40 seeds, before / after
    the tie-breaking stream moved to Rust); at K = 1000 on all of 12 seeds for beta in 0.1..1."""
    env = gym.make("FrozenLake-v1", is_slippery=False)
    fmap = FeatureMap.one_hot(16, 4, H=8, name="FrozenLake one-hot")
    agent = LSVIUCB(
        fmap, NonPrivate(calibration="paper"), batches="every", episodes=1000, seed=0, beta=0.3, lam=1.0
    )
    seen = []
    res = privrl.learn(agent, env, seed=1, reference=1.0, callback=lambda k, r: seen.append(k))
    assert res.episodes == 1000 and seen == list(range(1, 1001)) and agent.k == 1000
    assert res.returns[:100].mean() == 0.0 and res.returns[-100:].mean() == 1.0  # it found the goal
    assert res.regret is not None and res.regret[-1] == pytest.approx(1000 - res.returns.sum())
    assert res.terminated_early > 0  # holes end episodes early: padded to H
    with pytest.raises(TypeError, match=r"privrl\.learn"):
        privrl.run(LSVIUCB(fmap, NonPrivate(calibration="paper"), episodes=2), fmap)
    with pytest.raises(TypeError, match="FeatureMap"):
        UCRLVTR(fmap, NonPrivate(calibration="paper"), episodes=2)  # a mixture agent needs the mixture model
    with pytest.raises(AssumptionError):
        FeatureMap(np.full((2, 2, 3), 1.0), H=2)  # ||phi|| = sqrt(3) > 1
    private = LSVIUCB(fmap, JointDP(10.0, 1e-5, calibration="paper"), episodes=50, seed=0)
    assert privrl.learn(private, env, seed=1).episodes == 50


def test_learn_refuses_spaces_that_do_not_fit_the_agent_before_the_first_user():
    fmap = FeatureMap.one_hot(16, 4, H=8, name="FrozenLake 4x4 one-hot")
    agent = LSVIUCB(fmap, NonPrivate(), episodes=5, seed=0)
    with pytest.raises(ShapeError, match=r"observation space is Discrete\(64\).*S = 16"):
        privrl.learn(agent, gym.make("FrozenLake-v1", map_name="8x8"), seed=0)
    with pytest.raises(ShapeError, match=r"action space is Discrete\(2\).*A = 4"):
        privrl.learn(agent, gym.make("CartPole-v1"), seed=0)
    cart = LSVIUCB(FeatureMap.one_hot(16, 2, H=8), NonPrivate(), episodes=5, seed=0)
    with pytest.raises(ShapeError, match=r"not state indices: pass state="):
        privrl.learn(cart, gym.make("CartPole-v1"), seed=0)
    assert agent.k == cart.k == 0  # refused before any user
    # a state map makes any observation space usable
    res = privrl.learn(cart, gym.make("CartPole-v1"), episodes=3, seed=0, state=lambda o: int(o[2] > 0))
    assert res.episodes == 3 and cart.k == 3


def test_evaluate_takes_an_agent():
    """privrl.evaluate(agent, env) values the policy of the user arriving now, exactly on a model
    and over the agent's horizon without one."""
    env = RiverSwimMixture(S=4, H=6)
    agent = UCRLVTR(env, NonPrivate(), episodes=50, seed=0)
    privrl.run(agent, env, episodes=40, seed=1)
    pi = agent.policy()
    assert privrl.evaluate(agent, env).value == privrl.evaluate(pi, env).value
    mc = privrl.evaluate(agent, as_gymnasium(env), episodes=300, seed=2)
    assert mc.value == privrl.evaluate(pi, as_gymnasium(env), episodes=300, seed=2, H=env.H).value


def test_a_bandit_is_evaluated_exactly_and_learned_through_run():
    """evaluate on a ContextualBandit is exact (users uniform over the contexts); learn on it is
    run (a model with exact regret), as on a FiniteMDP."""
    from privrl.agents import LinUCB
    from privrl.envs import ContextualBandit

    rng = np.random.default_rng(3)
    env = ContextualBandit.from_classification(rng.normal(size=(30, 3)), np.arange(30) % 3, seed=0)
    pi = rng.integers(0, env.A, size=(1, env.S))
    by_hand = sum(env.means[s, pi[0, s]] for s in range(env.S)) / env.S
    ev = privrl.evaluate(pi, env)
    assert ev.exact and ev.value == pytest.approx(by_hand, abs=1e-15)
    agent = LinUCB(env, NonPrivate(), episodes=40, seed=0, exploration="optimism", ties="lowest")
    assert privrl.evaluate(agent, env).value == privrl.evaluate(agent.policy(), env).value
    agent = LinUCB(env, NonPrivate(), episodes=40, seed=0)
    twin = LinUCB(env, NonPrivate(), episodes=40, seed=0)
    res = privrl.learn(agent, env, episodes=20, seed=1)
    np.testing.assert_array_equal(res.regret, privrl.run(twin, env, episodes=20, seed=1).regret)
    # a float table of whole numbers is taken, as a model takes it (the test at the end of this file)
    for bad in (np.zeros((2, env.S), int), np.full((1, env.S), env.A), np.full((1, env.S), 0.5)):
        with pytest.raises(ShapeError):
            privrl.evaluate(bad, env)


def test_run_with_nothing_left_says_so():
    env = RiverSwimMixture(S=4, H=3)
    agent = UCRLVTR(env, NonPrivate(), episodes=5, seed=0)
    privrl.run(agent, env, seed=1)
    with pytest.raises(ValueError, match=r"has run all 5 episodes it is calibrated for"):
        privrl.run(agent, env, seed=1)  # "all it has left" of nothing: not an empty result


def test_evaluating_mid_training_leaves_the_run_unchanged():
    """evaluate(agent, env) reads the arriving user's policy (under sampling its draw is that
    user's, cached): a twin that is evaluated between blocks of users runs bit for bit the same,
    and the value is the same on every call (a look: no stream consumed), LinUCB included. It is
    the draw the next user plays (the value of agent.policy()), so it moves between users."""
    from privrl.agents import LinUCB
    from privrl.envs import ContextualBandit, RandomLinearMDP

    rng = np.random.default_rng(3)
    bandit = ContextualBandit.from_classification(rng.normal(size=(30, 3)), np.arange(30) % 3, seed=0)
    for env, make in (
        (RandomLinearMDP(30, 4, 6, 5, seed=0), lambda e: LSVIUCB(e, JointDP(10, 1e-5), episodes=200, seed=1)),
        (RiverSwimMixture(S=6, H=10), lambda e: UCRLVTR(e, JointDP(10, 1e-5), episodes=200, seed=1,
                                                        exploration="sampling")),
        (bandit, lambda e: LinUCB(e, JointDP(10, 1e-5), episodes=200, seed=1, exploration="sampling")),
    ):  # fmt: skip
        plain, watched = make(env), make(env)
        assert watched.exploration == "sampling"
        for s in range(4):
            first = privrl.evaluate(watched, env).value
            assert [privrl.evaluate(watched, env).value for _ in range(3)] == [first] * 3
            assert first == privrl.evaluate(watched.policy(), env).value
            np.testing.assert_array_equal(
                privrl.run(plain, env, 50, seed=s).regret, privrl.run(watched, env, 50, seed=s).regret
            )


@pytest.mark.parametrize(
    "kw",
    [
        {"callback": lambda k, ret: None},
        {"reference": 100.0},
        {"callback": lambda k, ret: None, "reference": 100.0},
        {"reward": lambda r: r},
        {"state": lambda o: int(o)},
    ],
)
def test_learn_on_a_model_refuses_what_it_would_ignore(kw):
    """learn on a model runs privrl.run: the callback never ran and `reference` was dropped (the
    regret was the exact one); both (and reward / state) are refused, with the way to a callback."""
    env = RiverSwimMixture(S=4, H=5)
    agent = UCRLVTR(env, JointDP(1, 1e-5), episodes=50, seed=0)
    with pytest.raises(TypeError, match=r"environments only; use privrl\.run\(agent, env, callback"):
        privrl.learn(agent, env, seed=1, **kw)
    assert agent.k == 0  # refused before any user
    assert privrl.learn(agent, env, seed=1).episodes == 50


@pytest.mark.parametrize("H", [0, -3, 2.5, "8", True])
def test_evaluate_on_gymnasium_refuses_a_bad_horizon(H):
    """H = 0 and H = -3 returned Evaluation(value=0.0, stderr=0.0) silently."""
    from privrl.exceptions import PrivacyParameterError

    env = as_gymnasium(RiverSwimMixture(S=4, H=5))
    with pytest.raises(PrivacyParameterError, match="H must be an integer >= 1, got"):
        privrl.evaluate(lambda s, h: 0, env, episodes=10, H=H)


def test_evaluate_blames_a_missing_environment_and_checks_actions():
    """evaluate(pol, None) blamed the policy; an out-of-range action was gymnasium's bare KeyError."""
    from privrl.exceptions import IndexRangeError

    with pytest.raises(TypeError, match="env must be a privrl FiniteMDP, a ContextualBandit or a gymnasium"):
        privrl.evaluate(lambda s, h: 0, None)
    with pytest.raises(IndexRangeError, match=r"gave action 7 at state 0, step 0: the actions are 0\.\.3"):
        privrl.evaluate(lambda s, h: 7, gym.make("FrozenLake-v1"), episodes=3, H=5, seed=0)
    assert privrl.evaluate(lambda s, h: 1, gym.make("FrozenLake-v1"), episodes=3, H=5, seed=0).episodes == 3


def test_an_environment_whose_reset_or_step_is_not_callable_is_refused_up_front():
    """A class with step = 3 passed the reset / step check and failed at user 1 with the bare
    "'int' object is not callable"."""
    agent = LSVIUCB(FeatureMap.one_hot(4, 2, H=3), NonPrivate(), episodes=3, seed=0)
    for name in ("reset", "step"):
        parts = {
            "reset": lambda self, seed=None, options=None: (0, {}),
            "step": lambda self, a: (0, 0.0, False, False, {}),
        }
        env = type("Broken", (), {**parts, name: 3})()
        with pytest.raises(TypeError, match=rf"env\.{name} of Broken must be gymnasium's method, got a int"):
            privrl.learn(agent, env, episodes=2, seed=0)
        with pytest.raises(TypeError, match=rf"env\.{name} of Broken must be gymnasium's method"):
            privrl.evaluate(lambda s, h: 0, env, episodes=2, H=3, seed=0)
    assert agent.k == 0


def test_evaluate_on_gymnasium_takes_h_from_an_array_policy():
    """Without H, an (H, S) array policy on a gymnasium env failed with "an (H, S) int array with
    H = 10000": its first dimension is now H; a different H, or a non-integer array, is named."""
    env = RiverSwimMixture(S=4, H=5)
    pi = env.optimal_policy()
    ev = privrl.evaluate(pi, as_gymnasium(env), episodes=50, seed=3)
    assert ev.value == privrl.evaluate(pi, as_gymnasium(env), episodes=50, seed=3, H=env.H).value
    with pytest.raises(ShapeError, match=r"with H = 5 rows, but H = 4 was given \(omit H"):
        privrl.evaluate(pi, as_gymnasium(env), episodes=2, H=4)
    with pytest.raises(ShapeError, match=r"integer action indices, got dtype float64 with 1\.5 at \[0, 0\]"):
        privrl.evaluate(pi + 0.5, as_gymnasium(env), episodes=2)
    with pytest.raises(ShapeError, match=r"shape \(0, 4\)"):
        privrl.evaluate(np.zeros((0, 4), dtype=int), as_gymnasium(env), episodes=2)


def test_evaluate_array_policy_refuses_a_state_outside_its_table():
    """state(obs) = -1 read the table's last column (a negative index counts from the end)."""
    from privrl.exceptions import IndexRangeError

    env = RiverSwimMixture(S=4, H=5)
    pi = env.optimal_policy()
    for bad in (-1, 4):
        with pytest.raises(
            IndexRangeError, match=rf"state\(obs\) gave state {bad} at step 0: the policy has states 0\.\.3"
        ):
            privrl.evaluate(pi, as_gymnasium(env), episodes=2, seed=0, state=lambda o, bad=bad: bad)


def test_as_gymnasium_step_refuses_a_non_integer_or_out_of_range_action():
    """step(0.5) was action 0. Actions follow gymnasium's Discrete.contains: ints and numpy
    integers (scalars, 0-d arrays); floats, 1.0 included, are refused, as gymnasium refuses them."""
    from privrl.exceptions import IndexRangeError

    env = as_gymnasium(RiverSwimMixture(S=4, H=20))
    env.reset(seed=0)
    for bad in (0.5, 1.0, np.float64(1.0), "1", None, np.array([1])):
        assert not env.action_space.contains(bad)
        with pytest.raises(ShapeError, match=r"action must be an integer in 0\.\.1 .* got"):
            env.step(bad)
    for bad in (2, -1, np.int64(7)):
        with pytest.raises(IndexRangeError, match=r"action -?\d+ is not in 0\.\.1"):
            env.step(bad)
    assert env.unwrapped._h == 0  # nothing refused took a step
    for good in (1, np.int64(0), np.uint8(1), np.array(0), True):
        assert env.action_space.contains(good)
        env.step(good)
    assert env.unwrapped._h == 5


class _ShiftedChain(gym.Env):
    """Declares Discrete(4) observations but returns s + 0.7 (an env bug a user may have)."""

    observation_space = gym.spaces.Discrete(4)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.s = 0
        return self.s + 0.7, {}

    def step(self, a):
        self.s = min(self.s + 1, 3) if a == 1 else 0
        return self.s + 0.7, float(self.s == 3), False, False, {}


def test_learn_checks_observations_reference_and_seed():
    """Audit 4: with the default state=int, int() truncated the observation 3.7 to state 3 (and
    read "3" as 3); reference=nan gave an all-NaN regret; seed=-1 and a Generator failed inside
    gymnasium. The observation is now checked as an index, the reference as a finite value >= 0,
    and a Generator seeds the first reset with one int drawn from it (a SeedSequence: the next test)."""
    from privrl.exceptions import PrivacyParameterError

    def agent(S=4, A=2, H=5):
        return LSVIUCB(FeatureMap.one_hot(S, A, H), NonPrivate(), episodes=6, seed=0)

    with pytest.raises(ShapeError, match=r"without state=\.\.\., the observation itself\), got 0\.7"):
        privrl.learn(agent(), _ShiftedChain(), seed=0)
    lake = gym.make("FrozenLake-v1", is_slippery=False)
    for bad in (float("nan"), "1", -1.0):
        with pytest.raises(PrivacyParameterError, match="reference must be"):
            privrl.learn(agent(16, 4, 8), lake, seed=0, reference=bad)
    with pytest.raises(SeedError, match="seed must be None, an integer >= 0"):  # was PrivacyParameterError
        privrl.learn(agent(16, 4, 8), lake, seed=-1)
    # a SeedSequence seeds as the int numpy reads it as: the same run either way
    seq = np.random.SeedSequence(3)
    as_int = 3
    a, b = agent(16, 4, 8), agent(16, 4, 8)
    assert np.array_equal(privrl.learn(a, lake, seed=seq).returns, privrl.learn(b, lake, seed=as_int).returns)
    assert privrl.learn(agent(16, 4, 8), lake, seed=np.random.default_rng(0)).episodes == 6


def test_running_past_k_or_on_another_model_raises_privrl_errors():
    """These were builtin ValueErrors; now privrl's (still ValueErrors, so old handlers hold)."""
    from privrl.exceptions import CapacityError

    env = RiverSwimMixture(S=4, H=5)
    agent = UCRLVTR(env, NonPrivate(), episodes=10, seed=0)
    with pytest.raises(AssumptionError, match="differs in its"):
        privrl.run(agent, RiverSwimMixture(S=4, H=6), seed=0)
    with pytest.raises(CapacityError, match="cannot run 11"):
        privrl.run(agent, env, episodes=11, seed=0)
    lake = gym.make("FrozenLake-v1")
    with pytest.raises(CapacityError, match="cannot learn 11"):
        privrl.learn(LSVIUCB(FeatureMap.one_hot(16, 4, 8), NonPrivate(), episodes=10), lake, episodes=11)
    with pytest.raises(AssumptionError, match=r"reward\(0\.0\) = 2 is outside \[0, 1\]"):
        privrl.learn(
            LSVIUCB(FeatureMap.one_hot(16, 4, 8), NonPrivate(), episodes=10), lake, reward=lambda r: r + 2
        )


def test_gymnasium_models_refuse_bad_ranges_ids_and_horizons():
    """Audit 4: reward_range=[-100, inf] (or a width that overflows) mapped every reward to 0, so
    every agent had regret 0; a bad id, map or is_slippery string, and a non-integer H, failed
    with gymnasium's or Python's own errors (or built the slippery lake for is_slippery="no")."""
    import math

    from privrl.envs import from_gymnasium
    from privrl.exceptions import PrivacyParameterError
    from privrl.experiment.environments import gymnasium_linear_mdp

    for rng in ([-100, math.inf], [-1e308, 1e308], [-math.inf, 0], [-100, math.nan]):
        with pytest.raises(AssumptionError, match="reward_range needs finite lo < hi"):
            gymnasium_linear_mdp("CliffWalking-v1", H=5, reward_range=rng)
    with pytest.raises(ShapeError, match="Blackjack-v1 has no model"):
        gymnasium_linear_mdp("Blackjack-v1", H=5, reward_range="auto")
    for kw in ({"id": "NoSuch-v0"}, {"id": "FrozenLake-v1", "map_name": "9x9"}):
        with pytest.raises(AssumptionError, match=r"gymnasium\.make\(.*\) failed"):
            gymnasium_linear_mdp(H=5, **kw)
    with pytest.raises(AssumptionError, match="is_slippery must be True or False, got 'no'"):
        gymnasium_linear_mdp("FrozenLake-v1", H=5, is_slippery="no")
    for H in (math.nan, math.inf, None, True, "5"):
        with pytest.raises(PrivacyParameterError, match="H must be an integer >= 1"):
            from_gymnasium("FrozenLake-v1", H)
    with pytest.raises(ShapeError, match="int has no model"):
        from_gymnasium(5, 5)
    # H = 10^6 materialized the (H, S, A, S) model (7.6 GiB) before anything was checked
    with pytest.raises(ShapeError, match="H=1000000, S=16, A=4 needs"):
        from_gymnasium("FrozenLake-v1", 10**6)
    assert gymnasium_linear_mdp("CliffWalking-v1", H=5, reward_range=[-100, 0]).H == 5


def test_evaluate_on_a_model_refuses_what_it_would_ignore_and_checks_observations():
    """Audit 4: on a model, H = 3 (goal 6 steps away) still gave the H = 8 value 1.0, and state=
    and episodes=-5 were ignored; on gymnasium, Blackjack's tuples, a float state or a bool state
    leaked numpy's TypeError / IndexError (Blackjack's tuples are states since), and the default
    state=int truncated observations."""
    from privrl.envs import frozen_lake
    from privrl.exceptions import IndexRangeError, PrivacyParameterError

    lake = frozen_lake(H=8, is_slippery=False)
    pi = lake.optimal_policy()
    assert privrl.evaluate(pi, lake, H=8).value == privrl.evaluate(pi, lake).value == 1.0
    with pytest.raises(ShapeError, match="H = 3, but the model's horizon is H = 8"):
        privrl.evaluate(pi, lake, H=3)
    with pytest.raises(TypeError, match="state= applies to gymnasium environments"):
        privrl.evaluate(pi, lake, state=lambda o: 0)
    with pytest.raises(PrivacyParameterError, match="episodes"):
        privrl.evaluate(pi, lake, episodes=-5)
    gym_lake = gym.make("FrozenLake-v1", is_slippery=False)
    for bad, shown in ((lambda o: o + 0.5, "0.5"), (lambda o: True, "True"), (lambda o: (o,), r"\(0,\)")):
        with pytest.raises(IndexRangeError, match=rf"gave state {shown} at step 0"):
            privrl.evaluate(pi, gym_lake, episodes=2, seed=0, state=bad)
    # Blackjack's (player, dealer, ace) tuples: indexed by default since (tests/test_tabular_spaces.py),
    # a policy over other states refused before the first episode
    with pytest.raises(ShapeError, match=r"\(704 states\), the policy has 16 states: pass state="):
        privrl.evaluate(np.zeros((3, 16), dtype=int), gym.make("Blackjack-v1"), episodes=2, seed=0)
    with pytest.raises(ShapeError, match="not state indices: pass state="):
        privrl.evaluate(lambda s, h: 0, gym.make("MountainCar-v0"), episodes=2, seed=0, H=5)
    with pytest.raises(ShapeError, match=r"the observation itself\), got 0\.7"):
        privrl.evaluate(lambda s, h: 1, _ShiftedChain(), episodes=2, seed=0, H=3)
    assert privrl.evaluate(pi, gym_lake, episodes=5, seed=0).value == 1.0


def test_evaluate_rescales_and_pads_as_learn_does():
    """Audit 4: evaluate had no reward=, so its value of a CliffWalking policy (-13 raw) could not
    be compared with learn's rescaled returns or the rescaled model's exact value. With reward=,
    the Monte-Carlo value on the gymnasium env equals the exact one of from_gymnasium(reward=...)
    (deterministic env: every episode the same), padding included."""
    from privrl.envs import from_gymnasium

    def rescale(r):
        return (r + 100) / 100

    H = 30
    model = from_gymnasium("CliffWalking-v1", H, reward=rescale)
    pi = model.optimal_policy()
    exact = privrl.evaluate(pi, model).value
    env = gym.make("CliffWalking-v1")
    mc = privrl.evaluate(pi, env, episodes=3, seed=0, reward=rescale)
    assert mc.value == pytest.approx(exact, abs=1e-12) and mc.stderr == 0.0
    assert privrl.evaluate(pi, env, episodes=1, seed=0).value == -13.0  # raw: 13 steps of -1
    with pytest.raises(TypeError, match="reward= applies to gymnasium environments"):
        privrl.evaluate(pi, model, reward=rescale)


def test_audit_12_learn_evaluate_and_bandit_edges():
    """Audit 12: learn with a LinUCB agent leaked an AttributeError; Box action spaces failed inside
    gymnasium's step; learn with no episodes left returned an empty result; a callable policy's 2.9
    played action 2; a NaN rescaled reward gave value NaN; a LinUCB that never releases within K
    was silent; pandas frames of numeric and bool columns were refused; unknown scale / dataset
    names raised a bare ValueError."""
    import pandas as pd

    from privrl.agents import LinUCB
    from privrl.envs import ContextualBandit
    from privrl.exceptions import CapacityError, NonFiniteError, PrivacyParameterError, ScheduleWarning

    bandit = ContextualBandit(np.eye(3)[:2] * 0.5, np.array([[0.1, 0.9], [0.8, 0.2]]))
    with pytest.raises(TypeError, match="contextual-bandit agent"):
        privrl.learn(LinUCB(bandit, NonPrivate(), episodes=5, seed=0), gym.make("FrozenLake-v1"), seed=0)
    lake = gym.make("FrozenLake-v1", is_slippery=False)
    agent = LSVIUCB(FeatureMap.one_hot(4, 3, 5), NonPrivate(), batches="every", episodes=3, seed=0, lam=1.0)
    with pytest.raises(ShapeError, match="discrete actions"):
        privrl.learn(agent, gym.make("Pendulum-v1"), seed=0, state=lambda o: 0)
    agent = LSVIUCB(FeatureMap.one_hot(16, 4, 8), NonPrivate(), batches="every", episodes=2, seed=0)
    privrl.learn(agent, lake, seed=0)
    with pytest.raises(CapacityError):
        privrl.learn(agent, lake, seed=0)
    for bad in (2.9, "2", True, None):
        with pytest.raises(TypeError, match="must be an integer"):
            privrl.evaluate(lambda s, h, a=bad: a, lake, episodes=2, seed=0, H=6)
    goal = np.array([[2] * 16, [2] * 16, [1] * 16, [1] * 16, [1] * 16, [2] * 16, [2] * 16, [2] * 16])
    with pytest.raises(NonFiniteError):
        privrl.evaluate(goal, lake, episodes=3, seed=0, reward=lambda r: r if r == 0 else float("nan"))
    with pytest.warns(ScheduleWarning, match="none of its users ever sees a release"):
        LinUCB(bandit, JointDP(1.0, 1e-5), episodes=2, seed=0, schedule=5)
    df = pd.DataFrame({"age": [20.5, 30.1, 40.2, 50.3], "color": ["r", "g", "b", "r"]})
    mixed = ContextualBandit.from_classification(pd.get_dummies(df), [0, 1, 0, 1], seed=0)
    floats = ContextualBandit.from_classification(pd.get_dummies(df).astype(float), [0, 1, 0, 1], seed=0)
    np.testing.assert_array_equal(mixed.contexts, floats.contexts)
    with pytest.raises(ShapeError, match="encode text"):
        ContextualBandit.from_classification(df, [0, 1, 0, 1])
    with pytest.raises(PrivacyParameterError, match="scale"):
        ContextualBandit.from_classification(np.eye(4), [0, 1, 0, 1], scale="l2")
    from privrl.envs.datasets import load_bandit

    with pytest.raises(PrivacyParameterError, match="dataset"):
        load_bandit("iris")


def test_a_run_whose_per_episode_arrays_cannot_fit_is_refused_up_front():
    """Fuzzing: run / learn of an agent built for 10^12 users and evaluate(..., episodes=10^15)
    on a gymnasium environment died in numpy ("Unable to allocate 7.28 TiB"); now ResourceError
    (a PrivrlError) naming episodes, before any user. An exact evaluation ignores `episodes`."""
    from privrl.exceptions import ResourceError

    env = RiverSwimMixture(S=4, H=3)
    with pytest.raises(ResourceError, match=r"episodes = 1000000000000.*GiB.*fewer episodes="):
        privrl.run(UCRLVTR(env, NonPrivate(), episodes=10**12, seed=0), env, seed=0)
    agent = LSVIUCB(FeatureMap.one_hot(16, 4, 8), NonPrivate(), episodes=10**12, seed=0)
    with pytest.raises(ResourceError, match=r"episodes = 1000000000000"):
        privrl.learn(agent, gym.make("FrozenLake-v1"), seed=0)
    assert agent.k == 0  # refused before the first user
    pi = env.optimal_policy()
    with pytest.raises(ResourceError, match=r"episodes = 1000000000000000"):
        privrl.evaluate(pi, as_gymnasium(env), episodes=10**15, seed=0)
    assert privrl.evaluate(pi, env, episodes=10**15).exact


def test_evaluate_takes_and_refuses_the_same_policy_tables_on_every_kind_of_environment():
    """A whole-number float policy (np.zeros((H, S)), or an int policy cast to float) was taken on
    a model and on nothing else: a gymnasium env refused it as "not an int array" and so did a
    bandit. One rule now decides for all three (privrl.common.checks.integer_actions): integers, or
    floats that are finite whole numbers, give the value of the same int policy; a fractional,
    non-finite, bool or text table is a ShapeError on each."""
    from privrl.envs import ContextualBandit

    mdp = RiverSwimMixture(S=4, H=5)
    gym_env = as_gymnasium(mdp)
    bandit = ContextualBandit(np.eye(3) * 0.5, np.array([[0.1, 0.9], [0.8, 0.2], [0.5, 0.4]]))
    pi_mdp, pi_bandit = mdp.optimal_policy(), np.array([[1, 0, 1]])

    def values(pi, bandit_pi):
        return (
            privrl.evaluate(pi, mdp).value,
            privrl.evaluate(pi, gym_env, episodes=20, seed=4).value,
            privrl.evaluate(bandit_pi, bandit).value,
        )

    expected = values(pi_mdp, pi_bandit)
    assert values(pi_mdp.astype(np.float64), pi_bandit.astype(np.float64)) == expected
    assert values(pi_mdp.astype(np.float32), pi_bandit.astype(np.float32)) == expected
    assert values(pi_mdp.astype(np.uint8), pi_bandit.astype(np.uint8)) == expected
    for bad in (0.5, np.nan, np.inf):
        for pi, env in ((pi_mdp, mdp), (pi_mdp, gym_env), (pi_bandit, bandit)):
            table = pi.astype(np.float64)
            table[0, 1] = bad
            with pytest.raises(
                ShapeError, match=r"integer action indices, got dtype float64 with .* at \[0, 1\]"
            ):
                privrl.evaluate(table, env, episodes=2, seed=0)
    for dtype in (bool, str, object):
        for pi, env in ((pi_mdp, mdp), (pi_mdp, gym_env), (pi_bandit, bandit)):
            with pytest.raises(ShapeError, match="integer action indices"):
                privrl.evaluate(pi.astype(dtype), env, episodes=2, seed=0)


def test_a_whole_number_policy_entry_beyond_int64_is_named_as_given():
    """A float 1e20 or a uint64 2^63 + 1 in a policy table was cast to int64 (a RuntimeWarning for
    the float) and refused as "policy[h=0, s=0] = -9223372036854775808 is not an action": an index
    nobody passed. It is refused with its own value, on a model, a gymnasium env and a bandit."""
    import re
    import warnings

    from privrl.envs import ContextualBandit

    mdp = RiverSwimMixture(S=4, H=5)
    bandit = ContextualBandit(np.eye(3) * 0.5, np.array([[0.1, 0.9], [0.8, 0.2], [0.5, 0.4]]))
    envs = ((mdp, (5, 4)), (as_gymnasium(mdp), (5, 4)), (bandit, (1, 3)))
    for big, shown in ((1e20, "1e+20"), (-1e19, "-1e+19"), (np.uint64(2**63 + 1), "9223372036854775809")):
        for env, shape in envs:
            table = np.zeros(shape, dtype=np.asarray(big).dtype)
            table[0, 1] = big
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # the cast's RuntimeWarning came first
                with pytest.raises(ShapeError, match=rf"holds {re.escape(shown)} at \[0, 1\]"):
                    privrl.evaluate(table, env, episodes=2, seed=0)
    top = np.zeros((5, 4), dtype=np.uint64)
    top[0, 0] = 1  # a uint64 table in range: the int policy's value, as before
    assert privrl.evaluate(top, mdp).value == privrl.evaluate(top.astype(np.int64), mdp).value


def test_equal_seeds_give_equal_runs_wherever_a_seed_is_taken():
    """numpy reads 3, SeedSequence(3) and [3] as one seed (default_rng gives one stream), but
    learn and evaluate reset a gymnasium env with 3 for the int and with an int generated from the
    SeedSequence otherwise: two different runs. They now hand gymnasium the int numpy reads the
    seed as (privrl.common.checks.int_seed); a seed no int equals (a spawned child) still gives one
    reproducible run of its own. run, the agents and the seeded environments already agreed."""
    from privrl.common.checks import int_seed
    from privrl.envs import RandomLinearMixtureMDP

    S = np.random.SeedSequence
    same = (3, np.int64(3), S(3), [3], S([3, 0]))
    assert {int_seed(s) for s in same} == {3}
    lake = gym.make("FrozenLake-v1")  # slippery: the returns depend on the seed
    from privrl.envs import frozen_lake

    policy = frozen_lake(H=40).optimal_policy()  # reaches the goal about half the time

    def learned(seed):
        agent = LSVIUCB(FeatureMap.one_hot(16, 4, 40), NonPrivate(), episodes=60, seed=0, batches="every")
        return privrl.learn(agent, lake, seed=seed, progress=False).returns.tolist()

    def evaluated(seed):
        return privrl.evaluate(policy, lake, episodes=200, seed=seed).value

    for f in (learned, evaluated):
        base = f(3)
        assert all(f(s) == base for s in same[1:]), f.__name__
        assert f(4) != base, f.__name__  # the seed matters here: the equalities above are not vacuous
        child = S(3).spawn(1)[0]
        assert int_seed(child) is None and f(child) == f(S(3).spawn(1)[0]) != base, f.__name__
    env = RiverSwimMixture(S=4, H=5)
    regrets = [
        privrl.run(UCRLVTR(env, JointDP(1.0, 1e-5), episodes=30, seed=s), env, seed=s, progress=False).regret
        for s in same
    ]
    assert all(np.array_equal(r, regrets[0]) for r in regrets)
    models = [RandomLinearMixtureMDP(S=6, A=2, d=3, H=3, seed=s) for s in same]
    assert all(np.array_equal(m.P, models[0].P) and np.array_equal(m.R, models[0].R) for m in models)


def test_a_bad_seed_is_a_seed_error_everywhere_a_seed_is_taken():
    """A negative, float, string or bool seed raised PrivacyParameterError (a privacy-parameter
    class for a seed), and seed_bytes / a model's rng a bare TypeError. Every one is now SeedError,
    naming the argument, and still both a ValueError and a TypeError (numpy's own classes for a bad
    seed), so existing `except ValueError` / `except TypeError` clauses keep catching it."""
    from privrl import kernels as kn
    from privrl.envs import RandomLinearMDP
    from privrl.exceptions import PrivacyParameterError, PrivrlError
    from privrl.privacy import mechanisms

    env = RiverSwimMixture(S=4, H=3)
    calls = [
        lambda s: UCRLVTR(env, NonPrivate(), episodes=5, seed=s),
        lambda s: privrl.run(UCRLVTR(env, NonPrivate(), episodes=5, seed=0), env, seed=s),
        lambda s: RandomLinearMDP(S=5, A=2, d=3, H=2, seed=s),
        lambda s: kn.TreeAggregator(2, 4, seed=s),
        lambda s: kn.greedy(np.zeros((2, 2)), rng=s),
    ]
    for call in calls:
        for bad in (-1, 1.5, "3", True, 2**200 if call is calls[-1] else -(2**70)):
            with pytest.raises(SeedError, match=r"seed|rng") as err:
                call(bad)
            e = err.value
            assert isinstance(e, PrivrlError) and isinstance(e, ValueError) and isinstance(e, TypeError)
            assert not isinstance(e, PrivacyParameterError)
    with pytest.raises(SeedError, match="rng must be"):
        env.sample_initial_state(rng=3)
    with pytest.raises(SeedError, match=r"rng must be a numpy\.random\.Generator"):
        mechanisms.gaussian_mechanism(np.zeros(2), 1.0, 0.5, 1e-5, rng=3)


def test_learn_refuses_a_reference_above_an_episodes_largest_value():
    """reference=1e308 (finite, >= 0) was taken: the regret cumsum(reference - returns) overflowed
    to inf at the second user, with numpy's RuntimeWarning (an error under -W error, raised after
    the agent had taken every user). The reference is an episode's value: H steps of rewards in
    [0, 1] (learn's contract), so it lies in [0, H]; above H it is refused before any user."""
    from privrl.exceptions import PrivacyParameterError

    lake = gym.make("FrozenLake-v1", is_slippery=False)
    H = 8
    for bad in (1e308, math.nextafter(float(H), math.inf), 1e6):
        agent = LSVIUCB(FeatureMap.one_hot(16, 4, H), NonPrivate(), episodes=6, seed=0)
        with pytest.raises(PrivacyParameterError, match=r"reference must be in \[0, H\] = \[0, 8\]"):
            privrl.learn(agent, lake, seed=0, reference=bad)
        assert agent.k == 0  # refused before the first user
    for good in (0.0, 1.0, float(H)):  # the whole range is taken, H included
        agent = LSVIUCB(FeatureMap.one_hot(16, 4, H), NonPrivate(), episodes=6, seed=0)
        res = privrl.learn(agent, lake, seed=0, reference=good)
        assert np.array_equal(res.regret, np.cumsum(good - res.returns))

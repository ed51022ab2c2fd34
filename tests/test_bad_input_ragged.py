"""A ragged nested list where an array goes (a trajectory's states / actions / rewards, a policy
table) is refused with a ShapeError naming the argument, at each public entry point that takes one:
numpy's own ValueError ("setting an array element with a sequence ...") named none (found by hB's
bad-input fuzz). The same values as a proper list are still taken, with the same result."""

import numpy as np
import pytest

import privrl
from privrl.agents import PSRL, UCRLVTR
from privrl.envs import ContextualBandit, RiverSwim, RiverSwimMixture, Trajectory, as_gymnasium
from privrl.exceptions import ShapeError
from privrl.privacy import LocalDP, NonPrivate

RAGGED = [[0, 1], [1]]
STATES, ACTIONS, REWARDS = [0, 1, 2, 1], [0, 1, 0], [0.5, 1.0, 0.0]


def _trajectories():
    for name in ("states", "actions", "rewards"):
        parts = {"states": STATES, "actions": ACTIONS, "rewards": REWARDS}
        parts[name] = RAGGED
        yield name, Trajectory(**parts)


@pytest.mark.parametrize("name,trajectory", list(_trajectories()))
def test_observe_refuses_a_ragged_trajectory_field_naming_it(name, trajectory):
    agent = PSRL(RiverSwim(S=3, H=3), NonPrivate(), episodes=4, seed=0)
    with pytest.raises(ShapeError, match=rf"trajectory {name} must be an array"):
        agent.observe(trajectory)
    assert agent.k == 0  # refused before the user entered
    agent.observe(Trajectory(STATES, ACTIONS, REWARDS))  # the lists themselves are taken
    assert agent.k == 1


@pytest.mark.parametrize("name,trajectory", list(_trajectories()))
def test_an_ldp_client_refuses_a_ragged_trajectory_field_naming_it(name, trajectory):
    agent = UCRLVTR(RiverSwimMixture(S=3, H=3), LocalDP(1.0, 1e-5), episodes=4, seed=0)
    with pytest.raises(ShapeError, match=rf"trajectory {name} must be an array"):
        agent.ldp_client(seed=1).privatize(trajectory)


def test_a_model_refuses_a_ragged_policy_naming_it():
    env = RiverSwim(S=3, H=3)
    for call in (lambda p: env.policy_values(p), lambda p: privrl.evaluate(p, env)):
        with pytest.raises(ShapeError, match=r"policy must be an array"):
            call(RAGGED)
    pi = env.optimal_policy()
    assert privrl.evaluate(pi.tolist(), env).value == privrl.evaluate(pi, env).value


def test_a_bandit_refuses_a_ragged_policy_naming_it():
    rng = np.random.default_rng(0)
    contexts = rng.normal(size=(4, 3))
    contexts /= 2 * np.linalg.norm(contexts, axis=1, keepdims=True)
    env = ContextualBandit(contexts, rng.random((4, 2)))
    for call in (env.check_policy, lambda p: privrl.evaluate(p, env)):
        with pytest.raises(ShapeError, match=r"policy must be an array"):
            call(RAGGED)
    assert privrl.evaluate([[0, 1, 1, 0]], env).value == privrl.evaluate(np.array([[0, 1, 1, 0]]), env).value


def test_evaluate_on_a_gymnasium_env_refuses_a_ragged_policy_naming_it():
    pytest.importorskip("gymnasium")
    env = RiverSwim(S=3, H=3)
    with pytest.raises(ShapeError, match=r"policy must be an array"):
        privrl.evaluate(RAGGED, as_gymnasium(env), episodes=2, seed=0, H=3)


@pytest.mark.parametrize("field", ["grams", "targets"])
def test_receive_refuses_a_ragged_message_field_naming_it(field):
    import dataclasses

    env = RiverSwimMixture(S=3, H=3)
    make = lambda: UCRLVTR(env, LocalDP(1.0, 1e-5), episodes=4, seed=0)  # noqa: E731
    message = make().ldp_client(seed=1).privatize(Trajectory(STATES, ACTIONS, REWARDS))
    server = make()
    with pytest.raises(ShapeError, match=rf"the message's {field} must be an array"):
        server.receive(dataclasses.replace(message, **{field: RAGGED}))
    assert server.k == 0
    server.receive(message)
    assert server.k == 1


@pytest.mark.parametrize("name", ["states", "actions", "rewards"])
def test_a_masked_trajectory_field_is_refused_as_missing_data(name):
    """A masked entry in a trajectory's field was unmasked silently (the values under the mask entered
    the user's statistics), though every other array input refuses it (7ab2af1): one rule now,
    privrl.common.kinds.refuse_masked, read by array_value."""
    from privrl.exceptions import NonFiniteError

    parts = {"states": STATES, "actions": ACTIONS, "rewards": REWARDS}
    masked = np.ma.masked_array(parts[name], mask=[i == 1 for i in range(len(parts[name]))])
    agent = PSRL(RiverSwim(S=3, H=3), NonPrivate(), episodes=4, seed=0)
    with pytest.raises(NonFiniteError, match=rf"trajectory {name} has masked \(missing\) entries"):
        agent.observe(Trajectory(**{**parts, name: masked}))
    assert agent.k == 0
    unmasked = np.ma.masked_array(parts[name], mask=False)  # no masked entry: its data, as before
    agent.observe(Trajectory(**{**parts, name: unmasked}))
    assert agent.k == 1

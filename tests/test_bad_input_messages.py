"""An LDP server's edge (Agent.receive): a message no client of the agent sends is refused before
it enters the sums, and the agent goes on as if it never came. A finite entry near a double's range
(8e307, 1e308) was taken (found by hB's bad-input fuzz): the sums or the release became inf / NaN,
silently (a non-finite release) or at the next message ("w: non-finite value NaN", an internal name),
and every later message failed."""

import dataclasses

import numpy as np
import pytest

from privrl.agents import UCRLVTR, LinUCB
from privrl.envs import ContextualBandit, RiverSwimMixture, Trajectory
from privrl.exceptions import AssumptionError, NonFiniteError
from privrl.privacy import LocalDP

TRAJ = Trajectory(np.array([0, 1, 2, 1]), np.array([0, 1, 0]), np.array([0.5, 1.0, 0.0]))


def _vtr():
    return UCRLVTR(RiverSwimMixture(S=3, H=3), LocalDP(1.0, 1e-5), episodes=6, seed=0)


def _bandit():
    rng = np.random.default_rng(0)
    contexts = rng.normal(size=(5, 3))
    contexts /= 2 * np.linalg.norm(contexts, axis=1, keepdims=True)
    env = ContextualBandit(contexts, rng.random((5, 2)))
    return lambda: LinUCB(env, LocalDP(1.0, 1e-5), episodes=6, seed=0, schedule=1)


def _huge(message, field, value):
    a = getattr(message, field).copy()
    a.reshape(-1)[0] = value
    if field == "grams":  # kept symmetric, as a client's grams are
        lead = a.reshape(-1, a.shape[-1], a.shape[-1])
        lead[0, 0, 1] = lead[0, 1, 0] = value
    return dataclasses.replace(message, **{field: a})


@pytest.mark.parametrize("field,value", [("grams", 8e307), ("grams", 1e308), ("targets", 1e308)])
def test_a_message_whose_sums_would_overflow_is_refused_and_changes_nothing(field, value):
    for make, message in (
        (_vtr, _vtr().ldp_client(seed=1).privatize(TRAJ)),
        (_bandit(), None),
    ):
        if message is None:
            message = make().ldp_client(seed=1).privatize_update(np.array([0.3, 0.1, 0.2]), 0, 0.5)
        server, fresh = make(), make()
        for _ in range(2):  # two of them overflowed the sums of 8e307
            with pytest.raises(NonFiniteError, match=rf"the message's {field} hold a value of size"):
                server.receive(_huge(message, field, value))
        assert server.k == 0
        server.receive(message)
        fresh.receive(dataclasses.replace(message))
        a, b = server.release(), fresh.release()
        assert np.isfinite(a.weights).all() and np.isfinite(a.design).all()
        assert np.array_equal(a.weights, b.weights) and np.array_equal(a.design, b.design)


def test_the_bound_is_far_above_any_message_a_client_sends():
    server = _vtr()
    for seed in range(5):
        server.receive(_vtr().ldp_client(seed=seed).privatize(TRAJ))  # each client's message is taken
    assert server.k == 5


def test_a_message_with_asymmetric_grams_is_refused_and_changes_nothing():
    # every client's grams are symmetric (x x^T plus symmetric noise); an asymmetric one was taken and
    # its asymmetry silently dropped, as the kernels refuse to do for a non-symmetric matrix
    for make, message in (
        (_vtr, _vtr().ldp_client(seed=1).privatize(TRAJ)),
        (_bandit(), _bandit()().ldp_client(seed=1).privatize_update(np.array([0.3, 0.1, 0.2]), 0, 0.5)),
    ):
        g = message.grams.reshape(-1, message.grams.shape[-1], message.grams.shape[-1])
        assert np.array_equal(g, np.swapaxes(g, 1, 2))  # a client's own: exactly symmetric
        bad = message.grams.copy()
        bad.reshape(g.shape)[0, 0, 1] += 1.0
        server = make()
        with pytest.raises(AssumptionError, match=r"the message's grams\[0\] must be symmetric"):
            server.receive(dataclasses.replace(message, grams=bad))
        assert server.k == 0
        server.receive(message)
        assert server.k == 1

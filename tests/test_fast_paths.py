"""The per-call fast paths of the public edge, against the checks they bypass: agent.act's
one Rust call for ints and numpy integers in range (_core.agent_act, LinUcbAgent.act)."""

from __future__ import annotations

import enum

import numpy as np
import pytest

from privrl.agents import LSVIUCB, UCRLVTR, LinUCB
from privrl.envs import ContextualBandit, FeatureMap, RiverSwimMixture
from privrl.exceptions import ShapeError
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

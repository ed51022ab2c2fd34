"""Agent.noise_seeds(n), a public method of every agent: n is an integer >= 0 whose seeds fit in
memory. A bool, a negative or a float were taken or failed deep in numpy (True gave one seed, -1
none, 0.5 "'float' object cannot be interpreted as an integer", 2^63 numpy's OverflowError, 2^31
ran for hours: found by hB's bad-input fuzz); the seeds of a valid n are unchanged."""

import numpy as np
import pytest

from privrl.agents import PSRL
from privrl.common.seeds import seed_bytes
from privrl.envs import RiverSwim
from privrl.exceptions import PrivacyParameterError, ResourceError
from privrl.privacy import NonPrivate


def _agent(seed=3):
    return PSRL(RiverSwim(S=3, H=3), NonPrivate(), episodes=4, seed=seed)


@pytest.mark.parametrize("n", [True, False, np.bool_(True), -1, np.int64(-1), 0.5, 1.0, "2", None, 1 + 0j])
def test_noise_seeds_refuses_what_is_not_a_count(n):
    for seed in (3, None):
        with pytest.raises(PrivacyParameterError, match=r"n \(a number of seeds\) must be an integer >= 0"):
            _agent(seed).noise_seeds(n)


@pytest.mark.parametrize("n", [2**40, 2**63, 2**64, 10**400])
def test_noise_seeds_refuses_a_count_beyond_memory_before_spawning(n):
    with pytest.raises(ResourceError, match=r"noise_seeds keeps"):
        _agent().noise_seeds(n)


def test_noise_seeds_of_a_valid_count_are_the_spawned_children():
    # the seeds a valid n gives are as before: the next children of the agent's noise stream
    agent, twin = _agent(seed=3), _agent(seed=3)
    assert agent.noise_seeds(np.int64(2)) == [seed_bytes(s) for s in twin._streams[1].spawn(2)]
    assert agent.noise_seeds(1) == [seed_bytes(s) for s in twin._streams[1].spawn(1)]
    assert agent.noise_seeds(0) == []
    assert len(_agent(seed=None).noise_seeds(3)) == 3


@pytest.mark.parametrize(
    "rng", ["abc", 1.5, -1, True, 2**63, np.random.RandomState(0), np.random.SeedSequence(0)]
)
def test_a_bad_rng_is_refused_with_ties_lowest_too(rng):
    # ties="lowest" needs no rng, but the one given was ignored whatever it was, while ties="random"
    # refuses it: one rule for the argument, whichever tie rule is chosen
    from privrl import kernels as kn
    from privrl.exceptions import SeedError

    q = np.zeros((3, 2))
    for ties in ("random", "lowest"):
        with pytest.raises(SeedError, match=r"rng must be None, an integer in \[0, 2\^63\)"):
            kn.greedy(q, ties=ties, rng=rng)
        with pytest.raises(SeedError, match=r"rng must be None"):
            kn.optimistic_values(np.zeros((2, 1)), np.zeros(1), np.eye(1), 0.0, 2, ties=ties, rng=rng)
    # a valid rng with ties="lowest": the lowest index, and a Generator is not drawn from
    gen = np.random.default_rng(5)
    state = gen.bit_generator.state
    for valid in (None, 3, gen):
        assert kn.greedy(q, ties="lowest", rng=valid)[1].tolist() == [0, 0, 0]
    assert gen.bit_generator.state == state

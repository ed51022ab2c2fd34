"""FiniteMDP.sample_next_state(h, s, a, rng): an index that is not an integer is refused naming
(h, s, a) (1.5, "1" and None raised operator.index's TypeError "'float' object cannot be interpreted
as an integer", naming no argument; found by hB's bad-input fuzz); what was taken still is, with the
same draw."""

import re

import numpy as np
import pytest

from privrl.envs import HardToLearn, RandomLinearMixtureMDP, RiverSwim
from privrl.exceptions import IndexRangeError, ShapeError


@pytest.mark.parametrize("bad", [1.5, 1.0, "1", None, True, np.bool_(True), np.array(1.5), [1]])
def test_sample_next_state_refuses_a_non_integer_index_naming_it(bad):
    env = RiverSwim(S=3, H=3)
    for args in ((bad, 0, 0), (0, bad, 0), (0, 0, bad)):
        with pytest.raises(TypeError, match=r"\(h, s, a\) must be integers"):
            env.sample_next_state(*args, np.random.default_rng(0))


def test_sample_next_state_takes_the_integers_it_took():
    env = RiverSwim(S=3, H=3)
    want = env.sample_next_state(1, 2, 1, np.random.default_rng(4))
    for args in ((np.int64(1), np.int32(2), np.uint8(1)), (np.array(1), 2, np.array(1))):
        assert env.sample_next_state(*args, np.random.default_rng(4)) == want
    with pytest.raises(IndexRangeError):
        env.sample_next_state(3, 0, 0, np.random.default_rng(0))


@pytest.mark.parametrize("field,value", [("P", np.nan), ("P", np.inf), ("R", np.nan), ("R", -np.inf)])
def test_tabular_linear_mdp_names_the_array_the_user_passed(field, value):
    # a NaN in P or R was reported as the derived mu's or theta's ("mu contains a non-finite value")
    from privrl.envs import tabular_linear_mdp
    from privrl.exceptions import NonFiniteError

    env = RiverSwim(S=3, H=3)
    parts = {"P": env.P.copy(), "R": env.R.copy()}
    parts[field][0, 1, 0, ...] = value
    with pytest.raises(NonFiniteError, match=rf"^{field} contains a non-finite value"):
        tabular_linear_mdp(parts["P"], parts["R"], env.init_dist)
    built = tabular_linear_mdp(env.P, env.R, env.init_dist)  # finite P and R: built as before
    assert np.array_equal(built.P, env.P) and np.array_equal(built.R, env.R)


def test_a_float16_policy_is_read_without_a_warning():
    # integer_actions compared a float16 table with 2^63, which overflows float16 to inf with a
    # RuntimeWarning ('overflow encountered in cast'): an error wherever warnings are errors
    import warnings

    import privrl

    env = RiverSwim(S=3, H=3)
    pi = env.optimal_policy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value = privrl.evaluate(pi.astype(np.float16), env).value
        trajectory = env.sample_episode(pi.astype(np.float16), np.random.default_rng(0))
    assert value == privrl.evaluate(pi, env).value
    assert np.array_equal(trajectory.actions, env.sample_episode(pi, np.random.default_rng(0)).actions)


@pytest.mark.parametrize(
    "make, given",
    [
        (lambda: RandomLinearMixtureMDP(d=10**9), "H=10, S=20, A=4, d=1000000000"),
        (lambda: HardToLearn(30, 2, 100), "H=2, S=4, A=536870912, d=30"),
    ],
)
def test_a_mixture_too_large_names_its_d_not_a_horizon(make, given):
    """RandomLinearMixtureMDP(d=10**9) was refused as 'a dense model with H=1000000000, S=20, A=4'
    and HardToLearn(d=30, H=2) as one 'with H=30': the features' d reported as the horizon, which
    the user gave as 10 and 2 (hB's input pass). The limit is unchanged."""
    with pytest.raises(ShapeError, match=re.escape(f"a dense model with {given} needs")):
        make()

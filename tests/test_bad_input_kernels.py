"""kernels.state_values(states=...) and MixtureFeatures.phi_v_rows(v, rows): a scalar index is not
the 1-d index array they take. _index_array made a 0-d index (1,) (np.ascontiguousarray), so
state_values' own check ("states must be a 1-d index array") never fired and states=0 returned a
(1,) array (found by hB's bad-input fuzz). The index arrays they took give the same values."""

import numpy as np
import pytest

from privrl import kernels as kn
from privrl.exceptions import ShapeError

PHI = np.eye(4)[:, :3][[0, 1, 2, 3, 0, 1, 2, 3]] * 0.5
W, INV = np.array([1.0, -1.0, 0.5]), np.eye(3)


@pytest.mark.parametrize("states", [0, np.int64(2), np.array(1), np.array(3, dtype=np.uint8)])
def test_state_values_refuses_a_scalar_index(states):
    with pytest.raises(ShapeError, match=r"states must be a 1-d index array, got shape \(\)"):
        kn.state_values(PHI, W, INV, 1.0, 2, states=states)


def test_state_values_takes_the_index_arrays_it_took():
    every = kn.state_values(PHI, W, INV, 1.0, 2)
    for states in ([0, 3], np.array([0, 3], dtype=np.int32), np.arange(8)[::2][[0, 3]] // 2):
        assert kn.state_values(PHI, W, INV, 1.0, 2, states=states).tolist() == every[[0, 3]].tolist()
    assert kn.state_values(PHI, W, INV, 1.0, 2, states=[]).shape == (0,)


def test_phi_v_rows_refuses_a_scalar_row():
    rng = np.random.default_rng(0)
    f = rng.random((2, 2, 2, 3))
    f /= f.sum(axis=2, keepdims=True)
    m = kn.MixtureFeatures(f)
    v = rng.random((1, 2))
    with pytest.raises(ShapeError, match=r"rows must be 1 indices"):
        m.phi_v_rows(v, 3)
    assert m.phi_v_rows(v, [3]).tolist() == m.phi_v(v[0])[[3]].tolist()


@pytest.mark.parametrize("noise", ["gaussian", "laplace", "discrete_gaussian", "discrete_laplace"])
def test_privatize_refuses_messages_of_no_entries_naming_x(noise):
    # a zero-width block reached the Rust stream, whose 'nodes must have at least one entry' named
    # no argument; vectors(count, 0) and symmetric(count, 0) refuse the same width by name
    stream = kn.NoiseStream(noise, 1.0, seed=0)
    for x, symmetric in ((np.zeros((2, 0)), False), (np.zeros((0, 0)), False), (np.zeros((2, 0, 0)), True)):
        with pytest.raises(ShapeError, match=r"x must be \(count, "):
            stream.privatize(x, symmetric=symmetric)
    assert stream.draws == 0  # nothing was drawn
    # no messages (count 0) of a real width are still an empty block, as before
    assert stream.privatize(np.zeros((0, 3))).shape == (0, 3)
    assert stream.privatize(np.zeros((0, 3, 3)), symmetric=True).shape == (0, 3, 3)


def test_a_masked_entry_is_refused_as_missing_data_as_a_bandit_refuses_it():
    # numeric_array (every kernel's and model's float input) converted a masked array with the
    # values under its mask, silently; ContextualBandit already refused it as missing data
    from privrl.envs import FiniteMDP, RiverSwim
    from privrl.exceptions import NonFiniteError

    masked = np.ma.masked_array(np.eye(3), mask=np.eye(3, dtype=bool)[::-1])
    with pytest.raises(NonFiniteError, match=r"matrix has masked \(missing\) entries"):
        kn.min_eigenvalue(masked)
    with pytest.raises(NonFiniteError, match=r"w has masked \(missing\) entries"):
        kn.optimistic_q(PHI, np.ma.masked_array(W, mask=[True, False, False]), INV, 1.0)
    env = RiverSwim(S=3, H=3)
    R = np.ma.masked_array(env.R, mask=np.zeros(env.R.shape, dtype=bool))
    R.mask[0, 0, 0] = True
    with pytest.raises(NonFiniteError, match=r"has masked \(missing\) entries"):
        FiniteMDP(env.P, R, env.init_dist)
    # a masked array without a masked entry is its data, as before
    unmasked = np.ma.masked_array(np.eye(3), mask=False)
    assert kn.min_eigenvalue(unmasked) == kn.min_eigenvalue(np.eye(3))

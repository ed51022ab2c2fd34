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

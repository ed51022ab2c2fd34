"""Edge cases of the experiment harness found in an audit (sweep, CLI, run, learn, evaluate)."""

from __future__ import annotations

import numpy as np
import pytest

from privrl.experiment import ConfigError, sweep

ENV = {"name": "RiverSwimMixture", "S": 4, "H": 3}
AGENTS = {"U": {"algorithm": "UCRL-VTR", "privacy": "jdp"}}


@pytest.mark.parametrize("seeds", [True, False, np.bool_(True)])
def test_sweep_refuses_a_bool_seed_count(seeds):
    """sweep(seeds=True) ran one seed (int(True) = 1) instead of refusing a bool as a count, as
    every other integer of the config (episodes, log_every, a seed in a list) is refused."""
    with pytest.raises(ConfigError) as err:
        sweep(ENV, AGENTS, seeds=seeds, episodes=5, progress=False)
    assert err.value.key == "seeds"

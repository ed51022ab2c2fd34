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


@pytest.mark.parametrize("own", [{"epsilons": [1.0, 10.0]}, {"delta": 1e-3}])
def test_a_non_private_agent_refuses_its_own_epsilons_and_delta(own):
    """A 'none' agent's own epsilons list and delta were accepted and silently ignored (it ran
    once, at eps = inf, delta NaN), as a mistyped privacy kind would leave them; 'sampler' and
    'mechanism' on a non-private agent were already refused."""
    (key,) = own
    agents = {"N": {"algorithm": "UCRL-VTR", "privacy": "none", **own}}
    with pytest.raises(ConfigError) as err:
        sweep(ENV, agents, epsilons=[1.0], episodes=5, progress=False)
    assert err.value.key == f"agents.N.{key}"
    # the same keys on a private agent are taken: its runs are at those epsilons and that delta
    agents["N"]["privacy"] = "jdp"
    df, _ = sweep(ENV, agents, epsilons=[1.0], episodes=5, progress=False)
    if key == "epsilons":
        assert sorted(df.epsilon.unique()) == own["epsilons"]
    else:
        assert list(df.delta.unique()) == [own["delta"]]

"""benches/psrl_study.py (the PSRL study of /work/notes/probes50/psrl_study.md) rebuilds the agent's
Rust core for the variants its constructor has no option for (alpha0, geometric batch bounds): the
rebuilt core must be the constructor's, draw for draw, when the variant is the default."""

import numpy as np
import pytest

import privrl
from _helpers import load_bench


@pytest.fixture(scope="module")
def study():
    return load_bench("psrl_study.py", "psrl_study_bench")


@pytest.mark.parametrize("eps", [10.0, float("inf")])
def test_the_rebuilt_core_of_the_default_variant_learns_as_the_agent(study, eps):
    runs = []
    for rebuild in (False, True):
        env, H = study.frozen(True)
        agent = study.agent_for(env, H, eps, 3, 300, {}, rebuild=rebuild)
        runs.append((np.asarray(privrl.learn(agent, env, seed=7, progress=False).returns), agent.billboard()))
    (r0, (N0, R0, j0)), (r1, (N1, R1, j1)) = runs
    assert j0 == j1 > 0
    np.testing.assert_array_equal(r0, r1)
    np.testing.assert_array_equal(N0, N1)
    np.testing.assert_array_equal(R0, R1)


def test_the_schedules_and_the_prior_reach_the_core(study):
    env, H = study.frozen(True)
    geom = study.agent_for(env, H, 10.0, 0, 20_000, study.parse("B=geom"))
    # App. D's B = 6 at K 20,000, eps 10; sizes doubling: 20,000 (2^j - 1) / 63
    assert list(geom.bounds) == [0, 317, 952, 2222, 4762, 9841, 20_000] and geom._core.num_batches == 6
    dbl = study.agent_for(env, H, 10.0, 0, 20, study.parse("B=dbl"))
    assert list(dbl.bounds) == [0, 1, 3, 7, 15, 20] and dbl._core.num_batches == 5
    for spec, alpha0 in (("", 1 / 16), ("alpha0=1", 1.0)):  # the agent's prior 1/S; the uniform one
        core = study.agent_for(env, H, 10.0, 0, 50, study.parse(spec))._core
        core.set_record(True)
        core.policy()  # the first user: no release yet, its Dirichlet shapes are alpha0 + 0
        _, shapes, _ = next(rec for rec in core.draw_record()[1] if rec[0] == "gamma")
        assert shapes.shape == (16, 4, 16) and np.all(shapes == alpha0)
    assert study.parse("m=2,B=3,alpha0=0.5") == {"m": 2, "B": 3, "alpha0": 0.5}


def test_the_cliff_study_draws_the_agents_transition_prior(study, monkeypatch):
    # cliff_run's transitions are the agent's Dirichlet(1/S + N) (formulas.psrl_prior, 1/48 on
    # CliffWalking) under every reward prior; it drew Dirichlet(1 + N) (the prior before 613e793)
    shapes = []
    make = np.random.default_rng

    class Recording:
        def __init__(self, seed):
            self.rng = make(seed)

        def gamma(self, shape):
            shapes.append(np.array(shape, float))
            return self.rng.gamma(shape)

        def __getattr__(self, name):
            return getattr(self.rng, name)

    monkeypatch.setattr(np.random, "default_rng", Recording)
    for prior in ("uniform", "reward", "value"):
        shapes.clear()
        study.cliff_run(0, 1, prior)
        assert shapes[0].shape == (48, 4, 48)  # the first user's: an empty billboard, N = 0
        np.testing.assert_array_equal(shapes[0], np.full((48, 4, 48), 1 / 48))


def test_the_seed_option_takes_one_seed_or_a_range(study):
    # '--seeds 0' raised ValueError (not enough values to unpack): one seed is its own range
    assert list(study.seeds("0")) == [0]
    assert list(study.seeds("3")) == [3]
    assert list(study.seeds("0-2")) == [0, 1, 2]


def test_the_board_studys_posterior_draw_is_the_references(study):
    # model_draw (the board study's "posterior (agent)" case, both noises in) drew Dirichlet(1 + N)
    # and Beta(1 + R, 1 + n - R), the priors before 613e793 and 5883d89: it is the reference's
    # posterior_model now, draw for draw, on a billboard with visited and unvisited pairs
    from privrl.agents.psrl.reference import Billboard, posterior_model

    rng = np.random.default_rng(5)
    board = Billboard(4, 2, sigma=0.7)
    board.publish(rng.integers(0, 5, (4, 2, 4)) * (rng.random((4, 2, 1)) < 0.6), rng.random((4, 2)), rng)
    want = posterior_model(board, np.random.default_rng(11))
    got = study.model_draw(board.N, board.R, board.var, np.random.default_rng(11))
    for w, g in zip(want, got, strict=True):
        np.testing.assert_array_equal(g, w)

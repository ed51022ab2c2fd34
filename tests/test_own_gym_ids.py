"""privrl's own gymnasium ids (privrl/RiverSwim-v0, ...) in a sweep's env table, GymnasiumTask and
the CLI: they register themselves wherever the environment is built (the calling process, a thread,
a worker process of backend = "processes"), with no register_gymnasium_envs() call first."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("gymnasium")
pytest.importorskip("pandas")

import gymnasium as gym

import privrl
from privrl.agents import LSVIUCB
from privrl.envs import RiverSwim, as_gymnasium
from privrl.experiment import sweep
from privrl.experiment.environments import GYM_IDS, GymnasiumTask, register_gymnasium_envs
from privrl.experiment.parsing import build_config
from privrl.experiment.sweep import run_seed_sequence
from privrl.privacy import NonPrivate

RIVER = {"name": "gymnasium", "id": "privrl/RiverSwim-v0", "H": 5, "S": 4, "model": False}
AGENTS = {"L": {"algorithm": "LSVI-UCB", "privacy": "none"}}


@pytest.fixture
def unregistered():
    """privrl's ids absent from this process's gymnasium registry (another test may have registered
    them), and absent again after the test."""

    def drop():
        for gym_id in GYM_IDS:
            gym.registry.pop(gym_id, None)

    drop()
    yield
    drop()


def test_a_sweep_names_an_own_id_unregistered(unregistered):
    """Each run is privrl.learn on as_gymnasium(RiverSwim(S=4)) with the run's streams, bit for bit:
    the id resolves to privrl's environment built with the table's make keywords (H = 5 is the
    learner's horizon, not a make keyword: the model keeps its default H = 20)."""
    kw = {"agents": AGENTS, "seeds": 2, "episodes": 60, "progress": False, "log_every": 1}
    df, manifest = sweep(env=RIVER, **kw)
    config = build_config({"env": RIVER, "agents": AGENTS, "seeds": 2, "episodes": 60})
    specs = list(config.studies[0].runs(config.root_seed))
    assert len(specs) == 2 and set(df["run_id"]) == {s.run_id for s in specs}
    for spec in specs:
        agent_seq, env_seq = run_seed_sequence(spec).spawn(2)
        env = as_gymnasium(RiverSwim(S=4))
        features = GymnasiumTask("privrl/RiverSwim-v0", 5, S=4).features
        agent = LSVIUCB(features, NonPrivate(), episodes=60, seed=agent_seq, **dict(spec.options))
        returns = privrl.learn(agent, env, seed=env_seq, progress=False).returns
        rows = df[df["run_id"] == spec.run_id].sort_values("episode")
        assert np.array_equal(rows["return"].to_numpy(), returns)
        assert manifest["runs"][spec.run_id]["env"] == "privrl/RiverSwim-v0(H=5, S=4, learned by interaction)"


def test_worker_processes_register_it_themselves(unregistered):
    """A worker of backend = "processes" (forkserver or spawn: it does not inherit the parent's
    registry) builds its run's environment from the id: the same table as on threads."""
    register_gymnasium_envs()  # in this process only: the workers must do without it
    kw = {"env": RIVER, "agents": AGENTS, "seeds": 2, "episodes": 40, "progress": False, "n_jobs": 2}
    threads, _ = sweep(**kw)
    procs, _ = sweep(**kw, backend="processes")
    cols = ["run_id", "episode", "return", "cum_return"]
    a = threads[cols].sort_values(cols[:2]).reset_index(drop=True)
    b = procs[cols].sort_values(cols[:2]).reset_index(drop=True)
    assert len(a) == 80 and a.equals(b)


def test_an_unknown_own_id_names_the_namespace_ids(unregistered):
    """An id of the privrl/ namespace that privrl does not define is gymnasium's own 'doesn't exist'
    error for the registered namespace, not 'Namespace privrl not found'."""
    with pytest.raises(privrl.experiment.ConfigError, match="privrl/RiverSwam-v0") as info:
        sweep(env={**RIVER, "id": "privrl/RiverSwam-v0"}, agents=AGENTS, episodes=5, progress=False)
    assert "Namespace privrl not found" not in str(info.value)


def test_cli_runs_an_own_id(tmp_path):
    """privrl run on a config that names privrl/RiverSwim-v0: a fresh process, nothing registered."""
    config = tmp_path / "river.toml"
    config.write_text(
        "episodes = 30\nseeds = 1\n"
        '[env]\nname = "gymnasium"\nid = "privrl/RiverSwim-v0"\nH = 5\nS = 4\nmodel = false\n'
        '[agents.L]\nalgorithm = "LSVI-UCB"\nprivacy = "none"\n'
    )
    out = tmp_path / "res"
    cmd = [sys.executable, "-m", "privrl", "run", str(config), "-o", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    records = json.loads((out / "manifest.json").read_text())["runs"]
    assert [r["env"] for r in records.values()] == ["privrl/RiverSwim-v0(H=5, S=4, learned by interaction)"]


def test_a_model_table_naming_an_own_id_points_to_the_privrl_environment(unregistered):
    """Without model = false the table asks for a model, which privrl/RiverSwim-v0 has (it is
    privrl's RiverSwim) but not as a transition table: the error names the privrl environment
    (it said 'has no model'), and the table it gives runs with exact regret, the regret of
    privrl.run on RiverSwim(S=4, H=5) with the run's streams."""
    table = {k: v for k, v in RIVER.items() if k != "model"}
    with pytest.raises(privrl.experiment.ConfigError, match="privrl's RiverSwim behind as_gymnasium") as info:
        sweep(env=table, agents=AGENTS, episodes=5, progress=False)
    assert 'env = {name = "RiverSwim", ...}' in str(info.value) and "has no model" not in str(info.value)
    named = {"name": "RiverSwim", "H": 5, "S": 4}
    df, _ = sweep(env=named, agents=AGENTS, seeds=1, episodes=20, progress=False, log_every=1)
    (spec,) = build_config({"env": named, "agents": AGENTS, "seeds": 1, "episodes": 20}).studies[0].runs(0)
    agent_seq, env_seq = run_seed_sequence(spec).spawn(2)
    env = RiverSwim(S=4, H=5)
    agent = LSVIUCB(env, NonPrivate(), episodes=20, seed=agent_seq, **dict(spec.options))
    regret = privrl.run(agent, env, seed=env_seq, progress=False).regret
    assert np.array_equal(df.sort_values("episode")["regret"].to_numpy(), regret)


def test_from_gymnasium_names_the_model_behind_an_own_id(unregistered):
    """from_gymnasium takes an id string and gymnasium.make's it; privrl/RiverSwim-v0 gave gymnasium's
    "Namespace privrl not found" (unregistered), and the made env (registered, or as_gymnasium(mdp))
    "has no model ... (FrozenLake, CliffWalking, Taxi)". It is privrl's own model: each is a ShapeError
    naming the model to use, and the id is refused without being made or registered."""
    from privrl.envs import from_gymnasium
    from privrl.exceptions import ShapeError

    with pytest.raises(
        ShapeError, match=r"'privrl/RiverSwim-v0' is a privrl model .* privrl\.envs\.RiverSwim\(\.\.\.\)"
    ):
        from_gymnasium("privrl/RiverSwim-v0", 5)
    with pytest.raises(ShapeError, match=r"privrl\.envs\.HardToLearn\(\.\.\.\)"):
        from_gymnasium("privrl/HardToLearn-v0", 5)
    assert "privrl/RiverSwim-v0" not in gym.registry
    register_gymnasium_envs()
    for env in (gym.make("privrl/RiverSwim-v0", S=4), as_gymnasium(RiverSwim(S=4))):
        with pytest.raises(ShapeError, match=r"is a privrl model wrapped .* env\.unwrapped\.mdp") as info:
            from_gymnasium(env, 5)
        assert "has no model" not in str(info.value)
    with pytest.raises(ShapeError, match="has no model"):  # another table-less env, as before
        from_gymnasium(gym.make("Blackjack-v1"), 5)


def test_a_wrapped_model_pickles_and_steps_on_where_it_was():
    """as_gymnasium's class was local to a function: pickle refused the environment ("Can't pickle
    local object '_adapter_class.<locals>.GymnasiumAdapter'"), so it could not go to a process pool.
    A pickled copy, mid-episode, steps on as the original does (the same model, step and stream)."""
    import pickle

    register_gymnasium_envs()
    for env in (as_gymnasium(RiverSwim(S=4, H=6)), gym.make("privrl/RiverSwim-v0", S=4)):
        env.reset(seed=5)
        for _ in range(2):
            env.step(1)
        copy = pickle.loads(pickle.dumps(env))
        assert type(copy.unwrapped) is type(env.unwrapped)
        ours = [env.step(a) for a in (1, 0, 1)]
        theirs = [copy.step(a) for a in (1, 0, 1)]
        assert ours == theirs
    # and in a fresh process, as a process pool's worker loads it (the class is built there on demand)
    env = as_gymnasium(RiverSwim(S=4, H=6))
    env.reset(seed=5)
    blob = pickle.dumps(env)
    code = (
        "import pickle, sys\n"
        "e = pickle.loads(sys.stdin.buffer.read())\n"
        "print([e.step(1)[0] for _ in range(3)])"
    )
    out = subprocess.run([sys.executable, "-c", code], input=blob, capture_output=True, check=True)
    assert out.stdout.decode().strip() == str([env.step(1)[0] for _ in range(3)])

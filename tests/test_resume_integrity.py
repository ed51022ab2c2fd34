"""A resumed sweep reads a finished run's table only when it is that run's rows: a table cut short,
emptied to its header or replaced by another run's file is recomputed, like an unreadable one, and
load_results names it instead of filing foreign rows under the run id; the manifest names what
a run's numbers depend on."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from privrl.experiment import ConfigError, load_results, sweep
from privrl.experiment.results import ResultStore

BASE = dict(
    env={"name": "RiverSwimMixture", "S": 4, "H": 3},
    agents={"JDP": {"algorithm": "UCRL-VTR", "privacy": "jdp"}},
    epsilons=[10.0, 1.0],
    seeds=[0, 1],
    episodes=40,
    log_every=10,
    format="csv",
)


def _table(store: ResultStore, run_id: str):
    return store.runs_dir / json.loads(store.meta_path(run_id).read_text())["table"]


@pytest.mark.parametrize("damage", ["cut short", "header only", "another run's rows"])
def test_a_table_that_is_not_the_runs_rows_is_recomputed(tmp_path, damage):
    out = tmp_path / "res"
    df1, m1 = sweep(**BASE, outdir=out)
    store = ResultStore(out, "csv")
    first, other = list(m1["runs"])[:2]
    table = _table(store, first)
    rows = pd.read_csv(table, dtype=str, keep_default_na=False)
    if damage == "cut short":
        rows.iloc[:2].to_csv(table, index=False)
    elif damage == "header only":
        rows.iloc[:0].to_csv(table, index=False)
    else:
        table.write_bytes(_table(store, other).read_bytes())
    with pytest.raises(ConfigError, match=rf"is not the table of run {first}.*--fresh"):
        load_results(out)
    df2, m2 = sweep(**BASE, outdir=out)
    assert (m2["n_computed"], m2["n_resumed"]) == (1, len(m1["runs"]) - 1)
    pd.testing.assert_frame_equal(df1.drop(columns="wall_time"), df2.drop(columns="wall_time"))
    pd.testing.assert_frame_equal(load_results(out).drop(columns="wall_time"), df2.drop(columns="wall_time"))


def test_the_manifest_records_scikit_learns_version_for_a_classification_bandit(tmp_path):
    """A ClassificationBandit study reads scikit-learn's bundled dataset: the manifest names the
    version that provided it (the env spec alone does not pin the data)."""
    import importlib.metadata

    from privrl.experiment import load_manifest

    pytest.importorskip("sklearn")
    out = tmp_path / "bandit"
    sweep(
        env={"name": "ClassificationBandit", "dataset": "wine", "seed": 0},
        agents={"LinUCB": {"algorithm": "LinUCB", "privacy": "none"}},
        episodes=20,
        outdir=out,
    )
    assert load_manifest(out)["versions"]["scikit-learn"] == importlib.metadata.version("scikit-learn")


def test_the_manifest_names_the_commit_the_rust_core_was_built_from(tmp_path):
    """In a checkout, git_commit is the source tree's; the agents run the compiled extension, which
    may be an older commit's build: the manifest names that one too."""
    from privrl import _core
    from privrl.experiment import load_manifest

    out = tmp_path / "ext"
    sweep(**{**BASE, "epsilons": [10.0], "seeds": [0]}, outdir=out)
    assert load_manifest(out)["extension_commit"] == (_core.GIT_COMMIT or None)


def test_long_study_and_agent_names_make_run_ids_that_fit_a_file_name(tmp_path):
    """A run id names the run's files: a study and agent of 150 and 120 characters wrote
    runs/<a 300-character id>.parquet (OSError 'File name too long' after the first run had been
    computed). Their ids are cut to fit, stay apart (two agents of one long prefix) and resume;
    an id that fits is as it was."""
    from privrl.experiment import build_config

    agents = {"J": BASE["agents"]["JDP"]}
    pinned = build_config(
        {"env": BASE["env"], "agents": agents, "epsilons": [10.0], "seeds": [0], "episodes": 20}
    )
    assert [r.run_id for r in pinned.runs()] == ["RiverSwimMixture__J__eps10__seed0__3869fce1"]
    long = {"A" * 120 + "1": BASE["agents"]["JDP"], "A" * 120 + "2": BASE["agents"]["JDP"]}
    study = {"name": "S" * 150, "env": BASE["env"], "agents": long}
    kw = dict(studies=[study], epsilons=[10.0], seeds=[0, 12345678901234], episodes=20, format="csv")
    _, m1 = sweep(**kw, outdir=tmp_path / "long")
    assert len(m1["runs"]) == 4 and all(len(r) <= 234 for r in m1["runs"])  # config.MAX_RUN_ID
    assert all(r.startswith("SSSS") and "__AAAA" in r for r in m1["runs"])
    _, m2 = sweep(**kw, outdir=tmp_path / "long")
    assert (m2["n_computed"], m2["n_resumed"]) == (0, 4)


def test_two_runs_on_one_generator_concatenate_as_docs_harness_md_says():
    """docs/harness.md: run episodes=k, then run again on the same numpy Generator: the gaps and
    returns concatenate to the one run's bit for bit, and its regret is their cumulative sum."""
    import numpy as np

    import privrl
    from privrl.agents import LSVIUCB
    from privrl.envs import RandomLinearMDP
    from privrl.privacy import JointDP

    env = RandomLinearMDP(S=10, A=3, d=4, H=3, seed=0)
    whole = privrl.run(
        LSVIUCB(env, JointDP(1.0, 1e-5), episodes=40, seed=3), env, seed=np.random.default_rng(5)
    )
    agent, rng = LSVIUCB(env, JointDP(1.0, 1e-5), episodes=40, seed=3), np.random.default_rng(5)
    first, second = privrl.run(agent, env, 15, seed=rng), privrl.run(agent, env, seed=rng)
    gaps = np.r_[first.gaps, second.gaps]
    np.testing.assert_array_equal(gaps, whole.gaps)
    np.testing.assert_array_equal(np.r_[first.returns, second.returns], whole.returns)
    np.testing.assert_array_equal(np.cumsum(gaps), whole.regret)


def test_prepare_removes_only_temporaries_no_live_writer_can_own(tmp_path):
    """A sweep starting on a results folder removed every leftover temporary file (runs/.*.tmp),
    including one another sweep running on the folder was writing (its os.replace then failed).
    It now removes those of a writer that is gone (the pid in the name is not alive: a killed
    sweep's), and any older than STALE_TEMPORARY_AGE (a reused pid); a live writer's stay."""
    import os
    import subprocess
    import sys
    import time

    from privrl.experiment.results import STALE_TEMPORARY_AGE, ResultStore

    runs = tmp_path / "out" / "runs"
    runs.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        names = {
            "live": f".a.parquet.{live.pid}.tmp",
            "mine": f".b.json.{os.getpid()}.tmp",
            "dead": f".c.parquet.{dead.pid}.tmp",
            "old_live": f".d.json.{live.pid}.tmp",
            "no_pid": ".e.json.tmp",
        }
        for name in names.values():
            (runs / name).write_text("partial")
        old = time.time() - STALE_TEMPORARY_AGE - 60
        os.utime(runs / names["old_live"], (old, old))
        ResultStore(tmp_path / "out", fmt="csv").prepare()
        left = {k for k, name in names.items() if (runs / name).exists()}
        assert left == {"live", "mine"}
    finally:
        live.kill()
        live.wait()

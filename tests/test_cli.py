"""Tests of the `privrl` command line: run from a TOML config or flags, resume after SIGKILL, plot and
report commands, the bundled demo config, and clear errors (exit status 2) for bad configs."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from privrl.experiment import build_config, load_results, sweep
from privrl.experiment.cli import main

CONFIG = """
name = "tiny"
episodes = 40
log_every = 10
seeds = [0, 1]
epsilons = [inf, 5.0]
delta = 1e-5

[env]
name = "RandomLinearMixtureMDP"
S = 6
A = 3
d = 3
H = 5
seed = 1

[agents."JDP-UCRL-VTR"]
algorithm = "UCRL-VTR"
privacy = "jdp"
beta_scale = 0.1

[agents."LDP-UCRL-VTR"]
algorithm = "UCRL-VTR"
privacy = "ldp"
beta_scale = 0.1
"""
ENV = {"name": "RandomLinearMixtureMDP", "S": 6, "A": 3, "d": 3, "H": 5, "seed": 1}
AGENTS = {
    "JDP-UCRL-VTR": {"algorithm": "UCRL-VTR", "privacy": "jdp", "beta_scale": 0.1},
    "LDP-UCRL-VTR": {"algorithm": "UCRL-VTR", "privacy": "ldp", "beta_scale": 0.1},
}


def same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a.drop(columns="wall_time"), b.drop(columns="wall_time"), check_exact=True)


@pytest.fixture
def config(tmp_path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(CONFIG)
    return path


def test_run_config_writes_results_report_and_plot(config, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["run", str(config), "--out", str(out), "--report", "--plot", "--progress"]) == 0
    captured = capsys.readouterr()
    assert "final regret" in captured.out and "LDP-UCRL-VTR" in captured.out
    assert "ep/s" in captured.err  # the episodes progress bar reports its rate (--progress: not a tty)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and len(manifest["runs"]) == 8
    assert manifest["config"]["name"] == "tiny"
    assert all(r["calibration"]["beta_used"] > 0 for r in manifest["runs"].values())
    assert (out / "regret.png").stat().st_size > 0 and (out / "regret.svg").exists()
    expected, _ = sweep(
        env=ENV, agents=AGENTS, epsilons=[float("inf"), 5.0], seeds=[0, 1], episodes=40, log_every=10
    )
    same(load_results(out), expected)


def test_flags_are_the_same_sweep_as_the_config(config, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert (
        main(["run", str(config), "--out", str(a), "--no-progress", "--seeds", "1", "--episodes", "20"]) == 0
    )
    flags = [
        "run",
        "--out",
        str(b),
        "--no-progress",
        "--env",
        "RandomLinearMixtureMDP",
        "--env-arg",
        "S=6,A=3,d=3",
        "--env-arg",
        "H=5,seed=1",
        "--episodes",
        "20",
        "--log-every",
        "10",
        "--seeds",
        "1",
        "--epsilons",
        "inf,5",
        "--delta",
        "1e-5",
        "--agent",
        "JDP-UCRL-VTR:algorithm=UCRL-VTR,privacy=jdp,beta_scale=0.1",
        "--agent",
        "LDP-UCRL-VTR:algorithm=UCRL-VTR,privacy=ldp,beta_scale=0.1",
    ]
    assert main(flags) == 0
    same(load_results(a), load_results(b))
    assert len(load_results(a)) == 4 * 2  # one seed (--seeds 1 is a count), 4 runs, 2 logged episodes


FLAG_SWEEP = ["run", "--no-progress", "--env", "RiverSwimMixture", "--episodes", "5", "--epsilons", "1"]


def test_mechanism_and_calibration_flags_fill_in_the_agents(tmp_path):
    out = tmp_path / "out"
    argv = [
        *FLAG_SWEEP,
        "--out",
        str(out),
        "--agent",
        "J:algorithm=UCRL-VTR",  # privacy defaults to jdp
        "--agent",
        "T:algorithm=UCRL-VTR,privacy=jdp,mechanism=tree,calibration=paper",  # its own keys win
        "--agent",
        "L:algorithm=UCRL-VTR,privacy=ldp",
        "--agent",
        "N:algorithm=UCRL-VTR,privacy=none",
        "--mechanism",
        "honaker",
        "--calibration",
        "tight",
    ]
    assert main(argv) == 0
    runs = {r["agent"]: r for r in json.loads((out / "manifest.json").read_text())["runs"].values()}
    assert {a: r["mechanism"] for a, r in runs.items()} == {"J": "honaker", "T": "tree", "L": None, "N": None}
    assert (
        runs["J"]["calibration"]["mechanism"] == "honaker" and runs["T"]["calibration"]["mechanism"] == "tree"
    )
    assert runs["J"]["label"] == "UCRL-VTR[JDP(eps=1, delta=1e-05, tight, honaker)]"
    assert runs["L"]["label"] == "UCRL-VTR[LDP(eps=1, delta=1e-05, tight)]"
    assert runs["T"]["label"] == "UCRL-VTR[JDP(eps=1, delta=1e-05, paper)]"
    assert runs["N"]["privacy"] == "none"


def test_exploration_and_calibration_flags_reach_every_agent(tmp_path):
    out = tmp_path / "out"
    argv = [
        *FLAG_SWEEP,
        "--out",
        str(out),
        "--agent",
        "J:algorithm=UCRL-VTR",
        "--agent",
        "O:algorithm=UCRL-VTR,exploration=optimism",  # its own key wins
        "--agent",
        "N:algorithm=UCRL-VTR,privacy=none",
        "--exploration",
        "sampling",
        "--calibration",
        "practical",
    ]
    assert main(argv) == 0
    runs = {r["agent"]: r for r in json.loads((out / "manifest.json").read_text())["runs"].values()}
    assert runs["J"]["label"] == "UCRL-VTR[JDP(eps=1, delta=1e-05, practical, blt), sampling]"
    assert runs["O"]["label"] == "UCRL-VTR[JDP(eps=1, delta=1e-05, practical, blt)]"
    assert runs["N"]["label"] == "UCRL-VTR[NonPrivate(practical), sampling]"


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--agent", "L:algorithm=UCRL-VTR,privacy=ldp", "--mechanism", "blt"], "--mechanism: no jdp agent"),
        (["--mechanism", "blt"], "--mechanism: applies to --agent agents"),
        (
            ["--agent", "J:algorithm=UCRL-VTR,mechanism=cauchy"],
            "agents.J.mechanism: unknown mechanism 'cauchy'",
        ),
        (
            ["--agent", "J:algorithm=UCRL-VTR", "--mechanism", "honaker", "--delta", "0"],
            "agents.J.mechanism: 'honaker'",
        ),
    ],
)
def test_bad_mechanism_flags_are_a_clear_error(tmp_path, capsys, extra, needle):
    assert main([*FLAG_SWEEP, "--out", str(tmp_path / "o"), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"privrl: error: {needle}"), err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "flags, needle",
    [
        (["--env", "RiverSwimMixture"], "give one --agent NAME:algorithm="),
        (["--env", "RiverSwimMixture", "--env-arg", "S=4", "-K", "5"], "give one --agent NAME:algorithm="),
        (["-K", "5"], "give --env NAME and one --agent NAME:algorithm="),
    ],
)
def test_flags_without_an_agent_ask_for_agent_flags(tmp_path, capsys, flags, needle):
    """Flags without --agent and without a config said 'agents: expected a non-empty table of name ->
    agent spec, got None', a config file's words: a command-line user is told the flag to pass."""
    assert main(["run", *flags, "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"privrl: error: --agent: missing: {needle}"), err
    assert "(or a config file)" in err and "None" not in err and not (tmp_path / "o").exists()


_LSVI = ["--env", "RandomLinearMDP", "--env-arg", "S=6,A=2,d=3,H=3"]
_LAKE = ["--env", "FrozenLake", "--agent", "N:algorithm=LSVI-UCB,privacy=none"]
_PSRL = ["--env", "RiverSwimMixture", "--agent"]  # a FiniteMDP: PSRL runs on its S, A and H


@pytest.mark.parametrize(
    "extra, needle",
    [
        (
            ["--env", "RiverSwimMixture", "--agent", "J:algorithm=UCRL-VTR,privacy=jdp,exploration=foo"],
            "agents.J.exploration: must be one of 'optimism', 'sampling', got 'foo'",
        ),
        ([*_LSVI, "--agent", "J:algorithm=LSVI-UCB,privacy=jdp,batches=foo"], "agents.J.batches: must be"),
        ([*_LSVI, "--agent", "J:algorithm=LSVI-UCB,privacy=jdp,batches=0"], "agents.J.batches: must be an"),
        ([*_LSVI, "--agent", "L:algorithm=LSVI-UCB,privacy=ldp"], "agents.L.privacy: LocalDP is not"),
        ([*_LAKE, "--env-arg", "H=8,map_name=9x9"], "env: FrozenLake: map_name must be one of gymnasium's"),
        ([*_LAKE, "--env-arg", "H=8,is_slippery=no"], "env: FrozenLake: is_slippery must be True or False"),
        ([*_PSRL, "L:algorithm=PSRL,privacy=ldp"], "agents.L.privacy: LocalDP is not available for PSRL"),
        ([*_PSRL, "J:algorithm=PSRL,m=0"], "agents.J.m: must be an integer >= 1, got 0"),
        ([*_PSRL, "J:algorithm=PSRL,batches=weekly"], "agents.J.batches: must be 'static', 'every'"),
        ([*_PSRL, "J:algorithm=PSRL,sensitivity=drop"], "agents.J.sensitivity: must be one of 'clip'"),
        ([*_PSRL, "J:algorithm=PSRL,exploration=optimism"], "agents.J.exploration: unknown option"),
        ([*_PSRL, "J:algorithm=PSRL,mechanism=honaker"], "agents.J.mechanism: 'honaker' does not apply to"),
        ([*_PSRL, "J:algorithm=PSRL", "--mechanism", "tree"], "--mechanism: no --agent agent uses it: PSRL"),
        ([*_PSRL, "J:algorithm=PSRL", "--delta", "0"], "agents.J: PSRL's release is Gaussian: delta must"),
        (
            ["--env", "ClassificationBandit", "--env-arg", "dataset=wine", "--agent", "J:algorithm=PSRL"],
            "agents.J.algorithm: PSRL needs a FeatureMap (privrl.learn) or a FiniteMDP; got ContextualBandit",
        ),
    ],
)
def test_bad_agent_options_and_env_arguments_stop_before_anything_runs(tmp_path, capsys, extra, needle):
    """Audit items 3-5: a bad exploration / batches, LocalDP on LSVI-UCB, a bad FrozenLake map or
    is_slippery=no ran (or crashed with a traceback) mid-sweep, exit 1 with a failed manifest; they
    are config errors found by the preflight: exit 2, one error line, nothing written."""
    if "FrozenLake" in extra:
        pytest.importorskip("gymnasium")
    out = tmp_path / "o"
    argv = ["run", "--no-progress", "--episodes", "10", "--epsilons", "1", "--out", str(out), *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"privrl: error: {needle}"), err
    assert "Traceback" not in err and not out.exists()


def test_psrl_runs_from_flags_with_its_options_and_a_report(tmp_path, capsys):
    """PSRL by name (any case) on the registered FrozenLake, with its constructor options m and
    batches and the shared --mechanism / --exploration flags, which fill in the LSVI-UCB agent
    and skip PSRL (no continual-release mechanism, always sampling): the runs, their manifest
    (label, calibration) and the privacy-report columns of the summary."""
    pytest.importorskip("gymnasium")
    out = tmp_path / "o"
    argv = ["run", "--no-progress", "--env", "FrozenLake", "-K", "60", "--epsilons", "10", "--seeds", "0,1"]
    agents = ["--agent", "P:algorithm=psrl,m=2,batches=3", "--agent", "N:algorithm=PSRL,privacy=none"]
    agents += ["--agent", "U:algorithm=LSVI-UCB,batches=2"]
    agents += ["--mechanism", "tree", "--exploration", "optimism"]
    assert main([*argv, "--out", str(out), *agents, "--report"]) == 0
    runs = {r["agent"]: r for r in json.loads((out / "manifest.json").read_text())["runs"].values()}
    assert {a: (r["status"], r["algorithm"]) for a, r in runs.items()} == {
        "P": ("done", "PSRL"),
        "N": ("done", "PSRL"),
        "U": ("done", "LSVI-UCB"),
    }
    p, u = runs["P"], runs["U"]
    assert p["options"] == {"m": 2, "batches": 3} and p["mechanism"] is None
    cal = p["calibration"]
    assert (cal["m"], cal["B"], cal["mechanism"]) == (2, 3, "increments")
    assert p["label"].startswith("PSRL[JDP(eps=10, delta=1e-05") and "tree" not in p["label"]
    assert u["mechanism"] == "tree" and u["options"]["exploration"] == "optimism"
    # the default discrete sampler: the tight accountant certifies it; the paper-style argument is
    # the continuous Gaussian's, so it does not (as for every agent's discrete release)
    assert cal["sampler"] == "discrete"
    assert p["privacy_report"]["within_target"] == {"paper": False, "tight": True}
    table = capsys.readouterr().out
    assert "sigma=6.32" in table  # Delta / mu at m = 2: 2 sqrt(2 H) / 2.0004 (H 20)
    results = load_results(out)
    assert results[results.agent == "P"].run_id.nunique() == 2 and results.regret.notna().all()


def test_help_says_which_mechanism_and_demo_agents_run(capsys):
    """`--mechanism` said "default: tree" where a jdp agent runs BLT (resolve_mechanism's default
    under the default calibration); `demo --bandit` said "vs LDP" where its config has no LDP agent."""
    import argparse

    from privrl.experiment.cli import _parser
    from privrl.privacy import JointDP
    from privrl.privacy.continual import resolve_mechanism

    commands = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    helps = {c: {a.dest: a.help for a in commands[c]._actions} for c in ("run", "demo")}
    default = JointDP(1.0, 1e-5).mechanism
    assert default == resolve_mechanism("jdp", "adaptive", pure=False) == "blt"
    mechanism = helps["run"]["mechanism"]
    assert f"(default: {default} under the practical and adaptive calibrations with delta > 0, else tree" in (
        mechanism
    )
    assert "default: tree, the paper's" not in mechanism
    bandit = helps["demo"]["bandit"]
    assert "LinUCB on digits, non-private vs JDP (needs scikit-learn)" in bandit and "LDP" not in bandit
    assert main(["demo", "--bandit", "--print-config"]) == 0
    config = capsys.readouterr().out
    assert 'privacy = "ldp"' not in config and 'privacy = "jdp"' in config
    with pytest.raises(SystemExit):  # the help prints
        main(["run", "--help"])
    assert "--mechanism" in capsys.readouterr().out


@pytest.mark.parametrize("flag", ["--mechanism", "--calibration"])
def test_unknown_flag_values_are_refused_by_the_parser(capsys, flag):
    with pytest.raises(SystemExit) as exc:
        main([*FLAG_SWEEP, "--agent", "J:algorithm=UCRL-VTR", flag, "cauchy"])
    assert exc.value.code == 2 and "invalid choice: 'cauchy'" in capsys.readouterr().err


@pytest.mark.slow  # two sweeps of 16 runs in subprocesses
def test_resume_after_sigkill_recomputes_only_unfinished_runs(tmp_path):
    # Long enough runs (about 0.1 s each on the episode engine) that the kill lands mid-sweep.
    cfg = tmp_path / "kill.toml"
    cfg.write_text(CONFIG.replace("episodes = 40", "episodes = 20000").replace("seeds = [0, 1]", "seeds = 4"))
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "privrl",
        "run",
        str(cfg),
        "--out",
        str(out),
        "--no-progress",
        "--n-jobs",
        "1",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    runs = out / "runs"
    deadline = time.monotonic() + 60
    try:
        while len(list(runs.glob("*.json"))) < 3:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the sweep never got going"
            time.sleep(0.01)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()  # waits and closes the pipes (an unclosed pipe is a ResourceWarning)
    finished = {p.name: p.stat().st_mtime_ns for p in runs.iterdir() if p.suffix == ".json"}
    assert 3 <= len(finished) < 16, "the kill must land mid-sweep"
    assert not (out / "results.parquet").exists() and not (out / "results.csv").exists()
    assert json.loads((out / "manifest.json").read_text())["status"] == "running"  # no status key before
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert f"{16 - len(finished)} runs computed, {len(finished)} resumed" in res.stderr
    for name, mtime in finished.items():  # finished runs were not rewritten
        assert (runs / name).stat().st_mtime_ns == mtime
    assert not list(out.rglob("*.tmp"))
    expected, _ = sweep(
        env=ENV, agents=AGENTS, epsilons=[float("inf"), 5.0], seeds=4, episodes=20000, log_every=10
    )
    same(load_results(out), expected)


def test_ctrl_c_saves_finished_runs_and_exits_130(tmp_path):
    cfg = tmp_path / "int.toml"
    # runs long enough (about 0.1 s each) that the signal lands mid-sweep even when this process
    # is scheduled late on a loaded machine (with 400 episodes CI once saw the sweep finish first)
    cfg.write_text(CONFIG.replace("episodes = 40", "episodes = 4000").replace("seeds = [0, 1]", "seeds = 4"))
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "privrl", "run", str(cfg), "--out", str(out), "--no-progress"]
    # a user's Ctrl-C: SIGINT with its default action, even when pytest itself was started as a
    # background job of a non-interactive shell (which starts it with SIGINT ignored)
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 60
    while len(list((out / "runs").glob("*.json"))) < 2:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    manifest = json.loads((out / "manifest.json").read_text())
    done = len(list((out / "runs").glob("*.json")))
    assert manifest["status"] == "interrupted" and 2 <= done < 16
    assert not list(out.rglob("*.tmp"))


def test_plot_and_report_commands(config, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["run", str(config), "--out", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["plot", str(out), "--output", str(tmp_path / "fig.png"), "--band", "ci95"]) == 0
    assert (tmp_path / "fig.png").read_bytes()[:4] == b"\x89PNG" and (tmp_path / "fig.svg").exists()
    # JDP and LDP at eps = inf are both the non-private algorithm, plus eps = 5: four curves
    assert "4 curves" in capsys.readouterr().out
    assert main(["report", str(out), "--csv", str(tmp_path / "t.csv")]) == 0
    text = capsys.readouterr().out
    assert "+-" in text and "sigma_B=" in text and "slope" in text
    assert len(pd.read_csv(tmp_path / "t.csv")) == 4


@pytest.mark.parametrize(
    "edit, key",
    [
        (
            ('algorithm = "UCRL-VTR"\nprivacy = "jdp"', 'algorithm = "UCRL-VTZ"\nprivacy = "jdp"'),
            "agents.JDP-UCRL-VTR.algorithm",
        ),
        (("epsilons = [inf, 5.0]", "epsilons = [inf, -5.0]"), "epsilons[1]"),
        (("epsilons = [inf, 5.0]", "epsilons = [inf, 0]"), "epsilons[1]"),
        (('name = "RandomLinearMixtureMDP"', 'name = "RandomMixture"'), "env.name"),
        (("S = 6", "SS = 6"), "env.SS"),
        (('privacy = "ldp"', 'privacy = "cdp"'), "agents.LDP-UCRL-VTR.privacy"),
        (("episodes = 40", "episodes = 4.5"), "episodes"),
        (("episodes = 40", "episodes = 40.0"), "episodes"),  # a size is an integer, as privrl.run's K
        (("log_every = 10", "log_every = 10.0"), "log_every"),
        (("delta = 1e-5", "delta = 2.0"), "delta"),
        (("seeds = [0, 1]", "seeds = [0, 1.0]"), "seeds[1]"),  # seeds, n_jobs, root_seed: integers too
        (("delta = 1e-5", "delta = 1e-5\nn_jobs = 2.0"), "n_jobs"),
        (("delta = 1e-5", "delta = 1e-5\nn_jobs = -1.0"), "n_jobs"),
        (("delta = 1e-5", "delta = 1e-5\nroot_seed = 3.0"), "root_seed"),
    ],
)
def test_bad_config_is_a_clear_error(config, tmp_path, capsys, edit, key):
    config.write_text(CONFIG.replace(*edit, 1))
    assert main(["run", str(config), "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"privrl: error: {key}:"), err
    assert "Traceback" not in err and not (tmp_path / "o").exists()


def test_errors_exit_2_from_the_console(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(CONFIG.replace("epsilons = [inf, 5.0]", "epsilons = [inf, 0.0]"))
    res = subprocess.run(
        [sys.executable, "-m", "privrl", "run", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert res.returncode == 2 and res.stderr.startswith("privrl: error: epsilons[1]: must be > 0"), (
        res.stderr
    )
    for argv, needle in (
        [["run", str(tmp_path / "missing.toml")], "config file not found"],
        [["report", str(tmp_path)], "no manifest.json"],
        [["run"], "give a CONFIG.toml"],
    ):
        res = subprocess.run(
            [sys.executable, "-m", "privrl", *argv], capture_output=True, text=True, timeout=60, cwd=tmp_path
        )
        assert res.returncode == 2 and needle in res.stderr, res.stderr
    (tmp_path / "broken.toml").write_text("episodes = [")
    assert main(["run", str(tmp_path / "broken.toml")]) == 2


def test_unwritable_output_and_version(config, tmp_path, capsys):
    """An output folder that cannot be created is one line and exit 2, not an OSError traceback
    (a file in the path: permissions do not stop root, which CI may be)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert main(["run", str(config), "--out", str(blocker / "results"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("privrl: error: outdir: ") and "a-file is a file, not a folder" in err, err
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    from privrl import __version__

    assert capsys.readouterr().out.strip() == f"privrl {__version__}"


def test_bundled_demo_config_is_valid(capsys):
    from privrl.experiment.cli import _drop_unavailable
    from privrl.experiment.parsing import _tomllib

    assert main(["demo", "--print-config"]) == 0
    raw = _tomllib().loads(capsys.readouterr().out)
    assert {s["env"]["name"] for s in raw["study"]} == {"RiverSwimMixture", "RandomLinearMDP"}
    cfg = build_config(_drop_unavailable(raw))
    runs = cfg.runs()
    assert {r.seed for r in runs} == set(range(3))
    assert {r.epsilon for r in runs} == {float("inf"), 10.0, 1.0, 0.1}
    assert {r.privacy for r in runs if r.study.startswith("UCRL-VTR")} == {"none", "jdp", "ldp"}
    # the demo compares the defaults (adaptive) with the other calibrations of every JDP family
    for study in ("UCRL-VTR", "LSVI-UCB"):
        cals = {r.calibration or "adaptive" for r in runs if r.study.startswith(study) and r.privacy == "jdp"}
        assert cals == {"adaptive", "paper", "tight", "practical"}
    # and separates the mechanism's share of the tight-vs-practical gap (tight on BLT)
    assert any(r.calibration == "tight" and r.mechanism == "blt" for r in runs)
    # the default agents set nothing beyond the privacy model
    defaults = [a for s in raw["study"] for name, a in s["agents"].items() if "calibration" not in a]
    assert defaults and all(set(a) <= {"algorithm", "privacy", "epsilons"} for a in defaults)


def test_bundled_bandit_demo_config_runs(capsys, tmp_path):
    """`privrl demo --bandit`: LinUCB on digits (the registry's ClassificationBandit), the defaults
    at every epsilon, run end to end here on a short horizon."""
    pytest.importorskip("sklearn")
    from privrl.experiment import run_sweep
    from privrl.experiment.parsing import _tomllib

    assert main(["demo", "--bandit", "--print-config"]) == 0
    raw = _tomllib().loads(capsys.readouterr().out)
    assert [s["env"] for s in raw["study"]] == [
        {"name": "ClassificationBandit", "dataset": "digits", "seed": 0}
    ]
    raw["study"][0]["episodes"] = 300
    raw["seeds"] = 1
    cfg = build_config(raw)
    assert {r.epsilon for r in cfg.runs()} == {float("inf"), 10.0, 1.0, 0.1}
    df, _ = run_sweep(cfg, tmp_path / "out", progress=False)
    assert len(df) and df["regret"].between(0, 300).all()


def test_help_and_kernel_tour(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0 and "demo" in capsys.readouterr().out
    assert main(["kernels"]) == 0 and "Sherman-Morrison" in capsys.readouterr().out


def _alive_in_session(sid: int) -> list[int]:
    """Processes of session `sid` that are still running (zombies, already dead, are not)."""
    alive = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":  # fields: state, ppid, pgrp, session, ...
            alive.append(int(stat.parent.name))
    return alive


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kill_9_leaves_no_worker(tmp_path):
    """Issue 13: after `kill -9` of `privrl run` on worker processes, no worker computes on."""
    cfg = tmp_path / "kill.toml"
    cfg.write_text(
        CONFIG.replace("episodes = 40", "episodes = 200000").replace("seeds = [0, 1]", "seeds = 4")
    )
    cmd = [sys.executable, "-m", "privrl", "run", str(cfg), "--out", str(tmp_path / "out"), "--no-progress"]
    cmd += ["-j", "2", "--backend", "processes"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while len(_alive_in_session(proc.pid)) < 4:  # the sweep, the fork server and 2 workers
            assert proc.poll() is None and time.monotonic() < deadline, "the workers never started"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)  # the sweep only, as a user's kill -9 would
        proc.wait()
        deadline = time.monotonic() + 10
        while _alive_in_session(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _alive_in_session(proc.pid) == []
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


def test_docs_ship_with_the_package(capsys):
    """Issue 13: a pip user has the documentation: the wheel installs README.md and docs/*.md to
    <prefix>/share/privrl/docs (maturin's data dir, one link per file), and the CLI says where."""
    root = Path(__file__).resolve().parents[1]
    shipped = root / "python" / "privrl.data" / "data" / "share" / "privrl" / "docs"
    wanted = {p.name for p in (root / "docs").glob("*.md")} | {"README.md"}
    assert {p.name for p in shipped.glob("*.md")} == wanted
    assert all((shipped / name).read_text() for name in wanted)  # links that resolve
    # Issue 22: every image a shipped page shows ships too, where its relative link points, in the
    # source tree and (when installed from a wheel) in the installed copy.
    installed = Path(sys.prefix) / "share" / "privrl" / "docs"
    for where in [shipped] + ([installed] if installed.is_dir() else []):
        for name in wanted:
            for image in re.findall(r"!\[[^\]]*\]\(([^)\s]+\.png)\)", (where / name).read_text()):
                assert (where / image).is_file(), f"{where / name} shows {image}, not shipped"
    assert main(["docs"]) == 0
    out = capsys.readouterr().out
    assert "harness.md" in out
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "privrl docs" in capsys.readouterr().out


def test_console_script_resolves():
    """The `privrl` command of pyproject's [project.scripts] names a function that exists (a moved
    module once left the installed command failing with ModuleNotFoundError)."""
    import importlib

    from privrl.experiment.parsing import _tomllib

    root = Path(__file__).resolve().parents[1]
    scripts = _tomllib().loads((root / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, func = scripts["privrl"].partition(":")
    assert callable(getattr(importlib.import_module(module), func))
    exe = Path(sys.executable).parent / "privrl"
    if exe.exists():  # installed: the command itself runs
        out = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and "privrl docs" in out.stdout, out.stderr


def test_cli_refuses_what_audit_4_found_it_accepting_or_crashing_on(tmp_path, capsys):
    """demo -j 0 ran on every core (run -j 0 is refused); two --agent flags with one name dropped
    the first; a non-UTF-8 config, a corrupt / foreign manifest and plot on a folder with no
    finished run were tracebacks (exit 1) or an empty table (exit 0); a folder as the config
    was "cannot write"; --output fig.pdf wrote fig.png (now: fig.pdf too; fig.gif is refused)."""

    def refused(argv, needle):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"privrl: error: {needle}"), err

    refused(["demo", "-j", "0", "--out", str(tmp_path / "d")], "n_jobs: must be an integer >= 1, got 0")
    assert not (tmp_path / "d").exists()
    twice = ["--agent", "J:algorithm=UCRL-VTR,privacy=jdp", "--agent", "J:algorithm=UCRL-VTR,privacy=ldp"]
    refused([*FLAG_SWEEP, "--out", str(tmp_path / "o"), *twice], "--agent: two agents named 'J'")
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe name = 1")
    refused(["run", str(tmp_path / "bin.toml")], "CONFIG: ")
    refused(["run", str(tmp_path)], f"CONFIG: {tmp_path} is a folder, not a config file")
    huge = ["--env-arg", "S=100000000,H=5", "--agent", "J:algorithm=UCRL-VTR,privacy=jdp"]
    assert main([*FLAG_SWEEP, "--out", str(tmp_path / "h"), *huge]) == 2
    # numpy's MemoryError (a traceback) before audit 5; the dense-size check since
    err = capsys.readouterr().err
    assert err.startswith("privrl: error: env: RiverSwimMixture: "), err  # no header before the refusal
    assert "a dense model with H=5, S=100000000, A=2 needs 1e+17 entries" in err
    assert not (tmp_path / "h").exists()  # refused by the preflight, before the results folder
    out = tmp_path / "r"
    assert main([*FLAG_SWEEP, "--out", str(out), "--agent", "J:algorithm=UCRL-VTR,privacy=jdp"]) == 0
    capsys.readouterr()
    refused(["plot", str(out), "--output", str(tmp_path / "fig.gif")], "output: ")  # matplotlib has no GIF
    assert not (tmp_path / "fig.png").exists()
    # fig.pdf: the PDF asked for, next to the PNG and the SVG (it was refused; before that, fig.png only)
    assert main(["plot", str(out), "--output", str(tmp_path / "fig.pdf")]) == 0
    written = [str(tmp_path / f"fig.{x}") for x in ("png", "svg", "pdf")]
    assert capsys.readouterr().out.splitlines()[:3] == written
    assert (tmp_path / "fig.pdf").read_bytes().startswith(b"%PDF-")
    assert (tmp_path / "fig.png").read_bytes().startswith(b"\x89PNG")
    assert b"privrl-curve-" in (tmp_path / "fig.svg").read_bytes()
    for f in (out / "runs").iterdir():
        f.unlink()
    for f in out.glob("results.*"):
        f.unlink()
    assert main(["report", str(out)]) == 0  # a partial folder: says how many runs are missing
    capsys.readouterr()
    refused(["plot", str(out)], "OUTDIR: no finished runs to plot yet")
    for text in ("garbage", "[1, 2]", '{"a": 1}'):
        (out / "manifest.json").write_text(text)
        refused(["report", str(out)], "OUTDIR: ")
        refused(["plot", str(out)], "OUTDIR: ")


def test_flags_override_each_studys_own_values(tmp_path):
    """-K on a config whose [[study]] tables set their own episodes ran them all at full length."""
    path = tmp_path / "studies.toml"
    path.write_text(
        'seeds = 1\n[[study]]\nenv = "RiverSwimMixture"\nepisodes = 40\nepsilons = [1.0]\n'
        '[study.agents.J]\nalgorithm = "UCRL-VTR"\nprivacy = "jdp"\n'
    )
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--no-progress", "-K", "7", "--epsilons", "2"]) == 0
    (run,) = json.loads((out / "manifest.json").read_text())["runs"].values()
    assert run["episodes"] == 7 and run["epsilon"] == 2.0
    path.write_text(path.read_text().replace("[[study]]", "[study]"))  # one table, not a list
    assert main(["run", str(path), "--out", str(tmp_path / "one"), "--no-progress", "-K", "5"]) == 0
    (run,) = json.loads((tmp_path / "one" / "manifest.json").read_text())["runs"].values()
    assert run["episodes"] == 5


@pytest.mark.parametrize("backend", ["threads", "processes"])
def test_ctrl_c_does_not_wait_for_the_runs_in_flight(tmp_path, backend):
    """On threads (the default) the pool's exit waited for every run in flight to finish, then
    discarded them: an interrupted sweep of long runs kept running for their whole length. The runs
    now stop at their next block of users (threads) or their workers are ended (processes)."""
    cfg = tmp_path / "long.toml"
    cfg.write_text(  # two runs of about 40 s each on this machine
        "episodes = 2000000\nseeds = 2\nepsilons = [inf]\nlog_every = 100000\n"
        '[env]\nname = "RiverSwimMixture"\n[agents.N]\nalgorithm = "UCRL-VTR"\nprivacy = "none"\n'
    )
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "privrl", "run", str(cfg), "--out", str(out), "--no-progress", "-j", "2"]
    proc = subprocess.Popen(
        [*cmd, "--backend", backend],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 60
    while not (out / "manifest.json").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.01)
    time.sleep(1.0)  # both runs under way
    proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    assert time.monotonic() - sent < 10.0  # not the runs' remaining ~39 s


def test_band_key_env_string_and_studies_with_env(tmp_path):
    """Harness audit: the config's `band` was accepted and ignored; `env = "Name"` with --env-arg
    asked for an env it had; sweep(env=..., agents=..., studies=...) dropped env and agents. The
    agent here never errs (regret 0 everywhere): the plot failed ("Data cannot be log-scaled")."""
    path = tmp_path / "b.toml"
    path.write_text(
        'band = "ci95"\nepisodes = 20\nseeds = 2\nepsilons = [inf]\nenv = "RiverSwimMixture"\n'
        '[agents.N]\nalgorithm = "UCRL-VTR"\nprivacy = "none"\n'
    )
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--no-progress", "--plot", "--env-arg", "S=4,H=3"]) == 0
    assert "95% CI" in (out / "regret.svg").read_text()
    runs = json.loads((out / "manifest.json").read_text())["runs"].values()
    assert len(runs) == 2 and all("S=4" in r["env"] and "H=3" in r["env"] for r in runs)
    path.write_text(path.read_text().replace('band = "ci95"', 'band = "iqr"'))
    assert main(["run", str(path), "--out", str(tmp_path / "x"), "--no-progress"]) == 2
    from privrl.experiment import ConfigError

    with pytest.raises(ConfigError, match="not both"):
        sweep(env="RiverSwimMixture", agents={"N": {"algorithm": "UCRL-VTR"}}, studies=[{}], episodes=5)


def test_agent_flags_take_list_and_quoted_values():
    # commas inside [...] or quotes belong to the value (epsilons=[1,10] was split in two)
    from privrl.experiment.cli import _pairs

    got = _pairs('algorithm=UCRL-VTR,epsilons=[1, 10],name="a,b", beta_scale=0.1', "--agent J")
    assert got == {"algorithm": "UCRL-VTR", "epsilons": [1, 10], "name": "a,b", "beta_scale": 0.1}


def test_a_closed_output_pipe_ends_quietly():
    # `privrl docs | head -0`: the reader is gone before privrl writes. It printed "privrl: error:
    # cannot write: Broken pipe" and exited 2, like a failed run; now it stops quietly with 141.
    r, w = os.pipe()
    os.close(r)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "privrl", "docs"], stdout=w, stderr=subprocess.PIPE, text=True, timeout=120
        )
    finally:
        os.close(w)
    assert done.returncode == 141, done.stderr
    assert "error" not in done.stderr.lower() and "Traceback" not in done.stderr


def test_progress_bars_only_in_a_terminal_unless_asked(config, tmp_path, capsys, monkeypatch):
    """`privrl run ... 2> log` filled the log with carriage-return redraws of two bars: the CLI
    passed progress=True unless --no-progress. Without a flag the bars now show only when stderr
    is a terminal; --progress shows them anyway, --no-progress never (the two are exclusive)."""
    from privrl.experiment import run_sweep

    def bars(*flags: str, tty: bool = False) -> str:
        monkeypatch.setattr(sys.stderr, "isatty", lambda: tty, raising=False)
        out = tmp_path / f"out{len(list(tmp_path.iterdir()))}"
        capsys.readouterr()
        assert main(["run", str(config), "--out", str(out), "--seeds", "1", "-K", "8", *flags]) == 0
        return capsys.readouterr().err

    assert "ep/s" not in bars() and "\r" not in bars()  # a log file: the summary lines only
    assert "privrl: 4 runs computed" in bars()
    assert "ep/s" in bars("--progress")
    assert "ep/s" in bars(tty=True)
    assert "ep/s" not in bars("--no-progress", tty=True)
    with pytest.raises(SystemExit):
        main(["run", str(config), "--progress", "--no-progress"])
    assert "not allowed with argument" in capsys.readouterr().err
    with pytest.raises(TypeError, match="progress must be True, False or None"):
        run_sweep(build_config({"env": ENV, "agents": AGENTS}), None, progress="no")


def test_demo_backend_flag_reaches_the_sweep(tmp_path, monkeypatch):
    """`privrl demo --backend processes` was accepted (the sweep flags' parser) and dropped: cmd_demo
    copied -j and --scheduler into the config, not --backend, so the demo ran on threads whatever
    the flag said (found by hB). The flag now sets the config's backend; left out, the bundled
    config's (none: the sweep's default) stays."""
    from privrl.experiment import cli
    from privrl.experiment.cli import _drop_unavailable, demo_config_text
    from privrl.experiment.parsing import _tomllib

    seen = []
    monkeypatch.setattr(cli, "_run_and_show", lambda raw, *a, **k: seen.append(raw) or 0)
    bundled = _drop_unavailable(_tomllib().loads(demo_config_text(False)))
    for backend in ("processes", "threads"):
        assert main(["demo", "--backend", backend, "--out", str(tmp_path / "x"), "-j", "2"]) == 0
        assert seen[-1]["backend"] == backend
        assert build_config(seen[-1]).backend == backend
    assert main(["demo", "--out", str(tmp_path / "x"), "-j", "2"]) == 0
    assert seen[-1].get("backend") == bundled.get("backend")


def test_demo_episodes_flag(tmp_path, capsys, monkeypatch):
    """`privrl demo` had no -K: a quick look at the main job meant copying its config. -K sets every
    study's K (rows every K/100 episodes); without it the demo runs exactly the bundled config (the
    README's table), and K < 1 is refused, naming the flag, before anything is printed."""
    from privrl.experiment import cli
    from privrl.experiment.cli import _drop_unavailable, demo_config_text
    from privrl.experiment.parsing import _tomllib

    seen = []
    monkeypatch.setattr(cli, "_run_and_show", lambda raw, *a, **k: seen.append(raw) or 0)
    for bandit in ([], ["--bandit"]):
        bundled = _drop_unavailable(_tomllib().loads(demo_config_text(bool(bandit))))
        assert main(["demo", *bandit, "--out", str(tmp_path / "x"), "-j", "1"]) == 0
        assert seen[-1]["study"] == bundled["study"]  # untouched: the documented table's K and rows
        ids = [r.run_id for r in build_config(seen[-1]).runs()]
        assert ids == [r.run_id for r in build_config({**bundled, "n_jobs": 1}).runs()]
        assert main(["demo", *bandit, "-K", "250", "--out", str(tmp_path / "x"), "-j", "1"]) == 0
        assert [(s["episodes"], s["log_every"]) for s in seen[-1]["study"]] == [(250, 2)] * len(
            bundled["study"]
        )
        assert {k: v for k, v in seen[-1].items() if k != "study"} == {
            k: v for k, v in seen[-2].items() if k != "study"
        }
    capsys.readouterr()
    for bad in ("0", "-3"):
        assert main(["demo", "-K", bad, "--out", str(tmp_path / "bad")]) == 2
        captured = capsys.readouterr()
        assert (
            captured.out == ""
            and captured.err == f"privrl: error: --episodes: must be an integer >= 1, got {bad}\n"
        )
    assert not (tmp_path / "bad").exists()
    monkeypatch.undo()
    out = tmp_path / "short"
    assert main(["demo", "--episodes", "3", "--out", str(out), "-j", "1", "--no-progress"]) == 0
    runs = json.loads((out / "manifest.json").read_text())["runs"].values()
    assert len(runs) == len(build_config(seen[0]).runs()) and {r["episodes"] for r in runs} == {3}
    assert "final regret" in capsys.readouterr().out


def test_epsilons_flag_replaces_an_agents_own_list(tmp_path, capsys):
    """`privrl run demo.toml --epsilons 1` still ran the agents that list their own epsilons at
    10, 1 and 0.1: the flag did not reach them. It now sets every private run's epsilon, each agent
    whose list it replaced named on stderr; an --agent's own epsilons= with --epsilons is refused."""
    path = tmp_path / "own.toml"
    path.write_text(
        'seeds = 1\nepisodes = 5\nepsilons = [10.0]\n[[study]]\nenv = "RiverSwimMixture"\n'
        '[study.agents.J]\nalgorithm = "UCRL-VTR"\nprivacy = "jdp"\nepsilons = [10.0, 0.1]\n'
        '[study.agents.L]\nalgorithm = "UCRL-VTR"\nprivacy = "ldp"\n'
        '[study.agents.N]\nalgorithm = "UCRL-VTR"\nprivacy = "none"\n'
    )

    def run_epsilons(out: str, *flags: str) -> dict:
        assert main(["run", str(path), "--out", str(tmp_path / out), "--no-progress", *flags]) == 0
        runs = json.loads((tmp_path / out / "manifest.json").read_text())["runs"].values()
        return {(r["agent"], float(r["epsilon"])) for r in runs}  # inf is "inf" in JSON

    assert run_epsilons("config") == {("J", 10.0), ("J", 0.1), ("L", 10.0), ("N", float("inf"))}
    capsys.readouterr()
    assert run_epsilons("flag", "--epsilons", "2,0.5") == {
        ("J", 2.0),
        ("J", 0.5),
        ("L", 2.0),
        ("L", 0.5),
        ("N", float("inf")),
    }
    assert "privrl: --epsilons replaces the epsilons of 'J'\n" in capsys.readouterr().err
    flags = ["run", "--no-progress", "--env", "RiverSwimMixture", "-K", "5", "--out", str(tmp_path / "a")]
    assert main([*flags, "--agent", "J:algorithm=UCRL-VTR,epsilons=[1, 2]", "--epsilons", "3"]) == 2
    assert "--epsilons: an --agent sets its own epsilons too" in capsys.readouterr().err
    assert not (tmp_path / "a").exists()


def test_env_and_agent_flags_say_what_of_the_config_they_replace(tmp_path, capsys):
    """`privrl run my.toml --agent X:...` ran X alone and `--env NAME` dropped the config's env
    table (its S, H, ...) with nothing said, where --epsilons names each agent whose list it
    replaces: a user adding an agent to a config's lost the others silently. Both now say on stderr
    what they replace; flags without a config say nothing."""
    path = tmp_path / "one.toml"
    path.write_text(
        'seeds = 1\nepisodes = 5\n[env]\nname = "RiverSwimMixture"\nS = 4\nH = 5\n'
        '[agents.N]\nalgorithm = "UCRL-VTR"\nprivacy = "none"\n'
        '[agents.L]\nalgorithm = "UCRL-VTR"\nprivacy = "ldp"\n'
    )
    flags = ["--no-progress", "--agent", "X:algorithm=UCRL-VTR,privacy=none", "--env", "RiverSwimMixture"]
    assert main(["run", str(path), "--out", str(tmp_path / "a"), *flags]) == 0
    err = capsys.readouterr().err
    assert "privrl: --agent replaces the config's agents 'N', 'L'\n" in err
    assert "privrl: --env replaces the config's env {'name': 'RiverSwimMixture', 'S': 4, 'H': 5}\n" in err
    config = json.loads((tmp_path / "a" / "manifest.json").read_text())["config"]["studies"][0]
    assert list(config["agents"]) == ["X"] and config["env"] == {"name": "RiverSwimMixture"}
    assert main(["run", *flags, "-K", "5", "--seeds", "1", "--out", str(tmp_path / "b")]) == 0
    assert "replaces the config's" not in capsys.readouterr().err


def test_epsilons_flag_names_each_replaced_agent_with_its_study(tmp_path, capsys):
    """The demo config has an agent 'JDP' in each of its two studies with its own epsilons: the
    stderr line said "replaces the epsilons of 'JDP', 'JDP'"; it now names each one's study."""
    from privrl.experiment.cli import _parser, _raw_config, demo_config_text
    from privrl.experiment.parsing import _tomllib

    path = tmp_path / "demo.toml"
    path.write_text(demo_config_text())
    studies = [
        s["name"] for s in _tomllib().loads(demo_config_text())["study"] if "epsilons" in s["agents"]["JDP"]
    ]
    assert len(studies) == 2
    raw = _raw_config(_parser().parse_args(["run", str(path), "--epsilons", "5"]))
    assert all(a.get("epsilons", [5.0]) == [5.0] for s in raw["study"] for a in s["agents"].values())
    named = ", ".join(f"'JDP' ({s})" for s in studies)
    assert f"privrl: --epsilons replaces the epsilons of {named}\n" in capsys.readouterr().err


def test_delta_flag_replaces_an_agents_own_delta(tmp_path, capsys):
    """`privrl run CONFIG --delta X` replaced the top level's and every study's delta but not the
    delta an agent sets itself (the gap --epsilons had): the flag now sets every private run's delta,
    each agent whose delta it replaced named on stderr; an --agent's own delta= with --delta is refused."""
    path = tmp_path / "own.toml"
    path.write_text(
        'seeds = 1\nepisodes = 5\nepsilons = [1.0]\ndelta = 1e-5\n[[study]]\nenv = "RiverSwimMixture"\n'
        '[study.agents.J]\nalgorithm = "UCRL-VTR"\nprivacy = "jdp"\ndelta = 1e-3\n'
        '[study.agents.K]\nalgorithm = "UCRL-VTR"\nprivacy = "jdp"\n'
    )

    def run_deltas(out: str, *flags: str) -> set:
        assert main(["run", str(path), "--out", str(tmp_path / out), "--no-progress", *flags]) == 0
        runs = json.loads((tmp_path / out / "manifest.json").read_text())["runs"].values()
        return {(r["agent"], float(r["delta"])) for r in runs}

    assert run_deltas("config") == {("J", 1e-3), ("K", 1e-5)}
    capsys.readouterr()
    assert run_deltas("flag", "--delta", "1e-6") == {("J", 1e-6), ("K", 1e-6)}
    assert "privrl: --delta replaces the delta of 'J'\n" in capsys.readouterr().err
    flags = ["run", "--no-progress", "--env", "RiverSwimMixture", "-K", "5", "--out", str(tmp_path / "a")]
    assert main([*flags, "--agent", "J:algorithm=UCRL-VTR,privacy=jdp,delta=1e-3", "--delta", "1e-6"]) == 2
    assert "--delta: an --agent sets its own delta too" in capsys.readouterr().err
    assert not (tmp_path / "a").exists()
    import argparse

    from privrl.experiment.cli import _parser

    commands = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert "an agent's own too" in {a.dest: a.help for a in commands["run"]._actions}["delta"]

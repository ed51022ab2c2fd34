"""Two sweeps writing one results folder at the same time (two terminals, two cluster jobs, a resume
started while the first sweep still runs): real processes, synchronized through files."""

from __future__ import annotations

import importlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from privrl.experiment import ConfigError, build_config, load_manifest, load_results, run_sweep
from privrl.experiment.results import _read_table, normalize_frame

pytest.importorskip("fcntl")

ENV = {"name": "RiverSwimMixture", "S": 3, "H": 3}
JDP = {"J": {"algorithm": "UCRL-VTR", "privacy": "jdp"}}
LDP = {"L": {"algorithm": "UCRL-VTR", "privacy": "ldp"}}


def config(agents: dict) -> dict:
    return {"env": ENV, "agents": agents, "epsilons": [5.0], "seeds": 2, "episodes": 60, "format": "csv"}


# A sweep that stops in on_start (every check passed, nothing written yet) until `go` exists.
HOLD = """
import json, sys, time
from pathlib import Path
from privrl.experiment import build_config, run_sweep
raw, out, flags = json.loads(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
def hold():
    (flags / "started").touch()
    while not (flags / "go").exists():
        time.sleep(0.01)
_, manifest = run_sweep(build_config(raw), out, progress=False, on_start=hold)
print(manifest["n_computed"], manifest["n_resumed"])
"""


def held_sweep(raw: dict, out: Path, flags: Path) -> subprocess.Popen:
    """A sweep in another process, waiting (live, past its checks) until flags/go is touched."""
    flags.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, json.dumps(raw), str(out), str(flags)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (flags / "started").exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the held sweep never started"
        time.sleep(0.01)
    return proc


def finish(proc: subprocess.Popen, flags: Path) -> list[int]:
    """Let the held sweep go on; its manifest's n_computed and n_resumed once it ended."""
    (flags / "go").touch(exist_ok=True)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return [int(n) for n in out.split()]


def hidden(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir() if p.name.startswith("."))


def test_a_sweep_of_another_config_is_refused_while_one_writes_the_folder(tmp_path):
    # Before: both ran; each wrote its own manifest and results file over the other's, so the folder
    # ended with the runs of whichever sweep finished last, and the other said "results in
    # OUT/results.csv" with no warning (probed: a jdp and an ldp config, 12 runs each: the folder's
    # manifest, table and report held 12 of the 24 finished runs).
    out = tmp_path / "out"
    proc = held_sweep(config(JDP), out, tmp_path / "flags")
    try:
        with pytest.raises(ConfigError, match="being written by another sweep of a different config") as exc:
            run_sweep(build_config(config(LDP)), out, progress=False)
        assert exc.value.key == "OUTDIR"
        assert not (out / "runs").exists()  # refused before anything was written
    finally:
        finish(proc, tmp_path / "flags")
    assert set(load_results(out)["agent"]) == {"J"} and load_manifest(out)["status"] == "complete"
    assert hidden(out) == []  # the registrations leave with their sweeps
    # once the first has ended, another config is the sequential case: warned, and it replaces it
    with pytest.warns(UserWarning, match="runs of another config"):
        run_sweep(build_config(config(LDP)), out, progress=False)
    assert set(load_results(out)["agent"]) == {"L"}


def test_sweeps_of_one_config_share_a_folder_and_give_the_same_table(tmp_path):
    out, alone = tmp_path / "out", tmp_path / "alone"
    proc = held_sweep(config(JDP), out, tmp_path / "flags")
    try:
        df, _ = run_sweep(build_config(config(JDP)), out, progress=False)
    finally:
        finish(proc, tmp_path / "flags")
    expected, _ = run_sweep(build_config(config(JDP)), alone, progress=False)
    merged = normalize_frame(_read_table(out / "results.csv"))
    for table in (df, load_results(out), merged):
        pd.testing.assert_frame_equal(table.drop(columns="wall_time"), expected.drop(columns="wall_time"))
    assert load_manifest(out)["status"] == "complete" and hidden(out) == []


def test_a_killed_sweeps_registration_does_not_block_the_folder(tmp_path):
    out = tmp_path / "out"
    proc = held_sweep(config(JDP), out, tmp_path / "flags")
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    assert any(n.startswith(".privrl-sweep-") for n in hidden(out))  # left by kill -9
    df, _ = run_sweep(build_config(config(LDP)), out, progress=False)
    assert set(df["agent"]) == {"L"} and hidden(out) == []


def test_a_sweep_starting_on_another_machine_keeps_this_machines_live_temporary(tmp_path, monkeypatch):
    # Before: a temporary file named its writer's pid only, and a sweep starting on a folder removed
    # one whose pid was not alive on *its* machine: with two cluster jobs sharing a folder over a
    # network file system, the job starting second could remove a run file the first was writing,
    # whose os.replace then failed (FileNotFoundError): that sweep stopped. Here this process plays
    # the writer on node-a, as a pid not alive here, and the sweep on this machine starts mid-write.
    from privrl.experiment.results import ResultStore, atomic_write

    out, dead = tmp_path / "out", subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (out / "runs").mkdir(parents=True)
    real_pid, real_host = os.getpid, socket.gethostname

    def write(path: Path) -> None:
        path.write_text("{}")
        with monkeypatch.context() as here:
            here.setattr(os, "getpid", real_pid)
            here.setattr(socket, "gethostname", real_host)
            ResultStore(out, "csv").prepare()

    with monkeypatch.context() as there:
        there.setattr(os, "getpid", lambda: dead.pid)
        there.setattr(socket, "gethostname", lambda: "node-a.cluster")
        atomic_write(out / "runs" / "r.json", write)
    assert (out / "runs" / "r.json").read_text() == "{}" and not list(out.rglob("*.tmp"))


def test_the_temporary_of_the_longest_run_id_fits_a_file_name(tmp_path, monkeypatch):
    from privrl.experiment.config import MAX_RUN_ID
    from privrl.experiment.results import atomic_write

    monkeypatch.setattr(os, "getpid", lambda: 4_194_304)  # Linux's largest pid: 7 digits
    names = [f"{c * MAX_RUN_ID}.parquet" for c in "ab"]
    for name in names:
        atomic_write(tmp_path / name, lambda p, name=name: p.write_text(name))
    assert [(tmp_path / n).read_text() for n in names] == names


COMPLETE = """
import json, sys
from privrl.experiment import build_config, run_sweep
run_sweep(build_config(json.loads(sys.argv[1])), sys.argv[2], progress=False)
"""


def test_a_sweep_interrupted_after_another_completed_the_folder_keeps_the_complete_manifest(
    tmp_path, monkeypatch
):
    # Before: a sweep of the same config resumed into the folder (or run --fresh) while the first
    # ran, then interrupted (Ctrl-C) after the first completed, wrote its manifest over the
    # complete one: status 'interrupted', 10 of 12 runs 'pending' (probed with privrl run: all 12
    # finished on disk, results.parquet there but no results_file). Here the other sweep, in
    # another process, completes the folder while this one is at its first run, then Ctrl-C.
    # (on threads: a sweep of one process at a time, the default, holds each run's claim while
    # computing it, so the other cannot complete the folder before this one's run ends)
    sweep_module = importlib.import_module("privrl.experiment.sweep")  # the attribute is sweep()
    out, raw, once = tmp_path / "out", config(JDP), threading.Lock()

    def the_other_completes_then_ctrl_c(*args: object, **kwargs: object) -> dict:
        with once:
            if not (out / "results.csv").exists():
                done = subprocess.run(
                    [sys.executable, "-c", COMPLETE, json.dumps(raw), str(out)],
                    capture_output=True,
                    text=True,
                    timeout=120,
                )
                assert done.returncode == 0, done.stderr
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep_module, "execute_run", the_other_completes_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(build_config(raw), out, progress=False, n_jobs=2, backend="threads")
    manifest = load_manifest(out)
    assert manifest["status"] == "complete" and manifest["n_computed"] == 2
    assert {r["status"] for r in manifest["runs"].values()} == {"done"}
    assert (out / manifest["results_file"]).exists() and hidden(out) == []


def test_two_sweeps_of_one_config_split_its_runs(tmp_path):
    # Before: each computed every run it had not found finished when it started, so two terminals
    # (or cluster jobs) started together on one config computed every run twice (probed: 12 runs,
    # 12 + 12 computed, 3.6 s each, no faster than one). Now a run another sweep is computing is
    # left to it and loaded once it is filed: every run is computed once, whatever the timing.
    out, raw = tmp_path / "out", {**config(JDP), "seeds": 6, "episodes": 3000}
    flags = [tmp_path / f"flags{i}" for i in range(2)]
    procs = [held_sweep(raw, out, f) for f in flags]
    for f in flags:  # both go on together (finish waits for one to end)
        (f / "go").touch()
    counts = [finish(p, f) for p, f in zip(procs, flags, strict=True)]
    assert sum(c[0] for c in counts) == 6 and all(sum(c) == 6 for c in counts), counts
    expected, _ = run_sweep(build_config(raw), tmp_path / "alone", progress=False)
    pd.testing.assert_frame_equal(
        load_results(out).drop(columns="wall_time"), expected.drop(columns="wall_time")
    )
    assert load_manifest(out)["status"] == "complete" and hidden(out) == []
    assert not [p.name for p in (out / "runs").iterdir() if p.name.startswith(".")]


def test_a_killed_sweeps_run_claim_is_taken_over_and_removed(tmp_path):
    # Before: a sweep killed while computing a run left runs/.<run_id>.claim, and a resume on
    # threads (which takes no claims) left it there for good.
    out, raw = tmp_path / "out", {**config(JDP), "seeds": 3, "episodes": 30_000}
    proc = subprocess.Popen([sys.executable, "-c", COMPLETE, json.dumps(raw), str(out)])
    deadline = time.monotonic() + 60
    runs = out / "runs"
    while not (runs.exists() and list(runs.glob(".*.claim"))):  # a run in flight
        assert proc.poll() is None, "the sweep ended before a run was in flight"
        assert time.monotonic() < deadline, "no run was ever in flight"
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    _, manifest = run_sweep(build_config(raw), out, progress=False, n_jobs=2, backend="threads")
    assert manifest["status"] == "complete" and manifest["n_computed"] >= 1
    assert [p.name for p in out.rglob(".*")] == []


def test_two_threads_writing_one_file_do_not_share_a_temporary(tmp_path):
    # Before: the temporary file was named by the pid alone, so two sweeps of one process (two
    # threads of a notebook, n_jobs=2 each, one config, one folder; probed 3 times) wrote one
    # run's table through the same temporary: one's os.replace failed (FileNotFoundError) and,
    # once, moved the other's half-written parquet into place ("magic bytes not found").
    from privrl.experiment.results import atomic_write

    target, entered, release, failed = tmp_path / "t.json", threading.Event(), threading.Event(), []

    def slow(path: Path) -> None:
        path.write_text("first")
        entered.set()
        assert release.wait(30)

    def first() -> None:
        try:
            atomic_write(target, slow)
        except BaseException as exc:
            failed.append(exc)

    thread = threading.Thread(target=first)
    thread.start()
    assert entered.wait(30)
    atomic_write(target, lambda p: p.write_text("second"))  # while the first is mid-write
    assert target.read_text() == "second"
    release.set()
    thread.join(30)
    assert not failed and target.read_text() == "first" and not list(tmp_path.glob(".*"))

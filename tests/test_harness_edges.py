"""Edge cases of the experiment harness found in an audit (sweep, CLI, run, learn, evaluate)."""

from __future__ import annotations

import math

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


@pytest.mark.parametrize("name", ["", "  ", 3, ["x"], ".", "..", "x/../..", "/tmp/privrl-nowhere"])
def test_the_sweep_name_must_be_a_non_empty_string(name, tmp_path, monkeypatch, capsys):
    """The top-level `name` was str()-ed unchecked: name = 3 was accepted, and name = "" made
    `privrl run`'s default output folder privrl-results/ itself (every sweep's parent). A study's
    name was already refused the same way. name = "." did the same, ".." wrote the sweep into the
    working folder and an absolute name into that folder: the default folder must be inside
    privrl-results/."""
    from privrl.experiment import build_config
    from privrl.experiment.cli import main

    raw = {"name": name, "env": ENV, "agents": AGENTS, "episodes": 3}
    with pytest.raises(ConfigError) as err:
        build_config(raw)
    assert err.value.key == "name"
    if isinstance(name, str):
        (tmp_path / "c.toml").write_text(
            f'name = "{name}"\nepisodes = 3\n[env]\nname = "RiverSwimMixture"\nS = 4\nH = 2\n'
            '[agents.J]\nalgorithm = "UCRL-VTR"\n'
        )
        monkeypatch.chdir(tmp_path)
        assert main(["run", "c.toml", "--no-progress"]) == 2
        assert "privrl: error: name:" in capsys.readouterr().err
        assert not (tmp_path / "privrl-results").exists()


@pytest.mark.parametrize("record", ["[1]", '{"table": null}', "other"])
def test_a_run_record_that_is_not_this_runs_is_recomputed(record, tmp_path):
    """Resuming read a run record that is valid JSON but not this run's (a list: a TypeError that
    stopped the sweep; another run's record: its rows filed under this run's id). Such a record
    now counts as unfinished, as a torn one did: the run is recomputed and the table equals an
    uninterrupted sweep's."""
    import json

    kw = dict(epsilons=[1.0], seeds=3, episodes=8, progress=False)
    base, _ = sweep(ENV, AGENTS, **kw)
    out = tmp_path / "out"
    sweep(ENV, AGENTS, outdir=out, **kw)
    records = sorted((out / "runs").glob("*.json"))
    text = records[1].read_text() if record == "other" else record
    records[0].write_text(text)
    if record == "other":
        assert json.loads(text)["run_id"] != records[0].stem
    df, manifest = sweep(ENV, AGENTS, outdir=out, **kw)
    assert (manifest["n_resumed"], manifest["n_computed"]) == (2, 1)
    cols = [c for c in df.columns if c != "wall_time"]
    assert df[cols].equals(base[cols])


def test_a_sweep_env_with_negative_rewards_names_the_sweep_key():
    """A sweep env table {name = "gymnasium", id = "CliffWalking-v1"} without a rescale said
    "(rescale it with reward=...)": a sweep's env table has no reward= (a callable cannot be in a
    TOML file); the key that rescales there is reward_range."""
    gymnasium = pytest.importorskip("gymnasium")
    ids = sorted(k for k in gymnasium.registry if k.startswith("CliffWalking-v"))
    env = {"name": "gymnasium", "id": ids[-1], "H": 5}
    with pytest.raises(ConfigError, match="outside") as err:
        sweep(env, {"L": {"algorithm": "LSVI-UCB", "privacy": "none"}}, episodes=5, progress=False)
    assert "reward_range" in str(err.value) and "reward=..." not in str(err.value)
    df, _ = sweep(
        {**env, "reward_range": "auto"},
        {"L": {"algorithm": "LSVI-UCB", "privacy": "none"}},
        episodes=5,
        progress=False,
    )
    assert len(df) >= 1


def test_the_summary_says_which_delta_calibration_and_mechanism_each_row_ran():
    """Comparing two mechanisms (or pure against approximate DP) through privrl report --csv gave
    rows told apart only by the agents' display names: the summary had no delta, calibration or
    mechanism column, though every run record holds them."""
    from privrl.experiment import summarize

    agents = {
        "blt": {"algorithm": "UCRL-VTR", "privacy": "jdp"},
        "tree": {"algorithm": "UCRL-VTR", "privacy": "jdp", "mechanism": "tree", "calibration": "tight"},
        "pure": {"algorithm": "UCRL-VTR", "privacy": "jdp", "delta": 0.0},
        "ldp": {"algorithm": "UCRL-VTR", "privacy": "ldp"},
    }
    df, manifest = sweep(ENV, agents, epsilons=[math.inf, 1.0], episodes=5, delta=1e-4, progress=False)
    summary = summarize(df, manifest).set_index(["agent", "privacy"])
    expect = {
        ("blt", "jdp"): (1e-4, "adaptive", "blt"),
        ("tree", "jdp"): (1e-4, "tight", "tree"),
        ("pure", "jdp"): (0.0, "adaptive", "tree"),
        ("ldp", "ldp"): (1e-4, "adaptive", ""),
    }
    for key, (delta, calibration, mechanism) in expect.items():
        row = summary.loc[key]
        assert (row.delta, row.calibration, row.mechanism) == (delta, calibration, mechanism)
    for name in agents:  # the eps = inf row of each is the non-private algorithm: no delta, no mechanism
        row = summary.loc[(name, "none")]
        assert math.isnan(row.delta) and row.mechanism == ""
    # "tight" has no noise to tighten at eps = inf: its non-private member is the paper's regret side
    assert summary.loc[("tree", "none")].calibration == "paper"
    assert summarize(df.drop(columns="delta"), manifest).delta.isna().all()  # an older table: NaN


def test_a_private_agent_without_a_finite_epsilon_is_flagged():
    """sweep(env, {"U": {"privacy": "jdp"}}) without epsilons ran U only at the default [inf], i.e. as
    the non-private algorithm, and said nothing: no row of the 'jdp' agent was private (LSVI-UCB
    with privacy = 'ldp', which is refused at any finite epsilon, even ran). Now an EpsilonWarning
    names the agent; an agent with a finite epsilon of its own or the sweep's is not flagged."""
    from privrl.exceptions import EpsilonWarning

    with pytest.warns(EpsilonWarning, match=r"agents\.U: privacy = 'jdp' .* only as the non-private") as seen:
        df, _ = sweep(ENV, AGENTS, episodes=5, progress=False)
    assert set(df.privacy) == {"none"}
    # at the caller's sweep(...) line: stacklevel=2 named parsing.py's own line
    assert [w.filename for w in seen if issubclass(w.category, EpsilonWarning)] == [__file__]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", EpsilonWarning)
        df, _ = sweep(ENV, AGENTS, epsilons=[math.inf, 1.0], episodes=5, progress=False)
        assert set(df.privacy) == {"none", "jdp"}
        own = {"U": {**AGENTS["U"], "epsilons": [2.0]}, "N": {"algorithm": "UCRL-VTR", "privacy": "none"}}
        df, _ = sweep(ENV, own, episodes=5, progress=False)
        assert set(df.privacy) == {"none", "jdp"}


def test_a_results_folder_given_as_tilde_is_the_home_folder(tmp_path, monkeypatch):
    """sweep(outdir="~/x") and `privrl run --out '~/x'` (quoted: no shell expanded it) made a folder
    named ~ in the working directory while pandas wrote the tables to the home's x: the run failed
    ('Cannot save file into a non-existent directory'). ~ is now expanded, as other tools do, by the
    library (ResultStore, load_results, figures) and by the CLI's path arguments."""
    from privrl.experiment import load_results
    from privrl.experiment.cli import main

    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    df, _ = sweep(ENV, AGENTS, epsilons=[10.0], seeds=1, episodes=5, outdir="~/x", progress=False)
    assert (home / "x" / "manifest.json").exists() and len(load_results("~/x")) == len(df)
    argv = ["run", "--env", "RiverSwimMixture", "--env-arg", "S=4,H=3", "--episodes", "5", "--seeds", "1"]
    argv += ["--agent", "U:algorithm=UCRL-VTR,privacy=none", "--out", "~/y", "--no-progress"]
    assert main(argv) == 0
    assert main(["report", "~/y", "--csv", "~/y/summary.csv"]) == 0
    assert main(["plot", "~/y", "--output", "~/fig"]) == 0
    assert (home / "y" / "manifest.json").exists() and (home / "y" / "summary.csv").exists()
    assert (home / "fig.png").exists() and not list(cwd.iterdir())


def test_a_config_files_tilde_outdir_is_printed_as_the_folder_written(tmp_path, monkeypatch, capsys):
    """A config file's outdir = "~/z": the results went to the home's z (ResultStore expands it)
    but the CLI's messages printed "-> ~/z" and "results in ~/z/...". They now name the folder the
    results are in."""
    from privrl.experiment.cli import main

    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    (cwd / "c.toml").write_text(
        'outdir = "~/z"\nepisodes = 5\nseeds = 1\nepsilons = [10.0]\n'
        '[env]\nname = "RiverSwimMixture"\nS = 4\nH = 3\n'
        '[agents.U]\nalgorithm = "UCRL-VTR"\nprivacy = "none"\n'
    )
    assert main(["run", "c.toml", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert (home / "z" / "manifest.json").exists() and not (cwd / "~").exists()
    assert f"-> {home / 'z'}" in err and "~/z" not in err, err


def test_a_manifests_recorded_config_reruns_as_written(tmp_path):
    """manifest.json records the sweep's config with its [[study]] tables under "studies", which
    build_config refused ('unknown key'), so the recorded config re-ran only after renaming it to
    "study". build_config takes it as written, and `privrl run OUTDIR/manifest.json` reruns it:
    the same run ids and the same numbers."""
    from privrl.experiment import load_manifest, load_results
    from privrl.experiment.cli import main
    from privrl.experiment.parsing import build_config

    studies = [
        {"name": "mix", "env": ENV, "agents": {**AGENTS, "N": {"algorithm": "UCRL-VTR", "privacy": "none"}}},
        {"name": "lin", "env": {"name": "RandomLinearMDP", "S": 5, "A": 2, "d": 3, "H": 3}, "episodes": 6}
        | {"agents": {"L": {"algorithm": "LSVI-UCB", "privacy": "jdp", "delta": 1e-3, "batches": 2}}},
    ]
    first, second = tmp_path / "first", tmp_path / "second"
    sweep(studies=studies, epsilons=[math.inf, 1.0], seeds=2, episodes=5, outdir=first, progress=False)
    manifest = load_manifest(first)
    assert "studies" in manifest["config"]
    assert [r.run_id for r in build_config(manifest["config"]).runs()] == list(manifest["runs"])
    assert main(["run", str(first / "manifest.json"), "--out", str(second), "--no-progress"]) == 0
    assert list(load_manifest(second)["runs"]) == list(manifest["runs"])
    a, b = (load_results(d).drop(columns="wall_time") for d in (first, second))
    assert a.equals(b)


def test_a_json_config_must_be_a_manifest(tmp_path):
    from privrl.experiment.parsing import build_config, read_config

    for text, refused in [("[1]", "not a privrl manifest"), ("{", "not valid JSON"), ("{}", "no 'config'")]:
        (tmp_path / "x.json").write_text(text)
        with pytest.raises(ConfigError, match=refused):
            read_config(tmp_path / "x.json")
    with pytest.raises(ConfigError, match="not both") as err:
        build_config({"study": [{"env": ENV, "agents": AGENTS}], "studies": [{"env": ENV, "agents": AGENTS}]})
    assert err.value.key == "studies"


@pytest.mark.parametrize(("where", "key"), [("top", "delta"), ("agent", "agents.U.delta")])
def test_a_sweeps_large_delta_refusal_names_what_runs_one(where, key):
    """A sweep's delta >= 0.1 was refused with the privacy models' advice "pass
    allow_large_delta=True", an option neither sweep() nor its agent tables take: the refusal now
    says that a sweep does not run one and how to (the model with allow_large_delta, privrl.run)."""
    agents = {"U": {**AGENTS["U"], "delta": 0.5}} if where == "agent" else AGENTS
    top = {"delta": 0.999} if where == "top" else {}
    with pytest.raises(ConfigError, match=r"must be < 0\.1, got 0\.(5|999)") as err:
        sweep(ENV, agents, epsilons=[1.0], episodes=3, progress=False, **top)
    assert err.value.key == key
    assert "A sweep does not run one" in str(err.value) and "allow_large_delta=True) and privrl.run" in str(
        err.value
    )
    assert "to run it anyway" not in str(err.value)
    # below 0.1 nothing changed: the sweep runs
    sweep(ENV, AGENTS, epsilons=[1.0], episodes=3, progress=False, delta=0.09)


def test_a_manifest_of_an_object_environment_says_it_reruns_from_python(tmp_path, capsys):
    """The manifest's config is 're-runnable as written' with privrl run OUTDIR/manifest.json, but
    a study whose environment was given as a Python object records only its name and digests:
    rerunning it said "expected an environment name, a table with 'name' ...; got {'object': ...,
    'sha256': ...}", as if the user had written that table. It now says the environment was a
    Python object and reruns from Python with it; an env table's manifest reruns as before."""
    pytest.importorskip("pandas")
    from privrl.envs import RiverSwimMixture
    from privrl.experiment import load_manifest
    from privrl.experiment.cli import main
    from privrl.experiment.parsing import build_config

    kw = {"agents": AGENTS, "epsilons": [1.0], "episodes": 5, "progress": False}
    sweep(RiverSwimMixture(S=4, H=3), outdir=str(tmp_path / "obj"), **kw)
    with pytest.raises(
        ConfigError,
        match=r"^study\[0\]\.env: RiverSwimMixture\(.*\) was given to the sweep as a Python object",
    ):
        build_config(load_manifest(tmp_path / "obj")["config"])
    assert main(["run", str(tmp_path / "obj" / "manifest.json"), "--out", str(tmp_path / "again")]) == 2
    assert "rerun this sweep from Python, passing the same object" in capsys.readouterr().err
    sweep(ENV, outdir=str(tmp_path / "table"), **kw)
    assert len(build_config(load_manifest(tmp_path / "table")["config"]).runs()) == 1


def test_summarize_given_a_folder_names_the_call_that_takes_one(tmp_path):
    """plot, report and cost_table take a results folder, summarize a DataFrame: summarize(OUTDIR)
    said only "df must be a privrl results table (a pandas DataFrame), got str". It now names the
    call that takes a folder, whose table equals summarize's of the folder's runs."""
    pytest.importorskip("pandas")
    import io

    from privrl.experiment import report, summarize

    df, manifest = sweep(ENV, AGENTS, epsilons=[1.0], episodes=5, progress=False, outdir=str(tmp_path))
    for folder in (str(tmp_path), tmp_path):
        with pytest.raises(
            TypeError, match=r"got (str|PosixPath|WindowsPath): for a results folder, report\(OUTDIR\)"
        ):
            summarize(folder)
    with pytest.raises(TypeError, match=r"got int$"):
        summarize(3)
    printed = report(tmp_path, file=io.StringIO())
    assert printed["regret_mean"].tolist() == summarize(df, manifest)["regret_mean"].tolist()


def test_run_given_a_results_folder_says_how_to_resume_it(tmp_path, capsys):
    """`privrl run OUTDIR` (a results folder as the config, a natural way to ask for a resume) said
    only "OUTDIR is a folder, not a config file". For a folder with a manifest it now gives the
    command that resumes it, which does: every run resumed, none computed."""
    pytest.importorskip("pandas")
    from privrl.experiment.cli import main

    out = tmp_path / "res"
    sweep(ENV, AGENTS, epsilons=[1.0], episodes=5, progress=False, outdir=str(out))
    assert main(["run", str(out)]) == 2
    err = capsys.readouterr().err
    command = f"privrl run {out / 'manifest.json'} --out {out}"
    assert f"CONFIG: {out} is a folder, not a config file; it is a results folder: {command} resumes" in err
    assert main(["run", str(out / "manifest.json"), "--out", str(out), "--no-progress"]) == 0
    assert "0 runs computed, 1 resumed" in capsys.readouterr().err
    (tmp_path / "plain").mkdir()
    assert main(["run", str(tmp_path / "plain")]) == 2
    assert capsys.readouterr().err.rstrip().endswith("is a folder, not a config file")


def test_the_report_of_a_folder_with_failed_runs_says_they_failed(tmp_path, monkeypatch):
    """privrl report on a folder whose runs raised said "(1 of 2 runs finished: rerun `privrl run`
    ...)", as for runs merely not run yet (Ctrl-C, kill -9): nothing said they failed, nor where
    the error is. It now counts the failed runs and quotes one's error; a folder whose missing runs
    did not fail reads as before."""
    pytest.importorskip("pandas")
    import io
    import sys

    from privrl.experiment import SweepError, report

    module = sys.modules["privrl.experiment.sweep"]
    real = module.execute_run

    def execute_run(spec, env=None, progress=None, stop=None):
        if spec.seed == 1:
            raise RuntimeError("simulator lost")
        return real(spec, env, progress, stop)

    monkeypatch.setattr(module, "execute_run", execute_run)
    with pytest.raises(SweepError):
        sweep(ENV, AGENTS, epsilons=[1.0], seeds=2, episodes=5, progress=False, outdir=str(tmp_path))
    out = io.StringIO()
    report(tmp_path, file=out)
    assert (
        out.getvalue()
        .rstrip()
        .endswith(
            "(1 of 2 runs finished; 1 failed, e.g. RuntimeError: simulator lost (manifest.json): "
            "rerun `privrl run` on the same config to complete)"
        )
    )
    monkeypatch.setattr(module, "execute_run", real)
    sweep(ENV, AGENTS, epsilons=[1.0], seeds=2, episodes=5, progress=False, outdir=str(tmp_path))
    next((tmp_path / "runs").glob("*seed1*.json")).unlink()  # finished, then its record lost
    out = io.StringIO()
    report(tmp_path, file=out)
    assert (
        out.getvalue()
        .rstrip()
        .endswith("(1 of 2 runs finished: rerun `privrl run` on the same config to complete)")
    )


def test_plot_runs_of_learn_results_titles_without_an_empty_environment(tmp_path, monkeypatch):
    """plot_runs of privrl.learn's results (which name no environment) titled its panel
    ", K=30; mean +- 1 std over seeds": the empty name left a leading comma. Run results keep
    their environment's name first."""
    pytest.importorskip("pandas")
    pytest.importorskip("matplotlib")
    gym = pytest.importorskip("gymnasium")
    import privrl
    import privrl.experiment.plots as plots
    from privrl.agents import LSVIUCB
    from privrl.envs import FeatureMap, RandomLinearMDP
    from privrl.privacy import NonPrivate

    figs = []
    save = plots.save
    monkeypatch.setattr(plots, "save", lambda fig, out, title=None: figs.append(fig) or save(fig, out, title))
    lake = gym.make("FrozenLake-v1", is_slippery=False)

    def agent(s, env):
        return LSVIUCB(env, NonPrivate(), episodes=30, seed=s, batches="every")

    learned = [privrl.learn(agent(s, FeatureMap.one_hot_for(lake, H=8)), lake, seed=s) for s in (0, 1)]
    plots.plot_runs(learned, tmp_path / "learned")
    assert figs[-1].axes[0].get_title().splitlines()[1] == "K=30; mean +- 1 std over seeds"
    model = RandomLinearMDP(S=5, A=2, d=3, H=3, seed=0)
    plots.plot_runs([privrl.run(agent(s, model), model, seed=s) for s in (0, 1)], tmp_path / "run")
    assert figs[-1].axes[0].get_title().splitlines()[1] == f"{model.name}, K=30; mean +- 1 std over seeds"


def test_learn_with_nothing_left_says_so_in_runs_words():
    """privrl.learn(agent, env) on an agent that has used all its K users said "has 0 of its 20
    episodes left, cannot learn 0" (0: the default, all it has left, which nobody asked for), while
    privrl.run says the agent has run all its K episodes and what to do. Both say the latter now;
    asking for more than is left keeps each call's message."""
    gym = pytest.importorskip("gymnasium")
    import privrl
    from privrl.agents import LSVIUCB
    from privrl.envs import FeatureMap, frozen_lake
    from privrl.exceptions import CapacityError
    from privrl.privacy import NonPrivate

    lake = gym.make("FrozenLake-v1", is_slippery=False)
    agent = LSVIUCB(FeatureMap.one_hot_for(lake, H=8), NonPrivate(), episodes=20, seed=0, batches="every")
    privrl.learn(agent, lake, 15, seed=0)
    with pytest.raises(CapacityError, match=r"has 5 of its 20 episodes left, cannot learn 6$"):
        privrl.learn(agent, lake, 6)
    model = frozen_lake(H=8, is_slippery=False)
    with pytest.raises(
        CapacityError, match=r"is calibrated for 20 episodes and has run 15: 5 remain, cannot run 6$"
    ):
        privrl.run(agent, model, 6)
    privrl.learn(agent, lake)  # the 5 left
    said = r"has run all 20 episodes it is calibrated for \(its privacy budget covers no more users\)"
    for call in (lambda: privrl.learn(agent, lake), lambda: privrl.run(agent, model)):
        with pytest.raises(CapacityError, match=said):
            call()


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_runs_warning_names_the_agent_and_epsilon_that_raised_it(n_jobs):
    """A sweep's ScheduleWarning ("a single batch ... the agent never releases") or PrivacyWarning
    came without the run it was about: with several agents and epsilons the user could not tell
    which one never releases. Every backend now raises a run's warnings again prefixed with
    "<study> / <agent> at eps=<eps>: " (inline and threads printed them bare)."""
    import warnings

    from privrl.exceptions import PrivacyWarning

    agents = {
        "loose": {"algorithm": "UCRL-VTR", "privacy": "jdp", "delta": 0.09},
        "fine": {"algorithm": "UCRL-VTR", "privacy": "jdp"},
    }
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        sweep(ENV, agents, epsilons=[1.0, 2.0], seeds=2, episodes=20, n_jobs=n_jobs, progress=False)
    texts = sorted({str(w.message) for w in seen if issubclass(w.category, PrivacyWarning)})
    assert [t.split(": ")[0] for t in texts] == [f"{ENV['name']} / loose at eps={e}" for e in (1, 2)]
    assert all("delta = 0.09 > 1/K = 0.05" in t for t in texts)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_runs_warning_shows_once_per_sweep_under_the_default_filter(n_jobs):
    """Each run records its warnings under a filter of its own (relay.recorded), which empties the
    sweep's warning registry; since inline and thread runs record too (c2ca51d), a warning of
    every seed of an agent showed once per seed under Python's "default" filter. It shows once."""
    import warnings

    from privrl.exceptions import PrivacyWarning

    agents = {"loose": {"algorithm": "UCRL-VTR", "privacy": "jdp", "delta": 0.09}}
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("default")
        sweep(ENV, agents, epsilons=[1.0], seeds=3, episodes=20, n_jobs=n_jobs, progress=False)
    texts = [str(w.message) for w in seen if issubclass(w.category, PrivacyWarning)]
    assert len(texts) == 1 and texts[0].startswith(f"{ENV['name']} / loose at eps=1: delta = 0.09"), texts


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_runs_warning_points_at_the_sweep_call(n_jobs):
    """A sweep's run warning was shown at privrl's preflight.py line where the run built its agent
    (Python's format then printed that source line, `return cls(agent_env(env), ...`); it points at
    the caller's sweep(...) line."""
    import warnings

    from privrl.exceptions import PrivacyWarning

    agents = {"loose": {"algorithm": "UCRL-VTR", "privacy": "jdp", "delta": 0.09}}
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        sweep(ENV, agents, epsilons=[1.0], seeds=2, episodes=20, n_jobs=n_jobs, progress=False)
    (w,) = [w for w in seen if issubclass(w.category, PrivacyWarning)]
    assert w.filename == __file__, (w.filename, w.lineno)


@pytest.mark.parametrize(
    "kw, key",
    [({"n_jobs": "10"}, "n_jobs"), ({"format": "xlsx"}, "format"), ({"backend": "gpu"}, "backend"),
     ({"scheduler": "foo"}, "scheduler"), ({"root_seed": -1}, "root_seed"), ({"outdir": 3}, "outdir")],
)  # fmt: skip
def test_a_sweep_config_built_directly_is_checked_as_a_parsed_one(kw, key):
    """SweepConfig is exported; built directly it took n_jobs="10", format="xlsx", ... (the TOML and
    dict path refused them), and the sweep failed later (the CLI's `n_jobs > 1` a bare TypeError).
    One check now, its own (__post_init__: config.execution_values), whichever way it is built."""
    from privrl.exceptions import ConfigError
    from privrl.experiment import SweepConfig

    with pytest.raises(ConfigError, match=rf"^{key}: "):
        SweepConfig(studies=[], **kw)
    assert SweepConfig(studies=[], n_jobs=-1).n_jobs >= 1  # -1: all cores, as in a config


def test_a_config_outdir_may_be_a_pathlib_path():
    """A config's outdir given as a pathlib.Path (the dict passed to build_config / sweep, or a
    SweepConfig built directly) was refused as 'expected a path, got PosixPath(...)'; it is kept as
    its str (the manifest records the config as text), as run_sweep's own outdir= takes it."""
    from pathlib import Path

    from privrl.experiment import SweepConfig

    assert SweepConfig(studies=[], outdir=Path("/tmp/privrl-x")).outdir == "/tmp/privrl-x"
    assert SweepConfig(studies=[], outdir="/tmp/privrl-x").outdir == "/tmp/privrl-x"

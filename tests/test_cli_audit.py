"""The command line as a new user meets it: what it prints, and when, for refused input."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privrl.experiment import ConfigError, sweep
from privrl.experiment.cli import main

FLAGS = ["run", "--env", "RiverSwimMixture", "--env-arg", "S=4,H=5", "-K", "20", "--seeds", "1"]


@pytest.mark.parametrize(
    "env, agent",
    [
        ("RiverSwimMixture", "algorithm=UCRL-VTR,privacy=jdp,exploration=foo"),
        ("RiverSwimMixture", "algorithm=UCRL-VTR,privacy=jdp,ties=bogus"),
        ("RiverSwimMixture", "algorithm=UCRL-VTR,privacy=jdp,batches=0"),
        ("RandomLinearMDP", "algorithm=LSVI-UCB,privacy=ldp"),
    ],
)
def test_run_refuses_a_bad_agent_option_before_printing_anything(tmp_path, capsys, env, agent):
    # the agent's own checks (preflight builds it) used to run after the "N runs ... ->" header
    out = tmp_path / "out"
    flags = ["run", "--env", env, "-K", "20", "--seeds", "1", "--epsilons", "1"]
    argv = [*flags, "--agent", f"J:{agent}", "--out", str(out)]
    assert main([*argv, "--no-progress"]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("privrl: error: agents.J"), captured.err
    assert captured.out == ""
    assert not out.exists()


def test_run_prints_its_header_once_the_config_is_accepted(tmp_path, capsys):
    out = tmp_path / "out"
    argv = [*FLAGS, "--agent", "J:algorithm=UCRL-VTR,privacy=jdp", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert err.startswith("privrl: 1 runs (20 episodes) on 1 process ->"), err


def test_run_prints_a_warning_as_one_privrl_line_once(tmp_path, capsys):
    # Python's format named a line of privrl's source (cli.py:245) and printed that line below it
    out, agent = str(tmp_path / "out"), ["--agent", "J:algorithm=UCRL-VTR,privacy=jdp"]
    assert main([*FLAGS, *agent, "--out", out, "--no-progress"]) == 0
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # pytest makes warnings errors; a user's shell shows them
        assert main([*FLAGS, *agent, "-K", "30", "--seeds", "2", "--out", out, "--no-progress"]) == 0
    lines = capsys.readouterr().err.splitlines()
    warned = [line for line in lines if "runs of another config" in line]
    assert len(warned) == 1, lines
    assert warned[0].startswith(f"privrl: warning: UserWarning: {out} holds 1 runs of another config")
    assert not any(".py:" in line or "run_sweep(" in line for line in lines), lines


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"seeds": 2.0}, "seeds: must be a seed count or a non-empty list of integer seeds, got 2.0"),
        ({"seeds": None}, "seeds: must be a seed count or a non-empty list of integer seeds, got None"),
        ({"seeds": "12"}, "seeds: must be a seed count or a non-empty list of integer seeds, got '12'"),
        ({"epsilons": None}, "epsilons: must be a non-empty list of epsilons"),
    ],
)
def test_sweep_names_a_seeds_or_epsilons_value_that_is_not_a_list(kw, message):
    # list(2.0) was a bare TypeError ("'float' object is not iterable"); "12" two seeds '1' and '2'
    with pytest.raises(ConfigError) as err:
        sweep(
            env="RiverSwimMixture", agents={"J": {"algorithm": "UCRL-VTR"}}, episodes=5, progress=False, **kw
        )
    assert str(err.value).startswith(message)


def test_sweep_takes_seeds_and_epsilons_as_any_collection():
    df, _ = sweep(
        env="RiverSwimMixture",
        agents={"J": {"algorithm": "UCRL-VTR", "privacy": "jdp"}},
        episodes=5,
        seeds=np.arange(2),
        epsilons=(10.0, 1.0),
        progress=False,
    )
    assert sorted(set(df["seed"])) == [0, 1] and sorted(set(df["epsilon"])) == [1.0, 10.0]


@pytest.mark.parametrize(
    "env_arg, message",
    [
        ("S=1", "env: RiverSwimMixture needs S >= 2 states"),
        ("S=100000000,H=5", "env: RiverSwimMixture: a dense model with H=5, S=100000000"),
    ],
)
def test_run_names_a_refused_environment_once(tmp_path, capsys, env_arg, message):
    # "env: RiverSwimMixture: RiverSwimMixture needs ...": preflight prefixed a name the error had
    argv = ["run", "--env", "RiverSwimMixture", "--env-arg", env_arg, "--agent", "J:algorithm=UCRL-VTR"]
    assert main([*argv, "-K", "5", "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"privrl: error: {message}"), err
    assert err.count("RiverSwimMixture") == 1, err


def test_report_csv_into_a_new_folder_and_not_onto_a_folder(tmp_path, capsys):
    out = str(tmp_path / "out")
    assert main([*FLAGS, "--agent", "J:algorithm=UCRL-VTR", "--out", out, "--no-progress"]) == 0
    capsys.readouterr()
    # pandas refused a folder that did not exist yet, after the table had been printed
    csv = tmp_path / "tables" / "new" / "summary.csv"
    assert main(["report", out, "--csv", str(csv)]) == 0
    assert list(pd.read_csv(csv)["agent"]) == ["J"]
    capsys.readouterr()
    assert main(["report", out, "--csv", out]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith(f"privrl: error: --csv: {out} is a folder"), (
        captured
    )


@pytest.mark.parametrize("own", ["manifest.json", "results.csv", "results.parquet", "runs/t.csv"])
def test_report_csv_refuses_a_file_of_the_results_folder(tmp_path, capsys, monkeypatch, own):
    """privrl report OUT --csv OUT/results.csv replaced the sweep's merged table (format csv) by the
    summary table, OUT/manifest.json the manifest (every later report / plot / resume: 'not valid
    JSON'), both with exit status 0 (hB's input pass). Refused before printing; summary.csv beside
    them is taken, given relative to the working folder too."""
    out = tmp_path / "out"
    argv = [*FLAGS, "--agent", "J:algorithm=UCRL-VTR", "--out", str(out), "--no-progress", "--format", "csv"]
    assert main(argv) == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    capsys.readouterr()
    monkeypatch.chdir(tmp_path)
    assert main(["report", "out", "--csv", f"out/{own}"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "is a file of the results folder" in captured.err, captured
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert main(["report", str(out), "--csv", "out/summary.csv"]) == 0


@pytest.mark.parametrize("where", ["config.toml", "config.toml/results"])
def test_run_refuses_a_file_as_its_results_folder_before_printing_anything(tmp_path, capsys, where):
    (tmp_path / "config.toml").write_text("name = 'x'\n")
    argv = [*FLAGS, "--agent", "J:algorithm=UCRL-VTR", "--out", str(tmp_path / where), "--no-progress"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    file = tmp_path / "config.toml"
    assert err == f"privrl: error: outdir: {file} is a file, not a folder: give a folder for the results\n"


def test_report_table_tells_near_zero_regrets_apart():
    # ".1f" printed 0.00112 +- 1.66e-05 and 0.000388 +- 0.000379 both as "0.0 +- 0.0"
    from privrl.experiment.summary import format_table

    base = {"study": "s", "agent": "J", "privacy": "jdp", "epsilon": 1.0, "seeds": 2, "K": 200}
    rest = {"slope": 1.0, "wall_time": 0.01, "sigma_name": "", "sigma": np.nan, "beta": 1.0}
    rest |= {"eps_tight": 1.0, "eps_paper": np.nan, "verdict": "-"}
    rows = [
        {**base, "regret_mean": 0.00112, "regret_std": 1.66e-05, **rest},
        {**base, "epsilon": 10.0, "regret_mean": 0.000388, "regret_std": 0.000379, **rest},
        {**base, "epsilon": 0.1, "regret_mean": 2102.94, "regret_std": 14.71, **rest},
        {**base, "epsilon": 0.5, "regret_mean": 0.0, "regret_std": np.nan, **rest},
    ]
    table = format_table(pd.DataFrame(rows))
    assert "0.00112 +- 1.66e-05" in table and "0.000388 +- 0.000379" in table
    assert "2102.9 +- 14.7" in table and "0.0 +- -" in table


def test_a_scheduler_that_is_not_an_address_is_refused_before_the_folder_is_made(tmp_path, capsys):
    # 'foo' passed the config checks; connect refused it after the header, the folder and a
    # manifest with status "interrupted"
    out = tmp_path / "out"
    argv = [*FLAGS, "--agent", "J:algorithm=UCRL-VTR", "--out", str(out), "--scheduler", "foo"]
    assert main([*argv, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err == "privrl: error: scheduler: expected an address like tcp://host:8786, got 'foo'\n"
    assert not out.exists()
    with pytest.raises(ConfigError, match=r"^scheduler: expected an address"):
        sweep(env="RiverSwimMixture", agents={"J": "UCRL-VTR"}, scheduler="foo", outdir=out, progress=False)
    assert not out.exists()


@pytest.mark.parametrize(
    "env, args, key, says",
    [
        ("gymnasium", [], "env.id", "missing: gymnasium needs id: give it in the env table (id = ...)"),
        ("HardToLearn", [], "env.d", "missing: HardToLearn needs d, H, K: give them"),
        ("HardToLearn", ["--env-arg", "d=3,H=4"], "env.K", "missing: HardToLearn needs K: give it"),
        (
            "ClassificationBandit",
            [],
            "env.dataset",
            "needs dataset (one of 'digits', 'wine', 'breast_cancer'): give it in the env table",
        ),
        (
            "digits",
            [],
            "env.name",
            "'digits' is a dataset, not an environment: its bandit is ClassificationBandit",
        ),
        ("Breast-Cancer", [], "env.name", 'dataset = "breast_cancer"'),
    ],
)
def test_an_environment_without_its_required_arguments_is_a_config_error(
    tmp_path, capsys, env, args, key, says
):
    """An environment table missing a constructor's required argument ran the preflight and failed
    with Python's TypeError text ("env: gymnasium_linear_mdp() missing 1 required positional
    argument: 'id'"); a dataset's name as the environment was an unknown environment. Both are
    refused when the config is read, naming the key and what to give."""
    out = tmp_path / "out"
    agent = ["--agent", "L:algorithm=LSVI-UCB,privacy=none", "--out", str(out), "--no-progress"]
    assert main(["run", "--env", env, *args, "-K", "20", *agent]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"privrl: error: {key}: ") and says in err[0], err
    assert not out.exists()
    spec = {"name": env, **dict(kv.split("=") for a in args[1:] for kv in a.split(","))}
    with pytest.raises(ConfigError, match=rf"^{key}: "):
        sweep(env=spec, agents={"L": "LSVI-UCB"}, episodes=20, progress=False)


def test_plot_labels_each_value_as_what_it_is(tmp_path):
    # value="return" (one episode's return) was labelled "cumulative return", its slope "log R(k)"
    from privrl.experiment import plot

    df, _ = sweep(env="RiverSwimMixture", agents={"J": "UCRL-VTR"}, episodes=20, seeds=2, progress=False)
    for value, label, slope in [
        ("regret", "cumulative regret R(k)", "slope of log R(k) vs log k"),
        ("return", "return of episode k", "slope of log return vs log k"),
        ("cum_return", "cumulative return", "slope of log cumulative return vs log k"),
    ]:
        svg = Path(plot(df, output=tmp_path / value, value=value)["svg"]).read_text()
        assert label in svg and slope in svg, value
    assert "cumulative return" not in Path(tmp_path / "return.svg").read_text()


def test_plot_legends_sit_under_their_panels_and_name_a_curve_off_the_log_scale(tmp_path, monkeypatch):
    """The legends were drawn inside the panels (upper left): the demo's 14 entries covered half of
    each panel and the curves under them, and an agent with zero regret throughout (nothing to draw
    on a log scale) was listed as 'slope n/a' beside no line. Each legend now sits under its panel,
    inside the figure and clear of every panel, and such an agent's entry says why it has no line."""
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from privrl.experiment import plot

    agents = {"J": "UCRL-VTR", "P": {"algorithm": "UCRL-VTR", "privacy": "jdp", "calibration": "paper"}}
    df, _ = sweep(
        env="RiverSwimMixture", agents=agents, epsilons=[np.inf, 1.0], episodes=20, seeds=2, progress=False
    )
    final = df[df["episode"] == 20].groupby("agent")["regret"].max()
    assert final["J"] == 0 and final["P"] > 0  # the non-private optimistic agent never errs here
    figures = []
    close = plt.close
    monkeypatch.setattr(plt, "close", lambda fig=None: figures.append(fig) or close(fig))
    plot(df, tmp_path / "fig")
    fig = figures[0]
    canvas = FigureCanvasAgg(fig)  # the closed figure's layout, as it was saved
    canvas.draw()
    renderer = canvas.get_renderer()
    whole = fig.bbox
    panels = [ax.get_window_extent(renderer) for ax in fig.axes]
    for ax, panel in zip(fig.axes, panels, strict=True):
        box = ax.get_legend().get_window_extent(renderer)
        assert box.y1 <= panel.y0 and box.y0 >= whole.y0 and box.x0 >= whole.x0 and box.x1 <= whole.x1
        assert not any(box.overlaps(other) for other in panels)
    log_labels = [line.get_label() for line in fig.axes[1].get_lines()]
    zero = [label for label in log_labels if label.startswith("J")]  # J at inf and at eps 1
    assert len(zero) == 2 and all(label.endswith(": 0 throughout, off the log scale") for label in zero), (
        log_labels
    )
    assert any(label.startswith("P") and ": slope " in label for label in log_labels), log_labels


def test_plot_title_of_one_seed_promises_no_band(tmp_path):
    # one seed draws no band, and the title said "mean +- 1 std over seeds"
    from privrl.experiment import plot

    for seeds, title in [(1, "one seed, no band"), (2, "mean +- 1 std over seeds")]:
        df, _ = sweep(
            env="RiverSwimMixture", agents={"J": "UCRL-VTR"}, episodes=20, seeds=seeds, progress=False
        )
        svg = Path(plot(df, output=tmp_path / f"s{seeds}")["svg"]).read_text()
        assert title in svg and ("over seeds" in svg) == (seeds > 1)


def test_plot_keeps_every_dot_of_the_name_asked_for(tmp_path):
    """fig_eps0.5.pdf wrote fig_eps0.pdf / .png / .svg (Path.with_suffix dropped ".5"), so figures
    of eps 0.1 and 0.5 overwrote each other; a stem with a dot lost it too, and fig.PDF was written
    as fig.pdf. Every file is the name asked for, with .png / .svg next to it."""
    from privrl.experiment import plot

    df, _ = sweep(env="RiverSwimMixture", agents={"J": "UCRL-VTR"}, episodes=20, seeds=1, progress=False)
    for asked, stem, extra in [
        ("fig_eps0.1.pdf", "fig_eps0.1", "fig_eps0.1.pdf"),
        ("fig_eps0.5.pdf", "fig_eps0.5", "fig_eps0.5.pdf"),
        ("run.v2", "run.v2", None),
        ("a.b.png", "a.b", None),
        ("Fig.PDF", "Fig", "Fig.PDF"),
    ]:
        out = plot(df, output=tmp_path / asked)
        want = {"png": tmp_path / f"{stem}.png", "svg": tmp_path / f"{stem}.svg"}
        if extra is not None:
            want["pdf"] = tmp_path / extra
        assert {k: v for k, v in out.items() if k != "curves"} == {k: str(v) for k, v in want.items()}
        assert all(p.exists() for p in want.values()), asked
    assert (tmp_path / "fig_eps0.1.pdf").read_bytes().startswith(b"%PDF-")
    assert not (tmp_path / "fig_eps0.pdf").exists() and not (tmp_path / "run.png").exists()


@pytest.mark.parametrize("suffix", [".eps", ".ps"])
def test_plot_postscript_draws_the_bands_as_their_translucent_colour(tmp_path, caplog, suffix):
    """PostScript has no transparency: matplotlib drew each seed band (alpha 0.18) in its curve's
    full colour, solid blocks hiding one another, and logged "partially transparent artists will be
    rendered opaque". The bands are now their colour composited over the white background."""
    import logging
    import re

    from matplotlib.colors import to_rgb

    from privrl.experiment import plot

    df, _ = sweep(env="RiverSwimMixture", agents={"J": "UCRL-VTR"}, episodes=20, seeds=2, progress=False)
    with caplog.at_level(logging.WARNING):
        out = plot(df, output=tmp_path / f"fig{suffix}")
    assert not [r for r in caplog.records if "transparen" in r.getMessage()]
    colours = {
        tuple(float(v) for v in c.split())
        for c in re.findall(r"([0-9.]+ [0-9.]+ [0-9.]+) setrgbcolor", Path(out[suffix[1:]]).read_text())
    }
    line = to_rgb("C0")
    band = tuple(0.18 * c + 0.82 for c in line)  # 0.18 of the colour over white
    assert any(all(abs(a - b) < 2e-3 for a, b in zip(c, band, strict=True)) for c in colours), colours
    assert "fill-opacity: 0.18" in Path(out["svg"]).read_text()  # the SVG keeps its translucent bands


@pytest.mark.parametrize("bad", [["-j", "0"], ["--scheduler", "foo"]])
def test_demo_refuses_bad_flags_before_printing_its_calibration_table(tmp_path, capsys, bad):
    # `privrl demo -j 0` printed the paper-vs-tight noise table, then refused
    assert main(["demo", *bad, "--out", str(tmp_path / "d"), "--no-progress"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("privrl: error: "), captured
    assert not (tmp_path / "d").exists()


def test_load_config_reads_a_file_as_privrl_run_does(tmp_path):
    from privrl.experiment import load_config

    # a folder was a bare IsADirectoryError, and an int was opened as a file descriptor (and closed)
    with pytest.raises(ConfigError, match="is a folder, not a config file"):
        load_config(tmp_path)
    r, w = os.pipe()
    try:
        with pytest.raises(TypeError, match="path must be a path"):
            load_config(r)
        os.fstat(r)  # still open
    finally:
        os.close(r)
        os.close(w)
    (tmp_path / "bad.toml").write_bytes(b"\xff\xfe name = 1")
    with pytest.raises(ConfigError, match="is not valid TOML"):
        load_config(tmp_path / "bad.toml")
    # the name (so the default folder privrl-results/NAME) is the file's stem, as for `privrl run`
    path = tmp_path / "riverswim.toml"
    path.write_text('episodes = 5\nenv = "RiverSwimMixture"\n[agents.J]\nalgorithm = "UCRL-VTR"\n')
    assert load_config(path).to_dict()["name"] == "riverswim"


def test_a_worker_process_warning_is_one_privrl_line_in_the_sweep_process(tmp_path, capfd):
    """--backend processes: a warning raised in a worker (the agent's PrivacyWarning for delta > 1/K,
    raised when the run builds it) was printed by the worker in Python's format (sweep.py:87 and the
    source line below it), past the command line's one-line format. Now the worker records it and
    the sweep's process raises it again: one `privrl: warning:` line, as on threads, naming the run."""
    agent = ["--agent", "J:algorithm=UCRL-VTR,privacy=jdp,delta=0.09", "--epsilons", "1", "--no-progress"]
    flags = [*FLAGS[:-1], "2", *agent, "-j", "2"]
    for backend in ("processes", "threads"):
        with warnings.catch_warnings():
            warnings.simplefilter("always")  # pytest makes warnings errors; a user's shell shows them
            assert main([*flags, "--backend", backend, "--out", str(tmp_path / backend)]) == 0
        lines = capfd.readouterr().err.splitlines()  # the workers' stderr (fd 2) included
        warned = [line for line in lines if "1/K" in line]
        assert warned == [
            "privrl: warning: PrivacyWarning: RiverSwimMixture / J at eps=1: delta = 0.09 > 1/K = 0.05: "
            "with K users, a guarantee whose "
            "delta exceeds 1/K allows publishing some user's data outright; choose delta <= 1/K"
        ], (backend, lines)
        assert not any(".py:" in line for line in lines), lines


def test_sweep_on_processes_raises_the_workers_warnings_in_the_caller():
    """From Python, a worker's warning is a warning of the sweep's caller (its filters apply: here
    pytest.warns records it), not text printed by another process."""
    from privrl.exceptions import PrivacyWarning

    agents = {"J": {"algorithm": "UCRL-VTR", "privacy": "jdp", "delta": 0.09}}
    kw = dict(env="RiverSwimMixture", epsilons=[1.0], seeds=2, episodes=20, progress=False)
    with pytest.warns(PrivacyWarning, match=r"delta = 0.09 > 1/K = 0.05"):
        _df, manifest = sweep(agents=agents, n_jobs=2, backend="processes", **kw)
    assert manifest["status"] == "complete" and len(manifest["runs"]) == 2

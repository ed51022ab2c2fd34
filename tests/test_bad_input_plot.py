"""privrl.plot(results, output, title=...) and privrl.experiment.plot: the title is a str or None.
plot_runs names the study by it, and title=nan matched none of its rows: a KeyError 'run_id' from
pandas (found by hB's bad-input fuzz); a number was drawn as its repr."""

import math
import warnings

import pytest

import privrl
from privrl.agents import UCRLVTR
from privrl.envs import RiverSwimMixture
from privrl.experiment import plot
from privrl.privacy import NonPrivate


@pytest.fixture(scope="module")
def result():
    env = RiverSwimMixture(S=3, H=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return privrl.run(UCRLVTR(env, NonPrivate(), episodes=20, seed=0), env, seed=0)


@pytest.mark.parametrize("title", [math.nan, 3, 1.5, True, b"t", ["t"]])
def test_a_title_that_is_not_a_string_is_refused(result, title, tmp_path):
    with pytest.raises(TypeError, match=r"title must be a str or None"):
        privrl.plot(result, tmp_path / "p.png", title=title)
    assert not list(tmp_path.iterdir())  # refused before drawing
    out = privrl.plot(result, tmp_path / "q.png", title="runs")
    with pytest.raises(TypeError, match=r"title must be a str or None"):
        plot(tmp_path, tmp_path / "r.png", title=title)
    assert sorted(out) == ["curves", "png", "svg"]


@pytest.mark.parametrize("path", [None, 3, 1.5, ["a"]])
def test_a_path_that_is_not_a_path_is_refused_naming_it(result, path, tmp_path):
    # Path(None) / Path(3) raised 'expected str, bytes or os.PathLike object, not int', naming no
    # argument, from privrl.plot's output and from load_results / load_manifest / report's outdir
    from privrl.experiment import load_manifest, load_results, report

    if path is not None:  # output=None is plot_runs' own refusal (a DataFrame needs an output path)
        with pytest.raises(TypeError, match=r"output must be a path"):
            privrl.plot(result, path)
    for load in (load_results, load_manifest, report):
        with pytest.raises(TypeError, match=r"outdir must be a results folder's path"):
            load(path)


def test_an_array_for_an_option_chosen_by_name_is_refused_naming_it(tmp_path):
    """band= / value= / backend= given a numpy array of allowed names: `x not in allowed` compared it
    elementwise and numpy raised 'The truth value of an array with more than one element is
    ambiguous' (a ValueError naming no argument) from summary.curves, cost_plot.cost_table,
    experiment.plot and run_sweep (found by hB reading the sites e695d13's common.kinds.is_choice
    did not reach). Each now raises its own documented refusal, as for any other wrong name."""
    import numpy as np
    import pandas as pd

    from privrl.experiment import ConfigError, build_config, run_sweep
    from privrl.experiment.cost_plot import cost_table
    from privrl.experiment.summary import curves

    names = np.array(["std", "ci95"])
    with pytest.raises(ValueError, match=r"band must be 'std' or 'ci95', got array"):
        curves(pd.DataFrame(), band=names)
    with pytest.raises(ConfigError, match=r"band: must be 'std' or 'ci95', got array"):
        cost_table(pd.DataFrame(), band=names)
    config = build_config(
        {
            "env": {"name": "RiverSwimMixture", "S": 3, "H": 3},
            "agents": {"UCRL-VTR": {"algorithm": "UCRL-VTR"}},
            "episodes": 4,
            "log_every": 2,
        }
    )
    with pytest.raises(ConfigError, match=r"backend: must be one of threads, processes, got array"):
        run_sweep(config, tmp_path / "r", backend=np.array(["threads", "processes"]))
    assert not (tmp_path / "r").exists()  # refused before the store
    df, _ = run_sweep(config, tmp_path / "s")
    with pytest.raises(ConfigError, match=r"value: must be one of regret, return, cum_return, got array"):
        plot(df, tmp_path / "p.png", value=np.array(["regret", "return"]))
    assert not (tmp_path / "p.png").exists()


@pytest.mark.parametrize("file", ["report.txt", 3])
def test_report_and_sweep_refuse_a_file_or_outdir_that_is_not_one(file, tmp_path):
    """report(outdir, file="report.txt") printed the table to a str: print's AttributeError "'str'
    object has no attribute 'write'"; sweep(..., outdir=3) / run_sweep(config, 3) raised Path's
    "expected str, bytes or os.PathLike object, not int", naming no argument (hB's input pass)."""
    from privrl.experiment import ConfigError, report, sweep

    env, agents = {"name": "RiverSwimMixture", "S": 3, "H": 3}, {"U": {"algorithm": "UCRL-VTR"}}
    with pytest.raises(ConfigError, match=r"outdir: expected a path, got 3"):
        sweep(env, agents, episodes=4, progress=False, outdir=3)
    sweep(env, agents, episodes=4, progress=False, outdir=tmp_path / "r")
    with pytest.raises(TypeError, match=r"file must be a text stream"):
        report(tmp_path / "r", file=file)
    assert not (tmp_path / "report.txt").exists()

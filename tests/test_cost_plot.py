"""The privacy-cost figure (privrl.experiment.cost_plot, drawn by `privrl plot` beside the curves): its
numbers against numpy on the results rows and run records, its curves counted in the SVG, its file
names, and the refusals."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

from privrl.experiment import ConfigError, load_results, sweep
from privrl.experiment.cli import main
from privrl.experiment.cost_plot import cost_table, figures, plot_cost
from privrl.experiment.results import load_run_records
from privrl.experiment.summary import t975

ENV = {"name": "RiverSwimMixture", "S": 4, "H": 5}
AGENTS = {
    "plain": {"algorithm": "UCRL-VTR", "privacy": "none"},
    "JDP": {"algorithm": "UCRL-VTR", "privacy": "jdp", "calibration": "paper"},
    "LDP": {"algorithm": "UCRL-VTR", "privacy": "ldp", "epsilons": [5.0]},
}


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cost") / "sweep"
    sweep(
        env=ENV,
        agents=AGENTS,
        epsilons=[10.0, 1.0],
        seeds=3,
        episodes=40,
        log_every=10,
        outdir=out,
        progress=False,
    )
    return out


@pytest.fixture(scope="module")
def linear(tmp_path_factory) -> Path:
    """A study whose final regrets are all positive (its figure's regret axis is logarithmic)."""
    out = tmp_path_factory.mktemp("cost") / "linear"
    agents = {
        "LSVI": {"algorithm": "LSVI-UCB", "privacy": "none"},
        "JDP": {"algorithm": "LSVI-UCB", "privacy": "jdp"},
    }
    env = {"name": "RandomLinearMDP", "S": 10, "A": 3, "d": 4, "H": 4, "seed": 0}
    sweep(env=env, agents=agents, epsilons=[10.0, 1.0], seeds=2, episodes=40, outdir=out, progress=False)
    return out


def _drawn_figure(monkeypatch, source, output):
    """plot_cost's figure as saved (its axes laid out), re-rendered for measuring."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    import privrl.experiment.cost_plot as cost_plot

    figs = []

    def spy(fig, out, title=None):
        figs.append(fig)
        return save(fig, out, title)

    save = cost_plot.save
    monkeypatch.setattr(cost_plot, "save", spy)
    drawn = plot_cost(source, output)
    (fig,) = figs
    FigureCanvasAgg(fig).draw()
    return fig, drawn


def _svg_ids(path: str) -> list[str]:
    return re.findall(r'id="(privrl-cost[^"]*)"', Path(path).read_text())


@pytest.mark.parametrize("band", ["std", "ci95"])
def test_the_table_is_each_runs_final_regret_averaged_over_seeds(results, band):
    """value: the mean over seeds of each run's cumulative regret at its last episode; half: the std
    across seeds (ddof 1) or the Student-t 95% half width; the random level: each run record's rate
    per episode times K, averaged (numpy on the rows and the records)."""
    df, records = load_results(results), load_run_records(results)
    table = cost_table(results, band=band)
    assert len(table) == 1 + 2 + 1  # plain; JDP at 10 and 1; LDP at its own 5
    for _, row in table.iterrows():
        part = df[(df["agent"] == row["agent"]) & (df["epsilon"] == row["epsilon"])]
        finals = np.array([g.sort_values("episode")["regret"].iloc[-1] for _, g in part.groupby("seed")])
        assert row["n"] == 3 and row["K"] == 40 and not row["learned"]
        assert row["value"] == pytest.approx(finals.mean(), rel=1e-12)
        std = np.std(finals, ddof=1)
        assert row["half"] == pytest.approx(std if band == "std" else t975(2) * std / math.sqrt(3), rel=1e-12)
        rates = [records[r]["random_regret"] for r in dict.fromkeys(part["run_id"])]
        assert row["random_regret"] == pytest.approx(np.mean(rates) * 40, rel=1e-12)
        assert row["random_regret"] > 0


def test_the_figure_draws_one_line_per_private_agent(results, tmp_path):
    out = plot_cost(results, tmp_path / "cost.png")
    assert Path(out["png"]).stat().st_size > 0 and out["svg"] == str(tmp_path / "cost.svg")
    assert out["agents"] == {
        "RiverSwimMixture": 2
    }  # JDP (two epsilons) and LDP (one); the study is named after its env
    ids = _svg_ids(out["svg"])
    assert sorted(i for i in ids if re.fullmatch(r"privrl-cost-0-\d+", i)) == [
        "privrl-cost-0-0",
        "privrl-cost-0-1",
    ]
    assert [i for i in ids if i.startswith("privrl-cost-base")] == ["privrl-cost-base-0-0"]
    assert "privrl-cost-random-0" in ids


def test_privrl_plot_writes_the_cost_figure_beside_the_curves(results, tmp_path, capsys):
    assert main(["plot", str(results), "-o", str(tmp_path / "fig.pdf")]) == 0
    printed = capsys.readouterr().out
    for name in ("fig.pdf", "fig.png", "fig.svg", "fig_cost.pdf", "fig_cost.png", "fig_cost.svg"):
        assert (tmp_path / name).stat().st_size > 0, name
        assert str(tmp_path / name) in printed
    assert "(RiverSwimMixture: 2 private agents)" in printed
    # a stem keeps its dots: fig_eps0.5 -> fig_eps0.5_cost.png, not fig_eps0_cost.png
    _, cost = figures(results, tmp_path / "fig_eps0.5")
    assert cost is not None and cost["png"] == str(tmp_path / "fig_eps0.5_cost.png")
    # the default: OUTDIR/regret and OUTDIR/regret_cost
    _, cost = figures(results)
    assert cost is not None and cost["svg"] == str(results / "regret_cost.svg")


def test_privrl_plot_reads_the_folder_once_for_both_figures(results, tmp_path, monkeypatch):
    """figures (privrl plot, run --plot, demo) reads every run's table once, not once per figure,
    and draws what plot(OUTDIR) and cost_table(OUTDIR) give."""
    from privrl.experiment import results as results_module

    reads = []
    real = results_module.load_results
    monkeypatch.setattr(results_module, "load_results", lambda *a, **k: reads.append(a) or real(*a, **k))
    curves, cost = figures(results, tmp_path / "fig")
    assert len(reads) == 1 and cost is not None
    monkeypatch.undo()
    assert _svg_ids(cost["svg"]) == _svg_ids(plot_cost(results, tmp_path / "alone")["svg"])
    from privrl.experiment import plot

    alone = plot(results, tmp_path / "alone_curves")
    assert curves["curves"] == alone["curves"]
    svgs = (curves["svg"], alone["svg"])
    ids = [re.findall(r'id="(privrl-curve[^"]*)"', Path(f).read_text()) for f in svgs]
    assert ids[0] == ids[1] and ids[0]


def test_without_a_private_agent_there_is_nothing_to_compare(tmp_path):
    out = tmp_path / "plain"
    sweep(env=ENV, agents={"plain": AGENTS["plain"]}, seeds=1, episodes=20, outdir=out, progress=False)
    curves, cost = figures(out)
    assert cost is None and Path(curves["png"]).exists()
    assert not (out / "regret_cost.png").exists()
    with pytest.raises(ConfigError, match="no private agent"):
        plot_cost(out)


def test_refusals(results, tmp_path):
    df = load_results(results)
    with pytest.raises(ConfigError, match="needs an output path"):
        plot_cost(df)
    with pytest.raises(ConfigError, match="band"):
        cost_table(results, band="iqr")
    with pytest.raises(ConfigError, match="writes a PNG and an SVG"):
        plot_cost(results, tmp_path / "x.gif")
    # a table without runs to compare: the plot's own message
    with pytest.raises(ConfigError, match="no finished runs"):
        cost_table(df.iloc[:0])
    # from a DataFrame there are no run records: no random level, the figure still drawn
    out = plot_cost(df, tmp_path / "from_df")
    assert "privrl-cost-random-0" not in _svg_ids(out["svg"])
    assert cost_table(df)["random_regret"].isna().all()


def test_a_learned_study_compares_the_runs_returns(tmp_path):
    """A study learned by interaction (no regret): each run's value is its record's return_last."""
    pytest.importorskip("gymnasium")
    lake = {"name": "gymnasium", "id": "FrozenLake-v1", "H": 8, "is_slippery": False, "model": False}
    agents = {
        "LSVI": {"algorithm": "LSVI-UCB", "privacy": "none", "lam": 1.0},
        "JDP": {"algorithm": "LSVI-UCB", "privacy": "jdp", "batches": 4},
    }
    out = tmp_path / "lake"
    sweep(env=lake, agents=agents, epsilons=[10.0], seeds=2, episodes=200, outdir=out, progress=False)
    records = load_run_records(out)
    table = cost_table(out)
    assert table["learned"].all() and table["random_regret"].isna().all()
    for _, row in table.iterrows():
        mine = [r["return_last"] for r in records.values() if r["agent"] == row["agent"]]
        assert len(mine) == 2 and row["value"] == pytest.approx(np.mean(mine), rel=1e-12)
    drawn = plot_cost(out, tmp_path / "lake_cost")
    assert drawn["agents"] == {"gymnasium": 1}
    assert "privrl-cost-random-0" not in _svg_ids(drawn["svg"])


def test_a_private_agents_run_at_eps_inf_is_its_level(tmp_path):
    """A jdp agent swept at eps = inf runs its algorithm without noise (recorded as privacy "none"):
    drawn as its level, not as a point on the epsilon axis."""
    out = tmp_path / "inf"
    jdp = {"JDP": AGENTS["JDP"]}
    sweep(env=ENV, agents=jdp, epsilons=[math.inf, 1.0], seeds=1, episodes=20, outdir=out, progress=False)
    drawn = plot_cost(out, tmp_path / "inf_cost")
    ids = _svg_ids(drawn["svg"])
    assert (
        "privrl-cost-base-0-0" in ids
        and "privrl-cost-0-0" in ids
        and drawn["agents"] == {"RiverSwimMixture": 1}
    )
    table = cost_table(out)
    assert table[["privacy", "epsilon"]].values.tolist() == [["none", math.inf], ["jdp", 1.0]]


def test_the_report_prints_the_figures_share_of_the_random_policy(results, capsys):
    """`privrl report`'s "% of random": the final regret over the random policy's regret over K (the
    records' rates per episode times K, numpy), the figure's right axis for the same row."""
    from privrl.experiment.summary import report

    df, records = load_results(results), load_run_records(results)
    summary = report(results)
    text = capsys.readouterr().out
    assert "% of random" in text.splitlines()[0]
    figure = cost_table(results)
    for _, row in summary.iterrows():
        part = df[(df["agent"] == row["agent"]) & (df["epsilon"] == row["epsilon"])]
        rates = [records[r]["random_regret"] for r in dict.fromkeys(part["run_id"])]
        assert row["random_regret"] == pytest.approx(np.mean(rates) * 40, rel=1e-12)
        assert row["pct_random"] == pytest.approx(100 * row["regret_mean"] / row["random_regret"], rel=1e-12)
        drawn = figure[(figure["agent"] == row["agent"]) & (figure["epsilon"] == row["epsilon"])].iloc[0]
        assert row["pct_random"] == pytest.approx(100 * drawn["value"] / drawn["random_regret"], rel=1e-12)
        assert f"{row['pct_random']:.3g}%" in text


def test_sweeps_dataframe_and_manifest_give_the_folders_figure(results, tmp_path):
    """From Python, sweep's (df, manifest) draw what the folder draws, the random level included."""
    from privrl.experiment.results import load_manifest

    df, records = load_results(results), load_run_records(results)
    manifest = {**load_manifest(results), "runs": records}
    from_df = cost_table(df, manifest=manifest)
    assert from_df.equals(cost_table(results))
    assert "privrl-cost-random-0" in _svg_ids(plot_cost(df, tmp_path / "df", manifest=manifest)["svg"])
    with pytest.raises(ConfigError, match="manifest"):
        cost_table(df, manifest=[records])


def test_the_percent_axis_of_a_log_panel_stays_inside_the_figure(linear, tmp_path, monkeypatch):
    """The right axis (% of the random policy) of a panel on a log regret axis: its tick labels and
    its label inside the saved figure (it was created before the log scale and laid out as linear:
    its wider log tick labels and its label were cut off at the right edge)."""
    fig, drawn = _drawn_figure(monkeypatch, linear, tmp_path / "lin_cost.png")
    assert "privrl-cost-random-0" in _svg_ids(drawn["svg"])
    (ax,) = fig.axes
    assert ax.get_yscale() == "log" and len(ax.child_axes) == 1
    renderer = fig.canvas.get_renderer()
    right = ax.child_axes[0].get_tightbbox(renderer)
    assert right.x0 >= 0 and right.x1 <= fig.bbox.x1, (right, fig.bbox)


def test_a_line_whose_points_have_different_seed_counts_says_so(results, tmp_path, monkeypatch):
    """An unfinished sweep: one JDP run at eps = 1 not finished (no record). The JDP line's points
    rest on 3 and 2 seeds (counted from the rows); its legend said n=3 for both."""
    import shutil

    out = tmp_path / "partial"
    shutil.copytree(results, out)
    (record,) = (out / "runs").glob("RiverSwimMixture__JDP__eps1__seed2__*.json")
    record.unlink()
    df = load_results(out)
    jdp = df[df["agent"] == "JDP"]
    seeds = sorted(set(jdp.groupby("epsilon")["seed"].nunique()))
    assert seeds == [2, 3]
    fig, _ = _drawn_figure(monkeypatch, out, tmp_path / "partial_cost.png")
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    (label,) = [t for t in labels if t.startswith("JDP")]
    assert label.endswith(f"(n={seeds[0]}-{seeds[-1]})"), labels
    (ldp,) = [t for t in labels if t.startswith("LDP")]
    assert ldp.endswith(f"(n={df[df['agent'] == 'LDP']['seed'].nunique()})"), labels


@pytest.mark.parametrize("given", ["figs/", "figs/.", "sub//fig.pdf"])
def test_the_cost_figure_is_at_the_curves_stem_whatever_the_spelling(results, tmp_path, given):
    """The cost figure sits beside the curves, at their stem + "_cost", however the output path is
    spelled: `-o figs/` wrote the curves at figs.png and the cost figure into the folder, at
    figs/_cost.png."""
    import os

    curves, cost = figures(results, str(tmp_path) + os.sep + given.replace("/", os.sep))
    assert cost is not None
    for key in ("png", "svg"):
        made, beside = Path(curves[key]), Path(cost[key])
        assert made.exists() and beside.exists()
        assert beside.parent == made.parent
        assert beside.name == made.name[: -len(made.suffix)] + "_cost" + made.suffix


def test_a_model_runs_missing_regret_is_not_replaced_by_its_returns(results):
    """A run of a model study whose regret column is NaN (all rows) was read as a run learned by
    interaction: its mean return per user was averaged in with the other seeds' final regrets. It
    is a missing regret: the point is the mean of the other seeds' (as the report's)."""
    from privrl.experiment.summary import summarize

    df = load_results(results)
    run = df[(df["agent"] == "JDP") & (df["epsilon"] == 1.0) & (df["seed"] == 0)]["run_id"].iloc[0]
    df.loc[df["run_id"] == run, "regret"] = np.nan
    part = df[(df["agent"] == "JDP") & (df["epsilon"] == 1.0)]
    finals = [g.sort_values("episode")["regret"].iloc[-1] for _, g in part.groupby("seed")]
    assert np.isnan(finals).sum() == 1
    row = cost_table(df).set_index(["agent", "epsilon"]).loc[("JDP", 1.0)]
    assert not row["learned"]
    assert row["value"] == pytest.approx(np.nanmean(finals), rel=1e-12)
    report = summarize(df).set_index(["agent", "epsilon"]).loc[("JDP", 1.0)]
    assert row["value"] == pytest.approx(report["regret_mean"], rel=1e-12)


def test_an_optimal_agents_rounding_residue_does_not_make_a_log_axis(linear, tmp_path, monkeypatch):
    """The non-private agent's regret at an optimal agent's rounding residue (1e-13 per episode,
    below fit_slope's 1e-9: no slope, "learned"): the panel stays linear, as for an exact 0 (the
    log axis ran from 1e-12 to the private agents' regrets, a dozen decades)."""
    from privrl.experiment.summary import fit_slope

    df = load_results(linear)
    plain = df["privacy"] == "none"
    df.loc[plain, "regret"] = 1e-13 * df.loc[plain, "episode"]
    curve = df[plain].groupby("episode")["regret"].mean()
    assert math.isnan(fit_slope(curve.index.to_numpy(), curve.to_numpy()))  # rounding, by that rule
    fig, _ = _drawn_figure(monkeypatch, df, tmp_path / "residue_cost")
    (ax,) = fig.axes
    assert ax.get_yscale() == "linear"
    low, high = ax.get_ylim()
    ends = df[~plain].sort_values("episode").groupby(["agent", "epsilon", "seed"])["regret"].last()
    points = ends.groupby(level=["agent", "epsilon"]).mean()
    assert low <= 0 < points.min() and points.max() < high
    # the same table with the agent's real regret: a log axis (every final regret positive)
    fig, _ = _drawn_figure(monkeypatch, load_results(linear), tmp_path / "real_cost")
    assert fig.axes[0].get_yscale() == "log"


def test_agents_at_one_epsilon_are_spread_apart_around_its_tick(results, tmp_path, monkeypatch):
    """Two private agents at the same epsilon: their points were drawn at the same x and hid each
    other's bars. Each line is now moved by one constant factor within [10^-DODGE, 10^DODGE] (the
    first and last line at the two ends), different per line, and the x range shows all of them."""
    from matplotlib.lines import Line2D

    import privrl.experiment.cost_plot as cost_plot

    fig, _ = _drawn_figure(monkeypatch, results, tmp_path / "spread_cost.png")
    (ax,) = [a for a in fig.axes if a.get_gid() is None and a.get_legend() is not None]
    lines = sorted(
        (ln for ln in ax.get_lines() if (ln.get_gid() or "").startswith("privrl-cost-0-")), key=Line2D.get_gid
    )
    table = cost_table(results)
    factors = []
    for line, agent in zip(lines, ["JDP", "LDP"], strict=True):
        eps = np.sort(table[(table["agent"] == agent)]["epsilon"].to_numpy(float))
        factor = np.asarray(line.get_xdata(), float) / eps
        assert np.allclose(factor, factor[0], rtol=1e-12)
        factors.append(float(factor[0]))
    assert factors == pytest.approx([10.0**-cost_plot._DODGE, 10.0**cost_plot._DODGE], rel=1e-12)
    lo, hi = ax.get_xlim()
    assert lo < min(min(ln.get_xdata()) for ln in lines) and hi > max(max(ln.get_xdata()) for ln in lines)


def test_a_bar_reaching_zero_on_a_log_axis_is_cut_with_a_caret(linear, tmp_path, monkeypatch):
    """On a log regret axis, a point whose band (mean - std) reaches 0 had a bar with no lower end
    (it ran off the bottom of the panel). Now it ends at a positive `bottom` under every other point
    and bar end, marked by a down caret, and the panel shows it."""
    df = load_results(linear)
    run = (df["agent"] == "JDP") & (df["epsilon"] == 1.0) & (df["seed"] == 0)
    df.loc[run, "regret"] = df.loc[run, "regret"] * 1e-3  # two seeds a 1000x apart: std > mean
    row = cost_table(df).set_index(["agent", "epsilon"]).loc[("JDP", 1.0)]
    assert row["value"] - row["half"] < 0 < row["value"]
    fig, _ = _drawn_figure(monkeypatch, df, tmp_path / "cut.png")
    (ax,) = [a for a in fig.axes if a.get_legend() is not None]
    assert ax.get_yscale() == "log"
    carets = [ln for ln in ax.get_lines() if ln.get_marker() == 7]
    (caret,) = carets
    (bottom,) = set(np.asarray(caret.get_ydata(), float))
    others = cost_table(df)
    ends = np.concatenate(
        [others["value"], (others["value"] - others["half"])[others["value"] > others["half"]]]
    )
    assert 0 < bottom < ends.min() and ax.get_ylim()[0] < bottom
    bars = [c for c in ax.collections if c.get_segments() and len(c.get_segments()[0]) == 2]
    lows = [min(seg[0][1], seg[1][1]) for c in bars for seg in c.get_segments()]
    assert min(lows) == pytest.approx(bottom, rel=1e-12)


def test_the_legend_sits_below_the_panel_and_inside_the_figure(results, tmp_path, monkeypatch):
    """The legend was placed inside the panel ("best") and could cover points and levels: it is now
    under the panel (no overlap with the axes' area) and inside the saved figure."""
    fig, _ = _drawn_figure(monkeypatch, results, tmp_path / "legend_cost.png")
    (ax,) = [a for a in fig.axes if a.get_legend() is not None]
    renderer = fig.canvas.get_renderer()
    legend, panel = ax.get_legend().get_window_extent(renderer), ax.get_window_extent(renderer)
    assert legend.y1 <= panel.y0 and legend.y0 >= 0 and legend.x0 >= 0 and legend.x1 <= fig.bbox.x1


@pytest.mark.parametrize("level", [None, 299.1165])
def test_one_flat_point_on_a_log_axis_is_inside_its_panel(linear, tmp_path, monkeypatch, level):
    """One private agent at one epsilon whose seeds end at the same regret (or one seed: no bar), on
    a log axis: matplotlib's autoscale left a view 3e-13 high around the point (its zero bar's
    rounding on the log scale): the panel was blank, a random level beside it (an agent as bad as
    random, 299.0 against 299.1) off the view, with RuntimeWarnings. The panel now spans the
    point and its levels."""
    import privrl.experiment.cost_plot as cost_plot

    df = load_results(linear)
    df = df[(df["privacy"] == "jdp") & (df["epsilon"] == 10.0)].copy()
    K = int(df["episode"].max())
    df.loc[df["episode"] == K, "regret"] = 299.0
    manifest = None
    if level is not None:  # the random policy's regret per episode, read by the figure's level
        records = {k: {**r, "random_regret": level / K} for k, r in load_run_records(linear).items()}
        manifest = {"runs": records}
    figs = []
    save = cost_plot.save
    monkeypatch.setattr(
        cost_plot, "save", lambda fig, out, title=None: figs.append(fig) or save(fig, out, title)
    )
    drawn = plot_cost(df, tmp_path / "flat", manifest=manifest)
    (fig,) = figs
    fig.canvas.draw()
    ax = fig.axes[0]
    low, high = ax.get_ylim()
    assert ax.get_yscale() == "log" and low < 299.0 < high and high / low > 2, (low, high)
    if level is not None:
        assert low < level < high and "privrl-cost-random-0" in _svg_ids(drawn["svg"])


def test_a_folder_as_output_is_refused_not_written_beside_it(results, tmp_path, monkeypatch):
    """privrl.plot(runs, ".") wrote the hidden files ./.png and ./.svg, and an existing folder
    given as the output (`privrl plot results/rs -o figs` with figs a folder, plot_runs(runs,
    "results")) had its files written beside it, as figs.png. Both are refused, naming a path in
    the folder; a stem that is not a folder is drawn as before."""
    import privrl
    from privrl.agents import UCRLVTR
    from privrl.envs import RiverSwimMixture
    from privrl.privacy import NonPrivate

    env = RiverSwimMixture(S=4, H=3)
    runs = [privrl.run(UCRLVTR(env, NonPrivate(), episodes=20, seed=0), env, seed=0)]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "figs").mkdir()
    for folder in (".", "figs", str(tmp_path / "figs"), "figs/.", ".."):
        with pytest.raises(ConfigError, match=r"is a folder: .* e\.g\. .*regret\.png"):
            privrl.plot(runs, folder)
        with pytest.raises(ConfigError, match="is a folder"):
            figures(results, folder)
        with pytest.raises(ConfigError, match="is a folder"):
            plot_cost(results, folder)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["figs"] and not any((tmp_path / "figs").iterdir())
    assert Path(privrl.plot(runs, "figs/regret")["png"]).is_file()

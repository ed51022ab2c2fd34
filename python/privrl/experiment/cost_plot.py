"""What privacy costs, in one figure per study: each private agent's final regret against its epsilon,
beside the non-private agents and the uniformly random policy (Sec. 5's question, read off a sweep).

`privrl plot` draws it next to the regret curves (OUTDIR/regret_cost.png and .svg) whenever a study
has a private agent; from Python, :func:`plot_cost`."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd  # type: ignore[import-untyped, unused-ignore]  # users may lack pandas-stubs

from privrl.common.errors import ConfigError
from privrl.common.kinds import is_choice
from privrl.experiment.plots import _EXTRA_FORMATS, _check_table, _stem, _window_returns, save
from privrl.experiment.summary import GROUP, random_level, recorded_end, t975

__all__ = ["cost_table", "figures", "plot_cost"]

# how far (decades, each side) the points of agents at one epsilon are spread apart on the axis
_DODGE = 0.03
_MARKERS = ("o", "s", "^", "D", "v", "x", "*", "<", ">", "+")


def _run_values(df: pd.DataFrame, records: dict[str, dict]) -> pd.DataFrame:
    """One row per run: its GROUP keys, K, and its end value: the cumulative regret at its last logged
    episode, or, for a run of a study learned by interaction (no regret in any run), its mean return
    per user over the last tenth of the users (the run record's ``return_last``, from all K users, or
    else the table's trailing window at K), and the random policy's rate per episode its record has
    (``rate``)."""
    rows = []
    # a study without any regret was learned by interaction; a run of a model study with a NaN
    # regret stays a (missing) regret, not its returns averaged in with the other runs' regrets
    no_model = df.groupby("study", sort=False)["regret"].apply(lambda r: bool(r.isna().all()))
    for run_id, part in df.groupby("run_id", sort=False):
        part = part.sort_values("episode", kind="stable")
        last = part.iloc[-1]
        record = records.get(str(run_id), {})
        learned = bool(no_model[last["study"]])
        if learned:
            value = recorded_end(record, "return_last", int(last["episode"]))
            if value is None:
                value = float(_window_returns(part)["window_return"].iloc[-1])
        else:
            value = float(last["regret"])
        rows.append(
            {
                **{k: last[k] for k in GROUP},
                "env": last["env"] if "env" in part else "",
                "seed": last["seed"],
                "K": int(last["episode"]),
                "learned": learned,
                "value": float(value),
                "rate": None if learned else record.get("random_regret"),
            }
        )
    return pd.DataFrame(rows)


def cost_table(
    source: str | os.PathLike | pd.DataFrame, band: str = "std", manifest: dict | None = None
) -> pd.DataFrame:
    """The figure's numbers: one row per (study, agent, privacy, epsilon) with ``value`` the mean over
    seeds of each run's final cumulative regret (or, for a study learned by interaction, of its mean
    return per user over the last tenth of the users), ``half`` the band's half width (``band``
    "std": one standard deviation across seeds; "ci95": the Student-t 95% interval; NaN with one
    seed), ``n`` the seeds, ``K``, ``learned`` and ``random_regret`` (the uniformly random policy's
    cumulative regret over K, :func:`privrl.experiment.summary.random_level`, from the rates the
    model runs record: a results folder's run records, or for a DataFrame the ``manifest`` that
    :func:`privrl.experiment.sweep` returns with it; NaN otherwise)."""
    if not is_choice(band, ("std", "ci95")):
        raise ConfigError("band", f"must be 'std' or 'ci95', got {band!r}")
    records: dict[str, dict] = {}
    if manifest is not None and not isinstance(manifest, dict):
        raise ConfigError(
            "manifest", f"must be the manifest dict sweep returns, got {type(manifest).__name__}"
        )
    if isinstance(source, pd.DataFrame):
        # the run records of sweep's (df, manifest), as summarize(df, manifest) reads them
        df, records = source, dict((manifest or {}).get("runs", {}))
    else:
        from privrl.experiment.results import load_results, load_run_records

        df, records = load_results(source), load_run_records(source)
    key = "source" if isinstance(source, pd.DataFrame) else "OUTDIR"
    _check_table(df, "regret", key)
    if "run_id" not in df:
        raise ConfigError(key, "not a privrl results table: no column run_id")
    runs = _run_values(df, records)
    out = []
    for group, part in runs.groupby(GROUP, sort=False, dropna=False):
        n = len(part)
        std = float(np.std(part["value"], ddof=1)) if n > 1 else math.nan
        half = std if band == "std" else (t975(n - 1) * std / math.sqrt(n) if n > 1 else math.nan)
        out.append(
            {
                **dict(zip(GROUP, group, strict=True)),
                "env": part["env"].iloc[0],
                "K": int(part["K"].max()),
                "learned": bool(part["learned"].all()),
                "value": float(part["value"].mean()),
                "half": half,
                "n": n,
                "random_regret": random_level(part["rate"], int(part["K"].max())),
            }
        )
    return pd.DataFrame(out)


def plot_cost(
    source: str | os.PathLike | pd.DataFrame,
    output: str | os.PathLike | None = None,
    band: str = "std",
    title: str | None = None,
    manifest: dict | None = None,
) -> dict[str, Any]:
    """Draw what privacy costs in each study of a results folder (or sweep DataFrame): per private
    agent, its final cumulative regret (mean over seeds, with a ``band`` bar) against epsilon on a
    log axis, one line per agent (agents at one epsilon spread apart by at most 10^(+-_DODGE) along
    the axis; on a log regret axis a bar reaching 0 cut at the panel's bottom with a down caret);
    each non-private agent as a dashed level with its band; the
    uniformly random policy's regret as a dotted grey level, with a right axis in percent of it
    (the report's "privacy cost" scale) when the runs recorded it. A study learned by interaction
    (no regret) shows the mean return per user over the last tenth of the users instead (higher is
    better; no random level). Studies without a private agent are left out; a source with none is
    refused. `output`: the file stem or a .png / .svg path (default OUTDIR/regret_cost), and a .pdf
    (.eps, .ps, .jpg, .tif, .webp) path writes that file too, as :func:`privrl.experiment.plots.plot`.
    Returns {"png": path, "svg": path, "agents": {study: private lines}} (plus the extra format's
    key). The SVG ids: privrl-cost-<row>-<i> (private agents), privrl-cost-base-<row>-<i>
    (non-private levels), privrl-cost-random-<row>. From a DataFrame, pass sweep's ``manifest``
    too for the random level (``df, manifest = sweep(...); plot_cost(df, "cost.png",
    manifest=manifest)``)."""
    if output is None and isinstance(source, pd.DataFrame):
        raise ConfigError("output", "plot_cost(DataFrame) needs an output path")
    table = cost_table(source, band, manifest)
    if not _studies(table):
        raise ConfigError(
            "source",
            "no private agent with an epsilon in these results: nothing to compare (plot draws the curves)",
        )
    if output is None:
        output = os.path.join(os.fspath(source), "regret_cost")
    return _draw(table, output, band, title)


def figures(
    outdir: str | os.PathLike, output: str | os.PathLike | None = None, band: str = "std"
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """What `privrl plot` draws: the regret curves (:func:`privrl.experiment.plots.plot`, at `output`,
    default OUTDIR/regret) and the cost figure at the same stem with "_cost" (OUTDIR/regret_cost,
    fig.pdf -> fig_cost.pdf), or None for it when no study has a private agent (nothing to compare)."""
    from privrl.experiment.plots import plot
    from privrl.experiment.results import load_results, load_run_records

    outdir = os.path.expanduser(outdir)
    target = os.path.expanduser(output if output is not None else os.path.join(outdir, "regret"))
    # the folder read once for both figures (each read every run's table: ~8 ms a run), checked as
    # plot(outdir) checks it; the run records are what cost_table(outdir) reads
    df = load_results(outdir)
    _check_table(df, "regret", "OUTDIR")
    curves = plot(df, output=target, band=band)
    table = cost_table(df, band, {"runs": load_run_records(outdir)})
    if not _studies(table):
        return curves, None
    path = Path(target)  # as plot reads it: "figs/" and "figs/." are the stem figs (figs.png)
    suffix = path.suffix if path.suffix.lower() in (".png", ".svg", *_EXTRA_FORMATS) else ""
    name = path.name[: len(path.name) - len(suffix)]  # a stem ("fig_eps0.5" keeps its ".5")
    return curves, _draw(table, path.parent / (name + "_cost" + suffix), band, None)


def _studies(table: pd.DataFrame) -> list[str]:
    """The studies with a private agent of finite epsilon, in order."""
    private = table[(table["privacy"] != "none") & np.isfinite(table["epsilon"].astype(float))]
    return list(dict.fromkeys(private["study"]))


def _draw(table: pd.DataFrame, output: str | os.PathLike, band: str, title: str | None) -> dict[str, Any]:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    studies = _studies(table)
    _stem(output)  # a path it cannot write is refused before drawing
    fig, axes = plt.subplots(len(studies), 1, figsize=(7.8, 4.8 * len(studies)), squeeze=False)
    lines: dict[str, int] = {}
    for row, study in enumerate(studies):
        lines[study] = _draw_study(axes[row][0], table[table["study"] == study], study, row, band, plt)
    return {**save(fig, output, title), "agents": lines}


def _draw_study(ax: Any, part: pd.DataFrame, study: str, row: int, band: str, plt: Any) -> int:
    """One study's panel; returns the number of private agents' lines."""
    learned = bool(part["learned"].all())
    cmap = plt.get_cmap("tab10" if part["agent"].nunique() <= 10 else "tab20")
    colour = {a: cmap(i % cmap.N) for i, a in enumerate(dict.fromkeys(part["agent"]))}
    private = part[(part["privacy"] != "none") & np.isfinite(part["epsilon"])]
    base = part[part["privacy"] == "none"]
    rnd = float(part["random_regret"].mean()) if not learned else math.nan
    has_rnd = math.isfinite(rnd) and rnd > 0
    drawn = [*private["value"], *base["value"], *([rnd] if has_rnd else [])]
    # a log axis only for regrets above rounding (fit_slope's 1e-9 per episode): an optimal agent's
    # residue (1e-13 per episode) stretched it over a dozen decades, squashing every other point
    floor = 1e-9 * int(part["K"].max())
    log = not learned and all(v > floor for v in drawn if math.isfinite(v))
    bottom = math.nan
    if log:
        ax.set_yscale("log")
        # a bar reaching 0 has no lower end on a log axis: it is drawn down to `bottom`, under every
        # point and bar end above 0, and ends there in a down caret (the interval goes on below)
        ends = [*drawn, *(part["value"] - part["half"].fillna(0.0))]
        bottom = min((v for v in ends if v > floor), default=math.nan) / 2.0
    n_lines, clipped = _private_lines(ax, private, colour, row, bottom)
    if log:
        levels = [*_level_values(base), *([rnd] if has_rnd else [])]
        _flat_log_limits(ax, private, levels)
    for i, (_, g) in enumerate(base.iterrows()):
        m, h = float(g["value"]), float(g["half"])
        line = ax.axhline(m, color=colour[g["agent"]], ls="--", lw=1.4, label=f"{g['agent']} (non-private)")
        line.set_gid(f"privrl-cost-base-{row}-{i}")
        if math.isfinite(h) and h > 0:
            low = max(m - h, bottom) if log else m - h
            ax.axhspan(low, m + h, color=colour[g["agent"]], alpha=0.12, lw=0)
    if has_rnd:
        line = ax.axhline(rnd, color="0.45", ls=":", lw=1.4, label="uniformly random policy")
        line.set_gid(f"privrl-cost-random-{row}")
    ax.set_xscale("log")
    lo_eps, hi_eps = float(private["epsilon"].min()), float(private["epsilon"].max())
    wide = 1.6 * 10.0**_DODGE if n_lines > 1 else 1.6  # room for the spread points
    ax.set_xlim(*((lo_eps / wide, hi_eps * wide) if hi_eps > lo_eps else (lo_eps / 3.0, hi_eps * 3.0)))
    if clipped:
        ax.set_ylim(bottom=bottom / 1.15)
    if has_rnd:  # after the scale: made before, it was laid out as linear and its log tick labels
        # and its label ran off the figure's right edge
        ax.secondary_yaxis(
            "right", functions=(lambda r: 100.0 * r / rnd, lambda p: p * rnd / 100.0)
        ).set_ylabel("% of the random policy's regret")
    band_txt = "mean +- 1 std over seeds" if band == "std" else "mean, 95% CI over seeds"
    if int(part["n"].max()) == 1:
        band_txt = "one seed, no band"
    what = "final cumulative regret R(K)"
    if learned:
        what = "mean return per user, last K/10 users (higher is better)"
    ax.set_title(f"{study}\n{part['env'].iloc[0]}, K={int(part['K'].max())}; {band_txt}", fontsize=9.5)
    ax.set_xlabel("epsilon (log scale; smaller is more private)")
    ax.set_ylabel(what)
    ax.grid(True, alpha=0.3, which="both")
    # below the panel, where it covers no point (inside, "best" still sat on bars and levels)
    ax.legend(fontsize=7.5, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3, frameon=False)
    return n_lines


def _level_values(base: pd.DataFrame) -> list[float]:
    """The non-private levels' values and band ends (what their dashed lines and bands show)."""
    half = base["half"].fillna(0.0)
    return [*base["value"], *(base["value"] - half), *(base["value"] + half)]


def _flat_log_limits(ax: Any, private: pd.DataFrame, levels: list[float]) -> None:
    """On a log axis whose private points are one value with no bar (one agent at one epsilon, one
    seed or seeds that agree: an agent no better than random, say), matplotlib's autoscale left a
    view 1e-13 high around it (its bar's rounding on the log scale): the panel came out blank, the
    levels outside it, with RuntimeWarnings (299.0 against a random level of 299.1). Such a panel
    takes its limits from its numbers, every point and level, widened by a factor 1.5 each way;
    any other panel is autoscaled as before."""
    half = private["half"].fillna(0.0)
    ends = np.r_[private["value"] - half, private["value"] + half]
    if len(ends) == 0 or np.ptp(ends) > 0:
        return
    shown = [v for v in [*ends, *levels] if math.isfinite(v) and v > 0]
    ax.autoscale(False, axis="y")  # the pending autoscale of the flat view is dropped, not run
    ax.set_ylim(min(shown) / 1.5, max(shown) * 1.5)


def _private_lines(ax: Any, private: pd.DataFrame, colour: dict, row: int, bottom: float) -> tuple[int, bool]:
    """Each private agent's points against epsilon with their bars; on a log axis (`bottom` finite)
    a bar reaching 0 is cut at `bottom` with a down caret. Returns (lines drawn, whether one was cut)."""
    groups = list(private.groupby(["agent", "privacy"], sort=False))
    clipped = False
    for i, ((agent, privacy), g) in enumerate(groups):
        g = g.sort_values("epsilon")
        eps, m, h = g["epsilon"].to_numpy(float), g["value"].to_numpy(float), g["half"].to_numpy(float)
        h = np.where(np.isfinite(h), h, 0.0)
        # agents at one epsilon are spread along the axis (+-_DODGE decades from the first to the
        # last) so their bars do not hide each other; the epsilon is the tick they straddle
        x = eps * 10.0 ** (_DODGE * (2.0 * i / (len(groups) - 1) - 1.0)) if len(groups) > 1 else eps
        cut = m - h <= 0 if math.isfinite(bottom) else np.zeros(len(m), bool)
        name = agent if privacy.lower() in agent.lower() else f"{agent} ({privacy.upper()})"
        lo, hi = int(g["n"].min()), int(g["n"].max())  # an unfinished sweep: points on fewer seeds
        container = ax.errorbar(
            x,
            m,
            yerr=np.vstack([np.where(cut, m - bottom, h), h]),
            color=colour[agent],
            marker=_MARKERS[i % len(_MARKERS)],
            ms=5,
            lw=1.6,
            capsize=3,
            label=f"{name} (n={hi})" if lo == hi else f"{name} (n={lo}-{hi})",
        )
        container.lines[0].set_gid(f"privrl-cost-{row}-{i}")
        if cut.any():
            clipped = True
            ax.plot(x[cut], np.full(int(cut.sum()), bottom), ls="none", marker=7, ms=6, color=colour[agent])
    return len(groups), clipped

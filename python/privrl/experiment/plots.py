"""Regret curves of a sweep: cumulative regret vs episode, mean over seeds with a band, one colour per
(algorithm, epsilon), on linear and log-log axes with the fitted slope of log R(K) vs log K (Sec. 5)."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd  # type: ignore[import-untyped, unused-ignore]  # users may lack pandas-stubs

from privrl.common.errors import ConfigError
from privrl.common.kinds import is_choice
from privrl.experiment.summary import GROUP, curves, fit_slope

#: The cumulative columns plot draws.
_VALUES = ("regret", "return", "cum_return")
#: Each value's axis label and symbol ("return", one episode's, was labelled cumulative).
_AXIS = {
    "regret": ("cumulative regret R(k)", "R(k)"),
    "return": ("return of episode k", "return"),
    "cum_return": ("cumulative return", "cumulative return"),
    "window_return": ("mean return per episode, last K/10 users", "return"),
}

#: Image formats matplotlib writes besides PNG and SVG: a path with one of them gets that file too
#: (fig.pdf: fig.pdf, fig.png and fig.svg). Any other image suffix is refused rather than replaced.
_EXTRA_FORMATS = (".pdf", ".eps", ".ps", ".jpg", ".jpeg", ".tif", ".tiff", ".webp")
_OTHER_IMAGES = (".gif", ".bmp")

__all__ = ["plot", "plot_runs"]

_STYLES = ("-", "--", ":", "-.")
_MARKERS = ("o", "s", "^", "v", "D", "x", "+", "*", "<", ">")


def _label(agent: str, privacy: str, eps: float) -> str:
    if privacy == "runs":  # plot_runs: the caller's label
        return agent
    return f"{agent} (non-private)" if privacy == "none" else f"{agent} eps={eps:g}"


def _check_table(df: pd.DataFrame, value: str, key: str) -> None:
    """A results table plot can draw `value` of, or ConfigError (a KeyError before)."""
    if not is_choice(value, _VALUES):
        raise ConfigError("value", f"must be one of {', '.join(_VALUES)}, got {value!r}")
    missing = [c for c in ("study", "agent", "privacy", "epsilon", "seed", "episode", value) if c not in df]
    if missing:
        raise ConfigError(key, f"not a privrl results table: no column {', '.join(missing)}")
    if df.empty:
        raise ConfigError(key, "no finished runs to plot yet (privrl report says how many are missing)")


def _stem(output: str | os.PathLike) -> tuple[Path, str | None]:
    """The file stem of plot's PNG and SVG (its folder created) and the extra format asked for
    (".pdf" for fig.pdf, None for a stem or a .png / .svg path); an image format matplotlib does
    not write is refused."""
    if not isinstance(output, (str, os.PathLike)):  # Path(3)'s TypeError named no argument
        raise TypeError(f"output must be a path (a str or os.PathLike), got {output!r}")
    stem = Path(output).expanduser()
    if stem.name in ("", "..") or stem.is_dir():  # "." wrote the hidden files .png / .svg, a folder
        raise ConfigError(  # its files beside it (results/rs -> results/rs.png)
            "output",
            f"{output} is a folder: plot writes files at a stem; give a path in it, e.g. "
            f"{Path(output) / 'regret.png'}",
        )
    suffix = stem.suffix.lower()
    if suffix in _OTHER_IMAGES:  # it wrote fig.png + fig.svg for fig.gif
        formats = ", ".join(_EXTRA_FORMATS)
        raise ConfigError(
            "output",
            f"{output}: plot writes a PNG and an SVG, and also one of {formats} when the path "
            "ends with it; give a stem or one of those paths",
        )
    extra = suffix if suffix in _EXTRA_FORMATS else None
    if extra is not None or suffix in (".png", ".svg"):
        stem = stem.with_suffix("")
    stem.parent.mkdir(parents=True, exist_ok=True)
    return stem, extra


def _with(stem: Path, suffix: str) -> Path:
    """`stem` + `suffix`: the stem is the whole name (fig_eps0.5 -> fig_eps0.5.png; Path.with_suffix
    replaced its ".5", so fig_eps0.1.pdf and fig_eps0.5.pdf both wrote fig_eps0.*)."""
    return stem.parent / (stem.name + suffix)


def plot(
    source: str | os.PathLike | pd.DataFrame,
    output: str | os.PathLike | None = None,
    band: str = "std",
    title: str | None = None,
    value: str = "regret",
) -> dict[str, Any]:
    """Draw the regret curves of a results folder (or of a sweep DataFrame) and save PNG + SVG.

    One row of two panels (linear, log-log) per study. `output` is the file stem or a .png/.svg path
    (default OUTDIR/regret); a path ending in .pdf, .eps, .ps, .jpg, .jpeg, .tif, .tiff or .webp
    gets that file too, next to the PNG and the SVG (fig.pdf: fig.pdf, fig.png, fig.svg; in .eps /
    .ps the translucent seed bands are drawn as their colour over white: PostScript has no
    transparency). Returns
    {"png": path, "svg": path, "curves": {study: n_curves}} (the name asked for kept whole:
    fig_eps0.5.pdf gives fig_eps0.5.png), plus {"pdf": path} (the extra
    format's name without its dot) when one was asked for.
    Every curve carries the SVG id "privrl-curve-<panel>-<study>-<i>" so tools can count them.
    """
    _check_title(title)
    import matplotlib

    matplotlib.use("Agg", force=True)  # files only: never needs a display
    import matplotlib.pyplot as plt

    if isinstance(source, pd.DataFrame):
        df = source
        if output is None:
            raise ConfigError("output", "plot(DataFrame) needs an output path")
    else:
        from privrl.experiment.results import load_results

        df = load_results(source)
        if output is None:
            output = Path(source) / "regret"
    _check_table(df, value, "source" if isinstance(source, pd.DataFrame) else "OUTDIR")
    _stem(output)  # a path it cannot write is refused before drawing
    studies = list(dict.fromkeys(df["study"]))
    # each row: 4.6 in for its panels and, under them, its legends' lines (two entries a line)
    heights = [4.6 + 0.17 * math.ceil(_n_curves(df[df["study"] == s]) / 2) for s in studies]
    fig, axes = plt.subplots(len(studies), 2, figsize=(12, sum(heights)), squeeze=False)
    counts: dict[str, int] = {}
    for row, study in enumerate(studies):
        part = df[df["study"] == study]
        if value == "regret" and part["regret"].isna().all():  # learned by interaction: no regret
            part, drawn = _window_returns(part), "window_return"
        else:
            drawn = value
        counts[study] = _draw_study(axes[row], part, study, row, band, plt.get_cmap, drawn)
    return {**save(fig, output, title), "curves": counts}


def save(fig: Any, output: str | os.PathLike, title: str | None = None) -> dict[str, str]:
    """Write `fig` (titled, laid out) as PNG and SVG at `output`'s stem (:func:`_stem`), and in the
    extra format its suffix asks for; close it; return {"png": path, "svg": path, [format: path]}."""
    import matplotlib.pyplot as plt

    stem, extra = _stem(output)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    png, svg = _with(stem, ".png"), _with(stem, ".svg")
    fig.savefig(png, dpi=110)
    fig.savefig(svg)
    written = {"png": str(png), "svg": str(svg)}
    if extra is not None:
        path = _with(stem, Path(output).expanduser().suffix)  # the path asked for (fig.PDF stays fig.PDF)
        if extra in (".eps", ".ps"):  # PostScript has no transparency: the bands would be solid
            _opaque(fig)
        fig.savefig(path, dpi=110)
        written[extra[1:]] = str(path)
    plt.close(fig)
    return written


def _opaque(fig: Any) -> None:
    """Every translucent artist of `fig` (the seed bands at alpha 0.18, the grid at 0.3, the
    legend's frame) as its colour composited over the background, at alpha 1: PostScript has no
    transparency, and matplotlib's PS backend drew a band in its curve's full colour (a solid
    block hiding the other agents' bands; the warning "partially transparent artists will be
    rendered opaque")."""
    from matplotlib.collections import Collection
    from matplotlib.colors import to_rgba
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    def over(rgba: Any, bg: Any) -> tuple[float, float, float, float]:
        r, g, b, a = to_rgba(rgba)
        return (*(a * c + (1.0 - a) * k for c, k in zip((r, g, b), bg[:3], strict=True)), 1.0)

    bg = to_rgba(fig.get_facecolor())  # white: the axes' background is opaque too
    for art in fig.findobj(lambda x: isinstance(x, (Collection, Line2D, Patch))):
        alpha = art.get_alpha()
        if alpha is None or alpha >= 1.0:
            continue
        if isinstance(art, Line2D):
            colour = over(to_rgba(art.get_color(), alpha), bg)
            art.set_alpha(None)
            art.set_color(colour)
            continue
        faces = [over(c, bg) for c in np.atleast_2d(art.get_facecolor())]
        edges = [over(c, bg) for c in np.atleast_2d(art.get_edgecolor())]
        art.set_alpha(None)
        art.set_facecolor(faces if isinstance(art, Collection) else faces[0])
        art.set_edgecolor(edges if isinstance(art, Collection) else edges[0])


def _draw_study(
    axes: Any, part: pd.DataFrame, study: str, row: int, band: str, get_cmap: Any, value: str = "regret"
) -> int:
    """One study's curves on its (linear, log-log) pair of axes; returns the number of curves.
    value "window_return" (a study learned by interaction, with no regret): the mean return per
    episode over the last tenth of the users on the left (_window_returns), the cumulative return
    on the right, both on linear axes."""
    learned = value == "window_return"
    right = ("cum", "cum_return") if learned else ("log", value)
    panels = [(axes[0], "lin", value), (axes[1], *right)]
    n_groups = 0
    for ax, name, v in panels:
        n_groups = _draw_panel(ax, part, v, name, row, band, get_cmap)
    env = part["env"].iloc[0]
    K = int(part["episode"].max())
    band_txt = "mean +- 1 std over seeds" if band == "std" else "mean, 95% CI over seeds"
    if part["seed"].nunique() == 1:  # no band is drawn: the title said there was one
        band_txt = "one seed, no band"
    ax_lin, ax_log = axes
    # plot_runs of privrl.learn's results has no environment name: the title began ", K=..."
    where = f"{env}, K={K}; {band_txt}" if env else f"K={K}; {band_txt}"
    if len(where) > 90:  # a long environment name ran off the figure's left edge
        where = f"{env}\nK={K}; {band_txt}"
    ax_lin.set_title(f"{study}\n{where}", fontsize=9.5)
    if learned:
        ax_log.set_title(f"{study}\nno model, no regret: realized returns", fontsize=9.5)
    else:
        ax_log.set_title(f"{study}\nlog-log; legend: slope of log {_AXIS[value][1]} vs log k", fontsize=9.5)
        ax_log.set_xscale("log")
        if (part[value] > 0).any():
            ax_log.set_yscale("log")
        else:  # every curve is 0 (an agent that never errs): nothing to draw on a log scale
            ax_log.text(0.5, 0.5, "no positive values: no log scale", ha="center", transform=ax_log.transAxes)
    for ax, name, v in panels:
        ax.set_xlabel("episode k")
        ax.set_ylabel(_AXIS[v][0])
        ax.grid(True, alpha=0.3, which="both" if name == "log" else "major")
        # under the panel, where it covers no curve (inside, 14 entries hid half of the panel)
        ax.legend(fontsize=7.5, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, frameon=False)
    widest = float(part["window_users"].max()) if learned else 0.0
    if widest > 1.25 * K / 10:  # a log grid coarser than K / 10: the windows are wider than it
        ax_lin.set_ylabel(f"mean return per episode, last K/10 to {widest:g} users")
    return n_groups


def _draw_panel(
    ax: Any, part: pd.DataFrame, value: str, name: str, row: int, band: str, get_cmap: Any
) -> int:
    """The curves of `value` on one panel, `name` "lin" or "cum" (linear axes) or "log" (log-log,
    the legend with each curve's slope); each curve's SVG id is privrl-curve-<name>-<row>-<i>."""
    groups = list(curves(part, band=band, value=value).groupby(GROUP, sort=False, dropna=False))
    cmap = get_cmap("tab10" if len(groups) <= 10 else "tab20")
    # one colour per agent, one line style per epsilon, and markers at staggered positions: curves
    # that coincide (every fixed-policy agent of a study) stay distinguishable
    agents = list(dict.fromkeys(key[1] for key, _ in groups))
    eps_order = sorted({key[3] for key, _ in groups}, key=lambda e: -e)
    for i, (key, g) in enumerate(groups):
        g = g.sort_values("episode")
        k, m, h = g["episode"].to_numpy(float), g["mean"].to_numpy(), g["half"].to_numpy()
        colour = cmap(agents.index(key[1]) % cmap.N)
        style = {
            "color": colour,
            "lw": 1.6,
            "ls": _STYLES[eps_order.index(key[3]) % len(_STYLES)],
            "marker": _MARKERS[i % len(_MARKERS)],
            "ms": 4,
            "markevery": (i % 7 * max(1, len(k) // 70), max(1, len(k) // 10)),
        }
        label = _label(key[1], key[2], key[3])
        if name != "log":
            (line,) = ax.plot(k, m, label=f"{label} (n={int(g['n'].max())})", **style)
            line.set_gid(f"privrl-curve-{name}-{row}-{i}")
            ax.fill_between(k, m - h, m + h, color=colour, alpha=0.18, lw=0)
            continue
        slope = fit_slope(k, m)
        pos = m > 0
        slope_txt = "slope n/a" if math.isnan(slope) else f"slope {slope:.2f}"
        if not pos.any():  # an agent that never errs: its legend entry says why no line is drawn
            slope_txt = "0 throughout, off the log scale"
        (line,) = ax.plot(k[pos], m[pos], label=f"{label}: {slope_txt}", **style)
        line.set_gid(f"privrl-curve-log-{row}-{i}")
        if pos.any():
            lo = np.maximum(m - h, m[pos].min() * 1e-2)
            ax.fill_between(k[pos], lo[pos], (m + h)[pos], color=colour, alpha=0.18, lw=0)
    return len(groups)


def _n_curves(part: pd.DataFrame) -> int:
    """How many curves a study's panel draws: one per (GROUP) key, as :func:`_draw_panel`."""
    return int(part.groupby(GROUP, sort=False, dropna=False).ngroups)


def _window_returns(part: pd.DataFrame) -> pd.DataFrame:
    """`part` with a "window_return" column: at each logged episode k of a run, its mean return per
    episode over the users since the last logged episode at or before k - K / 10 (a trailing
    average over about a tenth of the run, from cum_return; the first points average from 0), and
    "window_users", how many users that is (more than K / 10 on a log grid coarser than it). The
    rows keep their order: the curves are drawn in the table's order, as a model study's are (sorted
    by run id, agent "Z" took agent "A"'s colour)."""
    ids = part["run_id"].to_numpy()
    episodes, cums = part["episode"].to_numpy(dtype=float), part["cum_return"].to_numpy(dtype=float)
    out, users = np.full(len(part), np.nan), np.full(len(part), np.nan)
    for run_id in dict.fromkeys(ids):
        at = np.flatnonzero(ids == run_id)
        at = at[np.argsort(episodes[at], kind="stable")]
        ep, cum = np.r_[0.0, episodes[at]], np.r_[0.0, cums[at]]
        j = np.maximum(np.searchsorted(ep, ep[1:] - ep[-1] / 10, side="right") - 1, 0)
        j = np.minimum(j, np.arange(len(ep) - 1))  # never the point itself
        out[at] = (cum[1:] - cum[j]) / (ep[1:] - ep[j])
        users[at] = ep[1:] - ep[j]
    return part.assign(window_return=out, window_users=users)


def _check_title(title: Any) -> None:
    """A plot's title: a str or None (a number was drawn as its repr, and plot_runs' title=nan,
    the study's name, matched none of its rows: KeyError 'run_id')."""
    if title is not None and not isinstance(title, str):
        raise TypeError(f"title must be a str or None, got {title!r}")


def plot_runs(
    results: Any, output: str | os.PathLike, band: str = "std", title: str | None = None
) -> dict[str, Any]:
    """Plot results of privrl.run / privrl.learn with the CLI's look: `results` is one result, a
    list of them (the seeds of one agent: one curve, mean with a band), or a dict label -> list.
    Cumulative exact regret when every result has it (learn: with a ``reference``), else the
    cumulative realized return. Saves `output` as PNG and SVG; returns their paths."""
    _check_title(title)  # it names the study: a NaN title matched no row ("KeyError: 'run_id'")
    groups = results if isinstance(results, dict) else {None: results}
    rows = []
    for label, group in groups.items():
        group = group if isinstance(group, (list, tuple)) else [group]
        if not group or not all(hasattr(r, "returns") and hasattr(r, "regret") for r in group):
            raise ConfigError(
                "results", "plot_runs takes results of privrl.run / privrl.learn (one, a list or a dict)"
            )
        if len({len(r.returns) for r in group}) > 1:  # a mean over runs of different lengths
            raise ConfigError("results", f"the runs of {label or group[0].agent!r} have different lengths")
        for seed, res in enumerate(group):
            K = len(res.returns)
            idx = np.unique(np.linspace(1, K, min(K, 400)).astype(int)) - 1
            regret = res.regret if res.regret is not None else np.full(K, np.nan)
            rows.append(
                pd.DataFrame(
                    {
                        "study": title or "privrl runs",
                        "env": getattr(res, "env", ""),
                        "agent": label or res.agent,
                        "privacy": "runs",
                        "epsilon": 0.0,
                        "seed": seed,
                        "episode": idx + 1,
                        "regret": regret[idx],
                        "cum_return": np.cumsum(res.returns)[idx],
                    }
                )
            )
    if not rows:
        raise ConfigError("results", "nothing to plot: no results given")
    df = pd.concat(rows, ignore_index=True)
    value = "regret" if df["regret"].notna().all() else "cum_return"
    return plot(df, output, band=band, value=value)

"""Summaries of a sweep: per (study, agent, epsilon) final regret mean +- std across seeds, the fitted
slope of log R(K) vs log K, wall time and the noise scale actually used (the privacy cost of Sec. 5)."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from privrl.common.errors import ConfigError
from privrl.common.kinds import is_choice
from privrl.experiment.environments import reward_rescale

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped, unused-ignore]  # users may lack pandas-stubs

__all__ = ["GROUP", "curves", "fit_slope", "random_level", "report", "return_ends", "summarize", "verdict"]

# One curve / table row per (study, agent, privacy model, epsilon); seeds are aggregated.
GROUP = ["study", "agent", "privacy", "epsilon"]


def fit_slope(episodes: np.ndarray, regret: np.ndarray, start_fraction: float = 0.1) -> float:
    """Least-squares slope of log R(k) vs log k over the logged k >= start_fraction * K with R > 0
    (1 = linear regret, 0.5 = sqrt(K)); NaN with fewer than two such points. A regret below 1e-9 per
    episode is rounding (an agent that plays the optimal policy), not a curve: it has no slope."""
    k = np.asarray(episodes, dtype=float)
    r = np.asarray(regret, dtype=float)
    if len(k) == 0:
        return math.nan
    keep = (k >= start_fraction * k.max()) & (r > 1e-9 * k) & np.isfinite(r)
    if keep.sum() < 2 or np.ptp(np.log(k[keep])) == 0:
        return math.nan
    return float(np.polyfit(np.log(k[keep]), np.log(r[keep]), 1)[0])


# fmt: off
_T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042]
# fmt: on


def t975(df: int) -> float:
    """The Student-t 0.975 quantile with `df` >= 1 degrees of freedom: the table up to 30, then the
    Cornish-Fisher expansion in 1/df (within 3e-8 of the exact quantile at df >= 30; 1.96, the
    normal's, was used above 30: a band up to 4% too narrow)."""
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959963984540054
    g = (
        (z**3 + z) / 4,
        (5 * z**5 + 16 * z**3 + 3 * z) / 96,
        (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384,
        (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160,
    )
    return z + sum(gi / df ** (i + 1) for i, gi in enumerate(g))


def curves(df: pd.DataFrame, band: str = "std", value: str = "regret") -> pd.DataFrame:
    """Mean of `value` (cumulative regret, or "cum_return") across seeds per group and logged
    episode, with band half-width (`band` = "std": one standard deviation; "ci95": Student-t 95%
    confidence interval). One seed has no spread: its std and band are NaN (no band is drawn)."""
    if not is_choice(band, ("std", "ci95")):
        raise ValueError(f"band must be 'std' or 'ci95', got {band!r}")
    g = df.groupby([*GROUP, "episode"], sort=False, dropna=False)[value]
    out = g.agg(
        mean="mean", std=lambda x: float(np.std(x, ddof=1)) if len(x) > 1 else math.nan, n="count"
    ).reset_index()
    if band == "ci95":
        t = out["n"].map(lambda n: t975(n - 1) if n > 1 else math.nan)
        out["half"] = t * out["std"] / np.sqrt(out["n"].clip(lower=1))
    else:
        out["half"] = out["std"]
    return out


def _numbers(values: Iterable[Any]) -> list[float]:
    """The numbers among `values` (a run record may lack a key, or hold None)."""
    return [float(v) for v in values if isinstance(v, (int, float))]


def _sigma(digests: list[dict]) -> tuple[str, float]:
    """The noise scale of the first family the agent's release plan lists (the run records'
    privacy digests carry it, privrl.audit.report.summarize_privacy_report)."""
    firsts = [(d.get("mechanisms") or [{}])[0] for d in digests]
    vals = _numbers(m.get("scale") for m in firsts)
    if not vals:
        return "", math.nan
    return str(firsts[0].get("scale_key", "")), float(np.mean(vals))


def _first_number(values: Any) -> float:
    """The first number among `values`; the manifests' string "inf" (JSON has no infinity) is one:
    an epsilon the paper's argument cannot certify is infinite, not missing."""
    for v in values:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
        if v == "inf":
            return math.inf
    return math.nan


def _provenance(part: pd.DataFrame, cals: list[dict]) -> dict[str, Any]:
    """What else tells two rows of one agent family apart: delta (NaN when non-private), the
    calibration and, for JDP, the continual-release mechanism the runs used ("" where there is none:
    non-private and LDP runs). A comparison of two mechanisms or deltas needs them in the table."""
    privacy = part["privacy"].iloc[0]
    deltas = part["delta"].dropna().unique() if "delta" in part else []
    found = [c for c in cals if c]
    return {
        "delta": float(deltas[0]) if len(deltas) == 1 else math.nan,
        "calibration": str(found[0].get("calibration", "")) if found else "",
        "mechanism": str(found[0].get("mechanism") or "") if found and privacy == "jdp" else "",
    }


#: The results-table columns summarize reads.
_USED = (*GROUP, "algorithm", "seed", "run_id", "episode", "regret", "wall_time")


def summarize(df: pd.DataFrame, manifest: dict | None = None) -> pd.DataFrame:
    """One row per (study, agent, privacy, epsilon): delta (NaN when non-private), the calibration
    and the continual-release mechanism (JDP; "" otherwise) of its runs, algorithm, seeds, K, final
    regret mean and std, slope of log R vs log K (of the seed-mean curve), mean wall time per run,
    the noise scale used (sigma_B for UCRL-VTR, sigma_Lambda for LSVI-UCB, ...), the beta used, and
    the epsilon the releases spend under the paper's argument (eps_paper) and the tight accountant
    (eps_tight); the mean return per user over the first and the last tenth of the users
    (return_first, return_last) and the reward rescale they (and the regret) are on, as the
    environment's name states it (reward_rescale: "(r + 1) / 2" under reward_range = [-1, 1]; ""
    for the rewards as the environment pays them); the uniformly random policy's cumulative regret
    over K (random_regret, :func:`random_level`) and the final regret as a percentage of it
    (pct_random; both NaN without a recorded random policy)."""
    import pandas as pd  # type: ignore[import-untyped, unused-ignore]

    if not isinstance(df, pd.DataFrame):
        folder = (  # plot, report and cost_table take a folder: summarize("results/x") is a likely slip
            ": for a results folder, report(OUTDIR) prints this table and returns it"
            if isinstance(df, (str, os.PathLike))
            else ""
        )
        raise TypeError(
            f"df must be a privrl results table (a pandas DataFrame), got {type(df).__name__}{folder}"
        )
    if manifest is not None and not isinstance(manifest, dict):
        raise TypeError(f"manifest must be a dict (load_manifest) or None, got {type(manifest).__name__}")
    missing = [c for c in _USED if c not in df]
    if missing:  # summarize(pd.DataFrame()) was a KeyError 'study'
        raise ConfigError("df", f"not a privrl results table: no column {', '.join(missing)}")
    runs = (manifest or {}).get("runs", {})
    rows = []
    for key, part in df.groupby(GROUP, sort=False, dropna=False):
        K = int(part["episode"].max())
        last = part[part["episode"] == K]
        mean_curve = part.groupby("episode", sort=True)["regret"].mean()
        records = [runs.get(r, {}) for r in dict.fromkeys(part["run_id"])]
        cals = [rec.get("calibration") or {} for rec in records]
        walls = [w for w in (rec.get("wall_time") for rec in records) if isinstance(w, (int, float))]
        walls = walls or list(part.groupby("run_id")["wall_time"].max())
        nothing = part["privacy"].iloc[0] == "none"  # nothing released under a budget: nothing spent
        spent = [{} if nothing else (rec.get("privacy_report") or {}) for rec in records]
        sigma_name, sigma = _sigma(spent)
        betas = _numbers(c.get("beta_used") for c in cals)
        regret_mean = float(last["regret"].mean())
        slope = fit_slope(mean_curve.index.to_numpy(), mean_curve.to_numpy())
        ends = [[recorded_end(rec, k, K) for rec in records] for k in ("return_first", "return_last")]
        exact = all(v is not None for e in ends for v in e)
        first, late = (float(np.mean(_numbers(e))) for e in ends) if exact else _return_rates(part)
        random_regret = random_level((rec.get("random_regret") for rec in records), K)
        rows.append(
            {
                **dict(zip(GROUP, key, strict=True)),
                **_provenance(part, cals),
                "algorithm": part["algorithm"].iloc[0],
                "seeds": last["seed"].nunique(),
                "K": K,
                "regret_mean": regret_mean,
                "regret_std": float(last["regret"].std(ddof=1)) if len(last) > 1 else math.nan,
                "slope": slope,
                "wall_time": float(np.mean(walls)) if walls else math.nan,
                "sigma_name": sigma_name,
                "sigma": sigma,
                "beta": float(np.mean(betas)) if betas else math.nan,
                "eps_paper": _first_number(s.get("paper", {}).get("epsilon") for s in spent),
                "eps_tight": _first_number(s.get("tight", {}).get("epsilon") for s in spent),
                "return_first": first,
                "return_last": late,
                # the scale of those returns (and of the regret): the rescale the env's name states, or ""
                "reward_rescale": (reward_rescale(str(part["env"].iloc[0])) or "") if "env" in part else "",
                "random_regret": random_regret,
                "pct_random": 100.0 * regret_mean / random_regret if random_regret > 0 else math.nan,
                "verdict": verdict(slope, _late_rate(mean_curve), random_regret / K),
            }
        )
    return pd.DataFrame(rows)


def recorded_end(record: dict, key: str, K: int) -> float | None:
    """A run record's own ``return_first`` / ``return_last`` (``key``), from all its users, when it
    recorded one over the K of the table read (not a run cut at an earlier episode); else None (the
    caller falls back to the table's rows)."""
    value = record.get(key)
    return float(value) if isinstance(value, (int, float)) and record.get("episodes") == K else None


def random_level(rates: Iterable[Any], K: int) -> float:
    """The uniformly random policy's cumulative regret over K episodes: the mean of the runs' recorded
    rates per episode (``random_regret`` in a run record; None or missing ones skipped) times K; NaN
    when no run recorded one (a study learned by interaction)."""
    numbers = _numbers(rates)
    return float(np.mean(numbers)) * K if numbers else math.nan


def return_ends(returns: np.ndarray) -> tuple[float, float]:
    """A run's mean return per episode over its first and its last ceil(K / 10) episodes, from all
    K of them (each run's record holds them: the summary's return_first / return_last)."""
    n = -(-len(returns) // 10)
    return float(np.mean(returns[:n])), float(np.mean(returns[-n:]))


def _return_rates(part: pd.DataFrame) -> tuple[float, float]:
    """Mean realized return per episode over the first and the last ~10% of the episodes, from the
    seed-mean cumulative return at the logged episodes: up to the first logged k >= K / 10, and
    from the last logged k <= 9 K / 10 (NaN without a cum_return column). A study learned by
    interaction has no regret: these are its learning curve's two ends. Used only where the run
    records do not give return_ends (a table without its manifest, or runs of an older version):
    on a grid coarser than K / 10 the windows are wider than a tenth."""
    if "cum_return" not in part:
        return math.nan, math.nan
    curve = part.groupby("episode", sort=True)["cum_return"].mean()
    ep = np.r_[0.0, curve.index.to_numpy(dtype=float)]
    cum = np.r_[0.0, curve.to_numpy(dtype=float)]
    K = ep[-1]
    i = max(1, int(np.searchsorted(ep, 0.1 * K)))
    j = min(len(ep) - 2, int(np.searchsorted(ep, 0.9 * K, side="right")) - 1)
    return float(cum[i] / ep[i]), float((cum[-1] - cum[j]) / (K - ep[j]))


#: Regret per episode over the last 90% below which a curve is "negligible" whatever its slope
#: (an agent a thousandth of a reward unit per episode from optimal: its log-log slope is noise).
NEGLIGIBLE_RATE = 1e-3


def _late_rate(curve: pd.Series) -> float:
    """Regret per episode over the last 90% of a mean regret curve (episode -> regret)."""
    ep, reg = curve.index.to_numpy(dtype=float), curve.to_numpy(dtype=float)
    if len(ep) < 2:
        return math.nan
    i = int(np.searchsorted(ep, 0.1 * ep[-1]))
    i = min(i, len(ep) - 2)
    return float((reg[-1] - reg[i]) / (ep[-1] - ep[i]))


#: A linear curve whose regret per episode is at most this share of the uniformly random policy's
#: is "near-optimal" (a fixed policy close to the best one), not "not learning".
NEAR_OPTIMAL_SHARE = 0.05


def verdict(slope: float, late_rate: float = math.nan, random_rate: float = math.nan) -> str:
    """A few words on a regret curve from its log-log slope over the last 90% of episodes, and
    its regret per episode there (below NEGLIGIBLE_RATE: negligible, whatever the slope).
    ``random_rate``, the uniformly random policy's regret per episode (the sweep records it per
    run): a linear curve at most NEAR_OPTIMAL_SHARE of it is a near-optimal policy, not one that
    does not learn (the slope alone read an agent 2% of the random policy's regret per episode from
    optimal as "not learning yet")."""
    if late_rate < NEGLIGIBLE_RATE:
        return f"learned (< {NEGLIGIBLE_RATE:g} regret per episode)"
    if math.isnan(slope):
        return "-"
    if slope < 0.5:
        return "learned"
    if slope < 0.9:
        return "learning"
    if random_rate > 0 and late_rate <= NEAR_OPTIMAL_SHARE * random_rate:
        return f"near-optimal (linear at {late_rate / random_rate:.1%} of the random policy's regret)"
    return "not learning yet (linear)"


def _regret(x: float) -> str:
    """A regret for the table: one decimal, or three significant digits below 1 (".1f" printed
    every near-optimal agent's 0.0011 and 0.0002 alike as 0.0 +- 0.0)."""
    return "-" if math.isnan(x) else format(x, ".1f" if abs(x) >= 1 or x == 0 else ".3g")


def _pct(x: float) -> str:
    """A share of the random policy's regret: 3 significant digits, "-" without a random policy."""
    return "-" if math.isnan(x) else f"{x:.3g}%"


def _num(x: float | None, fmt: str = ".3g") -> str:
    return "-" if x is None or math.isnan(x) else format(x, fmt)


def _certified(tight: float, paper: float, target: float) -> str:
    """The epsilon the exact accountant certifies, and whether the paper's argument does too."""
    if math.isnan(tight):
        return "-"
    within = not math.isnan(paper) and paper <= target * (1 + 1e-9)
    return f"{tight:.3g}; paper {'yes' if within else 'no'}" + (f" ({paper:.3g})" if within else "")


#: The report table's columns: (header, right-aligned, the cell of a row of summarize()'s output).
_COLUMNS: list[tuple[str, bool, Any]] = [
    ("study", False, lambda r: r.study),
    ("agent", False, lambda r: r.agent),
    ("privacy", False, lambda r: r.privacy),
    ("eps", True, lambda r: f"{r.epsilon:g}"),  # an infinite epsilon prints inf
    ("seeds", True, lambda r: str(r.seeds)),
    ("K", True, lambda r: str(r.K)),
    ("final regret (mean +- std)", True, lambda r: f"{_regret(r.regret_mean)} +- {_regret(r.regret_std)}"),
    ("% of random", True, lambda r: _pct(getattr(r, "pct_random", math.nan))),
    ("slope", True, lambda r: _num(r.slope, ".2f")),
    ("wall s/run", True, lambda r: _num(r.wall_time, ".2f")),
    ("sigma used", False, lambda r: "-" if not r.sigma_name else f"{r.sigma_name}={r.sigma:.3g}"),
    ("beta used", True, lambda r: _num(r.beta)),
    ("eps certified (tight; paper)", True, lambda r: _certified(r.eps_tight, r.eps_paper, r.epsilon)),
    ("verdict", False, lambda r: r.verdict),
]
#: The column a study learned by interaction adds before "slope": its users' returns.
_RETURNS = (
    "return (first -> last 10%)",
    True,
    lambda r: f"{_num(r.return_first, '.3f')} -> {_num(r.return_last, '.3f')}",
)


def format_table(summary: pd.DataFrame) -> str:
    """A fixed-width text table of summarize()'s output."""
    # a study learned by interaction has no regret: its rows need their returns (the first and last
    # 10% of its users), and only then is the column printed
    returns = "return_last" in summary and bool(summary["regret_mean"].isna().any())
    columns = [*_COLUMNS[:8], _RETURNS, *_COLUMNS[8:]] if returns else _COLUMNS
    header = [h for h, _, _ in columns]
    lines = [[cell(r) for _, _, cell in columns] for r in summary.itertuples(index=False)]
    widths = [
        max(len(h), *(len(line[i]) for line in lines)) if lines else len(h) for i, h in enumerate(header)
    ]

    def fmt(cells: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if right else c.ljust(w)
            for c, w, (_, right, _) in zip(cells, widths, columns, strict=True)
        ).rstrip()

    table = [fmt(header), fmt(["-" * w for w in widths])] + [fmt(line) for line in lines]
    return "\n".join(table + (_return_scales(summary) if returns else []))


def _return_scales(summary: pd.DataFrame) -> list[str]:
    """Under the table, per study, the scale its returns (and its regret, if it has one) are on: the
    rewards rescaled into [0, 1] by its reward_range (the plot's title states the same map), or the
    environment's own."""
    import pandas as pd  # type: ignore[import-untyped, unused-ignore]

    rescales = summary.get("reward_rescale", pd.Series("", index=summary.index)).fillna("")
    notes = []
    for study, part in summary.assign(reward_rescale=rescales).groupby("study", sort=False):
        rescale = part["reward_rescale"].iloc[0]
        what = "return" if part["regret_mean"].isna().all() else "return and regret"
        scale = (
            f"the rewards rescaled into [0, 1] by reward_range, r -> {rescale}"
            if rescale
            else "the environment's own rewards"
        )
        notes.append(f"{what} of {study}: per user, on {scale}")
    return notes


def report(outdir: str | os.PathLike, file: Any = None) -> pd.DataFrame:
    """Print the summary table of a results folder (to `file`, default stdout) and return it."""
    from privrl.experiment.results import load_manifest, load_results, load_run_records

    if file is not None and not callable(getattr(file, "write", None)):  # print's AttributeError
        raise TypeError(f"file must be a text stream (sys.stdout, open(path, 'w')) or None, got {file!r}")
    runs = load_manifest(outdir).get("runs", {})
    records = load_run_records(outdir)
    df = load_results(outdir)
    summary = summarize(df, {"runs": records})
    total, done = len(runs), len(records)
    # runs that raised (their error and traceback are in the manifest): not merely unfinished
    failed = [
        r for k, r in runs.items() if k not in records and isinstance(r, dict) and r.get("status") == "failed"
    ]
    text = format_table(summary)
    if done < total:
        why = f"; {len(failed)} failed, e.g. {failed[0].get('error')} (manifest.json)" if failed else ""
        text += f"\n({done} of {total} runs finished{why}: rerun `privrl run` on the same config to complete)"
    print(text, file=file)
    return summary

"""The privacy-cost study on a family of environments (issue 21): what privacy costs in regret with
the agents' defaults, on environments nobody tuned for.

    python benches/family.py [--out results/family] [--envs river6 mix0 ...] [--privacy none jdp10 ...]
                             [--variants default sampling ...] [--seeds 3] [--K 100000] [-j 2]
                             [--summarize-only]

Every run is one job: (environment, privacy level, agent variant, seed, K). Jobs run in worker
processes (-j) and append one JSON line each to OUT/runs.jsonl, so the study resumes where it
stopped and several invocations (different --K, --envs) share one file. OUT/summary.md is rebuilt
from every finished run: per environment and agent, the final regret (mean +- std over seeds), the
slope of log regret over the last decade, the ratio to the best non-private agent, and the privacy
cost as a share of the uniformly random policy's regret; the gymnasium environments add the success
rate of the first and last 10% of users.

The family (issue 21, "The study on a family"):

* RiverSwimMixture(S, H=20), S in {6, 8, 12, 20} and RandomLinearMixtureMDP(seed) seeds 0-4:
  UCRL-VTR, exact regret through ``privrl.run``;
* RandomLinearMDP(S=100, A=10, d=16, H=20, seed) seeds 0-2: LSVI-UCB, exact regret;
* FrozenLake 4x4 non-slippery (H = 8) and slippery (H = 20), CliffWalking (H = 30): LSVI-UCB on
  one-hot features through ``privrl.learn`` on the gymnasium environment itself (FrozenLake's
  regret is realized against its exact optimal value, from ``from_gymnasium``'s model); the same
  three again with PSRL (privrl.agents.PSRL: posterior sampling on a pooled tabular release), the
  keys ending in ``-psrl``.

Agent variants: "default" is the constructor with no argument beyond the environment, the privacy
model (its epsilon, delta = 1e-5) and K; the others set one keyword (``exploration``, ``centre``)
and keep every other default.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import multiprocessing as mp
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

DELTA = 1e-5

# privacy levels: key -> (kind, epsilon)
PRIVACY: dict[str, tuple[str, float | None]] = {
    "none": ("none", None),
    # the previous default's non-private agent, with the beta_scale the older study tuned on it:
    # the "best non-private agent" the private defaults are compared with, not a default itself
    "none-tuned": ("none", None),
    "jdp10": ("jdp", 10.0),
    "jdp1": ("jdp", 1.0),
    "jdp0.1": ("jdp", 0.1),
    "ldp10": ("ldp", 10.0),
    "ldp1": ("ldp", 1.0),
}

# agent variants: key -> constructor keywords added to the defaults
VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "bs0.1": {"beta_scale": 0.1},  # with none-tuned: docs/privacy-cost.md's tuned UCRL-VTR value
    "optimism": {"exploration": "optimism"},
    "sampling": {"exploration": "sampling"},
    "optimism-zero": {"exploration": "optimism", "centre": "zero"},
    "sampling-zero": {"exploration": "sampling", "centre": "zero"},
    "optimism-feasible": {"exploration": "optimism", "centre": "feasible"},
    "sampling-feasible": {"exploration": "sampling", "centre": "feasible"},
}


@dataclass(frozen=True)
class FamilyEnv:
    """One environment of the family: how to build it, its algorithm and how it runs."""

    key: str
    label: str
    algorithm: str
    build: Callable[[], Any]  # privrl model (run) or (gym env, FeatureMap, learn kwargs) (learn)
    K: int
    models: tuple[str, ...]  # privacy kinds that apply
    via: str = "run"
    centres: bool = False  # the variants with a centre apply
    reference: Callable[[], tuple[float, float]] | None = None  # (V*, V of random) per episode
    success: Callable[[np.ndarray], np.ndarray] | None = None  # returns -> success indicator
    extra: dict[str, Any] = field(default_factory=dict)


def _river(S: int) -> Callable[[], Any]:
    def build() -> Any:
        from privrl.envs import RiverSwimMixture

        return RiverSwimMixture(S=S, H=20)

    return build


def _mixture(seed: int) -> Callable[[], Any]:
    def build() -> Any:
        from privrl.envs import RandomLinearMixtureMDP

        return RandomLinearMixtureMDP(seed=seed)

    return build


def _linear(seed: int) -> Callable[[], Any]:
    def build() -> Any:
        from privrl.envs import RandomLinearMDP

        return RandomLinearMDP(S=100, A=10, d=16, H=20, seed=seed)

    return build


def _frozen(slippery: bool, H: int) -> tuple[Callable[[], Any], Callable[[], tuple[float, float]]]:
    def build() -> Any:
        import gymnasium as gym

        from privrl.envs import FeatureMap

        env = gym.make("FrozenLake-v1", is_slippery=slippery)
        return env, FeatureMap.one_hot(16, 4, H, name=f"FrozenLake({'slippery' if slippery else 'det'})"), {}

    def reference() -> tuple[float, float]:
        import gymnasium as gym

        from privrl.envs import from_gymnasium

        model = from_gymnasium(gym.make("FrozenLake-v1", is_slippery=slippery), H=H)
        return _values(model)

    return build, reference


def _cliff(H: int) -> Callable[[], Any]:
    def build() -> Any:
        import gymnasium as gym

        from privrl.envs import FeatureMap

        env = gym.make("CliffWalking-v1" if _has_env("CliffWalking-v1") else "CliffWalking-v0")
        features = FeatureMap.one_hot(48, 4, H, name="CliffWalking")
        return env, features, {"reward": _cliff_reward}

    return build


def _cliff_reward(r: float) -> float:
    """The documented rescale of CliffWalking's rewards (-1 per step, -100 off the cliff) into [0, 1]."""
    return (r + 100.0) / 100.0


def _cliff_success(H: int) -> Callable[[np.ndarray], np.ndarray]:
    # every step before the goal pays 0.99 (a fall 0), every padded step after it reward(0) = 1:
    # a return above 0.99 H reaches the goal before the horizon
    return lambda returns: returns > 0.99 * H + 1e-9


def _has_env(name: str) -> bool:
    import gymnasium as gym

    return name in gym.registry


def _values(model: Any) -> tuple[float, float]:
    """(V*, V of the uniformly random policy) of a privrl model, per episode, from its start law."""
    v = np.zeros(model.S)
    for h in range(model.H - 1, -1, -1):
        v = (model.R[h] + model.P[h] @ v).mean(axis=1)
    return float(model.initial_value(model.optimal_values())), float(model.init_dist @ v)


def _model_reference(build: Callable[[], Any]) -> Callable[[], tuple[float, float]]:
    return lambda: _values(build())


def family() -> dict[str, FamilyEnv]:
    out: dict[str, FamilyEnv] = {}
    for S in (6, 8, 12, 20):
        b = _river(S)
        out[f"river{S}"] = FamilyEnv(
            f"river{S}", f"RiverSwimMixture(S={S}, H=20)", "UCRL-VTR", b, 100_000, ("jdp", "ldp"),
            centres=True, reference=_model_reference(b),
        )  # fmt: skip
    for seed in range(5):
        b = _mixture(seed)
        out[f"mix{seed}"] = FamilyEnv(
            f"mix{seed}", f"RandomLinearMixtureMDP(seed={seed})", "UCRL-VTR", b, 100_000, ("jdp", "ldp"),
            centres=True, reference=_model_reference(b),
        )  # fmt: skip
    for seed in range(3):
        b = _linear(seed)
        out[f"lin{seed}"] = FamilyEnv(
            f"lin{seed}", f"RandomLinearMDP(100, 10, 16, 20, seed={seed})", "LSVI-UCB", b, 100_000, ("jdp",),
            reference=_model_reference(b),
        )  # fmt: skip
    for key, slippery, H in (("frozen", False, 8), ("frozen-slippery", True, 20)):
        b, ref = _frozen(slippery, H)
        out[key] = FamilyEnv(
            key, f"FrozenLake 4x4 {'slippery' if slippery else 'non-slippery'} (H={H}), learn",
            "LSVI-UCB", b, 20_000, ("jdp",), via="learn", reference=ref,
            success=lambda returns: returns > 0.5, extra={"H": H},
        )  # fmt: skip
    out["cliff"] = FamilyEnv(
        "cliff", "CliffWalking (H=30), learn", "LSVI-UCB", _cliff(30), 20_000, ("jdp",), via="learn",
        success=_cliff_success(30), extra={"H": 30},
    )  # fmt: skip
    # the same gymnasium environments with the tabular agent (PSRL on the pooled release)
    for key in ("frozen", "frozen-slippery", "cliff"):
        e = out[key]
        out[f"{key}-psrl"] = FamilyEnv(
            f"{key}-psrl", e.label.replace(", learn", ", learn, PSRL"), "PSRL", e.build, e.K, e.models,
            via="learn", reference=e.reference, success=e.success, extra=e.extra,
        )  # fmt: skip
    return out


# ============================================================================================
# One run
# ============================================================================================
def privacy_model(key: str) -> Any:
    from privrl.privacy import JointDP, LocalDP, NonPrivate

    kind, eps = PRIVACY[key]
    if key == "none-tuned":
        return NonPrivate(calibration="practical")
    if kind == "none":
        return NonPrivate()
    return (JointDP if kind == "jdp" else LocalDP)(eps, DELTA)


def _agent_class(algorithm: str) -> Any:
    from privrl.agents import LSVIUCB, PSRL, UCRLVTR, UCRLVTRPlus

    return {"UCRL-VTR": UCRLVTR, "UCRL-VTR+": UCRLVTRPlus, "LSVI-UCB": LSVIUCB, "PSRL": PSRL}[algorithm]


def job_key(env: str, privacy: str, variant: str, seed: int, K: int) -> str:
    return f"{env}|{privacy}|{variant}|{seed}|{K}"


def _grid(K: int, n: int = 60) -> np.ndarray:
    """Episodes at which the curves are kept: log-spaced from 10 to K, with K/10 and K."""
    pts = np.unique(np.round(np.geomspace(10, K, n)).astype(np.int64))
    return np.unique(np.concatenate([pts, [K // 10, K]]))


def run_job(job: tuple[str, str, str, int, int]) -> dict[str, Any]:
    import warnings

    import privrl

    env_key, priv, variant, seed, K = job
    fam = family()[env_key]
    cls = _agent_class(fam.algorithm)
    kwargs = dict(VARIANTS[variant])
    t0 = time.perf_counter()
    grid = _grid(K)
    out: dict[str, Any] = {"key": job_key(*job), "env": env_key, "privacy": priv, "variant": variant}
    out.update(seed=seed, K=K, algorithm=fam.algorithm)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if fam.via == "run":
            env = fam.build()
            agent = cls(env, privacy_model(priv), episodes=K, seed=seed, **kwargs)
            res = privrl.run(agent, env, seed=10_000 + seed, progress=False)
            out["regret"] = float(res.regret[-1])
            out["curve"] = res.regret[grid - 1].tolist()
        else:
            gym_env, features, learn_kw = fam.build()
            agent = cls(features, privacy_model(priv), episodes=K, seed=seed, **kwargs)
            res = privrl.learn(agent, gym_env, seed=10_000 + seed, progress=False, **learn_kw)
            returns = np.asarray(res.returns)
            if fam.reference is not None:
                v_star, _ = fam.reference()
                regret = np.cumsum(v_star - returns)
                out["regret"] = float(regret[-1])
                out["curve"] = regret[grid - 1].tolist()
            if fam.success is not None:
                ok = fam.success(returns).astype(float)
                tenth = max(1, K // 10)
                out["success_first"] = float(ok[:tenth].mean())
                out["success_last"] = float(ok[-tenth:].mean())
                out["success_curve"] = [float(ok[max(0, g - tenth) : g].mean()) for g in grid]
    out["grid"] = grid.tolist()
    out["label"] = agent.label
    out["wall"] = time.perf_counter() - t0
    return out


# ============================================================================================
# Summary
# ============================================================================================
def load_runs(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    runs = {}
    for line in path.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            runs[r["key"]] = r
    return list(runs.values())


def _row(env: str, K: int, priv: str, variant: str, rs: list[dict[str, Any]], ref: Any) -> dict[str, Any]:
    """One line of the summary: the runs of one (environment, K, privacy, variant) over seeds."""
    row: dict[str, Any] = {"env": env, "K": K, "privacy": priv, "variant": variant, "seeds": len(rs)}
    if "regret" in rs[0]:
        final = np.array([r["regret"] for r in rs])
        curve = np.mean([r["curve"] for r in rs], axis=0)
        grid = np.array(rs[0]["grid"])
        i10 = int(np.searchsorted(grid, K // 10))
        ok = curve[i10] > 0 and curve[-1] > 0
        row["slope"] = math.log(curve[-1] / curve[i10]) / math.log(grid[-1] / grid[i10]) if ok else math.nan
        row.update(regret=float(final.mean()), std=float(final.std(ddof=1)) if len(rs) > 1 else 0.0)
        row["late_rate"] = float((curve[-1] - curve[i10]) / (grid[-1] - grid[i10]))
        row["random"] = (ref[0] - ref[1]) * K if ref is not None else math.nan
    if "success_last" in rs[0]:
        row["success_first"] = float(np.mean([r["success_first"] for r in rs]))
        row["success_last"] = float(np.mean([r["success_last"] for r in rs]))
    row["wall"] = float(np.mean([r["wall"] for r in rs]))
    return row


def _fmt(row: dict[str, Any], key: str, spec: str) -> str:
    v = row.get(key)
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def summarize(runs: list[dict[str, Any]], out: Path) -> str:
    fam = family()
    refs: dict[str, Any] = {}
    groups: dict[tuple[str, int, str, str], list[dict[str, Any]]] = {}
    for r in runs:
        groups.setdefault((r["env"], r["K"], r["privacy"], r["variant"]), []).append(r)
    rows = []
    for (env, K, priv, variant), rs in groups.items():
        if env not in refs:
            refs[env] = fam[env].reference() if fam[env].reference is not None else None
        rows.append(_row(env, K, priv, variant, rs, refs[env]))
    best: dict[tuple[str, int], float] = {}  # the best non-private agent of each (env, K)
    for row in rows:
        if row["privacy"].startswith("none") and "regret" in row:
            best[row["env"], row["K"]] = min(best.get((row["env"], row["K"]), math.inf), row["regret"])
    for row in rows:
        b = best.get((row["env"], row["K"]), math.nan)
        if "regret" in row:
            row["ratio"] = row["regret"] / b if b > 0 else math.nan
            row["cost_pct_random"] = 100.0 * (row["regret"] - b) / row["random"]
    envs, privs, variants = list(fam), list(PRIVACY), list(VARIANTS)
    rows.sort(
        key=lambda r: (envs.index(r["env"]), r["K"], privs.index(r["privacy"]), variants.index(r["variant"]))
    )
    lines = [
        "| environment | K | privacy | agent | seeds | regret (mean +- std) | slope last decade | x best NP "
        "| cost % of random | success first / last 10% |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        reg = f"{r['regret']:,.0f} +- {r['std']:,.0f}" if "regret" in r else "-"
        succ = f"{r['success_first']:.3f} / {r['success_last']:.3f}" if "success_last" in r else "-"
        lines.append(
            f"| {fam[r['env']].label} | {r['K']:,} | {r['privacy']} | {r['variant']} | {r['seeds']} | {reg} "
            f"| {_fmt(r, 'slope', '.2f')} | {_fmt(r, 'ratio', '.2f')} | {_fmt(r, 'cost_pct_random', '.1f')} "
            f"| {succ} |"
        )
    text = "\n".join(lines) + "\n"
    (out / "summary.md").write_text(text)
    (out / "summary.json").write_text(json.dumps(rows, indent=1))
    (out / "targets.md").write_text(targets(rows))
    return text


def _ordered(rs: list[dict[str, Any]]) -> bool:
    """Regret non-decreasing along rs (less private first), within 2 std of either run."""
    return all(
        a["regret"] <= b["regret"] + 2.0 * max(a["std"], b["std"]) + 1e-6 for a, b in itertools.pairwise(rs)
    )


Rows = dict[tuple[str, int, str, str], dict[str, Any]]


def _f(r: dict[str, Any] | None, key: str, spec: str) -> str:
    return "-" if r is None else _fmt(r, key, spec)


def _best_np(by: Rows, env: str, K: int) -> float:
    nps = [
        r["regret"]
        for k, r in by.items()
        if k[0] == env and k[1] == K and k[2].startswith("none") and "regret" in r
    ]
    return min(nps) if nps else math.nan


def _river_targets(by: Rows) -> list[str]:
    out = [
        "## RiverSwimMixture, JDP, defaults (K = 10^5; eps 1 also at 10^6)",
        "",
        "| S | best NP (study) | JDP eps 10 | x best NP | slope last decade | regret / episode, last 90% "
        "| JDP eps 1 at 10^6: slope, regret / episode |",
        "|---|---|---|---|---|---|---|",
    ]
    for S in (6, 8, 12, 20):
        e = f"river{S}"
        j, j1 = by.get((e, 100_000, "jdp10", "default")), by.get((e, 1_000_000, "jdp1", "default"))
        out.append(
            f"| {S} | {_best_np(by, e, 100_000):,.1f} | {_f(j, 'regret', ',.1f')} | {_f(j, 'ratio', '.2f')} "
            f"| {_f(j, 'slope', '.2f')} | {_f(j, 'late_rate', '.2e')} | {_f(j1, 'slope', '.2f')}, "
            f"{_f(j1, 'late_rate', '.2e')} |"
        )
    return out


def _prior_targets(by: Rows, fam: dict[str, FamilyEnv]) -> list[str]:
    out = [
        "## Robust to the prior: sampling agent, centre feasible (default) vs zero, K = 10^5",
        "",
        "| environment | eps | feasible | zero | ratio |",
        "|---|---|---|---|---|",
    ]
    for e in [k for k in fam if fam[k].centres]:
        for priv in ("jdp10", "jdp1"):
            a, z = by.get((e, 100_000, priv, "sampling")), by.get((e, 100_000, priv, "sampling-zero"))
            if a is None or z is None:
                continue
            lo, hi = sorted((max(a["regret"], 1e-9), max(z["regret"], 1e-9)))
            out.append(
                f"| {fam[e].label} | {priv[3:]} | {a['regret']:,.1f} | {z['regret']:,.1f} | {hi / lo:.2f} |"
            )
    return out


def _linear_targets(by: Rows, fam: dict[str, FamilyEnv]) -> list[str]:
    out = [
        "## RandomLinearMDP, JDP eps 10: privacy cost as % of the random policy's regret",
        "",
        "| environment | K | agent | regret | best NP | cost % of random |",
        "|---|---|---|---|---|---|",
    ]
    for e in ("lin0", "lin1", "lin2"):
        for K in (100_000, 1_000_000):
            for variant in ("default", "optimism"):
                r = by.get((e, K, "jdp10", variant))
                if r is not None:
                    out.append(
                        f"| {fam[e].label} | {K:,} | {variant} | {r['regret']:,.0f} "
                        f"| {_best_np(by, e, K):,.0f} | {_f(r, 'cost_pct_random', '.1f')} |"
                    )
    return out


def _gym_targets(by: Rows, fam: dict[str, FamilyEnv]) -> list[str]:
    out = ["## Gymnasium through learn: success rate of the first / last 10% of users", ""]
    out += ["| environment | privacy | agent | first 10% | last 10% |", "|---|---|---|---|---|"]
    for e in [k for k in fam if fam[k].via == "learn"]:
        for k, r in sorted(by.items(), key=lambda kv: (kv[0][2], kv[0][3])):
            if k[0] == e and "success_last" in r:
                first, last = r["success_first"], r["success_last"]
                out.append(f"| {fam[e].label} | {k[2]} | {k[3]} | {first:.3f} | {last:.3f} |")
    return out


def _order_targets(by: Rows, fam: dict[str, FamilyEnv]) -> list[str]:
    out = ["## Ordered by epsilon (default agents, within 2 std)", ""]
    out += ["| environment | K | JDP none <= 10 <= 1 <= 0.1 | LDP none <= 10 <= 1 |", "|---|---|---|---|"]
    word = {True: "yes", False: "NO", None: "-"}
    for e in fam:
        for K in sorted({k[1] for k in by if k[0] == e}):
            chains = []
            for privs in (("none", "jdp10", "jdp1", "jdp0.1"), ("none", "ldp10", "ldp1")):
                rs = [by.get((e, K, p, "default")) for p in privs]
                ok = all(r is not None and "regret" in r for r in rs)
                chains.append(_ordered([r for r in rs if r is not None]) if ok else None)
            if chains != [None, None]:
                out.append(f"| {fam[e].label} | {K:,} | {word[chains[0]]} | {word[chains[1]]} |")
    return out


def targets(rows: list[dict[str, Any]]) -> str:
    """Issue 21's acceptance checks from the summary rows (what is measured; "-" where not run)."""
    fam = family()
    by: Rows = {(r["env"], r["K"], r["privacy"], r["variant"]): r for r in rows}
    out = ["# Issue 21's targets, as measured (benches/family.py)", ""]
    for part in (_river_targets(by), _prior_targets(by, fam), _linear_targets(by, fam)):
        out += [*part, ""]
    out += [*_gym_targets(by, fam), "", *_order_targets(by, fam)]
    return "\n".join(out) + "\n"


# ============================================================================================
# Main
# ============================================================================================
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="results/family")
    ap.add_argument("--envs", nargs="*", default=None, help="environment keys (default: all)")
    ap.add_argument("--privacy", nargs="*", default=None, help="privacy keys (default: all that apply)")
    ap.add_argument("--variants", nargs="*", default=["default"], help="agent variants")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--K", type=int, default=None, help="episodes (default: the environment's)")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--summarize-only", action="store_true")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "runs.jsonl"
    fam = family()
    if not args.summarize_only:
        done = {r["key"] for r in load_runs(path)}
        jobs = []
        for env_key in args.envs or list(fam):
            e = fam[env_key]
            K = args.K or e.K
            for priv in args.privacy or list(PRIVACY):
                kind = PRIVACY[priv][0]
                if kind != "none" and kind not in e.models:
                    continue
                for variant in args.variants:
                    if "centre" in VARIANTS[variant] and not e.centres:
                        continue
                    for seed in range(args.seeds):
                        job = (env_key, priv, variant, seed, K)
                        if job_key(*job) not in done:
                            jobs.append(job)
        print(f"{len(jobs)} runs to do ({len(done)} done) -> {path}", flush=True)
        ctx = mp.get_context("spawn")
        with ctx.Pool(args.jobs) as pool, path.open("a") as f:
            for i, res in enumerate(pool.imap_unordered(run_job, jobs), 1):
                f.write(json.dumps(res) + "\n")
                f.flush()
                reg = f"{res['regret']:,.0f}" if "regret" in res else "-"
                succ = f" success {res['success_last']:.3f}" if "success_last" in res else ""
                print(f"[{i}/{len(jobs)}] {res['key']}: regret {reg}{succ} ({res['wall']:.0f} s)", flush=True)
    print(summarize(load_runs(path), out))


if __name__ == "__main__":
    main()

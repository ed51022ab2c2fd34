"""Private linear contextual bandits on real data (issue 24): privrl's LinUCB (non-private, JDP,
LDP) next to Vowpal Wabbit's contextual bandit on the same stream of users.

    python benches/bandits.py [--datasets digits wine breast_cancer] [--K 100000] [--seeds 3]
                              [--privacy none jdp10 jdp1 jdp0.1 ldp10 ldp1] [--vw] [--out DIR]
                              [--noise] [--lstsq]

Every dataset is the supervised-to-bandit reduction of privrl.envs.datasets.load_bandit (arms =
classes, reward 1 for the right class; contexts standardized, on the unit sphere with an
intercept). Seed s draws the users (uniformly with replacement, privrl.run's seed 100 + s) and
the agent's own streams (seed s). Per agent: accuracy (1 - regret per user: the rewards are
0/1 and the regret exact) over the last 10% of users, mean +- std over seeds, at each tenth of
the run, and rounds per second (one process, the agents run one after the other). With --vw,
Vowpal Wabbit (``--cb_explore_adf -q SA --epsilon 0.05``, the user's context as shared features,
one action per class) plays the same users (the same context indices and Bernoulli uniforms) in
the same process: its accuracy and time per round (prediction + learning through its Python API,
one example string per round; it is non-private). Writes OUT/bandits.md and OUT/bandits.json.
``--noise`` prints only the reward vector's released noise std of JDP LinUCB against LSVI-UCB at
H = 1 with static batches, both read from their privacy reports (:func:`noise_comparison`).
``--lstsq`` prints only the datasets' table of docs/benchmarks.md (n, p, arms and the linear
least-squares accuracy of :func:`lstsq_accuracy`).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

import privrl
from privrl.agents import LinUCB
from privrl.envs.datasets import DATASETS, load_bandit
from privrl.privacy import JointDP, LocalDP, NonPrivate

PRIVACY = {
    "none": NonPrivate,
    "jdp10": lambda: JointDP(10.0, 1e-5),
    "jdp1": lambda: JointDP(1.0, 1e-5),
    "jdp0.1": lambda: JointDP(0.1, 1e-5),
    "ldp10": lambda: LocalDP(10.0, 1e-5),
    "ldp1": lambda: LocalDP(1.0, 1e-5),
}


def run_privrl(env: Any, privacy: str, K: int, seed: int, **kw: Any) -> dict[str, Any]:
    agent = LinUCB(env, PRIVACY[privacy](), episodes=K, seed=seed, **kw)
    t0 = time.perf_counter()
    res = privrl.run(agent, env, seed=100 + seed)
    dt = time.perf_counter() - t0
    return {"gaps": res.gaps, "seconds": dt, "exploration": agent.exploration}


def users(env: Any, K: int, seed: int) -> np.ndarray:
    """The (context, uniform) stream privrl.run draws with seed 100 + seed."""
    u = np.random.default_rng(100 + seed).random((K, 2))
    return u


def run_vw(env: Any, K: int, seed: int, args: str) -> dict[str, Any]:
    import vowpalwabbit

    vw = vowpalwabbit.Workspace(f"{args} --quiet --random_seed {seed}")
    rng = np.random.default_rng(10_000 + seed)
    u = users(env, K, seed)
    ctx = [" ".join(f"{j}:{v:.6g}" for j, v in enumerate(x)) for x in env.contexts]
    acts = [f"|A a{a}" for a in range(env.A)]
    gaps = np.empty(K)
    t0 = time.perf_counter()
    for k in range(K):
        s = min(int(u[k, 0] * env.S), env.S - 1)
        shared = f"shared |S {ctx[s]}"
        pmf = np.asarray(vw.predict("\n".join([shared, *acts])), dtype=np.float64)
        pmf = pmf / pmf.sum()
        a = int(rng.choice(env.A, p=pmf))
        mean = env.means[s, a]
        r = float(u[k, 1] < mean)
        gaps[k] = env.means[s].max() - mean
        lines = [shared] + [f"0:{-r}:{pmf[a]:.6g} {acts[b]}" if b == a else acts[b] for b in range(env.A)]
        vw.learn("\n".join(lines))
    dt = time.perf_counter() - t0
    vw.finish()
    return {"gaps": gaps, "seconds": dt, "exploration": args}


def noise_comparison(dataset: str = "digits", K: int = 100_000, delta: float = 1e-5) -> list[str]:
    """The reward vector's released noise std, read from the privacy reports: JDP LinUCB (its
    continual release, std = scale x sqrt(max variance factor)) against LSVI-UCB at H = 1 with
    static batches (fresh noise per release: std = scale), at App. D's B and at LinUCB's number
    of releases, same (eps, delta, K) and d = A p."""
    from privrl.agents.lsvi_ucb.calibration import calibrate_lsvi_ucb
    from privrl.audit.report import privacy_report_from_calibration

    env = load_bandit(dataset, seed=0)
    lines = [
        "| eps | LinUCB reward noise std (scale x sqrt(max variance factor)), releases | LSVI-UCB H = 1, "
        "App. D's B: std, releases | ratio | LSVI-UCB H = 1 at LinUCB's releases: std | ratio |",
        "|---|---|---|---|---|---|",
    ]
    for eps in (10.0, 1.0, 0.1):
        ag = LinUCB(env, JointDP(eps, delta), episodes=K, seed=0)
        u = next(m for m in ag.privacy_report()["mechanisms"] if m["name"] == "u")
        vf = ag.calibration.mechanism_max_variance_factor or 1.0
        mine = u["scale"] * vf**0.5
        out = []
        for batches in ("static", ag.calibration.leaves):
            cal = calibrate_lsvi_ucb(
                "jdp", eps, delta, H=1, K=K, d=env.d, batches=batches, calibration="adaptive"
            )
            rep = privacy_report_from_calibration("lsvi_ucb", cal)
            out.append((next(m for m in rep["mechanisms"] if m["name"] == "u")["scale"], cal.releases))
        (s1, r1), (s2, _) = out
        lines.append(
            f"| {eps:g} | {mine:.3g} ({u['scale']:.3g} x sqrt({vf:.3g})), {ag.calibration.leaves - 1:,} | "
            f"{s1:.3g}, {r1:,} | {mine / s1:.3f} | {s2:.3g} | {mine / s2:.3f} |"
        )
    return lines


def lstsq_accuracy(env: Any) -> float:
    """The accuracy of the best linear model a full-information learner fits on the whole table:
    per arm the ordinary least-squares fit of the 0/1 reward on the context (every arm's reward
    seen on every row), the argmax played on the same rows (in-sample; no exploration, no noise):
    a ceiling of what LinUCB's disjoint linear arms can reach on the table."""
    W = np.linalg.lstsq(env.contexts, env.means, rcond=None)[0]
    return float(np.mean((env.contexts @ W).argmax(axis=1) == env.labels))


def lstsq_table(datasets: list[str]) -> list[str]:
    """docs/benchmarks.md's table of the classification bandits."""
    lines = [
        "| name | n | p (features + intercept) | arms | linear least-squares accuracy |",
        "|---|---|---|---|---|",
    ]
    for name in datasets:
        env = load_bandit(name, seed=0)
        lines.append(f"| {name} | {env.S:,} | {env.p} | {env.A} | {lstsq_accuracy(env):.3f} |")
    return lines


def summary(runs: list[dict[str, Any]], K: int) -> dict[str, Any]:
    tail = [1.0 - r["gaps"][-(K // 10) :].mean() for r in runs]
    deciles = np.mean([[1.0 - g.mean() for g in np.array_split(r["gaps"], 10)] for r in runs], axis=0)
    secs = np.mean([r["seconds"] for r in runs])
    return {
        "accuracy_last10": float(np.mean(tail)),
        "accuracy_std": float(np.std(tail)),
        "deciles": [round(float(x), 4) for x in deciles],
        "rounds_per_second": float(K / secs),
        "us_per_round": float(1e6 * secs / K),
        "exploration": runs[0]["exploration"],
    }


def at_least(low: int) -> Any:
    """An argparse type: an integer >= low (--K 5 had no last 10% and empty tenths, --seeds 0 no
    runs to average: a NaN table or a traceback)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {value}")
        return value

    return parse


def main(argv: list[str] | None = None) -> None:
    # the module docstring's first paragraph (one sentence over two lines), as one line
    ap = argparse.ArgumentParser(
        description=" ".join(__doc__.split("\n\n")[0].split()),
        epilog="Writes OUT/bandits.md and OUT/bandits.json (see the module docstring for the protocol).",
    )
    ap.add_argument(
        "--datasets",
        nargs="+",
        default=["digits", "wine", "breast_cancer"],
        choices=list(DATASETS),
        metavar="DATASET",
        help="datasets of privrl.envs.datasets.load_bandit to run (default: digits wine breast_cancer; "
        "--noise uses the first)",
    )
    ap.add_argument(
        "--K", type=at_least(10), default=100_000, help="users (rounds) per run, >= 10 (default: 100000)"
    )
    ap.add_argument("--seeds", type=at_least(1), default=3, help="seeds per agent, 0 .. SEEDS-1 (default: 3)")
    ap.add_argument(
        "--privacy",
        nargs="+",
        default=list(PRIVACY),
        choices=list(PRIVACY),
        metavar="SETTING",
        help=f"LinUCB privacy settings to run (default: all, {' '.join(PRIVACY)})",
    )
    ap.add_argument(
        "--exploration",
        nargs="+",
        default=[None],
        choices=["optimism", "sampling"],
        metavar="RULE",
        help="LinUCB exploration rules to run: optimism and / or sampling (default: the agent's own default "
        "for each privacy setting)",
    )
    ap.add_argument(
        "--vw", action="store_true", help="also run Vowpal Wabbit on the same users (default: off)"
    )
    ap.add_argument(
        "--vw-args",
        default="--cb_explore_adf -q SA --epsilon 0.05",
        help="Vowpal Wabbit arguments with --vw, given with '=' as they start with '--' "
        "(default: --vw-args='%(default)s')",
    )
    ap.add_argument(
        "--out", default="results/bandits", help="output folder for bandits.md / .json (default: %(default)s)"
    )
    ap.add_argument(
        "--noise",
        action="store_true",
        help="print only the reward-noise comparison of JDP LinUCB with LSVI-UCB on the first dataset "
        "at --K users, then exit (default: off)",
    )
    ap.add_argument(
        "--lstsq",
        action="store_true",
        help="print only the datasets' sizes and linear least-squares accuracy (docs/benchmarks.md's "
        "table), then exit (default: off)",
    )
    a = ap.parse_args(argv)
    if a.vw and not (a.lstsq or a.noise) and importlib.util.find_spec("vowpalwabbit") is None:
        # refused up front: the LinUCB runs before the first Vowpal Wabbit one take minutes to hours
        ap.error("--vw needs Vowpal Wabbit's Python package (not a privrl extra): pip install vowpalwabbit")
    if a.lstsq:
        print("\n".join(lstsq_table(a.datasets)))
        return
    if a.noise:
        print("\n".join(noise_comparison(a.datasets[0], a.K)))
        return
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    table: dict[str, Any] = {}
    for name in a.datasets:
        env = load_bandit(name, seed=0)
        for privacy in a.privacy:
            for expl in a.exploration:
                kw = {} if expl is None else {"exploration": expl}
                runs = [run_privrl(env, privacy, a.K, s, **kw) for s in range(a.seeds)]
                key = f"{name} | LinUCB {privacy}" + ("" if expl is None else f" {expl}")
                table[key] = summary(runs, a.K)
                print(key, json.dumps({k: v for k, v in table[key].items() if k != "deciles"}), flush=True)
        if a.vw:
            runs = [run_vw(env, a.K, s, a.vw_args) for s in range(a.seeds)]
            key = f"{name} | Vowpal Wabbit (non-private)"
            table[key] = summary(runs, a.K)
            print(key, json.dumps({k: v for k, v in table[key].items() if k != "deciles"}), flush=True)
    (out / "bandits.json").write_text(json.dumps(table, indent=1))
    lines = [
        f"K = {a.K:,} users, {a.seeds} seeds; accuracy = 1 - regret per user over the last 10% "
        "(mean +- std over seeds); rounds per second in one process.",
        "",
        "| dataset | agent | exploration | accuracy, last 10% | accuracy per tenth of the run | rounds / s |",
        "|---|---|---|---|---|---|",
    ]
    for key, r in table.items():
        ds, agent = key.split(" | ")
        dec = " ".join(f"{x:.2f}" for x in r["deciles"])
        lines.append(
            f"| {ds} | {agent} | {r['exploration']} | {r['accuracy_last10']:.3f} +- {r['accuracy_std']:.3f} "
            f"| {dec} | {r['rounds_per_second']:,.0f} |"
        )
    (out / "bandits.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

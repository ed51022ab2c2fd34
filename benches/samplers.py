"""What the secure samplers cost per episode (issue 14, item 1), in one process.

    python benches/samplers.py [--only NAME ...] [--repeat R]

For each private workload of docs/benchmarks.md it builds the same agent twice, with
``sampler="discrete"`` (the default: exact discrete Gaussian / Laplace, Canonne, Kamath & Steinke
2020) and ``sampler="float"`` (the continuous laws), runs both with privrl.run (the Rust agents,
whole blocks of episodes per call) and prints the cost per episode of each and their ratio (best of
R runs each, interleaved, so machine noise hits both alike), plus the final regret of each (the
discrete tight / practical noise is slightly larger: its accounting adds the lattice rounding's mu
on the continuous Gaussian's exact curve, by domination, or uses zCDP where that is tighter).
Timed: privrl.run on a freshly built agent (construction outside the timer; ``privrl.run`` looked
up before it, since its first lookup imports the harness, ~0.3 s).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass

import privrl
from privrl.agents import LSVIUCB, UCRLVTR, UCRLVTRPlus
from privrl.envs import HardToLearn, RandomLinearMDP, RandomLinearMixtureMDP, RiverSwimMixture
from privrl.privacy import JointDP, LocalDP


@dataclass
class Workload:
    name: str
    what: str
    K: int
    make: Callable  # sampler -> (env, agent)


def _w(name: str, what: str, K: int, env_fn: Callable, cls: type, model: Callable) -> Workload:
    def make(sampler: str):
        env = env_fn()
        return env, cls(env, model(sampler), episodes=K, seed=1)

    return Workload(name, what, K, make)


WORKLOADS = [
    _w(
        "mixture-ldp",
        "LDP UCRL-VTR, HardToLearn d=5 H=6",
        10_000,
        lambda: HardToLearn(d=5, H=6, K=10_000, seed=0),
        UCRLVTR,
        lambda s: LocalDP(1.0, 1e-5, sampler=s, calibration="paper"),
    ),
    _w(
        "mixture-jdp",
        "JDP UCRL-VTR, RandomLinearMixtureMDP",
        10_000,
        RandomLinearMixtureMDP,
        UCRLVTR,
        lambda s: JointDP(1.0, 1e-5, sampler=s, calibration="paper"),
    ),
    _w(
        "river-jdp",
        "JDP UCRL-VTR, RiverSwimMixture S=6 H=20",
        100_000,
        lambda: RiverSwimMixture(S=6, H=20),
        UCRLVTR,
        lambda s: JointDP(1.0, 1e-5, sampler=s, calibration="paper"),
    ),
    _w(
        "river-practical",
        "JDP UCRL-VTR practical (BLT), RiverSwimMixture S=6 H=20, eps=10",
        100_000,
        lambda: RiverSwimMixture(S=6, H=20),
        UCRLVTR,
        lambda s: JointDP(10.0, 1e-5, calibration="practical", sampler=s),
    ),
    _w(
        "river-pure",
        "pure JDP UCRL-VTR (Laplace), RiverSwimMixture S=6 H=20",
        100_000,
        lambda: RiverSwimMixture(S=6, H=20),
        UCRLVTR,
        lambda s: JointDP(1.0, 0.0, sampler=s, calibration="paper"),
    ),
    _w(
        "mixture-plus",
        "JDP UCRL-VTR+, RandomLinearMixtureMDP",
        10_000,
        RandomLinearMixtureMDP,
        UCRLVTRPlus,
        lambda s: JointDP(1.0, 1e-5, sampler=s, calibration="paper"),
    ),
    _w(
        "linear-jdp",
        "JDP LSVI-UCB static, RandomLinearMDP",
        100_000,
        RandomLinearMDP,
        LSVIUCB,
        lambda s: JointDP(1.0, 1e-5, sampler=s, calibration="paper"),
    ),
]


def _run(w: Workload, sampler: str) -> tuple[float, float]:
    env, agent = w.make(sampler)
    run = privrl.run  # resolved before the timer: its first use imports the harness (pandas)
    t0 = time.perf_counter()
    res = run(agent, env, w.K, seed=2, progress=False)
    return time.perf_counter() - t0, float(res.final_regret)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", help="workload names")
    ap.add_argument("--repeat", type=int, default=2, help="runs of each sampler (best kept)")
    args = ap.parse_args()
    print(
        f"{'workload':16} {'K':>7} {'float us/ep':>12} {'discrete us/ep':>15} {'ratio':>6}  "
        "regret float / discrete"
    )
    for w in WORKLOADS:
        if args.only and w.name not in args.only:
            continue
        best = {"float": float("inf"), "discrete": float("inf")}
        regret = {}
        for _ in range(args.repeat):
            for s in ("float", "discrete"):
                t, r = _run(w, s)
                best[s], regret[s] = min(best[s], t), r
        us = {s: best[s] / w.K * 1e6 for s in best}
        print(
            f"{w.name:16} {w.K:>7} {us['float']:>12.2f} {us['discrete']:>15.2f} "
            f"{us['discrete'] / us['float']:>6.2f}  {regret['float']:.0f} / {regret['discrete']:.0f}",
            flush=True,
        )


if __name__ == "__main__":
    main()

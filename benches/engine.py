"""Whole runs on the episode engine against the Python path, in one process (issue 12).

    python benches/engine.py [--quick] [--python-episodes N] [--only NAME ...] [--memory]

For each workload (docs/benchmarks.md) it builds two identical agents (same seeds), runs one on
the engine (privrl.run(..., engine="rust")) and one on the Python loop (engine="python"), checks
that the regret arrays agree bit for bit, and prints the cost per episode of each, their ratio,
the engine's whole-run time and the targets of issue 12. The Python path runs the first N
episodes only with --python-episodes N (its per-episode cost does not depend on K; the
agents are still calibrated for the full K). --memory runs a K = 10^6 JDP LSVI-UCB in a fresh
process and prints its peak RSS, with every episode's raw record kept (planning="per_sample", the
storage the server used to hold in every mode) and without (planning="auto").
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import privrl
from privrl.agents import LSVIUCB, UCRLVTR, UCRLVTRPlus
from privrl.envs import (
    HardToLearn,
    RandomLinearMDP,
    RandomLinearMixtureMDP,
    RiverSwimMixture,
    SyntheticLinearMDP,
)
from privrl.privacy import JointDP, LocalDP, NonPrivate


@dataclass
class Workload:
    name: str
    what: str
    K: int
    make: Callable  # () -> (env, agent factory)
    max_us: float | None = None  # target cost per episode on the engine
    max_seconds: float | None = None  # target for the whole run on the engine
    min_ratio: float | None = None  # target Python / engine per episode


def _mixture_ldp():
    env = HardToLearn(d=5, H=6, K=10_000, seed=0)
    return env, lambda: UCRLVTR(env, LocalDP(1.0, 1e-5), episodes=10_000, seed=1)


def _mixture_jdp():
    env = RandomLinearMixtureMDP()
    return env, lambda: UCRLVTR(env, JointDP(1.0, 1e-5), episodes=10_000, seed=1)


def _river_jdp():
    env = RiverSwimMixture(S=6, H=20)
    return env, lambda: UCRLVTR(env, JointDP(1.0, 1e-5), episodes=100_000, seed=1)


def _river_practical():
    env = RiverSwimMixture(S=6, H=20)
    return env, lambda: UCRLVTR(env, JointDP(10.0, 1e-5, calibration="practical"), episodes=100_000, seed=1)


def _mixture_plus():
    env = RandomLinearMixtureMDP()
    return env, lambda: UCRLVTRPlus(env, JointDP(1.0, 1e-5), episodes=10_000, seed=1)


def _linear_jdp():
    env = RandomLinearMDP()
    return env, lambda: LSVIUCB(env, JointDP(1.0, 1e-5), episodes=100_000, seed=1)


def _linear_full():
    env = SyntheticLinearMDP(H=15)
    return env, lambda: LSVIUCB(env, NonPrivate(), batches="every", episodes=2_000, seed=1)


WORKLOADS = [
    Workload(
        "mixture-ldp", "LDP UCRL-VTR, HardToLearn d=5 H=6", 10_000, _mixture_ldp, max_us=15.0, min_ratio=10.0
    ),
    Workload("mixture-jdp", "JDP UCRL-VTR, RandomLinearMixtureMDP default", 10_000, _mixture_jdp),
    Workload(
        "river-jdp",
        "JDP UCRL-VTR, RiverSwimMixture S=6 H=20",
        100_000,
        _river_jdp,
        max_seconds=5.0,
        min_ratio=5.0,
    ),
    Workload(
        "river-practical",
        "JDP UCRL-VTR practical (BLT), RiverSwimMixture S=6 H=20",
        100_000,
        _river_practical,
    ),
    Workload("mixture-plus", "JDP UCRL-VTR+, RandomLinearMixtureMDP default", 10_000, _mixture_plus),
    Workload(
        "linear-jdp",
        "JDP LSVI-UCB static, RandomLinearMDP default",
        100_000,
        _linear_jdp,
        max_seconds=2.0,
        min_ratio=5.0,
    ),
    Workload("linear-full", "LSVI-UCB every episode, SyntheticLinearMDP H=15", 2_000, _linear_full),
]


def _timed_run(agent, env, K: int, engine: str):
    t0 = time.perf_counter()
    res = privrl.run(agent, env, K, seed=2, engine=engine)
    return time.perf_counter() - t0, res


def measure(w: Workload, python_episodes: int | None) -> dict:
    with warnings.catch_warnings():  # SyntheticLinearMDP's Asm. 1 note is not news here
        warnings.simplefilter("ignore")
        env, make = w.make()
    t0 = time.perf_counter()
    agent = make()
    build = time.perf_counter() - t0
    t_rust, r_rust = _timed_run(agent, env, w.K, "rust")
    k_py = w.K if python_episodes is None else min(w.K, python_episodes)
    t_py, r_py = _timed_run(make(), env, k_py, "python")
    same = bool(np.array_equal(r_py.regret, r_rust.regret[:k_py]))
    us_rust, us_py = t_rust / w.K * 1e6, t_py / k_py * 1e6
    return {
        "build": build,
        "rust_s": t_rust,
        "us_rust": us_rust,
        "us_py": us_py,
        "k_py": k_py,
        "ratio": us_py / us_rust,
        "same": same,
        "regret": r_rust.final_regret,
    }


def _verdict(w: Workload, m: dict) -> str:
    checks = []
    if w.max_us is not None:
        checks.append(f"<= {w.max_us:g} us: {'yes' if m['us_rust'] <= w.max_us else 'NO'}")
    if w.max_seconds is not None:
        checks.append(f"<= {w.max_seconds:g} s: {'yes' if m['rust_s'] <= w.max_seconds else 'NO'}")
    if w.min_ratio is not None:
        checks.append(f">= {w.min_ratio:g}x: {'yes' if m['ratio'] >= w.min_ratio else 'NO'}")
    return "; ".join(checks) or "-"


_MEMORY_CHILD = """
import resource, sys, time
import privrl
from privrl.agents import LSVIUCB
from privrl.envs import RandomLinearMDP
from privrl.privacy import JointDP
env = RandomLinearMDP()
t0 = time.perf_counter()
agent = LSVIUCB(env, JointDP(1.0, 1e-5), episodes=1_000_000, seed=1, planning=sys.argv[1])
res = privrl.run(agent, env, seed=2, engine="rust")
print(time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, res.final_regret)
"""


def memory() -> None:
    print("\nK = 10^6 JDP LSVI-UCB (RandomLinearMDP default, static batches), one fresh process each:")
    for planning in ("auto", "per_sample"):
        out = subprocess.run(
            [sys.executable, "-c", _MEMORY_CHILD, planning], capture_output=True, text=True, check=True
        ).stdout.split()
        seconds, rss, regret = (float(x) for x in out)
        print(
            f"  planning={planning:<10} peak RSS {rss:7.0f} MB, {seconds:6.1f} s, final regret {regret:,.0f}"
        )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the Python path runs 2,000 episodes per workload")
    ap.add_argument("--python-episodes", type=int, default=None)
    ap.add_argument("--only", nargs="*", default=None, help="workload names")
    ap.add_argument("--memory", action="store_true", help="also the K = 10^6 peak-RSS runs")
    args = ap.parse_args(argv)
    k_py = 2_000 if args.quick and args.python_episodes is None else args.python_episodes
    print(
        f"{'workload':<16} {'K':>8} {'engine us/ep':>13} {'python us/ep':>13} {'ratio':>7} "
        f"{'engine run':>11} {'identical':>10}  targets"
    )
    for w in WORKLOADS:
        if args.only and w.name not in args.only:
            continue
        m = measure(w, k_py)
        print(
            f"{w.name:<16} {w.K:>8,} {m['us_rust']:>13.1f} {m['us_py']:>13.1f} {m['ratio']:>6.1f}x "
            f"{m['rust_s']:>9.2f} s {('yes' if m['same'] else 'NO'):>10}  {_verdict(w, m)}"
            f"   [{w.what}; python over {m['k_py']:,} episodes; agent built in {m['build']:.2f} s]",
            flush=True,
        )
    if args.memory:
        memory()
    print(f"\nthis process: peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

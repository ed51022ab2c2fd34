"""Timings and regret of Privacy-Preserving UCRL-VTR (Alg. 1) on the docs/benchmarks.md workloads.

    python benches/bench_mixture.py [--quick] [--regret] [--algorithm UCRL-VTR|UCRL-VTR+]

Prints: mixture-ldp (LDP UCRL-VTR, HardToLearn d=5 H=6, K=10,000; target <= 20 s) and
mixture-jdp (JDP UCRL-VTR, RandomLinearMixtureMDP default, K=10,000) wall times; with --regret,
the final regret of non-private / JDP / LDP at eps in {10, 1, 0.1} on RandomLinearMixtureMDP at
beta_scale = 1 and at a tuned beta_scale.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import privrl
from privrl.envs import HardToLearn, RandomLinearMixtureMDP
from privrl.privacy import JointDP, LocalDP, NonPrivate


def agent_class(name):
    if name == "UCRL-VTR+":
        from privrl.agents import UCRLVTRPlus

        return UCRLVTRPlus
    from privrl.agents import UCRLVTR

    return UCRLVTR


def timed(cls, env, privacy, K, seed=1, **kw):
    t0 = time.perf_counter()
    agent = cls(env, privacy=privacy, episodes=K, seed=seed, **kw)
    res = privrl.run(agent, env, episodes=K, seed=seed + 1)
    return time.perf_counter() - t0, res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--regret", action="store_true")
    ap.add_argument("--algorithm", default="UCRL-VTR", choices=["UCRL-VTR", "UCRL-VTR+"])
    ap.add_argument("--episodes", type=int, default=None)
    args = ap.parse_args(argv)
    cls = agent_class(args.algorithm)
    K = args.episodes or (1000 if args.quick else 10_000)
    env = HardToLearn(d=5, H=6, K=10_000, seed=0)
    t, res = timed(cls, env, LocalDP(1.0, 1e-5, calibration="paper"), K)
    print(
        f"mixture-ldp  {args.algorithm:<10} LDP(eps=1, delta=1e-5) HardToLearn(d=5, H=6)  K={K}: "
        f"{t:.2f} s ({t / K * 1e3:.3f} ms/episode), final regret {res.final_regret:.1f}"
    )
    env = RandomLinearMixtureMDP()
    t, res = timed(cls, env, JointDP(1.0, 1e-5, calibration="paper"), K)
    print(
        f"mixture-jdp  {args.algorithm:<10} JDP(eps=1, delta=1e-5) RandomLinearMixtureMDP default K={K}: "
        f"{t:.2f} s ({t / K * 1e3:.3f} ms/episode), final regret {res.final_regret:.1f}"
    )
    if not args.regret:
        return
    models = [("non-private", NonPrivate(calibration="paper"))]
    for eps in (10.0, 1.0, 0.1):
        models += [
            (f"JDP eps={eps:g}", JointDP(eps, 1e-5, calibration="paper")),
            (f"LDP eps={eps:g}", LocalDP(eps, 1e-5, calibration="paper")),
        ]
    seeds = [0, 1] if args.quick else [0, 1, 2]
    print(f"\nfinal regret at K={K} on RandomLinearMixtureMDP default, mean over seeds {seeds}")
    print(f"{'privacy':<16}" + "".join(f"{'beta_scale=' + str(b):>20}" for b in (1.0, 0.1, 0.03, 0.01)))
    for label, priv in models:
        row = []
        for bs in (1.0, 0.1, 0.03, 0.01):
            regs = [timed(cls, env, priv, K, seed=10 * s + 1, beta_scale=bs)[1].final_regret for s in seeds]
            row.append(f"{np.mean(regs):>12.1f} +- {np.std(regs):<5.1f}")
        print(f"{label:<16}" + "".join(f"{c:>20}" for c in row), flush=True)


if __name__ == "__main__":
    main()

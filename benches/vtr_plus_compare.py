"""UCRL-VTR (Alg. 1) vs UCRL-VTR+ (Alg. 3): final regret and wall time, non-private / JDP / LDP
at eps in {10, 1}, on HardToLearn(d=5, H=6, K=10^4) and RandomLinearMixtureMDP (default).

    python benches/vtr_plus_compare.py [--episodes K] [--beta-scale B]
"""

from __future__ import annotations

import argparse
import time

import privrl
from privrl.agents import UCRLVTR, UCRLVTRPlus
from privrl.envs import HardToLearn, RandomLinearMixtureMDP
from privrl.privacy import JointDP, LocalDP, NonPrivate


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=10_000)
    ap.add_argument("--beta-scale", type=float, nargs="*", default=[1.0])
    args = ap.parse_args(argv)
    K = args.episodes
    envs = [
        ("HardToLearn(d=5,H=6)", HardToLearn(d=5, H=6, K=10_000, seed=0)),
        ("RandomLinearMixtureMDP", RandomLinearMixtureMDP()),
    ]
    models = [
        NonPrivate(calibration="paper"),
        JointDP(10.0, 1e-5, calibration="paper"),
        LocalDP(10.0, 1e-5, calibration="paper"),
        JointDP(1.0, 1e-5, calibration="paper"),
        LocalDP(1.0, 1e-5, calibration="paper"),
    ]
    print(
        f"{'env':<24}{'privacy':<26}{'beta_scale':>10}{'UCRL-VTR regret':>17}{'time s':>8}"
        f"{'UCRL-VTR+ regret':>18}{'time s':>8}"
    )
    for env_name, env in envs:
        for priv in models:
            for bs in args.beta_scale:
                row = []
                for cls in (UCRLVTR, UCRLVTRPlus):
                    t0 = time.perf_counter()
                    res = privrl.run(cls(env, privacy=priv, episodes=K, seed=1, beta_scale=bs), env, seed=2)
                    row += [res.final_regret, time.perf_counter() - t0]
                print(
                    f"{env_name:<24}{priv.label:<26}{bs:>10g}{row[0]:>17.1f}{row[1]:>8.2f}{row[2]:>18.1f}{row[3]:>8.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
